"""In the dark colour scheme every chart label a person reads has contrast with what it is painted on: the colours
read back from the page (the SVG text's fill, its box's fill, the chart's background), not from the figure JSON.

Before ``ui.chart_theme.darkened`` and MLA's cards, MLA's flow diagram painted the theme's near-white text on its
white and pastel blocks (1.1:1), KV sharing's "× 4" the same on a white box, and a head grid with eight KV groups
titled head 7 in black on the dark background (1.2:1).
"""

from __future__ import annotations

import re

import pytest

from attn_core.i18n import translate
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


TENSORS = f"[data-testid='stExpander']:has(summary:has-text('{translate('kvcache.tensor_header', 'en')}'))"
# the fill of every filled area of the tensor chart (its buffers and layer slabs) and the stroke of its lookup lines
FILLS = """() => {
  const gd = document.querySelector('.st-key-kv_tensors .js-plotly-plot');
  const fills = [...gd.querySelectorAll('.scatterlayer .js-fill')].map(e => getComputedStyle(e))
    .filter(s => s.fill !== 'none').map(s => [s.fill, s.fillOpacity]);
  const lines = [...gd.querySelectorAll('.scatterlayer .js-line')].map(e => getComputedStyle(e))
    .map(s => [s.stroke, s.strokeOpacity]);
  return {paper: getComputedStyle(gd.querySelector('.main-svg')).backgroundColor, fills, lines};
}"""


def test_the_kv_cache_tensors_are_dark_slabs_with_light_lookups_in_the_dark(watch):
    """The KV cache as tensors drew its empty buffers and layer slabs in #eeeeee and #f7f7f7 on the dark page (white
    blocks) and would draw its lookups, a see-through dark grey, invisibly on dark slabs. Read from the page: every
    grey slab is within a few steps of the background and the lookups keep the light scheme's contrast with them."""
    watch.page.emulate_media(color_scheme="dark")
    watch.open("kv_cache")
    watch.page.locator(TENSORS).locator("summary").click()
    watch.page.wait_for_selector(".st-key-kv_tensors .js-plotly-plot .scatterlayer .js-fill")
    watch.wait_idle()
    got = watch.page.evaluate(FILLS)
    paper = colour(got["paper"])
    assert paper is not None and sum(paper[:3]) < 3 * 64, got["paper"]
    greys = [colour(f, o) for f, o in got["fills"]]
    greys = [c for c in greys if c is not None and c[0] == c[1] == c[2] and c[3] >= 1]  # the slabs, not the layouts
    assert len(greys) >= 2, got["fills"]
    assert all(c[0] < 0x40 for c in greys), greys  # #eeeeee and #f7f7f7 were white blocks
    slab = max(greys, key=lambda c: c[0])
    lookups = [colour(s, o) for s, o in got["lines"]]
    lookups = [c for c in lookups if c is not None and c[0] == c[1] == c[2] and c[3] < 1]  # see-through greys
    assert lookups, got["lines"]
    for ink in lookups:
        assert contrast(over(ink, slab), slab) >= 2.5, (ink, slab)  # 2.97 on the light scheme's #f7f7f7
    assert watch.exceptions() == []
