"""Showing results: figures with their export menu, errors in the user's language, short explanations."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import streamlit as st

from attn_core import figures
from attn_core.config import ConfigError
from attn_core.i18n import DEFAULT_LANG

from .core import lang, seed, style, t

PLOT_CONFIG = {
    "displaylogo": False,
    "toImageButtonOptions": {"format": "svg", "scale": 2},
}


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


def help_text(title_key: str, text: str) -> None:
    """A short explanation already written for the current settings, in an expander titled ``title_key``."""
    with st.expander(t(title_key)):
        st.markdown(text)


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
