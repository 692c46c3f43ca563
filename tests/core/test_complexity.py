"""attn_core.complexity.stages: FLOPs and bytes by stage against hand arithmetic, torch's flop counter and the tensors
the eager path holds; fused against eager; the budget refusal. The measured slope of the score stage is a wall-clock
figure: bench/complexity_slope.py."""

from __future__ import annotations

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from attn_core.complexity import stages as cx
from attn_core.kv.memory import load_presets
from attn_core.runtime.config import ConfigError


@pytest.mark.parametrize("kv", [4, 2, 1], ids=["MHA", "GQA", "MQA"])
def test_flops_by_hand(kv):
    # n = 10 tokens, d = 32, 4 query heads of 8, kv K/V heads of 8
    f = cx.flops_by_stage(10, 32, 4, kv, 8)
    assert f["qkv_projection"] == 2 * 10 * 32 * (4 * 8 + 2 * kv * 8)  # MHA 30720 + ..., shrinks with kv
    assert f["scores"] == 2 * 100 * 4 * 8 == 6400  # every query head scores every key, whatever kv
    assert f["softmax"] == 3 * 4 * 100 == 1200
    assert f["weighted_sum"] == 6400
    assert f["output_projection"] == 2 * 10 * 32 * 32 == 20480
    assert "mlp" not in f
    assert cx.flops_by_stage(10, 32, 4, kv, 8, mlp_width=128)["mlp"] == 2 * 10 * 32 * 128 * 2


def test_causal_counts_unmasked_pairs():
    n = 9
    unmasked = int(torch.ones(n, n).tril().sum())  # what a causal mask leaves
    f = cx.flops_by_stage(n, 16, 2, 1, 8, causal=True)
    assert unmasked == 45
    assert f["scores"] == f["weighted_sum"] == 2 * 45 * 2 * 8
    assert f["softmax"] == 3 * 2 * 45
    full = cx.flops_by_stage(n, 16, 2, 1, 8)
    assert f["qkv_projection"] == full["qkv_projection"]  # projections see every token either way


@pytest.mark.parametrize("kv", [4, 2, 1], ids=["MHA", "GQA", "MQA"])
def test_flops_match_torch_flop_counter(kv):
    shape = cx.LayerShape(32, 4, kv, 8)
    n = 12
    layer = cx.make_layer(n, shape)
    want = cx.flops_by_stage(n, 32, 4, kv, 8)
    counted = {}
    stages = cx.eager_stages(layer, shape)
    while True:
        with FlopCounterMode(display=False) as fc:
            try:
                stage, _ = next(stages)
            except StopIteration:
                break
        counted[stage] = fc.get_total_flops()
    for stage in ("qkv_projection", "scores", "weighted_sum", "output_projection"):  # the matmul stages
        assert counted[stage] == want[stage], stage
    assert counted["softmax"] == 0  # torch counts matmuls only: the softmax is our stated convention


@pytest.mark.parametrize("kv", [4, 2, 1])
def test_eager_memory_is_the_tensors_nbytes(kv):
    shape = cx.LayerShape(24, 4, kv, 6)
    n = 11
    held = {stage: sum(t.nbytes for t in made) for stage, made in cx.eager_stages(cx.make_layer(n, shape), shape)}
    assert held == cx.memory_by_stage(n, 24, 4, kv, 6, "eager")
    assert held["scores"] == 4 * 4 * n * n  # h·n² float32, the weights the same


def test_fused_memory_is_output_and_row_statistics():
    shape = cx.LayerShape(24, 4, 2, 6)
    n = 11
    layer = cx.make_layer(n, shape)
    q, k, v = cx._project(layer, shape)
    out, lse = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(
        q[None], k.repeat_interleave(2, 0)[None], v.repeat_interleave(2, 0)[None]
    )[:2]
    m = cx.memory_by_stage(n, 24, 4, 2, 6, "fused")
    assert m["attention"] == out.nbytes + lse.nbytes  # the CPU flash kernel's output and log-sum-exp [h, n]
    assert m["qkv_projection"] == q.nbytes + k.nbytes + v.nbytes
    assert m["attention"] < cx.memory_by_stage(n, 24, 4, 2, 6)["scores"]


