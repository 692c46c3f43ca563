"""A lecture deck's files, from the command line or the app: PDF, PowerPoint and one offline HTML file.

    python -m attn_core.export --deck NAME|FILE|LINK --format pdf,pptx,html --lang en|zh --out DIR \\
        [--base-url http://localhost:8501] [--handout 2|4] [--device cpu]

:func:`deck_files` draws a deck (:func:`attn_core.export.deck.draw`) and writes the asked formats as bytes, the
charts rendered once each on the process's warm renderer; :func:`write` puts them in a folder. A slide left out is
said on standard error (naming the slide and why) and the exit status is 1; the files are written all the same.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from pathlib import Path

from attn_core.decks import Deck
from attn_core.export.deck import (
    DEFAULT_BASE_URL,
    FORMATS,
    HANDOUTS,
    DeckFile,
    Options,
    Progress,
    draw,
    error_text,
    load,
)
from attn_core.export.deck_layout import Renders
from attn_core.render import RenderError, chromium_missing_message, find_chromium
from attn_core.runtime.config import ConfigError, unknown_option


def formats_of(text: str | Sequence[str]) -> list[str]:
    """The formats asked for (comma-separated or a list), in :data:`FORMATS` order; ConfigError for others."""
    items = [f.strip().lower() for f in (text.split(",") if isinstance(text, str) else text) if f.strip()]
    bad = [f for f in items if f not in FORMATS]
    if bad or not items:
        raise unknown_option("format", ", ".join(bad) or "(none)", FORMATS)
    return [f for f in FORMATS if f in items]


class _Ticks:
    """Progress over the renders and slides of an export: ``progress(fraction, text)`` after each."""

    def __init__(self, progress: Progress | None, total: int, text: str) -> None:
        self.progress, self.total, self.text, self.done = progress, max(total, 1), text, 0

    def __call__(self) -> None:
        self.done += 1
        if self.progress is not None:
            self.progress(min(self.done / self.total, 1.0), self.text)


def deck_files(
    made: DeckFile, formats: Sequence[str], progress: Progress | None = None, renders: Renders | None = None
) -> dict[str, bytes]:
    """The bytes of each of ``formats`` for the drawn deck ``made``; ``progress`` is told after every chart
    rendered and every slide written. PDF and PowerPoint need Chromium (:class:`RenderError` without it).
    ``renders``: charts and frames already rendered for ``made`` (another handout of the same deck)."""
    wanted = formats_of(formats)
    images = [f for f in wanted if f in ("pdf", "pptx")]
    if images and find_chromium() is None:
        raise RenderError(chromium_missing_message())
    charts = sum(len(s.views) for s in made.slides)
    n = len(made.slides)
    renders_due = charts * len(images) + n * ("pdf" in wanted)  # each chart once per image format, each PDF frame
    ticks = _Ticks(progress, renders_due + n * len(wanted), made.opts.t("deckfile.writing"))
    if renders is None:
        renders = Renders(made.opts.style)
    renders.tick = ticks
    out: dict[str, bytes] = {}
    for fmt in wanted:
        if fmt == "pdf":
            from attn_core.export.deck_pdf import to_pdf

            out[fmt] = to_pdf(made, renders, ticks)
        elif fmt == "pptx":
            from attn_core.export.deck_pptx import to_pptx

            out[fmt] = to_pptx(made, renders, ticks)
        else:
            from attn_core.export.deck_html import to_html

            out[fmt] = to_html(made, ticks)
    return out


def file_stem(deck: Deck, name: str | None, lang: str) -> str:
    """The files' name: the shipped deck's name, else the deck's title made file-safe, and the language."""
    stem = name or re.sub(r"[^A-Za-z0-9]+", "_", deck.name_in("en") or deck.name_in(lang)).strip("_").lower()
    return f"{stem or 'deck'}_{lang}"


def write(source: str, formats: Sequence[str], opts: Options, out: Path, progress: Progress | None = None):
    """Draw the deck ``source`` (:func:`attn_core.export.deck.load`) and write its files into ``out``; returns the
    paths written and the drawn deck (its ``left_out`` slides say why)."""
    deck, name = load(source)
    made = draw(deck, opts, name, progress)
    files = deck_files(made, formats, progress)
    out.mkdir(parents=True, exist_ok=True)
    stem = file_stem(deck, name, opts.lang) + (f"_handout{opts.handout}" if opts.handout else "")
    paths = []
    for fmt, data in files.items():
        path = out / f"{stem if fmt == 'pdf' else file_stem(deck, name, opts.lang)}.{fmt}"
        path.write_bytes(data)
        paths.append(path)
    return paths, made


# ---------------------------------------------------------------- the command line
def asks_for_deck(argv: Sequence[str]) -> bool:
    """Whether a command line asks for a deck's files (``--deck``) rather than a page's charts."""
    return any(a == "--deck" or a.startswith("--deck=") for a in argv)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m attn_core.export --deck", description=__doc__.split("\n\n")[0], allow_abbrev=False
    )
    p.add_argument("--deck", required=True, help="a shipped deck's name, a deck file, or a deck link")
    p.add_argument("--format", default=",".join(FORMATS), help=f"comma-separated: {', '.join(FORMATS)}")
    p.add_argument("--lang", default="en", choices=["en", "zh"])
    p.add_argument("--out", default="export", help="output folder (created if missing)")
    p.add_argument("--base-url", default=DEFAULT_BASE_URL, help="the app's address, for the slide links")
    p.add_argument("--handout", type=int, choices=HANDOUTS, default=None, help="a PDF of 2 or 4 slides a page")
    p.add_argument("--device", default="cpu", help="cpu, cuda or auto")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Write a deck's files; print their paths. Exit status 2 for a deck that cannot be read (or no renderer),
    1 when a slide was left out (said on standard error; the files are written all the same), else 0."""
    args = parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    if args.device == "auto":
        from attn_core.runtime.device import pick_device

        args.device = str(pick_device())
    opts = Options(lang=args.lang, base_url=args.base_url, handout=args.handout, device=args.device)
    try:
        paths, made = write(args.deck, formats_of(args.format), opts, Path(args.out))
    except (ConfigError, RenderError) as exc:
        print(f"error: {error_text(exc, args.lang)}", file=sys.stderr)
        return 2
    for sf in made.left_out:
        print(f"warning: {sf.left_out}", file=sys.stderr)
    for path in paths:
        print(path)
    return 1 if made.left_out else 0
