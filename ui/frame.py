"""The app's frame: deep links and navigation, the sidebar, presentation mode, the share link."""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any, NoReturn

import streamlit as st

from attn_core.i18n import DEFAULT_LANG, LANGUAGES
from attn_core.runtime.config import ConfigError

from .core import (
    BIND,
    _device_choice,
    _notice_if_replaced,
    _parse_number,
    _remember,
    _url_raw,
    device_text,
    lang,
    present,
    t,
)
from .output import error_text


def page_guard() -> None:
    """Make sure this page runs inside app.py's navigation; call first thing in every page.

    Until a server's first ``st.navigation`` call, Streamlit still routes by the legacy
    ``pages/`` folder: the very first visitor of a fresh server who opens a deep link
    (``/heatmaps``) would get the page script alone, without app.py's layout and sidebar.
    Switching the legacy routing off and rerunning sends that run through app.py.
    """
    from streamlit.runtime.pages_manager import PagesManager

    if PagesManager.uses_pages_directory:
        PagesManager.uses_pages_directory = False
        st.rerun()


class PageStopped(Exception):
    """Raised by :func:`stop`; app.py's page fragment catches it (:func:`draw_page`)."""


# Whether this script thread is running a page inside draw_page (a context variable: each session's run has its
# own thread, so no session sees another's).
_IN_DRAW_PAGE: ContextVar[bool] = ContextVar("attn_in_draw_page", default=False)


def stop() -> NoReturn:
    """End the page here (after saying why, or at the end of a view): what app.py draws after the page, the share
    link and the deck panel, is still drawn. ``st.stop()`` stops the whole run instead: every later ``st`` call
    of the run raises, so a page that stopped lost its share link and its deck panel. A page script run alone
    (not through app.py, as some tests do) stops with ``st.stop()``."""
    if not _IN_DRAW_PAGE.get():
        st.stop()
    raise PageStopped


def draw_page(page: Any, page_path: str, home: str) -> None:
    """Run ``page`` (an ``st.Page``), stopped or not by :func:`stop`, then fill the share link (:func:`share_link`)."""
    token = _IN_DRAW_PAGE.set(True)
    try:
        page.run()
    except PageStopped:
        pass  # the page ended early: bad input said what to change, or a view ends there
    finally:
        _IN_DRAW_PAGE.reset(token)
        share_link(page_path, home)  # also after an exception: the link still holds the view's settings


def route_home_alias(home: str) -> None:
    """Open the default page for ``/<home>``, its own name, instead of Streamlit's "Page not found" dialog.

    ``st.navigation`` serves its default page at ``/`` only: a link or bookmark to ``/heatmaps`` names no
    page it knows, so Streamlit shows an English "Page not found" dialog (then draws the default page
    anyway). Call before ``st.navigation``: a first run that asks for ``home`` by name asks for the default
    page instead; the browser's address becomes ``/`` with every query parameter kept.
    """
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx()
    pages = getattr(ctx, "pages_manager", None)
    if pages is None or pages.intended_page_script_hash:
        return
    if (pages.intended_page_name or "").strip("/") == home:
        pages.set_script_intent("", "")


def sidebar() -> None:
    """The global sidebar: language, seed, presentation mode, the compute device and the share link."""
    st.session_state["_link_params"] = {}
    if "present" not in st.session_state and _url_raw("present") in ("1", "yes", "on"):
        # ?present=1 as well as the toggle's own ?present=true: rewrite the link and start over, so the
        # bound toggle reads "true" from the URL in the browser and on the server alike. Called after
        # st.navigation (app.py), so the rerun stays on the page the link named.
        st.query_params["present"] = "true"
        st.rerun()
    with st.sidebar:
        # Options are the codes themselves so that links carry ?lang=zh.
        st.segmented_control(
            "Language / 语言 (en = English, zh = 中文)",
            list(LANGUAGES),
            default=DEFAULT_LANG,
            key="lang",
            bind=BIND,
            required=True,
        )
        _remember("lang", lang(), DEFAULT_LANG)
        raw = _url_raw("seed")
        seed_value = st.number_input(
            t("ctl.seed"), min_value=0, max_value=2**31 - 1, value=0, step=1, key="seed", bind=BIND, help=t("help.seed")
        )
        num = _parse_number(raw)
        _notice_if_replaced(
            "seed",
            raw,
            seed_value,
            num is not None and num.is_integer() and 0 <= num < 2**31,
            t("ui.expect_int", lo=0, hi=2**31 - 1),
        )
        _remember("seed", int(seed_value), 0)
        present = st.toggle(t("ctl.present"), value=False, key="present", bind=BIND, help=t("help.present"))
        _remember("present", bool(present), False)
        _, info, err = _device_choice()
        st.caption(t("ui.device", label=device_text(info)))
        if err:
            msg, key, params = err
            st.warning(
                t("ui.device_fallback", msg=error_text(ConfigError(msg, "device", key, **dict(params)))), icon="⚠️"
            )
        st.caption(t("ui.share_link"))
        st.session_state["_link_slot"] = st.empty()  # the link itself: the page's run fills it (share_link)
        if st.button(t("ui.qr"), icon=":material/qr_code_2:", key="_qr", width="stretch"):
            st.session_state["_qr_asked"] = True  # the dialog opens once the page ran and the link is known


