"""The colours a browser actually paints: the intended scales reach the screen, in normal and presentation mode.

A colour scale plotly.js does not accept falls back silently to its default blue-grey-red scale, whose 0.5 is
a grey next to the masked grey; the figure sent from the server looks right, only the screen is wrong. So these
tests read plotly's resolved figure (``_fullLayout``) and the pixels at the centre of every cell.
"""

from __future__ import annotations

import io
import re

import numpy as np
import pytest
from PIL import Image

from tests.e2e.test_pages import assert_clean
from tests.util import arr

pytestmark = pytest.mark.e2e

MASK_GREY = (184, 184, 184)  # #b8b8b8, drawn under masked (NaN) cells
# the published scales at 0, 0.5 and 1 (matplotlib's viridis and inferno, ColorBrewer RdBu reversed);
# Inferno starts at #000000, not #000004, because Streamlit repaints #000001-#000020
PUBLISHED = {
    "viridis": [(68, 1, 84), (33, 145, 140), (253, 231, 37)],
    "inferno": [(0, 0, 0), (188, 55, 84), (252, 255, 164)],
    "rdbu_r": [(5, 48, 97), (247, 247, 247), (103, 0, 31)],
}
TOL = 4  # per RGB channel: interpolation in floats, then rounding to bytes, then to the PNG
APART = 40  # the masked grey's smallest RGB distance to any colour of the scale (the fallback's grey: 10)

CHART = """key => {
    const el = document.querySelector('.st-key-' + key + ' .js-plotly-plot');
    el.scrollIntoView({block: 'center'});
    if (!document.getElementById('no-cell-text')) {  // the numbers printed on small maps would cover the centres
        document.head.insertAdjacentHTML('beforeend',
            '<style id="no-cell-text">.js-plotly-plot g.heatmap-label { display: none; }</style>');
    }
    const fl = el._fullLayout, box = el.getBoundingClientRect();
    const svg = el.querySelector('.main-svg').getBoundingClientRect();
    const dx = svg.left - box.left, dy = svg.top - box.top;
    const ca = fl.coloraxis;
    const traces = el._fullData.filter(t => t.type === 'heatmap' && t.coloraxis === 'coloraxis').map(t => {
        const xa = fl['xaxis' + t.xaxis.slice(1)], ya = fl['yaxis' + t.yaxis.slice(1)];
        const z = el.data[t.index].z;
        const n = Array.isArray(z) ? [z.length, z[0].length] : String(z.shape).split(',').map(Number);
        return {
            z: z,
            xs: Array.from({length: n[1]}, (_, c) => dx + xa._offset + xa.l2p(c)),
            ys: Array.from({length: n[0]}, (_, r) => dy + ya._offset + ya.l2p(r)),
        };
    });
    // a head grid's panels (one heatmap, NaN between them): the cells inside its frames
    const frames = (el.layout.shapes || []).filter(s => s.layer === 'above' && s.name !== 'focus' && s.xref === 'x')
        .map(s => [s.x0, s.x1, s.y0, s.y1]);
    return {scale: ca.colorscale, cmin: ca.cmin, cmax: ca.cmax, traces: traces, frames: frames};
}"""


def rgb(colour: str) -> np.ndarray:
    if colour.startswith("#"):
        return np.array([int(colour[i : i + 2], 16) for i in (1, 3, 5)], dtype=float)
    return np.array([float(v) for v in re.findall(r"[\d.]+", colour)[:3]])


def colour_at(scale: list, f: float) -> np.ndarray:
    """The colour of ``scale`` at ``f`` in [0, 1], interpolated in RGB between stops as plotly.js does."""
    fractions = [float(s[0]) for s in scale]
    colours = np.array([rgb(s[1]) for s in scale])
    return np.array([np.interp(f, fractions, colours[:, ch]) for ch in range(3)])


