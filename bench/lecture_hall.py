"""The lecture-hall targets (not a timed test): the same halls against 1 worker and against N behind nginx.

    .venv/bin/python bench/lecture_hall.py [--workers 2] [--pages heatmaps,kv_sharing] [--quick]

For each server (``python -m serve`` with 1 worker, then with ``--workers``, each started fresh and
warmed by one visit per page) it runs, one after the other, the halls of the lecture-hall targets:

- ``class``: 100 students, think time 5 s, 5 moves each (target: update p95 <= 2 s, 0 errors, 0 cross-talk);
- ``same link``: 100 students opening one link within 2 s, 1 move (target: first paint p95 <= 5 s);
- ``20 busy``: 20 students, think time 1 s, 5 moves (target: update p95 <= 1 s);

on every page of ``--pages``, and prints one table with the target verdicts. ``--burst N`` adds a fourth hall,
the class hall with every move made of N quick presses (``bench/hall.py --burst``: sent without reading the replies
between them, as a busy browser does; a reply a browser could not use counts as an error), held to the class
hall's target. ``--quick`` divides the students by 10 (a check that everything runs, not a measurement).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

try:
    from bench.hall import HallResult, HallSpec, failed, fmt_s, run_hall, warm_up
except ImportError:  # run as a script: its folder comes first on the path, and "bench" is bench/bench.py
    from hall import HallResult, HallSpec, failed, fmt_s, run_hall, warm_up  # type: ignore[no-redef]

from harness import start_serve  # noqa: E402


@dataclass(frozen=True)
class Target:
    label: str
    students: int
    think: float
    moves: int
    ramp: float
    same_link: bool
    measure: str  # "update" or "first_paint": the p95 the target is on
    limit_s: float
    burst: int = 1  # presses a move (bench/hall.py --burst)


TARGETS = (
    Target("class", 100, 5.0, 5, 5.0, False, "update", 2.0),
    Target("same link", 100, 1.0, 1, 2.0, True, "first_paint", 5.0),
    Target("20 busy", 20, 1.0, 5, 2.0, False, "update", 1.0),
)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="bench/lecture_hall.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 2, help="workers of the second server")
    ap.add_argument("--pages", default="heatmaps,kv_sharing", help="comma-separated registry names")
    ap.add_argument("--quick", action="store_true", help="a tenth of the students: check it runs")
    ap.add_argument(
        "--burst", type=int, choices=range(2, 11), metavar="N", help="add the class hall with N quick presses a move"
    )
    ap.add_argument("--halls", default="", help="only these halls, comma-separated labels (e.g. 'class')")
    ap.add_argument("--no-single", action="store_true", help="skip the server with 1 worker")
    ap.add_argument("--doc", action="store_true", help="write the table into docs/performance.md (section hall)")
    return ap.parse_args(argv)


def targets(burst: int | None) -> tuple[Target, ...]:
    """The halls to run: :data:`TARGETS`, and with ``burst`` the class hall again with bursts of that many presses."""
    if not burst:
        return TARGETS
    c = TARGETS[0]
    return (
        *TARGETS,
        Target(f"class, bursts of {burst}", c.students, c.think, c.moves, c.ramp, False, c.measure, c.limit_s, burst),
    )


def hall_spec(url: str, page: str, target: Target, quick: bool, seed_base: int) -> HallSpec:
    spec = HallSpec(url=url, page=page, students=max(2, target.students // (10 if quick else 1)))
    spec.think, spec.moves, spec.ramp, spec.same_link = target.think, target.moves, target.ramp, target.same_link
    spec.seed_base, spec.label, spec.timeout, spec.max_seconds = seed_base, target.label, 120.0, 900.0
    spec.burst = target.burst
    return spec


def verdict(result: HallResult, target: Target) -> str:
    s = result.summary()
    value = s[f"{target.measure}_p95"]
    ok = value is not None and value <= target.limit_s and not failed(result)
    return (
        f"{target.measure.replace('_', ' ')} p95 {fmt_s(value)} s <= {target.limit_s:g} s: {'met' if ok else 'MISSED'}"
    )


def run_server(
    workers: int, pages: list[str], quick: bool, halls: tuple[Target, ...] = TARGETS
) -> list[tuple[int, Target, HallResult]]:
    proc, state, _ = start_serve(workers=workers)
    out = []
    try:
        url = state["url"].rstrip("/")
        for page in pages:
            asyncio.run(warm_up(url, page, None, 120))
            for i, target in enumerate(halls):
                pids = [w["pid"] for w in state["workers"] if w["pid"]]
                spec = hall_spec(url, page, target, quick, seed_base=1 + 1000 * i)
                print(f"  {workers} worker(s), {page}, {target.label} ...", file=sys.stderr, flush=True)
                out.append((workers, target, asyncio.run(run_hall(spec, pids))))
    finally:
        proc.terminate()
        proc.wait(60)
    return out


COLUMNS = [
    "workers",
    "page",
    "hall",
    "students",
    "update p50 / p95 (s)",
    "first paint p50 / p95 (s)",
    "errors, cross-talk, timeouts",
    "server CPU per run",
    "peak memory (all workers)",
    "target",
]


def cells(rows: list[tuple[int, Target, HallResult]]) -> list[list[str]]:
    out = []
    for workers, target, r in rows:
        s, t = r.summary(), r.tally
        cpu = "-" if s["cpu_ms_per_run"] is None else f"{s['cpu_ms_per_run']:.0f} ms"
        out.append(
            [
                str(workers),
                r.spec["page"],
                target.label,
                str(r.spec["students"]),
                f"{fmt_s(s['update_p50'])} / {fmt_s(s['update_p95'])}",
                f"{fmt_s(s['first_paint_p50'])} / {fmt_s(s['first_paint_p95'])}",
                f"{t['exceptions'] + t['error_boxes'] + t['broken']}, {t['crosstalk']}, {t['timeouts'] + t['disconnects']}",
                cpu,
                f"{r.hwm / 2**20:.0f} MiB",
                verdict(r, target),
            ]
        )
    return out


def table(rows: list[tuple[int, Target, HallResult]]) -> str:
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(row) + " |" for row in cells(rows)]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    pages = [p.strip() for p in args.pages.split(",") if p.strip()]
    halls = tuple(t for t in targets(args.burst) if not args.halls or t.label in args.halls.split(","))
    rows, load = [], os.getloadavg()
    for workers in dict.fromkeys((args.workers,) if args.no_single else (1, args.workers)):
        rows += run_server(workers, pages, args.quick, halls)
    print(f"# {os.cpu_count()} CPU cores, load average {os.getloadavg()[0]:.1f}{' (quick)' if args.quick else ''}")
    print(table(rows))
    if args.doc and not args.quick:
        try:
            from bench import perf_doc
        except ImportError:  # run as a script: "bench" is bench/bench.py
            import perf_doc  # type: ignore[no-redef]

        info = perf_doc.machine_info()
        info["load"] = "/".join(f"{x:.1f}" for x in load)
        note = "think time between a reply and the next move; `make serve` workers behind nginx on this machine"
        cmd = "bench/lecture_hall.py " + " ".join(argv if argv is not None else sys.argv[1:])
        perf_doc.update({"hall": perf_doc.Table(COLUMNS, cells(rows), [note])}, info, cmd)
    return 1 if any(failed(r) for _, _, r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
