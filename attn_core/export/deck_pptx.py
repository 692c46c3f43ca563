"""A deck as a PowerPoint file (python-pptx): one 16:9 slide per deck slide.

The slide's title is in the title placeholder, each chart a 1920 × 1080 PNG picture in its cell of the chart box
(:mod:`attn_core.export.deck_layout`), the sentences editable text beside it, the link and the slide number at the
bottom; the speaker notes hold the deck's note, the slide's numbers (its settings and the page's own sentences)
and its link. A slide left out holds a placeholder that says why.
"""

from __future__ import annotations

import io
from collections.abc import Callable

from attn_core.export.deck import DeckFile, Options, SlideFile
from attn_core.export.deck_layout import (
    CHARTS,
    FOOTER_Y,
    HEIGHT,
    NUMBERS,
    TITLE,
    WIDTH,
    Box,
    Renders,
    fit_text,
    rendered,
    shown_link,
    words_box,
)

EMU_PER_PX = 12192000 // WIDTH  # a 13.333 × 7.5 in slide: 6350 EMU a px
PT_PER_PX = 0.75
TITLE_ONLY = 5  # the default template's "Title Only" layout
GREY, LINK_BLUE = (0x5F, 0x63, 0x68), (0x1A, 0x5F, 0xB4)


def _emu(box: Box) -> tuple[int, int, int, int]:
    return tuple(round(v * EMU_PER_PX) for v in (box.x, box.y, box.w, box.h))


def _text(slide, box: Box, paragraphs: list[str], size: float, colour: tuple[int, int, int] | None = None):
    """An editable text box of ``paragraphs`` at ``size`` px (word-wrapped, no autofit); its text frame."""
    from pptx.dml.color import RGBColor
    from pptx.util import Pt

    frame = slide.shapes.add_textbox(*_emu(box)).text_frame
    frame.word_wrap = True
    for k, text in enumerate(paragraphs):
        para = frame.paragraphs[0] if k == 0 else frame.add_paragraph()
        run = para.add_run()
        run.text = text
        run.font.size = Pt(size * PT_PER_PX)
        if colour is not None:
            run.font.color.rgb = RGBColor(*colour)
        if k:
            para.space_before = Pt(size * PT_PER_PX * 0.5)
    return frame


def _title(slide, text: str) -> None:
    from pptx.util import Pt

    shape = slide.shapes.title
    shape.left, shape.top, shape.width, shape.height = _emu(Box(*TITLE))
    shape.text = text
    size, _ = fit_text([text], Box(*TITLE), (46, 40, 34, 30))
    for para in shape.text_frame.paragraphs:
        for run in para.runs:
            run.font.size = Pt(size * PT_PER_PX)
            run.font.bold = True


def _footer(slide, sf: SlideFile) -> None:
    """The slide's link (a hyperlink) at the bottom left, its number at the bottom right."""
    frame = _text(slide, Box(TITLE[0], FOOTER_Y - 20, 1500, 40), [shown_link(sf.link)], 20, LINK_BLUE)
    frame.paragraphs[0].runs[0].hyperlink.address = sf.link
    number = _text(slide, Box(WIDTH - TITLE[0] - 200, FOOTER_Y - 20, 200, 40), [f"{sf.number} / {sf.total}"], 22, GREY)
    from pptx.enum.text import PP_ALIGN

    number.paragraphs[0].alignment = PP_ALIGN.RIGHT


def add_slide(prs, sf: SlideFile, renders: Renders, opts: Options) -> None:
    """Deck slide ``sf`` as the next slide of ``prs``."""
    sf, charts = rendered(sf, renders, "png", opts)
    slide = prs.slides.add_slide(prs.slide_layouts[TITLE_ONLY])
    _title(slide, sf.title)
    for png, cell in charts:
        slide.shapes.add_picture(io.BytesIO(png), *_emu(cell))
    if sf.left_out is not None:
        c = Box(*CHARTS)
        _text(slide, Box(c.x + 60, c.y + c.h / 3, c.w - 120, c.h / 3), [sf.left_out], 30, GREY)
    box = words_box(bool(sf.views) or sf.left_out is not None)
    size, _ = fit_text(list(sf.sentences), box, (32, 30, 28, 26, 24, 22, 20, 18, 16))
    if sf.sentences:
        _text(slide, box, list(sf.sentences), size)
    if sf.settings:
        _text(slide, Box(*NUMBERS), [" · ".join(sf.settings)], 20, GREY)
    _footer(slide, sf)
    notes = [sf.note, *sf.numbers, sf.link] if sf.left_out is None else [sf.left_out, sf.note, *sf.numbers, sf.link]
    slide.notes_slide.notes_text_frame.text = "\n".join(n for n in notes if n)


def to_pptx(deck: DeckFile, renders: Renders, tick: Callable[[], None] = lambda: None) -> bytes:
    """The deck as the bytes of a .pptx file."""
    from pptx import Presentation

    prs = Presentation()
    prs.slide_width, prs.slide_height = WIDTH * EMU_PER_PX, HEIGHT * EMU_PER_PX
    prs.core_properties.title = deck.title
    for sf in deck.slides:
        add_slide(prs, sf, renders, deck.opts)
        tick()
    buf = io.BytesIO()
    prs.save(buf)
    return buf.getvalue()
