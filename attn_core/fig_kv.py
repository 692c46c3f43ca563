"""Plotly figures of the KV-sharing page: who reads which K/V, repeat_kv, maps by group, costs, conversion.

Every builder takes plain numbers or CPU numpy arrays and returns a
``plotly.graph_objects.Figure``; the ``*_view`` functions pair a figure with the
numbers behind it (:class:`attn_core.views.View`) for the page's export buttons
and the command-line exporter alike, and :func:`kv_sharing_views` gives every
chart of the page. Colours identify KV groups
(:func:`attn_core.figures.group_color`), always next to a text label; weights
use the fixed 0..1 scale of :mod:`attn_core.figures`, K and V values a
diverging scale centred at 0 with its range in the colour bar.

Long sequences (up to 8192 tokens, 64 heads): the maps view (:func:`group_maps`)
computes the shown heads' weights by chunks of query rows, pooled as they are
made (:mod:`attn_core.longmaps`), with a side (:func:`maps_side`) that keeps the
chart's JSON under 2 MB; the mapping and conversion studies run by chunks, on a
stated subset of query rows when every row would take too long
(:mod:`attn_core.convert`). No view builds the ``[H, T, T]`` maps of a long sequence.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import torch
from plotly.subplots import make_subplots

from .config import AttentionConfig, ConfigError, attention_kind, check_int, check_kv_heads, divisors, unknown_option
from .convert import (
    MAPPINGS,
    METHODS,
    PAIR_SIDE,
    SOURCES,
    ConversionStudy,
    MappingMismatch,
    PairMaps,
    check_sim_size,
    conversion_on_tokens,
    kv_map,
    mapping_on_tokens,
    pair_from_mismatch,
    pair_on_tokens,
)
from .costs import attention_costs
from .figures import DIVERGING_SCALE, MAX_HOVER_CELLS, Style, group_color, pool_max
from .i18n import count
from .longmaps import PooledMaps, pool_factor, pooled_attention
from .memory import binary_unit, dtype_bits
from .sources import SeededLayer
from .tokens import synthetic_tokens
from .views import View

# A chart's JSON stays under 2 MB: plotly writes float32 arrays as base64, about 5.4 bytes a cell and up to 7
# where NaN gaps are many (their base64 holds '/', which plotly escapes); hover labels count on top.
MAX_FIGURE_BYTES = 1_900_000
FIGURE_OVERHEAD_BYTES = 100_000  # layout: titles, ticks, panel frames and labels, the template
BYTES_PER_CELL = 7
MAX_MAP_CELLS = (MAX_FIGURE_BYTES - FIGURE_OVERHEAD_BYTES) // BYTES_PER_CELL  # heatmap cells of one chart

# One colour, dash and marker per conversion method (Okabe-Ito hues not used for the first KV groups).
METHOD_STYLE = {
    "mean": dict(color="#009E73", dash="solid", symbol="circle"),
    "first": dict(color="#D55E00", dash="dash", symbol="square"),
    "random": dict(color="#555555", dash="dot", symbol="x"),
}


def kv_positions(n_heads: int, n_kv_heads: int) -> list[float]:
    """x of KV head ``g`` in the diagrams: the centre of its contiguous group of query heads."""
    check_kv_heads(n_heads, n_kv_heads)
    n_rep = n_heads // n_kv_heads
    return [g * n_rep + (n_rep - 1) / 2 for g in range(n_kv_heads)]


def _layout(fig: go.Figure, style: Style, title: str, height: int, **kw: object) -> go.Figure:
    layout: dict[str, object] = dict(
        title=dict(text=title, font=dict(size=style.title_font)),
        font=dict(size=style.font),
        height=height,
        margin=dict(l=10, r=10, t=70 if not style.present else 95, b=10),
        plot_bgcolor="rgba(0,0,0,0)",
    )
    layout.update(kw)
    fig.update_layout(**layout)
    # explicit sizes: a chart theme may set its own tick and axis-title fonts, which would not grow on a projector
    fig.update_xaxes(tickfont=dict(size=style.font), title_font=dict(size=style.font))
    fig.update_yaxes(tickfont=dict(size=style.font), title_font=dict(size=style.font))
    return fig


# ---------------------------------------------------------------- diagram
def kv_diagram(
    n_heads: int, n_kv_heads: int, mapping: str = "contiguous", style: Style = Style(), title: str | None = None
) -> go.Figure:
    """Query heads in the top row, KV heads below, one link per query head to the KV head it reads.

    ``mapping``: ``contiguous`` (``h // n_rep``, as in ``repeat_kv``) or
    ``interleaved`` (``h mod n_kv_heads``). KV heads sit at the same places for
    both mappings, so two diagrams differ only in their links. Links and nodes are
    coloured by KV head; every node is labelled with its index. Each link trace
    carries ``meta = {"kv_head": g, "query_heads": [...]}``.
    """
    owner = kv_map(n_heads, n_kv_heads, mapping)
    xs_kv = kv_positions(n_heads, n_kv_heads)
    big = n_heads > 24
    node = 10 if n_heads > 48 else (14 if big else 22)
    node = node + 6 if style.present else node
    label_size = max(9, style.font - (4 if big else 0))
    fig = go.Figure()
    for g in range(n_kv_heads):
        members = [h for h in range(n_heads) if owner[h] == g]
        xs: list[float | None] = []
        ys: list[float | None] = []
        for h in members:
            xs += [h, xs_kv[g], None]
            ys += [1, 0, None]
        fig.add_trace(
            go.Scatter(
                x=xs,
                y=ys,
                mode="lines",
                hoverinfo="skip",
                showlegend=False,
                name=f"KV {g}",
                line=dict(color=group_color(g), width=(3 if style.present else 2) if not big else 1.5),
                meta={"kv_head": g, "query_heads": members},
            )
        )
    q_text = [f"Q{h}" if not big else str(h) for h in range(n_heads)]
    fig.add_trace(
        go.Scatter(
            x=list(range(n_heads)),
            y=[1] * n_heads,
            mode="markers+text",
            text=q_text,
            textposition="top center",
            textfont=dict(size=label_size),
            showlegend=False,
            name="query heads",
            marker=dict(size=node, color=[group_color(g) for g in owner], line=dict(width=1, color="#222222")),
            customdata=[[h, owner[h]] for h in range(n_heads)],
            hovertemplate=style.t("kvfig.q_hover") + "<extra></extra>",
        )
    )
    readers = [[h for h in range(n_heads) if owner[h] == g] for g in range(n_kv_heads)]
    fig.add_trace(
        go.Scatter(
            x=xs_kv,
            y=[0] * n_kv_heads,
            mode="markers+text",
            text=[f"KV{g}" if n_kv_heads <= 16 else str(g) for g in range(n_kv_heads)],
            textposition="bottom center",
            textfont=dict(size=label_size),
            showlegend=False,
            name="KV heads",
            marker=dict(
                size=node + 4,
                symbol="square",
                color=[group_color(g) for g in range(n_kv_heads)],
                line=dict(width=1, color="#222222"),
            ),
            customdata=[[g, ", ".join(map(str, readers[g]))] for g in range(n_kv_heads)],
            hovertemplate=style.t("kvfig.kv_hover") + "<extra></extra>",
        )
    )
    n_rep = n_heads // n_kv_heads
    if title is None:
        title = style.t(
            "kvfig.diagram_title",
            qh=count(n_heads, "query_head", style.lang),
            kvh=count(n_kv_heads, "kv_head", style.lang),
            kind=attention_kind(n_heads, n_kv_heads),
            rep=n_rep,
        )
    return _layout(
        fig,
        style,
        title,
        300 if not style.present else 380,
        xaxis=dict(visible=False, range=[-1, n_heads], fixedrange=True),
        yaxis=dict(
            tickvals=[1, 0],
            fixedrange=True,
            range=[-0.45, 1.45],
            zeroline=False,
            showgrid=False,
            ticktext=[style.t("kvfig.q_row", h=n_heads), style.t("kvfig.kv_row", kv=n_kv_heads)],
        ),
    )


def repeat_kv_figure(
    n_heads: int, n_kv_heads: int, seq_len: int, head_dim: int, batch: int = 1, style: Style = Style()
) -> go.Figure:
    """``repeat_kv`` drawn as tensor blocks: ``[B, H_kv, T, D]`` on the left, ``[B, H, T, D]`` on the right.

    Each block is one head's ``[T, D]`` slab (of K, and the same again for V),
    coloured by KV head; lines fan out from every KV head to its ``n_rep`` copies.
    Right block ``h`` is drawn in row ``h`` (top to bottom), KV head ``g`` beside
    the copies it becomes.
    """
    check_kv_heads(n_heads, n_kv_heads)
    n_rep = n_heads // n_kv_heads
    h, hk, t, d, b = n_heads, n_kv_heads, seq_len, head_dim, batch
    shapes, xs, ys, texts, hovers = [], [], [], [], []
    lx0, lx1, rx0, rx1 = 0.0, 2.0, 5.0, 7.0
    pad = 0.12 if h <= 32 else 0.05
    for g in range(hk):
        c = g * n_rep + n_rep / 2  # centre of its copies
        col = group_color(g)
        shapes.append(
            dict(
                type="rect",
                x0=lx0,
                x1=lx1,
                y0=c - 0.5 + pad,
                y1=c + 0.5 - pad,
                fillcolor=col,
                line=dict(color="#222222", width=1),
                opacity=0.9,
                layer="below",
            )
        )
        xs.append((lx0 + lx1) / 2)
        ys.append(c)
        texts.append(f"KV {g}")
        hovers.append(style.t("kvfig.block_kv_hover", g=g, t=t, d=d))
        for r in range(g * n_rep, (g + 1) * n_rep):
            shapes.append(
                dict(type="line", x0=lx1, y0=c, x1=rx0, y1=r + 0.5, line=dict(color=col, width=1.5), layer="below")
            )
            shapes.append(
                dict(
                    type="rect",
                    x0=rx0,
                    x1=rx1,
                    y0=r + pad,
                    y1=r + 1 - pad,
                    fillcolor=col,
                    line=dict(color="#222222", width=1),
                    opacity=0.9,
                    layer="below",
                )
            )
            xs.append((rx0 + rx1) / 2)
            ys.append(r + 0.5)
            texts.append(f"{style.t('fig.head')} {r} ← KV {g}")
            hovers.append(style.t("kvfig.block_copy_hover", h=r, g=g, t=t, d=d))
    fig = go.Figure(
        go.Scatter(
            x=xs,
            y=ys,
            mode="markers",
            marker=dict(size=1, opacity=0),
            customdata=hovers,
            hovertemplate="%{customdata}<extra></extra>",
            showlegend=False,
            name="blocks",
        )
    )
    label_size = max(9, style.font - (3 if h > 16 else 0))
    annotations = []
    for x, y, txt in zip(xs, ys, texts, strict=True):
        left = x < 3
        annotations.append(
            dict(
                x=lx0 - 0.1 if left else rx1 + 0.1,
                y=y,
                text=txt,
                showarrow=False,
                xanchor="right" if left else "left",
                font=dict(size=label_size),
            )
        )
    head_font = dict(size=style.font)
    annotations += [
        dict(
            x=(lx0 + lx1) / 2,
            y=-0.15,
            yanchor="bottom",
            showarrow=False,
            font=head_font,
            text=style.t("kvfig.block_left", b=b, hk=hk, t=t, d=d),
        ),
        dict(
            x=(rx0 + rx1) / 2,
            y=-0.15,
            yanchor="bottom",
            showarrow=False,
            font=head_font,
            text=style.t("kvfig.block_right", b=b, h=h, t=t, d=d),
        ),
        dict(
            x=(lx1 + rx0) / 2,
            y=h / 2,
            showarrow=False,
            font=dict(size=style.font + 2),
            text=f"<b>× {n_rep}</b>" if n_rep > 1 else style.t("kvfig.no_repeat"),
            bgcolor="rgba(255,255,255,0.8)",
        ),
    ]
    row_px = max(11, min(30, 520 // max(h, 1)))
    height = int(min(1000, max(320, row_px * h + (170 if style.present else 140))))
    return _layout(
        fig,
        style,
        style.t("kvfig.block_title") + "<br><sup>" + style.t("kvfig.block_sub") + "</sup>",
        height,
        shapes=shapes,
        annotations=annotations,
        xaxis=dict(visible=False, range=[-3.2, 10.2], fixedrange=True),
        yaxis=dict(visible=False, range=[h + 0.2, -1.6 if not style.present else -2.0], fixedrange=True),
    )


# ---------------------------------------------------------------- maps grouped by KV head
def _pool_mean_last(x: np.ndarray, f: int) -> np.ndarray:
    """Mean over blocks of ``f`` along the last axis (a shorter last block is averaged over what it has)."""
    if f == 1:
        return x
    n = x.shape[-1]
    pad = -(-n // f) * f - n
    xp = np.pad(x.astype(np.float64), [(0, 0)] * (x.ndim - 1) + [(0, pad)], constant_values=np.nan)
    return np.nanmean(xp.reshape(*x.shape[:-1], -1, f), axis=-1).astype(np.float32)


def _ticks(n: int, labels: list[str], f: int, max_labels: int) -> tuple[list[int], list[str]]:
    step = max(1, -(-n // max_labels))
    idx = list(range(0, n, step))
    if f == 1:
        return idx, [labels[i] for i in idx]
    return idx, [f"{i * f}–{min((i + 1) * f, len(labels)) - 1}" for i in idx]


@dataclass(frozen=True)
class _MapsLayout:
    """Where the panels of :func:`grouped_maps_figure` go, in cells: one band per KV group."""

    per_line: int  # maps per line in a band
    n_lines: int  # lines of maps per band
    gap: int  # cells between panels
    panel_cols: int  # columns of the maps part (``per_line`` maps and their gaps)
    total_cols: int  # the maps, then Kᵀ and Vᵀ
    cell_px: int
    gap_y: int  # rows between bands and lines (room for the panel labels)
    maps_h: int
    dd: int  # dimensions of Kᵀ and Vᵀ drawn
    band_h: int
    height: int

    @property
    def kv_x0(self) -> int:
        """First column of the Kᵀ panel: the K/V trace starts there."""
        return self.panel_cols + self.gap

    @property
    def cells(self) -> int:
        """Cells of both heatmap traces: the weights trace spans the maps, the K/V trace the two K/V panels."""
        return self.height * self.total_cols - self.height * self.gap


def _maps_layout(
    n_rep: int, n_groups: int, r: int, c: int, d_full: int, style: Style, max_dims: int = 64, per_line: int = 8
) -> _MapsLayout:
    per_line = max(1, min(per_line, n_rep))
    n_lines = -(-n_rep // per_line)
    ncols = per_line + 2  # the maps, then Kᵀ and Vᵀ
    gap = max(1, int(round(0.15 * max(r, c))))
    total_cols = ncols * c + (ncols - 1) * gap
    cell_px = max(4, min(30, 900 // max(total_cols, 1)))  # plot width on a wide page, less the colour bars
    gap_y = max(gap, -(-(style.font + 20) // cell_px))  # room for the panel labels
    maps_h = n_lines * r + (n_lines - 1) * gap_y
    dd = min(d_full, max(maps_h, 16), max_dims)
    band_h = max(maps_h, dd)
    height = gap_y + n_groups * band_h + (n_groups - 1) * gap_y
    return _MapsLayout(
        per_line, n_lines, gap, per_line * (c + gap) - gap, total_cols, cell_px, gap_y, maps_h, dd, band_h, height
    )


def _json_chars(text: np.ndarray) -> int:
    """Characters of a text array in a figure's JSON: quotes, commas and plotly's escapes of < > / included."""
    items = text.ravel().tolist()
    joined = "".join(items)
    return len(json.dumps(items)) + 5 * sum(joined.count(ch) for ch in "<>/")


def grouped_maps_figure(
    weights: np.ndarray,
    k: np.ndarray,
    v: np.ndarray,
    tokens_q: Sequence[str],
    tokens_k: Sequence[str],
    groups: Sequence[int] | None = None,
    style: Style = Style(),
    max_cells: int = 48,
    max_dims: int = 64,
    per_line: int = 8,
) -> go.Figure:
    """Every query head's weights, one band per KV group, with the group's K and V drawn once.

    weights ``[H, Tq, Tk]``; k, v ``[H_kv, Tk, D]``. The band of KV head ``g``
    holds the maps of the query heads ``g·n_rep .. (g+1)·n_rep - 1`` that read
    it, ``per_line`` to a line, then ``Kᵀ`` and ``Vᵀ`` of that KV head (``[D, Tk]``:
    key tokens left to right like the maps; as many dimensions as the band is
    tall, at least 16, at most ``max_dims``, the title says when some are left
    out). Maps longer than ``max_cells`` are block-max pooled (K and V
    block-mean pooled along the keys), as the title says. Trace 0 holds the
    weights (0..1 scale), trace 1 K and V (diverging, ``coloraxis2``, starting
    at column ``x0``). :func:`pooled_maps_figure` draws the same from maps
    pooled while they were computed.
    """
    h_all, t_q, t_k = weights.shape
    n_kv = k.shape[0]
    check_kv_heads(h_all, n_kv)
    groups = list(range(n_kv)) if groups is None else list(groups)
    w, f = pool_max(weights.astype(np.float32), max_cells)  # (H, r, c)
    dk = min(k.shape[-1], max_dims)
    kt = _pool_mean_last(np.swapaxes(k[:, :, :dk], 1, 2), f)  # (H_kv, dk, c)
    vt = _pool_mean_last(np.swapaxes(v[:, :, :dk], 1, 2), f)
    return _grouped_maps(
        dict(enumerate(w)), dict(enumerate(kt)), dict(enumerate(vt)), h_all, n_kv, groups, f, list(tokens_q),
        list(tokens_k), k.shape[-1], style, max_dims, per_line,
    )  # fmt: skip


def _map_axes(
    x_vals: list, x_text: list[str], y_vals: list, y_text: list[str], x_title: str, y_title: str
) -> dict[str, dict]:
    """``xaxis`` and ``yaxis`` of a grid of maps drawn in one heatmap: labelled ticks, square cells, rows downwards."""
    common = dict(showgrid=False, zeroline=False, constrain="domain")
    return dict(
        xaxis=dict(tickvals=x_vals, ticktext=x_text, tickangle=-60, title=dict(text=x_title), **common),
        yaxis=dict(tickvals=y_vals, ticktext=y_text, autorange="reversed", scaleanchor="x",
                   title=dict(text=y_title), **common),
    )  # fmt: skip


def _grouped_maps(
    w: Mapping[int, np.ndarray],
    kt: Mapping[int, np.ndarray],
    vt: Mapping[int, np.ndarray],
    h_all: int,
    n_kv: int,
    groups: list[int],
    f: int,
    tokens_q: list[str],
    tokens_k: list[str],
    d_full: int,
    style: Style,
    max_dims: int = 64,
    per_line: int = 8,
) -> go.Figure:
    """The figure of :func:`grouped_maps_figure` from maps already pooled by ``f``.

    ``w[head]`` ``[r, c]`` for every query head of ``groups``; ``kt[g]``,
    ``vt[g]`` ``[>= dd, c]`` (Kᵀ, Vᵀ of KV head ``g``, keys pooled by ``f``).
    """
    n_rep = h_all // n_kv
    t_q, t_k = len(tokens_q), len(tokens_k)
    r, c = next(iter(w.values())).shape
    lay = _maps_layout(n_rep, len(groups), r, c, d_full, style, max_dims, per_line)
    dd, gap, gap_y, cell_px = lay.dd, lay.gap, lay.gap_y, lay.cell_px
    big_w = np.full((lay.height, lay.panel_cols), np.nan, dtype=np.float32)  # the maps
    big_kv = np.full((lay.height, lay.total_cols - lay.kv_x0), np.nan, dtype=np.float32)  # Kᵀ and Vᵀ, from kv_x0
    hover_ok = f == 1 and lay.cells <= MAX_HOVER_CELLS
    text_w = np.full(big_w.shape, "", dtype=object) if hover_ok else None
    text_kv = np.full(big_kv.shape, "", dtype=object) if hover_ok else None
    labels_q = [f"{tok} ({i})" for i, tok in enumerate(tokens_q)]
    labels_k = [f"{tok} ({i})" for i, tok in enumerate(tokens_k)]
    shapes, annotations, ytick_vals, ytick_text = [], [], [], []
    yq, yl = _ticks(r, labels_q, f, max(2, r * cell_px // (style.font + 4)))
    y = gap_y
    t_head = style.t("fig.head")
    for g in groups:
        col = group_color(g)
        panels = [(lay.per_line, y, kt[g][:dd], "K"), (lay.per_line + 1, y, vt[g][:dd], "V")]
        yy = y
        heads = list(range(g * n_rep, (g + 1) * n_rep))
        for li in range(lay.n_lines):
            for j, head in enumerate(heads[li * lay.per_line : (li + 1) * lay.per_line]):
                panels.append((j, yy, w[head], head))
            ytick_vals += [yy + i for i in yq]
            ytick_text += yl
            yy += r + gap_y
        for slot, y0, mat, what in panels:
            x0 = slot * (c + gap)
            nr, nc = mat.shape
            if what in ("K", "V"):
                xk = x0 - lay.kv_x0
                big_kv[y0 : y0 + nr, xk : xk + nc] = mat
                label = style.t("kvfig.kv_panel", what=what, g=g)
                if text_kv is not None:
                    cell = np.char.add(
                        np.char.add(f"{what}ᵀ · KV {g}<br>{style.t('fig.dim')} ", np.arange(nr).astype(str)[:, None]),
                        np.char.add(" · " + style.t("fig.key") + " ", np.array(labels_k, dtype=str)[None, :]),
                    )
                    text_kv[y0 : y0 + nr, xk : xk + nc] = cell
            else:
                big_w[y0 : y0 + nr, x0 : x0 + nc] = mat
                label = f"{t_head} {what}"
                if text_w is not None:
                    qk = np.char.add(
                        np.char.add(np.array(labels_q, dtype=str)[:, None], " → "),
                        np.array(labels_k, dtype=str)[None, :],
                    )
                    text_w[y0 : y0 + nr, x0 : x0 + nc] = np.char.add(qk, f"<br>{t_head} {what} · KV {g}")
            shapes.append(
                dict(
                    type="rect",
                    x0=x0 - 0.5,
                    x1=x0 + nc - 0.5,
                    y0=y0 - 0.5,
                    y1=y0 + nr - 0.5,
                    line=dict(
                        color=col, width=4 if style.present else 3, dash="dot" if what in ("K", "V") else "solid"
                    ),
                    layer="above",
                )
            )
            annotations.append(
                dict(
                    x=x0 + (nc - 1) / 2,
                    y=y0 - 0.6,
                    xref="x",
                    yref="y",
                    yanchor="bottom",
                    showarrow=False,
                    text=f"<b>{label}</b>",
                    font=dict(color=col, size=style.font),
                )
            )
        y += lay.band_h + gap_y
    if text_w is not None and BYTES_PER_CELL * lay.cells + _json_chars(text_w) + _json_chars(text_kv) > (
        MAX_FIGURE_BYTES - FIGURE_OVERHEAD_BYTES
    ):
        text_w = text_kv = None  # hover labels would make the chart too heavy to send: values only
    kv_vals = np.concatenate([np.ravel(kt[g][:dd]) for g in groups] + [np.ravel(vt[g][:dd]) for g in groups])
    finite = kv_vals[np.isfinite(kv_vals)]
    lim = float(np.max(np.abs(finite))) if finite.size else 1.0
    lim = lim if lim > 0 else 1.0
    weight_label = style.t("fig.weight")
    fig = go.Figure()
    fig.add_trace(
        go.Heatmap(
            z=big_w,
            coloraxis="coloraxis",
            hoverongaps=False,
            text=text_w,
            name="weights",
            hovertemplate=("%{text}<br>" if text_w is not None else "") + weight_label + " %{z:.4f}<extra></extra>",
        )
    )
    fig.add_trace(
        go.Heatmap(
            z=big_kv,
            x0=lay.kv_x0,
            coloraxis="coloraxis2",
            hoverongaps=False,
            text=text_kv,
            name="kv",
            hovertemplate=("%{text}<br>" if text_kv is not None else "")
            + style.t("kvfig.value")
            + " %{z:.4g}<extra></extra>",
        )
    )
    xt, xl = _ticks(c, labels_k, f, max(2, c * cell_px // (style.font + 4)))
    title = style.t("kvfig.maps_title", qh=count(h_all, "query_head", style.lang), kv=n_kv, shown=len(groups))
    notes = [style.t("kvfig.maps_sub")]
    if f > 1:
        notes.append(style.t("fig.pooled", r=r, c=c, tq=t_q, tk=t_k))
        notes.append(style.t("kvfig.pooled_how", f=f))
    if dd < d_full:
        notes.append(style.t("kvfig.dims_cut", dd=dd, d=d_full))
    title += "<br><sup>" + " · ".join(notes) + "</sup>"
    return _layout(
        fig,
        style,
        title,
        int(min(3000, max(360, lay.height * cell_px + 200))),
        coloraxis=dict(
            colorscale=style.weight_scale,
            cmin=0.0,
            cmax=1.0,
            colorbar=dict(title=dict(text=weight_label), x=1.0, len=0.45, y=0.78),
        ),
        coloraxis2=dict(
            colorscale=DIVERGING_SCALE,
            cmin=-lim,
            cmax=lim,
            cmid=0.0,
            colorbar=dict(title=dict(text=style.t("kvfig.kv_scale", lim=f"{lim:.3g}")), x=1.0, len=0.45, y=0.25),
        ),
        shapes=shapes,
        annotations=annotations,
        uirevision="kvmaps",
        **_map_axes(
            [col * (c + gap) + j for col in range(lay.per_line + 2) for j in xt],
            xl * (lay.per_line + 2),
            ytick_vals,
            ytick_text,
            style.t("fig.key"),
            style.t("kvfig.maps_y"),
        ),
    )


# ---------------------------------------------------------------- mapping conventions
def mismatch_figure(
    kl: np.ndarray, built: Sequence[int], run: Sequence[int], style: Style = Style(), note: str | None = None
) -> go.Figure:
    """Per query head: mean KL (nats) between the map as built and as run with the other mapping.

    kl ``[H]``; ``built[h]`` / ``run[h]`` the KV head query head ``h`` reads in
    each case. Bars are coloured by the KV head of the checkpoint; heads whose
    KV head is the same under both mappings have KL 0 and say so. ``note`` is
    added to the subtitle (which query rows the KL was measured on).
    """
    n = len(kl)
    x = [f"{style.t('fig.head')} {h}" for h in range(n)]
    same = style.t("kvfig.same_kv")
    fig = go.Figure(
        go.Bar(
            x=x,
            y=np.asarray(kl, dtype=float),
            marker=dict(color=[group_color(g) for g in built], line=dict(color="#222222", width=1)),
            text=[f"KV {a}→{b}" if a != b else same for a, b in zip(built, run, strict=True)],
            textposition="outside",
            customdata=[[a, b] for a, b in zip(built, run, strict=True)],
            hovertemplate="%{x}<br>" + style.t("kvfig.mismatch_hover") + "<extra></extra>",
            name="KL",
        )
    )
    top = float(np.max(kl)) if n else 1.0
    n_wrong = int(sum(a != b for a, b in zip(built, run, strict=True)))
    sub = style.t("kvfig.mismatch_sub") + (f" · {note}" if note else "")
    title = style.t("kvfig.mismatch_title", n=n_wrong, h=n) + "<br><sup>" + sub + "</sup>"
    return _layout(
        fig,
        style,
        title,
        360 if not style.present else 440,
        xaxis=dict(title=dict(text=style.t("kvfig.query_head")), type="category", tickangle=-45 if n > 16 else 0),
        yaxis=dict(title=dict(text=style.t("kvfig.kl_axis")), range=[0, max(top, 1e-3) * 1.25], rangemode="tozero"),
        showlegend=False,
    )


def pair_maps_figure(
    a: np.ndarray,
    b: np.ndarray,
    tokens_q: Sequence[str],
    tokens_k: Sequence[str],
    titles: tuple[str, str],
    colors: tuple[str, str],
    style: Style = Style(),
    max_cells: int = 64,
    factor: int = 1,
) -> go.Figure:
    """Two weight maps ``[Tq, Tk]`` side by side on one 0..1 scale, framed in the colours of the KV heads they read.

    Maps longer than ``max_cells`` are block-max pooled here; ``factor`` > 1 says
    ``a`` and ``b`` are already block maxima of ``factor × factor`` blocks of the
    ``len(tokens_q) × len(tokens_k)`` maps (:func:`attn_core.convert.pair_maps_rows`).
    """
    if factor > 1:
        both, f = np.stack([a, b]).astype(np.float32), int(factor)
    else:
        both, f = pool_max(np.stack([a, b]).astype(np.float32), max_cells)
    _, r, c = both.shape
    gap = max(1, int(round(0.15 * c)))
    big = np.full((r, 2 * c + gap), np.nan, dtype=np.float32)
    big[:, :c], big[:, c + gap :] = both[0], both[1]
    labels_q = [f"{tok} ({i})" for i, tok in enumerate(tokens_q)]
    labels_k = [f"{tok} ({i})" for i, tok in enumerate(tokens_k)]
    text = None
    if f == 1:
        qk = np.char.add(
            np.char.add(np.array(labels_q, dtype=str)[:, None], " → "), np.array(labels_k, dtype=str)[None, :]
        )
        text = np.full(big.shape, "", dtype=object)
        text[:, :c], text[:, c + gap :] = qk, qk
    fig = go.Figure(
        go.Heatmap(
            z=big,
            coloraxis="coloraxis",
            hoverongaps=False,
            text=text,
            name="weights",
            hovertemplate=("%{text}<br>" if text is not None else "")
            + style.t("fig.weight")
            + " %{z:.4f}<extra></extra>",
        )
    )
    shapes, annotations = [], []
    for i, (title, col) in enumerate(zip(titles, colors, strict=True)):
        x0 = i * (c + gap)
        shapes.append(
            dict(
                type="rect",
                x0=x0 - 0.5,
                x1=x0 + c - 0.5,
                y0=-0.5,
                y1=r - 0.5,
                layer="above",
                line=dict(color=col, width=4 if style.present else 3),
            )
        )
        annotations.append(
            dict(
                x=x0 + (c - 1) / 2,
                y=-0.6,
                yanchor="bottom",
                showarrow=False,
                text=f"<b>{title}</b>",
                font=dict(color=col, size=style.font),
            )
        )
    xt, xl = _ticks(c, labels_k, f, 16)
    yt, yl = _ticks(r, labels_q, f, 32)
    title = style.t("kvfig.pair_title")
    if f > 1:
        title += "<br><sup>" + style.t("fig.pooled", r=r, c=c, tq=len(tokens_q), tk=len(tokens_k))
        title += " · " + style.t("kvfig.pooled_pair", f=f) + "</sup>"
    cell_px = max(6, min(32, 560 // max(c, 1)))
    return _layout(
        fig,
        style,
        title,
        int(min(1200, max(340, r * cell_px + 200))),
        coloraxis=dict(
            colorscale=style.weight_scale, cmin=0.0, cmax=1.0, colorbar=dict(title=dict(text=style.t("fig.weight")))
        ),
        shapes=shapes,
        annotations=annotations,
        uirevision="pair",
        **_map_axes(xt + [c + gap + j for j in xt], xl * 2, yt, yl, style.t("fig.key"), style.t("fig.query")),
    )


# ---------------------------------------------------------------- costs and conversion
def kv_option_label(d: int, n_heads: int) -> str:
    """``"1 · MQA"``, ``"4 · GQA"``, ``"8 · MHA"``."""
    return f"{d} · {attention_kind(n_heads, d)}"


def kv_bytes_figure(
    n_kv: Sequence[int], kv_bytes: Sequence[int], n_heads: int, current: int, style: Style = Style()
) -> go.Figure:
    """KV cache per token per layer (bytes, shown in one binary unit) for every choice of ``n_kv_heads``.

    The bar of the current choice is drawn in full colour, the others faded; hover
    gives the exact byte count.
    """
    size, unit = binary_unit(max(kv_bytes) if len(kv_bytes) else 1)
    labels = [kv_option_label(d, n_heads) for d in n_kv]
    fig = go.Figure(
        go.Bar(
            x=labels,
            y=[bt / size for bt in kv_bytes],
            name="kv",
            marker=dict(
                color=["#0072B2" if d == current else "rgba(0,114,178,0.35)" for d in n_kv],
                line=dict(color="#222222", width=1),
            ),
            text=[f"{bt / size:.4g} {unit}" for bt in kv_bytes],
            textposition="outside",
            customdata=list(kv_bytes),
            hovertemplate="n_kv_heads = %{x}<br>%{customdata:,} B<extra></extra>",
        )
    )
    top = max(kv_bytes) / size if len(kv_bytes) else 1
    return _layout(
        fig,
        style,
        style.t("kvfig.bytes_title"),
        360 if not style.present else 440,
        xaxis=dict(title=dict(text=style.t("ctl.n_kv_heads")), type="category"),
        yaxis=dict(title=dict(text=style.t("kvfig.bytes_axis", unit=unit)), range=[0, top * 1.2]),
        showlegend=False,
    )


def conversion_figure(
    n_kv: Sequence[int],
    rel_l2: dict[str, np.ndarray],
    kl: dict[str, np.ndarray],
    n_heads: int,
    current: int | None = None,
    style: Style = Style(),
    note: str | None = None,
) -> go.Figure:
    """Two panels over every ``n_kv_heads``: relative L2 error of the layer output, and mean KL of the maps.

    One line per conversion method (colour, dash and marker differ); the current
    ``n_kv_heads`` is shaded. Values are ratios (1 = an error as large as the
    output itself) and nats. ``note`` is added to the subtitle (which query rows were measured).
    """
    labels = [kv_option_label(d, n_heads) for d in n_kv]
    fig = make_subplots(
        rows=1, cols=2, horizontal_spacing=0.1, subplot_titles=(style.t("kvfig.conv_l2"), style.t("kvfig.conv_kl"))
    )
    for col, data, fmt in ((1, rel_l2, ".4f"), (2, kl, ".4f")):
        for method in METHODS:
            if method not in data:
                continue
            st_ = METHOD_STYLE[method]
            fig.add_trace(
                go.Scatter(
                    x=labels,
                    y=np.asarray(data[method], dtype=float),
                    mode="lines+markers",
                    name=style.t(f"opt.conv_method.{method}"),
                    legendgroup=method,
                    showlegend=col == 1,
                    line=dict(color=st_["color"], dash=st_["dash"], width=4 if style.present else 2.5),
                    marker=dict(symbol=st_["symbol"], size=12 if style.present else 9, color=st_["color"]),
                    hovertemplate=f"{style.t(f'opt.conv_method.{method}')}<br>n_kv_heads = %{{x}}<br>"
                    f"%{{y:{fmt}}}<extra></extra>",
                ),
                row=1,
                col=col,
            )
    if current is not None and current in n_kv:
        for col in (1, 2):
            fig.add_vrect(
                x0=list(n_kv).index(current) - 0.4,
                x1=list(n_kv).index(current) + 0.4,
                row=1,
                col=col,
                fillcolor="rgba(128,128,128,0.15)",
                line_width=0,
                layer="below",
            )
    fig.update_xaxes(type="category", title=dict(text=style.t("ctl.n_kv_heads")))
    fig.update_yaxes(rangemode="tozero")
    fig.update_yaxes(title=dict(text=style.t("kvfig.l2_axis")), row=1, col=1)
    fig.update_yaxes(title=dict(text=style.t("kvfig.kl_axis")), row=1, col=2)
    fig.update_annotations(font=dict(size=style.font + 1))
    return _layout(
        fig,
        style,
        style.t("kvfig.conv_title", heads=count(n_heads, "head", style.lang), h=n_heads)
        + "<br><sup>"
        + style.t("kvfig.conv_sub")
        + (f" · {note}" if note else "")
        + "</sup>",
        440 if not style.present else 540,
        legend=dict(orientation="h", y=-0.25, x=0.5, xanchor="center", font=dict(size=style.font)),
        margin=dict(l=10, r=10, t=90 if not style.present else 110, b=10),
    )


# ---------------------------------------------------------------- views: (name, figure, data) for the page and export
KV_VIEWS = ("diagram", "maps", "costs", "mapping", "convert")  # the page's views, in its order
DTYPES = ("fp32", "fp16", "int8")  # KV-cache element types of the cost view
MAX_GROUPS_SHOWN = 8  # KV groups drawn at once in the maps view
MAX_EXPORT_CELLS = 250_000  # beyond this the exported map numbers are the pooled ones drawn


def _tag(n_heads: int, n_kv_heads: int) -> str:
    return f"h{n_heads}_kv{n_kv_heads}"


def links_frame(n_heads: int, n_kv_heads: int, mapping: str = "contiguous") -> pd.DataFrame:
    """One row per query head: ``query_head``, the ``kv_head`` it reads under ``mapping``."""
    return pd.DataFrame({"query_head": np.arange(n_heads), "kv_head": kv_map(n_heads, n_kv_heads, mapping)})


def diagram_view(n_heads: int, n_kv_heads: int, style: Style = Style()) -> View:
    """Diagram view, left: who reads which K/V (contiguous mapping, as ``repeat_kv``)."""
    fig = kv_diagram(n_heads, n_kv_heads, style=style)
    return View(f"kv_diagram_{_tag(n_heads, n_kv_heads)}", fig, links_frame(n_heads, n_kv_heads))


def repeat_kv_view(n_heads: int, n_kv_heads: int, seq_len: int, head_dim: int, style: Style = Style()) -> View:
    """Diagram view, right: ``repeat_kv`` as tensor blocks; data: every block and the KV head it holds."""
    fig = repeat_kv_figure(n_heads, n_kv_heads, seq_len, head_dim, style=style)
    owner = kv_map(n_heads, n_kv_heads)
    data = pd.DataFrame(
        {
            "tensor": ["K, V cache"] * n_kv_heads + ["after repeat_kv"] * n_heads,
            "head": list(range(n_kv_heads)) + list(range(n_heads)),
            "kv_head": list(range(n_kv_heads)) + owner,
        }
    )
    name = f"repeat_kv_{_tag(n_heads, n_kv_heads)}_t{seq_len}_d{head_dim}"
    return View(name, fig, data)


def maps_groups(n_kv_heads: int, kv_first: int = 0) -> list[int]:
    """The KV groups the maps view draws: all of them, or :data:`MAX_GROUPS_SHOWN` from ``kv_first`` on."""
    if n_kv_heads <= MAX_GROUPS_SHOWN:
        if kv_first != 0:
            raise ConfigError(
                f"kv_first ({kv_first}) must be 0: with at most {MAX_GROUPS_SHOWN} KV groups (here {n_kv_heads}) all are shown",
                "kv_first",
                "kv_first_zero",
                value=kv_first,
                n=n_kv_heads,
                most=MAX_GROUPS_SHOWN,
            )
        return list(range(n_kv_heads))
    kv_first = check_int("kv_first", kv_first, 0, n_kv_heads - MAX_GROUPS_SHOWN)
    return list(range(kv_first, kv_first + MAX_GROUPS_SHOWN))


def maps_frame(
    weights: np.ndarray,
    tokens_q: Sequence[str],
    tokens_k: Sequence[str],
    heads: Sequence[int],
    n_rep: int,
    factor: int = 1,
) -> pd.DataFrame:
    """Long table (head, KV head, query, key, weight) of the maps of ``heads``; weights ``[len(heads), R, C]``.

    ``factor`` > 1: the maps are block maxima of ``factor × factor`` blocks of
    the ``len(tokens_q) × len(tokens_k)`` maps, labelled with position ranges.
    """
    w, f = np.asarray(weights), int(factor)

    def labels(tokens: Sequence[str], n_cells: int) -> list[str]:
        if f == 1:
            return [f"{t} ({i})" for i, t in enumerate(tokens)]
        return [f"{i * f}–{min((i + 1) * f, len(tokens)) - 1}" for i in range(n_cells)]  # pooled position ranges

    lq, lk = labels(tokens_q, w.shape[1]), labels(tokens_k, w.shape[2])
    hh, qq, kk = np.meshgrid(np.array(list(heads)), np.arange(w.shape[1]), np.arange(w.shape[2]), indexing="ij")
    return pd.DataFrame(
        {
            "head": hh.ravel(),
            "kv_head": hh.ravel() // n_rep,
            "query": np.array(lq, dtype=object)[qq.ravel()],
            "key": np.array(lk, dtype=object)[kk.ravel()],
            "weight": w.ravel(),
        }
    )


@dataclass(frozen=True)
class GroupMaps:
    """What the maps view draws, as CPU float32 numpy: the query heads of some KV groups with their K and V.

    ``maps``: the weights of every query head of ``groups`` (in order), pooled
    as they were computed (:func:`attn_core.longmaps.pooled_attention`, block
    max, ``maps.factor`` = f; exact when f = 1). ``kt``, ``vt`` ``[G, dk, C]``:
    Kᵀ and Vᵀ of each KV head of ``groups`` (the first ``dk = min(d_k, 64)``
    dimensions), each column the mean of the same ``f`` keys as the maps' columns.
    """

    maps: PooledMaps
    groups: tuple[int, ...]
    kt: np.ndarray
    vt: np.ndarray
    head_dim: int
    d_model: int
    seed: int

    @property
    def factor(self) -> int:
        return self.maps.factor

    def weights_of(self, head: int) -> np.ndarray:
        """The (pooled) map ``[R, C]`` of query head ``head``."""
        return self.maps.weights[self.maps.heads.index(head)]


def maps_side(n_heads: int, n_kv_heads: int, head_dim: int, seq_len: int, n_groups: int, style: Style = Style()) -> int:
    """Cells a side of each map in the maps view: 64 (8 heads or fewer) or 40, less when the chart would be too heavy.

    The largest side whose figure (``n_groups`` bands of ``n_rep`` maps and their
    Kᵀ, Vᵀ, laid out as :func:`grouped_maps_figure` does) holds at most
    :data:`MAX_MAP_CELLS` heatmap cells, so its JSON stays under 2 MB.
    """
    check_kv_heads(n_heads, n_kv_heads)
    n_rep = n_heads // n_kv_heads
    t = check_int("seq_len", seq_len, 1)
    cap = 64 if n_groups * n_rep <= 8 else 40
    for side in range(cap, 0, -1):
        f = pool_factor(t, t, side)
        r = -(-t // f)
        if _maps_layout(n_rep, n_groups, r, r, head_dim, style).cells <= MAX_MAP_CELLS:
            return side
    return 1


def group_maps(
    n_heads: int,
    n_kv_heads: int,
    head_dim: int,
    d_model: int,
    tokens: Sequence[str],
    seed: int = 0,
    device: str = "cpu",
    groups: Sequence[int] | None = None,
    max_side: int = 64,
) -> GroupMaps:
    """The maps view's numbers for the page's layer (self-attention, no mask, scaled, temperature 1).

    The weights of the query heads of ``groups`` (default: all) come from
    :func:`attn_core.longmaps.pooled_attention` by chunks of query rows, pooled
    to at most ``max_side`` cells a side: the ``[H, T, T]`` maps are never built,
    and for ``T <= max_side`` they are the exact weights. K and V come from the
    same seeded layer. Raises :class:`ConfigError` for a layer too large to simulate.
    """
    check_sim_size(d_model, n_heads, head_dim)
    check_kv_heads(n_heads, n_kv_heads)
    n_rep = n_heads // n_kv_heads
    groups = tuple(range(n_kv_heads)) if groups is None else tuple(int(g) for g in groups)
    for g in groups:
        check_int("kv_group", g, 0, n_kv_heads - 1)
    heads = [h for g in groups for h in range(g * n_rep, (g + 1) * n_rep)]
    layer = SeededLayer(n_heads, n_kv_heads, head_dim, tuple(tokens), d_model=d_model, seed=seed)
    pm = pooled_attention(layer, max_side=max_side, heads=heads, device=device)
    firsts = [g * n_rep for g in groups]  # one query head per shown group: its K and V come with it
    _, k, v = layer.qkv(firsts, torch.device(device), values=True)
    dk = min(head_dim, 64)

    def pooled_t(x: dict[int, torch.Tensor]) -> np.ndarray:  # {g: (T, D)} -> Kᵀ of the groups (G, dk, C), pooled
        xt = torch.stack([x[g][:, :dk].T for g in groups])  # (G, dk, T)
        return _pool_mean_last(xt.to("cpu", torch.float32).numpy(), pm.factor)

    return GroupMaps(pm, groups, pooled_t(k), pooled_t(v), head_dim, d_model, seed)


def pooled_maps_figure(gm: GroupMaps, style: Style = Style(), max_dims: int = 64, per_line: int = 8) -> go.Figure:
    """:func:`grouped_maps_figure` of :class:`GroupMaps`: the same chart from maps pooled while computed."""
    pm = gm.maps
    return _grouped_maps(
        {h: pm.weights[i] for i, h in enumerate(pm.heads)}, dict(zip(gm.groups, gm.kt, strict=True)),
        dict(zip(gm.groups, gm.vt, strict=True)), pm.n_heads, pm.n_kv_heads, list(gm.groups), pm.factor,
        list(pm.tokens_q), list(pm.tokens_k), gm.head_dim, style, max_dims, per_line,
    )  # fmt: skip


def group_spread(gm: GroupMaps) -> list[float]:
    """Per shown KV group: the largest ``|w_h − w_first|`` between the maps of its heads and its first head's.

    Measured on the maps as drawn: exact weights when ``gm.factor`` is 1, block maxima otherwise.
    """
    n_rep = gm.maps.n_heads // gm.maps.n_kv_heads
    out = []
    for g in gm.groups:
        w = np.stack([gm.weights_of(h) for h in range(g * n_rep, (g + 1) * n_rep)])
        diff = np.abs(w - w[0][None])
        out.append(float(np.nanmax(diff)) if np.isfinite(diff).any() else 0.0)
    return out


def group_maps_frame(gm: GroupMaps) -> pd.DataFrame:
    """The maps view's numbers as a long table: exact weights while the shown heads hold at most
    :data:`MAX_EXPORT_CELLS` cells (recomputed unpooled when the chart is pooled), else the pooled ones drawn."""
    pm = gm.maps
    n_rep = pm.n_heads // pm.n_kv_heads
    t_q, t_k = len(pm.tokens_q), len(pm.tokens_k)
    if pm.factor > 1 and len(pm.heads) * t_q * t_k <= MAX_EXPORT_CELLS:
        layer = SeededLayer(pm.n_heads, pm.n_kv_heads, gm.head_dim, pm.tokens_q, d_model=gm.d_model, seed=gm.seed)
        exact = pooled_attention(layer, max_side=max(t_q, t_k), heads=pm.heads, device=pm.device)
        return maps_frame(exact.weights, pm.tokens_q, pm.tokens_k, pm.heads, n_rep)
    return maps_frame(pm.weights, pm.tokens_q, pm.tokens_k, pm.heads, n_rep, pm.factor)


def maps_view(gm: GroupMaps, style: Style = Style()) -> View:
    """Maps view: the weights of the query heads of ``gm.groups``, banded by KV head with its K and V."""
    pm = gm.maps
    groups = list(gm.groups)
    fig = pooled_maps_figure(gm, style)
    name = f"kv_maps_{_tag(pm.n_heads, pm.n_kv_heads)}_d{gm.head_dim}_t{len(pm.tokens_q)}"
    if len(groups) < pm.n_kv_heads:
        name += f"_groups{groups[0]}-{groups[-1]}"
    return View(name, fig, lambda: group_maps_frame(gm))


def kv_costs_frame(
    d_model: int, n_heads: int, n_kv_heads: int, head_dim: int, seq_len: int, dtype: str = "fp16"
) -> pd.DataFrame:
    """:func:`attn_core.costs.attention_costs` for every ``n_kv_heads`` dividing ``n_heads``, one row each.

    Columns: ``n_kv_heads``, ``kind`` (MHA/GQA/MQA), ``current`` (the row of
    ``n_kv_heads``), ``dtype``, then every key of ``attention_costs`` (parameters,
    KV elements and bytes per token and for ``seq_len`` tokens, FLOPs of one decoding step).
    """
    if dtype not in DTYPES:
        options = ", ".join(DTYPES)
        raise ConfigError(
            f"dtype '{dtype}' is not offered here; use one of: {options}",
            "dtype",
            "not_offered",
            name="dtype",
            value=dtype,
            options=options,
        )
    check_kv_heads(n_heads, n_kv_heads)
    nbytes = dtype_bits(dtype) // 8
    rows = []
    for d in divisors(n_heads):
        c = attention_costs(d_model, n_heads, d, head_dim, seq_len, bytes_per_element=nbytes)
        rows.append(
            {"n_kv_heads": d, "kind": attention_kind(n_heads, d), "current": d == n_kv_heads, "dtype": dtype}
            | {k: v for k, v in c.items() if k != "n_kv_heads"}
        )
    return pd.DataFrame(rows)


def kv_bytes_view(
    d_model: int,
    n_heads: int,
    n_kv_heads: int,
    head_dim: int,
    seq_len: int,
    dtype: str = "fp16",
    style: Style = Style(),
) -> View:
    """Costs view: KV-cache bytes per token per layer for every ``n_kv_heads``; data: every cost of each choice."""
    data = kv_costs_frame(d_model, n_heads, n_kv_heads, head_dim, seq_len, dtype)
    fig = kv_bytes_figure(
        data["n_kv_heads"].tolist(), data["kv_bytes_per_token"].tolist(), n_heads, n_kv_heads, style=style
    )
    return View(f"kv_bytes_{_tag(n_heads, n_kv_heads)}_d{head_dim}_{dtype}", fig, data)


def mappings_differ(n_heads: int, n_kv_heads: int) -> bool:
    """Whether contiguous and interleaved mappings pair some query head with different KV heads."""
    return kv_map(n_heads, n_kv_heads, "contiguous") != kv_map(n_heads, n_kv_heads, "interleaved")


def mapping_diagram_views(n_heads: int, n_kv_heads: int, style: Style = Style()) -> list[View]:
    """Mapping view: the contiguous and the interleaved diagrams, each with its links."""
    n_rep = n_heads // n_kv_heads
    titles = {
        "contiguous": style.t("kv.map_contiguous", rep=n_rep),
        "interleaved": style.t("kv.map_interleaved", kv=n_kv_heads),
    }
    return [
        View(
            f"mapping_{m}_{_tag(n_heads, n_kv_heads)}",
            kv_diagram(n_heads, n_kv_heads, m, style=style, title=titles[m]),
            links_frame(n_heads, n_kv_heads, m),
        )
        for m in MAPPINGS
    ]


def rows_note(n_rows: int, t_q: int, step: int, style: Style = Style()) -> str:
    """``measured on 32 of 8192 query rows (0, 256, 512, …), each against all 8192 keys``, translated."""
    return style.t("kvfig.rows_note", n=f"{n_rows:,}", t=f"{t_q:,}", step=step, step2=2 * step)


def mismatch_view(mm: MappingMismatch, style: Style = Style()) -> View:
    """Mapping view: mean KL per query head when a checkpoint runs with the other mapping."""
    n = len(mm.built)
    note = rows_note(mm.kl_rows, mm.t_q, mm.row_step, style) if mm.subset else None
    fig = mismatch_figure(mm.kl, mm.built, mm.run, style=style, note=note)
    data = pd.DataFrame(
        {
            "query_head": range(n),
            "kv_head_built": mm.built,
            "kv_head_run": mm.run,
            "mean_kl_nats": mm.kl,
            "query_rows_measured": mm.kl_rows,
        }
    )
    return View(f"mapping_mismatch_{mm.built_with}_{_tag(n, len(set(mm.built)))}", fig, data)


def first_wrong_head(mm: MappingMismatch) -> int:
    """The first query head that reads another KV head under the wrong mapping (0 when none does)."""
    return next((h for h, (a, b) in enumerate(zip(mm.built, mm.run, strict=True)) if a != b), 0)


def pair_view(
    mm: MappingMismatch, head: int, tokens: Sequence[str], style: Style = Style(), pair: PairMaps | None = None
) -> View:
    """Mapping view: the map of query ``head`` as built and as run with the other mapping, side by side.

    ``pair``: the head's :class:`~attn_core.convert.PairMaps` (default: taken from
    ``mm``, which must have kept its maps; long sequences pass pooled ones).
    """
    n = len(mm.built)
    head = check_int("head", head, 0, n - 1)
    pair = pair_from_mismatch(mm, head) if pair is None else pair
    if pair.head != head:
        raise ConfigError(
            f"the pair maps are of head {pair.head}, not {head}", "head", "pair_head", got=pair.head, head=head
        )
    a, b = pair.kv_built, pair.kv_run
    titles = (
        style.t("kv.pair_built", h=head, g=a, m=style.t(f"opt.built_with.{mm.built_with}")),
        style.t("kv.pair_run", h=head, g=b, m=style.t(f"opt.built_with.{mm.run_with}")),
    )
    fig = pair_maps_figure(
        pair.weights_built,
        pair.weights_run,
        list(tokens),
        list(tokens),
        titles,
        (group_color(a), group_color(b)),
        style=style,
        max_cells=PAIR_SIDE,
        factor=pair.factor,
    )
    f = pair.factor
    if f == 1:
        labels_q = labels_k = np.array([f"{tok} ({i})" for i, tok in enumerate(tokens)], dtype=object)
    else:  # pooled position ranges
        r, c = pair.weights_built.shape
        labels_q = np.array([f"{i * f}–{min((i + 1) * f, pair.t_q) - 1}" for i in range(r)], dtype=object)
        labels_k = np.array([f"{j * f}–{min((j + 1) * f, pair.t_k) - 1}" for j in range(c)], dtype=object)
    data = pd.DataFrame(
        {
            "query": np.repeat(labels_q, len(labels_k)),
            "key": np.tile(labels_k, len(labels_q)),
            f"weight_{mm.built_with}_kv{a}": pair.weights_built.ravel(),
            f"weight_{mm.run_with}_kv{b}": pair.weights_run.ravel(),
        }
    )
    return View(f"mapping_head{head}_{mm.built_with}_{_tag(n, len(set(mm.built)))}", fig, data)


def conversion_view(
    study: ConversionStudy, n_heads: int, n_kv_heads: int, n_base: int = 1, noise: float = 0.0, style: Style = Style()
) -> View:
    """Conversion view: output error and map KL of MHA -> GQA for every ``n_kv_heads``, per method."""
    note = rows_note(study.n_rows, study.t_q, study.row_step, style) if study.subset else None
    fig = conversion_figure(study.n_kv, study.rel_l2, study.kl, n_heads, current=n_kv_heads, style=style, note=note)
    data = pd.DataFrame(
        {
            "n_kv_heads": list(study.n_kv),
            **{f"rel_l2_{m}": study.rel_l2[m] for m in study.rel_l2},
            **{f"mean_kl_{m}": study.kl[m] for m in study.kl},
            "query_rows_measured": study.n_rows,
        }
    )
    name = f"mha_to_gqa_{study.source}_h{n_heads}"
    if study.source == "correlated":
        name += f"_base{n_base}_noise{noise:g}"
    return View(name, fig, data)


def conversion_settings(n_heads: int, conv_source: str, n_base: int | None, noise: float) -> tuple[int, float]:
    """(n_base, noise) the conversion view uses: the page's defaults and its rules.

    A random source has no base heads and no noise (1, 0.0); a correlated one
    takes ``n_base`` (default ``min(2, n_heads)``; 1 with one head) and ``noise``
    rounded to 4 decimals, as the page's sliders give them.
    """
    if conv_source not in SOURCES:
        raise unknown_option("conv_source", conv_source, SOURCES)
    if conv_source == "random":
        return 1, 0.0
    n_base = min(2, n_heads) if n_base is None or n_heads == 1 else check_int("n_base", n_base, 1, n_heads)
    if isinstance(noise, bool) or not isinstance(noise, (int, float)) or not math.isfinite(noise) or noise < 0:
        raise ConfigError(
            f"noise must be a number ≥ 0, got {noise!r}", "noise", "not_negative", name="noise", value=repr(noise)
        )
    return n_base, round(float(noise), 4)


def mapping_pair(
    mm: MappingMismatch,
    head: int,
    n_heads: int,
    n_kv_heads: int,
    head_dim: int,
    d_model: int,
    tokens: Sequence[str],
    seed: int = 0,
    device: str = "cpu",
) -> PairMaps:
    """The pair maps of ``head``: from ``mm`` when it kept every map, else computed by chunks for that head alone."""
    if mm.full:
        return pair_from_mismatch(mm, head)
    return pair_on_tokens(n_heads, n_kv_heads, head_dim, d_model, tokens, seed, device, mm.built_with, head)


def kv_sharing_views(
    n_heads: int = 8,
    n_kv_heads: int = 2,
    head_dim: int = 16,
    d_model: int = 128,
    tokens: Sequence[str] | None = None,
    seq_len: int = 16,
    seed: int = 0,
    dtype: str = "fp16",
    built_with: str = "contiguous",
    head: int | None = None,
    conv_source: str = "correlated",
    n_base: int | None = None,
    noise: float = 0.3,
    kv_first: int = 0,
    views: Sequence[str] = KV_VIEWS,
    style: Style = Style(),
    device: str = "cpu",
) -> list[View]:
    """Every chart of the KV-sharing page for these settings, in the page's order (for the exporter and tests).

    ``tokens`` (or ``seq_len`` synthetic tokens ``t0 ..`` when None) are the
    sequence; ``views`` picks among :data:`KV_VIEWS`: ``diagram`` (diagram and
    repeat_kv blocks), ``maps`` (the groups from ``kv_first`` when there are more
    than 8), ``costs`` (KV bytes per token, cache of ``dtype``), ``mapping`` (the
    two diagrams; when they differ, the KL per head of a checkpoint ``built_with``
    one mapping and run with the other, and the maps of ``head``, by default the
    first head that reads another KV head) and ``convert`` (MHA -> GQA from a
    ``conv_source`` layer, ``n_base`` and ``noise`` for a correlated one). The
    defaults are the page's. Raises :class:`ConfigError` naming the field for a bad value.
    """
    tokens = list(tokens) if tokens is not None else synthetic_tokens(check_int("seq_len", seq_len, 1))
    if not tokens:
        raise ConfigError("the text has no tokens; type some words", "text", "no_tokens")
    AttentionConfig(
        n_heads=n_heads, n_kv_heads=n_kv_heads, head_dim=head_dim, seq_len=len(tokens), d_model=d_model, seed=seed
    ).validate()
    views = list(views)
    unknown = [v for v in views if v not in KV_VIEWS]
    if unknown or not views:
        shown, options = ", ".join(unknown) or "(none)", ", ".join(KV_VIEWS)
        raise ConfigError(
            f"view {shown} is not known; use: {options}", "view", "unknown_view", value=shown, options=options
        )
    if built_with not in MAPPINGS:
        raise unknown_option("built_with", built_with, MAPPINGS)
    if head is not None:
        head = check_int("head", head, 0, n_heads - 1)
    n_base, noise = conversion_settings(n_heads, conv_source, n_base, noise)
    out: list[View] = []
    for view in KV_VIEWS:
        if view not in views:
            continue
        if view == "diagram":
            out += [
                diagram_view(n_heads, n_kv_heads, style),
                repeat_kv_view(n_heads, n_kv_heads, len(tokens), head_dim, style),
            ]
        elif view == "maps":
            groups = maps_groups(n_kv_heads, kv_first)
            side = maps_side(n_heads, n_kv_heads, head_dim, len(tokens), len(groups), style)
            gm = group_maps(n_heads, n_kv_heads, head_dim, d_model, tokens, seed, device, groups, side)
            out.append(maps_view(gm, style))
        elif view == "costs":
            out.append(kv_bytes_view(d_model, n_heads, n_kv_heads, head_dim, len(tokens), dtype, style))
        elif view == "mapping":
            out += mapping_diagram_views(n_heads, n_kv_heads, style)
            if mappings_differ(n_heads, n_kv_heads):
                mm = mapping_on_tokens(n_heads, n_kv_heads, head_dim, d_model, tokens, seed, device, built_with)
                h = first_wrong_head(mm) if head is None else head
                pair = mapping_pair(mm, h, n_heads, n_kv_heads, head_dim, d_model, tokens, seed, device)
                out += [mismatch_view(mm, style), pair_view(mm, h, tokens, style, pair)]
        else:
            study = conversion_on_tokens(n_heads, head_dim, d_model, tokens, conv_source, n_base, noise, seed, device)
            out.append(conversion_view(study, n_heads, n_kv_heads, n_base, noise, style))
    return out
