"""Margins that already hold a chart's outer labels, so plotly lays the chart out once in the browser.

Streamlit's chart theme turns plotly's ``automargin`` on for every axis and starts from margins of
10 px. Plotly then draws the whole chart, measures the tick labels, axis titles, colour bars and
legends that stick out, widens the margins and draws everything again: about half of the time a chart
takes to draw (a heatmap grid of eight heads: 116 ms against 65 ms). :func:`reserve_margins` makes that
second pass unnecessary by giving each side the room plotly would have asked for, estimated from the
label texts at Streamlit's chart font (Source Sans, its advance widths below) and the theme's spacing
(axis title standoffs of 24 px (y) and 20 px (x), colour bars 16 px thick). ``automargin`` stays on: a
label the estimate missed still gets its room (with the second pass), it is never cut off. Estimates
round up, so a side is at most a few pixels wider than plotly would have made it.

:func:`attn_core.figures.apply_fonts` applies it with the fonts, so the page, the command line and the
exports share one layout (an export, drawn with plotly's own template, gets a few pixels more room than
plotly would have given it). :func:`~attn_core.figures.heatmap_grid` makes itself taller by what its
bottom margin grows, so its panels keep the height its labels were planned for.
"""

from __future__ import annotations

import base64
import math
import re
from collections.abc import Iterable

import numpy as np

__all__ = ["PINNED", "pin_axes", "reserve_margins", "text_width"]

# Advance widths (1/1000 em) of Source Sans, the font Streamlit gives plotly charts, measured in Chromium:
# printable ASCII from " " to "~", then the other symbols the charts use; CJK characters are 1 em.
_ASCII = (
    "200 289 426 497 497 824 609 249 303 303 418 497 249 311 249 350 497 497 497 497 497 497 497 497 497 497 249 "
    "249 497 497 497 425 847 543 588 571 615 527 494 617 652 263 479 579 486 727 647 664 566 664 569 534 536 645 "
    "515 786 513 476 539 303 350 303 497 500 542 504 553 456 555 496 292 504 544 246 247 495 255 829 547 542 555 "
    "555 347 419 338 544 467 719 446 467 425 303 241 303 497"
)
_WIDTHS = (
    {chr(32 + i): int(v) / 1000 for i, v in enumerate(_ASCII.split())}
    | {
        "−": 0.497,
        "–": 0.48,
        "—": 0.8,
        "·": 0.249,
        "√": 0.557,
        "‖": 0.391,
        "∂": 0.528,
        "μ": 0.562,
        "×": 0.497,
        "±": 0.497,
        "…": 0.948,
        "‘": 0.249,
        "’": 0.249,
        "“": 0.426,
        "”": 0.426,
        "τ": 0.458,
        "π": 0.586,
        "σ": 0.546,
        "≈": 0.497,
        "≤": 0.497,
        "≥": 0.497,
        "→": 0.619,
        "°": 0.331,
        "\u200b": 0.0,
    }
    | {c: 0.367 for c in "₀₁₂₃₄₅₆₇₈₉⁰¹²³⁴⁵⁶⁷⁸⁹⁻"}
)
_DEFAULT_EM = 0.6  # any other character: wider than most
_SUPERSCRIPT = 1.0  # plotly's <sup> (the exponent of 10⁻⁵): as wide as full-size text, measured
# plotly's own tags; any other text between angle brackets is drawn as it is (a byte token of SmolLM2: "<E7>")
_TAG = re.compile(r"</?(?:b|i|em|strong|sub|sup|br|span|a|s|u)\b[^>]*>", flags=re.I)

