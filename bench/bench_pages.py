"""Benchmark: median rerun time of each page under AppTest (not a timed test).

    python bench/bench_pages.py [--repeats 15]

Prints one line per scenario: the median and p90 of full script reruns after a
widget change (cache warm, which is what a slider move costs the server), plus
the first (cold) run. Target: heatmap page at defaults <= 100 ms on a 2-core machine.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("ATTN_DEVICE", "auto")

from streamlit.testing.v1 import AppTest  # noqa: E402

from tests.conftest import disable_legacy_pages_routing  # noqa: E402

disable_legacy_pages_routing()  # measure the steady state of a warm server


def find_widget(at, key: str):
    for kind in (
        "toggle",
        "slider",
        "select_slider",
        "segmented_control",
        "checkbox",
        "number_input",
        "selectbox",
        "radio",
        "text_area",
        "text_input",
    ):
        try:
            return getattr(at, kind)(key=key)
        except KeyError:
            continue
    raise SystemExit(f"no widget with key {key!r}")


def run_scenario(name: str, page: str | None, query: dict[str, str], toggle_key: str, values: list, repeats: int):
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300)
    if page:
        at.switch_page(page)  # a fresh session opening the page's URL
    for k, v in query.items():
        at.query_params[k] = v
    t0 = time.perf_counter()
    at.run()
    cold = time.perf_counter() - t0
    if at.exception:
        raise SystemExit(f"{name}: {at.exception[0].value}")
    times = []
    for i in range(repeats):
        find_widget(at, toggle_key).set_value(values[i % len(values)])
        t0 = time.perf_counter()
        at.run()
        times.append(time.perf_counter() - t0)
        if at.exception:
            raise SystemExit(f"{name}: {at.exception[0].value}")
    times.sort()
    med = statistics.median(times)
    p90 = times[int(0.9 * (len(times) - 1))]
    print(f"{name:<44} median {med * 1000:7.1f} ms   p90 {p90 * 1000:7.1f} ms   cold {cold * 1000:7.0f} ms")
    return med


SCENARIOS = [
    # name, page, query params, widget key to alternate, values
    ("heatmaps: defaults (alternate scaling)", None, {}, "scaling", [False, True]),
    ("heatmaps: defaults (move d_k)", None, {}, "head_dim", [17, 16]),
    (
        "heatmaps: seq_len 512, 16 heads",
        None,
        {"source": "synthetic", "seq_len": "512", "n_heads": "16", "n_kv_heads": "4"},
        "scaling",
        [False, True],
    ),
    ("saturation: defaults (alternate scaling)", "pages/saturation.py", {}, "scaling", [False, True]),
    ("kv sharing: defaults (alternate n_heads)", "pages/kv_sharing.py", {}, "n_heads", [12, 8]),
    ("kv cache: defaults (alternate batch)", "pages/kv_cache.py", {}, "batch", [2, 1]),
]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=15)
    args = ap.parse_args()
    import torch

    from attn_core.device import device_label, pick_device

    print(f"device: {device_label(pick_device())}; torch {torch.__version__}; {os.cpu_count()} CPU cores")
    for name, page, query, key, values in SCENARIOS:
        run_scenario(name, page, query, key, values, args.repeats)
    export_timing()


def export_timing() -> None:
    """Server-side image export: the first render starts Chromium, later ones reuse the warm renderer."""
    from attn_core import figures, views
    from attn_core.config import AttentionConfig
    from attn_core.maps import compute_attention_maps
    from attn_core.render import find_chromium, render_image
    from attn_core.tokens import tokenize

    if find_chromium() is None:
        print("export: skipped (no chromium)")
        return
    m = compute_attention_maps(AttentionConfig(), tokenize("The cat sat on the mat because it was tired ."))
    fig = views.heatmap_grid_view(m, figures.Style()).figure
    t0 = time.perf_counter()
    render_image(fig, "png")
    first = time.perf_counter() - t0
    times = {}
    for fmt in ("png", "svg", "pdf"):
        runs = []
        for _ in range(5):
            t0 = time.perf_counter()
            render_image(fig, fmt)
            runs.append(time.perf_counter() - t0)
        times[fmt] = statistics.median(runs)
    print(
        f"{'export of the heatmap grid':<44} first PNG {first:5.2f} s; warm median "
        + ", ".join(f"{k.upper()} {v:.2f} s" for k, v in times.items())
    )


if __name__ == "__main__":
    main()
