"""attn_core.attention.gqa against torch's own scaled_dot_product_attention and hand arithmetic."""

import math

import pytest
import torch
import torch.nn.functional as F

from attn_core.attention.gqa import (
    GroupedQueryAttention,
    kv_group_of,
    masked_softmax,
    repeat_kv,
    scaled_dot_product_attention,
)
from attn_core.attention.masks import causal_mask, padding_mask
from attn_core.runtime.config import ConfigError

SHAPES = [(8, 8), (8, 2), (8, 1), (6, 3), (12, 4)]  # (H, H_kv): MHA, GQA, MQA, ...


def rand_qkv(h, h_kv, b=2, tq=7, tk=7, d=16, seed=0):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(b, h, tq, d, generator=g)
    k = torch.randn(b, h_kv, tk, d, generator=g)
    v = torch.randn(b, h_kv, tk, d, generator=g)
    return q, k, v


def test_repeat_kv_matches_repeat_interleave_and_mapping():
    x = torch.randn(2, 3, 5, 4)
    out = repeat_kv(x, 4)
    assert out.shape == (2, 12, 5, 4)
    assert torch.equal(out, torch.repeat_interleave(x, 4, dim=1))
    for h in range(12):
        assert torch.equal(out[:, h], x[:, kv_group_of(h, 12, 3)])
        assert kv_group_of(h, 12, 3) == h // 4
    assert repeat_kv(x, 1) is x


def test_kv_group_of_rejects_bad_input():
    with pytest.raises(ConfigError, match="valid n_kv_heads: 1, 2, 3, 4, 6, 12"):
        kv_group_of(0, 12, 5)
    with pytest.raises(ConfigError):
        kv_group_of(12, 12, 4)


