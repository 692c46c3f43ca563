"""Live lecture rooms in the app: the lecturer's room, a student following it, the slides' questions.

A room (:mod:`rooms`) holds a deck and the lecturer's position in it. The lecturer starts one from the deck panel
(:func:`panel`) and gets a code, a QR code, a link for students (``?room=CODE``) and a lecturer link with the room's
key (``?room=CODE&key=...``), shown only in the lecturer's own sidebar. Each run of a page in a room reads the room
once (:func:`sync`): the lecturer's moves are written to it (a slide of the deck, or the lecturer's own view of a
slide: :func:`after_page`); a student who follows gets the lecturer's slide and view applied before the page draws,
as the deck's Previous/Next does (:func:`ui.decks.follow`). A student who changes a control (or the slide) explores
alone until "Follow again". The page learns of the lecturer's moves through a small component that long-polls the
room (``ui/assets/room_watch.js``, :mod:`rooms.web`) and asks for a run when they change: a waiting page costs the
server nothing.

A student's session holds the deck without its questions' answers; a question's answers are shown to students once
the lecturer reveals them, and each browser answers a question once (its token: the ``attn_browser`` cookie that
:class:`rooms.web.BrowserCookie` sets, read through ``st.context.cookies``; a random token of the session where no
cookie came, as under AppTest).
"""

from __future__ import annotations

import dataclasses
import functools
import secrets
from typing import Any
from urllib.parse import urlencode, urlsplit

import streamlit as st

import rooms
from attn_core import decks
from attn_core.decks import SECTION_PREFIX
from attn_core.figures.answers import answers_figure
from attn_core.runtime.config import ConfigError
from rooms.codes import display_code, token_shape
from rooms.web import COOKIE, LEAD_COOKIE, LEAD_PATH, PATH

from . import decks as deck_ui
from .charts import plotly_chart
from .core import _url_raw, _write_url, asset, lang, present, style, style_tag, t
from .frame import link_box, qr_svg
from .output import show_error as shown_error

ROOM = "_room"  # {"code", "role": "lecturer" | "student", "key" (the lecturer's only)}
FOLLOW = "_room_follow"  # a student follows the lecturer (False: exploring alone)
APPLIED = "_room_applied"  # the rooms.Position last applied (a student) or written (the lecturer)
SNAP = "_room_snap"  # the page state after the last move (None: taken at the end of this run's page)
BASE = "_room_deck"  # the room's deck as it came (the open deck's slide may carry the lecturer's own view)
VIEW = "_room_view"  # the room as this run read it (rooms.RoomView)
BACK = "_room_back"  # the slides whose revealed answers were put away in slide mode ("Back to the slide")
SEEN_URL = "_room_url_seen"  # the ?room= (and key) a refusal was said for: said once, not at every run
WATCH = "attn_room_watch"
LETTERS = "ABCDEFGH"
LECTURER_GAP_MS = 1500  # the lecturer's page runs at most this often for answers and browsers coming in


class StoreDown(ConfigError):
    """The rooms' store could not be reached (a stopped Redis, a full disk): said, never a traceback."""


def show_error(exc: Exception) -> None:
    """A refusal in the viewer's language, from the catalog (``err.<key>``) in English too."""
    from attn_core.i18n import catalog

    key = getattr(exc, "key", None)
    if key and f"err.{key}" in catalog(lang()):
        try:
            st.error(t("ui.fix_this", msg=t(f"err.{key}", **getattr(exc, "params", {}))), icon="🛑")
            return
        except (KeyError, IndexError, ValueError):
            pass
    shown_error(exc)


SAY = "_room_say"  # refusals met before the page switched (a room's first slide on another page): said by bar()


def _later(exc: Exception) -> None:
    st.session_state.setdefault(SAY, []).append(exc)


def _svc() -> rooms.Rooms:
    return rooms.current()


def _call(fn: Any, *args: Any) -> Any:
    """``fn(*args)`` on the rooms' service; a store that fails is a :class:`StoreDown` with its message."""
    try:
        return fn(*args)
    except ConfigError:
        raise
    except Exception as exc:  # noqa: BLE001 - sqlite3, redis or settings errors: said on the page
        raise StoreDown(f"the rooms' store failed: {exc}", "room", "room_store", msg=str(exc)[:200]) from exc


