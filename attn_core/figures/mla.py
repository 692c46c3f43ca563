"""Figures of the MLA page: the data flow with the cached tensors, one head's maps, the caches per token, the
live decode of both paths, and the cost of each decode path against the cached length."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import plotly.colors as pc
import plotly.graph_objects as go

from attn_core.figures.base import (
    FONTS_SET,
    MASK_GREY,
    PlainFigure,
    Style,
    base_layout,
    explicit_scale,
    plain_figure,
    slide_title,
)
from attn_core.figures.labels import LABEL_PITCH, MIN_TICK_FONT, Ticks, thinned_note, tick_axis
from attn_core.figures.margins import PINNED, reserve_margins
from attn_core.figures.memory import HALF_SLIDE_TITLE, LAYOUT_COLORS
from attn_core.kv.memory import elements_to_bytes
from attn_core.runtime.units import binary_unit, format_bytes, format_bytes_exact, format_tokens

if TYPE_CHECKING:
    from attn_core.mla.attention import MLAConfig

PATH_COLORS = {"naive": "#56B4E9", "absorb": "#CC79A7", "latent": "#D55E00"}
#: the blocks' labels: dark on their light fills in either colour scheme (text on a light block is a card's)
CARD_TEXT = "#222222"
FILL = {"input": "#f2f2f2", "tensor": "#ffffff", "cached": "#fde3a7", "absorbed": "#e5d4f0", "wrong": "#f8c9c0"}
EDGE = {"input": "#666666", "tensor": "#0072B2", "cached": "#E69F00", "absorbed": "#CC79A7", "wrong": "#D55E00"}


# ---------------------------------------------------------------- data flow
def flow_tensors(c: MLAConfig, mode: str) -> list[tuple[str, str, bool]]:
    """(name, shape per token, cached in ``mode``) of every tensor of the layer, in the diagram's order. Without
    query compression (``q_lora_rank`` 0, DeepSeek-V2-Lite) the query comes straight from h: no c_Q, and its
    position-free part is q_nope = W_Q h rather than q_C = W_UQ c_Q."""
    h, dh, dr, dv, dc = c.n_heads, c.qk_nope_head_dim, c.qk_rope_head_dim, c.v_head_dim, c.kv_lora_rank
    naive, absorb = mode == "naive", mode == "absorb"
    rows = [("h", f"[{c.d_model}]", False)]
    if c.q_lora_rank:
        rows += [
            ("c_Q = RMSNorm(W_DQ h)", f"[{c.q_lora_rank}]", False),
            ("q_C = W_UQ c_Q", f"[{h} × {dh}]", False),
            ("q_R = RoPE(W_QR c_Q)", f"[{h} × {dr}]", False),
        ]
    else:
        rows += [("q_nope = W_Q h", f"[{h} × {dh}]", False), ("q_R = RoPE(W_QR h)", f"[{h} × {dr}]", False)]
    rows += [
        ("c_KV = RMSNorm(W_DKV h)", f"[{dc}]", absorb),
        ("k_R = RoPE(W_KR h)", f"[{dr}]", absorb),
        ("k_C = W_UK c_KV", f"[{h} × {dh}]", False),
        ("k = [k_C ; k_R]", f"[{h} × {dh + dr}]", naive),
        ("v = W_UV c_KV", f"[{h} × {dv}]", not absorb),
        ("o = W_O [o_1 … o_H]", f"[{c.d_model}]", False),
    ]
    if mode == "rope_on_latent":
        rows[-3] = ("k = RoPE(k_C)", f"[{h} × {dh}]", True)
    return rows


def _boxes(c: MLAConfig, mode: str, t) -> list[tuple[float, float, str, str]]:
    """(x, y, label, kind) of the diagram's blocks, in the order :func:`_arrows` numbers them; without query
    compression there is no c_Q block and the query blocks are q_nope and q_R, made from h."""
    h, dh, dr, dv, dc = c.n_heads, c.qk_nope_head_dim, c.qk_rope_head_dim, c.v_head_dim, c.kv_lora_rank
    kc = {"naive": "tensor", "absorb": "absorbed", "rope_on_latent": "wrong"}[mode]
    att = {
        "naive": t("mla.fig_att_naive", h=h, d=dh + dr),
        "absorb": t("mla.fig_att_absorb", h=h, d=dc + dr),
        "rope_on_latent": t("mla.fig_att_wrong", h=h, d=dh),
    }[mode]
    cached_abs = "cached" if mode == "absorb" else "tensor"
    up = "cached" if mode != "absorb" else "absorbed"
    q = "q_C" if c.q_lora_rank else "q_nope"
    query = [(1.0, 3.3, f"c_Q [{c.q_lora_rank}]", "tensor")] if c.q_lora_rank else []
    return [
        (0.0, 2.0, f"h [{c.d_model}]", "input"),
        *query,
        (2.0, 3.9, f"{q} [{h}×{dh}]" + (" · W_UK" if mode == "absorb" else ""), kc if mode != "naive" else "tensor"),
        (2.0, 3.0, f"q_R [{h}×{dr}] RoPE", "tensor" if mode != "rope_on_latent" else "input"),
        (1.0, 1.5, f"c_KV [{dc}]", cached_abs),
        (2.0, 0.1, f"k_R [{dr}] RoPE", cached_abs if mode != "rope_on_latent" else "input"),
        (2.0, 2.05, f"k_C [{h}×{dh}]" + (" RoPE" if mode == "rope_on_latent" else ""), up),
        (2.0, 1.1, f"v [{h}×{dv}]", up),
        (3.0, 2.0, att, "tensor"),
        (4.0, 2.0, f"o [{c.d_model}]", "input"),
    ]


# the arrows between the blocks of :func:`_boxes` with c_Q (h → c_Q → q_C, q_R); without it h feeds the queries
ARROWS = ((0, 1), (1, 2), (1, 3), (0, 4), (0, 5), (4, 6), (4, 7), (2, 8), (3, 8), (6, 8), (5, 8), (7, 8), (8, 9))
ARROWS_NO_CQ = ((0, 1), (0, 2), (0, 3), (0, 4), (3, 5), (3, 6), (1, 7), (2, 7), (5, 7), (4, 7), (6, 7), (7, 8))
K_R_BOX = {True: 5, False: 4}  # the k_R block's index, with and without c_Q: h's arrow to it leaves h's bottom


def flow_figure(c: MLAConfig, mode: str, style: Style = Style()) -> go.Figure:
    """The layer as blocks with their shapes per token; cached tensors filled orange, absorbed matrices purple,
    the rope_on_latent mistake red."""
    t = style.t
    boxes = _boxes(c, mode, t)
    arrows, k_r = (ARROWS, K_R_BOX[True]) if c.q_lora_rank else (ARROWS_NO_CQ, K_R_BOX[False])
    w, hgt = 0.44, 0.34
    shapes, notes = [], []
    for x, y, label, kind in boxes:
        shapes.append(
            dict(
                type="rect",
                x0=x - w,
                x1=x + w,
                y0=y - hgt,
                y1=y + hgt,
                fillcolor=FILL[kind],
                line=dict(color=EDGE[kind], width=4 if kind == "cached" else 2),
                layer="below",
            )
        )
        # dark text on the light block: a card, dark in either scheme (ui.chart_theme.darkened finds the block)
        notes.append(dict(x=x, y=y, text=label, showarrow=False, font=dict(size=style.font, color=CARD_TEXT)))
    for a, b in arrows:
        (xa, ya, *_), (xb, yb, *_) = boxes[a], boxes[b]
        sx, sy = (xa, ya - hgt) if b == k_r else (xa + w, ya)  # h to k_R leaves h's bottom, passing under c_KV
        notes.append(
            dict(
                x=xb - w,
                y=yb,
                ax=sx,
                ay=sy,
                xref="x",
                yref="y",
                axref="x",
                ayref="y",
                text="",
                showarrow=True,
                arrowhead=2,
                arrowwidth=2,
                arrowcolor="#888888",
            )
        )
    legend = [
        dict(
            type="scatter",
            x=[None],
            y=[None],
            mode="markers",
            name=t(f"mla.fig_kind_{k}"),
            marker=dict(symbol="square", size=16, color=FILL[k], line=dict(color=EDGE[k], width=2)),
        )
        for k in ("cached", "absorbed", "wrong")
        if any(b[3] == k for b in boxes)
    ]
    layout = base_layout(
        t(f"mla.fig_flow_{mode}"),
        style,
        520 if style.present else 460,
        xaxis=dict(visible=False, range=[-0.55, 4.55]),
        yaxis=dict(visible=False, range=[-0.35, 4.35]),
        shapes=shapes,
        annotations=notes,
        legend=dict(orientation="h", yanchor="top", y=-0.02, x=0),
    )
    return plain_figure(legend, layout, style)


# ---------------------------------------------------------------- one head's maps
DIFF_SCALE = explicit_scale(pc.sequential.Reds)  # |difference|: white at 0, dark red at its largest
_PANELS = ((0.0, 0.25), (0.28, 0.53), (0.68, 0.93))  # x domains: naive, absorbed | weight bar | difference
_BARS = (0.54, 0.945)  # x of the weights' and the difference's colour bars
SLIDE_MAP_PX = 300  # px of map height on a 1280×720 slide (the chart fills what the title and the steps leave)
# px across the three panels and their colour bars: the page's main column at 1280 px beside the controls (less the
# margins), a slide at 1280 px
AGREE_PX = {False: 660, True: 820}
ROTATED_PITCH = 1.45  # px of axis per px of font between key labels rotated by 60° (their glyphs' height / sin 60°)


def agree_ticks(n: int, span_px: float, style: Style, pitch: float = LABEL_PITCH) -> Ticks:
    """How ``n`` labels go along ``span_px`` px, ``pitch`` px of axis per px of font apart: on a page the largest
    font up to ``style.font`` that fits (every ``step``-th label below the least legible font); on a slide every
    label at the slide's 20 px where they fit, else every ``step``-th (the chart says so)."""
    cell = span_px / max(n, 1)
    if style.present:
        return Ticks(style.font, max(1, int(np.ceil(style.font * pitch / cell - 1e-9))))
    font = min(style.font, int(cell / pitch))
    if font >= MIN_TICK_FONT:
        return Ticks(font)
    return Ticks(MIN_TICK_FONT, int(np.ceil(MIN_TICK_FONT * pitch / cell)))


