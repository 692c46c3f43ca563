"""What each page draws, as (name, figure, data) triples shared by the pages and the CLI exporter.

A page calls these builders and shows the figures; ``python -m attn_core.export``
calls the same builders and writes the files, so a slide matches the screen.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from . import figures
from .maps import AttentionMaps


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


def weights_frame(m: AttentionMaps) -> pd.DataFrame:
    """Every head's weights in long format: head, kv_group, query/key position and token, weight, masked."""
    h, tq, tk = m.weights.shape
    n_rep = h // m.n_kv_heads
    frames = []
    for head in range(h):
        df = matrix_frame(m.weights[head], list(m.tokens_q), list(m.tokens_k), "query", "key", "weight")
        df.insert(0, "kv_group", head // n_rep)
        df.insert(0, "head", head)
        df["masked"] = ~m.mask.reshape(-1)
        frames.append(df)
    return pd.concat(frames, ignore_index=True)


def heatmap_grid_view(m: AttentionMaps, style: figures.Style) -> View:
    fig = figures.heatmap_grid(m.weights, list(m.tokens_q), list(m.tokens_k), m.n_kv_heads, mask=m.mask, style=style)
    return View("attention_weights", fig, lambda: weights_frame(m))


STEP_NAMES = ("q", "k", "v", "scores", "scaled", "masked", "softmax", "output")


def step_views(m: AttentionMaps, head: int, style: figures.Style) -> list[View]:
    """The eight matrices of one head's computation: Q, K, V, QKᵀ, scaled, masked, softmax weights, output."""
    n_rep = m.weights.shape[0] // m.n_kv_heads
    group = head // n_rep
    lq, lk = list(m.tokens_q), list(m.tokens_k)
    d = m.q.shape[-1]
    dims = [f"d{i}" for i in range(d)]
    tq, tk = len(lq), len(lk)
    t = style.t
    sq, sk, st_ = f"[T, d_k] = [{tq}, {d}]", f"[T, d_k] = [{tk}, {d}]", f"[T, T] = [{tq}, {tk}]"
    spec = [
        ("q", f"Q · {t('fig.head')} {head}", m.q[head], lq, dims, "values", None, t("fig.query"), t("fig.dim"), sq),
        ("k", f"K · KV {group}", m.k[group], lk, dims, "values", None, t("fig.key"), t("fig.dim"), sk),
        ("v", f"V · KV {group}", m.v[group], lk, dims, "values", None, t("fig.key"), t("fig.dim"), sk),
        ("scores", "QKᵀ", m.raw_scores[head], lq, lk, "scores", None, None, None, st_),
        (
            "scaled",
            t("heatmap.step_scaled", scale=f"{m.scale:.4g}"),
            m.scaled_scores[head],
            lq,
            lk,
            "scores",
            None,
            None,
            None,
            st_,
        ),
        ("masked", t("heatmap.step_masked"), m.scaled_scores[head], lq, lk, "scores", m.mask, None, None, st_),
        ("softmax", "softmax", m.weights[head], lq, lk, "weights", m.mask, None, None, st_),
        (
            "output",
            t("heatmap.step_output"),
            m.head_outputs[head],
            lq,
            dims,
            "values",
            None,
            t("fig.query"),
            t("fig.dim"),
            sq,
        ),
    ]
    views = []
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
            height=560 if style.present else None,
        )
        data = mat if mask is None else np.where(mask, mat, -np.inf)
        df = matrix_frame(np.asarray(data), rows, cols, "row", "col", "value")
        views.append(View(f"head{head}_{name}", fig, df))
    return views


def entropy_view(m: AttentionMaps, style: figures.Style) -> View:
    fig = figures.entropy_figure(m.entropy, list(m.tokens_q), m.n_kv_heads, style=style)
    h, tq = m.entropy.shape
    n_rep = h // m.n_kv_heads
    df = pd.DataFrame(
        {
            "head": np.repeat(np.arange(h), tq),
            "kv_group": np.repeat(np.arange(h) // n_rep, tq),
            "query_pos": np.tile(np.arange(tq), h),
            "query": np.tile(np.asarray(m.tokens_q, dtype=object), h),
            "normalized_entropy": m.entropy.reshape(-1).astype(np.float64),
        }
    )
    return View("row_entropy", fig, df)
