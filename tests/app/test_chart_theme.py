"""ui.chart_theme: Streamlit's chart theme written into a figure (the browser test ``tests/e2e/test_chart_theme.py``
checks in plotly.js that it draws as the theme given as a template does)."""

from __future__ import annotations

import copy
import json

import pytest

from attn_core import figures
from attn_core.figures.margins import PINNED
from attn_core.views import PAGES
from attn_core.views import heatmaps as hm
from attn_core.views import saturation as sat
from tests.util import PAGE_ARGS, cli_specs, contrast, over
from ui import chart_theme as ct


def grid_spec() -> dict:
    p = hm.Params()
    fig = figures.apply_fonts(
        hm.grid_view(hm.grid_maps(p.layer(), p.pool), figures.Style(), p.fit).figure, figures.Style()
    )
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


def test_near_black_lines_take_the_text_colour_and_dark_greys_are_mirrored_in_the_dark():
    """The KV chart's device-memory line is near-black (#222222): in the dark scheme it is drawn in the theme's
    text colour, in the light one as it is. Its weights line and marker outlines (#555555) are mirrored to #aaaaaa;
    the layouts' coloured lines and the white marker outlines stay."""
    from attn_core.figures import memory as mf
    from attn_core.kv.memory import load_presets, memory_curves, preset_layouts, seq_points

    p = load_presets()["llama-3-8b"]
    curves = memory_curves(preset_layouts(p), 1, "fp16", seq_points(), 80 * 2**30, None)
    spec = figures.figure_spec(mf.memory_figure(curves, mf.MemoryChart(p.name, "device", 4096, 8192, True)))
    device = next(i for i, t in enumerate(spec["data"]) if t.get("name", "").startswith("device"))
    assert spec["data"][device]["line"]["color"] == ct.INK == mf.DEVICE_COLOR
    text = ct.themes()["dark"]["layout"]["font"]["color"]
    dark, light = ct.browser_spec(spec, dark=True)["data"], ct.browser_spec(spec)["data"]
    assert dark[device]["line"]["color"] == text != ct.INK and light[device]["line"]["color"] == ct.INK
    grey = {"#555555": "#aaaaaa", ct.INK: text}
    seen = set()
    for was, now in zip(spec["data"], dark, strict=True):
        colour = was.get("line", {}).get("color")
        assert now.get("line", {}).get("color") == grey.get(colour, colour)
        seen.add(colour)
        if "marker" in was:
            edge = was["marker"].get("line", {}).get("color")
            assert now["marker"]["line"]["color"] == grey.get(edge, edge)
            seen.add(edge)
    assert {"#555555", "white", ct.INK} <= seen  # a mirrored grey, a white outline and the ink were all there
    assert spec["data"][device]["line"]["color"] == ct.INK  # the cached spec itself is not changed


@pytest.mark.parametrize(
    ("colour", "dark"),
    [
        ("#222222", "TEXT"),
        ("#333333", "#cccccc"),
        ("#444", "#bbbbbb"),
        ("#666666", "#999999"),
        ("#777777", "#777777"),
        ("#9a9a9a", "#9a9a9a"),
        ("#0072B2", "#0072B2"),
        ("rgba(60,60,60,0.55)", "rgba(195,195,195,0.55)"),
        ("rgba(0,0,0,0)", "rgba(0,0,0,0)"),
        ("rgba(200,200,200,0.5)", "rgba(200,200,200,0.5)"),
        ("white", "white"),
        (None, None),
        (["#222222"], ["#222222"]),
    ],
)
def test_mirrored_greys(colour, dark):
    text = ct.themes()["dark"]["layout"]["font"]["color"]
    assert ct.mirrored(colour, text) == (text if dark == "TEXT" else dark)


