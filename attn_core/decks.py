"""Lecture decks: an ordered list of slides, each a page state (a share link) with a title and a sentence.

A deck is small JSON, the same for a file, a link and the shipped decks in ``assets/decks/``::

    {"format": "attention-explorer-deck", "version": 1,
     "title": {"en": "GQA and the KV cache", "zh": "GQA 与 KV 缓存"},
     "slides": [{"page": "kv_sharing", "params": {"n_heads": "8", "n_kv_heads": "2"},
                 "title": {"en": "...", "zh": "..."}, "note": {"en": "...", "zh": "..."}}, ...]}

``params`` are the page's link parameters as text (what the sidebar's link holds); the language is the
viewer's, never the slide's. A link carries the whole deck: :func:`encode` compresses it and writes it in
URL-safe base64 (``?deck=...``). Every check raises :class:`~attn_core.runtime.config.ConfigError` with a catalog key.
"""

from __future__ import annotations

import base64
import binascii
import json
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
STEP_KEYS = ("slide", "kv_token")  # a slide mode's steppers (Previous/Next on the page): the link counts from 1
GLOBAL_KEYS = ("seed", "present", *STEP_KEYS)  # link parameters every page may hold besides its own controls
# link parameters that are no control of a page: the viewer's presentation mode and language, the deck and its slide
VIEWER_KEYS = ("seed", "present", "lang", "deck", "deck_at")
SECTION_PREFIX = "x_"  # a page section's open state (in a share link, not a slide's state)


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


@dataclass(frozen=True)
class Slide:
    """One slide: the ``page`` (its registry name), its link ``params`` (sorted ``(key, text)`` pairs), and its
    ``title`` and ``note`` per language (sorted ``(lang, text)`` pairs)."""

    page: str
    params: tuple[tuple[str, str], ...] = ()
    title: tuple[tuple[str, str], ...] = ()
    note: tuple[tuple[str, str], ...] = ()

    def words(self, what: str, lang: str) -> str:
        """The slide's ``title`` or ``note`` in ``lang``, else in the other language, else ``""``."""
        texts = dict(getattr(self, what))
        return texts.get(lang) or next((v for v in texts.values() if v), "")

    def to_json(self) -> dict:
        return {"page": self.page, "params": dict(self.params), "title": dict(self.title), "note": dict(self.note)}


@dataclass(frozen=True)
class Deck:
    """A lecture deck: its ``title`` per language and its ``slides`` in order."""

    title: tuple[tuple[str, str], ...] = ()
    slides: tuple[Slide, ...] = ()

    def name_in(self, lang: str) -> str:
        texts = dict(self.title)
        return texts.get(lang) or next((v for v in texts.values() if v), "")

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
