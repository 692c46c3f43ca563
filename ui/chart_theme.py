"""Charts in Streamlit's look, with the theme written into each figure instead of handed to Streamlit.

``st.plotly_chart(theme="streamlit")`` merges Streamlit's chart theme into the figure's ``layout.template`` in the
browser, by a JSON copy of the whole figure, and copies it again once the chart is mounted. Streamlit draws every
new chart twice (before its width is known, then at that width), and plotly.js compares the template by identity:
a new template object means "everything changed", so the second draw was a full one (the default heatmap grid
~60 ms, saturation's gradient chart ~130 ms, on every slider move).

So the app sends charts with ``theme=None`` and a figure that already looks as Streamlit's theme would make it
(:func:`browser_spec`): the theme's layout values under the figure's own (axes, colour axes, fonts, legend,
hover labels, background), its trace defaults under each trace, the title in bold as Streamlit sets it, no
template and no ``meta`` (compared by identity too), a ``datarevision`` (so plotly.js does not take a copied
typed array for new data), and for a chart that selects points the click, hover and drag modes Streamlit would
set. The second draw then only moves what the width moved (the grid: ~5 ms).

The theme itself is data: ``assets/chart_theme.json``, Streamlit 1.67's chart theme for the light and the dark
colour scheme as plotly.js received it in a real browser (``tools/capture_chart_theme.py`` captures it again).
Nothing here imports Streamlit; :mod:`ui.output` picks the scheme from ``st.context.theme``.
"""

from __future__ import annotations

import copy
import json
import re
from functools import cache
from pathlib import Path
from typing import Any

from attn_core.figures.base import GROUP_COLORS, GROUP_TEXT_COLORS
from attn_core.figures.margins import PINNED, pin_axes

THEME_FILE = Path(__file__).resolve().parent.parent / "assets" / "chart_theme.json"
_AXIS = re.compile(r"([xy])axis\d*")
_COLORAXIS = re.compile(r"coloraxis\d*")
_MAPS_2D = frozenset({"heatmap", "contour", "histogram2d", "histogram2dcontour"})  # plotly ticks their axes
_ORIENTED = frozenset({"bar", "histogram", "box", "violin", "funnel", "waterfall"})  # no grid along their positions
_CARTESIAN = frozenset(
    {
        "scatter",
        "bar",
        "heatmap",
        "histogram",
        "box",
        "violin",
        "contour",
        "scattergl",
        "histogram2d",
        "histogram2dcontour",
        "candlestick",
        "waterfall",
    }
)
_TICK_SIZE = ("ticklen", "tickwidth", "tickcolor")
#: Y axes draw every tick label (``ticklabeloverflow="allow"``) instead of plotly's default for numbers, "hide past
#: div", which measures each label again whenever one moves: the KV cache chart's byte axis, 367 -> 349 ms painted a
#: move. The margins are reserved for the labels (:mod:`attn_core.figures.margins`) and a y label never reaches past
#: the top or bottom of the chart, so none was hidden on any page (checked in Chromium). X axes keep the default: the
#: cost page's last log tick (65,536) would stick out of the chart and push its right margin.
Y_OVERFLOW = "allow"
#: a chart that selects points: the modes Streamlit sets when the figure leaves them unset
SELECT_MODES = {"clickmode": "event+select", "hovermode": "closest", "dragmode": "pan"}


@cache
def themes() -> dict[str, dict]:
    """``{"light": template, "dark": template}`` from :data:`THEME_FILE` (read once per process)."""
    raw = json.loads(THEME_FILE.read_text(encoding="utf-8"))
    return {scheme: raw[scheme] for scheme in ("light", "dark")}


def under(own: Any, theme: Any) -> Any:
    """``theme`` with ``own`` over it: dicts merged key by key, anything else (lists included) is ``own``'s.
    Neither argument is changed."""
    if own is None:
        return copy.deepcopy(theme)
    if isinstance(own, dict) and isinstance(theme, dict):
        out = {key: copy.deepcopy(value) for key, value in theme.items() if key not in own}  # each copied once
        for key, value in own.items():
            out[key] = under(value, theme[key]) if key in theme else value
        return out
    return own


def _axis_name(ref: Any, letter: str) -> str:
    """The layout key of a trace's axis reference (``"x2"`` -> ``"xaxis2"``; none -> ``"xaxis"``)."""
    return f"{letter}axis" + str(ref or letter)[1:]


