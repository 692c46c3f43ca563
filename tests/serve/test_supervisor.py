"""The supervisor's watchdog with stub workers (tiny HTTP servers): restart on death, on a hang, with backoff."""

from __future__ import annotations

import os
import signal
import sys
import time

import pytest

from serve.supervisor import Policy, Settings, Supervisor, check, default_workers, worker_env

# Answers /_stcore/health like a Streamlit worker; argv[1] is the port.
STUB = """
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200 if self.path == "/_stcore/health" else 404)
        self.end_headers()
        self.wfile.write(b"ok")
    def log_message(self, *a):
        pass
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
"""
FAST = Policy(interval=0.1, health_timeout=0.5, max_misses=2, start_timeout=20.0, backoff_max=4.0)


def stub(port: int, address: str) -> list[str]:
    return [sys.executable, "-c", STUB, str(port)]


def dies_at_once(port: int, address: str) -> list[str]:
    return [sys.executable, "-c", "raise SystemExit(3)"]


@pytest.fixture
def sup(tmp_path):
    made = []

    def make(command=stub, workers=2):
        s = Supervisor(Settings(workers=workers, run_dir=tmp_path, proxy=False), FAST, command=command)
        made.append(s)
        for w in s.workers:
            w.start()
        return s

    yield make
    for s in made:
        for w in s.workers:
            w.stop(grace=2)


def steps_until(sup, done, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        assert time.monotonic() < deadline, [(w.pid, w.ready, w.misses, w.restarts) for w in sup.workers]
        sup.step(time.monotonic())
        time.sleep(FAST.interval)


def test_a_worker_that_dies_is_restarted_on_its_port_and_the_pids_file_follows(sup):
    s = sup()
    assert s.wait_ready()
    a, b = s.workers
    old_a, old_b, port = a.pid, b.pid, a.port
    os.kill(old_a, signal.SIGKILL)
    steps_until(s, lambda: a.restarts == 1 and a.ready)
    assert (a.port, b.pid, b.restarts) == (port, old_b, 0)
    assert a.pid != old_a
    s.write_state(True)
    assert (s.run_dir / "pids").read_text().strip() == f"{a.pid},{b.pid}"


def test_a_worker_that_stops_answering_is_restarted_after_max_misses(sup):
    s = sup(workers=1)
    assert s.wait_ready()
    (w,) = s.workers
    hung = w.pid
    os.kill(hung, signal.SIGSTOP)  # alive, but its health check times out
    s.step(time.monotonic())
    assert (w.pid, w.misses, w.restarts) == (hung, 1, 0)  # one miss is not enough
    steps_until(s, lambda: w.restarts == 1 and w.ready)
    assert w.pid != hung
    with pytest.raises(ProcessLookupError):
        os.kill(hung, 0)  # the hung process was killed, not left behind


def test_a_worker_that_keeps_dying_at_start_is_retried_with_a_growing_delay(sup):
    s = sup(command=dies_at_once, workers=1)
    (w,) = s.workers
    t = time.monotonic()
    delays = []
    for _ in range(4):
        w.proc.wait()
        s.step(t)
        assert w.proc is None  # not restarted at once
        delays.append(w.not_before - t)
        s.step(w.not_before - 0.01)
        assert w.proc is None
        t = w.not_before
        s.step(t)
        assert w.proc is not None
    assert delays == [1.0, 2.0, 4.0, 4.0]  # doubling, capped at backoff_max


def test_a_starting_worker_gets_start_timeout_then_is_restarted(sup):
    s = sup(command=lambda port, address: [sys.executable, "-c", "import time; time.sleep(60)"], workers=1)
    (w,) = s.workers
    assert check(w, FAST, w.started_at + FAST.start_timeout - 1) is None
    assert "not healthy" in check(w, FAST, w.started_at + FAST.start_timeout + 1)


def test_workers_share_the_cores_and_one_cookie_secret(monkeypatch):
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "STREAMLIT_SERVER_COOKIE_SECRET"):
        monkeypatch.delenv(name, raising=False)
    env = worker_env(default_workers())
    assert env["OMP_NUM_THREADS"] == env["MKL_NUM_THREADS"] == "1"
    assert len(env["STREAMLIT_SERVER_COOKIE_SECRET"]) == 64
    assert worker_env(1)["OMP_NUM_THREADS"] == str(default_workers())
