"""Figures of the pretrained-models page: head roles by KV group, the newest token's row, the score scale."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import plotly.graph_objects as go

from attn_core.figures.base import Style, base_layout, group_color, plain_figure
from attn_core.figures.heatmaps import MatrixSpec, matrix_figure

if TYPE_CHECKING:  # types only: figures never import the engine at run time
    from attn_core.pretrained.models import ScaleResult

MODEL_COLOR, RANDOM_COLOR = "#0072B2", "#D55E00"
PEAK_COLORS = {"max_weight": "#0072B2", "saturated": "#D55E00", "entropy": "#009E73"}


def head_labels(n_heads: int, n_kv_heads: int) -> list[str]:
    """``h3 · KV1``: each query head with the KV head it reads (``h // n_rep``)."""
    n_rep = n_heads // n_kv_heads
    return [f"h{h} · KV{h // n_rep}" for h in range(n_heads)]


def _group_frames(n_heads: int, n_kv_heads: int, n_rows: int, width: int) -> list[dict]:
    """One rectangle in its group's colour around the columns of each KV group (none for MHA)."""
    n_rep = n_heads // n_kv_heads
    if n_rep == 1:
        return []
    return [
        dict(
            type="rect",
            xref="x",
            yref="y",
            x0=g * n_rep - 0.5,
            x1=(g + 1) * n_rep - 0.5,
            y0=-0.5,
            y1=n_rows - 0.5,
            line=dict(color=group_color(g), width=width),
            fillcolor="rgba(0,0,0,0)",
        )
        for g in range(n_kv_heads)
    ]


def roles_figure(mat: np.ndarray, n_kv_heads: int, value_label: str, title: str, style: Style = Style()) -> go.Figure:
    """A role score ``mat`` ``[L, H]`` (0..1) as layers × heads, each KV group framed in its colour."""
    n_layers, n_heads = mat.shape
    spec = MatrixSpec(
        mat,
        [f"L{i}" for i in range(n_layers)],
        head_labels(n_heads, n_kv_heads),
        title,
        kind="weights",
        row_title=style.t("models.axis_layer"),
        col_title=style.t("models.axis_head"),
    )
    fig = matrix_figure(spec, style)
    fig.data[0].hovertemplate = f"%{{y}} · %{{x}}<br>{value_label} %{{z:.3f}}<extra></extra>"
    fig.layout.shapes = _group_frames(n_heads, n_kv_heads, n_layers, 4 if style.present else 3)
    fig.layout.coloraxis.colorbar.title.text = value_label
    return fig


def newest_row_figure(
    rows: np.ndarray, context: list[str], layer: int, token: str, n_kv_heads: int, style: Style = Style()
) -> go.Figure:
    """The newest position's weights ``rows`` ``[H, S]`` over the context in ``layer``, a row per head (with its KV head)."""
    labels = [f"{tok} ({i})" for i, tok in enumerate(context)]
    shown = token.strip() or repr(token)
    spec = MatrixSpec(
        rows,
        head_labels(rows.shape[0], n_kv_heads),
        labels,
        style.t("models.newest_title", layer=layer, token=shown),
        kind="weights",
        row_title=style.t("models.axis_head"),
        col_title=style.t("fig.key"),
    )
    return matrix_figure(spec, style)


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
        yaxis=dict(title=dict(text=t("models.var_axis")), type="log"),
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
