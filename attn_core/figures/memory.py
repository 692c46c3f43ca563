"""Figures of the KV-cache page: memory against sequence length, the layouts compared, the live decode,
prefill against decode.

Bytes are always shown in binary units (KiB = 1024 B, MiB, GiB, TiB), with the
exact byte count in the hover. The builders take the engine's results
(:class:`attn_core.kv.memory.MemoryCurves`), plain numbers and tables; the view model
(:mod:`attn_core.views.kv_cache`) computes them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from attn_core.figures.base import Style, base_layout, plain_figure, slide_title
from attn_core.figures.margins import text_width
from attn_core.runtime.units import binary_unit, format_bytes, format_bytes_exact, format_tokens

if TYPE_CHECKING:
    from attn_core.kv.memory import MemoryCurves

#: Okabe-Ito hues, one per cache layout, the same on every chart of the page.
LAYOUT_COLORS = {"MHA": "#D55E00", "GQA": "#0072B2", "MQA": "#009E73", "MLA-naive": "#56B4E9", "MLA": "#CC79A7"}
#: Darker text where a line colour is too light for text on white (sky blue).
TABLE_TEXT_COLORS = {"MLA-naive": "#1F78B4"}
DEVICE_COLOR = "#222222"
WEIGHTS_COLOR = "#8a8a8a"
CACHED_COLOR = "#0072B2"
RECOMPUTE_COLOR = "#D55E00"
FORMULA_COLOR = "#222222"
CUDA_COLOR = "#009E73"
WRONG_COLOR = "#D55E00"
MARKER_LINE_COLOR = "#555555"
LABEL_OCTAVES = 2.5  # a fit label this close (in doublings) to the axis's end goes left of its marker
#: Plot width (px) a slide's memory chart keeps at 1024 x 768 at least: a marker's label wider than the room right
#: of its line goes left of it.
SLIDE_PLOT_PX = 760
HALF_SLIDE_TITLE = 34  # Latin characters a 26 px title line holds on half a 1024 px slide (two charts side by side)
PHONE_PX = (
    358  # a chart's width on a phone (390 px less the page's padding): what a narrow memory chart is laid out for
)
LABEL_BOX = "rgba(255,255,255,0.85)"  # behind the S notes and the fit labels: lines under them stay readable


# ---------------------------------------------------------------- axes
def _tick_label(value: float) -> str:
    div, unit = binary_unit(value)
    return f"{value / div:g} {unit}"


def byte_ticks_log(lo: float, hi: float, max_ticks: int = 9) -> tuple[list[float], list[str]]:
    """Tick values (powers of 2) and binary-unit labels for a log axis spanning ``lo .. hi`` bytes."""
    p_lo, p_hi = math.floor(math.log2(max(lo, 1))), math.ceil(math.log2(max(hi, 2)))
    for step in (1, 2, 5, 10, 20):
        powers = [p for p in range(p_lo, p_hi + 1) if p % step == 0]
        if len(powers) <= max_ticks:
            break
    vals = [float(2**p) for p in powers]
    return vals, [_tick_label(v) for v in vals]


def byte_ticks_linear(hi: float, max_ticks: int = 8) -> tuple[list[float], list[str]]:
    """Tick values at round binary steps (1, 2, 4, ... x a binary unit) from 0 to ``hi`` bytes, with labels."""
    hi = max(float(hi), 1.0)
    div, _ = binary_unit(hi)
    step = float(div)
    while hi / step > max_ticks:
        step *= 2
    while hi / step < 3 and step > 1:
        step /= 2
    n = int(hi // step) + 1
    vals = [i * step for i in range(n + 1)]
    return vals, ["0"] + [_tick_label(v) for v in vals[1:]]


def token_ticks(max_seq: int, factor: int = 4) -> tuple[list[int], list[str]]:
    """Powers of ``factor`` (4, or 16 for a phone's width) from 1 to ``max_seq`` tokens, labelled 1, 4, 16, ...,
    4K, ..., 1M."""
    vals = [factor**p for p in range(0, int(math.log(max_seq, factor) + 1e-9) + 1)]
    return vals, [format_tokens(v) for v in vals]


def layout_name(label: str, native: bool, style: Style) -> str:
    """Display text of a layout label: ``GQA-8 (this model)``; ``MLA-naive`` is spelled out in the user's language."""
    name = style.t("kvmem.layout_naive") if label == "MLA-naive" else label
    return style.t("kvmem.layout_this_model", name=name) if native else name


# ---------------------------------------------------------------- memory against sequence length
@dataclass(frozen=True)
class MemoryChart:
    """What :func:`memory_figure` writes besides the curves: the model's name, the device line's label,
    the vertical markers (``seq_len`` tokens, the model's ``max_positions``) and the memory axis."""

    model_name: str
    device_label: str
    seq_len: int | None = None
    max_positions: int | None = None
    y_log: bool = True
    narrow: bool = False  # laid out for a phone's width (:data:`PHONE_PX`): fewer ticks, the legend one item a line


def _weights_trace(curves: MemoryCurves, y_log: bool, style: Style) -> dict:
    w, max_seq = int(curves.weights or 0), int(curves.tokens[-1])
    trace = dict(
        type="scatter",
        x=[1, max_seq],
        y=[w, w],
        mode="lines",
        name=style.t("kvmem.weights", size=format_bytes(w)),
        line=dict(color=WEIGHTS_COLOR, width=2),
        fillcolor="rgba(138,138,138,0.25)",
        hovertemplate=style.t("kvmem.weights_hover", exact=format_bytes_exact(w)) + "<extra></extra>",
    )
    if not y_log:
        trace["fill"] = "tozeroy"
    return trace


def _layout_traces(curves: MemoryCurves, style: Style) -> list[dict]:
    """One line per layout (thicker for the model's own) and, where it is on the axis, a marker at the
    longest context that fits (its label: :func:`fit_labels`)."""
    w, max_seq = int(curves.weights or 0), int(curves.tokens[-1])
    wide, thin = (5, 3) if style.present else (4, 2)
    out = []
    for i, lay in enumerate(curves.layouts):
        name, fits, color = layout_name(lay.label, lay.native, style), curves.fits[i], LAYOUT_COLORS[lay.kind]
        if fits is None:  # every layer slides and its windows fit: the cache stops growing below the device
            fits_text = style.t("kvmem.fits_any")
        elif fits == 0:
            fits_text = style.t("kvmem.fits_none")
        else:
            fits_text = style.t("kvmem.fits", tokens=style.count(fits, "token_long"))
        hover = f"<b>{name}</b><br>{style.t('kvmem.seq_hover')} = %{{x:,}}<br>{style.t('kvmem.cache')} %{{customdata}}"
        if curves.weights is not None:
            hover += "<br>" + style.t("kvmem.plus_weights") + " %{y:,.0f} B"
        dash = "solid" if lay.native else ("longdash" if lay.kind == "MLA-naive" else "dash")
        out.append(
            dict(
                type="scatter",
                x=curves.tokens,
                y=(curves.cache[i] + w).astype(np.float64),
                mode="lines",
                name=f"{name} · {fits_text}",
                line=dict(color=color, width=wide if lay.native else thin, dash=dash),
                customdata=[format_bytes_exact(int(c)) for c in curves.cache[i]],
                hovertemplate=hover + "<extra></extra>",
                legendgroup=lay.kind,
            )
        )
        if fits is not None and 1 <= fits <= max_seq:
            at = curves.fit_totals[i]
            fit_hover = style.t("kvmem.max_fit_hover", tokens=style.count(fits, "token_long"))
            out.append(
                dict(
                    type="scatter",
                    x=[fits],
                    y=[float(at)],
                    mode="markers",
                    showlegend=False,
                    legendgroup=lay.kind,
                    marker=dict(
                        color=color,
                        size=14 if style.present else 11,
                        symbol="diamond",
                        line=dict(color="white", width=1.5),
                    ),
                    hovertemplate=f"<b>{name}</b><br>{fit_hover}<br>{format_bytes_exact(at)}<extra></extra>",
                )
            )
    if curves.unwindowed is not None:  # the model's own layout without its window: dashed beside the windowed line
        out.append(_unwindowed_trace(curves, style))
    return out


def _unwindowed_trace(curves: MemoryCurves, style: Style) -> dict:
    """The model's own layout with every layer at every position (no sliding window), thin and dashed."""
    lay = next(lay for lay in curves.layouts if lay.native)
    name = style.t("kvmem.without_window", name=layout_name(lay.label, False, style))
    w = int(curves.weights or 0)
    hover = f"<b>{name}</b><br>{style.t('kvmem.seq_hover')} = %{{x:,}}<br>{style.t('kvmem.cache')} %{{customdata}}"
    return dict(
        type="scatter",
        x=curves.tokens,
        y=(curves.unwindowed + w).astype(np.float64),
        mode="lines",
        name=name,
        line=dict(color=LAYOUT_COLORS[lay.kind], width=3 if style.present else 2, dash="dash"),
        opacity=0.75,
        customdata=[format_bytes_exact(int(c)) for c in curves.unwindowed],
        hovertemplate=hover + "<extra></extra>",
        legendgroup=f"{lay.kind}_full",
    )


def fit_labels(curves: MemoryCurves, y_log: bool, style: Style, seq_len: int = 0) -> list[dict]:
    """The token count at each fit marker on the axis, as annotations in a light box. Neighbours by size take
    alternate sides: above-left and below-right of the marker, the two sides a rising line leaves free; a label
    below-right within :data:`LABEL_OCTAVES` doublings of the axis's end would leave the chart, so it goes
    below-left, where its box keeps it readable over its own line. A marker within :data:`LABEL_OCTAVES`
    doublings right of the ``seq_len`` line keeps its label below: above-left it reached back over the line's
    label at the top (Qwen2.5-7B at S = 131,072: "213,995" over "S = 131,072")."""
    max_seq = int(curves.tokens[-1])
    shown = [i for i, n in enumerate(curves.fits) if n is not None and 1 <= n <= max_seq]
    order = sorted(shown, key=lambda i: curves.fits[i])
    out = []
    for r, i in enumerate(order):
        fits, at = int(curves.fits[i]), float(curves.fit_totals[i])
        if not 1 <= fits <= max_seq:
            continue
        above = r % 2 == 0 and not (seq_len and seq_len < fits <= seq_len * 2**LABEL_OCTAVES)
        right = not above and math.log2(max_seq / fits) >= LABEL_OCTAVES
        out.append(
            dict(
                x=math.log10(fits),
                y=math.log10(at) if y_log else at,
                xref="x",
                yref="y",
                showarrow=False,
                text=f"{fits:,}",
                xanchor="left" if right else "right",
                yanchor="bottom" if above else "top",
                xshift=6 if right else -6,
                yshift=5 if above else -5,
                bgcolor=LABEL_BOX,
                borderpad=1,
                font=dict(color=LAYOUT_COLORS[curves.layouts[i].kind], size=style.font),
            )
        )
    return out


def _y_axis(lo_bytes: float, hi_bytes: float, y_log: bool) -> tuple[dict, tuple[float, float]]:
    """The memory axis from the smallest to the largest value drawn, in binary units, and its span in bytes."""
    if y_log:
        lo, hi = max(1.0, lo_bytes / 2), hi_bytes * 2
        vals, text = byte_ticks_log(lo, hi)
        return dict(type="log", range=[math.log10(lo), math.log10(hi)], tickvals=vals, ticktext=text), (lo, hi)
    hi = hi_bytes * 1.05
    vals, text = byte_ticks_linear(hi)
    return dict(type="linear", range=[0, hi], tickvals=vals, ticktext=text), (0.0, hi)


def _label_left(chart: MemoryChart, x: int, text: str, max_seq: int, style: Style, fits: Sequence[int]) -> bool:
    """Whether a marker's label goes left of its line: on a phone's width in the axis's right half; on a slide
    when it is wider than the room right of its line (:data:`SLIDE_PLOT_PX`) or, at the top, when a fit label
    (drawn above-left of its marker, near the device line) lies within :data:`LABEL_OCTAVES` doublings right of it."""
    share = math.log(x) / math.log(max(max_seq, 2))
    if chart.narrow:
        return share > 0.5
    if not style.present or x < 8:  # a page has room; a line near the axis's start keeps its label right
        return False
    if text_width(text, style.font) + 8 > (1 - share) * SLIDE_PLOT_PX:
        return True
    return any(x < f <= x * 2**LABEL_OCTAVES for f in fits)


def _vertical_markers(
    chart: MemoryChart, y_range: tuple[float, float], max_seq: int, style: Style, fits: Sequence[int] = ()
) -> tuple[list[dict], list[dict]]:
    """Lines at ``seq_len`` (labelled at the top) and the model's ``max_positions`` (at the bottom, so equal
    values never overlap), as traces (a line means the same on log and linear axes) and annotations (whose x
    on a log axis is log10 of the value). A label goes left of its line where it would leave the chart or meet
    a fit label (``fits``: the tokens of the fit labels drawn; :func:`_label_left`)."""
    traces, notes = [], []
    max_text = style.t("kvmem.max_positions", n=f"{chart.max_positions:,}") if chart.max_positions else ""
    for x, text, dash, top in (
        (chart.seq_len, f"S = {chart.seq_len:,}" if chart.seq_len else "", "solid", True),
        (chart.max_positions, max_text, "dashdot", False),
    ):
        if not x:
            continue
        traces.append(
            dict(
                type="scatter",
                x=[x, x],
                y=list(y_range),
                mode="lines",
                showlegend=False,
                hoverinfo="skip",
                line=dict(color=MARKER_LINE_COLOR, width=2 if style.present else 1.5, dash=dash),
            )
        )
        left = _label_left(chart, x, text, max_seq, style, fits if top else ())
        notes.append(
            dict(
                x=math.log10(x),
                y=1.0 if top else 0.0,
                xref="x",
                yref="paper",
                text=text,
                showarrow=False,
                xanchor="right" if left else "left",
                yanchor="top" if top else "bottom",
                xshift=-4 if left else 4,
                yshift=-2 if top else 2,
                font=dict(size=style.font if style.present else max(11, style.font - 1), color="#333333"),
                bgcolor=LABEL_BOX,
            )
        )
    return traces, notes


def memory_figure(curves: MemoryCurves, chart: MemoryChart, style: Style = Style()) -> go.Figure:
    """Cache memory of each layout against the sequence length (log x, 1 to the last of ``curves.tokens``).

    One line per layout (colour by kind, thicker for the model's own), the device
    memory as a horizontal line, and for each layout a marker at the longest
    context that fits the device (after the weights, when there are any: then
    every line is weights + cache, stacked on a grey weights band). Vertical
    lines mark ``chart.seq_len`` and ``chart.max_positions``.
    """
    max_seq, dev = int(curves.tokens[-1]), float(curves.device_bytes)
    data = [] if curves.weights is None else [_weights_trace(curves, chart.y_log, style)]
    data += _layout_traces(curves, style)
    data.append(
        dict(
            type="scatter",
            x=[1, max_seq],
            y=[dev, dev],
            mode="lines",
            name=style.t("kvmem.device_line", label=chart.device_label, size=format_bytes(curves.device_bytes)),
            line=dict(color=DEVICE_COLOR, width=3 if style.present else 2, dash="dot"),
            hovertemplate=f"{chart.device_label}<br>{format_bytes_exact(curves.device_bytes)}<extra></extra>",
        )
    )
    w = int(curves.weights or 0)
    lows = [dev, *(curves.cache[:, 0] + w).tolist()] + ([w] if curves.weights is not None else [])
    highs = [dev, *(curves.cache[:, -1] + w).tolist()]  # the device line is always in view
    if curves.unwindowed is not None:
        highs.append(int(curves.unwindowed[-1]) + w)
    yaxis, span = _y_axis(float(min(lows)), float(max(highs)), chart.y_log)
    drawn = [int(f) for f in curves.fits if f is not None and 1 <= f <= max_seq]
    lines, notes = _vertical_markers(chart, span, max_seq, style, drawn)
    data += lines
    yaxis["title"] = dict(text=style.t("kvmem.mem_axis_stacked" if curves.weights is not None else "kvmem.mem_axis"))
    xt, xl = token_ticks(max_seq, 16 if chart.narrow else 4)
    title = style.t("kvmem.mem_title", model=chart.model_name, batch=curves.batch, dtype=curves.dtype)
    legend, bottom = dict(orientation="h", yanchor="top", y=-0.16, x=0), 10
    if chart.narrow:  # the legend pinned under the axis title, as many rows as its items take on a phone
        names = [t["name"] for t in data if t.get("showlegend", True) and t.get("name")]
        rows = _rows([48 + text_width(n, style.font) for n in names], PHONE_PX - 20)
        legend = dict(orientation="h", yref="container", yanchor="bottom", y=0, x=0)
        bottom = 70 + rows * int(1.3 * style.font + 13)
    layout = base_layout(
        title,
        style,
        (560 if style.present else 500) + (bottom - 10 if chart.narrow else 0),
        xaxis=dict(
            type="log",
            range=[0, math.log10(max_seq)],
            tickvals=xt,
            ticktext=xl,
            title=dict(text=style.t("kvmem.seq_axis_short" if chart.narrow else "kvmem.seq_axis")),
        ),
        yaxis=yaxis,
        annotations=notes + fit_labels(curves, chart.y_log, style, chart.seq_len),
        hovermode="closest",
        uirevision="kv_memory",
        legend=legend,
        margin=dict(l=10, r=10, t=90 if style.present else 70, b=bottom),
    )
    return plain_figure(data, layout, style)


def _rows(widths: Sequence[float], width: float) -> int:
    """Rows a horizontal legend of items ``widths`` px wide takes in ``width`` px (plotly fills a row, then wraps)."""
    rows, used = 1, 0.0
    for w in widths:
        if used and used + w > width:
            rows, used = rows + 1, 0.0
        used += w
    return rows


# ---------------------------------------------------------------- the layouts compared
def comparison_figure(table: pd.DataFrame, title: str, kinds: Sequence[str], style: Style = Style()) -> go.Figure:
    """A table of the layouts (the page's table) drawn as a plotly table; ``kinds`` colour each layout's name."""
    n_cols = len(table.columns)
    color = [TABLE_TEXT_COLORS.get(k, LAYOUT_COLORS.get(k, "#222222")) for k in kinds]
    font_color = [color] + [["#222222"] * len(table)] * (n_cols - 1)
    align = ["left"] + ["right"] * (n_cols - 1)
    head_h, row_h = 2.4 * style.font + 12, 1.6 * style.font + 10
    data = [
        dict(
            type="table",
            columnwidth=[1.7, 1.7, 1.0, 1.0, 1.5, 0.8, 1.7][:n_cols],
            header=dict(
                values=[f"<b>{c}</b>" for c in table.columns],
                fill=dict(color="#e9eef4"),
                line=dict(color="#c8d0d9"),
                align=align,
                font=dict(size=style.font, color="#222222"),
                height=head_h,
            ),
            cells=dict(
                values=[table[c].tolist() for c in table.columns],
                fill=dict(color="white"),
                line=dict(color="#dde3ea"),
                align=align,
                font=dict(size=style.font, color=font_color),
                height=row_h,
            ),
        )
    ]
    top = 80 if style.present else 60
    height = int(top + head_h + len(table) * row_h + 30)
    layout = base_layout(
        title, style, height, margin=dict(l=10, r=10, t=top, b=10), xaxis=dict(visible=False), yaxis=dict(visible=False)
    )
    return plain_figure(data, layout, style)


# ---------------------------------------------------------------- live decode
@dataclass(frozen=True)
class DecodeSeries:
    """The numbers of :func:`decode_memory_figure`, one value per generated token so far.

    ``seq_len`` tokens in the cache at each step; ``measured`` bytes from the
    cache tensors (the first steps' only, or none: a run before or during its
    first steps, whose formula already spans every step); ``formula`` from
    ``kv_cache_bytes`` for the heads the cache holds. ``correct`` (the repeat_kv mistake only) the right-sized cache;
    ``cuda`` the growth of ``torch.cuda.memory_allocated``; ``allocated`` the
    preallocated buffers. The axes span ``x_max`` tokens and ``y_max`` bytes (the
    whole run), so a live chart grows in place.
    """

    seq_len: Sequence[int]
    measured: Sequence[int]
    formula: Sequence[int]
    x_max: int
    y_max: int
    correct: Sequence[int] | None = None
    cuda: Sequence[int] | None = None
    allocated: int | None = None
    formula_name: str | None = None  # the formula line's name when it is not 2·L·B·H·S·d_k·b (a sliding window's)


def decode_memory_figure(s: DecodeSeries, style: Style = Style()) -> go.Figure:
    """Measured cache bytes (tensor sizes) against the formula, per generated token, in one binary unit."""
    div, unit = binary_unit(max(int(s.y_max), 1))
    x = np.asarray(s.seq_len, dtype=np.int64)
    hover = "S = %{x:,}<br>%{customdata}<extra>%{fullData.name}</extra>"

    def line(name: str, xs: object, values: Sequence[int], **how: object) -> dict:
        return dict(
            type="scatter",
            x=xs,
            y=np.asarray(values, dtype=np.float64) / div,
            name=name,
            hovertemplate=hover,
            customdata=[format_bytes_exact(int(b)) for b in values],
            **how,
        )

    wrong = s.correct is not None
    done = x[: len(s.measured)]  # the steps measured so far (none before the run: the formula's prediction alone)
    data = []
    if s.allocated:
        data.append(
            line(
                style.t("kvmem.allocated"),
                [0, s.x_max],
                [s.allocated] * 2,
                mode="lines",
                line=dict(color="#888888", width=2, dash="dot"),
            )
        )
    if wrong:
        data.append(
            line(
                style.t("kvmem.correct_cache"),
                x,
                s.correct,
                mode="lines",
                line=dict(color=CACHED_COLOR, width=3, dash="dash"),
            )
        )
    data.append(
        line(
            s.formula_name or style.t("kvmem.formula"),
            x,
            s.formula,
            mode="lines",
            line=dict(color=FORMULA_COLOR, width=4 if style.present else 3),
        )
    )
    data.append(
        line(
            style.t("kvmem.measured_wrong" if wrong else "kvmem.measured"),
            done,
            s.measured,
            mode="markers",
            marker=dict(
                color=WRONG_COLOR if wrong else CACHED_COLOR,
                size=8 if style.present else 6,
                symbol="circle-open",
                line=dict(width=2),
            ),
        )
    )
    if s.cuda is not None:
        data.append(line(style.t("kvmem.cuda"), done, s.cuda, mode="lines", line=dict(color=CUDA_COLOR, width=2)))
    title = style.t("kvmem.live_mem_title" if len(s.measured) else "kvmem.live_mem_plan")
    layout = base_layout(
        slide_title(title, HALF_SLIDE_TITLE) if style.present else title,  # a slide: two charts side by side
        style,
        480 if style.present else 430,
        margin=dict(l=10, r=10, t=110 if style.present else 60, b=10),  # a slide: the title on two 26 px lines
        xaxis=dict(range=[0, s.x_max * 1.02 + 1], title=dict(text=style.t("kvmem.tokens_in_cache"))),
        yaxis=dict(
            range=[0, s.y_max / div * 1.08], title=dict(text=style.t("kvmem.bytes_axis", unit=unit)), rangemode="tozero"
        ),
        legend=dict(orientation="h", yanchor="top", y=-0.3, x=0),
        uirevision="kv_live_mem",
    )
    return plain_figure(data, layout, style)


def decode_time_figure(
    seq_len: Sequence[int],
    cached_ms: Sequence[float],
    recompute_ms: Sequence[float] | None = None,
    *,
    x_max: int,
    repeats: int = 1,
    style: Style = Style(),
    title: str | None = None,
) -> go.Figure:
    """Wall time per generated token with the cache and recomputing everything, against the context length.

    The first point of each series is the prefill of the prompt; each point is the best of ``repeats`` runs
    (the title says so unless ``title`` is given).
    """
    x = np.asarray(seq_len, dtype=np.int64)
    series = [("kvmem.with_cache", cached_ms, CACHED_COLOR)]
    if recompute_ms is not None:
        series.append(("kvmem.recompute", recompute_ms, RECOMPUTE_COLOR))
    data = [
        dict(
            type="scatter",
            x=x,
            y=np.asarray(values, dtype=np.float64),
            mode="lines+markers",
            name=style.t(key),
            line=dict(color=color, width=3 if style.present else 2),
            marker=dict(size=4),
            hovertemplate="S = %{x:,}<br>%{y:.3f} ms<extra>%{fullData.name}</extra>",
        )
        for key, values, color in series
    ]
    title = title or style.t("kvmem.live_time_title" if repeats > 1 else "kvmem.live_time_title_one", k=repeats)
    layout = base_layout(
        slide_title(title, HALF_SLIDE_TITLE) if style.present else title,  # a slide: two charts side by side
        style,
        420 if style.present else 380,
        margin=dict(l=10, r=10, t=110 if style.present else 60, b=10),  # a slide: the title on two 26 px lines
        xaxis=dict(range=[0, x_max * 1.02 + 1], title=dict(text=style.t("kvmem.tokens_in_context"))),
        yaxis=dict(title=dict(text=style.t("kvmem.ms_axis")), rangemode="tozero"),
        legend=dict(orientation="h", yanchor="top", y=-0.3, x=0),
        uirevision="kv_live_time",
    )
    return plain_figure(data, layout, style)


# ---------------------------------------------------------------- prefill against decode
def prefill_decode_figure(n_tokens: int, prefill_s: float, decode_s: float, style: Style = Style()) -> go.Figure:
    """Bars: total milliseconds to put ``n_tokens`` into the cache in one pass (prefill) and one per pass (decode)."""
    labels = [style.t("kvmem.prefill_bar", n=n_tokens), style.t("kvmem.decode_bar", n=n_tokens)]
    ms = [prefill_s * 1e3, decode_s * 1e3]
    per = [v / n_tokens for v in ms]
    text = [
        style.t("kvmem.bar_text", ms=f"{m:.3g}", per=f"{p:.3g}", rate=f"{n_tokens / (m / 1e3):,.0f}")
        for m, p in zip(ms, per, strict=True)
    ]
    data = [
        dict(
            type="bar",
            x=labels,
            y=ms,
            text=text,
            textposition="outside",
            customdata=per,
            cliponaxis=False,
            marker=dict(color=[CACHED_COLOR, RECOMPUTE_COLOR]),
            hovertemplate="%{x}<br>%{y:.4f} ms<br>%{customdata:.4f} ms / token<extra></extra>",
        )
    ]
    ratio = decode_s / prefill_s if prefill_s > 0 else float("nan")
    layout = base_layout(
        style.t("kvmem.pd_title", n=n_tokens, ratio=f"{ratio:.1f}"),
        style,
        420 if style.present else 360,
        yaxis=dict(title=dict(text=style.t("kvmem.ms_total_axis")), rangemode="tozero", range=[0, max(ms) * 1.25]),
        xaxis=dict(),
        showlegend=False,
    )
    return plain_figure(data, layout, style)
