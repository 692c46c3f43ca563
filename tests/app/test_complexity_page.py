"""AppTest: the cost and complexity page, every view. The charts carry the engine's counts (checked by hand), the
formula shows the user's numbers, a small measured sweep runs with Start and fills both charts, and the course
note's formula is corrected with the numbers side by side."""

from __future__ import annotations

import pytest

from attn_core.complexity import stages as cx
from attn_core.views import complexity as cv
from tests.conftest import no_exception
from tests.util import arr, chart_specs

PAGE = "app_pages/complexity.py"


def texts(at) -> str:
    return "\n".join(e.value for e in [*at.markdown, *at.caption, *at.warning, *at.info, *at.error, *at.success])


def test_counted_view_bars_formula_and_crossover(app_test):
    at = app_test(PAGE, query={"seq_len": "1024", "d_model": "256", "n_heads": "4", "n_kv_heads": "2"})
    no_exception(at)
    bars, curve = chart_specs(at)
    seg = {d["name"]: arr(d["y"]) for d in bars["data"] if d["type"] == "bar"}
    # by hand: n = 1024, d = 256, h = 4, h_kv = 2, d_h = 64
    assert seg["QKV projection"][0] == 2 * 1024 * 256 * (4 * 64 + 2 * 2 * 64)
    assert seg["Scores QKᵀ"][0] == seg["Scores QKᵀ"][1] == 2 * 1024**2 * 256  # 4 heads of 64 = 1 head of 256
    assert seg["Softmax"][0] == 4 * seg["Softmax"][1] == 3 * 4 * 1024**2
    formulas = next(e.value for e in at.markdown if "$$" in e.value)  # every stage's name and formula, one element
    assert (
        "**Scores QKᵀ**\n\n$$\n2\\,n^2\\,h\\,d_h = 2 \\cdot 1,024^2 \\cdot 4 \\cdot 64 = \\text{536,870,912 FLOP}\n$$"
        in formulas
    )
    assert formulas.count("$$") == 2 * 5  # the five stages, each in display math
    # GQA 4:2: linear 2·d·(256 + 256) + 2·256·256 per token = 393,216; the n² stages as the curve draws them,
    # softmax included, 4·256 + 3·4 = 1,036 a pair → n = 379.5 (384 for the matmuls alone)
    shape = cx.LayerShape(256, 4, 2, 64)
    assert cx.crossover_n(shape) == 384 and cx.crossover_n(shape, softmax=True) == 393_216 / 1_036
    assert "n = 380" in texts(at) and "past" in texts(at)
    marks = [d["x"][0] for d in curve["data"][3:]]  # the crossovers and the current n, named in the legend
    assert marks == [393_216 / 1_036, cx.crossover_n(shape, 1024, softmax=True), 1024]
    assert curve["data"][3]["name"] == "attention crosses over: n = 380"
    assert list(at.dataframe[0].value.iloc[:, 3]) == ["1,518", "759"]  # GPT-2 small, SmolLM2-135M
    assert "crosses over at 1,518 tokens, above its 1,024-token context" in texts(at)


def test_measured_view_waits_then_runs_a_small_sweep(app_test):
    q = {"view": "measured", "seq_len": "256", "d_model": "64", "n_heads": "2", "n_kv_heads": "1", "head_dim": "32"}
    at = app_test(PAGE, query=q)
    no_exception(at)
    assert not chart_specs(at) and "Press Run the sweep" in texts(at)  # nothing runs before Start
    at.button(key="cx_run").click().run()
    no_exception(at)
    time_spec, mem_spec = chart_specs(at)
    eager_scores = next(d for d in time_spec["data"] if d["name"] == "eager · Scores QKᵀ")
    assert list(arr(eager_scores["x"])) == [64, 128, 256]
    mem = {d["name"]: arr(d["y"]) for d in mem_spec["data"]}
    shape = cx.LayerShape(64, 2, 1, 32)
    counted = [cx.peak_bytes(n, shape, "eager") for n in (64, 128, 256)]
    unit = mem_spec["layout"]["yaxis"]["title"]["text"]
    div = {"memory (KiB)": 1024, "memory (MiB)": 1024**2}[unit]
    assert list(mem["eager: bytes of the tensors alive at the peak (measured)"] * div) == counted  # = the formula
    assert "flash_attention" in texts(at) or "math" in texts(at)  # the backend found, not assumed
    p = cv.Params(seq_len=256, d_model=64, n_heads=2, n_kv_heads=1, head_dim=32)
    run = at.session_state[cv.run_key(cv.sweep_spec(p), "cpu")]  # kept for these settings
    assert run.status == "done" and len(run.steps) == 6


