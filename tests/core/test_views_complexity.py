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
    d = 256  # crossover of the n² stages at L/(4·h·d_h + 3·h) = 524,288 / 1,036 ≈ 506 (2·d = 512 without the softmax)
    below, above = cv.Params(seq_len=256, d_model=d), cv.Params(seq_len=2048, d_model=d)
    assert "still do most of the work" in cv.share_sentence(below, S)
    assert "dominates the cost" in cv.share_sentence(above, S)
    assert "you are below it" in cv.crossover_sentence(below, S) and "n = 506" in cv.crossover_sentence(below, S)
    assert "past the attention" in cv.crossover_sentence(above, S)
    causal = cv.Params(seq_len=512, d_model=d, causal=True)
    assert "n = 1,011" in cv.crossover_sentence(causal, S)  # 2·L/(4·h·d_h + 3·h) − 1


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


ZH = Style(lang="zh")
KIB = 1024


@pytest.mark.parametrize(
    ("d", "h", "kv", "dh", "n", "parts"),
    [
        # Q, K, V 3·4·64·64·4 B; the weights 4·64·64·4; the heads' outputs 4·64·64·4; the output 64·256·4
        (256, 4, 4, 64, 64, {"qkv": 192 * KIB, "weights": 64 * KIB, "heads_output": 64 * KIB, "output": 64 * KIB}),
        # Q 2·64·32·4, K and V 1·64·32·4 each; the weights 2·64·64·4; the heads' outputs 2·64·32·4; the output 64·256·4
        (256, 2, 1, 32, 64, {"qkv": 32 * KIB, "weights": 32 * KIB, "heads_output": 16 * KIB, "output": 64 * KIB}),
        # Q, K, V 3·128·256·4; the weights 128·128·4; the heads' outputs 128·256·4; the output 128·256·4
        (256, 1, 1, 256, 128, {"qkv": 384 * KIB, "weights": 64 * KIB, "heads_output": 128 * KIB, "output": 128 * KIB}),
    ],
)
def test_the_memory_sentence_names_the_tensors_alive_at_the_eager_peak(d, h, kv, dh, n, parts):
    shape = cx.LayerShape(d, h, kv, dh)
    assert cx.peak_tensors(n, shape, "eager") == parts
    assert cx.peak_bytes(n, shape, "eager") == sum(parts.values())
    p = cv.Params(seq_len=n, d_model=d, n_heads=h, n_kv_heads=kv, head_dim=dh)
    en, zh = cv.memory_sentence(p, S), cv.memory_sentence(p, ZH)
    from attn_core.runtime.units import format_bytes

    assert f"peaks at {format_bytes(sum(parts.values()))}" in en
    assert "scores" not in en.split(";")[0] and "得分" not in zh.split("；")[0]  # freed before this peak
    assert f"权重 {h} × {n} × {n}（{format_bytes(parts['weights'])}）" in zh
    assert f"the {h} × {n} × {n} weights ({format_bytes(parts['weights'])})" in en
    assert f"the heads' outputs {h} × {n} × {dh} ({format_bytes(parts['heads_output'])})" in en
    assert f"the layer's output {n} × {d} ({format_bytes(parts['output'])})" in en
    assert f"各头的输出 {h} × {n} × {dh}（{format_bytes(parts['heads_output'])}）" in zh
    assert f"该层的输出 {n} × {d}（{format_bytes(parts['output'])}）" in zh


def test_the_eager_peak_during_the_softmax_names_the_scores():
    shape = cx.LayerShape(64, 2, 1, 32)
    parts = cx.peak_tensors(128, shape, "eager")  # n > d: the two n × n matrices outweigh the rest
    assert parts == {"qkv": 4 * 4 * 128 * 32, "scores": 4 * 2 * 128 * 128, "weights": 4 * 2 * 128 * 128}
    en = cv.memory_sentence(cv.Params(seq_len=128, d_model=64, n_heads=2, n_kv_heads=1, head_dim=32), S)
    assert "the 2 × 128 × 128 scores" in en and "heads' outputs" not in en.split(";")[0]


def test_ratios_print_with_two_figures_and_about_the_same_near_one():
    got = [cv.ratio(r) for r in (1.2, 1.4, 1.29, 2.2, 12.3, 1234.0, 0.52)]
    assert got == ["1.2", "1.4", "1.3", "2.2", "12", "1,234", "0.52"]
    # the eager peak 1.2× the fused one: d = 256, h = 4, d_h = 64, n = 64 is 384 / 320 KiB
    p = cv.Params(seq_len=64, d_model=256, n_heads=4, n_kv_heads=4, head_dim=64)
    en, zh = cv.memory_sentence(p, S), cv.memory_sentence(p, ZH)
    assert "1.2×" in en and "1×" not in en and "less" not in en
    assert "1.2 倍" in zh and "少 1 倍" not in zh
    wide = cv.Params(seq_len=64, d_model=4096, n_heads=1, n_kv_heads=1, head_dim=4)  # 1.02: the n × n are tiny
    assert "about the same" in cv.memory_sentence(wide, S) and "大致相同" in cv.memory_sentence(wide, ZH)


