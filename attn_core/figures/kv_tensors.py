"""The KV cache as tensors: the buffers ``[L, 2, B, H_kv, S, d]`` of MHA, GQA and MQA side by side, filling one
token at a time, each query head's lookup drawn, and the bytes held so far as bars.

What is drawn (the figure says so): one layer's K block and V block per layout, the other ``L - 1`` layers as
slabs stacked behind it (every layer fills alike); one row per KV head, positions ``0 .. S`` left to right
(a cell holds ``d`` elements); the query heads above, each joined to the K row of the KV head it reads at the
newest position. Every number (shapes, tokens, bytes) is exact. The animation runs in the browser (plotly
frames with their own play and pause buttons and slider): at most
:data:`~attn_core.kv.memory.MAX_FILL_FRAMES` frames, evenly thinned for longer sequences.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import plotly.graph_objects as go

from attn_core.figures.base import Style, base_layout, group_color, plain_figure
from attn_core.figures.memory import LAYOUT_COLORS, layout_name
from attn_core.kv.memory import kv_formula
from attn_core.runtime.units import format_bytes

if TYPE_CHECKING:
    from attn_core.kv.memory import CacheFill

PANEL_STEP = 1.3  # x distance between panels (each is 1 wide)
Q_Y = 1.12  # the query heads' row
K_BLOCK = (0.56, 0.96)  # y extent of the K rows
V_BLOCK = (0.06, 0.46)  # y extent of the V rows
SLABS = 2  # outlines stacked behind the drawn layer for the other layers
SLAB_SHIFT = (0.03, 0.025)
EMPTY_FILL = "#eeeeee"
EMPTY_LINE = "#9a9a9a"
READ_LINE = "rgba(60,60,60,0.55)"
MAX_ROW_LINES = 16  # row separators are drawn up to this many KV heads (beyond, rows are under a pixel)
FRAME_MS = 450
MAIN_DOMAIN = (0.36, 1.0)  # the buffers' part of the plot height; the legend lines, then the bytes bars below
LEGEND_Y = 0.335
BARS_DOMAIN = (0.0, 0.19)
SLIDE_BARS_DOMAIN = (0.0, 0.25)  # on a slide no legend lines sit between the buffers and the bars
# a slide: the px between the title and the plot, where the panels' three 20 px heading lines hang
SLIDE_HEADINGS_PX = int(1.3 * 3 * 20) + 4 + 8


def _r(x: float) -> float:
    """``x`` to 4 decimals (short JSON): k / 10⁴ prints as its 4 decimals. ``round(x, 4)`` formats the number
    as a decimal string first (~4 µs; the 64-frame figure rounds 4,700 numbers)."""
    return math.floor(x * 10_000 + 0.5) / 10_000


def _rect(x0: float, x1: float, y0: float, y1: float) -> tuple[list, list]:
    a, b = _r(x0), _r(x1)
    return [a, b, b, a, a, None], [y0, y0, y1, y1, y0, None]


def _fill_xy(x0: float, done: float, start: float) -> tuple[list, list, list, list]:
    """(x, y) of the filled part of the K and V blocks (``0 .. done``) and of the newest tokens (``start .. done``),
    as fractions of the panel width."""
    a, b, c = _r(x0), _r(x0 + done), _r(x0 + start)
    (k0, k1), (v0, v1) = K_BLOCK, V_BLOCK
    ys = [k0, k0, k1, k1, k0, None, v0, v0, v1, v1, v0, None]
    return [a, b, b, a, a, None] * 2, ys, [c, b, b, c, c, None] * 2, list(ys)


def _row_y(g: int, n_kv: int) -> float:
    """Centre of KV head ``g``'s K row."""
    y0, y1 = K_BLOCK
    return _r(y1 - (g + 0.5) * (y1 - y0) / n_kv)


def _head_x(x0: float, h: int, n_heads: int) -> float:
    return _r(x0 + (h + 0.5) / n_heads)