def test_measured_view_refuses_a_sweep_over_the_budget(app_test, monkeypatch):
    monkeypatch.setenv("ATTN_MAX_BYTES", str(256 * 2**20))
    at = app_test(PAGE, query={"view": "measured", "seq_len": "8192", "n_heads": "4"})
    no_exception(at)
    assert "more than the budget" in at.error[0].value and "seq_len" in at.error[0].value
    assert not at.button or not any(b.key == "cx_run" for b in at.button)


def test_prefill_decode_counts_per_token(app_test):
    at = app_test(PAGE, query={"view": "prefill_decode", "seq_len": "1024"})
    no_exception(at)
    (spec,) = chart_specs(at)  # counted only until Measure is switched on
    p = cv.Params(seq_len=1024)
    df = cv.pd_counted(p, cv.Style())
    dec = df[(df["mode"] == "decode") & (df.n == 1024)].flops_per_token.iloc[0]
    assert dec == cx.linear_flops_per_token(p.shape) + (4 * 4 * 64 + 3 * 4) * 1024
    decode = next(d for d in spec["data"] if d["name"] == "decode step at position n")
    assert arr(decode["y"])[-1] == dec
    assert "decode is limited by memory bandwidth" in texts(at)


def test_formula_view_corrects_the_note(app_test):
    at = app_test(PAGE, query={"view": "formula", "seq_len": "512", "d_model": "256", "n_heads": "8", "head_dim": "32"})
    no_exception(at)
    note = at.warning[0].value
    total, one, wrong = 4 * 512**2 * 256, 4 * 512**2 * 32, 512**2 * 256 // 8
    assert f"{total / wrong:.3g}×" in note and "32×" in note  # 4·h
    table = at.dataframe[0].value
    assert list(table.iloc[:3, 2]) == [f"{one:,}", f"{total:,}", f"{wrong:,}"]
    (spec,) = chart_specs(at)
    lines = {d["name"]: arr(d["y"]) for d in spec["data"]}
    assert set(lines["all heads: 4·n²·h·d_h (the real count)"]) == {total}  # flat in h


@pytest.mark.parametrize("view", cv.PAGE_VIEWS)
def test_every_view_in_chinese(app_test, view):
    at = app_test(PAGE, query={"view": view, "lang": "zh", "seq_len": "256"})
    no_exception(at)
    assert "注意力的计算量与复杂度" in at.title[0].value
    assert at.get("plotly_chart") or any(b.key == "cx_run" for b in at.button)


def test_bad_url_values_say_what_to_change(app_test):
    at = app_test(PAGE, query={"view": "measured", "run_on": "cuda", "seq_len": "128"})
    no_exception(at)
    import torch

    if not torch.cuda.is_available():
        assert "cuda" in at.error[0].value


def test_prefill_decode_measured_on_request(app_test):
    at = app_test(
        PAGE,
        query={
            "view": "prefill_decode",
            "seq_len": "256",
            "d_model": "64",
            "n_heads": "2",
            "n_kv_heads": "1",
            "head_dim": "32",
        },
    )
    at.toggle(key="cx_pd_measure").set_value(True).run()
    no_exception(at)
    flops, timed = chart_specs(at)
    assert [list(arr(d["x"])) for d in timed["data"]] == [[64, 256], [64, 256]]  # every 4th power of two, and n
    assert "Measured at n = 256" in texts(at)


@pytest.mark.parametrize("view", cv.PAGE_VIEWS)
def test_presentation_mode(app_test, view):
    at = app_test(PAGE, query={"view": view, "present": "1", "seq_len": "256"})
    no_exception(at)
    for spec in chart_specs(at):
        assert spec["layout"]["font"]["size"] >= 20