def agree_figure(a: np.ndarray, b: np.ndarray, labels: Sequence[str], head: int, style: Style = Style()) -> go.Figure:
    """One head's weights ``[T, T]`` by the naive path ``a`` and the absorbed path ``b`` side by side on one 0..1
    colour bar, and ``|a - b|`` beside them on its own scale (its largest value in its title); causal cells grey,
    the query labels once at the left, every key labelled under each panel (thinned, and said, beyond what fits)."""
    t, n = style.t, a.shape[0]
    labels = [str(x) for x in labels]
    mask = np.tril(np.ones((n, n), dtype=bool))
    diff = np.abs(a.astype(np.float64) - b.astype(np.float64))
    top = float(diff[mask].max()) if n else 0.0
    # a slide stretches the chart to the screen: its maps get about SLIDE_MAP_PX px of height
    area_h = max(300, min(620, n * LABEL_PITCH * style.font))
    y_px = SLIDE_MAP_PX if style.present else area_h
    panel_px = (_PANELS[0][1] - _PANELS[0][0]) * AGREE_PX[style.present]
    y_ticks, x_ticks = agree_ticks(n, y_px, style), agree_ticks(n, panel_px, style, ROTATED_PITCH)
    grey = np.where(mask, np.nan, 1.0).astype(np.float32)
    names = (t("mla.panel_naive"), t("mla.panel_absorb"), t("mla.panel_diff", d=f"{top:.2g}"))
    data, layout, axis_font = [], {}, dict(size=style.font + 2)
    for i, (mat, name) in enumerate(zip((a, b, diff), names, strict=True)):
        ax = "" if i == 0 else str(i + 1)
        data += _agree_traces(np.where(mask, mat, np.nan).astype(np.float32), grey, labels, (ax, i, name), style)
        layout[f"xaxis{ax}"] = dict(
            domain=list(_PANELS[i]),
            anchor="y",
            type="category",
            tickangle=-60,
            title=dict(text=t("fig.key"), font=axis_font),
            **tick_axis(labels, x_ticks),
        )
    longest = max((len(s) for s in layout["xaxis"]["ticktext"]), default=4)
    bottom = int(40 + 0.6 * x_ticks.font * longest)
    note = thinned_note(style, y_ticks, x_ticks, t("fig.query"), t("fig.key"))
    top_px = (90 if style.present else 70) + (26 if note else 0)
    layout.update(
        base_layout(
            t("mla.agree_title", h=head),
            style,
            int((SLIDE_MAP_PX if style.present else area_h) + bottom + top_px),
            margin=dict(l=10, r=70 if style.present else 56, t=top_px, b=10),
            plot_bgcolor="rgba(0,0,0,0)",
            meta={FONTS_SET: style.font, PINNED: ["xaxis", "xaxis2", "xaxis3", "yaxis"]},
            yaxis=dict(
                title=dict(text=t("fig.query"), font=axis_font),
                autorange="reversed",
                type="category",
                **tick_axis(labels, y_ticks),
            ),
            **_agree_colour_axes(top, style),
            annotations=_agree_annotations(names, note, style),
        )
    )
    # just above the panels' names, wherever a slide's height puts the plot
    layout["title"].update(
        yref="paper",
        y=1.0,
        yanchor="bottom",
        pad=dict(b=2 * style.font + (22 if style.present else 14) if note else style.font + 16),
    )
    reserve_margins({"data": data, "layout": layout})  # fonts set here (plain_figure would reset the tick fonts)
    return PlainFigure(data, layout)