def painted(watch, key: str, grid: bool = False) -> dict:
    """The chart's resolved colour axis, and per heatmap its values and the colours painted at its cell centres
    (``grid``: a head grid, whose cells between its panels' frames are nothing, neither a weight nor masked)."""
    info = watch.page.evaluate(CHART, key)
    watch.page.wait_for_timeout(300)
    shot = watch.page.locator(f".st-key-{key} .js-plotly-plot").first.screenshot()
    img = np.asarray(Image.open(io.BytesIO(shot)).convert("RGB")).astype(float)
    for trace in info["traces"]:
        z = arr(trace["z"]).astype(float)
        ys = np.rint(trace["ys"]).astype(int)
        xs = np.rint(trace["xs"]).astype(int)
        trace["z"], trace["pixels"] = z, img[ys[:, None], xs[None, :]]
        trace["inside"] = np.ones(z.shape, bool)
        if grid:
            trace["inside"][:] = False
            for x0, x1, y0, y1 in info["frames"]:
                trace["inside"][int(y0 + 0.5) : int(y1 + 0.5), int(x0 + 0.5) : int(x1 + 0.5)] = True
    return info


def check_chart(info: dict, published: list) -> None:
    scale = info["scale"]
    for f, want in zip((0.0, 0.5, 1.0), published, strict=True):
        got = colour_at(scale, f)
        assert np.abs(got - want).max() <= TOL, f"the screen's scale at {f} is {got}, not {want}: {scale}"
    everything = np.array([colour_at(scale, f) for f in np.linspace(0, 1, 201)])
    apart = np.sqrt(((everything - MASK_GREY) ** 2).sum(-1)).min()
    assert apart >= APART, f"masked grey is {apart:.0f} from a colour of the scale"
    lo, hi = info["cmin"], info["cmax"]
    n_masked = n_shown = 0
    for trace in info["traces"]:
        z, px, inside = trace["z"], trace["pixels"], trace["inside"]
        shown, masked = np.isfinite(z) & inside, ~np.isfinite(z) & inside
        want = np.array([colour_at(scale, (v - lo) / (hi - lo)) for v in z[shown]])
        worst = np.abs(px[shown] - want).max()
        assert worst <= TOL, f"a painted cell differs from the scale by {worst} in a channel"
        assert np.abs(px[masked] - MASK_GREY).max(initial=0) <= TOL, "masked cells are not painted grey"
        n_masked, n_shown = n_masked + int(masked.sum()), n_shown + int(shown.sum())
    assert n_masked > 0 and n_shown > 0


@pytest.mark.parametrize("present", [False, True], ids=["normal", "present"])
def test_weights_grid_paints_its_scale(watch, present):
    watch.open("?mask=causal" + ("&present=1" if present else ""))
    info = painted(watch, "grid", grid=True)
    # a slide shows as many heads as it labels in full, the others a press later
    assert len(info["frames"]) == 8 if not present else 1 <= len(info["frames"]) < 8
    check_chart(info, PUBLISHED["inferno" if present else "viridis"])
    first = info["traces"][0]
    assert first["z"][0, 0] == 1.0  # causal: the first token attends only to itself, weight exactly 1
    np.testing.assert_allclose(first["pixels"][0, 0], PUBLISHED["inferno" if present else "viridis"][2], atol=TOL)
    assert_clean(watch)
    watch.shot("colours-grid-" + ("present" if present else "normal"))


@pytest.mark.parametrize("present", [False, True], ids=["normal", "present"])
def test_step_by_step_scores_and_weights_paint_their_scales(watch, present):
    """The masked scores (diverging scale centred at 0) and the softmax weights of the step-by-step view."""
    weights = "inferno" if present else "viridis"
    if present:  # one step a slide: step 6 is the masked scores, step 7 the softmax
        watch.open("?view=steps&mask=causal&present=1&slide=6")
        scores = painted(watch, "step5")
        watch.shot("colours-steps-present-masked")
        watch.open("?view=steps&mask=causal&present=1&slide=7")
    else:
        watch.open("?view=steps&mask=causal")
        scores = painted(watch, "step5")
    check_chart(scores, PUBLISHED["rdbu_r"])
    assert scores["cmin"] == -scores["cmax"]  # centred at 0
    z = scores["traces"][0]["z"]
    top = np.unravel_index(np.nanargmax(np.abs(z)), z.shape)  # the largest |score| sits at an end of the scale
    end = PUBLISHED["rdbu_r"][2 if z[top] > 0 else 0]
    np.testing.assert_allclose(scores["traces"][0]["pixels"][top], end, atol=TOL)
    check_chart(painted(watch, "step6"), PUBLISHED[weights])
    assert_clean(watch)
    watch.shot("colours-steps-" + ("present-softmax" if present else "normal"))
