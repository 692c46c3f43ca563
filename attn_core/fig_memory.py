"""Plotly figures of the KV-cache page: memory against sequence length, the layouts compared, the live decode,
prefill against decode; and :func:`kv_cache_views`, every view of the page for the command-line exporter.

Bytes are always shown in binary units (KiB = 1024 B, MiB, GiB, TiB), with the
exact byte count in the hover. Builders take plain numbers and numpy arrays.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from . import kv_cache
from .config import ConfigError, check_int
from .figures import Style
from .memory import (
    DTYPES,
    MAX_CALC_SEQ_LEN,
    CacheLayout,
    ModelPreset,
    binary_unit,
    cache_layouts,
    dtype_bits,
    format_bytes,
    format_bytes_exact,
    format_tokens,
    kv_cache_bytes,
    load_presets,
    preset_layouts,
    weights_bytes,
)
from .views import View

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
    return style.t("kvmem.layout_native", name=name) if layout.native else name


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
    _base_layout(fig, style.t("kvmem.live_mem_title"), style, 480 if style.present else 430)
    fig.update_layout(
        xaxis=dict(range=[0, x_max * 1.02 + 1], title=dict(text=style.t("kvmem.tokens_in_cache"))),
        yaxis=dict(
            range=[0, y_max / div * 1.08], title=dict(text=style.t("kvmem.bytes_axis", unit=unit)), rangemode="tozero"
        ),
        legend=dict(orientation="h", yanchor="top", y=-0.3, x=0),
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
        legend=dict(orientation="h", yanchor="top", y=-0.3, x=0),
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


# ---------------------------------------------------------------- the page's views (page and exporter)
DEFAULT_MODEL = "llama-2-7b"
DEFAULT_DEVICE_GIB = 80
MAX_DEVICE_GIB = 2048
#: Each step of the live decode is timed this many times and the best is shown.
DECODE_REPEATS = 3
#: Limits of the page's decode controls (tighter than what :mod:`attn_core.kv_cache` accepts).
MAX_DEC_STEPS = 1024
MAX_DEC_PROMPT = 256
MAX_PD_TOKENS = 256
Y_SCALES = ("log", "linear")


def model_layouts(
    model_id: str, n_heads: int, n_kv_heads: int, head_dim: int, n_layers: int
) -> tuple[ModelPreset | None, list[CacheLayout]]:
    """(preset, cache layouts) of a preset id, or ``(None, layouts)`` of the given numbers for ``custom``.

    Raises :class:`ConfigError` for an unknown id or numbers that do not make a model.
    """
    if model_id == "custom":
        return None, cache_layouts(n_layers, n_heads, n_kv_heads, head_dim)
    presets = load_presets()
    if model_id not in presets:
        raise ConfigError(f"model '{model_id}' is not known; use custom or one of: {', '.join(presets)}", "model")
    return presets[model_id], preset_layouts(presets[model_id])


def model_tag(model_id: str, n_heads: int, n_kv_heads: int, head_dim: int, n_layers: int) -> str:
    """File-name part naming the model: the preset id, or ``custom_h8_kv2_d16_L12``."""
    return model_id if model_id != "custom" else f"custom_h{n_heads}_kv{n_kv_heads}_d{head_dim}_L{n_layers}"


def stacked_weights(preset: ModelPreset | None, weights_dtype: str) -> int:
    """Bytes of the preset's weights in ``weights_dtype``; :class:`ConfigError` without a parameter count."""
    if preset is None or preset.n_params is None:
        raise ConfigError("stacking the weights needs a parameter count: pick a model preset", "stack_weights")
    if weights_dtype not in DTYPES:
        raise ConfigError(
            f"weights_dtype {weights_dtype!r} is not known; use one of: {', '.join(DTYPES)}", "weights_dtype"
        )
    return weights_bytes(preset.n_params, weights_dtype)


def device_memory(device: str, device_gib: int | None, style: Style = Style()) -> tuple[int, str]:
    """(bytes, legend label) of the device-memory line.

    On CUDA with no ``device_gib`` the GPU's own total (from torch); else
    ``device_gib`` GiB (default :data:`DEFAULT_DEVICE_GIB`, 1 to :data:`MAX_DEVICE_GIB`).
    """
    if device_gib is None and str(device).startswith("cuda"):
        total = kv_cache.device_total_memory(device)
        if total is not None:
            return total, style.t("kvcache.gpu_label")
    gib = check_int("device_gib", DEFAULT_DEVICE_GIB if device_gib is None else device_gib, 1, MAX_DEVICE_GIB)
    return gib * 1024**3, style.t("kvcache.device_label")


