"""In the dark colour scheme every chart label a person reads has contrast with what it is painted on: the colours
read back from the page (the SVG text's fill, its box's fill, the chart's background), not from the figure JSON.

Before ``ui.chart_theme.darkened`` and MLA's cards, MLA's flow diagram painted the theme's near-white text on its
white and pastel blocks (1.1:1), KV sharing's "× 4" the same on a white box, and a head grid with eight KV groups
titled head 7 in black on the dark background (1.2:1).
"""

from __future__ import annotations

import re

import pytest

from tests.util import contrast, over

pytestmark = pytest.mark.e2e

MIN_CONTRAST = 3.0  # WCAG 2 for large text and graphics (tests/app/test_chart_theme.py checks the JSON)

# Each annotation's text colour and what is painted under its middle: its own box if it has one (drawn above the
# shapes), else the topmost filled shape whose box holds that point (MLA's blocks), else the chart's background
PAINTED = """(key) => {
  const gd = document.querySelector('.st-key-' + key + ' .js-plotly-plot');
  const paper = getComputedStyle(gd.querySelector('.main-svg')).backgroundColor;
  const filled = e => { const s = getComputedStyle(e); return s.fill !== 'none' && parseFloat(s.fillOpacity) > 0
    && !/rgba\\([^)]*,\\s*0\\)$/.test(s.fill); };
  const shapes = [...gd.querySelectorAll('.shapelayer path')].filter(filled);
  return {paper, notes: [...gd.querySelectorAll('.annotation')].map(a => {
    const text = a.querySelector('text'), box = a.querySelector('rect.bg');
    if (!text) return {text: ''};
    const r = text.getBoundingClientRect(), x = (r.left + r.right) / 2, y = (r.top + r.bottom) / 2;
    let under = null;
    if (box && filled(box)) under = box;
    else for (const s of shapes) { const b = s.getBoundingClientRect();
      if (b.left <= x && x <= b.right && b.top <= y && y <= b.bottom) under = s; }
    const u = under ? getComputedStyle(under) : null;
    return {text: text.textContent, ink: getComputedStyle(text).fill, under: u ? u.fill : '',
            opacity: u ? u.fillOpacity : '0', by: under ? (under === box ? 'box' : 'shape') : 'paper'};
  }).filter(n => n.text.trim())};
}"""
RGB = re.compile(r"rgba?\(([\d.]+),\s*([\d.]+),\s*([\d.]+)(?:,\s*([\d.]+))?\)")


def colour(css: str, opacity: str = "1") -> tuple[float, ...] | None:
    m = RGB.fullmatch(css.strip())
    if m is None:
        return None  # "none"
    alpha = float(m.group(4) or 1) * float(opacity or 1)
    return float(m.group(1)), float(m.group(2)), float(m.group(3)), alpha


@pytest.mark.parametrize(
    "path,chart",
    [("mla", "mla_flow"), ("kv_sharing", "repeat_kv")],
    ids=["mla_flow", "kv_diagram"],  # a grid's eight KV groups: tests/app/test_chart_theme.py (the JSON, both schemes)
)
def test_every_label_reads_on_what_it_is_painted_on_in_the_dark(watch, path, chart):
    watch.page.emulate_media(color_scheme="dark")
    watch.open(path)
    watch.page.wait_for_selector(f".st-key-{chart} .js-plotly-plot .annotation text")
    got = watch.page.evaluate(PAINTED, chart)
    paper = colour(got["paper"])
    assert paper is not None and sum(paper[:3]) < 3 * 64, got["paper"]  # the dark scheme's background
    assert len(got["notes"]) >= 3, got["notes"]
    if chart == "mla_flow":  # its labels sit on its blocks, and the walk finds them there
        assert sum(n["by"] != "paper" for n in got["notes"]) >= 6, got["notes"]
    for note in got["notes"]:
        box = colour(note["under"], note["opacity"]) if note["under"] else None
        under = paper if box is None or box[3] == 0 else over(box, paper)
        ink = colour(note["ink"])
        assert ink is not None, note
        assert contrast(over(ink, under), under) >= MIN_CONTRAST, (note, round(contrast(over(ink, under), under), 2))
    assert watch.exceptions() == []