# Slide mode: every view one 16:9 viewport: the title, the chart, a sentence or two. The rules are keyed on what a
# page draws (Streamlit's test ids and the ``st-key-<key>`` classes of keyed elements), so the pages stay layout only.
PRESENT_CSS = """
<style>
  :root { --attn-slide-mode: 1; }  /* read by the clicker script: arrow keys and space move slides */
  /* Streamlit's header out of the way: no bar, no menu; only the button that opens the sidebar stays */
  [data-testid="stHeader"] { background: transparent; height: 0; }
  [data-testid="stHeader"], [data-testid="stHeader"] * { pointer-events: none; }
  [data-testid="stHeader"] [data-testid="stExpandSidebarButton"],
  [data-testid="stHeader"] [data-testid="stExpandSidebarButton"] * { pointer-events: auto; }
  [data-testid="stToolbarActions"], [data-testid="stMainMenu"], [data-testid="stAppDeployButton"],
  [data-testid="stDecoration"] { display: none; }
  /* the slide: the viewport's height, a column whose charts take the room the text leaves */
  [data-testid="stMain"] { font-size: 1.3rem; }
  [data-testid="stMain"] [data-testid="stMainBlockContainer"] {
    padding: 0.6rem 1.5rem 0.6rem 4rem; max-width: 100%; height: 100vh; box-sizing: border-box;
    display: flex; flex-direction: column; position: relative; }
  [data-testid="stMainBlockContainer"] > [data-testid="stVerticalBlock"] { flex: 1 1 0; min-height: 0; gap: 0.5rem; }
  [data-testid="stMain"] [data-testid="stVerticalBlock"] > * { flex-shrink: 0; }  /* text keeps its height */
  /* text boxes as tall as their text (Streamlit hides a paragraph's bottom margin under a negative one) */
  [data-testid="stMain"] [data-testid="stMarkdownContainer"] { margin-bottom: 0; }
  [data-testid="stMain"] [data-testid="stMarkdownContainer"] > :last-child { margin-bottom: 0; }
  [data-testid="stMain"] h1 { font-size: 2.3rem; line-height: 1.2; padding: 0.1rem 14.5rem 0.2rem 0; }
  [data-testid="stMain"] h2, [data-testid="stMain"] h3 { font-size: 1.7rem; line-height: 1.25; padding: 0; }
  [data-testid="stMain"] [data-testid="stHeaderActionElements"] { display: none; }
  [data-testid="stMain"] p, [data-testid="stMain"] li { font-size: 1.3rem; line-height: 1.4; }
  [data-testid="stMain"] [data-testid="stMetricValue"], [data-testid="stMain"] [data-testid="stMetricValue"] * {
    font-size: 3.4rem; line-height: 1.15; }
  [data-testid="stMain"] [data-testid="stMetricLabel"] p { font-size: 1.5rem; }
  /* nothing else on a slide: intros, captions, notes, explanations and tables beside a chart are folded away */
  [data-testid="stMain"] [data-testid="stElementContainer"]:has([data-testid="stCaptionContainer"]),
  [data-testid="stMain"] [data-testid="stLayoutWrapper"]:has(> [data-testid="stExpander"]):not(.st-key-slide_controls),
  [data-testid="stMain"]:has(.stPlotlyChart) [data-testid="stElementContainer"]:has([data-testid="stDataFrame"]),
  [data-testid="stMain"] [data-testid="stButtonGroup"] [data-testid="stWidgetLabel"] { display: none; }
  /* charts take the room left: their blocks stretch, and the chart follows its block's height */
  [data-testid="stMain"] [data-testid="stElementContainer"]:has(.stPlotlyChart),
  [data-testid="stMain"] [data-testid="stLayoutWrapper"]:has(.stPlotlyChart) { flex: 1 1 0; min-height: 9rem; }
  [data-testid="stMain"] [data-testid="stLayoutWrapper"]:has(.stPlotlyChart) > [data-testid="stHorizontalBlock"],
  [data-testid="stMain"] [data-testid="stColumn"]:has(.stPlotlyChart) > [data-testid="stVerticalBlock"],
  [data-testid="stMain"] [data-testid="stLayoutWrapper"]:has(.stPlotlyChart) > [data-testid="stVerticalBlock"] {
    height: 100%; }
  /* the page's controls: a compact bar at the top right that opens over the slide */
  .st-key-slide_controls { position: absolute; top: 0.6rem; right: 1.5rem; width: 13rem; z-index: 30; }
  .st-key-slide_controls:has(details[open]) { width: min(72rem, calc(100% - 5.5rem)); }
  .st-key-slide_controls details { background: var(--attn-slide-bg, #ffffff); box-shadow: 0 4px 18px rgba(0,0,0,.18); }
  .st-key-slide_controls [data-testid="stExpanderDetails"] { max-height: calc(100vh - 5rem); overflow-y: auto; }
  .st-key-slide_controls p, .st-key-slide_controls li { font-size: 1rem; }
  /* a deck's bar: one slim line */
  .st-key-deck_bar { padding: 0.1rem 0.5rem; gap: 0; }
  [data-testid="stMainBlockContainer"]:has(.st-key-slide_controls) .st-key-deck_bar { max-width: calc(100% - 14rem); }
  .st-key-deck_bar p { font-size: 1.1rem; line-height: 1.3; margin: 0; }
  [data-testid="stMain"] .st-key-deck_bar h1 { font-size: 2rem; padding: 0; }
  .st-key-deck_bar .deck-at { font-size: 1rem; font-weight: 400; color: #6b6b6b; margin-left: 0.8rem; white-space: nowrap; }
  .st-key-deck_bar button { min-height: 2rem; padding: 0 0.6rem; }
  [class*="st-key-slide_nav"] button { min-height: 2rem; padding: 0 0.6rem; }
</style>
"""

