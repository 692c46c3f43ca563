"""Multi-head latent attention (attn_core.mla.attention): the naive and absorbed paths against each other and against
hand arithmetic, the caches' sizes against the memory formulas, RoPE, the rope-on-latent mistake, the costs."""

import json
import math

import numpy as np
import pytest
import torch

from attn_core.attention.longmaps import pooled_attention
from attn_core.i18n import translate
from attn_core.kv import memory
from attn_core.mla.attention import (
    DecodeSpec,
    MLACache,
    MLAConfig,
    MultiHeadLatentAttention,
    agreement,
    apply_rope,
    attention_source,
    cache_bytes,
    decode_steps,
    fill_cache,
    hidden_states,
    load_mla_presets,
    path_cost,
)
from attn_core.runtime.config import ConfigError

TINY = MLAConfig(d_model=32, n_heads=4, kv_lora_rank=16, qk_nope_head_dim=8, qk_rope_head_dim=4, v_head_dim=6)
TINY_Q = MLAConfig(32, 4, 16, 8, 4, 6, q_lora_rank=12)
RTOL, ATOL = 1e-5, 1e-5  # outputs are O(1): two float32 computations of the same function


@pytest.mark.parametrize("cfg", [TINY, TINY_Q], ids=["no_q_lora", "q_lora"])
def test_naive_equals_absorbed_prefill(cfg):
    layer = MultiHeadLatentAttention(cfg, seed=3)
    x = hidden_states(cfg, 9, seed=3, batch=2)
    a, b = layer(x, mode="naive"), layer(x, mode="absorb")
    torch.testing.assert_close(b.weights, a.weights, rtol=RTOL, atol=1e-6)
    torch.testing.assert_close(b.output, a.output, rtol=RTOL, atol=ATOL)
    assert a.weights.shape == (2, cfg.n_heads, 9, 9) and a.output.shape == (2, 9, cfg.d_model)
    assert a.weights[0, 0, 0, 1] == 0  # causal


@pytest.mark.parametrize("cfg", [TINY, TINY_Q], ids=["no_q_lora", "q_lora"])
def test_naive_equals_absorbed_step_by_step_and_full(cfg):
    """Decode one token at a time in both paths: equal to each other and to the full causal forward."""
    layer = MultiHeadLatentAttention(cfg, seed=1)
    x = hidden_states(cfg, 10, seed=1)
    full = layer(x, mode="naive")
    caches = {m: MLACache(m) for m in ("naive", "absorb")}
    for t in range(10):
        out = {m: layer(x[:, t : t + 1], mode=m, cache=caches[m]) for m in caches}
        for m in caches:
            assert out[m].weights.shape == (1, cfg.n_heads, 1, t + 1)
            torch.testing.assert_close(out[m].weights[0, :, 0], full.weights[0, :, t, : t + 1], rtol=RTOL, atol=1e-6)
            torch.testing.assert_close(out[m].output[:, 0], full.output[:, t], rtol=RTOL, atol=ATOL)
        torch.testing.assert_close(out["absorb"].output, out["naive"].output, rtol=RTOL, atol=ATOL)


def test_naive_matches_hand_written_attention():
    """The naive path is ordinary MHA on [k_C; k_R] keys: recompute it from the weights with plain matmuls."""
    cfg, t = TINY, 5
    layer = MultiHeadLatentAttention(cfg, seed=0)
    x = hidden_states(cfg, t, seed=0)[0]  # (T, d)
    pos = torch.arange(t)
    q = (x @ layer.wq.T).view(t, 4, 12)
    kv = x @ layer.wkv_a.T
    c = kv[:, :16] / torch.sqrt(kv[:, :16].pow(2).mean(-1, keepdim=True) + 1e-6)
    k_r = apply_rope(kv[None, :, 16:], pos, 1e4)[0]  # (T, 4), one key for all heads
    up = (c @ layer.wkv_b.T).view(t, 4, 14)
    out = []
    for h in range(4):
        qh = torch.cat([q[:, h, :8], apply_rope(q[None, :, h, 8:], pos, 1e4)[0]], -1)
        kh = torch.cat([up[:, h, :8], k_r], -1)
        s = qh @ kh.T / math.sqrt(12) + torch.triu(torch.full((t, t), -math.inf), 1)
        out.append(torch.softmax(s, -1) @ up[:, h, 8:])
    ref = torch.cat(out, -1) @ layer.wo.T
    torch.testing.assert_close(layer(x[None], mode="naive").output[0], ref, rtol=RTOL, atol=ATOL)


