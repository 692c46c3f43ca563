"""Where one browser move's time goes: the page's main-thread tasks from the key press to the chart painted.

Opens one benchmark case (a page's slider and chart from its PageChecks, or the trivial app), makes two
unmeasured moves, then traces ``--moves`` moves with Chrome's tracing (Playwright, Debian's chromium) and prints,
for each, the benchmark's own times (rerun asked, finished, painted; ms from the key press) and every main-thread
task longer than ``--min-ms`` in order: its start, its length and what it ran (the longest events inside it,
with the script file a JavaScript call came from: ``react-dom`` is React rendering the page, ``index`` is
Streamlit's own code, ``TimerFire`` / ``RunMicrotasks`` after the run's last message is a chart being drawn,
``UpdateLayoutTree`` / ``Layout`` / ``Paint`` are style, layout and painting). The last line of each move sums
the time by kind. Not a timed test.

    .venv/bin/python bench/trace_move.py kv_cache
    .venv/bin/python bench/trace_move.py trivial --moves 3
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

try:
    from bench import bench as B
    from bench.ab import case_of
except ImportError:  # run as a script: its folder comes first on the path, and "bench" is bench/bench.py
    from ab import case_of  # type: ignore[no-redef]

    import bench as B  # type: ignore[no-redef]

CATEGORIES = ["devtools.timeline", "disabled-by-default-devtools.timeline", "toplevel", "v8.execute"]
# a task's kind: the first of these whose marks are found among its events' labels (an event's name, with the basename
# of the script a JavaScript call came from, or the DOM event's type)
KINDS = (
    ("React", ("react-dom",)),
    ("input", ("EventDispatch(key", "EventDispatch(input", "EventDispatch(pointer", "EventDispatch(mouse")),
    ("Streamlit", ("(index.",)),
    ("timer or promise (a chart's draw)", ("TimerFire", "RunMicrotasks")),
    ("style, layout, paint", ("UpdateLayoutTree", "Layout", "PrePaint", "Paint", "Layerize", "Commit")),
    ("garbage collection", ("MinorGC", "MajorGC", "V8.GC_")),
    ("message", ("Receive mojo message",)),
)
WRAPPERS = ("ThreadControllerImpl::RunTask", "SimpleWatcher::OnHandleReady", "RunTask")  # not listed among parts


@dataclass
class Task:
    """One top-level main-thread task: ``start`` (ms from the key press), ``ms`` long, its longest ``parts``
    (label, ms) in time order, and its :data:`KINDS` kind."""

    start: float
    ms: float
    parts: list[tuple[str, float]] = field(default_factory=list)
    kind: str = "other"


def _label(event: dict) -> str:
    data = event.get("args", {}).get("data", {}) or {}
    detail = data.get("type") or (data.get("url") or "").rsplit("/", 1)[-1][:28] or data.get("functionName", "")
    return f"{event['name']}({detail})" if detail else event["name"]


def main_thread(events: list[dict]) -> list[dict]:
    """The complete ('X') events of the renderer's main thread(s), by start time, longest first at a tie."""
    mains = {
        (e["pid"], e["tid"])
        for e in events
        if e.get("ph") == "M" and e.get("name") == "thread_name" and e.get("args", {}).get("name") == "CrRendererMain"
    }
    out = [e for e in events if e.get("ph") == "X" and "dur" in e and (e["pid"], e["tid"]) in mains]
    return sorted(out, key=lambda e: (e["ts"], -e["dur"]))


def key_press_ts(events: list[dict]) -> float | None:
    """The trace time (µs) of the first keydown dispatched on the main thread, or None."""
    for e in events:
        if e["name"] == "EventDispatch" and e.get("args", {}).get("data", {}).get("type") == "keydown":
            return e["ts"]
    return None


