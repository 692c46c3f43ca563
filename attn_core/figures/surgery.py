"""Figures of the surgery page: what one change to a trained model costs (quality against KV heads, the score
scale, each head silenced, the position in an evicted cache), its maps beside the original's, and a model card's
KV cache against the sequence length.

Builders take numbers and the words already written in the user's language (the view model chooses them from
the measured numbers); the maps go through :func:`attn_core.figures.heatmaps.heatmap_grid`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go

from attn_core.figures.base import GROUP_COLORS, Style, base_layout, group_color, plain_figure, slide_title
from attn_core.figures.heatmaps import HeadGrid, heatmap_grid
from attn_core.figures.kv import METHOD_STYLE
from attn_core.figures.memory import byte_ticks_log

ORIGINAL_COLOR = "#222222"
#: one colour per score-scale factor, light to dark from ×¼ to no scale at all (Okabe-Ito hues)
FACTOR_COLORS = ("#56B4E9", "#0072B2", "#E69F00", "#D55E00", "#CC79A7")
SINK_COLORS = {0: "#D55E00", 4: "#0072B2"}  # the eviction without sinks, and StreamingLLM's four
ROLE_PATTERNS = {"previous_token": "/", "induction": "x"}  # a head's role, as the bars' hatching


def _title(text: str, style: Style) -> str:
    """A chart's title; on a slide broken after its colon when a line would not fit (26 px type)."""
    return slide_title(text) if style.present else text


def _margin(title: str, style: Style) -> dict:
    """The margins of a chart whose title has ``title.count("<br>")`` more lines than one."""
    lines = title.count("<br>")
    return dict(l=10, r=10, t=(80 + 34 * lines) if style.present else (60 + 22 * lines), b=10)


def _height(style: Style, normal: int = 380, slide: int = 460) -> int:
    return slide if style.present else normal


def _legend(style: Style) -> dict:
    """A horizontal legend under the x-axis title (a slide pins it to the chart's bottom edge)."""
    return dict(orientation="h", yanchor="top", y=-0.24 if style.present else -0.2, x=0, font=dict(size=style.font))


def _short_number(v: float) -> str:
    """A tick label: 20, 500, 2k, 50k, 1M."""
    for div, unit in ((1e6, "M"), (1e3, "k")):
        if v >= div:
            return f"{v / div:g}{unit}"
    return f"{v:g}"


def log_ticks(values: Sequence[float], most: int = 6) -> dict:
    """Explicit ticks of a log axis over ``values`` (1, 2 and 5 times the powers of 10, or only the powers when those
    are too many), each labelled at the axis's own font: plotly's own log ticks label 2 and 5 in a smaller font."""
    rng = _log_range(values)
    if rng is None:
        return {}
    lo, hi = 10 ** rng[0], 10 ** rng[1]
    powers = range(math.floor(rng[0]), math.ceil(rng[1]) + 1)
    ticks = [m * 10**p for p in powers for m in (1, 2, 5) if lo <= m * 10**p <= hi]
    if len(ticks) > most:
        ticks = [10**p for p in powers if lo <= 10**p <= hi]
    if len(ticks) < 2:
        ticks = [m * 10**p for p in powers for m in range(1, 10) if lo <= m * 10**p <= hi][:: 2 if hi / lo > 4 else 1]
    return dict(type="log", range=rng, tickmode="array", tickvals=ticks, ticktext=[_short_number(v) for v in ticks])


def _log_range(values: Sequence[float]) -> list[float] | None:
    finite = [v for v in values if v is not None and math.isfinite(v) and v > 0]
    if not finite:
        return None
    lo, hi = math.log10(min(finite)), math.log10(max(finite))
    pad = max(0.15, 0.08 * (hi - lo))
    return [lo - pad, hi + pad]


def _note(text: str, y: float, style: Style, log: bool = False) -> dict:
    """A label at the right end of a horizontal line at ``y`` (the original model's value), over a light box; on a
    log axis an annotation's ``y`` is the value's log10 (a shape's is the value itself)."""
    return dict(
        xref="paper",
        x=1,
        xanchor="right",
        yref="y",
        y=math.log10(y) if log else y,
        yanchor="bottom",
        showarrow=False,
        text=text,
        font=dict(size=style.font, color=ORIGINAL_COLOR),
        bgcolor="rgba(255,255,255,0.85)",
    )


