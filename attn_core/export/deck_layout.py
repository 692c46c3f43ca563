"""Where things go on a deck's 16:9 slide (the PDF's pages and the PowerPoint slides share it), and its charts as
the files draw them: refitted for a 1920 × 1080 slide, rendered once per export as PDF (vector) and PNG.

A slide is laid out in CSS pixels of a 1920 × 1080 page: the title across the top, the charts in a 16:9 box on
the left, the sentences in a column on the right (across the whole width when the slide has no chart), the
slide's settings under the charts, its link and its number at the bottom.
"""

from __future__ import annotations

import dataclasses
import html
import io
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field

import plotly.graph_objects as go

from attn_core import figures
from attn_core.export.deck import Options, SlideFile
from attn_core.figures.margins import text_width
from attn_core.figures.slides import ExportPreset, fit_figure
from attn_core.render import RenderError, render_image, still
from attn_core.views import View

WIDTH, HEIGHT = 1920, 1080  # px of a slide; a PDF page of 1440 × 810 pt (0.75 pt a px)
PT = 0.75
MARGIN = 48
TITLE = (MARGIN, 30, WIDTH - 2 * MARGIN, 120)  # x, y, width, height
CHARTS = (MARGIN, 160, 1296, 729)  # 16:9
WORDS = (1392, 160, WIDTH - 1392 - MARGIN, 729)
WORDS_WIDE = (MARGIN, 160, WIDTH - 2 * MARGIN, 729)  # a slide without charts
NUMBERS = (MARGIN, 905, WIDTH - 2 * MARGIN, 80)
FOOTER_Y = 1035
GAP = 24  # px between charts
SLIDE_FONT = 28  # px of a chart's type when it fills the chart box (scaled to 0.675 of it: 19 px on the slide)
MIN_FONT = 18  # px a chart's type keeps on the slide when charts share the box
MAX_VECTOR_BYTES = 8_000_000  # a chart's PDF larger than this goes in as a 1920 px picture instead
# Chinese: Latin letters and digits as plotly draws them, CJK characters in their Simplified Chinese forms
CJK_FAMILY = "Open Sans, verdana, arial, Noto Sans CJK SC, sans-serif"
LINK_CHARS = 110  # characters of a link written out in full; a longer one is cut (the whole link stays clickable)


@dataclass(frozen=True)
class Box:
    x: float
    y: float
    w: float
    h: float

    def pdf_rect(self) -> tuple[float, float, float, float]:
        """The box in PDF points (origin at the bottom left): ``(x0, y0, x1, y1)``."""
        return (self.x * PT, (HEIGHT - self.y - self.h) * PT, (self.x + self.w) * PT, (HEIGHT - self.y) * PT)


