"""attn_core.fig_kv: the KV-sharing figures say what the engine computed."""

import json

import numpy as np
import pytest

from attn_core import convert, fig_kv
from attn_core.attention import kv_group_of
from attn_core.config import AttentionConfig, ConfigError
from attn_core.figures import Style, group_color
from attn_core.maps import compute_attention_maps
from attn_core.tokens import tokenize
from tests.util import arr

TOKS = tokenize("the cat sat on the mat")


def spec(fig) -> dict:
    return json.loads(fig.to_json())


@pytest.mark.parametrize("mapping", ["contiguous", "interleaved"])
@pytest.mark.parametrize("h,kv", [(8, 2), (12, 4), (6, 6), (5, 1)])
def test_diagram_links_nodes_and_colours(mapping, h, kv):
    s = spec(fig_kv.kv_diagram(h, kv, mapping))
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
    assert "n_rep = 1:<br>no copy" in [a["text"] for a in mha["layout"]["annotations"]]
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
    big = spec(fig_kv.kv_diagram(8, 2, style=Style(present=True, lang="zh")))
    assert big["layout"]["font"]["size"] >= 20 and big["layout"]["title"]["font"]["size"] >= 20
    assert big["layout"]["title"]["text"].startswith("GQA：8 个查询头")
    assert big["layout"]["yaxis"]["ticktext"] == ["查询头（8）", "KV 头（2）"]
    assert big["layout"]["yaxis"]["tickfont"]["size"] >= 20


def test_kv_bytes_chart_uses_binary_units_and_exact_hover():
    s = spec(fig_kv.kv_bytes_figure([1, 2, 4, 8], [512, 1024, 2048, 4096], 8, 2))
    bar = s["data"][0]
    assert s["layout"]["yaxis"]["title"]["text"] == "bytes per token per layer (KiB)"
    assert list(arr(bar["y"])) == [0.5, 1, 2, 4] and list(arr(bar["customdata"])) == [512, 1024, 2048, 4096]
    assert bar["x"] == ["1 · MQA", "2 · GQA", "4 · GQA", "8 · MHA"]
    mib = spec(fig_kv.kv_bytes_figure([1, 2], [3 * 2**20, 6 * 2**20], 2, 1))
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


def _same_figure_data(new: dict, old: dict) -> None:
    """The grouped-maps figures agree: same panels and labels, z equal within float32 rounding (NaN where NaN)."""
    assert [a["text"] for a in new["layout"]["annotations"]] == [a["text"] for a in old["layout"]["annotations"]]
    assert new["layout"]["title"]["text"] == old["layout"]["title"]["text"]
    assert new["layout"]["xaxis"]["ticktext"] == old["layout"]["xaxis"]["ticktext"]
    for t_new, t_old in zip(new["data"], old["data"], strict=True):
        z_new = arr(t_new["z"])
        z_old = arr(t_old["z"])
        x0 = int(t_new.get("x0", 0)) - int(t_old.get("x0", 0))
        z_old = z_old[:, x0 : x0 + z_new.shape[1]]
        np.testing.assert_array_equal(np.isnan(z_new), np.isnan(z_old))
        np.testing.assert_allclose(z_new, z_old, atol=1e-6, equal_nan=True)


