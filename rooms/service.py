"""What a lecturer and a student may do in a room: every input checked, every lecturer action keyed, limits kept.

A lecturer starts a room for a deck (:meth:`Rooms.start`: a code and a key) and with the key moves, asks a slide's
question, reveals its answers and ends the room; without the key each of these is refused (:class:`Refused`, key
``room_not_lecturer``). A student joins by code, follows the position and answers each asked question once per
browser. Refusals name a catalog entry ``err.room_<key>`` (the page says them in the viewer's language).

Limits (per browser, by a hash of its token; per room; per store): rooms started, wrong codes and wrong keys tried,
answers given, lecturer actions; at most :data:`MAX_ANSWERS` answers a question and :data:`MAX_MEMBERS` browsers a
room are stored, the deck at most 64 KiB, the lecturer's view of a slide at most :data:`MAX_PARAMS_BYTES`.
"""

from __future__ import annotations

import csv
import functools
import io
import json
import math
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from attn_core import decks
from attn_core.runtime.config import ConfigError
from rooms import codes
from rooms.settings import Settings
from rooms.store import RoomRow, Store, Versions, dumps

MAX_ANSWERS = 500  # answers stored per question (a class of up to a hundred, with room to spare)
MAX_MEMBERS = 500  # browsers counted as following one room
MAX_PARAMS = 60  # link parameters of the lecturer's own view of a slide
MAX_PARAMS_BYTES = 4096
MAX_BARS = 10  # a number question's chart: the most frequent answers, the rest as one bar
SWEEP_EVERY_S = 60.0
#: name -> (events allowed, window in seconds)
LIMITS: dict[str, tuple[int, int]] = {
    "start_browser": (5, 600),  # rooms one browser may start in ten minutes
    "start_all": (60, 600),  # rooms the whole store may start in ten minutes
    "code_browser": (10, 600),  # wrong or unknown codes one browser may try in ten minutes
    "code_all": (300, 60),  # wrong codes tried against the store in a minute (a guesser on many browsers)
    "key_browser": (5, 600),  # wrong keys one browser may try in ten minutes
    "key_room": (20, 600),  # wrong keys tried against one room in ten minutes
    "answer_browser": (30, 60),  # answers (and refused tries) one browser may send in a minute
    "answer_room": (400, 10),  # answers one room takes in ten seconds
    "drive_room": (240, 60),  # lecturer actions on one room in a minute
}


class Refused(ConfigError):
    """An action refused: ``key`` names the catalog entry ``err.room_<key>``."""

    def __init__(self, message: str, key: str, **params: object):
        super().__init__(message, "room", f"room_{key}", **params)
        self.reason = key


@dataclass(frozen=True)
class Position:
    """Where the lecturer is: slide ``at`` of the deck on ``page``; ``params`` the lecturer's own view of it as
    sorted link parameters, or None for the slide as the deck has it."""

    at: int
    page: str
    params: tuple[tuple[str, str], ...] | None = None


@dataclass(frozen=True)
class RoomView:
    """A room as a page sees it in one run."""

    code: str
    deck: decks.Deck
    pos_v: int
    ans_v: int
    position: Position
    questions: Mapping[int, str]  # slide -> "open" | "revealed"

    def state_of(self, slide: int) -> str | None:
        return self.questions.get(slide)


@dataclass(frozen=True)
class Results:
    """A question's answers: ``bars`` (value or None for "the rest", count) in order, ``n`` answers in all,
    ``right`` how many are right (None while the right answer is not known)."""

    question: decks.Question
    n: int
    bars: tuple[tuple[float | None, int], ...]
    right: int | None


@functools.lru_cache(maxsize=32)
def _deck(text: str) -> decks.Deck:
    return decks.from_json(text)


def _params(params: Mapping[str, str] | None) -> str | None:
    """The lecturer's view as stored (sorted JSON), checked for shape and size."""
    if params is None:
        return None
    if len(params) > MAX_PARAMS or any(
        not isinstance(k, str) or not isinstance(v, str) or len(k) > 40 or len(v) > 400 for k, v in params.items()
    ):
        raise Refused("the view has too many or too long settings", "view_size", n=MAX_PARAMS_BYTES)
    text = dumps(dict(sorted(params.items())))
    if len(text.encode("utf-8")) > MAX_PARAMS_BYTES:
        raise Refused("the view has too many or too long settings", "view_size", n=MAX_PARAMS_BYTES)
    return text


