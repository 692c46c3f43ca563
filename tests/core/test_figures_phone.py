"""attn_core.figures.phone: one panel of a head grid alone for a phone, and whether a title fits a phone."""

from __future__ import annotations

import json

import numpy as np
import plotly.io as pio
import pytest

from attn_core import figures
from attn_core.figures import phone
from attn_core.figures.margins import text_width
from attn_core.views import heatmaps as hm
from tests.util import arr, grid_panel


def grid_spec(style: figures.Style, **params) -> dict:
    p = hm.Params(**params)
    v = hm.grid_view(hm.grid_maps(p.layer(), p.pool), style, p.fit)
    return json.loads(pio.to_json(figures.apply_fonts(v.figure, style), validate=False))


@pytest.fixture(scope="module")
def default_grid() -> dict:
    return grid_spec(figures.Style())


def test_panels_are_the_grid_heads_in_order(default_grid):
    panels = phone.grid_panels(default_grid)
    assert [head for head, _ in panels] == list(range(8))
    assert [title for _, title in panels] == [f"head {h} · KV {h // 4}" for h in range(8)]
    single = {"data": [{"type": "heatmap", "z": [[1]]}], "layout": {}}
    assert phone.grid_panels(single) == []  # not a grid
    zoom = hm.grid_view(hm.zoom_maps(hm.Params().layer(), 3, (0, 11, 0, 11), "max"), figures.Style())
    assert phone.grid_panels(json.loads(pio.to_json(zoom.figure, validate=False))) == []  # one panel: nothing to pick


@pytest.mark.parametrize("i", [0, 5, 7])
def test_one_panel_is_the_grids_panel_alone_every_token_labelled(default_grid, i):
    one = phone.one_panel(default_grid, i, figures.Style())
    (trace,) = one["data"]
    z, labels_q, labels_k = grid_panel(default_grid, i)
    np.testing.assert_array_equal(arr(trace["z"]), z)  # the same weights, cut from the grid's heatmap
    assert trace.get("xaxis", "x") == "x" and trace.get("yaxis", "y") == "y"
    assert trace["hovertemplate"].startswith(f"<b>head {i}</b> · KV {i // 4}<br>query %{{y}}<br>key %{{x}}")
    assert trace["x"] == labels_k and trace["y"] == labels_q  # the labels themselves, no zero-width suffix
    lay = one["layout"]
    tokens = "The cat sat on the mat because it was tired .".split()
    labels = [f"{t} ({j})" for j, t in enumerate(tokens)]
    assert labels_k == labels
    assert lay["xaxis"]["tickvals"] == labels and lay["yaxis"]["tickvals"] == labels  # all 11, both axes
    assert lay["xaxis"]["tickfont"]["size"] >= figures.MIN_TICK_FONT
    assert lay["xaxis"]["domain"] == [0, 1] and "matches" not in lay["xaxis"]
    assert lay["yaxis"]["range"] == [10.5, -0.5]  # query 0 at the top
    assert (lay["xaxis"]["title"]["text"], lay["yaxis"]["title"]["text"]) == ("key", "query")
    (title,) = lay["annotations"]
    assert title["text"] == default_grid["layout"]["annotations"][i]["text"] and title["xref"] == "x domain"
    assert [s["xref"] for s in lay["shapes"]] == ["x domain"]  # the KV group's frame
    assert lay["coloraxis"]["cmax"] == default_grid["layout"]["coloraxis"]["cmax"] == 1.0  # the grid's scale
    assert lay["coloraxis"]["colorbar"]["orientation"] == "h" and lay["dragmode"] is False
    plot_w = phone.PHONE_PX - lay["margin"]["l"] - lay["margin"]["r"]
    plot_h = lay["height"] - lay["margin"]["t"] - lay["margin"]["b"]
    assert 150 <= plot_w and abs(plot_h - plot_w) <= 2  # square cells, room for the labels on a 390-px phone


