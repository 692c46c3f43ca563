"""The exported 16:9 slide (the chart's Export menu, preset "slide"): its colour bar's title clear of its numbers.

At a slide's 28 px type the top number, centred on the bar's end, reached up into the title above the bar ("weight"
over "1"). The export is drawn by kaleido with the system Chromium; the test reads where the SVG puts the text.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest

from attn_core import figures, render
from attn_core.figures.margins import text_width
from attn_core.views import heatmaps as hm

NS = "{http://www.w3.org/2000/svg}"
ASCENT, DESCENT = 0.75, 0.25  # of the font size: a line's glyphs above and below its baseline


def _texts(svg: bytes, cls: str) -> list[tuple[str, float, float, float]]:
    """``(text, left x, baseline y, font px)`` of every text of the SVG groups whose class is ``cls``, translations
    applied (of the text; a title's shift in its own group, ``cbtitleunshift``, is left out: the test's values)."""
    root = ET.fromstring(svg)
    out = []
    for g in root.iter(NS + "g"):
        if (g.get("class") or "").split(" ")[0] != cls:
            continue
        for t in g.iter(NS + "text"):
            dx, dy = 0.0, 0.0
            m = re.search(r"translate\(([-\d.]+),\s*([-\d.]+)\)", t.get("transform") or "")
            if m:
                dx, dy = float(m.group(1)), float(m.group(2))
            size = float(re.search(r"font-size:\s*([\d.]+)px", t.get("style") or "").group(1))
            x = float(t.get("x") or 0) + dx
            if "text-anchor: middle" in (t.get("style") or "") or t.get("text-anchor") == "middle":
                x -= text_width(t.text or "", size) / 2
            out.append((t.text or "", x, float(t.get("y") or 0) + dy, size))
    return out


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("view", ["grid", "zoom"])
def test_the_colour_bars_title_stands_clear_of_its_numbers(lang, view):
    if render.find_chromium() is None:
        pytest.skip("image export needs Debian's chromium")
    style = figures.Style(lang=lang)
    (chart,) = hm.views(hm.Params(), style, view)
    svg = render.export_bytes(chart.figure, "svg", None, "slide", style)
    (title,) = _texts(svg, "cbtitle")
    numbers = _texts(svg, "cbaxis")
    assert [n[0] for n in numbers][-1] == "1" and title[3] == 28
    _, _, base, size = title
    bottom = base + DESCENT * size
    for text, _, y, px in numbers:
        assert y - ASCENT * px >= bottom - 0.5, (text, y, title)  # every number's glyphs below the title's
