"""The visual audit: every view of every page and every slide of every shipped deck, as a person sees it.

Each page's views (every value of its view control), normally with every expander opened and in slide mode with
every one of its slides, at 1280×720 and 1024×768 and on a phone (390×844, a phone's User-Agent: the server then
sends the phone copies of head grids), in English and Chinese; and every slide of every shipped deck, walked with
Page Down as a clicker does, at both projector sizes and in both languages. On each screen ``audit.js`` looks for
what a lecturer would call a defect:

- two texts of a chart that overlap (titles, axis titles, tick labels, legends, annotations, colour bars; rotated
  labels by their drawn outline), Streamlit's text over a chart or over other text, text clipped by its chart or by
  the screen, or below the bottom of a slide;
- chart text under 20 px on a slide; a page whose first screen at 1280×720 shows no chart (less than
  :data:`FIRST_SCREEN_PX` of one);
- on a phone, a chart, table or image wider than the screen outside a box that scrolls sideways;
- literal Markdown markers (``**``, ``__``, backticks) in what is drawn, and, in Chinese, English words of the
  app's English catalog that its Chinese catalog never uses;
- an exception, an error box, a console or page error.

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
from attn_core.views.base import controls
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
MAX_SLIDES = 12  # a page's slide stepper is walked at most this far (a guard against a stepper that never ends)


def english_words() -> list[str]:
    """Words of three letters or more in the English catalog that no Chinese string uses (lower case): in a
    Chinese page they are English left untranslated. Words the Chinese catalog uses too (GQA, softmax, model
    names, units) are allowed."""
    cat = ROOT / "assets" / "i18n"

    def words(lang: str) -> set[str]:
        text = " ".join(json.loads((cat / f"{lang}.json").read_text(encoding="utf-8")).values())
        text = re.sub(r"\{[^}]*\}|<[^>]+>|\\[a-zA-Z]+|https?://\S+", " ", text)  # placeholders, tags, LaTeX, links
        return {w.lower() for w in re.findall(r"[A-Za-z]{3,}", text)}

    return sorted(words("en") - words("zh"))


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
        SHOTS.mkdir(parents=True, exist_ok=True)

    def url(self, path: str, query: str, slide: bool) -> str:
        parts = [q for q in (query, f"lang={self.lang}", "present=1" if slide else "") if q]
        return f"{path}?{'&'.join(parts)}"

    def open(self, url: str) -> None:
        self.w.page.goto(self.w.base_url + "/" + url.lstrip("/"))
        self.w.page.wait_for_selector("[data-testid='stMain'] h1", timeout=120_000)
        self.w.wait_idle(120_000)

    def look(self, label: str, slide: bool) -> None:
        """Audit the screen as it is now, and save it."""
        opts = {"slide": slide, "phone": self.phone, "zh": self.lang == "zh", "english": ENGLISH, "minPx": MIN_SLIDE_PX}
        found = self.w.page.evaluate(AUDIT_JS, opts)
        errors = self.w.real_console_errors() + self.w.page_errors
        found += [{"kind": "console error", "where": "", "detail": e[:200]} for e in errors[self.errors_seen :]]
        self.errors_seen = len(errors)
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
        :data:`FIRST_SCREEN_PX` of it inside the window. A chart's script loads after the page's run has ended
        (plotly, the first time a browser draws one): the check waits for a drawn chart, 15 s at most."""
        from playwright.sync_api import TimeoutError as PlaywrightTimeout

        try:
            self.w.page.wait_for_selector("[data-testid='stMain'] .js-plotly-plot .main-svg", timeout=15_000)
        except PlaywrightTimeout:
            pass  # no chart drawn: measured as it is
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