def browser() -> str:
    """This browser's token: the ``attn_browser`` cookie, else one random token kept in the session."""
    try:
        value = st.context.cookies.get(COOKIE)
    except Exception:  # noqa: BLE001 - no cookies in this context (AppTest)
        value = None
    if token_shape(value):
        return str(value)
    return st.session_state.setdefault("_room_browser", secrets.token_urlsafe(16))


def lead_key(code: str | None) -> str | None:
    """The key this browser's lead cookie holds for room ``code`` (``rooms.web``: set for a lecturer's page), or None."""
    try:
        value = st.context.cookies.get(LEAD_COOKIE)
    except Exception:  # noqa: BLE001 - no cookies in this context (AppTest)
        return None
    if not code or not isinstance(value, str) or "." not in value:
        return None
    got, key = value.split(".", 1)
    return key if got == code and rooms.codes.key_shape(key) else None


def room() -> dict | None:
    """This session's room (``code``, ``role``, ``key``), or None."""
    got = st.session_state.get(ROOM)
    return got if isinstance(got, dict) else None


# ---------------------------------------------------------------- entering and leaving
def _enter(view: rooms.RoomView, role: str, key: str | None = None) -> None:
    st.session_state[ROOM] = {"code": view.code, "role": role, "key": key}
    deck = view.deck if role == "lecturer" else view.deck.for_students()
    st.session_state[BASE] = deck
    st.session_state[deck_ui.IN_ROOM] = view.code
    st.session_state[FOLLOW] = role == "student"
    st.session_state[APPLIED] = view.position if role == "lecturer" else None
    st.session_state[SNAP] = None
    deck_ui.open_deck(deck, view.position.at)
    for k in ("deck", "deck_at"):  # the address holds the room from now on (a deck of one's own would show whole)
        if k in st.query_params:
            del st.query_params[k]


def _leave(note: str | None = None) -> None:
    """Out of the room: the deck stays open where it is, the address and link lose the room. A student's copy of the
    deck loses its questions too (their answers were never in it: as a file or a link it would be refused)."""
    r, deck = room(), st.session_state.get(deck_ui.DECK)
    if r is not None and r["role"] == "student" and isinstance(deck, decks.Deck):
        st.session_state[deck_ui.DECK] = dataclasses.replace(
            deck, slides=tuple(dataclasses.replace(s, question=None) for s in deck.slides)
        )
    for k in (ROOM, FOLLOW, APPLIED, SNAP, BASE, VIEW, deck_ui.IN_ROOM):
        st.session_state.pop(k, None)
    for k in ("room", "key"):
        if k in st.query_params:
            del st.query_params[k]
    if note:
        st.session_state["_room_note"] = note


def open_from_url() -> None:
    """``?room=CODE`` joins a room as a student, ``?room=CODE&key=KEY`` takes the lecturer's seat (the key leaves the
    address at once: a projected address bar must not show it). A refused link is said once, in the viewer's
    language; a wrong key still joins as a student. Call after ``st.navigation``, before :func:`sync`."""
    raw, key = _url_raw("room"), _url_raw("key")
    if raw is None:
        return
    key = key or lead_key(rooms.codes.read_code(raw))  # a lecturer's reload, or its page on another worker
    mine = room()
    if mine is not None and mine["code"] == rooms.codes.read_code(raw) and (key is None or key == mine.get("key")):
        if key is not None:
            del st.query_params["key"]
        return
    if st.session_state.get(SEEN_URL) == (raw, key):
        return
    st.session_state[SEEN_URL] = (raw, key)
    svc = _svc()
    try:
        if key is not None:
            try:
                _enter(_call(svc.claim, raw, key, browser()), "lecturer", key)
                return
            except rooms.Refused as exc:
                if exc.reason not in ("not_lecturer", "key_limit"):
                    raise
                _later(exc)
        _enter(_call(svc.join, raw, browser()), "student")
    except ConfigError as exc:
        _later(exc)
    finally:
        if "key" in st.query_params:
            del st.query_params["key"]


# ---------------------------------------------------------------- each run
def page_state() -> tuple[str, tuple[tuple[str, str], ...]]:
    """The running page and its state as link parameters (not the viewer's language, slide mode, deck, room or
    open sections): what a student follows and what tells that a student explores."""
    link = st.session_state.get("_link_params", {})
    skip = (*deck_ui.LINK_ONLY, "present")
    kept = tuple(sorted((k, str(v)) for k, v in link.items() if k not in skip and not k.startswith(SECTION_PREFIX)))
    return str(st.session_state.get("_page") or ""), kept


