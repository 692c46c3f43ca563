"""Slide mode in chromium: every page's presentation view fits a projector's screen, and a clicker moves slides.

At 1280×720 and 1024×768 each page's default slide shows its title, chart(s) and sentences inside the viewport,
none over another, without scrolling; a lecture deck's bar stays one slim line over the title; Page Down, the arrow
keys and space (what a presentation clicker sends) move between slides and never scroll the page. One browser page
is reused for every test (a resize, not a reload, for the second size).
"""

from __future__ import annotations

import pytest

from attn_core.views import PAGES
from tests.e2e.conftest import SHOTS, PageWatch
from tests.e2e.test_pages import assert_clean

pytestmark = pytest.mark.e2e

SIZES = ((1280, 720), (1024, 768))
NO_CHART = {"kv_cache"}  # its first slide is the calculator: the headline number, the formula and the table
# the least height of a chart's (largest) plot area on a slide: two rows of 8 head panels under a deck's bar and
# note get about 90 px each at 1280×720 (tight for 11 row labels; a known limit), single charts 200 px and more
MIN_PLOT_PX = 80
# slides past each page's first: the other steps of the pages split into slides, and views with their own controls
MORE = [
    "?view=steps",
    "?view=zoom",
    "saturation?slide=2",
    "saturation?slide=3",
    "saturation?slide=4",
    "saturation?slide=6",
    "kv_cache?slide=2",
    "kv_cache?slide=3",
    "conv_attention?view=image",
    "conv_attention?view=image&slide=2",
    "mla?view=agree&slide=2",
    "mla?view=agree&slide=3",
    # deck slides (the deck's bar and sentence over the page): a two-row grid, the curves, the KV-group maps,
    # the cache as tensors under two steppers
    "?deck=attention_from_scratch&deck_at=8",
    "?deck=attention_from_scratch&deck_at=5",
    "?deck=gqa_and_the_kv_cache&deck_at=4",
    "?deck=gqa_and_the_kv_cache&deck_at=7",
]

# Boxes (left, top, right, bottom) of what a slide shows. Sentences: visible text of the main column, less the
# controls (the folded bar, the view buttons, widget labels, buttons) and the deck's bar; the title's box is its
# text's (the heading leaves room at its right for the controls bar).
LAYOUT_JS = """() => {
  const box = r => [r.left, r.top, r.right, r.bottom];
  const shown = e => { const r = e.getBoundingClientRect();
    return r.width > 0 && r.height > 0 && getComputedStyle(e).visibility !== 'hidden'; };
  const main = document.querySelector('[data-testid="stMain"]');
  const h1 = main.querySelector('h1');
  const range = document.createRange(); range.selectNodeContents(h1);
  const tb = range.getBoundingClientRect();
  const hit = document.elementFromPoint(tb.left + 4, (tb.top + tb.bottom) / 2);
  const skip = '.st-key-slide_controls, [class*="st-key-slide_nav"], .st-key-deck_bar, [data-testid="stButtonGroup"],'
    + ' [data-testid="stWidgetLabel"], button, [data-testid="stHeading"]';
  return {
    title: box(tb), titleOnTop: !!(hit && hit.closest('h1')), hit: hit ? hit.outerHTML.slice(0, 200) : null,
    titleInBar: !!h1.closest('.st-key-deck_bar'), h1s: main.querySelectorAll('h1').length,
    deck: (d => d ? box(d.getBoundingClientRect()) : null)(document.querySelector('.st-key-deck_bar')),
    charts: [...main.querySelectorAll('.js-plotly-plot')].filter(shown).map(e => box(e.getBoundingClientRect())),
    plots: [...main.querySelectorAll('.js-plotly-plot')].filter(shown).map(e => Math.max(0,
      ...[...e.querySelectorAll('.nsewdrag')].map(d => d.getBoundingClientRect().height))),
    sentences: [...main.querySelectorAll('[data-testid="stMarkdownContainer"]')]
      .filter(e => shown(e) && !e.closest(skip) && e.innerText.trim()).map(e => box(e.getBoundingClientRect())),
    bars: [...document.querySelectorAll('.st-key-slide_controls, .st-key-deck_bar')].filter(shown)
      .map(e => box(e.getBoundingClientRect())),
    scroll: [main.scrollTop, main.scrollHeight, main.clientHeight],
    viewport: [window.innerWidth, window.innerHeight],
  };
}"""


def overlap(a, b, tol: float = 1.0) -> bool:
    return min(a[2], b[2]) - max(a[0], b[0]) > tol and min(a[3], b[3]) - max(a[1], b[1]) > tol


def check_slide(w: PageWatch, where: str, chart: bool = True) -> dict:
    """Everything of the slide inside the viewport, nothing over anything else, no scrolling."""
    w.page.wait_for_timeout(250)  # the charts follow their boxes' new height
    info = w.page.evaluate(LAYOUT_JS)
    vw, vh = info["viewport"]
    top, height, client = info["scroll"]
    assert top == 0 and height <= client + 1, f"{where}: the slide scrolls ({height} px in {client})"
    assert info["titleOnTop"], f"{where}: the title is covered by {info['hit']} {info['title']}"
    assert not chart or info["charts"], f"{where}: no chart"
    for i, h in enumerate(info["plots"]):  # a chart squeezed by the text around it: its plot area a sliver
        assert h >= MIN_PLOT_PX, f"{where}: chart {i}'s largest plot area is {h:.0f} px tall"
    boxes = [("title", info["title"])] + [("chart", c) for c in info["charts"]]
    boxes += [("sentence", s) for s in info["sentences"]] + [("bar", b) for b in info["bars"]]
    for kind, b in boxes:
        assert b[0] >= -1 and b[1] >= -1 and b[2] <= vw + 1 and b[3] <= vh + 1, f"{where}: {kind} {b} off the screen"
    for i, (kind_a, a) in enumerate(boxes):
        for kind_b, b in boxes[i + 1 :]:
            if kind_a == kind_b == "sentence" or {kind_a, kind_b} == {"sentence", "bar"}:
                continue  # text beside text in columns; the bars hold no sentence of the slide
            if (
                {kind_a, kind_b} == {"title", "bar"}
                and info["titleInBar"]
                and (a if kind_a == "bar" else b) == info["deck"]
            ):
                continue  # a deck's bar holds the slide's title
            assert not overlap(a, b), f"{where}: {kind_a} {a} over {kind_b} {b}"
    return info