def memory_view(
    layouts: Sequence[CacheLayout],
    *,
    name: str,
    model_name: str,
    batch: int,
    dtype: str,
    seq_len: int,
    device_bytes: int,
    device_label: str,
    weights: int | None = None,
    max_positions: int | None = None,
    y_log: bool = True,
    style: Style = Style(),
) -> View:
    """:func:`memory_figure` with :func:`memory_curves` as its data, named ``name``."""
    fig = memory_figure(
        layouts,
        batch=batch,
        dtype=dtype,
        device_bytes=device_bytes,
        device_label=device_label,
        model_name=model_name,
        weights=weights,
        seq_len=seq_len,
        max_positions=max_positions,
        y_log=y_log,
        style=style,
    )
    return View(name, fig, pd.DataFrame(memory_curves(layouts, batch, dtype, seq_points(), weights)))


def ratio_text(size: int, reference: int) -> str:
    """``size`` as a multiple of ``reference``: ``1×``, ``1/8``, ``1/71.1``."""
    if reference == 0:
        return "–"
    r = size / reference
    return f"{r:.4g}×" if r >= 1 else f"1/{1 / r:.4g}"


def comparison_data(
    layouts: Sequence[CacheLayout], seq_len: int, batch: int, dtype: str, budget_bytes: int
) -> pd.DataFrame:
    """The layouts compared, as exact numbers: one row per layout (MHA first).

    Columns: ``layout``, ``this_model``, ``kv_heads`` (empty for MLA),
    ``kv_lora_rank`` and ``rope_dim`` (MLA only), ``bytes_per_token`` (all
    layers, one sequence), ``seq_len``, ``batch``, ``dtype``, ``cache_bytes``
    (at ``seq_len`` for ``batch``), ``vs_mha`` (cache bytes / MHA's),
    ``budget_bytes`` and ``max_context_tokens`` (the longest context whose cache fits the budget).
    """
    mha = layouts[0].bytes(seq_len, batch, dtype)
    rows = []
    for lay in layouts:
        mla = lay.kind == "MLA"
        size = lay.bytes(seq_len, batch, dtype)
        rows.append(
            {
                "layout": lay.label,
                "this_model": lay.native,
                "kv_heads": pd.NA if mla else lay.n_kv_heads,
                "kv_lora_rank": lay.kv_lora_rank if mla else pd.NA,
                "rope_dim": lay.rope_dim if mla else pd.NA,
                "bytes_per_token": lay.bytes(1, 1, dtype),
                "seq_len": seq_len,
                "batch": batch,
                "dtype": dtype,
                "cache_bytes": size,
                "vs_mha": size / mha if mha else float("nan"),
                "budget_bytes": budget_bytes,
                "max_context_tokens": lay.max_context(budget_bytes, batch, dtype),
            }
        )
    df = pd.DataFrame(rows)
    return df.astype({"kv_heads": "Int64", "kv_lora_rank": "Int64", "rope_dim": "Int64"})


def comparison_table(data: pd.DataFrame, style: Style = Style()) -> pd.DataFrame:
    """:func:`comparison_data` as the page's table: translated headers, binary units, ratios to MHA as text."""
    t = style.t
    mha = int(data["cache_bytes"].iloc[0])
    rows = []
    for r in data.itertuples(index=False):
        rows.append(
            {
                t("kvcache.col_layout"): t("kvmem.layout_native", name=r.layout) if r.this_model else r.layout,
                t("kvcache.col_kv"): str(r.kv_heads) if not pd.isna(r.kv_heads) else f"{r.kv_lora_rank} + {r.rope_dim}",
                t("kvcache.col_per_token"): format_bytes(int(r.bytes_per_token)),
                t("kvcache.col_total", s=f"{int(r.seq_len):,}"): format_bytes(int(r.cache_bytes)),
                t("kvcache.col_bytes"): f"{int(r.cache_bytes):,}",
                t("kvcache.col_vs_mha"): ratio_text(int(r.cache_bytes), mha),
                t("kvcache.col_fits"): f"{int(r.max_context_tokens):,}",
            }
        )
    return pd.DataFrame(rows)


