"""Plotly figures of the "Softmax saturation" page, and its views (name, figure, data).

Every builder takes CPU numpy arrays, a sweep DataFrame from
:func:`attn_core.stats.saturation_sweep` or a dataclass from :mod:`attn_core.stats`,
plain values and a :class:`~attn_core.figures.Style`, and returns a
``plotly.graph_objects.Figure``. Unscaled results are vermillion, scaled ones
blue (Okabe-Ito, colour-blind safe), always beside a text label. The
``*_view`` functions pair each figure with the numbers behind it
(:class:`attn_core.views.View`), for the page's export buttons and the
command-line exporter alike.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .config import ConfigError
from .figures import DIVERGING_SCALE, GROUP_COLORS, Style, pool_max
from .stats import (
    FLOAT16_MAX,
    SATURATION_THRESHOLD,
    SWEEP_D_K,
    Float16Demo,
    RowSoftmax,
    ScoreSample,
    float16_demo,
    row_softmax,
    saturation_sweep,
    score_sample,
    softmax_weights,
)
from .tokens import synthetic_tokens
from .views import View

UNSCALED_COLOR = GROUP_COLORS[4]  # vermillion
SCALED_COLOR = GROUP_COLORS[0]  # blue
THEORY_COLOR = "#444444"
# |J_ij| = |p_i (δ_ij - p_j)| ≤ 1/4, so a fixed ±0.25 scale shows the Jacobian fade as softmax saturates.
JACOBIAN_LIMIT = 0.25
MAX_HEATMAP_CELLS = 64  # per side in the scaled/unscaled maps; larger maps are block-max pooled
MAX_JACOBIAN_KEYS = 32
NON_FINITE_Y = 1.08  # height of the inf/NaN flags above the 0..1 weight bars


def _line_width(style: Style) -> int:
    return 4 if style.present else 2


def _marker_size(style: Style) -> int:
    return 18 if style.present else 13


def _layout(fig: go.Figure, title: str, style: Style, height: int) -> go.Figure:
    """Title, then a legend of up to two lines, then the subplot titles, each in its own band of pixels."""
    f, tf = style.font, style.title_font
    legend_top = 12 + int(tf * 1.5) + 6
    top = legend_top + int(2 * f * 1.5) + int(f * 1.8)
    height += top
    fig.update_layout(
        title=dict(text=title, font=dict(size=tf), y=1 - 12 / height, yref="container", yanchor="top"),
        font=dict(size=f),
        height=height,
        margin=dict(l=10, r=10, t=top, b=10),
        legend=dict(orientation="h", yref="container", yanchor="top", y=1 - legend_top / height, x=0,
                    font=dict(size=max(11, f - 1))),
        hoverlabel=dict(font=dict(size=max(12, f - 1))),
    )  # fmt: skip
    # Subplot titles are annotations: give them the axis-label size.
    fig.update_annotations(font=dict(size=f))
    return fig


def _d_k_axis(style: Style, d_values: list[int]) -> dict:
    return dict(
        type="log",
        tickvals=d_values,
        ticktext=[str(d) for d in d_values],
        title=dict(text=style.t("sat.fig.d_k_axis")),
        showgrid=True,
    )


def _normal_pdf(x: np.ndarray, var: float) -> np.ndarray:
    return np.exp(-(x**2) / (2.0 * var)) / math.sqrt(2.0 * math.pi * var)


# ---------------------------------------------------------------- 1. score distributions
def score_distribution_figure(sample: ScoreSample, style: Style = Style()) -> go.Figure:
    """Histograms of the raw scores q·k and the scaled q·k/sqrt(d_k), with the N(0, d_k) and N(0, 1) curves.

    The panel titles state the measured variance beside the theoretical d_k and 1.
    """
    d = sample.d_k
    sq = math.sqrt(d)
    panels = [
        (sample.raw_density, sample.raw_edges, float(d), sample.raw_var, UNSCALED_COLOR,
         style.t("sat.fig.dist_raw", var=f"{sample.raw_var:.4g}", d=d), style.t("sat.fig.dist_raw_axis"),
         style.t("sat.fig.raw_name")),
        (sample.scaled_density, sample.scaled_edges, 1.0, sample.scaled_var, SCALED_COLOR,
         style.t("sat.fig.dist_scaled", var=f"{sample.scaled_var:.4g}", sq=f"{sq:.4g}"),
         style.t("sat.fig.dist_scaled_axis"), style.t("sat.fig.scaled_name")),
    ]  # fmt: skip
    fig = make_subplots(rows=1, cols=2, subplot_titles=[p[5] for p in panels], horizontal_spacing=0.08)
    for col, (density, edges, theory_var, _measured, color, _title, axis, name) in enumerate(panels, start=1):
        centers = (edges[:-1] + edges[1:]) / 2.0
        widths = np.diff(edges)
        custom = np.stack([edges[:-1], edges[1:]], axis=-1)
        fig.add_trace(
            go.Bar(
                x=centers, y=density, width=widths, marker=dict(color=color, line=dict(width=0)), opacity=0.8,
                name=name, customdata=custom, showlegend=True,
                hovertemplate=(
                    style.t("sat.fig.bin_hover") + " [%{customdata[0]:.4g}, %{customdata[1]:.4g})"
                    "<br>" + style.t("sat.fig.density") + " %{y:.4g}<extra>" + name + "</extra>"
                ),
            ),
            row=1, col=col,
        )  # fmt: skip
        x = np.linspace(float(edges[0]), float(edges[-1]), 241)
        theory_name = style.t("sat.fig.theory_curve", var=f"{theory_var:g}")
        fig.add_trace(
            go.Scatter(
                x=x, y=_normal_pdf(x, theory_var), mode="lines", name=theory_name,
                line=dict(color=THEORY_COLOR, width=_line_width(style), dash="dash"),
                hovertemplate="%{x:.4g} → %{y:.4g}<extra>" + theory_name + "</extra>",
            ),
            row=1, col=col,
        )  # fmt: skip
        fig.update_xaxes(title=dict(text=axis), row=1, col=col)
        fig.update_yaxes(title=dict(text=style.t("sat.fig.density_axis")), rangemode="tozero", row=1, col=col)
    fig.update_layout(bargap=0, barmode="overlay")
    title = style.t("sat.fig.dist_title", n=f"{sample.n_scores:,}", d=d)
    return _layout(fig, title, style, 440 if style.present else 360)


def score_distribution_data(sample: ScoreSample) -> pd.DataFrame:
    """The histogram numbers behind :func:`score_distribution_figure` (one row per bin and panel)."""
    frames = []
    for kind, density, edges in (
        ("q·k", sample.raw_density, sample.raw_edges),
        (f"q·k/√{sample.d_k}", sample.scaled_density, sample.scaled_edges),
    ):
        frames.append(pd.DataFrame({"score": kind, "bin_from": edges[:-1], "bin_to": edges[1:], "density": density}))
    return pd.concat(frames, ignore_index=True)


# ---------------------------------------------------------------- 2. the same scores, unscaled and scaled
def scaled_unscaled_figure(
    raw: np.ndarray,
    weights_unscaled: np.ndarray,
    weights_scaled: np.ndarray,
    labels: list[str],
    d_k: int,
    temperature: float,
    style: Style = Style(),
) -> go.Figure:
    """The weights of one sequence without and with 1/sqrt(d_k), side by side on one fixed 0..1 scale.

    raw ``[T, T]`` (q·k, shown on hover), weights ``[T, T]`` each; query rows top
    to bottom, key columns left to right. Maps wider than 64 keys are block-max
    pooled and the title says so.
    """
    t = raw.shape[0]
    w_u, f = pool_max(weights_unscaled[None].astype(np.float32), MAX_HEATMAP_CELLS)
    w_s, _ = pool_max(weights_scaled[None].astype(np.float32), MAX_HEATMAP_CELLS)
    w_u, w_s = w_u[0], w_s[0]
    tau = f"{temperature:g}"
    titles = [
        style.t("sat.fig.map_unscaled", tau=tau, mw=f"{weights_unscaled.max(-1).mean():.3f}"),
        style.t("sat.fig.map_scaled", d=d_k, tau=tau, mw=f"{weights_scaled.max(-1).mean():.3f}"),
    ]
    fig = make_subplots(rows=1, cols=2, subplot_titles=titles, horizontal_spacing=0.08)
    if f == 1:
        ticks = [f"{lab} ({i})" for i, lab in enumerate(labels)]
        x, y = ticks, ticks
        custom = raw.astype(np.float32)
        hover = (
            style.t("fig.query") + " %{y} → " + style.t("fig.key") + " %{x}<br>q·k = %{customdata:.4g}<br>"
            + style.t("fig.weight") + " %{z:.4f}<extra>{name}</extra>"
        )  # fmt: skip
    else:
        n = w_u.shape[0]
        ranges = [f"{i * f}–{min((i + 1) * f, t) - 1}" for i in range(n)]
        x, y = ranges, ranges
        custom = None
        hover = (
            style.t("fig.query") + " %{y} → " + style.t("fig.key") + " %{x}<br>"
            + style.t("sat.fig.block_max") + " %{z:.4f}<extra>{name}</extra>"
        )  # fmt: skip
    for col, (w, name) in enumerate(((w_u, style.t("sat.fig.unscaled")), (w_s, style.t("sat.fig.scaled"))), start=1):
        fig.add_trace(
            go.Heatmap(
                z=w, x=x, y=y, customdata=custom, coloraxis="coloraxis", name=name,
                hovertemplate=hover.replace("{name}", name), hoverongaps=False,
            ),
            row=1, col=col,
        )  # fmt: skip
        fig.update_xaxes(title=dict(text=style.t("fig.key")), type="category", tickangle=-60, row=1, col=col)
        fig.update_yaxes(  # one "query" title, left of both maps: a second one would sit on the first map's edge
            title=dict(text=style.t("fig.query") if col == 1 else ""),
            type="category",
            autorange="reversed",
            row=1,
            col=col,
        )
    fig.update_layout(
        coloraxis=dict(colorscale=style.weight_scale, cmin=0.0, cmax=1.0,
                       colorbar=dict(title=dict(text=style.t("fig.weight")))),
        plot_bgcolor="rgba(0,0,0,0)",
    )  # fmt: skip
    title = style.t("sat.fig.map_title", t=t, d=d_k)
    if f > 1:
        title += " · " + style.t("fig.pooled", r=w_u.shape[0], c=w_u.shape[1], tq=t, tk=t)
    side = min(t, MAX_HEATMAP_CELLS)
    height = int(min(680, max(340, side * (14 if style.present else 11) + 120)))
    return _layout(fig, title, style, height)


# ---------------------------------------------------------------- 3. saturation against d_k
CURVE_PANELS = (
    ("score_var", "sat.fig.p_var", "sat.fig.ax_var", True),
    ("max_weight", "sat.fig.p_max", "sat.fig.ax_share", False),
    ("entropy", "sat.fig.p_entropy", "sat.fig.ax_entropy", False),
    ("saturated_frac", "sat.fig.p_saturated", "sat.fig.ax_rows", False),
    ("jacobian_norm", "sat.fig.p_jacobian", "sat.fig.ax_jacobian", False),
    ("grad_norm", "sat.fig.p_grad", "sat.fig.ax_grad", False),
)


def saturation_curves_figure(
    sweep: pd.DataFrame,
    d_k: int,
    use_scaling: bool,
    seq_len: int,
    n_samples: int,
    temperature: float,
    style: Style = Style(),
) -> go.Figure:
    """Six panels against d_k (log x): score variance, mean max weight, normalized entropy,
    saturated rows, Jacobian norm and autograd gradient norm, unscaled and scaled.

    The current ``d_k`` is marked in every panel by a dotted vertical line and a
    marker on each curve (filled on the curve of the current scaling); the
    marker traces are named ``current`` so tests and the browser can find them.
    """
    d_values = sorted(int(d) for d in sweep["d_k"].unique())
    fig = make_subplots(
        rows=2, cols=3, subplot_titles=[style.t(p[1], thr=SATURATION_THRESHOLD) for p in CURVE_PANELS],
        horizontal_spacing=0.07, vertical_spacing=0.2,
    )  # fmt: skip
    unscaled = sweep[~sweep["scaled"]].sort_values("d_k")
    scaled = sweep[sweep["scaled"]].sort_values("d_k")
    lw, ms = _line_width(style), _marker_size(style)
    for i, (col_name, _title, axis_key, log_y) in enumerate(CURVE_PANELS):
        row, col = divmod(i, 3)
        row, col = row + 1, col + 1
        for frame, is_scaled, color, name in (
            (unscaled, False, UNSCALED_COLOR, style.t("sat.fig.unscaled")),
            (scaled, True, SCALED_COLOR, style.t("sat.fig.scaled")),
        ):
            fig.add_trace(
                go.Scatter(
                    x=frame["d_k"].to_numpy(), y=frame[col_name].to_numpy(dtype=float), mode="lines+markers",
                    name=name, legendgroup=name, showlegend=i == 0,
                    line=dict(color=color, width=lw, dash="solid" if is_scaled else "dash"),
                    marker=dict(size=ms // 2 + 1, color=color),
                    hovertemplate="d_k = %{x}<br>%{y:.4g}<extra>" + name + "</extra>",
                ),
                row=row, col=col,
            )  # fmt: skip
        if col_name == "score_var":
            theory = style.t("sat.fig.theory")
            fig.add_trace(
                go.Scatter(
                    x=d_values, y=[float(d) for d in d_values], mode="lines", name=theory, legendgroup=theory,
                    showlegend=True, line=dict(color=THEORY_COLOR, width=max(1, lw - 1), dash="dot"),
                    hovertemplate="d_k = %{x}<br>" + style.t("sat.fig.theory_var") + " %{y}<extra></extra>",
                ),
                row=row, col=col,
            )  # fmt: skip
            fig.add_trace(
                go.Scatter(
                    x=[d_values[0], d_values[-1]], y=[1.0, 1.0], mode="lines", name=theory, legendgroup=theory,
                    showlegend=False, line=dict(color=THEORY_COLOR, width=max(1, lw - 1), dash="dot"),
                    hoverinfo="skip",
                ),
                row=row, col=col,
            )  # fmt: skip
        cur = sweep[sweep["d_k"] == d_k]
        ys = [float(cur[cur["scaled"] == s][col_name].iloc[0]) for s in (False, True)] if len(cur) == 2 else []
        values = sweep[col_name].to_numpy(dtype=float)
        if log_y:
            lo, hi = float(values.min()) * 0.7, float(values.max()) * 1.4
        elif col_name in ("jacobian_norm", "grad_norm"):
            lo, hi = 0.0, float(values.max()) * 1.15
        else:  # shares and normalized entropy live in [0, 1]
            lo, hi = 0.0, 1.02
        fig.add_trace(
            go.Scatter(
                x=[d_k, d_k], y=[lo, hi], mode="lines", name="current_line", showlegend=False, hoverinfo="skip",
                line=dict(color=THEORY_COLOR, width=max(1, lw - 1), dash="dot"),
            ),
            row=row, col=col,
        )  # fmt: skip
        if ys:
            fig.add_trace(
                go.Scatter(
                    x=[d_k, d_k], y=ys, mode="markers", name="current", showlegend=False,
                    marker=dict(
                        size=ms, color=[UNSCALED_COLOR, SCALED_COLOR], line=dict(color="#000000", width=2),
                        symbol=["circle" if not use_scaling else "circle-open",
                                "circle" if use_scaling else "circle-open"],
                    ),
                    customdata=[style.t("sat.fig.unscaled"), style.t("sat.fig.scaled")],
                    hovertemplate=style.t("sat.fig.current", d=d_k) + "<br>%{customdata}: %{y:.4g}<extra></extra>",
                ),
                row=row, col=col,
            )  # fmt: skip
        fig.update_xaxes(_d_k_axis(style, d_values), row=row, col=col)
        yaxis = dict(title=dict(text=style.t(axis_key)))
        if log_y:
            yaxis.update(type="log", range=[math.log10(lo), math.log10(hi)])
        else:
            yaxis.update(range=[lo, hi])
        fig.update_yaxes(yaxis, row=row, col=col)
    title = style.t("sat.fig.curves_title", n=n_samples, t=seq_len, tau=f"{temperature:g}", d=d_k)
    return _layout(fig, title, style, 760 if style.present else 620)


# ---------------------------------------------------------------- 4. one row and its Jacobian
def row_figure(
    row: RowSoftmax,
    labels: list[str],
    query_label: str,
    formula: str,
    style: Style = Style(),
) -> go.Figure:
    """One query row: bars of its softmax weights (0..1) and its Jacobian diag(p) - p pᵀ as a heatmap.

    The Jacobian uses a fixed diverging scale from -0.25 to 0.25 (the largest
    possible |entry|), so a saturated row's Jacobian visibly fades to 0. Rows of
    more than 32 keys show the Jacobian of the 32 keys with the largest weights.
    """
    t = row.p.shape[0]
    ticks = [f"{lab} ({i})" for i, lab in enumerate(labels)]
    if t > MAX_JACOBIAN_KEYS:
        keep = np.sort(np.argsort(-row.p, kind="stable")[:MAX_JACOBIAN_KEYS])
    else:
        keep = np.arange(t)
    jac = row.jacobian[np.ix_(keep, keep)]
    jt = [ticks[i] for i in keep]
    titles = [
        style.t("sat.fig.row_bars", q=query_label, mw=f"{row.max_weight:.4f}", ent=f"{row.entropy:.3f}"),
        style.t("sat.fig.row_jac", norm=f"{row.jacobian_norm:.4g}"),
    ]
    fig = make_subplots(rows=1, cols=2, subplot_titles=titles, column_widths=[0.55, 0.45], horizontal_spacing=0.1)
    fig.add_trace(
        go.Bar(
            x=ticks, y=row.p, customdata=row.z, marker=dict(color=SCALED_COLOR), name=style.t("fig.weight"),
            showlegend=False,
            hovertemplate=(
                style.t("fig.key") + " %{x}<br>z = %{customdata:.4g}<br>p = %{y:.5f}<extra></extra>"
            ),
        ),
        row=1, col=1,
    )  # fmt: skip
    fig.add_trace(
        go.Heatmap(
            z=jac, x=jt, y=jt, coloraxis="coloraxis", name="J",
            hovertemplate="∂p(%{y}) / ∂z(%{x}) = %{z:.3e}<extra></extra>",
        ),
        row=1, col=2,
    )  # fmt: skip
    fig.update_xaxes(title=dict(text=style.t("fig.key")), type="category", tickangle=-60, row=1, col=1)
    fig.update_yaxes(title=dict(text=style.t("sat.fig.weight_axis")), range=[0, 1.02], row=1, col=1)
    fig.update_xaxes(title=dict(text=style.t("sat.fig.jac_x")), type="category", tickangle=-60, row=1, col=2)
    fig.update_yaxes(title=dict(text=style.t("sat.fig.jac_y")), type="category", autorange="reversed", row=1, col=2)
    fig.update_layout(
        coloraxis=dict(
            colorscale=DIVERGING_SCALE, cmin=-JACOBIAN_LIMIT, cmax=JACOBIAN_LIMIT, cmid=0.0,
            colorbar=dict(title=dict(text=style.t("sat.fig.jac_scale"))),
        ),
        plot_bgcolor="rgba(0,0,0,0)",
    )  # fmt: skip
    title = formula
    if len(keep) < t:
        title += " · " + style.t("sat.fig.jac_top", k=len(keep), t=t)
    return _layout(fig, title, style, 460 if style.present else 390)


# ---------------------------------------------------------------- 5. float16 numerics
def float16_figure(
    demo: Float16Demo,
    sweep: pd.DataFrame,
    labels: list[str],
    d_k: int,
    style: Style = Style(),
) -> go.Figure:
    """Left: one row of unscaled scores through softmax in float16, naive against max-subtracted;
    keys where the naive result is inf or NaN are marked with that word. Right: share of rows
    whose float16 softmax is not a valid distribution, against d_k (log x), current d_k marked.
    """
    ticks = [f"{lab} ({i})" for i, lab in enumerate(labels)]
    n_inf = int(np.isinf(demo.exp_naive).sum())
    titles = [
        style.t("sat.fig.fp16_row", n_inf=n_inf, t=len(ticks), total=_fmt_special(demo.sum_naive)),
        style.t("sat.fig.fp16_curve"),
    ]
    fig = make_subplots(rows=1, cols=2, subplot_titles=titles, column_widths=[0.55, 0.45], horizontal_spacing=0.1)
    lw, ms = _line_width(style), _marker_size(style)
    naive_finite = np.where(np.isfinite(demo.naive), demo.naive, np.nan)
    fig.add_trace(
        go.Bar(
            x=ticks, y=demo.stable, name=style.t("sat.fig.fp16_stable"), marker=dict(color=SCALED_COLOR),
            customdata=np.stack([demo.scores16, demo.reference], axis=-1),
            hovertemplate=(
                style.t("fig.key") + " %{x}<br>q·k (float16) = %{customdata[0]:.5g}<br>"
                + style.t("sat.fig.fp16_stable") + " %{y:.5f}<br>float64: %{customdata[1]:.5f}<extra></extra>"
            ),
        ),
        row=1, col=1,
    )  # fmt: skip
    fig.add_trace(
        go.Bar(
            x=ticks, y=naive_finite, name=style.t("sat.fig.fp16_naive"), marker=dict(color=UNSCALED_COLOR),
            hovertemplate=style.t("fig.key") + " %{x}<br>" + style.t("sat.fig.fp16_naive") + " %{y:.5f}<extra></extra>",
        ),
        row=1, col=1,
    )  # fmt: skip
    bad = ~np.isfinite(demo.naive)
    if bad.any():
        words = np.where(np.isnan(demo.naive), "NaN", np.where(demo.naive > 0, "inf", "−inf"))
        fig.add_trace(
            go.Scatter(
                x=[ticks[i] for i in np.flatnonzero(bad)], y=[NON_FINITE_Y] * int(bad.sum()), mode="markers+text",
                text=[words[i] for i in np.flatnonzero(bad)], textposition="top center", name="non-finite",
                marker=dict(symbol="x", size=ms, color=UNSCALED_COLOR), showlegend=False,
                textfont=dict(color=UNSCALED_COLOR, size=style.font),
                customdata=[_fmt_special(float(demo.exp_naive[i])) for i in np.flatnonzero(bad)],
                hovertemplate=(
                    style.t("fig.key") + " %{x}<br>exp(q·k) float16 = %{customdata}<br>"
                    + style.t("sat.fig.fp16_naive") + " = %{text}<extra></extra>"
                ),
            ),
            row=1, col=1,
        )  # fmt: skip
    fig.update_xaxes(title=dict(text=style.t("fig.key")), type="category", tickangle=-60, row=1, col=1)
    # weights live in 0..1; the band above holds the inf/NaN flags of the naive softmax
    fig.update_yaxes(title=dict(text=style.t("sat.fig.weight_axis")), range=[0, 1.22], tickvals=[0, 0.2, 0.4, 0.6, 0.8, 1],
                     row=1, col=1)  # fmt: skip
    d_values = sorted(int(d) for d in sweep["d_k"].unique())
    unscaled = sweep[~sweep["scaled"]].sort_values("d_k")
    scaled = sweep[sweep["scaled"]].sort_values("d_k")
    curves = (
        (unscaled, "fp16_naive_fail", UNSCALED_COLOR, "dash", style.t("sat.fig.fp16_naive_unscaled")),
        (scaled, "fp16_naive_fail", SCALED_COLOR, "solid", style.t("sat.fig.fp16_naive_scaled")),
        (unscaled, "fp16_stable_fail", THEORY_COLOR, "dot", style.t("sat.fig.fp16_stable_unscaled")),
    )
    for frame, column, color, dash, name in curves:
        fig.add_trace(
            go.Scatter(
                x=frame["d_k"].to_numpy(), y=frame[column].to_numpy(dtype=float), mode="lines+markers", name=name,
                line=dict(color=color, width=lw, dash=dash), marker=dict(size=ms // 2 + 1, color=color),
                hovertemplate="d_k = %{x}<br>%{y:.2%}<extra>" + name + "</extra>",
            ),
            row=1, col=2,
        )  # fmt: skip
    cur = unscaled[unscaled["d_k"] == d_k]
    fig.add_trace(
        go.Scatter(
            x=[d_k, d_k], y=[0.0, 1.05], mode="lines", name="current_line", showlegend=False, hoverinfo="skip",
            line=dict(color=THEORY_COLOR, width=max(1, lw - 1), dash="dot"),
        ),
        row=1, col=2,
    )  # fmt: skip
    if len(cur):
        fig.add_trace(
            go.Scatter(
                x=[d_k], y=[float(cur["fp16_naive_fail"].iloc[0])], mode="markers", name="current", showlegend=False,
                marker=dict(size=ms, color=UNSCALED_COLOR, line=dict(color="#000000", width=2)),
                hovertemplate=style.t("sat.fig.current", d=d_k) + "<br>%{y:.2%}<extra></extra>",
            ),
            row=1, col=2,
        )  # fmt: skip
    fig.update_xaxes(_d_k_axis(style, d_values), row=1, col=2)
    fig.update_yaxes(title=dict(text=style.t("sat.fig.fp16_axis")), range=[0, 1.05], tickformat=".0%", row=1, col=2)
    fig.update_layout(barmode="group")
    title = style.t("sat.fig.fp16_title", d=d_k, lim=f"{math.log(FLOAT16_MAX):.2f}", max=f"{FLOAT16_MAX:.0f}")
    return _layout(fig, title, style, 480 if style.present else 400)


FLOAT16_COLUMNS = ("key_pos", "key", "score_fp16", "exp_fp16", "naive_fp16", "stable_fp16", "reference_fp64")


def float16_data(demo: Float16Demo, labels: list[str]) -> pd.DataFrame:
    """The numbers behind the left panel of :func:`float16_figure`, one row per key (inf/NaN kept).

    Columns :data:`FLOAT16_COLUMNS`: the score rounded to float16, its float16 exp,
    the naive and the max-subtracted float16 softmax, and the float64 softmax.
    """
    values = (demo.scores16, demo.exp_naive, demo.naive, demo.stable, demo.reference)
    return pd.DataFrame(dict(zip(FLOAT16_COLUMNS, (np.arange(len(labels)), list(labels), *values), strict=True)))


def _fmt_special(x: float) -> str:
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "inf" if x > 0 else "−inf"
    return f"{x:.5g}"


# ---------------------------------------------------------------- views: (name, figure, data) for the page and export
def distribution_view(sample: ScoreSample, style: Style = Style()) -> View:
    """View 1: score histograms, raw against scaled."""
    return View(f"scores_dk{sample.d_k}", score_distribution_figure(sample, style), score_distribution_data(sample))


def maps_view(sample: ScoreSample, temperature: float, style: Style = Style()) -> View:
    """View 2: the first sampled sequence through softmax without and with 1/sqrt(d_k), at temperature τ."""
    labels = synthetic_tokens(sample.seq_len)
    w_unscaled = softmax_weights(sample.example, 1.0 / temperature)  # (T, T)
    w_scaled = softmax_weights(sample.example, 1.0 / (math.sqrt(sample.d_k) * temperature))  # (T, T)
    fig = scaled_unscaled_figure(sample.example, w_unscaled, w_scaled, labels, sample.d_k, temperature, style)
    t = sample.seq_len
    data = pd.DataFrame(
        {
            "query_pos": np.repeat(np.arange(t), t),
            "query": np.repeat(np.asarray(labels, dtype=object), t),
            "key_pos": np.tile(np.arange(t), t),
            "key": np.tile(np.asarray(labels, dtype=object), t),
            "score_qk": sample.example.reshape(-1).astype(np.float64),
            "weight_unscaled": w_unscaled.reshape(-1).astype(np.float64),
            "weight_scaled": w_scaled.reshape(-1).astype(np.float64),
        }
    )
    return View(f"maps_dk{sample.d_k}", fig, data)


def curves_view(
    sweep: pd.DataFrame,
    d_k: int,
    use_scaling: bool,
    seq_len: int,
    n_samples: int,
    temperature: float,
    style: Style = Style(),
) -> View:
    """View 3: saturation against d_k; the data is the sweep itself."""
    fig = saturation_curves_figure(sweep, d_k, use_scaling, seq_len, n_samples, temperature, style)
    return View("saturation_sweep", fig, sweep)


def row_view(
    sample: ScoreSample, row: int, use_scaling: bool, temperature: float, style: Style = Style()
) -> tuple[View, RowSoftmax]:
    """View 4: query ``row`` of the first sequence as softmax bars with its Jacobian (current scaling and τ)."""
    labels = synthetic_tokens(sample.seq_len)
    sq = math.sqrt(sample.d_k)
    result = row_softmax(sample.example[row], 1.0 / sq if use_scaling else 1.0, temperature)
    q = f"{labels[row]} ({row})"
    formula = style.t(
        "sat.row_formula_on" if use_scaling else "sat.row_formula_off", q=q, sq=f"{sq:.4g}", tau=f"{temperature:g}"
    )
    fig = row_figure(result, labels, q, formula, style)
    data = pd.DataFrame({"key_pos": np.arange(sample.seq_len), "key": labels, "z": result.z, "weight": result.p})
    return View(f"row{row}_dk{sample.d_k}", fig, data), result


def float16_view(
    sample: ScoreSample, sweep: pd.DataFrame, row: int, style: Style = Style()
) -> tuple[View, Float16Demo]:
    """View 5: the unscaled scores of query ``row`` through naive and max-subtracted float16 softmax."""
    labels = synthetic_tokens(sample.seq_len)
    demo = float16_demo(sample.example[row])
    fig = float16_figure(demo, sweep, labels, sample.d_k, style)
    return View(f"float16_row{row}_dk{sample.d_k}", fig, float16_data(demo, labels)), demo


def saturation_views(
    d_k: int = 64,
    seq_len: int = 16,
    n_samples: int = 256,
    seed: int = 0,
    distribution: str = "normal",
    use_scaling: bool = True,
    temperature: float = 1.0,
    row: int = 0,
    style: Style = Style(),
    device: str = "cpu",
) -> list[View]:
    """All five views of the page for these settings (for the command-line exporter and tests)."""
    if not 0 <= row < seq_len:
        raise ConfigError(f"row ({row}) must be between 0 and {seq_len - 1}", "row")
    sample = score_sample(d_k, seq_len, n_samples, seed, device, distribution)
    sweep = saturation_sweep(SWEEP_D_K, seq_len, n_samples, seed, device, distribution, temperature)
    return [
        distribution_view(sample, style),
        maps_view(sample, temperature, style),
        curves_view(sweep, d_k, use_scaling, seq_len, n_samples, temperature, style),
        row_view(sample, row, use_scaling, temperature, style)[0],
        float16_view(sample, sweep, row, style)[0],
    ]
