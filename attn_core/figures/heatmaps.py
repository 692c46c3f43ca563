"""Attention-weight figures: the grid of heads by KV group, one matrix with its labels, row entropy."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import plotly.graph_objects as go

from attn_core.figures.base import (
    DIVERGING_SCALE,
    FONTS_SET,
    MASK_GREY,
    PlainFigure,
    Style,
    group_color,
    group_text_color,
)
from attn_core.figures.gridplan import (
    GAP_PX,
    GridPlan,
    GridText,
    grid_plan,
    slide_capacity,
    slide_pages,
    slide_plan,
    title_px,
    top_margin,
)
from attn_core.figures.labels import (
    CHART_PX,
    LABELLED,
    MIN_TICK_FONT,
    ROW_PITCH,
    SLIDE_CHART_H,
    SLIDE_STEPPER_PX,
    Ticks,
    bar_title,
    key_ticks,
    label_reach,
    note_line,
    short_label,
    thinned_note,
    tick_axis,
    tick_plan,
)
from attn_core.figures.margins import PINNED, reserve_margins, text_width
from attn_core.figures.tokenmaps import ClickPanel, click_layer, click_step, row_outline

__all__ = [
    "grid_columns",
    "GRID_MAX_CELLS",
    "GRID_MAX_SIDE",
    "grid_side",
    "block_labels",
    "GridPlan",
    "GridText",
    "grid_plan",
    "slide_capacity",
    "slide_pages",
    "slide_plan",
    "HeadGrid",
    "heatmap_grid",
    "GRID_META",
    "grid_meta",
    "MatrixSpec",
    "matrix_figure",
    "CHART_META",
    "ENTROPY_MAX_POINTS",
    "entropy_figure",
]


def grid_columns(n_heads: int, n_kv_heads: int) -> int:
    """How many head panels per row so that each KV group stays together."""
    n_rep = n_heads // n_kv_heads
    target = min(n_heads, 4 if n_heads <= 16 else 8)
    if n_rep >= target:
        return target
    return n_rep * max(1, target // n_rep)


GRID_MAX_CELLS = 196_608  # float32 cells in one grid figure (~1 MB of base64): every chart stays under 2 MB
GRID_MAX_SIDE = 256  # cells per side of one pooled head


def grid_side(n_panels: int, max_cells: int = GRID_MAX_CELLS, max_side: int = GRID_MAX_SIDE) -> int:
    """Cells per side of each of ``n_panels`` pooled panels so the whole grid holds at most ``max_cells``."""
    return max(8, min(max_side, int(np.sqrt(max_cells / max(1, n_panels)))))


def block_labels(tokens: list[str] | tuple[str, ...], start: int, stop: int, factor: int) -> list[str]:
    """Axis labels of the cells covering positions ``start .. stop-1``: ``"cat (1)"``, or ``"0–31"`` for blocks."""
    if factor == 1:
        return [f"{tokens[i]} ({i})" for i in range(start, stop)]
    return [f"{a}–{min(a + factor, stop) - 1}" for a in range(start, stop, factor)]


# ---- token labels: every token labelled up to 64 a side, in every mode
# Plotly's category axes drop labels that would overlap (every second or third token at 11 tokens with
# 8 heads). Ticks are therefore set explicitly, at a font size and a panel size that let every one fit
# (attn_core.figures.gridplan: the panels a row, or a slide's panels, for the width the chart really gets).


@dataclass(frozen=True)
class HeadGrid:
    """What :func:`heatmap_grid` draws: ``weights`` ``[Hs, R, C]`` of the query heads ``heads`` (of ``n_heads``
    sharing ``n_kv_heads`` KV heads), the row and column labels, and optionally the title (None: "Attention weights:
    8 query heads, 2 KV groups ..."; ``""``: none, a slide's page of panels), the lines under it (``notes``), the
    colour bar's label, a least panel height in px and the top of the colour scale (1 unless fitted to the data);
    ``pooled``: its cells are blocks of positions (a page keeps its compact layout and thins their labels);
    ``clickable``: a transparent click layer over the panels (:func:`~attn_core.figures.tokenmaps.click_layer`);
    ``focus_row``: the row outlined in the panels of ``focus_heads`` (one query token's row)."""

    weights: np.ndarray
    heads: tuple[int, ...]
    n_heads: int
    n_kv_heads: int
    labels_q: list[str]
    labels_k: list[str]
    title: str | None = None
    value_label: str | None = None
    panel_px: int | None = None
    cmax: float = 1.0
    clickable: bool = False
    focus_row: int | None = None
    focus_heads: tuple[int, ...] = ()
    notes: tuple[str, ...] = ()
    pooled: bool = False


GRID_META = "head_grid"  # layout.meta key: where each panel of a heatmap_grid sits (figures.phone reads it)
_SUFFIX = "\u200b"  # zero-width space: the same label in another panel
_GAP = ("\u200c", "\u200d")  # zero-width non-joiner and joiner: a gap's category, its number written in binary


def grid_meta(meta: object) -> dict | None:
    """Where the panels of a head grid sit, from a figure's ``layout.meta`` (:data:`GRID_META`); None for any
    other chart."""
    grid = meta.get(GRID_META) if isinstance(meta, dict) else None
    return grid if isinstance(grid, dict) else None


@dataclass(frozen=True)
class _Geometry:
    """Where the panels of a grid go in its one heatmap: every token cell is ``sx × sy`` cells of the trace
    (more than one where cells are large, so the gap between panels need not be a whole token wide), ``gx``
    columns between panels side by side, ``gy`` rows between rows of panels (room for the panel titles);
    ``xs`` / ``ys`` the category of every column / row (a panel's labels, made unique by zero-width spaces)."""

    plan: GridPlan
    nrows: int
    title_px: int
    plot_h: int
    sx: int
    sy: int
    gx: int
    gy: int
    xs: list[str]
    ys: list[str]

    def col0(self, col: int, c: int) -> int:
        """The first trace column of the panels in column ``col`` (``c`` tokens a panel)."""
        return col * (c * self.sx + self.gx)

    def row0(self, row: int, r: int) -> int:
        """The first trace row of the panels in row ``row`` (``r`` tokens a panel)."""
        return row * (r * self.sy + self.gy)


def _gap_name(i: int) -> str:
    """A gap column's (row's) category: unique, drawn as nothing, a few characters long (no label is one)."""
    return _GAP[0] + "".join(_GAP[int(b)] for b in format(i, "b"))


def _categories(labels: list[str], n_panels: int, sub: int, gap: int) -> list[str]:
    """One category per trace column (or row) of ``n_panels`` panels side by side: ``labels`` repeated, each
    token ``sub`` times, unique by a suffix of zero-width spaces (drawn and hovered as the label itself),
    with ``gap`` empty categories between panels (:func:`_gap_name`: no label of a token is one)."""
    out: list[str] = []
    for j in range(n_panels):
        if j:
            out += [_gap_name(len(out) + k) for k in range(gap)]
        out += [label + _SUFFIX * (j * sub + k) for label in labels for k in range(sub)]
    return out


def grid_text(grid: HeadGrid, style: Style, notes: int = 0) -> GridText:
    """What takes the room around ``grid``'s panels: its labels, its colour bar, its title (none when
    ``grid.title`` is ``""``: a slide's page of panels) and ``notes`` more lines of it (an untitled grid's: its
    notes alone)."""
    value = grid.value_label or style.t("fig.weight")
    return GridText(grid.labels_q, grid.labels_k, value, grid.cmax, notes, grid.title != "")


def _plan(grid: HeadGrid, style: Style) -> GridPlan:
    """The grid's panels a row, their size and their ticks: a slide's (:func:`slide_plan`), else a page's."""
    hs, r, c = grid.weights.shape
    notes = len(grid.notes)
    base_cols = grid_columns(grid.n_heads, grid.n_kv_heads) if hs == grid.n_heads else min(hs, 4)
    if style.present:
        return slide_plan(hs, grid_text(grid, style, notes), style, base_cols, compact=grid.pooled)
    return grid_plan(hs, base_cols, grid_text(grid, style, notes), style, min_h=grid.panel_px, compact=grid.pooled)


def _geometry(grid: HeadGrid, style: Style) -> _Geometry:
    hs, r, c = grid.weights.shape
    gap_y = title_px(style)  # a slide squeezes the grid to the screen: the gap shrinks with it
    plan = _plan(grid, style)
    nrows = -(-hs // plan.ncols)
    cell_w, cell_h = plan.panel_w / max(c, 1), plan.panel_h / max(r, 1)
    sx = max(1, int(cell_w // GAP_PX)) if plan.ncols > 1 else 1
    sy = max(1, int(cell_h // gap_y)) if nrows > 1 else 1
    gx = max(1, round(GAP_PX * sx / cell_w)) if plan.ncols > 1 else 0
    gy = int(np.ceil(gap_y * sy / cell_h - 1e-9)) if nrows > 1 else 0
    plot_h = int(round(nrows * plan.panel_h + (nrows - 1) * gy * cell_h / sy))
    return _Geometry(
        plan,
        nrows,
        gap_y,
        plot_h,
        sx,
        sy,
        gx,
        gy,
        _categories(grid.labels_k, plan.ncols, sx, gx),
        _categories(grid.labels_q, nrows, sy, gy),
    )


def _ticks(labels: list[str], ticks: Ticks, starts: list[int], sub: int, names: list[str]) -> dict:
    """Tick settings of one axis: every ``ticks.step``-th label of each panel starting at ``starts``, shortened."""
    picked = range(0, len(labels), ticks.step)
    return dict(
        tickmode="array",
        tickvals=[names[s + m * sub + sub // 2] for s in starts for m in picked],
        ticktext=[short_label(labels[m]) for _ in starts for m in picked],
        tickfont=dict(size=ticks.font),
    )


def _tiled(grid: HeadGrid, geo: _Geometry) -> np.ndarray:
    """The panels' weights in one float32 matrix ``[len(ys), len(xs)]``, NaN between panels."""
    hs, r, c = grid.weights.shape
    z = np.full((len(geo.ys), len(geo.xs)), np.nan, dtype=np.float32)
    for i in range(hs):
        row, col = divmod(i, geo.plan.ncols)
        y0, x0 = geo.row0(row, r), geo.col0(col, c)
        w = grid.weights[i]
        if geo.sy > 1 or geo.sx > 1:
            w = np.repeat(np.repeat(w, geo.sy, axis=0), geo.sx, axis=1)
        z[y0 : y0 + r * geo.sy, x0 : x0 + c * geo.sx] = w
    return z


def _frames(i: int, grid: HeadGrid, geo: _Geometry, style: Style, masked: bool) -> tuple[list[dict], dict]:
    """Panel ``i``'s rectangles (grey under it where cells are masked, its KV group's frame) and its title."""
    hs, r, c = grid.weights.shape
    head = grid.heads[i]
    group = head // (grid.n_heads // grid.n_kv_heads)
    color = group_color(group)
    row, col = divmod(i, geo.plan.ncols)
    x0, y0 = geo.col0(col, c) - 0.5, geo.row0(row, r) - 0.5
    panel = dict(type="rect", xref="x", yref="y", x0=x0, x1=x0 + c * geo.sx, y0=y0, y1=y0 + r * geo.sy)
    shapes = [dict(panel, fillcolor=MASK_GREY, line=dict(width=0), layer="below")] if masked else []
    shapes.append(dict(panel, line=dict(color=color, width=4 if style.present else 3), layer="above"))
    wide = geo.plan.ncols < 8 or style.present  # eight panels a row leave no room for the word "head"
    text = f"<b>{style.t('fig.head')} {head}</b> · KV {group}" if wide else f"<b>{head}</b> · KV {group}"
    title = dict(
        x=x0 + c * geo.sx / 2,
        y=y0,
        xref="x",
        yref="y",
        yanchor="bottom",
        showarrow=False,
        text=text,
        font=dict(color=group_text_color(group), size=style.font if wide else style.font - 1),
    )
    return shapes, title


def heatmap_grid(grid: HeadGrid, style: Style = Style()) -> go.Figure:
    """Small multiples of attention weights, one panel per head, framed in its KV group's colour.

    ``grid.weights`` ``[Hs, R, C]`` in [0, 1] (NaN = masked, drawn grey by a rectangle under the
    panel); ``grid.heads`` the head index of each panel; ``labels_q`` (R) and ``labels_k`` (C) unique
    labels of the rows and columns. All panels are one float32 heatmap on one pair of category axes, NaN
    between them (:func:`_geometry`): a browser draws one trace and two axes instead of one of each per head
    (64 heads: ~460 → ~120 ms in chromium). A panel's columns are its key labels, made unique from the other
    panels' by zero-width spaces, so the hover names query and key as they are written. The hover shows the
    head and its KV group from the click layer (or, for one panel, the heatmap's own template), the query,
    the key and the value, never per-cell text. All panels share one colour scale from 0 to ``grid.cmax``.
    ``layout.meta[GRID_META]`` says where each panel is (:func:`attn_core.figures.phone.one_panel`).

    Every row and column is labelled (shortened to :data:`LABEL_CHARS` characters of token; the hover
    names it whole) up to :data:`LABELLED` a side: :func:`grid_plan` picks the panels per row, the panel
    height (``panel_px`` at least) and the tick fonts; where labels must be thinned the title says so.
    The key labels are under the last row of panels, the query labels left of the first column.
    """
    hs = grid.weights.shape[0]
    grid = replace(grid, weights=np.ascontiguousarray(grid.weights, dtype=np.float32))
    geo = _geometry(grid, style)
    words = _grid_words(grid, style)
    title = _grid_title(grid, geo, style, words)
    masked = bool(np.isnan(grid.weights).any())
    n_rep = grid.n_heads // grid.n_kv_heads
    groups = [h // n_rep for h in grid.heads]
    hover = f"{words['query']} %{{y}}<br>{words['key']} %{{x}}<br>{words['value']} %{{z:.4f}}<extra></extra>"
    if hs == 1:
        hover = f"<b>{words['head']} {grid.heads[0]}</b> · KV {groups[0]}<br>" + hover
    data = [
        dict(
            type="heatmap",
            z=_tiled(grid, geo),
            x=geo.xs,
            y=geo.ys,
            coloraxis="coloraxis",
            hoverongaps=False,
            name=words["head"],
            hovertemplate=hover,
        )
    ]
    shapes, annotations = [], []
    for i in range(hs):
        frames, panel_title = _frames(i, grid, geo, style, masked)
        shapes += frames
        annotations.append(panel_title)
    clicks, outlines = _click_and_focus(grid, geo, style, words)
    data += clicks
    shapes += outlines
    layout = _grid_layout(grid, geo, style, words, title, shapes, annotations)
    # The room the browser gives the key labels, their title and the colour bar (reserved here, so it lays the
    # grid out once): taller by what the bottom margin grows, the panels keep the height their labels need.
    label_room = layout["margin"]["b"]
    reserve_margins({"data": data, "layout": layout})
    layout["height"] += layout["margin"]["b"] - label_room
    if geo.plan.slide:  # a slide's chart is as tall as the slide leaves it (an export of it too)
        layout["height"] = SLIDE_CHART_H + (SLIDE_STEPPER_PX if grid.title != "" else 0)
    # built from plain dicts without plotly's per-property validation (the shapes are fixed here and covered
    # by the tests); the meta says where the panels are and that apply_fonts has nothing left to do
    layout["meta"] = {
        FONTS_SET: style.font,
        PINNED: ["xaxis", "yaxis"],
        GRID_META: dict(
            heads=list(grid.heads),
            groups=groups,
            ncols=geo.plan.ncols,
            rows=grid.weights.shape[1],
            cols=grid.weights.shape[2],
            sx=geo.sx,
            sy=geo.sy,
            gx=geo.gx,
            gy=geo.gy,
        ),
    }
    return PlainFigure(data, layout)


def _grid_title(grid: HeadGrid, geo: _Geometry, style: Style, words: dict[str, str]) -> str:
    """The grid's title (by default its heads and KV groups) and its notes under it, the last saying where
    labels had to be thinned; a slide's page of panels has its notes alone."""
    title = grid.title
    if title is None:
        heads, groups = style.count(grid.weights.shape[0], "query_head"), style.count(grid.n_kv_heads, "kv_group")
        title = style.t("fig.grid_title", heads=heads, groups=groups)
    thinned = thinned_note(style, geo.plan.y, geo.plan.x, words["query"], words["key"])
    notes = [n for n in (*grid.notes, thinned) if n]
    if not title:  # a slide's page of panels: its notes alone, at the style's font
        return "<br>".join(notes)
    return title + "".join(note_line(n, style) for n in notes)


def _grid_words(grid: HeadGrid, style: Style) -> dict[str, str]:
    """The words of a head grid's hover, titles and click hints, in the style's language."""
    return dict(
        head=style.t("fig.head"),
        query=style.t("fig.query"),
        key=style.t("fig.key"),
        value=grid.value_label or style.t("fig.weight"),
        masked=style.t("fig.masked"),
        block_top=style.t("fig.block_top"),
        click=style.t("fig.click_open"),
        block=style.t("fig.click_block"),
    )


def _grid_layout(
    grid: HeadGrid, geo: _Geometry, style: Style, words: dict[str, str], title: str, shapes: list, annotations: list
) -> dict:
    """A head grid's layout: its axes, shared colour scale, frames and panel titles, sized to its panels."""
    x_axis, y_axis, label_room = _axes(grid, geo, words, style)
    # the title hangs from the top; each note line under it (<sub>, about 0.8 of the title's size) takes
    # one line height, and the first row's panel titles sit below them all
    titled = grid.title != ""
    top = top_margin(title.count("<br>") + (not titled and bool(title)), style, titled)
    title_font = style.title_font if titled else style.font
    tick_font = dict(size=style.font)
    return dict(
        title=dict(text=title, font=dict(size=title_font), yref="container", y=1, yanchor="top", pad=dict(t=16)),
        font=dict(size=style.font),
        xaxis=x_axis,
        yaxis=y_axis,
        coloraxis=dict(
            colorscale=style.weight_scale,
            cmin=0.0,
            cmax=grid.cmax,
            colorbar=dict(title=dict(text=bar_title(words["value"]), font=tick_font), tickfont=tick_font),
        ),
        shapes=shapes,
        annotations=annotations,
        height=int(top + geo.plot_h + label_room),
        margin=dict(l=10, r=10, t=top, b=label_room),
        plot_bgcolor="rgba(0,0,0,0)",
        hoverlabel=dict(font=dict(size=max(12, style.font - 2))),
        uirevision="grid",
    )


def _axes(grid: HeadGrid, geo: _Geometry, words: dict[str, str], style: Style) -> tuple[dict, dict, int]:
    """The grid's x and y axes (the key labels under the last row of panels, the query labels left of every row)
    and the px its key labels take under the panels."""
    hs, r, c = grid.weights.shape
    ncols = geo.plan.ncols
    last_row = range(min(ncols, hs - (geo.nrows - 1) * ncols))  # the columns with a panel in the last row
    x_ticks = _ticks(grid.labels_k, geo.plan.x, [geo.col0(j, c) for j in last_row], geo.sx, geo.xs)
    y_ticks = _ticks(grid.labels_q, geo.plan.y, [geo.row0(i, r) for i in range(geo.nrows)], geo.sy, geo.ys)
    longest = max((text_width(s, geo.plan.x.font) for s in x_ticks["ticktext"]), default=30.0)
    label_room = int(min(200, 30 + label_reach(longest, geo.plan.x.font, geo.plan.x.angle)))  # raised when drawn
    axis_font = dict(size=style.font + 2)
    x_axis = dict(
        type="category",
        range=[-0.5, len(geo.xs) - 0.5],
        tickangle=geo.plan.x.angle,
        showgrid=False,
        zeroline=False,
        title=dict(text=words["key"], font=axis_font),
        **x_ticks,
    )
    y_axis = dict(
        type="category",
        range=[len(geo.ys) - 0.5, -0.5],
        showgrid=False,
        zeroline=False,  # first query on top
        title=dict(text=words["query"], font=axis_font),
        **y_ticks,
    )
    return x_axis, y_axis, label_room


def _click_and_focus(grid: HeadGrid, geo: _Geometry, style: Style, words: dict[str, str]) -> tuple[list, list]:
    """The grid's click layer (traces after the heatmap) and the outlines of the focused row."""
    hs, r, c = grid.weights.shape
    step = click_step(hs, r, c) if grid.clickable else 0
    cell_px = min(geo.plan.panel_w / max(c, 1), geo.plan.panel_h / max(r, 1))
    n_rep = grid.n_heads // grid.n_kv_heads
    panels, shapes = [], []
    for i, head in enumerate(grid.heads):
        row, col = divmod(i, geo.plan.ncols)
        x0, y0 = geo.col0(col, c), geo.row0(row, r)
        if step:
            xs = geo.xs[x0 + geo.sx // 2 : x0 + c * geo.sx : geo.sx]  # a token's middle column (row) of cells
            ys = geo.ys[y0 + geo.sy // 2 : y0 + r * geo.sy : geo.sy]
            panels.append(ClickPanel(grid.weights[i], head, head // n_rep, ys, xs, step, cell_px))
        if grid.focus_row is not None and head in grid.focus_heads and 0 <= grid.focus_row < r:
            y = y0 + grid.focus_row * geo.sy
            shapes += row_outline((x0 - 0.5, x0 + c * geo.sx - 0.5), (y - 0.5, y + geo.sy - 0.5), style.present)
    return (click_layer(panels, words) if panels else []), shapes


@dataclass(frozen=True)
class MatrixSpec:
    """What :func:`matrix_figure` draws: ``mat`` ``[R, C]`` with its row and column labels and title.

    ``kind`` ``weights`` (the fixed 0..1 scale) or ``scores``/``values`` (diverging, centred at 0);
    ``mask`` bool like ``mat`` (False = masked, drawn grey); the axis titles (default query and key);
    ``height`` a fixed height in px; ``plot_px`` the px of x axis the labels must fit, or ``chart_px`` the
    chart's whole width (its labels and colour bar taken off: default the full width, :data:`CHART_PX`);
    ``label_cols`` False leaves the columns (dimensions) to plotly; ``slide_h`` the px a slide leaves the chart
    (its rows are planned for that height: Streamlit stretches a slide's chart to the room it has);
    ``bar_below``: the colour bar under the chart, horizontal (a narrow chart's cells keep its width).
    """

    mat: np.ndarray
    row_labels: list[str]
    col_labels: list[str]
    title: str
    kind: str = "weights"
    mask: np.ndarray | None = None
    row_title: str | None = None
    col_title: str | None = None
    height: int | None = None
    plot_px: int | None = None
    label_cols: bool = True
    chart_px: int | None = None
    slide_h: int | None = None
    bar_below: bool = False


def _matrix_traces(spec: MatrixSpec, z: np.ndarray, style: Style) -> tuple[list[dict], dict]:
    """The matrix's heatmap (values printed in small maps), the grey layer of its masked cells, its colour axis."""
    rows_u, cols_u = [str(x) for x in spec.row_labels], [str(x) for x in spec.col_labels]
    hover = (
        f"{spec.row_title or style.t('fig.query')} %{{y}}<br>{spec.col_title or style.t('fig.key')} %{{x}}"
        "<br>%{z:.4g}<extra></extra>"
    )
    if spec.kind == "weights":
        caxis = dict(colorscale=style.weight_scale, cmin=0.0, cmax=1.0)
    else:
        finite = z[np.isfinite(z)]
        lim = float(np.max(np.abs(finite))) if finite.size else 1.0
        lim = lim if lim > 0 else 1.0
        caxis = dict(colorscale=DIVERGING_SCALE, cmin=-lim, cmax=lim, cmid=0.0)
    caxis["colorbar"] = dict(tickfont=dict(size=style.font), title=dict(font=dict(size=style.font)))
    trace = dict(type="heatmap", z=z, x=cols_u, y=rows_u, coloraxis="coloraxis", hoverongaps=False, hovertemplate=hover)
    if z.shape[0] * z.shape[1] <= 144 and z.shape[1] <= 16:
        trace.update(texttemplate="%{z:.2f}", textfont=dict(size=max(9, style.font - 3)))
    data = [trace]
    if spec.mask is not None and not np.all(spec.mask):
        data.append(
            dict(
                type="heatmap",
                z=np.where(spec.mask, np.nan, 1.0).astype(np.float32),
                x=cols_u,
                y=rows_u,
                showscale=False,
                colorscale=[[0, MASK_GREY], [1, MASK_GREY]],
                hoverongaps=False,
                hovertemplate=style.t("fig.masked") + "<extra></extra>",
            )
        )
    return data, caxis


def _matrix_rows(spec: MatrixSpec, style: Style) -> float:
    """px of height for the matrix's rows: a slide's box less its title and key labels (about 180 px); a given
    height less 150 px; else as tall as the font needs, up to the height that still gives :data:`LABELLED` rows
    the smallest font."""
    n_r = len(spec.row_labels)
    if style.present and spec.slide_h:
        return spec.slide_h - 180.0
    if spec.height:
        return max(50.0, spec.height - 150.0)
    area_h = n_r * ROW_PITCH * style.font
    return max(360 if style.present else 200, min(area_h, max(620, min(n_r, LABELLED) * ROW_PITCH * MIN_TICK_FONT)))


def _matrix_layout(spec: MatrixSpec, style: Style, x_ticks: Ticks | None, area_h: float) -> dict:
    """The matrix's layout with these key ticks, its rows planned for ``area_h`` px (margins not reserved yet)."""
    rows_u, cols_u = [str(x) for x in spec.row_labels], [str(x) for x in spec.col_labels]
    row_title, col_title = spec.row_title or style.t("fig.query"), spec.col_title or style.t("fig.key")
    font, axis_font = dict(size=style.font), dict(size=style.font + 2)
    least = style.font if style.present and spec.slide_h else MIN_TICK_FONT  # a slide's labels stay at its font
    y_ticks = tick_plan(len(rows_u), area_h, style, ROW_PITCH, least)
    x_axis = tick_axis(cols_u, x_ticks) if x_ticks else dict(tickfont=font)
    angle = x_ticks.angle if x_ticks else None  # dimensions (d0, d1 ...): plotly turns them when it must
    longest = max(
        (text_width(t, x_ticks.font if x_ticks else style.font) for t in x_axis.get("ticktext", cols_u)), default=30
    )
    bottom = int(30 + label_reach(longest, x_ticks.font if x_ticks else style.font, x_ticks.angle if x_ticks else -30))
    notes = thinned_note(style, y_ticks, x_ticks or Ticks(style.font), row_title, col_title)
    top = int(16 + 1.35 * (style.font + 1) * (1 + (1 if notes else 0))) if style.present else (60 if notes else 50)
    height = spec.height or int(area_h + top + bottom)
    if style.present and spec.slide_h:
        height = spec.slide_h
    return dict(
        title=dict(text=spec.title + note_line(notes, style), font=dict(size=style.font + 1)),
        font=font,
        height=height,
        margin=dict(l=10, r=10, t=top, b=10),
        plot_bgcolor="rgba(0,0,0,0)",
        hoverlabel=dict(font=dict(size=max(12, style.font - 2))),
        legend=dict(font=font),
        xaxis=dict(
            title=dict(text=col_title, font=axis_font), tickangle=angle, type="category", automargin=True, **x_axis
        ),
        yaxis=dict(
            title=dict(text=row_title, font=axis_font),
            autorange="reversed",
            type="category",
            automargin=True,
            **tick_axis(rows_u, y_ticks),
        ),
        meta={FONTS_SET: style.font},
    )


def matrix_figure(spec: MatrixSpec, style: Style = Style()) -> go.Figure:
    """One matrix as a heatmap with its labels and exact hover values (see :class:`MatrixSpec`).

    Labels are used as they are and must be unique (category axes merge equal labels): give tokens with
    their positions, e.g. :func:`block_labels`. Every row is labelled up to :data:`LABELLED` rows (the
    height grows with them; on a slide with ``slide_h``, as many as its height holds at the slide's font),
    and with ``label_cols`` every column too, at a tick font that fits the plot's width (``plot_px``, or the
    chart's width less its row labels and colour bar), turned no further than they need.
    """
    z = np.asarray(spec.mat, dtype=np.float32)
    z = np.where(np.isfinite(z), z, np.nan)
    if spec.mask is not None:
        z = np.where(spec.mask, z, np.nan)
    data, caxis = _matrix_traces(spec, z, style)
    cols = [str(x) for x in spec.col_labels]
    least = style.font if style.present and spec.slide_h else MIN_TICK_FONT
    area_h = _matrix_rows(spec, style)
    chart_px = spec.chart_px or CHART_PX[style.present]
    plot_px = spec.plot_px or chart_px - 200  # a first guess of the row labels' and colour bar's room
    for _ in range(2):  # the key labels' plan sets the margins, which set the room the key labels have
        x_ticks = key_ticks(cols, plot_px, style, least) if spec.label_cols else None
        layout = _matrix_layout(spec, style, x_ticks, area_h)
        layout["coloraxis"] = caxis
        reserve_margins({"data": data, "layout": layout}, width=chart_px)  # what apply_fonts would add
        m = layout["margin"]
        if spec.bar_below:  # the colour bar under the chart: the room at its right goes to the cells
            m["r"] = 16
        if spec.plot_px:
            break
        plot_px = chart_px - m["l"] - m["r"]
        if style.present and spec.slide_h:
            area_h = spec.slide_h - m["t"] - m["b"]
    if spec.bar_below:
        caxis["colorbar"] = _bar_below(caxis["colorbar"])
        m["b"] += BAR_BELOW_PX
        layout["height"] += BAR_BELOW_PX
    layout["meta"][CHART_META] = chart_px  # the width its labels were planned for (a phone scrolls a wider one)
    # eight of these per step-by-step view: plain dicts, no per-property validation (see heatmap_grid)
    return PlainFigure(data, layout)


BAR_BELOW_PX = 62  # px under a chart's key labels for a horizontal colour bar, its numbers and its title
CHART_META = "chart_px"  # layout.meta key: the px across the chart its labels were planned for


def _bar_below(bar: dict) -> dict:
    """A colour bar laid under the chart, horizontal: beside a narrow chart it would take a third of its width."""
    out = dict(bar, orientation="h", thickness=12, len=0.75, ypad=4, x=0.5, xanchor="center")
    out.update(yref="container", y=0.0, yanchor="bottom")
    out["title"] = {**(bar.get("title") or {}), "side": "right"}
    return out


ENTROPY_MAX_POINTS = 512  # per head line; longer sequences are averaged over blocks of positions


def entropy_figure(
    entropy: np.ndarray,
    tokens_q: list[str] | tuple[str, ...],
    n_kv_heads: int,
    style: Style = Style(),
    n_heads: int | None = None,
    heads: list[int] | tuple[int, ...] | None = None,
) -> go.Figure:
    """Normalised row entropy ``[Hs, Tq]`` as one line per head, coloured by KV group.

    1 = attention spread evenly over every allowed key, 0 = all on one key. Up
    to :data:`ENTROPY_MAX_POINTS` queries the x axis names each token; longer
    sequences plot the mean of each block of positions against its first
    position, and the title says so.
    """
    hs, t = entropy.shape
    n_heads = hs if n_heads is None else n_heads
    heads = list(range(hs)) if heads is None else list(heads)
    n_rep = n_heads // n_kv_heads
    f = -(-t // ENTROPY_MAX_POINTS)
    if f == 1:
        x: list[str] | np.ndarray = [f"{tok} ({i})" for i, tok in enumerate(tokens_q)]
        y = entropy.astype(np.float32)
        ends = None
        x_hover = "%{x}"
    else:
        n_full = t // f
        blocks = [entropy[:, : n_full * f].reshape(hs, n_full, f).mean(-1)]
        if t % f:
            blocks.append(entropy[:, n_full * f :].mean(-1, keepdims=True))
        y = np.concatenate(blocks, axis=1).astype(np.float32)
        x = np.arange(0, t, f, dtype=np.float32)  # first position of each block
        ends = np.minimum(x + f, t) - 1
        x_hover = "%{x:.0f}–%{customdata:.0f}"
    fig = go.Figure()
    for i, head in enumerate(heads):
        group = head // n_rep
        fig.add_trace(
            go.Scatter(
                x=x,
                y=y[i],
                customdata=ends,
                mode="lines+markers" if y.shape[1] <= 64 else "lines",
                name=f"{style.t('fig.head')} {head} · KV {group}",
                line=dict(
                    color=group_color(group),
                    width=3 if style.present else 2,
                    dash=("solid", "dot", "dash", "dashdot")[(head % n_rep) % 4],
                ),
                hovertemplate=f"{style.t('fig.head')} {head}<br>{x_hover}<br>H/log n = %{{y:.3f}}<extra></extra>",
            )
        )
    title = style.t("fig.entropy_title")
    if f > 1:
        title += " · " + style.t("fig.entropy_pooled", f=f, t=t)
    fig.update_layout(
        title=dict(text=title, font=dict(size=style.title_font)),
        font=dict(size=style.font),
        yaxis=dict(title=dict(text=style.t("fig.entropy_axis")), range=[0, 1.05]),
        xaxis=dict(
            title=dict(text=style.t("fig.query") if f == 1 else style.t("fig.query_pos")),
            tickangle=-60 if f == 1 else 0,
            type="category" if f == 1 else "linear",
        ),
        height=420,
        margin=dict(l=10, r=10, t=60, b=10),
        legend=dict(font=dict(size=max(10, style.font - 2))),
    )
    return fig
