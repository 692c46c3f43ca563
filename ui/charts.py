"""The chart transport: how a figure reaches the browser.

A cached view is serialised once (:class:`Drawn`) and handed to Streamlit as it is (:class:`SerialisedFigure`);
:func:`plotly_chart` writes Streamlit's chart theme into it for the browser's colour scheme and sends keyed
charts through :func:`ui.plotly_live.live_plot`, which updates them in place on the next run. Page helpers
(export menus, phone copies, steps) live in :mod:`ui.output`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import plotly.graph_objects as go
import streamlit as st

from attn_core import figures

from .chart_theme import browser_spec
from .core import t
from .plotly_live import live_plot

PLOT_CONFIG = {
    "displaylogo": False,
    "toImageButtonOptions": {"format": "svg", "scale": 2},
}


class SerialisedFigure(go.Figure):
    """A chart already serialised (``spec``, the plotly JSON dict): ``st.plotly_chart`` sends it as it is.

    Streamlit turns a ``go.Figure`` into its spec with ``to_dict()``; this one hands over a copy of
    the stored spec instead of rebuilding and validating the figure. Needed, not only faster: the spec with
    Streamlit's chart theme written in (:func:`ui.chart_theme.browser_spec`) holds colours plotly.js takes and
    plotly.py's validator refuses, so ``st.plotly_chart(spec)`` of a themed spec raises. The spec is shared by
    every session: read-only. Only ``to_dict`` is meant to be called; :meth:`figure` builds a real figure (exports).
    """

    def __init__(self, spec: dict) -> None:  # noqa: D107 - no go.Figure constructor
        object.__setattr__(self, "_attn_spec", spec)

    def to_dict(self) -> dict:
        spec = self._attn_spec
        return {**spec, "data": [dict(trace) for trace in spec.get("data", [])]}

    def figure(self) -> go.Figure:
        return go.Figure(self._attn_spec)


@dataclass(frozen=True)
class Drawn:
    """A :class:`attn_core.views.View` with its figure serialised once, fonts set for one style: cached for
    the server (:func:`ui.view`), so the same chart for the next student costs no figure building."""

    name: str
    spec: dict
    source: Any


def drawn(view: Any, style_: Any) -> Drawn:
    """``view`` (a :class:`~attn_core.views.View`) serialised with the fonts of ``style_``."""
    return Drawn(view.name, figures.figure_spec(figures.apply_fonts(view.figure, style_)), view.source)


def chart_scheme() -> str | None:
    """The colour scheme of this session's browser, ``"light"`` or ``"dark"`` (``st.context.theme``), or None when
    it told none (AppTest). A browser that switches scheme asks for a run itself (:mod:`ui.plotly_live`)."""
    scheme = st.context.theme.type
    return scheme if scheme in ("light", "dark") else None


def plotly_chart(box: Any, fig: Any, selectable: bool = False, **kwargs: Any) -> Any:
    """``box.plotly_chart(fig, **kwargs)`` with Streamlit's chart theme written into the figure for the browser's
    colour scheme and ``theme=None`` (:mod:`ui.chart_theme`: Streamlit's second draw of each new chart then
    costs a few ms instead of a full draw). A client that tells no scheme (AppTest) gets the figure as built and
    Streamlit's own theme pass. A keyed chart in a browser goes out as :func:`ui.plotly_live.live_plot`, updated in
    place on the next run (``key``, ``config``, ``height="stretch"`` and ``on_select`` carry over). ``fig`` is a
    :class:`SerialisedFigure` (a cached view's spec) or a plotly figure whose fonts are set;
    ``selectable``: the chart selects points (``on_select``)."""
    kwargs = {"config": PLOT_CONFIG, **kwargs}
    scheme = chart_scheme()
    if scheme is None:
        return box.plotly_chart(fig, theme="streamlit", **kwargs)
    spec = fig._attn_spec if isinstance(fig, SerialisedFigure) else figures.figure_spec(fig)
    dark = scheme == "dark"
    themed = browser_spec(spec, dark, selectable)
    key = kwargs.get("key")
    # updated in place on the next run (ui.plotly_live); a component's key may not hold "__" (Streamlit's
    # delimiter for its events): the phone copies ("<key>__one") stay st.plotly_chart
    if key is not None and "__" not in key:
        stretch = kwargs.get("height") == "stretch"
        return live_plot(
            box, themed, key, kwargs["config"], stretch, t("ui.fullscreen"), kwargs.get("on_select"), dark=dark
        )
    return box.plotly_chart(SerialisedFigure(themed), theme=None, **kwargs)
