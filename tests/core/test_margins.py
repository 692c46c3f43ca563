"""Margins reserved for the labels (attn_core.figures.margins): what plotly's automargin would ask for in the app.

The reference numbers were measured in the app (Streamlit 1.67's chart theme, Chromium, a 1440 px window):
the final margins plotly's automargin gave each chart of the default pages (``gd._fullLayout._size``) and the
width of label texts in the chart font. The browser test (tests/e2e/test_pages.py) checks the other half: with
these margins plotly pushes nothing, so it lays each chart out once.
"""

from __future__ import annotations

import json
import math

import plotly.io as pio
import pytest

from attn_core.figures import Style, apply_fonts
from attn_core.figures.margins import pin_axes, reserve_margins, text_width
from attn_core.views import page

# Chromium's SVG text widths at 13 px in Streamlit's chart font (Source Sans)
MEASURED_WIDTHS = [("because (6)", 61.9), ("query heads (8)", 83.8), ("∂p_i/∂z_j (fixed ±0.25)", 118.8), ("0.4", 16.7)]
# view name prefix -> (l, r, b) plotly's automargin made of the builders' 10 px margins, Streamlit 1.67, Chromium
AUTOMARGIN = {
    "attention_weights": (108, 114, 106),  # two panels a row, planned for a 1280 px window's main column
    "scores_": (76, 10, 67),
    "maps_": (102, 113, 104),
    "saturation_sweep": (76, 10, 70),  # log ticks written out at the tick font
    "gradient_sweep": (79, 10, 84),
    "row0": (70, 192, 104),
    "float16": (70, 10, 97),
    "kv_diagram": (103, 10, 10),
    "kv_cache_": (89, 18, 94),
}
MAX_EXTRA = 8  # px a reserved side may exceed what automargin made it (the charts look the same)


@pytest.mark.parametrize("text,px", MEASURED_WIDTHS)
def test_text_width_matches_the_browser(text, px):
    assert text_width(text, 13) == pytest.approx(px, abs=0.6)


@pytest.fixture(scope="module")
def default_specs() -> dict[str, dict]:
    """The charts of the four pages at their defaults, as the page sends them (fonts and margins applied)."""
    style, out = Style(), {}
    for name, which in (("heatmaps", None), ("saturation", None), ("kv_sharing", "diagram"), ("kv_cache", None)):
        p = page(name)
        for view in p.views(p.params(), style, which):
            out[view.name] = json.loads(pio.to_json(apply_fonts(view.figure, style), validate=False))
    return out


def test_reserved_margins_hold_what_automargin_asked_for_and_little_more(default_specs):
    specs = default_specs
    for prefix, wanted in AUTOMARGIN.items():
        name = next(n for n in specs if n.startswith(prefix))
        m = specs[name]["layout"]["margin"]
        got = (m["l"], m["r"], m["b"])
        assert all(want <= have <= want + MAX_EXTRA for want, have in zip(wanted, got, strict=True)), (name, got)


def test_reserving_twice_changes_nothing_and_never_narrows(default_specs):
    for name, spec in default_specs.items():
        before = dict(spec["layout"]["margin"])
        assert reserve_margins(spec)["layout"]["margin"] == before, name
    wide = {
        "layout": {"margin": {"l": 300, "r": 300, "t": 50, "b": 300}, "yaxis": {"title": {"text": "y"}}},
        "data": [],
    }
    assert reserve_margins(wide)["layout"]["margin"] == {"l": 300, "r": 300, "t": 50, "b": 300}


def test_longer_labels_and_larger_fonts_get_more_room():
    def spec(label: str, size: int) -> dict:
        axis = {"type": "category", "tickfont": {"size": size}}
        trace = {"type": "bar", "x": ["a", "b"], "y": [label, label + "!"]}
        return {"layout": {"margin": {"l": 10, "r": 10, "t": 10, "b": 10}, "yaxis": axis}, "data": [trace]}

    short, long_, big = (
        reserve_margins(spec(t, s))["layout"]["margin"]["l"]
        for t, s in [("ab", 13), ("a much longer label", 13), ("ab", 26)]
    )
    assert short < big and short < long_
    assert long_ - short == pytest.approx(text_width("a much longer label!", 13) - text_width("ab!", 13), abs=1)


def test_the_grid_grows_by_its_bottom_margin_so_its_panels_keep_their_height():
    """The grid's key labels take more room than its builder's first estimate: the figure grows, the panels
    keep the height their labels were planned for (in the browser too: plotly has nothing left to push)."""
    import numpy as np

    from attn_core.figures.heatmaps import HeadGrid, _geometry, heatmap_grid

    labels = [f"{w} ({i})" for i, w in enumerate("The cat sat on the mat because it was tired .".split())]
    weights = np.random.default_rng(0).dirichlet(np.ones(11), size=(8, 11)).astype(np.float32)
    grid = HeadGrid(weights, tuple(range(8)), 8, 2, labels, labels)
    lay = apply_fonts(heatmap_grid(grid, Style()), Style()).layout
    assert lay.height - lay.margin.t - lay.margin.b == _geometry(grid, Style()).plot_h
    assert AUTOMARGIN["attention_weights"][2] <= lay.margin.b <= AUTOMARGIN["attention_weights"][2] + MAX_EXTRA


def test_an_odd_figure_keeps_its_margins_and_never_fails():
    odd = {
        "layout": {
            "margin": {"l": 10, "r": 10, "t": 10, "b": 10},
            "xaxis": {"type": "log", "range": [None, "x"]},
            "yaxis": {"tickfont": {"size": "big"}},
        },
        "data": [{"type": "heatmap", "z": [[None, "a"]], "showscale": True}],
    }
    assert reserve_margins(odd)["layout"]["margin"] == {"l": 10, "r": 10, "t": 10, "b": 10}
    assert reserve_margins({"data": []}) == {"data": []}