# ---------------------------------------------------------------- KV heads
@dataclass(frozen=True)
class KvChart:
    """Quality after pooling to each number of KV heads (``labels``, one category each), one bar per method.

    ``values[i][j]``: the quality of category ``i`` by ``methods[j]`` (NaN: not measured yet); ``original`` the
    unchanged model's, drawn as a line; ``log_y`` for a perplexity; ``chosen`` ``(i, j)``: the setting the page
    shows, outlined; ``method_names`` the legend's words."""

    labels: tuple[str, ...]
    methods: tuple[str, ...]
    method_names: tuple[str, ...]
    values: tuple[tuple[float, ...], ...]
    original: float | None
    original_name: str
    title: str
    x_title: str
    y_title: str
    log_y: bool
    chosen: tuple[int, int] | None = None


def kv_quality_figure(c: KvChart, style: Style = Style()) -> go.Figure:
    data = []
    for j, (method, name) in enumerate(zip(c.methods, c.method_names, strict=True)):
        ys = [row[j] for row in c.values]
        widths = [3 if c.chosen == (i, j) else 0.5 for i in range(len(c.labels))]
        data.append(
            dict(
                type="bar",
                x=list(c.labels),
                y=[None if not math.isfinite(v) else v for v in ys],
                name=name,
                marker=dict(color=METHOD_STYLE[method]["color"], line=dict(color=ORIGINAL_COLOR, width=widths)),
                hovertemplate=f"{name}<br>%{{x}}<br>%{{y:.4g}}<extra></extra>",
            )
        )
    shapes, annotations = [], []
    if c.original is not None and math.isfinite(c.original):
        shapes.append(
            dict(type="line", xref="paper", x0=0, x1=1, yref="y", y0=c.original, y1=c.original, layer="above")
            | dict(line=dict(color=ORIGINAL_COLOR, width=3 if style.present else 2, dash="dash"))
        )
        annotations.append(_note(f"{c.original_name}: {c.original:.4g}", c.original, style, c.log_y))
    all_values = [v for row in c.values for v in row] + [c.original or float("nan")]
    y_axis = dict(title=dict(text=c.y_title))
    if c.log_y:
        y_axis.update(log_ticks(all_values))
    else:
        finite = [v for v in all_values if math.isfinite(v)]
        y_axis.update(range=[0, max(finite + [1.0]) * 1.12])
    layout = base_layout(
        _title(c.title, style),
        style,
        _height(style),
        margin=_margin(_title(c.title, style), style),
        barmode="group",
        xaxis=dict(title=dict(text=c.x_title), type="category"),
        yaxis=y_axis,
        shapes=shapes,
        annotations=annotations,
        legend=_legend(style),
    )
    return plain_figure(data, layout, style)


# ---------------------------------------------------------------- the score scale
@dataclass(frozen=True)
class ScaleChart:
    """Quality at each factor on the model's own scale (``factors``, > 0; the last may be "no scale at all",
    which is ``1 / scale``), with their tick words; ``chosen`` the factor the page shows (an index)."""

    factors: tuple[float, ...]
    ticks: tuple[str, ...]
    values: tuple[float, ...]
    title: str
    x_title: str
    y_title: str
    log_y: bool
    chosen: int | None = None


