"""The trivial one-slider Streamlit app that bench/bench.py measures beside Attention Explorer.

One integer slider (key ``n``, 1 to 50, default 5) and one small plotly chart that depends on it: a
line of 200 points, ``sin(2π·n·x)`` on ``[0, 1]`` (key ``chart``). No cache, no sidebar, no page
config. The benchmark starts it with the same server flags and ``.streamlit/config.toml`` as the app
(``harness.start_server(script="bench/trivial_app.py")``), so the difference between the two is the
app's own work: what it computes, builds and draws.
"""

import numpy as np
import plotly.graph_objects as go
import streamlit as st

n = st.slider("Frequency n", 1, 50, 5, key="n")
x = np.linspace(0.0, 1.0, 200)
st.plotly_chart(go.Figure(go.Scatter(x=x, y=np.sin(2 * np.pi * n * x), mode="lines")), key="chart")
