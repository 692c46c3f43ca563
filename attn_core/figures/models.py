"""Figures of the pretrained-models page: head roles by KV group, a token's time against the context, the score scale."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np
import plotly.graph_objects as go

from attn_core.figures.base import FONTS_SET, MASK_GREY, PlainFigure, Style, base_layout, group_color, plain_figure
from attn_core.figures.labels import short_label
from attn_core.figures.margins import reserve_margins, text_width

if TYPE_CHECKING:  # types only: figures never import the engine at run time
    from attn_core.pretrained.models import ScaleResult

MODEL_COLOR, RANDOM_COLOR = "#0072B2", "#D55E00"
CACHED_COLOR, RECOMPUTE_COLOR = "#0072B2", "#D55E00"  # as the KV-cache page's decode charts
# px of x axis the roles chart can count on: a phone's scroll box, a slide 1024 px wide
ROLES_PLOT_PX = {False: 600, True: 750}
HEAD_PAGE_PX, HEAD_PAGE_MAX_PX = 600, 900  # a head's map on a page: the x axis it can count on, its tallest plot
SLIDE_PITCH = 1.3  # px of axis per px of font between two labels on a slide (a 20 px label's box is 25-26 px tall)
PEAK_COLORS = {"max_weight": "#0072B2", "saturated": "#D55E00", "entropy": "#009E73"}


def head_labels(n_heads: int, n_kv_heads: int) -> list[str]:
    """``h3 · KV1``: each query head with the KV head it reads (``h // n_rep``)."""
    n_rep = n_heads // n_kv_heads
    return [f"h{h} · KV{h // n_rep}" for h in range(n_heads)]


def _group_frames(n_heads: int, n_kv_heads: int, n_cols: int, width: int) -> list[dict]:
    """One rectangle in its group's colour around the rows of each KV group (none for MHA)."""
    n_rep = n_heads // n_kv_heads
    if n_rep == 1:
        return []
    return [
        dict(
            type="rect",
            xref="x",
            yref="y",
            x0=-0.5,
            x1=n_cols - 0.5,
            y0=g * n_rep - 0.5,
            y1=(g + 1) * n_rep - 0.5,
            line=dict(color=group_color(g), width=width),
            fillcolor="rgba(0,0,0,0)",
        )
        for g in range(n_kv_heads)
    ]


def role_layer_step(n_layers: int, style: Style) -> int:
    """Every how many layers the roles chart labels (1: every layer). A layer's number needs about 0.52 em per
    digit and a gap; the x axis has about :data:`ROLES_PLOT_PX` px, the narrowest a projector or a page gives it."""
    digits = len(str(max(n_layers - 1, 0)))
    need = digits * 0.52 * style.font + 3
    per = ROLES_PLOT_PX[style.present] / max(n_layers, 1)
    step = 1
    while per * step < need:
        step += 1
    return step


def layer_axis(n_layers: int, style: Style, globals_: tuple[int, ...] = (), window: int | None = None) -> dict:
    """The roles chart's layer axis: every layer numbered while the numbers fit (else every ``step``-th, said in the
    title); a model with local layers (``window``) marks its global layers ``globals_`` with a second line under
    their number (``G``, 全), said in the axis title."""
    step = role_layer_step(n_layers, style)
    t = style.t
    shown = range(0, n_layers, step)
    mark = t("models.global_mark")
    if window is not None and globals_:
        title = t("models.axis_layer_windows", mark=mark, window=window)
        text = [f"<b>{i}</b><br><b>{mark}</b>" if i in globals_ else str(i) for i in shown]
    else:
        title = t("models.axis_layer") if step == 1 else t("models.axis_layer_every", n=step)
        text = [str(i) for i in shown]
    return dict(
        title=dict(text=title, font=dict(size=style.font + 2)),
        tickfont=dict(size=style.font),
        tickmode="array",
        tickvals=list(shown),
        ticktext=text,
        tickangle=0,
        range=[-0.5, n_layers - 0.5],
        showgrid=False,
        zeroline=False,
    )


def roles_figure(
    mat: np.ndarray,
    n_kv_heads: int,
    value_label: str,
    title: str,
    style: Style = Style(),
    windows: tuple[tuple[int, ...], int | None] = ((), None),
) -> go.Figure:
    """A role score ``mat`` ``[L, H]`` (0..1) as one row per query head (grouped by the KV head it reads, each
    group framed in its colour) and one column per layer, numbered along the bottom (every layer while the
    numbers fit, else every ``step``-th, said in the axis title).

    The colour bar sits close to the map with three ticks (on a slide without its title: the chart's title names
    the score), and the right margin is what it takes, not the room a default bar would: on a 1024 px slide the
    30 layers of SmolLM2 then get every number at 20 px. ``windows``: (the global layers, the local layers' window)
    of a model with local layers (:func:`layer_axis` marks the global ones), else ``((), None)``."""
    n_layers, n_heads = mat.shape
    t = style.t
    mark_rows = 1.4 if windows[1] is not None and windows[0] else 0  # the second line under the global layers' numbers
    layer_word = t("models.axis_layer")
    heads = head_labels(n_heads, n_kv_heads)
    font, axis_font = dict(size=style.font), dict(size=style.font + 2)
    trace = dict(
        type="heatmap",
        z=np.asarray(mat, dtype=np.float32).T,  # [H, L]
        x=list(range(n_layers)),
        y=list(range(n_heads)),
        customdata=[[h] * n_layers for h in heads],
        coloraxis="coloraxis",
        hoverongaps=False,
        hovertemplate=f"{layer_word} %{{x}} · %{{customdata}}<br>{value_label} %{{z:.3f}}<extra></extra>",
    )
    bar_title = "" if style.present else value_label
    layout = dict(
        title=dict(text=title, font=dict(size=style.font + 1)),
        font=font,
        height=(90 if style.present else 70)
        + n_heads * (34 if style.present else 26)
        + 90
        + int(mark_rows * style.font),
        plot_bgcolor="rgba(0,0,0,0)",
        hoverlabel=dict(font=dict(size=max(12, style.font - 2))),
        legend=dict(font=font),
        margin=dict(l=10, r=10, t=80 if style.present else 60, b=10),
        coloraxis=dict(
            colorscale=style.weight_scale,
            cmin=0.0,
            cmax=1.0,
            colorbar=dict(
                title=dict(text=bar_title, side="right", font=font),
                tickfont=font,
                tickvals=[0, 0.5, 1],
                thickness=14,
                x=1.0,
                xanchor="left",
                xpad=8,
            ),
        ),
        xaxis=layer_axis(n_layers, style, *windows),
        yaxis=dict(
            title=dict(text="" if style.present else t("models.axis_head"), font=axis_font),  # a slide: labels say it
            tickfont=font,
            tickmode="array",
            tickvals=list(range(n_heads)),
            ticktext=heads,
            autorange="reversed",
            showgrid=False,
            zeroline=False,
        ),
        shapes=_group_frames(n_heads, n_kv_heads, n_layers, 4 if style.present else 3),
        meta={FONTS_SET: style.font},
    )
    reserve_margins({"data": [trace], "layout": layout})  # the labels' room, as apply_fonts would reserve it
    layout["margin"]["b"] += int(mark_rows * style.font)  # the marks' second line, which the estimate reads as one
    # the bar: its pad, 14 px, its labels ("0.5") and, on a page, its title turned on its side
    layout["margin"]["r"] = int(8 + 14 + 8 + text_width("0.5", style.font) + (1.6 * style.font if bar_title else 0) + 8)
    return PlainFigure(data=[trace], layout=layout)


def log_ticks(values: list[float]) -> dict:
    """A log axis over ``values`` (ms): its range and ticks at 1, 2 and 5 times the powers of ten in it, every
    one at the axis's font (plotly's own 2s and 5s are smaller), or at the powers of ten alone beyond 8 ticks."""
    seen = [v for v in values if v > 0 and math.isfinite(v)] or [1.0, 1000.0]
    lo, hi = min(seen) / 1.5, max(seen) * 1.5
    decades = range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1)
    ticks = [m * 10.0**e for e in decades for m in (1, 2, 5) if lo <= m * 10.0**e <= hi]
    if len(ticks) > 8:
        ticks = [10.0**e for e in decades if lo <= 10.0**e <= hi]
    return dict(
        range=[math.log10(lo), math.log10(hi)],
        tickmode="array",
        tickvals=ticks,
        ticktext=[f"{v:,.0f}" if v >= 1 else f"{v:g}" for v in ticks],
    )


