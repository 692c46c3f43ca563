"""The figures' common ground: the style (fonts, colour scales), colours, fonts applied to any figure, one layout helper.

Every figure builder in :mod:`attn_core.figures` takes CPU numpy arrays, result
dataclasses and plain values and returns a ``plotly.graph_objects.Figure``; none
imports torch or computes beyond arranging arrays. Weights use one sequential,
colour-blind-safe scale; signed values a diverging scale centred at 0; masked
cells are grey, never the colour of weight 0.
"""

from __future__ import annotations

import base64
import re
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import chain

import numpy as np
import plotly.colors as pc
import plotly.graph_objects as go

from attn_core.figures.margins import reserve_margins
from attn_core.i18n import count, translate

__all__ = [
    "ColorScale",
    "explicit_scale",
    "WEIGHT_SCALE",
    "WEIGHT_SCALE_CONTRAST",
    "DIVERGING_SCALE",
    "MASK_GREY",
    "GROUP_COLORS",
    "GROUP_MIN_LUMINANCE",
    "GROUP_TEXT_COLORS",
    "relative_luminance",
    "MAX_HOVER_CELLS",
    "Style",
    "FONTS_SET",
    "apply_fonts",
    "base_layout",
    "plain_figure",
    "PlainFigure",
    "figure_spec",
    "slide_title",
    "group_color",
    "group_text_color",
    "pool_max",
]

ColorScale = tuple[tuple[float, str], ...]


def explicit_scale(colours: Sequence[str]) -> ColorScale:
    """Evenly spaced stops ``((0.0, c0), ..., (1.0, cN))``, the one form plotly.js takes as it is.

    The builders skip plotly's validation (``go.Figure(..., _validate=False)``), which is what would turn a
    named scale or a bare list of colours into stops: unvalidated, plotly.js does not know Python-only names
    such as ``RdBu_r`` and rejects bare colour lists, and silently draws its default blue-grey-red scale
    instead (whose 0.5 is the grey of masked cells), while the exports showed the intended one.
    """
    n = len(colours) - 1
    return tuple((round(i / n, 6), str(c)) for i, c in enumerate(colours))


WEIGHT_SCALE = explicit_scale(pc.sequential.Viridis)
# Inferno (black to pale yellow: the widest luminance range, readable on a projector) with its first stop
# moved from #000004 to #000000: Streamlit's chart theme uses #000001-#000020 as stand-in colours and repaints
# them with theme colours in the browser, which turned weight 0 pink.
WEIGHT_SCALE_CONTRAST = explicit_scale(["#000000", *pc.sequential.Inferno[1:]])
DIVERGING_SCALE = explicit_scale(pc.diverging.RdBu[::-1])  # blue (negative) - white (0) - red (positive)
MASK_GREY = "#b8b8b8"
# Okabe-Ito, colour-blind safe; one hue per KV group. Its eighth colour, black, is a mid grey here (as in the R
# Graphics Cookbook's colour-blind palette): a KV group's frame lies on its panel's edge cells, and black vanished on
# the dark end of the weight scales. Every hue has a relative luminance of at least GROUP_MIN_LUMINANCE; the grey
# also keeps 3:1 against white (the page) and against Viridis' darkest purple.
GROUP_COLORS = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#D55E00", "#56B4E9", "#F0E442", "#888888")
# Non-text contrast of 3:1 (WCAG 2.1, 1.4.11) against black, the darkest weight colour of the projector's scale:
# (L + 0.05) / (0 + 0.05) >= 3, so L >= 0.1. (The darkest hue, the blue, has 0.15.)
GROUP_MIN_LUMINANCE = 0.1
# The same hues darkened (each channel scaled) until text in them has 4.5:1 contrast on white (WCAG AA): the orange,
# sky blue, yellow and grey of GROUP_COLORS have 2.3, 2.3, 1.3 and 3.5. A dark scheme draws the hues themselves
# (ui.chart_theme).
GROUP_TEXT_COLORS = ("#0072B2", "#9E6D00", "#008762", "#A36085", "#C35600", "#3C7DA3", "#7F7822", "#767676")
MAX_HOVER_CELLS = 60_000