@pytest.mark.parametrize(
    ("colour", "dark"),
    [
        ("#f7f7f7", "#262626"),
        ("#eeeeee", "#2f2f2f"),
        ("#ffffff", "#1e1e1e"),
        ("#dddddd", "#404040"),
        ("#dcdcdc", "#dcdcdc"),
        ("#fde3a7", "#fde3a7"),
        ("rgba(238,238,238,0.5)", "rgba(238,238,238,0.5)"),
        (None, None),
    ],
)
def test_light_grey_fills_are_dark_in_the_dark_scheme(colour, dark):
    """Opaque light greys from #dddddd up (255 - v + 0x1e): a slab drawn for white paper is a dark slab on dark
    paper; a colour, a see-through fill or a mid grey stays."""
    assert ct.dark_fill(colour) == dark


def test_the_kv_cache_tensors_read_on_the_dark_scheme():
    """The KV cache as tensors: its empty buffers and layer slabs (#eeeeee, #f7f7f7) were light blocks on the dark
    page, and its lookup lines (a see-through dark grey) would vanish on dark slabs. In the dark scheme the slabs
    are dark greys and the lookups light; the light scheme is left as built."""
    from attn_core.figures import Style
    from attn_core.figures import kv_tensors as kt
    from attn_core.kv.memory import cache_fill

    spec = figures.figure_spec(kt.tensor_figure(cache_fill(12, 8, 2, (16, 16), 4096), Style()))
    dark, light = ct.browser_spec(spec, dark=True)["data"], ct.browser_spec(spec)["data"]
    fills = {t.get("fillcolor") for t in spec["data"]}
    assert {"#f7f7f7", kt.EMPTY_FILL} <= fills
    for was, now, same in zip(spec["data"], dark, light, strict=True):
        assert same.get("fillcolor") == was.get("fillcolor")
        if was.get("fillcolor") in ("#f7f7f7", kt.EMPTY_FILL):
            assert not ct.light(now["fillcolor"]) and ct.rgba(now["fillcolor"])[0] < 0x40
        if was.get("line", {}).get("color") == kt.READ_LINE:
            assert ct.rgba(now["line"]["color"])[0] > 0xB0 and ct.rgba(now["line"]["color"])[3] == 0.55


def test_colour_parsing_and_lightness():
    assert ct.rgba("#fff") == (255, 255, 255, 1) and ct.rgba("rgba(255, 255, 255, 0.85)") == (255, 255, 255, 0.85)
    assert ct.rgba("rgb(1,2,3)") == (1, 2, 3, 1) and ct.rgba("steelblue") is None and ct.rgba(None) is None
    assert ct.light("#ffffff") and ct.light("#fde3a7") and ct.light("rgba(255,255,255,0.1)")
    assert not ct.light("#808495") and not ct.light("#0072B2") and not ct.light("#171614")