# Streamlit's chart theme and what plotly adds around labels (px), from the app measured in Chromium.
_STANDOFF = {"x": 20, "y": 24}  # axis title standoff: spacing xl (x), twoXL (y)
_CAP_SHIFT = 0.70  # plotly: a one-line axis title with a standoff takes 0.7 of its font size
_LINE = 1.3  # plotly's line height, in font sizes
_PUSH_GAP = 10  # every push plotly makes ends 10 px beyond what it measured
_TICK_GAP = 2.6  # with ticks outside: ticklen plus this
_AXIS_NAME = re.compile(r"[xy]axis\d*")
#: (px, px per px of title font) that bring a pinned title's annotation to where plotly draws the axis title, beyond
#: the estimated reach of the labels: the estimate runs ~8 px long for rotated labels, and an annotation's text
#: sits lower in its box than a title's (measured in Chromium at 15 and 22 px titles, English and Chinese: ±1 px)
_PIN_SHIFT = {"x": (-10.5, -0.3), "y": (-10.0, 0.0)}


def _gap(kind: str, font: float) -> float:
    """px between the axis line and its labels' far edge, beyond the labels (measured at 13 and 20 px)."""
    return {"y": 6.4 + 0.2 * font, "x": 9.0, "rotated": 5.6 + 0.52 * font}[kind]


def _colorbar_width(label_w: float, title_w: float, font: float) -> float:
    """The right margin a colour bar takes: its 16 px bar, labels and paddings, or its title if wider."""
    return max(label_w + 56.4 + 1.2 * font, title_w + 48.5 if title_w else 0.0) + 14.0 + 0.9 * font


_LEGEND_SYMBOL = 48.0  # a horizontal legend item: its symbol and gaps, beyond its name
_LISTED = ("scatter", "scattergl", "bar", "histogram", "box", "violin")  # traces a legend lists by default
_LEGEND_SIDE = 80.5  # a vertical legend right of the plot: its symbols, paddings and gap, beyond the longest name
_SLACK = 3.0  # px added to a raised side: the estimate is not exact, and a 1 px push redraws everything
_ASSUMED_WIDTH = 980  # the chart width the label estimates assume (the main column of a 1440 px wide window)


def text_width(text: object, size: float) -> float:
    """Width in px of ``text`` (plotly's HTML subset: tags are dropped, a ``<sup>`` counts 70 %) at ``size`` px."""
    s = str(text)
    if "<" not in s:
        return size * _em(s)
    sup = "".join(re.findall(r"<sup>(.*?)</sup>", s))
    plain = _TAG.sub("", re.sub(r"<sup>.*?</sup>", "", s))
    return size * (_em(plain) + _SUPERSCRIPT * _em(_TAG.sub("", sup)))


def _em(s: str) -> float:
    total = 0.0
    for ch in s:
        total += _WIDTHS.get(ch, 1.0 if ord(ch) >= 0x2E80 else _DEFAULT_EM)  # CJK and full-width forms: 1 em
    return total


def _lines(text: object) -> int:
    return 1 + len(re.findall(r"<br\s*/?>", str(text or ""), flags=re.I))


# ---------------------------------------------------------------- the numbers on an axis
def _values(v: object) -> np.ndarray:
    """A trace's x or y as floats (plotly's typed arrays ``{dtype, bdata, shape}`` decoded); strings give NaN."""
    if isinstance(v, dict) and "bdata" in v:
        arr = np.frombuffer(base64.b64decode(v["bdata"]), dtype=np.dtype(v["dtype"]))
        return arr.astype(np.float64).reshape(-1)
    if isinstance(v, np.ndarray) and v.dtype.kind in "biuf":
        return v.astype(np.float64).reshape(-1)
    if isinstance(v, np.ndarray):
        v = v.tolist()
    if isinstance(v, (list, tuple)):
        out = []
        for x in _flatten(v):
            try:
                out.append(float(x))
            except (TypeError, ValueError):
                out.append(math.nan)
        return np.asarray(out, dtype=np.float64)
    return np.empty(0)


def _flatten(v: Iterable) -> Iterable:
    for x in v:
        if isinstance(x, (list, tuple)):
            yield from _flatten(x)
        else:
            yield x


