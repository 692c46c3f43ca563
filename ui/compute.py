"""Cached computations and live runs: the one way pages compute.

:func:`compute` runs a view model's step (``fn(*args, device=..., **kwargs)``) once per
distinct arguments for the whole server (``st.cache_data``), keyed by a digest of the
arguments, so a frozen spec holding 8192 tokens costs one hash, not Streamlit's
element-by-element hashing. Results are CPU numpy (the steps return them that way),
copied for every caller. A CUDA out-of-memory error reruns the step on the CPU, and the
page says so on every run that shows that result.

:func:`live_run` drives a step generator (a live decode, later sweeps, training and
generation) across reruns: :func:`live_state` (the run so far, stale when a parameter
changed), :func:`live_buttons` (start and stop), :func:`live_run` (the loop, with
progress and throttled frames). A server computes at most :func:`live_slots` live runs at
once (:class:`RunSlots`, first come first served): in a lecture hall where a class presses
Start together, the runs take turns at full speed, each waiting page says how many runs are
ahead of it, and every other student's page stays responsive.
"""

from __future__ import annotations

import hashlib
import math
import os
import pickle
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import streamlit as st
import torch

from attn_core.runtime import guard
from attn_core.runtime.config import ConfigError
from attn_core.runtime.guard import run_with_fallback

from .charts import Drawn, drawn
from .core import count, device, style, t
from .output import show_error
from .streamlit_compat import end_run, rerun_waiting

MAX_ENTRIES = 96  # results kept per server (the largest, 64 pooled heads at 8192 tokens, are about 1 MB)


def digest(*parts: Any) -> str:
    """A short, stable digest of picklable values (frozen specs, tuples of tokens, numbers, strings)."""
    return hashlib.blake2b(pickle.dumps(parts, protocol=5), digest_size=16).hexdigest()


def _name(fn: Callable[..., Any]) -> str:
    return f"{fn.__module__}.{fn.__qualname__}"


@st.cache_data(max_entries=MAX_ENTRIES, show_spinner=False)
def _cached(name: str, key: str, device_name: str, _fn: Callable[..., Any], _args: tuple, _kwargs: dict) -> tuple:
    """``(result, device used)`` of ``_fn(*_args, device=..., **_kwargs)``; cached by ``(name, key, device_name)``."""
    return run_with_fallback(lambda dev: _fn(*_args, device=dev, **_kwargs), device_name)


def compute(fn: Callable[..., Any], *args: Any, given: dict | None = None, **kwargs: Any) -> Any:
    """``fn(*args, device=<the session's device>, **kwargs)``, cached for the server; None after a shown error.

    ``fn`` must take a ``device`` keyword and return CPU values. Arguments must be
    picklable (frozen dataclasses, tuples, numbers, strings). A
    :class:`~attn_core.runtime.config.ConfigError` is shown as a message (in the user's
    language) and gives None, so the page can stop or go on without that result.
    ``given``: keyword arguments passed to ``fn`` but left out of the cache key, for
    values that ``args`` determine (a large intermediate result from :func:`shared`).
    """
    dev = device()
    try:
        key = digest(args, kwargs)
        result, used = _cached(_name(fn), key, dev, fn, args, {**kwargs, **(given or {})})
    except ConfigError as exc:
        show_error(exc)
        return None
    except torch.OutOfMemoryError:  # no CPU retry helped: a step bound to a model on the device, or both full
        failed = True
    else:
        failed = False
    if failed:
        guard.free_cuda()  # out of the except block: the failed frames are gone
        show_error(guard.step_out_of_memory(dev))
        return None
    if dev.startswith("cuda") and not str(used).startswith("cuda"):
        st.warning(t("ui.oom_fallback"), icon="⚠️")
    return result


MAX_SHARED = 8  # intermediate results kept per server (the largest, the saturation sweep's scores, ≤ 48 MiB)


@st.cache_resource(max_entries=MAX_SHARED, show_spinner=False)
def _shared(name: str, key: str, device_name: str, _fn: Callable[..., Any], _args: tuple, _given: dict) -> Any:
    return run_with_fallback(lambda dev: _fn(*_args, device=dev, **_given), device_name)[0]


SESSION_SHARED_BYTES = 16 * 2**20  # a session keeps its own last result of each shared step up to this size


