"""Every colour scale the figure builders emit is one plotly.js takes as it is: [[fraction, colour], ...].

The builders skip plotly's validation (``go.Figure(..., _validate=False)``), which is what would turn a named
scale ("RdBu_r", known to Python plotly only) or a bare list of colours into stops. Unvalidated, plotly.js
silently falls back to its default blue-grey-red scale, so the screen disagreed with the exports.
"""

from __future__ import annotations

import json
import re

import plotly.colors as pc
import plotly.io as pio
import pytest

from attn_core import figures
from attn_core.export import params_from
from attn_core.views import PAGES, page
from tests.util import PAGE_ARGS

COLOUR = re.compile(r"^(#[0-9a-fA-F]{6}|rgba?\(\s*\d+\s*,\s*\d+\s*,\s*\d+\s*(,\s*[\d.]+\s*)?\))$")
STREAMLIT_PLACEHOLDERS = {f"#0000{i:02d}" for i in range(1, 21)}


def colour_scales(node: object, path: str = "") -> list[tuple[str, object]]:
    """Every ``colorscale`` value in a figure's JSON, with where it sits (not plotly's own template's)."""
    found = []
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "template":
                continue  # plotly's default template; Streamlit's chart theme replaces it on screen
            if key == "colorscale":
                found.append((f"{path}.{key}", value))
            else:
                found.extend(colour_scales(value, f"{path}.{key}"))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            found.extend(colour_scales(value, f"{path}[{i}]"))
    return found


def assert_explicit(where: str, scale: object) -> None:
    assert isinstance(scale, list) and len(scale) >= 2, (where, scale)
    fractions = []
    for stop in scale:
        assert isinstance(stop, list) and len(stop) == 2, (where, stop)
        frac, colour = stop
        assert isinstance(frac, (int, float)) and isinstance(colour, str) and COLOUR.match(colour), (where, stop)
        assert colour.lower() not in STREAMLIT_PLACEHOLDERS, (where, colour)
        fractions.append(frac)
    assert fractions[0] == 0 and fractions[-1] == 1 and fractions == sorted(fractions), (where, fractions)


@pytest.mark.parametrize("present", [False, True], ids=["normal", "present"])
@pytest.mark.parametrize("name", [p.name for p in PAGES])
def test_every_builder_emits_explicit_colour_scales(name, present):
    spec = page(name)
    params, args = params_from(spec, ["--page", name, *PAGE_ARGS[name].split()])
    style = figures.Style(present=present)
    seen = 0
    for view in spec.views(params, style, getattr(args, "view", None)):
        figures.apply_fonts(view.figure, style)  # what ui.show_figure does before drawing
        spec = json.loads(pio.to_json(view.figure, validate=False))  # what reaches plotly.js
        for where, scale in colour_scales(spec):
            assert_explicit(f"{view.name}{where}", scale)
            seen += 1
    if name not in ("kv_cache", "complexity"):  # the memory and cost charts draw no heatmaps
        assert seen > 0, "no colour scale found: the walk over the figure JSON is broken"


def test_scales_are_the_published_ones():
    """Viridis, Inferno (first stop #000000, see test_maps_figures) and RdBu reversed, stop for stop."""
    assert [c for _, c in figures.WEIGHT_SCALE] == pc.sequential.Viridis
    assert [c for _, c in figures.WEIGHT_SCALE_CONTRAST] == ["#000000", *pc.sequential.Inferno[1:]]
    assert [c for _, c in figures.DIVERGING_SCALE] == pc.diverging.RdBu[::-1]
    assert figures.DIVERGING_SCALE[0][1] == "rgb(5,48,97)" and figures.DIVERGING_SCALE[-1][1] == "rgb(103,0,31)"
    for scale in (figures.WEIGHT_SCALE, figures.WEIGHT_SCALE_CONTRAST, figures.DIVERGING_SCALE):
        fractions = [f for f, _ in scale]
        assert fractions[0] == 0.0 and fractions[-1] == 1.0
        steps = [b - a for a, b in zip(fractions, fractions[1:], strict=False)]
        assert max(steps) - min(steps) < 1e-5  # evenly spaced, as plotly spaces a named scale
