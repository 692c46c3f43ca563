"""Where the panels of a head grid go and how their labels are drawn, for the width the chart really gets.

A page's grid is planned for a 1280 px window's main column (:data:`~.labels.CHART_PX`): the most panels a row whose
labels fit, a panel as tall as its row labels need. A slide's grid has the slide's box (its width at 1024 × 768,
its height at 1280 × 720: :data:`~.labels.SLIDE_CHART_H`) and type of at least the style's font (20 px): it shows
as many panels as that box labels in full (:func:`slide_capacity`) and a lecturer pages through the rest, a KV
group or a part of one a slide (:func:`slide_pages`). The room the labels, the axis titles and the colour bar take
around the panels is what :func:`~.margins.reserve_margins` reserves for them, measured on a skeleton of the grid.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from attn_core.figures.base import Style
from attn_core.figures.labels import (
    CHART_PX,
    LABELLED,
    MAX_GRID_PX,
    READABLE_TICK_FONT,
    ROW_PITCH,
    SLIDE_CHART_H,
    SLIDE_STEPPER_PX,
    Ticks,
    bar_title,
    key_ticks,
    short_label,
    tick_plan,
)
from attn_core.figures.margins import reserve_margins

__all__ = [
    "GAP_PX",
    "GridPlan",
    "GridText",
    "grid_plan",
    "plot_width",
    "slide_capacity",
    "slide_pages",
    "slide_plan",
    "title_px",
    "top_margin",
]

GAP_PX = 20  # px between panels side by side; rows of panels are apart by their titles' height (title_px)
MIN_PANEL_PX = 80  # px: the least height of a panel
MIN_CELL_PX = 1.5  # px across a cell of a compact grid at least (a gap between panels is then under 14 cells)


@dataclass(frozen=True)
class GridPlan:
    """Panels per row, panel size (px) and the ticks of a grid of ``r × c`` heatmaps (``x.angle``: the key
    labels' turn)."""

    ncols: int
    panel_w: float
    panel_h: int
    x: Ticks
    y: Ticks
    slide: bool = False  # planned for a slide's box (a grid it cannot hold is a page's layout, squeezed)


@dataclass(frozen=True)
class GridText:
    """What takes the room around a grid's panels: its row and column labels, the colour bar's title and top,
    and the ``<br>`` lines of the grid's title under its first."""

    labels_q: Sequence[str]
    labels_k: Sequence[str]
    value_label: str
    cmax: float = 1.0
    notes: int = 0
    titled: bool = True


def title_px(style: Style) -> int:
    """px a row of panels is below the one above it: the height of its panel titles."""
    return 40 if style.present else 24


def top_margin(notes: int, style: Style, titled: bool = True) -> int:
    """px above the panels: the grid's title hanging from the top (``titled``), each note line under it (about 0.8
    of the title's size) one line height, then the first row's panel titles."""
    if not titled:  # a slide's page of panels: its stepper names them; a thinned note may still stand above
        return int((16 if notes else 10) + 1.4 * style.font * notes + min(title_px(style), 30) + 6)
    lines = 1.4 * style.title_font * (1 + 0.85 * notes)
    return int(16 + lines + min(title_px(style), 30) + (8 if style.present else 16))


def _sides(text: GridText, x: Ticks, y_font: int, style: Style) -> tuple[int, int, int]:
    """(left, right, bottom) margins in px of a grid whose query labels are at ``y_font`` px and key labels as
    ``x`` says: what :func:`reserve_margins` reserves for them, the axis titles and the colour bar."""
    axis_font = dict(size=style.font + 2)
    layout = dict(
        font=dict(size=style.font),
        xaxis=dict(
            type="category",
            tickmode="array",
            tickvals=list(text.labels_k[:: x.step]),
            ticktext=[short_label(s) for s in text.labels_k[:: x.step]],
            tickfont=dict(size=x.font),
            tickangle=x.angle,
            title=dict(text="key", font=axis_font),
        ),
        yaxis=dict(
            type="category",
            tickmode="array",
            tickvals=list(text.labels_q),
            ticktext=[short_label(s) for s in text.labels_q],
            tickfont=dict(size=y_font),
            title=dict(text="query", font=axis_font),
        ),
        coloraxis=dict(
            cmin=0.0,
            cmax=text.cmax,
            colorbar=dict(
                title=dict(text=bar_title(text.value_label), font=dict(size=style.font)),
                tickfont=dict(size=style.font),
            ),
        ),
        margin=dict(l=10, r=10, t=10, b=10),
        height=600,
    )
    data = [dict(type="heatmap", coloraxis="coloraxis", x=list(text.labels_k), y=list(text.labels_q))]
    m = reserve_margins({"data": data, "layout": layout}, width=CHART_PX[style.present])["layout"]["margin"]
    return m["l"], m["r"], m["b"]


def plot_width(text: GridText, style: Style, y_font: int | None = None) -> float:
    """px across the panels: the chart's width less the query labels (at ``y_font``, by default the style's font,
    the widest they get), their axis title and the colour bar."""
    left, right, _ = _sides(text, Ticks(style.font), y_font or style.font, style)
    return CHART_PX[style.present] - left - right


def _panel_w(width: float, ncols: int) -> float:
    return (width - GAP_PX * (ncols - 1)) / ncols


def grid_plan(
    hs: int, base_cols: int, text: GridText, style: Style, min_h: int | None = None, compact: bool = False
) -> GridPlan:
    """A page's grid: the most panels per row (a divisor of ``base_cols``, so KV groups stay together) whose
    labels fit the width it gets (:data:`~.labels.CHART_PX`).

    Cells are square where the height allows (80 to 420 px a panel, at least ``min_h``); a panel is made
    taller when its row labels need it, for up to :data:`LABELLED` rows. First choice: every label at
    :data:`READABLE_TICK_FONT` or more; else every label at :data:`MIN_TICK_FONT` or more; else (a grid
    taller than :data:`MAX_GRID_PX`) the labels are thinned. A side of more than :data:`LABELLED` labels
    (long or pooled maps) keeps ``base_cols`` panels a row and thins its labels, and so does a ``compact`` grid
    (blocks of pooled positions: their labels are ranges, not tokens to point at).
    """
    r, c = len(text.labels_q), len(text.labels_k)
    widths: dict[int, float] = {}

    def width_at(y_font: int) -> float:  # smaller query labels leave the panels more room
        if y_font not in widths:
            widths[y_font] = plot_width(text, style, y_font)
        return widths[y_font]

    def plan_at(ncols: int, width: float) -> GridPlan:
        panel_w = _panel_w(width, ncols)
        x = key_ticks(list(text.labels_k), panel_w, style)
        panel_h = int(max(MIN_PANEL_PX, min(420, panel_w * r / max(c, 1)), min_h or 0))
        if r <= LABELLED:  # taller when the row labels need it: as large as the key labels up to 420 px,
            font = x.font if r * ROW_PITCH * x.font <= 420 else min(x.font, READABLE_TICK_FONT[style.present])
            panel_h = max(panel_h, int(np.ceil(r * ROW_PITCH * font)))  # readable-sized beyond that
        return GridPlan(ncols, panel_w, panel_h, x, tick_plan(r, panel_h, style, ROW_PITCH))

    def plan(ncols: int) -> GridPlan:
        first = plan_at(ncols, width_at(style.font))
        return first if first.y.font >= style.font else plan_at(ncols, width_at(first.y.font))

    width = width_at(style.font)

    def height(p: GridPlan) -> int:
        rows = -(-hs // p.ncols)
        return rows * p.panel_h + (rows - 1) * title_px(style)

    if compact or max(r, c) > LABELLED:  # thinning is unavoidable (or harmless): keep the compact layout,
        wide = [k for k in range(base_cols, 0, -1) if base_cols % k == 0 and _panel_w(width, k) >= MIN_CELL_PX * c]
        return plan(wide[0] if wide else 1)  # fewer panels a row where cells would be too narrow to see
    plans = [plan(k) for k in range(base_cols, 0, -1) if base_cols % k == 0]
    fits = [p for p in plans if p.x.step == p.y.step == 1 and height(p) <= MAX_GRID_PX]
    readable = [p for p in fits if min(p.x.font, p.y.font) >= READABLE_TICK_FONT[style.present]]
    if readable or fits:
        return (readable or fits)[0]
    return next((p for p in reversed(plans) if height(p) <= MAX_GRID_PX), plans[0])


# ---------------------------------------------------------------- a slide: the slide's box, its font, pages
def _slide_rows(nrows: int, x: Ticks, text: GridText, style: Style) -> tuple[int, Ticks]:
    """The panel height and the query ticks of ``nrows`` rows of panels in a slide's box, under key labels ``x``:
    the box of a slide with a stepper of pages (an untitled grid), else one stepper taller."""
    _, _, bottom = _sides(text, x, style.font, style)
    box = SLIDE_CHART_H + (SLIDE_STEPPER_PX if text.titled else 0)
    plot_h = box - top_margin(text.notes, style, text.titled) - bottom
    panel_h = max(1.0, (plot_h - (nrows - 1) * title_px(style)) / nrows)
    return int(panel_h), tick_plan(len(text.labels_q), panel_h, style, ROW_PITCH, least=style.font)


def _noted(text: GridText, style: Style) -> GridText:
    """``text`` with one more note line where even one row of panels must thin its query labels (the chart says
    so in a line of its own)."""
    width = plot_width(text, style)
    x = key_ticks(list(text.labels_k), width, style, least=style.font)
    thinned = _slide_rows(1, x, text, style)[1].step > 1 or x.step > 1
    return replace(text, notes=text.notes + 1) if thinned else text


def slide_capacity(text: GridText, style: Style, most: int) -> tuple[int, int]:
    """(panels a row, rows of panels) a slide shows with every text at the style's font, at most ``most`` panels:
    every label its height leaves room for drawn (the key labels as dense as the query labels can be)."""
    text = _noted(text, style)
    width = plot_width(text, style)

    def keys(ncols: int) -> Ticks:
        return key_ticks(list(text.labels_k), _panel_w(width, ncols), style, least=style.font)

    step = _slide_rows(1, keys(1), text, style)[1].step  # every k-th row label: k = 1 while the height has room
    ncols = 1
    while ncols < most:
        x = keys(ncols + 1)
        if x.step > step or _slide_rows(1, x, text, style)[1].step > step:  # turned labels take height too
            break
        ncols += 1
    nrows, x = 1, keys(ncols)
    while (nrows + 1) * ncols <= max(most, ncols) and _slide_rows(nrows + 1, x, text, style)[1].step <= step:
        nrows += 1
    return ncols, nrows


def slide_plan(hs: int, text: GridText, style: Style, base_cols: int, compact: bool = False) -> GridPlan:
    """A slide's grid of ``hs`` panels: as many a row as it holds, rows as even as they can be (8 panels: two
    rows of 4, not 5 and 3). More panels than it labels in full (:func:`slide_capacity`: a grid not paged, the
    command line's) are laid out as on a page (:func:`grid_plan`, ``compact`` for pooled maps): taller than a
    slide, squeezed into it."""
    noted = _noted(text, style)
    ncols, nrows = slide_capacity(noted, style, hs)
    if ncols * nrows < hs:  # more than a slide holds (a grid not paged): as a page lays it out, squeezed
        return grid_plan(hs, base_cols, noted, style, compact=compact)
    nrows = -(-hs // ncols)
    ncols = -(-hs // nrows)
    width = _panel_w(plot_width(noted, style), ncols)
    x = key_ticks(list(noted.labels_k), width, style, least=style.font)
    panel_h, y = _slide_rows(nrows, x, noted, style)
    if max(x.step, y.step) > 1 and noted.notes == text.notes:  # thinned by more panels than a slide holds
        panel_h, y = _slide_rows(nrows, x, replace(text, notes=text.notes + 1), style)
    return GridPlan(ncols, width, panel_h, x, y, slide=True)


def slide_pages(n_heads: int, n_kv_heads: int, per_slide: int) -> list[tuple[int, ...]]:
    """The query heads each slide shows, ``per_slide`` at most: whole KV groups a slide while a group fits on
    one, else each group in parts of ``per_slide`` heads (a slide never shows part of two groups)."""
    n_rep = n_heads // n_kv_heads
    heads = list(range(n_heads))
    if per_slide >= n_rep:
        size = n_rep * (per_slide // n_rep)
        return [tuple(heads[a : a + size]) for a in range(0, n_heads, size)]
    pages = []
    for g in range(n_kv_heads):
        group = heads[g * n_rep : (g + 1) * n_rep]
        pages += [tuple(group[a : a + per_slide]) for a in range(0, n_rep, per_slide)]
    return pages