@dataclass(frozen=True)
class Style:
    """Font sizes and scales: normal, or large and high-contrast for a projector."""

    present: bool = False
    lang: str = "en"

    @property
    def font(self) -> int:
        return 20 if self.present else 13

    @property
    def title_font(self) -> int:
        return 26 if self.present else 16

    @property
    def weight_scale(self) -> ColorScale:
        return WEIGHT_SCALE_CONTRAST if self.present else WEIGHT_SCALE

    def t(self, key: str, /, **kw: object) -> str:
        return translate(key, self.lang, **kw)

    def count(self, n: int, unit: str) -> str:
        """``n`` with its unit, singular or plural (:func:`attn_core.i18n.count`)."""
        return count(n, unit, self.lang)


FONTS_SET = "fonts_set"  # layout.meta key of a figure whose builder already set every font and reserved its margins


def apply_fonts(fig: go.Figure, style: Style) -> go.Figure:
    """Set every axis, legend and colour-bar font explicitly, and margins with room for the labels at
    those fonts (in place; returns ``fig``).

    Streamlit's chart theme replaces plotly's inherited font sizes with its own
    small ones, so the sizes of :class:`Style` (20 px and more in presentation
    mode) must be set on each axis to reach the screen, the export and the CLI.
    The margins are widened to what plotly's ``automargin`` would make them
    (:func:`~attn_core.figures.margins.reserve_margins`), so the browser lays the
    chart out once instead of twice; the page, the command line and the exports
    all get them. A figure whose ``layout.meta`` says its builder set the fonts for
    this size (and so reserved its margins) is left as it is.
    """
    size, title = style.font, style.font + 2
    plain = fig.__dict__.get("_plain")  # a PlainFigure's layout dict, read without making the full figure
    meta = plain[1].get("meta") if plain is not None else fig.layout.meta
    if isinstance(meta, dict) and meta.get(FONTS_SET) == size:
        return fig
    _set_fonts(fig, size, title)
    return _reserve(fig)


_PLAIN = (str, int, float, bool, type(None))  # leaves that are never arrays
_PLAIN_TYPES = frozenset(_PLAIN)
_ROW_TYPES = frozenset((list, tuple))
_PLAIN_OR_ROWS = _PLAIN_TYPES | _ROW_TYPES


def _plain_rows(node: list | tuple) -> bool:
    """Whether ``node`` holds only plain values, or only lists and tuples of plain values (a click layer's
    ``customdata``, a table's rows): two passes in C instead of one Python call per row."""
    types = set(map(type, node))
    if types <= _PLAIN_TYPES:
        return True
    return types <= _ROW_TYPES and set(map(type, chain.from_iterable(node))) <= _PLAIN_TYPES


def _plain_dict(node: dict) -> bool:
    """Whether ``node``'s values are plain, or lists of plain values (or of such lists): nothing to encode."""
    types = set(map(type, node.values()))
    if types <= _PLAIN_TYPES:
        return True
    return types <= _PLAIN_OR_ROWS and all(_plain_rows(v) for v in node.values() if type(v) in _ROW_TYPES)


_NOT_ENCODED = ("geojson", "layer", "layers", "range")  # keys whose values plotly leaves as they are


def _tree(node: object) -> object:
    """A copy of the dicts and lists of a property tree; leaves shared."""
    if isinstance(node, dict):
        return {key: _tree(value) for key, value in node.items()}
    if isinstance(node, (list, tuple)):
        return [_tree(value) for value in node]
    return node


def _own(node: object) -> object:
    """A copy of the dicts of a property tree and of the lists that hold dicts or lists; lists of plain values,
    arrays and other leaves are shared. A figure's own dicts, cheaply: a builder's shared constants (a legend
    placement, a font) must not be changed through it, nor change it later."""
    if isinstance(node, dict):
        return {key: _own(value) for key, value in node.items()}
    if isinstance(node, (list, tuple)) and not set(map(type, node)) <= _PLAIN_TYPES:
        return [_own(value) for value in node]
    return node


