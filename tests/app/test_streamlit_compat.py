"""The Streamlit internals the project relies on (ui/streamlit_compat.py): one contract test each, and a scan that
nothing outside that module reaches past Streamlit's public API.

After a Streamlit upgrade a failure here says what changed in Streamlit, what in the app stops working, and which
function of ui.streamlit_compat to mend.
"""

from __future__ import annotations

import ast
import re
import textwrap
from pathlib import Path
from types import SimpleNamespace

import pytest
from streamlit.testing.v1 import AppTest

from ui import streamlit_compat as compat

ROOT = Path(__file__).resolve().parents[2]
COMPAT = ROOT / "ui" / "streamlit_compat.py"


def _fake_run(monkeypatch, **ctx) -> None:
    """Make ``get_script_run_ctx()`` return a context with ``ctx``'s attributes (outside any script run)."""
    from streamlit.runtime import scriptrunner

    monkeypatch.setattr(scriptrunner, "get_script_run_ctx", lambda suppress_warning=False: SimpleNamespace(**ctx))


def _app(tmp_path: Path, main: str, pages: dict[str, str] | None = None) -> AppTest:
    """An AppTest of the script ``main`` in ``tmp_path``, with page scripts ``views/<name>.py``."""
    (tmp_path / "views").mkdir()
    for name, body in (pages or {}).items():
        (tmp_path / "views" / f"{name}.py").write_text(textwrap.dedent(body), encoding="utf-8")
    (tmp_path / "main.py").write_text(textwrap.dedent(main), encoding="utf-8")
    return AppTest.from_file(str(tmp_path / "main.py"), default_timeout=60)


# ---------------------------------------------------------------- allow_page_rerun


def test_a_page_runs_again_in_the_same_app_run_once_allowed():
    """app.py's page fragment calls ``page.run()`` again at each fragment rerun (ui.draw_page)."""

    def script():
        import streamlit as st

        from ui.streamlit_compat import allow_page_rerun

        def body():
            st.session_state["runs"] = st.session_state.get("runs", 0) + 1

        page = st.navigation([st.Page(body, title="one", url_path="one")], position="hidden")
        st.session_state["flag_after_navigation"] = getattr(page, "_can_be_called", None)
        page.run()
        try:
            page.run()
        except Exception as e:  # noqa: BLE001 - the test reports what Streamlit raised
            st.session_state["second_call"] = type(e).__name__
        allow_page_rerun(page)
        page.run()

    at = AppTest.from_function(script, default_timeout=60).run()
    where = "app.py's page fragment cannot rerun the page; see ui.streamlit_compat.allow_page_rerun"
    assert not at.exception, f"{at.exception[0].value if at.exception else ''}: {where}"
    assert at.session_state["flag_after_navigation"] is True, (
        f"Streamlit's Page no longer has _can_be_called (st.navigation's go-ahead for Page.run): {where}"
    )
    assert at.session_state["second_call"] == "StreamlitAPIException", (
        f"Page.run no longer refuses a second call in one app run: allow_page_rerun may no longer be needed; {where}"
    )
    assert at.session_state["runs"] == 2, f"setting _can_be_called no longer lets Page.run run again: {where}"


# ---------------------------------------------------------------- rerun_waiting, end_run


def test_a_waiting_rerun_is_seen_in_the_script_requests(monkeypatch):
    """A live run gives way to a rerun that waits for it (Stop, any control of the page): ui.compute."""
    from streamlit.runtime.scriptrunner_utils.script_requests import RerunData, ScriptRequests, ScriptRequestType

    where = "a live run no longer notices Stop or a control; see ui.streamlit_compat.rerun_waiting"
    requests = ScriptRequests()
    assert getattr(requests, "_state", None) == ScriptRequestType.CONTINUE, (
        f"Streamlit's ScriptRequests no longer keeps its state in _state (CONTINUE when idle): {where}"
    )
    _fake_run(monkeypatch, script_requests=requests)
    assert not compat.rerun_waiting(), f"a run with no request pending reads as a waiting rerun: {where}"
    requests.request_rerun(RerunData())
    assert requests._state == ScriptRequestType.RERUN, f"request_rerun no longer sets _state to RERUN: {where}"
    assert compat.rerun_waiting(), f"a requested rerun is not seen: {where}"


