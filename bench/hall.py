"""A lecture hall on one server (not a timed test): simulated students on Streamlit's own websocket protocol.

    .venv/bin/python bench/hall.py [--students 20] [--moves 5] [--think 1] [--page heatmaps] [--widget head_dim]
                                   [--same-link] [--ramp 2] [--url http://127.0.0.1:8501 --pids 1234,1235]
                                   [--burst 3] [--json hall.json] [--browser-check]
    .venv/bin/python bench/hall.py --lecture [--students 100] [--workers 2] [--minutes 6] [--store sqlite|redis] ...

Every student is one websocket on ``/_stcore/stream`` speaking what Streamlit's frontend speaks (``BackMsg`` /
``ForwardMsg`` from ``streamlit.proto``): it opens its own URL (``?seed=<n>``), waits for the first run to finish
(first paint), then moves one slider ``--moves`` times with ``--think`` seconds between moves, sending the widget
states the frontend would send. Every reply is checked for the student's own numbers (cross-talk); exceptions,
error boxes, timeouts and disconnects are counted; the server's CPU time and memory come from ``/proc``. With
``--burst N`` each move is N presses sent without waiting for the replies (back and forth, then the move's value), as
a student pressing an arrow key quickly; a reply the browser could not have used (a reference to a message its cache
dropped, no run of the last press) counts as an error. See bench/README.md for what each column means.

``--lecture``: the lecture mode (bench/lecture_room.py): a class following a lecturer in a live lecture room through
nginx with two workers, the lecturer moving every 20 s and asking a question every 2 minutes, one worker killed
in the middle.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import html
import ipaddress
import json
import math
import os
import re
import statistics
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from websockets.asyncio.client import ClientConnection, connect  # noqa: E402
from websockets.exceptions import ConnectionClosed, InvalidHandshake  # noqa: E402

from attn_core.views import PAGES  # noqa: E402
from ui.plotly_live import NAME as LIVE_PLOT  # noqa: E402 - the component a browser's charts come in
from ui.streamlit_compat import (  # noqa: E402 - Streamlit's websocket protocol
    STREAM_PATH,
    STREAM_SUBPROTOCOL,
    Alert,
    BackMsg,
    ForwardMsg,
    NumberInput,
    Slider,
    WidgetState,
)

# ---------------------------------------------------------------- limits and defaults (edit here)
MAX_STUDENTS, MAX_MOVES, MAX_SECONDS = 500, 100, 3600
#: The slider each page's students move unless --widget says otherwise, and the view each page opens on when that
#: slider is on another view (--query adds to it): the page's PageChecks, as the browser benchmark uses them.
DEFAULT_WIDGET = {p.name: p.checks.slider for p in PAGES}
DEFAULT_QUERY = {p.name: p.checks.query for p in PAGES if p.checks.query}
#: Values a student moves through: the next slider positions after the one it opened with (never the default).
MOVE_SPAN = 32
#: the share link in the sidebar's html (ui.frame.link_box)
LINK_BOX = re.compile(r'<div class="attn-link"><code>([^<]*)</code>')
#: Element kinds whose state the frontend keeps and sends back with every rerun (a button's is a one-run trigger, kept
#: nowhere: it is listed so that a student can press it, :meth:`Tab.press`).
WIDGET_KINDS = {
    "slider",
    "checkbox",
    "number_input",
    "button_group",
    "selectbox",
    "radio",
    "text_area",
    "text_input",
    "button",
}


class HallError(RuntimeError):
    """The hall cannot run as asked (no such page or widget, a widget it cannot move): stop, say why."""


class BrokenReply(HallError):
    """A reply a browser could not use: a reference to a message its cache no longer holds (its websocket fails),
    or no run of the last of quick presses. The student's page would be stuck; the hall counts it and goes on."""


# ---------------------------------------------------------------- widget states, as Streamlit's frontend keeps them
def _option_strings(kind: str, proto, indices) -> list[str]:
    opts = [o.content for o in proto.options] if kind == "button_group" else list(proto.options)
    return [opts[int(i)] for i in indices if 0 <= int(i) < len(opts)]


def widget_state(kind: str, proto) -> WidgetState | None:
    """The state the frontend stores for a widget element it has just drawn (its value, else its default).

    Mirrors the frontend's widgets: a slider sends ``double_array_value`` (a select slider its option
    strings), a toggle ``bool_value``, a number input ``int_value`` or ``double_value``, a segmented control
    its option strings, a radio or select box the option string, a text box the text.
    """
    ws = WidgetState(id=proto.id)
    if kind == "slider" and proto.type == Slider.SELECT_SLIDER:
        values = list(proto.raw_value) if proto.set_value and proto.raw_value else None
        ws.string_array_value.data[:] = values or _option_strings(kind, proto, proto.default)
    elif kind == "slider":
        ws.double_array_value.data[:] = list(proto.value if proto.set_value else proto.default)
    elif kind == "checkbox":
        ws.bool_value = proto.value if proto.set_value else proto.default
    elif kind == "number_input":
        value = proto.value if proto.set_value else proto.default
        if proto.data_type == NumberInput.INT:
            ws.int_value = int(value)
        else:
            ws.double_value = value
    elif kind == "button_group":
        ws.string_array_value.data[:] = (
            list(proto.raw_values) if proto.set_value else _option_strings(kind, proto, proto.default)
        )
    elif kind in ("selectbox", "radio"):
        if proto.set_value:
            ws.string_value = proto.raw_value
        elif proto.HasField("default") and 0 <= proto.default < len(proto.options):
            ws.string_value = proto.options[proto.default]
        else:
            return None
    elif kind in ("text_area", "text_input"):
        ws.string_value = proto.value if proto.set_value else proto.default
    else:
        return None
    return ws


