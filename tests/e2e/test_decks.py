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
    watch.open_sidebar()
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


#: Per chart of the slide: its key, the height of its plot area (px) and, for the tensors' bytes bars, the boxes of
#: the bars' names (the second y axis's tick labels).
PLOTS = """() => [...document.querySelectorAll('[data-testid="stMain"] .js-plotly-plot')].map(gd => {
  const key = [...gd.closest('[class*="st-key-"]').classList].find(c => c.startsWith('st-key-')).slice(7);
  const bg = gd.querySelector('.bglayer rect, .nsewdrag');
  const names = [...gd.querySelectorAll('.yaxislayer-above .y2tick text')].map(t => {
    const r = t.getBoundingClientRect(); return [t.textContent, r.top, r.bottom]; });
  return { key, plot: bg ? bg.getBoundingClientRect().height : 0, names };
})"""


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_cache_slides_of_the_gqa_deck_leave_their_charts_room(browser, server, lang):
    """Slide 7 (the cache as tensors) drew two steppers, the section's heading and the deck's sentence over the
    buffers: plotly had less height than the figure's top margin ("Something went wrong with axis scaling") and the
    bytes bars' names ran into each other ("GQA-8（本模型）" over "MHA"). Slide 8's plan chart had about 60 px of
    plot under a four-line intro, its y-axis title into its own title."""
    ctx = browser.new_context(viewport={"width": 1280, "height": 720})
    w = PageWatch(ctx.new_page(), server)
    w.page.set_default_timeout(60_000)
    try:
        w.open(f"kv_cache?deck=gqa_and_the_kv_cache&deck_at=7&present=1&lang={lang}")
        (tensors,) = w.page.evaluate(PLOTS)
        assert tensors["key"] == "kv_tensors" and tensors["plot"] >= 200, tensors
        names = sorted(tensors["names"], key=lambda n: n[1])
        assert len(names) == 3 and all(a[2] <= b[1] + 1 for a, b in zip(names, names[1:], strict=False)), names
        w.page.keyboard.press("PageDown")
        wait_for_slide(w, "8 of 9" if lang == "en" else "第 8/9 张")
        plan = next(c for c in w.page.evaluate(PLOTS) if c["key"] == "kv_decode_plan")
        assert plan["plot"] >= 200, plan
        assert w.page.locator(".st-key-kv_run button").is_visible()  # what the slide's sentence asks for
        assert_clean(w)
    finally:
        ctx.close()