def test_no_rerun_waits_outside_a_script_run():
    assert compat.rerun_waiting() is False


def test_end_run_ends_the_script_quietly():
    def script():
        import streamlit as st

        from ui.streamlit_compat import end_run

        st.write("before")
        end_run()
        st.write("after")

    at = AppTest.from_function(script, default_timeout=60).run()
    where = "a live run that gives way to a rerun would show an error or go on; see ui.streamlit_compat.end_run"
    assert not at.exception, f"Streamlit's StopException no longer ends a run quietly: {where}"
    assert [m.value for m in at.markdown] == ["before"], f"the script went on after StopException: {where}"


def test_drawing_the_same_unkeyed_chart_twice_in_a_run_raises_duplicate_element_id():
    def script():
        import plotly.graph_objects as go
        import streamlit as st

        from ui.streamlit_compat import DuplicateElementId

        box, fig = st.empty(), go.Figure(go.Bar(y=[1, 2]))
        box.plotly_chart(fig)
        try:
            box.plotly_chart(fig)
        except DuplicateElementId:
            st.write("raised")

    at = AppTest.from_function(script, default_timeout=60).run()
    where = "ui.output.live_charts skips a frame that repeats its chart by catching it"
    assert not at.exception and [m.value for m in at.markdown] == ["raised"], f"no DuplicateElementId: {where}"


# ---------------------------------------------------------------- page_script_hash


def test_each_page_has_its_own_script_hash(tmp_path):
    """The controls tell pages apart by it (ui.widgets: a stepper or a head picker resets on another page)."""
    record = """
        import streamlit as st
        from ui.streamlit_compat import page_script_hash
        st.session_state.setdefault("hashes", {}).setdefault("{name}", []).append(page_script_hash())
    """
    main = """
        import streamlit as st
        st.navigation([st.Page("views/a.py", default=True), st.Page("views/b.py")]).run()
    """
    at = _app(tmp_path, main, {n: record.replace("{name}", n) for n in "ab"})
    at.run()
    at.run()
    at.switch_page("views/b.py").run()
    hashes = at.session_state["hashes"]
    where = "controls would no longer tell pages apart; see ui.streamlit_compat.page_script_hash"
    assert not at.exception, f"{at.exception[0].value if at.exception else ''}: {where}"
    assert len(set(hashes["a"])) == 1 and hashes["a"][0], f"a page's script hash is empty or changes: {where}"
    assert hashes["b"][0] and hashes["b"][0] != hashes["a"][0], f"two pages share one script hash: {where}"


def test_no_page_script_hash_outside_a_script_run():
    assert compat.page_script_hash() == ""


# ---------------------------------------------------------------- page_asked_by_name, ask_for_default_page


def test_the_page_intent_reads_and_clears(monkeypatch, tmp_path):
    """ui.route_home_alias: ``/heatmaps`` (the default page's own name) opens the default page."""
    from streamlit.runtime.pages_manager import PagesManager

    where = "/<default page> would show 'Page not found'; see ui.streamlit_compat.page_asked_by_name"
    monkeypatch.setattr(PagesManager, "uses_pages_directory", False)
    pages = PagesManager(str(tmp_path / "app.py"))
    _fake_run(monkeypatch, pages_manager=pages)
    for name in ("intended_page_script_hash", "intended_page_name", "set_script_intent"):
        assert hasattr(pages, name), f"Streamlit's PagesManager no longer has {name}: {where}"
    pages.set_script_intent("", "heatmaps")
    assert compat.page_asked_by_name() == "heatmaps", f"a run asking for a page by name is not read: {where}"
    compat.ask_for_default_page()
    assert compat.page_asked_by_name() == "" and not pages.intended_page_script_hash, where
    pages.set_script_intent("0123abcd", "")
    assert compat.page_asked_by_name() is None, f"a run naming a page hash reads as one naming a page: {where}"


