"""Shared Streamlit widgets: language, device, URL-bound parameter controls, figure display.

Pages import this module and do layout only. Nothing here keeps state at module
level: per-user state lives in ``st.session_state`` and the URL, and cached
functions return fresh CPU numpy copies (``st.cache_data``).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import streamlit as st

from attn_core import figures
from attn_core.config import ConfigError, attention_kind, divisors, kv_heads_keeping_group, nearest_divisor
from attn_core.i18n import DEFAULT_LANG, LANGUAGES, translate
from attn_core.i18n import count as count_in

BIND = "query-params"
NOTICES = "_control_notices"  # session-state key: notices about the controls, drawn below the controls box
Notice = tuple[str, str, str]  # (Streamlit call: "info" or "warning", text, icon)
PLOT_CONFIG = {
    "displaylogo": False,
    "toImageButtonOptions": {"format": "svg", "scale": 2},
}


# ---------------------------------------------------------------- page set-up
def page_guard() -> None:
    """Make sure this page runs inside app.py's navigation; call first thing in every page.

    Until a server's first ``st.navigation`` call, Streamlit still routes by the legacy
    ``pages/`` folder: the very first visitor of a fresh server who opens a deep link
    (``/heatmaps``) would get the page script alone, without app.py's layout and sidebar.
    Switching the legacy routing off and rerunning sends that run through app.py.
    """
    from streamlit.runtime.pages_manager import PagesManager

    if PagesManager.uses_pages_directory:
        PagesManager.uses_pages_directory = False
        st.rerun()


def route_home_alias(home: str) -> None:
    """Open the default page for ``/<home>``, its own name, instead of Streamlit's "Page not found" dialog.

    ``st.navigation`` serves its default page at ``/`` only: a link or bookmark to ``/heatmaps`` names no
    page it knows, so Streamlit shows an English "Page not found" dialog (then draws the default page
    anyway). Call before ``st.navigation``: a first run that asks for ``home`` by name asks for the default
    page instead; the browser's address becomes ``/`` with every query parameter kept.
    """
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx()
    pages = getattr(ctx, "pages_manager", None)
    if pages is None or pages.intended_page_script_hash:
        return
    if (pages.intended_page_name or "").strip("/") == home:
        pages.set_script_intent("", "")


# ---------------------------------------------------------------- language
def lang() -> str:
    """The session's UI language (``en`` or ``zh``).

    Before the sidebar's language control exists in a session (the page titles of a first run are
    translated before it), the ``?lang=`` of the URL, which that control will read.
    """
    value = st.session_state["lang"] if "lang" in st.session_state else _url_raw("lang")
    return value if value in LANGUAGES else DEFAULT_LANG


def t(key: str, /, **kwargs: object) -> str:
    """Translate ``key`` into the session's language."""
    return translate(key, lang(), **kwargs)


def count(n: int, unit: str) -> str:
    """``n`` with its unit in the session's language, singular or plural: "1 KV head", "4 KV heads"."""
    return count_in(n, unit, lang())


def style() -> figures.Style:
    """Figure style for this session (language, presentation mode)."""
    return figures.Style(present=bool(st.session_state.get("present", False)), lang=lang())


# ---------------------------------------------------------------- device
@st.cache_resource(show_spinner=False)
def _device_choice() -> tuple[str, Any, tuple[str, str | None, tuple] | None]:
    """(device string, :class:`attn_core.device.DeviceInfo`, the error as (message, key, params) or None)
    for this server process; immutable."""
    import torch

    from attn_core.device import device_info, pick_device

    try:
        dev = pick_device()
        return str(dev), device_info(dev), None
    except ConfigError as exc:
        dev = torch.device("cpu")
        return str(dev), device_info(dev), (str(exc), exc.key, tuple(sorted(exc.params.items())))


def device() -> str:
    """The device string computations run on (``cpu``, ``cuda``, ``mps``)."""
    return _device_choice()[0]


def device_text(info: Any) -> str:
    """A :class:`attn_core.device.DeviceInfo` in the user's language, e.g. "CPU · 2 threads"."""
    if info.kind == "cuda":
        return t("ui.device_cuda", name=info.name, gib=f"{info.memory_gib:.0f}")
    if info.kind == "mps":
        return t("ui.device_mps")
    return t("ui.device_cpu_one") if info.threads == 1 else t("ui.device_cpu", n=info.threads)


