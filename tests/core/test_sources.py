"""Attention sources: the seeded layer drawn in one place, and captured tensors flowing into every map view."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from attn_core.attention.longmaps import head_window, pooled_attention
from attn_core.attention.maps import compute_attention_maps
from attn_core.attention.sources import SeededLayer, TensorLayer, draw_weight, layer_generator
from attn_core.attention.tokens import synthetic_tokens, tokenize
from attn_core.runtime.config import AttentionConfig, ConfigError

TOKS = tuple(tokenize("The cat sat on the mat because it was tired ."))


def full(mask_kind="none", pad_len=None, tokens_k=None, temperature=1.0, use_scaling=True):
    cfg = AttentionConfig(n_heads=6, n_kv_heads=2, head_dim=8, seed=4, use_scaling=use_scaling)
    keys = None if tokens_k is None else list(tokens_k)
    return compute_attention_maps(cfg, list(TOKS), keys, mask_kind=mask_kind, pad_len=pad_len, temperature=temperature)


def test_the_seeded_layer_is_drawn_once_for_both_paths():
    """SeededLayer's rows are those of the GroupedQueryAttention that maps.init_layer fills from the same draws."""
    m = full()
    layer = SeededLayer(6, 2, 8, TOKS, seed=4)
    q, k, v = layer.qkv([5, 0], torch.device("cpu"), values=True)
    # two different float32 matmul shapes (all heads at once against two): float32 tolerances
    np.testing.assert_allclose(q.numpy(), m.q[[5, 0]], rtol=1e-5, atol=1e-6)
    assert sorted(k) == sorted(v) == [0, 1]  # the KV heads of query heads 5 (group 1) and 0 (group 0)
    np.testing.assert_allclose(k[1].numpy(), m.k[1], rtol=1e-5, atol=1e-6)  # head 5 reads KV head 1
    np.testing.assert_allclose(v[0].numpy(), m.v[0], rtol=1e-5, atol=1e-6)  # head 0 reads KV head 0
    g = layer_generator(4)
    assert torch.equal(draw_weight(g, 3, 5), torch.randn(3, 5, generator=torch.Generator().manual_seed(4)) / 5**0.5)


@pytest.mark.parametrize(
    "kw",
    [{}, {"mask_kind": "causal"}, {"mask_kind": "padding", "pad_len": 4}, {"temperature": 0.5, "use_scaling": False}],
)
def test_captured_tensors_give_the_same_maps_in_every_view(kw):
    """A TensorLayer holding the layer's own q, k, v (as a pretrained model's capture would) gives the
    full computation's weights through the pooled path, the zoom window and the step-by-step window."""
    m = full(**kw)
    layer = SeededLayer(6, 2, 8, TOKS, seed=4, **kw)
    captured = TensorLayer(
        m.q,
        m.k,
        m.v,
        layer.scale,
        TOKS,
        mask_kind=kw.get("mask_kind", "none"),
        pad_len=layer.pad_len,
        use_scaling=layer.use_scaling,
        temperature=layer.temperature,
    )
    want = np.where(m.mask, m.weights, np.nan)
    pm = pooled_attention(captured, entropy=True)
    np.testing.assert_allclose(pm.weights, want, rtol=1e-5, atol=1e-6, equal_nan=True)
    np.testing.assert_allclose(pm.entropy, m.entropy, rtol=1e-5, atol=1e-5)
    seeded = pooled_attention(layer, entropy=True)
    np.testing.assert_allclose(pm.weights, seeded.weights, rtol=1e-5, atol=1e-6, equal_nan=True)
    hw = head_window(captured, head=3, q_start=2, k_start=1, size=5)
    np.testing.assert_allclose(hw.weights, m.weights[3, 2:7, 1:6], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(hw.head_output, m.head_outputs[3, 2:7], rtol=1e-5, atol=1e-5)
    assert (hw.use_scaling, hw.temperature) == (layer.use_scaling, layer.temperature)


def test_cross_attention_source():
    ctx = tuple(tokenize("Le chat était fatigué ."))
    m = full(tokens_k=ctx)
    captured = TensorLayer(m.q, m.k, m.v, m.scale, TOKS, ctx)
    assert captured.cross and captured.keys == ctx
    pm = pooled_attention(captured)
    np.testing.assert_allclose(pm.weights, m.weights, rtol=1e-5, atol=1e-6)
    assert pm.tokens_k == ctx


def test_bad_sources_say_what_is_wrong():
    with pytest.raises(ConfigError, match="n_kv_heads"):
        SeededLayer(6, 4, 8, TOKS)
    with pytest.raises(ConfigError, match="temperature"):
        SeededLayer(6, 2, 8, TOKS, temperature=0.0)
    with pytest.raises(ConfigError, match="causal"):
        SeededLayer(6, 2, 8, TOKS, ("a",), mask_kind="causal")
    m = full()
    with pytest.raises(ValueError, match="tokens"):
        TensorLayer(m.q, m.k, m.v, m.scale, TOKS[:-1])
    with pytest.raises(ConfigError, match="divisible"):
        TensorLayer(m.q[:5], m.k, m.v, m.scale, TOKS)


def test_a_long_captured_layer_is_pooled_like_the_seeded_one():
    toks = tuple(synthetic_tokens(300))
    layer = SeededLayer(4, 2, 8, toks, mask_kind="causal", seed=1)
    q, k, v = layer.qkv(range(4), torch.device("cpu"), values=True)
    captured = TensorLayer(
        q.numpy(),
        torch.stack([k[0], k[1]]).numpy(),
        torch.stack([v[0], v[1]]).numpy(),
        layer.scale,
        toks,
        mask_kind="causal",
    )
    a = pooled_attention(layer, max_side=32, reduce="mean")
    b = pooled_attention(captured, max_side=32, reduce="mean")
    assert a.factor == b.factor == 10
    np.testing.assert_allclose(a.weights, b.weights, rtol=1e-5, atol=1e-6, equal_nan=True)
