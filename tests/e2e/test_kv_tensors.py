"""In a real browser: the KV-cache page's tensor view plays its frames (plotly's own play button, no server
rerun), and in presentation mode Page Down (a clicker) moves it one token."""

from __future__ import annotations

import re

import pytest

from attn_core.runtime.units import format_bytes
from tests.e2e.conftest import SHOTS
from tests.e2e.test_lecture import assert_clean

pytestmark = pytest.mark.e2e

CHART = ".st-key-kv_tensors .js-plotly-plot"
# the slider's label ("tokens in the cache: 5") and the title of the still shown in presentation mode
LABEL = f"() => document.querySelector('{CHART} .slider-container .slider-label').textContent"
TITLE = f"() => document.querySelector('{CHART} .gtitle').textContent"


def tokens_shown(watch) -> int:
    return int(re.findall(r"\d+", watch.page.evaluate(LABEL))[-1])


def test_play_advances_the_frames_and_page_down_steps_in_presentation_mode(watch):
    page = watch.page
    page.set_viewport_size({"width": 1280, "height": 720})
    watch.open("kv_cache?model=custom&n_heads=8&n_kv_heads=2&seq_len=32")
    assert page.locator(CHART).count() == 0, "the closed tensor section was sent"
    watch.open_sections("The cache as tensors")  # sent while open
    chart = page.locator(CHART)
    chart.scroll_into_view_if_needed()
    page.wait_for_timeout(300)
    assert tokens_shown(watch) == 1
    chart.locator(".updatemenu-button").first.click()  # ▶ Play
    page.wait_for_function(f"() => parseInt(({LABEL})().match(/\\d+/g).pop()) >= 4", timeout=15_000)
    errors = len(watch.page_errors)
    chart.locator(".updatemenu-button").nth(1).click()  # ⏸ Pause
    page.wait_for_timeout(500)
    # plotly.js rejects the interrupted Play's promise (its frame queue's onInterrupt) and its button handler
    # does not catch it: an unhandled rejection with no reason, the only error the page logs
    assert watch.page_errors[errors:] in ([], ["undefined"])
    del watch.page_errors[errors:]
    paused = tokens_shown(watch)
    page.wait_for_timeout(700)
    assert tokens_shown(watch) == paused and 4 <= paused < 32  # it stopped where it was
    # the frames kept the bars bars (a frame's trace without its type became a line) with the engine's bytes
    bars = page.evaluate(
        f"() => Array.from(document.querySelectorAll('{CHART} .barlayer .bartext')).map(e => e.textContent)"
    )
    assert bars == [f"{format_bytes(b)} ({b:,} B)" for b in (2 * 12 * h * paused * 16 * 2 for h in (8, 2, 1))]
    chart.screenshot(path=str(SHOTS / "kv-tensors-paused.png"))
    assert_clean(watch)

    watch.open("kv_cache?model=custom&n_heads=8&n_kv_heads=8&seq_len=16&lang=zh&present=1&slide=3")  # tensors
    page.locator(CHART).scroll_into_view_if_needed()
    assert "缓存中已有 1 / 16 个词元" in page.evaluate(TITLE)
    page.keyboard.press("PageDown")  # what a clicker sends: the lowest stepper that can move, the token's
    watch.wait_idle()
    page.keyboard.press("PageDown")
    watch.wait_idle()
    assert "缓存中已有 3 / 16 个词元" in page.evaluate(TITLE) and "kv_token=3" in page.url  # the token, not the slide
    page.locator(CHART).scroll_into_view_if_needed()
    page.screenshot(path=str(SHOTS / "kv-tensors-present-zh.png"))  # the 1280 x 720 viewport: the still
    names = page.evaluate(f"() => [...document.querySelectorAll('{CHART} .y2tick text')].map(e => e.textContent)")
    assert sorted(names) == sorted(["MHA（本模型）", "GQA-2", "MQA"])  # every bytes bar named on the slide
    page.locator(CHART).screenshot(path=str(SHOTS / "kv-tensors-present-zh-chart.png"))
    assert_clean(watch)
