"""attn_core.figures.kv: the KV-sharing figures say what the engine computed."""

import json

import numpy as np
import pytest

from attn_core.attention.gqa import kv_group_of
from attn_core.attention.maps import compute_attention_maps
from attn_core.attention.sources import SeededLayer
from attn_core.attention.tokens import tokenize
from attn_core.figures import Style, group_color
from attn_core.figures import kv as fig_kv
from attn_core.kv import convert
from attn_core.kv.convert import kv_map
from attn_core.runtime.config import AttentionConfig, ConfigError
from attn_core.runtime.units import binary_unit
from attn_core.views import kv_sharing as kvs
from tests.util import arr

TOKS = tokenize("the cat sat on the mat")


def spec(fig) -> dict:
    return json.loads(fig.to_json())


@pytest.mark.parametrize("mapping", ["contiguous", "interleaved"])
@pytest.mark.parametrize("h,kv", [(8, 2), (12, 4), (6, 6), (5, 1)])
def test_diagram_links_nodes_and_colours(mapping, h, kv):
    s = spec(fig_kv.kv_diagram(kv_map(h, kv, mapping), kv))
    kv_nodes = next(t for t in s["data"] if t["name"] == "KV heads")
    q_nodes = next(t for t in s["data"] if t["name"] == "query heads")
    xs_kv = list(arr(kv_nodes["x"]))
    assert xs_kv == fig_kv.kv_positions(h, kv)  # KV heads sit at the same places for both mappings
    owner = {}
    for t in s["data"]:
        if isinstance(t.get("meta"), dict):
            g = t["meta"]["kv_head"]
            assert t["line"]["color"] == group_color(g)
            for i in range(0, len(t["x"]), 3):
                owner[t["x"][i]] = g
                assert t["x"][i + 1] == pytest.approx(xs_kv[g])
    expect = {q: (kv_group_of(q, h, kv) if mapping == "contiguous" else q % kv) for q in range(h)}
    assert owner == expect
    assert q_nodes["marker"]["color"] == [group_color(expect[q]) for q in range(h)]
    assert len(q_nodes["text"]) == h and len(kv_nodes["text"]) == kv


def test_repeat_kv_blocks_state_shapes_and_copies():
    s = spec(fig_kv.repeat_kv_figure(12, 3, seq_len=7, head_dim=32, batch=2))
    rects = [sh for sh in s["layout"]["shapes"] if sh["type"] == "rect"]
    lines = [sh for sh in s["layout"]["shapes"] if sh["type"] == "line"]
    assert len(rects) == 3 + 12 and len(lines) == 12
    texts = [a["text"] for a in s["layout"]["annotations"]]
    assert (
        "cache [B, H_kv, T, D]<br>= [2, 3, 7, 32]" in texts and "repeat_kv → [B, H, T, D]<br>= [2, 12, 7, 32]" in texts
    )
    assert "head 5 ← KV 1" in texts and "<b>× 4</b>" in texts
    mha = spec(fig_kv.repeat_kv_figure(4, 4, 7, 8))
    assert "n_rep = 1: no copy" in [a["text"] for a in mha["layout"]["annotations"]]
    with pytest.raises(ConfigError):
        fig_kv.repeat_kv_figure(6, 4, 7, 8)


def test_grouped_maps_pool_long_inputs_and_cut_dimensions():
    m = compute_attention_maps(AttentionConfig(n_heads=4, n_kv_heads=2, head_dim=80), [f"t{i}" for i in range(120)])
    fig = fig_kv.grouped_maps_figure(m.weights, m.k, m.v, list(m.tokens_q), list(m.tokens_k), max_cells=40)
    s = spec(fig)
    title = s["layout"]["title"]["text"]
    assert "showing 40×40 blocks (max) of 120×120" in title and "of 80 dimensions" in title
    z = arr(s["data"][0]["z"])
    assert np.nanmax(z) <= 1 and np.nanmin(z) >= 0
    assert s["layout"]["coloraxis"]["cmin"] == 0 and s["layout"]["coloraxis"]["cmax"] == 1
    c2 = s["layout"]["coloraxis2"]
    assert c2["cmin"] == -c2["cmax"] and c2["cmid"] == 0
    kv = arr(s["data"][1]["z"])
    assert np.nanmax(np.abs(kv)) == pytest.approx(c2["cmax"], rel=1e-5)
    # pooled weights are block maxima of the true weights
    assert np.nanmax(z) == pytest.approx(float(m.weights.max()), rel=1e-6)