# ---------------------------------------------------------------- URL notices
def _url_raw(key: str) -> str | None:
    try:
        raw = st.query_params.get_all(key)
    except Exception:  # noqa: BLE001 - a malformed query string must not break the page
        return None
    return raw[-1] if raw else None


def _notice_if_replaced(key: str, raw: str | None, value: Any, ok: bool, expect: str) -> None:
    if raw is not None and not ok:
        shown = raw if len(raw) <= 40 else raw[:37] + "..."
        st.warning(t("ui.url_replaced", key=key, raw=shown, expect=expect, value=value), icon="⚠️")


def _remember(key: str, value: Any, default: Any) -> None:
    """Record a control's URL value for the "copy link" box (non-default values only)."""
    link = st.session_state.setdefault("_link_params", {})
    if value == default:
        link.pop(key, None)
        return
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, float) and value.is_integer():
        text = str(value)
    else:
        text = str(value)
    link[key] = text


def _parse_number(raw: str | None) -> float | None:
    if raw is None:
        return None
    try:
        v = float(raw)
    except ValueError:
        return None
    return v if math.isfinite(v) else None


# ---------------------------------------------------------------- controls
def int_slider(
    key: str,
    lo: int,
    hi: int,
    default: int,
    *,
    container: Any = None,
    step: int = 1,
    help_key: str | None = None,
) -> int:
    """An integer slider bound to the URL parameter ``key``; bad URL values give a notice.

    A value kept from an earlier run that falls outside ``[lo, hi]`` (the range
    shrank, or another page uses the same key with a wider range) is clamped into
    it, as a slider whose range shrinks would do, instead of raising. A range of
    one value (``hi <= lo``, e.g. the head of a one-head layer) draws no slider,
    which Streamlit refuses for min = max: the value is stated instead.
    """
    box = container or st
    raw = _url_raw(key)
    if hi <= lo:
        return _only_value(key, lo, default, raw, box)
    current = st.session_state.get(key)
    if isinstance(current, (int, float)) and not isinstance(current, bool) and not lo <= current <= hi:
        st.session_state[key] = int(min(max(current, lo), hi))
    value = box.slider(
        t(f"ctl.{key}"),
        lo,
        hi,
        default,
        step=step,
        key=key,
        bind=BIND,
        help=t(help_key) if help_key else None,
    )
    num = _parse_number(raw)
    ok = num is not None and num == int(num) and lo <= num <= hi and (int(num) - lo) % step == 0
    _notice_if_replaced(key, raw, value, ok, t("ui.expect_int", lo=lo, hi=hi))
    _remember(key, int(value), default)
    return int(value)


def _only_value(key: str, value: Any, default: Any, raw: str | None, box: Any) -> Any:
    """A control with a single possible ``value``: say it instead of drawing a slider that cannot move.

    A URL value other than it gets the usual notice and leaves the address.
    """
    box.markdown(t("ui.only_value", label=t(f"ctl.{key}"), value=value))
    if raw is not None:
        num = _parse_number(raw)
        _notice_if_replaced(key, raw, value, num is not None and num == value, str(value))
        try:
            if key in st.query_params:
                del st.query_params[key]
        except Exception:  # noqa: BLE001 - URL sync is best effort; the page must still render
            pass
    _remember(key, value, default)
    return value


def float_slider(
    key: str, lo: float, hi: float, default: float, step: float, *, container: Any = None, help_key: str | None = None
) -> float:
    """A float slider bound to the URL parameter ``key``."""
    box = container or st
    raw = _url_raw(key)
    value = box.slider(
        t(f"ctl.{key}"), lo, hi, default, step=step, key=key, bind=BIND, help=t(help_key) if help_key else None
    )
    num = _parse_number(raw)
    _notice_if_replaced(key, raw, value, num is not None and lo <= num <= hi, t("ui.expect_range", lo=lo, hi=hi))
    _remember(key, float(value), float(default))
    return float(value)


def toggle(key: str, default: bool, *, container: Any = None, help_key: str | None = None) -> bool:
    """A toggle bound to the URL parameter ``key``."""
    box = container or st
    raw = _url_raw(key)
    value = box.toggle(t(f"ctl.{key}"), value=default, key=key, bind=BIND, help=t(help_key) if help_key else None)
    ok = raw is None or raw.lower() in ("true", "false")
    _notice_if_replaced(key, raw, value, ok, "true / false")
    _remember(key, bool(value), default)
    return bool(value)


