"""Figures of the "Attention as convolution" page: the 1-D head (score parabola, softmax window, the K heads side
by side), the K² heads' maps over the image, images (input, outputs, difference), the α sweep and the analogy."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from attn_core.figures.base import DIVERGING_SCALE, GROUP_COLORS, Style, base_layout, explicit_scale, plain_figure
from attn_core.figures.fit import SLIDE_CHART_PX, fitted_title, log_ticks, wrap

GREY_SCALE = explicit_scale(["#000000", "#ffffff"])
QUERY_COLOR = "#D55E00"
MAP_PANEL_PX = {1: 320, 3: 190, 5: 150, 7: 115}  # px a row of the K² heads' maps (K rows)
TARGET_COLOR = "#009E73"


def _width(style: Style) -> int:
    return 4 if style.present else 3


def _on_slide(layout: dict, style: Style, share: float = 1.0) -> dict:
    """``layout`` with its title fitted to a slide's chart of ``share`` of the slide's width (lines wrapped, a
    subtitle at the axis font, the top margin they take); as it is off a slide."""
    if style.present:
        title, top = fitted_title(layout["title"]["text"], share * SLIDE_CHART_PX - 30, style.title_font, style.font)
        layout["title"], layout["margin"] = title, {**layout["margin"], "t": max(layout["margin"]["t"], top)}
    return layout


def _marks(x: float, colour: str, dash: str = "dot") -> dict:
    return dict(type="line", x0=x, x1=x, y0=0, y1=1, yref="paper", line=dict(color=colour, dash=dash, width=2))


# ---------------------------------------------------------------- 1-D
def score_figure(
    pos: np.ndarray, scores: np.ndarray, query: int, shift: int, alpha: float, style: Style = Style()
) -> go.Figure:
    """The head's score of every key against the key position: a parabola with its top at query + Δ."""
    t = style.t
    data = [
        dict(
            type="scatter",
            x=pos,
            y=scores.astype(np.float64),
            mode="lines+markers",
            name=t("conv.fig_score"),
            line=dict(color=GROUP_COLORS[0], width=_width(style)),
            marker=dict(size=6),
            hovertemplate=t("conv.hover_key") + " %{x}<br>%{y:.4g}<extra></extra>",
        )
    ]
    layout = base_layout(
        t("conv.fig_score_title", a=f"{alpha:g}", s=shift, q=query),
        style,
        380,
        xaxis=dict(title=dict(text=t("conv.axis_key_pos"))),
        yaxis=dict(title=dict(text=t("conv.axis_score"))),
        showlegend=False,
        shapes=[_marks(query, QUERY_COLOR), _marks(query + shift, TARGET_COLOR, "dash")],
    )
    return plain_figure(data, _on_slide(layout, style, 0.5), style)


def window_figure(
    pos: np.ndarray, weights: np.ndarray, query: int, shift: int, alpha: float, style: Style = Style()
) -> go.Figure:
    """The head's softmax weights over the keys (bars), the Gaussian window exp(−α(δ − Δ)²)/Z (line)."""
    t = style.t
    fine = np.linspace(pos[0], pos[-1], 8 * len(pos))
    z = np.exp(-alpha * (pos - query - shift) ** 2.0).sum()
    gauss = np.exp(-alpha * (fine - query - shift) ** 2.0) / z
    data = [
        dict(
            type="bar",
            x=pos,
            y=weights.astype(np.float64),
            name=t("conv.fig_weights"),
            marker=dict(color=GROUP_COLORS[0]),
            hovertemplate=t("conv.hover_key") + " %{x}<br>%{y:.4f}<extra></extra>",
        ),
        dict(
            type="scatter",
            x=fine,
            y=gauss,
            mode="lines",
            name=t("conv.fig_gauss"),
            hoverinfo="skip",
            line=dict(color=TARGET_COLOR, width=2, dash="dash"),
        ),
    ]
    layout = base_layout(
        t("conv.fig_window_title", a=f"{alpha:g}", s=shift, q=query),
        style,
        380,
        xaxis=dict(title=dict(text=t("conv.axis_key_pos"))),
        yaxis=dict(title=dict(text=t("conv.axis_weight")), range=[0, 1.05]),
        shapes=[_marks(query, QUERY_COLOR)],
        legend=dict(orientation="h", yanchor="top", y=-0.22, x=0),
    )
    return plain_figure(data, _on_slide(layout, style, 0.5), style)


