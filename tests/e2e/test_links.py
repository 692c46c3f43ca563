"""Links in a real browser: ``?present=1`` on every page, and ``/heatmaps`` links on fresh servers and browsers."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest

from attn_core.i18n import translate
from tests.e2e.conftest import PageWatch, start_server
from tests.e2e.test_pages import assert_clean

pytestmark = pytest.mark.e2e

TITLES = {"": "heatmap.title", "saturation": "sat.title", "kv_sharing": "kv.title", "kv_cache": "kvcache.title"}


def title(w: PageWatch) -> str:
    return w.page.locator("[data-testid='stMain'] h1").first.inner_text().strip()


def sidebar_link(w: PageWatch) -> str:
    return w.page.locator("[data-testid='stSidebar'] code").inner_text().strip()


def not_found(w: PageWatch) -> bool:
    return "Page not found" in w.page.inner_text("body")


@pytest.mark.parametrize("path", list(TITLES), ids=[p or "heatmaps" for p in TITLES])
def test_present_1_opens_the_page_it_names(watch, path):
    """``?present=1`` is rewritten to ``?present=true`` with a rerun, which used to open the heatmaps page."""
    watch.open(f"{path}?present=1&lang=zh", chart=path not in ("kv_sharing", "kv_cache"))  # slide 1: the sum
    assert title(watch) == translate(TITLES[path], "zh")
    url = urlsplit(watch.page.url)
    assert url.path == "/" + path and parse_qs(url.query).get("present") == ["true"], watch.page.url
    assert watch.page.get_by_test_id("stSidebar").get_attribute("data-collapsed") == "true"
    assert urlsplit(sidebar_link(watch)).path == "/" + path
    # the navigation is translated on the first run too (the page titles come before the language control)
    nav = watch.page.locator("[data-testid='stSidebarNav']").inner_text()
    assert translate("nav.kv_cache", "zh") in nav and "KV cache memory" not in nav
    assert_clean(watch)
    watch.shot(f"present-{path or 'heatmaps'}")


VIEW = {
    "n_heads": "12",
    "n_kv_heads": "4",
    "head_dim": "32",
    "mask": "causal",
    "scaling": "false",
    "temperature": "0.5",
    "seed": "5",
    "text": "the dog chased the ball",
}


def open_link(browser, base: str, link: str) -> tuple[PageWatch, object]:
    ctx = browser.new_context(viewport={"width": 1440, "height": 1000})
    w = PageWatch(ctx.new_page(), base)
    w.page.set_default_timeout(90_000)
    w.open(link[len(base) :] if link.startswith(base) else link, timeout=90_000)
    return w, ctx


def assert_the_view(w: PageWatch, base: str) -> dict[str, list[str]]:
    """The heatmaps page with every parameter of VIEW, no "Page not found"; returns its link's parameters."""
    assert not not_found(w) and not w.dialogs
    assert title(w) == "Attention heatmaps"
    body = w.page.inner_text("body")
    assert "12 query heads, 4 KV heads (3 query heads per KV head)" in body and "d_k = 32" in body, body[:600]
    assert urlsplit(w.page.url).path == "/", w.page.url  # the browser shows the default page's own address
    link = sidebar_link(w)
    assert link.startswith(base + "/?"), link  # not /heatmaps?…
    params = parse_qs(urlsplit(link).query)
    assert params == {k: [v] for k, v in VIEW.items()}, params
    assert_clean(w)
    return params


def test_heatmaps_link_on_fresh_servers_and_browsers(browser, server):
    """``/heatmaps?…`` opens the view for the first visitor of a fresh server and on a warm one (where
    Streamlit showed "Page not found"); its link is ``/?…`` with every parameter, and that link reproduces
    the view in a fresh browser on another server process (the session's: it shares no cache with the first)."""
    query = "&".join(f"{k}={v.replace(' ', '+')}" for k, v in VIEW.items())
    proc, base = start_server()
    try:
        first, ctx = open_link(browser, base, f"/heatmaps?{query}")  # the server's first visitor
        assert_the_view(first, base)
        ctx.close()
        warm, ctx = open_link(browser, base, f"/heatmaps?{query}")  # a warm server: st.navigation routes it
        assert_the_view(warm, base)
        link, charts = sidebar_link(warm), warm.chart_fingerprints()
        warm.shot("heatmaps-link-warm-server")
        ctx.close()
    finally:
        proc.terminate()
        proc.wait(10)
    other = server
    fresh, ctx = open_link(browser, other, other + link[len(base) :])
    assert_the_view(fresh, other)
    assert fresh.chart_fingerprints() == charts  # the same numbers
    fresh.shot("heatmaps-link-fresh-server")
    ctx.close()
