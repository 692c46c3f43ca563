"""The heatmaps page with "attention from" a pretrained model (issue 15): the shipped models' layers as the
source of every view, on the page's own text read by the model's tokenizer.

The expected weights come from :func:`attn_core.pretrained.models.model_attention` with the full weights, which
``tests/core/test_models.py`` proves equal to transformers' own ``output_attentions``; the page draws
them through the pooled, chunked path of :mod:`attn_core.attention.longmaps` (another computation: rtol 1e-5).
Both models load once per test process (``ui.model`` and :func:`shipped`).
"""

from __future__ import annotations

import functools
import json

import numpy as np
import pytest

from attn_core.pretrained.models import load_model, model_attention
from tests.app.test_heatmaps_page import DEFAULT_TEXT, PAGE, grid_z, page_text
from tests.conftest import no_exception
from tests.util import arr, chart_specs, grid_heads, grid_labels

MODELS = ("smollm2-135m", "minilm-l6", "gemma3-270m")
SHAPE = {  # L, H, H_kv, d_k, causal
    "smollm2-135m": (30, 9, 3, 64, True),
    "minilm-l6": (6, 12, 12, 32, False),
    "gemma3-270m": (18, 4, 1, 256, True),
}
HIDDEN = {"smollm2-135m": 576, "minilm-l6": 384, "gemma3-270m": 640}


@functools.cache
def shipped(key: str):
    return load_model(key, device="cpu")


def expected(key: str, layer: int, text: str = DEFAULT_TEXT):
    return model_attention(shipped(key), text, layers=layer, with_weights=True)


@pytest.mark.parametrize("key", MODELS)
def test_grid_is_the_models_layer_on_its_own_tokens(app_test, key):
    n_layers, n_heads, n_kv, d, causal = SHAPE[key]
    at = app_test(PAGE, query={"attn_from": key})
    no_exception(at)
    assert not at.error
    layer = n_layers // 2  # the middle layer until one is picked
    att = expected(key, layer)
    z = grid_z(at)
    assert z.shape == (n_heads, len(att.tokens), len(att.tokens))
    want = att.weights[0]
    if causal:  # above the diagonal: masked (NaN on the chart), and zero weight in the model
        above = np.triu(np.ones(want.shape[1:], dtype=bool), 1)
        assert np.isnan(z[:, above]).all() and (want[:, above] == 0).all()
        want = np.where(above, np.nan, want)
    else:  # an encoder: every token sees every token
        assert not np.isnan(z).any() and (z[:, 0, -1] > 0).all()
    np.testing.assert_allclose(z, want, rtol=1e-5, atol=1e-6)
    spec = chart_specs(at)[0]
    assert grid_labels(spec)[0] == [f"{tok} ({i})" for i, tok in enumerate(shipped(key).tokenize(DEFAULT_TEXT))]
    # the shape sliders are replaced by the model's shape; a layer slider appears
    assert {"n_heads", "head_dim", "temperature", "mask", "scaling", "cross"}.isdisjoint(w.key for w in at.slider)
    assert not any(w.key in ("scaling", "cross") for w in at.toggle)
    assert at.slider(key="model_layer").max == n_layers - 1 and at.slider(key="model_layer").value == layer
    kind = "MHA" if n_kv == n_heads else ("MQA" if n_kv == 1 else "GQA")
    line = next(m.value for m in at.markdown if m.value.startswith(f"**{kind}**"))  # under the model's shape line
    assert f"**{kind}**: {n_heads} query heads, {n_kv} KV head" in line and f"d_k = {d}" in line
    assert f"scores × 1/√{d} ÷ τ = 1/{np.sqrt(d):.4g} ÷ 1 = **{d**-0.5:.4g}**" in line
    text = page_text(at)
    assert "seeded random numbers" not in text and f"layer {layer} of {shipped(key).title}" in text
    assert ("causal" in text) == causal and ("bidirectional" in text) != causal