def heads_1d_figure(
    pos: np.ndarray, weights: np.ndarray, shifts: Sequence[int], query: int, alpha: float, style: Style = Style()
) -> go.Figure:
    """The K heads' weights ``[K, N]`` of the same query, one line per shift Δ."""
    t = style.t
    data = [
        dict(
            type="scatter",
            x=pos,
            y=w.astype(np.float64),
            mode="lines+markers",
            name=f"Δ = {s:+d}",
            line=dict(color=GROUP_COLORS[i % len(GROUP_COLORS)], width=_width(style)),
            marker=dict(size=5),
            hovertemplate=t("conv.hover_key") + " %{x}<br>%{y:.4f}<extra>Δ = " + f"{s:+d}</extra>",
        )
        for i, (s, w) in enumerate(zip(shifts, weights, strict=True))
    ]
    layout = base_layout(
        t("conv.fig_heads_title", k=len(shifts), q=query, a=f"{alpha:g}"),
        style,
        400,
        xaxis=dict(title=dict(text=t("conv.axis_key_pos"))),
        yaxis=dict(title=dict(text=t("conv.axis_weight")), range=[0, 1.05]),
        shapes=[_marks(query, QUERY_COLOR)],
        legend=dict(orientation="h", yanchor="top", y=-0.22, x=0),
    )
    return plain_figure(data, _on_slide(layout, style), style)


