"""A one-chart Streamlit app for ``tools/capture_chart_theme.py``: a heatmap and a line on two axes, drawn with
Streamlit's own chart theme (``theme="streamlit"``), which the app itself no longer uses (ui.chart_theme)."""

import plotly.graph_objects as go
import streamlit as st

fig = go.Figure([go.Heatmap(z=[[0.0, 1.0], [1.0, 0.0]]), go.Scatter(y=[1, 2], xaxis="x2", yaxis="y2")])
fig.update_layout(title="theme", xaxis={"domain": [0, 0.45]}, xaxis2={"domain": [0.55, 1]}, yaxis2={"anchor": "x2"})
st.plotly_chart(fig, key="themed", theme="streamlit")