def sync() -> None:
    """Read the room once for this run: the lecturer's new slide goes to the room; a following student's deck moves
    to the lecturer's slide and view (applied by :func:`ui.decks.follow`, called next). A room that ended is said."""
    r = room()
    if r is None:
        return
    try:
        view = _call(_svc().view, r["code"])
    except ConfigError as exc:
        show_error(exc)
        return
    if view is None:
        _leave("ended")
        return
    st.session_state[VIEW] = view
    at = st.session_state.get(deck_ui.AT, 0)
    if r["role"] == "lecturer":
        if deck_ui.is_open() and at != view.position.at:
            _publish(at, st.session_state[deck_ui.DECK].slides[at].page, None)
        return
    applied = st.session_state.get(APPLIED)
    if not st.session_state.get(FOLLOW):
        return
    if applied is not None and (not deck_ui.is_open() or at != applied.at):
        st.session_state[FOLLOW] = False  # the student moved to another slide: exploring
    elif applied != view.position:
        _apply(view.position)


def _publish(at: int, page: str, params: dict | None) -> None:
    r = room()
    try:
        _call(_svc().move, r["code"], r["key"], at, page, params)
    except ConfigError as exc:
        show_error(exc)
        return
    st.session_state[APPLIED] = rooms.Position(at, page, None if params is None else tuple(sorted(params.items())))
    st.session_state[SNAP] = None


def _apply(pos: rooms.Position) -> None:
    """Show the lecturer's slide ``pos``: the room's deck with that slide in the lecturer's view, moved to."""
    base: decks.Deck = st.session_state.get(BASE) or st.session_state[deck_ui.DECK]
    if not 0 <= pos.at < len(base.slides):
        return
    deck = base
    if pos.params is not None:
        s = dataclasses.replace(base.slides[pos.at], page=pos.page, params=pos.params)
        if deck_ui.valid_slide(s, pos.at):
            deck = dataclasses.replace(base, slides=base.slides[: pos.at] + (s,) + base.slides[pos.at + 1 :])
    st.session_state[deck_ui.DECK] = deck
    st.session_state[deck_ui.AT] = pos.at
    st.session_state[deck_ui.GOTO] = True
    st.session_state[APPLIED] = pos
    st.session_state[SNAP] = None


def after_page() -> None:
    """At the end of each page run (app.py's page fragment): the lecturer's own change of the view goes to the room;
    a student's tells that the student explores (the whole app runs again to offer "Follow again")."""
    r = room()
    if r is None:
        return
    state = page_state()
    snap = st.session_state.get(SNAP)
    if snap is None:
        st.session_state[SNAP] = state
        return
    if state == snap:
        return
    if r["role"] == "lecturer":
        _publish(st.session_state.get(deck_ui.AT, 0), state[0], dict(state[1]))
        st.session_state[SNAP] = state
    elif st.session_state.get(FOLLOW):
        st.session_state[FOLLOW] = False
        st.rerun(scope="app")


def _follow_again() -> None:
    st.session_state[FOLLOW] = True
    st.session_state[APPLIED] = None


# ---------------------------------------------------------------- over the page
def _watch(view: rooms.RoomView, answers: int = -1, members: int = -1, gap_ms: int = 0) -> None:
    """The long poll (``ui/assets/room_watch.js``): a run when the room's versions differ from these. The lecturer's
    watch also hands the key to ``rooms.web`` once a page, which keeps it in an HttpOnly cookie (:func:`lead_key`)."""
    root = urlsplit(deck_ui.app_root(str(st.session_state.get("_page") or ""))).path.rstrip("/")
    data = {"url": root + PATH.format(code=view.code), "v": view.pos_v, "a": answers, "m": members, "gap_ms": gap_ms}
    r = room()
    if r is not None and r["role"] == "lecturer" and r.get("key") and lead_key(view.code) != r["key"]:
        data.update(lead=r["key"], lead_url=root + LEAD_PATH.format(code=view.code))
    _component()(data=data, key="room_watch", width="stretch", height=0)


