"""Chart text planned to fit where it is drawn, at the size a slide asks for: log axes' tick labels written out,
titles broken into lines that fit their panel's width.

plotly.js labels a log axis that spans less than a few decades at 1, 2 and 5 × 10^k and draws the 2 and the 5
as bare digits at three quarters of the tick font (15 px where a slide asks for 20), and writes powers of ten
with the exponent as a superscript at 70 % (``10⁻³`` at 14 px). :func:`log_ticks` chooses the ticks itself and
writes every label in full, the exponent with Unicode superscript digits at the tick font's size. A plotly title
or annotation never wraps: :func:`wrap` breaks it where :func:`~attn_core.figures.margins.text_width` says a line
would outgrow its room.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable

from attn_core.figures.margins import text_width

__all__ = ["log_ticks", "power_label", "wrap", "SLIDE_CHART_PX"]

#: px across the main column of a slide at 1024×768 (the narrower projector size, less the slide's paddings):
#: what a chart of a slide's full width has for its title and panels
SLIDE_CHART_PX = 930

_SUPERSCRIPT = str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻")
MAX_TICKS = 7  # labels an axis gets at most (every other decade, every third ... beyond)


def power_label(k: int) -> str:
    """``10⁻³`` for ``k = -3``; ``1`` and ``10`` as themselves."""
    if k == 0:
        return "1"
    if k == 1:
        return "10"
    return "10" + str(k).translate(_SUPERSCRIPT)


def _plain(x: float) -> str:
    """``0.05``, ``200``, ``5k``, ``2M``, ``1G``: a tick value in full."""
    for div, unit in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if x >= div:
            return f"{x / div:.3g}{unit}"
    return f"{x:.3g}"


def log_ticks(values: Iterable[float], powers: bool = False, max_ticks: int = MAX_TICKS) -> dict:
    """``tickvals`` and ``ticktext`` of a log axis over the positive finite ``values``: 1, 2 and 5 × 10^k where
    they span about two decades or less, else the powers of ten (every other one, every third ... so that at most
    ``max_ticks`` remain); labelled ``0.05``, ``200``, ``5k`` (``powers``: the powers of ten as ``10⁻³``). Empty
    when no value is positive."""
    pos = [float(v) for v in values if v is not None and math.isfinite(float(v)) and float(v) > 0]
    if not pos:
        return {}
    lo, hi = min(pos), max(pos)
    k0, k1 = math.floor(math.log10(lo) + 1e-9), math.ceil(math.log10(hi) - 1e-9)
    fine = [m * 10.0**k for k in range(k0, k1 + 1) for m in (1, 2, 5) if lo / 2.5 <= m * 10.0**k <= hi * 2.5]
    if len(fine) <= max_ticks and (not powers or k1 - k0 <= 2):
        return dict(tickvals=fine, ticktext=[_plain(t) for t in fine])
    decades = list(range(k0, k1 + 1))
    step = max(1, math.ceil(len(decades) / max_ticks))
    decades = [k for k in decades if (k - decades[-1]) % step == 0]
    powers = powers or decades[0] < -3  # 10⁻⁸ rather than 1e-08, and then for every decade
    text = [power_label(k) if powers else _plain(10.0**k) for k in decades]
    return dict(tickvals=[10.0**k for k in decades], ticktext=text)


# where a line may break: after a space, a comma or colon (Latin or full-width), a middle dot or an enumeration
# comma; between two CJK characters, but never before closing punctuation nor after an opening bracket
_BREAK = re.compile(r"(?<=[ ，：、；])|(?<=[\u2e80-\uffef])(?<![（《「])(?=[\u2e80-\uffef])(?![，：、；）。！？》」])")


def wrap(text: str, width_px: float, size: float) -> str:
    """``text`` with ``<br>`` inserted where a line at ``size`` px would be wider than ``width_px`` (its own
    ``<br>`` kept; a word wider than the room stays whole). Breaks at spaces, after commas and colons, between
    CJK characters; never inside a ``<tag>``."""
    out = []
    for line in re.split(r"<br\s*/?>", text):
        if text_width(line, size) <= width_px:
            out.append(line)
            continue
        cuts = [m.start() for m in _BREAK.finditer(line) if not _in_tag(line, m.start())]
        start = 0
        while text_width(line[start:], size) > width_px:
            fits = [c for c in cuts if c > start and text_width(line[start:c], size) <= width_px]
            if not fits:  # a word wider than the room: whole, on its own line
                fits = [c for c in cuts if c > start][:1]
                if not fits:
                    break
            # after a comma, colon or middle dot rather than between words, when that fills half the line or more
            strong = [
                c for c in fits if _STRONG.search(line[start:c]) and text_width(line[start:c], size) >= width_px / 2
            ]
            cut = (strong or fits)[-1]
            out.append(line[start:cut].strip().removesuffix("·").strip())  # a middle dot ends no line
            start = cut
        out.append(line[start:].strip())
    return "<br>".join(out)


_STRONG = re.compile(r"(, |: |· |[，：、；])$")


def _in_tag(line: str, i: int) -> bool:
    return line.rfind("<", 0, i) > line.rfind(">", 0, i)


_SUB = re.compile(r"<sub>(.*?)</sub>", re.S)
_LINE_HEIGHT = 1.3  # px of a title's line per px of its font


def fitted_title(text: str, width_px: float, title_px: int, sub_px: int) -> tuple[dict, int]:
    """A chart title that fits ``width_px``: its lines wrapped at ``title_px`` (a ``<sub>`` line at ``sub_px``,
    drawn at that size: plotly's ``<sub>`` would shrink it to 70 %), anchored 12 px below the chart's top; and the
    top margin its lines take (with 14 px to spare above the plot)."""
    lines, px = [], []
    for line in re.split(r"<br\s*/?>", text):
        sub = _SUB.fullmatch(line.strip())
        if sub:
            wrapped = wrap(sub.group(1), width_px, sub_px).split("<br>")
            lines += [f'<span style="font-size:{sub_px}px">{w}</span>' for w in wrapped]
            px += [sub_px] * len(wrapped)
        else:
            wrapped = wrap(line, width_px, title_px).split("<br>")
            lines += wrapped
            px += [title_px] * len(wrapped)
    title = dict(
        text="<br>".join(lines), font=dict(size=title_px), x=0, xanchor="left", y=1, yref="container", yanchor="top"
    )
    # plotly.js moves a title of several lines up by all but its first line's height, whatever its anchor: the pad
    # brings its first line back to 12 px below the top
    title["pad"] = dict(t=int(12 + sum(p * _LINE_HEIGHT for p in px[1:])), l=4)
    return title, int(12 + sum(p * _LINE_HEIGHT for p in px) + 14)
