"""The cost page's view model: sentences chosen from the numbers (never fixed claims), the sweep's table and
slopes from its measurements, prefill against decode by hand, the course note's numbers, the CLI's views."""

from __future__ import annotations

import pytest
import torch

from attn_core.complexity import stages as cx
from attn_core.figures import Style
from attn_core.figures import complexity as cfig
from attn_core.runtime.config import ConfigError
from attn_core.views import complexity as cv

S = Style()


def fake_sweep(shape: cx.LayerShape, slope: float, softmax_rate: float) -> list[cx.Measured]:
    """Measurements whose n² stages take c·n^slope seconds, the softmax at ``softmax_rate`` × the matmul's FLOP/s."""
    out = []
    for n in (64, 128, 256, 512, 1024):
        f = cx.flops_by_stage(n, shape.d_model, shape.n_heads, shape.n_kv_heads, shape.head_dim)
        t = {k: 1e-9 * n**slope if k in cx.N2_STAGES else 1e-6 * n for k in cx.STAGES}
        t["softmax"] = t["scores"] * f["softmax"] / f["scores"] / softmax_rate
        out.append(cx.Measured(n, "eager", t, t, t, 1000 * n, "tensor_bytes"))
        fused = {"qkv_projection": t["qkv_projection"], "attention": t["scores"], "output_projection": 1e-6 * n}
        out.append(cx.Measured(n, "fused", fused, fused, fused, 10 * n, "tensor_bytes", "flash_attention"))
    return out


SHAPE = cx.LayerShape(64, 2, 1, 32)
SPEC = cx.SweepSpec((64, 128, 256, 512, 1024), SHAPE)


def test_sweep_lengths_are_the_powers_of_two_up_to_n():
    assert cv.Params(seq_len=4096).sweep_lens == (64, 128, 256, 512, 1024, 2048, 4096)
    assert cv.Params(seq_len=64).sweep_lens == (64,)
    assert cv.pd_lens(cv.Params(seq_len=4096)) == (64, 1024, 4096)


def test_share_and_crossover_sentences_follow_the_numbers():
    d = 256  # crossover of the attention at 2·d = 512
    below, above = cv.Params(seq_len=256, d_model=d), cv.Params(seq_len=2048, d_model=d)
    assert "still do most of the work" in cv.share_sentence(below, S)
    assert "dominates the cost" in cv.share_sentence(above, S)
    assert "you are below it" in cv.crossover_sentence(below, S) and "n = 512" in cv.crossover_sentence(below, S)
    assert "past the attention" in cv.crossover_sentence(above, S)
    causal = cv.Params(seq_len=512, d_model=d, causal=True)
    assert "n = 1,023" in cv.crossover_sentence(causal, S)  # 2·L/(4·h·d_h) − 1


def test_measured_sentences_and_slopes_come_from_the_measurements():
    steep = fake_sweep(SHAPE, 2.7, softmax_rate=0.05)
    text = " ".join(cv.measured_sentences(steep, SPEC, "cpu", S))
    assert "flash_attention" in text and "waits on memory" in text and "faster than the count" in text
    table = cv.slopes_frame(steep, SPEC, S)
    row = table[table.iloc[:, 0] == "eager · Scores QKᵀ"].iloc[0]
    assert row.iloc[2] == "2.70" and row.iloc[3] == "256 … 1,024"  # fitted from n = 256 on
    even = fake_sweep(SHAPE, 2.0, softmax_rate=1.0)
    text = " ".join(cv.measured_sentences(even, SPEC, "cpu", S))
    assert "keeps up with the matmul" in text and "count's n²" not in text
    flat = " ".join(cv.measured_sentences(fake_sweep(SHAPE, 1.2, 1.0), SPEC, "cpu", S))
    assert "slower than the count" in flat


def test_sweep_frame_flops_per_second():
    steps = fake_sweep(SHAPE, 2.0, 1.0)
    df = cv.sweep_frame(steps, SHAPE, S)
    row = df[(df.n == 1024) & (df.part == "scores")].iloc[0]
    assert row.flops == 2 * 1024**2 * 64 and row.gflop_per_s == pytest.approx(row.flops / (1e-9 * 1024**2) / 1e9)
    fused = df[(df.n == 1024) & (df.part == "attention")].iloc[0]
    f = cx.flops_by_stage(1024, 64, 2, 1, 32)
    assert fused.flops == f["scores"] + f["softmax"] + f["weighted_sum"]
    assert cv.sweep_progress(SPEC, steps[:3], S)[0] == 3 / 10


def test_prefill_and_decode_per_token_by_hand():
    p = cv.Params(seq_len=256, d_model=64, n_heads=2, n_kv_heads=1, head_dim=32)
    df = cv.pd_counted(p, S)
    pre = df[(df["mode"] == "prefill") & (df.n == 256)].iloc[0]
    dec = df[(df["mode"] == "decode") & (df.n == 256)].iloc[0]
    lin = 2 * 64 * (64 + 64) + 2 * 64 * 64  # QKV (h·d_h = 64, 2·h_kv·d_h = 64) and output, per token
    pairs = 256 * 257 // 2
    assert pre.flops_per_token == (lin * 256 + (4 * 64 + 3 * 2) * pairs) / 256
    assert dec.flops_per_token == lin + (4 * 64 + 3 * 2) * 256
    weights = 4 * 64 * (2 * 64 + 2 * 32)
    assert dec.bytes_per_token == weights + 2 * 1 * 256 * 32 * 4
    assert "limited by memory bandwidth" in " ".join(cv.pd_sentences(p, None, S))


def test_the_note_numbers_side_by_side():
    p = cv.Params(seq_len=100, d_model=96, n_heads=3, n_kv_heads=3, head_dim=32)
    v = cv.note_numbers(p)
    assert v["per_head"] == 4 * 100**2 * 32 and v["total"] == 3 * v["per_head"]
    assert v["note_quad"] == 100**2 * 96 // 3
    assert "12×" in cv.note_sentence(p, S)  # 4·h
    one = cv.Params(seq_len=100, d_model=96, n_heads=1, n_kv_heads=1, head_dim=96)
    assert "from two heads on" in cv.note_sentence(one, S)
    assert "≠ d = 96" in cv.note_sentence(cv.Params(seq_len=100, d_model=96, n_heads=2, n_kv_heads=2, head_dim=16), S)
    heads = cv.heads_view(p, S).data
    assert set(heads.total) == {4 * 100**2 * 96} and list(heads.heads) == [1, 2, 3, 4, 8, 16, 32]


def test_run_device_and_the_views_of_the_command_line():
    if not torch.cuda.is_available():
        with pytest.raises(ConfigError) as err:
            cv.run_device("cuda", "cpu")
        assert err.value.key == "device_missing"
    assert cv.run_device("auto", "cpu") == "cpu"
    names = [
        v.name
        for v in cv.views(
            cv.Params(seq_len=128, d_model=32, n_heads=2, n_kv_heads=1, head_dim=16), S, "counted,formula"
        )
    ]
    assert names == ["complexity_stages_n128_h2_kv1", "complexity_flops_d32_h2_kv1_dh16", "complexity_note_n128_w32"]


def test_si_and_stage_bars_totals():
    assert cfig.si(1.5e9) == "1.5 G" and cfig.si(512) == "512 "
    fig = cfig.stage_bars(["a", "b"], {"scores": [1, 2], "softmax": [3, 4]}, {"scores": "S", "softmax": "M"}, "t")
    totals = fig.data[-1].y
    assert list(totals) == [4.0, 6.0]