def url_text(value: float | str) -> str:
    """A value as the frontend writes it into the address (JavaScript's ``String``: 17, not 17.0)."""
    if isinstance(value, str):
        return value
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def slider_moves(proto, n: int, offset: int) -> list[float | str]:
    """``n`` values for a slider, starting ``offset`` places into the positions after its current one.

    The positions are the next :data:`MOVE_SPAN` steps up from the current value (then down, near the top
    of the range), never the default, so every value shows in the share link. A select slider moves
    through its option strings the same way.
    """
    if proto.type == Slider.SELECT_SLIDER:
        options = list(proto.options)
        cur = options.index(proto.raw_value[0]) if proto.set_value and proto.raw_value else int(proto.default[0])
        order = [*range(cur + 1, len(options)), *range(cur - 1, -1, -1)]
        values: list = [options[i] for i in order if i != int(proto.default[0])][:MOVE_SPAN]
    else:
        cur = (proto.value if proto.set_value else proto.default)[0]
        step = proto.step or 1
        ups = [cur + step * j for j in range(1, MOVE_SPAN + 1) if cur + step * j <= proto.max + 1e-9]
        downs = [cur - step * j for j in range(1, MOVE_SPAN + 1) if cur - step * j >= proto.min - 1e-9]
        values = [round(v, 10) for v in [*ups, *downs] if not math.isclose(v, proto.default[0])][:MOVE_SPAN]
        if proto.data_type == Slider.INT:
            values = [int(round(v)) for v in values]
    if not values:
        raise HallError(f"slider {proto.id!r} has no position to move to")
    return [values[(offset + k) % len(values)] for k in range(n)]


def moved_state(proto, value: float | str) -> WidgetState:
    """The state the frontend sends when the learner drags slider ``proto`` to ``value``."""
    ws = WidgetState(id=proto.id)
    if proto.type == Slider.SELECT_SLIDER:
        ws.string_array_value.data[:] = [str(value)]
    else:
        ws.double_array_value.data[:] = [float(value)]
    return ws


# ---------------------------------------------------------------- one browser tab on the websocket
@dataclass
class Reply:
    """What one script run sent back (from its ``new_session`` to its ``script_finished``)."""

    status: str = "running"
    link: str | None = None  # the sidebar's share link (ui.frame.link_box, the view's URL)
    queries: list[str] = field(default_factory=list)  # page_info_changed query strings
    exceptions: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # error boxes (st.error)
    charts: list[str] = field(default_factory=list)  # each plotly chart's spec (JSON), in page order
    widgets: dict[str, tuple[str, object]] = field(default_factory=dict)  # id -> (element kind, proto)
    fragments: dict[str, str] = field(default_factory=dict)  # widget id -> the fragment that drew it ("": none)
    fragment_run: bool = False  # the server ran one fragment, not the whole app
    texts: list[str] = field(default_factory=list)  # every markdown and alert text, in page order (lecture mode)