@pytest.mark.parametrize("kv,causal", [(4, False), (2, True), (1, False), (1, True)])
def test_fused_equals_eager(kv, causal):
    shape = cx.LayerShape(32, 4, kv, 8, causal)
    layer = cx.make_layer(37, shape, seed=3)
    eager, fused = cx.eager_forward(layer, shape), cx.fused_forward(layer, shape)
    torch.testing.assert_close(fused, eager, rtol=1e-5, atol=1e-5)
    # and both equal the textbook formula with repeat_kv, computed independently
    q, k, v = cx._project(layer, shape)
    k, v = k.repeat_interleave(4 // kv, 0), v.repeat_interleave(4 // kv, 0)
    s = q @ k.transpose(1, 2) / 8**0.5
    if causal:
        s = s.masked_fill(torch.ones(37, 37, dtype=torch.bool).triu(1), float("-inf"))
    ref = (s.softmax(-1) @ v).transpose(0, 1).reshape(37, 32) @ layer.wo.T
    torch.testing.assert_close(eager, ref, rtol=1e-5, atol=1e-5)


def test_backend_is_found_not_assumed():
    from torch.nn.attention import SDPBackend, sdpa_kernel

    q = torch.randn(2, 16, 8)
    name = cx.sdpa_backend(q, q, q, False)
    with sdpa_kernel([getattr(SDPBackend, name.upper())]):  # the reported one runs on its own
        cx.fused_attention(q, q, q, False)
    v = torch.randn(2, 16, 5)  # value width unlike the query's: the fused kernels refuse, the math path runs
    assert cx.sdpa_backend(q, q, v, False) == "math"


def test_sweep_over_budget_is_refused_before_allocating(monkeypatch):
    monkeypatch.setenv("ATTN_MAX_BYTES", str(64 * 2**20))

    def no_alloc(*a, **k):
        raise AssertionError("allocated before the budget check")

    monkeypatch.setattr(cx, "make_layer", no_alloc)
    spec = cx.SweepSpec((64, 2048), cx.LayerShape(64, 4, 4, 16))  # eager at 2048: 2 x 4 x 2048² x 4 B = 128 MiB
    gen = cx.measure_sweep(spec)
    with pytest.raises(ConfigError) as err:
        next(gen)
    assert err.value.key == "budget" and err.value.field == "seq_len"
    assert cx.sweep_bytes(spec) > 64 * 2**20
    with pytest.raises(ConfigError):
        cx.check_sweep(spec)


def test_measured_point_on_cpu():
    shape = cx.LayerShape(32, 4, 2, 8)
    spec = cx.SweepSpec((16, 32), shape, repeats=2, warmup=0)
    got = list(cx.measure_sweep(spec))
    assert [(m.n, m.path) for m in got] == [(16, "eager"), (16, "fused"), (32, "eager"), (32, "fused")]
    eager, fused = got[2], got[3]
    assert set(eager.median_s) == set(cx.STAGES) and set(fused.median_s) == set(cx.FUSED_PARTS)
    assert eager.peak_kind == "tensor_bytes"
    assert eager.peak_bytes == cx.peak_bytes(32, shape, "eager")  # Q, K, V, scores and weights alive at once
    assert eager.peak_bytes == 4 * (8 * 32 * 8 + 2 * 4 * 32 * 32)  # by hand: QKV [8 head rows] and two [4, 32, 32]
    assert fused.peak_bytes == cx.peak_bytes(32, shape, "fused")
    assert fused.backend in {b.lower() for b in cx.backend_names()}
    for m in got:
        for s in m.median_s:
            assert 0 <= m.min_s[s] <= m.median_s[s] <= m.max_s[s]


def test_small_n_peak_is_the_late_stages():
    """At small n the weights, the heads' outputs and the layer's output outweigh the scores and the weights."""
    shape = cx.LayerShape(64, 2, 2, 32)
    spec = cx.SweepSpec((4, 64), shape, paths=("eager",), repeats=1, warmup=0)
    small, large = list(cx.measure_sweep(spec))
    assert small.peak_bytes == 4 * (3 * 2 * 4 * 32 + 2 * 16 + 2 * 4 * 32 + 4 * 64) == cx.peak_bytes(4, shape, "eager")
    assert large.peak_bytes == 4 * (3 * 2 * 64 * 32 + 2 * 2 * 64 * 64) == cx.peak_bytes(64, shape, "eager")


def test_fit_slope_exact():
    n = [64, 128, 256, 512, 1024]
    s = cx.fit_slope(n, [3e-9 * x**2 for x in n], n_min=128)
    assert s.slope == pytest.approx(2.0) and (s.n_lo, s.n_hi, s.points) == (128, 1024, 4)
    assert cx.fit_slope(n, [5e-6 * x for x in n], n_min=0).slope == pytest.approx(1.0)
    assert cx.fit_slope([64, 128], [1, 2], n_min=256) is None


def test_crossovers_of_the_shipped_models():
    gpt2 = load_presets()["gpt2"]
    g = cx.LayerShape(gpt2.hidden_size, gpt2.n_heads, gpt2.n_kv_heads, gpt2.head_dim)
    assert cx.crossover_n(g) == 1536 == 2 * 768
    assert cx.crossover_n(g, mlp_width=4 * 768) == 4608 == 6 * 768
    assert gpt2.max_positions == 1024 < cx.crossover_n(g)  # GPT-2 never reaches it
    smol = cx.SHIPPED_SHAPES["smollm2-135m"]
    s = cx.LayerShape(smol.d_model, smol.n_heads, smol.n_kv_heads, smol.head_dim)
    assert cx.crossover_n(s) == 768
    assert cx.crossover_n(s, mlp_width=4 * 576) == 3072
    # its real SwiGLU MLP (3 matrices of 1536) costs exactly what a 4d two-matrix MLP does
    assert cx.crossover_n(s, mlp_width=smol.mlp_width, mlp_matrices=3) == 3072
    # at the crossover the two sides are equal (no mask); causal moves it to about twice as far
    f = cx.flops_by_stage(1536, 768, 12, 12, 64)
    assert f["scores"] + f["weighted_sum"] == f["qkv_projection"] + f["output_projection"]
    gc = cx.LayerShape(768, 12, 12, 64, causal=True)
    fc = cx.flops_by_stage(round(cx.crossover_n(gc)), 768, 12, 12, 64, causal=True)
    assert fc["scores"] + fc["weighted_sum"] == fc["qkv_projection"] + fc["output_projection"]


def test_bad_values_name_the_field():
    with pytest.raises(ConfigError) as err:
        cx.flops_by_stage(8, 32, 4, 3, 8)
    assert err.value.field == "n_kv_heads"
    with pytest.raises(ConfigError) as err:
        cx.flops_by_stage(0, 32, 4, 4, 8)
    assert err.value.field == "seq_len"
    with pytest.raises(ConfigError):
        cx.memory_by_stage(8, 32, 4, 4, 8, "flash")
