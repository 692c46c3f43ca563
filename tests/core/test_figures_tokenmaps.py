"""Token-centred maps: the grid's click layer, one query row's outline, the line view and its sentence.

The weights come from the engine (``longmaps.pooled_attention`` on the seeded layer); the figures are
checked against those numbers: the outline on the right row of the right heads, one click point per
drawn cell carrying its head and weight, line widths equal to the map's weights.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from attn_core import figures
from attn_core.attention.longmaps import PooledMaps, pooled_attention
from attn_core.attention.tokens import tokenize
from attn_core.views import heatmaps as hm
from tests.util import arr, grid_panel, seeded

SENTENCE = tokenize("The cat sat on the mat because it was tired .")


def grid_of(n_heads=8, n_kv=2, tokens=SENTENCE, mask="none", **kw) -> PooledMaps:
    return seeded(
        pooled_attention, n_heads, n_kv, 8, list(tokens), mask_kind=mask, max_side=figures.grid_side(n_heads), **kw
    )


def spec_of(pm, focus=None, style=figures.Style()) -> dict:
    return json.loads(hm.grid_view(pm, style, False, focus).figure.to_json())


def outlines(spec: dict) -> list[dict]:
    return [s for s in spec["layout"]["shapes"] if s.get("name") == "focus"]


def frame(spec: dict, i: int) -> dict:
    return [s for s in spec["layout"]["shapes"] if s["layer"] == "above" and s.get("name") != "focus"][i]


@pytest.mark.parametrize("mask", ["none", "causal"])
def test_outline_is_on_the_query_row_in_every_head_of_the_group(mask):
    pm = grid_of(mask=mask)
    assert outlines(spec_of(pm)) == []
    spec = spec_of(pm, (2, 1))  # query "sat (2)", KV group 1 = heads 4..7 = panels 4..7
    got = outlines(spec)
    assert len(got) == 8  # a white band and a black line in each of the four panels
    assert [s["line"]["color"] for s in got[:2]] == list(figures.OUTLINE_COLOURS)
    heat = spec["data"][0]
    for k, i in enumerate(range(4, 8)):
        f = frame(spec, i)
        for s in got[2 * k : 2 * k + 2]:  # across the whole panel, around its third row: sat (2)
            assert (s["xref"], s["yref"], s["x0"], s["x1"]) == ("x", "y", f["x0"], f["x1"])
            assert s["y1"] - s["y0"] == 1 and heat["y"][int(s["y0"] + 0.5)].replace("\u200b", "") == "sat (2)"
            assert s["y0"] == f["y0"] + 2
    # a group or token that is not there outlines nothing
    assert outlines(spec_of(pm, (2, 2))) == [] and outlines(spec_of(pm, (11, 0))) == []


def test_pooled_grid_outlines_the_block_row_holding_the_query():
    pm = grid_of(64, 8, [f"t{i}" for i in range(64)])  # 64 heads: 55 cells a side, blocks of 2 queries
    assert pm.factor == 2
    spec = spec_of(pm, (37, 3))
    got = outlines(spec)
    assert len(got) == 16  # two rectangles in each of the 8 heads of group 3
    for k, h in enumerate(range(24, 32)):
        f = frame(spec, h)
        assert all((s["x0"], s["x1"], s["y0"] - f["y0"]) == (f["x0"], f["x1"], 18) for s in got[2 * k : 2 * k + 2])
    note = hm.focus_pooled_note(pm, 37, figures.Style())  # block row 18 holds queries 36 and 37
    assert "block of 2 queries" in note and "positions 36–37" in note and "“t37” (37)" in note


def test_click_layer_has_one_point_per_cell_with_its_head_and_weight():
    pm = grid_of(mask="causal")
    spec = spec_of(pm)
    heat, *clicks = spec["data"]
    assert heat["type"] == "heatmap" and len(clicks) == 2  # the allowed cells, the masked cells: every panel's
    z = arr(heat["z"])
    seen = set()
    for tr in clicks:
        assert tr["marker"]["opacity"] == 0 and tr["selected"]["marker"]["opacity"] == 0
        assert tr["marker"]["maxdisplayed"] == 1 and "xaxis" not in tr
        cols = [heat["x"].index(x) for x in tr["x"]]  # each point on its cell of the heatmap
        rows = [heat["y"].index(y) for y in tr["y"]]
        for cd, r, c in zip(tr["customdata"], rows, cols, strict=True):
            f = frame(spec, cd[0])  # the point lies in its head's panel; its KV group is the head's
            assert f["x0"] < c < f["x1"] and f["y0"] < r < f["y1"] and cd[2] == cd[0] // 4
            seen.add((cd[0], r, c))
        if "masked" in tr["hovertemplate"]:
            assert np.isnan(z[rows, cols]).all() and len(rows) == 8 * 55  # the upper triangle of 11 × 11
            assert all(cd[1] is None for cd in tr["customdata"])
        else:
            assert len(rows) == 8 * 66
            np.testing.assert_allclose([cd[1] for cd in tr["customdata"]], z[rows, cols], atol=1e-6)
            hover = tr["hovertemplate"]
            assert "<b>head %{customdata[0]}</b> · KV %{customdata[2]}" in hover
            assert "query %{y}" in hover and "key %{x}" in hover and "click: open this head" in hover
    assert len(seen) == 8 * 121  # one point on each cell of each panel


def test_large_grids_get_one_click_point_per_block():
    pm = grid_of(8, 2, [f"t{i}" for i in range(600)])
    assert pm.weights.shape == (8, 150, 150)
    step = figures.click_step(8, 150, 150)
    assert step > 1 and 8 * (-(-150 // step)) ** 2 <= figures.CLICK_POINTS
    spec = spec_of(pm)
    clicks = [t for t in spec["data"] if t["type"] == "scatter"]
    assert sum(len(t["x"]) for t in clicks) == 8 * (-(-150 // step)) ** 2
    z, _, _ = grid_panel(spec, 3)
    tr = clicks[0]
    first = next(i for i, cd in enumerate(tr["customdata"]) if cd[0] == 3)
    # head 3's first point covers the block of rows and columns 0..step-1: its weight is that block's largest
    assert tr["customdata"][first][1] == pytest.approx(float(np.nanmax(z[:step, :step])), abs=1e-6)
    assert f"{step}×{step} block" in tr["hovertemplate"] and "largest weight" in tr["hovertemplate"]
    assert len(json.dumps(clicks)) < 250_000


def test_zoom_has_no_click_layer():
    pm = seeded(pooled_attention, 8, 2, 8, list(SENTENCE), heads=(5,), window=(0, 11, 0, 11))
    spec = spec_of(pm)
    assert [t["type"] for t in spec["data"]] == ["heatmap"]


@pytest.mark.parametrize("mask,cross", [("none", False), ("causal", False), ("padding", False), ("none", True)])
def test_line_widths_equal_the_weights_of_the_map(mask, cross):
    kw = dict(tokens_k=tokenize("Le chat était fatigué .")) if cross else {}
    kw |= dict(pad_len=7) if mask == "padding" else {}
    pm = grid_of(mask=mask, **kw)
    layer = seeded(lambda src, **_: src, 8, 2, 8, list(SENTENCE), mask_kind=mask, **kw)
    q = 3
    rows = hm.focus_rows(layer, hm.group_heads(8, 2, 1), q)
    np.testing.assert_allclose(rows.weights[:, 0, :], pm.weights[4:8, q, :], rtol=1e-5, atol=1e-6, equal_nan=True)
    fig = json.loads(hm.lines_view(rows, figures.Style()).figure.to_json())
    lines = fig["layout"]["shapes"]
    for i, head in enumerate(range(4, 8)):
        n = "" if i == 0 else str(i + 1)
        mine = [s for s in lines if s["xref"] == f"x{n}"]
        w = pm.weights[head, q]
        allowed = np.flatnonzero(np.isfinite(w) & (w > 0))
        assert [s["y1"] for s in mine] == list(allowed) and all(s["y0"] == q for s in mine)
        np.testing.assert_allclose([s["line"]["width"] / figures.LINE_MAX_PX for s in mine], w[allowed], rtol=1e-5)
        keys = next(t for t in fig["data"] if t["name"] == f"keys {head}")
        shown = [cd[4] for cd in keys["customdata"]]
        masked = figures.Style().t("fig.masked")
        assert shown == [f"{v:.4f}" if np.isfinite(v) else masked for v in rows.weights[i, 0]]
        assert f"<b>head {head}</b> · KV 1" in keys["hovertemplate"] and "%{customdata[4]}" in keys["hovertemplate"]
        queries = next(t for t in fig["data"] if t["name"] == f"queries {head}")
        assert [cd[1] for cd in queries["customdata"]] == list(range(11)) and queries["text"][q] == "<b>on (3)</b>"
    if mask == "causal":
        assert {s["y1"] for s in lines} == {0, 1, 2, 3}  # no line to a key after the query


def test_focus_sentence_is_chosen_from_the_numbers():
    def rows(w):
        w = np.asarray(w, dtype=np.float32)[:, None, :]
        toks = ("a", "b", "c")
        return PooledMaps(
            w, np.ones((1, 3), bool), None, 1, "max", (2, 3), 4, 2, toks, toks, (1, 2), (0, 3), 1.0, "cpu"
        )

    s = figures.Style()
    text = hm.focus_sentence(rows([[0.2, 0.7, 0.1], [0.6, 0.3, 0.1]]), s)
    assert "Where “b” (1) attends most in KV group 1: head 2 → “b” (1) (0.700); head 3 → “a” (0) (0.600)." in text
    assert "differ by up to 0.400" in text  # |0.7 - 0.3| = |0.2 - 0.6| = 0.4
    same = hm.focus_sentence(rows([[0.2, 0.7, 0.1], [0.2, 0.7, 0.1]]), s)
    assert "give this token the same weights (largest difference 0.000)" in same
    zh = hm.focus_sentence(rows([[0.2, 0.7, 0.1], [0.6, 0.3, 0.1]]), figures.Style(lang="zh"))
    assert "头 2 → “b” (1)（0.700）；头 3 → “a” (0)（0.600）" in zh and "最多相差 0.400" in zh


def test_clicked_points_are_checked():
    ok = [{"curve_number": 9, "customdata": [5, 0.25]}]
    assert hm.clicked(ok, 0, None, 8) == 5
    bad = [
        None,
        [],
        "x",
        [{}],
        [{"customdata": []}],
        [{"customdata": ["5"]}],
        [{"customdata": [8]}],
        [{"customdata": [-1]}],
        [{"customdata": [True]}],
        [{"customdata": [2.5]}],
        [{"customdata": None}],
    ]
    assert all(hm.clicked(b, 0, None, 8) is None for b in bad)
    assert hm.clicked([{"customdata": [4, 3, "on (3)", "q"]}], 1, "q", 11) == 3
    assert hm.clicked([{"customdata": [4, 3, "on (3)", "k", "0.1"]}], 1, "q", 11) is None  # a key, not a query


def test_head_colours_are_shades_of_the_group_hue():
    shades = [figures.head_colour(1, k, 4) for k in range(4)]
    assert len(set(shades)) == 4
    assert figures.head_colour(1, 0, 1) == figures.group_color(1).lower()
    lum = [sum(int(c[i : i + 2], 16) for i in (1, 3, 5)) for c in shades]
    assert lum == sorted(lum)  # darker to lighter
