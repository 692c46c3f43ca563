"""Every page in a real browser: it renders a chart, a slider updates it, no errors; screenshots saved."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.e2e

# (url path, slider key moved with the keyboard, presses). Extend as pages are added.
PAGES = [
    ("", "head_dim", 3),  # the default page lives at the root URL
    ("saturation", "head_dim", 1),
    ("kv_sharing", "n_heads", 4),
    ("kv_cache", "batch", 3),
]


def assert_clean(w) -> None:
    """No exception box, no page or console error, no dialog, and every request went to the app's own host."""
    assert not w.exceptions(), w.exceptions()
    assert not w.page_errors, w.page_errors
    assert not w.real_console_errors(), (w.console_errors, w.failed)
    assert not w.dialogs, w.dialogs
    foreign = [u for u in w.requests if not u.startswith((w.base_url, "data:", "blob:", "about:"))]
    assert foreign == [], f"requests left the app's host (offline use would break): {foreign[:5]}"


@pytest.mark.parametrize("path,slider,presses", PAGES, ids=[p[0] or "heatmaps" for p in PAGES])
def test_page_renders_and_slider_updates(watch, path, slider, presses):
    watch.open(path)
    charts = watch.page.get_by_test_id("stPlotlyChart")
    assert charts.count() >= 1
    assert_clean(watch)
    watch.shot(path or "heatmaps")
    before = watch.chart_fingerprints()
    watch.press_slider(slider, presses)
    after = watch.chart_fingerprints()
    assert before != after, "moving the slider did not change any chart"
    assert_clean(watch)
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
    for view in ("steps", "shapes", "entropy"):
        watch.open(f"?view={view}", chart=view != "shapes")
        assert_clean(watch)
        watch.shot(f"heatmaps-{view}")
    assert watch.page.get_by_test_id("stPlotlyChart").count() >= 1  # entropy chart


def test_bad_url_shows_notice_not_traceback(watch):
    watch.open("?n_heads=12&n_kv_heads=5&head_dim=abc")
    body = watch.page.inner_text("body")
    assert "nearest divisor" in body and "head_dim=abc" in body
    assert_clean(watch)
    assert watch.page.get_by_test_id("stPlotlyChart").count() >= 1
    watch.shot("heatmaps-bad-url")


@pytest.mark.parametrize(
    "path,views",
    [
        ("kv_sharing", ["maps", "costs", "mapping", "convert"]),
        ("kv_cache", []),
        ("saturation", []),
    ],
)
def test_every_view_renders_in_both_languages(watch, path, views):
    for lang in ("en", "zh"):
        for view in views or [None]:
            query = f"?lang={lang}" + (f"&kv_view={view}" if view else "")
            watch.open(path + query, chart=view != "costs")
            assert_clean(watch)
            watch.shot(f"{path}-{view or 'default'}-{lang}")
