"""Figures of the training lab: loss curves (mean of the seeds, their spread shaded), the KV-heads trade-off
against cache bytes per token, and every head's attention map of the probe sequence with its role."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from attn_core.figures.base import GROUP_COLORS, Style, base_layout, plain_figure
from attn_core.runtime.units import format_bytes

GRAPH_HEIGHT = 420


def _rgba(hex_colour: str, alpha: float) -> str:
    r, g, b = (int(hex_colour[i : i + 2], 16) for i in (1, 3, 5))
    return f"rgba({r},{g},{b},{alpha})"


def curves_figure(
    df: pd.DataFrame,
    groups: Sequence[str],
    labels: Sequence[str],
    column: str,
    x_max: int,
    title: str,
    style: Style = Style(),
    mark: int | tuple[int, str] | None = None,
) -> go.Figure:
    """``column`` against the step for every group: the mean over its seeds (a line) and min..max (shaded); a dotted
    line at step ``mark`` (where the page's sentence compares the curves, or where a conversion starts), or at
    ``mark = (step, label)`` with ``label`` written above it (what the line marks: the chart says so even before a
    run draws a curve)."""
    data = []
    for i, (g, label) in enumerate(zip(groups, labels, strict=True)):
        colour = GROUP_COLORS[i % len(GROUP_COLORS)]
        rows = df[(df.group == g) & df[column].notna()] if len(df) else df
        if not len(rows):
            continue
        stats = rows.groupby("step")[column].agg(["mean", "min", "max", "count"])
        x = stats.index.to_numpy()
        if int(stats["count"].max()) > 1:
            data.append(
                dict(
                    type="scatter",
                    x=np.concatenate([x, x[::-1]]),
                    y=np.concatenate([stats["max"].to_numpy(), stats["min"].to_numpy()[::-1]]),
                    fill="toself",
                    fillcolor=_rgba(colour, 0.18),
                    line=dict(width=0),
                    hoverinfo="skip",
                    showlegend=False,
                    name=label,
                )
            )
        data.append(
            dict(
                type="scatter",
                x=x,
                y=stats["mean"].to_numpy(),
                mode="lines",
                name=label,
                line=dict(color=colour, width=3 if style.present else 2),
                hovertemplate="%{x}: %{y:.3f}<extra>%{fullData.name}</extra>",
            )
        )
    t = style.t
    layout = base_layout(
        title,
        style,
        GRAPH_HEIGHT + (40 if style.present else 0),
        xaxis=dict(range=[0, max(1, x_max)], title=dict(text=t("lab.step_axis"))),
        yaxis=dict(title=dict(text=t(f"lab.axis_{column}")), rangemode="tozero"),
        legend=dict(orientation="h", yanchor="top", y=-0.22, x=0),
        uirevision=f"lab_{column}",
        margin=dict(l=10, r=24, t=80 if style.present else 60, b=10),
    )  # r: room for the last x tick
    if mark is not None:
        _mark(layout, mark if isinstance(mark, tuple) else (mark, ""), x_max, style)
    return plain_figure(data, layout, style)


def _mark(layout: dict, mark: tuple[int, str], x_max: int, style: Style) -> None:
    """A dotted line at step ``mark[0]``; its label ``mark[1]`` above the plot, ending at the line (the curves fill
    the plot's top left at first), with the top margin it takes."""
    step, label = mark
    layout["shapes"] = [
        dict(
            type="line",
            x0=step,
            x1=step,
            y0=0,
            y1=1,
            xref="x",
            yref="paper",
            line=dict(color="#666666", dash="dot", width=2),
        )
    ]
    if label:
        layout["annotations"] = [
            dict(
                text=label,
                x=step,
                xref="x",
                y=1,
                yref="paper",
                yanchor="bottom",
                xanchor="right" if step > x_max / 2 else "left",
                showarrow=False,
                font=dict(size=style.font, color="#555555"),
            )
        ]
        layout["margin"]["t"] += int(style.font * 1.4)


def tradeoff_figure(kf: pd.DataFrame, at: int, style: Style = Style()) -> go.Figure:
    """Loss at step ``at`` against KV-cache bytes per token, one marker per KV-heads choice."""
    t = style.t
    text = [style.count(int(k), "kv_head") for k in kf.kv_heads]
    hover = [f"{tx}<br>{format_bytes(int(b))}/token" for tx, b in zip(text, kf.bytes_per_token, strict=True)]
    data = [
        dict(
            type="scatter",
            x=kf.bytes_per_token.to_numpy(),
            y=kf.loss_at.to_numpy(),
            mode="markers+text+lines",
            text=text,
            textposition="top center",
            customdata=hover,
            name=t("lab.axis_loss"),
            marker=dict(size=14 if style.present else 11, color=GROUP_COLORS[0]),
            line=dict(color=GROUP_COLORS[0], dash="dot"),
            hovertemplate="%{customdata}<br>%{y:.3f}<extra></extra>",
        )
    ]
    hi = float(np.nanmax(kf.loss_at)) if kf.loss_at.notna().any() else 1.0
    layout = base_layout(
        t("lab.tradeoff_title", at=at),
        style,
        GRAPH_HEIGHT,
        xaxis=dict(
            type="log",
            title=dict(text=t("lab.axis_bytes")),
            tickvals=kf.bytes_per_token.tolist(),
            ticktext=[format_bytes(int(b)) for b in kf.bytes_per_token],
        ),
        yaxis=dict(range=[0, hi * 1.2 + 1e-9], title=dict(text=t("lab.axis_loss_at", at=at))),
        showlegend=False,
    )
    return plain_figure(data, layout, style)


def heads_figure(
    maps: np.ndarray, tokens: Sequence[str], labels: Sequence[Sequence[str]], title: str, style: Style = Style()
) -> go.Figure:
    """``maps`` ``[L, H, T, T]`` as an L × H grid of heatmaps (shared 0..1 scale), each titled by ``labels``."""
    n_l, n_h, n_t = maps.shape[0], maps.shape[1], maps.shape[2]
    gap = 0.04
    w, h = (1 - gap * (n_h - 1)) / n_h, (1 - 0.12 * (n_l - 1)) / n_l
    data, layout_axes, notes = [], {}, []
    ticks = list(range(0, n_t, max(1, -(-n_t // 6))))
    for la in range(n_l):
        for hd in range(n_h):
            k = la * n_h + hd + 1
            xa, ya = f"x{k if k > 1 else ''}", f"y{k if k > 1 else ''}"
            z = np.where(np.tril(np.ones((n_t, n_t), dtype=bool)), maps[la, hd], np.nan).astype(np.float32)
            data.append(
                dict(
                    type="heatmap",
                    z=z,
                    xaxis=xa,
                    yaxis=ya,
                    zmin=0,
                    zmax=1,
                    coloraxis="coloraxis",
                    hovertemplate="q %{y} → k %{x}: %{z:.3f}<extra></extra>",
                )
            )
            x0, y1 = hd * (w + gap), 1 - la * (h + 0.12)
            tick = dict(tickvals=ticks, ticktext=[tokens[i] for i in ticks], title=dict(text=""), tickangle=0)
            layout_axes[f"xaxis{k if k > 1 else ''}"] = dict(
                domain=[round(x0, 6), round(min(1.0, x0 + w), 6)], anchor=ya, showticklabels=la == n_l - 1, **tick
            )
            layout_axes[f"yaxis{k if k > 1 else ''}"] = dict(
                domain=[round(max(0.0, y1 - h), 6), round(y1, 6)],
                anchor=xa,
                autorange="reversed",
                showticklabels=hd == 0,
                **tick,
            )
            notes.append(
                dict(
                    text=labels[la][hd],
                    x=x0 + w / 2,
                    y=y1 + 0.01,
                    xref="paper",
                    yref="paper",
                    showarrow=False,
                    yanchor="bottom",
                    font=dict(size=style.font),
                )
            )
    height = 300 * n_l + 120
    layout = base_layout(
        title,
        style,
        height,
        annotations=notes,
        coloraxis=dict(
            colorscale=[list(s) for s in style.weight_scale],
            cmin=0,
            cmax=1,
            colorbar=dict(title=dict(text=style.t("lab.weight"))),
        ),
        margin=dict(l=10, r=10, t=110, b=10),
        **layout_axes,
    )
    return plain_figure(data, layout, style)
