"""Lecture decks: an ordered list of slides, each a page state (a share link) with a title and a sentence.

A deck is small JSON, the same for a file, a link and the shipped decks in ``assets/decks/``::

    {"format": "attention-explorer-deck", "version": 1,
     "title": {"en": "GQA and the KV cache", "zh": "GQA 与 KV 缓存"},
     "slides": [{"page": "kv_sharing", "params": {"n_heads": "8", "n_kv_heads": "2"},
                 "title": {"en": "...", "zh": "..."}, "note": {"en": "...", "zh": "..."}}, ...]}

A slide may carry a ``question`` a live lecture's room asks the class (:mod:`rooms`): multiple choice, the right
choice counted from 1, or a number with a tolerance and a unit, each text in both languages::

    "question": {"kind": "choice", "prompt": {"en": "...", "zh": "..."},
                 "choices": [{"en": "...", "zh": "..."}, ...], "answer": 3}
    "question": {"kind": "number", "prompt": {...}, "answer": 512, "tolerance": 1, "unit": {"en": "MiB", "zh": "MiB"}}

``params`` are the page's link parameters as text (what the sidebar's link holds); the language is the
viewer's, never the slide's. A link carries the whole deck: :func:`encode` compresses it and writes it in
URL-safe base64 (``?deck=...``). Every check raises :class:`~attn_core.runtime.config.ConfigError` with a catalog key.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import zlib
from collections.abc import Collection, Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from attn_core.runtime.config import ConfigError

FORMAT = "attention-explorer-deck"
VERSION = 1
MAX_SLIDES = 60
MAX_JSON_BYTES = 64 * 1024  # a deck file or link larger than this is refused before it is parsed
MAX_TEXT = 400  # characters of a slide's title or sentence
LANGS = ("en", "zh")
DECK_DIR = Path(__file__).resolve().parent.parent / "assets" / "decks"
_VIEWER_KEYS = ("lang",)  # the viewer's own choice: never stored in a slide
STEP_KEYS = (
    "slide",
    "kv_token",
    "mla_heads",
)  # a slide mode's steppers (Previous/Next on the page): the link counts from 1
GLOBAL_KEYS = ("seed", "present", *STEP_KEYS)  # link parameters every page may hold besides its own controls
# link parameters that are no control of a page: the viewer's presentation mode and language, the deck and its slide
VIEWER_KEYS = ("seed", "present", "lang", "deck", "deck_at")
SECTION_PREFIX = "x_"  # a page section's open state (in a share link, not a slide's state)
QUESTION_KINDS = ("choice", "number")
MIN_CHOICES, MAX_CHOICES = 2, 8
MAX_CHOICE_TEXT = 120  # characters of one choice
MAX_NUMBER = 1e15  # the largest magnitude of a number question's answer, tolerance or a student's answer


def _texts(raw: object, where: str) -> tuple[tuple[str, str], ...]:
    """``{"en": ..., "zh": ...}`` (either may be missing; a plain string is English) as sorted pairs."""
    if isinstance(raw, str):
        raw = {"en": raw}
    if raw is None:
        raw = {}
    if not isinstance(raw, dict) or any(k not in LANGS or not isinstance(v, str) for k, v in raw.items()):
        raise ConfigError(f'{where}: texts must be {{"en": ..., "zh": ...}}', "deck", "deck_texts", where=where)
    if any(len(v) > MAX_TEXT for v in raw.values()):
        raise ConfigError(
            f"{where}: a text is longer than {MAX_TEXT} characters", "deck", "deck_long_text", where=where, n=MAX_TEXT
        )
    return tuple(sorted((k, v.strip()) for k, v in raw.items()))


def _number(raw: object, where: str, field: str, low: float) -> float:
    """A finite number of a question (bool is no number), ``low`` <= it <= :data:`MAX_NUMBER`."""
    if isinstance(raw, bool) or not isinstance(raw, (int, float)) or not math.isfinite(raw):
        raise ConfigError(
            f"{where}: the question needs a number as its {field!r}",
            "deck",
            "deck_question_number",
            where=where,
            name=field,
        )
    if not low <= raw <= MAX_NUMBER:
        raise ConfigError(
            f"{where}: the question has its {field!r} outside {low:g}..{MAX_NUMBER:g}",
            "deck",
            "deck_question_range",
            where=where,
            name=field,
            low=low,
            high=MAX_NUMBER,
        )
    return float(raw)


@dataclass(frozen=True)
class Question:
    """A question a slide asks the class: ``kind`` "choice" (``choices``, ``answer`` the right one counted from 1)
    or "number" (``answer`` within ``tolerance``, written with ``unit``). ``answer`` is None in the copy a student's
    session holds (:meth:`Deck.for_students`) until the lecturer reveals it."""

    kind: str
    prompt: tuple[tuple[str, str], ...]
    choices: tuple[tuple[tuple[str, str], ...], ...] = ()
    answer: float | None = None
    tolerance: float = 0.0
    unit: tuple[tuple[str, str], ...] = ()

    def words(self, lang: str) -> str:
        return _pick(self.prompt, lang)

    def choice(self, i: int, lang: str) -> str:
        """Choice ``i`` (counted from 1) in ``lang``."""
        return _pick(self.choices[i - 1], lang)

    def unit_in(self, lang: str) -> str:
        return _pick(self.unit, lang)

    def check(self, raw: object) -> float:
        """A student's answer as the number it stands for (a choice's number from 1, or the number), or a
        :class:`ConfigError` saying what is expected."""
        if self.kind == "choice":
            if isinstance(raw, bool) or not isinstance(raw, (int, float, str)):
                raise ConfigError("pick one of the choices", "answer", "answer_choice", n=len(self.choices))
            try:
                value = float(raw)
            except ValueError as exc:
                raise ConfigError("pick one of the choices", "answer", "answer_choice", n=len(self.choices)) from exc
            if not value.is_integer() or not 1 <= value <= len(self.choices):
                raise ConfigError("pick one of the choices", "answer", "answer_choice", n=len(self.choices))
            return value
        try:
            value = float(raw) if not isinstance(raw, bool) and isinstance(raw, (int, float, str)) else math.nan
        except ValueError:
            value = math.nan
        if not math.isfinite(value) or abs(value) > MAX_NUMBER:
            raise ConfigError(
                f"give a number between {-MAX_NUMBER:g} and {MAX_NUMBER:g}", "answer", "answer_number", limit=MAX_NUMBER
            )
        return value

    def right(self, value: float) -> bool:
        """Whether ``value`` (from :meth:`check`) is right; False while the answer is not known here."""
        if self.answer is None:
            return False
        if self.kind == "choice":
            return value == self.answer
        return abs(value - self.answer) <= self.tolerance * (1 + 1e-12)

    def to_json(self) -> dict:
        out: dict = {"kind": self.kind, "prompt": dict(self.prompt)}
        if self.kind == "choice":
            out["choices"] = [dict(c) for c in self.choices]
        if self.answer is not None:
            out["answer"] = int(self.answer) if self.kind == "choice" else _plain(self.answer)
        if self.kind == "number":
            out["tolerance"] = _plain(self.tolerance)
            if self.unit:
                out["unit"] = dict(self.unit)
        return out


def _plain(x: float) -> int | float:
    return int(x) if float(x).is_integer() and abs(x) < 2**53 else x


def _pick(texts: tuple[tuple[str, str], ...], lang: str) -> str:
    found = dict(texts)
    return found.get(lang) or next((v for v in found.values() if v), "")


def _question_from(raw: object, where: str) -> Question | None:
    """The ``question`` of a slide (None when it has none), checked: its kind, prompt, choices and answer."""
    if raw is None:
        return None
    if not isinstance(raw, dict) or raw.get("kind") not in QUESTION_KINDS:
        raise ConfigError(
            f'{where}: the question must say its "kind": "choice" or "number"',
            "deck",
            "deck_question_kind",
            where=where,
        )
    extra = sorted(set(raw) - {"kind", "prompt", "choices", "answer", "tolerance", "unit"})
    if extra:
        raise ConfigError(
            f"{where}: the question has no field {extra[0]!r}",
            "deck",
            "deck_question_field",
            where=where,
            name=extra[0][:40],
        )
    prompt = _texts(raw.get("prompt"), where)
    if not any(v for _, v in prompt):
        raise ConfigError(f"{where}: the question needs a prompt", "deck", "deck_question_prompt", where=where)
    if raw["kind"] == "choice":
        choices = raw.get("choices")
        if not isinstance(choices, list) or not MIN_CHOICES <= len(choices) <= MAX_CHOICES:
            raise ConfigError(
                f"{where}: the question needs {MIN_CHOICES} to {MAX_CHOICES} choices",
                "deck",
                "deck_question_choices",
                where=where,
                low=MIN_CHOICES,
                high=MAX_CHOICES,
            )
        texts = tuple(_texts(c, where) for c in choices)
        if any(not any(v for _, v in c) or any(len(v) > MAX_CHOICE_TEXT for _, v in c) for c in texts):
            raise ConfigError(
                f"{where}: the question has a choice empty or longer than {MAX_CHOICE_TEXT} characters",
                "deck",
                "deck_question_choice_text",
                where=where,
                n=MAX_CHOICE_TEXT,
            )
        answer = raw.get("answer")
        if isinstance(answer, bool) or not isinstance(answer, int) or not 1 <= answer <= len(texts):
            raise ConfigError(
                f"{where}: the question needs its right choice's number (1 to {len(texts)}) as its answer",
                "deck",
                "deck_question_answer",
                where=where,
                n=len(texts),
            )
        return Question("choice", prompt, texts, float(answer))
    if "choices" in raw:
        raise ConfigError(
            f"{where}: the question asks for a number: it has no choices",
            "deck",
            "deck_question_no_choices",
            where=where,
        )
    answer = _number(raw.get("answer"), where, "answer", -MAX_NUMBER)
    tolerance = _number(raw.get("tolerance", 0), where, "tolerance", 0.0)
    return Question("number", prompt, (), answer, tolerance, _texts(raw.get("unit"), where))


@dataclass(frozen=True)
class Slide:
    """One slide: the ``page`` (its registry name), its link ``params`` (sorted ``(key, text)`` pairs), and its
    ``title`` and ``note`` per language (sorted ``(lang, text)`` pairs)."""

    page: str
    params: tuple[tuple[str, str], ...] = ()
    title: tuple[tuple[str, str], ...] = ()
    note: tuple[tuple[str, str], ...] = ()
    question: Question | None = None

    def words(self, what: str, lang: str) -> str:
        """The slide's ``title`` or ``note`` in ``lang``, else in the other language, else ``""``."""
        return _pick(getattr(self, what), lang)

    def to_json(self) -> dict:
        out = {"page": self.page, "params": dict(self.params), "title": dict(self.title), "note": dict(self.note)}
        if self.question is not None:
            out["question"] = self.question.to_json()
        return out


