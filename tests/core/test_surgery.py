"""attn_core.pretrained.surgery on tiny random models (no download), against transformers itself.

Each edit is checked against the same change made by hand on a plain transformers model (weights pooled,
columns zeroed, scaling set, a cache evicted while decoding), and the shared model must come out of every
edit untouched.
"""

from __future__ import annotations

import copy
import json
import pickle
import threading
from pathlib import Path

import numpy as np
import pytest
import torch

from tests.core.tiny_models import eager_reference, require, write_model

require("transformers")

from attn_core.kv.memory import kv_cache_bytes  # noqa: E402
from attn_core.pretrained import models  # noqa: E402
from attn_core.pretrained import surgery as sg  # noqa: E402
from attn_core.runtime.config import ConfigError  # noqa: E402

FAMILIES = ("llama", "qwen2", "gemma3", "mistral", "gpt2", "bert")
TEXT = {"bert": "the cat sat on the mat, playing. a dog ran and sat.", "default": "the cat sat on the mat. " * 3}
EN = json.loads((Path(__file__).resolve().parents[2] / "assets/i18n/en.json").read_text(encoding="utf-8"))
ZH = json.loads((Path(__file__).resolve().parents[2] / "assets/i18n/zh.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("tiny")
    return {f: write_model(f, root / f) for f in FAMILIES}


@pytest.fixture(scope="module")
def loaded(folders):
    return {f: models.load_model(str(p), device="cpu") for f, p in folders.items()}


def ids_of(m):
    return m.encode(TEXT["bert" if m.arch == "bert" else "default"])[0]


def out(m, ids, module=None):
    """Logits (decoder) or last hidden states (encoder) ``[T, *]`` of ``module`` (default the model's own)."""
    module = module if module is not None else m.module
    with torch.inference_mode():
        res = module(input_ids=torch.tensor([ids]))
    return (res.logits if m.causal else res.last_hidden_state)[0]


def snapshot(m):
    """What an edit must never change on the shared model: its module tree, tensors, scales and config."""
    return (
        [(n, type(x)) for n, x in m.module.named_modules()],
        [(n, p.data_ptr(), p.shape) for n, p in m.module.named_parameters()],
        [getattr(x, "scaling", None) for x in m.module.modules()],
        [getattr(x, models.STREAMING_ATTR, None) for x in m.module.modules()],
        m.module.config.to_json_string(),
    )


def error_of(call, *args, **kwargs):
    with pytest.raises(ConfigError) as err:
        call(*args, **kwargs)
    exc = err.value
    for catalog in (EN, ZH):
        catalog[f"err.{exc.key}"].format(**exc.params)  # both languages, every placeholder given
    return exc


# ---------------------------------------------------------------- pooling KV heads
@pytest.mark.parametrize("family", ["llama", "qwen2", "gemma3", "mistral", "bert"])
@pytest.mark.parametrize("method", ["mean", "first"])
def test_pooling_to_the_same_number_of_kv_heads_changes_nothing(loaded, family, method):
    m = loaded[family]
    ids = ids_of(m)
    same = sg.pool_kv_heads(m, m.n_kv_heads, method)
    assert same.n_kv_heads == m.n_kv_heads and same.module is not m.module
    assert torch.equal(out(same, ids), out(m, ids))


def test_mean_pooling_equals_a_transformers_model_with_averaged_projections(loaded, folders):
    """Llama 2 KV heads → 1: a LlamaForCausalLM built with num_key_value_heads=1 and k/v weights averaged by hand."""
    import transformers as tf

    m = loaded["llama"]
    ids = ids_of(m)
    pooled = sg.pool_kv_heads(m, 1, "mean")
    ref = eager_reference(folders["llama"], "llama")
    cfg = copy.deepcopy(ref.config)
    cfg.num_key_value_heads = 1
    hand = tf.LlamaForCausalLM(cfg).eval()
    state = ref.state_dict()
    d = m.head_dim
    for key, w in list(state.items()):
        if key.endswith(("k_proj.weight", "v_proj.weight")):
            state[key] = w.view(2, d, -1).mean(0)
    hand.load_state_dict(state)
    torch.testing.assert_close(out(pooled, ids), out(m, ids, hand), rtol=1e-5, atol=1e-5)
    assert not torch.allclose(out(pooled, ids), out(m, ids), atol=1e-3)  # pooling did change the model
    first = sg.pool_kv_heads(m, 1, "first")
    for key, w in ref.state_dict().items():
        if key.endswith(("k_proj.weight", "v_proj.weight")):
            state[key] = w.view(2, d, -1)[0]
    hand.load_state_dict(state)
    torch.testing.assert_close(out(first, ids), out(m, ids, hand), rtol=1e-5, atol=1e-5)


def test_pooled_model_captures_fewer_kv_heads_and_its_weights_match(loaded):
    """BERT 4 heads → 2, 1 KV heads: layer 0 reads the same input, so its pooled keys are the mean of the
    original keys of each group (no RoPE: the mean of the projections' outputs is the mean projection's)."""
    m = loaded["bert"]
    orig = models.model_attention(m, TEXT["bert"], with_weights=True)
    for n in (2, 1):
        p = sg.pool_kv_heads(m, n)
        att = models.model_attention(p, TEXT["bert"], with_weights=True)
        assert att.k.shape[1] == p.n_kv_heads == p.preset.n_kv_heads == n and p.n_rep == 4 // n
        k = orig.k[0].reshape(n, 4 // n, *orig.k.shape[2:]).mean(1)  # (n, T, D)
        np.testing.assert_allclose(att.k[0], k, rtol=1e-5, atol=1e-6)
        for h in range(4):
            s = orig.q[0, h] @ k[h // (4 // n)].T * orig.scales[0]
            w = np.exp(s - s.max(-1, keepdims=True))
            np.testing.assert_allclose(att.weights[0, h], w / w.sum(-1, keepdims=True), rtol=1e-4, atol=1e-6)
    r1, r2 = sg.pool_kv_heads(m, 2, "random", seed=1), sg.pool_kv_heads(m, 2, "random", seed=1)
    assert torch.equal(out(r1, ids_of(m)), out(r2, ids_of(m)))
    assert not torch.equal(out(r1, ids_of(m)), out(sg.pool_kv_heads(m, 2, "random", seed=2), ids_of(m)))


def test_impossible_pooling_is_refused_clearly(loaded):
    m = loaded["llama"]  # 2 KV heads
    exc = error_of(sg.pool_kv_heads, sg.pool_kv_heads(loaded["bert"], 4), 3)  # 4 KV heads → 3
    assert exc.key == "surgery_kv_divisor" and exc.params["valid"] == "1, 2, 4" and "divide 4" in str(exc)
    assert error_of(sg.pool_kv_heads, m, 3).key == "between"  # more than it has
    assert error_of(sg.pool_kv_heads, m, 1, "median").key == "unknown_option"
    assert error_of(sg.pool_kv_heads, loaded["gpt2"], 2).key == "surgery_unsupported"  # fused c_attn


# ---------------------------------------------------------------- score scale
@pytest.mark.parametrize("family", FAMILIES)
def test_scale_factor_one_is_the_identity_and_none_drops_the_scale(loaded, folders, family):
    m = loaded[family]
    ids = ids_of(m)
    assert torch.equal(out(sg.scale_scores(m, 1.0), ids), out(m, ids))
    ref = eager_reference(folders[family], family)
    for x in ref.modules():
        if hasattr(x, "scaling") and isinstance(x.scaling, float):
            x.scaling = 1.0  # by hand: every layer's q·k unscaled
    torch.testing.assert_close(out(sg.scale_scores(m, None), ids), out(m, ids, ref), rtol=1e-4, atol=1e-4)
    assert torch.equal(out(sg.scale_scores(m, "none"), ids), out(sg.scale_scores(m, None), ids))


def test_scale_factor_multiplies_the_captured_scale(loaded):
    m = loaded["gemma3"]  # its own scale is query_pre_attn_scalar ** -0.5 = 32 ** -0.5
    base = models.model_attention(m, TEXT["default"], with_weights=True)
    assert base.scales == pytest.approx((32**-0.5,) * 3)
    twice = models.model_attention(sg.scale_scores(m, 2), TEXT["default"], with_weights=True)
    assert twice.scales == pytest.approx(tuple(2 * s for s in base.scales))
    flat = models.model_attention(sg.scale_scores(m, None), TEXT["default"], with_weights=True)
    assert flat.scales == (1.0, 1.0, 1.0)
    for bad in (0, -1.0, float("nan"), True, "half"):
        assert error_of(sg.scale_scores, m, bad).key == "surgery_factor"


# ---------------------------------------------------------------- ablation
@pytest.mark.parametrize("family", ["llama", "gemma3", "gpt2", "bert"])
def test_ablating_heads_equals_zeroing_their_output_projection_columns(loaded, folders, family):
    m = loaded[family]
    ids = ids_of(m)
    layer, heads = 1, [0, 2]
    ablated = sg.ablate_heads(m, layer, heads)
    ref = eager_reference(folders[family], family)
    block = sg._blocks(ref)[layer]
    proj = block.get_submodule(sg.PARTS[m.arch].out)
    with torch.no_grad():
        for h in heads:
            cols = slice(h * m.head_dim, (h + 1) * m.head_dim)
            if m.arch == "gpt2":  # Conv1D: weight [in, out]
                proj.weight[cols, :] = 0.0
            else:
                proj.weight[:, cols] = 0.0
    torch.testing.assert_close(out(ablated, ids), out(m, ids, ref), rtol=1e-4, atol=1e-5)
    assert not torch.allclose(out(ablated, ids), out(m, ids), atol=1e-4)


def test_ablation_checks_its_heads(loaded):
    m = loaded["llama"]
    assert error_of(sg.ablate_heads, m, 0, []).key == "surgery_no_heads"
    assert error_of(sg.ablate_heads, m, 0, [4]).key == "between"
    assert error_of(sg.ablate_heads, m, 2, [0]).key == "between"
    assert sg.ablate_heads(m, 0, 3).edits[-1][1] == (("layer", 0), ("heads", (3,)))


# ---------------------------------------------------------------- eviction
@pytest.mark.parametrize("family", ["llama", "gemma3", "gpt2"])
def test_eviction_with_a_window_longer_than_the_text_is_the_identity(loaded, family):
    m = loaded[family]
    ids = ids_of(m)
    assert torch.equal(out(sg.evict_cache(m, len(ids), 0), ids), out(m, ids))
    assert torch.equal(out(sg.evict_cache(m, len(ids) - 4, 4), ids), out(m, ids))


def test_eviction_as_a_mask_equals_decoding_with_an_evicted_cache(loaded, folders):
    """One forward pass with the mask gives the logits of decoding token by token from a cache that keeps only
    the first ``sinks`` and the last ``window - 1`` positions (plus the new token's own key)."""
    import transformers as tf

    m, window, sinks = loaded["llama"], 6, 2
    ids = ids_of(m)[:40]
    evicted = sg.evict_cache(m, window, sinks)
    want = out(evicted, ids)
    ref = eager_reference(folders["llama"], "llama")
    cache, rows = tf.DynamicCache(), []
    with torch.inference_mode():
        for p, token in enumerate(ids):
            res = ref(input_ids=torch.tensor([[token]]), position_ids=torch.tensor([[p]]), past_key_values=cache)
            rows.append(res.logits[0, -1])
            for lay in cache.layers:
                if lay.keys.shape[-2] > sinks + window - 1:
                    lay.keys = torch.cat([lay.keys[:, :, :sinks], lay.keys[:, :, -(window - 1) :]], dim=-2)
                    lay.values = torch.cat([lay.values[:, :, :sinks], lay.values[:, :, -(window - 1) :]], dim=-2)
    torch.testing.assert_close(want, torch.stack(rows), rtol=1e-4, atol=1e-5)
    assert not torch.allclose(want, out(m, ids), atol=1e-3)


def test_evicted_weights_keep_only_the_sinks_and_the_window(loaded):
    m = loaded["gemma3"]  # layers 0, 1 slide over 8 positions; layer 2 is global
    ev = sg.evict_cache(m, 5, 2)
    att = models.model_attention(ev, TEXT["default"], with_weights=True)
    t = len(att.ids)
    i, j = np.indices((t, t))
    for layer in range(m.n_layers):
        allowed = (j <= i) & ((j < 2) | (j > i - 5))
        if m.window(layer) is not None:
            allowed &= j > i - 8
        assert np.all(att.weights[layer][:, ~allowed] == 0.0) and np.all(att.weights[layer][:, allowed] > 0.0)
    assert ev.limits(2) == (None, 2, 5) and ev.limits(0) == (8, 2, 5)
    # the model's own output agrees with the recomputed weights: head outputs through the captured values
    np.testing.assert_allclose(att.weights.sum(-1), 1.0, atol=1e-5)
    assert error_of(sg.evict_cache, loaded["bert"], 4).key == "surgery_not_decoder"


def test_generation_of_an_evicted_model_matches_its_forward_pass(loaded):
    m = loaded["llama"]
    ev = sg.evict_cache(m, 6, 2)
    steps = list(models.generate(ev, TEXT["default"], 4))
    ids = m.encode(TEXT["default"])[0]
    assert steps[0].token_id == int(out(ev, ids)[-1].argmax())
    att = models.model_attention(ev, "", ids=ids + [s.token_id for s in steps[:-1]], with_weights=True)
    np.testing.assert_allclose(steps[-1].attention, att.weights[:, :, -1], rtol=1e-5, atol=1e-6)
    assert all(s.cache_bytes == s.formula_bytes for s in steps)


# ---------------------------------------------------------------- the shared model stays as it was
def test_no_edit_changes_the_shared_model_and_copies_share_its_tensors(loaded):
    m = loaded["gemma3"]
    ids = ids_of(m)
    before, logits = snapshot(m), out(m, ids)
    copies = [
        sg.pool_kv_heads(m, 1, "random"),
        sg.scale_scores(m, None),
        sg.scale_scores(m, 3.0),
        sg.ablate_heads(m, 0, [1]),
        sg.evict_cache(m, 3, 1),
        sg.ablate_heads(sg.evict_cache(m, 4, 1), 2, [0, 3]),
    ]
    for c in copies:
        out(c, ids)
    assert snapshot(m) == before and torch.equal(out(m, ids), logits)
    shared = {p.data_ptr() for p in m.module.parameters()}
    assert {p.data_ptr() for p in copies[1].module.parameters()} == shared  # a scale needs no new tensor
    assert m.edits == () and m.streaming is None


def test_threads_read_the_model_and_its_copies_at_once(loaded):
    m = loaded["llama"]
    ids = ids_of(m)
    variants = [m, sg.scale_scores(m, None), sg.pool_kv_heads(m, 1), sg.evict_cache(m, 4, 1)]
    want = [out(v, ids) for v in variants]
    got, errors = {}, []

    def run(k):
        try:
            for _ in range(5):
                got.setdefault(k, []).append(out(variants[k % 4], ids))
        except Exception as exc:  # noqa: BLE001 - any error fails the test below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    for k, results in got.items():
        assert all(torch.equal(r, want[k % 4]) for r in results)


def test_an_edited_model_pickles_as_its_edits_and_they_compose(loaded):
    m = loaded["llama"]
    ids = ids_of(m)
    edited = sg.ablate_heads(sg.pool_kv_heads(m, 1, "random", seed=3), 1, [2])
    assert [fn.__name__ for fn, _ in edited.edits] == ["pool_kv_heads", "ablate_heads"]
    data = pickle.dumps(edited)
    assert len(data) < 2000
    again = pickle.loads(data)
    assert again.edits == edited.edits and again.n_kv_heads == 1
    assert torch.equal(out(again, ids), out(edited, ids))


# ---------------------------------------------------------------- evaluation
def test_evaluation_of_a_decoder_against_hand_computation(loaded, monkeypatch):
    m = loaded["llama"]
    ids = ids_of(m)
    pooled = sg.pool_kv_heads(m, 1)
    lp, lq = torch.log_softmax(out(m, ids)[:-1], -1), torch.log_softmax(out(pooled, ids)[:-1], -1)
    nll = -lq.gather(-1, torch.tensor(ids[1:])[:, None]).mean()
    kl = (lp.exp() * (lp - lq)).sum(-1).mean()
    top1 = (lp.argmax(-1) == lq.argmax(-1)).float().mean()
    for chunk in (sg.LOGIT_CHUNK_BYTES, 4 * 258 * 3):  # one block of rows, and blocks of 3 rows
        monkeypatch.setattr(sg, "LOGIT_CHUNK_BYTES", chunk)
        e = sg.evaluate(pooled, ids, m)
        assert e.loss == pytest.approx(float(nll), rel=1e-5) and e.perplexity == pytest.approx(
            float(nll.exp()), rel=1e-5
        )
        assert e.kl == pytest.approx(float(kl), rel=1e-4) and e.top1 == pytest.approx(float(top1))
    ref = sg.reference_of(m, ids)
    same = sg.evaluate(m, ids, ref)
    assert same.kl == pytest.approx(0.0, abs=1e-6) and same.top1 == 1.0 and same.cosine is None
    assert sg.evaluate(m, ids).kl is None
    assert e.kv_bytes_per_token == kv_cache_bytes(2, 1, 16, 1, 1, "fp32") == same.kv_bytes_per_token // 2
    assert e.edits == ("pool_kv_heads(n_kv_heads=1, method='mean', seed=0)",) and e.n_tokens == len(ids)
    ev = sg.evaluate(sg.evict_cache(m, 10, 2), ids, ref)
    assert (
        ev.kv_bytes
        == kv_cache_bytes(2, 2, 16, 12, 1, "fp32")
        < same.kv_bytes
        == kv_cache_bytes(2, 2, 16, len(ids), 1, "fp32")
    )
    assert error_of(sg.evaluate, m, ids[:-1], ref).key == "eval_reference"
    assert error_of(sg.evaluate, m, ids[:1]).key == "between"


def test_evaluation_of_an_encoder_compares_hidden_states(loaded):
    m = loaded["bert"]
    ids = ids_of(m)
    assert sg.evaluate(m, ids, m).cosine == pytest.approx(1.0)
    e = sg.evaluate(sg.pool_kv_heads(m, 1), ids, m)
    assert e.loss is e.perplexity is e.kl is e.top1 is None
    assert 0.0 < e.cosine < 0.9999 and 0.0 < e.embedding_cosine <= 1.0
    assert e.kv_bytes_per_token * 4 == sg.evaluate(m, ids).kv_bytes_per_token


def test_sliding_layers_and_eviction_in_the_kept_positions(loaded):
    g = loaded["gemma3"]
    assert sg.kept_positions(g) == (8, 8, None)
    assert sg.kept_positions(sg.evict_cache(g, 3, 2)) == (5, 5, 5)
    assert sg.kept_positions(sg.evict_cache(g, 30, 2)) == (8, 8, 32)


def test_per_token_losses_and_the_reference_model_read_once(loaded, monkeypatch):
    m = loaded["llama"]
    ids = ids_of(m)
    ref = sg.reference_of(m, ids)
    alone = sg.evaluate(m, ids)  # reads the ids itself
    calls = []
    real = sg._hidden
    monkeypatch.setattr(sg, "_hidden", lambda model, i: calls.append(model) or real(model, i))
    same = sg.evaluate(m, ids, ref)  # the reference's own model: its hidden states are reused, not computed again
    assert calls == [] and same.loss == alone.loss and same.token_losses == alone.token_losses
    lq = torch.log_softmax(out(m, ids)[:-1], -1)
    want = -lq.gather(-1, torch.tensor(ids[1:])[:, None])[:, 0]
    assert len(same.token_losses) == len(ids) - 1
    assert np.allclose(same.token_losses, want.numpy(), rtol=1e-5, atol=1e-6)
    assert np.mean(same.token_losses) == pytest.approx(same.loss, rel=1e-6)  # float32 sums
    pooled = sg.evaluate(sg.pool_kv_heads(m, 1), ids, ref)  # an edited copy reads the ids itself
    assert calls and pooled.kl > 0 and pooled.token_losses != same.token_losses
    assert sg.evaluate(loaded["bert"], ids_of(loaded["bert"])).token_losses == ()


def test_scale_of_reads_each_layers_factor(loaded):
    m = loaded["llama"]
    assert sg.scale_of(m) == pytest.approx(m.head_dim**-0.5)
    assert sg.scale_of(sg.scale_scores(m, 2.0), 1) == pytest.approx(2 * m.head_dim**-0.5)
    assert sg.scale_of(sg.scale_scores(m, None)) == 1.0
