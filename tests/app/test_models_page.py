"""AppTest: the pretrained-models page with the shipped models: roles, one layer, one head, generation, score scale.

Every number the page draws is checked against the engine run directly (the captured q and k, torch's
softmax, the cache formula 2·L·H_kv·S·d·4 by hand), and every sentence that concludes against the numbers.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from attn_core.figures import Style
from attn_core.figures.base import group_color
from attn_core.views import models as mv
from tests.conftest import no_exception
from tests.util import arr, chart_specs, grid_heads

PAGE = "app_pages/models.py"
pytestmark = pytest.mark.usefixtures("smollm2")  # skip (or fail under CI) when the model packages are missing


@pytest.fixture(scope="module")
def smollm2():
    from tests.models.conftest import _shipped

    return _shipped("smollm2-135m")


def texts(at) -> str:
    return "\n".join(e.value for e in [*at.markdown, *at.caption, *at.warning, *at.info, *at.error, *at.success])


def test_roles_view_frames_kv_groups_and_concludes_from_the_scores(app_test, smollm2):
    at = app_test(PAGE)
    no_exception(at)
    (spec,) = chart_specs(at)
    assert spec["layout"]["yaxis"]["ticktext"][:4] == ["h0 · KV0", "h1 · KV0", "h2 · KV0", "h3 · KV1"]
    assert spec["layout"]["xaxis"]["ticktext"] == [str(i) for i in range(30)]  # every layer numbered
    frames = spec["layout"]["shapes"]
    assert [f["line"]["color"] for f in frames] == [group_color(g) for g in range(3)]
    assert [(f["y0"], f["y1"]) for f in frames] == [(-0.5, 2.5), (2.5, 5.5), (5.5, 8.5)]
    df = mv.roles(smollm2, 0)
    z = arr(spec["data"][0]["z"])
    assert z.shape == (9, 30)  # a row per query head, a column per layer
    np.testing.assert_allclose(z, df.pivot(index="layer", columns="head", values="induction").to_numpy().T, atol=1e-6)
    # the sentence about GQA carries the measured differences and the strongest head
    within, between = mv.group_similarity(df, "induction")
    note = at.info[0].value
    assert f"{within:.3f}" in note and f"{between:.3f}" in note
    layer, head, value = mv.strongest(df, "induction", 1)[0]
    assert value > 0.5 and f"layer {layer} head {head} ({value:.2f})" in note
    table = at.dataframe[0].value
    assert len(table) == len(mv.SCORES) * mv.TOP_HEADS


def test_a_slide_says_the_roles_verdict_and_shows_the_head_and_its_steps_one_a_slide(app_test, smollm2):
    at = app_test(PAGE, query={"present": "1"})
    no_exception(at)
    (roles,) = chart_specs(at)
    assert roles["layout"]["xaxis"]["tickfont"]["size"] == 20 and len(roles["layout"]["xaxis"]["tickvals"]) == 30
    note = at.info[0].value
    assert "p = 0.002" in note and "shuffling" not in note and "strongest head" not in note  # the verdict alone
    at = app_test(PAGE, query={"present": "1", "view": "head"})
    no_exception(at)
    (zoom,) = chart_specs(at)  # the head alone: its 23 tokens' labels at 20 px, every k-th in a slide's room
    y = zoom["layout"]["yaxis"]
    k = -(-1.3 * 20 * 23 // mv.SLIDE_ZOOM_PX[1])  # each label 1.3 × its 20 px font apart
    assert k > 1 and y["tickfont"]["size"] == 20 and len(y["tickvals"]) == -(-23 // k)
    assert y["title"]["text"] == f"query (1 label in {k:.0f})"
    at = app_test(PAGE, query={"present": "1", "view": "head", "slide": "8"})
    no_exception(at)
    (step,) = chart_specs(at)  # the stepper's 8th slide: the head's 7th step, the softmax
    assert step["layout"]["title"]["text"].startswith("softmax")
    assert any(m.value.startswith("### ") for m in at.markdown)


def test_opening_a_strong_head_shows_it_step_by_step_with_the_models_weights(app_test, smollm2):
    at = app_test(PAGE, query={"score": "previous_token"})
    at.button(key="role_open").click().run()
    no_exception(at)
    df = mv.roles(smollm2, 0)
    layer, head, _ = mv.strongest(df, "previous_token", 1)[0]
    assert at.segmented_control(key="view").value == "head"
    assert (at.slider(key="layer").value, at.slider(key="head").value) == (layer, head)
    specs = chart_specs(at)
    assert len(specs) == 1 + 8  # the whole head, then the eight steps
    att = mv.capture(smollm2, mv.model_input(smollm2, mv.Params()), layer)
    q = torch.from_numpy(att.q[0, head])
    k = torch.from_numpy(att.k[0, smollm2.kv_head(head)])
    t = q.shape[0]
    scores = (q @ k.T) * att.scales[0]
    expected = torch.softmax(scores.masked_fill(torch.ones(t, t, dtype=torch.bool).triu(1), float("-inf")), -1)
    allowed = ~torch.ones(t, t, dtype=torch.bool).triu(1)
    raw = (q.double() @ k.double().T)[allowed].var(unbiased=False).item()
    assert f"Var(q·k) = {raw:.3g}" in texts(at)  # the measured variance, not the random layer's "about d_k"
    assert "rotated by RoPE" in texts(at)
    softmax = next(s for s in specs if s["layout"]["title"]["text"].startswith("softmax"))
    got = np.nan_to_num(arr(softmax["data"][0]["z"]), nan=0.0)
    n = min(t, mv.STEP_WINDOW)
    np.testing.assert_allclose(got, expected[:n, :n].numpy(), rtol=1e-5, atol=1e-6)


def test_one_layer_grid_equals_the_recomputed_weights(app_test, smollm2):
    at = app_test(PAGE, query={"view": "layer", "layer": "17"})
    no_exception(at)
    att = mv.capture(smollm2, mv.model_input(smollm2, mv.Params()), 17)
    assert "Layer 17: 9 query heads, framed by the 3 KV heads they read (3 per KV head)." in texts(at)
    (spec,) = chart_specs(at, phone=False)  # less the phone's one-head copy (tests/app/test_responsive.py)
    heat = grid_heads(spec)
    assert len(heat) == 9
    w = torch.softmax(
        (torch.from_numpy(att.q[0]) @ torch.from_numpy(att.k[0]).repeat_interleave(3, 0).transpose(1, 2))
        * att.scales[0]
        + torch.full((len(att.tokens),) * 2, float("-inf")).triu(1),
        -1,
    )
    for h, z in enumerate(heat):
        np.testing.assert_allclose(np.nan_to_num(z), w[h].numpy(), rtol=1e-5, atol=1e-6)


def test_generation_times_a_token_against_the_context_with_and_without_the_cache(app_test, smollm2):
    at = app_test(PAGE, query={"view": "generate", "gen_context": "64", "gen_tokens": "3"})
    assert "Press Generate" in texts(at)
    at.button(key="gen_run").click().run()
    no_exception(at)
    summary = at.success[0].value
    assert "equals the formula 2·L·H_kv·S·d·4 bytes at every length" in summary and "66 positions" in summary
    assert "ms" in summary and ("about as long" in summary or "×" in summary)
    speed = next(s for s in chart_specs(at) if s["layout"].get("uirevision") == "mdl_speed")
    recompute, cached = speed["data"]
    assert list(arr(recompute["x"])) == [16, 32, 64] == list(arr(cached["x"]))  # every length timed
    assert all(v > 0 for v in arr(recompute["y"])) and all(v > 0 for v in arr(cached["y"]))
    mem = next(s for s in chart_specs(at) if s["layout"].get("uirevision") == "kv_live_mem")
    measured = next(tr for tr in mem["data"] if tr["mode"] == "markers")
    s = arr(measured["x"]).astype(int)
    assert list(s) == [18, 34, 66]  # each length, and the two tokens written after its first
    per_token = 2 * 30 * 3 * 64 * 4  # 2 (K and V) · L · H_kv · d · 4 bytes, by hand
    np.testing.assert_array_equal(np.round(arr(measured["y"]) * 1024**2), s * per_token)  # MiB axis
    assert "After 64 tokens it wrote: **" in "\n".join(c.value for c in at.caption)  # the text, in bold


def test_score_scale_sentence_uses_the_measured_numbers(app_test, smollm2):
    at = app_test(PAGE, query={"view": "scale"})
    no_exception(at)
    res = mv.scale(smollm2, mv.model_input(smollm2, mv.Params()), 0)
    assert mv.scale_summary(res, Style()) in texts(at)
    assert res.table.scaled_var.max() > res.random.scaled_var.iloc[0]  # trained scores outgrow the random layer's
    var, peak = chart_specs(at)
    assert var["layout"]["yaxis"]["type"] == "log"
    np.testing.assert_allclose(arr(var["data"][1]["y"]), res.table.scaled_var.to_numpy(), rtol=1e-6)


def test_minilm_is_an_encoder_with_unknown_chinese_characters(app_test):
    at = app_test(PAGE, query={"model": "minilm-l6", "example": "chinese", "view": "layer"})
    no_exception(at)
    assert "[UNK]" in "\n".join(w.value for w in at.warning)
    assert "an encoder (bidirectional" in texts(at)
    at = app_test(PAGE, query={"model": "minilm-l6", "view": "generate"})
    assert "is an encoder" in at.info[0].value and not at.main.button  # no Generate: the sidebar's buttons stay


def test_chinese_page_and_bad_local_paths(app_test):
    at = app_test(PAGE, query={"lang": "zh", "example": "chinese", "view": "layer"})
    no_exception(at)
    assert at.title[0].value == "预训练模型：训练出的注意力"
    assert chart_specs(at)
    at = app_test(PAGE, query={"lang": "zh"})  # a Chinese page reads the Chinese example, unless a link says
    assert at.selectbox(key="example").value == "chinese" and mv.EXAMPLE_TEXTS["chinese"] in texts(at)
    at = app_test(PAGE, query={"lang": "zh", "example": "english"})
    assert at.selectbox(key="example").value == "english"
    assert app_test(PAGE).selectbox(key="example").value == "english"
    at = app_test(PAGE, query={"model": "local"})
    assert "Type the path" in at.error[0].value
    at = app_test(PAGE, query={"model": "local", "model_path": "/nonexistent/model"})
    assert "/nonexistent/model" in at.error[0].value and not at.exception


def test_repeated_random_tokens_show_induction_in_the_zoom(app_test, smollm2):
    """On random tokens repeated, a strong induction head looks at the token after the earlier copy."""
    df = mv.roles(smollm2, 0)
    layer, head, _ = mv.strongest(df, "induction", 1)[0]
    at = app_test(
        PAGE, query={"example": "repeated", "repeat_len": "20", "view": "head", "layer": str(layer), "head": str(head)}
    )
    no_exception(at)
    assert "20 random tokens, then the same 20 again" in texts(at)
    zoom = arr(chart_specs(at)[0]["data"][0]["z"])  # two copies of 20 after the special tokens, if any
    o = zoom.shape[0] - 40
    rows = np.arange(o + 20, o + 40)  # the second copy
    on_next = np.nan_to_num(zoom[rows[:-1], rows[:-1] - 20 + 1]).mean()
    assert on_next > 0.5


GEMMA_GLOBAL = (5, 11, 17)


def test_gemma_roles_mark_its_global_layers_and_its_facts_say_mqa_the_window_and_its_terms(app_test):
    at = app_test(PAGE, query={"model": "gemma3-270m"})
    no_exception(at)
    said = texts(at)
    assert "each layer has 4 query heads reading 1 KV head (MQA: 4 query heads per KV head), d_k = 256" in said
    assert "15 local layers see only the last 512 tokens; 3 global layers (5, 11, 17) see every earlier token" in said
    assert "Gemma 3 270M is distributed under the Gemma Terms of Use (https://ai.google.dev/gemma/terms)" in said
    (spec,) = chart_specs(at)
    axis = spec["layout"]["xaxis"]
    marked = [i for i, tick in enumerate(axis["ticktext"]) if tick.endswith("<br><b>G</b>")]
    assert marked == list(GEMMA_GLOBAL) and axis["ticktext"][4] == "4" and len(axis["ticktext"]) == 18
    assert axis["title"]["text"] == "layer (G = global; the others see the last 512 tokens)"
    assert spec["layout"]["yaxis"]["ticktext"] == ["h0 · KV0", "h1 · KV0", "h2 · KV0", "h3 · KV0"]
    assert "one KV head for all query heads (MQA)" in at.info[0].value
    assert "Gemma 3 270M (a decoder, MQA: 4 query heads share 1 KV head;" in at.selectbox(key="model").help
    zh = app_test(PAGE, query={"model": "gemma3-270m", "lang": "zh", "present": "1"})
    no_exception(zh)
    (spec,) = chart_specs(zh)
    axis = spec["layout"]["xaxis"]
    assert [i for i, tick in enumerate(axis["ticktext"]) if tick.endswith("<br><b>全</b>")] == list(GEMMA_GLOBAL)
    assert axis["title"]["text"] == "层（全 = 全局层；其余层只看最近 512 个词元）" and axis["tickfont"]["size"] >= 20


def test_gemma_layer_head_generation_and_scale(app_test):
    at = app_test(PAGE, query={"model": "gemma3-270m", "view": "layer", "layer": "4"})
    no_exception(at)
    said = texts(at)
    assert (
        "Layer 4: 4 query heads, framed by the 1 KV head they read (4 per KV head). Layer 4 is local: each query sees only the last 512 tokens (sliding window)."
        in said
    )
    assert len(grid_heads(chart_specs(at, phone=False)[0])) == 4
    at = app_test(PAGE, query={"model": "gemma3-270m", "view": "head", "layer": "17", "head": "3"})
    no_exception(at)
    assert chart_specs(at)
    at = app_test(PAGE, query={"model": "gemma3-270m", "view": "generate", "gen_context": "16", "gen_tokens": "2"})
    at.button(key="gen_run").click().run()
    no_exception(at)
    mem = next(s for s in chart_specs(at) if s["layout"].get("uirevision") == "kv_live_mem")
    measured = next(tr for tr in mem["data"] if tr["mode"] == "markers")
    s = arr(measured["x"]).astype(int)
    np.testing.assert_array_equal(np.round(arr(measured["y"]) * 1024**2), s * 2 * 18 * 1 * 256 * 4)  # S < 511
    at = app_test(PAGE, query={"model": "gemma3-270m", "view": "scale"})
    no_exception(at)
    assert len(chart_specs(at)) == 2
