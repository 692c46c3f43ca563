"""Live runs take turns (ui.compute.RunSlots) in real browsers: a server that computes one live run at a time,
two students pressing the lab's Train. The second waits and says so, Stop takes it out of the queue, the
first run goes on, and once it is stopped the slot is free again. (The first run is the lab's longest
experiment, so it still computes when the second student presses Train on any CPU; both are stopped.)"""

from __future__ import annotations

import pytest

from tests.e2e.conftest import IDLE, SHOTS, start_server

pytestmark = pytest.mark.e2e

WAITING = "[data-testid='stAlert']:has-text('Waiting for the server')"


def test_a_second_run_waits_says_so_and_stop_leaves_the_queue(browser):
    proc, url = start_server(extra_env={"ATTN_LIVE_RUNS": "1"})
    contexts = []
    try:
        pages = []
        for seed, experiment in ((1, "scaling"), (2, "kv_heads")):
            ctx = browser.new_context(viewport={"width": 1280, "height": 900})
            contexts.append(ctx)
            page = ctx.new_page()
            page.set_default_timeout(90_000)
            page.goto(f"{url}/lab?experiment={experiment}&seed={seed}")
            page.wait_for_selector(IDLE)
            pages.append(page)
        first, second = pages
        first.locator(".st-key-lab_run button").click()
        first.wait_for_selector("[data-testid='stProgress']")  # the first run computes
        second.locator(".st-key-lab_run button").click()
        second.wait_for_selector(WAITING)
        text = second.locator(WAITING).inner_text()
        assert "1 run ahead of yours (it computes 1 run at a time)" in text and "Stop leaves the queue" in text
        second.screenshot(path=str(SHOTS / "live-turns-waiting.png"))
        assert not first.locator(WAITING).count()
        second.locator(".st-key-lab_stop button").click()
        second.wait_for_selector(WAITING, state="detached")
        second.wait_for_selector(IDLE)
        # the first run went on meanwhile; once it is stopped, the slot is free again
        assert first.locator("[data-testid='stProgress']").count() and not first.locator(WAITING).count()
        first.locator(".st-key-lab_stop button").click()
        first.wait_for_selector(IDLE)
        assert not first.locator("[data-testid='stException']").count()
        # the second student's run starts at once
        second.locator(".st-key-lab_run button").click()
        second.wait_for_selector("[data-testid='stProgress']")
        assert not second.locator(WAITING).count()
        second.locator(".st-key-lab_stop button").click()
        second.wait_for_selector(IDLE)
    finally:
        for ctx in contexts:
            ctx.close()
        proc.terminate()
        proc.wait(10)