def shared(fn: Callable[..., Any], *args: Any, given: dict | None = None) -> Any:
    """``fn(*args, device=..., **given)`` computed once per server and shared read-only by every session (no copy
    per caller, unlike :func:`compute`). For a large intermediate result that cached
    steps read through ``compute(..., given=...)``: the saturation sweep's scores, which every τ reuses.
    ``given``, as for :func:`compute`: keyword arguments left out of the cache key, which ``args`` determine.
    A :class:`~attn_core.runtime.config.ConfigError` gives None without a message: the step that reads the
    result gets the same arguments, raises it again and shows it once.

    The session also keeps its own last result of each ``fn`` (up to :data:`SESSION_SHARED_BYTES`, the same
    object, dropped when the session opens another page): a class whose students each have their own seed
    asks for more results than the server keeps (:data:`MAX_SHARED`), and each τ move drew and measured its
    sample again (saturation's hall: ~330 ms of CPU a run)."""
    name, key, dev = _name(fn), digest(args), device()
    page = st.session_state.get("_page")
    kept = st.session_state.get("_shared")
    if kept is None or kept.get("page") != page:
        kept = st.session_state["_shared"] = {"page": page}
    hit = kept.get(name)
    if hit is not None and hit[0] == (key, dev):
        return hit[1]
    try:
        value = _shared(name, key, dev, fn, args, given or {})
    except ConfigError:
        return None
    except torch.OutOfMemoryError:  # as a ConfigError: the step that reads the result says what to lower
        oom = True
    else:
        oom = False
    if oom:
        guard.free_cuda()
        return None
    if value is not None and _nbytes(value) <= SESSION_SHARED_BYTES:
        kept[name] = ((key, dev), value)
    else:
        kept.pop(name, None)
    return value


def _nbytes(value: Any) -> int:
    """The bytes of the arrays ``value`` holds (its ``nbytes``, or its items' for a tuple or list); more than
    :data:`SESSION_SHARED_BYTES` when it does not say."""
    if isinstance(value, (tuple, list)):
        return sum(_nbytes(v) for v in value)
    n = getattr(value, "nbytes", None)
    return int(n) if hasattr(n, "__index__") else SESSION_SHARED_BYTES + 1  # an int, or a numpy integer


#: Serialised charts kept per server, by size: the largest (a 64-head grid, a step view) take about 2 MB, a line
#: chart 20-60 kB. A count limit (64 charts) kept too few of the small ones: a class on one link moving τ on the
#: saturation page asks for five charts per position, and the charts built for the first students were gone
#: before the others asked.
VIEW_BYTES = 128 * 2**20


