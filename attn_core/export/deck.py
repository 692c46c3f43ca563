"""A lecture deck as files: a PDF, a PowerPoint file and one offline HTML file, each slide as the app draws it.

    python -m attn_core.export --deck gqa_and_the_kv_cache --format pdf,pptx,html --lang zh --out decks/
    python -m attn_core.export --deck my_deck.json --format pdf --handout 4
    python -m attn_core.export --deck "http://localhost:8501/?deck=eNqr...&deck_at=2" --format html

``--deck`` is a shipped deck's name (``assets/decks/``), a deck file, or a deck's link as the app shares it (or
the ``deck`` parameter of one). Every slide is drawn by its page's view model from the slide's link state
(:func:`attn_core.export.params_from_link`, :meth:`attn_core.views.base.PageSpec.slide`): the charts and sentences
that the page shows in slide mode for that link. A slide that cannot be drawn (a page or a control that does not
exist, a value the page refuses, an export over :class:`Budget`) is said, naming the slide, and stands in the
files as a placeholder that says why; the other slides are exported as usual.

The writers are :mod:`attn_core.export.deck_pdf`, :mod:`attn_core.export.deck_pptx` and
:mod:`attn_core.export.deck_html`; :func:`deck_files` gives all three as bytes (the app's download button).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlsplit

import plotly.io as pio

from attn_core import decks, figures
from attn_core.export import params_from_link
from attn_core.i18n import catalog, translate
from attn_core.runtime.config import ConfigError
from attn_core.views import PAGES, View, page
from attn_core.views.base import controls, defaults, url_text

FORMATS = ("pdf", "pptx", "html")
MIME = {
    "pdf": "application/pdf",
    "pptx": "application/vnd.openxmlformats-officedocument.presentationml.presentation",
    "html": "text/html",
}
DEFAULT_BASE_URL = "http://localhost:8501"
HANDOUTS = (2, 4)  # slides a page of a PDF handout
Progress = Callable[[float, str], None]  # (fraction done, what is being done)


@dataclass(frozen=True)
class Budget:
    """How large an export may grow: ``charts`` on one slide, ``slide_bytes`` of one slide's charts and
    ``deck_bytes`` of all of them (their plotly JSON, what the HTML file holds beside plotly.js's 4.7 MB)."""

    charts: int = 8
    slide_bytes: int = 2_500_000
    deck_bytes: int = 5_000_000


@dataclass(frozen=True)
class Options:
    """A deck export's choices: the ``lang`` of every text, the app's ``base_url`` the slide links point to,
    ``handout`` (2 or 4 slides a PDF page; None: one slide a page), the ``device`` the pages compute on."""

    lang: str = "en"
    base_url: str = DEFAULT_BASE_URL
    handout: int | None = None
    device: str = "cpu"
    budget: Budget = field(default_factory=Budget)

    @property
    def style(self) -> figures.Style:
        """The charts' style: slide mode's (large type, high contrast), in the chosen language."""
        return figures.Style(present=True, lang=self.lang)

    def t(self, key: str, /, **kw: object) -> str:
        return translate(key, self.lang, **kw)


@dataclass(frozen=True)
class SlideFile:
    """One slide as the files show it: its ``number`` (1-based) of ``total``, ``title``, the ``sentences`` beside
    its charts (the deck's sentence, or the page's own for the slide's settings when the deck gives none),
    ``settings`` (``name = value`` of every control the slide sets), ``said`` (the page's own sentences for those
    settings: with their numbers, in the speaker notes), the deck's ``note``, its
    ``link`` in the app, its ``views`` (charts), and ``left_out``: why its charts are missing (a placeholder)."""

    number: int
    total: int
    title: str
    sentences: tuple[str, ...] = ()
    settings: tuple[str, ...] = ()
    said: tuple[str, ...] = ()
    note: str = ""
    link: str = ""
    views: tuple[View, ...] = ()
    left_out: str | None = None

    @property
    def numbers(self) -> tuple[str, ...]:
        """The slide's numbers for its speaker notes: its settings, and the page's sentences where the slide
        shows the deck's own."""
        return self.settings + (self.said if self.sentences != self.said else ())


@dataclass(frozen=True)
class DeckFile:
    """A deck ready to write: its ``title``, its ``slides``, the ``opts`` it was drawn with."""

    title: str
    slides: tuple[SlideFile, ...]
    opts: Options

    @property
    def left_out(self) -> list[SlideFile]:
        return [s for s in self.slides if s.left_out is not None]


# ---------------------------------------------------------------- finding the deck
def known_params() -> dict[str, set[str]]:
    """Every page's name and the link parameters it may hold (its controls and the global ones)."""
    return {p.name: set(controls(p.params)) | set(decks.GLOBAL_KEYS) for p in PAGES}


def load(source: str) -> tuple[decks.Deck, str | None]:
    """The deck ``source`` names and its shipped name (None for a file or a link): a shipped deck's name, a deck
    file, a deck link as the app shares it, or the ``deck`` parameter of one; :class:`ConfigError` otherwise."""
    shipped = decks.shipped()
    text = source.strip()
    if "deck=" in text:  # a link: its deck parameter
        found = parse_qs(urlsplit(text).query or text.split("?", 1)[-1]).get("deck")
        if not found:
            raise ConfigError("the deck in the link is damaged: copy the whole link again", "deck", "deck_damaged")
        text = found[0]
    if text in shipped:
        return shipped[text], text
    path = Path(text).expanduser()
    if text.endswith(".json") or _is_file(path):
        if not path.is_file():
            raise ConfigError(f"no deck file {text}", "deck", "deckfile_no_file", path=text)
        return decks.from_json(path.read_bytes()), None
    try:
        return decks.decode(text), None
    except ConfigError:
        if re.fullmatch(r"[A-Za-z0-9_.-]{1,48}", text):  # a name, not an encoded deck
            names = ", ".join(shipped)
            raise ConfigError(
                f"no deck called {text!r}; the shipped decks: {names}",
                "deck",
                "deckfile_unknown",
                name=text,
                names=names,
            ) from None
        raise


def _is_file(path: Path) -> bool:
    try:
        return path.is_file()
    except OSError:  # a name too long for a file: an encoded deck
        return False


# ---------------------------------------------------------------- drawing the slides
def error_text(exc: BaseException, lang: str) -> str:
    """``exc``'s message in ``lang`` (its catalog entry ``err.<key>`` when it names one)."""
    key = getattr(exc, "key", None)
    if key and f"err.{key}" in catalog(lang):
        try:
            return translate(f"err.{key}", lang, **getattr(exc, "params", {}))
        except (KeyError, IndexError, ValueError):
            pass
    return str(exc) or type(exc).__name__


def slide_link(s: decks.Slide, number: int, name: str | None, opts: Options) -> str:
    """The slide's link in the app: its page with its state and the chosen language; a shipped deck's slide also
    opens the deck there (``deck``, ``deck_at``)."""
    spec = next((p for p in PAGES if p.name == s.page), None)
    path = "" if spec is None or spec.default else s.page
    query = dict(s.params)
    if opts.lang != "en":
        query["lang"] = opts.lang
    if name is not None:
        query |= {"deck": name, "deck_at": str(number)}
    return f"{opts.base_url.rstrip('/')}/{path}" + ("?" + urlencode(query) if query else "")


def settings_lines(s: decks.Slide, params: object | None) -> list[str]:
    """The slide's settings as ``name = value`` (every control the slide sets, its steppers too)."""
    if params is None:
        return [f"{k} = {v}" for k, v in s.params]
    values = {f.name: getattr(params, f.name) for f in dataclasses.fields(params)}
    base = defaults(type(params))
    shown = {k: url_text(v) for k, v in values.items() if k in base and v != base[k]}
    shown |= {k: v for k, v in s.params if k not in shown}
    return [f"{k} = {v}" for k, v in sorted(shown.items())]


def _within_budget(views: Sequence[View], budget: Budget) -> int:
    """The bytes of ``views``' charts; :class:`ConfigError` when they pass a limit of ``budget`` (its
    ``deck_bytes``: what is left of the deck's)."""
    if len(views) > budget.charts:
        raise ConfigError(
            f"{len(views)} charts, more than the {budget.charts} a slide may hold",
            "deck",
            "deckfile_charts",
            n=len(views),
            limit=budget.charts,
        )
    size = sum(len(pio.to_json(v.figure, validate=False)) for v in views)
    limit = min(budget.slide_bytes, budget.deck_bytes)
    if size > limit:
        raise ConfigError(
            f"its charts take {size / 1e6:.1f} MB, over the budget of {max(limit, 0) / 1e6:.1f} MB",
            "deck",
            "deckfile_budget",
            mb=f"{size / 1e6:.1f}",
            limit=f"{max(limit, 0) / 1e6:.1f}",
        )
    return size


def draw_slide(s: decks.Slide, number: int, total: int, name: str | None, opts: Options) -> tuple[SlideFile, int]:
    """Slide ``number`` (1-based) drawn by its page, and the bytes its charts take; a slide that cannot be drawn
    comes back with ``left_out`` saying why (in ``opts.lang``)."""
    title = s.words("title", opts.lang) or f"{number}"
    note = s.words("note", opts.lang)
    base = SlideFile(number, total, title, (note,) if note else (), note=note, link=slide_link(s, number, name, opts))
    params = None
    try:
        decks.check_slide(s, number - 1, known_params())
        spec = page(s.page)
        params, steps = params_from_link(spec, dict(s.params))
        shown = spec.slide(params, opts.style, steps, opts.device)
        for v in shown.views:
            figures.apply_fonts(v.figure, opts.style)
        size = _within_budget(shown.views, opts.budget)
    except Exception as exc:  # noqa: BLE001 - any failure of one slide leaves that slide out, never the deck
        why = opts.t("deckfile.left_out", i=number, why=error_text(exc, opts.lang))
        return dataclasses.replace(base, settings=tuple(settings_lines(s, params)), left_out=why), 0
    said = tuple(plain(x) for x in shown.sentences)
    return dataclasses.replace(
        base,
        sentences=base.sentences or said,
        settings=tuple(settings_lines(s, params)),
        said=said,
        views=tuple(shown.views),
    ), size


def plain(text: str) -> str:
    """A page's sentence without its markdown (bold, code, math delimiters), as a file writes it."""
    text = re.sub(r"\*\*(.+?)\*\*", r"\1", text)
    text = re.sub(r"`([^`]*)`", r"\1", text)
    return re.sub(r"\$([^$]*)\$", r"\1", text).strip()


def draw(deck: decks.Deck, opts: Options, name: str | None = None, progress: Progress | None = None) -> DeckFile:
    """Every slide of ``deck`` drawn (``name``: its shipped name, for the slide links); ``progress`` is told after
    each slide. The charts of all slides together stay within ``opts.budget.deck_bytes``: a slide that would pass
    it is left out."""
    out, spent, n = [], 0, len(deck.slides)
    for i, s in enumerate(deck.slides):
        if progress is not None:
            progress(i / n, opts.t("deckfile.drawing", i=i + 1, n=n))
        budget = dataclasses.replace(opts.budget, deck_bytes=opts.budget.deck_bytes - spent)
        made, size = draw_slide(s, i + 1, n, name, dataclasses.replace(opts, budget=budget))
        out.append(made)
        spent += size
    return DeckFile(deck.name_in(opts.lang) or opts.t("deck.untitled"), tuple(out), opts)
