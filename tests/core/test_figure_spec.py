"""figures.figure_spec: the same JSON dict plotly's own serialisation gives, for the app's real figures; the
arrays of a small figure as JSON lists (the same numbers), of a large one as plotly's base64 typed arrays."""

import json
import pickle

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio
import pytest

from attn_core import figures
from attn_core.views import PAGES
from attn_core.views import heatmaps as hm
from attn_core.views import kv_cache as kc
from tests.util import arr, decoded


def plotly_spec(fig: go.Figure) -> dict:
    return json.loads(pio.to_json(fig, validate=False))


def typed(node) -> int:
    """How many base64 typed arrays a plotly JSON node holds."""
    if isinstance(node, dict):
        return ("bdata" in node) + sum(typed(v) for v in node.values())
    return sum(typed(v) for v in node) if isinstance(node, list) else 0


def test_a_figure_with_arrays_nan_nested_lists_and_frames():
    fig = go.Figure(
        go.Heatmap(z=np.array([[0.5, np.nan], [1.0, 2.0]], dtype=np.float32), customdata=[["a", "b"], ["c", "d"]]),
        frames=[go.Frame(data=[go.Heatmap(z=np.arange(4, dtype=np.int64).reshape(2, 2))], name="f0")],
    )
    fig.add_scatter(x=[0.0, None, 1.5], y=np.array([1, 2, 3], dtype=np.int64), text=("x", "y", "z"))
    fig.update_layout(xaxis_range=np.array([0.0, 1.0]), title="t")
    for x in (
        np.array([1, 70000]),
        np.array([2**40, 1]),
        np.array([3, 200], dtype=np.uint64),
        np.zeros(0),
        np.array([True, False]),
        np.arange(6, dtype=np.int16).reshape(2, 3),
    ):
        fig.add_scatter(x=x, y=np.ones(len(x), dtype=np.float64))  # plotly's typed-array rules, type by type
    spec = figures.figure_spec(fig)
    assert typed(spec) == 0 and decoded(spec) == decoded(plotly_spec(fig))  # small: lists of the same numbers
    assert spec["data"][0]["z"] == [[0.5, None], [1.0, 2.0]]  # NaN as null: a gap to plotly, as NaN is
    assert spec["layout"]["xaxis"]["range"] == [0.0, 1.0]  # plotly leaves a range as a list
    assert spec["frames"][0]["data"][0]["z"] == [[0, 1], [2, 3]]
    # past PLAIN_ARRAYS_MAX numbers the figure goes out exactly as plotly writes it: typed arrays
    fig.add_scatter(y=np.linspace(0, 1, figures.base.PLAIN_ARRAYS_MAX, dtype=np.float32))
    spec = figures.figure_spec(fig)
    assert spec == plotly_spec(fig)
    assert spec["data"][0]["z"]["dtype"] == "f4"  # float32 goes out as a base64 typed array
    assert spec["frames"][0]["data"][0]["z"]["dtype"] == "i1"  # small int64 shrunk, as plotly does