@pytest.mark.parametrize("h,h_kv", SHAPES)
@pytest.mark.parametrize("causal", [False, True])
def test_sdpa_matches_torch(h, h_kv, causal):
    q, k, v = rand_qkv(h, h_kv)
    mask = causal_mask(7) if causal else None
    res = scaled_dot_product_attention(q, k, v, mask=mask)
    ref = F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=True)
    torch.testing.assert_close(res.output, ref, atol=1e-5, rtol=1e-5)
    # and against explicitly repeated K/V
    ref2 = F.scaled_dot_product_attention(q, repeat_kv(k, h // h_kv), repeat_kv(v, h // h_kv), is_causal=causal)
    torch.testing.assert_close(res.output, ref2, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(res.weights.sum(-1), torch.ones(2, h, 7), atol=1e-6, rtol=0)


def test_sdpa_cross_attention_rectangular_and_padding():
    q, k, v = rand_qkv(4, 2, tq=3, tk=9)
    pm = padding_mask([9, 5], 9)  # [B, 1, 1, Tk]
    res = scaled_dot_product_attention(q, k, v, mask=pm)
    assert res.weights.shape == (2, 4, 3, 9)
    assert torch.all(res.weights[1, :, :, 5:] == 0)
    assert torch.isinf(res.scores[1, :, :, 5:]).all() and (res.scores[1, :, :, 5:] < 0).all()
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=pm, enable_gqa=True)
    torch.testing.assert_close(res.output, ref, atol=1e-5, rtol=1e-5)


def test_scaling_options_by_hand():
    q, k, v = rand_qkv(2, 2, b=1, tq=2, tk=3, d=9)
    raw = q @ k.transpose(-2, -1)
    assert torch.allclose(scaled_dot_product_attention(q, k, v).scores, raw / 3.0, atol=1e-6)
    assert torch.allclose(scaled_dot_product_attention(q, k, v, use_scaling=False).scores, raw, atol=1e-6)
    assert torch.allclose(scaled_dot_product_attention(q, k, v, scale=0.25).scores, raw * 0.25, atol=1e-6)
    ref = F.scaled_dot_product_attention(q, k, v, scale=1.0)
    torch.testing.assert_close(scaled_dot_product_attention(q, k, v, use_scaling=False).output, ref)


def test_fully_masked_row_gives_zero_weights_not_nan():
    q, k, v = rand_qkv(2, 1, b=1, tq=3, tk=4)
    mask = torch.ones(3, 4, dtype=torch.bool)
    mask[1] = False
    res = scaled_dot_product_attention(q, k, v, mask=mask)
    assert not torch.isnan(res.weights).any() and not torch.isnan(res.output).any()
    assert torch.all(res.weights[0, :, 1] == 0) and torch.all(res.output[0, :, 1] == 0)
    torch.testing.assert_close(res.weights[0, :, 0].sum(-1), torch.ones(2))


def test_softmax_in_float32_for_half_inputs():
    q, k, v = (t.half() for t in rand_qkv(4, 2, d=64))
    res = scaled_dot_product_attention(q, k, v, use_scaling=False)
    assert res.weights.dtype == torch.float32 and res.scores.dtype == torch.float32
    assert res.output.dtype == torch.float16
    assert torch.isfinite(res.weights).all()


def test_masked_softmax_large_scores_stay_finite():
    s = torch.tensor([[1000.0, 999.0, -1000.0], [float("-inf")] * 3])
    p = masked_softmax(s)
    assert torch.isfinite(p).all()
    torch.testing.assert_close(p[0], torch.softmax(s[0], -1))
    assert torch.all(p[1] == 0)


def test_sdpa_rejects_non_divisible_heads():
    q, k, v = rand_qkv(6, 4)
    with pytest.raises(ConfigError, match="valid n_kv_heads: 1, 2, 3, 6"):
        scaled_dot_product_attention(q, k, v)


def make_layer(d_model=32, h=4, h_kv=2, head_dim=None, seed=0):
    torch.manual_seed(seed)
    return GroupedQueryAttention(d_model, h, h_kv, head_dim).eval()


@pytest.mark.parametrize("h,h_kv", [(4, 4), (4, 2), (4, 1)])
def test_layer_matches_manual_torch(h, h_kv):
    layer = make_layer(h=h, h_kv=h_kv)
    x = torch.randn(2, 7, 32)
    out = layer(x, causal=True)
    d = 32 // h
    q = layer.q_proj(x).view(2, 7, h, d).transpose(1, 2)
    k = layer.k_proj(x).view(2, 7, h_kv, d).transpose(1, 2)
    v = layer.v_proj(x).view(2, 7, h_kv, d).transpose(1, 2)
    y = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
    ref = layer.o_proj(y.transpose(1, 2).reshape(2, 7, h * d))
    torch.testing.assert_close(out.output, ref, atol=1e-5, rtol=1e-5)
    assert out.weights.shape == (2, h, 7, 7)
    assert out.k.shape == (2, h_kv, 7, d)


def test_incremental_decoding_equals_full_causal_forward():
    layer = make_layer(h=4, h_kv=2)
    x = torch.randn(1, 9, 32)
    full = layer(x, causal=True)
    past, outs = None, []
    prefill = layer(x[:, :4], causal=True, use_cache=True)
    past = prefill.present_kv
    outs.append(prefill.output)
    for t in range(4, 9):
        step = layer(x[:, t : t + 1], past_kv=past, use_cache=True, causal=True)
        past = step.present_kv
        outs.append(step.output)
    torch.testing.assert_close(torch.cat(outs, dim=1), full.output, atol=1e-5, rtol=1e-5)
    # the cache keeps the un-repeated KV heads: n_kv_heads, not n_heads
    assert past[0].shape == (1, 2, 9, 8) and past[1].shape == (1, 2, 9, 8)


def test_gqa_with_all_heads_equals_plain_mha():
    layer = make_layer(h=4, h_kv=4)
    mha = torch.nn.MultiheadAttention(32, 4, bias=False, batch_first=True)
    with torch.no_grad():
        mha.in_proj_weight.copy_(torch.cat([layer.q_proj.weight, layer.k_proj.weight, layer.v_proj.weight]))
        mha.out_proj.weight.copy_(layer.o_proj.weight)
    x = torch.randn(2, 6, 32)
    ref, ref_w = mha(x, x, x, need_weights=True, average_attn_weights=False)
    out = layer(x)
    torch.testing.assert_close(out.output, ref, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(out.weights, ref_w, atol=1e-5, rtol=1e-5)


def test_cross_attention_context():
    layer = make_layer(h=4, h_kv=1)
    x, ctx = torch.randn(1, 3, 32), torch.randn(1, 5, 32)
    out = layer(x, context=ctx)
    assert out.weights.shape == (1, 4, 3, 5)
    torch.testing.assert_close(out.weights.sum(-1), torch.ones(1, 4, 3))


def test_layer_validates_arguments():
    with pytest.raises(ConfigError, match="divisible by n_kv_heads"):
        GroupedQueryAttention(32, 4, 3)
    with pytest.raises(ConfigError, match="d_model"):
        GroupedQueryAttention(30, 4, 2)
    layer = GroupedQueryAttention(30, 4, 2, head_dim=8)  # explicit head_dim need not divide d_model
    assert layer.q_proj.weight.shape == (32, 30)


def test_default_scale_is_inverse_sqrt_head_dim():
    q, k, v = rand_qkv(1, 1, b=1, tq=1, tk=2, d=4)
    res = scaled_dot_product_attention(q, k, v)
    s = (q @ k.transpose(-2, -1))[0, 0, 0] / math.sqrt(4)
    torch.testing.assert_close(res.weights[0, 0, 0], torch.softmax(s, -1))
