"""The training lab in a real browser: a curve that grows while the models train, stopped mid-run with the
partial curve kept; a finished heads run with its maps; the KV-heads trade-off in Chinese; screenshots."""

from __future__ import annotations

import pytest

from tests.e2e.test_pages import assert_clean

pytestmark = pytest.mark.e2e

# points of the first chart's first curve (plotly may send typed arrays as base64)
POINTS = """() => {
    const el = document.querySelector('.js-plotly-plot');
    const d = el && el.data && el.data[0];
    if (!d || !d.y) return 0;
    const sizes = {f8: 8, f4: 4, i4: 4, u4: 4, i2: 2, u2: 2, i1: 1, u1: 1, i8: 8};
    return d.y.length !== undefined ? d.y.length : atob(d.y.bdata).length / (sizes[d.y.dtype] || 8);
}"""


def test_a_curve_grows_and_stops_with_its_partial_curve_kept(watch):
    watch.open("lab?experiment=kv_heads&lab_steps=1000")
    watch.page.locator(".st-key-lab_run button").click()
    watch.page.wait_for_function(f"() => ({POINTS})() >= 5", timeout=120_000)
    first = watch.page.evaluate(POINTS)
    watch.page.wait_for_function(f"() => ({POINTS})() > {first} + 5", timeout=120_000)  # it grows
    watch.page.locator(".st-key-lab_stop button").click()
    watch.wait_idle(120_000)
    body = watch.page.inner_text("body")
    assert "Stopped after" in body and "the partial curves are kept" in body
    kept = watch.page.evaluate(POINTS)
    assert first + 5 < kept < 1001  # the first model's curve, cut short
    assert_clean(watch)
    watch.shot("lab-stopped")


def test_heads_maps_and_kv_tradeoff_in_chinese(watch):
    watch.open("lab?experiment=heads&lab_steps=20")
    watch.page.locator(".st-key-lab_run button").click()
    watch.page.wait_for_function("() => document.querySelectorAll('.js-plotly-plot').length >= 2", timeout=120_000)
    watch.wait_idle(120_000)
    assert "After 20 steps" in watch.page.inner_text("body")
    assert_clean(watch)
    watch.shot("lab-heads")
    watch.open("lab?experiment=kv_heads&lab_steps=10&lang=zh")
    watch.page.locator(".st-key-lab_run button").click()
    watch.page.wait_for_function("() => document.querySelectorAll('.js-plotly-plot').length >= 2", timeout=120_000)
    watch.wait_idle(120_000)
    body = watch.page.inner_text("body")
    assert "第 10 步时" in body and "每词元缓存" in body
    assert_clean(watch)
    watch.shot("lab-kv-zh")
