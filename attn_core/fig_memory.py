"""Plotly figures of the KV-cache page: memory against sequence length, the live decode, prefill against decode.

Bytes are always shown in binary units (KiB = 1024 B, MiB, GiB, TiB), with the
exact byte count in the hover. Builders take plain numbers and numpy arrays.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from .figures import Style
from .memory import MAX_CALC_SEQ_LEN, CacheLayout, binary_unit, format_bytes, format_bytes_exact, format_tokens

#: Okabe-Ito hues, one per cache layout, the same on every chart of the page.
LAYOUT_COLORS = {"MHA": "#D55E00", "GQA": "#0072B2", "MQA": "#009E73", "MLA": "#CC79A7"}
DEVICE_COLOR = "#222222"
WEIGHTS_COLOR = "#8a8a8a"
CACHED_COLOR = "#0072B2"
RECOMPUTE_COLOR = "#D55E00"
FORMULA_COLOR = "#222222"
CUDA_COLOR = "#009E73"
WRONG_COLOR = "#D55E00"


# ---------------------------------------------------------------- axes
def seq_points(max_seq: int = MAX_CALC_SEQ_LEN, per_octave: int = 8) -> np.ndarray:
    """Integer sequence lengths from 1 to ``max_seq``, evenly spaced on a log axis (int64), ``max_seq`` included."""
    octaves = math.log2(max_seq)
    k = np.arange(0, int(math.ceil(octaves * per_octave)) + 1)
    pts = np.unique(np.clip(np.round(2.0 ** (k / per_octave)), 1, max_seq).astype(np.int64))
    return np.unique(np.append(pts, max_seq))


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


def token_ticks(max_seq: int) -> tuple[list[int], list[str]]:
    """Powers of 4 from 1 to ``max_seq`` tokens, labelled 1, 4, 16, ..., 4K, ..., 1M."""
    vals = [4**p for p in range(0, int(math.log(max_seq, 4)) + 1)]
    return vals, [format_tokens(v) for v in vals]


def _base_layout(fig: go.Figure, title: str, style: Style, height: int) -> None:
    fig.update_layout(
        title=dict(text=title, font=dict(size=style.title_font)),
        font=dict(size=style.font),
        height=height,
        margin=dict(l=10, r=10, t=80 if style.present else 60, b=10),
        legend=dict(font=dict(size=max(11, style.font - 1))),
        hoverlabel=dict(font=dict(size=style.font)),
    )


# ---------------------------------------------------------------- memory against sequence length
def layout_name(layout: CacheLayout, style: Style) -> str:
    """Legend text of a layout: ``GQA-8 (this model)``."""
    name = layout.label
    return name + " " + style.t("kvmem.this_model") if layout.native else name


def memory_curves(
    layouts: Sequence[CacheLayout], batch: int, dtype: str, points: np.ndarray, weights: int | None = None
) -> dict[str, np.ndarray]:
    """The numbers behind :func:`memory_figure`: tokens and, per layout, cache bytes (plus weights if given).

    Keys: ``tokens`` and one ``<label> cache (bytes)`` column per layout
    (exact integers, int64), plus ``weights (bytes)`` when ``weights`` is given.
    """
    out: dict[str, np.ndarray] = {"tokens": np.asarray(points, dtype=np.int64)}
    for lay in layouts:
        out[f"{lay.label} cache (bytes)"] = np.array([lay.bytes(int(s), batch, dtype) for s in points], dtype=np.int64)
    if weights is not None:
        out["weights (bytes)"] = np.full(len(points), int(weights), dtype=np.int64)
    return out


def memory_figure(
    layouts: Sequence[CacheLayout],
    *,
    batch: int,
    dtype: str,
    device_bytes: int,
    device_label: str,
    model_name: str,
    weights: int | None = None,
    seq_len: int | None = None,
    max_positions: int | None = None,
    y_log: bool = True,
    style: Style = Style(),
    max_seq: int = MAX_CALC_SEQ_LEN,
) -> go.Figure:
    """Cache memory of each layout against the sequence length (log x, 1 to ``max_seq`` tokens).

    One line per layout (colour by kind, thicker for the model's own), the
    device memory as a horizontal line, and for each layout a marker at the
    longest context that fits the device (after the weights, when
    ``weights`` is given: then every line is weights + cache, stacked on a
    grey weights band). Vertical lines mark ``seq_len`` and ``max_positions``.
    """
    pts = seq_points(max_seq)
    w = int(weights or 0)
    budget = max(0, int(device_bytes) - w)
    fig = go.Figure()
    y_min, y_max = float(device_bytes), float(device_bytes)  # the device line is always in view
    if weights is not None:
        fig.add_trace(
            go.Scatter(
                x=[1, max_seq],
                y=[w, w],
                mode="lines",
                name=style.t("kvmem.weights", size=format_bytes(w)),
                line=dict(color=WEIGHTS_COLOR, width=2),
                fill=None if y_log else "tozeroy",
                fillcolor="rgba(138,138,138,0.25)",
                hovertemplate=style.t("kvmem.weights_hover", exact=format_bytes_exact(w)) + "<extra></extra>",
            )
        )
        y_min = min(y_min, w)
    for lay in layouts:
        cache = np.array([lay.bytes(int(s), batch, dtype) for s in pts], dtype=np.int64)
        total = cache + w
        fits = lay.max_context(budget, batch, dtype)
        fits_text = (
            style.t("kvmem.fits_none")
            if fits == 0
            else style.t("kvmem.fits", n=format_tokens(fits) if fits > max_seq else f"{fits:,}")
        )
        color = LAYOUT_COLORS[lay.kind]
        custom = [format_bytes_exact(int(c)) for c in cache]
        hover = (
            f"<b>{lay.label}</b><br>S = %{{x:,}} {style.t('kvmem.tokens')}<br>{style.t('kvmem.cache')} %{{customdata}}"
        )
        if weights is not None:
            hover += "<br>" + style.t("kvmem.plus_weights") + " %{y:,.0f} B"
        fig.add_trace(
            go.Scatter(
                x=pts,
                y=total.astype(np.float64),
                mode="lines",
                name=f"{layout_name(lay, style)} · {fits_text}",
                line=dict(
                    color=color,
                    width=(5 if style.present else 4) if lay.native else (3 if style.present else 2),
                    dash="solid" if lay.native else "dash",
                ),
                customdata=custom,
                hovertemplate=hover + "<extra></extra>",
                legendgroup=lay.kind,
            )
        )
        y_min = min(y_min, float(total[0]))
        y_max = max(y_max, float(total[-1]))
        if 1 <= fits <= max_seq:
            at = lay.bytes(fits, batch, dtype) + w
            fig.add_trace(
                go.Scatter(
                    x=[fits],
                    y=[float(at)],
                    mode="markers+text",
                    showlegend=False,
                    legendgroup=lay.kind,
                    marker=dict(
                        color=color,
                        size=14 if style.present else 11,
                        symbol="diamond",
                        line=dict(color="white", width=1.5),
                    ),
                    text=[f"{fits:,}"],
                    textposition="top left",
                    textfont=dict(color=color, size=style.font),
                    hovertemplate=(
                        f"<b>{lay.label}</b><br>{style.t('kvmem.max_fit_hover', n=f'{fits:,}')}<br>"
                        f"{format_bytes_exact(int(at))}<extra></extra>"
                    ),
                )
            )
    fig.add_trace(
        go.Scatter(
            x=[1, max_seq],
            y=[float(device_bytes)] * 2,
            mode="lines",
            name=f"{device_label}: {format_bytes(device_bytes)}",
            line=dict(color=DEVICE_COLOR, width=3 if style.present else 2, dash="dot"),
            hovertemplate=f"{device_label}<br>{format_bytes_exact(int(device_bytes))}<extra></extra>",
        )
    )
    xt, xl = token_ticks(max_seq)
    if y_log:
        lo, hi = max(1.0, y_min / 2), y_max * 2
        yv, yl = byte_ticks_log(lo, hi)
        yaxis = dict(type="log", range=[math.log10(lo), math.log10(hi)], tickvals=yv, ticktext=yl)
    else:
        lo, hi = 0.0, y_max * 1.05
        yv, yl = byte_ticks_linear(hi)
        yaxis = dict(type="linear", range=[0, hi], tickvals=yv, ticktext=yl)
    # Vertical markers are traces, not shapes, so their position means the same on log and linear axes.
    # Vertical markers are traces (a line means the same on log and linear axes); their labels are
    # annotations, whose x on a log axis is log10 of the value. S is labelled at the top, the model's
    # max positions at the bottom, so equal values never overlap.
    annotations = []
    for x, text, dash, at_top in (
        (seq_len, f"S = {seq_len:,}" if seq_len else "", "solid", True),
        (
            max_positions,
            style.t("kvmem.max_positions", n=f"{max_positions:,}") if max_positions else "",
            "dashdot",
            False,
        ),
    ):
        if x:
            fig.add_trace(
                go.Scatter(
                    x=[x, x],
                    y=[lo if y_log else 0.0, hi],
                    mode="lines",
                    showlegend=False,
                    hoverinfo="skip",
                    line=dict(color="#555555", width=2 if style.present else 1.5, dash=dash),
                )
            )
            annotations.append(
                dict(
                    x=math.log10(x),
                    y=1.0 if at_top else 0.0,
                    xref="x",
                    yref="paper",
                    text=text,
                    showarrow=False,
                    xanchor="left",
                    yanchor="top" if at_top else "bottom",
                    xshift=4,
                    yshift=-2 if at_top else 2,
                    font=dict(size=max(11, style.font - 1), color="#333333"),
                    bgcolor="rgba(255,255,255,0.85)",
                )
            )
    yaxis["title"] = dict(text=style.t("kvmem.mem_axis_stacked" if weights is not None else "kvmem.mem_axis"))
    title = style.t("kvmem.mem_title", model=model_name, batch=batch, dtype=dtype)
    _base_layout(fig, title, style, 560 if style.present else 500)
    fig.update_layout(
        xaxis=dict(
            type="log",
            range=[0, math.log10(max_seq)],
            tickvals=xt,
            ticktext=xl,
            title=dict(text=style.t("kvmem.seq_axis")),
        ),
        yaxis=yaxis,
        annotations=annotations,
        hovermode="closest",
        legend=dict(orientation="h", yanchor="top", y=-0.16, x=0),
        margin=dict(l=10, r=10, t=90 if style.present else 70, b=10),
        uirevision="kv_memory",
    )
    return fig


# ---------------------------------------------------------------- live decode
def decode_memory_figure(
    seq_len: Sequence[int],
    measured: Sequence[int],
    formula: Sequence[int],
    *,
    x_max: int,
    y_max: int,
    correct: Sequence[int] | None = None,
    cuda: Sequence[int] | None = None,
    allocated: int | None = None,
    style: Style = Style(),
) -> go.Figure:
    """Measured cache bytes (tensor sizes) against the formula, per generated token.

    ``seq_len`` tokens in the cache at each step; ``measured`` from the cache
    tensors; ``formula`` from ``kv_cache_bytes`` for the heads the cache holds.
    With ``correct`` (the repeat_kv mistake) the right-sized cache is drawn too;
    ``cuda`` is the growth of ``torch.cuda.memory_allocated``; ``allocated`` the
    preallocated buffers. Axes are fixed to ``x_max`` tokens and ``y_max`` bytes
    so the chart grows in place while the loop runs.
    """
    div, unit = binary_unit(max(int(y_max), 1))
    x = np.asarray(seq_len, dtype=np.int64)

    def scaled(v: Sequence[int]) -> np.ndarray:
        return np.asarray(v, dtype=np.float64) / div

    def exact(v: Sequence[int]) -> list[str]:
        return [format_bytes_exact(int(b)) for b in v]

    hover = "S = %{x:,}<br>%{customdata}<extra>%{fullData.name}</extra>"
    fig = go.Figure()
    if allocated:
        fig.add_trace(
            go.Scatter(
                x=[0, x_max],
                y=[allocated / div] * 2,
                mode="lines",
                name=style.t("kvmem.allocated"),
                line=dict(color="#888888", width=2, dash="dot"),
                customdata=exact([allocated] * 2),
                hovertemplate=hover,
            )
        )
    if correct is not None:
        fig.add_trace(
            go.Scatter(
                x=x,
                y=scaled(correct),
                mode="lines",
                name=style.t("kvmem.correct_cache"),
                line=dict(color=CACHED_COLOR, width=3, dash="dash"),
                customdata=exact(correct),
                hovertemplate=hover,
            )
        )
    fig.add_trace(
        go.Scatter(
            x=x,
            y=scaled(formula),
            mode="lines",
            name=style.t("kvmem.formula"),
            line=dict(color=FORMULA_COLOR, width=4 if style.present else 3),
            customdata=exact(formula),
            hovertemplate=hover,
        )
    )
    fig.add_trace(
        go.Scatter(
            x=x,
            y=scaled(measured),
            mode="markers",
            name=style.t("kvmem.measured_wrong" if correct is not None else "kvmem.measured"),
            marker=dict(
                color=WRONG_COLOR if correct is not None else CACHED_COLOR,
                size=8 if style.present else 6,
                symbol="circle-open",
                line=dict(width=2),
            ),
            customdata=exact(measured),
            hovertemplate=hover,
        )
    )
    if cuda is not None:
        fig.add_trace(
            go.Scatter(
                x=x,
                y=scaled(cuda),
                mode="lines",
                name=style.t("kvmem.cuda"),
                line=dict(color=CUDA_COLOR, width=2),
                customdata=exact(cuda),
                hovertemplate=hover,
            )
        )
    _base_layout(fig, style.t("kvmem.live_mem_title"), style, 420 if style.present else 380)
    fig.update_layout(
        xaxis=dict(range=[0, x_max * 1.02 + 1], title=dict(text=style.t("kvmem.tokens_in_cache"))),
        yaxis=dict(
            range=[0, y_max / div * 1.08], title=dict(text=style.t("kvmem.bytes_axis", unit=unit)), rangemode="tozero"
        ),
        legend=dict(orientation="h", yanchor="top", y=-0.2, x=0),
        uirevision="kv_live_mem",
    )
    return fig


def decode_time_figure(
    seq_len: Sequence[int],
    cached_ms: Sequence[float],
    recompute_ms: Sequence[float] | None = None,
    *,
    x_max: int,
    repeats: int = 1,
    style: Style = Style(),
) -> go.Figure:
    """Wall time per generated token with the cache and recomputing everything, against the context length.

    The first point of each series is the prefill of the prompt; each point is the best of ``repeats`` runs.
    """
    x = np.asarray(seq_len, dtype=np.int64)
    fig = go.Figure()
    series = [("kvmem.with_cache", cached_ms, CACHED_COLOR)]
    if recompute_ms is not None:
        series.append(("kvmem.recompute", recompute_ms, RECOMPUTE_COLOR))
    for key, values, color in series:
        fig.add_trace(
            go.Scatter(
                x=x,
                y=np.asarray(values, dtype=np.float64),
                mode="lines+markers",
                name=style.t(key),
                line=dict(color=color, width=3 if style.present else 2),
                marker=dict(size=4),
                hovertemplate="S = %{x:,}<br>%{y:.3f} ms<extra>%{fullData.name}</extra>",
            )
        )
    _base_layout(fig, style.t("kvmem.live_time_title", k=repeats), style, 420 if style.present else 380)
    fig.update_layout(
        xaxis=dict(range=[0, x_max * 1.02 + 1], title=dict(text=style.t("kvmem.tokens_in_context"))),
        yaxis=dict(title=dict(text=style.t("kvmem.ms_axis")), rangemode="tozero"),
        legend=dict(orientation="h", yanchor="top", y=-0.2, x=0),
        uirevision="kv_live_time",
    )
    return fig


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
    fig = go.Figure(
        go.Bar(
            x=labels,
            y=ms,
            text=text,
            textposition="outside",
            marker_color=[CACHED_COLOR, RECOMPUTE_COLOR],
            customdata=per,
            cliponaxis=False,
            hovertemplate="%{x}<br>%{y:.4f} ms<br>%{customdata:.4f} ms / token<extra></extra>",
        )
    )
    ratio = decode_s / prefill_s if prefill_s > 0 else float("nan")
    _base_layout(fig, style.t("kvmem.pd_title", n=n_tokens, ratio=f"{ratio:.1f}"), style, 420 if style.present else 360)
    fig.update_layout(
        yaxis=dict(title=dict(text=style.t("kvmem.ms_total_axis")), rangemode="tozero", range=[0, max(ms) * 1.25]),
        xaxis=dict(title=None),
        showlegend=False,
    )
    return fig
