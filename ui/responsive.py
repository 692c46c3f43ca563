"""Phones and small laptops: the CSS that lets controls wrap and keeps toolbars off titles, and head grids
shown one head at a time below :data:`PHONE_MAX` px.

Streamlit does not tell the server how wide the window is, so a phone's browser gets a grid twice, cheaply: the
whole grid (shown on a wide screen) and one head of it with a head picker (shown on a phone; its figure is the
grid's own panel copied out of the drawn spec, :func:`attn_core.figures.phone.one_panel`). CSS media queries
show one of the two. A browser whose User-Agent says it is not a phone (:func:`phone_copies`) gets the grid
alone: a hidden copy would still cost it two plotly draws on every slider move. A chart title too long for a
phone's width is written above the chart as text (it wraps) and plotly's own one-line title is hidden there; on a
wide screen nothing changes.
"""

from __future__ import annotations

import re
from typing import Any

import streamlit as st

from attn_core import figures
from attn_core.figures import phone

from .core import style_tag

__all__ = ["PHONE_MAX", "apply_responsive", "is_phone", "on_phone", "phone_box", "phone_copies", "phone_title"]

PHONE_MAX = 640  # px: below this the page is laid out for a phone
SCROLL_PX = 860  # px: a chart of several panels side by side keeps this width on a phone and scrolls sideways
# single-canvas charts whose panels or labels need more than a phone's width (panels side by side in one trace,
# a diagram, a long axis title, a table whose cells are broken into lines for the page): chart key -> drawn width
# in px on a phone
WIDE_CHARTS = {
    "kv_maps": 760,
    "mla_flow": 640,
    "kv_tensors": 1200,
    "mismatch_pair": 640,
    "conv_analogy": 760,
    "mdl_roles": 760,  # 30 layers, each numbered
    "mdl_zoom": 760,  # one head of a model's text: its token labels as the map planned them
}


def apply_responsive() -> None:
    """The responsive CSS (``ui/assets/responsive.css``: its widths are :data:`PHONE_MAX` and :data:`SCROLL_PX`);
    call once per run (app.py does, next to ``ui.apply_presentation()``)."""
    st.html(style_tag("responsive.css"))


def _columns(fig: Any) -> int:
    """How many panels sit side by side in ``fig`` (a head grid's panels a row, else the distinct left edges of
    its x axes' domains)."""
    spec = getattr(fig, "_attn_spec", None)
    lay = spec.get("layout", {}) if isinstance(spec, dict) else fig.layout.to_plotly_json()
    grid = figures.grid_meta(lay.get("meta"))
    if grid is not None:
        return int(grid["ncols"])
    starts = {
        round(float((ax.get("domain") or [0])[0]), 3)
        for k, ax in lay.items()
        if re.fullmatch(r"xaxis\d*", k) and isinstance(ax, dict)
    }
    return len(starts)


def _planned_px(fig: Any) -> int:
    """The width a chart's labels were planned for (``layout.meta`` ``chart_px``: a step matrix) where a phone is
    narrower, else 0."""
    spec = getattr(fig, "_attn_spec", None)
    if isinstance(spec, dict):
        meta = spec.get("layout", {}).get("meta")
    else:
        plain = fig.__dict__.get("_plain")
        meta = plain[1].get("meta") if plain is not None else fig.layout.meta
    px = meta.get(figures.CHART_META) if isinstance(meta, dict) else None
    return int(px) if isinstance(px, (int, float)) and px > phone.PHONE_PX + 10 else 0


def phone_box(fig: Any, key: str) -> Any:
    """Where chart ``key`` goes: for panels side by side (or a chart in :data:`WIDE_CHARTS`, or one whose labels
    were planned for a wider chart, :func:`_planned_px`), a box that on a phone keeps the chart readable
    (:data:`SCROLL_PX` wide, or that width) and scrolls sideways; else None (the chart is drawn
    in place). Either way a title too long for a phone is written above it there (:func:`phone_title`). Only a
    phone's browser, or one we cannot tell, gets the box (:func:`phone_copies`): on a wide screen it is a
    container that does nothing, one more element for every browser of a class on every run."""
    if not phone_copies():
        return None
    px = WIDE_CHARTS.get(key) or _planned_px(fig) or (SCROLL_PX if _columns(fig) > 1 else 0)
    if not px:
        return None
    box = st.container(key=f"scroll__{key}")
    if px != SCROLL_PX:
        box.html(f"<style>.st-key-scroll__{key} {{ --attn-chart-px: {px}px; }}</style>")
    return box


_SUB_LINE = re.compile(r"<br\s*/?>\s*<su([bp])>(.*?)</su\1>", flags=re.I | re.S)


def phone_title(text: str, size: float) -> None:
    """Write a chart's title ``text`` (plotly's HTML subset) as wrapping text above the chart, shown only on a
    phone and only when the title is wider than a phone (call just before the chart: the CSS then hides
    plotly's own title of the next element on a phone). Sent only to a phone's browser or one we cannot tell
    (:func:`phone_copies`): a desktop browser would only hide it."""
    if not phone_copies() or phone.title_fits(text, size):
        return
    body = _SUB_LINE.sub(lambda m: f'<br><span class="attn-sub">{m.group(2)}</span>', text)
    st.html(f'<div class="attn-phone-title">{body}</div>')


def figure_title(fig: Any) -> tuple[str, float]:
    """A figure's title text and font size (px), from its serialised spec or its plotly layout."""
    spec = getattr(fig, "_attn_spec", None)
    lay = spec.get("layout", {}) if isinstance(spec, dict) else None
    if lay is None:
        title = fig.layout.title
        return str(title.text or ""), float(title.font.size or fig.layout.font.size or 16)
    title = lay.get("title") or {}
    title = title if isinstance(title, dict) else {"text": title}
    size = (title.get("font") or {}).get("size") or (lay.get("font") or {}).get("size") or 16
    return str(title.get("text") or ""), float(size)


def is_phone(user_agent: str) -> bool:
    """Whether a browser's User-Agent names a phone: it contains ``Mobi`` (MDN's advice for "mobile": every
    phone browser says ``Mobile`` or ``Mobi``; tablets and desktop browsers do not)."""
    return "Mobi" in user_agent


def phone_copies() -> bool:
    """Whether this session's browser gets the phone copy of each head grid: a phone, or a browser that sent no
    User-Agent (AppTest, a client we cannot tell). A desktop browser gets the grid alone."""
    agent = st.context.headers.get("User-Agent")
    return not agent or is_phone(agent)


def on_phone() -> bool:
    """Whether this session's browser says it is a phone (its User-Agent): a chart that has a layout for a
    phone's width is built with it. A browser that sent no User-Agent is not taken for one."""
    return is_phone(st.context.headers.get("User-Agent") or "")