def test_a_cleared_intent_opens_the_default_page(tmp_path):
    main = """
        import streamlit as st
        from ui.streamlit_compat import ask_for_default_page
        if st.session_state.get("home"):
            ask_for_default_page()
        st.navigation([st.Page("views/a.py", default=True), st.Page("views/b.py")]).run()
    """
    at = _app(tmp_path, main, {n: f"import streamlit as st\nst.write('page {n}')\n" for n in "ab"})
    at.switch_page("views/b.py").run()
    assert [m.value for m in at.markdown] == ["page b"]
    at.session_state["home"] = True
    at.switch_page("views/b.py").run()
    assert [m.value for m in at.markdown] == ["page a"], (
        "st.navigation no longer opens its default page once set_script_intent('', '') cleared the run's page: "
        "/<default page> would show 'Page not found'; see ui.streamlit_compat.ask_for_default_page"
    )


# ---------------------------------------------------------------- unbind_query_params


def test_widget_bindings_to_the_address_are_dropped():
    """ui.decks switches pages with ``st.switch_page(..., query_params=...)``, refused while widgets are bound."""

    def script():
        import streamlit as st
        from streamlit.runtime.scriptrunner import get_script_run_ctx

        from ui.streamlit_compat import unbind_query_params

        def bound() -> bool:
            with get_script_run_ctx().session_state.query_params() as qp:
                return qp.get_binding_for_param("n") is not None

        st.slider("n", 0, 10, 3, key="n", bind="query-params")
        st.session_state["before"] = bound()
        unbind_query_params()
        st.session_state["after"] = bound()

    at = AppTest.from_function(script, default_timeout=60)
    at.query_params["n"] = "4"
    at.run()
    where = "a lecture deck's Previous/Next could not switch pages; see ui.streamlit_compat.unbind_query_params"
    assert not at.exception, f"{at.exception[0].value if at.exception else ''}: {where}"
    assert at.session_state["before"] is True, (
        f"a bound slider's binding is not found by get_binding_for_param: {where}"
    )
    assert at.session_state["after"] is False, f"unbind_widget no longer drops the binding: {where}"


# ---------------------------------------------------------------- forget_query_params


def test_a_widget_is_not_seeded_from_a_forgotten_address_value():
    """ui.decks resets a slide's other controls to their defaults: a value the run's address started with must not
    come back through the bound widget once its session state is dropped."""

    def script():
        import streamlit as st

        from ui.streamlit_compat import forget_query_params

        if st.session_state.get("reset"):
            forget_query_params(["n"])
            st.session_state.pop("n", None)
        st.session_state["n_now"] = st.slider("n", 0, 10, 3, key="n", bind="query-params")

    at = AppTest.from_function(script, default_timeout=60)
    at.query_params["n"] = "7"
    at.run()
    where = "a deck's next slide keeps an earlier value; see ui.streamlit_compat.forget_query_params"
    assert at.session_state["n_now"] == 7, f"a bound slider no longer takes the address's value: {where}"
    at.session_state["reset"] = True
    at.run()
    assert not at.exception, f"{at.exception[0].value if at.exception else ''}: {where}"
    assert at.session_state["n_now"] == 3, f"the slider came back at {at.session_state['n_now']}, not 3: {where}"
    assert "n" not in at.query_params


# ---------------------------------------------------------------- plotly_chunk, frontend_js_dir


