"""A question's answers in a live lecture room: one bar per choice (or per answer given to a number question), the
right ones in green, the others grey, each bar's count written on it."""

from __future__ import annotations

import math
from collections.abc import Sequence

from attn_core.figures.base import PlainFigure, Style, base_layout, plain_figure

RIGHT, WRONG = "#009E73", "#8c8c8c"  # Okabe-Ito green; a grey with 3.3:1 on white


def answers_figure(
    labels: Sequence[str],
    counts: Sequence[int],
    right: Sequence[bool],
    title: str,
    style: Style,
    height: int | None = None,
) -> PlainFigure:
    """Horizontal bars, first label on top: ``counts[i]`` answers gave ``labels[i]``, right when ``right[i]``; each
    count written after its bar, whole numbers on the axis. ``height``: the chart's (default: by the bars)."""
    n = len(labels)
    size = style.font
    top = max([int(c) for c in counts] or [0])
    step = max(1, math.ceil(top / 5))
    data = [
        {
            "type": "bar",
            "orientation": "h",
            "y": list(labels),
            "x": [int(c) for c in counts],
            "marker": {"color": [RIGHT if r else WRONG for r in right]},
            "text": [str(int(c)) for c in counts],
            "textposition": "outside",
            "textangle": 0,
            "textfont": {"size": size},
            "hovertemplate": "%{y}: %{x}<extra></extra>",
            "cliponaxis": False,
        }
    ]
    height = height or (90 if style.present else 70) + n * (2 * size + 14)
    layout = base_layout(
        title,
        style,
        height,
        showlegend=False,
        bargap=0.25,
        xaxis={
            "range": [0, (top or 1) * 1.15],
            "dtick": step,
            "tickformat": ",d",
            "showgrid": True,
            "fixedrange": True,
        },
        yaxis={"autorange": "reversed", "automargin": True, "fixedrange": True, "type": "category"},
    )
    return plain_figure(data, layout, style)