# ---------------------------------------------------------------- 2-D
def head_maps_figure(
    maps: np.ndarray,
    k: int,
    query: tuple[int, int],
    rows: np.ndarray,
    cols: np.ndarray,
    image_hw: tuple[int, int],
    note: str = "",
    style: Style = Style(),
) -> go.Figure:
    """The K² heads' weights of one query pixel over key pixels ``maps`` ``[K², R, C]``, laid out as the kernel's
    taps (head (a, b) in row a, column b); the query outlined, the image's edge dotted where the keys include the
    zero padding. ``rows``/``cols``: the drawn key pixels' row and column numbers (a window of them: ``note``)."""
    t = style.t
    # a slide stretches the chart to the room it has (about 320 px of plot): rows of panels that far apart leave
    # each row's labels (20 px) clear of the panels above; the labels shorter where K > 3 panels stand close
    gap, gap_y = 0.035, 0.09 if style.present else 0.035
    side, side_y = (1 - gap * (k - 1)) / k, (1 - gap_y * (k - 1)) / k
    (h, w), (qr, qc) = image_hw, query
    data, layout_axes, notes, shapes = [], {}, [], []
    for i in range(k * k):
        a, b = divmod(i, k)
        n = "" if i == 0 else str(i + 1)
        x0, y1 = b * (side + gap), 1 - a * (side_y + gap_y)
        layout_axes |= _panel_axes(n, (x0, y1, side, side_y), rows, cols)
        d = (a - k // 2, b - k // 2)
        data.append(_tap_map(maps[i], n, d, rows, cols, style))
        data.append(_query_marker(n, query, k))
        notes.append(
            dict(
                text=f"Δ=({d[0]},{d[1]})" if k <= 3 or not style.present else f"{d[0]},{d[1]}",
                x=x0 + side / 2,
                y=y1,
                xref="paper",
                yref="paper",
                yanchor="bottom",
                showarrow=False,
                font=dict(size=style.font - (2 if k > 5 and not style.present else 0)),
            )
        )
        if min(rows[0], cols[0]) < 0 or rows[-1] >= h or cols[-1] >= w:  # zero-padding keys drawn: outline the image
            shapes.append(
                dict(
                    type="rect",
                    xref=f"x{n}",
                    yref=f"y{n}",
                    x0=-0.5,
                    x1=w - 0.5,
                    y0=-0.5,
                    y1=h - 0.5,
                    line=dict(color="#ffffff", width=1, dash="dot"),
                )
            )
    px = k * MAP_PANEL_PX.get(k, 110) + (30 if style.present else 0)
    title = t("conv.fig_maps_title", n=k * k, k=k, r=qr, c=qc) + (f"<br><sub>{note}</sub>" if note else "")
    layout = base_layout(
        title,
        style,
        px + 90 + (20 if note else 0),
        showlegend=False,
        annotations=notes,
        shapes=shapes,
        coloraxis=dict(
            colorscale=style.weight_scale, cmin=0.0, cmax=1.0, colorbar=dict(title=dict(text=t("conv.axis_weight")))
        ),
        margin=dict(l=10, r=10, t=0 if style.present else 70 + (28 if note else 0), b=10),
        **layout_axes,
    )
    layout = _on_slide(layout, style)  # a slide: the title's lines ...
    layout["margin"]["t"] += 28 if style.present else 0  # ... and the top row's labels below them
    return plain_figure(data, layout, style)


def _tap_map(z: np.ndarray, n: str, d: tuple[int, int], rows: np.ndarray, cols: np.ndarray, style: Style) -> dict:
    """One tap's heat map ``z`` ``[R, C]`` on the axes ``x{n}``/``y{n}``, hovered with its shift ``d``."""
    return dict(
        type="heatmap",
        z=z.astype(np.float32),
        x=cols,
        y=rows,
        xaxis=f"x{n}",
        yaxis=f"y{n}",
        coloraxis="coloraxis",
        hovertemplate=style.t("conv.hover_pixel")
        + " (%{y}, %{x})<br>%{z:.4f}<extra>Δ = "
        + f"({d[0]}, {d[1]})</extra>",
    )


def _panel_axes(n: str, box: tuple[float, float, float, float], rows: np.ndarray, cols: np.ndarray) -> dict:
    """The x and y axes of one tap's panel: ``box`` = (left, top, width, height) in paper units, no ticks, pixels
    square."""
    x0, y1, side, side_y = box
    bare = dict(showticklabels=False, ticks="", showgrid=False, zeroline=False)
    return {
        f"xaxis{n}": dict(
            domain=[round(x0, 6), round(min(1.0, x0 + side), 6)],
            anchor=f"y{n}",
            range=[cols[0] - 0.5, cols[-1] + 0.5],
            **bare,
        ),
        f"yaxis{n}": dict(
            domain=[round(max(0.0, y1 - side_y), 6), round(y1, 6)],
            anchor=f"x{n}",
            range=[rows[-1] + 0.5, rows[0] - 0.5],
            scaleanchor=f"x{n}",
            **bare,
        ),
    }


def _query_marker(n: str, query: tuple[int, int], k: int) -> dict:
    """The query pixel outlined in one tap's panel."""
    return dict(
        type="scatter",
        x=[query[1]],
        y=[query[0]],
        xaxis=f"x{n}",
        yaxis=f"y{n}",
        mode="markers",
        marker=dict(
            symbol="square-open", size=8 if k > 5 else 10, color=QUERY_COLOR, line=dict(width=2, color=QUERY_COLOR)
        ),
        hoverinfo="skip",
        showlegend=False,
    )


def image_figure(img: np.ndarray, title: str, kind: str, lim: float | None = None, style: Style = Style()) -> go.Figure:
    """One channel ``[H, W]``: ``grey`` (0..1, black to white) or ``signed`` (diverging, ±``lim``, centred at 0)."""
    t = style.t
    z = img.astype(np.float32)
    if kind == "grey":
        caxis = dict(colorscale=GREY_SCALE, cmin=0.0, cmax=1.0)
    else:
        top = float(lim if lim is not None else np.max(np.abs(z), initial=0.0)) or 1.0
        caxis = dict(colorscale=DIVERGING_SCALE, cmin=-top, cmax=top, cmid=0.0)
    data = [
        dict(
            type="heatmap",
            z=z,
            coloraxis="coloraxis",
            hovertemplate=t("conv.hover_pixel") + " (%{y}, %{x})<br>%{z:.4g}<extra></extra>",
        )
    ]
    layout = base_layout(
        title,
        style,
        400 if style.present else 360,
        coloraxis=caxis,
        xaxis=dict(title=dict(text=t("conv.axis_col")), constrain="domain"),
        yaxis=dict(title=dict(text=t("conv.axis_row")), autorange="reversed", scaleanchor="x", constrain="domain"),
    )
    return plain_figure(data, _on_slide(layout, style, 0.5), style)  # a slide: two images side by side


# ---------------------------------------------------------------- α sweep
def sweep_figure(
    alphas: np.ndarray, diffs: np.ndarray, tol: float, below_at: float | None, alpha: float, style: Style = Style()
) -> go.Figure:
    """The largest |attention − conv2d| against α (log-log), the tolerance, where it is first below it, the
    user's α."""
    t = style.t
    y = np.maximum(diffs.astype(np.float64), 1e-17)  # an exact 0 on a log axis
    data = [
        dict(
            type="scatter",
            x=alphas.astype(np.float64),
            y=y,
            mode="lines+markers",
            name=t("conv.fig_diff"),
            line=dict(color=GROUP_COLORS[0], width=_width(style)),
            marker=dict(size=7),
            hovertemplate="α = %{x:.3g}<br>%{y:.3e}<extra></extra>",
        )
    ]
    shapes = [
        dict(type="line", x0=0, x1=1, xref="paper", y0=tol, y1=tol, line=dict(color="#555555", dash="dash")),
        _marks(alpha, QUERY_COLOR),
    ]
    notes = [
        dict(
            x=np.log10(alpha),
            y=1,
            yref="paper",
            text=t("conv.fig_your_alpha", a=f"{alpha:g}"),
            showarrow=False,
            yanchor="bottom",
            font=dict(color=QUERY_COLOR, size=style.font),
        )
    ]
    if below_at is not None:
        shapes.append(_marks(below_at, TARGET_COLOR, "dash"))
        notes.append(
            dict(
                x=np.log10(below_at),
                y=np.log10(tol),
                text=t("conv.fig_below", a=f"{below_at:.3g}", tol=f"{tol:g}"),
                showarrow=True,
                arrowhead=2,
                ax=60,
                ay=-50,
                font=dict(color=TARGET_COLOR, size=style.font),
            )
        )
    lo = min(np.log10(max(float(y.min()), 1e-17)), np.log10(tol))
    layout = base_layout(
        t("conv.fig_sweep_title"),
        style,
        460 if style.present else 420,
        showlegend=False,
        xaxis=dict(type="log", title=dict(text="α"), **log_ticks(alphas)),
        yaxis=dict(
            type="log",
            title=dict(text=t("conv.axis_diff")),
            range=[lo - 0.5, np.log10(max(float(y.max()), tol)) + 0.5],
            **log_ticks([10**lo, max(float(y.max()), tol)], powers=True),
        ),
        shapes=shapes,
        annotations=notes,
    )
    return plain_figure(data, layout, style)


# ---------------------------------------------------------------- the analogy
PAGE_CHART_PX = 760  # px across the page's main column at 1280 px (the controls in a column beside it)
ANALOGY_COLUMNS = (1, 1.3, 1.3)  # the table's column widths, relative


def analogy_figure(
    header: Sequence[str], rows: Sequence[Sequence[str]], title: str, style: Style = Style()
) -> go.Figure:
    """The analogy as a table (exportable as a slide). A table's cell wraps its text at spaces only (Chinese
    not at all): each cell is broken into lines as wide as its column here."""
    size = style.font + 1
    across = SLIDE_CHART_PX if style.present else PAGE_CHART_PX
    room = [across * w / sum(ANALOGY_COLUMNS) - 20 for w in ANALOGY_COLUMNS]  # less the cell's paddings
    cells = [[wrap(str(c), r, size) for c, r in zip(row, room, strict=True)] for row in rows]
    cols = [list(c) for c in zip(*cells, strict=True)]
    lines = [max(c.count("<br>") + 1 for c in row) for row in cells]
    data = [
        dict(
            type="table",
            columnwidth=list(ANALOGY_COLUMNS),
            header=dict(
                values=[f"<b>{wrap(h, r, size)}</b>" for h, r in zip(header, room, strict=True)],
                fill=dict(color="#e8eef7"),
                align="left",
                font=dict(size=size),
                height=size * 2.2,
            ),
            cells=dict(
                values=cols,
                align="left",
                font=dict(size=size),
                height=size * 2.2,
                fill=dict(color="#ffffff"),
                line=dict(color="#cccccc"),
            ),
        )
    ]
    layout = base_layout(title, style, 140 + size * 2.2 + sum(n * size * 1.5 + size for n in lines))
    return plain_figure(data, layout, style)