def _agree_traces(z: np.ndarray, grey: np.ndarray, labels: list[str], panel: tuple, style: Style) -> list[dict]:
    """One panel's heatmap ``z`` (NaN where causal masking hides a cell) and the grey over the masked cells;
    ``panel`` = (axis suffix, index, name)."""
    ax, i, name = panel
    t = style.t
    hover = f"{t('fig.query')} %{{y}}<br>{t('fig.key')} %{{x}}<br>%{{z:.4g}}<extra>%{{meta}}</extra>"
    cells = dict(x=labels, y=labels, xaxis=f"x{ax}", yaxis="y", hoverongaps=False)
    return [
        dict(type="heatmap", z=z, coloraxis="coloraxis2" if i == 2 else "coloraxis", hovertemplate=hover, meta=name)
        | cells,
        dict(
            type="heatmap",
            z=grey,
            showscale=False,
            colorscale=[[0, MASK_GREY], [1, MASK_GREY]],
            hovertemplate=t("fig.masked") + "<extra></extra>",
        )
        | cells,
    ]


def _agree_colour_axes(top: float, style: Style) -> dict:
    """The weights' 0..1 colour bar and the difference's own, up to its largest value ``top``."""
    bar = dict(thickness=14, len=0.9, y=0.5, xanchor="left", xpad=4, tickfont=dict(size=style.font))
    return dict(
        coloraxis=dict(
            colorscale=style.weight_scale,
            cmin=0.0,
            cmax=1.0,
            colorbar=dict(x=_BARS[0], title=dict(text=style.t("fig.weight"), font=dict(size=style.font)), **bar),
        ),
        coloraxis2=dict(
            colorscale=DIFF_SCALE,
            cmin=0.0,
            cmax=top if top > 0 else 1.0,
            colorbar=dict(x=_BARS[1], tickformat=".1e", title=dict(font=dict(size=style.font)), **bar),
        ),
    )


