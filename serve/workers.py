"""One Streamlit worker process: its command line, start, health probe and stop."""

from __future__ import annotations

import ctypes
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def worker_command(port: int, address: str = "127.0.0.1", script: str = "server.py") -> list[str]:
    """The command line of one Streamlit worker serving ``script`` (the app) on ``address:port``."""
    return [
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
        address,
        "--browser.gatherUsageStats",
        "false",
    ]


def free_port(address: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((address, 0))
        return s.getsockname()[1]


def die_with_parent() -> None:
    """In the child before exec: get SIGTERM when the supervisor dies, even by SIGKILL (Linux)."""
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except OSError:
        pass


def probe(url: str, timeout: float) -> bool:
    """True when ``url`` answers 200 within ``timeout`` seconds."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # never via $http_proxy
    try:
        with opener.open(url, timeout=timeout) as resp:
            return resp.status == 200
    except (OSError, ValueError):
        return False


@dataclass
class Worker:
    """A supervised process answering ``/_stcore/health`` on ``address:port``."""

    slot: int
    port: int
    command: list[str]
    env: dict[str, str]
    log_path: Path
    address: str = "127.0.0.1"
    proc: subprocess.Popen | None = None
    started_at: float = 0.0
    ready: bool = False
    misses: int = 0
    restarts: int = 0
    quick_deaths: int = 0
    not_before: float = 0.0
    history: list[str] = field(default_factory=list)

    @property
    def health_url(self) -> str:
        host = "127.0.0.1" if self.address in ("0.0.0.0", "") else self.address
        host = "[::1]" if host == "::" else host
        return f"http://{host}:{self.port}/_stcore/health"

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    def start(self) -> None:
        with open(self.log_path, "a", encoding="utf-8") as log:
            log.write(f"--- start {time.strftime('%Y-%m-%d %H:%M:%S')} port {self.port}\n")
            log.flush()
            self.proc = subprocess.Popen(
                self.command,
                cwd=ROOT,
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,  # Ctrl-C reaches the supervisor, which stops everyone in order
                preexec_fn=die_with_parent,
            )
        self.started_at, self.ready, self.misses = time.monotonic(), False, 0

    def exit_code(self) -> int | None:
        return None if self.proc is None else self.proc.poll()

    def stop(self, grace: float = 10.0) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(grace)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
