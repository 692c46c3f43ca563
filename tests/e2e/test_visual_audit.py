"""The visual audit: every view of every page and every slide of every shipped deck, as a person sees it.

Each page's views (every value of its view control), normally with every expander opened and in slide mode with
every one of its slides, at 1280×720 and 1024×768 and on a phone (390×844, a phone's User-Agent: the server then
sends the phone copies of head grids), in English and Chinese (1024×768's normal mode in English only: its layout is
1280×720's with the controls stacked over the charts, and Chinese text is audited at the other sizes); and every slide of every shipped deck, walked with
Page Down as a clicker does, at both projector sizes and in both languages. On each screen ``audit.js`` looks for
what a lecturer would call a defect:

- two texts of a chart that overlap (titles, axis titles, tick labels, legends, annotations, colour bars; rotated
  labels by their drawn outline), Streamlit's text over a chart or over other text, text clipped by its chart or by
  the screen, or below the bottom of a slide;
- chart or table text under 20 px on a slide, or a data grid on one (it draws its text on a canvas at 14 px); a
  page whose first screen at 1280×720 shows no chart (less than :data:`FIRST_SCREEN_PX` of one);
- on a phone, a chart, table or image wider than the screen outside a box that scrolls sideways;
- literal Markdown markers (``**``, ``__``, backticks) in what is drawn, and, in Chinese, English words of the
  app's English catalog that its Chinese catalog never uses;
- an exception, an error box, a console or page error, a dialog, a request that leaves the app's host (the app is
  used offline); on a desktop browser, an element sent only for phones (a phone title, a sideways box, a phone
  copy of a head grid).

Each screen is saved under ``artifacts/audit/`` (look at them). Phones are audited in the page's normal mode only:
slide mode is laid out for a projector.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from attn_core import decks
from attn_core.views import PAGES
from attn_core.views.base import DEFAULT_TEXT, controls
from tests.e2e.conftest import ROOT, PageWatch

pytestmark = pytest.mark.e2e

AUDIT_JS = (Path(__file__).parent / "audit.js").read_text(encoding="utf-8")
SHOTS = ROOT / "artifacts" / "audit"
SIZES = {"1280x720": (1280, 720), "1024x768": (1024, 768), "phone": (390, 844)}
PHONE_UA = (
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) "
    "Version/17.5 Mobile/15E148 Safari/604.1"
)
MIN_SLIDE_PX = 20
FIRST_SCREEN_PX = 250  # px of a chart the first screen of a page shows at 1280×720 in its normal mode
CHART_WAIT_MS = 5_000  # how long a loaded page is given for its first chart to be drawn
MAX_SLIDES = 12  # a page's slide stepper is walked at most this far (a guard against a stepper that never ends)
# every chart element of the page (ui.plotly_live's component) holds a drawn plotly chart
#: elements only a phone's browser is sent (ui.responsive): a desktop browser would only hide them
PHONE_ONLY = ".attn-phone-title, [class*='st-key-scroll__'], [class*='st-key-phone__'], [class*='__one']"
# whether the page holds a chart element (drawn or not yet): a page that holds none when its run is over gets none
HAS_CHART_JS = """() => !!document.querySelector(
  '[data-testid="stMain"] .stBidiComponent, [data-testid="stMain"] [data-testid="stPlotlyChart"]')"""
CHARTS_DRAWN_JS = """() => [...document.querySelectorAll('[data-testid="stMain"] .stBidiComponent')]
  .filter(e => e.getBoundingClientRect().width > 0).every(e => e.querySelector('.main-svg'))"""


def english_words() -> list[str]:
    """Words of three letters or more in the English catalog that no Chinese string uses (lower case): in a
    Chinese page they are English left untranslated. Words the Chinese catalog uses too (GQA, softmax, model
    names, units) are allowed, and so are the words of the pages' example sentence: it is the input, the same in
    either language, and its tokens label the charts ("because (6)")."""
    cat = ROOT / "assets" / "i18n"

    def words(lang: str) -> set[str]:
        text = " ".join(json.loads((cat / f"{lang}.json").read_text(encoding="utf-8")).values())
        text = re.sub(r"\{[^}]*\}|<[^>]+>|\\[a-zA-Z]+|https?://\S+", " ", text)  # placeholders, tags, LaTeX, links
        return {w.lower() for w in re.findall(r"[A-Za-z]{3,}", text)}

    sentence = {w.lower() for w in re.findall(r"[A-Za-z]{3,}", DEFAULT_TEXT)}  # input, drawn as token labels
    return sorted(words("en") - words("zh") - sentence)


ENGLISH = english_words()


def views(spec) -> list[str]:
    """The URL queries of a page's views (each value of its view control), or the page itself."""
    if spec.view_field is None:
        return [""]
    return [f"{spec.view_field}={v}" for v in controls(spec.params)[spec.view_field].options]


