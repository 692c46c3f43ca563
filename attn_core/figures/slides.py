"""Slide-shaped exports: a chart refitted to a 16:9 slide, half a slide or a paper column (issue 16).

:func:`fit_figure` takes a chart as the page drew it and lays it out again for an
:class:`ExportPreset`: the image size, one type size for every title, axis title,
legend, colour bar and note (larger than on the screen), tick labels as large as
that where their cells leave room (the labelling policy of :func:`~.labels.tick_plan`:
every token up to :data:`~.labels.LABELLED` a side; the chart already says where
labels were thinned), square heatmap cells, margins reserved for the larger labels.
The colours are the figure's own: the screen and the file share one definition.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go

from attn_core.figures.base import FONTS_SET, Style, _set_fonts
from attn_core.figures.heatmaps import grid_meta
from attn_core.figures.labels import LABEL_PITCH, MIN_TICK_FONT
from attn_core.figures.margins import reserve_margins, text_width

__all__ = ["ExportPreset", "EXPORT_PRESETS", "PRESET_NAMES", "fit_figure"]


@dataclass(frozen=True)
class ExportPreset:
    """An export's shape: ``width`` × ``height`` CSS px (``height`` None: the chart's own proportions),
    ``font`` the px of every text (0: the chart's own fonts), ``scale`` the pixel ratio of a PNG."""

    name: str
    width: int
    height: int | None
    font: int
    scale: float


# screen: as drawn on the page, 2400 px wide PNGs. slide: a 16:9 slide, 28 px type on 1920 px (the size a slide
# shows it at when the image fills it). half: one side of a two-column slide. paper: a vector figure 504 px wide
# with 16 px type; set in a 3.5-inch column it shrinks by 2/3 and its type prints at 8 pt (16 px × 0.75 pt/px × 2/3).
EXPORT_PRESETS = {
    p.name: p
    for p in (
        ExportPreset("screen", 1600, None, 0, 1.5),
        ExportPreset("slide", 1920, 1080, 28, 1.0),
        ExportPreset("half", 960, 1080, 28, 1.0),
        ExportPreset("paper", 504, None, 16, 300 / 96),
    )
}
PRESET_NAMES = tuple(EXPORT_PRESETS)
_TEXT_SAFETY = 1.2  # the exporter's fonts run wider than the screen's widths that margins.text_width knows
_TITLE_LINE = 1.3  # px of height a one-line panel title takes per px of font (ascent, descent and a little air)
_SCREEN_WIDTH = 1400  # px: the width the page lays a chart out for (its height was chosen for it)


def fit_figure(fig: go.Figure, preset: ExportPreset, style: Style = Style()) -> go.Figure:
    """A copy of ``fig`` laid out for ``preset`` (``screen``: an unchanged copy with the export width)."""
    out = go.Figure(fig)
    if preset.font == 0:
        return out
    own = float(fig.layout.font.size or style.font)
    ratio = preset.font / own
    height = preset.height or int(min(1200, max(300, (fig.layout.height or 600) * preset.width / _SCREEN_WIDTH)))
    _set_fonts(out, preset.font, preset.font)
    title_font = round(preset.font * 1.25)
    title = _wrap(str(out.layout.title.text or ""), title_font, preset.width - 60)
    out.update_layout(
        width=preset.width,
        height=height,
        autosize=False,
        font=dict(size=preset.font),
        title=dict(
            text=title,
            font=dict(size=title_font),
            yref="container",
            yanchor="middle",
            y=1 - (12 + 0.65 * title_font * (1 + title.count("<br>"))) / height,
        ),
    )
    for trace in out.data:  # numbers printed in cells grow with the rest
        size = getattr(getattr(trace, "textfont", None), "size", None)
        if size:
            trace.textfont.size = round(size * ratio)
    grid = grid_meta(fig.layout.meta)
    _square_cells(out, grid)
    _bar_labels_under_title(out)
    lines = 1 + title.count("<br>")
    top = int(title_font * 1.3 * lines + 40 + preset.font * 1.5) if title else int((out.layout.margin.t or 60) * ratio)
    out.update_layout(margin=dict(t=min(top, height // 3), l=10, r=10, b=10))
    for _ in range(2):  # labels sized for the plot area, margins reserved for them, the labels again for what is left
        m = out.layout.margin
        plot = (preset.width - m.l - m.r, height - m.t - m.b)
        widths, thinned = _fit_ticks(out, preset.font, plot)
        _fit_annotations(out, ratio, preset.font, plot, widths, _panel_room(out, grid, widths))
        spec = reserve_margins(out.to_plotly_json(), width=preset.width)
        out.layout.margin = spec["layout"].get("margin", out.layout.margin)
    if thinned:  # said on the figure, as the page's charts do
        words = {"x": style.t("fig.key"), "y": style.t("fig.query")}
        parts = " · ".join(style.t("fig.ticks_axis", what=words[a], k=k) for a, k in sorted(thinned.items()))
        out.add_annotation(
            text=style.t("fig.ticks_thinned", parts=parts),
            xref="paper",
            yref="paper",
            x=0,
            y=0,
            yshift=-out.layout.margin.b + 4,
            xanchor="left",
            yanchor="bottom",
            showarrow=False,
            font=dict(size=max(MIN_TICK_FONT, preset.font * 2 // 3)),
        )
    out.layout.meta = {FONTS_SET: preset.font}
    return out


def _wrap(text: str, font: int, width: float) -> str:
    """``text`` with line breaks (``<br>``) wherever its next word would run past ``width`` px at ``font`` px."""
    out = []
    for line in text.split("<br>"):
        if _TEXT_SAFETY * text_width(line, font) <= width or "<" in line:  # tagged lines (a <sub> note) are kept whole
            out.append(line)
            continue
        cur = ""
        for word in line.split(" "):
            trial = f"{cur} {word}".strip()
            if cur and _TEXT_SAFETY * text_width(trial, font) > width:
                out.append(cur)
                cur = word
            else:
                cur = trial
        out.append(cur)
    return "<br>".join(out)


def _panel_room(fig: go.Figure, grid: dict | None, widths: dict[str, float]) -> tuple[int, float, float] | None:
    """A head grid's panel titles (the first annotations, on data) and the px each has: its panel's width, and
    the height of the gap between rows of panels that the titles below the first row stand in (square token
    cells: a heatmap row is ``sx / sy`` heatmap columns high)."""
    if grid is None or "xaxis" not in widths:
        return None
    heat = next(t for t in fig.data if t.type == "heatmap")
    column_px = widths["xaxis"] / max(1, _shape(heat.z)[1])
    gap_px = grid["gy"] * column_px * grid["sx"] / grid["sy"] if grid["gy"] else float("inf")
    return len(grid["heads"]), column_px * grid["cols"] * grid["sx"], gap_px


def _fit_annotations(
    fig: go.Figure,
    ratio: float,
    font: int,
    plot: tuple[float, float],
    widths: dict[str, float],
    panels: tuple[int, float, float] | None = None,
) -> None:
    """Notes and panel titles (placed on the paper or an axis's domain, or a head grid's ``panels[0]`` titles
    ``panels[1]`` px wide, in gaps ``panels[2]`` px high) at ``font`` px, smaller only where their text would
    run past their panel or touch the panel above (at least :data:`~.labels.MIN_TICK_FONT`); labels placed on
    data (inside cells) grow by ``ratio`` like the cells' own text."""
    for i, a in enumerate(fig.layout.annotations):
        size = float(a.font.size or font / ratio)
        xref = str(a.xref or "paper")
        on_paper = xref.endswith(("paper", "domain")) and str(a.yref or "paper").endswith(("paper", "domain"))
        high = float("inf")
        if panels is not None and i < panels[0]:  # a head grid's panel title: as wide as its panel
            room, high = panels[1], panels[2]
        elif not on_paper:
            a.font.size = round(size * ratio)
            continue
        elif xref.endswith("domain"):  # a panel's title: as wide as its panel
            name = "xaxis" + xref.split()[0][1:]
            lo, hi = fig.layout[name].domain or (0.0, 1.0)
            room = widths.get(name, (hi - lo) * plot[0])
        else:
            room = plot[0]
        target = font
        while target > MIN_TICK_FONT and (
            _TEXT_SAFETY * text_width(a.text or "", target) > room or _TITLE_LINE * target > high
        ):
            target -= 1
        a.font.size = target


def _bar_labels_under_title(fig: go.Figure) -> None:
    """A vertical colour bar's numbers written under their ticks where its title stands on top: at a slide's type
    the top number, centred on the bar's end, reached up into the title ("weight" over "1")."""
    bars = [ax.colorbar for ax in fig.select_coloraxes()]
    bars += [t.colorbar for t in fig.data if getattr(t, "colorbar", None) is not None and t.type != "scatter"]
    for bar in bars:
        vertical = bar.orientation in (None, "v")
        if vertical and bar.title.text and bar.title.side in (None, "top"):
            bar.ticklabelposition = "outside bottom"


def _square_cells(fig: go.Figure, grid: dict | None = None) -> None:
    """Every heatmap's cells square: its y axis scaled to its x axis, both shrinking into their domain (a head
    grid's token cells, ``sx × sy`` cells of its heatmap each)."""
    ratio = grid["sx"] / grid["sy"] if grid else 1.0
    for trace in fig.data:
        if trace.type != "heatmap":
            continue
        x_name, y_name = _axis_names(trace)
        fig.layout[y_name].update(scaleanchor=trace.xaxis or "x", scaleratio=ratio, constrain="domain")
        fig.layout[x_name].update(constrain="domain")


def _axis_names(trace: object) -> tuple[str, str]:
    return "xaxis" + (trace.xaxis or "x")[1:], "yaxis" + (trace.yaxis or "y")[1:]


def _fit_ticks(fig: go.Figure, font: int, plot: tuple[float, float]) -> tuple[dict[str, float], dict[str, int]]:
    """Each heatmap's tick labels at ``font`` px where its square cells leave room, else the largest size
    that fits a cell; below :data:`~.labels.MIN_TICK_FONT` every k-th label is kept instead.

    Returns the width in px each heatmap's x axis will draw (square cells can leave part of its domain) and
    the axes thinned here with their k (``x``/``y`` of the first panel: a grid's panels are all alike).
    """
    layout, widths, thinned = fig.layout, {}, {}
    for trace in fig.data:
        rows, cols = _shape(trace.z) if trace.type == "heatmap" else (0, 0)
        if not rows or not cols:
            continue
        x_name, y_name = _axis_names(trace)
        x_lo, x_hi = layout[x_name].domain or (0.0, 1.0)
        y_lo, y_hi = layout[y_name].domain or (0.0, 1.0)
        cell = min((x_hi - x_lo) * plot[0] / cols, (y_hi - y_lo) * plot[1] / rows)
        widths[x_name] = cell * cols
        for name, n, labels in ((x_name, cols, trace.x), (y_name, rows, trace.y)):
            axis = layout[name]
            vals = list(axis.tickvals) if axis.tickvals is not None else list(labels if labels is not None else [])
            step = max(1, n // len(vals)) if vals else 1
            size = int(cell * step / LABEL_PITCH)
            if size < MIN_TICK_FONT and vals:
                k = math.ceil(MIN_TICK_FONT * LABEL_PITCH / (cell * step))
                text = list(axis.ticktext) if axis.ticktext is not None else [str(v) for v in vals]
                axis.update(tickmode="array", tickvals=vals[::k], ticktext=text[::k])
                thinned[name[0]] = max(thinned.get(name[0], 1), k * step)
                size = MIN_TICK_FONT
            axis.tickfont.size = min(font, size)
    return widths, thinned


def _shape(z: object) -> tuple[int, int]:
    """Rows and columns of a heatmap's z: a nested list, an array, or plotly's typed array (``{dtype, bdata,
    shape}``, what a figure rebuilt from its JSON holds)."""
    if z is None:
        return 0, 0
    if isinstance(z, dict):
        dims = [int(d) for d in str(z.get("shape", "0")).split(",")]
        return (dims[0], dims[1]) if len(dims) == 2 else (0, 0)
    shape = np.shape(np.asarray(z, dtype=object))
    return (shape[0], shape[1]) if len(shape) == 2 else (0, 0)
