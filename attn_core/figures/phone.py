"""Charts for a phone (a window below 640 px wide): one panel of a head grid alone, and titles that fit.

A phone's main column is about :data:`PHONE_PX` wide: a grid of 4 to 8 heads a row squashes each panel
to a few px a cell and its panel titles run into each other. :func:`one_panel` takes the grid as it was
drawn (a :func:`~attn_core.figures.heatmap_grid` spec, plotly JSON) and returns one of its panels alone,
full width, with its labels planned for that width: no figure is built again, its cells are cut from the grid's.
"""

from __future__ import annotations

import base64
import re

import numpy as np

from attn_core.figures.base import MASK_GREY, PLAIN_ARRAYS_MAX, Style, _as_list, _typed_array, group_color
from attn_core.figures.heatmaps import grid_meta
from attn_core.figures.labels import ROW_PITCH, key_ticks, thinned_note, tick_axis, tick_plan
from attn_core.figures.margins import reserve_margins, text_width

__all__ = ["PHONE_PX", "grid_panels", "one_panel", "title_fits", "title_text"]

PHONE_PX = 358  # px across a 390-px-wide phone's main column (Streamlit pads 16 px a side)
_TAG = re.compile(r"<[^>]+>")
_PANEL_TOP = 34  # px above the panel for its title ("head 3 · KV 0")
_BAR_ROOM = 62  # px under the key labels for the horizontal colour bar, its numbers and its title


def _grid(spec: dict) -> dict | None:
    """Where the panels of a head-grid spec sit, None for any other chart."""
    return grid_meta((spec.get("layout") or {}).get("meta"))


def grid_panels(spec: dict) -> list[tuple[int, str]]:
    """The panels of a head-grid spec in their order: (head, title without tags), e.g. ``(2, "head 2 · KV 0")``;
    empty for a chart that is not a grid of at least two heatmap panels."""
    grid = _grid(spec)
    if grid is None or len(grid["heads"]) < 2:
        return []
    titles = (spec["layout"].get("annotations") or [])[: len(grid["heads"])]  # the panel titles come first
    return [(h, _TAG.sub("", a.get("text", ""))) for h, a in zip(grid["heads"], titles, strict=True)]


def _z(trace: dict) -> np.ndarray:
    """A heatmap's ``z`` as a float array: plotly's base64 form (``bdata``) or nested lists (None = NaN)."""
    z = trace["z"]
    if isinstance(z, dict):
        a = np.frombuffer(base64.b64decode(z["bdata"]), dtype=np.dtype(z["dtype"]))
        return a.reshape([int(s) for s in str(z["shape"]).split(",")]).astype(np.float32)
    return np.array([[np.nan if v is None else v for v in row] for row in z], dtype=np.float32)