def _rotated_layout(labels: list[str]) -> tuple[dict, list[dict]]:
    """Two panels of rotated key labels and one query axis, with Streamlit's title standoffs written in."""
    data = [
        dict(type="heatmap", z=[[0.0] * len(labels)] * 2, x=labels, y=["a", "b"], xaxis=f"x{s}", yaxis="y")
        for s in ("", "2")
    ]
    axis = dict(type="category", tickangle=-60, tickfont=dict(size=13), anchor="y")
    title = dict(text="key", font=dict(size=15, color="#31333F"), standoff=20)
    layout = dict(
        font=dict(size=13),
        xaxis=dict(axis, domain=[0.0, 0.45], title=title, automargin=True),
        xaxis2=dict(axis, domain=[0.55, 1.0], title=title, automargin=True),
        yaxis=dict(
            type="category",
            tickfont=dict(size=13),
            automargin=True,
            title=dict(text="query", font=dict(size=15), standoff=24),
        ),
        annotations=[dict(text="panel", x=0.2, y=1.0, xref="paper", yref="paper")],
    )
    return layout, data


def test_pinned_axes_draw_their_titles_as_annotations_and_measure_nothing():
    layout, data = _rotated_layout([f"x{i}" for i in range(12)])
    kept = json.dumps(layout, sort_keys=True)
    out = pin_axes(layout, data, ["xaxis", "xaxis2", "yaxis", "yaxis9"])
    assert json.dumps(layout, sort_keys=True) == kept  # a new layout: the browser's cached spec stays as it was
    for name in ("xaxis", "xaxis2", "yaxis"):
        assert out[name]["automargin"] is False and out[name]["title"] == {"text": ""}
        assert out[name].get("tickangle") == layout[name].get("tickangle")  # the labels themselves are untouched
    first, *titles = out["annotations"]
    assert first == layout["annotations"][0]  # the figure's own annotations come first, unchanged
    assert [(a["text"], a["xref"], a["yref"]) for a in titles] == [
        ("key", "x domain", "y domain"),
        ("key", "x2 domain", "y domain"),
        ("query", "x domain", "y domain"),
    ]
    key, _, query = titles
    assert (key["x"], key["y"], key["xanchor"], key["yanchor"]) == (0.5, 0.0, "center", "top")
    assert (query["x"], query["y"], query["textangle"], query["xanchor"]) == (0.0, 0.5, -90, "right")
    assert key["font"] == {"size": 15.0, "color": "#31333F"} and not key["showarrow"]
    # below the rotated labels: "x11" at 13 px turned 60° reaches ~21 px + the gaps, then the 20 px standoff
    assert -60 < key["yshift"] < -25
    assert -60 < query["xshift"] < -25  # left of "x0"-wide labels (~14 px + gap) and the 24 px standoff


def test_pinned_titles_move_with_the_length_of_the_labels():
    short = pin_axes(*_rotated_layout(["a", "b"]), ["xaxis", "yaxis"])["annotations"]
    long = pin_axes(*_rotated_layout(["a rather long token", "b"]), ["xaxis", "yaxis"])["annotations"]
    # the key title goes down by the longer label's extra reach (sin 60° of its extra width) ...
    grown = text_width("a rather long token", 13) - text_width("b", 13)  # the widest label of each
    assert short[1]["yshift"] - long[1]["yshift"] == pytest.approx(grown * math.sin(math.radians(60)), abs=0.5)
    assert short[2]["xshift"] == long[2]["xshift"]  # ... the query labels ("a", "b") did not change


def test_axes_pinning_cannot_place_are_left_as_they_were():
    layout, data = _rotated_layout(["a", "b"])
    layout["xaxis2"]["side"] = "top"  # only bottom x and left y axes are pinned
    layout["yaxis"]["visible"] = False
    out = pin_axes(layout, data, ["xaxis2", "yaxis", "xaxis7", "legend"])
    assert out["xaxis2"] == layout["xaxis2"] and out["yaxis"] == layout["yaxis"]
    assert "xaxis7" not in out and out["annotations"] == layout["annotations"]


def test_the_last_x_label_at_a_line_s_end_gets_half_its_width_on_the_right():
    """An axis left to autorange ends where its lines end: a tick there (the cost page's n = 65,536) needs half its
    label's width right of the plot, else plotly hides it ("hide past div"). Markers pad the range: no room asked."""
    ticks = dict(type="log", tickvals=[16, 256, 4096, 65536], ticktext=["16", "256", "4,096", "65,536"])

    def spec(mode: str, last: int = 65536) -> dict:
        trace = {"type": "scatter", "mode": mode, "x": [16, 1024, last], "y": [1, 2, 3]}
        return {"layout": {"margin": {"l": 10, "r": 10, "t": 10, "b": 10}, "xaxis": dict(ticks)}, "data": [trace]}

    half = text_width("65,536", 12) / 2
    assert half > 10
    room = (half, half + 10 + 4)  # plotly's own push: half the label and its 10 px gap (and our 3 px of slack)
    assert room[0] < reserve_margins(spec("lines"))["layout"]["margin"]["r"] <= room[1]
    assert reserve_margins(spec("lines+markers"))["layout"]["margin"]["r"] == 10
    assert reserve_margins(spec("lines", last=60000))["layout"]["margin"]["r"] == 10  # the line stops short of it
    fixed = spec("lines+markers", last=60000)
    fixed["layout"]["xaxis"]["range"] = [1, math.log10(65536)]  # a set range ends where it says
    assert room[0] < reserve_margins(fixed)["layout"]["margin"]["r"] <= room[1]
