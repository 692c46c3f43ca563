"""Screenshots of every slide of the shipped lecture decks, in English and Chinese, as a projector shows them.

    .venv/bin/python bench/deck_shots.py [--size 1280x720] [--out artifacts/screenshots/decks] [--normal]

Starts a server, opens each slide from its link (``?deck=<name>&deck_at=<i>&lang=<lang>&present=1``: slide mode, as
a lecturer presents it; ``--normal`` leaves presentation mode off) in Debian's chromium at the given window size,
waits for the page to settle and saves the window (not the whole scrolled page: what the room sees). Not a test:
look at the pictures (a slide's title and sentence, its chart, nothing cut off).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from attn_core import decks  # noqa: E402
from harness import CHROMIUM_ARGS, IDLE, chromium_path, start_server  # noqa: E402

SETTLED = """() => !document.querySelector('[data-testid="stStatusWidget"], [data-testid="stSkeleton"]')
  && [...document.querySelectorAll('[data-testid="stPlotlyChart"]')].every(c => c.querySelector('.main-svg'))
  && !document.documentElement.dataset.attnDrawing"""


def settle(page) -> None:
    """Until the script has finished (a deck's first slide switches page and reruns), no placeholder is left and
    every chart is drawn, twice in a row 0.5 s apart; then 1.5 s for plotly's last layout pass."""
    for _ in range(240):
        page.wait_for_selector(IDLE)
        if page.evaluate(SETTLED):
            page.wait_for_timeout(500)
            if page.evaluate(SETTLED) and page.locator(IDLE).count():
                break
        page.wait_for_timeout(250)
    page.wait_for_timeout(1500)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", default="1280x720", help="window size, WIDTHxHEIGHT")
    ap.add_argument("--out", default=str(ROOT / "artifacts" / "screenshots" / "decks"))
    ap.add_argument("--normal", action="store_true", help="presentation mode off (the page as a student sees it)")
    args = ap.parse_args(argv)
    width, height = (int(x) for x in args.size.lower().split("x"))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    exe = chromium_path()
    if exe is None:
        print("Debian's chromium is not installed (make browser)", file=sys.stderr)
        return 2
    from playwright.sync_api import sync_playwright

    proc, url = start_server()
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=exe, args=CHROMIUM_ARGS, headless=True)
            page = browser.new_page(viewport={"width": width, "height": height})
            page.set_default_timeout(120_000)
            mode = "" if args.normal else "&present=1"
            for name, deck in decks.shipped().items():
                for lang in ("en", "zh"):
                    for i in range(1, len(deck.slides) + 1):
                        page.goto(f"{url}/?deck={name}&deck_at={i}&lang={lang}" + mode)
                        page.wait_for_selector(".st-key-deck_bar")
                        settle(page)
                        path = out / f"{name}-{i}-{lang}.png"
                        page.screenshot(path=str(path))
                        print(path)
            browser.close()
    finally:
        proc.terminate()
    return 0


if __name__ == "__main__":
    sys.exit(main())
