"""Lecture decks in the app: the slide bar over the page, the clicker, and the deck panel in the sidebar.

A deck (:mod:`attn_core.decks`) lives in the session (``_deck``, the slide shown in ``_deck_at``). Moving to a
slide sets the slide's page state the way a link would: every control of its page named in the slide takes the
slide's value, every other one its default, the seed the slide's (0 if it names none); presentation mode and the
language stay the viewer's. A slide on another page switches to it first, then applies its state before that page
draws a widget. ``?deck=`` opens a deck (a shipped deck's name, or a whole deck encoded by
:func:`attn_core.decks.encode`) at ``?deck_at=`` (1-based), and the sidebar's link and QR code carry both.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

import streamlit as st

from attn_core import decks
from attn_core.decks import SECTION_PREFIX, STEP_KEYS
from attn_core.export.deck import known_params
from attn_core.i18n import LANGUAGES
from attn_core.runtime.config import ConfigError

from .core import _url_raw, _write_url, device, lang, present, t
from .output import lazy_expander, show_error
from .streamlit_compat import forget_query_params, unbind_query_params

DECK, AT, GOTO, NAME = "_deck", "_deck_at", "_deck_goto", "_deck_name"
PANEL = "deck_panel"  # the sidebar's deck panel (an expander that tracks whether it is open)
HEADING = "# {title} <span class='deck-at'>{at}</span>"  # slide mode: the slide's title, its number beside it
# link parameters that are not part of a slide's page state (a live lecture room's code and lecturer key: ui.rooms)
LINK_ONLY = ("deck", "deck_at", "lang", "room", "key")
FILES = "_deck_files"  # the open deck's files, once made: (what they were made of, {format: bytes}, slides left out)
IN_ROOM = "_deck_in_room"  # the code of the live lecture room the open deck belongs to (ui.rooms): not editable then


@st.cache_resource(show_spinner=False)
def _shipped() -> Mapping[str, decks.Deck]:
    """The decks in ``assets/decks/``, read once per server; shared read-only (frozen decks, a read-only mapping)."""
    return MappingProxyType(decks.shipped())


def is_open() -> bool:
    """Whether a deck is open in this session (the clicker keys then move between its slides)."""
    return isinstance(st.session_state.get(DECK), decks.Deck)


def sets_step(key: str) -> bool:
    """Whether the open deck's slide, on its own page, sets the page stepper ``key`` (``"slide": "3"``): the deck's
    Previous and Next then move between those steps, and a page may leave its own stepper out."""
    deck = st.session_state.get(DECK)
    if not isinstance(deck, decks.Deck):
        return False
    s = deck.slides[st.session_state.get(AT, 0)]
    return s.page == st.session_state.get("_page") and key in dict(s.params)


def _open(deck: decks.Deck, at: int = 0, name: str | None = None) -> None:
    st.session_state[DECK] = deck
    st.session_state[NAME] = name
    st.session_state[AT] = max(0, min(at, len(deck.slides) - 1))
    st.session_state[GOTO] = True


def open_deck(deck: decks.Deck, at: int = 0, name: str | None = None) -> None:
    """Open ``deck`` at slide ``at`` (0-based): the next :func:`follow` shows it (a live lecture room's deck)."""
    _open(deck, at, name)


def _go(i: int) -> None:
    deck = st.session_state.get(DECK)
    if isinstance(deck, decks.Deck):
        st.session_state[AT] = max(0, min(i, len(deck.slides) - 1))
        st.session_state[GOTO] = True


def _close() -> None:
    for key in (DECK, AT, GOTO, NAME):
        st.session_state.pop(key, None)
    for key in ("deck", "deck_at"):  # or the address would open it again
        if key in st.query_params:
            del st.query_params[key]


def open_from_url() -> None:
    """Open ``?deck=`` on a session's first run (a shipped deck by name, or an encoded one); a bad one is said."""
    raw = _url_raw("deck")
    if raw is None or is_open() or st.session_state.get("_deck_url_seen") == raw:
        return
    st.session_state["_deck_url_seen"] = raw
    shipped = _shipped()
    try:
        found = shipped.get(raw) or decks.decode(raw)
        decks.check_pages(found, known_params())
    except ConfigError as exc:
        show_error(exc)
        return
    at = _url_raw("deck_at")
    _open(found, int(at) - 1 if at is not None and at.isdigit() else 0, raw if raw in shipped else None)


def _typed(page: str, key: str, text: str) -> Any:
    """A link parameter's text as the value its widget holds in session state."""
    from attn_core.views import page as page_spec
    from attn_core.views.base import controls

    if key in STEP_KEYS:
        return max(0, int(float(text)) - 1)  # the step slides keep the 0-based index
    if key == "present":
        return text.lower() == "true"
    kind = "seed" if key == "seed" else controls(page_spec(page).params)[key].kind
    if kind in ("int", "pow2", "kv_heads", "seed"):
        return int(float(text))
    if kind == "float":
        return float(text)
    if kind == "bool":
        return text.lower() == "true"
    return text


def valid_slide(s: decks.Slide, i: int) -> bool:
    """Whether slide ``s`` (``i``: 0-based) names a page and settings that page has, each value one its control takes
    (a live lecture room's view of a slide, from the store, is checked before a student's page applies it)."""
    try:
        decks.check_slide(s, i, known_params())
        for key, text in s.params:
            _typed(s.page, key, text)
    except (ConfigError, ValueError, KeyError):
        return False
    return True


def _apply(s: decks.Slide) -> None:
    """The slide's page state in session state: its values, every other control of the page at its default."""
    from attn_core.views import page as page_spec
    from attn_core.views.base import controls

    values = dict(s.params)
    keys = [*controls(page_spec(s.page).params), "seed", *STEP_KEYS]
    # An earlier slide's value (or the learner's own) in the address would come back through the control bound to
    # it, also after its value left session state: out of the address, and out of what this run's widgets are seeded
    # from (each control binds again when this run draws it: follow runs before any widget).
    forget_query_params([k for k in keys if k not in values])
    for key in keys:
        for memo in (
            "pinned",
            "last",
            "page",
            "choice",
        ):  # what a control remembers of the learner's own earlier choices
            st.session_state.pop(f"_{key}_{memo}", None)
        if key in values:
            value = _typed(s.page, key, values[key])
            st.session_state[key] = value
            st.session_state[f"_{key}_pinned"] = value  # a choice with a data-dependent default keeps the slide's
        elif key == "seed":
            st.session_state[key] = 0
        else:
            st.session_state.pop(key, None)
    if "present" in values:
        st.session_state["present"] = _typed(s.page, "present", values["present"])


def _keep_viewer_choices() -> None:
    """The language and presentation mode a link asked for, kept in session state across a page switch (which
    replaces the address, and so its ``?lang=zh``, before the sidebar's controls have read it)."""
    raw = _url_raw("lang")
    if "lang" not in st.session_state and raw in LANGUAGES:
        st.session_state["lang"] = raw
    raw = _url_raw("present")
    if "present" not in st.session_state and raw is not None:
        st.session_state["present"] = raw.lower() in ("1", "true", "yes", "on")


def _switch(script: str) -> None:
    """``st.switch_page`` keeping the viewer's ``lang`` and ``present`` in the address.

    Streamlit 1.67 refuses to replace an address that holds parameters bound to widgets (``?lang=zh``, a slider's
    ``?n_heads=8``): their bindings are dropped first, and each widget binds again when the next run draws it.
    """
    keep = {k: v for k in ("lang", "present") if (v := _url_raw(k)) is not None}
    unbind_query_params()
    st.switch_page(script, query_params=keep)


def follow(current: str) -> None:
    """Move to the slide a Previous/Next (or a link) asked for: switch to its page, then apply its state.

    Call in app.py after ``st.navigation`` (``current``: the running page's name) and before the page runs.
    """
    if not st.session_state.get(GOTO) or not is_open():
        return
    deck: decks.Deck = st.session_state[DECK]
    s = deck.slides[st.session_state.get(AT, 0)]
    if s.page != current:
        from attn_core.views import page as page_spec

        _keep_viewer_choices()
        _switch(page_spec(s.page).script)  # the next run applies the state, on that page
    st.session_state[GOTO] = False
    _apply(s)


def bar() -> None:
    """Over the page while a deck is open: the slide's number, title and sentence, Previous and Next (the clicker
    keys press them: ``ui/assets/clicker.js``); in slide mode one slim line, the sentence under it. The link
    parameters ``deck`` and ``deck_at`` join the share link."""
    if not is_open():
        return
    deck: decks.Deck = st.session_state[DECK]
    i, n = st.session_state.get(AT, 0), len(deck.slides)
    s, lg = deck.slides[i], lang()
    slim = present()  # slide mode: one slim line (arrows for buttons), the slide's sentence under it
    with st.container(border=True, key="deck_bar"):
        left, mid, right = st.columns([1, 8, 1] if slim else [1, 6, 2], vertical_alignment="center")
        left.button(
            "" if slim else t("ui.prev"),
            key="deck_prev",
            icon=":material/arrow_back:",
            help=t("ui.prev") if slim else None,
            disabled=i == 0,
            on_click=_go,
            args=(i - 1,),
            width="stretch",
        )
        if slim:  # the slide's heading (the page leaves its own out: ui.title), its number beside it
            mid.markdown(
                HEADING.format(title=s.words("title", lg), at=t("deck.slide_of", i=i + 1, n=n)), unsafe_allow_html=True
            )
        else:
            mid.markdown(f"**{t('deck.slide_of', i=i + 1, n=n)} · {s.words('title', lg)}**")
        note = s.words("note", lg)
        if note and not slim:
            mid.caption(note)
        right.button(
            "" if slim else t("ui.next"),
            key="deck_next",
            icon=":material/arrow_forward:",
            help=t("ui.next") if slim else None,
            disabled=i == n - 1,
            on_click=_go,
            args=(i + 1,),
            width="stretch",
        )
    if note and slim:
        st.markdown(note)
    if st.session_state.get(IN_ROOM):  # a room's deck: the link and the address hold the room (ui.rooms), not it
        return
    link = st.session_state.setdefault("_link_params", {})
    link["deck"] = st.session_state.get(NAME) or decks.encode(deck)  # a shipped deck by its name: a short link
    link["deck_at"] = str(i + 1)
    for key in ("deck", "deck_at"):  # in the address too: a reload reopens the deck at this slide
        _write_url(key, link[key], "")


# ---------------------------------------------------------------- the deck panel in the sidebar
def _edit(deck: decks.Deck, at: int) -> None:
    """Keep an edited deck (no longer the shipped one of its name) and show slide ``at``."""
    st.session_state[DECK] = deck
    st.session_state[NAME] = None
    st.session_state[AT] = max(0, min(at, len(deck.slides) - 1))


def _this_view(page_name: str) -> decks.Slide:
    link = {
        k: v
        for k, v in st.session_state.get("_link_params", {}).items()
        if k not in LINK_ONLY and not k.startswith(SECTION_PREFIX)
    }
    lg = lang()
    title = str(st.session_state.get("deck_new_title") or "").strip() or t(f"nav.{page_name}")
    note = str(st.session_state.get("deck_new_note") or "").strip()
    return decks.slide(page_name, link, {lg: title}, {lg: note} if note else {})


def _add_view(page_name: str) -> None:
    try:
        if is_open():
            i = st.session_state.get(AT, 0)
            _edit(decks.add(st.session_state[DECK], _this_view(page_name), i + 1), i + 1)
        else:
            _open(decks.Deck(((lang(), t("deck.untitled")),), (_this_view(page_name),)))
            st.session_state[GOTO] = False  # already on it
    except ConfigError as exc:
        st.session_state["_deck_error"] = exc
    st.session_state["deck_new_title"] = ""
    st.session_state["deck_new_note"] = ""


def _move(by: int) -> None:
    i = st.session_state.get(AT, 0)
    _edit(decks.move(st.session_state[DECK], i, by), i + by)


def _delete() -> None:
    deck, i = st.session_state[DECK], st.session_state.get(AT, 0)
    if len(deck.slides) == 1:
        _close()
        return
    _edit(decks.delete(deck, i), min(i, len(deck.slides) - 2))
    st.session_state[GOTO] = True


def _load(data: bytes, name: str | None = None) -> None:
    try:
        deck = _shipped()[name] if name else decks.from_json(data)
        decks.check_pages(deck, known_params())
    except ConfigError as exc:
        st.session_state["_deck_error"] = exc
        return
    _open(deck, 0, name)


def panel(page_name: str, room: Callable[[], None] | None = None) -> None:
    """The sidebar's deck panel: open a shipped deck or a file, add this view as a slide, reorder, delete,
    download. Call after the page ran (``page_name``), so a new slide takes the view's whole link. ``room``: draws
    the live lecture room's part (:func:`ui.rooms.panel`: start one, or the room's code and links); while the deck
    is a room's, it is not edited here."""
    if is_open():  # a deck opened (by its link, or here): the panel shows its slides
        st.session_state.setdefault(PANEL, True)
    box = lazy_expander(t("deck.panel"), PANEL, icon=":material/slideshow:")
    if box is None:  # closed: none of its widgets is sent
        return
    with box:
        err = st.session_state.pop("_deck_error", None)
        if err is not None:
            show_error(err)
        if room is not None and (is_open() or st.session_state.get(IN_ROOM)):
            room()
        if st.session_state.get(IN_ROOM):
            if is_open():
                _slide_list(editable=False)
            return
        if not is_open():
            shipped = _shipped()
            names = {n: d.name_in(lang()) for n, d in shipped.items()}  # made in the run: AppTest formats later
            pick = st.selectbox(t("deck.shipped"), list(shipped), key="deck_pick", format_func=names.get)
            st.button(
                t("deck.open"),
                key="deck_open",
                icon=":material/play_arrow:",
                on_click=_load,
                args=(b"", pick),
                width="stretch",
            )
            up = st.file_uploader(t("deck.load"), type=["json"], key="deck_file")
            if up is not None:
                st.button(
                    t("deck.open_file", name=up.name),
                    key="deck_open_file",
                    on_click=_load,
                    args=(up.getvalue(),),
                    width="stretch",
                )
        else:
            _slide_list()
        _kept_text(t("deck.new_title"), "deck_new_title")
        _kept_text(t("deck.new_note"), "deck_new_note")
        st.button(
            t("deck.add"), key="deck_add", icon=":material/add:", on_click=_add_view, args=(page_name,), width="stretch"
        )
        if is_open():
            deck = st.session_state[DECK]
            st.download_button(
                t("deck.download"),
                data=decks.to_json(deck).encode("utf-8"),
                mime="application/json",
                file_name="attention-deck.json",
                key="deck_download",
                icon=":material/download:",
                width="stretch",
                on_click="ignore",
            )
            st.button(t("deck.close"), key="deck_close", icon=":material/close:", on_click=_close, width="stretch")
            _files(deck, page_name)


def _kept_text(label: str, key: str) -> str:
    """A text field of the panel that keeps what was typed while the panel is closed: Streamlit forgets a widget's
    value in a run that does not draw it, and the closed panel draws nothing."""
    kept = f"_{key}_kept"
    if key not in st.session_state and kept in st.session_state:
        st.session_state[key] = st.session_state[kept]
    value = st.text_input(label, key=key, max_chars=decks.MAX_TEXT)
    st.session_state[kept] = value
    return value


def _slide_list(editable: bool = True) -> None:
    """The open deck's slides (the shown one in bold), with moving and deleting the shown one (``editable``)."""
    deck: decks.Deck = st.session_state[DECK]
    i, lg = st.session_state.get(AT, 0), lang()
    st.markdown(f"**{deck.name_in(lg)}**")
    lines = [
        f"{j + 1}. " + (f"**{s.words('title', lg)}**" if j == i else s.words("title", lg))
        for j, s in enumerate(deck.slides)
    ]
    st.markdown("\n".join(lines))
    if not editable:
        return
    up, down, drop = st.columns(3)
    up.button(
        "",
        key="deck_up",
        icon=":material/arrow_upward:",
        help=t("deck.up"),
        on_click=_move,
        args=(-1,),
        disabled=i == 0,
        width="stretch",
    )
    down.button(
        "",
        key="deck_down",
        icon=":material/arrow_downward:",
        help=t("deck.down"),
        on_click=_move,
        args=(1,),
        disabled=i == len(deck.slides) - 1,
        width="stretch",
    )
    drop.button(
        "", key="deck_delete", icon=":material/delete:", help=t("deck.delete"), on_click=_delete, width="stretch"
    )


# ---------------------------------------------------------------- the deck as files (attn_core.export.deck_files)
def app_root(page_name: str) -> str:
    """The app's address as this browser reaches it (the slide links of the files point there)."""
    root = (st.context.url or "").split("?")[0].split("#")[0].rstrip("/")
    return root[: -len(page_name) - 1] if page_name and root.endswith("/" + page_name) else root


def _files(deck: decks.Deck, page_name: str) -> None:
    """ "Download this deck" as PDF, PowerPoint and one offline HTML file: made when asked (a progress bar while
    the slides are drawn and rendered), then a download button for each file."""
    from attn_core.export.deck import FORMATS, MIME, Options, draw
    from attn_core.export.deck_files import deck_files, file_stem
    from attn_core.render import RenderError

    st.markdown(f"**{t('deckfile.download')}**", help=t("deckfile.help"))
    formats = st.multiselect(
        t("deckfile.formats"), FORMATS, default=list(FORMATS), key="deck_file_formats", format_func=str.upper
    )
    asked = (decks.encode(deck), lang(), tuple(formats))
    if st.button(t("deckfile.make"), key="deck_files_make", icon=":material/slideshow:", disabled=not formats):
        bar = st.progress(0.0, text=t("deckfile.writing"))
        opts = Options(lang=lang(), base_url=app_root(page_name), device=device())
        try:
            drawn = draw(deck, opts, st.session_state.get(NAME), bar.progress)
            st.session_state[FILES] = (asked, deck_files(drawn, formats, bar.progress), drawn.left_out)
        except (ConfigError, RenderError) as exc:
            show_error(exc)
        bar.empty()
    made = st.session_state.get(FILES)
    if made is None or made[0] != asked:  # none yet, or made of another deck, language or choice of formats
        return
    for left in made[2]:
        st.warning(left.left_out, icon="⚠️")
    stem = file_stem(deck, st.session_state.get(NAME), lang())
    for fmt, data in made[1].items():
        st.download_button(
            t("deckfile.get", fmt=fmt.upper()),
            data=data,
            mime=MIME[fmt],
            file_name=f"{stem}.{fmt}",
            key=f"deck_file_{fmt}",
            icon=":material/download:",
            width="stretch",
            on_click="ignore",
        )