def test_small_figures_send_lists_large_ones_typed_arrays_and_infinity_stays_typed():
    limit = figures.base.PLAIN_ARRAYS_MAX
    at = go.Figure(go.Scatter(x=np.arange(limit // 2), y=np.ones(limit - limit // 2, dtype=np.float32)))
    assert typed(figures.figure_spec(at)) == 0  # exactly the limit: lists
    np.testing.assert_array_equal(figures.figure_spec(at)["data"][0]["x"], np.arange(limit // 2))
    over = go.Figure(go.Scatter(x=np.arange(limit // 2 + 1), y=np.ones(limit - limit // 2, dtype=np.float32)))
    assert typed(figures.figure_spec(over)) == 2  # one more number: both arrays typed, as plotly writes them
    assert figures.figure_spec(over) == plotly_spec(over)
    scores = np.array([[0.5, -np.inf], [1.0, 2.0]], dtype=np.float32)  # a masked score: JSON has no infinity
    spec = figures.figure_spec(go.Figure(go.Heatmap(z=scores)))
    assert spec["data"][0]["z"]["dtype"] == "f4" and np.isneginf(arr(spec["data"][0]["z"])[0, 1])


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
    assert decoded(figures.figure_spec(fig)) == decoded(plotly_spec(fig))


PAGES_WITHOUT_MODELS = [p for p in PAGES if p.name != "models"]  # the models page's views need a loaded model
# the lab's default charts from 20 training steps of one seed instead of its experiment's hundreds (the same charts)
FEWER_STEPS = {"lab": {"lab_steps": 20, "lab_seeds": 1}}


@pytest.mark.parametrize("spec", PAGES_WITHOUT_MODELS, ids=lambda s: s.name)
def test_plain_figures_serialise_as_full_figures(spec):
    """Every chart a page draws at its defaults (the lab's trained for fewer steps): a PlainFigure serialised from its own dicts (never made a full
    figure) gives the dict plotly gives for the same chart built as a full figure."""
    style = figures.Style()
    p = spec.params(**FEWER_STEPS.get(spec.name, {}))
    views, again = spec.module.views(p, style), spec.module.views(p, style)
    plain = [i for i, v in enumerate(views) if isinstance(v.figure, figures.PlainFigure)]
    for i, (view, twin) in enumerate(zip(views, again, strict=True)):
        fig = figures.apply_fonts(view.figure, style)
        got = figures.figure_spec(fig)
        if i in plain:
            assert "_plain" in fig.__dict__, f"{view.name}: made a full figure to serialise"
        assert decoded(got) == decoded(plotly_spec(figures.apply_fonts(twin.figure, style))), view.name
    if spec.name in ("heatmaps", "kv_cache", "mla"):
        assert plain, f"{spec.name}: its grids and tensors are built as plain figures"


def test_a_plain_figure_becomes_a_full_one_when_touched():
    data = [dict(x=[1, 2], y=[3, 4])]  # no type: a scatter, as plotly takes it
    layout = dict(title=dict(text="t"), meta={figures.FONTS_SET: figures.Style().font})
    frames = [dict(name="0", data=[dict(type="scatter", x=[2, 3])])]
    fig = figures.PlainFigure(data, layout, frames)
    assert figures.apply_fonts(fig, figures.Style()) is fig and "_plain" in fig.__dict__  # fonts already set
    spec = figures.figure_spec(fig)
    assert spec["data"][0]["type"] == "scatter" and spec["frames"][0]["name"] == "0"
    assert fig.data[0].x == (1, 2)  # touched: a full figure from here on
    assert "_plain" not in fig.__dict__ and fig.layout.title.text == "t" and len(fig.frames) == 1
    assert figures.figure_spec(fig) == spec == plotly_spec(fig)
    fig.update_layout(height=300)
    assert fig.layout.height == 300 and "height" not in layout  # the builder's dicts were copied, not changed
    copied = pickle.loads(pickle.dumps(figures.PlainFigure(data, layout)))
    assert type(copied) is go.Figure and copied.data[0].y == (3, 4)


def test_a_figure_of_plain_lists_skips_the_encoding_walk(monkeypatch):
    """No array to encode (lists, lists of lists as a click layer's customdata, numpy scalars, frames): the tree
    goes to orjson as plotly's to_json tries it first, the same dict, without the per-node walk of ``_encoded``."""
    fig = figures.PlainFigure(
        [
            dict(
                type="scatter",
                x=[0.5, None, 2.0],
                y=[np.float64(1.5), np.int64(2), 3],
                customdata=[[0, 0.25], [1, 0.5]],
                text=("a", "b", "c"),
                marker=dict(size=4),
            )
        ],
        dict(title=dict(text="t"), xaxis=dict(range=[0, 2])),
        [dict(name="1", traces=[0], data=[dict(type="scatter", x=[1.0, 2.0, 3.0])])],
    )
    want = plotly_spec(
        go.Figure(fig.__dict__["_plain"][0], fig.__dict__["_plain"][1], frames=fig.__dict__["_plain"][2])
    )

    def walked(*_args, **_kw):
        raise AssertionError("a figure of plain lists was walked node by node")

    monkeypatch.setattr(figures.base, "_encoded", walked)
    got = figures.figure_spec(fig)
    assert got == want
    assert got["data"][0]["customdata"] == [[0, 0.25], [1, 0.5]] and got["data"][0]["y"] == [1.5, 2, 3]
    assert got["data"][0]["x"] == [0.5, None, 2.0] and got["frames"][0]["data"][0]["x"] == [1.0, 2.0, 3.0]
    with pytest.raises(AssertionError, match="walked"):  # an array to encode still takes the walk
        figures.figure_spec(go.Figure(go.Scatter(y=np.arange(3.0))))