def _agree_annotations(names: Sequence[str], note: str, style: Style) -> list[dict]:
    """The three panels' names above them and, when labels were thinned, the note above the names."""
    marks = [
        dict(
            text=f"<b>{name}</b>",
            x=sum(_PANELS[i]) / 2,
            y=1.0,
            xref="paper",
            yref="paper",
            xanchor="center",
            yanchor="bottom",
            yshift=6,
            showarrow=False,
            font=dict(size=style.font),
        )
        for i, name in enumerate(names)
    ]
    if note:
        marks.append(
            dict(
                text=note,
                x=0.0,
                y=1.0,
                xref="paper",
                yref="paper",
                xanchor="left",
                yanchor="bottom",
                yshift=style.font + 12,
                showarrow=False,
                font=dict(size=style.font if style.present else style.font - 3),  # a slide: 20 px
            )
        )
    return marks


# ---------------------------------------------------------------- cache per token
def cache_bars(
    labels: Sequence[str], values: Sequence[int], dtype: str, title: str, style: Style = Style()
) -> go.Figure:
    """Cached values per token and layer of each layout (log axis), bytes in ``dtype`` in the hover and labels."""
    kinds = [lab.split("-")[0] if not lab.startswith("MLA") else lab for lab in labels]
    nbytes = [elements_to_bytes(int(v), dtype) for v in values]
    data = [
        dict(
            type="bar",
            x=list(labels),
            y=[int(v) for v in values],
            marker=dict(color=[LAYOUT_COLORS.get(k, "#888888") for k in kinds]),
            text=[f"{int(v):,} · {format_bytes(b)}" for v, b in zip(values, nbytes, strict=True)],
            textposition="outside",
            cliponaxis=False,
            hovertemplate="%{x}<br>%{y:,} values<br>%{customdata}<extra></extra>",
            customdata=[format_bytes_exact(b) + f" ({dtype})" for b in nbytes],
        )
    ]
    layout = base_layout(
        title,
        style,
        440 if style.present else 380,
        showlegend=False,
        yaxis=dict(  # decades only: plotly's 2 and 5 between them ran into each other
            type="log", dtick=1, title=dict(text=style.t("mla.axis_values")), range=[0, np.log10(max(values)) + 0.6]
        ),
        xaxis=dict(title=dict(text=style.t("mla.axis_layout"))),
    )
    return plain_figure(data, layout, style)


