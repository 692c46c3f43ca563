"""Every Streamlit internal the project relies on: private attributes, classes, modules and files.

Nothing else in the app, the harness or the benchmarks reaches past Streamlit's public API (``st.*``,
``streamlit.testing.v1``, ``streamlit.components.v2``); ``tests/app/test_streamlit_compat.py`` checks that, and
holds one contract test per name here: after a Streamlit upgrade, a failing test there says what changed and
which function here to mend. Written against Streamlit 1.67.

Not listed here: the frontend's DOM (``data-testid`` attributes, the ``st-key-<key>`` classes of keyed elements)
that the CSS and scripts in ``ui/assets/`` and the browser tests select; the browser tests cover those.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any, NoReturn

import streamlit as st
from streamlit.errors import StreamlitDuplicateElementId as DuplicateElementId

# The websocket protocol's messages (``streamlit.proto``), for the benchmarks' protocol-level students
# (bench/hall.py, bench/live_turns.py): what Streamlit's frontend sends and receives. Streamlit loads these modules
# itself, so importing them here costs nothing.
from streamlit.proto.Alert_pb2 import Alert
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ButtonGroup_pb2 import ButtonGroup
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.proto.NumberInput_pb2 import NumberInput
from streamlit.proto.Slider_pb2 import Slider
from streamlit.proto.WidgetStates_pb2 import WidgetState

__all__ = [
    "BACK_MSG_FIELDS",
    "FORWARD_MSG_FIELDS",
    "LEGACY_PAGES_DIR",
    "PROTOCOL_MESSAGES",
    "STREAM_PATH",
    "STREAM_SUBPROTOCOL",
    "Alert",
    "BackMsg",
    "ButtonGroup",
    "DuplicateElementId",
    "ForwardMsg",
    "NumberInput",
    "Slider",
    "WidgetState",
    "allow_page_rerun",
    "ask_for_default_page",
    "end_run",
    "forget_query_params",
    "frontend_js_dir",
    "page_asked_by_name",
    "page_script_hash",
    "plotly_chunk",
    "rerun_waiting",
    "unbind_query_params",
]

# DuplicateElementId: what Streamlit raises when a run draws an element with the same parameters and no key twice
# (streamlit.errors, not part of the documented API): a live run's frame that repeats its last chart is skipped.

PROTOCOL_MESSAGES = (Alert, BackMsg, ButtonGroup, ForwardMsg, NumberInput, Slider, WidgetState)
"""The ``streamlit.proto`` classes imported above (private modules generated from Streamlit's ``.proto`` files)."""

STREAM_PATH = "/_stcore/stream"
"""The websocket a browser session speaks the protocol on (Streamlit's private route ``_stcore/stream``)."""

STREAM_SUBPROTOCOL = "streamlit"
"""The websocket subprotocol Streamlit's frontend asks for (the first entry of ``Sec-WebSocket-Protocol``)."""

FORWARD_MSG_FIELDS = {"new_session": 4, "delta": 5, "script_finished": 6, "session_status_changed": 9}
"""``ForwardMsg``'s top-level field numbers that ``harness.WS_TAP_JS`` and the page scripts built on it (the
browser tests' run tracking, the benchmark's hooks) read off the wire without decoding."""

BACK_MSG_FIELDS = {"rerun_script": 11}
"""``BackMsg``'s top-level field numbers read off the wire the same way (a rerun request leaving the browser)."""

LEGACY_PAGES_DIR = "pages"
"""The folder name that turns on Streamlit's legacy multipage routing: ``PagesManager`` sets the class flag
``uses_pages_directory`` when a folder of this name sits next to the main script, and until a server's first
``st.navigation`` call (and before every AppTest run) it then routes a deep link such as ``/heatmaps`` to the page
script alone, without app.py's navigation and sidebar. The page scripts live in ``app_pages/`` so the flag stays
off; nothing may be named ``pages`` next to ``app.py``."""


def allow_page_rerun(page: Any) -> None:
    """Let ``page`` (the ``st.Page`` that ``st.navigation`` returned) run again in this app run.

    ``StreamlitPage.run`` allows one call per app run: ``st.navigation`` sets the private ``_can_be_called`` and
    ``run`` clears it. app.py runs the page in a fragment, and each fragment rerun calls ``run`` again.
    """
    page._can_be_called = True


def rerun_waiting() -> bool:
    """Whether a rerun request waits for the script run in progress (a fragment's rerun does not interrupt it).

    Reads the private ``ScriptRequests._state`` of the run's context (``get_script_run_ctx().script_requests``) and
    compares it with ``ScriptRequestType.RERUN``; False outside a script run.
    """
    from streamlit.runtime.scriptrunner import get_script_run_ctx
    from streamlit.runtime.scriptrunner_utils.script_requests import ScriptRequestType

    requests = getattr(get_script_run_ctx(suppress_warning=True), "script_requests", None)
    return getattr(requests, "_state", None) == ScriptRequestType.RERUN


def end_run() -> NoReturn:
    """End this script run as Streamlit's own interruption does, leaving a waiting rerun to run next.

    Raises Streamlit's private ``StopException``, which its script runner catches quietly. ``st.stop()`` is not
    the same: it asks the run's requests to stop, which drops the waiting rerun.
    """
    from streamlit.runtime.scriptrunner_utils.exceptions import StopException

    raise StopException()


def page_script_hash() -> str:
    """The running page's script hash (which page of the app this run draws); ``""`` outside a script run.

    Reads ``get_script_run_ctx().page_script_hash`` (``streamlit.runtime.scriptrunner``).
    """
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx()
    return ctx.page_script_hash if ctx is not None else ""


def _pages_manager() -> Any:
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    return getattr(get_script_run_ctx(), "pages_manager", None)


def page_asked_by_name() -> str | None:
    """The page name this run's address asks for (``"heatmaps"`` for ``/heatmaps``) when the run names its page
    by name only, as a browser's first run does; None when it names a page hash, or outside a script run.

    Reads the run context's ``pages_manager`` (``PagesManager.intended_page_script_hash`` and
    ``intended_page_name``), which ``st.navigation`` resolves the page from.
    """
    pages = _pages_manager()
    if pages is None or pages.intended_page_script_hash:
        return None
    return pages.intended_page_name or ""


def ask_for_default_page() -> None:
    """Make this run ask for the navigation's default page (call before ``st.navigation``).

    Calls ``PagesManager.set_script_intent("", "")`` on the run context's ``pages_manager``: no page hash, no
    page name, so ``st.navigation`` picks its default page without a "Page not found" dialog.
    """
    pages = _pages_manager()
    if pages is not None:
        pages.set_script_intent("", "")


def unbind_query_params() -> None:
    """Drop every widget's binding to a query parameter of this session (each widget binds again when a later
    run draws it), so that ``st.switch_page`` may replace the address.

    Uses ``get_script_run_ctx().session_state.query_params()`` (a context manager over the private
    ``QueryParams``) and its ``get_binding_for_param(key).widget_id`` and ``unbind_widget(widget_id)``.
    """
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx()
    if ctx is None:
        return
    with ctx.session_state.query_params() as qp:
        for key in list(qp):
            binding = qp.get_binding_for_param(key)
            if binding is not None:
                qp.unbind_widget(binding.widget_id)


def forget_query_params(keys: list[str]) -> None:
    """Take ``keys`` out of this run's address so that no widget drawn later in the run takes its value from them.

    A widget bound to a query parameter whose value in session state was dropped is seeded again from the address
    the run started with (the private ``QueryParams._initial_query_params``), not from ``st.query_params``: deleting
    the parameter is not enough, and a bound one cannot be deleted at all. So every binding is dropped first
    (:func:`unbind_query_params`), the keys are deleted, and ``set_initial_query_params_from_current()`` makes the
    remaining address the one widgets are seeded from.
    """
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx()
    if ctx is None:
        return
    unbind_query_params()
    for key in keys:
        if key in st.query_params:
            del st.query_params[key]
    with ctx.session_state.query_params() as qp:
        qp.set_initial_query_params_from_current()


def frontend_js_dir() -> Path:
    """The folder of the frontend's scripts in the installed package (``streamlit/static/static/js``): the
    ``index.<hash>.js`` entry script and its lazily loaded chunks."""
    return Path(st.__file__).parent / "static" / "static" / "js"


@functools.cache
def plotly_chunk() -> str:
    """The file name of Streamlit's plotly chunk (``PlotlyChart.<hash>.js`` in :func:`frontend_js_dir`), the
    script Streamlit loads for its first ``st.plotly_chart``: importing it sets ``window.Plotly``. The live chart
    (``ui/assets/live_plot.js``) imports it relative to the page's ``index.<hash>.js`` script."""
    found = sorted(frontend_js_dir().glob("PlotlyChart.*.js"))
    if len(found) != 1:
        raise RuntimeError(f"expected one PlotlyChart chunk in the installed Streamlit, found {len(found)}")
    return found[0].name
