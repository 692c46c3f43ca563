"""`make serve` in a real browser: two workers behind nginx, sticky sessions, a killed worker recovers.

nginx names the worker that answered in ``X-Worker`` and logs every request with its sticky key and
worker (the websocket's line is written when it closes), so the tests see where each browser landed.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time

import pytest

from harness import read_serve_state, start_serve
from serve.conf import FAIL_TIMEOUT_S
from serve.supervisor import find_nginx
from tests.e2e.conftest import PageWatch
from tests.e2e.test_pages import assert_clean

pytestmark = pytest.mark.e2e
COOKIE = "attn_worker"


@pytest.fixture(scope="module")
def hall(browser_exe):
    if find_nginx() is None:
        msg = "nginx is not installed: sudo apt-get install nginx (or bash tools/ensure_nginx.sh)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(msg)
        pytest.skip(msg)
    proc, state, run_dir = start_serve(workers=2)
    yield state, run_dir
    proc.terminate()
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.kill()


def worker_port(headers: dict) -> int:
    """The port of the worker that answered (the last one nginx tried)."""
    addr = headers.get("x-worker", "")
    assert addr, f"no X-Worker header in {headers}"
    return int(addr.split(",")[-1].strip().rsplit(":", 1)[1])


class Visit:
    """One browser (context) with its page and the worker of every HTTP response it got."""

    def __init__(self, browser, url: str):
        self.ctx = browser.new_context(viewport={"width": 1280, "height": 900})
        self.page = self.ctx.new_page()
        self.page.set_default_timeout(90_000)
        self.watch = PageWatch(self.page, url)
        self.url = url
        self.ports: list[int] = []
        # every HTTP response (the blob: URL Streamlit makes of a component's script passes no proxy)
        self.page.on("response", lambda r: r.url.startswith("http") and self.ports.append(worker_port(r.headers)))

    def probe(self) -> int:
        """A plain request in this browser (its cookies): the worker it lands on."""
        return worker_port(self.ctx.request.get(self.url + "/_stcore/health").headers)

    def cookie(self) -> str:
        return next(c["value"] for c in self.ctx.cookies() if c["name"] == COOKIE)

    def chart_shown(self) -> None:
        self.page.wait_for_selector(".js-plotly-plot .main-svg", timeout=90_000)
        self.watch.wait_idle(90_000)
        assert not self.watch.exceptions(), self.watch.exceptions()


def visit_on_another_worker(browser, url: str, taken: int, tries: int = 12) -> tuple[Visit, int]:
    """A fresh browser that nginx sends to a worker other than ``taken`` (each is a coin flip)."""
    for _ in range(tries):
        v = Visit(browser, url)
        port = v.probe()
        if port != taken:
            return v, port
        v.ctx.close()
    pytest.fail(f"{tries} fresh browsers all landed on port {taken}: cookies are not spread over the workers")


def log_lines(run_dir, key: str, want_stream: bool, timeout: float = 15) -> list[tuple[str, int]]:
    """(request, worker port) of the access log's lines with this sticky key; waits for the websocket's."""
    pattern = re.compile(r'^\S+ (\d+) "(\S+ \S+)[^"]*" key=(\S+) worker=(.*) \S+$')
    deadline = time.time() + timeout
    while True:
        lines = []
        for line in (run_dir / "access.log").read_text().splitlines():
            m = pattern.match(line)
            if m and m.group(3) == key and ":" in m.group(4):
                lines.append((f"{m.group(1)} {m.group(2)}", int(m.group(4).split(",")[-1].rsplit(":", 1)[1])))
        if not want_stream or any("/_stcore/stream" in r for r, _ in lines) or time.time() > deadline:
            return lines
        time.sleep(0.5)


def test_two_browsers_land_on_different_workers_and_stay(browser, hall):
    state, run_dir = hall
    url = state["url"]
    first = Visit(browser, url)
    second = None
    try:
        # A first visit without a cookie: the HTML, then everything after it, on one worker.
        doc = first.page.goto(url + "/")
        port_a = worker_port(doc.headers)
        first.chart_shown()
        second, port_b = visit_on_another_worker(browser, url, port_a)
        second.watch.open("")
        assert {port_a, port_b} == {w["port"] for w in state["workers"]}
        assert set(first.ports) == {port_a}, first.ports
        assert set(second.ports) == {port_b}, second.ports
        for v in (first, second):
            assert v.page.get_by_test_id("stPlotlyChart").count() >= 1
            assert_clean(v.watch)

        # A reload keeps the browser's worker.
        before = len(first.ports)
        doc = first.page.reload()
        assert worker_port(doc.headers) == port_a
        first.chart_shown()
        assert set(first.ports[before:]) == {port_a}

        keys = {port_a: first.cookie(), port_b: second.cookie()}
    finally:
        for v in (first, second):
            if v is not None:
                v.ctx.close()  # closes the websockets: nginx logs them now
    for port, key in keys.items():
        lines = log_lines(run_dir, key, want_stream=True)
        assert any(r.startswith("101 GET /_stcore/stream") for r, _ in lines), lines
        assert {p for _, p in lines} == {port}, lines  # the websocket too: same worker as the HTML


def test_a_killed_worker_is_restarted_and_its_browser_recovers(browser, hall):
    state, run_dir = hall
    url = state["url"]
    v = Visit(browser, url)
    try:
        port = worker_port(v.page.goto(url + "/").headers)
        v.chart_shown()
        victim = next(w for w in read_serve_state(run_dir)["workers"] if w["port"] == port)
        other = next(w for w in read_serve_state(run_dir)["workers"] if w["port"] != port)
        killed_at = time.monotonic()
        os.kill(victim["pid"], signal.SIGKILL)

        restarted = wait_restarted(run_dir, port, victim["pid"])
        assert restarted["restarts"] == victim["restarts"] + 1
        assert next(w for w in read_serve_state(run_dir)["workers"] if w["port"] != port)["pid"] == other["pid"]

        v.page.reload()
        v.chart_shown()  # the session renders again (on the other worker while nginx still skips its own)
        # nginx tries the restarted worker again after fail_timeout: the browser is back on its own worker.
        deadline = killed_at + FAIL_TIMEOUT_S + 60
        while v.probe() != port:
            assert time.monotonic() < deadline, "the browser did not return to its restarted worker"
            time.sleep(1)
    finally:
        v.ctx.close()


def wait_restarted(run_dir, port: int, old_pid: int, timeout: float = 120) -> dict:
    """The worker on ``port`` once the supervisor restarted it and it answers its health check."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        w = next(w for w in read_serve_state(run_dir)["workers"] if w["port"] == port)
        if w["pid"] not in (None, old_pid) and w["ready"]:
            return w
        time.sleep(0.5)
    raise AssertionError(f"worker on port {port} not restarted in {timeout:.0f} s: {read_serve_state(run_dir)}")