_SHORT_TYPES = {
    "int8": "i1",
    "uint8": "u1",
    "int16": "i2",
    "uint16": "u2",
    "int32": "i4",
    "uint32": "u4",
    "float32": "f4",
    "float64": "f8",
}
_NARROWER = {"int64": ("int8", "int16", "int32"), "uint64": ("uint8", "uint16", "uint32")}


def _typed_array(v: np.ndarray) -> object:
    """plotly's ``to_typed_array_spec`` of a numeric numpy array (the same dict, or the array where plotly keeps it),
    without its conversion through narwhals, which cost more than the encoding (~0.15 ms an array)."""
    dtype = str(v.dtype)
    if v.size == 0:
        return v
    if dtype in _NARROWER:  # plotly.js has no 64-bit integers: the narrowest type that holds them, as plotly does
        lo, hi = v.min(), v.max()
        fits = [t for t in _NARROWER[dtype] if np.iinfo(t).min <= lo and hi <= np.iinfo(t).max]
        if not fits:
            return v
        v, dtype = v.astype(fits[0]), fits[0]
    if dtype not in _SHORT_TYPES:
        return v
    out = {"dtype": _SHORT_TYPES[dtype], "bdata": base64.b64encode(np.ascontiguousarray(v)).decode("ascii")}
    if v.ndim > 1:
        out["shape"] = str(v.shape)[1:-1]
    return out


#: A figure whose arrays hold at most this many numbers in all (each page's charts at its defaults: 5,624 at most)
#: goes to the browser with JSON lists; a larger one with base64 typed arrays (a third of the bytes for float32).
#: plotly.js decodes a typed array of a scatter trace anew each time it compares a figure with the one drawn, so
#: ``Plotly.react`` finds the trace changed and draws it again even when nothing changed. Streamlit draws each new
#: chart twice (before and after its width is known), so that second draw cost a full one: saturation's curves
#: 75 ms with typed arrays, 22 ms with lists (chromium, a bare page, the chart copied as Streamlit copies it).
PLAIN_ARRAYS_MAX = 6_000


def _array_numbers(node: dict | list | tuple) -> int:
    """How many numbers the arrays of a property tree that :func:`_encoded` would encode hold."""
    if not isinstance(node, dict):
        if _plain_rows(node):
            return 0
        return sum(_array_numbers(v) for v in node if isinstance(v, (dict, list, tuple)))
    if _plain_dict(node):
        return 0
    n = 0
    for key, value in node.items():
        if isinstance(value, _PLAIN) or key in _NOT_ENCODED:
            continue
        if isinstance(value, (dict, list, tuple)):
            n += _array_numbers(value)
        elif type(value) is np.ndarray:
            n += value.size
        elif hasattr(value, "__len__"):
            n += len(value)
    return n


def _as_list(v: np.ndarray) -> object:
    """A numeric array as JSON lists (NaN becomes null, a gap to plotly as NaN is); an array holding ±inf stays
    a typed array (JSON has no infinity, and null would draw it as a gap)."""
    if v.dtype.kind == "f" and np.isinf(v).any():
        return _typed_array(v)
    return v.tolist()


def _encoded(node: dict | list | tuple, plain: bool = False) -> dict | list:
    """A copy of a figure's property tree in which every array that is a dict's value is a base64 typed array,
    as ``Figure.to_dict`` makes it (plotly's ``convert_to_base64``), in one pass, or with ``plain`` a JSON list
    (:data:`PLAIN_ARRAYS_MAX`); the leaves and the lists of plain values are shared (:func:`figure_spec` copies
    everything by its JSON round trip)."""
    from _plotly_utils.basevalidators import is_homogeneous_array
    from _plotly_utils.utils import to_typed_array_spec

    if not isinstance(node, dict):  # an array inside a list is left as it is, as plotly does
        if _plain_rows(node):  # numbers or strings, or lists of them (C-level passes): shared
            return node
        return [_encoded(v, plain) if isinstance(v, (dict, list, tuple)) else v for v in node]
    if _plain_dict(node):  # a font, a line, a shape's corners, a trace of lists: nothing to encode
        return node
    out = {}
    for key, value in node.items():
        if isinstance(value, _PLAIN):
            out[key] = value
        elif key in _NOT_ENCODED:
            out[key] = _tree(value)
        elif isinstance(value, (dict, list, tuple)):
            out[key] = _encoded(value, plain)
        elif type(value) is np.ndarray and value.dtype.kind in "iuf":
            out[key] = _as_list(value) if plain else _typed_array(value)
        elif not is_homogeneous_array(value):
            out[key] = value
        elif plain and np.asarray(value).dtype.kind in "iuf":
            out[key] = _as_list(np.asarray(value))
        else:
            out[key] = to_typed_array_spec(value)
    return out