def test_cache_holds_exact_elements_and_bytes():
    cfg = TINY_Q
    layer = MultiHeadLatentAttention(cfg)
    x = hidden_states(cfg, 7, seed=0, batch=3)
    absorbed, naive = layer(x, mode="absorb").cache, layer(x, mode="naive").cache
    assert absorbed.elements_per_token == cfg.kv_lora_rank + cfg.qk_rope_head_dim == 20
    assert naive.elements_per_token == cfg.n_heads * (8 + 4 + 6) == 72
    assert absorbed.nbytes == 3 * 7 * 20 * 4 == cache_bytes(cfg, 7, "absorb", 3)
    assert naive.nbytes == 3 * 7 * 72 * 4 == cache_bytes(cfg, 7, "naive", 3)
    assert set(absorbed.tensors) == {"kv", "pe"} and absorbed.tensors["kv"].shape == (3, 7, 16)
    assert naive.tensors["k"].shape == (3, 7, 4, 12) and naive.tensors["v"].shape == (3, 7, 4, 6)


def test_live_decode_bytes_equal_formula_and_outputs_agree():
    steps = list(decode_steps(DecodeSpec(TINY, seed=2, prompt=3, steps=4)))
    assert [s.seq_len for s in steps] == [3, 4, 5, 6, 7]
    for s in steps:
        assert s.naive_bytes == s.naive_formula == s.seq_len * 4 * 18 * 4
        assert s.absorb_bytes == s.absorb_formula == s.seq_len * 20 * 4
        assert s.max_diff < ATOL and s.naive_s > 0 and s.absorb_s > 0


def test_rope_is_a_rotation_by_position():
    """Against the complex form of DeepSeek's reference: pairs times e^(i·p·θ^(-2j/D))."""
    x = torch.randn(1, 6, 2, 8)
    pos = torch.arange(6) + 4
    freqs = 1e4 ** (-torch.arange(0, 8, 2, dtype=torch.float64) / 8)
    rot = torch.polar(torch.ones(6, 4, dtype=torch.float64), pos[:, None].double() * freqs)
    ref = torch.view_as_real(torch.view_as_complex(x.double().unflatten(-1, (-1, 2))) * rot[None, :, None]).flatten(-2)
    torch.testing.assert_close(apply_rope(x, pos, 1e4), ref.float(), rtol=1e-5, atol=1e-6)
    assert not torch.allclose(apply_rope(x, pos, 1e4), x)


def test_rope_scores_depend_only_on_relative_position():
    """Shift every position by 100: the layer's rotated q_R·k_R, and so its weights, do not change."""
    layer = MultiHeadLatentAttention(TINY_Q, seed=5)
    x = hidden_states(TINY_Q, 8, seed=5)
    scores = []
    for shift in (0, 100):
        pos = torch.arange(8) + shift
        _, q_pe = layer.queries(x, pos)
        _, k_pe = layer.latents(x, pos)
        scores.append(torch.einsum("bthr,bsr->bhts", q_pe, k_pe))
    torch.testing.assert_close(scores[1], scores[0], rtol=1e-4, atol=1e-4)
    prefix = layer(hidden_states(TINY_Q, 100, seed=9), mode="absorb").cache  # positions 100.. for the same x
    later = layer(x, mode="absorb", cache=MLACache("absorb", dict(prefix.tensors)), causal=False)
    own = later.weights[..., 100:]  # the new tokens' weights over themselves, renormalised
    first = layer(x, mode="absorb", causal=False).weights
    torch.testing.assert_close(own / own.sum(-1, keepdim=True), first, rtol=1e-4, atol=1e-5)


def test_rope_on_latent_cannot_be_absorbed():
    """Rotating the decompressed keys is a valid attention run naively, but its absorbed form is another function."""
    layer = MultiHeadLatentAttention(TINY, seed=0)
    x = hidden_states(TINY, 12, seed=0)
    gap = agreement(layer, x, "rope_on_latent", "rope_on_latent_absorb")
    right = agreement(layer, x, "naive", "absorb")
    assert right.max_weight_diff < 1e-5 and right.max_output_diff < ATOL
    assert gap.max_weight_diff > 1e-2 and gap.max_output_diff > 1e-2  # far above float32 round-off
    full = layer(x, mode="rope_on_latent")
    cache = MLACache("rope_on_latent")
    for t in range(12):  # run naively it is consistent: step by step = full
        out = layer(x[:, t : t + 1], mode="rope_on_latent", cache=cache)
        torch.testing.assert_close(out.output[:, 0], full.output[:, t], rtol=RTOL, atol=ATOL)
    assert cache.elements_per_token == 4 * (8 + 6)