def choice(
    key: str,
    options: Sequence[str],
    default: str,
    *,
    container: Any = None,
    widget: str = "segmented",
    help_key: str | None = None,
    data_default: bool = False,
) -> str:
    """A single choice among ``options`` (codes, shown translated as ``opt.<key>.<code>``).

    The URL carries the language-neutral code (``?mask=causal``), so a link works
    in either language and switching language keeps the choice. Streamlit's own
    binding would put the translated label in the URL, so this widget syncs the
    parameter itself: seeded from the URL on the session's first run, written
    back after every change, with a notice for an unknown value.

    ``data_default``: ``default`` depends on the data (e.g. the sequence length),
    so it applies on every run until the learner picks a value or a URL gives
    one; that choice is then kept (even while the control is hidden) and the
    default no longer moves it.
    """
    box = container or st
    raw = _url_raw(key)
    pin = f"_{key}_pinned"

    def fmt(code: str) -> str:
        return t(f"opt.{key}.{code}")

    if key not in st.session_state and raw is not None:
        if raw in options:
            st.session_state[key] = raw
            if data_default and pin not in st.session_state:
                st.session_state[pin] = raw  # a link's value is an explicit choice
        else:
            st.warning(t("ui.url_replaced", key=key, raw=raw[:40], expect=" / ".join(options), value=default), icon="⚠️")
    if data_default:
        pinned = st.session_state.get(pin)
        # unpinned: follow the data's default; pinned: keep the choice, also after the widget was hidden
        st.session_state[key] = pinned if pinned in options else default
    if st.session_state.get(key) not in options:
        st.session_state[key] = default
    label = t(f"ctl.{key}")
    extra: dict[str, Any] = {"help": t(help_key) if help_key else None}
    if data_default:
        extra.update(on_change=_pin_choice, args=(key,))
    if widget == "radio":
        value = box.radio(label, options, format_func=fmt, key=key, horizontal=True, **extra)
    elif widget == "select":
        value = box.selectbox(label, options, format_func=fmt, key=key, **extra)
    else:
        value = box.segmented_control(label, options, format_func=fmt, key=key, required=True, **extra)
    value = default if value is None else str(value)
    _write_url(key, value, default)
    _remember(key, value, default)
    return value


def _pin_choice(key: str) -> None:
    """The learner picked a value of a control with a data-dependent default: keep it from now on."""
    st.session_state[f"_{key}_pinned"] = st.session_state.get(key)


def _write_url(key: str, value: str, default: str) -> None:
    try:
        if value == default:
            if key in st.query_params:
                del st.query_params[key]
        elif st.query_params.get(key) != value:
            st.query_params[key] = value
    except Exception:  # noqa: BLE001 - URL sync is best effort; the page must still render
        pass


def text_area(key: str, default: str, max_chars: int, *, container: Any = None, height: int = 90) -> str:
    """A text box bound to the URL parameter ``key`` (Streamlit caps the length at ``max_chars``)."""
    box = container or st
    raw = _url_raw(key)
    if raw is not None and len(raw) > max_chars and key not in st.session_state:
        st.session_state[key] = raw[:max_chars]
        st.warning(t("ui.text_cut", key=key, n=len(raw), limit=max_chars), icon="✂️")
    value = box.text_area(t(f"ctl.{key}"), value=default, max_chars=max_chars, key=key, bind=BIND, height=height)
    _remember(key, value, default)
    return value


def _page_id() -> str:
    """The running page's script hash (which page of the app this run draws)."""
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx()
    return ctx.page_script_hash if ctx is not None else ""


def _kv_from_url(raw: str, n_heads: int, options: list[int], fallback: int, key: str) -> tuple[int, Notice | None]:
    """The KV heads a URL value asks for, and the notice when it was not one of ``options``."""
    valid = ", ".join(map(str, options))
    num = _parse_number(raw.split(" ")[0])  # ?n_kv_heads=2 as well as the widget's own "2 · GQA" form
    if num is None or num != int(num) or num < 1:
        return fallback, ("warning", t("ui.url_replaced", key=key, raw=raw[:40], expect=valid, value=fallback), "⚠️")
    if int(num) not in options:
        return _kv_snap(num, n_heads, options)
    return int(num), None