def test_a_long_panel_thins_its_labels_and_says_so():
    style = figures.Style()
    spec = grid_spec(style, source="synthetic", seq_len=64, n_heads=4, n_kv_heads=2)
    one = phone.one_panel(spec, 3, style)
    lay = one["layout"]
    labels, ticks = list(one["data"][0]["x"]), lay["xaxis"]["tickvals"]
    step = labels.index(ticks[1])
    assert ticks == labels[::step] and len(labels) == 64
    assert step > 1 and lay["xaxis"]["tickfont"]["size"] == figures.MIN_TICK_FONT
    assert f"1 label in {step}" in lay["annotations"][0]["text"]
    # one line an axis: on one line, centred over the plot, the note reached past a phone's right edge
    zh = phone.one_panel(
        grid_spec(figures.Style(lang="zh"), source="synthetic", seq_len=64), 3, figures.Style(lang="zh")
    )
    text = zh["layout"]["annotations"][0]["text"]
    assert text.count("<br><sub>") == 2 and "<sub>查询轴：" in text and "<sub>键轴：" in text
    assert zh["layout"]["margin"]["t"] >= 34 + 2 * 18


def test_title_fits():
    assert phone.title_fits("Attention weights", 16)
    assert not phone.title_fits("Attention weights: 8 query heads, 2 KV groups (frame colour = KV group)", 16)
    assert phone.title_fits("Scores<br><sub>a note that is long but drawn smaller, it fits</sub>", 16)
    assert not phone.title_fits("注意力权重：8 个查询头、2 个 KV 组（框的颜色即 KV 组）", 16)  # CJK: 1 em a character
    assert phone.title_fits("", 16)


def test_a_followed_tokens_row_is_outlined_on_the_lone_panel_too():
    style = figures.Style()
    p = hm.Params()
    pm = hm.grid_maps(p.layer(), p.pool)
    spec = json.loads(pio.to_json(hm.grid_view(pm, style, False, (3, 1)).figure, validate=False))  # "on" (3), KV 1
    for i in range(8):
        outlined = [s for s in phone.one_panel(spec, i, style)["layout"]["shapes"] if s.get("name") == "focus"]
        if i < 4:  # KV group 0: not followed
            assert outlined == []
        else:  # a white band and a black line around row 3 (rows at 0, 1, 2 ...: 2.5 .. 3.5), the panel's width
            assert [(s["y0"], s["y1"], s["x0"], s["x1"], s["xref"]) for s in outlined] == [
                (2.5, 3.5, 0, 1, "x domain")
            ] * 2
            assert [s["line"]["color"] for s in outlined] == list(figures.OUTLINE_COLOURS)


@pytest.mark.parametrize(
    "params",
    [
        {},  # the sentence's 11 tokens
        {"text": "猫坐在垫子上，它累了。"},
        {"text": "The cat sat on the mat. The dog sat on the rug. Then the cat sat on the mat again."},
        {"source": "synthetic", "seq_len": 40},
    ],
)
def test_a_zoom_on_a_phone_plans_its_labels_for_the_phones_width(params):
    """The zoom (one head) is planned for a page's width; its phone copy's labels fit the phone's: neighbouring
    key labels apart across their baselines as turned, rows a font and a tenth apart (the audit found key labels
    overlapping by up to 8 px on a phone's zoom)."""
    p = hm.Params(**params)
    t = p.t_q
    zoom = hm.grid_view(hm.zoom_maps(p.layer(), 0, (0, t, 0, t), "max"), figures.Style())
    one = phone.one_panel(json.loads(pio.to_json(zoom.figure, validate=False)), 0, figures.Style())
    lay = one["layout"]
    x, y = lay["xaxis"], lay["yaxis"]
    plot_w = phone.PHONE_PX - lay["margin"]["l"] - lay["margin"]["r"]
    plot_h = lay["height"] - lay["margin"]["t"] - lay["margin"]["b"]
    kx, ky = t // len(x["tickvals"]), t // len(y["tickvals"])
    pitch_x, pitch_y = plot_w / t * max(1, kx), plot_h / t * max(1, ky)
    font_x, font_y = x["tickfont"]["size"], y["tickfont"]["size"]
    assert pitch_y >= figures.ROW_PITCH * font_y - 0.5
    angle = abs(x.get("tickangle", 0))
    widest = max(text_width(s, font_x) for s in x["ticktext"])
    if angle == 0:
        assert pitch_x >= widest + 0.5 * font_x - 0.5
    else:
        assert pitch_x * np.sin(np.radians(angle)) >= figures.ROW_PITCH * font_x - 0.5, (angle, pitch_x, font_x)
