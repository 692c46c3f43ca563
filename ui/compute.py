"""Cached computations and live runs: the one way pages compute.

:func:`compute` runs a view model's step (``fn(*args, device=..., **kwargs)``) once per
distinct arguments for the whole server (``st.cache_data``), keyed by a digest of the
arguments, so a frozen spec holding 8192 tokens costs one hash, not Streamlit's
element-by-element hashing. Results are CPU numpy (the steps return them that way),
copied for every caller. A CUDA out-of-memory error reruns the step on the CPU, and the
page says so on every run that shows that result.

:func:`live_run` drives a step generator (a live decode, later sweeps, training and
generation) across reruns: start, stop, progress, and results that go stale when a
parameter changes.
"""

from __future__ import annotations

import hashlib
import pickle
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import streamlit as st

from attn_core.config import ConfigError
from attn_core.guard import run_with_fallback

from .core import device, t
from .output import show_error

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


def compute(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, device=<the session's device>, **kwargs)``, cached for the server; None after a shown error.

    ``fn`` must take a ``device`` keyword and return CPU values. Arguments must be
    picklable (frozen dataclasses, tuples, numbers, strings). A
    :class:`~attn_core.config.ConfigError` is shown as a message (in the user's
    language) and gives None, so the page can stop or go on without that result.
    """
    dev = device()
    try:
        result, used = _cached(_name(fn), digest(args, kwargs), dev, fn, args, kwargs)
    except ConfigError as exc:
        show_error(exc)
        return None
    if dev.startswith("cuda") and not str(used).startswith("cuda"):
        st.warning(t("ui.oom_fallback"), icon="⚠️")
    return result


# ---------------------------------------------------------------- live runs
@dataclass
class LiveRun:
    """The state of one live run, kept in ``st.session_state``: its parameters, the steps so far, its status.

    ``status``: ``idle``, ``running``, ``done``, ``stopped`` or ``error`` (then ``error`` holds the
    exception). ``stale`` is True when the page's parameters no longer match ``params``.
    """

    params: Any = None
    steps: list[Any] = field(default_factory=list)
    status: str = "idle"
    error: Exception | None = None
    stale: bool = False


def live_state(key: str, params: Any) -> LiveRun:
    """The run kept under ``key`` (a new idle one the first time), marked stale if ``params`` changed."""
    run = st.session_state.get(key)
    if not isinstance(run, LiveRun):
        run = LiveRun()
        st.session_state[key] = run
    run.stale = run.params is not None and run.params != params
    return run


def live_run(
    key: str,
    params: Any,
    steps: Callable[[], Iterator[Any]],
    show: Callable[[LiveRun], None],
    every: int = 1,
) -> LiveRun:
    """Run ``steps()`` now (the page's Start button was pressed), showing progress as it goes.

    ``show(run)`` draws the run so far (called every ``every`` steps and at the end);
    a :class:`~attn_core.config.ConfigError` from the generator ends the run with the
    message shown, keeping the steps made so far. A Stop button (or any widget) makes
    Streamlit rerun the script, which ends the loop; the run then reads ``stopped``.
    """
    run = LiveRun(params=params, status="running")
    st.session_state[key] = run
    try:
        for i, step in enumerate(steps()):
            run.steps.append(step)
            if (i + 1) % every == 0:
                show(run)
        run.status = "done"
    except ConfigError as exc:
        run.status, run.error = "error", exc
        show_error(exc)
    finally:
        if run.status == "running":  # left by a rerun (Stop): keep what was made
            run.status = "stopped"
    show(run)
    return run
