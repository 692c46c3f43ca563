"""The sidebar's "Link to this view": the app's root, the page's path and the parameters.

(``?present=1`` on every page and ``/heatmaps`` links are tested in a browser, tests/e2e/test_links.py: AppTest
opens a page by its script hash, while a browser names it by its path.)
"""

from __future__ import annotations

import html
import re

import pytest

import ui


@pytest.mark.parametrize(
    "current,page_path,want",
    [
        ("http://host:8501", "", "http://host:8501/?seed=3&n_kv_heads=4"),
        ("http://host:8501/", "", "http://host:8501/?seed=3&n_kv_heads=4"),
        # a /heatmaps link opens the default page: its link is the root, not /heatmaps
        ("http://host:8501/heatmaps", "", "http://host:8501/?seed=3&n_kv_heads=4"),
        ("http://host:8501/kv_cache", "kv_cache", "http://host:8501/kv_cache?seed=3&n_kv_heads=4"),
        ("https://lab.example/course/app/heatmaps/", "", "https://lab.example/course/app/?seed=3&n_kv_heads=4"),
        (
            "https://lab.example/course/app/saturation",
            "saturation",
            "https://lab.example/course/app/saturation?seed=3&n_kv_heads=4",
        ),
    ],
)
def test_view_url(current, page_path, want):
    assert ui.view_url(current, page_path, "heatmaps", {"seed": "3", "n_kv_heads": "4"}) == want


def test_view_url_without_parameters():
    assert ui.view_url("http://host/heatmaps", "", "heatmaps", {}) == "http://host/"
    assert ui.view_url("http://host/saturation", "saturation", "heatmaps", {}) == "http://host/saturation"


def test_the_link_box_escapes_the_link_and_the_hall_reads_it_back():
    from bench.hall import LINK_BOX

    url = 'http://host/?text=<script>alert("x")</script>&seed=3'
    box = ui.link_box(url)
    assert "<script>alert" not in box and "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in box
    assert html.unescape(LINK_BOX.search(box).group(1)) == url  # what bench/hall.py takes for the student's link


@pytest.mark.parametrize(
    "page, query, error",
    [
        ("app_pages/conv_attention.py", {}, None),  # its 1-D view ends the page early (ui.stop)
        ("app_pages/kv_sharing.py", {"text": ""}, "the text has no tokens"),  # bad input: said, then the page stops
    ],
)
def test_a_page_that_ends_early_keeps_its_share_link_and_deck_panel(app_test, page, query, error):
    """``ui.stop()`` ends the page, not the run: what app.py draws after the page (the link, the deck panel) stays.
    (``st.stop()`` made every later ``st`` call of the run raise: those pages had no link and no deck panel.)"""
    from attn_core.i18n import translate

    at = app_test(page, query=query)
    assert not at.exception, [e.value for e in at.exception]
    assert [str(e.value)[: len(error)] for e in at.error] == ([error] if error else [])
    boxes = [e.proto.body for e in at.sidebar.get("html") if e.proto.body.startswith('<div class="attn-link">')]
    assert len(boxes) == 1, "no share link in the sidebar"
    name = page.removeprefix("app_pages/").removesuffix(".py")
    want = f"/{name}" + ("?" + "&".join(f"{k}={v}" for k, v in query.items()) if query else "")
    assert html.unescape(re.search(r"<code>([^<]*)</code>", boxes[0]).group(1)) == want
    assert translate("deck.panel", "en") in [e.label for e in at.sidebar.expander]
