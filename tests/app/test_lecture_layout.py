"""AppTest: what the saturation, cost, convolution and training-lab pages put first, and what each slide holds.

A lecturer opening these pages at 1280×720 saw three lines of introduction, then sentences, before any chart (the
cost page's formulas, opened, pushed its charts below the first screen); on slides, the convolution page's three
charts and the cost page's two shared a slide too narrow for their titles and legends. Each page now says in one line
what it shows (the rest in "What this page shows" below), draws its chart before its sentences, and a slide shows
what fits it.
"""

from __future__ import annotations

import json

import pytest

from tests.conftest import no_exception

PAGES = {
    "saturation": "app_pages/saturation.py",
    "complexity": "app_pages/complexity.py",
    "conv_attention": "app_pages/conv_attention.py",
    "lab": "app_pages/lab.py",
}
PREFIX = {"saturation": "sat", "complexity": "cx", "conv_attention": "conv", "lab": "lab"}


def walk(node, out: list | None = None) -> list:
    """The page's elements in the order they are drawn (depth first through its blocks)."""
    out = [] if out is None else out
    kids = getattr(node, "children", None)
    if isinstance(kids, dict) and kids:
        if getattr(node, "type", "") == "expander":
            out.append(node)
        for k in sorted(kids):
            walk(kids[k], out)
    else:
        out.append(node)
    return out


def kinds(at) -> list[str]:
    """``plotly_chart:<key>``, ``expander:<label>``, ``markdown:<text>`` ... in the order drawn."""
    out = []
    for e in walk(at.main):
        if e.type == "plotly_chart":
            out.append("plotly_chart:" + e.proto.id.rsplit("-", 1)[-1])
        elif e.type == "expander":
            out.append("expander:" + e.label)
        elif e.type in ("markdown", "caption", "subheader", "info", "warning"):
            out.append(f"{e.type}:{e.value}")
    return out


def charts(at) -> dict[str, dict]:
    return {c.proto.id.rsplit("-", 1)[-1]: json.loads(c.proto.spec) for c in at.get("plotly_chart")}


def next_slide(at):
    return at.button(key="slide__next").click().run()


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("page", list(PAGES))
def test_each_page_says_what_it_shows_in_one_line_and_the_rest_below(app_test, page, lang):
    """The introduction is one line of 14 px caption in the page's column at 1280 px (about 780 px across); what it
    said before is in the expander "What this page shows"."""
    from attn_core.figures.margins import text_width
    from attn_core.i18n import translate

    at = app_test(PAGES[page], query={"lang": lang})
    no_exception(at)
    intro = translate(f"{PREFIX[page]}.intro", lang)
    assert at.caption[0].value == intro
    assert text_width(intro, 14) <= 700, intro
    about = translate(f"{PREFIX[page]}.about.title", lang)
    assert about in [e.label for e in at.expander]
    assert len(translate(f"{PREFIX[page]}.about.body", lang)) > 2 * len(intro)


def test_the_saturation_page_draws_its_first_chart_before_its_sentences(app_test):
    order = kinds(app_test(PAGES["saturation"]))
    first = order.index("plotly_chart:sat_dist")
    assert order[first - 1].startswith("subheader:1 · ")  # the section's heading, then its chart
    assert not any(k.startswith("markdown:") for k in order[:first]), order[:first]


def test_the_cost_page_draws_its_charts_before_the_formulas(app_test):
    order = kinds(app_test(PAGES["complexity"]))
    formulas = next(i for i, k in enumerate(order) if k.startswith("expander:FLOPs of each stage"))
    assert order.index("plotly_chart:cx_stages") < formulas and order.index("plotly_chart:cx_curve") < formulas


def test_the_cost_slides_give_each_counted_chart_the_slides_width(app_test):
    at = app_test(PAGES["complexity"], query={"present": "1"})
    no_exception(at)
    assert list(charts(at)) == ["cx_stages"] and "of the layer's" in at.info[0].value
    at = next_slide(at)
    no_exception(at)
    assert list(charts(at)) == ["cx_curve"] and not at.info
    assert any("crosses over" in m.value or "past" in m.value for m in at.markdown)


def test_the_prefill_slide_leaves_the_explanation_to_the_page(app_test):
    from attn_core.i18n import translate

    intro = translate("cx.pd_intro", "en")
    slide = app_test(PAGES["complexity"], query={"view": "prefill_decode", "present": "1"})
    no_exception(slide)
    assert intro not in [m.value for m in slide.markdown] and len(charts(slide)) == 1
    page = app_test(PAGES["complexity"], query={"view": "prefill_decode"})
    assert intro in [m.value for m in page.markdown]


def test_the_convolution_line_slides_one_head_then_the_k_heads(app_test):
    at = app_test(PAGES["conv_attention"], query={"present": "1"})
    no_exception(at)
    assert list(charts(at)) == ["conv_score", "conv_window"]
    at = next_slide(at)
    no_exception(at)
    assert list(charts(at)) == ["conv_heads"]
    assert any(m.value.startswith("One head per shift Δ of a 3-tap kernel") for m in at.markdown)
    page = app_test(PAGES["conv_attention"])
    assert list(charts(page)) == ["conv_score", "conv_window", "conv_heads"]  # the page: all three


def test_the_analogy_slides_show_three_rows_each(app_test):
    at = app_test(PAGES["conv_attention"], query={"view": "analogy", "present": "1"})
    no_exception(at)
    rows = [charts(at)["conv_analogy"]["data"][0]["cells"]["values"][0]]
    at = next_slide(at)
    rows.append(charts(at)["conv_analogy"]["data"][0]["cells"]["values"][0])
    assert [len(r) for r in rows] == [3, 3] and rows[0] != rows[1]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_labs_empty_chart_says_what_its_dotted_line_marks(app_test, lang):
    at = app_test(PAGES["lab"], query={"lang": lang})
    no_exception(at)
    (spec,) = charts(at).values()
    assert not spec["data"]  # before a run: the empty axes the curves will fill
    (note,) = spec["layout"]["annotations"]
    assert note["x"] == spec["layout"]["shapes"][0]["x0"] == 20
    assert note["text"] == {"en": "curves compared at step 20", "zh": "第 20 步比较曲线"}[lang]


def test_the_first_saturation_slide_says_one_sentence_under_its_chart(app_test):
    """A deck's saturation slide adds its note above the page's slide: with two sentences under the histograms
    their plot was 70 px tall at 1280×720 and its ticks ran into each other. The slide keeps what the chart
    measured; the page keeps both sentences."""
    slide = kinds(app_test(PAGES["saturation"], query={"present": "1"}))
    after = [k for k in slide[slide.index("plotly_chart:sat_dist") + 1 :] if k.startswith("markdown:")]
    assert len(after) == 1 and after[0].startswith("markdown:Var(q·k) = d_k")
    page = kinds(app_test(PAGES["saturation"]))
    assert any(k.startswith("markdown:Scaling is **on**") for k in page)
