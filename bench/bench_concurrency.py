"""Benchmark: update latency with 20 browser sessions moving sliders at once (not a timed test).

    python bench/bench_concurrency.py [--sessions 20] [--rounds 5]

Starts one Streamlit server and Debian's chromium, opens N sessions (Playwright
browser contexts) on the heatmap page, then in each round presses a slider key
in every session at once and times each session from its key press until its
page shows the new value and the app is idle again. Prints p50, p95 and max.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness import CHROMIUM_ARGS, IDLE, chromium_path, start_server  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sessions", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    exe = chromium_path()
    if exe is None:
        raise SystemExit("needs Debian's chromium: apt-get install chromium")
    from playwright.sync_api import sync_playwright

    proc, url = start_server()
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=exe, args=CHROMIUM_ARGS)
            pages = []
            for i in range(args.sessions):
                page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
                page.set_default_timeout(180_000)
                page.goto(f"{url}/?seed={i}&head_dim=16", wait_until="commit")
                pages.append(page)
            for page in pages:
                page.wait_for_selector(".st-key-grid .js-plotly-plot .main-svg")
                page.wait_for_selector(IDLE)
            latencies = []
            for r in range(args.rounds):
                d_k = 17 + r
                starts = []
                for page in pages:
                    page.locator(".st-key-head_dim input[type='range']").first.focus()
                for page in pages:
                    starts.append(time.perf_counter())
                    page.keyboard.press("ArrowRight")
                done_js = (
                    "d => document.body.innerText.includes('d_k = ' + d + ' ·') && "
                    "!!document.querySelector(\"[data-testid='stApp'][data-test-script-state='notRunning']\")"
                )
                pending = dict(zip(range(len(pages)), starts, strict=True))
                deadline = time.perf_counter() + 300
                while pending and time.perf_counter() < deadline:  # poll every session, note when each is done
                    for i in list(pending):
                        if pages[i].evaluate(done_js, d_k):
                            latencies.append(time.perf_counter() - pending.pop(i))
                if pending:
                    raise SystemExit(f"{len(pending)} sessions did not update within 300 s")
            browser.close()
    finally:
        proc.terminate()
        proc.wait(10)
    latencies.sort()
    p95 = latencies[int(round(0.95 * (len(latencies) - 1)))]
    print(
        f"{args.sessions} sessions x {args.rounds} rounds: p50 {statistics.median(latencies):.2f} s, "
        f"p95 {p95:.2f} s, max {latencies[-1]:.2f} s"
    )


if __name__ == "__main__":
    main()
