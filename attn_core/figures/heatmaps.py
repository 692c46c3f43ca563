"""Attention-weight figures: the grid of heads by KV group, one matrix with its labels, row entropy."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go

from .base import DIVERGING_SCALE, FONTS_SET, MASK_GREY, Style, group_color
from .labels import (
    LABEL_PITCH,
    LABELLED,
    MAX_GRID_PX,
    MIN_TICK_FONT,
    PLOT_PX,
    READABLE_TICK_FONT,
    Ticks,
    thinned_note,
    tick_axis,
    tick_plan,
)

__all__ = [
    "grid_columns",
    "GRID_MAX_CELLS",
    "GRID_MAX_SIDE",
    "grid_side",
    "block_labels",
    "GridPlan",
    "grid_plan",
    "heatmap_grid",
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


def heatmap_grid(
    weights: np.ndarray,
    heads: list[int] | tuple[int, ...],
    n_heads: int,
    n_kv_heads: int,
    labels_q: list[str],
    labels_k: list[str],
    style: Style = Style(),
    *,
    title: str | None = None,
    value_label: str | None = None,
    panel_px: int | None = None,
    cmax: float = 1.0,
) -> go.Figure:
    """Small multiples of attention weights, one panel per head, framed in its KV group's colour.

    weights ``[Hs, R, C]`` in [0, 1] (NaN = masked, drawn grey by a rectangle
    under the panel); ``heads`` the head index of each panel; ``labels_q`` (R)
    and ``labels_k`` (C) unique labels of the rows and columns. Each panel is a
    float32 heatmap on its own axes (zoom and pan move all panels together);
    hover shows the head, its KV group, the query, the key and the value, from a
    hover template, not per-cell text. All panels share one colour scale from
    0 to ``cmax`` (1 unless the caller fits it to the data).

    Every row and column is labelled (shortened to :data:`LABEL_CHARS` characters of
    token; the hover names it whole) up to :data:`LABELLED` a side: :func:`grid_plan`
    picks the panels per row, the panel height (``panel_px`` at least) and the tick
    fonts; where labels must be thinned the title says so.
    """
    hs, r, c = weights.shape
    n_rep = n_heads // n_kv_heads
    title_px = 30 if style.present else 24
    base_cols = grid_columns(n_heads, n_kv_heads) if hs == n_heads else min(hs, 4)
    plan = grid_plan(hs, base_cols, r, c, style, min_h=panel_px, title_px=title_px)
    ncols, panel_px = plan.ncols, plan.panel_h
    nrows = -(-hs // ncols)
    value_label = value_label or style.t("fig.weight")
    head_word = style.t("fig.head")
    q_word, k_word = style.t("fig.query"), style.t("fig.key")
    if not title:
        heads, groups = style.count(hs, "query_head"), style.count(n_kv_heads, "kv_group")
        title = style.t("fig.grid_title", heads=heads, groups=groups)
    thinned = thinned_note(style, plan.y, plan.x, q_word, k_word)
    if thinned:
        title += f"<br><sub>{thinned}</sub>"
    plot_h = nrows * panel_px + (nrows - 1) * title_px
    xgap = 0.025 if ncols > 1 else 0.0
    width = (1.0 - xgap * (ncols - 1)) / ncols
    x_ticks, y_ticks = tick_axis(labels_k, plan.x), tick_axis(labels_q, plan.y)
    longest = max((len(s) for s in x_ticks["ticktext"]), default=4)
    label_room = int(min(200, 30 + (10 if style.present else 0) + 0.5 * plan.x.font * longest))

    def panel_title(head: int, group: int) -> str:  # eight panels a row leave no room for the word "head"
        return f"<b>{head_word} {head}</b> · KV {group}" if ncols < 8 else f"<b>{head}</b> · KV {group}"

    tick_font, axis_font = dict(size=style.font), dict(size=style.font + 2)
    z = np.ascontiguousarray(weights, dtype=np.float32)
    allowed_all = not np.isnan(z).any()
    data, layout = [], {}
    shapes, annotations = [], []
    for i, head in enumerate(heads):
        row, col = divmod(i, ncols)
        n = "" if i == 0 else str(i + 1)
        group = head // n_rep
        color = group_color(group)
        x0 = col * (width + xgap)
        show_x = row == nrows - 1 or i + ncols >= hs  # the bottom panel of each column has the key labels
        top = 1.0 - row * (panel_px + title_px) / plot_h
        data.append(
            dict(
                type="heatmap",
                z=z[i],
                x=labels_k,
                y=labels_q,
                xaxis=f"x{n}",
                yaxis=f"y{n}",
                coloraxis="coloraxis",
                hoverongaps=False,
                hovertemplate=(
                    f"<b>{head_word} {head}</b> · KV {group}<br>{q_word} %{{y}}<br>{k_word} %{{x}}"
                    f"<br>{value_label} %{{z:.4f}}<extra></extra>"
                ),
                name=f"{head_word} {head}",
            )
        )
        layout[f"xaxis{n}"] = dict(
            domain=[x0, min(1.0, x0 + width)],
            anchor=f"y{n}",
            type="category",
            matches=None if i == 0 else "x",
            range=[-0.5, c - 0.5] if i == 0 else None,  # category i sits at i: the cells fill the panel
            showticklabels=show_x,
            tickangle=-60,
            showgrid=False,
            zeroline=False,
            **(x_ticks if show_x else {}),
            title=dict(text=k_word if row == nrows - 1 and col == 0 else "", font=axis_font),
        )
        layout[f"yaxis{n}"] = dict(
            domain=[max(0.0, top - panel_px / plot_h), top],
            anchor=f"x{n}",
            type="category",
            matches=None if i == 0 else "y",
            range=[r - 0.5, -0.5] if i == 0 else None,  # first query row at the top
            showticklabels=col == 0,
            showgrid=False,
            zeroline=False,
            **(y_ticks if col == 0 else {}),
            title=dict(text=q_word if col == 0 and row == 0 else "", font=axis_font),
        )
        panel = dict(type="rect", xref=f"x{n} domain", yref=f"y{n} domain", x0=0, x1=1, y0=0, y1=1)
        if not allowed_all:  # grey under the panel shows through the masked (NaN) cells
            shapes.append(dict(panel, fillcolor=MASK_GREY, line=dict(width=0), layer="below"))
        shapes.append(dict(panel, line=dict(color=color, width=4 if style.present else 3), layer="above"))
        annotations.append(
            dict(x=0.5, y=1.0, xref=f"x{n} domain", yref=f"y{n} domain", yanchor="bottom", showarrow=False,
                 text=panel_title(head, group), font=dict(color=color, size=style.font if ncols < 8 else style.font - 1))
        )  # fmt: skip
    # the title hangs from the top; each note line under it (<sub>, about 0.8 of the title's size) takes
    # one line height, and the first row's panel titles sit below them all
    lines = title.count("<br>")
    top_margin = int(16 + 1.4 * style.title_font * (1 + 0.85 * lines) + title_px + (24 if style.present else 16))
    layout.update(
        title=dict(
            text=title, font=dict(size=style.title_font), yref="container", y=1, yanchor="top", pad=dict(t=16)
        ),  # fmt: skip
        font=dict(size=style.font),
        coloraxis=dict(
            colorscale=style.weight_scale,
            cmin=0.0,
            cmax=cmax,
            colorbar=dict(title=dict(text=value_label, font=tick_font), tickfont=tick_font),
        ),
        shapes=shapes,
        annotations=annotations,
        height=int(top_margin + plot_h + label_room),
        margin=dict(l=10, r=10, t=top_margin, b=label_room),
        plot_bgcolor="rgba(0,0,0,0)",
        hoverlabel=dict(font=dict(size=max(12, style.font - 2))),
        uirevision="grid",
    )
    # Up to 128 axes: built from plain dicts without plotly's per-property validation, which would cost
    # ~0.1-0.2 s at 64 heads on every rerun (the shapes are fixed here and covered by the tests).
    fig = go.Figure(data=data, layout=layout, _validate=False)
    fig.layout.meta = {FONTS_SET: style.font}  # apply_fonts has nothing left to do
    return fig


def matrix_figure(
    mat: np.ndarray,
    row_labels: list[str],
    col_labels: list[str],
    title: str,
    kind: str = "weights",
    style: Style = Style(),
    mask: np.ndarray | None = None,
    row_title: str | None = None,
    col_title: str | None = None,
    height: int | None = None,
    plot_px: int | None = None,
    label_cols: bool = True,
) -> go.Figure:
    """One matrix as a heatmap with its labels and exact hover values.

    ``row_labels`` and ``col_labels`` are used as they are and must be unique
    (category axes merge equal labels): give tokens with their positions, e.g.
    :func:`block_labels`. ``kind`` ``weights`` uses the fixed 0..1 scale;
    ``scores`` and ``values`` a diverging scale centred at 0 whose symmetric
    range is stated in the colour bar. ``mask`` bool like ``mat`` (False =
    masked) greys cells out.

    Every row is labelled up to :data:`LABELLED` rows (the height grows with them),
    and with ``label_cols`` every column too, at a tick font that fits ``plot_px``
    px of x axis (the chart's expected width less its labels and colour bar);
    columns of dimensions (``label_cols`` False) are left to plotly.
    """
    z = np.asarray(mat, dtype=np.float32)
    z = np.where(np.isfinite(z), z, np.nan)
    if mask is not None:
        z = np.where(mask, z, np.nan)
    rows_u = [str(rl) for rl in row_labels]
    cols_u = [str(cl) for cl in col_labels]
    hover = (
        f"{row_title or style.t('fig.query')} %{{y}}<br>{col_title or style.t('fig.key')} %{{x}}"
        "<br>%{z:.4g}<extra></extra>"
    )
    if kind == "weights":
        caxis = dict(colorscale=style.weight_scale, cmin=0.0, cmax=1.0)
    else:
        finite = z[np.isfinite(z)]
        lim = float(np.max(np.abs(finite))) if finite.size else 1.0
        lim = lim if lim > 0 else 1.0
        caxis = dict(colorscale=DIVERGING_SCALE, cmin=-lim, cmax=lim, cmid=0.0)
    font, axis_font = dict(size=style.font), dict(size=style.font + 2)
    caxis["colorbar"] = dict(tickfont=font, title=dict(font=font))
    trace = dict(type="heatmap", z=z, x=cols_u, y=rows_u, coloraxis="coloraxis", hoverongaps=False,
                 hovertemplate=hover)  # fmt: skip
    if z.shape[0] * z.shape[1] <= 144 and z.shape[1] <= 16:
        trace.update(texttemplate="%{z:.2f}", textfont=dict(size=max(9, style.font - 3)))
    data = [trace]
    if mask is not None and not np.all(mask):
        data.append(
            dict(type="heatmap", z=np.where(mask, np.nan, 1.0).astype(np.float32), x=cols_u, y=rows_u,
                 showscale=False, colorscale=[[0, MASK_GREY], [1, MASK_GREY]], hoverongaps=False,
                 hovertemplate=style.t("fig.masked") + "<extra></extra>")
        )  # fmt: skip
    n_r = len(rows_u)
    # rows: as tall as the font needs, up to the height that still gives LABELLED rows the smallest font
    area_h = n_r * LABEL_PITCH * style.font
    area_h = max(360 if style.present else 200, min(area_h, max(620, min(n_r, LABELLED) * LABEL_PITCH * MIN_TICK_FONT)))
    y_ticks = tick_plan(n_r, max(50, height - 150) if height else area_h, style)  # a given height: its rows
    x_ticks = tick_plan(len(cols_u), plot_px or PLOT_PX[style.present], style) if label_cols else None
    x_axis = tick_axis(cols_u, x_ticks) if x_ticks else dict(tickfont=font)
    longest = max((len(t) for t in x_axis.get("ticktext", cols_u)), default=4)
    bottom = int(30 + 0.5 * (x_ticks.font if x_ticks else style.font) * longest)
    notes = thinned_note(style, y_ticks, x_ticks or Ticks(style.font), row_title or style.t("fig.query"),
                         col_title or style.t("fig.key"))  # fmt: skip
    layout = dict(
        title=dict(text=title + (f"<br><sub>{notes}</sub>" if notes else ""), font=dict(size=style.font + 1)),
        font=font,
        coloraxis=caxis,
        height=height or int(area_h + 60 + bottom + (16 if notes else 0)),
        margin=dict(l=10, r=10, t=60 if notes else 50, b=10),
        plot_bgcolor="rgba(0,0,0,0)",
        hoverlabel=dict(font=dict(size=max(12, style.font - 2))),
        legend=dict(font=font),
        xaxis=dict(title=dict(text=col_title or style.t("fig.key"), font=axis_font), tickangle=-60, type="category",
                   automargin=True, **x_axis),
        yaxis=dict(title=dict(text=row_title or style.t("fig.query"), font=axis_font), autorange="reversed",
                   type="category", automargin=True, **tick_axis(rows_u, y_ticks)),
        meta={FONTS_SET: style.font},
    )  # fmt: skip
    # eight of these per step-by-step view: plain dicts, no per-property validation (see heatmap_grid)
    return go.Figure(data=data, layout=layout, _validate=False)


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
