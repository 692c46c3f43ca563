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
    unknown_choice,
    weights_bytes,
)
from .views import View

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


def count_key(key: str, n: int) -> str:
    """``key`` or, for a count of exactly one, its singular variant ``<key>_one`` (both in the catalogs)."""
    return f"{key}_one" if n == 1 else key


# ---------------------------------------------------------------- memory against sequence length
def label_text(label: str, native: bool, style: Style) -> str:
    """Display text of a layout label: ``GQA-8 (this model)``; ``MLA-naive`` is spelled out in the user's language."""
    name = style.t("kvmem.layout_naive") if label == "MLA-naive" else label
    return style.t("kvmem.layout_this_model", name=name) if native else name


def layout_name(layout: CacheLayout, style: Style) -> str:
    """Legend text of a layout: ``GQA-8 (this model)``, ``MLA decompressed per head (naive)``."""
    return label_text(layout.label, layout.native, style)


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
    all_fits = [lay.max_context(budget, batch, dtype) for lay in layouts]
    rank = {i: r for r, i in enumerate(sorted(range(len(layouts)), key=lambda i: all_fits[i]))}
    for i, lay in enumerate(layouts):
        cache = np.array([lay.bytes(int(s), batch, dtype) for s in pts], dtype=np.int64)
        total = cache + w
        fits = all_fits[i]
        fits_text = style.t("kvmem.fits_none") if fits == 0 else style.t(count_key("kvmem.fits", fits), n=f"{fits:,}")
        color = LAYOUT_COLORS[lay.kind]
        custom = [format_bytes_exact(int(c)) for c in cache]
        hover = (
            f"<b>{layout_name(lay, style)}</b><br>{style.t('kvmem.seq_hover')} = %{{x:,}}<br>"
            f"{style.t('kvmem.cache')} %{{customdata}}"
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
                    dash="solid" if lay.native else ("longdash" if lay.kind == "MLA-naive" else "dash"),
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
                    # neighbours by size alternate sides, so two close markers' labels do not overlap
                    textposition="top left" if rank[i] % 2 == 0 else "bottom left",
                    textfont=dict(color=color, size=style.font),
                    hovertemplate=(
                        f"<b>{layout_name(lay, style)}</b><br>"
                        f"{style.t(count_key('kvmem.max_fit_hover', fits), n=f'{fits:,}')}<br>"
                        f"{format_bytes_exact(int(at))}<extra></extra>"
                    ),
                )
            )
    fig.add_trace(
        go.Scatter(
            x=[1, max_seq],
            y=[float(device_bytes)] * 2,
            mode="lines",
            name=style.t("kvmem.device_line", label=device_label, size=format_bytes(device_bytes)),
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
DEFAULT_MODEL = "llama-3-8b"  # a GQA model, so the comparison has MHA, GQA and MQA rows
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
        raise ConfigError(
            f"model '{model_id}' is not known; use custom or one of: {', '.join(presets)}",
            "model",
            "kv_unknown_choice",
            name="model",
            value=repr(model_id),
            options=", ".join(["custom", *presets]),
        )
    return presets[model_id], preset_layouts(presets[model_id])


def model_tag(model_id: str, n_heads: int, n_kv_heads: int, head_dim: int, n_layers: int) -> str:
    """File-name part naming the model: the preset id, or ``custom_h8_kv2_d16_L12``."""
    return model_id if model_id != "custom" else f"custom_h{n_heads}_kv{n_kv_heads}_d{head_dim}_L{n_layers}"


def stacked_weights(preset: ModelPreset | None, weights_dtype: str) -> int:
    """Bytes of the preset's weights in ``weights_dtype``; :class:`ConfigError` without a parameter count."""
    if preset is None or preset.n_params is None:
        raise ConfigError(
            "stacking the weights needs a parameter count: pick a model preset",
            "stack_weights",
            "kv_stack_needs_preset",
        )
    if weights_dtype not in DTYPES:
        raise unknown_choice("weights_dtype", weights_dtype, DTYPES)
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

    Columns: ``layout``, ``this_model``, ``kv_heads``, ``k_dim`` and ``v_dim``
    (per head; empty for MLA), ``kv_lora_rank`` and ``rope_dim`` (MLA only),
    ``elements_per_token_layer`` (cached elements per token and layer: 2 x H_kv x d_k,
    H_kv x (d_k + d_v), or d_c + d_R), ``bytes_per_token`` (all
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
                "k_dim": pd.NA if mla else lay.k_dim,
                "v_dim": pd.NA if mla else lay.v_dim,
                "kv_lora_rank": lay.kv_lora_rank if mla else pd.NA,
                "rope_dim": lay.rope_dim if mla else pd.NA,
                "elements_per_token_layer": lay.per_layer()[1],
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
    return df.astype({c: "Int64" for c in ("kv_heads", "k_dim", "v_dim", "kv_lora_rank", "rope_dim")})


def per_layer_text(r: object) -> str:
    """``2 × 8 × 128 = 2,048`` (2 × H_kv × d_k), ``128 × (192 + 128) = 40,960`` or ``512 + 64 = 576`` (d_c + d_R):
    the elements one :func:`comparison_data` row caches per token and layer, with the KV heads in the formula."""
    if pd.isna(r.kv_heads):
        formula = f"{r.kv_lora_rank:,} + {r.rope_dim:,}"
    elif r.k_dim == r.v_dim:
        formula = f"2 × {r.kv_heads:,} × {r.k_dim:,}"
    else:
        formula = f"{r.kv_heads:,} × ({r.k_dim:,} + {r.v_dim:,})"
    return f"{formula} = {int(r.elements_per_token_layer):,}"


def comparison_table(data: pd.DataFrame, style: Style = Style()) -> pd.DataFrame:
    """:func:`comparison_data` as the page's table: translated headers, binary units, ratios to MHA as text."""
    t = style.t
    mha = int(data["cache_bytes"].iloc[0])
    rows = []
    for r in data.itertuples(index=False):
        rows.append(
            {
                t("kvcache.col_layout"): label_text(r.layout, bool(r.this_model), style),
                t("kvcache.col_per_layer"): per_layer_text(r),
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
    color = [TABLE_TEXT_COLORS.get(k, LAYOUT_COLORS.get(k, "#222222")) for k in kinds]
    font_color = [color] + [["#222222"] * len(table)] * (n_cols - 1)
    fig = go.Figure(
        go.Table(
            columnwidth=[1.7, 1.7, 1.0, 1.0, 1.5, 0.8, 1.7],  # the seven columns of comparison_table
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
        count_key("kvmem.table_title", seq_len),
        model=model_name,
        s=f"{seq_len:,}",
        batch=batch,
        dtype=dtype,
        budget=format_bytes(budget_bytes),
    )
    fig = comparison_figure(comparison_table(data, style), title, [lay.kind for lay in layouts], style)
    return View(name, fig, data)


def mla_help_numbers(layouts: Sequence[CacheLayout], preset: ModelPreset, style: Style = Style()) -> dict[str, str]:
    """The numbers of the MLA explanation, from the layouts the table shows (MHA, MQA, MLA-naive, MLA)."""
    by_kind = {lay.kind: lay for lay in layouts}
    mha, mqa, naive, mla = (by_kind[k] for k in ("MHA", "MQA", "MLA-naive", "MLA"))
    mla_n = mla.per_layer()[1]
    return {
        "r": f"{mla.kv_lora_rank:,}",
        "rope": f"{mla.rope_dim:,}",
        "mla": f"{mla_n:,}",
        "h": f"{mha.n_kv_heads:,}",
        "dh": f"{mha.k_dim:,}",
        "mha": f"{mha.per_layer()[1]:,}",
        "ratio": f"{mha.per_layer()[1] / mla_n:.1f}",
        "mqa": f"{mqa.per_layer()[1]:,}",
        "naive": style.t("kvmem.layout_naive"),
        "nope": f"{preset.qk_nope_head_dim:,}",
        "dk": f"{naive.k_dim:,}",
        "dv": f"{naive.v_dim:,}",
        "naive_n": f"{naive.per_layer()[1]:,}",
        "naive_ratio": f"{naive.per_layer()[1] / mla_n:.1f}",
    }


def speed_numbers(speed: kv_cache.DecodeSpeed) -> dict[str, str]:
    """The measured medians of :func:`attn_core.kv_cache.decode_speed` as the page's speed sentence shows them."""
    return {
        "c": f"{speed.cached_s * 1e3:.3g}",
        "r": f"{speed.recompute_s * 1e3:.3g}",
        "x": f"{speed.ratio:.3g}",
        "y": f"{1 / speed.ratio:.3g}" if speed.ratio > 0 else "–",
        "s": f"{speed.max_context:,}",
    }


def decode_shape(preset: ModelPreset | None, n_heads: int, n_kv_heads: int, head_dim: int) -> tuple[int, int, int]:
    """(query heads, KV heads, head dim) the live decode runs.

    A preset's own shape (the numbers given are then ignored), or for an MLA
    model the MHA row of its comparison (:func:`~attn_core.memory.cache_layouts`:
    ``n_heads`` heads of the paper's d_h); without a preset the numbers given.
    """
    if preset is None:
        return n_heads, n_kv_heads, head_dim
    if preset.is_mla:
        mha = preset_layouts(preset)[0]  # the table's MHA row: keys of d_h, values of d_h
        return preset.n_heads, mha.n_kv_heads, mha.k_dim
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
        raise unknown_choice("y_scale", y_scale, Y_SCALES)
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
            f"dec_dtype {dec_dtype!r} is not supported; use one of: {', '.join(kv_cache.DECODE_DTYPES)}",
            "dec_dtype",
            "kv_unknown_choice",
            name="dec_dtype",
            value=repr(dec_dtype),
            options=", ".join(kv_cache.DECODE_DTYPES),
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
