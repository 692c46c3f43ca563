"""docs/performance.md as bench/bench.py writes it, from made-up results (nothing is measured here)."""

from __future__ import annotations

import json

from bench import perf_doc
from bench.bench import PageResult, core_doc_table, pages_doc_table
from bench.perf_doc import Table

INFO = {
    "date": "2030-01-02 03:04 UTC",
    "cpu": "Test CPU (x86_64)",
    "cores": "2",
    "gpu": "none",
    "torch": "9.9.9+cpu (2 threads)",
    "streamlit": "1.2.3",
    "python": "3.11.0",
    "device": "CPU",
    "load": "0.1/0.2/0.3",
}


def section(text: str, title: str) -> str:
    """The part of the file under the heading ``## title``, up to the next heading."""
    return text.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]


def test_a_run_writes_its_sections_and_says_which_were_never_measured(tmp_path):
    doc = tmp_path / "docs" / "performance.md"
    pages = pages_doc_table(
        [
            PageResult(
                "heatmaps", "defaults", 0.1, median=0.025, p95=0.03, cold=0.5, n=3, charts=4, largest_chart=20480
            ),
            PageResult("kv_cache", "largest", 0.6, failed="RuntimeError: boom"),
        ],
        ["export of the heatmap grid: first PNG 1.80 s"],
    )
    core = core_doc_table(["core cpu  live decode at 1024 tokens (8 heads): with cache 174.0 steps/s | 2.8 without"])
    perf_doc.update({"pages": pages, "core": core}, INFO, "bench/bench.py --only pages", doc=doc)

    text = doc.read_text(encoding="utf-8")
    assert text.startswith("# Performance\n")
    for fact in ("2030-01-02 03:04 UTC", "Test CPU (x86_64), 2 cores", "9.9.9+cpu", "1.2.3", "3.11.0", "CPU"):
        assert fact in text.split("\n## ", 1)[0]  # the header names the run and the machine
    pages_md = section(text, perf_doc.TITLES["pages"])
    assert "| heatmaps · defaults | 25.0 ms | 30.0 ms | 500.0 ms | 3 | 4 | 20 KiB | ≤ 100 ms: met |" in pages_md
    assert "| kv_cache · largest | FAILED |" in pages_md
    assert "- export of the heatmap grid: first PNG 1.80 s" in pages_md
    core_md = section(text, perf_doc.TITLES["core"])
    assert "| cpu | live decode at 1024 tokens (8 heads) | with cache 174.0 steps/s \\| 2.8 without |" in core_md
    browser_md = section(text, perf_doc.TITLES["browser"])
    assert "Not measured on this machine yet" in browser_md and "|" not in browser_md
    assert json.loads((tmp_path / "docs" / "performance.json").read_text())["tables"]["browser"] is None


def test_a_later_run_keeps_the_tables_of_the_sections_it_did_not_run(tmp_path):
    doc = tmp_path / "performance.md"
    first = dict(INFO, date="2030-01-01 00:00 UTC")
    perf_doc.update(
        {"core": Table(["device", "what", "figures"], [["cpu", "weights path", "49.9 ms"]])}, first, "a", doc=doc
    )
    browser = Table(["page · slider", "painted"], [["trivial app", "102"], ["heatmaps · head_dim", "246"]], ["cold"])
    perf_doc.update({"browser": browser}, INFO, "bench/bench.py --only browser", doc=doc)

    text = doc.read_text(encoding="utf-8")
    core_md = section(text, perf_doc.TITLES["core"])
    assert "| cpu | weights path | 49.9 ms |" in core_md  # kept from the first run ...
    assert "Measured 2030-01-01 00:00 UTC" in core_md  # ... with its own date
    browser_md = section(text, perf_doc.TITLES["browser"])
    assert "Measured 2030-01-02 03:04 UTC by `bench/bench.py --only browser` on Test CPU" in browser_md
    assert "load average at start 0.1/0.2/0.3" in browser_md
    assert "| heatmaps · head_dim | 246 |" in browser_md and "- cold" in browser_md
    assert "Not measured" in section(text, perf_doc.TITLES["pages"])
    assert "Last written 2030-01-02 03:04 UTC by `bench/bench.py --only browser`" in text


def test_an_unreadable_sidecar_is_a_fresh_start(tmp_path):
    doc = tmp_path / "performance.md"
    doc.with_suffix(".json").write_text("{not json", encoding="utf-8")
    perf_doc.update({"core": Table(["device"], [["cpu"]])}, INFO, "c", doc=doc)
    assert "| cpu |" in doc.read_text(encoding="utf-8")
    assert json.loads(doc.with_suffix(".json").read_text())["tables"]["core"]["rows"] == [["cpu"]]