@pytest.fixture(scope="module")
def slides(browser, server):
    ctx = browser.new_context(viewport={"width": SIZES[0][0], "height": SIZES[0][1]}, device_scale_factor=1)
    w = PageWatch(ctx.new_page(), server)
    w.page.set_default_timeout(90_000)
    yield w
    ctx.close()


@pytest.mark.parametrize("name", [p.name for p in PAGES])
def test_every_page_fits_a_projector(slides, name):
    w = slides
    w.page.set_viewport_size({"width": SIZES[0][0], "height": SIZES[0][1]})
    w.open(f"{name}?present=1", chart=name not in NO_CHART)
    for vw, vh in SIZES:
        w.page.set_viewport_size({"width": vw, "height": vh})
        check_slide(w, f"{name} at {vw}×{vh}", chart=name not in NO_CHART)
        w.page.screenshot(path=str(SHOTS / f"slide_mode_{name}_{vw}x{vh}.png"))
    if name == "kv_cache":  # the headline number stays large
        size = w.page.evaluate(
            "() => parseFloat(getComputedStyle(document.querySelector('[data-testid=\"stMetricValue\"] div')"
            " || document.querySelector('[data-testid=\"stMetricValue\"]')).fontSize)"
        )
        assert size >= 48
    assert_clean(w)


@pytest.mark.parametrize("path", MORE)
def test_every_slide_of_a_split_page_fits(slides, path):
    w = slides
    w.page.set_viewport_size({"width": SIZES[0][0], "height": SIZES[0][1]})
    w.open(f"{path}&present=1")
    for vw, vh in SIZES:
        w.page.set_viewport_size({"width": vw, "height": vh})
        check_slide(w, f"{path} at {vw}×{vh}")
    name = "".join(c if c.isalnum() else "_" for c in path.strip("?"))
    w.page.screenshot(path=str(SHOTS / f"slide_mode_more_{name or 'heatmaps'}_{vw}x{vh}.png"))
    assert_clean(w)


def step(w: PageWatch) -> str:
    return w.page.locator(".st-key-slide_nav_slide [data-testid='stProgress']").inner_text()


def press(w: PageWatch, key: str) -> None:
    w.page.keyboard.press(key)
    w.page.wait_for_timeout(200)
    w.wait_idle()


def test_clicker_keys_move_slides_not_the_page(slides):
    w = slides
    w.page.set_viewport_size({"width": 1280, "height": 720})
    w.open("?present=1&view=steps")
    assert "Step 1 of 8" in step(w)
    for key, expected in (("PageDown", 2), ("ArrowRight", 3), ("Space", 4), ("ArrowDown", 5)):
        press(w, key)
        assert f"Step {expected} of 8" in step(w), key
    for key, expected in (("PageUp", 4), ("ArrowLeft", 3), ("ArrowUp", 2)):
        press(w, key)
        assert f"Step {expected} of 8" in step(w), key
    check_slide(w, "step 2")
    # keys typed on a slider keep their meaning: the head (in the controls bar) moves, not the slide
    w.page.locator(".st-key-slide_controls summary").click()
    w.press_slider("head", 1)
    assert "Step 2 of 8" in step(w) and "head=1" in w.page.url
    assert w.page.evaluate("() => document.querySelector('[data-testid=\"stMain\"]').scrollTop") == 0
    w.page.screenshot(path=str(SHOTS / "slide_mode_steps_keys.png"))
    assert_clean(w)


def test_a_deck_bar_is_one_slim_line(slides):
    w = slides
    w.page.set_viewport_size({"width": 1280, "height": 720})
    w.open("?deck=attention_from_scratch&present=1")
    info = check_slide(w, "deck slide 1")
    bar = info["deck"]
    assert bar[3] - bar[1] <= 70, f"the deck bar is {bar[3] - bar[1]} px tall"
    assert info["titleInBar"] and info["h1s"] == 1  # one title: the slide's, in the deck's bar; not the page's
    assert "Every query weighs every key" in w.page.locator("h1").inner_text()
    w.page.screenshot(path=str(SHOTS / "slide_mode_deck_1280x720.png"))
    press(w, "ArrowRight")  # the deck's next slide, not the page's
    for _ in range(120):
        if "Slide 2 of" in w.page.locator(".st-key-deck_bar").inner_text():
            break
        w.page.wait_for_timeout(250)
    w.wait_idle()
    assert "Slide 2 of" in w.page.locator(".st-key-deck_bar").inner_text()
    check_slide(w, "deck slide 2")
    w.page.screenshot(path=str(SHOTS / "slide_mode_deck_2_1280x720.png"))
    assert_clean(w)