def _kv_snap(wanted: float, n_heads: int, options: list[int]) -> tuple[int, Notice]:
    """A value that does not divide ``n_heads``: the nearest divisor, with a notice saying so."""
    got = nearest_divisor(n_heads, wanted)
    shown = int(wanted) if float(wanted).is_integer() else wanted
    text = t("ui.kv_snapped", want=shown, n_heads=n_heads, got=got, valid=", ".join(map(str, options)))
    return got, ("info", text, "↔️")


def _kv_follow(n_heads: int, old: int, choice: tuple[int, int]) -> tuple[int, Notice | None]:
    """n_heads changed: the KV heads that keep the learner's ``choice`` (see ``kv_heads_keeping_group``)."""
    h0, kv0 = choice
    new = kv_heads_keeping_group(n_heads, h0, kv0)
    if new == old:
        return new, None
    g0, g = h0 // kv0, n_heads // new
    if g == g0:
        text = t("ui.kv_kept", h=n_heads, old=old, new=new, g=g)
    else:
        text = t("ui.kv_nearest", h=n_heads, old=old, new=new, g=g, g0=g0, h0=h0, kv0=kv0)
    return new, ("info", text, "↔️")


def _kv_wanted(n_heads: int, options: list[int], fallback: int, key: str) -> tuple[int | None, Notice | None]:
    """The value the KV-heads control must show this run (None: the widget's own), and a notice.

    The learner's choice ``(n_heads, n_kv_heads)`` is kept in ``_<key>_choice``: set
    when they move this control (or open a URL), not when n_heads moves it. A change of
    n_heads alone then applies :func:`kv_heads_keeping_group` to that choice.
    """
    state = st.session_state
    current, last = state.get(key), state.get(f"_{key}_last")
    choice = state.get(f"_{key}_choice")
    raw = _url_raw(key)
    value, notice = None, None
    if current is None:
        if raw is not None and last is None:  # the session's first run, from a link
            value, notice = _kv_from_url(raw, n_heads, options, fallback, key)
        elif choice is not None:  # the control was not on the previous page: the choice, applied to n_heads
            value = kv_heads_keeping_group(n_heads, *choice)
        choice = (n_heads, fallback if value is None else value) if choice is None else choice
    elif last is not None and last[0] != n_heads:
        # n_heads changed. Whatever the KV control sent is not the learner's: a browser sends one change per
        # rerun, and after a rerun cut short by the next key press its value can be stale or mapped through
        # the previous options (seen with two quick presses on n_heads: 10 -> 8 arrived with n_kv_heads 1).
        value, notice = _kv_follow(n_heads, last[1], choice or last)
    elif last is None or current != last[1]:  # the learner moved this control (or a test set it)
        value, notice = (current, None) if current in options else _kv_snap(current, n_heads, options)
        choice = (n_heads, value)
    elif current not in options:
        value, notice = _kv_snap(current, n_heads, options)
        choice = (n_heads, value)
    state[f"_{key}_choice"] = choice
    return value, notice


def kv_label(n_heads: int, n_kv_heads: int) -> str:
    """An option of the KV-heads control: ``"2 · GQA"`` (the kind from :func:`attn_core.config.attention_kind`)."""
    return f"{n_kv_heads} · {attention_kind(n_heads, n_kv_heads)}"


