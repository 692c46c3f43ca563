"""Showing results: figures with their export menu, errors in the user's language, short explanations."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

import plotly.graph_objects as go
import streamlit as st

from attn_core import figures
from attn_core.figures import phone
from attn_core.i18n import DEFAULT_LANG
from attn_core.runtime.config import ConfigError

from .charts import PLOT_CONFIG, Drawn, SerialisedFigure, chart_scheme, plotly_chart
from .core import BIND, _remember, lang, present, seed, style, t
from .responsive import _SUB_LINE, figure_title, phone_box, phone_copies, phone_title


def error_text(exc: Exception) -> str:
    """The message of ``exc`` in the user's language (catalog ``err.<key>`` when the error names one)."""
    key = getattr(exc, "key", None)
    if key and lang() != DEFAULT_LANG:
        from attn_core.i18n import catalog

        if f"err.{key}" in catalog(lang()):
            return t(f"err.{key}", **getattr(exc, "params", {}))
    return str(exc)


def show_error(exc: Exception) -> None:
    """Show a ConfigError (or any expected failure) as a message, never a traceback."""
    st.error(t("ui.fix_this", msg=error_text(exc)), icon="🛑")


def show_figure(
    fig: Any, key: str, data: Any = None, name: str | None = None, on_select: Callable[[], None] | None = None
) -> None:
    """Draw a plotly figure (toolbar download: SVG at scale 2) with export buttons under it; in presentation mode
    the chart alone, as tall as the slide leaves room for.

    ``data`` is a pandas DataFrame of the numbers behind the chart (with token
    labels) for the CSV export; ``name`` is the file stem of every export.
    A :class:`SerialisedFigure` is drawn as it is (its fonts were set when it was serialised).
    ``on_select``: called when a click selects a point (the chart's state is ``st.session_state[key]``).
    """
    if not isinstance(fig, SerialisedFigure):
        figures.apply_fonts(fig, style())
    select = {"on_select": on_select, "selection_mode": "points"} if on_select is not None else {}
    selectable = on_select is not None
    if present():  # slide mode: the chart takes the height the slide leaves it (ui/assets/present.css), no menu
        plotly_chart(st, slide_figure(fig), selectable, key=key, height="stretch", **select)
        return
    phone_title(*figure_title(fig))  # a title wider than a phone, written above the chart there
    box = phone_box(fig, key)  # panels side by side: on a phone, a box that scrolls sideways
    plotly_chart(box or st, fig, selectable, key=key, **select)
    export_menu(fig, key, data, export_name(name or key))


def slide_figure(fig: Any) -> Any:
    """``fig`` for a slide, whose height follows the screen rather than the figure: a legend placed below the plot
    (``y < 0`` in plot fractions, which shrink with the chart and would run into the x-axis title) is pinned to the
    chart's bottom edge instead, inside the bottom margin the builder reserved for it. A serialised figure's
    shared spec is copied, never changed."""
    spec = fig._attn_spec if isinstance(fig, SerialisedFigure) else None
    layout = spec.get("layout", {}) if spec is not None else fig.layout.to_plotly_json()
    legend = layout.get("legend") or {}
    y = legend.get("y")
    if y is None or y >= 0 or legend.get("yref", "paper") != "paper":
        return fig
    pinned = {**legend, "yref": "container", "y": 0.0, "yanchor": "bottom"}
    if spec is not None:
        return SerialisedFigure({**spec, "layout": {**layout, "legend": pinned}})
    return go.Figure(fig).update_layout(legend=pinned)


def export_name(view: str) -> str:
    """The file stem of a chart's exports: page, view, shape, mask, language and a digest of the page state
    (:func:`attn_core.views.base.export_stem`), from the running page and its link's parameters."""
    from attn_core.views import PAGES
    from attn_core.views.base import defaults, export_stem

    page = str(st.session_state.get("_page") or "")
    spec = next((p for p in PAGES if p.name == page), None)
    state = dict(st.session_state.get("_link_params", {}))
    values = {**(defaults(spec.params) if spec else {}), **state}
    return export_stem(page or "attention-explorer", view, values, state, lang())


def table(data: Any, **kwargs: Any) -> Any:
    """A table of ``data`` (a DataFrame): ``st.dataframe(data, **kwargs)`` on a page, where it sorts and scrolls;
    on a slide ``st.table`` (``hide_index`` carries over), whose text ``present.css`` sets for a projector: the
    data grid draws its text on a canvas in the page's small font (14 px), which no style sheet reaches."""
    if present():
        return st.table(data, hide_index=kwargs.get("hide_index"))
    return st.dataframe(data, **kwargs)


def show_view(view: Any, key: str, name: str | None = None, on_select: Callable[[], None] | None = None) -> None:
    """Draw an :class:`attn_core.views.View` or a :class:`Drawn` one; its table is built only if its CSV is
    downloaded. ``on_select``: see :func:`show_figure`. A head grid of one panel (a zoom) gets a copy planned for
    a phone's width too (:func:`show_heads`), shown on a phone only."""
    if not present() and phone_copies() and _lone_panel(view):
        show_heads(view, key, name, on_select)
        return
    _show_view(view, key, name, on_select)