@dataclass(frozen=True)
class Deck:
    """A lecture deck: its ``title`` per language and its ``slides`` in order."""

    title: tuple[tuple[str, str], ...] = ()
    slides: tuple[Slide, ...] = ()

    def name_in(self, lang: str) -> str:
        texts = dict(self.title)
        return texts.get(lang) or next((v for v in texts.values() if v), "")

    def for_students(self) -> Deck:
        """The deck without its questions' answers (what a student's session holds before a reveal)."""
        return replace(
            self,
            slides=tuple(
                replace(s, question=replace(s.question, answer=None)) if s.question is not None else s
                for s in self.slides
            ),
        )

    def to_json(self) -> dict:
        return {
            "format": FORMAT,
            "version": VERSION,
            "title": dict(self.title),
            "slides": [s.to_json() for s in self.slides],
        }


def slide(
    page: str, params: Mapping[str, str], title: Mapping[str, str] | str = "", note: Mapping[str, str] | str = ""
) -> Slide:
    """A slide of ``page`` in the state ``params`` (link parameters; the viewer's language is dropped)."""
    kept = {str(k): str(v) for k, v in params.items() if k not in _VIEWER_KEYS}
    return Slide(str(page), tuple(sorted(kept.items())), _texts(title or {}, "title"), _texts(note or {}, "note"))