def kv_heads_select(n_heads: int, default: int, *, key: str = "n_kv_heads", container: Any = None) -> int:
    """Choose ``n_kv_heads`` among the divisors of ``n_heads`` (1 = MQA, n_heads = MHA).

    A URL value (or a value set in session state) that does not divide ``n_heads`` snaps to
    the nearest divisor, with a visible notice. When only ``n_heads`` changes, the learner's
    last own choice is kept as :func:`attn_core.config.kv_heads_keeping_group` says (its group
    size, else the nearest on the side of more KV heads; MQA stays MQA), again with a notice, and
    it comes back whenever it is valid again. Notices go below the page's controls
    (:func:`controls_box`), or below this control outside one, so the controls never move.
    """
    box = container or st
    options = divisors(n_heads)
    fallback = default if default in options else nearest_divisor(n_heads, default)
    value, notice = _kv_wanted(n_heads, options, fallback, key)
    if len(options) == 1:  # one query head: one KV head, said instead of a slider that cannot move
        st.session_state[f"_{key}_last"] = (n_heads, 1)
        st.session_state[f"_{key}_page"] = _page_id()
        box.markdown(t("ui.only_value", label=t("ctl.n_kv_heads"), value=kv_label(1, 1)))
        if notice is not None:
            _control_notice(notice, box)
        _write_url(key, "1", "1")  # implied by one query head: the address leaves it out
        _remember(key, 1, fallback)
        return 1
    current = st.session_state.get(key)
    assigned = False  # whether this run sets the value through session state
    if value is not None and value != current:
        st.session_state[key] = value
        assigned = True
    elif current is not None and st.session_state.get(f"_{key}_page") != _page_id():
        # Widget ids include the page, so after a page switch the value under this key belongs to the
        # previous page's widget; re-assigning it makes this page's new widget start from it, not from 1.
        st.session_state[key] = current
        assigned = True
    st.session_state[f"_{key}_page"] = _page_id()

    def fmt(d: int) -> str:
        return kv_label(n_heads, d)

    # The default decides what the URL leaves out (a value equal to it); it may not be passed in a run that
    # set the value through session state, which Streamlit reports as a conflict.
    kwargs = {} if assigned else {"value": fallback}
    value = box.select_slider(
        t("ctl.n_kv_heads"), options=options, format_func=fmt, key=key, help=t("help.n_kv_heads"), **kwargs
    )
    # The URL carries the plain number (?n_kv_heads=2), written here: Streamlit's binding would write the
    # formatted "2 · GQA" and drop a plain number it cannot match, so links lost n_kv_heads.
    _write_url(key, str(int(value)), str(fallback))
    st.session_state[f"_{key}_last"] = (n_heads, int(value))
    if notice is not None:
        _control_notice(notice, box)
    _remember(key, int(value), fallback)
    return int(value)


def pow2_slider(key: str, lo: int, hi: int, default: int, *, container: Any = None, help_key: str | None = None) -> int:
    """A slider over the powers of two from ``lo`` to ``hi`` (log steps), bound to the URL parameter ``key``.

    A URL value (or an earlier choice) that is not one of them snaps to the
    nearest power of two on a log scale, or to ``default`` if it is not a
    positive number, with a visible notice saying so.
    """
    box = container or st
    options = [2**i for i in range(int(math.log2(lo)), int(math.log2(hi)) + 1)]
    raw = _url_raw(key)
    if len(options) == 1:
        return int(_only_value(key, options[0], default, raw, box))
    current = st.session_state.get(key)
    wanted: str | None = None
    if current is not None and current not in options:
        wanted = str(current)
    elif current is None and raw is not None and raw not in {str(o) for o in options}:
        wanted = raw
    if wanted is not None:
        num = _parse_number(wanted)
        shown = wanted if len(wanted) <= 40 else wanted[:37] + "..."
        if num is not None and num > 0:
            snapped = min(options, key=lambda o: (abs(math.log2(o) - math.log2(num)), o))
            st.info(t("ui.pow2_snapped", key=key, want=shown, lo=lo, hi=hi, got=snapped), icon="↔️")
        else:
            snapped = default
            st.warning(
                t("ui.url_replaced", key=key, raw=shown, expect=t("ui.expect_pow2", lo=lo, hi=hi), value=snapped),
                icon="⚠️",
            )
        st.session_state[key] = snapped
    kwargs = {} if key in st.session_state else {"value": default}
    value = box.select_slider(
        t(f"ctl.{key}"), options=options, key=key, bind=BIND, help=t(help_key) if help_key else None, **kwargs
    )
    _remember(key, int(value), default)
    return int(value)


# ---------------------------------------------------------------- output
def error_text(exc: Exception) -> str:
    """The message of ``exc`` in the user's language (catalog ``err.<key>`` when the error names one)."""
    key = getattr(exc, "key", None)
    if key and lang() != DEFAULT_LANG:
        from attn_core.i18n import catalog

        if f"err.{key}" in catalog(lang()):
            return t(f"err.{key}", **getattr(exc, "params", {}))
    return str(exc)


def show_error(exc: Exception) -> None:
    """Show a ConfigError (or any expected failure) as a message, never a traceback."""
    st.error(t("ui.fix_this", msg=error_text(exc)), icon="🛑")


def show_figure(fig: Any, key: str, data: Any = None, name: str | None = None) -> None:
    """Draw a plotly figure (toolbar download: SVG at scale 2) with export buttons under it.

    ``data`` is a pandas DataFrame of the numbers behind the chart (with token
    labels) for the CSV export; ``name`` is the file stem of every export.
    """
    figures.apply_fonts(fig, style())
    st.plotly_chart(fig, key=key, config=PLOT_CONFIG, theme="streamlit")
    export_menu(fig, key, data, name or key)