def scale_quality_figure(c: ScaleChart, style: Style = Style()) -> go.Figure:
    xs = [math.log2(f) for f in c.factors]
    ys = [v if math.isfinite(v) else None for v in c.values]
    size = 14 if style.present else 10
    data = [
        dict(
            type="scatter",
            x=xs,
            y=ys,
            mode="lines+markers",
            name=c.y_title,
            line=dict(color="#0072B2", width=4 if style.present else 2.5),
            marker=dict(size=size, color="#0072B2"),
            customdata=list(c.ticks),
            hovertemplate="×%{customdata}<br>%{y:.4g}<extra></extra>",
            showlegend=False,
        )
    ]
    if c.chosen is not None and ys[c.chosen] is not None:
        data.append(
            dict(
                type="scatter",
                x=[xs[c.chosen]],
                y=[ys[c.chosen]],
                mode="markers",
                marker=dict(size=size + 10, color="rgba(0,0,0,0)", line=dict(color=ORIGINAL_COLOR, width=3)),
                hoverinfo="skip",
                showlegend=False,
            )
        )
    y_axis = dict(title=dict(text=c.y_title))
    if c.log_y:
        y_axis.update(log_ticks(c.values))
    else:
        y_axis.update(range=[0, 1.05])
    layout = base_layout(
        _title(c.title, style),
        style,
        _height(style),
        margin=_margin(_title(c.title, style), style),
        xaxis=dict(title=dict(text=c.x_title), tickmode="array", tickvals=xs, ticktext=list(c.ticks), zeroline=False),
        yaxis=y_axis,
        showlegend=False,
    )
    return plain_figure(data, layout, style)


@dataclass(frozen=True)
class LayerStats:
    """Per layer, for each setting (``names``): the mean largest weight and the mean normalised entropy of the rows;
    ``chosen`` (an index of ``names``) is drawn thicker, the first is the original model."""

    layers: tuple[int, ...]
    names: tuple[str, ...]
    max_weight: tuple[tuple[float, ...], ...]
    entropy: tuple[tuple[float, ...], ...]
    titles: tuple[str, str]
    title: str
    x_title: str
    chosen: int | None = None


