"""Token-centred maps on a head grid: a click on a panel opens its head; one query token followed through
the heads of a KV group (its row outlined in the grid, a BertViz-style line view under it).

Selections live in ``st.session_state`` (the chart's own widget state and the two pickers), so one
student's click never reaches another session. The followed token and its KV group also go into the
address and the share link (``?focus_token=7&focus_group=1``, the token's 0-based position), so a link
opens the same lines. A click arrives through the charts' transparent click layers
(:func:`attn_core.figures.tokenmaps.click_layer`) and is checked before it is used.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import streamlit as st

from attn_core.views import heatmaps as hm

from .compute import compute, view
from .core import _notice_if_replaced, _parse_number, _remember, _url_raw, _write_url, count, present, style, t
from .output import show_heads, show_view
from .widgets import drawer, slide_controls

__all__ = ["FOCUS_TOKEN", "FOCUS_GROUP", "open_zoom", "head_grid", "grid_page"]

FOCUS_TOKEN, FOCUS_GROUP = "focus_token", "focus_group"  # session-state keys of the two pickers


def open_zoom(head: int, view: str = "zoom") -> None:
    """Open ``head`` in the one-head ``view`` of the page: the heatmap page's zoom (its step-by-step view reads
    the same head), the models page's ``head`` view. Called before the page's widgets exist: no head slider
    is bound yet (a slider that is, like the models page's layer, keeps its value)."""
    st.session_state.update(view=view, head=head)
    st.query_params.update(view=view, head=str(head))  # the URL-bound head slider reads it when made


def _points(key: str) -> Any:
    state = st.session_state.get(key)
    try:
        return state["selection"]["points"]
    except (KeyError, TypeError):
        return None


def _on_head_click(key: str, n_heads: int, open_head: Callable[[int], None]) -> Callable[[], None]:
    def clicked() -> None:
        head = hm.clicked(_points(key), 0, None, n_heads)
        if head is not None:  # an empty or malformed selection changes nothing
            open_head(head)

    return clicked


def _on_query_click(key: str, t_q: int) -> Callable[[], None]:
    def clicked() -> None:
        q = hm.clicked(_points(key), 1, "q", t_q)
        if q is not None:
            st.session_state[FOCUS_TOKEN] = q

    return clicked


def _pickers(pm: Any) -> tuple[int, int] | None:
    """The query token (or none) and the KV group to follow it in; ``(position, group)`` or None."""
    tokens, n_kv, n_rep = pm.tokens_q, pm.n_kv_heads, pm.n_heads // pm.n_kv_heads
    options = list(range(-1, len(tokens)))
    for key, valid, none in ((FOCUS_TOKEN, options[1:], t("focus.none")), (FOCUS_GROUP, list(range(n_kv)), "0")):
        allowed = options if key == FOCUS_TOKEN else valid
        if key in st.session_state and st.session_state[key] not in allowed:
            del st.session_state[key]  # kept from a longer text or more KV heads: start again
        if valid and key not in st.session_state and (raw := _url_raw(key)) is not None:  # a link's first run
            num = _parse_number(raw)
            ok = num is not None and num == int(num) and int(num) in valid
            if ok:
                st.session_state[key] = int(num)
            _notice_if_replaced(key, raw, none, ok, t("ui.expect_int", lo=valid[0], hi=valid[-1]))
    c1, c2 = st.columns(2, gap="medium")
    q = c1.selectbox(
        t("focus.token"),
        options,
        key=FOCUS_TOKEN,
        help=t("focus.help"),
        format_func=lambda i: t("focus.none") if i < 0 else f"{tokens[i]} ({i})",
    )
    group = 0
    if n_kv > 1:
        group = c2.selectbox(
            t("focus.group"),
            list(range(n_kv)),
            key=FOCUS_GROUP,
            format_func=lambda g: t("focus.group_opt", g=g, a=g * n_rep, b=(g + 1) * n_rep - 1),
        )
    q, group = -1 if q is None else int(q), int(group)
    for key, value, default in ((FOCUS_TOKEN, q, -1), (FOCUS_GROUP, group if q >= 0 else 0, 0)):
        _write_url(key, str(value), str(default))  # the address and the share link: only a followed token
        _remember(key, value, default)
    return None if q < 0 else (q, group)


def _lines(layer: Any, pm: Any, focus: tuple[int, int]) -> None:
    """The line view of the followed token, its sentence, and what a pooled row of the grid holds."""
    q, group = focus
    s = style()
    if pm.factor > 1:
        st.caption(hm.focus_pooled_note(pm, q, s))
    rows = compute(hm.focus_rows, layer, hm.group_heads(pm.n_heads, pm.n_kv_heads, group), q)
    if rows is None:
        return
    show_view(view(hm.lines_view, rows, s), "focus_lines", on_select=_on_query_click("focus_lines", len(pm.tokens_q)))
    st.markdown(hm.focus_sentence(rows, s))


def grid_page(pm: Any, key: str = "slide") -> tuple[int, ...] | None:
    """Slide mode: the heads of the slide's page of the grid, with a stepper ``key`` of the pages over the grid (its
    label names the heads, the clicker presses it); None where one slide shows them all (and on a page). A page
    whose sections are already a slide's stepper (``slide``) gives the grid's its own key."""
    if not present():
        return None
    s = style()
    pages = hm.grid_pages(pm, s)  # a few label widths measured: no cache needed
    if len(pages) < 2:
        return None
    at = slide_controls(key, len(pages), label=lambda i: hm.page_label(pm, pages[i], s))
    return pages[at]


def head_grid(layer: Any, pm: Any, fit: bool, key: str, open_head: Callable[[int], None], hint: str) -> None:
    """The grid of every head of ``pm`` (from the attention source ``layer``) with its click layer: a click on
    a panel calls ``open_head(head)``. Under it, ``hint`` and the pickers that follow one query token: its
    row outlined in the grid's panels of one KV group, and the line view of where it attends there.
    Maps longer than :data:`attn_core.views.heatmaps.FOCUS_MAX` a side say so instead of the pickers.

    On a slide, as many panels as a slide labels in full, with a stepper of the rest (:func:`_slide_page`)."""
    box = st.container()
    st.caption(t(hint))
    focus = None
    if hm.focus_ok(pm):
        with drawer():  # slide mode: in the controls bar, the slide keeps its room for the grid
            focus = _pickers(pm)
    else:
        st.caption(
            t(
                "focus.too_long",
                max=hm.FOCUS_MAX,
                tq=count(len(pm.tokens_q), "query"),
                tk=count(len(pm.tokens_k), "key"),
            )
        )
    with box:
        heads = grid_page(pm)
        show_heads(  # on a phone: one head at a time
            view(hm.grid_view, pm, style(), fit, focus, heads),
            key,
            on_select=_on_head_click(key, pm.n_heads, open_head),
        )
    if focus is not None:
        _lines(layer, pm, focus)
