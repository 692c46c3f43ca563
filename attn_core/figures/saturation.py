"""Plotly figures of the "Softmax saturation" page: results in, figures out.

Every builder takes CPU numpy arrays, a sweep DataFrame from
:func:`attn_core.saturation.sweep.saturation_sweep` or a result dataclass of :mod:`attn_core.saturation`
(:mod:`~attn_core.saturation.sweep`, :mod:`~attn_core.saturation.examples`, :mod:`~attn_core.saturation.measures`),
plain values and a :class:`~attn_core.figures.Style`, and returns a
``plotly.graph_objects.Figure``; the view model (:mod:`attn_core.views.saturation`)
computes the results and pairs each figure with the numbers behind it. Unscaled
results are vermillion, scaled ones blue (Okabe-Ito, colour-blind safe), always
beside a text label.

The figures are written as plain trace and layout dicts (subplot domains laid
out here the way ``make_subplots`` does) and wrapped without plotly's
per-property validation (:func:`~attn_core.figures.plain_figure`): building them
through ``add_trace``/``update_*`` cost most of a page rerun. Arrays go to plotly
as float32 numpy (sent as base64 typed arrays), hover text comes from
hovertemplates, and what grows with the sequence is bounded: maps pooled to 64 per
side, a row's bars labelled per key up to 256 keys (then drawn against the key
position), the float16 bars limited to the 128 largest scores, the Jacobian to the
32 largest weights. A chart stays near 100 KB at 8192 keys.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from attn_core.figures.base import DIVERGING_SCALE, GROUP_COLORS, Style, base_layout, plain_figure, slide_title
from attn_core.figures.fit import SLIDE_CHART_PX, log_ticks, wrap
from attn_core.figures.margins import text_width
from attn_core.runtime.config import FLOAT16_MAX, SATURATION_THRESHOLD, SMALL_NORM

if TYPE_CHECKING:
    from attn_core.saturation.examples import ExampleMaps
    from attn_core.saturation.measures import Float16Demo, RowSoftmax
    from attn_core.saturation.sweep import ScoreSample

UNSCALED_COLOR = GROUP_COLORS[4]  # vermillion
SCALED_COLOR = GROUP_COLORS[0]  # blue
THEORY_COLOR = "#444444"
# |J_ij| = |p_i (δ_ij - p_j)| ≤ 1/4, so a fixed ±0.25 scale shows the Jacobian fade as softmax saturates.
JACOBIAN_LIMIT = 0.25
MAX_HEATMAP_CELLS = 64  # per side in the scaled/unscaled maps; larger maps are block-max pooled
MAX_JACOBIAN_KEYS = 32
MAX_LABELLED_KEYS = 256  # rows of more keys draw their weights against the key position, without a label per key
MAX_FP16_KEYS = 128  # the float16 bars show at most this many keys: the largest scores, where exp overflows
NON_FINITE_Y = 1.08  # height of the inf/NaN flags above the 0..1 weight bars


def _line_width(style: Style) -> int:
    return 4 if style.present else 2


def _marker_size(style: Style) -> int:
    return 18 if style.present else 13


def _f32(x: object) -> np.ndarray:
    return np.ascontiguousarray(x, dtype=np.float32)


def _axes(i: int) -> tuple[str, str, str, str]:
    """Trace references and layout keys of subplot ``i`` (1-based): ``("x2", "y2", "xaxis2", "yaxis2")``."""
    n = "" if i == 1 else str(i)
    return f"x{n}", f"y{n}", f"xaxis{n}", f"yaxis{n}"


def _grid(
    rows: int,
    cols: int,
    titles: list[str],
    column_widths: list[float] | None = None,
    h_space: float | None = None,
    v_space: float | None = None,
) -> dict:
    """Layout of a rows × cols subplot grid, as ``make_subplots`` lays it out: axes with domains and
    anchors, numbered left to right then top to bottom, and one title annotation above each subplot."""
    h = 0.2 / cols if h_space is None else h_space
    v = 0.3 / rows if v_space is None else v_space
    widths = column_widths or [1.0] * cols
    total = sum(widths)
    w = [(1.0 - h * (cols - 1)) * x / total for x in widths]
    height = (1.0 - v * (rows - 1)) / rows
    layout: dict = {}
    annotations = []
    for r in range(rows):
        y1 = 1.0 - r * (height + v)
        y0 = max(0.0, y1 - height)
        x0 = 0.0
        for c in range(cols):
            i = r * cols + c + 1
            xref, yref, xkey, ykey = _axes(i)
            x1 = min(1.0, x0 + w[c])
            layout[xkey] = {"anchor": yref, "domain": [x0, x1]}
            layout[ykey] = {"anchor": xref, "domain": [y0, y1]}
            if i <= len(titles):
                annotations.append(
                    dict(
                        text=titles[i - 1],
                        x=(x0 + x1) / 2,
                        y=y1,
                        xref="paper",
                        yref="paper",
                        xanchor="center",
                        yanchor="bottom",
                        showarrow=False,
                        font=dict(size=16),
                    )
                )
            x0 = x1 + h
    layout["annotations"] = annotations
    return layout


def _layout(layout: dict, title: str, style: Style, height: int, legend: bool | list[dict] = True) -> dict:
    """:func:`~attn_core.figures.base_layout` for a grid of subplots: the title (its lines split by ``<br>``),
    then a legend of up to two lines (unless ``legend`` is False: a chart of heatmaps has none; given the traces,
    on a slide, the lines their names take), then the subplot titles, each in its own band of pixels."""
    f, tf = style.font, style.title_font
    title = wrap(slide_title(title), SLIDE_CHART_PX - 20, tf) if style.present else title
    if style.present:  # a slide: each subplot title in lines as wide as its panel
        _fit_panel_titles(layout, f)
    extra = int(tf * 1.5) * title.count("<br>")  # plotly.js anchors a title's first line, later lines go below
    legend_top = 12 + int(tf * 1.5) + extra + 6
    names = max((a["text"].count("<br>") for a in layout.get("annotations", [])), default=0)
    rows = _legend_rows(legend, f) if isinstance(legend, list) and style.present else 2 if legend else 0
    top = legend_top + int(rows * f * 1.5) + int(f * 1.8) + int(f * 1.3) * names
    height += top
    # Subplot titles are annotations: give them the axis-label size.
    for a in layout.get("annotations", []):
        a["font"] = dict(size=f)
    base = base_layout(
        title,
        style,
        height,
        margin=dict(l=10, r=10, t=top, b=10),
        legend=dict(orientation="h", yref="container", yanchor="top", y=1 - legend_top / height, x=0),
    )
    base["title"].update(y=1 - (12 + extra) / height, yref="container", yanchor="top")
    return layout | base


def _legend_rows(traces: list[dict], font: int) -> int:
    """Lines the horizontal legend of ``traces`` takes across a slide's chart: each entry its name and about 45 px
    of symbol and gap (none without a name, at most two)."""
    names = [
        t["name"]
        for t in traces
        if t.get("showlegend", t.get("type") != "heatmap") is not False and t.get("name")  # heatmaps: none by default
    ]
    if not names:
        return 0
    rows, used = 1, 0.0
    for name in names:
        w = text_width(name, font) + 45
        if used and used + w > SLIDE_CHART_PX - 120:  # the legend starts at the plot, past the y labels
            rows, used = rows + 1, 0.0
        used += w
    return min(rows, 2)


def _fit_panel_titles(layout: dict, font: int) -> None:
    """Break each subplot title (an annotation over the centre of an x axis's domain) into lines no wider than
    that panel on a slide (:data:`~attn_core.figures.fit.SLIDE_CHART_PX` across, less the y axis's labels at the
    left and a colour bar's at the right): two titles side by side each reach past their panel by half their
    overhang, so within it neither reaches the other."""
    plot_px = SLIDE_CHART_PX - 100 - (150 if "coloraxis" in layout else 20)
    domains = [ax["domain"] for key, ax in layout.items() if key.startswith("xaxis") and "domain" in ax]
    for a in layout.get("annotations", []):
        widths = [d[1] - d[0] for d in domains if abs((d[0] + d[1]) / 2 - a["x"]) < 1e-6]
        if widths:
            a["text"] = wrap(a["text"], widths[0] * plot_px + 20, font)


def _d_k_axis(style: Style, d_values: list[int]) -> dict:
    """The log d_k axis; on a slide every other value ticked (and the last) under a short title: panels are
    narrow there."""
    ticks = d_values
    if style.present and len(d_values) > 6:
        ticks = d_values[::2] + ([d_values[-1]] if (len(d_values) - 1) % 2 else [])
    return dict(
        type="log",
        tickvals=ticks,
        ticktext=[str(d) for d in ticks],
        title=dict(text=style.t("sat.fig.d_k_short" if style.present else "sat.fig.d_k_axis")),
        showgrid=True,
    )


def _normal_pdf(x: np.ndarray, var: float) -> np.ndarray:
    return np.exp(-(x**2) / (2.0 * var)) / math.sqrt(2.0 * math.pi * var)


def _measured(style: Style, rows: int, total: int) -> str:
    """A second title line ``measured on R of N query rows`` when fewer rows than all were measured, else nothing."""
    if rows >= total:
        return ""
    return "<br>" + style.t("sat.fig.measured", rows=f"{rows:,}", total=f"{total:,}")


def _key_ticks(labels: list[str], keys: np.ndarray | range, short: bool = False) -> list[str]:
    """``t7 (7)``: a key's token and position; ``short`` (a slide, where the rotated labels take the short plot's
    height): ``t7``, the synthetic token that names its position."""
    return [labels[i] if short else f"{labels[i]} ({i})" for i in keys]


# ---------------------------------------------------------------- 1. score distributions
def score_distribution_figure(sample: ScoreSample, style: Style = Style()) -> go.Figure:
    """Histograms of the raw scores q·k and the scaled q·k/sqrt(d_k), with the N(0, d_k) and N(0, 1) curves.

    The panel titles state the measured variance beside the theoretical d_k and 1.
    """
    d = sample.d_k
    sq = math.sqrt(d)
    panels = [
        (
            sample.raw_density,
            sample.raw_edges,
            float(d),
            UNSCALED_COLOR,
            style.t("sat.fig.dist_raw", var=f"{sample.raw_var:.4g}", d=d),
            style.t("sat.fig.dist_raw_axis"),
            style.t("sat.fig.raw_name"),
        ),
        (
            sample.scaled_density,
            sample.scaled_edges,
            1.0,
            SCALED_COLOR,
            style.t("sat.fig.dist_scaled", var=f"{sample.scaled_var:.4g}", sq=f"{sq:.4g}"),
            style.t("sat.fig.dist_scaled_axis"),
            style.t("sat.fig.scaled_name"),
        ),
    ]
    layout = _grid(1, 2, [p[4] for p in panels], h_space=0.08)
    data = []
    lw = _line_width(style)
    for i, (density, edges, theory_var, color, _title, axis, name) in enumerate(panels, start=1):
        xref, yref, xkey, ykey = _axes(i)
        edges = np.asarray(edges, dtype=np.float64)
        data.append(
            dict(
                type="bar",
                x=_f32((edges[:-1] + edges[1:]) / 2.0),
                y=_f32(density),
                width=_f32(np.diff(edges)),
                marker=dict(color=color, line=dict(width=0)),
                opacity=0.8,
                name=name,
                showlegend=True,
                customdata=_f32(np.stack([edges[:-1], edges[1:]], axis=-1)),
                xaxis=xref,
                yaxis=yref,
                hovertemplate=(
                    style.t("sat.fig.bin_hover") + " [%{customdata[0]:.4g}, %{customdata[1]:.4g})"
                    "<br>" + style.t("sat.fig.density") + " %{y:.4g}<extra>" + name + "</extra>"
                ),
            )
        )
        x = np.linspace(float(edges[0]), float(edges[-1]), 241)
        theory_name = style.t("sat.fig.theory_curve", var=f"{theory_var:g}")
        data.append(
            dict(
                type="scatter",
                x=_f32(x),
                y=_f32(_normal_pdf(x, theory_var)),
                mode="lines",
                name=theory_name,
                line=dict(color=THEORY_COLOR, width=lw, dash="dash"),
                xaxis=xref,
                yaxis=yref,
                hovertemplate="%{x:.4g} → %{y:.4g}<extra>" + theory_name + "</extra>",
            )
        )
        layout[xkey]["title"] = dict(text=axis)
        density = style.t("sat.fig.density" if style.present else "sat.fig.density_axis")  # a slide's plot is short
        layout[ykey].update(title=dict(text=density), rangemode="tozero")
    layout.update(bargap=0, barmode="overlay")
    title = style.t("sat.fig.dist_title", n=f"{sample.n_scores:,}", d=d)
    title += _measured(style, sample.n_rows, sample.total_rows)
    return plain_figure(data, _layout(layout, title, style, 440 if style.present else 360, data), style)


# ---------------------------------------------------------------- 2. the same scores, unscaled and scaled
def _block_ranges(n: int, f: int, t: int) -> list[str]:
    return [f"{i * f}–{min((i + 1) * f, t) - 1}" for i in range(n)]


def _map_ticks_and_hover(
    maps: ExampleMaps, labels: list[str], style: Style
) -> tuple[list[str], np.ndarray | None, str]:
    """The two maps' tick labels, the raw q·k for the hover (None when pooled) and the hover template: tokens
    and q·k for a map of every key, key ranges and block maxima for a pooled one."""
    t, f = maps.seq_len, maps.factor
    where = style.t("fig.query") + " %{y} → " + style.t("fig.key") + " %{x}<br>"
    if f == 1:
        custom = None if maps.raw is None else _f32(maps.raw)
        hover = where + "q·k = %{customdata:.4g}<br>" + style.t("fig.weight") + " %{z:.4f}<extra>{name}</extra>"
        return _key_ticks(labels, range(t), style.present), custom, hover
    hover = where + style.t("sat.fig.block_max") + " %{z:.4f}<extra>{name}</extra>"
    return _block_ranges(maps.unscaled.shape[0], f, t), None, hover


def scaled_unscaled_figure(maps: ExampleMaps, labels: list[str], style: Style = Style()) -> go.Figure:
    """The weights of one sequence without and with 1/sqrt(d_k), side by side on one fixed 0..1 scale.

    Query rows top to bottom, key columns left to right (``labels``: the sequence's
    tokens, unused when pooled); the raw q·k is shown on hover. Maps wider than 64 keys arrive block-max
    pooled (:func:`attn_core.saturation.examples.example_maps`), their ticks are key ranges and the
    title says so.
    """
    t, f, d_k = maps.seq_len, maps.factor, maps.d_k
    tau = f"{maps.temperature:g}"
    titles = [
        style.t("sat.fig.map_unscaled", tau=tau, mw=f"{maps.mean_max_unscaled:.3f}"),
        style.t("sat.fig.map_scaled", d=d_k, tau=tau, mw=f"{maps.mean_max_scaled:.3f}"),
    ]
    if style.present:  # two lines each: a slide's panels are about 330 px wide at 1024 px across
        titles = [title.replace(" · ", "<br>", 1) for title in titles]
    layout = _grid(1, 2, titles, h_space=0.05)
    ticks, custom, hover = _map_ticks_and_hover(maps, labels, style)
    data = []
    for i, (w, name) in enumerate(
        ((maps.unscaled, style.t("sat.fig.unscaled")), (maps.scaled, style.t("sat.fig.scaled"))), start=1
    ):
        xref, yref, xkey, ykey = _axes(i)
        trace = dict(
            type="heatmap",
            z=_f32(w),
            x=ticks,
            y=ticks,
            coloraxis="coloraxis",
            name=name,
            xaxis=xref,
            yaxis=yref,
            hovertemplate=hover.replace("{name}", name),
            hoverongaps=False,
        )
        if custom is not None:
            trace["customdata"] = custom
        data.append(trace)
        layout[xkey].update(title=dict(text=style.t("fig.key")), type="category", tickangle=-60)
        # the rows are the same queries in both maps: their labels and title left of the first map only (the
        # second map's would sit in the gap, over the first map's right edge)
        layout[ykey].update(
            title=dict(text=style.t("fig.query") if i == 1 else ""),
            type="category",
            autorange="reversed",
            showticklabels=i == 1,
        )
    layout.update(
        coloraxis=dict(
            colorscale=style.weight_scale, cmin=0.0, cmax=1.0, colorbar=dict(title=dict(text=style.t("fig.weight")))
        ),
        plot_bgcolor="rgba(0,0,0,0)",
    )
    title = style.t("sat.fig.map_title", t=t, d=d_k)
    if f > 1:
        n = maps.unscaled.shape[0]
        title += "<br>" + style.t("fig.pooled", r=n, c=maps.unscaled.shape[1], tq=t, tk=t)
    side = min(t, MAX_HEATMAP_CELLS)
    height = int(min(680, max(340, side * (14 if style.present else 11) + 120)))
    return plain_figure(data, _layout(layout, title, style, height, legend=False), style)


# ---------------------------------------------------------------- 3-4. saturation and the gradients against d_k
# Panels against d_k: (sweep column, title key, y-axis title key, y scale). Scales: "var" (log, with the
# theoretical d_k and 1), "share" (0 to 1), "norm" (log; the mean and median of one norm share a range).
CURVE_PANELS = (
    ("score_var", "sat.fig.p_var", "sat.fig.ax_var", "var"),
    ("max_weight", "sat.fig.p_max", "sat.fig.ax_share", "share"),
    ("entropy", "sat.fig.p_entropy", "sat.fig.ax_entropy", "share"),
    ("saturated_frac", "sat.fig.p_saturated", "sat.fig.ax_rows", "share"),
)
# The gradient figure: one row per per-row norm of the sweep (attn_core.saturation.measures.ROW_NORMS, with its symbol), one column
# per statistic of it (column suffix, title key, y scale).
GRADIENT_NORMS = (("jacobian_norm", "‖J‖_F"), ("grad_norm", "‖∂L/∂z‖"), ("grad_q_norm", "‖∂L/∂q‖"))
GRADIENT_STATS = (
    ("", "sat.fig.g_mean", "norm"),
    ("_median", "sat.fig.g_median", "norm"),
    ("_small", "sat.fig.g_small", "share"),
)


def _sweep_arrays(sweep: pd.DataFrame, columns: list[str]) -> tuple[np.ndarray, dict[bool, dict[str, np.ndarray]]]:
    """The sweep as numpy: its d_k values, and each column's values for unscaled/scaled in d_k order."""
    d = sweep["d_k"].to_numpy()
    scaled = sweep["scaled"].to_numpy(dtype=bool)
    values = sweep[list(columns)].to_numpy(dtype=float)  # (rows, columns): one pandas call, then numpy
    out: dict[bool, dict[str, np.ndarray]] = {}
    for flag in (False, True):
        idx = np.flatnonzero(scaled == flag)
        idx = idx[np.argsort(d[idx], kind="stable")]
        out[flag] = {"d_k": d[idx].astype(np.int64)} | {c: values[idx, j] for j, c in enumerate(columns)}
    return np.unique(d).astype(np.int64), out


def _y_range(values: np.ndarray, kind: str) -> tuple[float, float]:
    """The y range of a panel (data units; log panels as values, not exponents)."""
    if kind == "share":
        return 0.0, 1.02
    positive = values[values > 0]
    if not len(positive):  # every row exactly 0: an arbitrary decade below 1
        return 1e-12, 1.0
    if kind == "var":
        return float(positive.min()) * 0.7, float(positive.max()) * 1.4
    return float(positive.min()) / 2.0, float(positive.max()) * 2.0


@dataclass(frozen=True)
class _Curves:
    """What every panel against d_k draws from: the sweep's ``arrays`` (:func:`_sweep_arrays`), the current
    ``d_k`` and scaling (marked), and the style."""

    arrays: dict[bool, dict[str, np.ndarray]]
    d_k: int
    use_scaling: bool
    style: Style


def _panel(
    data: list[dict], layout: dict, curves: _Curves, i: int, column: str, kind: str, y_range: tuple[float, float]
) -> None:
    """Subplot ``i``: the unscaled and scaled curves of ``column`` against d_k, the current d_k marked
    (the first subplot's curves make the legend).

    On log panels a value of exactly 0 is drawn at the bottom of the axis; hover always
    shows the measured value (``customdata``).
    """
    arrays, d_k, style = curves.arrays, curves.d_k, curves.style
    legend = i == 1
    xref, yref, xkey, ykey = _axes(i)
    lw, ms = _line_width(style), _marker_size(style)
    names = {False: style.t("sat.fig.unscaled"), True: style.t("sat.fig.scaled")}
    colors = {False: UNSCALED_COLOR, True: SCALED_COLOR}
    lo, hi = y_range
    shown = {}
    for flag in (False, True):
        a = arrays[flag]
        values = a[column]
        shown[flag] = values if kind == "share" else np.where(values > 0, values, lo)
        data.append(
            dict(
                type="scatter",
                x=_f32(a["d_k"]),
                y=_f32(shown[flag]),
                customdata=_f32(values),
                mode="lines+markers",
                name=names[flag],
                legendgroup=names[flag],
                showlegend=legend,
                legendrank=1 + int(flag),
                xaxis=xref,
                yaxis=yref,
                line=dict(color=colors[flag], width=lw, dash="solid" if flag else "dash"),
                marker=dict(size=ms // 2 + 1, color=colors[flag]),
                hovertemplate="d_k = %{x}<br>%{customdata:.4g}<extra>" + names[flag] + "</extra>",
            )
        )
    data.append(
        dict(
            type="scatter",
            x=[d_k, d_k],
            y=[lo, hi],
            mode="lines",
            name="current_line",
            showlegend=False,
            hoverinfo="skip",
            line=dict(color=THEORY_COLOR, width=max(1, lw - 1), dash="dot"),
            xaxis=xref,
            yaxis=yref,
        )
    )
    data += _current_marks(curves, column, shown, (xref, yref))
    if kind == "share":
        layout[ykey].update(range=[lo, hi])
    else:
        # every label written out at the tick font: 10⁻⁴ rather than 100µ, no small bare 2s and 5s
        layout[ykey].update(type="log", range=[math.log10(lo), math.log10(hi)], **log_ticks((lo, hi), kind == "norm"))
    layout[xkey].update(_d_k_axis(style, [int(d) for d in arrays[False]["d_k"]]))


def _current_marks(curves: _Curves, column: str, shown: dict, refs: tuple[str, str]) -> list[dict]:
    """The current d_k's point on both curves of ``column`` (filled for the page's setting, open for the other),
    or nothing when the sweep did not measure that d_k."""
    arrays, d_k, use_scaling, style = curves.arrays, curves.d_k, curves.use_scaling, curves.style
    names = {False: style.t("sat.fig.unscaled"), True: style.t("sat.fig.scaled")}
    hits = {flag: np.flatnonzero(arrays[flag]["d_k"] == d_k) for flag in (False, True)}
    if not all(len(h) for h in hits.values()):
        return []
    return [
        dict(
            type="scatter",
            x=[d_k, d_k],
            y=[float(shown[f][hits[f][0]]) for f in (False, True)],
            mode="markers",
            name="current",
            showlegend=False,
            xaxis=refs[0],
            yaxis=refs[1],
            marker=dict(
                size=_marker_size(style),
                color=[UNSCALED_COLOR, SCALED_COLOR],
                line=dict(color="#000000", width=2),
                symbol=["circle-open" if use_scaling else "circle", "circle" if use_scaling else "circle-open"],
            ),
            customdata=[[names[f], float(arrays[f][column][hits[f][0]])] for f in (False, True)],
            hovertemplate=style.t("sat.fig.current", d=d_k) + "<br>%{customdata[0]}: %{customdata[1]:.4g}"
            "<extra></extra>",
        )
    ]


def _theory_lines(data: list[dict], d_values: list[int], style: Style) -> None:
    """The theoretical variances d_k (unscaled) and 1 (scaled) in the first subplot."""
    lw = _line_width(style)
    theory = style.t("sat.fig.theory")
    line = dict(color=THEORY_COLOR, width=max(1, lw - 1), dash="dot")
    data.append(
        dict(
            type="scatter",
            x=_f32(d_values),
            y=_f32(d_values),
            mode="lines",
            name=theory,
            legendgroup=theory,
            showlegend=True,
            legendrank=3,
            line=line,
            xaxis="x",
            yaxis="y",
            hovertemplate="d_k = %{x}<br>" + style.t("sat.fig.theory_var") + " %{y}<extra></extra>",
        )
    )
    data.append(
        dict(
            type="scatter",
            x=[d_values[0], d_values[-1]],
            y=[1.0, 1.0],
            mode="lines",
            name=theory,
            legendgroup=theory,
            showlegend=False,
            hoverinfo="skip",
            xaxis="x",
            yaxis="y",
            line=line,
        )
    )


def _sweep_title(
    key: str, sweep: pd.DataFrame, n_samples: int, seq_len: int, temperature: float, d_k: int, style: Style
) -> str:
    title = style.t(key, n=n_samples, t=seq_len, tau=f"{temperature:g}", d=d_k)
    if "measured_rows" in sweep.columns and len(sweep):
        title += _measured(style, int(sweep["measured_rows"].iloc[0]), int(sweep["total_rows"].iloc[0]))
    return title


def saturation_curves_figure(
    sweep: pd.DataFrame,
    d_k: int,
    use_scaling: bool,
    seq_len: int,
    n_samples: int,
    temperature: float,
    style: Style = Style(),
) -> go.Figure:
    """Four panels against d_k (log x): score variance, mean largest weight, normalized entropy and
    saturated rows, unscaled and scaled (the gradients are :func:`gradient_curves_figure`).

    The current ``d_k`` is marked in every panel by a dotted vertical line and a
    marker on each curve (filled on the curve of the current scaling); the
    marker traces are named ``current`` so tests and the browser can find them.
    """
    d_values_arr, arrays = _sweep_arrays(sweep, [p[0] for p in CURVE_PANELS])
    d_values = [int(d) for d in d_values_arr]
    names = [style.t(p[1], thr=SATURATION_THRESHOLD) for p in CURVE_PANELS]
    if style.present:  # a 16:9 slide: the four panels side by side, each as tall as the slide allows
        layout = _grid(1, 4, names, h_space=0.075)  # each name in lines as wide as its panel (_layout)
    else:
        layout = _grid(2, 2, names, h_space=0.1, v_space=0.22)
    data: list[dict] = []
    curves = _Curves(arrays, d_k, use_scaling, style)
    for i, (column, _title, axis_key, kind) in enumerate(CURVE_PANELS, start=1):
        if kind == "var":
            _theory_lines(data, d_values, style)
        values = np.concatenate([arrays[False][column], arrays[True][column]])
        _panel(data, layout, curves, i, column, kind, _y_range(values, kind))
        layout[_axes(i)[3]]["title"] = dict(text=style.t(axis_key))
    title = _sweep_title("sat.fig.curves_title", sweep, n_samples, seq_len, temperature, d_k, style)
    return plain_figure(data, _layout(layout, title, style, 420 if style.present else 560, data), style)


def gradient_curves_figure(
    sweep: pd.DataFrame,
    d_k: int,
    use_scaling: bool,
    seq_len: int,
    n_samples: int,
    temperature: float,
    style: Style = Style(),
) -> go.Figure:
    """The gradients against d_k: one row per norm (‖J‖_F, ‖∂L/∂z‖, ‖∂L/∂q‖), one column per statistic
    over the measured rows (mean, median, share below :data:`attn_core.runtime.config.SMALL_NORM`).

    Mean and median of one norm share a log y range, so a median far below its mean
    (a gradient concentrated in a few rows) shows as such. Current d_k marked as in
    :func:`saturation_curves_figure`. A slide (``style.present``) draws the ‖∂L/∂q‖ row alone, the
    gradient that reaches W_Q and W_K: three rows of panels do not fit a projector's screen.
    """
    norms = GRADIENT_NORMS[-1:] if style.present else GRADIENT_NORMS
    columns = [norm + suffix for norm, _ in norms for suffix, _, _ in GRADIENT_STATS]
    _, arrays = _sweep_arrays(sweep, columns)
    titles = [style.t(key, x=symbol, thr=f"{SMALL_NORM:g}") for _, symbol in norms for _, key, _ in GRADIENT_STATS]
    layout = _grid(len(norms), len(GRADIENT_STATS), titles, h_space=0.08, v_space=0.13)
    data: list[dict] = []
    curves = _Curves(arrays, d_k, use_scaling, style)
    i = 0
    for r, (norm, symbol) in enumerate(norms):
        both = [arrays[f][norm + s] for f in (False, True) for s, _, kind in GRADIENT_STATS if kind == "norm"]
        norm_range = _y_range(np.concatenate(both), "norm")
        for c, (suffix, _key, kind) in enumerate(GRADIENT_STATS):
            i += 1
            y_range = norm_range if kind == "norm" else _y_range(np.empty(0), kind)
            _panel(data, layout, curves, i, norm + suffix, kind, y_range)
            xkey, ykey = _axes(i)[2:]
            if r < len(norms) - 1:  # one d_k title, under the bottom row
                layout[xkey]["title"] = dict(text="")
            if c == 0:
                layout[ykey]["title"] = dict(text=style.t("sat.fig.ax_norm", x=symbol))
            elif kind == "share":
                layout[ykey]["title"] = dict(text=style.t("sat.fig.ax_rows"))
    title = _sweep_title("sat.fig.grad_title", sweep, n_samples, seq_len, temperature, d_k, style)
    return plain_figure(data, _layout(layout, title, style, 480 if style.present else 780, data), style)


# ---------------------------------------------------------------- 5. one row and its Jacobian
def _weight_bars(p: np.ndarray, z: np.ndarray, labels: list[str], style: Style, xref: str, yref: str) -> dict:
    """Bars of one row's weights: one labelled bar per key, or against the key position for long rows."""
    t = len(p)
    bar = dict(
        type="bar",
        y=_f32(p),
        customdata=_f32(z),
        marker=dict(color=SCALED_COLOR),
        name=style.t("fig.weight"),
        showlegend=False,
        xaxis=xref,
        yaxis=yref,
    )
    if t <= MAX_LABELLED_KEYS:
        bar["x"] = _key_ticks(labels, range(t), style.present)
        bar["hovertemplate"] = style.t("fig.key") + " %{x}<br>z = %{customdata:.4g}<br>p = %{y:.5f}<extra></extra>"
    else:  # the synthetic key labels are "t<position>": the position says it all
        bar.update(x0=0, dx=1)
        bar["hovertemplate"] = (
            style.t("sat.fig.key_pos") + " %{x}<br>z = %{customdata:.4g}<br>p = %{y:.5f}<extra></extra>"
        )
    return bar


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
    more than 32 keys show the Jacobian of the 32 keys with the largest weights
    (``row.keys``); rows of more than 256 keys draw their bars against the key position.
    """
    t = row.p.shape[0]
    jt = _key_ticks(labels, row.keys, style.present)
    titles = [
        style.t("sat.fig.row_bars", q=query_label, mw=f"{row.max_weight:.4f}", ent=f"{row.entropy:.3f}"),
        style.t("sat.fig.row_jac", norm=f"{row.jacobian_norm:.4g}"),
    ]
    layout = _grid(1, 2, titles, column_widths=[0.55, 0.45], h_space=0.1)
    data = [
        _weight_bars(row.p, row.z, labels, style, "x", "y"),
        dict(
            type="heatmap",
            z=_f32(row.jacobian),
            x=jt,
            y=jt,
            coloraxis="coloraxis",
            name="J",
            xaxis="x2",
            yaxis="y2",
            hovertemplate="∂p(%{y}) / ∂z(%{x}) = %{z:.3e}<extra></extra>",
        ),
    ]
    if t <= MAX_LABELLED_KEYS:
        layout["xaxis"].update(title=dict(text=style.t("fig.key")), type="category", tickangle=-60)
    else:
        layout["xaxis"].update(title=dict(text=style.t("sat.fig.key_pos")), range=[-0.5, t - 0.5])
    layout["yaxis"].update(title=dict(text=style.t("sat.fig.weight_axis")), range=[0, 1.02])
    layout["xaxis2"].update(title=dict(text=style.t("sat.fig.jac_x")), type="category", tickangle=-60)
    layout["yaxis2"].update(title=dict(text=style.t("sat.fig.jac_y")), type="category", autorange="reversed")
    layout.update(
        coloraxis=dict(
            colorscale=DIVERGING_SCALE,
            cmin=-JACOBIAN_LIMIT,
            cmax=JACOBIAN_LIMIT,
            cmid=0.0,
            colorbar=dict(title=dict(text=style.t("sat.fig.jac_scale"))),
        ),
        plot_bgcolor="rgba(0,0,0,0)",
    )
    title = formula
    if len(row.keys) < t:
        title += "<br>" + style.t("sat.fig.jac_top", k=len(row.keys), t=t)
    return plain_figure(data, _layout(layout, title, style, 460 if style.present else 390, data), style)


# ---------------------------------------------------------------- 6. float16 numerics
def float16_keys(demo: Float16Demo) -> np.ndarray:
    """The keys the float16 bars show: all of them, or the MAX_FP16_KEYS largest scores (in key order)."""
    t = demo.scores16.shape[0]
    if t <= MAX_FP16_KEYS:
        return np.arange(t)
    return np.sort(np.argsort(-demo.scores16, kind="stable")[:MAX_FP16_KEYS])


def _float16_bars(demo: Float16Demo, keys: np.ndarray, ticks: list[str], style: Style) -> list[dict]:
    """The left panel's traces: the max-subtracted and the naive float16 weights of ``keys``, and a mark
    with the word (inf, NaN) above every key whose naive weight is not finite."""
    naive = demo.naive[keys]
    data = [
        dict(
            type="bar",
            x=ticks,
            y=_f32(demo.stable[keys]),
            name=style.t("sat.fig.fp16_stable"),
            marker=dict(color=SCALED_COLOR),
            xaxis="x",
            yaxis="y",
            customdata=_f32(np.stack([demo.scores16[keys], demo.reference[keys]], axis=-1)),
            hovertemplate=(
                style.t("fig.key")
                + " %{x}<br>q·k (float16) = %{customdata[0]:.5g}<br>"
                + style.t("sat.fig.fp16_stable")
                + " %{y:.5f}<br>float64: %{customdata[1]:.5f}<extra></extra>"
            ),
        ),
        dict(
            type="bar",
            x=ticks,
            y=_f32(np.where(np.isfinite(naive), naive, np.nan)),
            name=style.t("sat.fig.fp16_naive"),
            marker=dict(color=UNSCALED_COLOR),
            xaxis="x",
            yaxis="y",
            hovertemplate=style.t("fig.key") + " %{x}<br>" + style.t("sat.fig.fp16_naive") + " %{y:.5f}<extra></extra>",
        ),
    ]
    bad = np.flatnonzero(~np.isfinite(naive))
    if len(bad):
        words = np.where(np.isnan(naive), "NaN", np.where(naive > 0, "inf", "−inf"))
        data.append(
            dict(
                type="scatter",
                x=[ticks[i] for i in bad],
                y=_f32(np.full(len(bad), NON_FINITE_Y)),
                mode="markers+text",
                text=[str(words[i]) for i in bad],
                # beside the mark, inside the band above the bars (above it the text would reach the panel's title)
                textposition=["middle left" if 2 * i >= len(keys) else "middle right" for i in bad],
                name="non-finite",
                marker=dict(symbol="x", size=_marker_size(style), color=UNSCALED_COLOR),
                showlegend=False,
                textfont=dict(color=UNSCALED_COLOR, size=style.font),
                xaxis="x",
                yaxis="y",
                customdata=[_fmt_special(float(demo.exp_naive[keys[i]])) for i in bad],
                hovertemplate=(
                    style.t("fig.key")
                    + " %{x}<br>exp(q·k) float16 = %{customdata}<br>"
                    + style.t("sat.fig.fp16_naive")
                    + " = %{text}<extra></extra>"
                ),
            )
        )
    return data


def _float16_failures(sweep: pd.DataFrame, d_k: int, style: Style) -> tuple[list[dict], list[int]]:
    """The right panel's traces (rows whose float16 softmax breaks, against d_k, ``d_k`` marked) and its d_k values."""
    lw, ms = _line_width(style), _marker_size(style)
    d_values_arr, arrays = _sweep_arrays(sweep, ["fp16_naive_fail", "fp16_stable_fail"])
    curves = (
        (arrays[False], "fp16_naive_fail", UNSCALED_COLOR, "dash", style.t("sat.fig.fp16_naive_unscaled")),
        (arrays[True], "fp16_naive_fail", SCALED_COLOR, "solid", style.t("sat.fig.fp16_naive_scaled")),
        (arrays[False], "fp16_stable_fail", THEORY_COLOR, "dot", style.t("sat.fig.fp16_stable_unscaled")),
    )
    data = [
        dict(
            type="scatter",
            x=_f32(a["d_k"]),
            y=_f32(a[column]),
            mode="lines+markers",
            name=name,
            line=dict(color=color, width=lw, dash=dash),
            marker=dict(size=ms // 2 + 1, color=color),
            hovertemplate="d_k = %{x}<br>%{y:.2%}<extra>" + name + "</extra>",
            xaxis="x2",
            yaxis="y2",
        )
        for a, column, color, dash, name in curves
    ]
    data.append(
        dict(
            type="scatter",
            x=[d_k, d_k],
            y=[0.0, 1.05],
            mode="lines",
            name="current_line",
            showlegend=False,
            hoverinfo="skip",
            line=dict(color=THEORY_COLOR, width=max(1, lw - 1), dash="dot"),
            xaxis="x2",
            yaxis="y2",
        )
    )
    hit = np.flatnonzero(arrays[False]["d_k"] == d_k)
    if len(hit):
        data.append(
            dict(
                type="scatter",
                x=[d_k],
                y=[float(arrays[False]["fp16_naive_fail"][hit[0]])],
                mode="markers",
                name="current",
                showlegend=False,
                xaxis="x2",
                yaxis="y2",
                marker=dict(size=ms, color=UNSCALED_COLOR, line=dict(color="#000000", width=2)),
                hovertemplate=style.t("sat.fig.current", d=d_k) + "<br>%{y:.2%}<extra></extra>",
            )
        )
    return data, [int(d) for d in d_values_arr]


def float16_figure(
    demo: Float16Demo,
    sweep: pd.DataFrame,
    labels: list[str],
    d_k: int,
    style: Style = Style(),
) -> go.Figure:
    """Left: one row of unscaled scores through softmax in float16, naive against max-subtracted;
    keys where the naive result is inf or NaN are marked with that word (rows of more than 128 keys
    show the 128 largest scores, where exp overflows first). Right: share of rows whose float16
    softmax is not a valid distribution, against d_k (log x), current d_k marked.
    """
    t = len(labels)
    keys = float16_keys(demo)
    ticks = _key_ticks(labels, keys, style.present)
    n_inf = int(np.isinf(demo.exp_naive).sum())
    row_title = style.t(
        "sat.fig.fp16_row1" if n_inf == 1 else "sat.fig.fp16_row", n_inf=n_inf, t=t, total=_fmt_special(demo.sum_naive)
    )
    if len(keys) < t:
        row_title += "<br>" + style.t("sat.fig.fp16_top", k=len(keys), t=t)
    layout = _grid(1, 2, [row_title, style.t("sat.fig.fp16_curve")], column_widths=[0.55, 0.45], h_space=0.1)
    curves, d_values = _float16_failures(sweep, d_k, style)
    data = _float16_bars(demo, keys, ticks, style) + curves
    layout["xaxis"].update(title=dict(text=style.t("fig.key")), type="category", tickangle=-60)
    # weights live in 0..1; the band above holds the inf/NaN flags of the naive softmax
    layout["yaxis"].update(
        title=dict(text=style.t("sat.fig.weight_axis")),
        range=[0, 1.22],
        tickvals=[0, 0.5, 1] if style.present else [0, 0.2, 0.4, 0.6, 0.8, 1],  # a slide's plot is short
    )
    layout["xaxis2"].update(_d_k_axis(style, d_values))
    rows_axis = style.t("sat.fig.fp16_axis_short" if style.present else "sat.fig.fp16_axis")  # a slide's plot is short
    layout["yaxis2"].update(title=dict(text=rows_axis), range=[0, 1.05], tickformat=".0%")
    layout.update(barmode="group")
    title = style.t("sat.fig.fp16_title", d=d_k, lim=f"{math.log(FLOAT16_MAX):.2f}", max=f"{FLOAT16_MAX:.0f}")
    return plain_figure(data, _layout(layout, title, style, 480 if style.present else 400, data), style)


def _fmt_special(x: float) -> str:
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "inf" if x > 0 else "−inf"
    return f"{x:.5g}"