def _slide_from(raw: object, i: int) -> Slide:
    if not isinstance(raw, dict) or not isinstance(raw.get("page"), str):
        raise ConfigError(f"slide {i + 1} has no page", "deck", "deck_slide", i=i + 1)
    params = raw.get("params") or {}
    if not isinstance(params, dict) or any(not isinstance(v, (str, int, float, bool)) for v in params.values()):
        raise ConfigError(f"slide {i + 1}: params must map names to values", "deck", "deck_slide", i=i + 1)
    texts = {k: ("true" if v else "false") if isinstance(v, bool) else str(v) for k, v in params.items()}
    where = f"slide {i + 1}"
    return Slide(
        raw["page"],
        tuple(sorted((k, v) for k, v in texts.items() if k not in _VIEWER_KEYS)),
        _texts(raw.get("title"), where),
        _texts(raw.get("note"), where),
        _question_from(raw.get("question"), where),
    )


def from_json(text: str | bytes) -> Deck:
    """The deck in ``text`` (a file's contents), checked: format, size, every slide's page and texts."""
    if len(text) > MAX_JSON_BYTES:
        raise ConfigError(
            f"the deck is {len(text):,} bytes, more than {MAX_JSON_BYTES:,}",
            "deck",
            "deck_large",
            n=len(text),
            limit=MAX_JSON_BYTES,
        )
    try:
        raw = json.loads(text)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ConfigError(f"the deck is not JSON: {exc}", "deck", "deck_not_json") from exc
    if not isinstance(raw, dict) or raw.get("format") != FORMAT:
        raise ConfigError(f'not a deck: its "format" must be "{FORMAT}"', "deck", "deck_format", format=FORMAT)
    if raw.get("version") != VERSION:
        raise ConfigError(
            f"deck version {raw.get('version')!r} is not known; this app reads version {VERSION}",
            "deck",
            "deck_version",
            version=raw.get("version"),
            known=VERSION,
        )
    slides = raw.get("slides")
    if not isinstance(slides, list) or not slides:
        raise ConfigError("the deck has no slides", "deck", "deck_empty")
    if len(slides) > MAX_SLIDES:
        raise ConfigError(
            f"the deck has {len(slides)} slides, more than {MAX_SLIDES}",
            "deck",
            "deck_many",
            n=len(slides),
            limit=MAX_SLIDES,
        )
    return Deck(_texts(raw.get("title"), "title"), tuple(_slide_from(s, i) for i, s in enumerate(slides)))


