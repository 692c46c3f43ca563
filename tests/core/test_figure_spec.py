"""figures.figure_spec: the same JSON dict plotly's own serialisation gives, for the app's real figures."""

import json

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio
import pytest

from attn_core import figures
from attn_core.views import heatmaps as hm
from attn_core.views import kv_cache as kc


def plotly_spec(fig: go.Figure) -> dict:
    return json.loads(pio.to_json(fig, validate=False))


def test_a_figure_with_arrays_nan_nested_lists_and_frames():
    fig = go.Figure(
        go.Heatmap(z=np.array([[0.5, np.nan], [1.0, 2.0]], dtype=np.float32), customdata=[["a", "b"], ["c", "d"]]),
        frames=[go.Frame(data=[go.Heatmap(z=np.arange(4, dtype=np.int64).reshape(2, 2))], name="f0")],
    )
    fig.add_scatter(x=[0.0, None, 1.5], y=np.array([1, 2, 3], dtype=np.int64), text=("x", "y", "z"))
    fig.update_layout(xaxis_range=np.array([0.0, 1.0]), title="t")
    spec = figures.figure_spec(fig)
    assert spec == plotly_spec(fig)
    assert spec["data"][0]["z"]["dtype"] == "f4"  # float32 goes out as a base64 typed array
    assert spec["layout"]["xaxis"]["range"] == [0.0, 1.0]  # plotly leaves a range as a list
    assert spec["frames"][0]["data"][0]["z"]["dtype"] == "i1"  # small int64 shrunk, as plotly does


def test_the_figure_is_not_changed():
    z = np.eye(3, dtype=np.float32)
    fig = go.Figure(go.Heatmap(z=z))
    figures.figure_spec(fig)
    assert isinstance(fig.data[0].z, np.ndarray)
    np.testing.assert_array_equal(fig.data[0].z, z)


@pytest.mark.parametrize("which", ["grid", "tensors", "memory"])
def test_the_app_s_figures(which):
    style = figures.Style()
    if which == "grid":
        p = hm.Params()
        fig = hm.grid_view(hm.grid_maps(p.layer(), p.pool), style, p.fit).figure
    else:
        p = kc.Params()
        calc = kc.calculator(p)
        view = (
            kc.tensor_view(kc.tensor_fill(p, calc), p.tag, style)
            if which == "tensors"
            else kc.memory_view(p, calc, style)
        )
        fig = view.figure
    fig = figures.apply_fonts(fig, style)
    assert figures.figure_spec(fig) == plotly_spec(fig)
