"""ui.chart_theme: Streamlit's chart theme written into a figure (the browser test ``tests/e2e/test_chart_theme.py``
checks in plotly.js that it draws as the theme given as a template does)."""

from __future__ import annotations

import copy
import json

from attn_core import figures
from attn_core.figures.margins import PINNED
from attn_core.views import heatmaps as hm
from attn_core.views import saturation as sat
from ui import chart_theme as ct


def grid_spec() -> dict:
    p = hm.Params()
    fig = figures.apply_fonts(hm.grid_view(hm.grid_maps(p.layer(), p.pool), figures.Style(), p.fit).figure,
                              figures.Style())  # fmt: skip
    return figures.figure_spec(fig)


def test_the_theme_file_has_both_schemes():
    themes = ct.themes()
    light, dark = themes["light"]["layout"], themes["dark"]["layout"]
    assert light["paper_bgcolor"].upper() == "#FFFFFF" and dark["paper_bgcolor"] != light["paper_bgcolor"]
    assert light["font"]["family"] == dark["font"]["family"] == '"Source Sans", sans-serif'
    assert {"xaxis", "yaxis", "coloraxis", "hoverlabel"} <= set(light) and "minor" not in light["xaxis"]
    assert "scatter" in themes["light"]["data"] and "heatmap" in themes["dark"]["data"]


def test_own_values_win_dicts_merge_and_nothing_is_changed():
    own = {"a": 1, "font": {"size": 20}, "list": [1, 2]}
    theme = {"a": 0, "b": 2, "font": {"size": 12, "color": "#111"}, "list": [9]}
    kept = copy.deepcopy((own, theme))
    out = ct.under(own, theme)
    assert out == {"a": 1, "b": 2, "font": {"size": 20, "color": "#111"}, "list": [1, 2]}
    assert (own, theme) == kept
    out["font"]["color"] = "#222"
    assert theme["font"]["color"] == "#111"  # a deep copy: the shared theme is never reached through a result


def test_the_grid_gets_the_theme_written_in():
    spec = grid_spec()
    before = json.dumps(spec, sort_keys=True)
    out = ct.browser_spec(spec, dark=False, selectable=True)
    assert json.dumps(spec, sort_keys=True) == before  # the cached spec is shared: never changed
    lay, theme = out["layout"], ct.themes()["light"]["layout"]
    assert "template" not in lay and "meta" not in lay and lay["datarevision"] == 1
    assert lay["title"]["text"] == f"<b>{spec['layout']['title']['text']}</b>"  # bold, as Streamlit writes it
    assert lay["paper_bgcolor"] == theme["paper_bgcolor"] and lay["font"]["family"] == theme["font"]["family"]
    axes = [k for k in lay if k.startswith(("xaxis", "yaxis"))]
    assert axes == ["xaxis", "yaxis"]  # every panel on one pair of axes
    for k in axes:
        own = spec["layout"][k]
        size = own.get("tickfont", {}).get("size", ct.themes()["light"]["layout"][k[0] + "axis"]["tickfont"]["size"])
        assert lay[k]["tickfont"]["size"] == size  # the figure's own font size wins over the theme's
        assert lay[k]["tickfont"]["color"] == theme[k[0] + "axis"]["tickfont"]["color"]  # the theme's colour under it
        assert lay[k]["ticks"] == "outside"  # a heatmap's axes: plotly ticks them, template or not
    assert lay["coloraxis"]["colorscale"] == spec["layout"]["coloraxis"]["colorscale"]  # viridis stays
    assert lay["coloraxis"]["colorbar"]["thickness"] == theme["coloraxis"]["colorbar"]["thickness"]
    assert (lay["clickmode"], lay["hovermode"], lay["dragmode"]) == ("event+select", "closest", "pan")
    scatter = ct.themes()["light"]["data"]["scatter"][0]
    for trace in out["data"]:
        if trace["type"] == "scatter":  # the click layer: the theme's scatter defaults under its own marker
            assert trace["marker"]["line"] == scatter["marker"]["line"] and trace["marker"]["maxdisplayed"] == 1
    assert "clickmode" not in ct.browser_spec(spec)["layout"]  # a chart that selects nothing keeps plotly's modes