def speed_figure(
    contexts: list[int], recompute_ms: list[float], cached_ms: list[float], planned: list[int], style: Style = Style()
) -> go.Figure:
    """The time of one token against the context length (both axes logarithmic): recomputing every token, and with
    the KV cache. The x axis spans the ``planned`` lengths from the start, so a live chart grows in place."""
    t = style.t
    width = 4 if style.present else 2.5
    size = 11 if style.present else 8
    data = [
        dict(
            type="scatter",
            x=contexts,
            y=values,
            mode="lines+markers",
            name=name,
            line=dict(color=color, width=width),
            marker=dict(size=size, color=color),
            hovertemplate=f"{name}<br>%{{x:,}} {t('models.speed_tokens')}: %{{y:,.3g}} ms<extra></extra>",
        )
        for name, values, color in (
            (t("models.speed_recompute"), recompute_ms, RECOMPUTE_COLOR),
            (t("models.speed_cached"), cached_ms, CACHED_COLOR),
        )
    ]
    lo, hi = math.log10(planned[0] / 1.4), math.log10(planned[-1] * 1.4)
    layout = base_layout(
        t("models.speed_title"),
        style,
        440 if style.present else 380,
        xaxis=dict(
            title=dict(text=t("models.speed_axis_context")),
            type="log",
            range=[lo, hi],
            tickmode="array",
            tickvals=planned,
            ticktext=[f"{c:,}" for c in planned],
            tickangle=0,
        ),
        yaxis=dict(
            title=dict(text=t("models.speed_axis_ms")), type="log", tickangle=0, **log_ticks(recompute_ms + cached_ms)
        ),
        legend=dict(x=0.01, y=0.99, xanchor="left", yanchor="top", bgcolor="rgba(255,255,255,0.7)"),
        uirevision="mdl_speed",
    )
    return plain_figure(data, layout, style)