# What a presentation clicker sends (Page Down / Page Up, arrows, space) moves slides: a deck's when one is open,
# else the page's steps. Keys typed into a field or a slider keep their meaning; outside slide mode only Page Up /
# Page Down move (arrows and space scroll as usual). Runs in the app's document (st.html is not in an iframe);
# the listener is added once per browser tab.
CLICKER_JS = """
<script>
(() => {
  if (window.__attnClicker) return;
  window.__attnClicker = true;
  const NEXT = ["PageDown", "ArrowRight", "ArrowDown", " "], PREV = ["PageUp", "ArrowLeft", "ArrowUp"];
  const TYPING = "input, textarea, select, [role='slider'], [role='combobox'], [role='listbox'], [contenteditable='true']";
  document.addEventListener("keydown", (e) => {
    if (e.altKey || e.ctrlKey || e.metaKey || e.shiftKey) return;
    const fwd = NEXT.includes(e.key);
    if (!fwd && !PREV.includes(e.key)) return;
    if (e.target && e.target.closest && e.target.closest(TYPING)) return;
    const css = getComputedStyle(document.documentElement).getPropertyValue("--attn-slide-mode").trim();
    if (css !== "1" && !e.key.startsWith("Page")) return;
    const which = fwd ? "next" : "prev";
    // a deck's bar first; else the page's steppers, the lowest one that can still move (steps within a section,
    // then the sections)
    let button = document.querySelector(`.st-key-deck_${which} button`);
    const navs = [...document.querySelectorAll("[class*='st-key-slide_nav']")].reverse();
    const buttons = navs.map(nav => nav.querySelector(`[class*='__${which}'] button`)).filter(b => b);
    button = button || buttons.find(b => !b.disabled) || buttons[0];
    if (!button) return;  // nothing to move: the key keeps its usual meaning
    e.preventDefault();
    e.stopPropagation();
    if (!button.disabled) button.click();
  }, true);
})();
</script>
"""


