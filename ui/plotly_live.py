"""A plotly chart that stays on the page between runs and is updated in place (``Plotly.react``).

``st.plotly_chart`` gives a chart a new element id whenever its figure changes, and the browser then
throws the old chart away (the chart blanks) and draws the new one from nothing (``Plotly.newPlot``),
then a second time for Streamlit's theme pass. This component (Streamlit's components v2, in the
page's own DOM, no iframe) keeps one chart per key and hands each new figure to ``Plotly.react``:
the old chart stays on screen until the new numbers are drawn into it, a chart whose figure did not
change costs nothing on a rerun, and a changed one keeps its frame (subplots, toolbar). New numbers
still redraw the chart's axes and traces: plotly does that for any data change. The layout plotly
writes into (computed ranges) is carried into the next figure, and each new figure is a new
``datarevision`` (without one, plotly keeps the old arrays: ``tests/e2e/test_plotly_live.py``
checks that the numbers drawn are the new ones).

The page draws one chart at a time (a queue shared by the page's charts): the figures of one run or one
resize join it first, the charts in view are drawn first, and once the draws since the last frame took
over 30 ms two frames pass before the next draw, so each chart shows as soon as it is drawn instead of
all of them after the last (a saturation τ move's first changed chart: painted ~660 → ~300 ms).

The component's script is ``ui/assets/live_plot.js``. Plotly itself is Streamlit's own copy: the script
imports Streamlit's plotly chunk (the script Streamlit loads for its first ``st.plotly_chart``), which sets
``window.Plotly``; its file name is read from the installed Streamlit once per process
(:func:`ui.streamlit_compat.plotly_chunk`). Animation frames, the toolbar (with a full-screen button), the
chart's width following its column, slides' stretched height and a click's points (``on_select``, in the shape
of ``st.plotly_chart``'s selection) all carry over.

The chart's box carries the test id and class of Streamlit's chart (``stPlotlyChart``), so the page's
CSS (slides), the browser tests and the benchmark select both kinds alike. AppTest, which runs no
browser, still gets ``st.plotly_chart`` (:func:`ui.charts.plotly_chart`).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable
from typing import Any

import orjson
import streamlit as st

from .core import asset
from .streamlit_compat import plotly_chunk

NAME = "attn_live_plot"


@functools.cache
def _mount() -> Any:
    """The component, registered once per process; its script is ``ui/assets/live_plot.js``."""
    return st.components.v2.component(NAME, js=asset("live_plot.js"), isolate_styles=False)


def live_plot(
    box: Any,
    spec: dict,
    key: str,
    config: dict,
    stretch: bool = False,
    fullscreen: str = "",
    on_select: Callable[[], None] | None = None,
    dark: bool | None = None,
) -> Any:
    """Draw the plotly JSON ``spec`` (already themed for the browser) in ``box`` (``st``, a container or an
    ``st.empty``) under ``key``; the next run's figure for the same key updates this chart in place.
    ``stretch``: as tall as the box (slides), else the figure's own height. ``fullscreen``: the tooltip of the
    toolbar's full-screen button. ``on_select``: called when a click picks points; ``st.session_state[key]``
    then holds ``{"selection": {"points": [...]}}`` with each point's ``customdata``, as ``st.plotly_chart``'s
    selection does. ``dark``: the colour scheme ``spec`` was themed for; when the page's scheme changes, the
    browser asks for a run (a ``scheme`` trigger) so the chart is themed again."""
    options = {
        "config": config,
        "stretch": stretch,
        "chunk": plotly_chunk(),
        "fullscreen": fullscreen,
        "select": on_select is not None,
        "dark": dark,
    }
    data = orjson.dumps(options) + b"\n" + orjson.dumps(spec)  # the figure is parsed in the browser when drawn
    events = {} if on_select is None else {"on_selection_change": on_select}
    with contextlib.nullcontext() if box is st else box:
        return _mount()(data=data, key=key, width="stretch", height="stretch" if stretch else "content", **events)