class Tab:
    """One student's browser tab, reduced to what Streamlit's frontend does on the websocket.

    It sends ``rerun_script`` with the query string, the page, the widget states of every widget on the
    page and the hashes of the messages it has cached; it resolves ``ref_hash`` messages from that cache,
    keeps widget states across runs (a value the server sets wins), and follows ``page_info_changed``. A widget a
    fragment drew (app.py runs each page as one) asks for a run of that fragment alone, as the browser does.
    """

    def __init__(
        self,
        base_url: str,
        page_path: str,
        query: dict[str, str],
        user_agent: str | None = None,
        headers: dict[str, str] | None = None,
    ):
        self.base, self.page_path, self.query = base_url.rstrip("/"), page_path, dict(query)
        self.user_agent = user_agent  # None: the websockets library's own, which the app reads as a desktop
        self.headers = dict(headers or {})  # e.g. the browser's cookies (lecture mode)
        self.triggers: list[WidgetState] = []  # the buttons pressed for the next run only
        self.page_hash = ""
        self.widgets: dict[str, WidgetState] = {}
        self.elements: dict[str, tuple[str, object]] = {}
        self.fragments: dict[str, str] = {}  # widget id -> the fragment that drew it
        self.fragment = ""  # the fragment the next run asks for ("": the whole app)
        self.cache: dict[str, tuple[ForwardMsg, int]] = {}  # hash -> (message, run it was last used in)
        self.max_age, self.runs = 2, 0
        self.ws: ClientConnection | None = None

    def url(self) -> str:
        q = urlencode(self.query)
        return f"{self.base}/{self.page_path}" + (f"?{q}" if q else "")

    async def open(self) -> None:
        ws_url = "ws" + self.base[len("http") :] + STREAM_PATH
        self.ws = await connect(
            ws_url,
            subprotocols=[STREAM_SUBPROTOCOL],
            max_size=None,
            max_queue=4096,
            ping_interval=None,
            proxy=None,
            open_timeout=None,  # the student's --timeout bounds the handshake (a busy server is slow to accept)
            additional_headers=self.headers or None,
            **({} if self.user_agent is None else {"user_agent_header": self.user_agent}),
        )

    async def close(self) -> None:
        if self.ws is not None:
            await self.ws.close()

    def rerun_msg(self) -> BackMsg:
        msg = BackMsg()
        cs = msg.rerun_script
        cs.query_string = urlencode(self.query)
        if self.page_hash:
            cs.page_script_hash = self.page_hash
        else:  # the first run names the page by its path, as the frontend does
            cs.page_name = self.page_path
        cs.widget_states.widgets.extend(self.widgets.values())
        cs.widget_states.widgets.extend(self.triggers)
        if self.fragment:
            cs.fragment_id = self.fragment
        cs.cached_message_hashes.extend(self.cache)
        cs.context_info.url = self.url()
        cs.context_info.timezone, cs.context_info.locale = "UTC", "en-US"
        cs.context_info.color_scheme = "light"
        return msg

    async def rerun(self) -> Reply:
        """Ask for a run with the current query and widget states; the reply once it has finished."""
        await self.ask()
        return await self.reply()

    async def ask(self) -> None:
        """Send the rerun request (:meth:`rerun_msg`) without waiting for its reply."""
        msg = self.rerun_msg()
        self.triggers = []
        await self.ws.send(msg.SerializeToString())

    async def reply(self, finish: bool = True) -> Reply:
        """Read the next run's messages up to its ``script_finished``. With ``finish``, then do what the frontend
        does at the end of a run (:meth:`finish`); without, the caller does it later (a browser that sent
        another request before it read the end of this run)."""
        reply = Reply()
        while reply.status == "running":
            msg = self._resolve(ForwardMsg.FromString(await self.ws.recv()))
            if msg.WhichOneof("type") == "new_session":
                # a run starts (again, after st.rerun): only its messages count, but an exception the server
                # sent after the previous script_finished (a failed request) is kept
                reply = Reply(exceptions=reply.exceptions)
            self._read(msg, reply)
        if finish:
            self.finish(reply)
        return reply

    def finish(self, reply: Reply) -> None:
        """The end of ``reply``'s run, as the frontend reads it: widgets, fragments, the message cache's age."""
        self._end_run(reply, self.fragment)
        self.fragment = ""

    def _resolve(self, msg: ForwardMsg) -> ForwardMsg:
        if msg.WhichOneof("type") == "ref_hash":
            cached = self.cache.get(msg.ref_hash)
            if cached is None:
                raise BrokenReply(
                    f"server referred to message {msg.ref_hash}, which this tab does not hold (never had or dropped)"
                )
            full = ForwardMsg()
            full.CopyFrom(cached[0])
            full.metadata.CopyFrom(msg.metadata)
            self.cache[msg.ref_hash] = (cached[0], self.runs)
            return full
        if msg.metadata.cacheable and msg.hash:
            self.cache[msg.hash] = (msg, self.runs)
        return msg

    def _read(self, msg: ForwardMsg, reply: Reply) -> None:
        kind = msg.WhichOneof("type")
        if kind == "new_session":
            self.page_hash = msg.new_session.page_script_hash
            self.max_age = msg.new_session.config.max_cached_message_age or self.max_age
        elif kind == "navigation":  # with st.navigation the page's own hash, and its address, come here
            nav = msg.navigation
            self.page_hash = nav.page_script_hash
            page = next((p for p in nav.app_pages if p.page_script_hash == nav.page_script_hash), None)
            self.page_path = page.url_pathname if page is not None else self.page_path
        elif kind == "delta" and msg.delta.WhichOneof("type") == "new_element":
            read_element(msg.delta.new_element, reply, msg.delta.fragment_id)
        elif kind == "page_info_changed":
            reply.queries.append(msg.page_info_changed.query_string)
            self.query = dict(parse_qsl(msg.page_info_changed.query_string, keep_blank_values=True))
        elif kind == "session_event" and msg.session_event.HasField("script_compilation_exception"):
            reply.exceptions.append(msg.session_event.script_compilation_exception.message[:200])
        elif kind == "page_not_found":
            reply.errors.append(f"page not found: {msg.page_not_found.page_name}")
        elif kind == "script_finished" and msg.script_finished != ForwardMsg.FINISHED_EARLY_FOR_RERUN:
            ok = msg.script_finished in (
                ForwardMsg.FINISHED_SUCCESSFULLY,
                ForwardMsg.FINISHED_FRAGMENT_RUN_SUCCESSFULLY,
            )
            reply.status = "ok" if ok else "compile_error"
            reply.fragment_run = msg.script_finished == ForwardMsg.FINISHED_FRAGMENT_RUN_SUCCESSFULLY

    def _end_run(self, reply: Reply, fragment: str = "") -> None:
        """After a full run the frontend drops the widgets that run did not draw (after a fragment's run, the
        fragment's widgets it did not draw), and ages its message cache."""
        states = {}
        for wid, (kind, proto) in reply.widgets.items():
            keep = wid in self.widgets and not getattr(proto, "set_value", False)
            state = self.widgets[wid] if keep else widget_state(kind, proto)
            if state is not None:
                states[wid] = state
        elements, fragments = dict(reply.widgets), dict(reply.fragments)
        if fragment:  # the widgets outside the fragment stay as they are
            for wid, frag in self.fragments.items():
                if frag != fragment and wid not in elements and wid in self.elements:
                    elements[wid], fragments[wid] = self.elements[wid], frag
                    if wid in self.widgets:
                        states[wid] = self.widgets[wid]
        self.widgets, self.elements, self.fragments = states, elements, fragments
        self.runs += 1
        self.cache = {h: (m, used) for h, (m, used) in self.cache.items() if self.runs - used <= self.max_age}

    def slider(self, key: str):
        """The slider element with user key ``key`` drawn by the last run (ids end in ``-<key>``)."""
        for wid, (kind, proto) in self.elements.items():
            if wid.endswith("-" + key):
                if kind != "slider":
                    raise HallError(f"widget {key!r} is a {kind}; the hall moves sliders")
                return proto
        raise HallError(f"no widget {key!r} on page {self.page_path or '/'}")

    def element(self, key: str, kind: str):
        """The element of ``kind`` with user key ``key`` the last run drew, or None."""
        for wid, (k, proto) in self.elements.items():
            if k == kind and wid.endswith("-" + key):
                return proto
        return None

    def press(self, key: str) -> None:
        """Press button ``key`` in the next run (a trigger sent once), in its fragment's run if it has one."""
        proto = self.element(key, "button")
        if proto is None:
            raise HallError(f"no button {key!r} on page {self.page_path or '/'}")
        self.triggers.append(WidgetState(id=proto.id, trigger_value=True))
        self.fragment = self.fragments.get(proto.id, "")

    def type_number(self, key: str, value: float) -> None:
        """Type ``value`` into number input ``key`` (its state from the next run on)."""
        proto = self.element(key, "number_input")
        if proto is None:
            raise HallError(f"no number input {key!r} on page {self.page_path or '/'}")
        state = WidgetState(id=proto.id)
        if proto.data_type == NumberInput.INT:
            state.int_value = int(value)
        else:
            state.double_value = float(value)
        self.widgets[proto.id] = state

    def pick(self, key: str, option: str) -> None:
        """Pick ``option`` (its text as drawn) of radio ``key``."""
        proto = self.element(key, "radio")
        if proto is None:
            raise HallError(f"no radio {key!r} on page {self.page_path or '/'}")
        self.widgets[proto.id] = WidgetState(id=proto.id, string_value=option)

    def move(self, key: str, value: float | str) -> None:
        """Drag slider ``key`` to ``value``: its new state, and the address the frontend writes for it."""
        proto = self.slider(key)
        self.widgets[proto.id] = moved_state(proto, value)
        self.fragment = self.fragments.get(proto.id, "")
        if proto.query_param_key:
            self.query[proto.query_param_key] = url_text(value)