def apply_presentation() -> None:
    """Slide mode (:data:`PRESENT_CSS`) when presentation mode is on; the clicker keys always (call once per run,
    app.py does)."""
    from .widgets import DRAWER

    st.session_state.pop(DRAWER, None)  # the page's controls box of this run sets it again
    if present():
        st.html(PRESENT_CSS)
    with st.sidebar:  # not in the page's column: it takes no room on the slide; the link box's style and script too
        st.html(CLICKER_JS + LINK_ASSETS.format(copy_icon=COPY_ICON, done_icon=DONE_ICON), unsafe_allow_javascript=True)


def share_link(page_path: str, home: str) -> None:
    """Fill the sidebar's "copy link" box with the URL of the current view (call after the page ran).

    ``page_path`` is the running page's ``url_path`` (``""`` for the default page, which
    Streamlit serves at ``/``), ``home`` the default page's own name. The link holds every
    control that differs from its default, so opening it in a new session reproduces the
    same numbers; the default page's link is ``/?…``, also when the page was opened as
    ``/heatmaps``.

    A move of a page's control reruns the page alone (a fragment), and this redraws one element, the link's
    text: its caption, the QR button, the box's style and its copy script are drawn with the sidebar
    (:data:`LINK_ASSETS`), not again at every move (a heatmaps move: ~16 ms of the browser's time
    less, measured with ``bench/bench.py``'s browser section).
    """
    slot = st.session_state.get("_link_slot")
    if slot is None:
        return
    url = view_url(st.context.url or "", page_path, home, st.session_state.get("_link_params", {}))
    slot.html(link_box(url or "?"))
    if st.session_state.pop("_qr_asked", False):
        st.dialog(t("ui.qr"), width="medium")(show_qr)(url or "?")


# Material's "content copy" and "check" icons, drawn in the text's colour through a CSS mask (st.html drops <svg>).
_ICON = (
    "data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 24 24'%3E%3Cpath d='{}'/%3E%3C/svg%3E"
)
COPY_ICON = _ICON.format(
    "M16 1H4c-1.1 0-2 .9-2 2v14h2V3h12V1zm3 4H8c-1.1 0-2 .9-2 2v14c0 1.1.9 2 2 2h11c1.1 0 2-.9 "
    "2-2V7c0-1.1-.9-2-2-2zm0 16H8V7h11v14z"
)
DONE_ICON = _ICON.format("M9 16.17 4.83 12l-1.42 1.41L9 19 21 7l-1.41-1.41z")

# The share link's box (LINK_BOX, redrawn at each move) has a copy button; its style and the click handler
# (LINK_ASSETS) are drawn once with the sidebar. Not st.code: its syntax highlighter cost the page's main thread
# ~270 ms at every cold start (cold start to the first chart 3.08 -> 2.79 s without it). The click handler is added
# once per tab; the clipboard API needs a secure context (https or localhost), a lecture hall's http://<address>
# falls back to copying a selected text area.
LINK_ASSETS = """
<style>
  .attn-link {{ position: relative; font-family: "Source Code Pro", monospace; font-size: 0.8rem; line-height: 1.45;
    background: rgba(128, 128, 128, 0.1); border-radius: 0.5rem; padding: 0.6rem 2.4rem 0.6rem 0.75rem; }}
  .attn-link code {{ font-family: inherit; background: none; padding: 0; overflow-wrap: anywhere; word-break: break-all;
    white-space: pre-wrap; color: inherit; }}
  .attn-link button {{ position: absolute; top: 0.35rem; right: 0.35rem; border: none; background: none; cursor: pointer;
    padding: 0.2rem; border-radius: 0.3rem; color: inherit; opacity: 0.6; line-height: 0; }}
  .attn-link button:hover, .attn-link button:focus-visible {{ opacity: 1; background: rgba(128, 128, 128, 0.2); }}
  .attn-link button::before {{ content: ""; display: block; width: 16px; height: 16px; background: currentColor;
    -webkit-mask: url("{copy_icon}") center / contain no-repeat;
    mask: url("{copy_icon}") center / contain no-repeat; }}
  .attn-link button.done::before {{ -webkit-mask-image: url("{done_icon}");
    mask-image: url("{done_icon}"); }}
</style>
<script>
(() => {{
  if (window.__attnLinkCopy) return;
  window.__attnLinkCopy = true;
  document.addEventListener("click", (e) => {{
    const button = e.target.closest && e.target.closest(".attn-link button");
    if (!button) return;
    const text = button.parentElement.querySelector("code").textContent;
    const done = () => {{ const was = button.title; button.classList.add("done"); button.title = button.dataset.done;
      setTimeout(() => {{ button.classList.remove("done"); button.title = was; }}, 1500); }};
    const fallback = () => {{ const area = document.createElement("textarea"); area.value = text;
      area.style.position = "fixed"; area.style.opacity = "0"; document.body.appendChild(area); area.select();
      try {{ document.execCommand("copy"); done(); }} finally {{ area.remove(); }} }};
    if (navigator.clipboard && window.isSecureContext) navigator.clipboard.writeText(text).then(done, fallback);
    else fallback();
  }});
}})();
</script>
"""