# ---------------------------------------------------------------- live decode
def decode_bytes_figure(df: pd.DataFrame, x_max: int, y_max: int, style: Style = Style()) -> go.Figure:
    """Measured cache bytes of both paths (markers) on their formulas (lines) against the tokens cached."""
    div, unit = binary_unit(max(int(y_max), 1))
    t, x = style.t, df["tokens_cached"].to_numpy()
    data = []
    for path in ("naive", "absorb"):
        color = PATH_COLORS[path]
        formula, measured = df[f"{path}_bytes_formula"].to_numpy(), df[f"{path}_bytes_measured"].to_numpy()
        data.append(
            dict(
                type="scatter",
                x=x,
                y=formula / div,
                mode="lines",
                name=t(f"mla.dec_formula_{path}"),
                line=dict(color=color, width=4 if style.present else 3),
                customdata=[format_bytes_exact(int(b)) for b in formula],
                hovertemplate="S = %{x:,}<br>%{customdata}<extra>%{fullData.name}</extra>",
            )
        )
        data.append(
            dict(
                type="scatter",
                x=x,
                y=measured / div,
                mode="markers",
                name=t(f"mla.dec_measured_{path}"),
                marker=dict(color="#222222", size=7, symbol="circle-open", line=dict(width=2)),
                customdata=[format_bytes_exact(int(b)) for b in measured],
                hovertemplate="S = %{x:,}<br>%{customdata}<extra>%{fullData.name}</extra>",
            )
        )
    layout = base_layout(
        slide_title(t("mla.dec_bytes_title"), HALF_SLIDE_TITLE)
        if style.present
        else t("mla.dec_bytes_title"),  # a slide: two charts side by side
        style,
        460 if style.present else 420,
        xaxis=dict(range=[0, x_max * 1.02 + 1], title=dict(text=t("kvmem.tokens_in_cache"))),
        yaxis=dict(range=[0, y_max / div * 1.08], title=dict(text=t("kvmem.bytes_axis", unit=unit))),
        legend=dict(orientation="h", yanchor="top", y=-0.25, x=0),
        uirevision="mla_dec_bytes",
    )
    return plain_figure(data, layout, style)