def _plotly_defaults(data: list[dict]) -> tuple[set[str], set[str]]:
    """The axes plotly ticks by default (those of 2-D maps) and those it draws no grid or zero line on by default
    (the position axis of bars, boxes, violins ...), as layout keys."""
    ticked, gridless = set(), set()
    for trace in data:
        kind = trace.get("type") or "scatter"
        x, y = _axis_name(trace.get("xaxis"), "x"), _axis_name(trace.get("yaxis"), "y")
        if kind in _MAPS_2D:
            ticked |= {x, y}
        if kind in _ORIENTED:
            gridless.add(y if trace.get("orientation") == "h" else x)
    return ticked, gridless


def _axis(own: dict | None, theme: dict, ticked: bool, gridless: bool) -> dict:
    """One axis with the theme's axis values under its own. plotly turns tick marks, grid lines and the zero line
    on by default when the axis itself (not its template) colours or sizes them: with the theme's colours now the
    axis's own, say explicitly what plotly would have drawn under the template."""
    own = own or {}
    out = under(own, theme)
    if "ticks" not in own:
        out["ticks"] = "outside" if ticked or any(a in own for a in _TICK_SIZE) else ""
    if gridless:
        if "showgrid" not in own:
            out["showgrid"] = bool(own.get("gridcolor") or own.get("gridwidth"))
        if "zeroline" not in own:
            out["zeroline"] = bool(own.get("zerolinecolor") or own.get("zerolinewidth"))
    return out


def themed_layout(layout: dict, data: list[dict], theme: dict) -> dict:
    """``layout`` with the theme's layout values under its own, without ``template`` and ``meta``; the title in
    bold, as Streamlit's theme writes it."""
    out = {key: value for key, value in layout.items() if key not in ("template", "meta")}
    ticked, gridless = _plotly_defaults(data)
    cartesian = any((trace.get("type") or "scatter") in _CARTESIAN for trace in data)
    for key, value in theme["layout"].items():
        if key in ("xaxis", "yaxis"):
            names = [k for k in out if (m := _AXIS.fullmatch(k)) and m.group(1) == key[0]]
            if cartesian and key not in out:  # plotly makes the first axes itself: the theme reaches them too
                names.append(key)
            for name in names:
                out[name] = _axis(out.get(name), value, name in ticked, name in gridless)
        elif key == "coloraxis":
            for name in [k for k in out if _COLORAXIS.fullmatch(k)]:
                out[name] = under(out[name], value)
        else:
            out[key] = under(out.get(key), value)
    if "title" in layout and layout["title"] is not None:
        title = layout["title"] if isinstance(layout["title"], dict) else {"text": layout["title"]}
        out["title"] = {**out["title"], "text": f"<b>{title.get('text') or ''}</b>"}
    return out


def themed_data(data: list[dict], theme: dict) -> list[dict]:
    """Each trace with the theme's defaults for its type under its own (the n-th trace of a type takes the
    theme's n-th entry for it, cyclically, as plotly applies a template)."""
    seen: dict[str, int] = {}
    out = []
    for trace in data:
        kind = trace.get("type") or "scatter"
        entries = theme["data"].get(kind)
        if entries:
            i = seen.get(kind, 0)
            seen[kind] = i + 1
            trace = under(trace, entries[i % len(entries)])
        out.append(trace)
    return out


#: The figures' near-black for lines and markers (the KV chart's device memory, the cost page's total, MLA's
#: points): it would vanish on a dark background, so a dark scheme draws it in the theme's text colour.
INK = "#222222"
#: The darkest grey the figures draw for a white background that the dark scheme draws mirrored (#444444 ->
#: #bbbbbb): lighter neutral greys (#888888, #9a9a9a) read on both backgrounds.
MIRRORED_UP_TO = 0x66
#: The lightest fills the figures draw for a white background (the KV cache's empty buffers and layer slabs,
#: #eeeeee and #f7f7f7): opaque neutral greys from here up are drawn in the dark scheme as dark greys a little
#: above its background (#f7f7f7 -> #262626), so a slab is not a white block on a dark page.
DARK_FILL_FROM = 0xDD
DARK_FILL_LIFT = 0x1E
_HEX = re.compile(r"#([0-9a-f]{3}|[0-9a-f]{6})")
_RGB = re.compile(r"rgba?\(\s*([\d.]+)\s*,\s*([\d.]+)\s*,\s*([\d.]+)\s*(?:,\s*([\d.]+)\s*)?\)")
_NAMED = {"white": (255.0, 255.0, 255.0, 1.0), "black": (0.0, 0.0, 0.0, 1.0)}
#: KV groups' text colours for white (darkened to 4.5:1) back to the hues themselves, which read on the dark scheme
HUES = {text.lower(): hue for text, hue in zip(GROUP_TEXT_COLORS, GROUP_COLORS, strict=True) if text != hue}


