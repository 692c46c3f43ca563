"""docs/performance.md, written by ``bench/bench.py`` after every run: the figures of the latest run of each section.

The file has a header (when it was last written, on what machine, with which torch, Streamlit and Python, on what
device the pages computed) and one table per section of ``make bench`` (``pages``, ``core`` and ``browser``), of ``bench/tricks.py``
(``tricks``), of ``bench/lecture_hall.py`` (``hall``) and of ``bench/hall.py --lecture`` (``lecture``). A run
rewrites the tables of the sections it ran; a section it did not run keeps its table from the previous run, read
back from the JSON sidecar next to the Markdown file (``docs/performance.json``), with the date and machine that
measured it. A section that no run has measured yet says so instead of showing numbers.
"""

from __future__ import annotations

import json
import os
import platform
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "performance.md"
SECTIONS = ("pages", "core", "browser", "tricks", "hall", "lecture")
TITLES = {
    "pages": "Pages: a slider move on the server",
    "core": "Engine: torch timings",
    "browser": "Browser: slider to painted chart, and cold start",
    "tricks": "What each speed trick buys",
    "hall": "A class at once",
    "lecture": "A class following a live lecture room",
}
ABOUT = {
    "pages": (
        "Every page under Streamlit's AppTest, in one process, no browser: one widget alternated between two values "
        "(both cached), then full reruns timed. That is what a slider move costs the server once the computation "
        "is cached. `cold first run`: a new session with `st.cache_data` emptied. `largest chart`: the bytes of the "
        "largest plotly spec sent to the browser. Scenarios and targets are listed at the top of `bench/bench.py`."
    ),
    "core": (
        "The engine's own timings with torch, medians after warm-up: the weights path against torch's plain "
        "`softmax(q·kᵀ/√d)·v`, the pooled long-sequence path, a live decode step with and without the KV cache, "
        "an MLA decode step by both paths, attention as convolution on a 64×64 image, and each training-lab "
        "experiment trained to the end. On the CPU, and on CUDA too when torch sees a GPU."
    ),
    "browser": (
        "Playwright driving Debian's chromium against a real server, every figure against a trivial Streamlit app "
        "(`bench/trivial_app.py`: one slider, one small chart) in the same run, so the ratios hold across machines. "
        "Times in ms from the key press, medians; `painted` is the chart the slider changes, drawn and visible."
    ),
    "tricks": (
        "`bench/tricks.py`: the app as it is against a copy with one trick taken out, one chromium page each on "
        "its own server in the same minutes, the order flipped every round. A trick stays when taking it out "
        "makes the painted time or the server's CPU per move at least 10 % larger on a page it is for."
    ),
    "hall": (
        "`bench/lecture_hall.py` (`bench/hall.py`'s halls): simulated students on Streamlit's websocket protocol (each moves a slider, waits for its "
        "run, thinks, moves again) against `make serve`'s workers behind nginx; the lecture mode follows a "
        "lecturer in a live lecture room. Update: a move to its finished run; errors and cross-talk must be 0."
    ),
    "lecture": (
        "`bench/hall.py --lecture`: a lecturer and a class in a live lecture room through nginx, one worker killed "
        "mid-question. Follow: the lecturer's press to a student's run showing the slide; answer: the Answer press "
        "to the reply saying it is recorded. Targets: both p95 at most 1 s, nothing lost, no cross-talk."
    ),
}
NOT_MEASURED = "Not measured on this machine yet: run `{command}`."
COMMANDS = {
    "tricks": ".venv/bin/python bench/tricks.py",
    "hall": ".venv/bin/python bench/lecture_hall.py --workers 2 --no-single --halls class --doc",
    "lecture": ".venv/bin/python bench/hall.py --lecture --students 100 --doc",
}


@dataclass
class Table:
    """One section's table: column names, rows of cells (text), notes printed under it, and when, by which command
    and on what machine it was measured (filled in by :func:`update` for the sections of this run)."""

    columns: list[str]
    rows: list[list[str]]
    notes: list[str] = field(default_factory=list)
    measured: str = ""
    machine: str = ""
    command: str = ""
    load: str = ""


def cpu_model() -> str:
    """The CPU's model name (Linux's /proc/cpuinfo), else what the platform says."""
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace").splitlines():
            if line.lower().startswith(("model name", "hardware")):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"


def threads(n: int) -> str:
    """torch's thread count, and the OpenMP setting that chose it when there is one."""
    omp = os.environ.get("OMP_NUM_THREADS")
    return f"{n} thread{'' if n == 1 else 's'}" + (f", OMP_NUM_THREADS={omp}" if omp else "")