def read_element(el, reply: Reply, fragment: str = "") -> None:
    kind = el.WhichOneof("type")
    proto = getattr(el, kind)
    if kind in ("markdown", "alert"):
        reply.texts.append(proto.body)
    if kind == "exception":
        reply.exceptions.append(f"{proto.type}: {proto.message}"[:200])
    elif kind == "alert" and proto.format == Alert.ERROR:
        reply.errors.append(proto.body[:200])
    elif kind == "code" and proto.code_text.startswith(("http://", "https://")):
        reply.link = proto.code_text
    elif kind == "html" and (found := LINK_BOX.search(proto.body)):  # ui.frame.link_box: the share link, escaped
        reply.link = html.unescape(found.group(1))
    elif kind == "plotly_chart":
        reply.charts.append(proto.spec)
    elif kind == "bidi_component" and proto.component_name.endswith(LIVE_PLOT):  # ui.plotly_live: options, figure
        reply.charts.append(proto.bytes.split(b"\n", 1)[-1].decode())
    if kind in WIDGET_KINDS and proto.id:
        reply.widgets[proto.id] = (kind, proto)
        reply.fragments[proto.id] = fragment


# ---------------------------------------------------------------- does a reply carry the student's own numbers?
def same_value(got: str | None, want: str | None) -> bool:
    """URL values compared as numbers where both are (17 = 17.0), else as text; a select slider's
    option ("2 · GQA") matches the plain number the app writes into its links ("2")."""
    if got is None or want is None:
        return got is None and want is None
    try:
        return math.isclose(float(got), float(want), rel_tol=1e-9, abs_tol=1e-12)
    except ValueError:
        return got == want or want.split(" ")[0] == got


def judge(reply: Reply, expect: dict[str, str | None]) -> tuple[str, str]:
    """("ok" | "crosstalk" | "unverified", detail): does the reply's share link (and any address the
    server wrote) hold the student's expected values (``None``: the parameter is at its default, absent)?"""
    if reply.link is None:
        return "unverified", "the reply has no share link"
    got = dict(parse_qsl(urlsplit(reply.link).query, keep_blank_values=True))
    for key, want in expect.items():
        if not same_value(got.get(key), want):
            return "crosstalk", f"link has {key}={got.get(key)}, expected {want}"
    for q in reply.queries:
        seed = dict(parse_qsl(q)).get("seed")
        if seed is not None and not same_value(seed, expect.get("seed")):
            return "crosstalk", f"address written with seed={seed}, expected {expect.get('seed')}"
    return "ok", ""


# ---------------------------------------------------------------- the server's processes, from /proc
CLK_TCK = os.sysconf("SC_CLK_TCK")


