"""Phones and small laptops in a real browser: every page at 390×844 (a phone: touch, 3 device px a CSS px) and
at 1280×800 (a small laptop). No chart title or subplot title overlaps another or runs out of its chart, no
toolbar covers a title, no control's label is clipped ("Paddin…"), nothing is wider than the window; on a
phone a head grid shows one head at a time and its head picker switches the head shown.

One browser context per size, pages opened one after the other in it (the server is the session's).
"""

from __future__ import annotations

import pytest

from attn_core.views import PAGES
from harness import IDLE
from tests.e2e.conftest import SHOTS, PageWatch

pytestmark = pytest.mark.e2e

# A phone's own User-Agent (Chrome on Android): the server sends head grids' phone copies only to phones.
PHONE_AGENT = "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Mobile Safari/537.36"
PHONE = dict(
    viewport={"width": 390, "height": 844},
    is_mobile=True,
    has_touch=True,
    device_scale_factor=3,
    user_agent=PHONE_AGENT,
)
# every page as it opens (the models page at its grid of heads), and the KV-sharing maps (KV groups side by side)
VIEW = {"models": "?view=layer"}
PATHS = [("" if p.default else p.name + VIEW.get(p.name, "")) for p in PAGES] + ["kv_sharing?kv_view=maps"]

# What a person sees go wrong, measured on the page as drawn (CSS px; elements hidden by the layout skipped).
PROBLEMS = """() => {
  const vw = window.innerWidth, out = [];
  const shown = el => { const r = el.getBoundingClientRect(), s = getComputedStyle(el);
    return r.width > 2 && r.height > 2 && r.right > 0 && s.visibility !== 'hidden' && !el.closest('[aria-hidden="true"]')
      && el.checkVisibility({opacityProperty: false, visibilityProperty: true}); };
  const keyOf = el => { const box = el.closest('[data-testid="stElementContainer"]');
    return box ? ([...box.classList].find(c => c.startsWith('st-key-')) || box.dataset.testid || '?') : '?'; };
  const hit = (a, b) => Math.min(a.right, b.right) - Math.max(a.left, b.left) > 1
    && Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top) > 1;
  const main = document.querySelector('[data-testid="stMain"]');
  if (document.documentElement.scrollWidth > vw + 1) out.push('page scrolls sideways: ' + document.documentElement.scrollWidth);
  if (main.scrollWidth > main.clientWidth + 1) out.push('main scrolls sideways: ' + main.scrollWidth);
  for (const el of main.querySelectorAll('[data-testid="stElementContainer"]')) {
    if (shown(el) && el.getBoundingClientRect().right > vw + 1 && !el.parentElement.closest('[class*="st-key-scroll__"]'))
      out.push('wider than the window: ' + keyOf(el));
  }
  // a control's label cut short: text that overflows its box (ellipsis), or a row of buttons wider than its room
  for (const el of main.querySelectorAll('button, label, [data-baseweb="tab"]')) {
    if (!shown(el)) continue;
    for (const t of [el, ...el.querySelectorAll('*')]) {
      if (t.clientWidth > 2 && t.scrollWidth > t.clientWidth + 1 && getComputedStyle(t).overflowX !== 'visible') {
        out.push('clipped: "' + el.innerText.trim().slice(0, 30) + '" in ' + keyOf(el)); break; }
    }
  }
  for (const row of main.querySelectorAll('[data-testid="stButtonGroup"] > div')) {
    if (shown(row) && row.scrollWidth > row.clientWidth + 1 && !row.closest('[class*="st-key-phone__"]'))
      out.push('buttons cut off: ' + keyOf(row));
  }
  // chart titles: each inside its chart, none over another, no toolbar over any
  for (const gd of main.querySelectorAll('.js-plotly-plot')) {
    if (!shown(gd)) continue;
    // a chart of panels side by side may scroll sideways in its own box on a phone: its titles must fit that chart
    const key = keyOf(gd), box = gd.closest('[data-testid="stElementContainer"]').getBoundingClientRect();
    const right = gd.closest('[class*="st-key-scroll__"]') ? box.right : Math.min(vw, box.right);
    const titles = [...gd.querySelectorAll('.gtitle, .annotation-text, .g-xtitle text, .g-ytitle text')]
      .filter(t => t.textContent.trim() && shown(t)).map(t => [t.textContent.slice(0, 40), t.getBoundingClientRect()]);
    for (const [text, r] of titles) {
      if (r.left < box.left - 1 || r.right > right + 1) out.push(key + ': title cut off: ' + text);
    }
    for (let i = 0; i < titles.length; i++) for (let j = i + 1; j < titles.length; j++) {
      if (hit(titles[i][1], titles[j][1])) out.push(key + ': "' + titles[i][0] + '" over "' + titles[j][0] + '"');
    }
    if (vw > 640) continue;  // on a wide screen plotly's toolbar shows over the chart's corner while hovered
    const bars = [...gd.querySelectorAll('.modebar')].filter(shown);
    const tb = gd.closest('[data-testid="stElementContainer"]').querySelector('[data-testid="stElementToolbar"]');
    if (tb && shown(tb)) bars.push(tb);
    for (const bar of bars) for (const [text, r] of titles) {
      if (hit(bar.getBoundingClientRect(), r)) out.push(key + ': a toolbar covers "' + text + '"');
    }
  }
  return out;
}"""


