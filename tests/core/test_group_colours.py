"""KV groups' colours: a group's frame lies on its panels' edge cells, whose colour can be the darkest weight.

A frame needs 3:1 against what it lies on (WCAG 2.1, 1.4.11 non-text contrast). The projector's weight scale starts
at black, so every hue needs a relative luminance L with (L + 0.05) / 0.05 >= 3, that is L >= 0.1
(``figures.GROUP_MIN_LUMINANCE``). Okabe-Ito's eighth colour, black, had 1:1 there: head 7's frame vanished on dark
cells. Text in a group's colour (the panel titles on white) needs 4.5:1 (WCAG AA).
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from attn_core import figures
from attn_core.figures.base import relative_luminance

WHITE, BLACK = "#ffffff", "#000000"
VIRIDIS_DARKEST = figures.WEIGHT_SCALE[0][1]  # the page's scale


def contrast(a: str, b: str) -> float:
    hi, lo = sorted((relative_luminance(a), relative_luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def test_the_least_luminance_is_three_to_one_on_black():
    assert figures.GROUP_MIN_LUMINANCE == pytest.approx(0.1)
    assert (figures.GROUP_MIN_LUMINANCE + 0.05) / 0.05 == pytest.approx(3.0)
    assert relative_luminance(WHITE) == pytest.approx(1.0) and relative_luminance(BLACK) == 0.0
    assert relative_luminance("#767676") == pytest.approx(0.181, abs=1e-3)  # WCAG's 4.54:1 grey


@pytest.mark.parametrize("group", range(len(figures.GROUP_COLORS)))
def test_every_group_hue_shows_on_the_darkest_weight(group):
    hue = figures.GROUP_COLORS[group]
    assert relative_luminance(hue) >= figures.GROUP_MIN_LUMINANCE, hue
    assert contrast(hue, figures.WEIGHT_SCALE_CONTRAST[0][1]) >= 3.0, hue  # the projector scale's black
    assert contrast(figures.GROUP_TEXT_COLORS[group], WHITE) >= 4.5, figures.GROUP_TEXT_COLORS[group]


def test_the_eighth_group_shows_on_dark_cells_and_on_white():
    """The colour that replaced black: 3:1 on the darkest weight of both scales and on the white page."""
    eighth = figures.GROUP_COLORS[7]
    for ground in (BLACK, VIRIDIS_DARKEST, WHITE):
        assert contrast(eighth, ground) >= 3.0, ground
    assert figures.GROUP_TEXT_COLORS[7] != eighth and contrast(figures.GROUP_TEXT_COLORS[7], WHITE) >= 4.5


@pytest.mark.parametrize("present", [False, True])
def test_head_7s_frame_shows_on_a_panel_of_black_cells(present):
    """Eight KV groups, every weight 0: head 7's frame keeps 3:1 against its cells on either scale, and on a slide
    (black cells) every panel's frame does."""
    style = figures.Style(present=present)
    labels = [f"t{i} ({i})" for i in range(6)]
    grid = figures.HeadGrid(np.zeros((8, 6, 6), np.float32), tuple(range(8)), 8, 8, labels, labels)
    spec = json.loads(figures.heatmap_grid(grid, style).to_json())
    frames = [s["line"]["color"] for s in spec["layout"]["shapes"] if s.get("layer") == "above"]
    darkest = style.weight_scale[0][1]
    assert len(frames) == 8 and frames[7] == figures.GROUP_COLORS[7] and contrast(frames[7], darkest) >= 3.0
    assert not present or all(contrast(c, darkest) >= 3.0 for c in frames), frames
