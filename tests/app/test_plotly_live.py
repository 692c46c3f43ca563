"""ui.plotly_live's ties to the installed Streamlit (the browser side is tests/e2e/test_plotly_live.py)."""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from ui import plotly_live


def test_the_plotly_chunk_is_streamlits_and_sets_window_plotly():
    name = plotly_live.plotly_chunk()
    path = Path(st.__file__).parent / "static" / "static" / "js" / name
    assert name.startswith("PlotlyChart.") and name.endswith(".js") and path.is_file()
    assert "window.Plotly=" in path.read_text(encoding="utf-8")  # importing it is what makes Plotly available


def test_the_component_reads_what_live_plot_sends():
    js = plotly_live.JS
    # one line of options, a newline, the figure; a click answers with the event st.plotly_chart's selection uses
    assert (
        "text.indexOf('\\n')" in js
        and "'selection'" in js
        and "on_selection_change" in Path(plotly_live.__file__).read_text()
    )
    assert "export default function" in js and "Plotly.react(" in js and "Plotly.newPlot" not in js