def layer_stats_figure(c: LayerStats, style: Style = Style()) -> go.Figure:
    """Two panels side by side over the layers: the largest weight and the entropy, one line per setting."""
    data = []
    wide, thin = (5, 2.5) if style.present else (3.5, 1.5)
    for i, name in enumerate(c.names):
        color = ORIGINAL_COLOR if i == 0 else FACTOR_COLORS[(i - 1) % len(FACTOR_COLORS)]
        width = wide if i in (0, c.chosen) else thin
        for axis, values in (("", c.max_weight[i]), ("2", c.entropy[i])):
            data.append(
                dict(
                    type="scatter",
                    x=list(c.layers),
                    y=[v if math.isfinite(v) else None for v in values],
                    xaxis=f"x{axis}",
                    yaxis=f"y{axis}",
                    mode="lines",
                    name=name,
                    legendgroup=name,
                    showlegend=axis == "",
                    line=dict(color=color, width=width, dash="solid" if i in (0, c.chosen) else "dot"),
                    hovertemplate=f"{name}<br>L%{{x}}: %{{y:.3f}}<extra></extra>",
                )
            )
    dtick = max(1, len(c.layers) // 6)
    x_axis = dict(title=dict(text=c.x_title), dtick=dtick, zeroline=False)
    gap = 0.16
    layout = base_layout(
        _title(c.title, style),
        style,
        _height(style, 420, 500),
        margin=_margin(_title(c.title, style), style),
        xaxis=dict(x_axis, domain=[0, 0.5 - gap / 2]),
        xaxis2=dict(x_axis, domain=[0.5 + gap / 2, 1], anchor="y2"),
        yaxis=dict(range=[0, 1.05], title=dict(text=c.titles[0])),
        yaxis2=dict(range=[0, 1.05], title=dict(text=c.titles[1]), anchor="x2"),
        legend=_legend(style),
    )
    return plain_figure(data, layout, style)


# ---------------------------------------------------------------- ablation
@dataclass(frozen=True)
class AblationChart:
    """How much silencing each head of one layer hurts (``values``, one per head), heads coloured by KV group
    (``groups``), a role per head (``roles``: "" or a key of :data:`ROLE_PATTERNS`, named by ``role_names``) and
    ``chosen`` heads outlined."""

    heads: tuple[int, ...]
    values: tuple[float, ...]
    groups: tuple[int, ...]
    roles: tuple[str, ...]
    role_names: dict[str, str]
    head_word: str
    title: str
    x_title: str
    y_title: str
    chosen: tuple[int, ...] = ()


def ablation_figure(c: AblationChart, style: Style = Style()) -> go.Figure:
    labels = [str(h) for h in c.heads]
    ys = [v if math.isfinite(v) else None for v in c.values]
    data = [
        dict(
            type="bar",
            x=labels,
            y=ys,
            name=c.y_title,
            showlegend=False,
            marker=dict(
                color=[group_color(g) for g in c.groups],
                line=dict(color=ORIGINAL_COLOR, width=[3 if h in c.chosen else 0.5 for h in c.heads]),
                pattern=dict(
                    shape=[ROLE_PATTERNS.get(r, "") for r in c.roles], fgcolor="#ffffff", size=10, solidity=0.35
                ),
            ),
            customdata=[[g, c.role_names.get(r, "")] for g, r in zip(c.groups, c.roles, strict=True)],
            hovertemplate=f"{c.head_word} %{{x}} · KV %{{customdata[0]}}<br>%{{customdata[1]}}"
            "<br>%{y:.4g}<extra></extra>",
        )
    ]
    for role, shape in ROLE_PATTERNS.items():  # legend entries for the hatching of the roles present
        if role in c.roles:
            data.append(
                dict(
                    type="bar",
                    x=[labels[0]],
                    y=[None],
                    name=c.role_names[role],
                    marker=dict(color="#8a8a8a", pattern=dict(shape=shape, fgcolor="#ffffff", size=10, solidity=0.35)),
                    hoverinfo="skip",
                )
            )
    finite = [v for v in ys if v is not None]
    layout = base_layout(
        _title(c.title, style),
        style,
        _height(style),
        margin=_margin(_title(c.title, style), style),
        barmode="overlay",
        xaxis=dict(title=dict(text=c.x_title), type="category"),
        yaxis=dict(title=dict(text=c.y_title), range=[0, max(finite + [1e-6]) * 1.12], nticks=5),
        legend=_legend(style),
        showlegend=any(r in ROLE_PATTERNS for r in c.roles),
    )
    return plain_figure(data, layout, style)


# ---------------------------------------------------------------- eviction
@dataclass(frozen=True)
class EvictionChart:
    """Perplexity against the position (a running window of tokens), one line per setting (``names``; the first
    the full cache), ``starts`` the position from which each evicted cache drops tokens (None for the full one)."""

    positions: tuple[int, ...]
    names: tuple[str, ...]
    sinks: tuple[int | None, ...]
    curves: tuple[tuple[float, ...], ...]
    starts: tuple[int | None, ...]
    marks: tuple[tuple[int, str], ...]
    title: str
    x_title: str
    y_title: str


def eviction_figure(c: EvictionChart, style: Style = Style()) -> go.Figure:
    data = []
    for name, sinks, ys in zip(c.names, c.sinks, c.curves, strict=True):
        color = ORIGINAL_COLOR if sinks is None else SINK_COLORS.get(sinks, GROUP_COLORS[2])
        data.append(
            dict(
                type="scatter",
                x=list(c.positions),
                y=[v if math.isfinite(v) else None for v in ys],
                mode="lines",
                name=name,
                line=dict(color=color, width=4 if style.present else 2.5, dash="dash" if sinks is None else "solid"),
                hovertemplate=f"{name}<br>%{{x}}: %{{y:.4g}}<extra></extra>",
            )
        )
    shapes, annotations = [], []
    for x, text in c.marks:  # where a cache is full and starts to drop tokens; a local layer's window
        shapes.append(
            dict(type="line", xref="x", x0=x, x1=x, yref="paper", y0=0, y1=1, line=dict(color="#8a8a8a", dash="dot"))
        )
        annotations.append(
            dict(
                xref="x",
                x=x,
                xanchor="left",
                yref="paper",
                y=1,
                yanchor="top",
                showarrow=False,
                text=text,
                font=dict(size=style.font, color="#555555"),
                bgcolor="rgba(255,255,255,0.85)",
            )
        )
    every = [v for ys in c.curves for v in ys]
    layout = base_layout(
        _title(c.title, style),
        style,
        _height(style),
        margin=_margin(_title(c.title, style), style),
        xaxis=dict(title=dict(text=c.x_title), zeroline=False),
        yaxis=dict(title=dict(text=c.y_title), **log_ticks(every)),
        shapes=shapes,
        annotations=annotations,
        legend=_legend(style),
    )
    return plain_figure(data, layout, style)


# ---------------------------------------------------------------- a model card's cache
@dataclass(frozen=True)
class CacheChart:
    """A model card's KV cache (bytes) at each length of ``lengths``; ``full``: the same with every layer global
    (None when no layer slides); ``chosen``: the length the page's slider set, marked."""

    lengths: tuple[int, ...]
    cache: tuple[int, ...]
    full: tuple[int, ...] | None
    chosen: int
    chosen_bytes: int
    names: tuple[str, str]
    title: str
    x_title: str
    y_title: str
    tick_words: tuple[str, ...]


def card_cache_figure(c: CacheChart, style: Style = Style()) -> go.Figure:
    width = 4 if style.present else 2.5
    data = [
        dict(
            type="scatter",
            x=list(c.lengths),
            y=list(c.cache),
            mode="lines",
            name=c.names[0],
            line=dict(color="#0072B2", width=width),
            hovertemplate="%{x:,} → %{y:,} B<extra></extra>",
        )
    ]
    if c.full is not None:
        data.append(
            dict(
                type="scatter",
                x=list(c.lengths),
                y=list(c.full),
                mode="lines",
                name=c.names[1],
                line=dict(color="#8a8a8a", width=width, dash="dash"),
                hovertemplate="%{x:,} → %{y:,} B<extra></extra>",
            )
        )
    data.append(
        dict(
            type="scatter",
            x=[c.chosen],
            y=[c.chosen_bytes],
            mode="markers",
            marker=dict(size=16 if style.present else 11, color="#D55E00", line=dict(color="#222222", width=1)),
            showlegend=False,
            hovertemplate="%{x:,} → %{y:,} B<extra></extra>",
        )
    )
    ys = list(c.cache) + list(c.full or ())
    y_vals, y_text = byte_ticks_log(min(ys), max(ys), 6)
    x_vals = [n for n in c.lengths if n & (n - 1) == 0 and round(math.log2(n)) % 2 == 0]
    layout = base_layout(
        _title(c.title, style),
        style,
        _height(style, 360, 440),
        margin=_margin(_title(c.title, style), style),
        xaxis=dict(
            title=dict(text=c.x_title), type="log", tickmode="array", tickvals=x_vals, ticktext=list(c.tick_words)
        ),
        yaxis=dict(title=dict(text=c.y_title), type="log", tickmode="array", tickvals=y_vals, ticktext=y_text),
        legend=_legend(style),
        showlegend=c.full is not None,
    )
    return plain_figure(data, layout, style)


# ---------------------------------------------------------------- maps: the original's beside the changed model's
def pair_maps_figure(
    weights: tuple[np.ndarray, np.ndarray],
    labels: tuple[list[str], list[str]],
    names: tuple[str, str],
    title: str,
    cmax: float,
    value_label: str,
    style: Style = Style(),
) -> go.Figure:
    """One head's weights ``[R, C]`` in the original model and in the changed one, as two panels of one head grid
    (:func:`~attn_core.figures.heatmaps.heatmap_grid`, one colour scale from 0 to ``cmax``), each titled by
    ``names`` instead of its head: the original framed in the first KV group's colour, the change in the second's.
    ``labels`` are the query (row) and key (column) labels."""
    grid = HeadGrid(
        np.stack([np.asarray(w, dtype=np.float32) for w in weights]),
        heads=(0, 1),
        n_heads=2,
        n_kv_heads=2,
        labels_q=list(labels[0]),
        labels_k=list(labels[1]),
        title=title,
        value_label=value_label,
        cmax=cmax,
    )
    fig = heatmap_grid(grid, style)
    state = vars(fig)  # a PlainFigure's own dicts (``fig.layout`` would build the full figure)
    notes = state["_plain"][1].get("annotations", []) if "_plain" in state else fig.layout.annotations
    panel_titles = [a for a in notes if " · KV " in (a["text"] or "")]
    for annotation, name in zip(panel_titles, names, strict=True):
        annotation["text"] = f"<b>{name}</b>"
    return fig
