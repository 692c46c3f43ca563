"""Lecture decks in chromium: a clicker's Page Down / Page Up walks a shipped deck across pages."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import PageWatch
from tests.e2e.test_pages import assert_clean

pytestmark = pytest.mark.e2e


def bar(w: PageWatch) -> str:
    return w.page.locator(".st-key-deck_bar").inner_text()


def wait_for_slide(w: PageWatch, text: str, seconds: float = 60) -> None:
    for _ in range(int(seconds * 4)):
        if text in bar(w):
            w.wait_idle()
            return
        w.page.wait_for_timeout(250)
    raise AssertionError(f"the deck bar never showed {text!r}: {bar(w)[:120]!r}")


def test_the_clicker_walks_a_deck_across_pages(browser, server):
    ctx = browser.new_context(viewport={"width": 1280, "height": 720})
    w = PageWatch(ctx.new_page(), server)
    w.page.set_default_timeout(60_000)
    try:
        w.open("kv_sharing?deck=gqa_and_the_kv_cache&lang=zh")
        assert "第 1/9 张" in bar(w) and "查询头共享 KV 头" in bar(w)
        for expected in ("第 2/9 张", "第 3/9 张", "第 4/9 张", "第 5/9 张"):
            w.page.keyboard.press("PageDown")  # what a presentation clicker sends
            wait_for_slide(w, expected)
        assert "KV 缓存的显存占用" in w.page.locator("h1").first.inner_text()  # slide 5 is on the KV-cache page
        assert "deck_at=5" in w.page.url  # a reload reopens the deck at this slide
        w.page.keyboard.press("PageUp")
        wait_for_slide(w, "第 4/9 张")
        assert "KV 共享" in w.page.locator("h1").first.inner_text()
        assert_clean(w)
        w.shot("deck-gqa-4-zh")  # (a screenshot resizes the window: taken last)
    finally:
        ctx.close()


def test_a_half_typed_slide_title_survives_closing_the_panel(watch):
    """The deck panel sends nothing while closed; what was typed into its title and note comes back with it."""
    watch.open("")
    panel = watch.page.locator(".st-key-deck_panel summary")
    panel.click()
    watch.wait_idle()
    watch.page.locator(".st-key-deck_new_title input").fill("Causal mask, 4 heads")
    watch.page.locator(".st-key-deck_new_note input").fill("the upper triangle is grey")
    watch.page.locator(".st-key-deck_new_note input").press("Enter")
    watch.wait_idle()
    panel.click()  # closed: its fields are not drawn
    watch.wait_idle()
    watch.page.wait_for_timeout(800)  # the closing animation
    assert watch.page.locator(".st-key-deck_new_title input").count() == 0
    panel.click()
    watch.wait_idle()
    assert watch.page.locator(".st-key-deck_new_title input").input_value() == "Causal mask, 4 heads"
    assert watch.page.locator(".st-key-deck_new_note input").input_value() == "the upper triangle is grey"
    watch.page.locator(".st-key-deck_add button").click()
    watch.wait_idle()
    assert "Causal mask, 4 heads" in watch.page.locator("[data-testid='stSidebar']").inner_text()
    assert watch.page.locator(".st-key-deck_new_title input").input_value() == ""  # emptied for the next slide
    assert_clean(watch)
