"""A deck as one offline HTML file: every slide with its interactive charts, plotly.js inlined once.

The file needs nothing but itself: plotly.js (the installed plotly package's ``plotly.min.js``), the deck's
script and style (``assets/deck_html/``) and every chart's plotly JSON are written into it, and nothing in it
loads from another host (its only addresses are the slides' links into the app, which open when clicked).
Previous/Next, the arrow keys and Page Down/Up move between slides; a slide's charts are drawn when it is first
shown.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from pathlib import Path

import plotly.io as pio

from attn_core.export.deck import DeckFile, SlideFile
from attn_core.views import View

ASSETS = Path(__file__).resolve().parents[2] / "assets" / "deck_html"
FIGURES_ID = "deck-figures"


def figure_json(view: View) -> str:
    """A chart's plotly JSON as the file holds it: the page's figure, its data arrays as the page sends them."""
    return pio.to_json(view.figure, validate=False)


def chart_key(sf: SlideFile, i: int) -> str:
    return f"{sf.number}-{i}"


def _section(sf: SlideFile, lang: str) -> str:
    e = html.escape
    n = len(sf.views)
    if sf.left_out is not None:
        charts = f'<div class="charts n1"><div class="left-out">{e(sf.left_out)}</div></div>'
    elif n:
        boxes = "".join(f'<div class="chart" data-key="{chart_key(sf, i)}"></div>' for i in range(n))
        charts = f'<div class="charts {"n" + str(n) if n <= 4 else "many"}">{boxes}</div>'
    else:
        charts = ""
    words = "".join(f"<p>{e(s)}</p>" for s in sf.sentences)
    numbers = " · ".join(e(x) for x in sf.settings)
    return (
        f'<section class="slide" id="slide-{sf.number}" data-slide="{sf.number}" hidden>'
        f"<h1>{e(sf.title)}</h1>"
        f'<div class="body{"" if charts else " wide"}">{charts}<div class="words">{words}</div></div>'
        + (f'<p class="numbers">{numbers}</p>' if numbers else "")
        + f'<footer><a class="slide-link" href="{e(sf.link)}">{e(sf.link)}</a>'
        f'<span class="num">{sf.number} / {sf.total}</span></footer></section>'
    )


def _script_text(text: str) -> str:
    """Text safe inside a ``<script>`` element: no ``</script`` that would close it (JSON and JavaScript read
    ``<\\/`` as ``</``)."""
    return re.sub(r"</(script)", r"<\\/\1", text, flags=re.IGNORECASE)


def to_html(deck: DeckFile, tick: Callable[[], None] = lambda: None) -> bytes:
    """The deck as one self-contained HTML file (UTF-8 bytes)."""
    from plotly.offline import get_plotlyjs

    opts, e = deck.opts, html.escape
    sections, charts = [], []
    for sf in deck.slides:
        sections.append(_section(sf, opts.lang))
        charts += [f'"{chart_key(sf, i)}":{figure_json(v)}' for i, v in enumerate(sf.views)]
        tick()
    css = (ASSETS / "deck.css").read_text(encoding="utf-8")
    js = (ASSETS / "deck.js").read_text(encoding="utf-8")
    nav = (
        f'<nav id="deck-nav"><button id="deck-prev" type="button">{e(opts.t("ui.prev"))}</button>'
        f'<span id="deck-where" data-of="{e(opts.t("deck.slide_of", i="{i}", n="{n}"))}"></span>'
        f'<button id="deck-next" type="button">{e(opts.t("ui.next"))}</button></nav>'
    )
    blob = ("{" + ",".join(charts) + "}").replace("</", "<\\/")  # JSON reads an escaped slash as a slash
    page = (
        f'<!DOCTYPE html>\n<html lang="{e(opts.lang)}">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{e(deck.title)}</title>\n<style>\n{css}</style>\n</head>\n<body>\n"
        f'<main id="deck">{"".join(sections)}</main>\n{nav}\n'
        f'<script type="application/json" id="{FIGURES_ID}">{blob}</script>\n'
        f"<script>{_script_text(get_plotlyjs())}</script>\n<script>\n{js}</script>\n</body>\n</html>\n"
    )
    return page.encode("utf-8")
