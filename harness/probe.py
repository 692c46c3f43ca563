"""Run a Streamlit server with a memory probe: every few seconds one JSON line of what the process holds.

    python -m harness.probe --out probe.jsonl --every 10 -- run app.py --server.port 8501 ...

The arguments after ``--`` are Streamlit's command line (``streamlit <args>``). A daemon thread
writes, every ``--every`` seconds, ``{"t": seconds since start, "objects": live Python objects the
collector tracks, "rss_kib": resident memory, "gc": collections per generation}``, flushed at
once, so a soak (bench/soak.py) can show memory staying flat without Streamlit's post-run full
collection. Counting the objects walks the collector's lists (a few ms with the app's ~250k
objects) while holding the interpreter lock: a benchmark tool, never used by ``make run``.
"""

from __future__ import annotations

import argparse
import gc
import json
import runpy
import sys
import threading
import time
from pathlib import Path


def _rss_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def sample(t0: float) -> dict:
    """One probe line: elapsed seconds, tracked objects, resident KiB, collections per generation."""
    return {
        "t": round(time.monotonic() - t0, 2),
        "objects": len(gc.get_objects()),
        "rss_kib": _rss_kib(),
        "gc": [s["collections"] for s in gc.get_stats()],
    }


def _watch(out: Path, every: float, stop: threading.Event) -> None:
    t0 = time.monotonic()
    with out.open("a", encoding="utf-8") as fh:
        while not stop.wait(every):
            fh.write(json.dumps(sample(t0)) + "\n")
            fh.flush()


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    ours, theirs = (argv[: argv.index("--")], argv[argv.index("--") + 1 :]) if "--" in argv else (argv, [])
    ap = argparse.ArgumentParser(prog="python -m harness.probe")
    ap.add_argument("--out", type=Path, required=True, help="JSON lines file to append to")
    ap.add_argument("--every", type=float, default=10.0, help="seconds between samples")
    args = ap.parse_args(ours)
    if args.every <= 0:
        ap.error("--every must be positive")
    threading.Thread(target=_watch, args=(args.out, args.every, threading.Event()), daemon=True).start()
    sys.argv = ["streamlit", *theirs]
    runpy.run_module("streamlit", run_name="__main__", alter_sys=True)  # as ``python -m streamlit <args>``


if __name__ == "__main__":
    main()