@functools.cache
def _component() -> Any:
    """The watch component, registered once per process (``functools.cache``: ``st.cache_resource``'s lookup costs
    about a millisecond a run, and every student's page runs it at each move)."""
    return st.components.v2.component(WATCH, js=asset("room_watch.js"), isolate_styles=False)


def bar() -> None:
    """The room's line over the page (after the deck bar): its code, whether the student follows ("Follow again"
    when exploring), the question of the slide shown; and the watch. The share link and the address hold the room."""
    note = st.session_state.pop("_room_note", None)
    if note == "ended":
        st.info(t("room.ended"), icon=":material/door_open:")
    for exc in st.session_state.pop(SAY, []):
        show_error(exc)
    r = room()
    if r is None:
        return
    st.html(style_tag("rooms.css"))
    st.session_state.setdefault("_link_params", {})["room"] = r["code"]
    _write_url("room", r["code"], "")
    if r["role"] == "lecturer":
        _lecturer_bar()
        return
    view = st.session_state.get(VIEW)
    if view is None:
        return
    following = bool(st.session_state.get(FOLLOW))
    code = display_code(r["code"])
    with st.container(border=True, key="room_bar"):
        if following:
            st.markdown(f"**{t('room.code', code=code)}** · {t('room.following')}")
        else:
            left, right = st.columns([5, 2], vertical_alignment="center")
            left.markdown(f"**{t('room.code', code=code)}** · {t('room.exploring', i=view.position.at + 1)}")
            right.button(
                t("room.follow_again"),
                key="room_follow",
                icon=":material/sync:",
                on_click=_follow_again,
                width="stretch",
                type="primary",
            )
        _watch(view)
    _student_question()


@st.fragment
def _lecturer_bar() -> None:
    """The lecturer's line, as a fragment: new answers and browsers (the watch) and Ask/Reveal run it alone."""
    r = room()
    if r is None:
        return
    try:
        view = _call(_svc().view, r["code"])
        versions = _call(_svc().versions, r["code"])
    except ConfigError as exc:
        show_error(exc)
        return
    if view is None or versions is None:
        return
    with st.container(border=True, key="room_bar"):
        members = t("room.members_one") if versions.members == 1 else t("room.members", n=versions.members)
        head = f"**{t('room.code', code=display_code(r['code']))}** · {t('room.you_lead')} · {members}"
        _lecturer_question(view, head)
        _watch(view, versions.answers, versions.members, LECTURER_GAP_MS)


def _question_here(view: rooms.RoomView) -> tuple[int, decks.Question | None, str | None]:
    at = st.session_state.get(deck_ui.AT, 0)
    deck = st.session_state.get(deck_ui.DECK)
    q = deck.slides[at].question if isinstance(deck, decks.Deck) and 0 <= at < len(deck.slides) else None
    return at, q, view.state_of(at)


def _act(action: str, slide: int) -> None:
    r = room()
    try:
        _call(getattr(_svc(), action), r["code"], r["key"], slide)
    except ConfigError as exc:
        st.session_state["_room_error"] = exc


def _lecturer_question(view: rooms.RoomView, head: str) -> None:
    """The room's line (``head``) with the slide's question, if it has one: Ask (its prompt hidden until then, also
    from the projector), then its prompt, the number of answers and Reveal, then the answers."""
    at, q, state = _question_here(view)
    err = st.session_state.pop("_room_error", None)
    if err is not None:
        show_error(err)
    if q is None or state == "revealed":
        st.markdown(head)
        if q is not None:
            r = room()
            _results(_call(_svc().results, r["code"], at, r["key"]), None, at)
        return
    left, right = st.columns([5, 2], vertical_alignment="center")
    left.markdown(head)
    if state is None:
        right.button(
            t("room.ask"), key="room_ask", icon=":material/quiz:", on_click=_act, args=("ask", at), width="stretch"
        )
        return
    right.button(
        t("room.reveal"),
        key="room_reveal",
        icon=":material/visibility:",
        on_click=_act,
        args=("reveal", at),
        width="stretch",
    )
    r = room()
    res = _call(_svc().results, r["code"], at, r["key"])
    n = res.n if res is not None else 0
    count = t("room.answers_one") if n == 1 else t("room.answers_n", n=n)
    st.markdown(f"**{t('room.question')}** {q.words(lang())} · {count}")