def rgba(color: Any) -> tuple[float, float, float, float] | None:
    """``(r, g, b, alpha)`` of a CSS colour written as ``#rgb``, ``#rrggbb``, ``rgb(...)``, ``rgba(...)``, white or
    black; None for anything else (a named colour, a list of colours)."""
    if not isinstance(color, str):
        return None
    text = color.strip().lower()
    if m := _HEX.fullmatch(text):
        h = m.group(1) if len(m.group(1)) == 6 else "".join(c * 2 for c in m.group(1))
        return float(int(h[0:2], 16)), float(int(h[2:4], 16)), float(int(h[4:6], 16)), 1.0
    if m := _RGB.fullmatch(text):
        return float(m.group(1)), float(m.group(2)), float(m.group(3)), float(m.group(4) or 1.0)
    return _NAMED.get(text)


def light(color: Any) -> bool:
    """Whether ``color`` is a light colour (relative luminance above 0.6, alpha ignored): a box dark text reads on."""
    c = rgba(color)
    if c is None:
        return False
    lin = [(v / 255) / 12.92 if v <= 10.31 else ((v / 255 + 0.055) / 1.055) ** 2.4 for v in c[:3]]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2] > 0.6


def mirrored(color: Any, ink: str) -> Any:
    """``color`` as the dark scheme draws it on its background: :data:`INK` in the theme's text colour ``ink``, a
    neutral grey up to :data:`MIRRORED_UP_TO` mirrored (#444444 -> #bbbbbb; a see-through one keeps its alpha:
    rgba(60,60,60,0.55) -> rgba(195,195,195,0.55)); anything else as it is."""
    if isinstance(color, str) and color.lower() == INK:
        return ink
    c = rgba(color)
    if c is None or c[3] <= 0 or not c[0] == c[1] == c[2] or c[0] > MIRRORED_UP_TO:
        return color
    v = 255 - int(c[0])
    return f"#{v:02x}{v:02x}{v:02x}" if c[3] >= 1 else f"rgba({v},{v},{v},{c[3]:g})"


def dark_fill(color: Any) -> Any:
    """A trace's fill as the dark scheme draws it: an opaque neutral grey from :data:`DARK_FILL_FROM` up becomes a
    dark grey (:data:`DARK_FILL_LIFT` above black by as much as it was below white); anything else as it is."""
    c = rgba(color)
    if c is None or c[3] < 1 or not c[0] == c[1] == c[2] or c[0] < DARK_FILL_FROM:
        return color
    v = 255 - int(c[0]) + DARK_FILL_LIFT
    return f"#{v:02x}{v:02x}{v:02x}"


def inked(data: list[dict], theme: dict) -> list[dict]:
    """``data`` for the dark scheme: each trace's line, marker and marker outline colour :func:`mirrored` (near-black
    in the theme's text colour, dark greys mirrored; other colours, arrays of colours and tables as they are), and
    its light grey fill dark (:func:`dark_fill`); changed traces are copies."""
    ink = theme["layout"]["font"]["color"]
    out = []
    for trace in data:
        if "fillcolor" in trace and (fill := dark_fill(trace["fillcolor"])) != trace["fillcolor"]:
            trace = {**trace, "fillcolor": fill}
        for part in ("line", "marker"):
            value = trace.get(part)
            if not isinstance(value, dict):
                continue
            new = {**value, "color": mirrored(value["color"], ink)} if "color" in value else value
            edge = new.get("line")
            if part == "marker" and isinstance(edge, dict) and "color" in edge:
                new = {**new, "line": {**edge, "color": mirrored(edge["color"], ink)}}
            if new != value:
                trace = {**trace, part: new}
        out.append(trace)
    return out


def light_blocks(layout: dict) -> list[tuple[str, str, float, float, float, float]]:
    """The layout's filled rectangles of a light, opaque colour, as ``(xref, yref, x0, x1, y0, y1)`` (sorted ends)."""
    out = []
    for shape in layout.get("shapes") or []:
        fill = rgba(shape.get("fillcolor"))
        if shape.get("type") != "rect" or fill is None or fill[3] < 1 or not light(shape["fillcolor"]):
            continue
        try:
            x0, x1, y0, y1 = (float(shape[k]) for k in ("x0", "x1", "y0", "y1"))
        except (KeyError, TypeError, ValueError):
            continue  # a date or category end: not placed here
        out.append((shape.get("xref", "x"), shape.get("yref", "y"), min(x0, x1), max(x0, x1), min(y0, y1), max(y0, y1)))
    return out