def figure_spec(fig: go.Figure) -> dict:
    """``fig`` as the JSON dict plotly.js draws: ``json.loads(plotly.io.to_json(fig))``, the same dict, without
    ``Figure.to_dict``'s deep copy of every leaf and its second walk over the copy for arrays; but a figure of
    at most :data:`PLAIN_ARRAYS_MAX` numbers has its arrays as JSON lists. A :class:`PlainFigure` is serialised
    from its plain dicts, never made a full figure."""
    import orjson
    import plotly.io as pio

    plain = fig.__dict__.get("_plain")
    if plain is not None:
        data, layout, frames = plain
        data = [trace if "type" in trace else {"type": "scatter", **trace} for trace in data]
        if layout.get("template") is None and pio.templates.default is not None:  # as go.Figure sets it
            default = pio.templates.default
            template = default if isinstance(default, go.layout.Template) else pio.templates[default]
            layout = {**layout, "template": template._props}
    else:
        data, layout, frames = fig._data, fig._layout, [frame._props for frame in fig._frame_objs]
    tree = {"data": data, "layout": layout, **({"frames": frames} if frames else {})}
    try:  # no numpy value at all (the KV tensors' 64 frames of plain lists): no walk to count the array numbers
        return orjson.loads(orjson.dumps(tree, option=orjson.OPT_NON_STR_KEYS))
    except TypeError:  # an array or another value orjson does not know without help: below
        pass
    numbers = _array_numbers(data) + _array_numbers(layout) + (_array_numbers(frames) if frames else 0)
    if numbers == 0:  # no array to encode (plain values and lists of them): what plotly's to_json tries first
        try:
            return orjson.loads(orjson.dumps(tree, option=orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY))
        except TypeError:  # a value orjson does not know: plotly's cleaning, below
            pass
    plain = numbers <= PLAIN_ARRAYS_MAX
    spec = {"data": [_encoded(trace, plain) for trace in data], "layout": _encoded(layout, plain)}
    if frames:
        spec["frames"] = [_encoded(frame, plain) for frame in frames]
    return orjson.loads(pio.to_json(spec, validate=False))  # plotly encodes with orjson too, when installed


class PlainFigure(go.Figure):
    """A figure kept as the plain trace, layout and frame dicts a builder made (no validation, no copy):
    :func:`figure_spec` and :func:`apply_fonts` read those directly, which is all a page's chart needs.

    Anything else that touches it (``fig.data``, ``fig.layout``, ``update_layout``, ``to_dict``, exports,
    pickling) first turns it into the full ``go.Figure`` of the same dicts, once, and it behaves as one from
    then on. Building 128 axes' traces and deep-copying them cost a heatmap grid more than drawing its JSON.
    The figure keeps its own copy of the layout's dicts (:func:`_own`) and of each trace's top level; what the
    traces and frames hold is shared, so a builder must not change it after handing it over.
    """

    def __init__(self, data: list[dict], layout: dict, frames: list[dict] | None = None) -> None:  # noqa: D107
        object.__setattr__(self, "_plain", ([dict(trace) for trace in data], _own(layout), frames))

    def __getattribute__(self, name: str) -> object:
        if name != "_plain" and not name.startswith("__"):
            state = object.__getattribute__(self, "__dict__")
            if "_plain" in state:
                data, layout, frames = state.pop("_plain")
                go.Figure.__init__(self, {"data": data, "layout": layout}, _validate=False)
                if frames:
                    self._frame_objs = tuple(_raw_frame(f) for f in frames)
        return object.__getattribute__(self, name)

    @classmethod
    def owning(cls, data: list[dict], layout: dict, frames: list[dict] | None = None) -> PlainFigure:
        """A PlainFigure of dicts its caller made for it alone (no copy): :func:`plain_figure`, which copies the
        layout before it sets the fonts."""
        fig = cls.__new__(cls)
        object.__setattr__(fig, "_plain", (data, layout, frames))
        return fig

    def __reduce__(self) -> tuple:
        return go.Figure, (self.to_dict(),)


