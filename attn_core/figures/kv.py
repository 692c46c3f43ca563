"""KV-sharing figures: who reads which K/V, ``repeat_kv`` as blocks, maps by KV group, mappings, costs, conversion.

Every builder takes plain numbers, CPU numpy arrays or result dataclasses and
returns a ``plotly.graph_objects.Figure``; nothing here computes beyond arranging
(and, for a chart too large to send, block-pooling) arrays. The page's view model
(:mod:`attn_core.views.kv_sharing`) runs the computations and pairs each figure
with the numbers behind it. Colours identify KV groups (:func:`group_color`),
always next to a text label; weights use the fixed 0..1 scale, K and V values a
diverging scale centred at 0 with its range in the colour bar.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from attn_core.figures.base import (
    DIVERGING_SCALE,
    MAX_HOVER_CELLS,
    Style,
    apply_fonts,
    base_layout,
    group_color,
    group_text_color,
    plain_figure,
    pool_max,
    slide_title,
)
from attn_core.figures.heatmaps import block_labels
from attn_core.runtime.config import attention_kind, check_kv_heads

if TYPE_CHECKING:
    from attn_core.kv.convert import PairMaps

# A chart's JSON stays under 2 MB: plotly writes float32 arrays as base64, about 5.4 bytes a cell and up to 7
# where NaN gaps are many (their base64 holds '/', which plotly escapes); hover labels count on top.
MAX_FIGURE_BYTES = 1_900_000
FIGURE_OVERHEAD_BYTES = 100_000  # layout: titles, ticks, panel frames and labels, the template
BYTES_PER_CELL = 7
MAX_MAP_CELLS = (MAX_FIGURE_BYTES - FIGURE_OVERHEAD_BYTES) // BYTES_PER_CELL  # heatmap cells of one chart
MAX_DIMS = 64  # dimensions of Kᵀ and Vᵀ drawn at most
PER_LINE = 8  # maps per line in a band of the grouped maps
METHODS = ("mean", "first", "random")  # the conversion methods, in the legend's order
# One colour, dash and marker per conversion method (Okabe-Ito hues not used for the first KV groups).
METHOD_STYLE = {
    "mean": dict(color="#009E73", dash="solid", symbol="circle"),
    "first": dict(color="#D55E00", dash="dash", symbol="square"),
    "random": dict(color="#555555", dash="dot", symbol="x"),
}


def margin(style: Style, top: tuple[int, int] = (70, 95)) -> dict:
    """The KV figures' margins: ``top`` (normal, projector) px above for a title with a subtitle line."""
    return dict(l=10, r=10, t=top[style.present], b=10)


def title_top(style: Style, least: tuple[int, int] = (70, 95)) -> dict:
    """The layout's ``margin``: normally ``least[0]`` px on top for the title; on a slide a small one, which the
    title pinned over the plot pushes (:func:`pin_title`)."""
    return dict(margin=margin(style, least if not style.present else (least[0], 10)))


def pin_title(fig: go.Figure, style: Style, above: int = 0) -> go.Figure:
    """On a slide, ``fig``'s title just over its plot, ``above`` px higher for the text a figure puts there (panel
    names), pushing the top margin to hold it (:func:`title_top` leaves a small one): plotly keeps a push within the
    chart's height, where a fixed margin taller than a squeezed chart left it a plot of negative height ("Something
    went wrong with axis scaling"), and a title centred in a margin of its own estimate ran into the panel names."""
    if style.present:
        fig.update_layout(title=dict(yref="paper", y=1.0, yanchor="bottom", pad=dict(b=above + 10), automargin=True))
    return fig


def with_sub(title: str, sub: str, style: Style) -> str:
    """``title`` with ``sub`` on the line under it: a ``<sup>`` line normally, a line at the charts' text size on a
    slide (a ``<sup>`` line is 0.7 of the title's 26 px there: under the 20 px a projector needs)."""
    if style.present:
        return f"{title}<br><span style='font-size:{style.font}px'>{sub}</span>"
    return f"{title}<br><sup>{sub}</sup>"


def kv_label(n_heads: int, n_kv_heads: int) -> str:
    """A choice of ``n_kv_heads``, as the KV-heads control and the charts write it: ``"2 · GQA"``."""
    return f"{n_kv_heads} · {attention_kind(n_heads, n_kv_heads)}"


def kv_positions(n_heads: int, n_kv_heads: int) -> list[float]:
    """x of KV head ``g`` in the diagrams: the centre of its contiguous group of query heads."""
    check_kv_heads(n_heads, n_kv_heads)
    n_rep = n_heads // n_kv_heads
    return [g * n_rep + (n_rep - 1) / 2 for g in range(n_kv_heads)]


# ---------------------------------------------------------------- diagram
def _link_traces(owner: Sequence[int], n_kv_heads: int, xs_kv: list[float], width: float) -> list[go.Scatter]:
    """One line trace per KV head: a link from each query head that reads it (``meta`` names them)."""
    traces = []
    for g in range(n_kv_heads):
        members = [h for h, o in enumerate(owner) if o == g]
        xs: list[float | None] = []
        ys: list[float | None] = []
        for h in members:
            xs += [h, xs_kv[g], None]
            ys += [1, 0, None]
        traces.append(
            go.Scatter(
                x=xs,
                y=ys,
                mode="lines",
                hoverinfo="skip",
                showlegend=False,
                name=f"KV {g}",
                line=dict(color=group_color(g), width=width),
                meta={"kv_head": g, "query_heads": members},
            )
        )
    return traces


