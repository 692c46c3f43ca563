"""Charts whose axes are pinned (attn_core.figures.margins.pin_axes): their titles are annotations where plotly would
draw the axis titles, and a change of the number of tokens no longer has plotly measure every tick label."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.e2e

# Where the titles are against the tick labels (px of the page), and how many nodes plotly measured since the start
GEOMETRY = """(key) => {
  const gd = document.querySelector('.st-key-' + key + ' .js-plotly-plot');
  const box = e => e.getBoundingClientRect();
  const notes = [...gd.querySelectorAll('.annotation')].map(a => a.querySelector('text'));
  const named = w => notes.filter(t => t && t.textContent === w).map(box);
  const xl = [...gd.querySelectorAll('.xaxislayer-above text')].map(box);
  const yl = [...gd.querySelectorAll('.yaxislayer-above text')].map(box);
  return {keys: named('key'), queries: named('query'), titles: gd.querySelectorAll('.g-xtitle text, .g-ytitle text').length,
          xBottom: Math.max(...xl.map(b => b.bottom)), yLeft: Math.min(...yl.map(b => b.left)), xCount: xl.length};
}"""
COUNT = """() => { window.__measured = 0; const tester = () => document.getElementById('js-plotly-tester');
  const real = Element.prototype.getBoundingClientRect;
  Element.prototype.getBoundingClientRect = function () {
    if (tester() && tester().contains(this) && this !== tester() && !this.classList.contains('js-reference-point')) window.__measured += 1;
    return real.call(this); }; }"""


@pytest.mark.parametrize(
    "path,chart,panels",
    [("mla?view=agree", "mla_agree", 3), ("?source=synthetic", "grid", 1)],
    ids=["mla_agree", "heatmap_grid"],
)
def test_pinned_titles_sit_where_axis_titles_would_and_a_length_change_measures_few_labels(watch, path, chart, panels):
    watch.open(path)
    g = watch.page.evaluate(GEOMETRY, chart)
    assert g["titles"] == 0 and len(g["keys"]) == panels and len(g["queries"]) == 1, g
    # plotly puts an axis title its standoff beyond the measured labels: 7 px below the rotated key labels' ink and
    # 16 px left of the query labels at the default font (measured with the titles on the axes); pinned, the same
    for key in g["keys"]:
        assert 3 <= key["top"] - g["xBottom"] <= 11, (key, g["xBottom"])
    assert 12 <= g["yLeft"] - g["queries"][0]["right"] <= 20, (g["queries"], g["yLeft"])
    watch.page.evaluate(COUNT)
    watch.press_slider("seq_len")
    after = watch.page.evaluate(GEOMETRY, chart)
    measured = watch.page.evaluate("() => window.__measured")
    # one more token: plotly measured each moved label once before (68 nodes on MLA, ~125 on the grid), now the
    # colour bars' and the annotations' few
    assert measured <= 20, measured
    assert after["xCount"] > 0 and 3 <= after["keys"][0]["top"] - after["xBottom"] <= 11
    assert watch.exceptions() == [] and watch.real_console_errors() == []