def _lookups(fill: CacheFill, i: int) -> tuple[list, list]:
    """Panel ``i``'s lookup lines apart from their end: each query head's x and the y of the K row it reads,
    each with the gap (None) after its line; frame by frame only the end x (the newest position) changes."""
    x0, n_kv, xs, ys = i * PANEL_STEP, fill.layouts[i].n_kv_heads, [], []
    for h, g in enumerate(fill.reads(i)):
        xs += [_head_x(x0, h, fill.n_heads), None]
        ys += [Q_Y - 0.03, _row_y(g, n_kv), None]
    return xs, ys


def _reads_x(heads_x: list, end: float) -> list:
    """The x of the lookup lines from the heads at ``heads_x`` (:func:`_lookups`) to position ``end``."""
    out = [end] * (len(heads_x) // 2 * 3)
    out[0::3], out[2::3] = heads_x[0::2], heads_x[1::2]
    return out


def _static_panel(fill: CacheFill, i: int, style: Style) -> list[dict]:
    """The empty buffers with their layer slabs and rows, and the query heads coloured by the KV head they read."""
    lay, x0 = fill.layouts[i], i * PANEL_STEP
    sx, sy, ex, ey = [], [], [], []
    for k in range(min(SLABS, lay.n_layers - 1), 0, -1):  # one outline per further layer, at most SLABS
        dx, dy = SLAB_SHIFT[0] * k, SLAB_SHIFT[1] * k
        for y0, y1 in (K_BLOCK, V_BLOCK):
            x, y = _rect(x0 + dx, x0 + 1 + dx, y0 + dy, y1 + dy)
            sx, sy = sx + x, sy + y
    for y0, y1 in (K_BLOCK, V_BLOCK):
        x, y = _rect(x0, x0 + 1, y0, y1)
        ex, ey = ex + x, ey + y
    out = [
        dict(
            type="scatter",
            x=sx,
            y=sy,
            mode="lines",
            fill="toself",
            fillcolor="#f7f7f7",
            hoverinfo="skip",
            line=dict(color="#c4c4c4", width=1),
            showlegend=False,
        ),
        dict(
            type="scatter",
            x=ex,
            y=ey,
            mode="lines",
            fill="toself",
            fillcolor=EMPTY_FILL,
            hoverinfo="skip",
            line=dict(color=EMPTY_LINE, width=1),
            showlegend=False,
        ),
    ]
    groups = fill.reads(i)
    n_rep = fill.n_heads // lay.n_kv_heads
    hover = [style.t("kvtensor.head_hover", h=h, g=g, rep=n_rep) for h, g in enumerate(groups)]
    size = max(5, min(14, int(360 / fill.n_heads)))
    out.append(
        dict(
            type="scatter",
            x=[_head_x(x0, h, fill.n_heads) for h in range(fill.n_heads)],
            y=[Q_Y] * fill.n_heads,
            mode="markers",
            showlegend=False,
            hovertext=hover,
            hovertemplate="%{hovertext}<extra></extra>",
            marker=dict(
                size=size, symbol="square", color=[group_color(g) for g in groups], line=dict(color="white", width=1)
            ),
        )
    )
    return out


def _row_lines(fill: CacheFill, i: int) -> dict:
    """White separators between the KV heads' rows (drawn over the fill), up to :data:`MAX_ROW_LINES` rows."""
    x0, n_kv, xs, ys = i * PANEL_STEP, fill.layouts[i].n_kv_heads, [], []
    if n_kv <= MAX_ROW_LINES:
        for y0, y1 in (K_BLOCK, V_BLOCK):
            for g in range(1, n_kv):
                y = _r(y0 + g * (y1 - y0) / n_kv)
                xs, ys = xs + [x0, x0 + 1, None], ys + [y, y, None]
    return dict(
        type="scatter", x=xs, y=ys, mode="lines", line=dict(color="white", width=1), hoverinfo="skip", showlegend=False
    )


def _moving(fill: CacheFill, f: int, lookups: list[tuple[list, list]]) -> tuple[list[tuple[list, list]], int]:
    """(x, y) of frame ``f``'s changing lines, in order per panel: the filled part, the newest tokens and the
    lookups (``lookups``: each panel's :func:`_lookups`); and its token count. Only x changes between frames (the
    frames carry x alone)."""
    t, prev = fill.tokens[f], fill.tokens[f - 1] if f else 0
    done, start = t / fill.seq_len, prev / fill.seq_len
    out = []
    for i, (heads_x, reads_y) in enumerate(lookups):
        fx, fy, nx, ny = _fill_xy(i * PANEL_STEP, done, start)
        out += [(fx, fy), (nx, ny), (_reads_x(heads_x, _r(i * PANEL_STEP + done)), reads_y)]
    return out, t


def _bars(fill: CacheFill, f: int, t: int) -> dict:
    """Frame ``f``'s bytes bars: the bytes so far of each layout, their text, and the formula in the hover."""
    sizes = fill.bytes[f]
    hover = [
        kv_formula(lay.n_layers, lay.n_kv_heads, lay.k_dim, t, fill.batch, fill.dtype, v_head_dim=lay.v_dim)[1]
        for lay in fill.layouts
    ]
    return dict(x=list(sizes), text=[f"{format_bytes(b)} ({b:,} B)" for b in sizes], hovertext=hover)


def _frame_data(fill: CacheFill, f: int, lookups: list[tuple[list, list]]) -> list[dict]:
    """What frame ``f`` changes: the x of the moving lines, then the bars. Each names its trace type: plotly.js
    takes a frame's trace without one for a scatter (the bars were drawn as a line)."""
    lines, t = _moving(fill, f, lookups)
    return [dict(type="scatter", x=x) for x, _ in lines] + [dict(type="bar", **_bars(fill, f, t))]


def _full_traces(fill: CacheFill, f: int, style: Style) -> list[dict]:
    """Frame ``f``'s changing traces with every attribute (the figure's first state, or a still)."""
    names = [layout_name(lay.label, lay.native, style) for lay in fill.layouts]
    lines, t = _moving(fill, f, [_lookups(fill, i) for i in range(len(fill.layouts))])
    out = []
    for j, (x, y) in enumerate(lines):
        colour, kind = LAYOUT_COLORS[fill.layouts[j // 3].kind], j % 3  # filled, newest, lookups
        how = (
            dict(line=dict(color=READ_LINE, width=1.2))
            if kind == 2
            else dict(fill="toself", fillcolor=colour, opacity=0.45 if kind == 0 else 1.0, line=dict(width=0))
        )
        out.append(dict(type="scatter", x=x, y=y, mode="lines", hoverinfo="skip", showlegend=False, **how))
    colours = [LAYOUT_COLORS[lay.kind] for lay in fill.layouts]
    out.append(
        dict(
            type="bar",
            orientation="h",
            y=names,
            xaxis="x2",
            yaxis="y2",
            textposition="outside",
            textfont=dict(size=style.font),
            constraintext="none",
            cliponaxis=False,
            marker=dict(color=colours),
            hovertemplate="%{y}<br>%{hovertext}<extra></extra>",
            showlegend=False,
            **_bars(fill, f, t),
        )
    )
    return out


def _panel_notes(fill: CacheFill, style: Style) -> list[dict]:
    """Each panel's heading (layout, KV heads, buffer shape, who reads what) and the K / V / position labels."""
    notes, size = [], style.font
    small = size if style.present else size - 1  # the positions under the buffers: 20 px on a slide
    for i, lay in enumerate(fill.layouts):
        x0, n_rep = i * PANEL_STEP, fill.n_heads // lay.n_kv_heads
        shape = ", ".join(f"{n:,}" for n in fill.shape(i))
        kind = "mha" if n_rep == 1 else ("mqa" if lay.n_kv_heads == 1 else "gqa")
        # three panels across a slide: the short form (head h → KV head h // 4)
        rule = style.t(f"kvtensor.{'short' if style.present else 'rule'}_{kind}", rep=n_rep)
        kv = "H_kv" if style.present else "H<sub>kv</sub>"  # a slide: a subscript would be 14 px
        head = f"<b>{layout_name(lay.label, lay.native, style)}</b> · {kv} = {lay.n_kv_heads:,}"
        # on a slide the chart is squeezed to the screen: the headings hang from the plot's top by pixels (in the
        # top margin), not by data units, which shrink under them
        where = dict(yref="y domain", y=1.0, yshift=4) if style.present else dict(y=Q_Y + 0.06)
        notes.append(
            dict(
                x=x0 + 0.5,
                text=f"{head}<br>[{shape}]<br>{rule}",
                showarrow=False,
                **where,
                xanchor="center",
                yanchor="bottom",
                font=dict(size=size, color=LAYOUT_COLORS[lay.kind]),
            )
        )
        for text, y in (("K", sum(K_BLOCK) / 2), ("V", sum(V_BLOCK) / 2)):
            notes.append(
                dict(
                    x=x0 - 0.02, y=y, text=f"<b>{text}</b>", showarrow=False, xanchor="right", font=dict(size=size + 2)
                )
            )
        notes.append(
            dict(
                x=x0,
                y=V_BLOCK[0] - 0.02,
                text="0",
                showarrow=False,
                xanchor="left",
                yanchor="top",
                font=dict(size=small, color="#444444"),
            )
        )
        notes.append(
            dict(
                x=x0 + 1,
                y=V_BLOCK[0] - 0.02,
                text=f"S = {fill.seq_len:,}",
                showarrow=False,
                xanchor="right",
                yanchor="top",
                font=dict(size=small, color="#444444"),
            )
        )
    lay = fill.layouts[0]
    key = "kvtensor.legend" if lay.k_dim == lay.v_dim else "kvtensor.legend_kv"
    others = style.t("kvtensor.others") if lay.n_layers > 1 else ""
    text = style.t(
        key,
        L=f"{lay.n_layers:,}",
        others=others,
        cell=style.count(lay.k_dim, "element"),
        dv=style.count(lay.v_dim, "element"),
    )
    width = len(fill.layouts) * PANEL_STEP - (PANEL_STEP - 1)
    if not style.present:  # a slide has the buffers' axes in its subtitle (tensor_title), no room for more
        notes.append(
            dict(
                x=width / 2,
                y=LEGEND_Y,
                xref="x",
                yref="paper",
                text=text,
                showarrow=False,
                xanchor="center",
                yanchor="top",
                font=dict(size=size - 1, color="#444444"),
            )
        )
    return notes


def _controls(fill: CacheFill, style: Style) -> dict:
    """Play and pause buttons and the token slider (the frame label: tokens in the cache)."""
    play = [None, dict(frame=dict(duration=FRAME_MS, redraw=True), fromcurrent=True, transition=dict(duration=0))]
    pause = [[None], dict(frame=dict(duration=0, redraw=False), mode="immediate", transition=dict(duration=0))]
    steps = [
        dict(
            method="animate",
            label=f"{t:,}",
            args=[[str(t)], dict(mode="immediate", frame=dict(duration=0, redraw=True), transition=dict(duration=0))],
        )
        for t in fill.tokens
    ]
    return dict(
        updatemenus=[
            dict(
                type="buttons",
                direction="left",
                x=0,
                y=0,
                xanchor="left",
                yanchor="top",
                pad=dict(t=8),
                showactive=False,
                font=dict(size=style.font),
                buttons=[
                    dict(label="▶ " + style.t("kvtensor.play"), method="animate", args=play),
                    dict(label="⏸ " + style.t("kvtensor.pause"), method="animate", args=pause),
                ],
            )
        ],
        sliders=[
            dict(
                active=0,
                x=0.24,
                y=0,
                xanchor="left",
                yanchor="top",
                len=0.76,
                pad=dict(t=4),
                currentvalue=dict(prefix=style.t("kvtensor.slider_prefix"), font=dict(size=style.font)),
                font=dict(size=max(10, style.font - 3)),
                steps=steps,
            )
        ],
    )


def tensor_title(fill: CacheFill, style: Style, at: int | None) -> str:
    """The title and the line under it: what is drawn and, for long sequences, which token counts."""
    names = ", ".join(lay.label for lay in fill.layouts)
    title = style.t(
        "kvtensor.title", layouts=names, heads=style.count(fill.n_heads, "query_head"), dtype=fill.dtype, b=fill.batch
    )
    if fill.thinned:
        n, s = len(fill.tokens), fill.seq_len
        key = "kvtensor.thinned_every" if s % n == 0 else "kvtensor.thinned"
        sub = style.t(key, n=n, s=f"{s:,}", every=f"{s // n:,}")
    else:
        sub = style.t("kvtensor.every_token", s=f"{fill.seq_len:,}")
    if at is not None:
        now = style.t("kvtensor.at", t=f"{fill.tokens[at]:,}", s=f"{fill.seq_len:,}")
        # a slide: no room for the frames' story (the stepper says it); the buffers' axes instead of the legend
        sub = f"{now} · {style.t('kvtensor.axes')}" if style.present else f"{now} · {sub}"
    return f"{title}<br><span style='font-size:{style.font}px'>{sub}</span>"


def tensor_figure(fill: CacheFill, style: Style = Style(), at: int | None = None) -> go.Figure:
    """The buffers of ``fill`` filling token by token; with ``at`` (a frame index) a still of that frame (no
    frames, buttons or slider: what presentation mode steps through with Previous and Next).

    Traces: per panel the layer slabs, the empty buffers, the query heads; then per panel the filled part, the
    newest tokens and the lookups (these change per frame); the row separators; last the bytes bars. The frames
    (named by their token count) carry only the changing traces.
    """
    first = 0 if at is None else at
    n_panels = len(fill.layouts)
    static = [t for i in range(n_panels) for t in _static_panel(fill, i, style)]
    moving = _full_traces(fill, first, style)
    rows = [_row_lines(fill, i) for i in range(n_panels)]
    data = static + moving[:-1] + rows + moving[-1:]
    moving_ids = [*range(len(static), len(static) + len(moving) - 1), len(data) - 1]
    peak = max(max(b) for b in fill.bytes)
    width = n_panels * PANEL_STEP - (PANEL_STEP - 1)
    extra = {} if at is not None else _controls(fill, style)
    layout = base_layout(
        tensor_title(fill, style, at),
        style,
        (600 if style.present else 620) + (0 if at is not None else 90),
        xaxis=dict(range=[-0.12, width + 0.1], visible=False, fixedrange=True),
        yaxis=dict(
            range=[-0.06, Q_Y + (0.1 if style.present else 0.42)],
            visible=False,
            fixedrange=True,
            domain=list(MAIN_DOMAIN),
        ),
        xaxis2=dict(domain=[0, 0.55], anchor="y2", range=[0, peak * 1.02], visible=False, fixedrange=True),
        yaxis2=dict(
            domain=list(SLIDE_BARS_DOMAIN if style.present else BARS_DOMAIN),
            anchor="x2",
            autorange="reversed",
            fixedrange=True,
            automargin=True,
            tickmode="linear",
            tick0=0,
            dtick=1,
        ),  # every bar named (plotly skips some when short)
        annotations=_panel_notes(fill, style),
        showlegend=False,
        hovermode="closest",
        bargap=0.3,
        uirevision="kv_tensors",
        margin=dict(l=10, r=10, t=10 if style.present else 90, b=90 if at is None else 10),
        **extra,
    )
    if style.present:  # the title at the top of the margin, the panels' headings under it
        # the title pushes the top margin itself, over the headings (its pad): plotly keeps such a push within the
        # chart's height. A fixed top margin taller than the chart (a slide's chart squeezed while a rerun still
        # showed the last slide's elements, or a deck's slide under two steppers) left plotly a plot of negative
        # height: "Something went wrong with axis scaling"
        layout["title"].update(yref="paper", y=1.0, yanchor="bottom", pad=dict(b=SLIDE_HEADINGS_PX), automargin=True)
    frames = None
    if at is None:
        lookups = [_lookups(fill, i) for i in range(n_panels)]
        frames = [
            dict(name=str(t), traces=moving_ids, data=_frame_data(fill, f, lookups)) for f, t in enumerate(fill.tokens)
        ]
    return plain_figure(data, layout, style, frames=frames)