def to_json(deck: Deck) -> str:
    """The deck as the JSON of a file (UTF-8 text, indented)."""
    return json.dumps(deck.to_json(), ensure_ascii=False, indent=1)


def encode(deck: Deck) -> str:
    """The deck for a link: compact JSON, zlib-compressed, URL-safe base64 without padding."""
    packed = zlib.compress(json.dumps(deck.to_json(), ensure_ascii=False, separators=(",", ":")).encode(), 9)
    return base64.urlsafe_b64encode(packed).decode("ascii").rstrip("=")


def decode(text: str) -> Deck:
    """The deck of a link's ``deck`` parameter (:func:`encode`); a damaged one is refused with a message."""
    if len(text) > MAX_JSON_BYTES:
        raise ConfigError("the deck in the link is too long", "deck", "deck_large", n=len(text), limit=MAX_JSON_BYTES)
    damaged = ConfigError("the deck in the link is damaged: copy the whole link again", "deck", "deck_damaged")
    try:
        packed = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
        unpack = zlib.decompressobj()
        raw = unpack.decompress(packed, MAX_JSON_BYTES + 1)
    except (binascii.Error, ValueError, zlib.error) as exc:
        raise damaged from exc
    if len(raw) > MAX_JSON_BYTES:
        return from_json(raw)  # refused as too large
    if not unpack.eof:  # a link cut short: the compressed stream stops before its end
        raise damaged
    return from_json(raw)


def check_pages(deck: Deck, known: Mapping[str, Collection[str]]) -> None:
    """Every slide names a page of ``known`` (page -> the parameter names its link may hold)."""
    for i, s in enumerate(deck.slides):
        check_slide(s, i, known)


def check_slide(s: Slide, i: int, known: Mapping[str, Collection[str]]) -> None:
    """Slide ``s`` (``i``: 0-based) names a page of ``known`` and only parameters that page's link may hold."""
    if s.page not in known:
        raise ConfigError(
            f"slide {i + 1}: no page called {s.page!r}",
            "deck",
            "deck_page",
            i=i + 1,
            page=s.page,
            pages=", ".join(known),
        )
    extra = [k for k, _ in s.params if k not in known[s.page]]
    if extra:
        raise ConfigError(
            f"slide {i + 1}: the page {s.page} has no control {extra[0]!r}",
            "deck",
            "deck_param",
            i=i + 1,
            page=s.page,
            name=extra[0],
        )


def shipped() -> dict[str, Deck]:
    """The decks in ``assets/decks/`` by file stem, in name order."""
    return {p.stem: from_json(p.read_text(encoding="utf-8")) for p in sorted(DECK_DIR.glob("*.json"))}


# ---------------------------------------------------------------- editing (each returns a new deck)
def add(deck: Deck, new: Slide, at: int | None = None) -> Deck:
    """``deck`` with ``new`` inserted at ``at`` (default: the end)."""
    if len(deck.slides) >= MAX_SLIDES:
        raise ConfigError(
            f"a deck holds at most {MAX_SLIDES} slides", "deck", "deck_many", n=len(deck.slides) + 1, limit=MAX_SLIDES
        )
    slides = list(deck.slides)
    slides.insert(len(slides) if at is None else max(0, min(at, len(slides))), new)
    return replace(deck, slides=tuple(slides))


def move(deck: Deck, i: int, by: int) -> Deck:
    """``deck`` with slide ``i`` moved ``by`` places (clamped to the deck)."""
    slides = list(deck.slides)
    j = max(0, min(i + by, len(slides) - 1))
    slides.insert(j, slides.pop(i))
    return replace(deck, slides=tuple(slides))


def delete(deck: Deck, i: int) -> Deck:
    """``deck`` without slide ``i``."""
    return replace(deck, slides=deck.slides[:i] + deck.slides[i + 1 :])