def test_the_plotly_chunk_is_next_to_the_index_script_and_sets_window_plotly():
    where = "the live chart (ui/assets/live_plot.js) cannot load Plotly; see ui.streamlit_compat.plotly_chunk"
    folder = compat.frontend_js_dir()
    assert folder.is_dir(), f"Streamlit's frontend scripts are no longer in {folder}: {where}"
    chunks = sorted(p.name for p in folder.glob("PlotlyChart.*.js"))
    assert len(chunks) == 1, f"Streamlit's frontend has {chunks or 'no'} PlotlyChart.<hash>.js chunk(s): {where}"
    assert compat.plotly_chunk() == chunks[0]
    text = (folder / chunks[0]).read_text(encoding="utf-8")
    assert "window.Plotly=" in text, f"importing {chunks[0]} no longer sets window.Plotly: {where}"
    # live_plot.js finds the page's entry script by this pattern and imports the chunk relative to it
    page = (folder.parent.parent / "index.html").read_text(encoding="utf-8")
    scripts = re.findall(r'<script[^>]*\ssrc="([^"]+)"', page)
    entry = [s for s in scripts if re.search(r"/static/js/index\.[^/]+\.js", "/" + s.lstrip("./"))]
    assert len(entry) == 1, f"Streamlit's index.html loads {scripts}, not one static/js/index.<hash>.js: {where}"
    assert (folder.parent.parent / entry[0]).resolve().parent == folder.resolve(), (
        f"Streamlit's entry script {entry[0]} is not next to its plotly chunk: {where}"
    )


# ---------------------------------------------------------------- the websocket protocol


def test_the_protocol_has_what_the_benchmarks_and_the_browser_taps_read():
    """bench/hall.py's students speak the protocol (tests/bench/test_hall.py runs them against a server);
    harness.WS_TAP_JS reads top-level field numbers off the wire."""
    where = "see ui.streamlit_compat's protocol names, bench/hall.py and harness.WS_TAP_JS"
    forward = compat.ForwardMsg.DESCRIPTOR.fields_by_name
    for name, number in compat.FORWARD_MSG_FIELDS.items():
        assert name in forward and forward[name].number == number, (
            f"Streamlit's ForwardMsg.{name} is no longer field {number}: the browser tests' run tracking and the "
            f"benchmark's hooks misread the wire; {where}"
        )
    back = compat.BackMsg.DESCRIPTOR.fields_by_name
    for name, number in compat.BACK_MSG_FIELDS.items():
        assert name in back and back[name].number == number, f"BackMsg.{name} is no longer field {number}; {where}"
    kinds = {f.name for f in compat.ForwardMsg.DESCRIPTOR.oneofs_by_name["type"].fields}
    read = {"new_session", "navigation", "delta", "page_info_changed", "session_event", "page_not_found"}
    assert read | {"script_finished", "ref_hash"} <= kinds, f"ForwardMsg lost {read - kinds}; {where}"
    for enum in ("FINISHED_SUCCESSFULLY", "FINISHED_FRAGMENT_RUN_SUCCESSFULLY", "FINISHED_EARLY_FOR_RERUN"):
        assert hasattr(compat.ForwardMsg, enum), f"ForwardMsg.{enum} is gone; {where}"
    assert compat.Slider.SELECT_SLIDER != compat.Slider.SLIDER and hasattr(compat.NumberInput, "INT"), where
    assert hasattr(compat.Alert, "ERROR") and hasattr(compat.ButtonGroup, "DESCRIPTOR"), where
    state = compat.WidgetState.DESCRIPTOR.fields_by_name
    for name in ("double_array_value", "string_array_value", "bool_value", "int_value", "double_value"):
        assert name in state, f"WidgetState.{name} is gone: the students cannot move a widget; {where}"


def test_the_stream_route_and_subprotocol():
    from streamlit.web.server.starlette import starlette_websocket as ws

    where = "bench/hall.py's students cannot connect; see ui.streamlit_compat.STREAM_PATH"
    assert ws._ROUTE_WEBSOCKET_STREAM == compat.STREAM_PATH.lstrip("/"), (
        f"Streamlit's websocket is no longer at {compat.STREAM_PATH}: {where}"
    )
    headers = {"sec-websocket-protocol": compat.STREAM_SUBPROTOCOL}
    assert ws._parse_subprotocols(headers)[0] == compat.STREAM_SUBPROTOCOL, where


