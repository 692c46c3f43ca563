"""What waiting for the lecturer's next move costs the server (not a timed test): 100 students on 2 cores.

    .venv/bin/python bench/room_watch_cost.py [--students 100] [--seconds 30]

Two ways for a student's page to learn that the lecturer moved, each measured with the room quiet (no move), the
server's CPU summed over the window:

- ``fragment``: ``st.fragment(run_every=0.5)`` reading the room's version (``bench/room_watch_app.py``): the
  frontend asks for a run of the fragment every half second (a p95 of 1 s from move to page needs about that),
  simulated here on Streamlit's websocket protocol as the frontend does it;
- ``long poll``: the app's own way (``rooms/web.py``, ``ui/assets/room_watch.js``): each page holds one HTTP request
  that the server answers when the room changes (or after 20 s); each worker reads the store once per 0.05 s for
  all of them.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

try:
    from bench.hall import ProcWatch, Tab
except ImportError:  # run as a script: its folder comes first on the path, and "bench" is bench/bench.py
    from hall import ProcWatch, Tab  # type: ignore[no-redef]
from ui.streamlit_compat import ForwardMsg  # noqa: E402


async def _finished(tab: Tab) -> str:
    """Read one run's messages; the fragment id of its elements ("" for none)."""
    fid = ""
    while True:
        msg = ForwardMsg.FromString(await tab.ws.recv())
        kind = msg.WhichOneof("type")
        if kind == "delta" and msg.delta.fragment_id:
            fid = msg.delta.fragment_id
        if kind == "script_finished":
            return fid


async def fragment_polling(url: str, pid: int, students: int, seconds: float) -> dict:
    tabs = [Tab(url, "", {}) for _ in range(students)]
    await asyncio.gather(*(t.open() for t in tabs))
    fids = []
    for t in tabs:
        await t.ask()
        fids.append(await _finished(t))
    watch, runs = ProcWatch([pid]), [0]
    stop = time.monotonic() + seconds

    async def poll(t: Tab, fid: str) -> None:
        while time.monotonic() < stop:
            t0 = time.monotonic()
            t.fragment = fid
            await t.ask()
            await _finished(t)
            runs[0] += 1
            await asyncio.sleep(max(0.0, 0.5 - (time.monotonic() - t0)))

    cpu0, t0 = watch.cpu_seconds(), time.monotonic()
    await asyncio.gather(*(poll(t, f) for t, f in zip(tabs, fids, strict=True)))
    cpu, dt = watch.cpu_seconds() - cpu0, time.monotonic() - t0
    await asyncio.gather(*(t.close() for t in tabs))
    return {"way": "fragment, run every 0.5 s", "cores": cpu / dt, "cpu_s": cpu, "seconds": dt, "runs": runs[0]}


async def long_polls(url: str, pid: int, code: str, version: int, students: int, seconds: float) -> dict:
    host, port = url.split("//", 1)[1].rsplit(":", 1)
    watch, requests = ProcWatch([pid]), [0]
    stop = time.monotonic() + seconds

    async def one(i: int) -> None:
        while time.monotonic() < stop:
            reader, writer = await asyncio.open_connection(host, int(port))
            writer.write(
                f"GET /_attn/room/{code}/wait?v={version} HTTP/1.1\r\nHost: {host}\r\n"
                f"Cookie: attn_browser=cost-student-{i:016d}\r\nConnection: close\r\n\r\n".encode()
            )
            await writer.drain()
            try:
                await asyncio.wait_for(reader.read(), timeout=max(0.1, stop - time.monotonic()))
            except TimeoutError:
                pass
            requests[0] += 1
            writer.close()

    cpu0, t0 = watch.cpu_seconds(), time.monotonic()
    await asyncio.gather(*(one(i) for i in range(students)))
    cpu, dt = watch.cpu_seconds() - cpu0, time.monotonic() - t0
    return {"way": "long poll", "cores": cpu / dt, "cpu_s": cpu, "seconds": dt, "requests": requests[0]}


def main(argv: list[str] | None = None) -> int:
    from attn_core import decks
    from harness import start_server
    from rooms import current

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--students", type=int, default=100)
    ap.add_argument("--seconds", type=float, default=30.0)
    args = ap.parse_args(argv)
    data = ROOT / "artifacts" / f"room-watch-{os.getpid()}"
    os.environ["ATTN_DATA_DIR"] = str(data)
    code, _ = current().start(decks.shipped()["gqa_and_the_kv_cache"], "room-watch-cost-lecturer-1")
    env = {"ATTN_DATA_DIR": str(data), "ROOM_CODE": code}
    out = []
    proc, url = start_server(env, script="bench/room_watch_app.py")
    try:
        out.append(asyncio.run(fragment_polling(url, proc.pid, args.students, args.seconds)))
    finally:
        proc.terminate()
        proc.wait(20)
    proc, url = start_server(env)
    try:
        version = current().versions(code).pos
        out.append(asyncio.run(long_polls(url, proc.pid, code, version, args.students, args.seconds)))
    finally:
        proc.terminate()
        proc.wait(20)
    print(f"# {os.cpu_count()} CPU cores, load average {os.getloadavg()[0]:.1f}; {args.students} students waiting")
    for row in out:
        print(json.dumps(row))
    return 0


if __name__ == "__main__":
    sys.exit(main())
