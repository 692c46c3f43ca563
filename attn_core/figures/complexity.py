"""Figures of the cost page: FLOPs by stage (stacked), FLOPs against n with the crossover, measured time and memory
against n (log-log), per-token cost of prefill against decode, and the course note's n² term against the heads."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from attn_core.figures.base import Style, base_layout, plain_figure
from attn_core.figures.fit import SLIDE_CHART_PX, log_ticks
from attn_core.figures.margins import reserve_margins
from attn_core.runtime.units import binary_unit

# Okabe-Ito, one hue per stage (colour-blind safe), always beside the stage's name
STAGE_COLORS = {
    "qkv_projection": "#0072B2",
    "scores": "#D55E00",
    "softmax": "#F0E442",
    "weighted_sum": "#CC79A7",
    "output_projection": "#56B4E9",
    "mlp": "#999999",
    "attention": "#009E73",
}
PATH_DASH = {"eager": "solid", "fused": "dash"}
LEGEND_BELOW = dict(orientation="h", yanchor="top", y=-0.22, x=0)
HALF_WIDTH = 440  # px: the page shows these charts two to a row; their legends wrap at this width
HALF_SLACK = 36  # px: the estimate runs up to a legend row short at this width


def _half(data: list[dict], layout: dict, style: Style, wide_on_slides: bool = False) -> go.Figure:
    """A chart drawn in half the page's width: margins reserved for its legend's rows at that width; with
    ``wide_on_slides``, a chart a slide draws across its whole width (:data:`~attn_core.figures.fit.SLIDE_CHART_PX`)."""
    wide = wide_on_slides and style.present
    reserve_margins({"data": data, "layout": layout}, width=SLIDE_CHART_PX if wide else HALF_WIDTH)
    layout["margin"]["b"] += HALF_SLACK
    return plain_figure(data, layout, style)


def n_ticks(ns: Sequence[float]) -> dict:
    """Ticks at the n drawn (every other one past 8), labelled in full."""
    vals = sorted({int(n) for n in ns})
    while len(vals) > 8:
        vals = vals[::2]
    return dict(tickvals=vals, ticktext=[f"{n:,}" for n in vals])


def _height(style: Style, normal: int = 420) -> int:
    return normal + 60 if style.present else normal


def _line(style: Style) -> int:
    return 4 if style.present else 2


def stage_bars(
    columns: Sequence[str],
    stacks: dict[str, Sequence[float]],
    names: dict[str, str],
    title: str,
    style: Style = Style(),
) -> go.Figure:
    """One stacked bar per column (a layout of the layer), one segment per stage; ``stacks[stage]`` holds the FLOPs
    of that stage in each column, ``names[stage]`` its label."""
    data = [
        dict(
            type="bar",
            x=list(columns),
            y=[float(v) for v in vals],
            name=names[stage],
            marker=dict(color=STAGE_COLORS.get(stage, "#888888"), line=dict(color="#333333", width=0.5)),
            hovertemplate="%{x}<br>%{y:.4s} FLOP<extra>%{fullData.name}</extra>",
        )
        for stage, vals in stacks.items()
    ]
    totals = np.sum([list(v) for v in stacks.values()], axis=0)
    data.append(
        dict(
            type="scatter",
            x=list(columns),
            y=[float(v) for v in totals],
            mode="text",
            showlegend=False,
            text=[si(v) + "FLOP" for v in totals],
            textposition="top center",
            hoverinfo="skip",
            cliponaxis=False,
        )
    )
    layout = base_layout(
        title,
        style,
        _height(style, 440),
        barmode="stack",
        legend=LEGEND_BELOW,
        yaxis=dict(
            title=dict(text=style.t("cx.axis_flops")), range=[0, float(totals.max()) * 1.15], exponentformat="SI"
        ),
        xaxis=dict(title=dict(text="")),
    )
    return _half(data, layout, style, wide_on_slides=True)  # a slide of its own


def si(x: float, digits: int = 3) -> str:
    """``x`` as a short SI number: ``1.23 G``, ``456 M``, ``12``."""
    for div, unit in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(x) >= div:
            return f"{x / div:.{digits}g} {unit}"
    return f"{float(x):.{digits}g} "


def flops_curve(
    df: pd.DataFrame, marks: Sequence[tuple[float, str]], current: int, title: str, style: Style = Style()
) -> go.Figure:
    """FLOPs against n (log-log): the linear stages, the n² stages and their sum (``df`` columns ``n``, ``linear``,
    ``quadratic``, ``total`` and the legend names in ``df.attrs``); a vertical line at each ``(n, label)`` of ``marks``
    (the crossovers) and a dashed one at the current ``n``, named in the legend."""
    names = df.attrs["names"]
    colours = {"linear": "#0072B2", "quadratic": "#D55E00", "total": "#222222"}
    data = [
        dict(
            type="scatter",
            x=df["n"].to_numpy(),
            y=df[col].to_numpy(),
            mode="lines",
            name=names[col],
            line=dict(
                color=colours[col],
                width=_line(style) + (1 if col == "total" else 0),
                dash="dot" if col == "total" else "solid",
            ),
            hovertemplate="n = %{x:,}<br>%{y:.4s} FLOP<extra>%{fullData.name}</extra>",
        )
        for col in ("linear", "quadratic", "total")
    ]
    lo = float(df[["linear", "quadratic"]].to_numpy().min())
    hi = float(df["total"].max())
    dashes = ("dot", "dashdot")  # the crossovers as legend entries: a label on the plot would cross the curves
    for i, (x, label) in enumerate([*marks, (current, style.t("cx.mark_current", n=f"{current:,}"))]):
        last = i == len(marks)
        data.append(
            dict(
                type="scatter",
                x=[x, x],
                y=[lo, hi],
                mode="lines",
                name=label,
                hoverinfo="name",
                line=dict(
                    color="#009E73" if last else "#555555", width=_line(style), dash="dash" if last else dashes[i % 2]
                ),
            )
        )
    layout = base_layout(
        title,
        style,
        _height(style, 500),
        legend=LEGEND_BELOW,
        xaxis=dict(type="log", title=dict(text=style.t("cx.axis_n")), **n_ticks(df["n"])),
        yaxis=dict(
            type="log",
            title=dict(text=style.t("cx.axis_flops")),
            **log_ticks(df[["linear", "quadratic", "total"]].to_numpy().ravel()),
        ),
    )
    return _half(data, layout, style, wide_on_slides=True)  # a slide of its own


def measured_time(df: pd.DataFrame, title: str, style: Style = Style()) -> go.Figure:
    """Measured wall time against n (log-log), one line per (path, part) of ``df`` (columns ``n``, ``path``,
    ``part``, ``label``, ``ms``, ``ms_min``, ``ms_max``), the spread as error bars."""
    data = []
    for (path, part), g in df.groupby(["path", "part"], sort=False):
        ms = g["ms"].to_numpy()
        data.append(
            dict(
                type="scatter",
                x=g["n"].to_numpy(),
                y=ms,
                mode="lines+markers",
                name=g["label"].iloc[0],
                line=dict(
                    color=STAGE_COLORS.get(part, "#222222"),
                    dash=PATH_DASH.get(path, "solid"),
                    width=_line(style) + (1 if part == "total" else 0),
                ),
                marker=dict(size=7 if style.present else 5),
                error_y=dict(
                    type="data",
                    symmetric=False,
                    array=g["ms_max"].to_numpy() - ms,
                    arrayminus=ms - g["ms_min"].to_numpy(),
                    thickness=1,
                    width=3,
                ),
                hovertemplate="n = %{x:,}<br>%{y:.3g} ms<extra>%{fullData.name}</extra>",
            )
        )
    layout = base_layout(
        title,
        style,
        _height(style, 460),
        legend=LEGEND_BELOW,
        uirevision="cx_time",
        xaxis=dict(type="log", title=dict(text=style.t("cx.axis_n")), **n_ticks(df["n"])),
        yaxis=dict(type="log", title=dict(text=style.t("cx.axis_ms")), **log_ticks([*df["ms_min"], *df["ms_max"]])),
    )
    return _half(data, layout, style)


def measured_memory(df: pd.DataFrame, title: str, style: Style = Style()) -> go.Figure:
    """Peak bytes against n (log-log) of each path, measured (markers) on the counted formula (lines); ``df``
    columns ``n``, ``path``, ``label``, ``formula_label``, ``peak_bytes``, ``formula_bytes``."""
    div, unit = binary_unit(max(int(df["peak_bytes"].max()), int(df["formula_bytes"].max()), 1))
    data = []
    for path, g in df.groupby("path", sort=False):
        colour = "#D55E00" if path == "eager" else "#009E73"
        x = g["n"].to_numpy()
        data.append(
            dict(
                type="scatter",
                x=x,
                y=g["formula_bytes"].to_numpy() / div,
                mode="lines",
                name=g["formula_label"].iloc[0],
                line=dict(color=colour, width=_line(style)),
                hovertemplate="n = %{x:,}<br>%{y:.4g} " + unit + "<extra>%{fullData.name}</extra>",
            )
        )
        data.append(
            dict(
                type="scatter",
                x=x,
                y=g["peak_bytes"].to_numpy() / div,
                mode="markers",
                name=g["label"].iloc[0],
                marker=dict(color=colour, size=10 if style.present else 8, symbol="circle-open", line=dict(width=2)),
                hovertemplate="n = %{x:,}<br>%{y:.4g} " + unit + "<extra>%{fullData.name}</extra>",
            )
        )
    layout = base_layout(
        title,
        style,
        _height(style, 460),
        legend=LEGEND_BELOW,
        uirevision="cx_mem",
        xaxis=dict(type="log", title=dict(text=style.t("cx.axis_n")), **n_ticks(df["n"])),
        yaxis=dict(
            type="log",
            title=dict(text=style.t("cx.axis_bytes", unit=unit)),
            **log_ticks([*(df["peak_bytes"] / div), *(df["formula_bytes"] / div)]),
        ),
    )
    return _half(data, layout, style)


def per_token(df: pd.DataFrame, column: str, axis: str, title: str, style: Style = Style()) -> go.Figure:
    """``column`` per token against n (log-log) for prefill and decode (``df`` columns ``n``, ``mode``, ``label``)."""
    colours = {"prefill": "#0072B2", "decode": "#E69F00"}
    data = [
        dict(
            type="scatter",
            x=g["n"].to_numpy(),
            y=g[column].to_numpy(),
            mode="lines+markers",
            name=g["label"].iloc[0],
            line=dict(color=colours.get(mode, "#222222"), width=_line(style)),
            hovertemplate="n = %{x:,}<br>%{y:.4s}<extra>%{fullData.name}</extra>",
        )
        for mode, g in df.groupby("mode", sort=False)
    ]
    layout = base_layout(
        title,
        style,
        _height(style, 400),
        legend=LEGEND_BELOW,
        xaxis=dict(type="log", title=dict(text=style.t("cx.axis_n")), **n_ticks(df["n"])),
        yaxis=dict(type="log", title=dict(text=axis), **log_ticks(df[column])),
    )
    return _half(data, layout, style)


def heads_figure(df: pd.DataFrame, current: int, title: str, style: Style = Style()) -> go.Figure:
    """The n² term against the number of heads at a fixed width: the real total, one head's cost and the note's
    term (``df`` columns ``heads``, ``total``, ``per_head``, ``note`` and the names in ``df.attrs``); the current
    head count marked."""
    names = df.attrs["names"]
    styles = {"total": ("#D55E00", "solid"), "per_head": ("#0072B2", "dash"), "note": ("#555555", "dot")}
    data = [
        dict(
            type="scatter",
            x=df["heads"].to_numpy(),
            y=df[col].to_numpy(),
            mode="lines+markers",
            name=names[col],
            line=dict(color=styles[col][0], dash=styles[col][1], width=_line(style) + 1),
            hovertemplate="h = %{x}<br>%{y:.4s}<extra>%{fullData.name}</extra>",
        )
        for col in ("total", "per_head", "note")
    ]
    shapes = [
        dict(
            type="line",
            x0=current,
            x1=current,
            y0=0,
            y1=1,
            yref="paper",
            line=dict(color="#009E73", dash="dash", width=_line(style)),
        )
    ]
    layout = base_layout(
        title,
        style,
        _height(style, 420),
        legend=LEGEND_BELOW,
        shapes=shapes,
        xaxis=dict(
            type="log",
            title=dict(text=style.t("cx.axis_heads")),
            tickvals=df["heads"].tolist(),
            ticktext=[str(h) for h in df["heads"]],
        ),
        yaxis=dict(
            type="log",
            title=dict(text=style.t("cx.axis_flops")),
            **log_ticks([v for col in ("total", "per_head", "note") for v in df[col]]),
        ),
    )
    return plain_figure(data, layout, style)