def test_one_head_is_singular_and_has_no_comparison():
    one = cv.Params(seq_len=128, d_model=256, n_heads=1, n_kv_heads=1, head_dim=256)
    for style in (S, ZH):
        text = cv.heads_sentence(one, style)
        assert "1 heads" not in text and "into 1" not in text
        assert "against" not in text and "对" not in text  # one softmax: nothing to compare
    assert "One head of width 256" in cv.heads_sentence(one, S)
    assert "against" in cv.heads_sentence(cv.Params(seq_len=128), S)  # 4 heads: the softmax compared
    rows = " ".join(cv.note_frame(one, S).iloc[:, 0]) + " " + " ".join(cv.stage_view(one, S).figure.data[0].x)
    assert "1 heads" not in rows and "all 1" not in rows
    assert "1 head × d_h = 256" in cv.stage_view(one, S).figure.data[0].x


def test_the_cache_story_only_when_the_quadratic_stages_depart_more_on_a_cpu():
    steep = fake_sweep(SHAPE, 2.7, softmax_rate=1.0)  # the n² stages at n^2.7, the projections at n
    assert "CPU caches" in " ".join(cv.measured_sentences(steep, SPEC, "cpu", S))
    assert "CPU 缓存" in " ".join(cv.measured_sentences(steep, SPEC, "cpu", ZH))
    on_cuda = " ".join(cv.measured_sentences(steep, SPEC, "cuda", S))
    assert "cache" not in on_cuda and "n^2.70" in on_cuda and "projections" in on_cuda
    slow_all = [  # every stage slows as n^0.7 more: the projections depart as much as the n² stages
        cx.Measured(
            m.n,
            m.path,
            *({k: v * m.n**0.7 for k, v in d.items()} for d in (m.median_s, m.min_s, m.max_s)),
            m.peak_bytes,
            m.peak_kind,
            m.backend,
        )
        for m in fake_sweep(SHAPE, 2.0, softmax_rate=1.0)
    ]
    for style in (S, ZH):
        text = " ".join(cv.measured_sentences(slow_all, SPEC, "cpu", style))
        assert "CPU caches" not in text and "CPU 缓存" not in text and "1.70" in text


def test_causal_gflops_divide_the_work_each_path_does():
    shape = cx.LayerShape(64, 2, 1, 32, causal=True)
    steps = fake_sweep(shape, 2.0, 1.0)
    df = cv.sweep_frame(steps, shape, S)
    full = cx.flops_by_stage(1024, 64, 2, 1, 32, causal=False)
    half = cx.flops_by_stage(1024, 64, 2, 1, 32, causal=True)
    eager = df[(df.n == 1024) & (df.path == "eager") & (df.part == "scores")].iloc[0]
    assert eager.flops == full["scores"]  # the eager path computes all n² scores, then masks them
    fused = df[(df.n == 1024) & (df.part == "attention")].iloc[0]
    assert fused.flops == half["scores"] + half["softmax"] + half["weighted_sum"]  # flash skips masked blocks
    for style in (S, ZH):
        note = cv.slopes_note(shape, style)
        assert ("all n²" in note or "全部 n²" in note) and "n·(n+1)/2" in note


def test_the_crossover_marks_include_the_softmax_the_curve_draws():
    p = cv.Params(seq_len=4096, d_model=256, n_heads=4, n_kv_heads=4, head_dim=64)
    curve = cv.curve_view(p, S)
    mark = curve.figure.data[3].x[0]
    lin = 2 * 256 * (256 + 512) + 2 * 256 * 256  # per token
    assert mark == pytest.approx(lin / (4 * 256 + 3 * 4))  # 506, not 512 without the softmax
    f = cx.flops_by_stage(506, 256, 4, 4, 64)
    assert f["qkv_projection"] + f["output_projection"] > f["scores"] + f["softmax"] + f["weighted_sum"]
    f = cx.flops_by_stage(507, 256, 4, 4, 64)
    assert f["qkv_projection"] + f["output_projection"] < f["scores"] + f["softmax"] + f["weighted_sum"]
    assert "n = 506" in cv.crossover_sentence(p, S) and "n = 506" in cv.crossover_sentence(p, ZH)
    assert "n = 506" in curve.figure.data[3].name


def test_decode_against_prefill_flops_from_the_numbers():
    p = cv.Params(seq_len=4096)  # 4.77 MFLOP a decode step against 2.65 per prefill token
    en, zh = cv.pd_sentences(p, None, S)[0], cv.pd_sentences(p, None, ZH)[0]
    assert "1.8×" in en and "1.8 倍" in zh
    assert "costs about what prefill costs per token" not in S.t("cx.pd_help.body")
    small = cv.Params(seq_len=64, d_model=4096, n_heads=1, n_kv_heads=1, head_dim=4)
    assert "about the same" in cv.pd_sentences(small, None, S)[0]
