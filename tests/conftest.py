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


DEFAULT_PAGE = "pages/heatmaps.py"


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
