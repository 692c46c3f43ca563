"""In a real browser: a closed explanation or deck panel sends nothing on a slider move; opening it reruns the page
and fills it with the current numbers, and it stays filled (and current) while open."""

from __future__ import annotations

import pytest

from attn_core.i18n import translate

pytestmark = pytest.mark.e2e


# The expanders by their titles (not by their keys: an expander without a key must fail these tests too)
HELP = f"[data-testid='stExpander']:has(summary:has-text('{translate('sat.grad_how.title', 'en')}'))"
PANEL = f"[data-testid='stExpander']:has(summary:has-text('{translate('deck.panel', 'en')}'))"


def content(watch, box: str) -> str:
    """The text inside an expander's body, whether shown or not (empty while its content is not sent)."""
    details = watch.page.locator(box).locator("[data-testid='stExpanderDetails']")
    return details.text_content().strip() if details.count() else ""


def open_box(watch, box: str) -> None:
    watch.page.locator(box).locator("summary").click()
    details = watch.page.locator(box).locator("[data-testid='stExpanderDetails'] [data-testid='stElementContainer']")
    details.first.wait_for(state="visible")
    watch.wait_idle()


def test_a_closed_help_text_is_not_sent_and_opens_with_the_current_numbers(watch):
    watch.open("saturation")
    assert watch.page.locator(HELP).count() == 0, "the gradient section (closed) sent its help expander"
    watch.open_sections("4")  # the gradient section, sent while open; its help text below it
    assert watch.page.locator(HELP).count() == 1, "the help expander is on the page"
    assert content(watch, HELP) == "", "a closed help text's body was sent"
    assert watch.page.locator(PANEL).locator("[data-testid='stFileUploader']").count() == 0, (
        "the closed deck panel's widgets were sent"
    )
    watch.press_slider("temperature", 1)  # τ 1.0 -> 1.1
    watch.wait_idle()
    assert content(watch, HELP) == ""
    open_box(watch, HELP)
    assert "τ = 1.1: c = 1/(√64 · 1.1) = 0.1136" in content(watch, HELP)
    watch.press_slider("temperature", 1, "ArrowLeft")  # back to 1.0: the open help text is sent again, current
    watch.wait_idle()
    assert "τ = 1: c = 1/(√64 · 1) = 0.125" in content(watch, HELP)
    watch.open_sidebar()
    open_box(watch, PANEL)  # the deck panel's widgets come when it opens
    assert watch.page.locator(PANEL).locator("[data-testid='stFileUploader']").count() == 1
    assert watch.real_console_errors() == [] and watch.exceptions() == []


CHART_KEYS = """() => [...document.querySelectorAll('.stPlotlyChart')].map(b =>
  [...b.closest('[data-testid="stElementContainer"]').classList].find(c => c.startsWith('st-key-')).slice(7))"""


def test_the_saturation_sections_against_d_k_are_measured_and_sent_while_open(watch):
    """Closed, sections 3-6 send nothing and a τ move measures the current d_k alone (its numbers under the maps);
    opened, the whole sweep draws them at the current τ, and the sentence under the maps keeps its numbers."""
    watch.open("saturation")
    assert sorted(watch.page.evaluate(CHART_KEYS)) == ["sat_dist", "sat_maps"]
    watch.press_slider("temperature")  # τ 1.0 -> 1.1
    assert sorted(watch.page.evaluate(CHART_KEYS)) == ["sat_dist", "sat_maps"]
    caption = watch.page.locator("[data-testid='stCaptionContainer']", has_text="averages").first.inner_text()
    watch.open_sections("3")
    assert sorted(watch.page.evaluate(CHART_KEYS)) == ["sat_curves", "sat_dist", "sat_maps"]
    title = watch.page.evaluate("() => document.querySelector('.st-key-sat_curves .js-plotly-plot').layout.title.text")
    assert "τ = 1.1" in title
    after = watch.page.locator("[data-testid='stCaptionContainer']", has_text="averages").first.inner_text()
    assert after == caption, "the whole sweep gave other numbers at the current d_k than the current d_k alone"
    assert watch.real_console_errors() == [] and watch.exceptions() == []


LIVE = f"[data-testid='stExpander']:has(summary:has-text('{translate('kvcache.live_header', 'en')}'))"


def test_the_kv_cache_live_decode_is_sent_while_open_and_a_link_to_its_settings_opens_it(watch):
    """Closed at first, the live decode sends none of its seven controls on a calculator move; opened, they come
    with the Run button; a link that sets one of them (its share link) opens the page with the section open."""
    watch.open("kv_cache")
    assert watch.page.locator(LIVE).count() == 1
    assert watch.page.locator(".st-key-dec_steps, .st-key-kv_run").count() == 0, "the closed live decode was sent"
    watch.press_slider("batch", 1)
    assert watch.page.locator(".st-key-dec_steps, .st-key-kv_run").count() == 0
    open_box(watch, LIVE)
    assert watch.page.locator(".st-key-kv_run button").is_visible()
    watch.press_slider("dec_steps", 1)
    link = watch.page.locator("[data-testid='stSidebar'] .attn-link code").inner_text().strip()
    assert "dec_steps=" in link and "batch=" in link, link
    watch.page.goto(link)  # the share link: a new session, the section open with the link's settings
    watch.page.wait_for_selector(".st-key-kv_run button", timeout=60_000)
    watch.wait_idle()
    assert watch.page.locator(LIVE).locator("details").get_attribute("open") is not None
    assert watch.real_console_errors() == [] and watch.exceptions() == []