def decode_time_figure(df: pd.DataFrame, x_max: int, style: Style = Style()) -> go.Figure:
    """Wall time of each decode step of both paths (the first point is the prefill) against the tokens cached."""
    t = style.t
    data = [
        dict(
            type="scatter",
            x=df["tokens_cached"].to_numpy(),
            y=df[f"{p}_ms"].to_numpy(),
            mode="lines+markers",
            name=t(f"mla.path_{p}"),
            line=dict(color=PATH_COLORS[p], width=3 if style.present else 2),
            marker=dict(size=4),
            hovertemplate="S = %{x:,}<br>%{y:.3f} ms<extra>%{fullData.name}</extra>",
        )
        for p in ("naive", "absorb")
    ]
    layout = base_layout(
        slide_title(t("mla.dec_time_title"), HALF_SLIDE_TITLE)
        if style.present
        else t("mla.dec_time_title"),  # a slide: two charts side by side
        style,
        420 if style.present else 380,
        xaxis=dict(range=[0, x_max * 1.02 + 1], title=dict(text=t("kvmem.tokens_in_cache"))),
        yaxis=dict(title=dict(text=t("kvmem.ms_axis")), rangemode="tozero"),
        legend=dict(orientation="h", yanchor="top", y=-0.25, x=0),
        uirevision="mla_dec_time",
    )
    return plain_figure(data, layout, style)


# ---------------------------------------------------------------- costs
def cost_figure(df: pd.DataFrame, column: str, mark: int, style: Style = Style()) -> go.Figure:
    """``column`` (FLOPs or bytes read per decode step and layer) of each path against the cached tokens (log-log),
    a dotted line at ``mark`` tokens."""
    t = style.t
    data = []
    for path in PATH_COLORS:
        part = df[df.path == path]
        if column != "flops" and path == "latent":
            continue  # reads what the absorbed path reads
        name = t(f"mla.path_{path}") if column == "flops" or path == "naive" else t("mla.path_latent_reads")
        data.append(
            dict(
                type="scatter",
                x=part.cached.to_numpy(),
                y=part[column].to_numpy(),
                mode="lines+markers",
                name=name,
                line=dict(color=PATH_COLORS[path], width=3 if style.present else 2),
                hovertemplate="S = %{x:,}<br>%{y:.4s}<extra>%{fullData.name}</extra>",
            )
        )
    top = float(df[column].max())
    shapes = [dict(type="line", x0=mark, x1=mark, y0=0, y1=1, yref="paper", line=dict(color="#555555", dash="dot"))]
    title = t(f"mla.cost_title_{'flops' if column == 'flops' else 'bytes'}", s=format_tokens(mark))
    if style.present:  # two charts side by side: the dotted line's note on a line of its own
        title = re.sub(r" ?([(（])", r"<br>\1", title, count=1)
    layout = base_layout(
        title,
        style,
        420 if style.present else 380,
        margin=dict(l=10, r=10, t=110 if style.present else 60, b=10),
        xaxis=dict(type="log", title=dict(text=t("mla.axis_cached"))),
        yaxis=dict(
            type="log",
            title=dict(text=t(f"mla.axis_{'flops' if column == 'flops' else 'bytes'}")),
            range=[0, np.log10(max(top, 10)) + 0.2],
        ),
        shapes=shapes,
        # inside, at the bottom right, which every line leaves free (rising to the right): under the plot it took
        # three rows of a slide's height
        legend=dict(x=0.99, y=0.02, xanchor="right", yanchor="bottom", bgcolor="rgba(255,255,255,0.85)"),
    )
    return plain_figure(data, layout, style)