def _reserve(fig: go.Figure) -> go.Figure:
    before = fig.layout.margin.to_plotly_json()
    spec = reserve_margins({"layout": fig.layout.to_plotly_json(), "data": [t.to_plotly_json() for t in fig.data]})
    after = spec["layout"].get("margin") or {}
    if after != before:
        fig.layout.margin = after
    return fig


def _set_fonts(fig: go.Figure, size: int, title: int) -> None:
    axes = [k for k in fig.layout.to_plotly_json() if k.startswith(("xaxis", "yaxis"))] or ["xaxis", "yaxis"]
    fig.update_layout(
        {name: dict(tickfont=dict(size=size), title=dict(font=dict(size=title))) for name in axes},
        legend=dict(font=dict(size=size)),
        hoverlabel=dict(font=dict(size=max(12, size - 2))),
    )
    fig.update_coloraxes(colorbar=dict(tickfont=dict(size=size), title=dict(font=dict(size=size))))
    for trace in fig.data:
        if getattr(trace, "colorbar", None) is not None and getattr(trace, "showscale", None) is not False:
            trace.colorbar.update(tickfont=dict(size=size))


def slide_title(title: str, width: float = 80) -> str:
    """``title`` with its first line broken after its first colon when that line is wider than ``width`` Latin
    characters (a CJK one counts 2.3): a slide's 26 px titles fit about 80 at 1024 px across, half as many over
    half the slide. A line without a colon breaks at its last comma or opening bracket outside brackets that leaves the first
    part within ``width``; a line with neither is left as it is."""
    first, sep, rest = title.partition("<br>")
    if _title_width(first) <= width:
        return title
    cut = min((i for i in (first.find(": "), first.find("：")) if i > 0), default=-1)
    if cut >= 0:
        head, tail = first[: cut + 1], first[cut + 1 :]
    else:
        fits = [i for i in _title_breaks(first) if _title_width(first[:i]) <= width]
        if not fits:
            return title
        head, tail = first[: fits[-1]], first[fits[-1] :]
    return f"{head.rstrip()}<br>{tail.lstrip()}{sep}{rest}"


def _title_breaks(line: str) -> list[int]:
    """Where ``line`` may break outside brackets: after a comma, before an opening bracket."""
    breaks, depth = [], 0
    for m in re.finditer(r", |，|[(（)）]", line):
        if m.group() in ("(", "（"):
            if depth == 0 and m.start() > 0:
                breaks.append(m.start())
            depth += 1
        elif m.group() in (")", "）"):
            depth = max(0, depth - 1)
        elif depth == 0:
            breaks.append(m.start() + 1)
    return breaks


def _title_width(text: str) -> float:
    """``text``'s width in Latin characters, a CJK one counting 2.3."""
    return sum(2.3 if ord(ch) >= 0x2E80 else 1.0 for ch in text)


def base_layout(title: str, style: Style, height: int, **extra: object) -> dict:
    """The layout every chart starts from, as a plain dict: title, fonts, height, margins, legend, hover.

    ``extra`` is merged over it (``margin``, ``legend``, axes ...). Use it with
    :func:`plain_figure` or ``fig.update_layout(**base_layout(...))``.
    """
    layout: dict[str, object] = dict(
        title=dict(text=title, font=dict(size=style.title_font)),
        font=dict(size=style.font),
        height=int(height),
        margin=dict(l=10, r=10, t=80 if style.present else 60, b=10),
        legend=dict(font=dict(size=style.font)),
        hoverlabel=dict(font=dict(size=max(12, style.font - 2))),
        plot_bgcolor="rgba(0,0,0,0)",
    )
    layout.update(extra)
    return layout