class Audit:
    """One browser context at one size and language, and what its screens were found to have."""

    def __init__(self, browser, server: str, size: str, lang: str):
        width, height = SIZES[size]
        phone = size == "phone"
        self.ctx = browser.new_context(
            viewport={"width": width, "height": height},
            device_scale_factor=1,
            user_agent=PHONE_UA if phone else None,
            is_mobile=phone,
            has_touch=phone,
        )
        self.w = PageWatch(self.ctx.new_page(), server)
        self.w.page.set_default_timeout(120_000)
        self.size, self.lang, self.phone = size, lang, phone
        self.findings: list[str] = []
        self.errors_seen = 0
        self.opened = False
        SHOTS.mkdir(parents=True, exist_ok=True)

    def url(self, path: str, query: str, slide: bool) -> str:
        parts = [q for q in (query, f"lang={self.lang}", "present=1" if slide else "") if q]
        return f"{path}?{'&'.join(parts)}"

    def open(self, url: str) -> None:
        """Load a page and wait for its run and for its first chart to be drawn: a chart is a component whose
        script (and plotly) a new browser context fetches after the run is over, so the page looked settled before
        any chart was on it (a first screen of 0 px of chart, a slide audited blank). A page without charts is
        given :data:`CHART_WAIT_MS` for one to appear."""
        from playwright.sync_api import TimeoutError as PlaywrightTimeout

        self.w.page.goto(self.w.base_url + "/" + url.lstrip("/"))
        self.w.page.wait_for_selector("[data-testid='stMain'] h1", timeout=120_000)
        self.w.wait_idle(120_000)
        wait = 20_000 if not self.opened else CHART_WAIT_MS  # a new browser fetches plotly with its first chart
        self.opened = True
        if not self.w.page.evaluate(HAS_CHART_JS):
            return  # a screen without a chart (a calculator, a table)
        try:
            self.w.page.wait_for_selector("[data-testid='stMain'] .js-plotly-plot .main-svg", timeout=wait)
        except PlaywrightTimeout:
            return  # a screen without a chart (a calculator, a table)
        self.w.page.wait_for_function(CHARTS_DRAWN_JS, timeout=120_000)  # and each chart is drawn
        self.w.wait_idle(120_000)

    def look(self, label: str, slide: bool) -> None:
        """Audit the screen as it is now, and save it."""
        opts = {"slide": slide, "phone": self.phone, "zh": self.lang == "zh", "english": ENGLISH, "minPx": MIN_SLIDE_PX}
        found = self.w.page.evaluate(AUDIT_JS, opts)
        errors = self.w.real_console_errors() + self.w.page_errors
        found += [{"kind": "console error", "where": "", "detail": e[:200]} for e in errors[self.errors_seen :]]
        self.errors_seen = len(errors)
        found += [{"kind": "dialog", "where": "", "detail": d[:200]} for d in self.w.dialogs]
        own = (self.w.base_url, "data:", "blob:", "about:")
        foreign = [u for u in self.w.requests if not u.startswith(own)]
        found += [{"kind": "request off the app's host", "where": "", "detail": u[:200]} for u in foreign[:3]]
        if not self.phone and not slide:
            n = self.w.page.locator(PHONE_ONLY).count()
            if n:
                found.append({"kind": "phone-only elements sent to a desktop browser", "where": "", "detail": str(n)})
        name = f"{label}-{'slide' if slide else 'page'}-{self.size}-{self.lang}"
        for f in found:
            line = f"{name}: {f['kind']} [{f['where']}] {f['detail']}"
            if line not in self.findings:
                self.findings.append(line)
        path = SHOTS / f"{re.sub(r'[^A-Za-z0-9_.-]+', '_', name)}.png"
        if slide:  # a slide is what the projector shows: the screen itself
            self.w.page.screenshot(path=str(path))
        else:  # a page scrolls inside Streamlit's main container: the whole of it
            self.w.shot_to(path)

    def first_screen(self, label: str) -> None:
        """The page's first screen (its first view, before any scrolling) shows a chart: at least
        :data:`FIRST_SCREEN_PX` of it inside the window. Measured once plotly (loaded when the first chart is
        drawn) has drawn one: a new browser's first page was measured before, as showing none."""
        try:
            self.w.page.wait_for_selector("[data-testid='stMain'] .js-plotly-plot .main-svg", timeout=60_000)
            self.w.wait_idle(120_000)
        except Exception:  # noqa: BLE001 - no chart at all: measured as none below
            pass
        seen = self.w.page.evaluate(
            """() => Math.max(0, ...[...document.querySelectorAll('[data-testid="stMain"] .js-plotly-plot')].map(e => {
                 const r = e.getBoundingClientRect();
                 return r.width > 0 ? Math.min(r.bottom, innerHeight) - Math.max(r.top, 0) : 0; }))"""
        )
        if seen < FIRST_SCREEN_PX:
            self.findings.append(
                f"{label}-page-{self.size}-{self.lang}: no chart on the first screen ({seen:.0f} px seen)"
            )

    def open_expanders(self) -> None:
        """Open every closed expander of the page, one at a time (sections are computed once opened)."""
        for _ in range(20):
            closed = self.w.page.locator(
                "[data-testid='stMain'] [data-testid='stExpander'] details:not([open]) > summary"
            )
            if closed.count() == 0:
                return
            closed.first.scroll_into_view_if_needed()
            closed.first.click()
            self.w.wait_idle(120_000)

    def next_slide(self) -> bool:
        """Press the page's slide stepper's Next; False when it cannot move."""
        button = self.w.page.locator(".st-key-slide__next button")
        if button.count() == 0 or button.first.is_disabled():
            return False
        button.first.click()
        self.w.wait_idle(120_000)
        return True

    def page_down(self, at: int) -> None:
        """Page Down, as a clicker sends it, to a deck's slide ``at`` (1-based), maybe on another page."""
        self.w.page.keyboard.press("PageDown")
        self.w.page.wait_for_function(f"() => location.search.includes('deck_at={at}')", timeout=120_000)
        self.w.page.wait_for_selector("[data-testid='stMain'] h1", timeout=120_000)
        self.w.wait_idle(120_000)

    def close(self) -> None:
        self.ctx.close()


