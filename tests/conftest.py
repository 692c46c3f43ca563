"""Shared fixtures: AppTest helpers and the repository root on sys.path."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

# Tests always compute on the CPU unless ATTN_DEVICE says otherwise (e.g. the CUDA run).
os.environ.setdefault("ATTN_DEVICE", "cpu")
if os.environ.get("TORCH_ALLOW_TF32_CUBLAS_OVERRIDE") == "1":  # NVIDIA's containers set it: float32 matmuls in TF32
    print(
        "conftest: TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1 forces TF32; the CPU/CUDA agreement tests will fail",
        file=sys.stderr,
    )
import torch  # noqa: E402

# The CUDA tests compare float32 results with the CPU's at float32's tolerances: full-precision matmuls (torch's
# default, pinned here against a changed default or a library that turns TF32 on)
torch.backends.cuda.matmul.fp32_precision = "ieee"


from attn_core.views import PAGES  # noqa: E402

DEFAULT_PAGE = next(p.script for p in PAGES if p.default)


@pytest.fixture
def app_test():
    """Factory: ``app_test(page="app_pages/heatmaps.py", query={...})`` returns a run AppTest of the whole app."""
    from streamlit.testing.v1 import AppTest

    def make(page: str | None = None, query: dict[str, str] | None = None, session: dict | None = None):
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=600)
        if page is not None and page != DEFAULT_PAGE:
            # A fresh session opening the page's URL: each page's url_path equals its file stem,
            # which is how AppTest finds a page before the first run.
            at.switch_page(page)
        for key, value in (query or {}).items():
            at.query_params[key] = value
        for key, value in (session or {}).items():
            at.session_state[key] = value
        at.run()
        return at

    return make


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory):
    """A real ``redis-server`` (Debian's package) for this test session, on a free loopback port in a temporary
    directory; skipped with the reason when it is not installed, failed under ``CI=true``."""
    from harness import redis_server_path, start_redis

    if redis_server_path() is None:
        msg = "redis-server is not installed: apt-get install redis-server (or bash tools/ensure_redis.sh)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(msg)
        pytest.skip(msg)
    proc, url = start_redis(tmp_path_factory.mktemp("redis"))
    yield url
    proc.terminate()
    proc.wait(10)


def no_exception(at) -> None:
    """Fail with the exception text when a page raised."""
    assert not at.exception, [e.value for e in at.exception]


BROWSER_TESTS = "tests/e2e/"
# One unit of work under xdist, run in order: the browser tests (one server, one chromium) and
# the tests that time real servers and supervisors (their health checks and restarts run on the clock).
SERIAL_TESTS = (BROWSER_TESTS, "tests/serve/", "tests/bench/")


def pytest_collection_modifyitems(config, items):
    """In an xdist worker (``make test TEST_WORKERS=2``): the serial tests first, the longest unit of work (see
    :func:`pytest_xdist_make_scheduler`). A plain pytest run keeps its usual order."""
    if hasattr(config, "workerinput"):
        serial = [item for item in items if item.nodeid.startswith(SERIAL_TESTS)]
        items[:] = serial + [item for item in items if not item.nodeid.startswith(SERIAL_TESTS)]


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """``make test``'s scheduler: the serial tests (:data:`SERIAL_TESTS`) are one unit of work, run in order on one
    worker, handed out first; every other test is its own unit, so the other worker takes the engine and AppTest
    tests meanwhile. (xdist's ``loadgroup`` cannot do this under pytest 9.2: it renames ``item._nodeid``, which
    pytest 9.2 no longer reads.)

    A run of the browser tests alone (``pytest tests/e2e -n 2``, as ``make test`` runs them after the rest) hands
    out one file at a time instead: each worker has its own server and chromium, and a file's tests stay in order.
    Mixed with the engine's CPU-bound tests they timed out, so there they stay one unit."""
    from xdist.scheduler import LoadScopeScheduling

    browser_only = bool(config.args) and all(Path(a).as_posix().startswith(BROWSER_TESTS[:-1]) for a in config.args)

    class BrowserTestsTogether(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            if browser_only:
                return nodeid.split("::")[0]
            return "serial" if nodeid.startswith(SERIAL_TESTS) else nodeid

    return BrowserTestsTogether(config, log)