def show_view(view: Any, key: str, name: str | None = None) -> None:
    """Draw an :class:`attn_core.views.View`; its table is built only if its CSV is downloaded."""
    show_figure(view.figure, key, data=view.source, name=name or view.name)


@st.cache_resource(show_spinner=False)
def _chromium() -> str | None:
    from attn_core.render import find_chromium

    return find_chromium()


def _deferred(fig: Any, fmt: str, data: Any) -> Callable[[], bytes]:
    from attn_core.render import export_bytes

    def make() -> bytes:
        return export_bytes(fig, fmt, data)

    return make


def export_menu(fig: Any, key: str, data: Any, name: str) -> None:
    """A compact "Export" popover: PNG/SVG/PDF (kaleido + system Chromium), CSV of the numbers, offline HTML.

    Files are produced only when a button is clicked (deferred download), so the
    buttons cost nothing on a rerun.
    """
    from attn_core.render import MIME, chromium_missing_message

    with st.popover(t("ui.export"), icon=":material/download:", key=f"{key}__export"):
        st.caption(t("ui.export_help"))
        cols = st.columns(5)
        has_browser = _chromium() is not None
        for col, fmt in zip(cols, ("png", "svg", "pdf", "csv", "html"), strict=True):
            disabled = (fmt in ("png", "svg", "pdf") and not has_browser) or (fmt == "csv" and data is None)
            col.download_button(
                fmt.upper(),
                data=_deferred(fig, fmt, data),
                file_name=f"{name}.{fmt}",
                mime=MIME[fmt],
                key=f"{key}__{fmt}",
                on_click="ignore",
                disabled=disabled,
                width="stretch",
            )
        if not has_browser:
            st.info(chromium_missing_message(), icon="ℹ️")


def help_expander(key: str, **kwargs: object) -> None:
    """A short explanation in an expander, title ``<key>.title`` and body ``<key>.body``."""
    with st.expander(t(f"{key}.title")):
        st.markdown(t(f"{key}.body", **kwargs))


def random_weights_note() -> None:
    """Say on the page that the maps come from seeded random, untrained embeddings and projections."""
    st.caption(t("ui.random_weights", seed=seed()))


def run_safely(fn: Callable[[], Any]) -> Any:
    """Call ``fn``; on ConfigError show its message and return None."""
    try:
        return fn()
    except ConfigError as exc:
        show_error(exc)
        return None


# ---------------------------------------------------------------- cached computations
MAX_TEXT_TOKENS = 256
MAX_TEXT_CHARS = 2000
MAX_SEQ_LEN = 8192  # synthetic tokens; longer sequences are drawn pooled


@st.cache_data(max_entries=48, show_spinner=False)
def pooled_maps(
    n_heads: int,
    n_kv_heads: int,
    head_dim: int,
    d_model: int,
    tokens_q: tuple[str, ...],
    tokens_k: tuple[str, ...] | None,
    mask_kind: str,
    pad_len: int | None,
    use_scaling: bool,
    temperature: float,
    seed: int,
    device_name: str,
    max_side: int,
    reduce: str,
    heads: tuple[int, ...] | None = None,
    window: tuple[int, int, int, int] | None = None,
    entropy: bool = False,
):
    """:func:`attn_core.longmaps.pooled_attention` cached by primitive arguments (CPU numpy out).

    Computed by chunks of query rows, so the full ``[H, T, T]`` tensor is never
    built; a CUDA out-of-memory error reruns it on the CPU (see the result's ``device``).
    """
    from attn_core.guard import run_with_fallback
    from attn_core.longmaps import pooled_attention

    maps, _ = run_with_fallback(
        lambda dev: pooled_attention(
            n_heads, n_kv_heads, head_dim, tokens_q, tokens_k, d_model=d_model, mask_kind=mask_kind,
            pad_len=pad_len, use_scaling=use_scaling, temperature=temperature, seed=seed, device=dev,
            max_side=max_side, reduce=reduce, heads=heads, window=window, entropy=entropy,
        ),
        device_name,
    )  # fmt: skip
    return maps


