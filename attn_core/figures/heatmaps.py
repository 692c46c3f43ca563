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
from attn_core.figures.labels import (
    LABEL_PITCH,
    LABELLED,
    MAX_GRID_PX,
    MIN_TICK_FONT,
    PLOT_PX,
    READABLE_TICK_FONT,
    Ticks,
    short_label,
    thinned_note,
    tick_axis,
    tick_plan,
)
from attn_core.figures.margins import PINNED, reserve_margins
from attn_core.figures.tokenmaps import ClickPanel, click_layer, click_step, row_outline

__all__ = [
    "grid_columns",
    "GRID_MAX_CELLS",
    "GRID_MAX_SIDE",
    "grid_side",
    "block_labels",
    "GridPlan",
    "grid_plan",
    "HeadGrid",
    "heatmap_grid",
    "GRID_META",
    "grid_meta",
    "MatrixSpec",
    "matrix_figure",
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
# 8 heads). Ticks are therefore set explicitly, at a font size and a panel size that let every one fit.
@dataclass(frozen=True)
class GridPlan:
    """Panels per row, panel size (px) and the ticks of a grid of ``r × c`` heatmaps."""

    ncols: int
    panel_w: float
    panel_h: int
    x: Ticks
    y: Ticks


def grid_plan(
    hs: int, base_cols: int, r: int, c: int, style: Style, min_h: int | None = None, title_px: int = 24
) -> GridPlan:
    """The most panels per row (a divisor of ``base_cols``, so KV groups stay together) whose labels fit.

    Cells are square where the height allows (80 to 420 px a panel, at least ``min_h``); a panel is made
    taller when its row labels need it, for up to :data:`LABELLED` rows. First choice: every label at
    :data:`READABLE_TICK_FONT` or more; else every label at :data:`MIN_TICK_FONT` or more; else (a grid
    taller than :data:`MAX_GRID_PX`) the labels are thinned. A side of more than :data:`LABELLED` labels
    (long or pooled maps) keeps ``base_cols`` panels a row and thins its labels.
    """
    width = PLOT_PX[style.present]

    def plan(ncols: int) -> GridPlan:
        panel_w = (width - 20 * (ncols - 1)) / ncols
        x = tick_plan(c, panel_w, style)
        panel_h = int(max(80, min(420, panel_w * r / max(c, 1)), min_h or 0))
        if r <= LABELLED:  # taller when the row labels need it: as large as the key labels up to 420 px,
            font = x.font if r * LABEL_PITCH * x.font <= 420 else min(x.font, READABLE_TICK_FONT[style.present])
            panel_h = max(panel_h, int(np.ceil(r * LABEL_PITCH * font)))  # readable-sized beyond that

        return GridPlan(ncols, panel_w, panel_h, x, tick_plan(r, panel_h, style))

    def height(p: GridPlan) -> int:
        rows = -(-hs // p.ncols)
        return rows * p.panel_h + (rows - 1) * title_px

    if max(r, c) > LABELLED:  # thinning is unavoidable: keep the compact layout
        return plan(base_cols)
    plans = [plan(k) for k in range(base_cols, 0, -1) if base_cols % k == 0]
    fits = [p for p in plans if p.x.step == p.y.step == 1 and height(p) <= MAX_GRID_PX]
    readable = [p for p in fits if min(p.x.font, p.y.font) >= READABLE_TICK_FONT[style.present]]
    if readable or fits:
        return (readable or fits)[0]
    return next((p for p in reversed(plans) if height(p) <= MAX_GRID_PX), plans[0])


@dataclass(frozen=True)
class HeadGrid:
    """What :func:`heatmap_grid` draws: ``weights`` ``[Hs, R, C]`` of the query heads ``heads`` (of ``n_heads``
    sharing ``n_kv_heads`` KV heads), the row and column labels, and optionally the title, the colour bar's
    label, a least panel height in px and the top of the colour scale (1 unless fitted to the data);
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


GRID_META = "head_grid"  # layout.meta key: where each panel of a heatmap_grid sits (figures.phone reads it)
GAP_PX = 20  # px between panels side by side (at PLOT_PX); rows of panels are apart by their titles' height
_SUFFIX, _GAP = "\u200b", "\u200c"  # zero-width space: the same label in another panel; zero-width non-joiner: a gap


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


def _categories(labels: list[str], n_panels: int, sub: int, gap: int) -> list[str]:
    """One category per trace column (or row) of ``n_panels`` panels side by side: ``labels`` repeated, each
    token ``sub`` times, unique by a suffix of zero-width spaces (drawn and hovered as the label itself),
    with ``gap`` empty categories between panels (zero-width non-joiners: no label of a token is one)."""
    out: list[str] = []
    for j in range(n_panels):
        if j:
            out += [_GAP * (len(out) + 1 + k) for k in range(gap)]
        out += [label + _SUFFIX * (j * sub + k) for label in labels for k in range(sub)]
    return out


def _geometry(grid: HeadGrid, style: Style) -> _Geometry:
    hs, r, c = grid.weights.shape
    title_px = 40 if style.present else 24  # a slide squeezes the grid to the screen: the gap shrinks with it
    base_cols = grid_columns(grid.n_heads, grid.n_kv_heads) if hs == grid.n_heads else min(hs, 4)
    plan = grid_plan(hs, base_cols, r, c, style, min_h=grid.panel_px, title_px=title_px)
    nrows = -(-hs // plan.ncols)
    cell_w, cell_h = plan.panel_w / max(c, 1), plan.panel_h / max(r, 1)
    sx = max(1, int(cell_w // GAP_PX)) if plan.ncols > 1 else 1
    sy = max(1, int(cell_h // title_px)) if nrows > 1 else 1
    gx = max(1, round(GAP_PX * sx / cell_w)) if plan.ncols > 1 else 0
    gy = int(np.ceil(title_px * sy / cell_h - 1e-9)) if nrows > 1 else 0
    plot_h = int(round(nrows * plan.panel_h + (nrows - 1) * gy * cell_h / sy))
    return _Geometry(
        plan,
        nrows,
        title_px,
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
    wide = geo.plan.ncols < 8  # eight panels a row leave no room for the word "head"
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
    title = grid.title or style.t(
        "fig.grid_title", heads=style.count(hs, "query_head"), groups=style.count(grid.n_kv_heads, "kv_group")
    )
    thinned = thinned_note(style, geo.plan.y, geo.plan.x, words["query"], words["key"])
    title += f"<br><sub>{thinned}</sub>" if thinned else ""
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
    lines = title.count("<br>")
    top_margin = int(
        16 + 1.4 * style.title_font * (1 + 0.85 * lines) + min(geo.title_px, 30) + (24 if style.present else 16)
    )
    tick_font = dict(size=style.font)
    return dict(
        title=dict(text=title, font=dict(size=style.title_font), yref="container", y=1, yanchor="top", pad=dict(t=16)),
        font=dict(size=style.font),
        xaxis=x_axis,
        yaxis=y_axis,
        coloraxis=dict(
            colorscale=style.weight_scale,
            cmin=0.0,
            cmax=grid.cmax,
            colorbar=dict(title=dict(text=words["value"], font=tick_font), tickfont=tick_font),
        ),
        shapes=shapes,
        annotations=annotations,
        height=int(top_margin + geo.plot_h + label_room),
        margin=dict(l=10, r=10, t=top_margin, b=label_room),
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
    longest = max((len(s) for s in x_ticks["ticktext"]), default=4)
    label_room = int(min(200, 30 + (10 if style.present else 0) + 0.5 * geo.plan.x.font * longest))
    axis_font = dict(size=style.font + 2)
    x_axis = dict(
        type="category",
        range=[-0.5, len(geo.xs) - 0.5],
        tickangle=-60,
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
    ``height`` a fixed height in px; ``plot_px`` the px of x axis the labels must fit; ``label_cols``
    False leaves the columns (dimensions) to plotly.
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


def matrix_figure(spec: MatrixSpec, style: Style = Style()) -> go.Figure:
    """One matrix as a heatmap with its labels and exact hover values (see :class:`MatrixSpec`).

    Labels are used as they are and must be unique (category axes merge equal labels): give tokens with
    their positions, e.g. :func:`block_labels`. Every row is labelled up to :data:`LABELLED` rows (the
    height grows with them), and with ``label_cols`` every column too, at a tick font that fits
    ``plot_px`` px of x axis (the chart's expected width less its labels and colour bar).
    """
    z = np.asarray(spec.mat, dtype=np.float32)
    z = np.where(np.isfinite(z), z, np.nan)
    if spec.mask is not None:
        z = np.where(spec.mask, z, np.nan)
    data, caxis = _matrix_traces(spec, z, style)
    rows_u, cols_u = [str(x) for x in spec.row_labels], [str(x) for x in spec.col_labels]
    row_title, col_title = spec.row_title or style.t("fig.query"), spec.col_title or style.t("fig.key")
    font, axis_font = dict(size=style.font), dict(size=style.font + 2)
    n_r = len(rows_u)
    # rows: as tall as the font needs, up to the height that still gives LABELLED rows the smallest font
    area_h = n_r * LABEL_PITCH * style.font
    area_h = max(360 if style.present else 200, min(area_h, max(620, min(n_r, LABELLED) * LABEL_PITCH * MIN_TICK_FONT)))
    y_ticks = tick_plan(n_r, max(50, spec.height - 150) if spec.height else area_h, style)  # a given height: its rows
    x_ticks = tick_plan(len(cols_u), spec.plot_px or PLOT_PX[style.present], style) if spec.label_cols else None
    x_axis = tick_axis(cols_u, x_ticks) if x_ticks else dict(tickfont=font)
    longest = max((len(t) for t in x_axis.get("ticktext", cols_u)), default=4)
    bottom = int(30 + 0.5 * (x_ticks.font if x_ticks else style.font) * longest)
    notes = thinned_note(style, y_ticks, x_ticks or Ticks(style.font), row_title, col_title)
    layout = dict(
        title=dict(text=spec.title + (f"<br><sub>{notes}</sub>" if notes else ""), font=dict(size=style.font + 1)),
        font=font,
        coloraxis=caxis,
        height=spec.height or int(area_h + 60 + bottom + (16 if notes else 0)),
        margin=dict(l=10, r=10, t=60 if notes else 50, b=10),
        plot_bgcolor="rgba(0,0,0,0)",
        hoverlabel=dict(font=dict(size=max(12, style.font - 2))),
        legend=dict(font=font),
        xaxis=dict(
            title=dict(text=col_title, font=axis_font), tickangle=-60, type="category", automargin=True, **x_axis
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
    reserve_margins({"data": data, "layout": layout})  # what apply_fonts would add (it skips FONTS_SET figures)
    # eight of these per step-by-step view: plain dicts, no per-property validation (see heatmap_grid)
    return PlainFigure(data, layout)


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