def audit_page(a: Audit, spec) -> None:
    path = "" if spec.default else spec.name
    for query in views(spec):
        label = spec.name + (f"-{query.split('=')[1]}" if query else "")
        if a.size != "1024x768" or a.lang == "en":
            a.open(a.url(path, query, slide=False))
            if a.size == "1280x720" and query == views(spec)[0]:
                a.first_screen(label)
            a.open_expanders()
            a.look(label, slide=False)
        if a.phone:
            continue
        a.open(a.url(path, query, slide=True))
        a.look(label + "-1", slide=True)
        for i in range(2, MAX_SLIDES + 1):
            if not a.next_slide():
                break
            a.look(f"{label}-{i}", slide=True)


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("size", list(SIZES))
@pytest.mark.parametrize("page", [p.name for p in PAGES])
def test_every_view_of_every_page_passes_the_audit(browser, server, page, size, lang):
    a = Audit(browser, server, size, lang)
    try:
        audit_page(a, next(p for p in PAGES if p.name == page))
    finally:
        a.close()
    report(f"{page}-{size}-{lang}", a.findings)


def report(name: str, findings: list[str]) -> None:
    """Fail with the findings (all of them in ``artifacts/audit/<name>.txt``)."""
    (SHOTS / f"findings-{name}.txt").write_text("\n".join(findings) + "\n", encoding="utf-8")
    assert not findings, f"{len(findings)} findings (artifacts/audit/findings-{name}.txt):\n" + "\n".join(findings[:40])


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("size", ["1280x720", "1024x768"])
@pytest.mark.parametrize("name", sorted(decks.shipped()))
def test_every_slide_of_every_deck_passes_the_audit(browser, server, name, size, lang):
    deck = decks.shipped()[name]
    first = deck.slides[0].page
    path = "" if next(p for p in PAGES if p.name == first).default else first
    a = Audit(browser, server, size, lang)
    try:
        a.open(a.url(path, f"deck={name}&deck_at=1", slide=True))
        a.look(f"deck-{name}-1", slide=True)
        for i in range(2, len(deck.slides) + 1):
            a.page_down(i)
            a.look(f"deck-{name}-{i}", slide=True)
    finally:
        a.close()
    report(f"deck-{name}-{size}-{lang}", a.findings)