def _show_view(view: Any, key: str, name: str | None = None, on_select: Callable[[], None] | None = None) -> None:
    fig = SerialisedFigure(view.spec) if isinstance(view, Drawn) else view.figure
    show_figure(fig, key, data=view.source, name=name or view.name, on_select=on_select)


def _lone_panel(view: Any) -> bool:
    """Whether ``view`` is a head grid of one panel (a one-head zoom)."""
    if isinstance(view, Drawn):
        meta = (view.spec.get("layout") or {}).get("meta")
    else:
        plain = view.figure.__dict__.get("_plain")
        meta = plain[1].get("meta") if plain is not None else view.figure.layout.meta
    grid = figures.grid_meta(meta)
    return grid is not None and len(grid["heads"]) == 1


def show_steps(views: Sequence[Any], sentences: Sequence[str], n_cols: int, key: str = "step", stem: str = "") -> None:
    """Step charts ``n_cols`` to a row (so they read left to right, top to bottom), each under its numbered
    sentence; chart keys ``<key><i>``, export names ``<view name>_<stem>``."""
    for i, v in enumerate(views):
        if i % n_cols == 0:
            cols = st.columns(n_cols)
        with cols[i % n_cols]:
            st.markdown(f"**{i + 1}.** {sentences[i]}")
            show_view(v, f"{key}{i}", name=f"{v.name}_{stem}" if stem else None)


def show_views(views: Sequence[Any], boxes: Sequence[Any], key: str) -> None:
    """Each view in its box (an ``st.empty`` or a column), chart keys ``<key><view name>``."""
    for box, v in zip(boxes, views, strict=False):
        with box.container():
            show_view(v, f"{key}{v.name}")


def live_charts(views: Sequence[Any], boxes: Sequence[Any]) -> None:
    """A live run's frame: each view's figure replacing the one in its ``st.empty`` box. No key and no export
    menu: a new key would remount the chart (it blinks); the finished run is drawn with :func:`show_views`."""
    from .streamlit_compat import DuplicateElementId

    for box, v in zip(boxes, views, strict=False):
        slide = present()  # slide mode: as tall as the slide leaves room for
        fig = slide_figure(v.figure) if slide else v.figure
        try:
            plotly_chart(box, fig, height="stretch" if slide else "content")
        except DuplicateElementId:  # the very chart an earlier frame of this run drew: it is there
            pass


@st.cache_resource(show_spinner=False)
def _chromium() -> str | None:
    from attn_core.render import find_chromium

    return find_chromium()


def _deferred(fig: Any, fmt: str, data: Any, preset: str) -> Callable[[], bytes]:
    from attn_core.render import export_bytes

    s = style()

    def make() -> bytes:
        real = fig.figure() if isinstance(fig, SerialisedFigure) else fig
        return export_bytes(real, fmt, data, preset, s)

    return make


def export_menu(fig: Any, key: str, data: Any, name: str) -> None:
    """A compact "Export" popover: PNG/SVG/PDF (kaleido + system Chromium), CSV of the numbers, offline HTML.

    The popover's contents are drawn only while it is open (opening it reruns the page, from the caches), and
    files are produced only when a button is clicked (deferred download): a closed menu costs one element on a
    rerun instead of eight, on the server and in every browser of the class.
    """
    from attn_core.figures.slides import PRESET_NAMES
    from attn_core.render import MIME, chromium_missing_message

    menu = st.popover(t("ui.export"), icon=":material/download:", key=f"{key}__export", on_change="rerun")
    if not menu.open:
        return
    with menu:
        st.caption(t("ui.export_help"))
        preset = st.segmented_control(
            t("ui.export_size"),
            PRESET_NAMES,
            default="screen",
            key=f"{key}__preset",
            format_func=lambda p: t(f"ui.preset.{p}"),
            required=True,
        )
        row = st.container(horizontal=True, gap="small")  # one block, not five columns: drawn on every run
        has_browser = _chromium() is not None
        sized = name if preset == "screen" else f"{name}_{preset}"
        for fmt in ("png", "svg", "pdf", "csv", "html"):
            disabled = (fmt in ("png", "svg", "pdf") and not has_browser) or (fmt == "csv" and data is None)
            row.download_button(
                fmt.upper(),
                data=_deferred(fig, fmt, data, preset or "screen"),
                file_name=f"{sized if fmt in ('png', 'svg', 'pdf') else name}.{fmt}",
                mime=MIME[fmt],
                key=f"{key}__{fmt}",
                on_click="ignore",
                disabled=disabled,
                width="stretch",
            )
        if not has_browser:
            st.info(chromium_missing_message(), icon="ℹ️")