def _line(x: list[int], y: list[float], name: str, color: str, style: Style, dash: str = "solid") -> dict:
    return dict(
        type="scatter",
        x=x,
        y=y,
        mode="lines+markers" if dash == "solid" else "lines",
        name=name,
        line=dict(color=color, width=4 if style.present else 2.5, dash=dash),
        marker=dict(size=8 if style.present else 6, color=color),
        hovertemplate=f"{name}<br>L%{{x}}: %{{y:.4g}}<extra></extra>",
    )


def variance_figure(res: ScaleResult, style: Style = Style()) -> go.Figure:
    """Per layer (log scale): var(q·k) and var(q·k/√d_k), with the seeded random layer's as dashed lines."""
    tab, rnd = res.table, res.random.iloc[0]
    x = [int(v) for v in tab.layer]
    span = [x[0], x[-1]] if len(x) > 1 else [x[0] - 0.5, x[0] + 0.5]
    t = style.t
    data = [
        _line(x, [float(v) for v in tab.score_var], t("models.var_raw"), RANDOM_COLOR, style),
        _line(x, [float(v) for v in tab.scaled_var], t("models.var_scaled", d=res.head_dim), MODEL_COLOR, style),
        _line(span, [float(rnd.score_var)] * 2, t("models.var_raw_random"), RANDOM_COLOR, style, "dash"),
        _line(span, [float(rnd.scaled_var)] * 2, t("models.var_scaled_random"), MODEL_COLOR, style, "dash"),
    ]
    layout = base_layout(
        t("models.var_title", t=res.n_tokens),
        style,
        460 if style.present else 400,
        xaxis=dict(title=dict(text=t("models.axis_layer")), dtick=max(1, len(x) // 15)),
        yaxis=dict(
            title=dict(text=t("models.var_axis")),
            type="log",
            **log_ticks(
                [float(v) for col in ("score_var", "scaled_var") for v in tab[col]] + [rnd.score_var, rnd.scaled_var]
            ),
        ),
        legend=dict(orientation="h", yanchor="top", y=-0.22, x=0),
    )
    return plain_figure(data, layout, style)


def peak_figure(res: ScaleResult, style: Style = Style()) -> go.Figure:
    """Per layer (0..1): the mean largest weight, the share of saturated rows and the normalised entropy,
    with the seeded random layer's as dashed lines of the same colours."""
    tab, rnd = res.table, res.random.iloc[0]
    x = [int(v) for v in tab.layer]
    span = [x[0], x[-1]] if len(x) > 1 else [x[0] - 0.5, x[0] + 0.5]
    t = style.t
    data = []
    for col, color in PEAK_COLORS.items():
        data.append(_line(x, [float(v) for v in tab[col]], t(f"models.peak_{col}"), color, style))
    for col, color in PEAK_COLORS.items():
        data.append(
            _line(
                span, [float(rnd[col])] * 2, t("models.random_of", what=t(f"models.peak_{col}")), color, style, "dash"
            )
        )
    layout = base_layout(
        t("models.peak_title", t=res.n_tokens),
        style,
        460 if style.present else 400,
        xaxis=dict(title=dict(text=t("models.axis_layer")), dtick=max(1, len(x) // 15)),
        yaxis=dict(title=dict(text=t("models.peak_axis")), range=[0, 1.05]),
        legend=dict(orientation="h", yanchor="top", y=-0.22, x=0),
    )
    return plain_figure(data, layout, style)


def slide_labels(fig: go.Figure, plot_px: tuple[float, float], style: Style) -> go.Figure:
    """A heat map ``fig`` (labels as arrays of ticks on category axes) for a slide, whose height follows the screen:
    its plot gets about ``plot_px`` = (width, height) px there, not what the figure planned. Every label at the
    slide's font (20 px), thinned to every k-th where its neighbours would touch (:data:`SLIDE_PITCH`),
    and each axis thinned here says in its title how many labels it shows (one the builder thinned already is said
    in the chart's title). The top margin holds the title above the first row's label (:func:`title_room`)."""
    plain = fig.__dict__.get("_plain")
    data, layout = (
        (plain[0], plain[1]) if plain is not None else (fig.to_plotly_json()["data"], fig.to_plotly_json()["layout"])
    )
    layout = {**layout, "meta": {**(layout.get("meta") or {}), FONTS_SET: style.font}}
    for letter, span in (("x", plot_px[0]), ("y", plot_px[1])):
        axis = dict(layout.get(f"{letter}axis") or {})
        cats, vals, text = data[0].get(letter), axis.get("tickvals"), axis.get("ticktext")
        if not isinstance(cats, list) or not vals or not text or len(vals) != len(text):
            continue
        at = {c: i for i, c in enumerate(cats)}
        gap = (at.get(vals[1], 1) - at.get(vals[0], 0)) if len(vals) > 1 else 1  # the builder's own thinning
        k = max(1, math.ceil(SLIDE_PITCH * style.font / (span / max(len(cats), 1) * max(gap, 1))))
        axis.update(tickvals=vals[::k], ticktext=text[::k], tickfont=dict(size=style.font))
        if k > 1:  # thinned here (the builder's own thinning, k == 1 here, its title already says)
            title = dict(axis.get("title") or {})
            word = str(title.get("text") or "").split(" (", 1)[0].split("（", 1)[0]
            axis["title"] = {**title, "text": style.t("models.slide_every", what=word, k=k * gap)}
        layout[f"{letter}axis"] = axis
    reserve_margins({"data": data, "layout": layout})
    layout["margin"] = {
        **layout.get("margin", {}),
        "t": max(layout.get("margin", {}).get("t", 0), title_room(layout, style)),
    }
    return PlainFigure(data=data, layout=layout)


def title_room(layout: dict, style: Style) -> int:
    """The top margin a slide's map needs: plotly centres the title (its lines, about 1.35 × its font each) in the
    margin, and the first row's label, at the slide's font, reaches half a font above the plot, with 2 px between."""
    title = layout.get("title") or {}
    text = str(title.get("text") or "") if isinstance(title, dict) else str(title)
    if not text:
        return 0
    size = float(((title.get("font") or {}).get("size") if isinstance(title, dict) else None) or style.font + 1)
    lines = text.count("<br>") + 1
    return math.ceil(lines * 1.35 * size + style.font + 4)


def label_step(n: int, span_px: float, style: Style) -> int:
    """Every how many of ``n`` labels along ``span_px`` px a slide shows, each :data:`SLIDE_PITCH` fonts apart."""
    return max(1, math.ceil(SLIDE_PITCH * style.font / (span_px / max(n, 1))))


def head_figure(
    weights: np.ndarray,
    labels: tuple[list[str], list[str]],
    title: str,
    scale: tuple[str, float],
    kv: int,
    style: Style,
    room: tuple[float, float] | None = None,
) -> go.Figure:
    """One head's map ``weights`` ``[R, C]`` (NaN: masked, drawn grey), framed in its KV head's colour, with its row
    and column ``labels`` at the style's font: every label where it fits, else every k-th (the axis title says
    so). ``room``: the (width, height) px a slide gives the plot, whose height follows the screen; on a page
    (None) the plot is :data:`HEAD_PAGE_PX` wide at least and as tall as its rows need, up to
    :data:`HEAD_PAGE_MAX_PX`. ``scale``: the colour bar's label and top."""
    r, c = weights.shape
    rows, cols = labels
    t = style.t
    font = dict(size=style.font)
    plot_h = min(max(r * SLIDE_PITCH * style.font, 300), HEAD_PAGE_MAX_PX)
    width, height = room or (HEAD_PAGE_PX, plot_h)

    def axis(names: list[str], span: float, word: str, rotated: bool) -> dict:
        k = label_step(len(names), span, style)
        return dict(
            type="category",
            tickmode="array",
            tickvals=names[::k],
            ticktext=[short_label(n) for n in names[::k]],
            tickfont=font,
            tickangle=-60 if rotated else 0,
            title=dict(text=word if k == 1 else t("models.slide_every", what=word, k=k), font=font),
            automargin=True,
            showgrid=False,
            zeroline=False,
        )

    trace = dict(
        type="heatmap",
        z=np.asarray(weights, dtype=np.float32),
        x=cols,
        y=rows,
        coloraxis="coloraxis",
        hoverongaps=False,
        hovertemplate=f"{t('fig.query')} %{{y}}<br>{t('fig.key')} %{{x}}<br>%{{z:.4f}}<extra></extra>",
    )
    # the plot's edges in the KV head's colour: the axis lines on all four sides
    frame = dict(showline=True, mirror=True, linecolor=group_color(kv), linewidth=4 if style.present else 3)
    layout = dict(
        title=dict(text=title, font=dict(size=style.font + 1)),
        font=font,
        margin=dict(l=10, r=10, t=80 if style.present else 60, b=10),
        plot_bgcolor=MASK_GREY,  # a masked (NaN) cell shows the plot's background
        hoverlabel=dict(font=dict(size=max(12, style.font - 2))),
        coloraxis=dict(
            colorscale=style.weight_scale,
            cmin=0.0,
            cmax=float(scale[1]),
            colorbar=dict(title=dict(text=scale[0], font=font), tickfont=font, thickness=14),
        ),
        xaxis={**axis(cols, width, t("fig.key"), rotated=True), "range": [-0.5, c - 0.5], **frame},
        yaxis={**axis(rows, height, t("fig.query"), rotated=False), "range": [r - 0.5, -0.5], **frame},
        meta={FONTS_SET: style.font},
    )
    reserve_margins({"data": [trace], "layout": layout})
    layout["height"] = int(plot_h + layout["margin"]["t"] + layout["margin"]["b"])  # a slide's follows the screen
    return PlainFigure(data=[trace], layout=layout)