LINK_BOX = """<div class="attn-link"><code>{url}</code><button type="button" title="{copy}" aria-label="{copy}"
  data-done="{done}"></button></div>"""


def link_box(url: str) -> str:
    """The share link ``url`` as the sidebar shows it: the text (escaped) and a copy button (:data:`LINK_BOX`;
    its style and click handler are :data:`LINK_ASSETS`, drawn once with the sidebar)."""
    from html import escape

    return LINK_BOX.format(url=escape(url), copy=escape(t("ui.copy_link")), done=escape(t("ui.copied")))


QR_PX = 480  # the code's width: about 8 px a module for a 150-character link (version 8, 49 modules and border)


def show_qr(url: str) -> None:
    """The QR code of ``url``, large enough to scan from the back of a room when projected (in a dialog)."""
    svg = qr_svg(url)
    if svg is None:
        st.warning(t("ui.qr_too_long", n=len(url)), icon="⚠️")
        return
    st.container(horizontal_alignment="center").image(svg, width=QR_PX)  # centred in the dialog
    st.caption(t("ui.qr_caption"))
    if local_only(url):
        st.warning(t("ui.qr_local"), icon="⚠️")


@st.cache_data(max_entries=256, show_spinner=False)
def qr_svg(url: str) -> str | None:
    """The QR code of ``url`` as an SVG document (segno, pure Python; error correction M: it still scans with
    about 15 % of it unreadable, e.g. a projector's glare), black on white with the standard 4-module border;
    None when the link is too long for one (a deck of your own carried whole in the link)."""
    import io

    import segno

    buf = io.BytesIO()
    try:
        code = segno.make(url, error="m", micro=False)
    except segno.DataOverflowError:  # more than about 2,300 bytes: no QR code holds it at level M
        return None
    code.save(buf, kind="svg", scale=8, border=4, dark="#000000", light="#ffffff", xmldecl=False)
    return buf.getvalue().decode("utf-8")


def local_only(url: str) -> bool:
    """Whether ``url`` names this computer only (localhost, 127.x, ::1, 0.0.0.0): students cannot open it."""
    from urllib.parse import urlsplit

    host = (urlsplit(url).hostname or "").lower()
    return host in ("localhost", "::1", "0.0.0.0") or host.startswith("127.") or host.endswith(".localhost")


def view_url(current: str, page_path: str, home: str, params: dict[str, str]) -> str:
    """The link of a view: the app's root, the page's path and ``params``.

    ``current`` is the address the browser shows (``st.context.url``): the root, then the page's
    path, or for the default page possibly its own name ``home``.
    """
    from urllib.parse import urlencode

    root = current.split("?")[0].split("#")[0].rstrip("/")
    for suffix in (page_path, home):
        if suffix and root.endswith("/" + suffix):
            root = root[: -len(suffix) - 1]
            break
    return f"{root}/{page_path}" + ("?" + urlencode(params) if params else "")