@pytest.mark.parametrize("key", MODELS)
def test_zoom_steps_entropy_and_shapes_follow_the_model(app_test, key):
    n_layers, n_heads, n_kv, d, causal = SHAPE[key]
    at = app_test(PAGE, query={"attn_from": key, "model_layer": "2", "view": "steps", "head": str(n_heads - 1)})
    no_exception(at)
    att = expected(key, 2)
    head, kv = n_heads - 1, (n_heads - 1) // (n_heads // n_kv)
    specs = chart_specs(at)
    assert len(specs) == 8
    np.testing.assert_allclose(arr(specs[0]["data"][0]["z"]), att.q[0, head], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(arr(specs[1]["data"][0]["z"]), att.k[0, kv], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(arr(specs[3]["data"][0]["z"]), att.q[0, head] @ att.k[0, kv].T, rtol=1e-4, atol=1e-4)
    soft = np.nan_to_num(arr(specs[6]["data"][0]["z"]), nan=0.0)
    np.testing.assert_allclose(soft, att.weights[0, head], rtol=1e-5, atol=1e-6)
    assert f"√{d}" in specs[4]["layout"]["title"]["text"]
    said = "\n".join(m.value for m in at.markdown)
    assert ("rotated by RoPE" in said) == causal and "embedding times" not in said
    q64, k64 = att.q[0, head].astype(np.float64), att.k[0, kv].astype(np.float64)
    allowed = np.tril(np.ones((len(q64),) * 2, dtype=bool)) if causal else np.ones((len(q64),) * 2, dtype=bool)
    assert f"Var(q·k) = {(q64 @ k64.T)[allowed].var():.3g}" in said  # measured, not the random layer's "≈ d_k"
    at.segmented_control(key="view").set_value("zoom").run()
    no_exception(at)
    z = np.nan_to_num(grid_z(at)[0], nan=0.0)
    np.testing.assert_allclose(z, att.weights[0, head], rtol=1e-5, atol=1e-6)
    at.segmented_control(key="view").set_value("entropy").run()
    no_exception(at)
    w = att.weights[0].astype(np.float64)
    ent = -(w * np.log(np.where(w > 0, w, 1))).sum(-1)
    t = w.shape[-1]
    visible = np.arange(1, t + 1) if causal else np.full(t, t)
    norm = np.divide(ent, np.log(visible), out=np.zeros_like(ent), where=visible > 1)
    lines = np.stack([arr(tr["y"]) for tr in chart_specs(at)[0]["data"]])
    np.testing.assert_allclose(np.nan_to_num(lines), norm, rtol=1e-4, atol=1e-5)
    at.segmented_control(key="view").set_value("shapes").run()
    no_exception(at)
    table = at.dataframe[0].value
    assert f"[B, H_kv, T, d_k] = [1, {n_kv}, {t}, {d}] each" in table.iloc[:, 2].tolist()
    assert table.iloc[0, 1] == "x: the hidden states entering layer 2"
    assert table.iloc[0, 2] == f"[B, T, d_model] = [1, {t}, {HIDDEN[key]}]"  # Gemma 3: 640, not 4 × 256
    note = page_text(at)
    assert ("it keeps no K/V cache" in note) != causal and ("after RoPE" in note) == causal


def test_chinese_and_the_command_line(app_test, tmp_path):
    at = app_test(PAGE, query={"attn_from": "smollm2-135m", "lang": "zh", "view": "shapes"})
    no_exception(at)
    text = page_text(at)
    assert "训练好的权重" in text and "按种子生成的随机数" not in text and "RoPE" in text
    assert at.dataframe[0].value.iloc[0, 1] == "x：进入第 15 层的隐藏状态"
    from attn_core.export import params_from
    from attn_core.figures import Style
    from attn_core.views import page

    spec = page("heatmaps")
    params, args = params_from(spec, ["--page", "heatmaps", "--attn-from", "minilm-l6", "--model-layer", "5"])
    (grid,) = spec.views(params, Style(), "grid")
    z = grid_heads(json.loads(grid.figure.to_json()))
    np.testing.assert_allclose(z, expected("minilm-l6", 5).weights[0], rtol=1e-5, atol=1e-6)


def test_gemma_local_layers_show_their_window_as_a_band_and_the_page_says_which_layers_slide(app_test):
    """Gemma 3 270M on 200 synthetic tokens (691 of its tokens, past the window of 512): a local layer's maps are
    masked (NaN, weight exactly 0 in the model) wherever a key lies 512 or more positions back, a global layer's
    are not; the layer's caption says which it is; the four heads are framed by the one KV head they share; the
    Gemma Terms of Use are named with the source."""
    key, query = "gemma3-270m", {"attn_from": "gemma3-270m", "source": "synthetic", "seq_len": "200"}
    text = " ".join(f"t{i}" for i in range(200))
    for layer, local in ((4, True), (5, False)):
        at = app_test(PAGE, query={**query, "model_layer": str(layer)})
        no_exception(at)
        att = expected(key, layer, text)
        t = len(att.tokens)
        assert t > 512 + 100
        spec = chart_specs(at)[0]
        pm = spec["layout"]["meta"]["head_grid"]
        assert pm["heads"] == [0, 1, 2, 3] and spec["layout"]["title"]["text"].count("1 KV group") == 1
        z = grid_z(at)  # pooled: a cell is the max over its block, NaN where the mask allows none of it
        f = -(-t // z.shape[-1])
        rows, cols = np.indices(z.shape[1:])
        wholly_beyond = cols * f + f - 1 <= rows * f - 512  # every key of the block is 512 or more back
        assert wholly_beyond.sum() > 100
        beyond = np.subtract.outer(np.arange(t), np.arange(t)) >= 512
        if local:
            assert np.isnan(z[:, wholly_beyond]).all() and (att.weights[0][:, beyond] == 0.0).all()
        else:
            assert not np.isnan(z[:, wholly_beyond]).any() and att.weights[0][:, beyond].sum() > 1.0
        said = page_text(at)
        kind = "local: each query sees only the last 512 tokens" if local else "global: each query sees every earlier"
        assert f"Layer {layer} is {kind}" in said
        assert "Gemma Terms of Use (https://ai.google.dev/gemma/terms)" in said
        assert "15 local layers see only the last 512 tokens; 3 global layers (5, 11, 17)" in said


def test_gemma_in_chinese_says_the_layer_kind_and_its_terms(app_test):
    at = app_test(PAGE, query={"attn_from": "gemma3-270m", "lang": "zh", "model_layer": "11"})
    no_exception(at)
    said = page_text(at)
    assert "第 11 层是全局层" in said and "Gemma 使用条款" in said and "15 个局部层只看最近 512 个词元" in said