# ---------------------------------------------------------------- the legacy pages folder


def test_no_legacy_pages_folder_next_to_the_app(monkeypatch, tmp_path):
    """With a ``pages/`` folder next to app.py a fresh server's first visitor of a deep link, and every AppTest
    run, would get the page script without app.py's sidebar (tests/e2e/test_reliability.py opens one)."""
    from streamlit.runtime.pages_manager import PagesManager

    name = compat.LEGACY_PAGES_DIR
    assert not (ROOT / name).exists(), f"{name}/ next to app.py turns on Streamlit's legacy page routing"
    for folder in ("app_pages", name):
        root = tmp_path / folder
        (root / folder).mkdir(parents=True)
        monkeypatch.setattr(PagesManager, "uses_pages_directory", None)
        PagesManager(str(root / "app.py"))
        assert PagesManager.uses_pages_directory is (folder == name), (
            f"Streamlit's PagesManager no longer turns its legacy routing on by a folder named {name!r} (and only "
            f"that name) next to the main script, as a {folder}/ folder shows: find the name "
            "streamlit/runtime/pages_manager.py checks now, set ui.streamlit_compat.LEGACY_PAGES_DIR to it, and keep "
            "the page scripts' folder (app_pages/) under another name"
        )


# ---------------------------------------------------------------- nothing else reaches into Streamlit

#: What a module may import of Streamlit besides ``streamlit`` itself (public API).
PUBLIC_MODULES = {"streamlit.testing.v1", "streamlit.components.v2"}
#: Streamlit's submodules that are public API (``st.column_config.NumberColumn``, ``st.components.v2``).
PUBLIC_ATTRIBUTES = {"column_config", "components", "connections", "testing"}
#: Attribute names of Streamlit internals (as ``x.<name>`` or ``getattr(x, "<name>")``).
PRIVATE_ATTRIBUTES = {
    "_can_be_called",
    "uses_pages_directory",
    "script_requests",
    "_state",
    "pages_manager",
    "intended_page_name",
    "intended_page_script_hash",
    "set_script_intent",
    "get_binding_for_param",
    "unbind_widget",
    "_script_hash",
    "set_initial_query_params_from_current",
}
#: Names of Streamlit's internal classes and functions.
PRIVATE_NAMES = {
    "get_script_run_ctx",
    "PagesManager",
    "ScriptRequests",
    "ScriptRequestType",
    "StopException",
    "StreamlitPage",
    "RerunData",
}
#: Streamlit's private files and routes, in string literals.
PRIVATE_TEXT = re.compile(r"(?<![A-Za-z])PlotlyChart\.|static/static|_stcore/stream")
SCANNED = ["app.py", "server.py", "ui", "app_pages", "harness", "bench", "attn_core", "tools", "serve", "rooms"]


def _streamlit_submodules() -> set[str]:
    """Streamlit's submodules whose name ``st.<name>`` does not shadow with a public function (``st.dataframe``,
    ``st.navigation``) and that are not public themselves (:data:`PUBLIC_ATTRIBUTES`)."""
    import pkgutil
    import types

    import streamlit

    names = {m.name for m in pkgutil.iter_modules(streamlit.__path__)}
    shadowed = {n for n in names if hasattr(streamlit, n) and not isinstance(getattr(streamlit, n), types.ModuleType)}
    return names - shadowed - PUBLIC_ATTRIBUTES