def _results(res: rooms.service.Results | None, mine: float | None, slide: int) -> None:
    """A revealed question: the chart of its answers, the right one, and the student's own. In slide mode they take
    the slide (``ui/assets/rooms.css``) until "Back to the slide", then only the line with the right answer."""
    if res is None:
        return
    q, lg = res.question, lang()
    right = _label(q, q.answer, lg) if q.answer is not None else "?"
    line = t("room.right_answer", a=right) + " · " + t("room.right_of", k=res.right or 0, n=res.n)
    if mine is not None:
        yours = t("room.yours_right") if q.right(mine) else t("room.yours_wrong", a=_label(q, mine, lg))
        line += " · " + yours
    put_away = present() and slide in st.session_state.get(BACK, ())
    if put_away:  # slide mode, the slide back: the right answer in one line, the chart a click away
        left, right_col = st.columns([5, 2], vertical_alignment="center")
        left.markdown(line)
        right_col.button(
            t("room.show_answers"), key="room_again", icon=":material/bar_chart:", on_click=_back, args=(slide, False)
        )
        return
    full = present()
    with st.container(key="room_results_full" if full else "room_results"):
        fig = answers_figure(
            [_label(q, v, lg) for v, _ in res.bars],
            [c for _, c in res.bars],
            [v is not None and q.right(v) for v, _ in res.bars],
            t("room.results_title", n=res.n),
            style(),
            height=440 if full else None,
        )
        plotly_chart(st, fig, key="room_results_slide" if full else "room_results_chart")
        st.markdown(line)
        if full:
            st.button(t("room.back"), key="room_back", icon=":material/arrow_back:", on_click=_back, args=(slide,))


def _back(slide: int, away: bool = True) -> None:
    """Slide mode: put slide ``slide``'s answers away (the slide shows again), or bring them back."""
    kept = tuple(s for s in st.session_state.get(BACK, ()) if s != slide)
    st.session_state[BACK] = (*kept, slide) if away else kept


def _label(q: decks.Question, value: float | None, lg: str) -> str:
    if value is None:
        return t("room.other")
    if q.kind == "choice":
        return f"{LETTERS[int(value) - 1]}. {q.choice(int(value), lg)}"
    unit = q.unit_in(lg)
    return f"{rooms.service.value_text(value)} {unit}".strip()


# ---------------------------------------------------------------- a student's answer
def _send_answer(slide: int, q: decks.Question) -> None:
    r = room()
    raw = st.session_state.get(f"room_pick_{slide}" if q.kind == "choice" else f"room_number_{slide}")
    if raw is None:
        st.session_state["_room_error"] = ConfigError(
            "give your answer first", "answer", "answer_missing" if q.kind == "number" else "answer_choice", n=0
        )
        return
    try:
        _call(_svc().answer, r["code"], browser(), slide, raw)
    except ConfigError as exc:
        st.session_state["_room_error"] = exc


@st.fragment
def _student_question() -> None:
    """The question of the slide shown, once the lecturer asked it: an answer once (a fragment: answering runs this
    alone), then "recorded"; after the reveal the class's answers and the right one."""
    r = room()
    if r is None:
        return
    try:
        view = _call(_svc().view, r["code"])
    except ConfigError as exc:
        show_error(exc)
        return
    if view is None:
        return
    at, q, state = _question_here(view)
    if q is None or state is None:
        return
    with st.container(border=True, key="room_question"):
        lg = lang()
        st.markdown(f"**{t('room.question')}** {q.words(lg)}")
        err = st.session_state.pop("_room_error", None)
        if err is not None:
            show_error(err)
        mine = _call(_svc().mine, r["code"], browser(), at)
        if state == "revealed":
            _results(_call(_svc().results, r["code"], at), mine, at)
        elif mine is not None:
            st.success(t("room.recorded", a=_label(q, mine, lg)), icon=":material/check:")
        else:
            _answer_form(at, q, lg)


def _answer_form(at: int, q: decks.Question, lg: str) -> None:
    if q.kind == "choice":
        st.radio(
            t("room.pick"),
            list(range(1, len(q.choices) + 1)),
            index=None,
            key=f"room_pick_{at}",
            format_func=lambda i: _label(q, float(i), lg),
        )
        box = st.container()
    else:
        box = st.container(horizontal=True, vertical_alignment="bottom")
        unit = q.unit_in(lg)
        box.number_input(
            t("room.number", unit=unit) if unit else t("room.number_plain"),
            min_value=-decks.MAX_NUMBER,
            max_value=decks.MAX_NUMBER,
            value=None,
            key=f"room_number_{at}",
            placeholder=t("room.number_hint"),
            width=260,
        )
    box.button(
        t("room.answer"),
        key="room_answer",
        icon=":material/send:",
        on_click=_send_answer,
        args=(at, q),
        type="primary",
    )