@dataclass
class ViewStore:
    """Serialised charts by key, the least recently used dropped first once they hold more than ``limit`` bytes
    (counted by :func:`view_bytes`). Thread-safe: every session's script runs in its own thread; two sessions
    that miss the same chart at once both build it, and the first one stored is kept."""

    limit: int
    used: int = 0
    _items: OrderedDict = field(default_factory=OrderedDict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def get(self, key: Any) -> Any:
        with self._lock:
            hit = self._items.get(key)
            if hit is not None:
                self._items.move_to_end(key)
            return None if hit is None else hit[0]

    def put(self, key: Any, value: Any, size: int) -> None:
        if size > self.limit:
            return
        with self._lock:
            if key in self._items:
                return
            self._items[key] = (value, size)
            self.used += size
            while self.used > self.limit:
                _, (_, gone) = self._items.popitem(last=False)
                self.used -= gone

    def __len__(self) -> int:
        return len(self._items)


@st.cache_resource(show_spinner=False)
def view_store() -> ViewStore:
    """The server's :class:`ViewStore` (one per process; cleared with Streamlit's resource caches)."""
    return ViewStore(VIEW_BYTES)


def view_bytes(built: Any) -> int:
    """About the memory a cached chart (a :class:`~ui.charts.Drawn`, or a list of them) holds: its spec's JSON
    three times (the spec, and the browser's copies for the light and the dark scheme it may make) and the
    numbers behind it (``source``, a DataFrame)."""
    import orjson

    if isinstance(built, (list, tuple)):
        return sum(view_bytes(v) for v in built)
    try:
        spec = len(orjson.dumps(built.spec, option=orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY))
    except TypeError:  # not plain JSON: count it as one of the largest
        spec = 2 * 2**20
    usage = getattr(built.source, "memory_usage", None)
    return 3 * spec + (int(usage(index=True, deep=False).sum()) if callable(usage) else 0)


def _frozen(built: Any, style_: Any) -> Any:
    if isinstance(built, (list, tuple)):
        return type(built)(_frozen(v, style_) for v in built)
    return drawn(built, style_)


def view(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Drawn | list[Drawn]:
    """``fn(*args, **kwargs)`` (a view model's figure builder: a View, or a list of them), serialised once
    per server for the session's style (:class:`~ui.charts.Drawn`), kept in the server's :class:`ViewStore`.

    The same chart for the next student, or for this one moving a slider back, costs a digest of the
    arguments instead of building the figure and its JSON again. The cached charts are shared and
    read-only. Arguments must be picklable (results, frozen params, tuples, numbers, strings).
    """
    s = style()
    key = (_name(fn), digest(args, kwargs), s)
    store = view_store()
    built = store.get(key)
    if built is None:
        built = _frozen(fn(*args, **kwargs), s)
        store.put(key, built, view_bytes(built))
    return built


# ---------------------------------------------------------------- live runs
LIVE_STATUSES = ("idle", "running", "done", "stopped", "error")


@dataclass
class LiveRun:
    """The state of one live run, kept in ``st.session_state``: its parameters, the steps so far, its status.

    ``status``: one of :data:`LIVE_STATUSES` (``error`` then holds the exception). ``stale`` is True
    when the page's parameters no longer match ``params`` (the run's own, which is what its results
    show: draw them from ``params``, not from the page's current settings).
    """

    params: Any = None
    steps: list[Any] = field(default_factory=list)
    status: str = "idle"
    error: Exception | None = None
    stale: bool = False
    waited_s: float = 0.0  # how long the run waited for a free slot (:class:`RunSlots`) before it started


@dataclass
class RunSlots:
    """The live runs one server computes at once: ``size`` at a time, the others wait in arrival order.

    A run takes a ticket (:meth:`join`), waits for its turn (:meth:`start`: the first ticket, with a free
    slot), and gives the slot back when it ends (:meth:`done`); a run that stops waiting (its page reran)
    leaves the queue (:meth:`leave`). Thread-safe: every session's script runs in its own thread.
    """

    size: int
    _cond: threading.Condition = field(default_factory=threading.Condition, repr=False)
    _queue: list[object] = field(default_factory=list, repr=False)
    _running: int = 0

    def join(self) -> object:
        ticket = object()
        with self._cond:
            self._queue.append(ticket)
        return ticket

    def ahead(self, ticket: object) -> int:
        """Runs before ``ticket``'s: those computing and those that joined the queue earlier."""
        with self._cond:
            return self._running + (self._queue.index(ticket) if ticket in self._queue else 0)

    def start(self, ticket: object, timeout: float) -> bool:
        """Wait at most ``timeout`` s for ``ticket``'s turn; True once it holds a slot (then :meth:`done`)."""
        end = time.monotonic() + timeout
        with self._cond:
            while not (self._queue and self._queue[0] is ticket and self._running < self.size):
                left = end - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(left)
            self._queue.pop(0)
            self._running += 1
            self._cond.notify_all()
            return True

    def leave(self, ticket: object) -> None:
        with self._cond:
            if ticket in self._queue:
                self._queue.remove(ticket)
                self._cond.notify_all()

    def done(self) -> None:
        with self._cond:
            self._running -= 1
            self._cond.notify_all()


def live_slots(dev: str = "cpu") -> int:
    """Live runs a server computes at once on ``dev``: ``ATTN_LIVE_RUNS`` when set (a whole number ≥ 1); on a
    GPU one, since what a run measures there is the whole device's (``torch.cuda.memory_allocated`` counts every
    session's tensors, ``synchronize`` waits for every session's kernels), so two runs would count each other's
    memory and time; else the CPU cores this process may use over torch's threads per run, at least 2: one run's
    Python steps (drawing, bookkeeping) leave the cores to another's torch. Measured on this 2-core machine
    (``bench/live_turns.py``, 4 lab runs pressed at once): 2 at a time ended them after 7.3 / 10.4 / 13.3 s
    (first / median / last), 1 at a time 5.0 / 10.8 / 16.3 s, all 4 at once 14.1 / 14.2 / 14.3 s."""
    raw = os.environ.get("ATTN_LIVE_RUNS", "").strip()
    if raw.isdigit() and int(raw) >= 1:
        return int(raw)
    if dev.startswith("cuda"):
        return 1
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return max(2, cores // max(1, torch.get_num_threads()))


@st.cache_resource(show_spinner=False)
def run_slots(size: int, pool: str) -> RunSlots:
    """The server's one :class:`RunSlots` of ``size`` for the runs of ``pool`` (``cpu``, or a GPU's runs, which
    queue apart: shared by every session)."""
    return RunSlots(size)


def slots_for(dev: str) -> RunSlots:
    """The server's :class:`RunSlots` that a live run on ``dev`` queues in (``run_slots`` is cached by its
    arguments as given, so every caller goes through here)."""
    return run_slots(live_slots(dev), "gpu" if dev.startswith("cuda") else "cpu")


WAIT_POLL_S = 0.5  # a waiting page updates its message (and notices a Stop) this often


def _end_if_rerun_waits() -> None:
    """End the script here when a rerun waits for it. A page runs as a fragment (app.py), and Streamlit lets a
    fragment's rerun (Stop, or any control of the page) wait for the run in progress instead of interrupting it:
    a live run asks at each step and while it queues, and stops as an interrupted run did (the rerun then runs).
    Reads Streamlit's pending request (:func:`ui.streamlit_compat.rerun_waiting`; ``tests/e2e/test_live_turns.py``
    and the lab's and the live decode's browser tests fail if it stops working)."""
    if rerun_waiting():
        end_run()


def _wait_turn(slots: RunSlots, bar: Any) -> float:
    """Wait for a slot in ``slots``, saying in ``bar`` how many runs are ahead; returns the seconds waited.
    A rerun while waiting (Stop, or any widget) ends the script (:func:`_end_if_rerun_waits`, or Streamlit's
    interruption outside a fragment): the ticket leaves the queue."""
    ticket, t0, timeout = slots.join(), time.perf_counter(), 0.0
    try:
        while not slots.start(ticket, timeout):  # at once when a slot is free: no message then
            _end_if_rerun_waits()
            timeout, waited = WAIT_POLL_S, time.perf_counter() - t0
            ahead, n_runs = count(slots.ahead(ticket), "run"), count(slots.size, "run")
            bar.info(t("ui.live_wait", ahead=ahead, n_runs=n_runs, s=int(waited)), icon="⏳")
    except BaseException:
        slots.leave(ticket)
        raise
    return time.perf_counter() - t0


def live_state(key: str, params: Any) -> LiveRun:
    """The run kept under ``key`` (a new idle one the first time), marked stale if ``params`` changed.

    A run still marked ``running`` was cut short by a rerun (the Stop button, or any other widget)
    before it could say so: it reads ``stopped``, and keeps the steps it made.
    """
    run = st.session_state.get(key)
    if not isinstance(run, LiveRun):
        run = LiveRun()
        st.session_state[key] = run
    if run.status == "running":
        run.status = "stopped"
    run.stale = run.params is not None and run.params != params
    return run


def live_buttons(key: str, start_key: str, stop_key: str) -> bool:
    """Start and Stop buttons side by side (widget keys ``<key>_run`` and ``<key>_stop``, labels the catalog's
    ``start_key`` and ``stop_key``); True on the run where Start was pressed.

    Stop is live only while a run goes on: pressing it reruns the script, which ends the run
    (:func:`live_run`) with what it made so far.
    """
    b1, b2, _ = st.columns([1, 1, 4])
    pressed = b1.button(t(start_key), key=f"{key}_run", type="primary", icon=":material/play_arrow:")
    b2.button(t(stop_key), key=f"{key}_stop", disabled=not pressed, icon=":material/stop:")
    return pressed


def live_status(run: LiveRun, slot: Any, press_key: str) -> bool:
    """Say in ``slot`` (an ``st.empty``) what a live run says before its results: the catalog's ``press_key`` while
    it has not run, its error after a failure. True when it ran or was stopped: the page shows what it made."""
    if run.status == "idle":
        slot.caption(t(press_key))
        return False
    if run.status == "error":
        with slot.container():
            show_error(run.error)
        return False
    return True


def live_run(
    key: str,
    params: Any,
    steps: Callable[[], Iterator[Any]],
    frame: Callable[[LiveRun], None] | None = None,
    *,
    progress: Callable[[LiveRun], tuple[float, str]] | None = None,
    bar: Any = None,
    every_s: float = 0.5,
) -> LiveRun:
    """Run ``steps()`` now (the page's Start was pressed), keeping each step in the run under ``key``.

    ``frame(run)`` draws the run so far, after the first step and then at most every ``every_s``
    seconds (a chart redrawn at every step would flicker and slow the run); the page draws the
    finished run itself, as on any later rerun. ``progress(run)`` gives ``(fraction, text)`` for a
    progress bar in ``bar`` (an ``st.empty()``; default: here), before the first step and after each;
    the bar goes when the run ends. A :class:`~attn_core.runtime.config.ConfigError` from the generator
    ends the run with status ``error`` (the page shows ``run.error``), keeping the steps made so
    far. A rerun (Stop, or any widget) ends the loop; the run then reads ``stopped``. The run first waits
    for one of the server's :func:`live_slots` (``bar`` says how many runs are ahead meanwhile) and gives it
    back when it ends, however it ends.
    """
    run = LiveRun(params=params, status="running")
    st.session_state[key] = run
    bar = bar if bar is not None else st.empty()
    slots = slots_for(device())
    run.waited_s = _wait_turn(slots, bar)
    try:
        _run_steps(run, steps, frame, progress, bar, every_s)
    finally:
        slots.done()
    bar.empty()
    return run


def _run_steps(
    run: LiveRun,
    steps: Callable[[], Iterator[Any]],
    frame: Callable[[LiveRun], None] | None,
    progress: Callable[[LiveRun], tuple[float, str]] | None,
    bar: Any,
    every_s: float,
) -> None:
    """:func:`live_run`'s loop, once the run holds a slot."""
    if progress is not None:
        bar.progress(*progress(run))
    gen = steps()
    last = -math.inf
    oom = False
    try:
        for step in gen:
            run.steps.append(step)
            _end_if_rerun_waits()
            if progress is not None:
                bar.progress(*progress(run))
            now = time.perf_counter()
            if frame is not None and now - last >= every_s:
                frame(run)
                last = now
        run.status = "done"
    except ConfigError as exc:
        run.status, run.error = "error", exc
    except torch.OutOfMemoryError:  # kept without its traceback, which held the run's tensors on the device
        run.status, run.error, oom = "error", guard.step_out_of_memory(device()), True
    finally:
        if hasattr(gen, "close"):
            gen.close()  # a generator left by a rerun frees what it holds now, not when collected
        if run.status == "running":  # left by a rerun (Stop): keep what was made
            run.status = "stopped"
    if oom:
        guard.free_cuda()


# ---------------------------------------------------------------- pretrained models
MAX_MODELS = 4  # models kept loaded per server (SmolLM2 and MiniLM take about 490 MiB together in float32)


@st.cache_resource(max_entries=MAX_MODELS, show_spinner=False)
def _loaded_model(key: str, device_name: str) -> Any:
    from attn_core.pretrained.models import load_model

    loaded = load_model(key, device=device_name)
    freeze_heap()  # transformers' modules and the model: ~10^5 objects no collection will free
    return loaded


def freeze_heap() -> None:
    """Move every object alive now out of the reach of Python's full garbage collections (``gc.freeze``,
    after one collection): the imported modules (torch, plotly, pandas, the engine) and a loaded model are
    ~250k objects that live as long as the server, and each full collection walked them all (~110 ms on the
    project's machine, every ~10 KV-cache runs; ~16 ms frozen, measured with ``bench/hall.py``).
    Frozen objects are still freed when nothing refers to them; only a reference cycle among them is kept."""
    import gc

    gc.collect()
    gc.freeze()


PRELOAD_ENV = "ATTN_PRELOAD_MODELS"


def preload_keys() -> list[str]:
    """The shipped models a server loads at its start (``server.py``): every one, unless ``ATTN_PRELOAD_MODELS``
    is ``0`` (none; each loads on its first visitor's page instead) or names some (``smollm2-135m,minilm-l6``)."""
    from attn_core.pretrained.store import SHIPPED

    raw = os.environ.get(PRELOAD_ENV, "").strip().lower()
    if raw in ("0", "false", "no", "off", "none"):
        return []
    if raw in ("", "1", "true", "yes", "on", "all"):
        return list(SHIPPED)
    return [k.strip() for k in raw.split(",") if k.strip()]


def preload_model(key: str) -> Any:
    """Shipped model ``key`` loaded on the server's device into the cache the pages read (:func:`model`):
    outside any session, at the server's start. Raises what :func:`attn_core.pretrained.models.load_model`
    raises (a :class:`ConfigError` for a package that is not installed)."""
    return _loaded_model(key, device())


def warm(fn: Callable[..., Any], *args: Any) -> None:
    """``fn(*args)`` computed into :func:`compute`'s cache for the server's device, as a page's first visit
    would ask for it (same arguments, same key): the first visitor then gets it at once."""
    _cached(_name(fn), digest(args, {}), device(), fn, args, {})


def model(key_of: Callable[[], str]) -> Any:
    """The pretrained model ``key_of()`` names (a shipped key or a local path), loaded once per server on the
    session's device and shared read-only; None after showing a :class:`~attn_core.runtime.config.ConfigError` (no
    such path, not a model, a package missing: the message says what to install or change).
    """
    try:
        key = key_of()
        with st.spinner(t("ui.model_loading", name=key), show_time=True):
            return _loaded_model(key, device())
    except ConfigError as exc:
        show_error(exc)
        return None
    except torch.OutOfMemoryError:
        pass
    guard.free_cuda()  # out of the except block: the failed load's tensors are gone
    show_error(guard.step_out_of_memory(device()))
    return None