@st.cache_data(max_entries=48, show_spinner=False)
def head_window(
    n_heads: int,
    n_kv_heads: int,
    head_dim: int,
    d_model: int,
    tokens_q: tuple[str, ...],
    tokens_k: tuple[str, ...] | None,
    mask_kind: str,
    pad_len: int | None,
    use_scaling: bool,
    temperature: float,
    seed: int,
    device_name: str,
    head: int,
    q_start: int,
    k_start: int,
):
    """:func:`attn_core.longmaps.head_window` cached by primitive arguments (CPU numpy out)."""
    from attn_core.guard import run_with_fallback
    from attn_core.longmaps import head_window as window_of_head

    hw, _ = run_with_fallback(
        lambda dev: window_of_head(
            n_heads, n_kv_heads, head_dim, tokens_q, tokens_k, head=head, q_start=q_start, k_start=k_start,
            d_model=d_model, mask_kind=mask_kind, pad_len=pad_len, use_scaling=use_scaling,
            temperature=temperature, seed=seed, device=dev,
        ),
        device_name,
    )  # fmt: skip
    return hw


def fell_back_to_cpu(result_device: str) -> None:
    """Tell the user a CUDA out-of-memory error made the computation rerun on the CPU."""
    if device().startswith("cuda") and not str(result_device).startswith("cuda"):
        st.warning(t("ui.oom_fallback"), icon="⚠️")


def limited_tokens(text: str | None) -> list[str]:
    """The tokens of ``text``, at most MAX_TEXT_TOKENS of them, with a notice when some were cut."""
    from attn_core.tokens import tokenize

    tokens = tokenize(text or "")
    if len(tokens) > MAX_TEXT_TOKENS:
        st.warning(t("heatmap.cut", n=len(tokens), limit=MAX_TEXT_TOKENS), icon="✂️")
    return tokens[:MAX_TEXT_TOKENS]


def token_input(default_text: str) -> list[str]:
    """The input sequence: a text box (its tokens) or synthetic tokens of a chosen length, URL-bound."""
    from attn_core.tokens import synthetic_tokens

    if choice("source", ["text", "synthetic"], "text") == "text":
        return limited_tokens(text_area("text", default_text, MAX_TEXT_CHARS))
    return synthetic_tokens(int_slider("seq_len", 1, MAX_SEQ_LEN, 16, help_key="help.seq_len_long"))


def sidebar() -> None:
    """The global sidebar: language, seed, presentation mode, the compute device and the share link."""
    st.session_state["_link_params"] = {}
    if "present" not in st.session_state and _url_raw("present") in ("1", "yes", "on"):
        # ?present=1 as well as the toggle's own ?present=true: rewrite the link and start over, so the
        # bound toggle reads "true" from the URL in the browser and on the server alike. Called after
        # st.navigation (app.py), so the rerun stays on the page the link named.
        st.query_params["present"] = "true"
        st.rerun()
    with st.sidebar:
        # Options are the codes themselves so that links carry ?lang=zh.
        st.segmented_control(
            "Language / 语言 (en = English, zh = 中文)",
            list(LANGUAGES),
            default=DEFAULT_LANG,
            key="lang",
            bind=BIND,
            required=True,
        )
        _remember("lang", lang(), DEFAULT_LANG)
        raw = _url_raw("seed")
        seed_value = st.number_input(
            t("ctl.seed"), min_value=0, max_value=2**31 - 1, value=0, step=1, key="seed", bind=BIND, help=t("help.seed")
        )
        num = _parse_number(raw)
        _notice_if_replaced(
            "seed",
            raw,
            seed_value,
            num is not None and num.is_integer() and 0 <= num < 2**31,
            t("ui.expect_int", lo=0, hi=2**31 - 1),
        )
        _remember("seed", int(seed_value), 0)
        present = st.toggle(t("ctl.present"), value=False, key="present", bind=BIND, help=t("help.present"))
        _remember("present", bool(present), False)
        _, info, err = _device_choice()
        st.caption(t("ui.device", label=device_text(info)))
        if err:
            msg, key, params = err
            st.warning(
                t("ui.device_fallback", msg=error_text(ConfigError(msg, "device", key, **dict(params)))), icon="⚠️"
            )
        st.session_state["_link_slot"] = st.empty()


PRESENT_CSS = """
<style>
  [data-testid="stMain"] { font-size: 1.3rem; }
  [data-testid="stMain"] h1 { font-size: 3.2rem; }
  [data-testid="stMain"] p, [data-testid="stMain"] li { font-size: 1.35rem; line-height: 1.5; }
  [data-testid="stMain"] [data-testid="stCaptionContainer"] { font-size: 1.15rem; }
  [data-testid="stMain"] .block-container { padding-top: 1.5rem; max-width: 100%; }
</style>
"""


