"""What the browser tests, the AppTest tests and the benchmark share: a Streamlit server, Debian's chromium.

Kept out of ``tests/`` so that ``bench/`` never imports from the tests.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from serve.workers import worker_command

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
IDLE = "[data-testid='stApp'][data-test-script-state='notRunning']"
#: A page script (``add_init_script``) that tells the functions in ``window.__wsTaps`` of every binary websocket
#: message: ``tap(dir, fields, t)`` with ``dir`` "open", "in" (a ForwardMsg) or "out" (a BackMsg), the message's
#: top-level protobuf field numbers (ForwardMsg: 4 new_session, 5 delta, 6 script_finished, 9 session_status;
#: BackMsg: 11 rerun_script; Streamlit's numbers, ``ui.streamlit_compat.FORWARD_MSG_FIELDS`` and ``BACK_MSG_FIELDS``,
#: checked by tests/app/test_streamlit_compat.py) and ``performance.now()``.
WS_TAP_JS = r"""
(() => {
  if (window.__wsTaps) return;
  const taps = (window.__wsTaps = []);
  const fields = (buf) => {
    const b = new Uint8Array(buf), out = [];
    let i = 0;
    const varint = () => { let x = 0, m = 1, c; do { c = b[i++]; x += (c & 127) * m; m *= 128; } while (c >= 128 && i < b.length); return x; };
    while (i < b.length) {
      const tag = varint(), w = tag & 7;
      out.push(tag >>> 3);
      if (w === 0) varint(); else if (w === 2) { const n = varint(); i += n; } else if (w === 1) i += 8; else if (w === 5) i += 4; else break;
    }
    return out;
  };
  const tell = (dir, buf) => {
    const t = performance.now();
    const f = buf ? fields(buf) : [];
    for (const tap of taps) tap(dir, f, t);
  };
  const Native = window.WebSocket;
  window.WebSocket = class extends Native {
    constructor(...a) {
      super(...a);
      this.addEventListener('open', () => tell('open', null));
      this.addEventListener('message', (e) => { if (e.data instanceof ArrayBuffer) tell('in', e.data); });
    }
    send(d) {
      try {
        const buf = d instanceof ArrayBuffer ? d : ArrayBuffer.isView(d) ? d.buffer.slice(d.byteOffset, d.byteOffset + d.byteLength) : null;
        if (buf) tell('out', buf);
      } catch (e) { window.__wsTapError = String(e); }
      return super.send(d);
    }
  };
})();
"""


def chromium_path() -> str | None:
    for cand in (os.environ.get("CHROMIUM"), shutil.which("chromium"), "/usr/bin/chromium"):
        if cand and Path(cand).exists():
            return cand
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _with_probe(command: list[str], probe: Path | None, every: float) -> list[str]:
    """``python -m streamlit ...`` as ``python -m harness.probe --out probe -- ...`` when ``probe`` is set."""
    if probe is None:
        return command
    at = command.index("streamlit")
    return [*command[:at], "harness.probe", "--out", str(probe), "--every", str(every), "--", *command[at + 1 :]]


def start_server(
    extra_env: dict[str, str] | None = None,
    probe: Path | None = None,
    probe_every: float = 10.0,
    script: str = "server.py",
    cwd: Path = ROOT,
) -> tuple[subprocess.Popen, str]:
    """``streamlit run <script>`` (a path relative to the repository root: the app's server, which loads the
    engine before it answers, or the benchmark's trivial app) on a free port of 127.0.0.1, once it answers its health check; returns (process, base URL).

    Run from the repository root, so every script gets the same flags and ``.streamlit/config.toml``; ``cwd``:
    another checkout's root instead (``bench/ab.py``: the app as it was), with this interpreter.

    ``probe``: a JSON-lines file the server appends a memory sample to every ``probe_every``
    seconds (:mod:`harness.probe`: live Python objects, resident memory).

    The server loads no pretrained model at its start (``ATTN_PRELOAD_MODELS=0``, ``server.py``) unless
    ``extra_env`` or the environment set ``ATTN_PRELOAD_MODELS``: then it answers once they are loaded.
    """
    port = free_port()
    env = {**os.environ, "ATTN_DEVICE": os.environ.get("ATTN_DEVICE", "cpu"), **(extra_env or {})}
    env.setdefault("ATTN_PRELOAD_MODELS", "0")  # models load on first use unless a caller asks for the preload
    (ROOT / "artifacts").mkdir(exist_ok=True)
    log = open(ROOT / "artifacts" / f"server-{port}.log", "w")
    proc = subprocess.Popen(
        _with_probe(worker_command(port, script=script), probe, probe_every),
        cwd=cwd,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + (90 if env["ATTN_PRELOAD_MODELS"] == "0" else 300)  # loading models takes longer
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"streamlit exited with {proc.returncode}; see {log.name}")
        try:
            with urllib.request.urlopen(url + "/_stcore/health", timeout=2) as resp:
                if resp.status == 200:
                    return proc, url
        except OSError:
            time.sleep(0.3)
    proc.kill()
    raise RuntimeError(f"streamlit did not become healthy; see {log.name}")


def start_serve(
    workers: int = 2, timeout: float = 180, extra_env: dict[str, str] | None = None
) -> tuple[subprocess.Popen, dict, Path]:
    """``python -m serve`` (N workers behind nginx) on a free port of 127.0.0.1, once it answers.

    Returns the supervisor's process, its state (``serve.json``: url, worker ports and pids, access log)
    and its run directory. Stop it with ``proc.terminate()``: it stops nginx and the workers. ``extra_env``: more
    environment for the workers (``ATTN_DATA_DIR``, ``ATTN_STORE``: the live lecture rooms' store).
    """
    port = free_port()
    run_dir = ROOT / "artifacts" / f"serve-test-{port}"
    run_dir.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "ATTN_DEVICE": os.environ.get("ATTN_DEVICE", "cpu"), **(extra_env or {})}
    env.setdefault("ATTN_PRELOAD_MODELS", "0")  # the workers load models on first use, as start_server's server
    log = open(run_dir / "supervisor.log", "w")
    argv = ["--workers", str(workers), "--port", str(port), "--listen", "127.0.0.1", "--run-dir", str(run_dir)]
    proc = subprocess.Popen(
        [sys.executable, "-m", "serve", *argv], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT
    )
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"serve exited with {proc.returncode}: {(run_dir / 'supervisor.log').read_text()}")
        state = read_serve_state(run_dir)
        if state.get("ready"):
            return proc, state, run_dir
        time.sleep(0.3)
    proc.terminate()
    proc.wait(30)
    raise RuntimeError(f"serve was not ready in {timeout:.0f} s; see {run_dir}")


def redis_server_path() -> str | None:
    """Debian's ``redis-server`` (``$REDIS_SERVER``, the PATH, or /usr/bin), or None when it is not installed."""
    for cand in (os.environ.get("REDIS_SERVER"), shutil.which("redis-server"), "/usr/bin/redis-server"):
        if cand and Path(cand).is_file() and os.access(cand, os.X_OK):
            return cand
    return None


def start_redis(workdir: Path, timeout: float = 20) -> tuple[subprocess.Popen, str]:
    """A real ``redis-server`` on a free port of 127.0.0.1, its files in ``workdir`` (no snapshot, no append-only
    file), once it answers PING; returns (process, ``redis://127.0.0.1:PORT/0``). Stop it with ``terminate()``."""
    exe = redis_server_path()
    if exe is None:
        raise RuntimeError(
            "redis-server is not installed: apt-get install redis-server (or bash tools/ensure_redis.sh)"
        )
    workdir.mkdir(parents=True, exist_ok=True)
    port = free_port()
    argv = [exe, "--port", str(port), "--bind", "127.0.0.1", "--dir", str(workdir), "--save", "", "--appendonly", "no"]
    log = open(workdir / "redis.log", "w")
    proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"redis-server exited with {proc.returncode}; see {workdir / 'redis.log'}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
                s.sendall(b"PING\r\n")
                if s.recv(16).startswith(b"+PONG"):
                    return proc, f"redis://127.0.0.1:{port}/0"
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError(f"redis-server did not answer in {timeout:.0f} s")


def read_serve_state(run_dir: Path) -> dict:
    """The supervisor's ``serve.json`` (empty before its first write)."""
    path = run_dir / "serve.json"
    return json.loads(path.read_text()) if path.exists() else {}