def lazy_expander(label: str, key: str, *, linked: bool = False, open_first: bool = False, **kwargs: Any) -> Any | None:
    """``st.expander(label, key=key, **kwargs)`` whose content is sent only while it is open: the container to
    fill, or None while it is closed (opening it reruns the page, which then fills it).

    With ``linked`` its open state is part of the view: bound to the address (``?<key>=true``, as the controls
    are: a reload keeps it, a link opens it) and written into the share link while it is open, so a lecturer's
    link to a page's section opens that section for the students. ``open_first`` opens it on the session's first
    run that draws it (a link that sets one of its controls): its state is set, its default stays closed. (A
    default of open would not do: the default is part of the expander's identity, and the section's controls,
    which opened it, leave the address when it closes; and a closed expander whose default is open is drawn
    open again by the browser, so it took two clicks to close.)

    A closed explanation, table or panel costs a browser nothing on each slider move (its elements used to be
    sent and rendered on every run: the deck panel's seven widgets and a help text took ~20 ms of a heatmap
    move's ~250 ms in chromium). A client that tells no colour scheme (AppTest, :func:`chart_scheme`) cannot
    open an expander: it gets every expander's content, as before, so the tests read every explanation.
    """
    if chart_scheme() is None:
        return st.expander(label, key=key, **{"expanded": open_first, **kwargs})
    if not linked:
        box = st.expander(label, key=key, on_change="rerun", **kwargs)
        return box if box.open else None
    first = f"_{key}_first"
    if open_first and not st.session_state.get(first):
        st.session_state[first] = True
        st.session_state[key] = True  # before the expander exists: its state, once
    box = st.expander(label, key=key, bind=BIND, **kwargs)  # bound: toggling reruns, the address follows
    _remember(key, bool(box.open), bool(kwargs.get("expanded", False)))
    return box if box.open else None


def help_expander(key: str, **kwargs: object) -> None:
    """A short explanation in an expander, title ``<key>.title`` and body ``<key>.body`` (sent while open)."""
    help_text(f"{key}.title", t(f"{key}.body", **kwargs))


def help_text(title_key: str, text: str) -> None:
    """A short explanation already written for the current settings, in an expander titled ``title_key`` (sent
    while open)."""
    box = lazy_expander(t(title_key), f"x_{title_key}")
    if box is not None:
        with box:
            st.markdown(text)


def random_weights_note() -> None:
    """Say on the page that the maps come from seeded random, untrained embeddings and projections."""
    st.caption(t("ui.random_weights", seed=seed()))


def run_safely(fn: Callable[[], Any]) -> Any:
    """Call ``fn``; on ConfigError show its message and return None."""
    try:
        return fn()
    except ConfigError as exc:
        show_error(exc)
        return None


def _phone_head(panels: list[tuple[int, str]], key: str) -> int:
    """A phone's picker of a grid's head (its panels' head numbers)."""
    labels = [re.sub(r"\D*(\d+).*", r"\1", title) or str(i) for i, (_, title) in enumerate(panels)]
    return st.segmented_control(
        t("ui.phone_head"),
        list(range(len(panels))),
        default=0,
        key=f"{key}__head",
        format_func=lambda j: labels[j],
        required=True,
    )


def notices(items: Any) -> None:
    """A view model's notices, each ``(Streamlit call: "info", "warning", "caption" ..., text, icon or "")``."""
    for kind, text, icon in items:
        getattr(st, kind)(text, **({"icon": icon} if icon else {}))


def show_heads(view: Any, key: str, name: str | None = None, on_select: Any = None) -> None:
    """A head grid (a :func:`attn_core.figures.heatmap_grid` view, drawn or not): the whole grid with its export
    menu on a wide screen; on a phone the grid's title, a head picker and the picked head alone, full width
    (sent only to a phone's browser or one we cannot tell, :func:`phone_copies`).

    Chart keys: ``key`` (the grid), ``<key>__one`` (the head); the picker's key is ``<key>__head``.
    ``on_select``: the grid's click handler (:func:`ui.output.show_figure`).
    """
    import json

    import plotly.io as pio

    if not phone_copies():  # a desktop browser: the grid alone, never hidden by the phone CSS
        _show_view(view, key, name, on_select=on_select)
        return
    with st.container(key=f"wide__{key}"):
        _show_view(view, key, name, on_select=on_select)
    spec = view.spec if isinstance(view, Drawn) else json.loads(pio.to_json(view.figure, validate=False))
    panels = phone.grid_panels(spec)
    lone = not panels and _lone_panel(view)  # a zoom: its one panel planned for the phone's width, no picker
    if not panels and not lone:
        return
    with st.container(key=f"phone__{key}"):
        text, _ = figure_title(SerialisedFigure(spec))
        if text:
            body = _SUB_LINE.sub(lambda m: f'<br><span class="attn-sub">{m.group(2)}</span>', text)
            st.markdown(f'<div class="attn-phone-head">{body}</div>', unsafe_allow_html=True)
        i = 0 if lone else _phone_head(panels, key)
        one = phone.one_panel(spec, int(i or 0), style())
        plotly_chart(st, SerialisedFigure(one), key=f"{key}__one", config={**PLOT_CONFIG, "displayModeBar": False})
