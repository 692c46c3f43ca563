"""Every page in a real browser: it renders a chart, a slider updates it, no errors; screenshots saved."""

from __future__ import annotations

import numpy as np
import pytest

from attn_core.views import PAGES as REGISTRY
from tests.util import arr

pytestmark = pytest.mark.e2e

# (url path, slider, presses) of each page (PageChecks): the default page lives at the root URL
PAGES = [(("" if p.default else p.name) + p.checks.url_tail, p.checks.slider, p.checks.presses) for p in REGISTRY]


def assert_clean(w) -> None:
    """No exception box, no page or console error, no dialog, and every request went to the app's own host."""
    assert not w.exceptions(), w.exceptions()
    assert not w.page_errors, w.page_errors
    assert not w.real_console_errors(), (w.console_errors, w.failed)
    assert not w.dialogs, w.dialogs
    foreign = [u for u in w.requests if not u.startswith((w.base_url, "data:", "blob:", "about:"))]
    assert foreign == [], f"requests left the app's host (offline use would break): {foreign[:5]}"


@pytest.mark.parametrize("path,slider,presses", PAGES, ids=[p[0].split("?")[0] or "heatmaps" for p in PAGES])
def test_page_renders_and_slider_updates(watch, path, slider, presses):
    watch.open(path)
    charts = watch.page.get_by_test_id("stPlotlyChart")
    assert charts.count() >= 1
    assert_clean(watch)
    assert watch.pushed_margins() == [], "plotly had to widen margins: those charts were laid out twice"
    watch.shot(path.split("?")[0] or "heatmaps")
    before = watch.chart_fingerprints()
    watch.press_slider(slider, presses)
    after = watch.chart_fingerprints()
    assert before != after, "moving the slider did not change any chart"
    assert_clean(watch)
    assert watch.pushed_margins() == []
    # the slider's new value is in the URL, so a bookmark reopens this view
    assert f"{slider}=" in watch.page.url


def test_app_sidebar_and_wide_layout(watch):
    watch.open("")
    sidebar = watch.page.get_by_test_id("stSidebar").inner_text()
    assert "Seed" in sidebar and "Computing on" in sidebar
    assert watch.page.get_by_test_id("stMain").bounding_box()["width"] > 1000


def test_heatmap_views_and_chinese(watch):
    watch.open("?lang=zh&mask=causal")
    assert watch.page.get_by_role("heading", name="注意力热力图").count() == 1
    assert_clean(watch)
    watch.shot("heatmaps-zh-causal")
    for view in ("zoom", "steps", "shapes", "entropy"):
        watch.open(f"?view={view}", chart=view != "shapes")
        assert_clean(watch)
        watch.shot(f"heatmaps-{view}")
    assert watch.page.get_by_test_id("stPlotlyChart").count() >= 1  # entropy chart


def test_long_sequence_grid_and_zoom(watch):
    """8192 tokens x 16 heads: every head drawn pooled in the browser, and one head zoomed to a window."""
    q = "?source=synthetic&seq_len=8192&n_heads=16&n_kv_heads=4&mask=causal"
    watch.open(q, timeout=300_000)
    assert_clean(watch)
    frames, z, title = watch.page.evaluate(
        "() => { const g = document.querySelector('.st-key-grid .js-plotly-plot');"
        " const f = g.layout.shapes.filter(s => s.layer === 'above' && s.name !== 'focus');"
        " return [f.map(s => [s.x0, s.x1, s.y0, s.y1]), g.data[0].z, g.layout.title.text]; }"
    )
    x0, x1, y0, y1 = (int(v + 0.5) for v in frames[0])  # head 0's panel of the one heatmap of all 16
    z0 = arr(z)[y0:y1, x0:x1]
    assert len(frames) == 16 and z0.shape[0] == z0.shape[1] <= 256 and "8192×8192" in title
    assert np.isnan(z0[0, -1]) and 0 < np.nanmax(z0) <= 1  # causal: the top-right block is masked
    watch.shot("heatmaps-8192-tokens-16-heads")
    watch.open(q + "&view=zoom&zoom_size=128&q_start=4000&k_start=3900&head=5", timeout=300_000)
    assert_clean(watch)
    z = arr(watch.page.evaluate("() => document.querySelector('.st-key-zoom .js-plotly-plot').data[0].z"))
    assert z.shape == (128, 128)  # full resolution in the window
    assert "queries 4000–4127" in watch.page.inner_text("body") or "4000–4127" in watch.page.evaluate(
        "() => document.querySelector('.st-key-zoom .js-plotly-plot').layout.title.text"
    )
    watch.shot("heatmaps-8192-zoom-window")