def _node_traces(owner: Sequence[int], n_kv_heads: int, xs_kv: list[float], style: Style) -> list[go.Scatter]:
    """The query heads (top row, coloured by the KV head they read) and the KV heads (bottom row)."""
    n_heads = len(owner)
    big = n_heads > 24
    node = (10 if n_heads > 48 else (14 if big else 22)) + (6 if style.present else 0)
    font = dict(size=max(9, style.font - (4 if big else 0)))
    edge = dict(width=1, color="#222222")
    readers = [", ".join(str(h) for h, o in enumerate(owner) if o == g) for g in range(n_kv_heads)]
    queries = go.Scatter(
        x=list(range(n_heads)),
        y=[1] * n_heads,
        mode="markers+text",
        textposition="top center",
        textfont=font,
        text=[f"Q{h}" if not big else str(h) for h in range(n_heads)],
        showlegend=False,
        name="query heads",
        marker=dict(size=node, color=[group_color(g) for g in owner], line=edge),
        customdata=[[h, owner[h]] for h in range(n_heads)],
        hovertemplate=style.t("kvfig.q_hover") + "<extra></extra>",
    )
    kv_nodes = go.Scatter(
        x=xs_kv,
        y=[0] * n_kv_heads,
        mode="markers+text",
        textposition="bottom center",
        textfont=font,
        text=[f"KV{g}" if n_kv_heads <= 16 else str(g) for g in range(n_kv_heads)],
        showlegend=False,
        name="KV heads",
        customdata=[[g, readers[g]] for g in range(n_kv_heads)],
        marker=dict(size=node + 4, symbol="square", color=[group_color(g) for g in range(n_kv_heads)], line=edge),
        hovertemplate=style.t("kvfig.kv_hover") + "<extra></extra>",
    )
    return [queries, kv_nodes]


