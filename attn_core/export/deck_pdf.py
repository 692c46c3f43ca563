"""A deck as a PDF: one 16:9 page per slide (1440 × 810 pt), or a handout of 2 or 4 slides an A4 page.

Each page is the slide's frame (its title, sentences, settings, link and number: a text-only figure rendered by
the warm renderer, so its type, CJK included, is embedded as the charts' is) with the slide's charts merged in as
vector graphics (:class:`~attn_core.export.deck_layout.Renders`), and its link as a clickable area over the link's
text.
"""

from __future__ import annotations

import io
from collections.abc import Callable

import plotly.graph_objects as go

from attn_core.export.deck import DeckFile, Options, SlideFile
from attn_core.export.deck_layout import (
    CHARTS,
    FOOTER_Y,
    HEIGHT,
    NUMBERS,
    PT,
    TITLE,
    WIDTH,
    Box,
    Renders,
    esc,
    family,
    fit_text,
    rendered,
    shown_link,
    words_box,
)
from attn_core.figures.margins import text_width
from attn_core.render import render_image

A4 = (595.28, 841.89)  # pt, portrait
LINK_FONT = 20
INK, GREY, LINK_BLUE = "#1a1a1a", "#5f6368", "#1a5fb4"


def _note(text: str, x: float, y: float, size: float, **how: object) -> dict:
    """An annotation at ``(x, y)`` px of the slide (from its top left), anchored at its top left unless ``how``
    says otherwise."""
    return dict(
        text=text,
        x=x / WIDTH,
        y=1 - y / HEIGHT,
        xref="paper",
        yref="paper",
        showarrow=False,
        xanchor=how.pop("xanchor", "left"),
        yanchor=how.pop("yanchor", "top"),
        align=how.pop("align", "left"),
        font=dict(size=size, color=how.pop("color", INK)),
        **how,
    )


def frame(sf: SlideFile, lang: str) -> go.Figure:
    """The slide without its charts: title, sentences, settings, link, number (and the placeholder of a slide
    left out) on a white 1920 × 1080 page."""
    notes, shapes = [], []
    t = Box(*TITLE)
    size, lines = fit_text([sf.title], t, (46, 40, 34, 30))
    notes.append(_note("<b>" + "<br>".join(esc(x) for x in lines[0]) + "</b>", t.x, t.y + 10, size))
    if sf.left_out is not None:
        c = Box(*CHARTS)
        shapes.append(
            dict(
                type="rect",
                xref="paper",
                yref="paper",
                x0=c.x / WIDTH,
                x1=(c.x + c.w) / WIDTH,
                y0=1 - (c.y + c.h) / HEIGHT,
                y1=1 - c.y / HEIGHT,
                fillcolor="#f1f3f4",
                line=dict(color="#9aa0a6", width=2, dash="dash"),
            )
        )
        size, lines = fit_text([sf.left_out], Box(c.x + 60, c.y, c.w - 120, c.h), (34, 30, 26, 22))
        text = "<br>".join(esc(x) for x in lines[0])
        notes.append(
            _note(text, c.x + c.w / 2, c.y + c.h / 2, size, xanchor="center", yanchor="middle", align="center")
        )
    w = words_box(bool(sf.views) or sf.left_out is not None)
    size, paras = fit_text(list(sf.sentences), w, (32, 30, 28, 26, 24, 22, 20, 18, 16))
    text = "<br><br>".join("<br>".join(esc(x) for x in p) for p in paras)
    notes.append(_note(text, w.x, w.y, size))
    if sf.settings:
        box = Box(*NUMBERS)
        size, lines = fit_text([" · ".join(sf.settings)], box, (22, 20, 18))
        notes.append(_note("<br>".join(esc(x) for x in lines[0][:2]), box.x, box.y, size, color=GREY))
    notes.append(_note(esc(shown_link(sf.link)), TITLE[0], FOOTER_Y, LINK_FONT, yanchor="middle", color=LINK_BLUE))
    notes.append(
        _note(
            f"{sf.number} / {sf.total}", WIDTH - TITLE[0], FOOTER_Y, 22, xanchor="right", yanchor="middle", color=GREY
        )
    )
    fig = go.Figure()
    fig.update_layout(
        width=WIDTH,
        height=HEIGHT,
        margin=dict(l=0, r=0, t=0, b=0),
        annotations=notes,
        shapes=shapes,
        xaxis=dict(visible=False),
        yaxis=dict(visible=False),
        paper_bgcolor="white",
        plot_bgcolor="white",
    )
    if family(lang):
        fig.update_layout(font_family=family(lang))
    return fig