def open_page(page, base: str, path: str, click: bool = False) -> None:
    """Open ``path``: by its address, or with ``click`` by the sidebar's link (the same session, no reload)."""
    if click:
        unfold = page.locator("[data-testid='stExpandSidebarButton']")  # the app starts with its sidebar folded
        if unfold.count() and unfold.first.is_visible():
            unfold.first.click()
        page.locator(f"[data-testid='stSidebarNav'] a[href$='/{path}']").click()
        page.wait_for_function(f"() => location.pathname.endsWith('/{path}')")
    else:
        page.goto(f"{base}/{path}")
    page.wait_for_selector("[data-testid='stMain'] h1")
    page.wait_for_timeout(200)
    page.wait_for_selector(IDLE)
    page.locator("[data-testid='stMain'] .js-plotly-plot .main-svg >> visible=true").first.wait_for()
    page.wait_for_function("() => !document.documentElement.dataset.attnDrawing")  # ui.plotly_live's queue
    page.wait_for_timeout(400)


def problems(page) -> list[str]:
    # the phone's one-head charts reserve their margins (other charts at these widths: left as they were)
    pushed = [m for m in PageWatch(page, "").pushed_margins() if "__one:" in m]
    found = page.evaluate(PROBLEMS) + [f"margins widened: {m}" for m in pushed]
    exceptions = page.locator("[data-testid='stException']").all_inner_texts()
    return found + [f"exception: {e[:200]}" for e in exceptions]


def shoot(page, name: str) -> None:
    """The whole page (Streamlit scrolls inside its main block: the viewport grows to show it), in CSS px."""
    size = page.viewport_size
    height = page.evaluate("() => document.querySelector('[data-testid=\"stMain\"]').scrollHeight")
    page.set_viewport_size({"width": size["width"], "height": int(min(max(height, size["height"]), 9000))})
    page.wait_for_timeout(300)
    page.screenshot(path=str(SHOTS / f"{name}.png"), scale="css")
    page.set_viewport_size(size)


def shown_head(page) -> str:
    return page.locator("[class*='st-key-phone__grid'] .js-plotly-plot .annotation-text").first.text_content()


def test_phone_pages_fit_and_the_head_picker_switches_heads(browser, server):
    ctx = browser.new_context(**PHONE)
    page = ctx.new_page()
    page.set_default_timeout(60_000)
    found = {}
    for path in PATHS:
        open_page(page, server, path)
        if path == "":  # the heatmaps page: the grid of 8 heads is hidden, one head is shown with its picker
            assert page.locator(".st-key-grid").is_hidden()
            assert page.locator(".st-key-grid__one .js-plotly-plot").is_visible()
            assert shown_head(page).startswith("head 0")
            page.locator(".st-key-grid__head button", has_text="5").first.tap()
            page.wait_for_timeout(200)
            page.wait_for_selector(IDLE)
            page.wait_for_function(
                "() => (document.querySelector(\"[class*='st-key-phone__grid'] .annotation-text\") || {})"
                ".textContent?.startsWith('head 5')"
            )
            assert "KV 1" in shown_head(page)  # 8 heads, 2 KV groups: head 5 reads KV head 1
        found[path or "heatmaps"] = problems(page)
        shoot(page, "phone_" + (path or "heatmaps").replace("?", "_").replace("=", "-"))
    ctx.close()
    assert not any(found.values()), {k: v for k, v in found.items() if v}


#: The KV cache memory chart's texts on a phone: every tick label, legend item and axis title, with whether it is
#: drawn inside the screen and inside the chart's own box; and whether the chart sits in a sideways-scrolling box.
MEMORY_TEXTS = """() => {
  const gd = document.querySelector('.st-key-kv_memory .js-plotly-plot');
  const box = gd.getBoundingClientRect();
  const texts = [...gd.querySelectorAll('.xtick text, .ytick text, .legendtext, .g-xtitle text, .g-ytitle text')]
    .filter(t => t.textContent.trim()).map(t => { const r = t.getBoundingClientRect();
      return { text: t.textContent, inside: r.left >= Math.max(0, box.left) - 1 && r.right <= Math.min(innerWidth, box.right) + 1 }; });
  return { width: box.width, scrolls: !!gd.closest('[class*="st-key-scroll__"]'), texts };
}"""


def test_on_a_phone_the_kv_cache_memory_chart_is_laid_out_for_its_width(browser, server):
    """The memory chart was drawn 560 px wide in a sideways box on a 390 px screen: its x axis stopped at "1K 4"
    and its legend was cut at the screen's edge. On a phone it is laid out for the phone's width: in place, every
    tick label (1, 16, 256, 4K, 64K, 1M), legend item and axis title on the screen."""
    ctx = browser.new_context(**PHONE)
    page = ctx.new_page()
    page.set_default_timeout(60_000)
    open_page(page, server, "kv_cache")
    page.locator(".st-key-kv_memory").scroll_into_view_if_needed()
    seen = page.evaluate(MEMORY_TEXTS)
    shoot(page, "phone_kv_cache_memory")
    ctx.close()
    assert not seen["scrolls"] and seen["width"] <= 390
    ticks = [t["text"] for t in seen["texts"]]
    assert {"1", "16", "256", "4K", "64K", "1M"} <= set(ticks), ticks
    assert sum("fits" in t for t in ticks) == 3 and any("device memory" in t for t in ticks)  # the legend, whole
    assert all(t["inside"] for t in seen["texts"]), [t["text"] for t in seen["texts"] if not t["inside"]]