def machine_info() -> dict[str, str]:
    """What the header says about this run: date, CPU, cores, versions, the device the pages compute on."""
    import streamlit
    import torch

    from attn_core.runtime.device import device_label, pick_device

    try:
        device = device_label(pick_device())
    except Exception as exc:  # noqa: BLE001 - an unavailable ATTN_DEVICE: say so, do not fail the report
        device = f"? ({exc})"
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "cpu": f"{cpu_model()} ({platform.machine()})",
        "cores": str(cores),
        "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none",
        "torch": f"{torch.__version__} ({threads(torch.get_num_threads())})",
        "streamlit": streamlit.__version__,
        "python": platform.python_version(),
        "device": device,
        "load": "/".join(f"{x:.1f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "?",
    }


def machine_line(info: dict[str, str]) -> str:
    """The machine in one line, kept with each table (a kept table may come from another machine)."""
    return (
        f"{info['cpu']}, {info['cores']} cores, GPU {info['gpu']}; torch {info['torch']}, "
        f"Streamlit {info['streamlit']}, Python {info['python']}; pages on {info['device']}"
    )


def cell(text: object) -> str:
    """A Markdown table cell: pipes escaped, no line breaks."""
    return " ".join(str(text).split()).replace("|", "\\|")


def table_md(table: Table) -> list[str]:
    out = [
        "| " + " | ".join(cell(c) for c in table.columns) + " |",
        "|" + "|".join("---" for _ in table.columns) + "|",
    ]
    for row in table.rows:
        cells = [cell(c) for c in row] + [""] * (len(table.columns) - len(row))
        out.append("| " + " | ".join(cells) + " |")
    return out


def render(info: dict[str, str], tables: dict[str, Table | None], command: str) -> str:
    """The whole Markdown file."""
    out = [
        "# Performance",
        "",
        "<!-- Written by bench/bench.py (make bench) after every run; edits by hand are overwritten. -->",
        "",
        f"The latest figures of `make bench`, one table per section. Last written {info['date']} by `{command}`.",
        "",
        "| machine | |",
        "|---|---|",
        f"| CPU | {cell(info['cpu'])}, {info['cores']} cores |",
        f"| GPU | {cell(info['gpu'])} |",
        f"| torch | {cell(info['torch'])} |",
        f"| Streamlit | {cell(info['streamlit'])} |",
        f"| Python | {cell(info['python'])} |",
        f"| pages compute on | {cell(info['device'])} |",
        f"| load average at start (1/5/15 min) | {cell(info['load'])} |",
        "",
        "Timings move with whatever else the machine runs: compare figures of one run, or ratios against the "
        "trivial app. How each benchmark works and how to run it: [bench/README.md](../bench/README.md).",
    ]
    for name in SECTIONS:
        out += ["", f"## {TITLES[name]}", "", ABOUT[name], ""]
        table = tables.get(name)
        if table is None:
            out.append(
                NOT_MEASURED.format(command=COMMANDS.get(name, f".venv/bin/python bench/bench.py --only {name}"))
            )
            continue
        by = f" by `{table.command}`" if table.command else ""
        load = f"; load average at start {table.load} (1/5/15 min)" if table.load else ""
        out += [f"Measured {table.measured}{by} on {table.machine}{load}.", ""]
        out += table_md(table)
        if table.notes:
            out.append("")
            out += [f"- {cell(n)}" for n in table.notes]
    return "\n".join(out) + "\n"


def load(sidecar: Path) -> dict[str, Table]:
    """The tables of the previous run's sidecar (none when it is missing or unreadable)."""
    try:
        data = json.loads(sidecar.read_text(encoding="utf-8"))
        return {name: Table(**data["tables"][name]) for name in SECTIONS if data["tables"].get(name)}
    except (OSError, ValueError, KeyError, TypeError):
        return {}


def update(
    new: dict[str, Table], info: dict[str, str], command: str, doc: Path = DOC, sidecar: Path | None = None
) -> dict[str, Table | None]:
    """Write ``doc`` and its JSON sidecar: the tables in ``new`` (this run's, stamped with ``info``), the others as
    the previous sidecar had them. Returns the tables written."""
    sidecar = sidecar or doc.with_suffix(".json")
    old = load(sidecar)
    tables: dict[str, Table | None] = {}
    for name in SECTIONS:
        if name in new:
            table = new[name]
            table.measured, table.machine, table.command = info["date"], machine_line(info), command
            table.load = info.get("load", "")
            tables[name] = table
        else:
            tables[name] = old.get(name)
    doc.parent.mkdir(parents=True, exist_ok=True)
    doc.write_text(render(info, tables, command), encoding="utf-8")
    payload = {
        "written": info,
        "command": command,
        "tables": {k: asdict(v) if v else None for k, v in tables.items()},
    }
    sidecar.write_text(json.dumps(payload, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return tables