def _proc_stat(pid: int) -> tuple[int, int, float] | None:
    """(parent pid, start time in ticks, CPU seconds incl. waited-for children) of ``pid``, None if gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    f = text.rsplit(")", 1)[1].split()
    return int(f[1]), int(f[19]), sum(int(x) for x in f[11:15]) / CLK_TCK


def _proc_kib(pid: int, field_name: str) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field_name + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


class ProcWatch:
    """CPU time and memory of some processes and all their descendants (a server and its workers)."""

    def __init__(self, pids: list[int]):
        self.roots = list(pids)
        self.cpu: dict[tuple[int, int], float] = {}  # (pid, start ticks) -> last CPU seconds seen
        self.peak_rss = 0
        self._tree: tuple[float, list[int]] = (-1.0, [])

    def recent_tree(self, max_age: float = 1.0) -> list[int]:
        """:meth:`tree`, at most ``max_age`` seconds old (a scan of /proc costs a few ms)."""
        if time.monotonic() - self._tree[0] > max_age:
            self._tree = (time.monotonic(), self.tree())
        return self._tree[1]

    def tree(self) -> list[int]:
        parents = {}
        for entry in os.listdir("/proc"):
            if entry.isdigit() and (st := _proc_stat(int(entry))) is not None:
                parents[int(entry)] = st[0]
        found, todo = [], [p for p in self.roots if p in parents]
        while todo:
            pid = todo.pop()
            found.append(pid)
            todo.extend(c for c, pp in parents.items() if pp == pid and c not in found)
        return found

    def cpu_seconds(self) -> float:
        """CPU seconds so far, summed over every process seen (one that exited keeps its last figure)."""
        for pid in self.tree():
            if (st := _proc_stat(pid)) is not None:
                self.cpu[(pid, st[1])] = st[2]
        return sum(self.cpu.values())

    def rss(self) -> int:
        value = sum(_proc_kib(p, "VmRSS") for p in self.recent_tree()) * 1024
        self.peak_rss = max(self.peak_rss, value)
        return value

    def hwm(self) -> int:
        return sum(_proc_kib(p, "VmHWM") for p in self.tree()) * 1024

    def _quiet(self, last: float, now: float) -> bool:
        return now - last <= 1.0 / CLK_TCK

    async def settled_cpu(self, quiet: float = 0.3, limit: float = 5.0) -> float:
        """CPU seconds once the server has gone quiet (its post-run work, e.g. a full GC, comes after
        ``script_finished``): at most one clock tick over ``quiet`` seconds, or after ``limit`` seconds."""
        last, end = self.cpu_seconds(), time.monotonic() + limit
        while time.monotonic() < end:
            await asyncio.sleep(quiet)
            now = self.cpu_seconds()
            if self._quiet(last, now):
                return now
            last = now
        return last

    def settled_cpu_sync(self, quiet: float = 0.3, limit: float = 5.0) -> float:
        """:meth:`settled_cpu` outside an event loop (next to Playwright's sync API)."""
        last, end = self.cpu_seconds(), time.monotonic() + limit
        while time.monotonic() < end:
            time.sleep(quiet)
            now = self.cpu_seconds()
            if self._quiet(last, now):
                return now
            last = now
        return last

    async def sample(self, every: float = 0.25) -> None:
        while True:
            self.rss()
            await asyncio.sleep(every)


# ---------------------------------------------------------------- the hall
@dataclass
class HallSpec:
    """What to run: ``url`` a Streamlit server, ``page`` a registry name, ``widget`` a slider's key."""

    url: str
    page: str = "heatmaps"
    widget: str | None = None
    students: int = 10
    moves: int = 5
    think: float = 1.0
    ramp: float = 2.0  # students open their links spread over this many seconds
    same_link: bool = False
    seed_base: int = 1  # student i opens ?seed=<seed_base + i> (everyone seed_base with same_link)
    query: str = ""  # more URL parameters for every student
    timeout: float = 120.0  # one run (first paint or one move)
    max_seconds: float = 600.0  # the whole hall
    plant_crosstalk: bool = False  # student 0 expects student 1's seed: must be flagged
    phones: float = 0.0  # the share of students whose browser says it is a phone (PHONE_UA), spread over the hall
    burst: int = 1  # presses a move: >1 sends them without waiting for replies (burst_walks)
    press_gap: float = 0.06  # seconds between those presses (the browser reads no reply meanwhile: it is busy)
    label: str = ""  # shown after the page in the table


@dataclass
class Tally:
    """Everything the students measured; filled by the students as they go (one event loop, no locks)."""

    first_paint: list[float] = field(default_factory=list)
    updates: list[float] = field(default_factory=list)
    exceptions: int = 0
    error_boxes: int = 0
    crosstalk: int = 0
    unverified: int = 0
    timeouts: int = 0
    disconnects: int = 0
    broken: int = 0  # replies a browser could not use: a reference to a message it dropped, no run of a last press
    runs: int = 0
    runs_after_paint: int = 0
    shared_views: int = 0  # replies whose charts were compared with another reply's for the same view
    notes: list[str] = field(default_factory=list)
    figures: dict[str, tuple[str, ...]] = field(default_factory=dict)  # link -> chart digests (same view)
    waiting: int = 0  # students not yet painted
    painted_at_cpu: float | None = None

    def note(self, text: str) -> None:
        if len(self.notes) < 20:
            self.notes.append(text)

    def judge(self, who: int, reply: Reply, expect: dict[str, str | None], phone: bool = False) -> None:
        self.runs += 1
        if self.painted_at_cpu is not None:
            self.runs_after_paint += 1
        self.exceptions += len(reply.exceptions)
        self.error_boxes += len(reply.errors)
        for text in reply.exceptions + reply.errors:
            self.note(f"student {who}: {text}")
        verdict, detail = judge(reply, expect)
        if verdict == "ok" and reply.charts and not reply.errors:
            view = urlsplit(reply.link).path + "?" + "&".join(sorted(urlsplit(reply.link).query.split("&")))
            view += " (phone)" if phone else ""  # a phone gets more charts for the same view: its one-head copies
            digests = tuple(hashlib.sha1(spec.encode()).hexdigest() for spec in reply.charts)
            seen = self.figures.setdefault(view, digests)
            self.shared_views += seen is not digests
            if seen != digests:
                verdict, detail = "crosstalk", f"charts differ from another student's for the same view {view}"
        if verdict == "crosstalk":
            self.crosstalk += 1
        elif verdict == "unverified":
            self.unverified += 1
        if detail:
            self.note(f"student {who}: {detail}")


def page_path(page: str) -> str:
    """The URL path of a registered page: the default page is served at ``/``."""
    from attn_core.views import PAGES

    for p in PAGES:
        if p.name == page:
            return "" if p.default else p.name
    raise HallError(f"no page {page!r}: choose one of {', '.join(p.name for p in PAGES)}")


#: A phone's User-Agent (Chrome on Android): the app sends a phone's browser the one-head copies of its grids
#: (``ui.responsive.phone_copies``), a desktop's the grids alone, so a hall with phones runs what a real class does.
PHONE_UA = (
    "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0 Mobile Safari/537.36"
)


def is_phone(spec: HallSpec, i: int) -> bool:
    """Whether student ``i`` has a phone: ``spec.phones`` of the students, spread evenly (0.25: every fourth)."""
    return int((i + 1) * spec.phones + 1e-9) > int(i * spec.phones + 1e-9)


def student_query(spec: HallSpec, i: int) -> tuple[dict[str, str], int]:
    seed = spec.seed_base if spec.same_link else spec.seed_base + i
    query = dict(parse_qsl(DEFAULT_QUERY.get(spec.page, ""), keep_blank_values=True))
    query |= dict(parse_qsl(spec.query, keep_blank_values=True))
    if seed:
        query["seed"] = str(seed)
    return query, seed


async def student(i: int, spec: HallSpec, tally: Tally, tabs: list[Tab], on_paint) -> None:
    """One student: open the link, wait for the first paint, move the slider ``spec.moves`` times."""
    await asyncio.sleep(spec.ramp * i / max(spec.students, 1))
    query, seed = student_query(spec, i)
    want_seed = seed + 1 if spec.plant_crosstalk and i == 0 else seed
    expect: dict[str, str | None] = {"seed": str(want_seed) if want_seed else None, spec.widget: query.get(spec.widget)}
    phone = is_phone(spec, i)
    tab = Tab(spec.url, page_path(spec.page), query, PHONE_UA if phone else None)
    tabs.append(tab)
    painted = False
    try:
        t0 = time.perf_counter()
        await asyncio.wait_for(tab.open(), spec.timeout)
        reply = await asyncio.wait_for(tab.rerun(), spec.timeout)
        tally.first_paint.append(time.perf_counter() - t0)
        tally.judge(i, reply, expect, phone)
        painted = True
        on_paint()
        proto = tab.slider(spec.widget)
        if spec.burst > 1:
            moves = burst_walks(proto, spec.moves, spec.burst)
        else:
            moves = [[value] for value in slider_moves(proto, spec.moves, offset=i)]
        for presses in moves:
            await asyncio.sleep(spec.think)
            expect[spec.widget] = url_text(presses[-1])
            t0 = time.perf_counter()
            if len(presses) > 1:
                reply = await asyncio.wait_for(press_burst(tab, spec, presses, tally, i, expect, phone), spec.timeout)
            else:
                tab.move(spec.widget, presses[0])
                reply = await asyncio.wait_for(tab.rerun(), spec.timeout)
            tally.updates.append(time.perf_counter() - t0)
            tally.judge(i, reply, expect, phone)
    except TimeoutError:
        tally.timeouts += 1
        tally.note(f"student {i}: no reply within {spec.timeout:g} s")
        await tab.close()
    except BrokenReply as exc:  # what a browser's websocket would have failed on: this student's page is stuck
        tally.broken += 1
        tally.note(f"student {i}: {exc}"[:200])
        await tab.close()
    except (ConnectionClosed, InvalidHandshake, OSError) as exc:
        tally.disconnects += 1
        tally.note(f"student {i}: disconnected ({type(exc).__name__}: {exc})"[:200])
    finally:
        if not painted:
            on_paint()


def burst_walks(proto, moves: int, n: int) -> list[list]:
    """The presses of each of ``moves`` moves with ``n`` quick presses each, as a student holding an arrow key: up
    ``n`` positions, back down, up again... over the first ``n + 1`` of :func:`slider_moves`' positions (never the
    default, so every end shows in the share link). The first move starts from the page's value, one press more.
    Each move ends on a value none of its other presses has (the run that shows it is the last press's), and
    walks back over views the browser saw a run or two before."""
    ladder = slider_moves(proto, n + 1, offset=0)
    if len(set(map(str, ladder))) < len(ladder):  # fewer positions than presses: the walk would repeat a value
        ladder = list(dict.fromkeys(ladder))
    if len(ladder) < 2:
        raise HallError(f"slider {proto.id!r} has too few positions for quick presses: --burst 1")
    up, down = ladder[1:], ladder[-2::-1]
    return [ladder if m == 0 else (down if m % 2 else up) for m in range(moves)]


async def press_burst(
    tab: Tab, spec: HallSpec, presses: list, tally: Tally, who: int, expect: dict, phone: bool
) -> Reply:
    """Send one rerun request for each of ``presses`` (:func:`burst_walks`) without waiting, as a browser does for a
    student pressing an arrow key quickly (the server merges presses that arrive while a run is in progress), then
    read the runs until the one that shows the last press's value. The runs before it are judged on the seed
    alone."""
    for k, value in enumerate(presses):
        if k:  # a run may end meanwhile; its end is read after the last press, as a browser busy drawing reads it
            await asyncio.sleep(spec.press_gap)
        tab.move(spec.widget, value)
        await tab.ask()
    fragment, last = tab.fragment, url_text(presses[-1])
    for _ in presses:
        reply = await tab.reply(finish=False)
        tab.fragment = fragment if reply.fragment_run else ""
        tab.finish(reply)
        got = dict(parse_qsl(urlsplit(reply.link or "").query, keep_blank_values=True)).get(spec.widget)
        if same_value(got, last):
            return reply
        tally.judge(who, reply, {"seed": expect["seed"]}, phone)
    raise BrokenReply(f"no run showed the last of {len(presses)} quick presses ({spec.widget}={last})")


async def run_students(spec: HallSpec, watch: ProcWatch, tally: Tally) -> tuple[list[Tab], bool]:
    """Start every student; the tabs (still open) and whether --max-seconds cut the hall short."""
    tabs: list[Tab] = []
    tally.waiting = spec.students

    def on_paint() -> None:  # the CPU split: first paints before this point, moves after
        tally.waiting -= 1
        if tally.waiting == 0:
            tally.painted_at_cpu = watch.cpu_seconds()

    tasks = [asyncio.create_task(student(i, spec, tally, tabs, on_paint)) for i in range(spec.students)]
    done, pending = await asyncio.wait(tasks, timeout=spec.max_seconds, return_when=asyncio.FIRST_EXCEPTION)
    failed = [t for t in done if t.exception() is not None]
    for t in pending:
        t.cancel()
    await asyncio.gather(*pending, return_exceptions=True)
    if failed:
        await asyncio.gather(*(t.close() for t in tabs), return_exceptions=True)
        raise failed[0].exception()
    return tabs, bool(pending) and not failed


@dataclass
class HallResult:
    spec: dict
    tally: dict
    seconds: float
    cpu_s: float
    cpu_s_after_paint: float | None
    rss_start: int
    rss_connected: int
    rss_peak: int
    hwm: int
    generator_cpu_s: float
    cut_short: bool
    pids: list[int]

    def summary(self) -> dict:
        t = self.tally
        moves_after = t["runs_after_paint"] if self.pids else 0
        runs = t["runs"] if self.pids else 0
        return {
            "update_p50": pct(t["updates"], 50),
            "update_p95": pct(t["updates"], 95),
            "update_max": max(t["updates"], default=None),
            "first_paint_p50": pct(t["first_paint"], 50),
            "first_paint_p95": pct(t["first_paint"], 95),
            "cpu_ms_per_run": 1000 * self.cpu_s / runs if runs else None,
            "cpu_ms_per_move": 1000 * self.cpu_s_after_paint / moves_after
            if moves_after and self.cpu_s_after_paint is not None
            else None,
            "rss_per_session": (self.rss_connected - self.rss_start) / self.spec["students"],
        }


def pct(values: list[float], q: float) -> float | None:
    """The ``q``-th percentile, nearest rank on the sorted values (None for no values)."""
    if not values:
        return None
    s = sorted(values)
    return s[min(len(s) - 1, max(0, math.ceil(q / 100 * len(s)) - 1))]


async def run_hall(spec: HallSpec, pids: list[int]) -> HallResult:
    """Run the hall against ``spec.url`` while watching the processes ``pids`` (and their children)."""
    spec.widget = spec.widget or DEFAULT_WIDGET.get(spec.page)
    if not spec.widget:
        raise HallError(f"page {spec.page!r} has no default widget: pass --widget")
    watch, tally = ProcWatch(pids), Tally()
    rss_start, cpu0, gen0, t0 = watch.rss(), await watch.settled_cpu(), time.process_time(), time.perf_counter()
    sampler = asyncio.create_task(watch.sample())
    try:
        tabs, cut = await run_students(spec, watch, tally)
        seconds = time.perf_counter() - t0
        cpu1 = await watch.settled_cpu()
        rss_connected = watch.rss()
    finally:
        sampler.cancel()
    await asyncio.gather(*(t.close() for t in tabs), return_exceptions=True)
    after = None if tally.painted_at_cpu is None else cpu1 - tally.painted_at_cpu
    tally_dict = {k: v for k, v in asdict(tally).items() if k not in ("figures", "waiting", "painted_at_cpu")}
    return HallResult(
        spec=asdict(spec),
        tally=tally_dict,
        seconds=seconds,
        cpu_s=cpu1 - cpu0,
        cpu_s_after_paint=after,
        rss_start=rss_start,
        rss_connected=rss_connected,
        rss_peak=watch.peak_rss,
        hwm=watch.hwm(),
        generator_cpu_s=time.process_time() - gen0,
        cut_short=cut,
        pids=list(pids),
    )


async def warm_up(url: str, page: str, widget: str | None, timeout: float) -> None:
    """One visit (seed 0) that opens the page and moves its slider once: imports and caches are warm."""
    tab = Tab(url, page_path(page), dict(parse_qsl(DEFAULT_QUERY.get(page, ""))))
    try:
        await asyncio.wait_for(tab.open(), timeout)
        await asyncio.wait_for(tab.rerun(), timeout)
        key = widget or DEFAULT_WIDGET.get(page)
        if key:
            tab.move(key, slider_moves(tab.slider(key), 1, offset=0)[0])
            await asyncio.wait_for(tab.rerun(), timeout)
    finally:
        await tab.close()


# ---------------------------------------------------------------- a real browser, for the one-student check
def browser_cpu_per_move(url: str, page: str, widget: str, moves: int, watch: ProcWatch) -> list[float]:
    """Server CPU seconds of each slider move made by Debian's chromium (Playwright), settled after each.

    Opens ``page`` at ``?seed=99``, focuses the slider ``widget`` and presses ArrowRight ``moves`` times,
    each time waiting until the share link has changed and the app is idle, then until the server is quiet.
    """
    from playwright.sync_api import sync_playwright

    from harness import CHROMIUM_ARGS, IDLE, chromium_path

    exe = chromium_path()
    if exe is None:
        raise HallError("--browser-check needs Debian's chromium: apt-get install chromium (or make browser)")
    link_js = "() => (document.querySelector('.attn-link code') || {}).textContent || ''"
    costs = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=exe, args=CHROMIUM_ARGS)
        tab = browser.new_context(viewport={"width": 1440, "height": 1000}).new_page()
        tab.set_default_timeout(180_000)
        tab.goto(f"{url}/{page_path(page)}?seed=99")
        tab.wait_for_selector(IDLE)
        tab.wait_for_function(f"() => {link_js}().includes('seed=99')")
        for _ in range(moves):
            watch.settled_cpu_sync()
            before, cpu0 = tab.evaluate(link_js), watch.cpu_seconds()
            thumb = tab.locator(f".st-key-{widget} input[type='range']").first
            thumb.focus()
            thumb.press("ArrowRight")
            tab.wait_for_function(f"b => {link_js}() !== b", arg=before)
            tab.wait_for_selector(IDLE)
            costs.append(watch.settled_cpu_sync() - cpu0)
        browser.close()
    return costs