def test_annotations_drawn_for_a_white_background_read_on_the_dark_one():
    """Halo boxes (light, see-through) take the background's colour and mirror their dark grey text; cards (light,
    opaque: MLA's blocks) keep their box and get dark text; text on the background is mirrored, coloured text stays;
    shapes' dark lines are mirrored. The light scheme is left as built."""
    theme = ct.themes()["dark"]["layout"]
    paper = ct.rgba(theme["paper_bgcolor"])
    halo = f"rgba({int(paper[0])},{int(paper[1])},{int(paper[2])},0.85)"
    notes = [
        dict(text="S = 4,096", bgcolor="rgba(255,255,255,0.85)", font=dict(color="#333333")),  # KV cache's halo
        dict(text="163,840", bgcolor="rgba(255,255,255,0.85)", font=dict(color="#D55E00")),  # a fit label
        dict(text="× 4", bgcolor="rgba(255,255,255,0.8)"),  # KV sharing: the theme's text colour on a halo
        dict(text="c_KV [64]", bgcolor="#fde3a7", font=dict(color="#222222")),  # MLA's card
        dict(text="h [256]", bgcolor="#f2f2f2"),  # a card whose text colour is the theme's
        dict(text="0", font=dict(color="#444444")),  # the tensors' axis notes on the background
        dict(text="h [256]", x=0.5, y=0.5, font=dict(color="#222222")),  # inside a light block: a card's text
        dict(text="", arrowcolor="#888888", showarrow=True),
    ]
    block = dict(type="rect", x0=0, x1=1, y0=0, y1=1, fillcolor="#f2f2f2", line=dict(color="#666666"))
    shapes = [dict(type="line", line=dict(color="#555555")), block]
    spec = {"data": [], "layout": {"annotations": notes, "shapes": shapes}}
    dark = ct.browser_spec(spec, dark=True)["layout"]
    got = [(n.get("bgcolor"), n.get("font", {}).get("color")) for n in dark["annotations"]]
    assert got == [
        (halo, "#cccccc"),
        (halo, "#D55E00"),
        (halo.replace("0.85", "0.8"), None),
        ("#fde3a7", ct.INK),
        ("#f2f2f2", ct.INK),
        (None, "#bbbbbb"),
        (None, ct.INK),
        (None, None),
    ]
    assert dark["annotations"][-1]["arrowcolor"] == "#888888" and dark["shapes"][0]["line"]["color"] == "#aaaaaa"
    assert dark["shapes"][1] == {**block, "line": {"color": "#999999"}}  # the block keeps its fill
    light = ct.browser_spec(spec)["layout"]
    assert light["annotations"] == notes and light["shapes"] == spec["layout"]["shapes"]
    assert spec["layout"]["annotations"][0]["bgcolor"] == "rgba(255,255,255,0.85)"  # the spec itself is not changed


def test_mla_blocks_are_cards_with_dark_text_in_both_schemes():
    """MLA's flow diagram draws its blocks light (pastel fills): their labels lie inside them with dark text, and the
    dark scheme finds the block under each label (``ct.light_blocks``) and keeps the text dark instead of giving
    it its near-white text colour. A label with no box of its own: a box would hide the block's border where the
    label is wider or taller than the block (slides)."""
    from attn_core.figures import mla as mf
    from attn_core.mla.attention import MLAConfig

    spec = figures.figure_spec(mf.flow_figure(MLAConfig(256, 8, 64, 32, 16, 32, q_lora_rank=64), "absorb"))
    blocks = ct.light_blocks(spec["layout"])
    labels = [n for n in spec["layout"]["annotations"] if n.get("text")]
    assert len(blocks) == len(labels) >= 6 and all(ct.on_block(n, blocks) and "bgcolor" not in n for n in labels)
    for scheme in (False, True):
        drawn = [n for n in ct.browser_spec(spec, dark=scheme)["layout"]["annotations"] if n.get("text")]
        assert all(n["font"]["color"] == ct.INK == mf.CARD_TEXT for n in drawn)
    arrows = [n for n in ct.browser_spec(spec, dark=True)["layout"]["annotations"] if not n.get("text")]
    assert arrows and not any(ct.on_block(n, blocks) for n in arrows if "ax" in n and n.get("text"))


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
    spec = {
        "data": [{"type": "scatter", "x": [1, 2], "y": [3, 4], "yaxis": "y2"}],
        "layout": {"yaxis2": {"ticklabeloverflow": "hide past domain"}, "xaxis": {"title": {"text": "n"}}},
    }
    lay = ct.browser_spec(spec)["layout"]
    assert lay["yaxis"]["ticklabeloverflow"] == ct.Y_OVERFLOW == "allow"  # plotly's first y axis, themed
    assert lay["yaxis2"]["ticklabeloverflow"] == "hide past domain"  # a figure's own choice wins
    assert "ticklabeloverflow" not in lay["xaxis"]  # x: plotly hides a label past the chart's edge, as before
    assert spec["layout"]["yaxis2"] == {"ticklabeloverflow": "hide past domain"} and "yaxis" not in spec["layout"]


