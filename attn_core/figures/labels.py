"""Axis labels that a lecturer can point at: every token labelled up to :data:`LABELLED` a side, thinned (and said) beyond."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attn_core.figures.base import Style

__all__ = [
    "PLOT_PX",
    "LABEL_PITCH",
    "MIN_TICK_FONT",
    "READABLE_TICK_FONT",
    "LABELLED",
    "LABEL_CHARS",
    "MAX_GRID_PX",
    "Ticks",
    "tick_plan",
    "short_label",
    "tick_axis",
    "thinned_note",
]

PLOT_PX = {False: 760, True: 820}  # px across the panels of a full-width chart (normal, presentation at 1280 px)
LABEL_PITCH = 1.2  # px of axis per px of tick font: neighbouring labels (rotated by 60° on x) do not touch
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


def tick_plan(n: int, span_px: float, style: Style) -> Ticks:
    """The largest tick font up to ``style.font`` at which ``n`` labels fit along ``span_px`` px.

    Below :data:`MIN_TICK_FONT` every ``step``-th label is kept instead (step > 1 only then).
    """
    cell = span_px / max(n, 1)
    font = min(style.font, int(cell / LABEL_PITCH))
    if font >= MIN_TICK_FONT:
        return Ticks(font)
    return Ticks(MIN_TICK_FONT, int(np.ceil(MIN_TICK_FONT * LABEL_PITCH / cell)))


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