def chart_cells(n: int) -> list[Box]:
    """Boxes for ``n`` charts in :data:`CHARTS`: one fills it, more share it in a grid, each 16:9."""
    if n <= 0:
        return []
    x, y, w, h = CHARTS
    cols = 1 if n == 1 else 2 if n <= 4 else 3
    rows = math.ceil(n / cols)
    cw = min((w - GAP * (cols - 1)) / cols, (h - GAP * (rows - 1)) / rows * 16 / 9)
    ch = cw * 9 / 16
    x0 = x + (w - (cw * cols + GAP * (cols - 1))) / 2
    y0 = y + (h - (ch * rows + GAP * (rows - 1))) / 2
    return [Box(x0 + (i % cols) * (cw + GAP), y0 + (i // cols) * (ch + GAP), cw, ch) for i in range(n)]


def words_box(has_charts: bool) -> Box:
    return Box(*(WORDS if has_charts else WORDS_WIDE))


def chart_font(cell: Box) -> int:
    """The type size a chart is laid out with at 1920 px, so that scaled into ``cell`` it reads at least
    :data:`MIN_FONT` px on the slide."""
    return max(SLIDE_FONT, math.ceil(MIN_FONT * WIDTH / cell.w))


def family(lang: str) -> str | None:
    return CJK_FAMILY if lang == "zh" else None


def fitted(view: View, cell: Box, style: figures.Style) -> go.Figure:
    """``view``'s chart as a file draws it in ``cell``: its first state (no animation), laid out for a 1920 × 1080
    slide (:func:`~attn_core.figures.slides.fit_figure`), the data arrays the page's own."""
    preset = ExportPreset("deck", WIDTH, HEIGHT, chart_font(cell), 1.0)
    fig = fit_figure(still(view.figure), preset, style)
    if family(style.lang):
        fig.update_layout(font_family=family(style.lang))
    return fig


# ---------------------------------------------------------------- text
_CJK_CHARS = "\u2e80-\u9fff\uf900-\ufaff\uff00-\uffef\u3000-\u303f"  # CJK, its punctuation, full-width forms
_CJK = re.compile(f"[{_CJK_CHARS}]")
_NO_LINE_START = "，。、；：？！）》」』】,.;:?!)"  # punctuation that stays at the end of the line before
_CJK_OR_RUN = re.compile(f"[{_CJK_CHARS}]|[^{_CJK_CHARS}]+")


def _tokens(text: str) -> list[str]:
    """Words (with their following space) and single CJK characters: where a line may break."""
    out: list[str] = []
    for word in re.findall(r"\S+\s*", text):
        if _CJK.search(word):
            out.extend(_CJK_OR_RUN.findall(word))
        else:
            out.append(word)
    return out


def wrap(text: str, font: float, width: float) -> list[str]:
    """``text`` broken into lines no wider than ``width`` px at ``font`` px (between words; anywhere in CJK)."""
    lines, cur = [], ""
    for tok in _tokens(text):
        if cur and tok[0] not in _NO_LINE_START and 1.08 * text_width((cur + tok).rstrip(), font) > width:
            lines.append(cur.rstrip())
            cur = tok.lstrip()
        else:
            cur += tok
    if cur.strip():
        lines.append(cur.rstrip())
    return lines


def fit_text(paragraphs: list[str], box: Box, sizes: tuple[int, ...]) -> tuple[int, list[list[str]]]:
    """The largest of ``sizes`` at which ``paragraphs`` fit ``box`` (a blank half line between them), and their
    lines at that size (the smallest size when none fits)."""
    for size in sizes:
        lines = [wrap(p, size, box.w) for p in paragraphs]
        if line_height(size) * (sum(map(len, lines)) + 0.5 * (len(lines) - 1)) <= box.h:
            return size, lines
    return sizes[-1], [wrap(p, sizes[-1], box.w) for p in paragraphs]


def line_height(size: float) -> float:
    return 1.35 * size


def shown_link(link: str) -> str:
    return link if len(link) <= LINK_CHARS else link[: LINK_CHARS - 1] + "…"


def esc(text: str) -> str:
    """Text for a plotly annotation (its HTML subset): ``<``, ``>`` and ``&`` as entities."""
    return html.escape(text, quote=False)


# ---------------------------------------------------------------- the charts, rendered once per export
@dataclass
class Renders:
    """Each chart of a deck rendered once, as PDF and PNG, on the process's warm renderer; ``tick`` is told after
    each render (progress)."""

    style: figures.Style
    tick: Callable[[], None] = lambda: None
    _done: dict[tuple, bytes] = field(default_factory=dict)

    def cached(self, key: tuple, make: Callable[[], bytes]) -> bytes:
        """What ``make`` renders, made once per ``key`` (a handout after the slides renders nothing again)."""
        if key not in self._done:
            self._done[key] = make()
            self.tick()
        return self._done[key]

    def get(self, slide: int, i: int, view: View, cell: Box, fmt: str) -> bytes:
        """Chart ``i`` of slide ``slide`` drawn into ``cell`` as ``pdf`` (vector, or a 1920 px picture where the
        chart draws with WebGL or its PDF would pass :data:`MAX_VECTOR_BYTES`) or ``png`` (1920 × 1080)."""
        if fmt == "png":
            return self.cached(
                (slide, i, fmt), lambda: render_image(fitted(view, cell, self.style), "png", WIDTH, HEIGHT, 1.0)
            )
        png = lambda: self.get(slide, i, view, cell, "png")  # noqa: E731
        return self.cached((slide, i, fmt), lambda: _vector_or_picture(fitted(view, cell, self.style), png))


def rendered(sf: SlideFile, renders: Renders, fmt: str, opts: Options) -> tuple[SlideFile, list[tuple[bytes, Box]]]:
    """Slide ``sf``'s charts rendered as ``fmt`` with their cells; a chart the renderer fails on leaves the slide
    out (its placeholder says why), the other slides go on."""
    cells = chart_cells(len(sf.views))
    try:
        pairs = enumerate(zip(sf.views, cells, strict=True))
        return sf, [(renders.get(sf.number, i, v, c, fmt), c) for i, (v, c) in pairs]
    except RenderError as exc:
        why = opts.t("deckfile.left_out", i=sf.number, why=str(exc))
        return dataclasses.replace(sf, views=(), left_out=why), []


def _vector_or_picture(fig: go.Figure, png: Callable[[], bytes]) -> bytes:
    raster = any(str(t.type or "").endswith("gl") for t in fig.data)
    data = b"" if raster else render_image(fig, "pdf", WIDTH, HEIGHT, 1.0)
    if raster or len(data) > MAX_VECTOR_BYTES:
        return picture_pdf(png())
    return data


def picture_pdf(png: bytes) -> bytes:
    """A one-page PDF of a 1920 × 1080 picture, the size of a chart's vector page (1440 × 810 pt)."""
    from PIL import Image

    buf = io.BytesIO()
    with Image.open(io.BytesIO(png)) as im:
        im.convert("RGB").save(buf, "PDF", resolution=im.width / (WIDTH * PT / 72))
    return buf.getvalue()


__all__ = ["Box", "Renders", "chart_cells", "fit_text", "fitted", "rendered", "wrap", "words_box"]