def violations(source: str) -> list[str]:
    """Every reach past Streamlit's public API in ``source`` (a module's text), as ``line: what``. Docstrings may
    name Streamlit's private files; code may not."""
    subs = _streamlit_submodules()
    tree = ast.parse(source)
    prose = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)}
    found: list[str] = []
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("streamlit.") and a.name not in PUBLIC_MODULES:
                    found.append(f"{line}: import {a.name}")
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            if node.module.startswith("streamlit.") and node.module not in PUBLIC_MODULES:
                found.append(f"{line}: from {node.module} import ...")
            elif node.module == "streamlit":
                found += [f"{line}: from streamlit import {a.name}" for a in node.names if a.name in subs]
        elif isinstance(node, ast.Attribute):
            if node.attr in PRIVATE_ATTRIBUTES:
                found.append(f"{line}: .{node.attr}")
            if isinstance(node.value, ast.Name) and node.value.id in ("st", "streamlit"):
                if node.attr == "__file__" or node.attr in subs:
                    found.append(f"{line}: {node.value.id}.{node.attr}")
            elif ast.unparse(node.value) in ("st.components", "streamlit.components") and node.attr != "v2":
                found.append(f"{line}: {ast.unparse(node)}")
        elif isinstance(node, ast.Name) and node.id in PRIVATE_NAMES:
            found.append(f"{line}: {node.id}")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            if node.func.id in ("getattr", "setattr", "hasattr", "delattr") and len(node.args) >= 2:
                arg = node.args[1]
                if isinstance(arg, ast.Constant) and arg.value in PRIVATE_ATTRIBUTES:
                    found.append(f"{line}: {node.func.id}(..., {arg.value!r})")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in prose:
            if hit := PRIVATE_TEXT.search(node.value):
                found.append(f"{line}: {hit.group(0)!r} in a string")
    return found


def scanned_files() -> list[Path]:
    files: list[Path] = []
    for name in SCANNED:
        path = ROOT / name
        files += [path] if path.is_file() else sorted(path.rglob("*.py"))
    return [p for p in files if p != COMPAT]


def test_the_scan_covers_the_project():
    names = {p.relative_to(ROOT).as_posix() for p in scanned_files()}
    assert {"app.py", "server.py", "ui/frame.py", "app_pages/heatmaps.py", "bench/hall.py", "harness/probe.py"} <= names
    assert "ui/streamlit_compat.py" not in names


@pytest.mark.parametrize(
    "code",
    [
        "from streamlit.runtime.scriptrunner import get_script_run_ctx",
        "import streamlit.web.cli",
        "from streamlit import runtime",
        "from streamlit.proto.Slider_pb2 import Slider",
        "page._can_be_called = True",
        "x = getattr(requests, '_state', None)",
        "PagesManager.uses_pages_directory = False",
        "ctx = st.runtime.exists()",
        "p = Path(st.__file__).parent",
        "found = folder.glob('PlotlyChart.*.js')",
        "url = base + '/_stcore/stream'",
        "c = st.components.v1.html('')",
    ],
)
def test_the_scan_finds_a_reach_into_streamlit(code):
    assert violations(code), f"the scan misses: {code}"


@pytest.mark.parametrize(
    "code",
    [
        "import streamlit as st",
        "from streamlit.testing.v1 import AppTest",
        "c = st.components.v2.component('x', js='')",
        "page = st.navigation(pages)",
        "st.dataframe(frame)",
        "from streamlit import column_config",
        "box.className = 'stPlotlyChart'",
        '"""Streamlit\'s PlotlyChart.<hash>.js chunk (a docstring)."""',
        "url = base + '/_stcore/health'",
    ],
)
def test_the_scan_lets_public_api_through(code):
    assert not violations(code), violations(code)


def test_nothing_outside_the_compat_module_reaches_into_streamlit():
    found = [f"{p.relative_to(ROOT)}:{v}" for p in scanned_files() for v in violations(p.read_text(encoding="utf-8"))]
    assert not found, (
        "Streamlit internals used outside ui/streamlit_compat.py (put each behind a named function or constant there, "
        "with a contract test in this file):\n" + "\n".join(found)
    )
