"""What each page draws, as (name, figure, data) triples shared by the pages and the CLI exporter.

A page calls these builders and shows the figures; ``python -m attn_core.export``
calls the same builders and writes the files, so a slide matches the screen.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from . import figures
from .longmaps import HeadWindow, PooledMaps


@dataclass(frozen=True)
class View:
    """One chart: a file-safe ``name``, the plotly ``figure`` and the numbers behind it.

    ``source`` is the DataFrame, or a function that builds it: tables of every
    cell of large maps take longer than the chart itself, so pages build them only
    when a CSV is asked for.
    """

    name: str
    figure: go.Figure
    source: pd.DataFrame | Callable[[], pd.DataFrame]

    @property
    def data(self) -> pd.DataFrame:
        return self.source() if callable(self.source) else self.source


def matrix_frame(
    mat: np.ndarray, rows: list[str], cols: list[str], row_name: str, col_name: str, value_name: str
) -> pd.DataFrame:
    """Long-format table of a matrix ``[R, C]``: one row per cell with both labels and positions."""
    r, c = mat.shape
    return pd.DataFrame(
        {
            f"{row_name}_pos": np.repeat(np.arange(r), c),
            row_name: np.repeat(np.asarray(rows, dtype=object), c),
            f"{col_name}_pos": np.tile(np.arange(c), r),
            col_name: np.tile(np.asarray(cols, dtype=object), r),
            value_name: mat.reshape(-1).astype(np.float64),
        }
    )


def pooled_frame(pm: PooledMaps) -> pd.DataFrame:
    """The numbers of a grid or zoom chart in long format, one row per drawn cell.

    Unpooled: head, kv_group, query/key position and token, weight, masked.
    Pooled: head, kv_group, the first and last query and key position of each
    block and its ``weight_max`` or ``weight_mean`` (NaN where all is masked).
    """
    hs, r, c = pm.weights.shape
    (q0, q1), (k0, k1), f = pm.q_range, pm.k_range, pm.factor
    head = np.repeat(np.asarray(pm.heads), r * c)
    cols: dict[str, np.ndarray] = {"head": head, "kv_group": np.array([pm.group_of(h) for h in pm.heads]).repeat(r * c)}
    qa = np.arange(q0, q1, f)
    ka = np.arange(k0, k1, f)
    if f == 1:
        cols["query_pos"] = np.tile(np.repeat(qa, c), hs)
        cols["query"] = np.asarray(pm.tokens_q, dtype=object)[cols["query_pos"]]
        cols["key_pos"] = np.tile(ka, hs * r)
        cols["key"] = np.asarray(pm.tokens_k, dtype=object)[cols["key_pos"]]
        cols["weight"] = np.nan_to_num(pm.weights.reshape(-1).astype(np.float64), nan=0.0)
        cols["masked"] = np.tile(~pm.allowed.reshape(-1), hs)
    else:
        cols["query_from"] = np.tile(np.repeat(qa, c), hs)
        cols["query_to"] = np.minimum(cols["query_from"] + f, q1) - 1
        cols["key_from"] = np.tile(ka, hs * r)
        cols["key_to"] = np.minimum(cols["key_from"] + f, k1) - 1
        cols[f"weight_{pm.reduce}"] = pm.weights.reshape(-1).astype(np.float64)
    return pd.DataFrame(cols)


FIT_PERCENTILE = 99.5  # of the drawn values: the top of a fitted colour scale


def fitted_top(pm: PooledMaps, fit: bool) -> float | None:
    """The top of :func:`grid_view`'s fitted colour scale: with ``fit``, the :data:`FIT_PERCENTILE`
    percentile of the values drawn (their largest value if that percentile is 0); None when the scale
    is the fixed 0..1 (``fit`` off, or nothing above 0 drawn)."""
    finite = pm.weights[np.isfinite(pm.weights)]
    if not fit or not finite.size or float(finite.max()) <= 0:
        return None
    # robust: a few large weights (the first rows of a causal map are 1) would otherwise set the scale
    top = float(np.percentile(finite, FIT_PERCENTILE))
    return top if top > 0 else float(finite.max())


def grid_view(pm: PooledMaps, style: figures.Style, fit: bool = False) -> View:
    """The grid of every head (or the zoom on one head's window), pooled as ``pm`` says, with its title.

    ``fit`` stretches the colour scale from 0 to the :data:`FIT_PERCENTILE`
    percentile of the values drawn instead of 0..1 (long sequences spread their
    weights thin; larger values take the top colour), and the title says so.
    """
    (q0, q1), (k0, k1), f = pm.q_range, pm.k_range, pm.factor
    t_q, t_k = len(pm.tokens_q), len(pm.tokens_k)
    whole = (q0, q1, k0, k1) == (0, t_q, 0, t_k)
    hs, r, c = pm.weights.shape
    if whole and hs == pm.n_heads:
        heads, groups = style.count(hs, "query_head"), style.count(pm.n_kv_heads, "kv_group")
        title, name, panel_px = style.t("fig.grid_title", heads=heads, groups=groups), "attention_weights", None
    else:
        h = pm.heads[0]
        title = style.t("fig.zoom_title", h=h, g=pm.group_of(h), q0=q0, q1=q1 - 1, k0=k0, k1=k1 - 1, tq=t_q, tk=t_k)
        name, panel_px = f"head{h}_q{q0}-{q1 - 1}_k{k0}-{k1 - 1}", 640 if hs == 1 else None
    value = style.t("fig.weight")
    if f > 1:
        how = style.t(f"fig.how.{pm.reduce}")
        title += "<br><sub>" + style.t("fig.grid_pooled", how=how, f=f, tq=q1 - q0, tk=k1 - k0, r=r, c=c) + "</sub>"
        value = style.t(f"fig.block_{pm.reduce}")
    top = fitted_top(pm, fit)
    cmax = 1.0 if top is None else top
    if top is not None:
        title += "<br><sub>" + style.t("fig.fit_note", top=f"{cmax:.3g}", pct=f"{FIT_PERCENTILE:g}") + "</sub>"
    fig = figures.heatmap_grid(
        pm.weights,
        pm.heads,
        pm.n_heads,
        pm.n_kv_heads,
        figures.block_labels(pm.tokens_q, q0, q1, f),
        figures.block_labels(pm.tokens_k, k0, k1, f),
        style,
        title=title,
        value_label=value,
        panel_px=panel_px,
        cmax=cmax,
    )
    return View(name, fig, lambda: pooled_frame(pm))


STEP_NAMES = ("q", "k", "v", "scores", "scaled", "masked", "softmax", "output")
STEP_HALF_PX = 320  # px of x axis of a step chart in one of two page columns (beside its labels and colour bar)


def step_columns(hw: HeadWindow, style: figures.Style) -> int:
    """Step charts side by side (2) or one per row (1): two only while every key label fits in half the width."""
    if style.present:
        return 1
    ticks = figures.tick_plan(len(hw.tokens_k), STEP_HALF_PX, style)
    return 2 if ticks.step == 1 and ticks.font >= figures.READABLE_TICK_FONT[False] else 1


def step_views(hw: HeadWindow, style: figures.Style, columns: int = 1) -> list[View]:
    """The eight matrices of one head's computation: Q, K, V, QKᵀ, scaled, masked, softmax weights, output.

    For the rows and keys of ``hw``'s window; the shapes in the titles are those of the whole sequence
    (``T_q`` and ``T_k`` for cross-attention). The scaling step's title writes out the factors applied:
    ×1/√d_k ÷ τ, or ÷ τ alone when the scaling is off. ``columns``: how many charts the page puts side
    by side (:func:`step_columns`), which sets the width every key label must fit in.
    """
    head, group = hw.head, hw.group
    lq = [f"{tok} ({hw.q0 + i})" for i, tok in enumerate(hw.tokens_q)]
    lk = [f"{tok} ({hw.k0 + i})" for i, tok in enumerate(hw.tokens_k)]
    d = hw.q.shape[-1]
    dims = [f"d{i}" for i in range(d)]
    tq, tk = hw.t_q, hw.t_k
    t = style.t
    nq, nk = ("T_q", "T_k") if hw.cross or tq != tk else ("T", "T")  # cross-attention: two lengths
    sq, sk, st_ = f"[{nq}, d_k] = [{tq}, {d}]", f"[{nk}, d_k] = [{tk}, {d}]", f"[{nq}, {nk}] = [{tq}, {tk}]"
    q_t, k_t, d_t = t("fig.query"), t("fig.key"), t("fig.dim")
    scaled_title = t(
        "heatmap.step_scaled" if hw.use_scaling else "heatmap.step_unscaled",
        d=d,
        tau=f"{hw.temperature:g}",
        scale=f"{hw.scale:.4g}",
    )
    spec = [
        ("q", f"Q · {t('fig.head')} {head}", hw.q, lq, dims, "values", None, q_t, d_t, sq),
        ("k", f"K · KV {group}", hw.k, lk, dims, "values", None, k_t, d_t, sk),
        ("v", f"V · KV {group}", hw.v, lk, dims, "values", None, k_t, d_t, sk),
        ("scores", "QKᵀ", hw.raw_scores, lq, lk, "scores", None, None, None, st_),
        ("scaled", scaled_title, hw.scaled_scores, lq, lk, "scores", None, None, None, st_),
        ("masked", t("heatmap.step_masked"), hw.scaled_scores, lq, lk, "scores", hw.mask, None, None, st_),
        ("softmax", "softmax", hw.weights, lq, lk, "weights", hw.mask, None, None, st_),
        ("output", t("heatmap.step_output"), hw.head_output, lq, dims, "values", None, q_t, d_t, sq),
    ]
    views = []
    plot_px = STEP_HALF_PX if columns > 1 else figures.PLOT_PX[style.present]
    for name, title, mat, rows, cols, kind, mask, rt, ct, shape in spec:
        fig = figures.matrix_figure(
            mat,
            rows,
            cols,
            f"{title}   {shape}",
            kind=kind,
            style=style,
            mask=mask,
            row_title=rt,
            col_title=ct,
            plot_px=plot_px,
            label_cols=cols is lk,  # key tokens; the dimensions of Q, K, V and the output are not labelled each
        )
        data = mat if mask is None else np.where(mask, mat, -np.inf)
        views.append(View(f"head{head}_{name}", fig, partial(matrix_frame, data, rows, cols, "row", "col", "value")))
    return views


def entropy_view(
    entropy: np.ndarray, tokens_q: tuple[str, ...], n_heads: int, n_kv_heads: int, style: figures.Style
) -> View:
    """Every head's normalised row entropy ``[H, Tq]`` as lines, and as a table."""
    fig = figures.entropy_figure(entropy, list(tokens_q), n_kv_heads, style=style, n_heads=n_heads)
    h, tq = entropy.shape
    n_rep = n_heads // n_kv_heads

    def frame() -> pd.DataFrame:
        return pd.DataFrame(
            {
                "head": np.repeat(np.arange(h), tq),
                "kv_group": np.repeat(np.arange(h) // n_rep, tq),
                "query_pos": np.tile(np.arange(tq), h),
                "query": np.tile(np.asarray(tokens_q, dtype=object), h),
                "normalized_entropy": entropy.reshape(-1).astype(np.float64),
            }
        )

    return View("row_entropy", fig, frame)