def on_block(note: dict, blocks: list[tuple[str, str, float, float, float, float]]) -> bool:
    """Whether annotation ``note`` is centred on an anchor inside one of ``blocks`` (:func:`light_blocks`) on the
    same axes (text beside its anchor, like a panel's title above its frame, is not on the block)."""
    if note.get("xanchor", "auto") not in ("auto", "center") or note.get("yanchor", "auto") not in ("auto", "middle"):
        return False
    try:
        x, y = float(note["x"]), float(note["y"])
    except (KeyError, TypeError, ValueError):
        return False
    refs = (note.get("xref", "x"), note.get("yref", "y"))
    return any(refs == (xr, yr) and x0 < x < x1 and y0 < y < y1 for xr, yr, x0, x1, y0, y1 in blocks)


def darkened(layout: dict, theme: dict) -> dict:
    """``layout``'s annotations and shapes for the dark scheme (changed ones are copies): text written for a white
    background would vanish on a dark one, and text on a white box would vanish in the theme's light text colour.

    - an annotation on a light, see-through box (a halo that keeps text readable over lines) gets the same box in
      the background's colour, and its text :func:`mirrored`;
    - an annotation on a light, opaque box or inside a light, opaque rectangle of the layout's shapes (a card:
      MLA's blocks, :func:`light_blocks`) keeps it, and its text is dark (:data:`INK`) whatever the scheme's text
      colour;
    - other annotations' text, their arrows and borders, and the shapes' lines are :func:`mirrored`; text in a KV
      group's darkened text colour gets the group's hue (:data:`HUES`).
    """
    ink, paper = theme["layout"]["font"]["color"], rgba(theme["layout"]["paper_bgcolor"])
    cards = light_blocks(layout)
    notes = []
    for note in layout.get("annotations") or []:
        note = dict(note)
        font = dict(note.get("font") or {})
        box = rgba(note.get("bgcolor"))
        if (box is not None and light(note["bgcolor"]) and box[3] >= 1) or on_block(note, cards):
            if font.get("color") is None or light(font["color"]):
                font["color"] = INK
        else:
            if box is not None and light(note["bgcolor"]) and paper is not None:
                note["bgcolor"] = f"rgba({int(paper[0])},{int(paper[1])},{int(paper[2])},{box[3]:g})"
            if "color" in font:
                hue = HUES.get(font["color"].lower()) if isinstance(font["color"], str) else None
                font["color"] = hue or mirrored(font["color"], ink)
        if font:
            note["font"] = font
        for key in ("arrowcolor", "bordercolor"):
            if key in note:
                note[key] = mirrored(note[key], ink)
        notes.append(note)
    shapes = []
    for shape in layout.get("shapes") or []:
        line = shape.get("line")
        if isinstance(line, dict) and "color" in line:
            shape = {**shape, "line": {**line, "color": mirrored(line["color"], ink)}}
        shapes.append(shape)
    out = dict(layout)
    if "annotations" in layout:
        out["annotations"] = notes
    if "shapes" in layout:
        out["shapes"] = shapes
    return out


def browser_spec(spec: dict, dark: bool = False, selectable: bool = False) -> dict:
    """The plotly JSON ``spec`` as the app sends it with ``theme=None``: Streamlit's chart theme for the colour
    scheme written in (:func:`themed_layout`, :func:`themed_data`), a ``datarevision``, and for a chart that
    selects points the modes Streamlit would set (:data:`SELECT_MODES`). Y axes draw every label
    (:data:`Y_OVERFLOW`). The axes a figure names in its ``layout.meta`` (:data:`~attn_core.figures.margins.PINNED`)
    get their titles as annotations and no ``automargin`` (:func:`~attn_core.figures.margins.pin_axes`: the
    browser then measures none of their labels). ``spec`` is not changed; frames keep their own data (an animation's frames only restyle its traces). In the dark scheme the figures' near-black
    lines and markers take the theme's text colour and their dark greys are mirrored (:func:`inked`), and so are
    annotations and shapes drawn for a white background (:func:`darkened`)."""
    theme = themes()["dark" if dark else "light"]
    data = spec.get("data") or []
    if dark:
        data = inked(data, theme)
    layout = themed_layout(spec.get("layout") or {}, data, theme)
    if dark:
        layout = darkened(layout, theme)
    for name, axis in layout.items():  # new dicts (themed_layout): set in place
        if name.startswith("yaxis") and isinstance(axis, dict):
            axis.setdefault("ticklabeloverflow", Y_OVERFLOW)
    meta = (spec.get("layout") or {}).get("meta")
    if isinstance(meta, dict) and meta.get(PINNED):
        layout = pin_axes(layout, data, meta[PINNED])
    layout["datarevision"] = 1  # the data never changes in place: a copied array is not new data
    if selectable:
        for key, value in SELECT_MODES.items():
            layout.setdefault(key, value)
    return {**spec, "data": themed_data(data, theme), "layout": layout}
