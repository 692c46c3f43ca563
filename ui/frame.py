"""The app's frame: deep links and navigation, the sidebar, presentation mode, the share link."""

from __future__ import annotations

import functools
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
    script_tag,
    style_tag,
    t,
)
from .output import error_text
from .streamlit_compat import allow_page_rerun, ask_for_default_page, page_asked_by_name


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
    """Run ``page`` (the ``st.Page`` that ``st.navigation`` returned), stopped or not by :func:`stop`, then fill the
    share link (:func:`share_link`). app.py calls this in a fragment: ``page`` may run again in each fragment rerun
    (:func:`ui.streamlit_compat.allow_page_rerun`)."""
    allow_page_rerun(page)
    link_notices(page_path or home)
    token = _IN_DRAW_PAGE.set(True)
    try:
        page.run()
    except PageStopped:
        pass  # the page ended early: bad input said what to change, or a view ends there
    finally:
        _IN_DRAW_PAGE.reset(token)
        share_link(page_path, home)  # also after an exception: the link still holds the view's settings


def _hint(key: str, controls: dict) -> str:
    """What the link may have meant by ``key``: a setting whose command-line flag it is (``d_k`` for ``head_dim``'s
    ``--d-k``) or whose name is close, else the page's settings."""
    import difflib

    from attn_core.views.base import cli_flag

    dash = "--" + key.replace("_", "-")
    flags = {cli_flag(name, ctl, False): name for name, ctl in controls.items()}
    near = flags.get(dash) or next(iter(difflib.get_close_matches(key, list(controls), 1, 0.6)), None)
    if near is not None:
        return t("ui.url_unknown_did_you_mean", name=near)
    names = [n for n, c in controls.items() if c.kind != "seed" and not c.cli_only]
    return t("ui.url_unknown_settings", names=", ".join(names[:14]) + (", …" if len(names) > 14 else ""))


def link_notices(name: str) -> None:
    """Say which parameters of the page's link the page does not have (``?d_k=64`` on a page whose setting is
    ``head_dim``): they are left out, and the notice names what was probably meant. The app's own parameters
    (language, seed, slide mode, a deck and its slide, the steppers, open sections) are never reported."""
    from attn_core.decks import GLOBAL_KEYS, SECTION_PREFIX
    from attn_core.views import PAGES
    from attn_core.views.base import controls

    from .decks import LINK_ONLY

    spec = next((p for p in PAGES if p.name == name), None)
    if spec is None:
        return
    ctl = controls(spec.params)
    for key in list(st.query_params.keys()):
        if key in ctl or key in GLOBAL_KEYS or key in LINK_ONLY or key.startswith(SECTION_PREFIX):
            continue
        raw = str(st.query_params.get(key, ""))[:40]
        st.info(t("ui.url_unknown", key=key[:40], raw=raw, hint=_hint(key, ctl)), icon="🔗")


def route_home_alias(home: str) -> None:
    """Open the default page for ``/<home>``, its own name, instead of Streamlit's "Page not found" dialog.

    ``st.navigation`` serves its default page at ``/`` only: a link or bookmark to ``/heatmaps`` names no
    page it knows, so Streamlit shows an English "Page not found" dialog (then draws the default page
    anyway). Call before ``st.navigation``: a first run that asks for ``home`` by name asks for the default
    page instead; the browser's address becomes ``/`` with every query parameter kept.
    """
    name = page_asked_by_name()
    if name is not None and name.strip("/") == home:
        ask_for_default_page()


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


def apply_presentation() -> None:
    """Slide mode (``ui/assets/present.css``) when presentation mode is on, else the page's own layout (``page.css``:
    its controls beside its charts on a wide screen); the clicker keys always
    (``ui/assets/clicker.js``), and the share link box's style and copy script (``link.css``, ``link.js``). Call
    once per run (app.py does)."""
    from .widgets import DRAWER

    st.session_state.pop(DRAWER, None)  # the page's controls box of this run sets it again
    st.html(style_tag("present.css" if present() else "page.css"))
    with st.sidebar:  # not in the page's column: it takes no room on the slide; the link box's style and script too
        st.html(sidebar_assets(), unsafe_allow_javascript=True)


@functools.cache
def sidebar_assets() -> str:
    """What :func:`apply_presentation` draws in the sidebar at every run: the clicker's script, the link box's
    style and its copy script."""
    return "\n".join((script_tag("clicker.js"), style_tag("link.css"), script_tag("link.js")))


def share_link(page_path: str, home: str) -> None:
    """Fill the sidebar's "copy link" box with the URL of the current view (call after the page ran).

    ``page_path`` is the running page's ``url_path`` (``""`` for the default page, which
    Streamlit serves at ``/``), ``home`` the default page's own name. The link holds every
    control that differs from its default, so opening it in a new session reproduces the
    same numbers; the default page's link is ``/?…``, also when the page was opened as
    ``/heatmaps``.

    A move of a page's control reruns the page alone (a fragment), and this redraws one element, the link's
    text: its caption, the QR button, the box's style and its copy script are drawn with the sidebar
    (:func:`sidebar_assets`), not again at every move (a heatmaps move: ~16 ms of the browser's time
    less, measured with ``bench/bench.py``'s browser section).
    """
    slot = st.session_state.get("_link_slot")
    if slot is None:
        return
    url = view_url(st.context.url or "", page_path, home, st.session_state.get("_link_params", {}))
    slot.html(link_box(url or "?"))
    if st.session_state.pop("_qr_asked", False):
        st.dialog(t("ui.qr"), width="medium")(show_qr)(url or "?")


# The share link's box, redrawn at each move; its style and copy script (``ui/assets/link.css``, ``link.js``) are
# drawn once with the sidebar (:func:`sidebar_assets`). Not st.code: its syntax highlighter cost the page's main
# thread ~270 ms at every cold start (cold start to the first chart 3.08 -> 2.79 s without it).
LINK_BOX = """<div class="attn-link"><code>{url}</code><button type="button" title="{copy}" aria-label="{copy}"
  data-done="{done}"></button></div>"""


def link_box(url: str) -> str:
    """The share link ``url`` as the sidebar shows it: the text (escaped) and a copy button (:data:`LINK_BOX`;
    its style and click handler are drawn once with the sidebar: :func:`sidebar_assets`)."""
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
