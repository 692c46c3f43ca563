"""Slide-ready exports (issue 16): the presets' pixel sizes, type sizes read from the SVG, every token labelled,
square cells, the same colours as the screen."""

from __future__ import annotations

import json
import re
import struct
import xml.etree.ElementTree as ET

import plotly.graph_objects as go
import plotly.io as pio
import pytest

from attn_core import figures
from attn_core.export import params_from
from attn_core.figures.margins import text_width
from attn_core.figures.slides import EXPORT_PRESETS, fit_figure
from attn_core.render import export_bytes, find_chromium
from attn_core.runtime.config import ConfigError
from attn_core.views import page
from attn_core.views.base import synthetic_tokens

needs_chromium = pytest.mark.skipif(find_chromium() is None, reason="image export needs Debian's chromium")
SVG = "{http://www.w3.org/2000/svg}"


def view(argv: list[str], which: str):
    spec = page("heatmaps")
    params, _ = params_from(spec, ["--page", "heatmaps", *argv])
    return spec.views(params, figures.Style(), which)[0]


def texts(svg: bytes, cls: str) -> list[tuple[str, float]]:
    """(text, font px) of every <text> inside an element of class ``cls`` (plotly's gtitle, xtitle, xtick ...)."""
    root = ET.fromstring(svg)
    found = []
    for el in root.iter():
        if cls in (el.get("class") or "").split():
            for t in [el, *el.iter()]:
                if t.tag == f"{SVG}text":
                    size = re.search(r"font-size:\s*([\d.]+)px", t.get("style") or "")
                    found.append(("".join(t.itertext()), float(size.group(1)) if size else 0.0))
    return found


@needs_chromium
@pytest.mark.parametrize("preset, size", [("slide", (1920, 1080)), ("half", (960, 1080))])
def test_slide_presets_have_their_pixel_size(preset, size):
    png = export_bytes(view(["--n-heads", "2", "--n-kv-heads", "1"], "zoom").figure, "png", preset=preset)
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and struct.unpack(">II", png[16:24]) == size


@needs_chromium
def test_a_slide_has_28_px_type_every_token_and_square_cells():
    v = view(["--n-heads", "2", "--n-kv-heads", "1"], "zoom")  # the example sentence: 11 tokens
    svg = export_bytes(v.figure, "svg", preset="slide")
    root = ET.fromstring(svg)
    assert (root.get("width"), root.get("height")) == ("1920", "1080")
    assert all(size >= 35 for _, size in texts(svg, "gtitle"))  # 1.25 × 28
    for cls in ("xtitle", "ytitle", "annotation-text", "cbtitle"):
        assert all(size >= 28 for _, size in texts(svg, cls)), cls
    for cls in ("xtick", "ytick"):
        ticks = texts(svg, cls)
        assert [t for t, _ in ticks] == list(v.figure.layout[cls[0] + "axis"].ticktext) and len(ticks) == 11
        assert all(size >= 28 for _, size in ticks), cls  # 11 cells leave room for full-size labels
    (img,) = [el for el in root.iter(f"{SVG}image")]  # the heatmap: 11 × 11 cells
    w, h = float(img.get("width")), float(img.get("height"))
    assert abs(w - h) <= 1.0


@needs_chromium
def test_64_tokens_are_all_labelled_on_a_slide():
    v = view(["--source", "synthetic", "--seq-len", "64", "--n-heads", "1", "--n-kv-heads", "1"], "grid")
    svg = export_bytes(v.figure, "svg", preset="slide")
    labels = [t for t, _ in texts(svg, "xtick")]
    assert labels == [f"{s} ({i})" for i, s in enumerate(synthetic_tokens(64))]  # every one, in order
    assert len(texts(svg, "ytick")) == 64
    assert b"1 label in" not in svg  # nothing thinned


def test_the_fitted_figure_keeps_the_screens_colours_and_refuses_unknown_presets():
    fig = view(["--n-heads", "4", "--n-kv-heads", "2"], "grid").figure
    fitted = fit_figure(fig, EXPORT_PRESETS["paper"])
    assert fitted.layout.coloraxis.colorscale == fig.layout.coloraxis.colorscale  # one colour definition
    assert fitted.layout.width == 504 and fitted.layout.font.size == 16
    g = fig.layout.meta["head_grid"]  # square token cells: sx × sy cells of the one heatmap each
    assert fitted.layout.yaxis.scaleanchor == "x" and fitted.layout.yaxis.scaleratio == g["sx"] / g["sy"]
    assert "yaxis2" not in fitted.layout.to_plotly_json()
    assert fit_figure(fig, EXPORT_PRESETS["screen"]).layout.width == fig.layout.width  # as drawn
    spec = json.loads(pio.to_json(fig))  # what the page keeps and exports from: typed arrays, not lists
    rebuilt = fit_figure(go.Figure(spec), EXPORT_PRESETS["paper"])
    assert rebuilt.layout.xaxis.tickfont.size == fitted.layout.xaxis.tickfont.size
    with pytest.raises(ConfigError, match="preset"):
        export_bytes(fig, "png", preset="poster")


@needs_chromium
def test_a_grid_of_heads_on_a_slide_keeps_square_cells_and_titles_in_their_panels():
    v = view(["--n-heads", "8", "--n-kv-heads", "2"], "grid")  # 8 panels in one heatmap, 11 tokens
    g = v.figure.layout.meta["head_grid"]
    svg = export_bytes(v.figure, "svg", preset="slide")
    root = ET.fromstring(svg)
    (img,) = [el for el in root.iter(f"{SVG}image")]
    w, h = float(img.get("width")), float(img.get("height"))
    heat = v.figure.data[0]
    # a token's cell is sx × sy of the heatmap's: square when the y unit is sx / sy of the x unit
    assert h / w == pytest.approx(len(heat.y) * g["sx"] / (len(heat.x) * g["sy"]), rel=0.01)
    titles = list(dict.fromkeys((t, size) for t, size in texts(svg, "annotation-text") if " · KV " in t))
    assert [t for t, _ in titles] == [f"head {i} · KV {i // 4}" for i in range(8)]
    panel_px = w * g["cols"] * g["sx"] / len(heat.x)
    for text, size in titles:  # each title as large as its panel's width allows, never wider
        assert figures.MIN_TICK_FONT <= size <= 28
        assert text_width(text, size) <= panel_px, (text, size, panel_px)
    assert len(texts(svg, "xtick")) == 4 * 11 and len(texts(svg, "ytick")) == 2 * 11


@pytest.mark.parametrize("preset", ["half", "slide"])
def test_a_grid_of_few_tokens_keeps_each_panel_title_inside_the_gap_above_its_panel(preset):
    v = view(["--n-heads", "8", "--n-kv-heads", "2", "--text", "hi there"], "grid")  # 2 tokens: large cells
    g = v.figure.layout.meta["head_grid"]
    svg = export_bytes(v.figure, "svg", preset=preset)
    (img,) = [el for el in ET.fromstring(svg).iter(f"{SVG}image")]
    heat = v.figure.data[0]
    y_unit = float(img.get("height")) / len(heat.y)  # px per heatmap row (the image spans the whole grid)
    gap_px = g["gy"] * y_unit
    assert g["rows"] == 2 and g["gy"] >= 1
    titles = dict((t, size) for t, size in texts(svg, "annotation-text") if " · KV " in t)  # each drawn twice
    assert sorted(titles) == [f"head {i} · KV {i // 4}" for i in range(8)]
    for (
        size
    ) in titles.values():  # a title stands in the gap between the two rows of panels: it must not reach the row above
        assert 1.2 * size <= gap_px, (size, gap_px)