def kv_diagram(owner: Sequence[int], n_kv_heads: int, style: Style = Style(), title: str | None = None) -> go.Figure:
    """Query heads in the top row, KV heads below, one link per query head to the KV head it reads.

    ``owner[h]``: the KV head query head ``h`` reads (:func:`attn_core.kv.convert.kv_map`
    under either mapping). KV heads sit at the same places whatever the mapping, so
    two diagrams differ only in their links. Links and nodes are coloured by KV head;
    every node is labelled with its index. Each link trace carries
    ``meta = {"kv_head": g, "query_heads": [...]}``.
    """
    n_heads = len(owner)
    xs_kv = kv_positions(n_heads, n_kv_heads)
    width = (3 if style.present else 2) if n_heads <= 24 else 1.5
    fig = go.Figure(_link_traces(owner, n_kv_heads, xs_kv, width) + _node_traces(owner, n_kv_heads, xs_kv, style))
    if title is None:
        qh, kvh = style.count(n_heads, "query_head"), style.count(n_kv_heads, "kv_head")
        kind = attention_kind(n_heads, n_kv_heads)
        title = style.t("kvfig.diagram_title", qh=qh, kvh=kvh, kind=kind, rep=n_heads // n_kv_heads)
    title = slide_title(title, HALF_SLIDE_TITLE) if style.present else title  # beside repeat_kv on a slide
    ticks = [style.t("kvfig.q_row", h=n_heads), style.t("kvfig.kv_row", kv=n_kv_heads)]
    fig.update_layout(
        **base_layout(
            title,
            style,
            300 if not style.present else 380,
            **title_top(style),
            xaxis=dict(visible=False, range=[-1, n_heads], fixedrange=True),
            yaxis=dict(
                tickvals=[1, 0], fixedrange=True, range=[-0.45, 1.45], zeroline=False, showgrid=False, ticktext=ticks
            ),
        )
    )
    return apply_fonts(pin_title(fig, style), style)


# ---------------------------------------------------------------- repeat_kv as tensor blocks
REPEAT_X = (0.0, 2.0, 5.0, 7.0)  # x of the cache blocks (left, right edge) and of the copies
HALF_SLIDE_TITLE = 34  # Latin characters of 26 px title a chart on half a 1024 px slide holds on a line


def _block(x0: float, x1: float, y0: float, y1: float, colour: str) -> dict:
    return dict(
        type="rect",
        x0=x0,
        x1=x1,
        y0=y0,
        y1=y1,
        fillcolor=colour,
        line=dict(color="#222222", width=1),
        opacity=0.9,
        layer="below",
    )


SLIDE_REPEAT_PX = 380  # px of blocks a slide at 1280x720 leaves repeat_kv under its title (a deck's bar above)


def _repeat_blocks(n_heads: int, n_kv_heads: int, shape: tuple[int, int], style: Style) -> tuple[list, list]:
    """(shapes, labels): a block per KV head and per copy, lines from each KV head to its copies.

    ``labels``: ``(x, y, text, hover)`` of every block; ``shape`` ``(T, D)`` of one head's slab. A copy's text
    names the KV head it copies, except on a slide (its line and colour do; "head 7" at 20 px fits half a slide).
    """
    n_rep, (t, d) = n_heads // n_kv_heads, shape
    lx0, lx1, rx0, rx1 = REPEAT_X
    pad = 0.12 if n_heads <= 32 else 0.05
    shapes, labels = [], []
    for g in range(n_kv_heads):
        c, col = g * n_rep + n_rep / 2, group_color(g)  # the centre of its copies
        shapes.append(_block(lx0, lx1, c - 0.5 + pad, c + 0.5 - pad, col))
        labels.append(((lx0 + lx1) / 2, c, f"KV {g}", style.t("kvfig.block_kv_hover", g=g, t=t, d=d)))
        for r in range(g * n_rep, (g + 1) * n_rep):
            line = dict(color=col, width=1.5)
            shapes.append(dict(type="line", x0=lx1, y0=c, x1=rx0, y1=r + 0.5, line=line, layer="below"))
            shapes.append(_block(rx0, rx1, r + pad, r + 1 - pad, col))
            text = f"{style.t('fig.head')} {r}" + ("" if style.present else f" ← KV {g}")
            labels.append(((rx0 + rx1) / 2, r + 0.5, text, style.t("kvfig.block_copy_hover", h=r, g=g, t=t, d=d)))
    return shapes, labels


def repeat_label_every(n_heads: int, style: Style) -> int:
    """Every how many copies a label is written: 1 normally; on a slide as many as keep 20 px labels apart on
    the rows :data:`SLIDE_REPEAT_PX` leaves (16 heads: every 2nd, 64: every 5th)."""
    if not style.present:
        return 1
    rows = n_heads + 3.1  # the copies, the shapes' two lines above them, the note under them
    return max(1, math.ceil((style.font + 4) / (SLIDE_REPEAT_PX / rows)))


def _repeat_annotations(labels: list, n_heads: int, n_kv_heads: int, dims: tuple[int, int, int], style: Style) -> list:
    """The block labels beside the blocks (on a slide every :func:`repeat_label_every`-th), the two tensor shapes
    above them and ``× n_rep`` between them; with ``n_rep = 1`` the note that nothing is copied, under them."""
    lx0, lx1, rx0, rx1 = REPEAT_X
    b, t, d = dims
    n_rep, h, hk = n_heads // n_kv_heads, n_heads, n_kv_heads
    size = style.font if style.present else max(9, style.font - (3 if h > 16 else 0))
    every = repeat_label_every(n_heads, style)
    kv_every = -(-every // n_rep)  # KV heads sit n_rep rows apart
    shown = [
        (x, y, text)
        for x, y, text, _ in labels
        if (x < 3 and int(y // n_rep) % kv_every == 0) or (x > 3 and int(y) % every == 0)
    ]
    out = [
        dict(
            x=lx0 - 0.1 if x < 3 else rx1 + 0.1,
            y=y,
            text=text,
            showarrow=False,
            xanchor="right" if x < 3 else "left",
            font=dict(size=size),
        )
        for x, y, text in shown
    ]
    under = dict(y=-0.15, yanchor="bottom", showarrow=False, font=dict(size=style.font))
    heads = [style.t("kvfig.block_left", b=b, hk=hk, t=t, d=d), style.t("kvfig.block_right", b=b, h=h, t=t, d=d)]
    if style.present:  # two short lines each (the title has the shapes' letters), or they run into each other
        sizes = [f"[{b}, {hk}, {t}, {d}]", f"[{b}, {h}, {t}, {d}]"]
        heads = [f"{x.split(' [', 1)[0]}<br>{size}" for x, size in zip(heads, sizes, strict=True)]
    middle = dict(x=(lx1 + rx0) / 2, showarrow=False, font=dict(size=style.font + 2))
    if n_rep > 1:
        middle.update(y=h / 2, text=f"<b>× {n_rep}</b>", bgcolor="rgba(255,255,255,0.8)")
    else:  # under the blocks: between them it covered the middle copies (the lines are straight)
        middle.update(y=h + 0.1, yanchor="top", text=style.t("kvfig.no_repeat").replace("<br>", " "))
    return [
        *out,
        dict(x=(lx0 + lx1) / 2, text=heads[0], **under),
        dict(x=(rx0 + rx1) / 2, text=heads[1], **under),
        middle,
    ]


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
    shapes, labels = _repeat_blocks(n_heads, n_kv_heads, (seq_len, head_dim), style)
    hover = dict(
        type="scatter",
        x=[x for x, _, _, _ in labels],
        y=[y for _, y, _, _ in labels],
        mode="markers",
        marker=dict(size=1, opacity=0),
        customdata=[hv for _, _, _, hv in labels],
        hovertemplate="%{customdata}<extra></extra>",
        showlegend=False,
        name="blocks",
    )
    annotations = _repeat_annotations(labels, n_heads, n_kv_heads, (batch, seq_len, head_dim), style)
    row_px = max(11, min(30, 520 // max(n_heads, 1)))
    height = int(min(1000, max(320, row_px * n_heads + (170 if style.present else 140))))
    top = -1.6 if not style.present else -2.1  # room for the shapes' two lines
    main = style.t("kvfig.block_title")
    main = slide_title(main, HALF_SLIDE_TITLE) if style.present else main
    sub = style.t("kvfig.block_sub")
    if (every := repeat_label_every(n_heads, style)) > 1:
        sub += " · " + style.t("kvfig.label_every", k=every)
    title = with_sub(main, sub, style)
    # plain dicts, as plain_figure takes them: rebuilt on every move of d_k, so no per-property validation
    layout = base_layout(
        title,
        style,
        height,
        margin=margin(style, (70, 125)),
        shapes=shapes,
        annotations=annotations,
        xaxis=dict(visible=False, range=[-3.2, 10.2], fixedrange=True),
        yaxis=dict(visible=False, range=[n_heads + (0.2 if n_heads > n_kv_heads else 1.2), top], fixedrange=True),
    )
    return plain_figure([hover], layout, style)


# ---------------------------------------------------------------- maps grouped by KV head
def pool_mean_last(x: np.ndarray, f: int) -> np.ndarray:
    """Mean over blocks of ``f`` along the last axis (a shorter last block is averaged over what it has)."""
    if f == 1:
        return x
    n = x.shape[-1]
    pad = -(-n // f) * f - n
    xp = np.pad(x.astype(np.float64), [(0, 0)] * (x.ndim - 1) + [(0, pad)], constant_values=np.nan)
    return np.nanmean(xp.reshape(*x.shape[:-1], -1, f), axis=-1).astype(np.float32)


def _ticks(n: int, tokens: Sequence[str], f: int, max_labels: int) -> tuple[list[int], list[str]]:
    """At most ``max_labels`` ticks over ``n`` cells of ``f`` tokens each, labelled as :func:`block_labels` says."""
    labels = block_labels(tuple(tokens), 0, len(tokens), f)
    idx = list(range(0, n, max(1, -(-n // max_labels))))
    return idx, [labels[i] for i in idx]


def token_labels(tokens: Sequence[str]) -> list[str]:
    """``"cat (1)"``: each token with its position, as the maps' ticks, hover labels and tables write it."""
    return block_labels(tuple(tokens), 0, len(tokens), 1)


@dataclass(frozen=True)
class MapsLayout:
    """Where the panels of :func:`maps_figure` go, in cells: one band per KV group."""

    per_line: int  # maps per line in a band
    n_lines: int  # lines of maps per band
    gap: int  # cells between panels
    panel_cols: int  # columns of the maps part (``per_line`` maps and their gaps)
    total_cols: int  # the maps, then Kᵀ and Vᵀ
    cell_px: int
    gap_y: int  # rows between bands and lines (room for the panel labels)
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


SLIDE_MAPS_PX = 280  # px of maps on a 1280x720 slide: what the title, the sentences and the key labels leave
MAPS_PX = 680  # px of maps across the page's main column at 1280 px (beside the controls), less the colour bars
KEY_PITCH = 8  # px beyond the font between key labels rotated by 60° (their glyphs' height / sin 60°)
ROTATED_PITCH = 1.45  # px of axis per px of font between labels rotated by 60°


def maps_layout(n_rep: int, n_groups: int, side: tuple[int, int], d_full: int, style: Style) -> MapsLayout:
    """The layout of ``n_groups`` bands of ``n_rep`` maps of ``side = (rows, cols)`` cells and their Kᵀ, Vᵀ."""
    r, c = side
    per_line = max(1, min(PER_LINE, n_rep))
    n_lines = -(-n_rep // per_line)
    ncols = per_line + 2  # the maps, then Kᵀ and Vᵀ
    gap = max(1, int(round(0.15 * max(r, c))))
    total_cols = ncols * c + (ncols - 1) * gap
    cell_px = max(4, min(30, MAPS_PX // max(total_cols, 1)))  # plot width on a wide page, less the colour bars

    def rows(cell: int) -> tuple[int, int, int, int, int]:
        gap_y = max(gap, -(-(style.font + 20) // cell))  # room for the panel labels
        maps_h = n_lines * r + (n_lines - 1) * gap_y
        dd = min(d_full, max(maps_h, 8 if style.present else 16), MAX_DIMS)
        band_h = max(maps_h, dd)
        return gap_y, maps_h, dd, band_h, gap_y + n_groups * band_h + (n_groups - 1) * gap_y

    gap_y, maps_h, dd, band_h, height = rows(cell_px)
    while style.present and height * cell_px > SLIDE_MAPS_PX and cell_px > 4:  # a slide's height decides
        cell_px = max(4, min(cell_px - 1, SLIDE_MAPS_PX // height))  # smaller cells need more rows of gap
        gap_y, maps_h, dd, band_h, height = rows(cell_px)
    return MapsLayout(
        per_line, n_lines, gap, per_line * (c + gap) - gap, total_cols, cell_px, gap_y, dd, band_h, height
    )


@dataclass(frozen=True)
class MapPanels:
    """What :func:`maps_figure` draws: the maps of the query heads of some KV groups and those groups' K and V.

    ``weights[head]`` ``[R, C]`` for every query head of ``groups``; ``kt[g]``, ``vt[g]``
    ``[>= dd, C]``: Kᵀ and Vᵀ of KV head ``g``; all pooled by ``factor`` (block max of
    the maps, block mean of K and V along the keys; 1 = exact). ``head_dim``: the
    dimensions K and V have (the title says when fewer are drawn).
    """

    weights: Mapping[int, np.ndarray]
    kt: Mapping[int, np.ndarray]
    vt: Mapping[int, np.ndarray]
    n_heads: int
    n_kv_heads: int
    groups: tuple[int, ...]
    factor: int
    tokens_q: tuple[str, ...]
    tokens_k: tuple[str, ...]
    head_dim: int

    @property
    def side(self) -> tuple[int, int]:
        return next(iter(self.weights.values())).shape


@dataclass
class _Canvas:
    """The arrays, frames and labels of :func:`maps_figure` while its panels are placed."""

    w: np.ndarray  # the maps
    kv: np.ndarray  # Kᵀ and Vᵀ, from column ``kv_x0``
    text_w: np.ndarray | None
    text_kv: np.ndarray | None
    shapes: list = field(default_factory=list)
    annotations: list = field(default_factory=list)
    ytick_vals: list = field(default_factory=list)
    ytick_text: list = field(default_factory=list)


def _canvas(p: MapPanels, lay: MapsLayout) -> _Canvas:
    big_w = np.full((lay.height, lay.panel_cols), np.nan, dtype=np.float32)
    big_kv = np.full((lay.height, lay.total_cols - lay.kv_x0), np.nan, dtype=np.float32)
    hover = p.factor == 1 and lay.cells <= MAX_HOVER_CELLS
    text = (np.full(big_w.shape, "", dtype=object), np.full(big_kv.shape, "", dtype=object)) if hover else (None, None)
    return _Canvas(big_w, big_kv, *text)


def _band(p: MapPanels, g: int, y: int, lay: MapsLayout) -> list[tuple[int, int, np.ndarray, int | str]]:
    """The panels ``(slot, first row, matrix, head or "K"/"V")`` of KV group ``g``'s band from row ``y``."""
    n_rep = p.n_heads // p.n_kv_heads
    r = p.side[0]
    panels: list[tuple[int, int, np.ndarray, int | str]] = [
        (lay.per_line, y, p.kt[g][: lay.dd], "K"),
        (lay.per_line + 1, y, p.vt[g][: lay.dd], "V"),
    ]
    heads = list(range(g * n_rep, (g + 1) * n_rep))
    for li in range(lay.n_lines):
        line = heads[li * lay.per_line : (li + 1) * lay.per_line]
        panels += [(j, y + li * (r + lay.gap_y), p.weights[head], head) for j, head in enumerate(line)]
    return panels


def _hover_cells(rows: list[str], cols: list[str], joiner: str, suffix: str) -> np.ndarray:
    cells = np.char.add(np.char.add(np.array(rows, dtype=str)[:, None], joiner), np.array(cols, dtype=str)[None, :])
    return np.char.add(cells, suffix)


def _place(
    cv: _Canvas, panel: tuple[int, int, np.ndarray, int | str], g: int, p: MapPanels, lay: MapsLayout, style: Style
) -> None:
    """Put one panel on the canvas: its cells, its hover labels, its frame and its label."""
    slot, y0, mat, what = panel
    x0, (nr, nc) = slot * (p.side[1] + lay.gap), mat.shape
    if what in ("K", "V"):
        xk = x0 - lay.kv_x0
        cv.kv[y0 : y0 + nr, xk : xk + nc] = mat
        label = style.t("kvfig.kv_panel", what=what, g=g)
        if cv.text_kv is not None:
            dims = [f"{what}ᵀ · KV {g}<br>{style.t('fig.dim')} {i}" for i in range(nr)]
            keys = token_labels(p.tokens_k)
            cv.text_kv[y0 : y0 + nr, xk : xk + nc] = _hover_cells(dims, keys, " · " + style.t("fig.key") + " ", "")
    else:
        cv.w[y0 : y0 + nr, x0 : x0 + nc] = mat
        label = f"{style.t('fig.head')} {what}"
        if cv.text_w is not None:
            suffix = f"<br>{style.t('fig.head')} {what} · KV {g}"
            cv.text_w[y0 : y0 + nr, x0 : x0 + nc] = _hover_cells(
                token_labels(p.tokens_q), token_labels(p.tokens_k), " → ", suffix
            )
    col = group_color(g)
    line = dict(color=col, width=4 if style.present else 3, dash="dot" if what in ("K", "V") else "solid")
    cv.shapes.append(
        dict(type="rect", x0=x0 - 0.5, x1=x0 + nc - 0.5, y0=y0 - 0.5, y1=y0 + nr - 0.5, line=line, layer="above")
    )
    cv.annotations.append(
        dict(
            x=x0 + (nc - 1) / 2,
            y=y0 - 0.6,
            xref="x",
            yref="y",
            yanchor="bottom",
            showarrow=False,
            text=f"<b>{label}</b>",
            font=dict(color=group_text_color(g), size=style.font),
        )
    )


def _json_chars(text: np.ndarray) -> int:
    """Characters of a text array in a figure's JSON: quotes, commas and plotly's escapes of < > / included."""
    items = text.ravel().tolist()
    joined = "".join(items)
    return len(json.dumps(items)) + 5 * sum(joined.count(ch) for ch in "<>/")


def _paint(p: MapPanels, lay: MapsLayout, style: Style) -> _Canvas:
    """Every band placed on a canvas; hover labels dropped when they would make the chart too heavy to send."""
    cv = _canvas(p, lay)
    r = p.side[0]
    yq, yl = _ticks(r, p.tokens_q, p.factor, max(2, r * lay.cell_px // (style.font + 4)))
    y = lay.gap_y
    for g in p.groups:
        for panel in _band(p, g, y, lay):
            _place(cv, panel, g, p, lay, style)
        for li in range(lay.n_lines):
            cv.ytick_vals += [y + li * (r + lay.gap_y) + i for i in yq]
            cv.ytick_text += yl
        y += lay.band_h + lay.gap_y
    if cv.text_w is not None and BYTES_PER_CELL * lay.cells + _json_chars(cv.text_w) + _json_chars(cv.text_kv) > (
        MAX_FIGURE_BYTES - FIGURE_OVERHEAD_BYTES
    ):
        cv.text_w = cv.text_kv = None  # hover labels would make the chart too heavy to send: values only
    return cv


def _maps_traces(cv: _Canvas, kv_x0: int, style: Style) -> list[go.Heatmap]:
    weights = go.Heatmap(
        z=cv.w,
        coloraxis="coloraxis",
        hoverongaps=False,
        text=cv.text_w,
        name="weights",
        hovertemplate=("%{text}<br>" if cv.text_w is not None else "")
        + style.t("fig.weight")
        + " %{z:.4f}<extra></extra>",
    )
    kv = go.Heatmap(
        z=cv.kv,
        x0=kv_x0,
        coloraxis="coloraxis2",
        hoverongaps=False,
        text=cv.text_kv,
        name="kv",
        hovertemplate=("%{text}<br>" if cv.text_kv is not None else "")
        + style.t("kvfig.value")
        + " %{z:.4g}<extra></extra>",
    )
    return [weights, kv]


def _maps_title(p: MapPanels, dd: int, style: Style) -> str:
    r, c = p.side
    title = style.t("kvfig.maps_title", qh=style.count(p.n_heads, "query_head"), kv=p.n_kv_heads, shown=len(p.groups))
    notes = [style.t("kvfig.maps_sub")]
    if p.factor > 1:
        notes.append(style.t("fig.pooled", r=r, c=c, tq=len(p.tokens_q), tk=len(p.tokens_k)))
        notes.append(style.t("kvfig.pooled_how", f=p.factor))
    if dd < p.head_dim:
        notes.append(style.t("kvfig.dims_cut", dd=dd, d=p.head_dim))
    return with_sub(title, " · ".join(notes), style)


def _map_axes(x: tuple[list, list[str]], y: tuple[list, list[str]], x_title: str, y_title: str) -> dict[str, dict]:
    """``xaxis`` and ``yaxis`` of a grid of maps drawn in one heatmap: labelled ticks, square cells, rows downwards."""
    common = dict(showgrid=False, zeroline=False, constrain="domain")
    return dict(
        xaxis=dict(tickvals=x[0], ticktext=x[1], tickangle=-60, title=dict(text=x_title), **common),
        yaxis=dict(
            tickvals=y[0], ticktext=y[1], autorange="reversed", scaleanchor="x", title=dict(text=y_title), **common
        ),
    )


def maps_figure(p: MapPanels, style: Style = Style()) -> go.Figure:
    """Every query head's weights, one band per KV group, with the group's K and V drawn once.

    The band of KV head ``g`` holds the maps of the query heads ``g·n_rep .. (g+1)·n_rep - 1``
    that read it, :data:`PER_LINE` to a line, then ``Kᵀ`` and ``Vᵀ`` of that KV head
    (``[D, Tk]``: key tokens left to right like the maps; as many dimensions as the band
    is tall, at least 16, at most :data:`MAX_DIMS`, the title says when some are left out).
    Trace 0 holds the weights (0..1 scale), trace 1 K and V (diverging, ``coloraxis2``,
    starting at column ``x0``).
    """
    check_kv_heads(p.n_heads, p.n_kv_heads)
    c = p.side[1]
    lay = maps_layout(p.n_heads // p.n_kv_heads, len(p.groups), p.side, p.head_dim, style)
    cv = _paint(p, lay, style)
    kv_vals = np.concatenate(
        [np.ravel(p.kt[g][: lay.dd]) for g in p.groups] + [np.ravel(p.vt[g][: lay.dd]) for g in p.groups]
    )
    finite = kv_vals[np.isfinite(kv_vals)]
    lim = float(np.max(np.abs(finite))) if finite.size else 1.0
    lim = lim if lim > 0 else 1.0
    xt, xl = _ticks(c, p.tokens_k, p.factor, max(2, c * lay.cell_px // (style.font + KEY_PITCH)))
    x_ticks = ([col * (c + lay.gap) + j for col in range(lay.per_line + 2) for j in xt], xl * (lay.per_line + 2))
    bar = dict(x=1.0, len=0.45)
    # a slide: each bar's two ends labelled (three 20 px labels ran into each other on a short bar), 0 is white
    ends = float(f"{lim:.1g}") if float(f"{lim:.1g}") <= lim else lim
    ticks = (dict(tickvals=[0.0, 1.0]), dict(tickvals=[-ends, ends])) if style.present else ({}, {})
    layout = base_layout(
        _maps_title(p, lay.dd, style),
        style,
        int(min(3000, max(360, lay.height * lay.cell_px + 200))),
        **title_top(style),
        shapes=cv.shapes,
        annotations=cv.annotations,
        uirevision="kvmaps",
        coloraxis=dict(
            colorscale=style.weight_scale,
            cmin=0.0,
            cmax=1.0,
            colorbar=dict(title=dict(text=style.t("fig.weight")), y=0.78, **bar, **ticks[0]),
        ),
        coloraxis2=dict(
            colorscale=DIVERGING_SCALE,
            cmin=-lim,
            cmax=lim,
            cmid=0.0,
            colorbar=dict(title=dict(text=style.t("kvfig.kv_scale", lim=f"{lim:.3g}")), y=0.25, **bar, **ticks[1]),
        ),
        **_map_axes(
            x_ticks,
            (cv.ytick_vals, cv.ytick_text),
            style.t("fig.key"),
            "" if style.present else style.t("kvfig.maps_y"),
        ),  # a slide: too short for it
    )
    fig = go.Figure(_maps_traces(cv, lay.kv_x0, style))
    fig.update_layout(**layout)
    return apply_fonts(pin_title(fig, style), style)


def grouped_maps_figure(
    weights: np.ndarray,
    k: np.ndarray,
    v: np.ndarray,
    tokens_q: Sequence[str],
    tokens_k: Sequence[str],
    groups: Sequence[int] | None = None,
    style: Style = Style(),
    max_cells: int = 48,
) -> go.Figure:
    """:func:`maps_figure` of exact maps: weights ``[H, Tq, Tk]``; k, v ``[H_kv, Tk, D]``.

    Maps longer than ``max_cells`` are block-max pooled (K and V block-mean pooled
    along the keys), as the title says. The maps view draws the same from maps
    pooled while they were computed (:class:`attn_core.views.kv_sharing.GroupMaps`).
    """
    h_all, n_kv = weights.shape[0], k.shape[0]
    check_kv_heads(h_all, n_kv)
    w, f = pool_max(weights.astype(np.float32), max_cells)  # (H, r, c)
    dk = min(k.shape[-1], MAX_DIMS)
    kt = pool_mean_last(np.swapaxes(k[:, :, :dk], 1, 2), f)  # (H_kv, dk, c)
    vt = pool_mean_last(np.swapaxes(v[:, :, :dk], 1, 2), f)
    groups = tuple(range(n_kv)) if groups is None else tuple(groups)
    panels = MapPanels(
        dict(enumerate(w)),
        dict(enumerate(kt)),
        dict(enumerate(vt)),
        h_all,
        n_kv,
        groups,
        f,
        tuple(tokens_q),
        tuple(tokens_k),
        k.shape[-1],
    )
    return maps_figure(panels, style)


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
    pairs = list(zip(built, run, strict=True))
    bars = go.Bar(
        x=[f"{style.t('fig.head')} {h}" for h in range(n)],
        y=np.asarray(kl, dtype=float),
        name="KL",
        marker=dict(color=[group_color(g) for g in built], line=dict(color="#222222", width=1)),
        text=[f"KV {a}→{b}" if a != b else style.t("kvfig.same_kv") for a, b in pairs],
        textposition="outside",
        customdata=[[a, b] for a, b in pairs],
        hovertemplate="%{x}<br>" + style.t("kvfig.mismatch_hover") + "<extra></extra>",
    )
    top = float(np.max(kl)) if n else 1.0
    sub = style.t("kvfig.mismatch_sub") + (f" · {note}" if note else "")
    main = style.t("kvfig.mismatch_title", n=sum(a != b for a, b in pairs), h=n)
    title = with_sub(slide_title(main) if style.present else main, sub, style)
    fig = go.Figure(bars)
    fig.update_layout(
        **base_layout(
            title,
            style,
            360 if not style.present else 440,
            **title_top(style),
            showlegend=False,
            xaxis=dict(title=dict(text=style.t("kvfig.query_head")), type="category", tickangle=-45 if n > 16 else 0),
            yaxis=dict(title=dict(text=style.t("kvfig.kl_axis")), range=[0, max(top, 1e-3) * 1.25], rangemode="tozero"),
        )
    )
    return apply_fonts(pin_title(fig, style), style)


def _pair_frames(
    titles: tuple[str, str], colours: tuple[str, str], inks: tuple[str, str], c: int, r: int, gap: int, style: Style
) -> tuple:
    """(shapes, annotations): a frame in the colour of the KV head each map reads, and its title above it (in the
    hue's text colour ``inks``, :func:`~attn_core.figures.base.group_text_color`)."""
    shapes, annotations = [], []
    for i, (title, col, ink) in enumerate(zip(titles, colours, inks, strict=True)):
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
                font=dict(color=ink, size=style.font),
            )
        )
    return shapes, annotations


def pair_maps_figure(
    pair: PairMaps, tokens: Sequence[str], titles: tuple[str, str], style: Style = Style(), max_cells: int = 64
) -> go.Figure:
    """One head's map as built and as run, side by side on one 0..1 scale, framed in the colours of their KV heads.

    Maps longer than ``max_cells`` are block-max pooled here; ``pair.factor`` > 1 says
    they are already block maxima of ``factor × factor`` blocks (:func:`attn_core.kv.convert.pair_maps_rows`).
    """
    stacked = np.stack([pair.weights_built, pair.weights_run]).astype(np.float32)
    both, f = (stacked, int(pair.factor)) if pair.factor > 1 else pool_max(stacked, max_cells)
    _, r, c = both.shape
    gap = max(1, int(round(0.15 * c)))
    big = np.full((r, 2 * c + gap), np.nan, dtype=np.float32)
    big[:, :c], big[:, c + gap :] = both[0], both[1]
    labels = token_labels(tokens)
    text = None
    if f == 1:
        qk = _hover_cells(labels, labels, " → ", "")
        text = np.full(big.shape, "", dtype=object)
        text[:, :c], text[:, c + gap :] = qk, qk
    heat = go.Heatmap(
        z=big,
        coloraxis="coloraxis",
        hoverongaps=False,
        text=text,
        name="weights",
        hovertemplate=("%{text}<br>" if text is not None else "") + style.t("fig.weight") + " %{z:.4f}<extra></extra>",
    )
    colours = (group_color(pair.kv_built), group_color(pair.kv_run))
    inks = (group_text_color(pair.kv_built), group_text_color(pair.kv_run))
    shapes, annotations = _pair_frames(titles, colours, inks, c, r, gap, style)
    every = pair_label_every(r, style)
    xt, xl = _ticks(c, tokens, f, 16 if every == 1 else -(-c // every))
    title = style.t("kvfig.pair_title")
    title = slide_title(title) if style.present else title
    notes = [style.t("fig.pooled", r=r, c=c, tq=len(tokens), tk=len(tokens)), style.t("kvfig.pooled_pair", f=f)]
    notes = (notes if f > 1 else []) + ([style.t("kvfig.tokens_every", k=every)] if every > 1 else [])
    if notes:
        title = with_sub(title, " · ".join(notes), style)
    cell_px = max(6, min(32, 560 // max(c, 1)))
    fig = go.Figure(heat)
    fig.update_layout(
        **base_layout(
            title,
            style,
            int(min(1200, max(340, r * cell_px + 200))),
            **title_top(style, (70, 80)),
            coloraxis=dict(
                colorscale=style.weight_scale, cmin=0.0, cmax=1.0, colorbar=dict(title=dict(text=style.t("fig.weight")))
            ),
            shapes=shapes,
            annotations=annotations,
            uirevision="pair",
            **_map_axes(
                (xt + [c + gap + j for j in xt], xl * 2),
                _ticks(r, tokens, f, 32 if every == 1 else -(-r // every)),
                style.t("fig.key"),
                style.t("fig.query"),
            ),
        )
    )
    return apply_fonts(pin_title(fig, style, 34), style)  # the maps' names over them


SLIDE_PAIR_PX = 160  # px of map height a 1280x720 slide leaves one head's two maps (title, names, labels, sentence)


def pair_label_every(rows: int, style: Style) -> int:
    """Every how many tokens :func:`pair_maps_figure` labels: 1 on a page; on a slide as many as keep 20 px labels
    (rotated by 60° under the maps) apart on the rows :data:`SLIDE_PAIR_PX` holds."""
    if not style.present:
        return 1
    return max(1, math.ceil(style.font * ROTATED_PITCH / (SLIDE_PAIR_PX / max(rows, 1))))


# ---------------------------------------------------------------- costs and conversion
def kv_bytes_figure(
    n_kv: Sequence[int],
    kv_bytes: Sequence[int],
    n_heads: int,
    current: int,
    unit: tuple[int, str],
    style: Style = Style(),
) -> go.Figure:
    """KV cache per token per layer for every choice of ``n_kv_heads``, in one binary ``unit`` ``(size, name)``.

    The bar of the current choice is drawn in full colour, the others faded; hover
    gives the exact byte count.
    """
    size, name = unit
    bars = go.Bar(
        x=[kv_label(n_heads, d) for d in n_kv],
        y=[bt / size for bt in kv_bytes],
        name="kv",
        marker=dict(
            color=["#0072B2" if d == current else "rgba(0,114,178,0.35)" for d in n_kv],
            line=dict(color="#222222", width=1),
        ),
        text=[f"{bt / size:.4g} {name}" for bt in kv_bytes],
        textposition="outside",
        customdata=list(kv_bytes),
        hovertemplate="n_kv_heads = %{x}<br>%{customdata:,} B<extra></extra>",
    )
    top = max(kv_bytes) / size if len(kv_bytes) else 1
    fig = go.Figure(bars)
    fig.update_layout(
        **base_layout(
            style.t("kvfig.bytes_title"),
            style,
            360 if not style.present else 440,
            **title_top(style),
            xaxis=dict(title=dict(text=style.t("ctl.n_kv_heads")), type="category"),
            yaxis=dict(title=dict(text=style.t("kvfig.bytes_axis", unit=name)), range=[0, top * 1.2]),
            showlegend=False,
        )
    )
    return apply_fonts(pin_title(fig, style), style)


def _method_line(method: str, labels: list[str], y: np.ndarray, first: bool, style: Style) -> go.Scatter:
    """One conversion method's line in one panel (colour, dash and marker of :data:`METHOD_STYLE`)."""
    how, name = METHOD_STYLE[method], style.t(f"opt.conv_method.{method}")
    return go.Scatter(
        x=labels,
        y=np.asarray(y, dtype=float),
        mode="lines+markers",
        name=name,
        legendgroup=method,
        showlegend=first,
        line=dict(color=how["color"], dash=how["dash"], width=4 if style.present else 2.5),
        marker=dict(symbol=how["symbol"], size=12 if style.present else 9, color=how["color"]),
        hovertemplate=f"{name}<br>n_kv_heads = %{{x}}<br>%{{y:.4f}}<extra></extra>",
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
    labels = [kv_label(n_heads, d) for d in n_kv]
    fig = make_subplots(
        rows=1, cols=2, horizontal_spacing=0.1, subplot_titles=(style.t("kvfig.conv_l2"), style.t("kvfig.conv_kl"))
    )
    for col, data in ((1, rel_l2), (2, kl)):
        for method in (m for m in METHODS if m in data):
            fig.add_trace(_method_line(method, labels, data[method], col == 1, style), row=1, col=col)
    if current is not None and current in n_kv:
        i = list(n_kv).index(current)
        for col in (1, 2):
            fig.add_vrect(
                x0=i - 0.4, x1=i + 0.4, row=1, col=col, fillcolor="rgba(128,128,128,0.15)", line_width=0, layer="below"
            )
    fig.update_xaxes(type="category", title=dict(text=style.t("ctl.n_kv_heads")))
    fig.update_yaxes(rangemode="tozero")
    fig.update_yaxes(title=dict(text=style.t("kvfig.l2_axis")), row=1, col=1)
    fig.update_yaxes(title=dict(text=style.t("kvfig.kl_axis")), row=1, col=2)
    fig.update_annotations(font=dict(size=style.font + 1))
    title = style.t("kvfig.conv_title", heads=style.count(n_heads, "head"), h=n_heads)
    sub = style.t("kvfig.conv_sub") + (f" · {note}" if note else "")
    title = with_sub(slide_title(title) if style.present else title, sub, style)
    legend = dict(orientation="h", y=-0.25, x=0.5, xanchor="center", font=dict(size=style.font))
    fig.update_layout(
        **base_layout(
            title,
            style,
            440 if not style.present else 540,
            legend=legend,
            **title_top(style, (90, 110)),
        )
    )
    return apply_fonts(pin_title(fig, style, 32), style)  # the panels' titles over them