# ---------------------------------------------------------------- the deck panel's part
def links(code: str, key: str | None = None) -> str:
    """The students' link of a room (``key``: the lecturer's link) at the address this browser reaches."""
    root = deck_ui.app_root(str(st.session_state.get("_page") or "")).rstrip("/")
    return f"{root}/?" + urlencode({"room": code, **({"key": key} if key else {})})


def _start() -> None:
    deck = st.session_state.get(deck_ui.DECK)
    if not isinstance(deck, decks.Deck):
        return
    at = st.session_state.get(deck_ui.AT, 0)
    svc = _svc()
    try:
        code, key = _call(svc.start, deck, browser(), at)
        view = _call(svc.view, code)
    except ConfigError as exc:
        st.session_state["_deck_error"] = exc
        return
    _enter(view, "lecturer", key)
    st.session_state[deck_ui.GOTO] = False  # already on the slide
    page, params = page_state()
    if page:  # the students see the lecturer's view as it is now
        _publish(at, page, dict(params))


def _end() -> None:
    r = room()
    try:
        _call(_svc().end, r["code"], r["key"])
    except ConfigError as exc:
        st.session_state["_deck_error"] = exc
        return
    _leave()


def _join() -> None:
    raw = str(st.session_state.get("room_join_code") or "")
    try:
        view = _call(_svc().join, raw, browser())
    except ConfigError as exc:
        st.session_state["_deck_error"] = exc
        return
    _enter(view, "student")


def panel() -> None:
    """In the deck panel: join a room by its code, or start one for the open deck; in a room, its code, QR code and
    students' link, the lecturer's private link, the answers as CSV, End (the lecturer) or Leave (a student)."""
    r = room()
    if r is None:
        if deck_ui.is_open():
            st.button(
                t("room.start"),
                key="room_start",
                icon=":material/cast_for_education:",
                help=t("room.start_help"),
                on_click=_start,
                width="stretch",
                type="primary",
            )
        with st.container(horizontal=True, vertical_alignment="bottom"):
            st.text_input(t("room.join_code"), key="room_join_code", max_chars=20, placeholder="ABCD-2345")
            st.button(t("room.join"), key="room_join", on_click=_join)
        return
    code = display_code(r["code"])
    st.markdown(f"### {t('room.code', code=code)}")
    if r["role"] == "student":
        st.button(t("room.leave"), key="room_leave", icon=":material/logout:", on_click=_leave, width="stretch")
        return
    student = links(r["code"])
    svg = qr_svg(student)
    if svg is not None:
        st.image(svg, width=200)
    st.caption(t("room.students_link"))
    st.container(key="room_students_link").html(link_box(student))
    with st.expander(t("room.lecturer_link"), icon=":material/key:"):
        st.caption(t("room.lecturer_link_help"))
        st.container(key="room_lecturer_link").html(link_box(links(r["code"], r["key"])))
    if st.button(t("room.show_large"), key="room_show", icon=":material/qr_code_2:", width="stretch"):
        st.dialog(t("room.code", code=code), width="large")(_large)(code, student)
    st.download_button(
        t("room.csv"),
        data=lambda: _call(_svc().results_csv, r["code"], r["key"], lang()),
        file_name=f"room-{r['code']}-answers.csv",
        mime="text/csv",
        key="room_csv",
        icon=":material/download:",
        width="stretch",
        on_click="ignore",
    )
    st.button(t("room.end"), key="room_end", icon=":material/stop_circle:", on_click=_end, width="stretch")


def _large(code: str, url: str) -> None:
    """The code and the QR code, large enough to read and scan from the back of a room when projected."""
    st.markdown(f"<div class='attn-room-code'>{code}</div>", unsafe_allow_html=True)
    svg = qr_svg(url)
    if svg is not None:
        st.container(horizontal_alignment="center").image(svg, width=420)
    st.caption(t("room.qr_caption", url=url))
