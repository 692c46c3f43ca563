"""Axis labels that a lecturer can point at: every token labelled up to :data:`LABELLED` a side, thinned (and said) beyond."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from attn_core.figures.base import Style
from attn_core.figures.margins import text_width

__all__ = [
    "PLOT_PX",
    "CHART_PX",
    "SLIDE_CHART_H",
    "SLIDE_STEPPER_PX",
    "LABEL_PITCH",
    "ROW_PITCH",
    "MIN_TICK_FONT",
    "READABLE_TICK_FONT",
    "LABELLED",
    "LABEL_CHARS",
    "MAX_GRID_PX",
    "Ticks",
    "tick_plan",
    "key_ticks",
    "label_angle",
    "label_reach",
    "short_label",
    "tick_axis",
    "thinned_note",
    "note_line",
    "bar_title",
]

PLOT_PX = {False: 760, True: 820}  # px across the panels of a full-width chart (normal, presentation at 1280 px)
# px across a full-width chart (labels and colour bar included) where it is drawn narrowest: a page's main column
# beside its controls in a 1280 px window, the smallest laptop's (1280 - 2 × 80 padding - the 19rem column - its
# 2rem gap; 864 px below 1180 px, where the controls stand above the charts), and a slide at 1024 × 768 (1024 - its
# 4rem + 1.5rem padding). A phone: figures.phone.PHONE_PX.
CHART_PX = {False: 784, True: 936}
# px of height a slide leaves a head grid at 1280 × 720, the shorter of the two projector sizes: the screen less
# a deck's bar (or the page's title), the view selector and the page's stepper of heads (Streamlit stretches the
# chart to what is left, so its labels are planned for this)
SLIDE_CHART_H = 470
SLIDE_STEPPER_PX = 50  # px a slide's stepper takes (buttons and gap): a chart alone on its slide has them more
LABEL_PITCH = 1.2  # px of axis per px of tick font: neighbouring labels (rotated by 60° on x) do not touch
ROW_PITCH = 1.1  # px between the baselines of neighbouring labels per px of font: glyphs (about 1 font) and air
MIN_TICK_FONT = 8  # px: smaller labels are not legible, so beyond this labels are thinned (and the chart says so)
READABLE_TICK_FONT = {False: 9, True: 12}  # a grid takes fewer panels per row rather than go below this
LABELLED = 64  # a side of up to this many tokens always gets every label
LABEL_CHARS = 8  # characters of a token kept in a tick label (the hover shows it whole)
MAX_GRID_PX = 25_000  # px of panels: a grid that would be taller to label every token thins its labels instead


@dataclass(frozen=True)
class Ticks:
    """How one axis of ``n`` categories is labelled: tick ``font`` (px) and every ``step``-th category."""

    font: int
    step: int = 1
    angle: int = 0  # of a key axis's labels, degrees (0: level; -30 to -90: turned, their ends at their ticks)


def tick_plan(n: int, span_px: float, style: Style, pitch: float = LABEL_PITCH, least: int = MIN_TICK_FONT) -> Ticks:
    """The largest tick font up to ``style.font`` at which ``n`` labels fit along ``span_px`` px, ``pitch`` px
    apart per px of font.

    Below ``least`` (:data:`MIN_TICK_FONT`; a slide's charts keep their own font: ``least=style.font``) every
    ``step``-th label is kept instead, at ``least`` px (step > 1 only then).
    """
    cell = span_px / max(n, 1)
    font = min(style.font, int(cell / pitch + 1e-9))
    least = min(least, style.font)
    if font >= least:
        return Ticks(font)
    return Ticks(least, int(np.ceil(least * pitch / cell - 1e-9)))


def label_angle(width: float, pitch: float, font: float) -> int:
    """How far to turn key labels at most ``width`` px long, ``pitch`` px apart, at ``font`` px: level when
    they fit side by side with half a font of air, else the shallowest of 30°, 45° and 60° at which neighbours
    stay :data:`ROW_PITCH` fonts apart across their baselines (``pitch · sin θ``), else upright (90°)."""
    if width + 0.5 * font <= pitch:
        return 0
    for degrees in (30, 45, 60):
        if pitch * math.sin(math.radians(degrees)) >= ROW_PITCH * font:
            return -degrees
    return -90


def label_reach(width: float, font: float, angle: int) -> float:
    """px that labels at most ``width`` px long, at ``font`` px and turned by ``angle``, reach below their axis."""
    a = math.radians(abs(angle))
    return width * math.sin(a) + 1.3 * font * math.cos(a)


def key_ticks(labels: list[str], span_px: float, style: Style, least: int = MIN_TICK_FONT) -> Ticks:
    """The tick plan of a key axis of ``labels`` along ``span_px`` px: as :func:`tick_plan` with labels that may
    stand upright (:data:`ROW_PITCH`), turned no further than they need (:func:`label_angle`)."""
    ticks = tick_plan(len(labels), span_px, style, ROW_PITCH, least)
    pitch = span_px / max(len(labels), 1) * ticks.step
    width = max((text_width(short_label(s), ticks.font) for s in labels[:: ticks.step]), default=0.0)
    return Ticks(ticks.font, ticks.step, label_angle(width, pitch, ticks.font))


def short_label(label: str, chars: int = LABEL_CHARS) -> str:
    """A tick label of at most ``chars`` characters of token: ``"interna… (3)"`` for ``"internationally (3)"``."""
    token, sep, pos = label.rpartition(" (")
    if not sep or not pos.endswith(")"):
        token, pos = label, ""
    if len(token) > chars:
        token = token[: chars - 1] + "…"
    return f"{token} ({pos}" if pos else token


def tick_axis(labels: list[str], ticks: Ticks) -> dict:
    """Plotly axis settings that draw every ``ticks.step``-th label (shortened) at ``ticks.font`` px."""
    vals = labels[:: ticks.step]
    return dict(
        tickmode="array", tickvals=vals, ticktext=[short_label(v) for v in vals], tickfont=dict(size=ticks.font)
    )


def thinned_note(style: Style, rows: Ticks, cols: Ticks, row_word: str, col_word: str) -> str:
    """The chart's note when labels had to be thinned ("" when every label is drawn)."""
    parts = [style.t("fig.ticks_axis", what=w, k=t.step) for w, t in ((row_word, rows), (col_word, cols)) if t.step > 1]
    return style.t("fig.ticks_thinned", parts=" · ".join(parts)) if parts else ""


def note_line(text: str, style: Style) -> str:
    """``text`` as the next line of a chart's title (``""`` for no text): smaller on a page (``<sub>``), at the
    style's font on a slide (plotly draws a ``<sub>`` at 70 % of the title's size: under a slide's 20 px)."""
    if not text:
        return ""
    if style.present:
        return f'<br><span style="font-size:{style.font}px">{text}</span>'
    return f"<br><sub>{text}</sub>"


def bar_title(text: str) -> str:
    """A colour bar's title in two lines where it is long ("max weight<br>in block"): over a 16 px bar, its width
    is what the chart's right margin takes."""
    if len(text) <= 12 or " " not in text:
        return text
    spaces = [i for i, ch in enumerate(text) if ch == " "]
    cut = min(spaces, key=lambda i: abs(i - len(text) / 2))
    return f"{text[:cut]}<br>{text[cut + 1 :]}"
