"""Soak (not a timed test): a lecture hall for ten minutes against one server, its memory sampled all along.

    .venv/bin/python bench/soak.py [--students 100] [--minutes 10] [--think 6] [--page heatmaps] [--post-gc]

Streamlit's full garbage collection after every script run is off (``.streamlit/config.toml``,
``runner.postScriptGC = false``) because it costs ~120 ms of every run. This shows what that
costs in memory: one server started with :mod:`harness.probe` (every ``--every`` seconds its
live Python objects and resident memory), the students of ``bench/hall.py`` moving a slider
every ``--think`` seconds for ``--minutes``, then the growth from the end of the warm-up (every
student connected and painted, plus ``--warmup`` seconds) to the end, as the medians of the first
and of the last third of the samples (caches and in-flight runs swing the object count by several
percent from one sample to the next). Targets: resident memory grows under 10 %, tracked Python
objects do not grow (under 2 %). The samples stay in ``artifacts/soak-<time>.jsonl``.
``--post-gc`` turns Streamlit's collection back on, to compare.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from hall import MAX_MOVES, HallSpec, fmt_s, run_hall, warm_up  # noqa: E402 - bench/ is this script's own folder

from harness import start_server  # noqa: E402

RSS_TARGET, OBJECTS_TARGET = 0.10, 0.02


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="bench/soak.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("--students", type=int, default=100)
    ap.add_argument("--minutes", type=float, default=10.0)
    ap.add_argument("--think", type=float, default=6.0, help="seconds between one student's moves")
    ap.add_argument("--page", default="heatmaps")
    ap.add_argument("--widget", default=None)
    ap.add_argument("--every", type=float, default=10.0, help="seconds between memory samples")
    ap.add_argument(
        "--warmup", type=float, default=60.0, help="seconds after the ramp not counted (first paints, caches filling)"
    )
    ap.add_argument("--post-gc", action="store_true", help="Streamlit's full collection after every run, on")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    if not (1 <= args.students <= 500 and 0.5 <= args.minutes <= 60 and args.think > 0 and args.every > 0):
        ap.error("students 1..500, minutes 0.5..60, think and every positive")
    return args


def _thirds(values: list[float]) -> tuple[float, float]:
    """Medians of the first and of the last third: the trend, not one sample's noise (caches and
    sessions' in-flight runs make the object count swing by several percent between samples)."""
    n = max(1, len(values) // 3)
    return statistics.median(values[:n]), statistics.median(values[-n:])


def growth(samples: list[dict], start_t: float) -> dict:
    """Resident memory and tracked objects after ``start_t``: first-third against last-third medians, peaks."""
    after = [s for s in samples if s["t"] >= start_t] or samples[-1:]
    rss, objects = [s["rss_kib"] for s in after], [s["objects"] for s in after]
    rss0, rss1 = _thirds(rss)
    ob0, ob1 = _thirds(objects)
    return {
        "from_t": after[0]["t"],
        "to_t": after[-1]["t"],
        "samples": len(after),
        "rss_mib": (rss0 / 1024, rss1 / 1024, max(rss) / 1024),
        "rss_growth": rss1 / rss0 - 1,
        "objects": (int(ob0), int(ob1), max(objects)),
        "objects_growth": ob1 / ob0 - 1,
        "full_collections": after[-1]["gc"][2] - after[0]["gc"][2],
    }


def report(args: argparse.Namespace, hall: dict, g: dict) -> str:
    s, t = hall["summary"], hall["tally"]
    rss0, rss1, rss_peak = g["rss_mib"]
    ob0, ob1, ob_peak = g["objects"]
    ok_rss, ok_obj = g["rss_growth"] < RSS_TARGET, g["objects_growth"] < OBJECTS_TARGET
    return "\n".join(
        [
            f"# soak: {args.students} students on {args.page}, a move every {args.think:g} s for "
            f"{hall['seconds'] / 60:.1f} min; post-run GC {'on' if args.post_gc else 'off'}; "
            f"{os.cpu_count()} cores",
            f"moves {len(t['updates'])}, update p50 / p95 {fmt_s(s['update_p50'])} / {fmt_s(s['update_p95'])} s, "
            f"errors {t['exceptions'] + t['error_boxes']}, cross-talk {t['crosstalk']}, timeouts {t['timeouts']}, "
            f"disconnects {t['disconnects']}, server CPU per run {s['cpu_ms_per_run']:.0f} ms",
            f"from t = {g['from_t']:.0f} s (warm) to {g['to_t']:.0f} s, {g['samples']} samples; medians of the "
            "first third -> the last third:",
            f"  resident memory {rss0:.0f} -> {rss1:.0f} MiB (peak {rss_peak:.0f}): {g['rss_growth']:+.1%} "
            f"[target < +{RSS_TARGET:.0%}: {'met' if ok_rss else 'MISSED'}]",
            f"  tracked Python objects {ob0:,} -> {ob1:,} (peak {ob_peak:,}): {g['objects_growth']:+.2%} "
            f"[target < +{OBJECTS_TARGET:.0%}: {'met' if ok_obj else 'MISSED'}]",
            f"  Python's own full collections meanwhile: {g['full_collections']}",
        ]
    )


def _last_t(probe: Path) -> float:
    lines = [line for line in probe.read_text().splitlines() if line.strip()]
    return json.loads(lines[-1])["t"] if lines else 0.0


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    moves = min(MAX_MOVES, max(1, math.ceil(args.minutes * 60 / args.think)))
    (ROOT / "artifacts").mkdir(exist_ok=True)
    probe = ROOT / "artifacts" / f"soak-{time.strftime('%Y%m%d-%H%M%S')}.jsonl"  # kept: the samples
    env = {"STREAMLIT_RUNNER_POST_SCRIPT_GC": "true" if args.post_gc else "false"}
    proc, url = start_server(env, probe=probe, probe_every=args.every)
    try:
        asyncio.run(warm_up(url, args.page, args.widget, 120))
        started = _last_t(probe)
        spec = HallSpec(url=url, page=args.page, widget=args.widget, students=args.students, moves=moves)
        spec.think, spec.ramp, spec.max_seconds, spec.timeout = args.think, 10.0, args.minutes * 60 + 600, 300
        result = asyncio.run(run_hall(spec, [proc.pid]))
    finally:
        proc.terminate()
        proc.wait(15)
    samples = [json.loads(line) for line in probe.read_text().splitlines() if line.strip()]
    hall = {"seconds": result.seconds, "tally": result.tally, "summary": result.summary()}
    warm_t = started + spec.ramp + args.warmup
    g = growth(samples, warm_t)
    print(report(args, hall, g))
    if args.json:
        args.json.write_text(json.dumps({"hall": hall, "growth": g, "samples": samples}, indent=1))
    t = result.tally
    return 1 if t["exceptions"] or t["error_boxes"] or t["crosstalk"] or t["timeouts"] else 0


if __name__ == "__main__":
    sys.exit(main())