def test_bad_url_shows_notice_not_traceback(watch):
    watch.open("?n_heads=12&n_kv_heads=5&head_dim=abc")
    body = watch.page.inner_text("body")
    assert "nearest divisor" in body and "head_dim=abc" in body
    assert_clean(watch)
    assert watch.page.get_by_test_id("stPlotlyChart").count() >= 1
    watch.shot("heatmaps-bad-url")


CONTROLS_BOX = """() => { const r = document.querySelector('.st-key-page_controls').getBoundingClientRect();
  const c = document.querySelector('[data-testid="stMain"] .js-plotly-plot').getBoundingClientRect();
  return { left: r.left, top: r.top, chartRight: c.right, chartTop: c.top }; }"""


#: px between the bottom of the page's last element and the bottom of the scrollable page
PAGE_TAIL = """() => { const main = document.querySelector('[data-testid="stMain"]');
  const items = [...document.querySelectorAll('.st-key-page_body [data-testid="stElementContainer"]')]
    .filter(e => e.getBoundingClientRect().height > 0);
  const bottom = Math.max(...items.map(e => e.getBoundingClientRect().bottom)) + main.scrollTop;
  return main.scrollHeight - bottom; }"""


def test_the_controls_sit_beside_the_charts_and_stay_in_view_on_a_wide_screen(browser, server):
    """Normal mode at 1280x720: the page's controls in a column right of its charts that stays in view while the page
    scrolls (ui/assets/page.css); at 1024x768 they stay above the charts."""
    from tests.e2e.conftest import PageWatch

    for (width, height), beside in (((1280, 720), True), ((1024, 768), False)):
        ctx = browser.new_context(viewport={"width": width, "height": height}, device_scale_factor=1)
        w = PageWatch(ctx.new_page(), server)
        w.open("")  # the heatmaps page: longer than two screens
        box = w.page.evaluate(CONTROLS_BOX)
        if beside:
            assert box["left"] >= box["chartRight"] - 1 and box["left"] > width / 2, box
            # the page ends where its content does: no empty tail to scroll into
            tail = w.page.evaluate(PAGE_TAIL)
            assert tail < 300, f"{tail:.0f} px of empty page below the content"
            # scroll as far as the page goes on below the controls (at its end they scroll away with it)
            room = w.page.evaluate(
                "() => document.querySelector('.st-key-page_body').getBoundingClientRect().bottom"
                " - document.querySelector('.st-key-page_controls').getBoundingClientRect().bottom"
            )
            step = min(400, room - 20)
            assert step >= 100, f"the page goes on only {room:.0f} px below its controls"
            w.page.evaluate(f"() => document.querySelector('[data-testid=\"stMain\"]').scrollBy(0, {step})")
            w.page.wait_for_timeout(300)
            after = w.page.evaluate(CONTROLS_BOX)
            assert after["chartTop"] < box["chartTop"] - step + 2, (box, after)  # the page scrolled
            assert abs(after["top"] - box["top"]) < 2, (box, after)  # the controls did not
        else:
            assert box["left"] < 100 and box["top"] < box["chartTop"], box
        ctx.close()