# ---------------------------------------------------------------- report
def fmt_s(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f}"


def table(results: list[HallResult]) -> str:
    head = (
        "| page | students | moves | update p50 / p95 / max (s) | first paint p50 / p95 (s) | errors | cross-talk "
        "| timeouts | disconnects | CPU per run | CPU per move | peak RSS | RSS per session |"
    )
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for r in results:
        s, t, spec = r.summary(), r.tally, r.spec
        per_run = "-" if s["cpu_ms_per_run"] is None else f"{s['cpu_ms_per_run']:.0f} ms"
        per_move = "-" if s["cpu_ms_per_move"] is None else f"{s['cpu_ms_per_move']:.0f} ms"
        tags = [tag for tag in ("same link" if spec["same_link"] else "", spec["label"]) if tag]
        lines.append(
            f"| {spec['page']}{''.join(f' ({tag})' for tag in tags)} | {spec['students']} | {spec['moves']} "
            f"| {fmt_s(s['update_p50'])} / {fmt_s(s['update_p95'])} / {fmt_s(s['update_max'])} "
            f"| {fmt_s(s['first_paint_p50'])} / {fmt_s(s['first_paint_p95'])} "
            f"| {t['exceptions'] + t['error_boxes'] + t['broken']} | {t['crosstalk']} | {t['timeouts']} | {t['disconnects']} "
            f"| {per_run} | {per_move} | {r.hwm / 2**20:.0f} MiB | {s['rss_per_session'] / 2**20:.1f} MiB |"
        )
    return "\n".join(lines)


