"""What the browser tests, the AppTest tests and the benchmark share: a Streamlit server, Debian's chromium.

Kept out of ``tests/`` so that ``bench/`` never imports from the tests.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

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


def chromium_path() -> str | None:
    for cand in (os.environ.get("CHROMIUM"), shutil.which("chromium"), "/usr/bin/chromium"):
        if cand and Path(cand).exists():
            return cand
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(extra_env: dict[str, str] | None = None, script: str = "app.py") -> tuple[subprocess.Popen, str]:
    """``streamlit run <script>`` (a path relative to the repository root: the app, or the benchmark's
    trivial app) on a free port of 127.0.0.1, once it answers its health check; returns (process, base URL).

    Run from the repository root, so every script gets the same flags and ``.streamlit/config.toml``.
    """
    port = free_port()
    env = {**os.environ, "ATTN_DEVICE": os.environ.get("ATTN_DEVICE", "cpu"), **(extra_env or {})}
    (ROOT / "artifacts").mkdir(exist_ok=True)
    log = open(ROOT / "artifacts" / f"server-{port}.log", "w")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "streamlit",
            "run",
            script,
            "--server.headless",
            "true",
            "--server.fileWatcherType",
            "none",
            "--server.port",
            str(port),
            "--server.address",
            "127.0.0.1",
            "--browser.gatherUsageStats",
            "false",
        ],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 90
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
    raise RuntimeError("streamlit did not become healthy in 90 s")


def disable_legacy_pages_routing() -> None:
    """Make every AppTest run go through app.py's st.navigation, as a warm server does.

    AppTest resets Streamlit's legacy ``pages/`` routing flag before every run, so each
    rerun would first execute the page script alone (the first-visitor case that
    ``ui.page_guard`` repairs with an extra rerun, tested in the browser tests). That
    makes reruns drop the sidebar's widget values; tests want the steady state.
    """
    from streamlit.runtime.pages_manager import PagesManager

    if getattr(PagesManager.__init__, "_attn_patched", False):
        return
    original = PagesManager.__init__

    def init(self, *args, **kwargs):
        original(self, *args, **kwargs)
        PagesManager.uses_pages_directory = False

    init._attn_patched = True
    PagesManager.__init__ = init