def test_styles_translate_and_grow_for_a_projector():
    big = spec(fig_kv.kv_diagram(kv_map(8, 2), 2, style=Style(present=True, lang="zh")))
    assert big["layout"]["font"]["size"] >= 20 and big["layout"]["title"]["font"]["size"] >= 20
    assert big["layout"]["title"]["text"].startswith("GQA：<br>8 个查询头")  # half a slide: broken after the colon
    page = spec(fig_kv.kv_diagram(kv_map(8, 2), 2, style=Style(lang="zh")))
    assert page["layout"]["title"]["text"].startswith("GQA：8 个查询头")
    assert big["layout"]["yaxis"]["ticktext"] == ["查询头（8）", "KV 头（2）"]
    assert big["layout"]["yaxis"]["tickfont"]["size"] >= 20


def test_kv_bytes_chart_uses_binary_units_and_exact_hover():
    s = spec(fig_kv.kv_bytes_figure([1, 2, 4, 8], [512, 1024, 2048, 4096], 8, 2, binary_unit(4096)))
    bar = s["data"][0]
    assert s["layout"]["yaxis"]["title"]["text"] == "bytes per token per layer (KiB)"
    assert list(arr(bar["y"])) == [0.5, 1, 2, 4] and list(arr(bar["customdata"])) == [512, 1024, 2048, 4096]
    assert bar["x"] == ["1 · MQA", "2 · GQA", "4 · GQA", "8 · MHA"]
    mib = spec(fig_kv.kv_bytes_figure([1, 2], [3 * 2**20, 6 * 2**20], 2, 1, binary_unit(6 * 2**20)))
    assert list(arr(mib["data"][0]["y"])) == [3, 6] and "(MiB)" in mib["layout"]["yaxis"]["title"]["text"]


def test_conversion_chart_one_line_per_method_and_panel():
    rel = {"mean": np.array([0.5, 0.1, 0.0]), "first": np.array([0.7, 0.2, 0.0]), "random": np.array([1, 1, 1.0])}
    kl = {k: v / 10 for k, v in rel.items()}
    s = spec(fig_kv.conversion_figure((1, 2, 4), rel, kl, 4, current=2))
    assert len(s["data"]) == 6
    by = {(t["legendgroup"], t["xaxis"]): arr(t["y"]) for t in s["data"]}
    np.testing.assert_allclose(by[("first", "x")], rel["first"])
    np.testing.assert_allclose(by[("random", "x2")], kl["random"])
    assert sum(1 for sh in s["layout"]["shapes"] if sh["type"] == "rect") == 2  # current n_kv shaded in both panels


# ---------------------------------------------------------------- issue 12: one head is "1 head", not "1 heads"
def test_count_phrases_have_both_forms_in_both_catalogs():
    from attn_core.i18n import catalog, count

    for lang in ("en", "zh"):
        nouns = {k.split(".")[1] for k in catalog(lang) if k.startswith("count.")}
        assert {"query_head", "kv_head", "head", "base_head", "token", "key"} <= nouns
        for noun in nouns:
            assert f"count.{noun}.one" in catalog(lang) and f"count.{noun}.other" in catalog(lang)
    assert count(1, "kv_head") == "1 KV head" and count(2, "kv_head") == "2 KV heads"
    assert count(1, "query_head", "zh") == "1 个查询头"


def test_titles_with_one_head_are_singular():
    one = spec(fig_kv.kv_diagram(kv_map(1, 1), 1))["layout"]["title"]["text"]
    assert one.startswith("MHA: 1 query head → 1 KV head (n_rep = 1)")
    mqa = spec(fig_kv.kv_diagram(kv_map(8, 1), 1))["layout"]["title"]["text"]
    assert mqa.startswith("MQA: 8 query heads → 1 KV head (n_rep = 8)")
    zeros = {m: np.zeros(1) for m in convert.METHODS}
    conv = spec(fig_kv.conversion_figure([1], zeros, zeros, 1))["layout"]["title"]["text"]
    assert conv.startswith("MHA with 1 head, converted to each n_kv_heads that divides 1")
    layer = SeededLayer(1, 1, 8, tuple(TOKS), d_model=32)
    maps = spec(kvs.maps_view(kvs.group_maps(layer), layer, Style()).figure)["layout"]["title"]["text"]
    assert maps.startswith("Attention weights of 1 query head, one row per KV head")