def details(r: HallResult) -> str:
    t, spec = r.tally, r.spec
    out = [
        f"{spec['students']} students on {spec['page']} moving {spec['widget']} {spec['moves']} times, think "
        f"{spec['think']:g} s, opened over {spec['ramp']:g} s: {t['runs']} runs in {r.seconds:.1f} s; server CPU "
        f"{r.cpu_s:.2f} s; RSS {r.rss_start / 2**20:.0f} MiB before, {r.rss_connected / 2**20:.0f} MiB with every "
        f"student connected, peak sampled {r.rss_peak / 2**20:.0f} MiB, VmHWM {r.hwm / 2**20:.0f} MiB; "
        f"this generator used {r.generator_cpu_s:.2f} s of CPU",
        f"exceptions {t['exceptions']}, error boxes {t['error_boxes']}, replies a browser could not use "
        f"{t['broken']}, replies without a share link "
        f"{t['unverified']}, replies whose charts matched an earlier reply for the same view {t['shared_views']}",
    ]
    if r.cut_short:
        out.append(f"CUT SHORT: --max-seconds {spec['max_seconds']:g} ended the hall before every student finished")
    out += [f"  {n}" for n in t["notes"]]
    return "\n".join(out)


def failed(r: HallResult) -> bool:
    t = r.tally
    return (
        bool(t["exceptions"] or t["error_boxes"] or t["broken"] or t["crosstalk"] or t["timeouts"] or t["disconnects"])
        or r.cut_short
    )