def value_text(value: float) -> str:
    """An answer as stored: a choice's number, or the number with 15 significant digits."""
    return format(value, ".15g")


class Rooms:
    """The rooms of one store. ``clock``: Unix seconds (tests move it)."""

    def __init__(self, store: Store, settings: Settings | None = None, clock: Callable[[], float] = time.time):
        self.store, self.settings, self.clock = store, settings or Settings(), clock
        self._swept = -math.inf

    # ------------------------------------------------------------ plumbing
    def _now(self) -> float:
        now = self.clock()
        if now - self._swept > SWEEP_EVERY_S:
            self._swept = now
            self.store.sweep(now)
        return now

    def _limit(self, name: str, who: str, now: float, count: bool = True) -> bool:
        """Whether one more event of ``name`` for ``who`` is allowed (counted, unless ``count`` is False)."""
        limit, window = LIMITS[name]
        return self.store.hit(f"{name}:{who}", limit, window, now, count)

    def _row(self, code: str, now: float) -> RoomRow:
        row = self.store.room(code, now)
        if row is None:
            raise Refused("this room has ended or does not exist", "gone")
        return row

    def _view(self, row: RoomRow) -> RoomView:
        params = None if row.params is None else tuple(sorted(json.loads(row.params).items()))
        return RoomView(
            row.code,
            _deck(row.deck),
            row.pos_v,
            row.ans_v,
            Position(row.at, row.page, params),
            dict(row.questions),
        )

    def _lecturer(self, code: str, key: object, now: float) -> RoomRow:
        """The room when ``key`` is its key; a wrong key is counted against the room."""
        row = self._row(code, now)
        if not codes.key_shape(key) or not codes.key_matches(str(key), row.key_digest):
            self._limit("key_room", code, now)
            raise Refused("only the lecturer, with the room's key, can do this", "not_lecturer")
        if not self._limit("drive_room", code, now):
            raise Refused("too many actions on this room: wait a minute", "slow_down")
        return row

    @staticmethod
    def _who(browser: str) -> str:
        return codes.digest(browser)[:32]

    # ------------------------------------------------------------ the lecturer
    def start(self, deck: decks.Deck, browser: str, at: int = 0) -> tuple[str, str]:
        """A new room for ``deck`` at slide ``at``: its code and its key (the key is never stored)."""
        now = self._now()
        if not (self._limit("start_browser", self._who(browser), now) and self._limit("start_all", "all", now)):
            raise Refused("too many rooms started: wait a few minutes", "start_limit")
        text = decks.to_json(deck)
        if len(text.encode("utf-8")) > decks.MAX_JSON_BYTES:
            raise Refused("the deck is too large for a room", "deck_size", limit=decks.MAX_JSON_BYTES)
        at = max(0, min(int(at), len(deck.slides) - 1))
        key = codes.new_key()
        for _ in range(8):  # a code already taken (one in billions with a few hundred open): draw again
            row = RoomRow(codes.new_code(), codes.digest(key), text, now, now, 1, at, deck.slides[at].page, None, 0)
            made = self.store.create(row, self.settings.max_rooms, now)
            if made == "created":
                return row.code, key
            if made == "full":
                break
        raise Refused("the server holds as many rooms as it may: try again later", "full", n=self.settings.max_rooms)

    def claim(self, code_text: object, key: object, browser: str) -> RoomView:
        """The room, for a lecturer link's key. A wrong code or key is refused with a message and counted; a
        browser past :data:`LIMITS` of wrong keys is refused whatever key it gives, for the window's rest."""
        now = self._now()
        who = self._who(browser)
        code = self._code(code_text, who, now)
        if not self._limit("key_browser", who, now, count=False):
            raise Refused("too many wrong keys from this browser: wait ten minutes", "key_limit")
        row = self._row(code, now)
        if not codes.key_shape(key) or not codes.key_matches(str(key), row.key_digest):
            self._limit("key_browser", who, now)
        return self._view(self._lecturer(code, key, now))

    def key_ok(self, code: str, key: object) -> bool:
        """Whether ``key`` is room ``code``'s key (compared in constant time); a wrong one is counted against the room
        (its limit, like every lecturer action's)."""
        now = self._now()
        row = self.store.room(code, now)
        if row is None:
            return False
        if codes.key_shape(key) and codes.key_matches(str(key), row.key_digest):
            return True
        self._limit("key_room", code, now)
        return False

    def move(self, code: str, key: str, at: int, page: str, params: Mapping[str, str] | None = None) -> int:
        """Move the room to slide ``at`` (its page), with the lecturer's own view of it or None; the new version."""
        now = self._now()
        row = self._lecturer(code, key, now)
        deck = _deck(row.deck)
        bad_page = not isinstance(page, str) or not page.isidentifier() or len(page) > 40
        if bad_page or not isinstance(at, int) or not 0 <= at < len(deck.slides):
            raise Refused("no such slide in this room's deck", "slide", n=len(deck.slides))
        if params is None and page != deck.slides[at].page:
            raise Refused("no such slide in this room's deck", "slide", n=len(deck.slides))
        got = self.store.move(code, at, page, _params(params), now)
        if got is None:
            raise Refused("this room has ended or does not exist", "gone")
        return got

    def _question_slide(self, row: RoomRow, slide: int) -> decks.Question:
        deck = _deck(row.deck)
        if not isinstance(slide, int) or not 0 <= slide < len(deck.slides) or deck.slides[slide].question is None:
            raise Refused("this slide asks no question", "no_question")
        return deck.slides[slide].question

    def ask(self, code: str, key: str, slide: int) -> int:
        """Open slide ``slide``'s question: students may answer it now."""
        return self._set_question(code, key, slide, "open")

    def reveal(self, code: str, key: str, slide: int) -> int:
        """Close the question and show everyone its answers and the right one."""
        return self._set_question(code, key, slide, "revealed")

    def _set_question(self, code: str, key: str, slide: int, state: str) -> int:
        now = self._now()
        row = self._lecturer(code, key, now)
        self._question_slide(row, slide)
        if state == "revealed" and row.questions.get(slide) is None:
            raise Refused("ask the question before revealing its answers", "not_asked")
        got = self.store.set_question(code, slide, state, now)
        if got is None:
            raise Refused("this room has ended or does not exist", "gone")
        return got

    def end(self, code: str, key: str) -> None:
        now = self._now()
        self._lecturer(code, key, now)
        self.store.end(code)

    def results_csv(self, code: str, key: str, lang: str = "en") -> str:
        """Every asked question's answers as CSV: per question and answer, how many gave it and whether it is
        right. No browser, token or time is in it."""
        now = self._now()
        row = self._lecturer(code, key, now)
        deck = _deck(row.deck)
        out = io.StringIO()
        w = csv.writer(out, lineterminator="\n")
        w.writerow(["slide", "question", "kind", "answer", "count", "right"])
        for slide in sorted(row.questions):
            q = deck.slides[slide].question
            if q is None:
                continue
            res = self._results(code, slide, q)
            for value, n in res.bars:
                shown = "" if value is None else q.choice(int(value), lang) if q.kind == "choice" else value_text(value)
                right = "" if value is None else "yes" if q.right(value) else "no"
                w.writerow([slide + 1, q.words(lang), q.kind, shown, n, right])
        return out.getvalue()

    # ------------------------------------------------------------ a student
    def _code(self, code_text: object, who: str, now: float) -> str:
        """The room code in ``code_text``. A browser (or the whole store) past its limit of wrong codes is refused
        whatever it types, for the window's rest; a wrong code is counted."""
        if not (self._limit("code_browser", who, now, False) and self._limit("code_all", "all", now, False)):
            raise Refused("too many wrong room codes: wait ten minutes", "code_limit")
        code = codes.read_code(code_text)
        if code is None or self.store.room(code, now) is None:
            self._limit("code_browser", who, now)
            self._limit("code_all", "all", now)
            if code is None:
                raise Refused(
                    f"a room code has {codes.CODE_LEN} letters and digits, like ABCD-2345",
                    "code_shape",
                    n=codes.CODE_LEN,
                )
            raise Refused("this room has ended or does not exist", "gone")
        return code

    def join(self, code_text: object, browser: str) -> RoomView:
        """The room of a student link's code; wrong or unknown codes are counted per browser and for the store."""
        now = self._now()
        code = self._code(code_text, self._who(browser), now)
        return self._view(self._row(code, now))

    def view(self, code: str) -> RoomView | None:
        """The room now (each run of a page in it), or None when it has ended."""
        row = self.store.room(code, self._now())
        return None if row is None else self._view(row)

    def versions(self, code: str) -> Versions | None:
        return self.store.versions([code], self._now()).get(code)

    def answer(self, code: str, browser: str, slide: int, raw: object) -> float:
        """Record this browser's answer to the open question of slide ``slide``; the answer as recorded."""
        now = self._now()
        who = self._who(browser)
        if not self._limit("answer_browser", who, now):
            raise Refused("too many answers from this browser: wait a minute", "answer_limit")
        row = self._row(code, now)
        q = self._question_slide(row, slide)
        value = q.check(raw)  # a ConfigError with its own message
        if row.questions.get(slide) != "open":
            raise Refused("this question is not open for answers", "closed")
        if not self._limit("answer_room", code, now):
            raise Refused("too many answers at once: try again in a few seconds", "busy")
        got = self.store.answer(code, slide, who, value_text(value), MAX_ANSWERS, now)
        if got == "again":
            raise Refused("this browser has answered this question already", "again")
        if got == "closed":
            raise Refused("this question is not open for answers", "closed")
        if got == "full":
            raise Refused("this question has as many answers as it takes", "full_answers", n=MAX_ANSWERS)
        if got == "gone":
            raise Refused("this room has ended or does not exist", "gone")
        return value

    def mine(self, code: str, browser: str, slide: int) -> float | None:
        """This browser's answer to slide ``slide``'s question, or None."""
        got = self.store.mine(code, slide, self._who(browser))
        return None if got is None else float(got)

    def seen(self, code: str, browser: str) -> None:
        self.store.seen(code, self._who(browser), MAX_MEMBERS, self._now())

    def results(self, code: str, slide: int, key: str | None = None) -> Results | None:
        """A question's answers: for everyone once revealed (with the right answer), before that only the number of
        answers, and only with the room's key (the lecturer's count); None when nobody may see them yet."""
        now = self._now()
        row = self._row(code, now)
        q = self._question_slide(row, slide)
        state = row.questions.get(slide)
        if state == "revealed":
            return self._results(code, slide, q)
        if state == "open" and key is not None and codes.key_shape(key) and codes.key_matches(key, row.key_digest):
            return Results(q, len(self.store.answers(code, slide)), (), None)
        return None

    def _results(self, code: str, slide: int, q: decks.Question) -> Results:
        values = Counter(float(v) for v in self.store.answers(code, slide))
        n = sum(values.values())
        right = sum(c for v, c in values.items() if q.right(v))
        if q.kind == "choice":
            return Results(
                q, n, tuple((float(i), values.get(float(i), 0)) for i in range(1, len(q.choices) + 1)), right
            )
        top = sorted(values.items(), key=lambda vc: (-vc[1], vc[0]))
        kept = sorted(top[: MAX_BARS - 1] if len(top) > MAX_BARS else top)
        rest = n - sum(c for _, c in kept)
        return Results(q, n, tuple(kept) + (((None, rest),) if rest else ()), right)


@functools.lru_cache(maxsize=4)
def _service(settings: Settings) -> Rooms:
    return Rooms(settings.open_store(), settings)


def current() -> Rooms:
    """The process's :class:`Rooms` for the settings in the environment now (one per settings: the app's pages,
    the HTTP endpoint and a test that sets ``ATTN_DATA_DIR`` each get the store those settings name)."""
    return _service(Settings.from_env())
