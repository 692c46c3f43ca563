"""ui.plotly_live's ties to the installed Streamlit (the browser side is tests/e2e/test_plotly_live.py)."""

from __future__ import annotations

from pathlib import Path

from ui import plotly_live
from ui.core import asset
from ui.streamlit_compat import frontend_js_dir


def test_the_plotly_chunk_is_streamlits_and_sets_window_plotly():
    name = plotly_live.plotly_chunk()
    path = frontend_js_dir() / name
    assert name.startswith("PlotlyChart.") and name.endswith(".js") and path.is_file()
    assert "window.Plotly=" in path.read_text(encoding="utf-8")  # importing it is what makes Plotly available


def test_the_component_reads_what_live_plot_sends():
    js = asset("live_plot.js")
    # one line of options, a newline, the figure; a click answers with the event st.plotly_chart's selection uses
    assert (
        "text.indexOf('\\n')" in js
        and "'selection'" in js
        and "on_selection_change" in Path(plotly_live.__file__).read_text()
    )
    assert "export default function" in js and "Plotly.react(" in js and "Plotly.newPlot" not in js