def comparison_figure(table: pd.DataFrame, title: str, kinds: Sequence[str], style: Style = Style()) -> go.Figure:
    """The table of :func:`comparison_table` drawn as a plotly table; ``kinds`` colour each layout's name."""
    n_cols = len(table.columns)
    color = [LAYOUT_COLORS.get(k, "#222222") for k in kinds]
    font_color = [color] + [["#222222"] * len(table)] * (n_cols - 1)
    fig = go.Figure(
        go.Table(
            columnwidth=[1.5, 1.3, 1.0, 1.0, 1.5, 0.8, 1.7],  # the seven columns of comparison_table
            header=dict(
                values=[f"<b>{c}</b>" for c in table.columns],
                fill_color="#e9eef4",
                line_color="#c8d0d9",
                align=["left"] + ["right"] * (n_cols - 1),
                font=dict(size=style.font, color="#222222"),
                height=2.4 * style.font + 12,
            ),
            cells=dict(
                values=[table[c].tolist() for c in table.columns],
                fill_color="white",
                line_color="#dde3ea",
                align=["left"] + ["right"] * (n_cols - 1),
                font=dict(size=style.font, color=font_color),
                height=1.6 * style.font + 10,
            ),
        )
    )
    rows_h = (2.4 * style.font + 12) + len(table) * (1.6 * style.font + 10)
    top = 80 if style.present else 60
    _base_layout(fig, title, style, int(top + rows_h + 30))
    fig.update_layout(
        margin=dict(l=10, r=10, t=top, b=10),
        xaxis=dict(visible=False),
        yaxis=dict(visible=False),
    )
    return fig


def comparison_view(
    layouts: Sequence[CacheLayout],
    *,
    name: str,
    model_name: str,
    seq_len: int,
    batch: int,
    dtype: str,
    budget_bytes: int,
    style: Style = Style(),
) -> View:
    """The layouts compared: the page's table as a figure, with :func:`comparison_data` as its data."""
    data = comparison_data(layouts, seq_len, batch, dtype, budget_bytes)
    title = style.t(
        "kvmem.table_title",
        model=model_name,
        s=f"{seq_len:,}",
        batch=batch,
        dtype=dtype,
        budget=format_bytes(budget_bytes),
    )
    fig = comparison_figure(comparison_table(data, style), title, [lay.kind for lay in layouts], style)
    return View(name, fig, data)


def decode_shape(preset: ModelPreset | None, n_heads: int, n_kv_heads: int, head_dim: int) -> tuple[int, int, int]:
    """(query heads, KV heads, head dim) the live decode runs.

    A preset's own shape (the numbers given are then ignored), or for an MLA
    model its MHA equivalent with values of ``v_head_dim``; without a preset the numbers given.
    """
    if preset is None:
        return n_heads, n_kv_heads, head_dim
    if preset.is_mla:
        return preset.n_heads, preset.n_heads, preset.v_head_dim
    return preset.n_heads, preset.n_kv_heads, preset.head_dim


def decode_config(
    preset: ModelPreset | None,
    n_heads: int,
    n_kv_heads: int,
    head_dim: int,
    *,
    n_layers: int,
    batch: int,
    dtype: str,
    seed: int,
    cache_after_repeat: bool = False,
) -> kv_cache.DecodeConfig:
    """The small decoder of the live decode and of prefill against decode, with the model's attention shape."""
    heads, kv, dim = decode_shape(preset, n_heads, n_kv_heads, head_dim)
    return kv_cache.DecodeConfig(
        n_heads=heads,
        n_kv_heads=kv,
        head_dim=dim,
        n_layers=n_layers,
        batch=batch,
        dtype=dtype,
        seed=seed,
        cache_after_repeat=cache_after_repeat,
    )


def decode_tag(cfg: kv_cache.DecodeConfig) -> str:
    """File-name part naming a decode: ``h32_kv8_d128_L2_b1_fp16`` (``_after_repeat_kv`` for the mistake)."""
    tag = f"h{cfg.n_heads}_kv{cfg.n_kv_heads}_d{cfg.head_dim}_L{cfg.n_layers}_b{cfg.batch}_{cfg.dtype}"
    return tag + ("_after_repeat_kv" if cfg.cache_after_repeat else "")


