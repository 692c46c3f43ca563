"""The supervisor of ``make serve``: N Streamlit workers behind nginx, restarted when they die or hang.

It starts the workers (each on its own port), waits for ``/_stcore/health``, renders the nginx
configuration into the run directory, runs nginx in the foreground as the user, then polls: a worker that
exited, or that stopped answering its health check ``max_misses`` times in a row, is stopped and started
again on the same port (nginx's passive checks send its browsers to the other workers meanwhile); nginx is
restarted if it exits. SIGINT and SIGTERM stop nginx, then the workers. The run directory holds the
configuration, the logs, ``serve.json`` (URL, ports, pids, restarts) and ``pids`` (the worker pids, comma
separated, for ``bench/hall.py --pids``), rewritten on every change.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from serve.conf import write_user_conf
from serve.workers import Worker, die_with_parent, free_port, probe, worker_command


@dataclass(frozen=True)
class Policy:
    """How often and how patiently the supervisor checks (seconds)."""

    interval: float = 2.0
    health_timeout: float = 10.0  # a busy worker answers late: its script threads hold the GIL
    max_misses: int = 3  # restart after this many failed checks in a row
    start_timeout: float = 180.0  # a fresh worker must answer once within this (imports torch first)
    backoff_max: float = 30.0  # a worker that keeps dying at start is retried at most this rarely


@dataclass(frozen=True)
class Settings:
    workers: int
    run_dir: Path
    port: int = 8501
    listen: str = ""  # nginx's address; "" = every interface (students reach it over the network)
    worker_address: str = "127.0.0.1"
    base_port: int | None = None  # worker ports base_port.. (consecutive); None = free ports
    proxy: bool = True  # False: only the workers (a host behind a department's nginx)


def default_workers() -> int:
    """The number of cores this process may use (what ``nproc`` prints)."""
    return len(os.sched_getaffinity(0))


def find_nginx() -> str | None:
    for cand in (os.environ.get("NGINX"), shutil.which("nginx"), "/usr/sbin/nginx", "/usr/local/sbin/nginx"):
        if cand and Path(cand).is_file() and os.access(cand, os.X_OK):
            return cand
    return None


def worker_env(n_workers: int) -> dict[str, str]:
    """The workers' environment: a share of the cores for torch each, one cookie secret for all."""
    env = dict(os.environ)
    threads = str(max(1, default_workers() // max(1, n_workers)))
    env.setdefault("OMP_NUM_THREADS", threads)
    env.setdefault("MKL_NUM_THREADS", threads)
    # The same secret on every worker, so a signed cookie (st.login) made by one is valid on the others.
    env.setdefault("STREAMLIT_SERVER_COOKIE_SECRET", secrets.token_hex(32))
    return env


def check(worker: Worker, policy: Policy, now: float) -> str | None:
    """Why ``worker`` must be restarted now, or None; updates its readiness and missed checks."""
    code = worker.exit_code()
    if code is not None:
        return f"exited with code {code}"
    if probe(worker.health_url, policy.health_timeout):
        worker.ready, worker.misses = True, 0
        return None
    if not worker.ready:
        if now - worker.started_at < policy.start_timeout:
            return None
        return f"not healthy {policy.start_timeout:.0f} s after its start"
    worker.misses += 1
    if worker.misses >= policy.max_misses:
        return f"did not answer /_stcore/health {worker.misses} times in a row"
    return None


def lan_address() -> str | None:
    """This host's address on the default route (no packet is sent), or None."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(("10.255.255.255", 1))
            return s.getsockname()[0]
    except OSError:
        return None


class Nginx:
    """nginx in the foreground (``daemon off``) as the user, every path under ``prefix``."""

    def __init__(self, binary: str, prefix: Path, upstreams: list[str], listen: str):
        self.binary, self.prefix = binary, prefix
        self.conf = write_user_conf(prefix, upstreams, listen)
        self.proc: subprocess.Popen | None = None

    def argv(self, *extra: str) -> list[str]:
        return [self.binary, "-p", str(self.prefix), "-c", str(self.conf), "-e", str(self.prefix / "error.log"), *extra]

    def test(self) -> str | None:
        """None when ``nginx -t`` accepts the configuration, else its message."""
        out = subprocess.run(self.argv("-t", "-q"), capture_output=True, text=True, check=False)
        return None if out.returncode == 0 else (out.stderr or out.stdout).strip()

    def start(self) -> None:
        with open(self.prefix / "nginx.out", "a", encoding="utf-8") as log:
            self.proc = subprocess.Popen(
                self.argv(),
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                preexec_fn=die_with_parent,
            )

    def error_tail(self, lines: int = 5) -> str:
        path = self.prefix / "error.log"
        text = path.read_text(encoding="utf-8", errors="replace") if path.exists() else ""
        return "\n".join(text.strip().splitlines()[-lines:])

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()  # fast shutdown; its websockets close and the browsers reconnect later
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


class Supervisor:
    def __init__(self, settings: Settings, policy: Policy | None = None, command=worker_command):
        self.settings, self.policy = settings, policy or Policy()
        self.run_dir = settings.run_dir.resolve()
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.stopping = threading.Event()
        self.nginx: Nginx | None = None
        self.nginx_starts = 0
        env = worker_env(settings.workers)
        self.workers = [
            Worker(
                slot=i,
                port=port,
                command=command(port, settings.worker_address),
                env=env,
                log_path=self.run_dir / f"worker-{i}.log",
                address=settings.worker_address,
            )
            for i, port in enumerate(self._ports())
        ]

    def _ports(self) -> list[int]:
        n, base = self.settings.workers, self.settings.base_port
        if base is not None:
            return [base + i for i in range(n)]
        ports: list[int] = []
        while len(ports) < n:
            port = free_port(self.settings.worker_address or "127.0.0.1")
            if port not in ports and port != self.settings.port:
                ports.append(port)
        return ports

    @property
    def url(self) -> str:
        host = self.settings.listen if self.settings.listen not in ("", "0.0.0.0", "*") else "127.0.0.1"
        return f"http://{host}:{self.settings.port}"

    def say(self, text: str) -> None:
        print(f"serve: {text}", flush=True)

    def write_state(self, ready: bool) -> None:
        """``serve.json`` and ``pids`` in the run directory, replaced atomically."""
        state = {
            "ready": ready,
            "url": self.url if self.settings.proxy else None,
            "supervisor_pid": os.getpid(),
            "nginx_pid": self.nginx.proc.pid if self.nginx and self.nginx.proc else None,
            "nginx_starts": self.nginx_starts,
            "access_log": str(self.run_dir / "access.log") if self.settings.proxy else None,
            "workers": [
                {"slot": w.slot, "port": w.port, "pid": w.pid, "ready": w.ready, "restarts": w.restarts}
                for w in self.workers
            ],
        }
        for name, text in (
            ("serve.json", json.dumps(state, indent=1)),
            ("pids", ",".join(str(w.pid) for w in self.workers if w.pid) + "\n"),
        ):
            tmp = self.run_dir / f".{name}.tmp"
            tmp.write_text(text, encoding="utf-8")
            tmp.replace(self.run_dir / name)

    def wait_ready(self) -> bool:
        """Wait until every worker answered once; False if one failed to start or we were stopped."""
        deadline = time.monotonic() + self.policy.start_timeout
        while not self.stopping.is_set():
            for w in self.workers:
                if w.exit_code() is not None:
                    self.say(f"worker {w.slot} exited with code {w.exit_code()} while starting; see {w.log_path}")
                    return False
                if not w.ready:
                    w.ready = probe(w.health_url, 2.0)
            if all(w.ready for w in self.workers):
                return True
            if time.monotonic() > deadline:
                self.say(f"workers not healthy after {self.policy.start_timeout:.0f} s; see {self.run_dir}")
                return False
            self.stopping.wait(0.5)
        return False

    def start_nginx(self, binary: str) -> bool:
        s = self.settings
        upstreams = [f"{'127.0.0.1' if w.address in ('', '0.0.0.0') else w.address}:{w.port}" for w in self.workers]
        listen = f"{s.listen}:{s.port}" if s.listen not in ("", "*") else str(s.port)
        self.nginx = Nginx(binary, self.run_dir, upstreams, listen)
        problem = self.nginx.test()
        if problem:
            self.say(f"nginx rejects {self.nginx.conf}:\n{problem}")
            return False
        return self._launch_nginx()

    def _launch_nginx(self) -> bool:
        self.nginx.start()
        self.nginx_starts += 1
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and not self.stopping.is_set():
            if self.nginx.proc.poll() is not None:
                self.say(f"nginx exited with code {self.nginx.proc.returncode}:\n{self.nginx.error_tail()}")
                return False
            if probe(self.url + "/_stcore/health", 2.0):
                return True
            self.stopping.wait(0.2)
        self.say(f"nginx does not answer on {self.url}:\n{self.nginx.error_tail()}")
        return False

    def restart(self, w: Worker, reason: str, now: float) -> None:
        self.say(f"worker {w.slot} (port {w.port}, pid {w.pid}) {reason}: restarting")
        w.kill()  # dead already, or wedged for max_misses health checks: no clean stop to wait for
        lived = now - w.started_at
        w.quick_deaths = w.quick_deaths + 1 if lived < 60 else 0
        w.not_before = now + min(self.policy.backoff_max, 2.0 ** (w.quick_deaths - 1)) if w.quick_deaths else now
        w.restarts += 1
        w.proc, w.ready, w.misses = None, False, 0
        if now >= w.not_before:
            w.start()

    def step(self, now: float) -> bool:
        """One round of checks; True when something changed (the state file is rewritten)."""
        changed = False
        for w in self.workers:
            if w.proc is None:
                if now >= w.not_before:
                    w.start()
                    changed = True
                continue
            was_ready = w.ready
            reason = check(w, self.policy, now)
            if reason:
                self.restart(w, reason, now)
                changed = True
            elif w.ready != was_ready:
                self.say(f"worker {w.slot} (port {w.port}, pid {w.pid}) is healthy again")
                changed = True
        if self.nginx is not None and self.nginx.proc.poll() is not None and not self.stopping.is_set():
            self.say(f"nginx exited with code {self.nginx.proc.returncode}: restarting\n{self.nginx.error_tail()}")
            if not self._launch_nginx():
                self.stopping.wait(min(self.policy.backoff_max, 2.0 * self.nginx_starts))
            changed = True
        return changed

    def announce(self) -> None:
        s = self.settings
        pids = ",".join(str(w.pid) for w in self.workers)
        if s.proxy:
            self.say(f"{len(self.workers)} workers behind nginx: {self.url}")
            if s.listen in ("", "0.0.0.0", "*") and lan_address():
                self.say(f"for students on the network: http://{lan_address()}:{s.port}")
        else:
            ports = ", ".join(f"{s.worker_address}:{w.port}" for w in self.workers)
            self.say(f"{len(self.workers)} workers without a proxy on {ports}")
        self.say(f"worker pids {pids} (also in {self.run_dir / 'pids'}); state in {self.run_dir / 'serve.json'}")

    def run(self) -> int:
        binary = find_nginx()
        if self.settings.proxy and binary is None:
            self.say(
                "nginx is not installed: `make serve` installs Debian's nginx when run as root; otherwise "
                "`sudo apt-get install nginx` (or `sudo bash tools/ensure_nginx.sh`)"
            )
            return 1
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, lambda *_: self.stopping.set())
        try:
            for w in self.workers:
                w.start()
            self.write_state(False)
            if not self.wait_ready() or (self.settings.proxy and not self.start_nginx(binary)):
                return 0 if self.stopping.is_set() else 1
            self.write_state(True)
            self.announce()
            while not self.stopping.wait(self.policy.interval):
                if self.step(time.monotonic()):
                    self.write_state(True)
            return 0
        finally:
            self.shutdown()

    def shutdown(self) -> None:
        self.say("stopping")
        if self.nginx is not None:
            self.nginx.stop()
        for w in self.workers:
            if w.proc is not None and w.proc.poll() is None:
                w.proc.terminate()
        for w in self.workers:
            w.stop(grace=10.0)
        self.write_state(False)


def parse_args(argv: list[str] | None = None):
    import argparse

    ap = argparse.ArgumentParser(prog="python -m serve", description=__doc__.split("\n\n")[0])
    ap.add_argument("--workers", type=int, default=default_workers(), help="Streamlit processes (default: nproc)")
    ap.add_argument("--port", type=int, default=8501, help="nginx's public port (default 8501)")
    ap.add_argument("--listen", default="", help="nginx's address (default: every interface)")
    ap.add_argument("--worker-address", default="127.0.0.1", help="the workers' address (0.0.0.0 for other hosts)")
    ap.add_argument("--base-port", type=int, default=None, help="worker ports from here on (default: free ports)")
    ap.add_argument("--no-proxy", action="store_true", help="only the workers, for a host behind another nginx")
    ap.add_argument("--run-dir", type=Path, default=None, help="config, logs, pids (default artifacts/serve-PORT)")
    args = ap.parse_args(argv)
    if args.workers < 1:
        ap.error("--workers must be at least 1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    root = Path(__file__).resolve().parents[1]
    settings = Settings(
        workers=args.workers,
        run_dir=args.run_dir or root / "artifacts" / f"serve-{args.port}",
        port=args.port,
        listen=args.listen,
        worker_address=args.worker_address,
        base_port=args.base_port,
        proxy=not args.no_proxy,
    )
    return Supervisor(settings).run()
