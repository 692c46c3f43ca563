"""A deck's files show what the app shows for the slide's link: the same charts, number by number.

For a slide, the page opened in slide mode at the slide's link state (AppTest) draws its charts; the deck's files
draw theirs from the same state through the page's view model. The HTML file's charts (its plotly JSON, read back
from the file) and the charts the PDF and the PowerPoint file render (refitted for a slide) hold the page's data
arrays, equal to the bit.
"""

from __future__ import annotations

import json
import re

import numpy as np
import plotly.io as pio
import pytest

from attn_core import decks
from attn_core.export import deck as D
from attn_core.export.deck_html import FIGURES_ID, chart_key
from attn_core.export.deck_layout import chart_cells, fitted
from attn_core.views import page
from tests.conftest import no_exception
from tests.util import arr, chart_specs, decoded

GQA = decks.shipped()["gqa_and_the_kv_cache"]
SCRATCH = decks.shipped()["attention_from_scratch"]
SLIDES = {"kv_sharing_mqa": GQA.slides[2], "heatmaps_step_4": SCRATCH.slides[2], "kv_tensors": GQA.slides[6]}


def html_figures(made: D.DeckFile) -> dict[str, dict]:
    from attn_core.export.deck_files import deck_files

    text = deck_files(made, ["html"])["html"].decode("utf-8")
    blob = re.search(rf'<script type="application/json" id="{FIGURES_ID}">(.*?)</script>', text, re.DOTALL)
    return json.loads(blob.group(1))


def same_data(shown: dict, written: dict) -> None:
    assert len(shown["data"]) == len(written["data"]) > 0
    for a, b in zip(shown["data"], written["data"], strict=True):
        assert a.get("type") == b.get("type")
        for key in ("x", "y", "z", "text", "customdata"):
            if key not in a:
                assert key not in b
                continue
            numeric = isinstance(a[key], dict) or (a[key] and isinstance(a[key][0], (int, float)))
            if numeric:
                np.testing.assert_array_equal(arr(a[key]), arr(b[key]))
            else:
                assert decoded(a[key]) == decoded(b[key])


@pytest.mark.parametrize("which", list(SLIDES))
def test_each_file_draws_the_slide_with_the_pages_numbers(app_test, which):
    s = SLIDES[which]
    made = D.draw(decks.Deck((), (s,)), D.Options())
    sf = made.slides[0]
    assert sf.left_out is None and sf.views
    spec = page(s.page)
    at = app_test(page=spec.script, query={**dict(s.params), "present": "true"})
    no_exception(at)
    shown = chart_specs(at, phone=False)
    assert len(shown) == len(sf.views)
    in_html = html_figures(made)
    for i, (view, cell) in enumerate(zip(sf.views, chart_cells(len(sf.views)), strict=True)):
        same_data(shown[i], in_html[chart_key(sf, i)])  # the HTML file
        rendered = json.loads(pio.to_json(fitted(view, cell, made.opts.style), validate=False))
        same_data(shown[i], rendered)  # what the PDF and the PowerPoint file render