def present() -> bool:
    """Whether presentation mode (large type, controls folded away) is on."""
    return bool(st.session_state.get("present", False))


def apply_presentation() -> None:
    """Large fonts for a projector; call once per run (app.py does)."""
    if present():
        st.html(PRESENT_CSS)


@contextlib.contextmanager
def controls_box() -> Iterator[Any]:
    """Where a page puts its controls (``with ui.controls_box():``): inline, or folded into a compact bar in
    presentation mode. Notices about the controls (:func:`_control_notice`) are drawn below the box when it
    closes, so that a notice never pushes a control down."""
    box = st.expander(t("ui.controls"), expanded=False, icon=":material/tune:") if present() else st.container()
    st.session_state[NOTICES] = []
    try:
        with box:
            yield box
    finally:
        notices = st.session_state.pop(NOTICES, [])
    for kind, text, icon in notices:
        getattr(st, kind)(text, icon=icon)


def _control_notice(notice: Notice, box: Any) -> None:
    """Show a notice about a control: below the controls box when inside one, else in ``box`` (below the control)."""
    pending = st.session_state.get(NOTICES)
    if isinstance(pending, list):
        pending.append(notice)
    else:
        kind, text, icon = notice
        getattr(box, kind)(text, icon=icon)


def _shift_slide(key: str, step: int, n: int) -> None:
    st.session_state[key] = min(max(int(st.session_state.get(key, 0)) + step, 0), n - 1)


def slide_controls(key: str, n: int) -> int:
    """Previous / Next buttons over ``n`` slides (Page Up / Page Down as shortcuts); returns the index.

    The index lives in session state and in the URL (``?slide=3``), so a bookmark
    opens the lecture at the same step.
    """
    if key not in st.session_state:
        num = _parse_number(_url_raw(key))
        st.session_state[key] = int(num) - 1 if num is not None and 1 <= num <= n and num == int(num) else 0
    idx = min(max(int(st.session_state[key]), 0), n - 1)
    st.session_state[key] = idx
    left, mid, right = st.columns([1, 3, 1])
    left.button(
        t("ui.prev"),
        key=f"{key}__prev",
        icon=":material/arrow_back:",
        shortcut="pageup",
        disabled=idx == 0,
        width="stretch",
        on_click=_shift_slide,
        args=(key, -1, n),
    )
    right.button(
        t("ui.next"),
        key=f"{key}__next",
        icon=":material/arrow_forward:",
        shortcut="pagedown",
        disabled=idx == n - 1,
        width="stretch",
        on_click=_shift_slide,
        args=(key, 1, n),
    )
    mid.progress((idx + 1) / n, text=t("ui.slide", i=idx + 1, n=n))
    mid.caption(t("ui.slide_keys"))
    _write_url(key, str(idx + 1), "1")
    _remember(key, idx + 1, 1)
    return idx


def share_link(page_path: str, home: str) -> None:
    """Fill the sidebar's "copy link" box with the URL of the current view (call after the page ran).

    ``page_path`` is the running page's ``url_path`` (``""`` for the default page, which
    Streamlit serves at ``/``), ``home`` the default page's own name. The link holds every
    control that differs from its default, so opening it in a new session reproduces the
    same numbers; the default page's link is ``/?…``, also when the page was opened as
    ``/heatmaps``.
    """
    slot = st.session_state.get("_link_slot")
    if slot is None:
        return
    url = view_url(st.context.url or "", page_path, home, st.session_state.get("_link_params", {}))
    with slot.container():
        st.caption(t("ui.share_link"))
        st.code(url or "?", language=None, wrap_lines=True)


def view_url(current: str, page_path: str, home: str, params: dict[str, str]) -> str:
    """The link of a view: the app's root, the page's path and ``params``.

    ``current`` is the address the browser shows (``st.context.url``): the root, then the page's
    path, or for the default page possibly its own name ``home``.
    """
    from urllib.parse import urlencode

    root = current.split("?")[0].split("#")[0].rstrip("/")
    for suffix in (page_path, home):
        if suffix and root.endswith("/" + suffix):
            root = root[: -len(suffix) - 1]
            break
    return f"{root}/{page_path}" + ("?" + urlencode(params) if params else "")


def seed() -> int:
    """The global seed chosen in the sidebar."""
    value = st.session_state.get("seed", 0)
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0
