"""What each speed trick of the app buys: the app as it is (A) against a copy with one trick taken out (B).

For each trick in :data:`TRICKS` a detached worktree of ``HEAD`` is made, the trick is taken out of it by one
textual edit, and ``bench/ab.py``'s measurement runs both checkouts in the same minutes (one chromium page each,
the order flipped every round) on the pages the trick is for. A trick earns its place when taking it out makes a
student's wait (key press to painted chart) or the server's CPU per move at least :data:`KEEP` times larger.
The table goes to ``docs/performance.md`` (section ``tricks``) and to stdout.

    .venv/bin/python bench/tricks.py                       # every trick, 16 moves a side
    .venv/bin/python bench/tricks.py --only plain,margins --moves 24
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

try:
    from bench import ab, perf_doc
    from bench import bench as B
except ImportError:  # run as a script: its folder comes first on the path
    import ab  # type: ignore[no-redef]
    import perf_doc  # type: ignore[no-redef]

    import bench as B  # type: ignore[no-redef]

KEEP = 1.10  # B / A: taking the trick out costs at least 10 % of the painted time or of the server's CPU


@dataclass(frozen=True)
class Trick:
    """A trick, the pages it is for, and the edit that takes it out (``old`` -> ``new`` in ``path``)."""

    name: str
    what: str
    pages: tuple[str, ...]
    path: str
    old: str
    new: str
    #: why it stays even when it buys less than 10 % (it does more than save time), or ""
    kept_for: str = ""


TRICKS = (
    Trick(
        "freeze",
        "`gc.freeze()` after the engine and a model load (`ui.compute.freeze_heap`)",
        ("heatmaps", "kv_cache"),
        "ui/compute.py",
        "    import gc\n\n    gc.collect()\n    gc.freeze()",
        "    return",
    ),
    Trick(
        "plain",
        "figures kept as plain dicts until touched (`PlainFigure`)",
        ("heatmaps", "mla"),
        "attn_core/figures/base.py",
        '        object.__setattr__(self, "_plain", ([dict(trace) for trace in data], _own(layout), frames))',
        '        go.Figure.__init__(self, {"data": data, "layout": layout, **({"frames": frames} if frames else {})})',
    ),
    Trick(
        "lazy",
        "an expander's content sent only while it is open (`ui.lazy_expander`)",
        ("saturation", "kv_cache"),
        "ui/output.py",
        '    if chart_scheme() is None:\n        return st.expander(label, key=key, **{"expanded": open_first, **kwargs})',
        '    if True:\n        return st.expander(label, key=key, **{"expanded": open_first, **kwargs})',
    ),
    Trick(
        "shared",
        "the saturation sweep's scores built once per server and shared (`ui.shared`)",
        ("saturation",),
        "ui/compute.py",
        "    name, key, dev = _name(fn), digest(args), device()\n    page =",
        "    return None\n    name, key, dev = _name(fn), digest(args), device()\n    page =",
    ),
    Trick(
        "margins",
        "label margins reserved on the server from a glyph-width table (`figures.margins`), so plotly lays out once",
        ("heatmaps", "saturation"),
        "attn_core/figures/margins.py",
        '    layout, data = spec.get("layout"), spec.get("data") or []\n    if not isinstance(layout, dict):',
        '    layout, data = spec.get("layout"), spec.get("data") or []\n    if True:',
        "the figures plan their panels, wrapped labels, phone copies and exported slides around the margins it "
        "reserves (`figures.gridplan`, `figures.slides`, `figures.phone`)",
    ),
)


def without(trick: Trick, where: Path) -> None:
    """A detached worktree of HEAD at ``where`` with ``trick`` taken out (its virtualenv linked)."""
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "-f", str(where), "HEAD"], check=True)
    target = where / trick.path
    text = target.read_text(encoding="utf-8")
    if trick.old not in text:
        raise SystemExit(f"tricks.py: {trick.name}: the code it edits has changed ({trick.path})")
    target.write_text(text.replace(trick.old, trick.new, 1), encoding="utf-8")
    if (ROOT / ".venv").exists():
        (where / ".venv").symlink_to((ROOT / ".venv").resolve())


def ratios(sessions: list) -> dict[str, float]:
    """B / A: the paired median for the painted time; for the server's CPU, the total over all moves (the process
    clock counts in 10 ms ticks, so one move's CPU is too coarse to pair)."""
    a, b = sessions
    pairs = [y / x for x, y in zip(a.times["painted"], b.times["painted"], strict=True) if x > 0]
    total_a, total_b = sum(a.times["server_cpu"]), sum(b.times["server_cpu"])
    return {
        "painted": statistics.median(pairs) if pairs else float("nan"),
        "server_cpu": total_b / total_a if total_a > 0 else float("nan"),
    }