def test_dark_scheme_and_line_charts():
    style = figures.Style()
    p = sat.Params()
    views = sat.views(p, style)
    spec = figures.figure_spec(figures.apply_fonts(views[2].figure, style))  # curves: lines on 4 panels
    dark = ct.browser_spec(spec, dark=True)["layout"]
    theme = ct.themes()["dark"]["layout"]
    assert dark["paper_bgcolor"] == theme["paper_bgcolor"] and dark["font"]["color"] == theme["font"]["color"]
    for k in [k for k in dark if k.startswith(("xaxis", "yaxis"))]:
        own = spec["layout"][k]
        sized = any(a in own for a in ("ticklen", "tickwidth", "tickcolor"))
        assert dark[k]["ticks"] == own.get("ticks", "outside" if sized else "")  # no marks plotly would not draw


def test_near_black_lines_take_the_text_colour_in_the_dark():
    """The KV chart's device-memory line is near-black (#222222): in the dark scheme it is drawn in the theme's
    text colour, in the light one as it is; the layouts' coloured lines and the white marker outlines stay."""
    from attn_core.figures import memory as mf
    from attn_core.memory import load_presets, memory_curves, preset_layouts, seq_points

    p = load_presets()["llama-3-8b"]
    curves = memory_curves(preset_layouts(p), 1, "fp16", seq_points(), 80 * 2**30, None)
    spec = figures.figure_spec(mf.memory_figure(curves, mf.MemoryChart(p.name, "device", 4096, 8192, True)))
    device = next(i for i, t in enumerate(spec["data"]) if t.get("name", "").startswith("device"))
    assert spec["data"][device]["line"]["color"] == ct.INK == mf.DEVICE_COLOR
    text = ct.themes()["dark"]["layout"]["font"]["color"]
    dark, light = ct.browser_spec(spec, dark=True)["data"], ct.browser_spec(spec)["data"]
    assert dark[device]["line"]["color"] == text != ct.INK and light[device]["line"]["color"] == ct.INK
    for was, now in zip(spec["data"], dark, strict=True):
        if was.get("line", {}).get("color") != ct.INK:
            assert now.get("line", {}).get("color") == was.get("line", {}).get("color")
        if "marker" in was:
            assert now["marker"]["line"] == {**now["marker"]["line"], **was["marker"].get("line", {})}
    assert spec["data"][device]["line"]["color"] == ct.INK  # the cached spec itself is not changed


def test_a_figure_that_names_pinned_axes_gets_them_pinned_in_the_browser():
    spec = grid_spec()
    assert spec["layout"]["meta"][PINNED] == ["xaxis", "yaxis"]  # the grid asks for it (its labels move with T)
    lay = ct.browser_spec(spec)["layout"]
    assert lay["xaxis"]["automargin"] is False and lay["xaxis"]["title"] == {"text": ""}
    titles = [a for a in lay["annotations"] if a.get("xref") == "x domain"]
    assert [a["text"] for a in titles] == [
        spec["layout"]["xaxis"]["title"]["text"],
        spec["layout"]["yaxis"]["title"]["text"],
    ]
    theme = ct.themes()["light"]["layout"]
    assert titles[0]["font"]["color"] == theme["xaxis"]["title"]["font"]["color"]  # the theme's title colour kept
    plain = {**spec, "layout": {**spec["layout"], "meta": {}}}
    lay = ct.browser_spec(plain)["layout"]  # without the request: the theme's automargin and the axis title
    assert (
        lay["xaxis"]["automargin"] is True and lay["xaxis"]["title"]["text"] == spec["layout"]["xaxis"]["title"]["text"]
    )
    assert lay["xaxis"]["title"]["standoff"] == theme["xaxis"]["title"]["standoff"]


def test_y_axes_draw_every_label_and_x_axes_keep_plotlys_default():
    spec = {"data": [{"type": "scatter", "x": [1, 2], "y": [3, 4], "yaxis": "y2"}],
            "layout": {"yaxis2": {"ticklabeloverflow": "hide past domain"}, "xaxis": {"title": {"text": "n"}}}}  # fmt: skip
    lay = ct.browser_spec(spec)["layout"]
    assert lay["yaxis"]["ticklabeloverflow"] == ct.Y_OVERFLOW == "allow"  # plotly's first y axis, themed
    assert lay["yaxis2"]["ticklabeloverflow"] == "hide past domain"  # a figure's own choice wins
    assert "ticklabeloverflow" not in lay["xaxis"]  # x: plotly hides a label past the chart's edge, as before
    assert spec["layout"]["yaxis2"] == {"ticklabeloverflow": "hide past domain"} and "yaxis" not in spec["layout"]