def tasks(events: list[dict], t0: float, min_ms: float = 1.5, parts: int = 6) -> list[Task]:
    """The top-level tasks of ``events`` (:func:`main_thread`) that start at or after ``t0`` (µs) and last at least
    ``min_ms``, each with its ``parts`` longest inner events (over 0.8 ms) and its kind."""
    out: list[Task] = []
    end = float("-inf")
    top: list[tuple[dict, list[dict]]] = []
    for e in events:
        if e["ts"] >= end:  # a new top-level task
            top.append((e, []))
            end = e["ts"] + e["dur"]
        else:
            top[-1][1].append(e)
    for task, inner in top:
        if task["ts"] < t0 or task["dur"] < min_ms * 1000:
            continue
        big = [e for e in inner if e["dur"] > 800 and e["name"] not in WRAPPERS]
        longest = sorted(sorted(big, key=lambda e: -e["dur"])[:parts], key=lambda e: e["ts"])
        labels = [_label(e) for e in inner]
        kind = next((k for k, marks in KINDS if any(m in lab for lab in labels for m in marks)), "other")
        out.append(
            Task((task["ts"] - t0) / 1000, task["dur"] / 1000, [(_label(e), e["dur"] / 1000) for e in longest], kind)
        )
    return out


def summary(found: list[Task]) -> str:
    by_kind = Counter()
    for t in found:
        by_kind[t.kind] += t.ms
    total = sum(by_kind.values())
    return f"  busy {total:.0f} ms: " + ", ".join(f"{k} {v:.0f}" for k, v in by_kind.most_common())


def trace_moves(case: B.SliderCase, moves: int, min_ms: float, timeout_ms: int) -> list[tuple[dict, list[Task]]]:
    from playwright.sync_api import sync_playwright

    from harness import CHROMIUM_ARGS, chromium_path

    proc, url = B.new_server(case.trivial)
    out = []
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
            s = B.open_session(browser, case, url, proc.pid, timeout_ms)
            for _ in range(2):
                B.move_once(s, timeout_ms)
            for _ in range(moves):
                s.times.clear()
                browser.start_tracing(page=s.page, categories=CATEGORIES)
                B.move_once(s, timeout_ms)
                data = json.loads(browser.stop_tracing())
                events = main_thread(data["traceEvents"] if isinstance(data, dict) else data)
                t0 = key_press_ts(events)
                times = {k: round(1000 * v[-1]) for k, v in s.times.items() if k in ("rerun", "finished", "painted")}
                out.append((times, [] if t0 is None else tasks(events, t0, min_ms)))
            browser.close()
    finally:
        B.stop_server(proc)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("page", help="a page of attn_core.views.PAGES, or 'trivial' (the trivial app)")
    ap.add_argument(
        "--slider", help="another of the page's benchmark sliders (PageChecks.other_sliders), e.g. head_dim"
    )
    ap.add_argument("--moves", type=int, default=2, help="traced moves (after 2 unmeasured)")
    ap.add_argument("--min-ms", type=float, default=1.5, help="shortest task listed")
    ap.add_argument("--timeout", type=float, default=120, help="seconds any browser wait may take")
    args = ap.parse_args(argv)
    trivial = B.SliderCase("trivial app · n", True, "", (), "n", "chart")
    case = trivial if args.page == "trivial" else case_of(args.page)
    if args.slider and not case.trivial:
        cases = [c for c in B.page_cases() if c.label == f"{args.page} · {args.slider}"]
        if not cases:
            ap.error(f"no benchmark case {args.page} · {args.slider}; see the page's PageChecks")
        case = cases[0]
    for i, (times, found) in enumerate(trace_moves(case, args.moves, args.min_ms, int(args.timeout * 1000))):
        print(f"{case.label}, move {i + 1} (ms from the key press): " + ", ".join(f"{k} {v}" for k, v in times.items()))
        for t in found:
            print(f"  {t.start:7.1f} +{t.ms:6.1f}  {t.kind:34s} " + ", ".join(f"{n} {ms:.0f}" for n, ms in t.parts))
        print(summary(found))
    return 0


if __name__ == "__main__":
    sys.exit(main())
