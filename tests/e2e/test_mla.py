"""The MLA page in a real browser: the data flow, both paths agreeing (with the rope-on-latent mismatch), a live
decode whose two caches sit on their formulas, and the cost view in Chinese; screenshots in both languages."""

from __future__ import annotations

import pytest

from tests.e2e.test_pages import assert_clean

pytestmark = pytest.mark.e2e

POINTS = """() => {
    const el = document.querySelector('.js-plotly-plot');
    const t = el && el.data && el.data.filter(d => d.mode === 'markers');
    if (!t || t.length < 2) return null;
    const sizes = {f8: 8, f4: 4, i4: 4, u4: 4, i2: 2, u2: 2, i1: 1, u1: 1, i8: 8};
    const count = x => !x ? 0 : (x.length !== undefined ? x.length : atob(x.bdata).length / (sizes[x.dtype] || 8));
    return t.map(d => count(d.x));
}"""


def test_flow_agree_and_live_decode(watch):
    watch.open("mla")
    body = watch.page.inner_text("body")
    assert "80 values per token and layer" in body
    watch.shot("mla-flow")
    watch.open("mla?view=agree&seq_len=10&head=2")
    body = watch.page.inner_text("body")
    assert "The naive and absorbed paths agree" in body and "the absorbed form is a different function" in body
    assert watch.page.locator(".js-plotly-plot >> visible=true").count() == 1  # both paths and |diff|
    watch.open_sections("Every head")  # sent while open
    assert watch.page.locator(".js-plotly-plot >> visible=true").count() == 2  # and every head
    assert_clean(watch)
    watch.shot("mla-agree")
    watch.open("mla?view=decode&dec_steps=24&dec_prompt=8", chart=False)
    watch.page.locator(".st-key-mla_run button").click()
    watch.page.wait_for_function(f"() => {{ const m = ({POINTS})(); return m && m[0] >= 25; }}", timeout=120_000)
    watch.wait_idle(120_000)
    assert "24 steps: at every step the measured caches equal the formulas" in watch.page.inner_text("body")
    assert watch.page.evaluate(POINTS) == [25, 25]
    assert_clean(watch)
    watch.shot("mla-decode")


def test_cache_and_cost_in_chinese(watch):
    watch.open("mla?view=cache&preset=deepseek-v3&lang=zh")
    body = watch.page.inner_text("body")
    assert watch.page.get_by_role("heading", name="多头潜在注意力（MLA）").count() == 1
    assert "相当于 **2.25 组**" not in body and "2.25 组" in body
    watch.shot("mla-cache-zh")
    watch.open("mla?view=cost&preset=deepseek-v3&lang=zh")
    assert "1/71.1" in watch.page.inner_text("body")  # the cache it reads: 1/71.1 of the naive path's
    assert watch.page.locator(".js-plotly-plot").count() == 2
    assert_clean(watch)
    watch.shot("mla-cost-zh")