def _nice(rough: float) -> float:
    """Plotly's linear tick step: 2, 5 or 10 times a power of ten, at least ``rough``."""
    base = 10 ** math.floor(math.log10(rough))
    return base * next(m for m in (1, 2, 5, 10) if m * base >= rough * (1 - 1e-9))


def _number(x: float, step: float, fmt: str | None) -> str:
    if fmt:
        try:
            return format(x, fmt.lstrip("~"))
        except (ValueError, TypeError):
            return f"{x:g}"
    digits = max(0, -math.floor(math.log10(step) + 1e-9))
    text = f"{x:.{digits}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    big = abs(x) >= 10_000  # plotly's default format: 10k, 1M
    if big:
        exp = min(4, int(math.log10(abs(x)) // 3))
        text = f"{x / 10 ** (3 * exp):g}" + " kMGT"[exp]
    return text.replace("-", "−")


def _linear_labels(lo: float, hi: float, fmt: str | None) -> list[str]:
    """Every label plotly might write between ``lo`` and ``hi`` at 4 to 10 ticks (the widest decides)."""
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi <= lo:
        return ["0"]
    labels = []
    for n in (4, 6, 10):
        step = _nice((hi - lo) / n)
        k0, k1 = math.ceil(lo / step - 1e-9), math.floor(hi / step + 1e-9)
        labels += [_number(k * step, step, fmt) for k in range(k0, k1 + 1)][:40]
    return labels


def _log_labels(lo: float, hi: float, power: bool) -> list[str]:
    """Labels of a log axis from 10^lo to 10^hi: decades, and 2 and 5 between them on short ranges."""
    a, b = math.floor(lo), math.ceil(hi)
    labels = []
    for e in range(a, b + 1):
        if power and not 0 <= e <= 3:
            labels.append(f"10<sup>{str(e).replace('-', '−')}</sup>")
            continue
        v = 10.0**e
        if v >= 1:
            labels.append(_number(v, 1, None))
        else:  # 0.1, 0.01 ... and plotly's SI prefixes below 0.001 (100μ)
            labels.append(f"{v:.{-e}f}" if e >= -3 else f"{10 ** (e % 3)}{'mμnp'[min(3, (-e - 1) // 3)]}")
    if hi - lo <= 3:
        labels += ["2", "5"]
    return labels


def _axis_labels(name: str, ax: dict, data: list[dict]) -> list[str]:
    """The tick labels plotly will write on axis ``name`` (``xaxis2``), or its widest candidates."""
    if ax.get("showticklabels") is False:
        return []
    if "ticktext" in ax:
        return [str(t) for t in ax["ticktext"]]
    if "tickvals" in ax:
        return [str(t) for t in ax["tickvals"]]
    letter, ref = name[0], name[0] + name[5:]
    traces = [t for t in data if (t.get(f"{letter}axis") or letter) == ref]
    values = [_values(t.get(letter, [])) for t in traces]
    kind = ax.get("type")
    raw = [str(x) for t in traces for x in _flatten(_listed(t.get(letter))) if not isinstance(t.get(letter), dict)]
    if kind == "category" or (kind is None and raw and any(_is_text(x) for x in raw)):
        return raw
    nums = np.concatenate(values) if values else np.empty(0)
    nums = nums[np.isfinite(nums)]
    rng = ax.get("range")
    if kind == "log":
        if rng and None not in rng:
            lo, hi = rng
        else:
            pos = nums[nums > 0]
            lo, hi = (math.log10(pos.min()), math.log10(pos.max())) if pos.size else (0.0, 1.0)
        return _log_labels(lo, hi, ax.get("exponentformat") == "power")
    if rng and None not in rng:
        lo, hi = rng
    else:
        bars = any(t.get("type") in ("bar", "histogram") for t in traces)
        lo, hi = (float(nums.min()), float(nums.max())) if nums.size else (0.0, 1.0)
        lo, hi = (min(lo, 0.0), max(hi, 0.0)) if bars else (lo, hi)
        pad = 0.05 * (hi - lo)
        lo, hi = lo - pad, hi + pad
    return _linear_labels(min(lo, hi), max(lo, hi), ax.get("tickformat"))


def _listed(v: object) -> Iterable:
    if isinstance(v, np.ndarray):
        return v.tolist() if v.dtype.kind not in "biuf" else []  # numbers never name categories
    return v if isinstance(v, (list, tuple)) else []


def _is_text(x: str) -> bool:
    try:
        float(x)
    except ValueError:
        return True
    return False


# ---------------------------------------------------------------- what sticks out of the plot area
def _font(d: dict | None, key: str, fallback: float) -> float:
    size = ((d or {}).get(key) or {}).get("size")
    return float(size) if size else fallback


def _has_heatmap(name: str, data: list[dict]) -> bool:
    letter, ref = name[0], name[0] + name[5:]
    return any(t.get("type") == "heatmap" and (t.get(f"{letter}axis") or letter) == ref for t in data)


def _depth(name: str, ax: dict, data: list[dict], font: float, length: float) -> float:
    """How far the axis's tick labels reach from the axis line (px): plotly's ``ax._depth``."""
    labels = _axis_labels(name, ax, data)
    if not labels:
        return 0.0
    ticks = ax.get("ticks", "outside" if _has_heatmap(name, data) else "")
    tick = (ax.get("ticklen", 5) + _TICK_GAP) if ticks == "outside" else 0.0
    widths = [text_width(s, font) for s in labels]
    w = max(widths)
    high = font * _LINE * (1.3 if any("<sup>" in s for s in labels) else 1.0)
    if name[0] == "y":
        return w + _gap("y", font) + tick
    angle = ax.get("tickangle")
    if angle in (None, "auto"):  # plotly turns labels 30° when two neighbours would overlap
        gap = length / max(1, len(widths) - 1)
        angle = -30 if any((u + v) / 2 + 0.4 * font > gap for u, v in zip(widths, widths[1:], strict=False)) else 0
    a = math.radians(abs(float(angle)))
    if a == 0:
        return high + _gap("x", font) + tick
    return w * math.sin(a) + high * math.cos(a) + _gap("rotated", font) + tick + 1  # a rotated outline's rounding


def _title_depth(ax: dict, letter: str, font: float) -> float:
    title = ax.get("title") or {}
    text = title.get("text") if isinstance(title, dict) else title
    if not text:
        return 0.0
    size = _font(title, "font", font + 2) if isinstance(title, dict) else font + 2
    extra = _lines(text) - 1
    return size * (_CAP_SHIFT + extra * _LINE) + float(title.get("standoff", _STANDOFF[letter]))


#: ``layout.meta`` key: the axes whose tick labels the browser should not measure (:func:`pin_axes`)
PINNED = "pinned_axes"


def pin_axes(layout: dict, data: list[dict], names: Iterable[str], width: float = _ASSUMED_WIDTH) -> dict:
    """``layout`` (a browser's, Streamlit's chart theme written in) with plotly's ``automargin`` off on the axes
    ``names`` and each of their titles drawn as an annotation where plotly draws an axis title: its standoff beyond
    the tick labels' estimated reach. A new dict; ``layout`` is not changed.

    With ``automargin`` on, or with a title (which plotly moves clear of the labels), plotly measures every tick
    label of the axis whenever it draws the chart, each in a forced layout of the page. A label is measured again
    whenever its place moves, so a chart whose number of tokens changed measures them all: the MLA page's three
    panels of rotated key labels took ~45 ms of a 12 -> 13 token move that way. Call this only on a layout whose
    margins :func:`reserve_margins` already raised, with the titles on the axes: the room stays reserved.
    Axes left as they are: one missing or hidden, not at the bottom (x) or left (y), or whose labels cannot be
    estimated (an odd value: plotly measures them as before).
    """
    out = dict(layout)
    notes = list(out.get("annotations") or [])
    base_font = _font(out, "font", 12.0)
    for name in names:
        ax = out.get(name)
        letter = name[:1]
        side = "bottom" if letter == "x" else "left"
        if not (isinstance(ax, dict) and _AXIS_NAME.fullmatch(name)) or ax.get("visible") is False:
            continue
        if ax.get("side", side) != side:
            continue
        dom = ax.get("domain") or [0.0, 1.0]
        try:
            depth = _depth(name, ax, data, _font(ax, "tickfont", base_font), (dom[1] - dom[0]) * width)
        except (ArithmeticError, LookupError, TypeError, ValueError):
            continue
        title = ax.get("title") or {}
        title = title if isinstance(title, dict) else {"text": title}
        ax = {**ax, "automargin": False, "title": {"text": ""}}
        out[name] = ax
        text = title.get("text")
        if not text:
            continue
        font = dict(title.get("font") or {})
        size = float(font.get("size") or base_font + 2)
        font["size"] = size
        px, per_font = _PIN_SHIFT[letter]
        shift = -(depth + float(title.get("standoff", _STANDOFF[letter])) + px + per_font * size)
        ref, anchor = letter + name[5:], str(ax.get("anchor") or ("y" if letter == "x" else "x"))
        if letter == "x":
            at = dict(
                xref=f"{ref} domain",
                x=0.5,
                yref=f"{anchor} domain",
                y=0.0,
                xanchor="center",
                yanchor="top",
                yshift=shift,
            )
        else:
            at = dict(
                xref=f"{anchor} domain",
                x=0.0,
                yref=f"{ref} domain",
                y=0.5,
                xanchor="right",
                yanchor="middle",
                xshift=shift,
                textangle=-90,
            )
        notes.append(dict(text=text, **at, showarrow=False, font=font))
    if notes:
        out["annotations"] = notes
    return out


def _axis_pushes(layout: dict, data: list[dict], width: float) -> tuple[list[tuple[float, float]], ...]:
    """``(left, bottom)``: each axis's push as ``(position of its line as a fraction of the plot, px)``."""
    left, bottom = [], []
    base_font = _font(layout, "font", 12.0)
    for name, ax in layout.items():
        if not (isinstance(ax, dict) and re.fullmatch(r"[xy]axis\d*", name)) or ax.get("visible") is False:
            continue
        letter = name[0]
        other = layout.get(f"{'y' if letter == 'x' else 'x'}axis{str(ax.get('anchor') or '')[1:]}", {})
        at = float((other.get("domain") or [0.0, 1.0])[0])
        dom = ax.get("domain") or [0.0, 1.0]
        font = _font(ax, "tickfont", base_font)
        length = (dom[1] - dom[0]) * width
        push = _depth(name, ax, data, font, length) + _title_depth(ax, letter, font)
        if push <= 0:
            continue
        if letter == "y" and ax.get("side", "left") == "left":
            left.append((at, push + _PUSH_GAP))
        elif letter == "x" and ax.get("side", "bottom") == "bottom":
            bottom.append((at, push + _PUSH_GAP))
    return left, bottom


def _overhang(layout: dict, data: list[dict] | None = None) -> float:
    """The right margin half of a last x label needs when it sits at the right end of a full-width axis.

    The axis's right end is its ``range`` or, without one (autorange), the largest x of the lines drawn on it: a
    line ends exactly there (plotly pads the range for markers, bars and text, so those are left as they were)."""
    need = 0.0
    for name, ax in layout.items():
        if not (isinstance(ax, dict) and re.fullmatch(r"xaxis\d*", name)) or "tickvals" not in ax:
            continue
        dom = ax.get("domain") or [0.0, 1.0]
        vals = _values(ax["tickvals"])
        vals = vals[np.isfinite(vals)]
        if dom[1] < 1 or not vals.size or ax.get("showticklabels") is False:
            continue
        log = ax.get("type") == "log"
        if log:
            vals = vals[vals > 0]
        end = _right_end(ax, name, data or [], log)
        if end is None or not vals.size:
            continue
        hair = 1e-6 * max(abs(end), 1.0)
        at = np.log10(vals) if log else vals
        if not (at <= end + hair).any():
            continue
        last = float(vals[at <= end + hair].max())  # a tick past the end is not drawn
        if (math.log10(last) if log else last) >= end - hair:
            texts = ax.get("ticktext") or []
            i = int(np.argmax(_values(ax["tickvals"]) == last))
            text = texts[i] if i < len(texts) else f"{last:g}"
            need = max(need, text_width(text, _font(ax, "tickfont", _font(layout, "font", 12.0))) / 2 + _PUSH_GAP)
    return need


def _right_end(ax: dict, name: str, data: list[dict], log: bool) -> float | None:
    """Where x axis ``name`` ends on the right, in its own units (log10 on a log axis); None when unknown (no
    range and no numeric x on it)."""
    rng = ax.get("range")
    if rng and None not in rng:
        return float(max(rng))
    if rng or ax.get("autorange") not in (None, True):
        return None
    ref = "x" + name[len("xaxis") :]
    on = [t for t in data if (t.get("xaxis") or "x") == ref and t.get("visible", True) is True]
    if not all(_line_only(t) for t in on):
        return None  # plotly pads the range for markers, bars and text: the last label stands inside
    xs = [_values(t.get("x", [])) for t in on]
    xs = [x[np.isfinite(x) & (x > 0 if log else True)] for x in xs]
    xs = [x for x in xs if x.size]
    if not xs:
        return None
    hi = max(float(x.max()) for x in xs)
    return math.log10(hi) if log else hi


def _line_only(trace: dict) -> bool:
    """A scatter trace drawn as a line alone (its mode says so), which plotly's autorange does not pad."""
    mode = trace.get("mode")
    return (
        trace.get("type", "scatter") == "scatter"
        and isinstance(mode, str)
        and not {"markers", "text"} & set(mode.split("+"))
    )


def _colorbar_push(layout: dict, data: list[dict]) -> float:
    """The right margin a colour bar needs (0 without one): its labels or its title, whichever is wider."""
    need = 0.0
    font = _font(layout, "font", 12.0)
    bars = []
    for t in data:
        if t.get("type") not in ("heatmap", "contour", "histogram2d"):
            continue
        axis = t.get("coloraxis")
        if axis:
            ca = layout.get(axis, {})
            if ca.get("showscale") is not False:
                bars.append((ca.get("colorbar") or {}, ca.get("cmin"), ca.get("cmax"), t))
        elif t.get("showscale") is not False:
            bars.append((t.get("colorbar") or {}, t.get("zmin"), t.get("zmax"), t))
    for bar, lo, hi, trace in {id(b[0]) if b[1] is not None else id(b[3]): b for b in bars}.values():
        if lo is None or hi is None:
            z = _values(trace.get("z", []))
            z = z[np.isfinite(z)]
            lo, hi = (float(z.min()), float(z.max())) if z.size else (0.0, 1.0)
        size = _font(bar, "tickfont", font)
        labels = [text_width(s, size) for s in _linear_labels(lo, hi, bar.get("tickformat"))]
        title = bar.get("title") or {}
        lines = re.split(r"<br\s*/?>", str(title.get("text") or ""), flags=re.I)  # a title in lines: its widest
        title_w = max(text_width(line, _font(title, "font", font)) for line in lines) if title.get("text") else 0.0
        need = max(need, _colorbar_width(max(labels, default=0.0), title_w, size))
    return need


def _legend_names(layout: dict, data: list[dict]) -> list[str]:
    """The names the legend lists (one per legend group), none when plotly shows no legend."""
    seen, names = set(), []
    for t in data:
        group = t.get("legendgroup") or t.get("name")
        listed = t.get("showlegend", t.get("type", "scatter") in _LISTED)  # a heatmap is listed only when asked
        if not listed or not t.get("name") or group in seen:
            continue
        seen.add(group)
        names.append(str(t["name"]))
    shown = layout.get("showlegend")
    return names if shown or (shown is None and len(names) > 1) else []


def _legend_right(layout: dict, data: list[dict]) -> float:
    """The right margin a vertical legend beside the plot takes (plotly's default place), else 0."""
    legend = layout.get("legend") or {}
    if legend.get("orientation", "v") != "v" or float(legend.get("x", 1.02)) < 1:
        return 0.0
    font = _font(legend, "font", _font(layout, "font", 12.0))
    names = _legend_names(layout, data)
    return max((text_width(n, font) for n in names), default=-_LEGEND_SIDE) + _LEGEND_SIDE


def _legend_push(layout: dict, data: list[dict], width: float) -> tuple[float, float] | None:
    """A horizontal legend under the plot: ``(its y as a fraction of the plot, px it needs)``."""
    legend = layout.get("legend") or {}
    if legend.get("orientation") != "h" or float(legend.get("y", 1.0)) >= 0:
        return None
    font = _font(legend, "font", _font(layout, "font", 12.0))
    items = [_LEGEND_SYMBOL + text_width(n, font) for n in _legend_names(layout, data)]
    if not items:
        return None
    rows, used = 1, 0.0
    for w in items:
        if used and used + w > width:
            rows, used = rows + 1, 0.0
        used += w
    return float(legend["y"]), rows * (_LINE * font + 13.0) + _PUSH_GAP  # a row: 30 px at 13 px


def _solve(base: float, other: float, total: float, pushes: Iterable[tuple[float, float]]) -> float:
    """Plotly's margin for one side: ``base`` unless a push at fraction ``f`` needs ``(p + (other - total)·f) / (1 - f)``."""
    need = base
    for f, p in pushes:
        if f < 1:
            need = max(need, (p + (other - total) * f) / (1 - f))
    return need


def reserve_margins(spec: dict, width: float = _ASSUMED_WIDTH) -> dict:
    """``spec`` (a plotly figure as JSON-ready dicts) with its left, right and bottom margins raised to what
    plotly's ``automargin`` would make them at ``width`` px in Streamlit's chart theme (in place; returns it).

    A figure without a layout, or whose margins already hold everything, is returned as it was; so is one
    whose labels cannot be estimated (an odd value): plotly's automargin then widens its margins as before.
    """
    layout, data = spec.get("layout"), spec.get("data") or []
    if not isinstance(layout, dict):
        return spec
    margin = dict(layout.get("margin") or {})
    try:
        new = _margins(layout, data, margin, width)
    except (ArithmeticError, LookupError, TypeError, ValueError):  # an estimate, never a reason to fail a chart
        return spec
    if any(v > margin.get(k, -1) for k, v in new.items()):
        margin.update(new)
        layout["margin"] = margin
    return spec


def _margins(layout: dict, data: list[dict], margin: dict, width: float) -> dict[str, int]:
    l0, r0, t0, b0 = (float(margin.get(k, 80 if k in "lr" else 100 if k == "t" else 80)) for k in "lrtb")
    height = float(layout.get("height") or 450)
    left, bottom = _axis_pushes(layout, data, width - l0 - r0)
    legend = _legend_push(layout, data, width - l0 - r0)
    if legend:
        bottom.append(legend)
    new = {
        "l": _solve(l0, r0, width, left),
        "r": max(r0, _colorbar_push(layout, data), _overhang(layout, data), _legend_right(layout, data)),
        "b": _solve(b0, t0, height, bottom),
    }
    return {
        k: int(v if v <= base else math.ceil(v + _SLACK))
        for (k, v), base in zip(new.items(), (l0, r0, b0), strict=True)
    }
