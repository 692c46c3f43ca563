"""The cost page in a real browser: the counted view with its formula and crossover, a small measured sweep filled
in live with its progress and both charts, and the course note's formula in Chinese; screenshots in both languages."""

from __future__ import annotations

import pytest

from tests.e2e.test_pages import assert_clean

pytestmark = pytest.mark.e2e

POINTS = """() => {
    const els = document.querySelectorAll('.js-plotly-plot');
    if (els.length < 2 || !els[0].data) return null;
    const sizes = {f8: 8, f4: 4, i4: 4, u4: 4, i2: 2, u2: 2, i1: 1, u1: 1, i8: 8};
    const count = x => !x ? 0 : (x.length !== undefined ? x.length : atob(x.bdata).length / (sizes[x.dtype] || 8));
    return Array.from(els).map(el => Math.max(...el.data.map(d => count(d.x))));
}"""


#: The x tick labels plotly shows on a chart (it hides a label that would stick out of the chart: "hide past div").
SHOWN_X_TICKS = """key => [...document.querySelectorAll('.st-key-' + key + ' .xtick text')]
    .filter(t => t.checkVisibility() && getComputedStyle(t).opacity !== '0').map(t => t.textContent)"""


def test_counted_and_a_live_sweep(watch):
    watch.open("complexity?seq_len=2048")
    # the curves run to n = 65,536, where the last label sits on the chart's right edge: it has its room
    assert watch.page.evaluate(SHOWN_X_TICKS, "cx_curve")[-2:] == ["16,384", "65,536"]
    body = watch.page.inner_text("body")
    assert "overtake the projections at n = 506" in body and "past the attention" in body  # softmax counted
    assert watch.page.locator(".js-plotly-plot").count() == 2
    assert_clean(watch)
    watch.shot("complexity-counted")
    watch.open("complexity?view=measured&seq_len=256&d_model=128&n_heads=2&n_kv_heads=1&head_dim=64", chart=False)
    watch.page.locator(".st-key-cx_run button").click()
    watch.page.wait_for_function(f"() => {{ const m = ({POINTS})(); return m && m[0] >= 3; }}", timeout=120_000)
    watch.wait_idle(120_000)
    body = watch.page.inner_text("body")
    assert "backend on cpu (found by forcing each backend" in body and "fitted to the fastest" in body
    assert watch.page.evaluate(POINTS) == [3, 3]  # n = 64, 128, 256 on both charts
    assert_clean(watch)
    watch.shot("complexity-measured")


def test_the_note_formula_in_chinese(watch):
    watch.open("complexity?view=formula&lang=zh&seq_len=1024&n_heads=8&n_kv_heads=8&head_dim=32")
    body = watch.page.inner_text("body")
    assert watch.page.get_by_role("heading", name="注意力的计算量与复杂度").count() == 1
    assert "多头注意力常被引用的复杂度" in body and "32 倍" in body  # 4·h with h = 8
    assert_clean(watch)
    watch.shot("complexity-formula-zh")