def decode_figures(
    steps: Sequence[kv_cache.DecodeStep],
    n_total: int,
    cfg: kv_cache.DecodeConfig,
    prompt_len: int,
    *,
    repeats: int = DECODE_REPEATS,
    style: Style = Style(),
) -> tuple[go.Figure, go.Figure]:
    """(memory figure, time figure) of a decode of ``n_total`` steps after ``prompt_len``, for the steps so far.

    The axes span the whole run, so the live charts grow in place.
    """
    x_max = prompt_len + n_total - 1
    y_max = max(
        kv_cache_bytes(cfg.n_layers, cfg.cache_heads, cfg.head_dim, x_max, cfg.batch, cfg.dtype),
        steps[0].allocated_bytes if steps else 0,
    )
    seq = [s.seq_len for s in steps]
    cuda = [s.cuda_bytes for s in steps] if steps and steps[0].cuda_bytes is not None else None
    mem_fig = decode_memory_figure(
        seq,
        [s.cache_bytes for s in steps],
        [s.formula_bytes for s in steps],
        x_max=x_max,
        y_max=y_max,
        correct=[s.correct_bytes for s in steps] if cfg.cache_after_repeat else None,
        cuda=cuda,
        allocated=steps[0].allocated_bytes if steps else None,
        style=style,
    )
    rec = [s.time_recompute_s * 1e3 for s in steps] if steps and steps[0].time_recompute_s is not None else None
    time_fig = decode_time_figure(
        seq, [s.time_cached_s * 1e3 for s in steps], rec, x_max=x_max, repeats=repeats, style=style
    )
    return mem_fig, time_fig


def decode_data(steps: Sequence[kv_cache.DecodeStep]) -> pd.DataFrame:
    """The numbers behind the decode figures, one row per generated token."""
    return pd.DataFrame(
        {
            "step": [s.step for s in steps],
            "tokens in cache": [s.seq_len for s in steps],
            "token (cache)": [s.token for s in steps],
            "token (recompute)": [s.token_recompute for s in steps],
            "measured cache (bytes)": [s.cache_bytes for s in steps],
            "formula (bytes)": [s.formula_bytes for s in steps],
            "correct cache (bytes)": [s.correct_bytes for s in steps],
            "cuda memory_allocated growth (bytes)": [s.cuda_bytes for s in steps],
            "time with cache (ms)": [s.time_cached_s * 1e3 for s in steps],
            "time recompute (ms)": [None if s.time_recompute_s is None else s.time_recompute_s * 1e3 for s in steps],
        }
    )


def decode_views(
    steps: Sequence[kv_cache.DecodeStep],
    n_total: int,
    cfg: kv_cache.DecodeConfig,
    prompt_len: int,
    *,
    repeats: int = DECODE_REPEATS,
    style: Style = Style(),
) -> list[View]:
    """The decode's memory and time figures, both with :func:`decode_data` as their data."""
    mem_fig, time_fig = decode_figures(steps, n_total, cfg, prompt_len, repeats=repeats, style=style)
    data = decode_data(steps)
    tag = decode_tag(cfg)
    return [View(f"kv_decode_memory_{tag}", mem_fig, data), View(f"kv_decode_time_{tag}", time_fig, data)]


def prefill_decode_view(
    timing: kv_cache.PrefillDecodeTiming, cfg: kv_cache.DecodeConfig, style: Style = Style()
) -> View:
    """:func:`prefill_decode_figure` of a measurement, with its totals and per-token times as data."""
    fig = prefill_decode_figure(timing.n_tokens, timing.prefill_s, timing.decode_s, style=style)
    data = pd.DataFrame(
        {
            "phase": ["prefill", "decode"],
            "tokens": [timing.n_tokens] * 2,
            "total (ms)": [timing.prefill_s * 1e3, timing.decode_s * 1e3],
            "per token (ms)": [timing.prefill_per_token_s * 1e3, timing.decode_per_token_s * 1e3],
        }
    )
    return View(f"kv_prefill_decode_{decode_tag(cfg)}_n{timing.n_tokens}", fig, data)