@pytest.mark.parametrize("tokens,n_heads,n_kv", [(11, 8, 2), (64, 32, 8), (11, 64, 8), (2, 4, 1)])
def test_on_a_slide_the_maps_are_sized_for_its_height(tokens, n_heads, n_kv):
    """A slide squeezes a chart to the screen, so the maps are planned for SLIDE_MAPS_PX of height: planned for a
    page's width they were squeezed to 5 px cells under 20 px labels that ran into each other."""
    side, n_rep = (tokens, tokens), n_heads // n_kv
    slide = fig_kv.maps_layout(n_rep, min(n_kv, 2), side, 16, Style(present=True))
    page = fig_kv.maps_layout(n_rep, min(n_kv, 2), side, 16, Style())
    assert slide.height * slide.cell_px <= fig_kv.SLIDE_MAPS_PX or slide.cell_px == 4  # 4 px: the least cell
    assert slide.cell_px <= page.cell_px and slide.dd <= page.dd
    assert slide.gap_y * slide.cell_px >= Style(present=True).font  # room for the panels' names


def test_repeat_kv_fits_half_a_slide():
    """At 1024x768 the diagram and repeat_kv share the slide: titles broken after the colon (they ran past the
    edge), the two shapes on two short lines each (they ran into each other, and three lines into the title); every text at 20 px or more (the
    copies' labels were 16 px, the subtitle a 18 px <sup>), the copies named by their head alone (the line and the
    colour say which KV head), so they fit the x range."""
    slide = spec(fig_kv.repeat_kv_figure(8, 2, 11, 16, style=Style(present=True)))
    page = spec(fig_kv.repeat_kv_figure(8, 2, 11, 16))
    title = slide["layout"]["title"]["text"]
    assert title.startswith("repeat_kv:<br>[B, H_kv, T, D] → [B, H, T, D]<br>")
    assert "<sup>" not in title and "font-size:20px" in title
    texts = [a["text"] for a in slide["layout"]["annotations"]]
    assert "cache<br>[1, 2, 11, 16]" in texts and "repeat_kv →<br>[1, 8, 11, 16]" in texts  # the title has the letters
    assert [t for t in texts if t.startswith("head")] == [f"head {h}" for h in range(8)]
    assert all(a["font"]["size"] >= 20 for a in slide["layout"]["annotations"])
    assert "head 7 ← KV 1" in [a["text"] for a in page["layout"]["annotations"]]
    assert "cache [B, H_kv, T, D]<br>= [1, 2, 11, 16]" in [a["text"] for a in page["layout"]["annotations"]]


@pytest.mark.parametrize("n_heads", [16, 32, 64])
def test_repeat_kv_on_a_slide_labels_as_many_copies_as_20_px_rows_hold(n_heads):
    """Many heads on a slide: every k-th copy labelled (the subtitle says so), so that 20 px labels keep apart on
    the rows a 1280x720 slide leaves."""
    s = spec(fig_kv.repeat_kv_figure(n_heads, 4, 11, 16, style=Style(present=True)))
    k = fig_kv.repeat_label_every(n_heads, Style(present=True))
    assert k > 1 and f"one label every {k} copies" in s["layout"]["title"]["text"]
    rows = sorted(a["y"] for a in s["layout"]["annotations"] if a["text"].startswith("head"))
    assert rows == [h + 0.5 for h in range(0, n_heads, k)]
    row_px = fig_kv.SLIDE_REPEAT_PX / (n_heads + 3.1)
    assert min(b - a for a, b in zip(rows, rows[1:], strict=False)) * row_px >= 22


@pytest.mark.parametrize("style", [Style(), Style(present=True)])
def test_repeat_kv_of_mha_says_no_copy_under_the_blocks_not_over_them(style):
    """n_kv_heads = n_heads: the note "n_rep = 1: no copy" sat between the blocks at mid height, over the straight
    lines and the labels of KV 3 and KV 4; it is under the last row now, inside the y range."""
    s = spec(fig_kv.repeat_kv_figure(8, 8, 11, 16, style=style))
    note = next(a for a in s["layout"]["annotations"] if "no copy" in a["text"])
    assert note["text"] == "n_rep = 1: no copy"
    assert note["y"] > 8 and note["yanchor"] == "top"
    low, high = sorted(s["layout"]["yaxis"]["range"])
    assert high >= note["y"] + 1
