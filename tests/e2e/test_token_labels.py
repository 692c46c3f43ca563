"""Every token is labelled on the heatmaps as the browser paints them (issue 12, section 8).

Plotly drops category tick labels that would overlap: with the 11-token example sentence the grid
labelled every second query (every third in presentation mode or with 32 heads). These tests read the
tick labels plotly actually drew in the page's SVG, and where they sit, and the labels of an SVG export.
"""

from __future__ import annotations

import math
import re
import xml.etree.ElementTree as ET

import pytest

from tests.e2e.test_pages import assert_clean
from tests.util import seeded

pytestmark = pytest.mark.e2e

SENTENCE = ["The", "cat", "sat", "on", "the", "mat", "because", "it", "was", "tired", "."]
LABELS = [f"{tok} ({i})" for i, tok in enumerate(SENTENCE)]

# Per labelled axis of every chart: the drawn labels in order and their centres on the page.
DRAWN_TICKS = """() => Array.from(document.querySelectorAll('.js-plotly-plot')).map(el => {
  const fl = el._fullLayout, axes = {};
  for (const key of Object.keys(fl).filter(k => /^[xy]axis\\d*$/.test(k))) {
    const ax = fl[key];
    if (!ax.showticklabels) continue;
    const texts = Array.from(el.querySelectorAll('.' + ax._id + 'tick text')).filter(t => t.textContent.trim());
    axes[ax._id] = texts.map(t => {
      const b = t.getBoundingClientRect();
      // x: the right edge, where a turned label ends at its tick; y: the middle of a row label
      return {text: t.textContent, x: b.right, y: (b.top + b.bottom) / 2, width: t.getComputedTextLength(),
              font: parseFloat(getComputedStyle(t).fontSize), angle: ax.tickangle === 'auto' ? 0 : ax.tickangle};
    });
  }
  return axes;
})"""


def drawn_ticks(watch) -> list[dict[str, list[dict]]]:
    return watch.page.evaluate(DRAWN_TICKS)


def check_every_label(axes: dict[str, list[dict]], labels: list[str], min_font: float) -> dict[str, int]:
    """Each labelled axis shows every label once per panel beside it (a head grid's panels share one pair of
    axes), in order, its neighbours at least one font size apart. Returns the panels each axis labels."""
    assert axes, "no labelled axis"
    repeats = {}
    for axis, ticks in axes.items():
        texts = [t["text"] for t in ticks]
        coord = "y" if axis.startswith("y") else "x"
        ticks = sorted(ticks, key=lambda t: t[coord])
        repeats[axis] = n = max(1, len(texts) // len(labels))
        assert sorted(texts) == sorted(labels * n), (axis, texts)
        assert [t["text"] for t in ticks] == labels * n, axis  # queries top to bottom, keys left to right
        for a, b in zip(ticks, ticks[1:], strict=False):
            gap = b[coord] - a[coord]
            angle = math.radians(abs(a["angle"] or 0))
            if coord == "x" and angle == 0:  # level key labels: side by side
                assert gap >= (a["width"] + b["width"]) / 2, (axis, a["text"], b["text"], gap)
                continue
            # turned by θ, key labels are apart by gap·sin θ across their baselines
            room = gap if coord == "y" else gap * math.sin(angle)
            assert room >= 0.95 * a["font"], (axis, a["text"], b["text"], gap, a["font"])
        assert min(t["font"] for t in ticks) >= min_font, axis
    return repeats


@pytest.mark.parametrize(
    "query,viewport,min_font,heads,shot",
    [
        ("", (1280, 720), 9, 8, "labels-grid"),
        ("?present=1", (1280, 720), 20, 2, "labels-grid-present"),  # a slide: two heads, the rest on the next
        ("?present=1", (1024, 768), 20, 2, "labels-grid-present-1024"),
        ("?n_heads=32&n_kv_heads=8", (1440, 1000), 9, 32, "labels-grid-32-heads"),
    ],
)
def test_grid_labels_every_token(watch, query, viewport, min_font, heads, shot):
    watch.page.set_viewport_size({"width": viewport[0], "height": viewport[1]})
    watch.open(query)
    axes = drawn_ticks(watch)[0]
    repeats = check_every_label(axes, LABELS, min_font)
    assert sorted(axes) == ["x", "y"]  # every panel on one pair of axes: keys under each column, queries by each row
    assert repeats["x"] * repeats["y"] == heads  # full rows: one label set per column of panels and per row
    assert_clean(watch)
    watch.shot(shot)


def test_step_view_and_zoom_label_every_token(watch):
    watch.open("?view=steps&mask=causal")
    charts = drawn_ticks(watch)
    assert len(charts) == 8
    for i, axes in enumerate(charts):
        ys = {a: t for a, t in axes.items() if a.startswith("y")}
        check_every_label(ys, LABELS, 9)  # query rows (keys for K and V: the same sentence)
        if 3 <= i <= 6:  # QKᵀ, scaled, masked, softmax: the key axis too
            check_every_label(axes, LABELS, 9)
    watch.shot("labels-steps")
    synthetic = [f"t{i} ({i})" for i in range(64)]
    watch.open("?view=zoom&source=synthetic&seq_len=64")
    check_every_label(drawn_ticks(watch)[0], synthetic, 8)
    watch.shot("labels-zoom-64")
    assert_clean(watch)


def test_exported_svg_labels_every_token():
    """The SVG export (kaleido with the system Chromium) of a slide of the grid has every label too."""
    from attn_core import figures, render
    from attn_core.attention.longmaps import pooled_attention
    from attn_core.views import heatmaps as views

    if render.find_chromium() is None:
        pytest.skip("image export needs Debian's chromium")
    for style, n_heads, page in ((figures.Style(present=True), 8, (0, 1)), (figures.Style(), 32, None)):
        pm = seeded(pooled_attention, n_heads, n_heads // 4, 16, SENTENCE, max_side=figures.grid_side(n_heads))
        fig = figures.apply_fonts(views.grid_view(pm, style, heads=page).figure, style)  # a slide: its page
        root = ET.fromstring(render.export_bytes(fig, "svg"))
        drawn: dict[str, list[str]] = {}
        for g in root.iter("{http://www.w3.org/2000/svg}g"):
            axis = re.fullmatch(r"([xy]\d*)tick", g.get("class") or "")
            if axis:
                drawn.setdefault(axis.group(1), []).extend(
                    t.text for t in g.iter("{http://www.w3.org/2000/svg}text") if (t.text or "").strip()
                )
        assert sorted(drawn) == ["x", "y"], drawn
        per = {a: len(texts) // len(LABELS) for a, texts in drawn.items()}  # label sets: one per column / row
        assert all(sorted(texts) == sorted(LABELS * per[a]) for a, texts in drawn.items()), drawn
        assert per["x"] * per["y"] == (len(page) if page else n_heads)