def link_rect(sf: SlideFile) -> tuple[float, float, float, float]:
    """Where the slide's link is written, in PDF points (the clickable area)."""
    width = 1.1 * text_width(shown_link(sf.link), LINK_FONT)
    return Box(TITLE[0] - 4, FOOTER_Y - LINK_FONT, width + 8, 2 * LINK_FONT).pdf_rect()


def add_slide(writer, sf: SlideFile, renders: Renders, opts: Options) -> None:
    """Slide ``sf`` as the next page of ``writer``: its frame with its charts merged in, each scaled into its cell."""
    from pypdf import PdfReader, Transformation

    sf, charts = rendered(sf, renders, "pdf", opts)
    key = ("frame", sf.number, sf.left_out)
    drawn = renders.cached(key, lambda: render_image(frame(sf, opts.lang), "pdf", WIDTH, HEIGHT, 1.0))
    page = writer.add_page(PdfReader(io.BytesIO(drawn)).pages[0])
    for data, cell in charts:
        s = cell.w / WIDTH  # the chart's page is the whole slide's size
        x0, y0, _, _ = cell.pdf_rect()
        page.merge_transformed_page(
            PdfReader(io.BytesIO(data)).pages[0], Transformation().scale(s, s).translate(x0, y0)
        )


def _handout(slides, per: int):
    """A writer of A4 pages holding ``per`` of the pages of ``slides`` (a writer) each (2: portrait, stacked; 4:
    landscape, two by two), and where each slide went: ``(page, scale, x, y)``."""
    from pypdf import PdfWriter, Transformation

    pw, ph = A4 if per == 2 else A4[::-1]
    cols, rows = (1, 2) if per == 2 else (2, 2)
    gap = 28
    s = min((pw - gap * (cols + 1)) / cols / (WIDTH * PT), (ph - gap * (rows + 1)) / rows / (HEIGHT * PT))
    w, h = WIDTH * PT * s, HEIGHT * PT * s
    out, placed = PdfWriter(), []
    for k, page in enumerate(slides.pages):
        sheet = out.add_blank_page(width=pw, height=ph) if k % per == 0 else out.pages[-1]
        col, row = (k % per) % cols, (k % per) // cols
        x = (pw - cols * w - (cols - 1) * gap) / 2 + col * (w + gap)
        y = ph - (ph - rows * h - (rows - 1) * gap) / 2 - (row + 1) * h - row * gap
        sheet.merge_transformed_page(page, Transformation().scale(s, s).translate(x, y))
        placed.append((len(out.pages) - 1, s, x, y))
    return out, placed


def to_pdf(deck: DeckFile, renders: Renders, tick: Callable[[], None] = lambda: None) -> bytes:
    """The deck as PDF bytes: a page per slide, or ``deck.opts.handout`` slides an A4 page; each slide's link
    clickable."""
    from pypdf import PdfWriter
    from pypdf.annotations import Link

    writer = PdfWriter()
    for sf in deck.slides:
        add_slide(writer, sf, renders, deck.opts)
        tick()
    placed = [(i, 1.0, 0.0, 0.0) for i in range(len(deck.slides))]
    if deck.opts.handout:
        writer, placed = _handout(writer, deck.opts.handout)
    for sf, (k, s, x, y) in zip(deck.slides, placed, strict=True):
        x0, y0, x1, y1 = link_rect(sf)
        rect = (x + s * x0, y + s * y0, x + s * x1, y + s * y1)
        writer.add_annotation(k, Link(rect=rect, url=sf.link, border=[0, 0, 0]))
    writer.add_metadata({"/Title": deck.title, "/Creator": "Attention Explorer"})
    buf = io.BytesIO()
    writer.write(buf)
    return buf.getvalue()