# Contrast of chart text with what it is drawn on: WCAG's 3:1 for large text and graphics (chart labels are bold
# or 12-22 px titles). The KV groups' hues as text on white had 1.3-2.3 (yellow, orange, sky blue); text written
# for white on the dark scheme's background ~1.2 (#444444, black); the theme's near-white on MLA's blocks ~1.1.
MIN_CONTRAST = 3.0
NO_ANNOTATIONS = {"complexity"}  # pages whose charts write no annotation at these settings
# every KV group's colour (8 groups) on the pages that draw one title per head
EVERY_GROUP = {
    "heatmaps": "--n-heads 8 --n-kv-heads 8 --d-k 8 --seq-len 6 --view all",
    "kv_sharing": "--n-heads 8 --n-kv-heads 8 --d-k 8 --seq-len 6 --view all",
}


def drawn_on(note: dict, layout: dict, paper: tuple[float, ...]) -> tuple[float, ...]:
    """The colour under a boxless annotation centred on its anchor: the filled rectangles of the layout's shapes
    that hold the anchor on the same axes, painted in order (MLA's blocks), over the background."""
    under = paper
    if note.get("xanchor", "auto") not in ("auto", "center") or note.get("yanchor", "auto") not in ("auto", "middle"):
        return under  # text beside its anchor (a panel's title above its frame): not on the shape the anchor is in
    for shape in layout.get("shapes") or []:
        fill = ct.rgba(shape.get("fillcolor"))
        if shape.get("type") != "rect" or fill is None or fill[3] == 0:
            continue
        if (shape.get("xref", "x"), shape.get("yref", "y")) != (note.get("xref", "x"), note.get("yref", "y")):
            continue
        xs, ys = sorted((shape["x0"], shape["x1"])), sorted((shape["y0"], shape["y1"]))
        if xs[0] < note.get("x", -1e9) < xs[1] and ys[0] < note.get("y", -1e9) < ys[1]:
            under = over(fill, under)
    return under


def test_contrast_helpers_by_hand():
    assert contrast((0, 0, 0, 1), (255, 255, 255, 1)) == pytest.approx(21.0)
    assert contrast((255, 255, 255, 1), (255, 255, 255, 1)) == pytest.approx(1.0)
    assert contrast((0x76, 0x76, 0x76, 1), (255, 255, 255, 1)) == pytest.approx(4.54, abs=0.01)  # WebAIM's AA grey
    assert over((255, 255, 255, 0.5), (0, 0, 0, 1)) == (127.5, 127.5, 127.5, 1.0)


@pytest.mark.parametrize("name", [p.name for p in PAGES])
def test_every_annotation_reads_on_what_it_is_drawn_on_in_both_schemes(name):
    """Every annotation of every view of the page (titles of heads, notes, labels on boxes), as the browser draws
    it in the light and the dark scheme: its text colour (its own, else the theme's) against its box (see-through
    boxes over the background) or the background has at least MIN_CONTRAST. Text on a light block must say so with
    an opaque box of the block's colour (MLA's blocks), which this reads as what it is drawn on."""
    seen = 0
    for spec in cli_specs(name, EVERY_GROUP.get(name, PAGE_ARGS[name]).split()):
        for dark in (False, True):
            layout = ct.browser_spec(spec, dark=dark)["layout"]
            paper, theme_text = ct.rgba(layout["paper_bgcolor"]), layout["font"]["color"]
            for note in layout.get("annotations") or []:
                if not str(note.get("text") or "").strip():
                    continue
                ink = ct.rgba((note.get("font") or {}).get("color") or theme_text)
                box = ct.rgba(note["bgcolor"]) if note.get("bgcolor") else None
                under = over(box, paper) if box is not None else drawn_on(note, layout, paper)
                got = contrast(over(ink, under), under)
                where = (name, "dark" if dark else "light", (layout.get("title") or {}).get("text"), note["text"])
                assert got >= MIN_CONTRAST, (*where, round(got, 2), note.get("font"), note.get("bgcolor"))
                seen += 1
    assert seen > 0 or name in NO_ANNOTATIONS, "no annotation found: the walk is broken"