def kv_cache_views(
    model: str = DEFAULT_MODEL,
    n_heads: int = 8,
    n_kv_heads: int = 2,
    head_dim: int = 16,
    n_layers: int = 12,
    dtype: str = "fp16",
    batch: int = 1,
    seq_len: int = 4096,
    device_gib: int | None = None,
    stack_weights: bool = False,
    weights_dtype: str = "bf16",
    y_scale: str = "log",
    decode: bool = False,
    dec_layers: int = 2,
    dec_steps: int = 128,
    dec_prompt: int = 16,
    dec_batch: int = 1,
    dec_dtype: str = "fp16",
    dec_wrong: bool = False,
    dec_recompute: bool = True,
    prefill_decode: bool = False,
    pd_tokens: int = 64,
    seed: int = 0,
    style: Style = Style(),
    device: str = "cpu",
) -> list[View]:
    """The views of the KV-cache page for these settings, in the page's order (for the exporter and tests).

    ``model`` is a preset id (``n_heads`` .. ``n_layers`` are then ignored) or
    ``custom``. Always the layouts compared at ``seq_len`` tokens and memory
    against sequence length, with the device memory of :func:`device_memory`
    (minus the weights with ``stack_weights``); with ``decode`` a complete live
    decode is run (:func:`attn_core.kv_cache.run_decode`, ``dec_*`` settings,
    recomputing every step too with ``dec_recompute``) and its memory and time
    figures added; with ``prefill_decode`` the prefill and decode of
    ``pd_tokens`` tokens are timed. The defaults are the page's. Raises
    :class:`ConfigError` naming the field for a bad value.
    """
    preset, layouts = model_layouts(model, n_heads, n_kv_heads, head_dim, n_layers)
    seq_len = check_int("seq_len", seq_len, 1, MAX_CALC_SEQ_LEN)
    dtype_bits(dtype)
    if y_scale not in Y_SCALES:
        raise ConfigError(f"y_scale '{y_scale}' is not known; use one of: {', '.join(Y_SCALES)}", "y_scale")
    weights = stacked_weights(preset, weights_dtype) if stack_weights else None
    device_bytes, device_label = device_memory(device, device_gib, style)
    model_name = preset.name if preset is not None else style.t("opt.model.custom")
    tag = model_tag(model, n_heads, n_kv_heads, head_dim, n_layers)
    native = next(lay for lay in layouts if lay.native)
    native.bytes(seq_len, batch, dtype)  # validates the batch
    out = [
        comparison_view(
            layouts,
            name=f"kv_layouts_{tag}_{dtype}_b{batch}_s{seq_len}",
            model_name=model_name,
            seq_len=seq_len,
            batch=batch,
            dtype=dtype,
            budget_bytes=max(0, device_bytes - (weights or 0)),
            style=style,
        ),
        memory_view(
            layouts,
            name=f"kv_cache_{tag}_{dtype}_b{batch}",
            model_name=model_name,
            batch=batch,
            dtype=dtype,
            seq_len=seq_len,
            device_bytes=device_bytes,
            device_label=device_label,
            weights=weights,
            max_positions=preset.max_positions if preset is not None else None,
            y_log=y_scale == "log",
            style=style,
        ),
    ]
    if not (decode or prefill_decode):
        return out
    dec_layers = check_int("dec_layers", dec_layers, 1, kv_cache.MAX_DECODE_LAYERS)
    dec_batch = check_int("dec_batch", dec_batch, 1, kv_cache.MAX_DECODE_BATCH)
    if dec_dtype not in kv_cache.DECODE_DTYPES:
        raise ConfigError(
            f"dec_dtype {dec_dtype!r} is not supported; use one of: {', '.join(kv_cache.DECODE_DTYPES)}", "dec_dtype"
        )
    shape = dict(n_layers=dec_layers, batch=dec_batch, dtype=dec_dtype, seed=seed)
    if decode:
        dec_steps = check_int("dec_steps", dec_steps, 2, MAX_DEC_STEPS)
        dec_prompt = check_int("dec_prompt", dec_prompt, 1, MAX_DEC_PROMPT)
        cfg = decode_config(preset, n_heads, n_kv_heads, head_dim, cache_after_repeat=dec_wrong, **shape)
        steps = list(
            kv_cache.run_decode(cfg, dec_prompt, dec_steps, device, recompute=dec_recompute, repeats=DECODE_REPEATS)
        )
        out += decode_views(steps, dec_steps, cfg, dec_prompt, style=style)
    if prefill_decode:
        pd_tokens = check_int("pd_tokens", pd_tokens, 2, MAX_PD_TOKENS)
        cfg = decode_config(preset, n_heads, n_kv_heads, head_dim, **shape)
        out.append(prefill_decode_view(kv_cache.time_prefill_vs_decode(cfg, pd_tokens, device), cfg, style))
    return out
