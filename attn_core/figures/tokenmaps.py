"""Token-centred maps: the invisible click layer of a head grid, one query row's outline, and the
BertViz-style line view of where one query token attends in the heads of one KV group.

Streamlit's plotly selection events return nothing for heatmap traces (streamlit #8760, #15042): the
grid gets one transparent scatter point per cell (per block of cells on large grids) that a click can
select. Plotly prefers a point to a heatmap cell as the closest hover, so the points carry the same
hover text as the cells.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go

from attn_core.figures.base import FONTS_SET, PlainFigure, Style, group_color
from attn_core.figures.labels import short_label
from attn_core.figures.margins import reserve_margins

__all__ = [
    "CLICK_POINTS",
    "click_step",
    "click_layer",
    "row_outline",
    "OUTLINE_COLOURS",
    "head_colour",
    "LINE_MAX_PX",
    "LINES_MAX_HEADS",
    "TokenLines",
    "token_lines_figure",
]

CLICK_POINTS = 4096  # transparent points of a grid's click layer, all panels together (at most ~0.2 MB of JSON)
OUTLINE_COLOURS = ("#ffffff", "#000000")  # a white band under a black line: visible on every colour of the scale
LINE_MAX_PX = 14.0  # a line's width at weight 1 in the line view
LINES_MAX_HEADS = 8  # heads drawn in the line view (the first of a larger KV group)


def click_step(n_panels: int, rows: int, cols: int, max_points: int = CLICK_POINTS) -> int:
    """Cells a side of one click point: 1 (a point per cell) while the grid has at most ``max_points`` cells."""
    s = 1
    while n_panels * -(-rows // s) * -(-cols // s) > max_points:
        s += 1
    return s


@dataclass(frozen=True)
class ClickPanel:
    """One panel's share of the click layer: its weights ``[R, C]``, head, KV group, the category of each of its
    rows (R) and columns (C) on the grid's axes, and the cells a side of one point and a cell's size in px."""

    weights: np.ndarray
    head: int
    group: int
    labels_q: list[str]
    labels_k: list[str]
    step: int
    cell_px: float


def click_layer(panels: list[ClickPanel], words: dict[str, str]) -> list[dict]:
    """Transparent scatter points over every panel of a grid (``customdata`` = ``[head, weight, KV group]``): one
    per cell, or one per ``step × step`` block (its largest weight in the hover). Masked cells are a second
    trace, hover "masked" (``[head, None, group]``). Two traces for the whole grid, whatever its heads.

    Plotly draws one marker of each trace (``maxdisplayed``): hover and click-select read the trace's data,
    not its drawn markers, so every point still answers, and the browser builds two SVG nodes instead of one
    per cell (the default grid's draw: 123 → 62 ms in chromium, 968 points).
    """
    xs: list[str] = []
    ys: list[str] = []
    cds: list[list] = []
    masks: list[np.ndarray] = []
    for panel in panels:
        w, s = panel.weights, panel.step
        r, c = w.shape
        ii, jj = np.meshgrid(np.arange(0, r, s), np.arange(0, c, s), indexing="ij")
        ii, jj = ii.reshape(-1), jj.reshape(-1)
        if s == 1:
            top = w[ii, jj].astype(np.float64)
        else:
            blocks = [w[a : a + s, b : b + s] for a, b in zip(ii, jj, strict=True)]
            top = np.array([np.nanmax(b) if np.isfinite(b).any() else np.nan for b in blocks], dtype=np.float64)
        ci, cj = np.minimum(ii + s // 2, r - 1), np.minimum(jj + s // 2, c - 1)  # the block's middle cell
        xs += [panel.labels_k[j] for j in cj]
        ys += [panel.labels_q[i] for i in ci]
        nan = np.isnan(top)
        masks.append(nan)
        cds += [
            [panel.head, None if m else round(float(v), 6), panel.group]
            for v, m in zip(top.tolist(), nan.tolist(), strict=True)
        ]
    if not panels:
        return []
    masked = np.concatenate(masks)
    s, size_px = panels[0].step, panels[0].cell_px
    where = f"<b>{words['head']} %{{customdata[0]}}</b> · KV %{{customdata[2]}}<br>{words['query']} %{{y}}<br>"
    where += f"{words['key']} %{{x}}<br>"
    if s > 1:  # one point per block: its middle cell names it, the hover says how large it is
        where += words["block"].format(n=s) + "<br>"
    size = float(max(6.0, min(400.0, size_px * s * 1.45)))  # circles that cover their block's corners
    base = dict(
        type="scatter",
        mode="markers",
        showlegend=False,
        marker=dict(size=size, color="rgba(0,0,0,0)", opacity=0.0, maxdisplayed=1),
        selected=dict(marker=dict(opacity=0.0)),
        unselected=dict(marker=dict(opacity=0.0)),
        name="click",
    )
    traces = []
    for m in (False, True):
        keep = np.flatnonzero(masked == m)
        if not len(keep):
            continue
        hover = where + (
            words["masked"] if m else (words["block_top"] if s > 1 else words["value"]) + " %{customdata[1]:.4f}"
        )
        traces.append(
            dict(
                base,
                x=[xs[k] for k in keep],
                y=[ys[k] for k in keep],
                customdata=[cds[k] for k in keep],
                hovertemplate=hover + f"<br><i>{words['click']}</i><extra></extra>",
            )
        )
    return traces


def row_outline(x: tuple[float, float], y: tuple[float, float], present: bool = False) -> list[dict]:
    """Two rectangles around one query row of a panel, from ``x[0]`` to ``x[1]`` and ``y[0]`` to ``y[1]`` on the
    axes ``x``/``y`` (cell edges): a white band, a black line."""
    rect = dict(
        type="rect",
        xref="x",
        yref="y",
        x0=x[0],
        x1=x[1],
        y0=y[0],
        y1=y[1],
        layer="above",
        fillcolor="rgba(0,0,0,0)",
        name="focus",
    )
    wide = 7 if present else 5
    return [
        dict(rect, line=dict(color=OUTLINE_COLOURS[0], width=wide)),
        dict(rect, line=dict(color=OUTLINE_COLOURS[1], width=wide / 2.5)),
    ]


def head_colour(group: int, k: int, n: int) -> str:
    """Query head ``k`` of ``n`` sharing KV group ``group``: its group's hue, from darker to lighter."""
    hexa = group_color(group).lstrip("#")
    rgb = np.array([int(hexa[i : i + 2], 16) for i in (0, 2, 4)], dtype=float)
    f = 0.0 if n <= 1 else (k / (n - 1)) * 0.75 - 0.45  # -0.45 (darker) .. 0.3 (lighter): all readable on white
    mixed = rgb * (1 + f) if f < 0 else rgb + (255 - rgb) * f
    return "#" + "".join(f"{int(round(v)):02x}" for v in np.clip(mixed, 0, 255))


@dataclass(frozen=True)
class TokenLines:
    """What :func:`token_lines_figure` draws: ``weights`` ``[n, T_k]`` (query ``query``'s row in each of the
    ``heads``, NaN = masked), the heads' KV group, every query and key label, the title and the note under it."""

    weights: np.ndarray
    heads: tuple[int, ...]
    group: int
    n_rep: int
    labels_q: list[str]
    labels_k: list[str]
    query: int
    title: str
    note: str = ""


def _lines_panel(i: int, spec: TokenLines, style: Style, words: dict[str, str]) -> tuple[list[dict], list[dict]]:
    """Panel ``i`` (head ``spec.heads[i]``): its query and key columns (traces) and its lines (shapes)."""
    head, n = spec.heads[i], "" if i == 0 else str(i + 1)
    colour = head_colour(spec.group, head % spec.n_rep, spec.n_rep)
    w = spec.weights[i]
    q_label = spec.labels_q[spec.query]
    axes = dict(
        xaxis=f"x{n}",
        yaxis=f"y{n}",
        type="scatter",
        mode="markers+text",
        showlegend=False,
        cliponaxis=False,
        textfont=dict(size=style.font),
    )
    q_text = [
        f"<b>{short_label(lab)}</b>" if j == spec.query else short_label(lab) for j, lab in enumerate(spec.labels_q)
    ]
    q_col = ["#000000" if j == spec.query else "#6b6b6b" for j in range(len(spec.labels_q))]
    queries = dict(
        axes,
        x=[0.0] * len(q_text),
        y=list(range(len(q_text))),
        text=q_text,
        textposition="middle left",
        textfont=dict(size=style.font, color=q_col),
        name=f"queries {head}",
        marker=dict(
            size=[14 if j == spec.query else 9 for j in range(len(q_text))],
            color=[colour if j == spec.query else "rgba(0,0,0,0.08)" for j in range(len(q_text))],
        ),
        customdata=[[head, j, lab, "q"] for j, lab in enumerate(spec.labels_q)],
        hovertemplate=f"{words['query']} %{{customdata[2]}}<br><i>{words['follow']}</i><extra></extra>",
    )
    shown = [f"{w[j]:.4f}" if np.isfinite(w[j]) else words["masked"] for j in range(len(spec.labels_k))]
    keys = dict(
        axes,
        x=[1.0] * len(spec.labels_k),
        y=list(range(len(spec.labels_k))),
        text=[short_label(lab) for lab in spec.labels_k],
        textposition="middle right",
        name=f"keys {head}",
        textfont=dict(size=style.font, color=["#000000" if np.isfinite(v) else "#9a9a9a" for v in w]),
        marker=dict(
            size=9,
            color=[colour if np.isfinite(v) else "#b8b8b8" for v in w],
            opacity=[0.25 + 0.75 * float(v) if np.isfinite(v) else 0.5 for v in w],
        ),
        customdata=[[head, j, lab, "k", shown[j]] for j, lab in enumerate(spec.labels_k)],
        hovertemplate=(
            f"<b>{words['head']} {head}</b> · KV {spec.group}<br>{words['query']} {q_label}<br>"
            f"{words['key']} %{{customdata[2]}}<br>{words['weight']} %{{customdata[4]}}"
            "<extra></extra>"
        ),
    )
    lines = [
        dict(
            type="line",
            xref=f"x{n}",
            yref=f"y{n}",
            x0=0,
            y0=spec.query,
            x1=1,
            y1=j,
            layer="below",
            line=dict(color=colour, width=LINE_MAX_PX * float(v)),
            opacity=float(min(1.0, 0.3 + 0.7 * v)),
            name=f"w {head} {j}",
        )
        for j, v in enumerate(w)
        if np.isfinite(v) and v > 0
    ]
    return [queries, keys], lines


def _note_line(note: str, title_px: int, style: Style) -> dict:
    """The figure's note, one line under its title and above the panels' titles."""
    return dict(
        x=0,
        y=1,
        xref="paper",
        yref="paper",
        xanchor="left",
        yanchor="bottom",
        yshift=title_px + 6,
        showarrow=False,
        text=note,
        font=dict(size=max(11, style.font - 1), color="#555555"),
    )


def token_lines_figure(spec: TokenLines, style: Style = Style()) -> go.Figure:
    """Where one query token attends in each head of a KV group, BertViz-style: per head a panel with
    the queries (left), the keys (right) and a line from the chosen query to every key it may read,
    ``LINE_MAX_PX × weight`` px wide and more opaque the larger the weight, in the head's own shade of
    its group's hue. Hover on a key names the head, its KV group, the query, the key and the weight;
    the query column's points are there to be clicked (``customdata`` ``[head, position, label, "q"]``).
    """
    n = len(spec.heads)
    ncols = min(n, 2)
    nrows = -(-n // ncols)
    rows_px = 22 if not style.present else 32
    t = max(len(spec.labels_q), len(spec.labels_k))
    panel_h, title_px = max(120, t * rows_px), 34 if style.present else 26
    plot_h = nrows * panel_h + (nrows - 1) * title_px
    words = {w: style.t(f"fig.{w}") for w in ("head", "query", "key", "weight", "masked")}
    words["follow"] = style.t("fig.focus_follow")
    data, shapes, annotations, layout = [], [], [], {}
    gap = 0.08
    width = (1 - gap * (ncols - 1)) / ncols
    for i in range(n):
        row, col = divmod(i, ncols)
        traces, lines = _lines_panel(i, spec, style, words)
        data += traces
        shapes += lines
        ax = "" if i == 0 else str(i + 1)
        top = 1 - row * (panel_h + title_px) / plot_h
        x0 = col * (width + gap)
        layout[f"xaxis{ax}"] = dict(domain=[x0, x0 + width], range=[-0.75, 1.75], visible=False, fixedrange=True)
        layout[f"yaxis{ax}"] = dict(
            domain=[max(0.0, top - panel_h / plot_h), top], range=[t - 0.5, -0.5], visible=False, fixedrange=True
        )
        head = spec.heads[i]
        annotations.append(
            dict(
                x=0.5,
                y=1.0,
                xref=f"x{ax} domain",
                yref=f"y{ax} domain",
                yanchor="bottom",
                showarrow=False,
                text=f"<b>{words['head']} {head}</b> · KV {spec.group}",
                font=dict(size=style.font, color=head_colour(spec.group, head % spec.n_rep, spec.n_rep)),
            )
        )
    # one title line hanging from the top, the note under it, then the panels' titles
    note_px = int(1.6 * style.font) if spec.note else 0
    top_margin = int(12 + 1.6 * style.title_font + note_px + title_px + 8)
    if spec.note:
        annotations.append(_note_line(spec.note, title_px, style))
    layout.update(
        title=dict(
            text=spec.title,
            font=dict(size=style.title_font),
            yref="container",
            y=1,
            yanchor="top",
            xref="paper",
            x=0,
            xanchor="left",
            pad=dict(t=12),
        ),
        font=dict(size=style.font),
        shapes=shapes,
        annotations=annotations,
        showlegend=False,
        height=int(top_margin + plot_h + 20),
        margin=dict(l=10, r=10, t=top_margin, b=20),
        plot_bgcolor="rgba(0,0,0,0)",
        hovermode="closest",
        dragmode=False,
        hoverlabel=dict(font=dict(size=max(12, style.font - 2))),
        meta={FONTS_SET: style.font},
    )
    reserve_margins({"data": data, "layout": layout})
    return PlainFigure(data, layout)
