"""Charts for a phone (a window below 640 px wide): one panel of a head grid alone, and titles that fit.

A phone's main column is about :data:`PHONE_PX` wide: a grid of 4 to 8 heads a row squashes each panel
to a few px a cell and its panel titles run into each other. :func:`one_panel` takes the grid as it was
drawn (a :func:`~attn_core.figures.heatmap_grid` spec, plotly JSON) and returns one of its panels alone,
full width, with its labels planned for that width: no figure is built again, only dicts are copied.
"""

from __future__ import annotations

import re

from .base import Style
from .labels import thinned_note, tick_axis, tick_plan
from .margins import reserve_margins, text_width

__all__ = ["PHONE_PX", "grid_panels", "one_panel", "title_fits", "title_text"]

PHONE_PX = 358  # px across a 390-px-wide phone's main column (Streamlit pads 16 px a side)
_TAG = re.compile(r"<[^>]+>")
_PANEL_TOP = 34  # px above the panel for its title ("head 3 · KV 0")
_BAR_ROOM = 62  # px under the key labels for the horizontal colour bar, its numbers and its title


def grid_panels(spec: dict) -> list[tuple[str, str]]:
    """The panels of a head-grid spec in their order: (x axis name, title without tags), e.g. ``("x3", "head 2 ·
    KV 0")``; empty for a chart that is not a grid of heatmap panels (fewer than two)."""
    axes: list[str] = []
    for trace in spec.get("data") or []:
        xa = trace.get("xaxis") or "x"
        if trace.get("type") == "heatmap" and xa not in axes:
            axes.append(xa)
    if len(axes) < 2:
        return []
    titles = {a.get("xref", "").split(" ")[0]: a.get("text", "") for a in spec["layout"].get("annotations") or []}
    return [(xa, _TAG.sub("", titles.get(xa, xa))) for xa in axes]


def _suffix(axis: str) -> str:
    return axis[1:]  # "x3" -> "3", "x" -> ""


def _title_of(layout: dict, letter: str) -> dict | None:
    """The first non-empty axis title of the grid (only the grid's first row or column carries one)."""
    for name, ax in layout.items():
        if re.fullmatch(f"{letter}axis\\d*", name) and isinstance(ax, dict):
            title = ax.get("title") or {}
            if title.get("text"):
                return title
    return None


def _moved(items: list[dict], axis: str) -> list[dict]:
    """The shapes or annotations drawn on ``axis``'s panel, moved to the lone panel's axes."""
    n = _suffix(axis)
    out = []
    for it in items:
        if it.get("xref", "").split(" ")[0] == axis:
            out.append({**it, "xref": it["xref"].replace(axis, "x", 1), "yref": it["yref"].replace(f"y{n}", "y", 1)})
    return out


def one_panel(spec: dict, index: int, style: Style, width: int = PHONE_PX) -> dict:
    """Panel ``index`` of the head grid ``spec`` alone, ``width`` px wide: its heatmap (not the grid's click
    layer: the phone's head is picked, not clicked, and the heatmap's own hover shows), its frame and title, every row and column labelled at the largest font that fits the
    width (thinned below the smallest, like the grid), the shared colour scale, square cells where the
    height allows. The grid's own title is left out (the page writes it above the chart, where it wraps);
    dragging does not zoom (on a touch screen it scrolls the page).
    """
    axis = grid_panels(spec)[index][0]
    n, lay = _suffix(axis), spec["layout"]
    data = [{**t, "xaxis": "x", "yaxis": "y"} for t in spec["data"]
            if (t.get("xaxis") or "x") == axis and t.get("type") == "heatmap"]  # fmt: skip
    heat = next(t for t in data if t.get("type") == "heatmap")
    xs, ys = list(heat["x"]), list(heat["y"])
    drop = ("matches", "tickmode", "tickvals", "ticktext", "tickfont", "showticklabels", "title", "range")
    x_axis = {k: v for k, v in lay[f"xaxis{n}"].items() if k not in drop}
    y_axis = {k: v for k, v in lay[f"yaxis{n}"].items() if k not in drop}
    plot_w = width - 110.0  # a first guess of the room the row labels leave
    for _ in range(2):  # the labels' font sets the margins, which set the room the labels have
        x_ticks = tick_plan(len(xs), plot_w, style)
        plot_h = max(160.0, min(1.25 * plot_w, plot_w * len(ys) / max(len(xs), 1)))
        y_ticks = tick_plan(len(ys), plot_h, style)
        # the colour bar lies under the panel (a bar at its right would take a third of a phone's width)
        bar = dict((lay.get("coloraxis") or {}).get("colorbar") or {}, orientation="h", thickness=12, len=0.75, ypad=4,
                   x=0.5, xanchor="center", yref="container", y=0.0, yanchor="bottom")  # fmt: skip
        bar["title"] = {**(bar.get("title") or {}), "side": "right"}
        layout = {
            **{k: v for k, v in lay.items() if not re.fullmatch(r"[xy]axis\d*", k)},
            "title": {"text": ""},
            "xaxis": {**x_axis, "domain": [0, 1], "anchor": "y", "range": [-0.5, len(xs) - 0.5],
                      "showticklabels": True, "title": _title_of(lay, "x") or {}, **tick_axis(xs, x_ticks)},
            "yaxis": {**y_axis, "domain": [0, 1], "anchor": "x", "range": [len(ys) - 0.5, -0.5],
                      "showticklabels": True, "title": _title_of(lay, "y") or {}, **tick_axis(ys, y_ticks)},
            "coloraxis": {**(lay.get("coloraxis") or {}), "colorbar": bar},
            "shapes": _moved(lay.get("shapes") or [], axis),
            "annotations": _moved(lay.get("annotations") or [], axis),
            "margin": {"l": 10, "r": 10, "t": _PANEL_TOP, "b": 10},
            "height": int(_PANEL_TOP + plot_h + 10),
            "dragmode": False,
        }  # fmt: skip
        note = thinned_note(style, y_ticks, x_ticks, style.t("fig.query"), style.t("fig.key"))
        if note:  # too many tokens for a phone's width: every k-th labelled, as the panel says
            layout["annotations"] = [{**a, "text": f"{a['text']}<br><sub>{note}</sub>"} for a in layout["annotations"]]
            layout["margin"]["t"] = _PANEL_TOP + 18
        out = reserve_margins({"data": data, "layout": layout}, width=width)
        m = out["layout"]["margin"]
        m["r"] = 16  # what reserve_margins kept for a colour bar at the right: it is under the panel here
        plot_w = max(80.0, width - m["l"] - m["r"])
    m["b"] += _BAR_ROOM
    out["layout"]["height"] = int(m["t"] + plot_h + m["b"])
    return out


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
