"""A/B of one browser move: the same page case on two checkouts of the app, measured in the same minutes.

Each checkout gets its own server (started in that directory, with this interpreter and the app's server flags)
and one chromium page; the two pages move the slider in turn, and the order flips every round (A B, B A, ...):
with a fixed order the page moved first measured up to 15 % faster in some runs.
Prints each side's medians (from the key press: the rerun asked, the last script run finished as the page saw it,
the chart painted; the page's main-thread CPU) and the paired ratio (the median of B / A over the rounds). Not a
timed test: the numbers are for the notes.

    git worktree add /tmp/base HEAD~1
    .venv/bin/python bench/ab.py /tmp/base . --page kv_cache --moves 20
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

try:
    from bench import bench as B
except ImportError:  # run as a script: its folder comes first on the path, and "bench" is bench/bench.py
    import bench as B  # type: ignore[no-redef]


def case_of(page: str) -> B.SliderCase:
    """The benchmark's case of ``page`` (its first slider in :data:`bench.PAGE_SLIDERS`)."""
    for case in B.page_cases():
        if case.label.split(" · ")[0] == page:
            return case
    raise SystemExit(f"ab.py: no page {page!r}; one of {sorted(B.PAGE_SLIDERS)}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("a", type=Path, help="checkout A (the baseline)")
    ap.add_argument("b", type=Path, help="checkout B (the change)")
    ap.add_argument("--page", default="heatmaps", help="a page of attn_core.views.PAGES")
    ap.add_argument("--moves", type=int, default=20, help="measured moves per side (after 2 unmeasured)")
    ap.add_argument("--timeout", type=float, default=120, help="seconds any browser wait may take")
    args = ap.parse_args(argv)
    from playwright.sync_api import sync_playwright

    from harness import CHROMIUM_ARGS, chromium_path, start_server

    case, timeout_ms = case_of(args.page), int(args.timeout * 1000)
    servers = [start_server(cwd=d.resolve()) for d in (args.a, args.b)]
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
            sessions = [B.open_session(browser, case, url, proc.pid, timeout_ms) for proc, url in servers]
            for s in sessions:
                for _ in range(2):
                    B.move_once(s, timeout_ms)
                s.times.clear()
            for i in range(args.moves):
                for s in sessions if i % 2 == 0 else sessions[::-1]:
                    B.move_once(s, timeout_ms)
            browser.close()
    finally:
        for proc, _ in servers:
            B.stop_server(proc)
    a, b = sessions
    print(f"{case.label}, {args.moves} moves a side, order alternating (ms, medians)")
    for name, s in (("A", a), ("B", b)):
        rerun, finished, painted, cpu = (1e3 * s.med(k) for k in ("rerun", "finished", "painted", "browser_task"))
        print(
            f"  {name} {getattr(args, name.lower())}: rerun asked {rerun:.0f}, finished {finished:.0f}, "
            f"painted {painted:.0f}, browser CPU {cpu:.0f}"
        )
    paired = statistics.median(y / x for x, y in zip(a.times["painted"], b.times["painted"], strict=True))
    print(f"  paired B / A painted: {paired:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