def mean_ms(session, key: str) -> float:
    values = session.times[key]
    return 1e3 * sum(values) / len(values) if values else 0.0


def row(trick: Trick, page: str, sessions: list) -> list[str]:
    a, b = sessions
    r = ratios(sessions)
    med = lambda s, k: 1e3 * (s.med(k) or 0)  # noqa: E731
    return [
        trick.name,
        page,
        f"{med(a, 'painted'):.0f} → {med(b, 'painted'):.0f} ms",
        f"{r['painted']:.2f}",
        f"{mean_ms(a, 'server_cpu'):.1f} → {mean_ms(b, 'server_cpu'):.1f} ms",
        f"{r['server_cpu']:.2f}",
    ]


def verdict(trick: Trick, rows: list[list[str]]) -> str:
    worst = max(max(float(r[3]), float(r[5])) for r in rows)
    if worst >= KEEP:
        return f"kept: taking it out costs {100 * (worst - 1):.0f} %"
    return f"pays less than 10 %; kept all the same: {trick.kept_for}" if trick.kept_for else "pays less than 10 %"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", default="", help="tricks to measure, comma-separated (default: all)")
    ap.add_argument("--moves", type=int, default=16, help="measured moves per side and page")
    ap.add_argument("--timeout", type=float, default=120)
    ap.add_argument("--no-doc", action="store_true", help="print only; leave docs/performance.md alone")
    args = ap.parse_args(argv)
    from playwright.sync_api import sync_playwright

    from harness import CHROMIUM_ARGS, chromium_path, start_server

    chosen = [t for t in TRICKS if not args.only or t.name in args.only.split(",")]
    info = perf_doc.machine_info() if hasattr(perf_doc, "machine_info") else None
    rows, notes = [], []
    for trick in chosen:
        tmp = Path(tempfile.mkdtemp(prefix=f"trick-{trick.name}-")) / "app"
        without(trick, tmp)
        servers = [start_server(cwd=ROOT), start_server(cwd=tmp)]
        try:
            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
                mine = []
                for page in trick.pages:
                    case = ab.case_of(page)
                    sessions = ab.measure(browser, case, servers, args.moves, int(args.timeout * 1000))
                    ab.report(case, sessions, (ROOT, tmp), args.moves)
                    mine.append(row(trick, page, sessions))
                browser.close()
        finally:
            for proc, _ in servers:
                B.stop_server(proc)
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tmp)], check=False)
            shutil.rmtree(tmp.parent, ignore_errors=True)
        rows += mine
        notes.append(f"{trick.name}: {trick.what}: {verdict(trick, mine)}")
    columns = [
        "trick",
        "page",
        "painted, with → without",
        "paired ratio",
        "server CPU per move (mean)",
        "ratio of totals",
    ]
    for r in rows:
        print(" | ".join(r))
    for n in notes:
        print(n)
    if not args.no_doc and info is not None:
        moves = f"{args.moves} moves a side and page, order flipped every round; painted: median of the paired ratios without / with; server CPU: total without / total with"
        table = perf_doc.Table(columns, rows, [moves, *notes])
        perf_doc.update({"tricks": table}, info, "bench/tricks.py " + " ".join(argv or sys.argv[1:]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
