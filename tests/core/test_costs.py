"""attn_core.kv.costs against hand arithmetic, the parameters of a real layer, its cache and torch's FLOP counter."""

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from attn_core.attention.gqa import GroupedQueryAttention
from attn_core.kv.costs import attention_costs
from attn_core.kv.memory import dtype_bits, kv_cache_bytes
from attn_core.runtime.config import ConfigError

# (d_model, n_heads, n_kv_heads, head_dim, seq_len): GQA, a Llama-3-8B-like layer, MHA, MQA, d_model != H * d_k
SHAPES = [(128, 8, 2, 16, 12), (4096, 32, 8, 128, 4096), (4096, 32, 32, 128, 1), (768, 12, 1, 64, 7), (100, 5, 5, 7, 3)]


def test_default_page_shape_by_hand():
    c = attention_costs(128, 8, 2, 16, 12)
    assert c["params_q"] == 16_384 and c["params_o"] == 16_384  # 128 x 128
    assert c["params_k"] == c["params_v"] == 4_096  # 128 x 32
    assert c["params_total"] == 40_960
    assert c["kv_elements_per_token"] == 64  # 2 x 2 x 16
    assert c["kv_bytes_per_token"] == 128  # fp16
    assert c["kv_bytes_seq"] == 1_536  # 128 B x 12 tokens
    assert c["flops_q_proj"] == c["flops_o_proj"] == 32_768  # 2 x 128 x 128
    assert c["flops_k_proj"] == c["flops_v_proj"] == 8_192  # 2 x 128 x 32
    assert c["flops_scores"] == c["flops_weighted_sum"] == 3_072  # 2 x 8 heads x 12 keys x 16
    assert c["flops_total"] == 88_064


def test_llama_like_layer_by_hand():
    # 32 query heads, 8 KV heads of 128, d_model 4096, fp16, context 4096
    c = attention_costs(4096, 32, 8, 128, 4096)
    assert c["params_q"] == 16_777_216 and c["params_k"] == 4_194_304
    assert c["params_total"] == 2 * 16_777_216 + 2 * 4_194_304
    assert c["kv_bytes_per_token"] == 4_096  # 2 x 8 x 128 x 2 B = 4 KiB per token per layer
    assert c["kv_bytes_seq"] == 16 * 2**20  # 16 MiB per layer at 4096 tokens
    assert c["flops_scores"] == 2 * 32 * 4096 * 128


@pytest.mark.parametrize("d_model,h,h_kv,d,t", SHAPES)
@pytest.mark.parametrize("bias", [False, True])
def test_params_match_a_real_layer(d_model, h, h_kv, d, t, bias):
    with torch.device("meta"):  # shapes only, no memory: the Llama-sized layer costs nothing
        layer = GroupedQueryAttention(d_model, h, h_kv, head_dim=d, bias=bias)
    c = attention_costs(d_model, h, h_kv, d, t, bias=bias)
    for name, proj in (
        ("params_q", layer.q_proj),
        ("params_k", layer.k_proj),
        ("params_v", layer.v_proj),
        ("params_o", layer.o_proj),
    ):
        assert c[name] == sum(p.numel() for p in proj.parameters())
    assert c["params_total"] == sum(p.numel() for p in layer.parameters())


@pytest.mark.parametrize("d_model,h,h_kv,d,t", SHAPES)
def test_hand_formulas(d_model, h, h_kv, d, t):
    c = attention_costs(d_model, h, h_kv, d, t, bytes_per_element=4)
    assert c["params_q"] == d_model * h * d and c["params_k"] == d_model * h_kv * d
    assert c["kv_elements_per_token"] == 2 * h_kv * d
    assert c["kv_bytes_per_token"] == 8 * h_kv * d and c["kv_bytes_seq"] == 8 * h_kv * d * t
    assert c["flops_total"] == 2 * d_model * (2 * h + 2 * h_kv) * d + 4 * h * t * d


@pytest.mark.parametrize("d_model,h,h_kv,d,t", [(64, 8, 2, 8, 10), (48, 4, 1, 12, 5), (40, 4, 4, 10, 1)])
def test_flops_match_torch_flop_counter_for_one_decoding_step(d_model, h, h_kv, d, t):
    """One new token attends to t keys (t - 1 cached); torch counts the matmuls of our forward pass."""
    layer = GroupedQueryAttention(d_model, h, h_kv, head_dim=d)
    past = (torch.randn(1, h_kv, t - 1, d), torch.randn(1, h_kv, t - 1, d))
    x = torch.randn(1, 1, d_model)
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        layer(x, past_kv=past if t > 1 else None)
    assert counter.get_total_flops() == attention_costs(d_model, h, h_kv, d, t)["flops_total"]


@pytest.mark.parametrize("dtype,name", [(torch.float16, "fp16"), (torch.float32, "fp32"), (torch.bfloat16, "bf16")])
def test_kv_cache_size_matches_the_cached_tensors(dtype, name):
    d_model, h, h_kv, d, t = 64, 8, 2, 8, 9
    layer = GroupedQueryAttention(d_model, h, h_kv, head_dim=d).to(dtype)
    with torch.no_grad():
        out = layer(torch.randn(1, t, d_model, dtype=dtype), use_cache=True)
    k, v = out.present_kv
    cached_bytes = k.numel() * k.element_size() + v.numel() * v.element_size()
    c = attention_costs(d_model, h, h_kv, d, t, bytes_per_element=dtype_bits(name) // 8)
    assert c["kv_elements_per_token"] * t == k.numel() + v.numel()
    assert c["kv_bytes_seq"] == cached_bytes


def test_sharing_saves_kv_but_not_attention_flops():
    mha, gqa, mqa = (attention_costs(512, 8, kv, 64, 100) for kv in (8, 2, 1))
    assert mha["kv_bytes_per_token"] == 4 * gqa["kv_bytes_per_token"] == 8 * mqa["kv_bytes_per_token"]
    assert mha["flops_scores"] == gqa["flops_scores"] == mqa["flops_scores"]
    assert mha["params_q"] == mqa["params_q"] and mha["params_o"] == mqa["params_o"]
    assert mha["flops_total"] > gqa["flops_total"] > mqa["flops_total"]


@pytest.mark.parametrize(
    "kwargs,field",
    [
        (dict(n_kv_heads=3), "n_kv_heads"),
        (dict(n_kv_heads=16), "n_kv_heads"),
        (dict(d_model=0), "d_model"),
        (dict(seq_len=0), "seq_len"),
        (dict(head_dim=2.5), "head_dim"),
        (dict(bytes_per_element=0), "bytes_per_element"),
    ],
)
def test_bad_input_raises_config_error_naming_the_field(kwargs, field):
    args = dict(d_model=128, n_heads=8, n_kv_heads=2, head_dim=16, seq_len=4) | kwargs
    with pytest.raises(ConfigError) as err:
        attention_costs(**args)
    assert err.value.field == field and field in str(err.value)


def test_kv_bytes_agree_with_the_memory_calculator():
    for d_model, h, h_kv, d, t in SHAPES:
        for dtype in ("fp32", "bf16", "int8"):
            c = attention_costs(d_model, h, h_kv, d, t, bytes_per_element=dtype_bits(dtype) // 8)
            assert c["kv_bytes_seq"] == kv_cache_bytes(1, h_kv, d, t, dtype=dtype)
