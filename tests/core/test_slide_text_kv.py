"""The KV sharing, KV cache and MLA figures on a slide: every text at 20 px or more, labels planned to keep apart
at the sizes the slides and the page's main column give them, titles broken for half a slide with the margin their
lines take (issue 48: what a lecturer projected)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from attn_core.figures import Style
from attn_core.figures import kv as fig_kv
from attn_core.figures import memory as mf
from attn_core.figures import mla as mfig
from attn_core.views import kv_cache as kc
from attn_core.views import kv_sharing as kvs
from attn_core.views import mla as mv

SLIDE, PAGE = Style(present=True), Style()


def spec(fig) -> dict:
    return json.loads(fig.to_json())


def sharing_views(view: str, style: Style) -> list[dict]:
    p = kvs.with_values(kvs.Params(), kv_view=view)
    return [spec(v.figure) for v in kvs.views(p, style, view)]


@pytest.mark.parametrize("view", ["diagram", "maps", "costs", "mapping", "convert"])
def test_kv_sharing_titles_on_a_slide_have_no_18_px_subtitle_and_push_their_own_margin(view):
    """A ``<sup>`` line is 0.7 of a 26 px title: 18.2 px on a slide. Titles are broken for the slide and sit just
    over the plot (over the panels' names), pushing the top margin themselves: plotly keeps a push within the
    chart's height, and a centred title ran into the names under it."""
    for s in sharing_views(view, SLIDE):
        title = s["layout"]["title"]
        assert "<sup>" not in title["text"] and "<sub>" not in title["text"], title["text"]
        if title.get("automargin"):
            assert title["yref"] == "paper" and title["yanchor"] == "bottom" and s["layout"]["margin"]["t"] <= 20
        else:  # repeat_kv, a plain figure: a fixed margin for its three lines
            assert s["layout"]["margin"]["t"] >= 1.3 * (26 + 26 + 20), title
    for s in sharing_views(view, PAGE):  # the page keeps its smaller subtitle line
        assert "font-size" not in s["layout"]["title"]["text"] and not s["layout"]["title"].get("automargin")


def test_kv_sharing_maps_key_labels_keep_apart_in_the_pages_main_column():
    """The maps' key labels (rotated by 60°) ran into each other by 2 px at 1280x720 beside the controls: the plan
    assumed 900 px of maps. Planned for :data:`~attn_core.figures.kv.MAPS_PX`, neighbours are a 13 px label's glyph
    height / sin 60° apart."""
    s = sharing_views("maps", PAGE)[0]
    lay = fig_kv.maps_layout(4, 2, (11, 11), 16, PAGE)
    cell = fig_kv.MAPS_PX / lay.total_cols  # px a cell is across, at most
    ticks = s["layout"]["xaxis"]["tickvals"][: len(s["layout"]["xaxis"]["tickvals"]) // (lay.per_line + 2)]
    assert min(np.diff(ticks)) * cell >= 13 / np.sin(np.radians(60)) + 3


def test_kv_sharing_mapping_on_a_slide_is_one_part_a_slide():
    """The mapping view's four charts, code and sentences were squeezed onto one slide (59 texts overlapping): on
    slides the two diagrams, then the mismatch, then one head's maps."""
    p = kvs.with_values(kvs.Params(), kv_view="mapping")
    parts = [[v.name.split("_h")[0] for v in kvs.slide_shown(p, SLIDE, {"slide": i}).views] for i in (1, 2, 3)]
    assert parts == [["mapping_contiguous", "mapping_interleaved"], ["mapping_mismatch_contiguous"], ["mapping"]]
    pair = spec(kvs.slide_shown(p, SLIDE, {"slide": 3}).views[0].figure)
    names = [a for a in pair["layout"]["annotations"] if a["text"].startswith("<b>")]
    assert [a["text"] for a in names] == ["<b>as trained: KV 0</b>", "<b>as run: KV 1</b>"]  # a line each, 20 px
    every = fig_kv.pair_label_every(11, SLIDE)
    assert every == 2 and "one token in 2 labelled" in pair["layout"]["title"]["text"]
    assert len(pair["layout"]["yaxis"]["tickvals"]) == 6


def test_kv_cache_decode_charts_on_a_slide_break_their_titles_for_half_a_slide():
    """The plan's title ran out of its half of the slide ("... (Run deco"), and into its y-axis title."""
    p = kc.Params()
    for style, lines in ((SLIDE, 2), (PAGE, 1)):
        s = spec(kc.decode_plan_view(kc.decode_spec(p), style).figure)
        text = s["layout"]["title"]["text"]
        assert text.count("<br>") + 1 == lines and max(map(len, text.split("<br>"))) <= (34 if lines == 2 else 60)
        assert s["layout"]["margin"]["t"] >= 1.3 * 26 * lines + 20


def test_kv_cache_memory_chart_on_a_phone_has_its_own_layout():
    """On a phone: a tick every 16x (11 ticks of 4x ran into each other at 358 px), the short axis title, and the
    legend pinned under the axis with as many rows as its items take there."""
    p = kc.Params()
    calc = kc.calculator(p)
    phone = spec(kc.memory_view(p, calc, PAGE, narrow=True).figure)["layout"]
    wide = spec(kc.memory_view(p, calc, PAGE).figure)["layout"]
    assert phone["xaxis"]["ticktext"] == ["1", "16", "256", "4K", "64K", "1M"] and len(wide["xaxis"]["ticktext"]) == 11
    assert phone["xaxis"]["title"]["text"] == "sequence length S (tokens, log scale)"
    assert phone["legend"]["yref"] == "container" and phone["margin"]["b"] >= 70 + 3 * 30  # 4 items: 3 rows or more
    assert mf.PHONE_PX == 358


def test_the_memory_charts_notes_are_20_px_on_a_slide():
    p = kc.Params()
    calc = kc.calculator(p)
    memory = spec(kc.memory_view(p, calc, SLIDE).figure)["layout"]["annotations"]
    assert all(a["font"]["size"] >= 20 for a in memory), [(a["text"], a["font"]["size"]) for a in memory]


def test_mla_agreement_labels_are_20_px_on_a_slide_and_keep_apart_on_the_page():
    """On a slide the key and query labels were 14 px (36 texts under 20 px); on the page at 1280 px the keys, rotated
    by 60°, ran into each other (22 overlaps): planned for the page's main column beside the controls."""
    res = mv.compare(mv.run_config(mv.Params().config), 12, 0)
    tokens = [f"x{i}" for i in range(12)]
    for style, px in ((SLIDE, mfig.SLIDE_MAP_PX), (PAGE, None)):
        s = spec(mv.agree_views(res, 0, tokens, style)[0].figure)["layout"]
        x, y = s["xaxis"], s["yaxis"]
        if style.present:
            assert x["tickfont"]["size"] == y["tickfont"]["size"] == 20
            assert len(y["tickvals"]) * 20 * 1.2 <= px  # the query labels fit the slide's map height
            note = next(a for a in s["annotations"] if "1 label in" in a["text"])
            assert note["font"]["size"] >= 20
        panel = (mfig._PANELS[0][1] - mfig._PANELS[0][0]) * mfig.AGREE_PX[style.present]
        step = len(tokens) / len(x["tickvals"])
        assert step * panel / len(tokens) >= x["tickfont"]["size"] * mfig.ROTATED_PITCH


def test_mla_cache_bars_label_decades_only():
    """The log axis's 2 and 5 between the decades ran into each other at 15 px on a slide."""
    s = spec(mv.cache_view(mv.Params(view="cache"), SLIDE).figure)["layout"]
    assert s["yaxis"]["dtick"] == 1


def test_mla_cost_charts_on_a_slide_note_the_dotted_line_on_a_line_of_its_own():
    """Half a 1024 px slide each: "Attention FLOPs per decode step (dotted:" was cut at the chart's edge; the legend
    sits inside the plot (under it, three rows took the slide's height)."""
    for v in mv.cost_views(mv.Params(view="cost"), SLIDE):
        s = spec(v.figure)["layout"]
        first, second = s["title"]["text"].split("<br>")
        assert second.startswith("(dotted:") and len(first) <= 34, s["title"]["text"]
        assert 0 <= s["legend"]["y"] <= 1


@pytest.mark.parametrize("key", ["kv.intro", "kvcache.intro", "mla.intro"])
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_intro_of_each_page_is_one_line_at_1280_px(key, lang):
    """The intro is one line of 14 px caption over the page's main column beside the controls (about 780 px at
    1280×720), so the first screen shows the chart; what it said before is in "About this page"."""
    from attn_core.figures.margins import text_width
    from attn_core.i18n import translate

    assert text_width(translate(key, lang), 14) <= 760, translate(key, lang)
    about = key.split(".")[0] + ".about.body"
    assert len(translate(about, lang)) > 2 * len(translate(key, lang))