# ---------------------------------------------------------------- command line
def bounded(kind, lo: float, hi: float):
    def parse(text: str):
        value = kind(text)
        if not lo <= value <= hi:
            raise argparse.ArgumentTypeError(f"{text} is outside {lo:g}..{hi:g}")
        return value

    return parse


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--students", type=bounded(int, 1, MAX_STUDENTS), default=10)
    ap.add_argument("--moves", type=bounded(int, 0, MAX_MOVES), default=5, help="slider moves per student")
    ap.add_argument(
        "--think", type=bounded(float, 0, 60), default=1.0, help="seconds between a reply and the next move"
    )
    ap.add_argument("--page", default="heatmaps", help="a page of attn_core.views.PAGES")
    ap.add_argument("--widget", help="the slider to move (its key); default per page: " + str(DEFAULT_WIDGET))
    ap.add_argument("--same-link", action="store_true", help="everyone opens the same URL (the whole class)")
    ap.add_argument("--ramp", type=bounded(float, 0, 600), default=2.0, help="students open over this many seconds")
    ap.add_argument("--seed-base", type=bounded(int, 0, 2**31 - 1 - MAX_STUDENTS), default=1)
    ap.add_argument("--query", default="", help="more URL parameters for everyone, e.g. 'n_heads=16&mask=causal'")
    ap.add_argument("--url", help="an external server (default: start one here with harness.start_server)")
    ap.add_argument("--pids", default="", help="comma-separated pids of the server processes to watch (with --url)")
    ap.add_argument("--allow-remote", action="store_true", help="allow a --url that is not on this machine")
    ap.add_argument(
        "--server-env", action="append", default=[], metavar="KEY=VALUE", help="env of a server started here"
    )
    ap.add_argument("--timeout", type=bounded(float, 1, 600), default=120.0, help="seconds for one reply")
    ap.add_argument("--max-seconds", type=bounded(float, 1, MAX_SECONDS), default=600.0, help="the whole hall")
    ap.add_argument("--no-warmup", action="store_true", help="skip the unmeasured first visit")
    ap.add_argument(
        "--phones", type=bounded(float, 0, 1), default=0.0, help="share of students on phones (their User-Agent)"
    )
    ap.add_argument(
        "--burst",
        type=bounded(int, 1, 10),
        default=1,
        help="presses a move, sent without waiting (back and forth, then the move's value), as quick key presses",
    )
    ap.add_argument(
        "--press-gap", type=bounded(float, 0, 2), default=0.06, help="seconds between the presses of a --burst"
    )
    ap.add_argument("--plant-crosstalk", action="store_true", help="student 0 expects student 1's seed (self-test)")
    ap.add_argument("--browser-check", action="store_true", help="also move the slider in chromium: CPU per move")
    ap.add_argument("--json", type=Path, help="write the results here")
    args = ap.parse_args(argv)
    if not all(p.strip().isdigit() for p in args.pids.split(",") if p.strip()):
        ap.error("--pids takes process ids separated by commas, e.g. 1234,1235")
    if args.pids and not args.url:
        ap.error("--pids goes with --url (a server started here is watched anyway)")
    if any("=" not in kv for kv in args.server_env):
        ap.error("--server-env takes KEY=VALUE, e.g. STREAMLIT_RUNNER_POST_SCRIPT_GC=false")
    return args


def check_loopback(url: str, allow_remote: bool) -> None:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise HallError(f"--url must be http://host:port, not {url!r}")
    host = parts.hostname
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if not loopback and not allow_remote:
        raise HallError(f"{host} is not this machine: the hall only loads loopback servers unless --allow-remote")


def spec_from(args: argparse.Namespace, url: str) -> HallSpec:
    return HallSpec(
        url=url,
        page=args.page,
        widget=args.widget,
        students=args.students,
        moves=args.moves,
        think=args.think,
        ramp=args.ramp,
        same_link=args.same_link,
        seed_base=args.seed_base,
        query=args.query,
        timeout=args.timeout,
        max_seconds=args.max_seconds,
        plant_crosstalk=args.plant_crosstalk,
        phones=args.phones,
        burst=args.burst,
        press_gap=args.press_gap,
    )


def run(args: argparse.Namespace, url: str, pids: list[int]) -> tuple[list[HallResult], list[float] | None]:
    """The hall as asked; with --browser-check also chromium's moves and one simulated student's, after it."""
    spec = spec_from(args, url)
    page_path(spec.page)  # an unknown page stops here, before any load
    if not args.no_warmup:
        asyncio.run(warm_up(url, spec.page, spec.widget, spec.timeout))
    results = [asyncio.run(run_hall(spec, pids))]
    if not args.browser_check:
        return results, None
    moves = max(args.moves, 1)
    costs = browser_cpu_per_move(url, spec.page, results[0].spec["widget"], moves, ProcWatch(pids))
    one = spec_from(args, url)
    one.students, one.moves, one.same_link, one.seed_base, one.label = 1, moves, False, 1000, "1 student, check"
    results.append(asyncio.run(run_hall(one, pids)))
    return results, costs


def browser_line(results: list[HallResult], costs: list[float]) -> str:
    one = results[-1]
    hall_ms = one.summary()["cpu_ms_per_move"]
    return (
        f"browser check on {one.spec['page']} ({one.spec['widget']}): server CPU per move "
        f"{statistics.median(costs) * 1000:.0f} ms with chromium (median of {len(costs)}: "
        f"{', '.join(f'{c * 1000:.0f}' for c in costs)} ms), "
        f"{'-' if hall_ms is None else f'{hall_ms:.0f}'} ms with one simulated student (last row)"
    )


def start(args: argparse.Namespace):
    """The server to load: ``(process started here or None, url, pids to watch)``."""
    if args.url:
        check_loopback(args.url, args.allow_remote)
        return None, args.url.rstrip("/"), [int(p) for p in args.pids.split(",") if p.strip()]
    from harness import start_server

    proc, url = start_server(dict(kv.split("=", 1) for kv in args.server_env))
    return proc, url, [proc.pid]


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if "--lecture" in argv:  # a class following a lecturer in a live lecture room (bench/lecture_room.py)
        try:
            from bench.lecture_room import main as lecture
        except ImportError:  # run as a script: its folder comes first on the path
            from lecture_room import main as lecture  # type: ignore[no-redef]
        return lecture([a for a in argv if a != "--lecture"])
    args = parse_args(argv)
    proc = None
    try:
        proc, url, pids = start(args)
        results, costs = run(args, url, pids)
    except HallError as exc:
        print(f"hall: {exc}", file=sys.stderr)
        return 2
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(15)
    head = f"# {os.cpu_count()} CPU cores, load average {os.getloadavg()[0]:.1f}; server {url}, pids {pids or '-'}"
    phones = sum(is_phone(spec_from(args, url), i) for i in range(args.students))
    head += f"; {phones} of {args.students} students on phones" if phones else ""
    print(head + ("" if proc is None else f" (started here, env {args.server_env or '-'})"))
    print(table(results))
    if costs is not None:
        print(browser_line(results, costs))
    sys.stdout.flush()
    for r in results:
        print(details(r), file=sys.stderr)
    if args.json:
        halls = [{**asdict(r), "summary": r.summary()} for r in results]
        out = {"cores": os.cpu_count(), "load_average": os.getloadavg()[0], "url": url, "pids": pids}
        out.update(server_env=args.server_env, halls=halls, browser_cpu_s_per_move=costs)
        args.json.write_text(json.dumps(out, indent=1))
    return 1 if any(failed(r) for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
