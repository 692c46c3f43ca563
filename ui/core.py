"""The session's language, style, device and seed; the URL helpers every control uses."""

from __future__ import annotations

import functools
import math
from pathlib import Path
from typing import Any

import streamlit as st

from attn_core import figures
from attn_core.i18n import DEFAULT_LANG, LANGUAGES, translate
from attn_core.i18n import count as count_in
from attn_core.runtime.config import ConfigError

BIND = "query-params"
ASSETS = Path(__file__).resolve().parent / "assets"  # the CSS and JavaScript the app sends to the browser


@functools.cache
def asset(name: str) -> str:
    """The text of ``ui/assets/<name>`` (a stylesheet or a script), read once per process."""
    return (ASSETS / name).read_text(encoding="utf-8")


def style_tag(name: str) -> str:
    """The stylesheet ``ui/assets/<name>`` as a ``<style>`` element."""
    return f"<style>\n{asset(name)}</style>"


def script_tag(name: str) -> str:
    """The script ``ui/assets/<name>`` as a ``<script>`` element."""
    return f"<script>\n{asset(name)}</script>"


NOTICES = "_control_notices"  # session-state key: notices about the controls, drawn below the controls box


Notice = tuple[str, str, str]  # (Streamlit call: "info" or "warning", text, icon)


def lang() -> str:
    """The session's UI language (``en`` or ``zh``).

    Before the sidebar's language control exists in a session (the page titles of a first run are
    translated before it), the ``?lang=`` of the URL, which that control will read.
    """
    value = st.session_state.get("lang")  # one lookup: a run asks about a hundred times
    if value is None:
        value = _url_raw("lang")
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


@st.cache_resource(show_spinner=False)
def _device_choice() -> tuple[str, Any, tuple[str, str | None, tuple] | None]:
    """(device string, :class:`attn_core.runtime.device.DeviceInfo`, the error as (message, key, params) or None)
    for this server process; immutable."""
    import torch

    from attn_core.runtime.device import device_info, pick_device

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
    """A :class:`attn_core.runtime.device.DeviceInfo` in the user's language, e.g. "CPU · 2 threads"."""
    if info.kind == "cuda":
        return t("ui.device_cuda", name=info.name, gib=f"{info.memory_gib:.0f}")
    if info.kind == "mps":
        return t("ui.device_mps")
    return t("ui.device_cpu_one") if info.threads == 1 else t("ui.device_cpu", n=info.threads)


def linked(*prefixes: str) -> bool:
    """Whether the page's address sets a parameter whose name starts with one of ``prefixes`` (``"dec_"``): a link
    to a closed section's settings opens the section (:func:`ui.widgets.section_box`)."""
    try:
        return any(name.startswith(prefixes) for name in st.query_params)
    except Exception:  # noqa: BLE001 - a malformed query string must not break the page
        return False


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


DRAWN = "_drawn_keys"  # the URL keys of the widgets this run drew (ui.frame.draw_page checks the link against them)


def _remember(key: str, value: Any, default: Any) -> None:
    """Record a control's URL value for the "copy link" box (non-default values only), and that it was drawn."""
    st.session_state.setdefault(DRAWN, set()).add(key)
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


def _write_url(key: str, value: str, default: str) -> None:
    try:
        if value == default:
            if key in st.query_params:
                del st.query_params[key]
        elif st.query_params.get(key) != value:
            st.query_params[key] = value
    except Exception:  # noqa: BLE001 - URL sync is best effort; the page must still render
        pass


def present() -> bool:
    """Whether presentation mode (large type, controls folded away) is on."""
    return bool(st.session_state.get("present", False))


def seed() -> int:
    """The global seed chosen in the sidebar."""
    value = st.session_state.get("seed", 0)
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0