def one_panel(spec: dict, index: int, style: Style, width: int = PHONE_PX) -> dict:
    """Panel ``index`` of the head grid ``spec`` alone, ``width`` px wide: its cells cut from the grid's heatmap (not
    the grid's click layer: the phone's head is picked, not clicked, and the heatmap's hover names the head),
    its frame and title, every row and column labelled at the largest font that fits the width (thinned below
    the smallest, like the grid), the shared colour scale, square cells where the height allows. The grid's own
    title is left out (the page writes it above the chart, where it wraps); dragging does not zoom (on a touch
    screen it scrolls the page).
    """
    grid, lay = _grid(spec), spec["layout"]
    heat = next(t for t in spec["data"] if t.get("type") == "heatmap")
    r, c, sx, sy, ncols = grid["rows"], grid["cols"], grid["sx"], grid["sy"], grid["ncols"]
    row, col = divmod(index, ncols)
    x0, y0 = col * (c * sx + grid["gx"]), row * (r * sy + grid["gy"])
    z = _z(heat)[y0 : y0 + r * sy : sy, x0 : x0 + c * sx : sx]
    xs, ys = list(heat["x"][0 : c * sx : sx]), list(heat["y"][0 : r * sy : sy])  # the first panel's: no suffix
    head, group = grid["heads"][index], grid["groups"][index]
    hover = heat.get("hovertemplate") or ""
    if not hover.startswith("<b>"):
        hover = f"<b>{style.t('fig.head')} {head}</b> · KV {group}<br>" + hover
    cells = _as_list(z) if z.size <= PLAIN_ARRAYS_MAX else _typed_array(z)  # as figure_spec sends it
    data = [{**heat, "z": cells, "x": xs, "y": ys, "hovertemplate": hover}]
    shapes = _panel_shapes(lay, z, group, (x0, y0), r * sy, sy)
    title = dict(lay["annotations"][index], x=0.5, y=1.0, xref="x domain", yref="y domain")
    keep = ("type", "tickangle", "showgrid", "zeroline")
    x_axis = {k: v for k, v in lay["xaxis"].items() if k in keep}
    y_axis = {k: v for k, v in lay["yaxis"].items() if k in keep}
    plot_w = width - 110.0  # a first guess of the room the row labels leave
    for _ in range(2):  # the labels' font sets the margins, which set the room the labels have
        x_ticks = key_ticks(xs, plot_w, style)  # turned as far as the phone's width needs
        plot_h = max(160.0, min(1.25 * plot_w, plot_w * len(ys) / max(len(xs), 1)))
        y_ticks = tick_plan(len(ys), plot_h, style, ROW_PITCH)
        bar = _bar_below(lay)
        layout = {
            **{k: v for k, v in lay.items() if not re.fullmatch(r"[xy]axis\d*", k) and k != "meta"},
            "title": {"text": ""},
            "xaxis": {
                **x_axis,
                "tickangle": x_ticks.angle,
                "domain": [0, 1],
                "anchor": "y",
                "range": [-0.5, len(xs) - 0.5],
                "showticklabels": True,
                "title": lay["xaxis"].get("title") or {},
                **tick_axis(xs, x_ticks),
            },
            "yaxis": {
                **y_axis,
                "domain": [0, 1],
                "anchor": "x",
                "range": [len(ys) - 0.5, -0.5],
                "showticklabels": True,
                "title": lay["yaxis"].get("title") or {},
                **tick_axis(ys, y_ticks),
            },
            "coloraxis": {**(lay.get("coloraxis") or {}), "colorbar": bar},
            "shapes": shapes,
            "annotations": [title],
            "margin": {"l": 10, "r": 10, "t": _PANEL_TOP, "b": 10},
            "height": int(_PANEL_TOP + plot_h + 10),
            "dragmode": False,
        }
        note = thinned_note(style, y_ticks, x_ticks, style.t("fig.query"), style.t("fig.key"))
        if note:  # too many tokens for a phone's width: every k-th labelled, as the panel says (a line an axis:
            parts = note.split(" · ")  # centred over the plot, both on one line reach past a phone's right edge)
            subs = "".join(f"<br><sub>{part}</sub>" for part in parts)
            layout["annotations"] = [{**title, "text": f"{title['text']}{subs}"}]
            layout["margin"]["t"] = _PANEL_TOP + 18 * len(parts)
        out = reserve_margins({"data": data, "layout": layout}, width=width)
        m = out["layout"]["margin"]
        m["r"] = 16  # what reserve_margins kept for a colour bar at the right: it is under the panel here
        plot_w = max(80.0, width - m["l"] - m["r"])
    m["b"] += _BAR_ROOM
    out["layout"]["height"] = int(m["t"] + plot_h + m["b"])
    return out


def _panel_shapes(lay: dict, z: np.ndarray, group: int, origin: tuple[int, int], height: int, sy: int) -> list[dict]:
    """One panel's shapes: the grey under masked cells, its KV group's frame and a followed query's row outline,
    moved from the grid's cells (``origin``: the panel's first column and row, ``height`` its rows × ``sy``)."""
    x0, y0 = origin
    frame = next(s for s in lay.get("shapes") or [] if s.get("layer") == "above")  # every panel's frame is alike
    panel = dict(type="rect", xref="x domain", yref="y domain", x0=0, x1=1, y0=0, y1=1)
    shapes = [dict(panel, fillcolor=MASK_GREY, line=dict(width=0), layer="below")] if np.isnan(z).any() else []
    shapes.append(dict(panel, line=dict(frame["line"], color=group_color(group)), layer="above"))
    for focus in lay.get("shapes") or []:  # a followed query's row outlined in this panel: on the lone panel too
        inside = focus.get("x0") == x0 - 0.5 and y0 - 0.5 <= focus.get("y0", -1) < y0 + height - 0.5
        if focus.get("name") == "focus" and inside:
            q = round((focus["y0"] + 0.5 - y0) / sy)
            shapes.append(dict(focus, xref="x domain", x0=0, x1=1, yref="y", y0=q - 0.5, y1=q + 0.5))
    return shapes


def _bar_below(lay: dict) -> dict:
    """The grid's colour bar, laid under the panel: a bar at its right would take a third of a phone's width."""
    bar = dict(
        (lay.get("coloraxis") or {}).get("colorbar") or {},
        orientation="h",
        thickness=12,
        len=0.75,
        ypad=4,
        x=0.5,
        xanchor="center",
        yref="container",
        y=0.0,
        yanchor="bottom",
    )
    bar["title"] = {**(bar.get("title") or {}), "side": "right"}
    return bar


def title_text(spec: dict) -> str:
    """The chart's title as plotly draws it (HTML subset), "" when it has none."""
    title = (spec.get("layout") or {}).get("title")
    text = title.get("text") if isinstance(title, dict) else title
    return str(text or "")


def title_fits(text: str, size: float, width: int = PHONE_PX) -> bool:
    """Whether every line of a chart's title ``text`` fits ``width`` px at ``size`` px (plotly does not wrap)."""
    if not text:
        return True
    lines = re.split(r"<br\s*/?>", text, flags=re.I)
    # a <sub>/<sup> line is drawn smaller (about 0.7 of the title's size); the title starts about 5 % in
    widths = [text_width(s, size * (0.7 if s.startswith(("<sub>", "<sup>")) else 1.0)) for s in lines]
    return max(widths) <= 0.95 * width - 10