def plain_figure(data: list[dict], layout: dict, style: Style, frames: list[dict] | None = None) -> PlainFigure:
    """A figure from plain trace and layout dicts, without plotly's per-property validation (fast).

    Every font :func:`apply_fonts` would set is written in here (each axis's tick and
    title font, the legend, the hover label, colour bars) and ``layout.meta`` says so,
    so ``apply_fonts`` leaves the figure as it is: plotly's validated layout updates
    took most of a rerun. So are the margins it would widen for the labels
    (:func:`~attn_core.figures.margins.reserve_margins`). Colour scales must be explicit
    stops (:func:`explicit_scale`).
    """
    size = style.font
    layout = _own(layout)  # the fonts go on the figure's own dicts, not on a builder's shared constants
    for key, axis in layout.items():
        if key.startswith(("xaxis", "yaxis")) and isinstance(axis, dict):
            axis["tickfont"] = dict(size=size)
            axis.setdefault("title", {})["font"] = dict(size=size + 2)
    layout.setdefault("legend", {})["font"] = dict(size=size)
    layout.setdefault("hoverlabel", {})["font"] = dict(size=max(12, size - 2))
    bar = layout.setdefault("coloraxis", {}).setdefault("colorbar", {})  # apply_fonts adds it even when unused
    bar["tickfont"] = dict(size=size)
    bar.setdefault("title", {})["font"] = dict(size=size)
    data = [  # apply_fonts sizes every colour bar, shown or not
        {**trace, "colorbar": {**trace.get("colorbar", {}), "tickfont": dict(size=size)}}
        if trace.get("type") == "heatmap"
        else trace
        for trace in data
    ]
    layout["meta"] = {FONTS_SET: size}
    reserve_margins({"data": data, "layout": layout})  # what apply_fonts would add: it adds nothing then
    return PlainFigure.owning(data, layout, frames)


def _raw_frame(spec: dict) -> go.Frame:
    """An animation frame holding ``spec`` as it is: plotly validates every trace of every frame even when told not
    to validate (64 frames took 2 s to build and 1 s to serialise; this way a few milliseconds)."""
    frame = go.Frame(_validate=False)
    frame._props.update(spec)
    return frame


def relative_luminance(colour: str) -> float:
    """WCAG 2.1's relative luminance of a ``#rrggbb`` colour: 0 for black, 1 for white."""
    hexa = colour.lstrip("#")
    channels = [int(hexa[i : i + 2], 16) / 255 for i in (0, 2, 4)]
    lin = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def group_color(group: int) -> str:
    """The hue of KV group ``group``."""
    return GROUP_COLORS[group % len(GROUP_COLORS)]


def group_text_color(group: int) -> str:
    """KV group ``group``'s hue for text on a white background (:data:`GROUP_TEXT_COLORS`)."""
    return GROUP_TEXT_COLORS[group % len(GROUP_TEXT_COLORS)]


def pool_max(x: np.ndarray, max_cells: int) -> tuple[np.ndarray, int]:
    """Block-max pool the last two dims so neither exceeds ``max_cells``.

    ``[..., R, C] -> [..., ceil(R/f), ceil(C/f)]`` with one factor ``f`` for both
    dims; NaN (masked) cells are ignored unless a whole block is NaN.
    """
    r, c = x.shape[-2:]
    f = int(np.ceil(max(r, c) / max_cells)) if max(r, c) > max_cells else 1
    if f == 1:
        return x, 1
    rp, cp = -(-r // f) * f, -(-c // f) * f
    pad = [(0, 0)] * (x.ndim - 2) + [(0, rp - r), (0, cp - c)]
    xp = np.pad(x.astype(np.float32), pad, constant_values=np.nan)
    xp = xp.reshape(*x.shape[:-2], rp // f, f, cp // f, f)
    with np.errstate(all="ignore"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            out = np.nanmax(xp, axis=(-3, -1))
    return out.astype(np.float32), f
