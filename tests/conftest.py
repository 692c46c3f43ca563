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


from attn_core.views import PAGES  # noqa: E402

DEFAULT_PAGE = next(p.script for p in PAGES if p.default)


from harness import disable_legacy_pages_routing  # noqa: E402 - shared with bench/

disable_legacy_pages_routing()


@pytest.fixture
def app_test():
    """Factory: ``app_test(page="pages/heatmaps.py", query={...})`` returns a run AppTest of the whole app."""
    from streamlit.testing.v1 import AppTest

    def make(page: str | None = None, query: dict[str, str] | None = None, session: dict | None = None):
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
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


def no_exception(at) -> None:
    """Fail with the exception text when a page raised."""
    assert not at.exception, [e.value for e in at.exception]


def pytest_collection_modifyitems(config, items):
    """Under pytest-xdist (``make test`` runs ``-n 2 --dist loadgroup``) the browser tests stay together on one
    worker, in their order, with one server and one chromium, and go first (the longest unit of work); the other
    worker takes the engine and AppTest tests meanwhile. A plain pytest run keeps its usual order."""
    if not hasattr(config, "workerinput"):  # not an xdist worker
        return
    browser = [item for item in items if item.get_closest_marker("e2e")]
    for item in browser:
        item.add_marker(pytest.mark.xdist_group("e2e"))
    items[:] = browser + [item for item in items if not item.get_closest_marker("e2e")]
