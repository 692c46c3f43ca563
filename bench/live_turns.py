"""A class presses Start together: do live runs taking turns keep the hall responsive?

``python bench/live_turns.py [--runners 4] [--page lab] [--moves 6]``

Against a fresh server for each setting: ``ATTN_LIVE_RUNS`` unset (the server computes
``ui.compute.live_slots()`` runs at once, 2 on this 2-core machine), ``ATTN_LIVE_RUNS=1`` (one at a time) and
``ATTN_LIVE_RUNS=<runners>`` (every run at once). In each, ``--runners`` students (the protocol-level tabs of
``bench/hall.py``, each with its own seed) open ``--page`` and press its Start button at the same moment,
while one more student on the heatmaps page moves its d_k slider ``--moves`` times, one second apart.
Reported: that student's slider update (send to script finished) p50 / max while the runs go on, and each
run's time from Start to its end (first, median, last). Loopback only; bounded by ``--timeout``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
for p in (ROOT, ROOT / "bench"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

import hall  # noqa: E402

from harness import start_server  # noqa: E402
from ui.streamlit_compat import WidgetState  # noqa: E402

hall.WIDGET_KINDS.add("button")  # a runner presses its page's Start button
START = {"lab": "lab_run", "complexity": "cx_run", "kv_cache": "kv_run", "mla": "mla_run"}  # the Start button keys
# the view with that button (lab: ~6 s a run; kv_cache: a link that sets a decode control opens its live decode)
QUERY = {"lab": {"experiment": "kv_heads"}, "mla": {"view": "decode"}, "kv_cache": {"dec_steps": "128"}}


def press(tab: hall.Tab, key: str) -> None:
    """Click button ``key``: a trigger for the next run only (the frontend sends it once)."""
    wid = next((w for w in tab.elements if w.endswith("-" + key)), None)
    if wid is None:
        raise hall.HallError(f"no button {key!r} on {tab.page_path}")
    tab.widgets[wid] = WidgetState(id=wid, trigger_value=True)


async def runner(url: str, page: str, seed: int, go: asyncio.Event, timeout: float) -> float:
    """Open ``page`` with its own seed, press Start when ``go`` is set; seconds from the press to the run's end."""
    tab = hall.Tab(url, hall.page_path(page), {"seed": str(seed), **QUERY.get(page, {})})
    await tab.open()
    try:
        await asyncio.wait_for(tab.rerun(), timeout)
        await go.wait()
        press(tab, START[page])
        t0 = time.perf_counter()
        reply = await asyncio.wait_for(tab.rerun(), timeout)
        if reply.exceptions or reply.errors:
            raise hall.HallError(f"runner {seed}: {(reply.exceptions + reply.errors)[0]}")
        return time.perf_counter() - t0
    finally:
        await tab.close()


async def observer(url: str, moves: int, ready: asyncio.Event, go: asyncio.Event, timeout: float) -> list[float]:
    """The heatmaps page's d_k slider moved ``moves`` times, 1 s apart, from the moment the runs start."""
    tab = hall.Tab(url, "", {"seed": "999"})
    await tab.open()
    try:
        await asyncio.wait_for(tab.rerun(), timeout)
        ready.set()
        await go.wait()
        out = []
        for value in hall.slider_moves(tab.slider("head_dim"), moves, offset=0):
            await asyncio.sleep(1.0)
            tab.move("head_dim", value)
            t0 = time.perf_counter()
            await asyncio.wait_for(tab.rerun(), timeout)
            out.append(time.perf_counter() - t0)
        return out
    finally:
        await tab.close()


async def one_hall(url: str, args: argparse.Namespace) -> tuple[list[float], list[float]]:
    go, ready = asyncio.Event(), asyncio.Event()
    watch = asyncio.create_task(observer(url, args.moves, ready, go, args.timeout))
    runs = [asyncio.create_task(runner(url, args.page, 100 + i, go, args.timeout)) for i in range(args.runners)]
    await ready.wait()
    await asyncio.sleep(3.0)  # every runner's page is open (a first visit computes)
    go.set()
    return await watch, list(await asyncio.gather(*runs))


def measure(args: argparse.Namespace, slots: str | None) -> str:
    env = {} if slots is None else {"ATTN_LIVE_RUNS": slots}
    saved = os.environ.pop("ATTN_LIVE_RUNS", None)
    proc, url = start_server(extra_env=env)
    try:
        updates, runs = asyncio.run(asyncio.wait_for(one_hall(url, args), args.timeout * 3))
    finally:
        proc.terminate()
        proc.wait(10)
        if saved is not None:
            os.environ["ATTN_LIVE_RUNS"] = saved
    runs.sort()
    label = "default slots (ui.compute.live_slots)" if slots is None else f"ATTN_LIVE_RUNS={slots}"
    label += " (all at once)" if slots == str(args.runners) else ""
    return (
        f"{label:36} slider update p50 {statistics.median(updates):6.2f} s, max {max(updates):6.2f} s;"
        f" runs end after {runs[0]:.1f} / {statistics.median(runs):.1f} / {runs[-1]:.1f} s (first / median / last)"
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runners", type=hall.bounded(int, 1, 32), default=4)
    ap.add_argument("--page", choices=sorted(START), default="lab")
    ap.add_argument("--moves", type=hall.bounded(int, 1, 50), default=6)
    ap.add_argument("--timeout", type=hall.bounded(float, 10, 1200), default=300.0)
    args = ap.parse_args(argv)
    print(f"{args.runners} students press Start on {args.page} at once; one more moves the heatmaps' d_k slider")
    for slots in (None, "1", str(args.runners)):
        print(measure(args, slots), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