@pytest.mark.parametrize("mode", ["naive", "absorb", "rope_on_latent"])
def test_attention_source_gives_the_layer_weights(mode):
    layer = MultiHeadLatentAttention(TINY_Q, seed=4)
    x = hidden_states(TINY_Q, 10, seed=4)
    src = attention_source(layer, x, tuple(f"t{i}" for i in range(10)), mode)
    pm = pooled_attention(src, max_side=64)
    want = layer(x, mode=mode).weights[0].numpy()
    np.testing.assert_allclose(np.nan_to_num(pm.weights), want, rtol=1e-5, atol=1e-6)
    assert (src.n_kv_heads, src.head_dim) == ((1, 20) if mode == "absorb" else (4, 12 if mode == "naive" else 8))


def test_presets_bytes_equal_memory_formulas_and_model_presets():
    presets = load_mla_presets()
    assert list(presets) == ["small", "deepseek-v2-lite", "deepseek-v2", "deepseek-v3"]
    models = memory.load_presets()
    for pid in ("deepseek-v2-lite", "deepseek-v2", "deepseek-v3"):
        p, c = presets[pid], presets[pid].config
        assert (c.kv_lora_rank, c.qk_rope_head_dim, c.qk_nope_head_dim, c.v_head_dim) == (512, 64, 128, 128)
        assert p.cache_bytes(4096) == memory.mla_cache_bytes(p.n_layers, 512, 64, 4096) == p.n_layers * 4096 * 576 * 2
        if pid in models:  # the KV-cache page's rows of the same models
            m = models[pid]
            assert (m.n_layers, m.hidden_size, m.n_heads, m.kv_lora_rank) == (p.n_layers, c.d_model, c.n_heads, 512)
            naive = [lay for lay in memory.preset_layouts(m) if lay.kind == "MLA-naive"][0]
            assert naive.bytes(4096, dtype="bf16") == p.cache_bytes(4096, "naive")
    v3 = presets["deepseek-v3"]
    assert (v3.n_layers, v3.config.d_model, v3.config.q_lora_rank) == (61, 7168, 1536)
    assert v3.config.naive_elements == 40_960 and v3.config.absorbed_elements == 576
    assert v3.cache_bytes(1) == 70_272  # memory.mla_cache_bytes's doctest
    assert presets["deepseek-v2-lite"].config.q_lora_rank == 0


def test_costs_at_v3_sizes():
    cfg = load_mla_presets()["deepseek-v3"].config
    naive, absorb, latent = (path_cost(cfg, p) for p in ("naive", "absorb", "latent"))
    assert absorb.per_token == 2 * 128 * (576 + 512) and absorb.values == 576
    assert naive.per_token == 2 * 128 * (192 + 128) and naive.values == 40_960
    assert round(absorb.per_token / naive.per_token, 1) == 3.4 and round(naive.values / absorb.values) == 71
    assert latent.per_token == naive.per_token + 2 * 512 * 128 * 256 and latent.values == 576
    assert absorb.flops(4096) == 4096 * 278_528 + 2 * 128 * 128 * 512 * 2
    assert naive.read(10) == 10 * 40_960 * 2


def test_errors_name_the_field_with_a_catalog_key():
    with pytest.raises(ConfigError) as exc:
        MLAConfig(32, 4, 16, 8, 5, 6).validate()
    assert exc.value.field == "qk_rope_head_dim"
    for lang in ("en", "zh"):
        assert translate(f"err.{exc.value.key}", lang, **exc.value.params) != f"err.{exc.value.key}"
    with pytest.raises(ConfigError, match="n_heads"):
        MLAConfig(32, 0, 16, 8, 4, 6).validate()
    layer = MultiHeadLatentAttention(TINY)
    with pytest.raises(ConfigError, match="mode"):
        layer(hidden_states(TINY, 2, 0), mode="fast")
    with pytest.raises(ConfigError) as exc:
        layer(hidden_states(TINY, 2, 0), mode="absorb", cache=MLACache("naive"))
    assert translate(f"err.{exc.value.key}", "zh", **exc.value.params) != f"err.{exc.value.key}"


def test_preset_file_is_valid_json_with_sources():
    from attn_core.mla.attention import PRESET_FILE

    data = json.loads(PRESET_FILE.read_text(encoding="utf-8"))
    assert all(p["source"].startswith("https://") for p in data["presets"])


@pytest.mark.parametrize("mode", ["naive", "absorb"])
def test_fill_cache_holds_what_the_forward_caches(mode):
    layer = MultiHeadLatentAttention(TINY_Q, seed=6)
    x = hidden_states(TINY_Q, 9, seed=6)
    want, got = layer(x, mode=mode).cache, fill_cache(layer, x, mode)
    assert set(got.tensors) == set(want.tensors) and got.nbytes == want.nbytes
    for name, t in want.tensors.items():
        torch.testing.assert_close(got.tensors[name], t, rtol=1e-6, atol=1e-6)
    step = hidden_states(TINY_Q, 10, seed=6)[:, 9:]
    torch.testing.assert_close(layer(step, mode=mode, cache=got).output, layer(step, mode=mode, cache=want).output)