@pytest.mark.parametrize("h,kv,t", [(8, 2, 11), (4, 4, 30), (6, 3, 120)])
def test_pooled_maps_view_equals_the_exact_figure(h, kv, t):
    # The maps view computes the maps by chunks (longmaps), pooled as they are made; it draws what the
    # exact [H, T, T] maps of compute_attention_maps drew, pooled afterwards (block max, K/V block mean).
    toks = [f"w{i % 7}" for i in range(t)]
    m = compute_attention_maps(AttentionConfig(n_heads=h, n_kv_heads=kv, head_dim=16, d_model=48, seed=3), toks)
    groups = list(range(kv))
    side = fig_kv.maps_side(h, kv, 16, t, len(groups))
    gm = fig_kv.group_maps(h, kv, 16, 48, toks, seed=3, groups=groups, max_side=side)
    assert gm.factor == (1 if t <= side else -(-t // side))
    new = spec(fig_kv.maps_view(gm).figure)
    old = spec(fig_kv.grouped_maps_figure(m.weights, m.k, m.v, toks, toks, groups, max_cells=side))
    _same_figure_data(new, old)
    if gm.factor == 1:
        for head in range(h):
            np.testing.assert_allclose(gm.weights_of(head), m.weights[head], atol=1e-6)
        n_rep = h // kv
        spread = [float(np.max(np.abs(m.weights[g * n_rep : (g + 1) * n_rep] - m.weights[g * n_rep]))) for g in groups]
        np.testing.assert_allclose(fig_kv.group_spread(gm), spread, atol=1e-6)
    else:
        title = new["layout"]["title"]["text"]
        assert f"each cell: the largest weight in a block of {gm.factor}×{gm.factor}" in title
    table = fig_kv.maps_view(gm).data  # the CSV: exact weights, also when the chart is pooled
    got = table.sort_values(["head"], kind="stable")["weight"].to_numpy().reshape(h, t, t)
    np.testing.assert_allclose(got, m.weights, atol=1e-6)


def test_maps_side_keeps_every_chart_small():
    for h, kv in [(64, 8), (64, 1), (32, 32), (8, 2), (64, 64)]:
        groups = fig_kv.maps_groups(kv, 0)
        for t in (11, 40, 8192):
            side = fig_kv.maps_side(h, kv, 256, t, len(groups), Style(present=True))
            assert 1 <= side <= (64 if len(groups) * h // kv <= 8 else 40)
    gm = fig_kv.group_maps(16, 2, 64, 128, [f"t{i}" for i in range(1000)], groups=[0, 1],
                           max_side=fig_kv.maps_side(16, 2, 64, 1000, 2))  # fmt: skip
    s = fig_kv.maps_view(gm).figure.to_json()
    assert len(s) < 2_000_000
    assert gm.maps.weights.shape[0] == 16 and gm.kt.shape == (2, 64, gm.maps.weights.shape[2])


def test_long_sequences_stay_under_a_budget_the_full_maps_exceed(monkeypatch):
    # 8 heads × 2048 tokens: the full [H, T, T] path needs about 1.3 GB and refuses under 256 MiB; the
    # chunked views run under it, and say what they measured.
    monkeypatch.setenv("ATTN_MAX_BYTES", str(256 * 2**20))
    toks = [f"t{i}" for i in range(2048)]
    with pytest.raises(ConfigError, match="budget"):
        compute_attention_maps(AttentionConfig(n_heads=8, n_kv_heads=2, head_dim=16, d_model=128), toks)
    views = fig_kv.kv_sharing_views(tokens=toks, views=["maps", "mapping", "convert"])
    names = [v.name for v in views]
    assert names[0] == "kv_maps_h8_kv2_d16_t2048" and names[-1].startswith("mha_to_gqa_correlated_h8")
    for v in views:
        assert len(v.figure.to_json()) < 2_000_000, v.name
    maps = spec(views[0].figure)
    assert "showing 64×64 blocks (max) of 2048×2048" in maps["layout"]["title"]["text"]
    assert np.nanmax(arr(maps["data"][0]["z"])) <= 1
    # the mapping study: every row, by chunks (8 × 2048 × 2048 cells fit convert.STUDY_CELLS), so no note
    assert 8 * 2048 * 2048 <= convert.STUDY_CELLS
    mismatch = spec(views[3].figure)
    assert "measured on" not in mismatch["layout"]["title"]["text"]
    assert (views[3].data["query_rows_measured"] == 2048).all()
    pair = spec(views[4].figure)
    assert "showing 64×64 blocks (max) of 2048×2048" in pair["layout"]["title"]["text"]
    # the conversion study runs 13 layers: on every step-th row, as its subtitle and its table say
    rows = convert.CONV_CELLS // (8 * 2048)
    step = -(-2048 // rows)
    note = f"measured on {len(range(0, 2048, step)):,} of 2,048 query rows (rows 0, {step}, {2 * step}, …)"
    assert note in spec(views[5].figure)["layout"]["title"]["text"]
    assert (views[5].data["query_rows_measured"] == len(range(0, 2048, step))).all()


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
    one = spec(fig_kv.kv_diagram(1, 1))["layout"]["title"]["text"]
    assert one.startswith("MHA: 1 query head → 1 KV head (n_rep = 1)")
    mqa = spec(fig_kv.kv_diagram(8, 1))["layout"]["title"]["text"]
    assert mqa.startswith("MQA: 8 query heads → 1 KV head (n_rep = 8)")
    zeros = {m: np.zeros(1) for m in convert.METHODS}
    conv = spec(fig_kv.conversion_figure([1], zeros, zeros, 1))["layout"]["title"]["text"]
    assert conv.startswith("MHA with 1 head, converted to each n_kv_heads that divides 1")
    gm = fig_kv.group_maps(1, 1, 8, 32, TOKS)
    maps = spec(fig_kv.maps_view(gm).figure)["layout"]["title"]["text"]
    assert maps.startswith("Attention weights of 1 query head, one row per KV head")
