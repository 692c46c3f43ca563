"""attn_core.views.kv_sharing: the KV-sharing page's steps give what the engine computes, in charts that stay small."""

import json

import numpy as np
import pytest

from attn_core.attention.maps import compute_attention_maps
from attn_core.attention.sources import SeededLayer
from attn_core.figures import Style
from attn_core.figures import kv as fig_kv
from attn_core.kv import convert
from attn_core.runtime.config import AttentionConfig, ConfigError
from attn_core.views import kv_sharing as kvs
from tests.util import arr


def spec(fig) -> dict:
    return json.loads(fig.to_json())


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
    side = kvs.maps_side(kvs.Params(n_heads=h, n_kv_heads=kv, source="synthetic", seq_len=t), len(groups), Style())
    layer = SeededLayer(h, kv, 16, tuple(toks), d_model=48, seed=3)
    gm = kvs.group_maps(layer, groups, side)
    assert gm.factor == (1 if t <= side else -(-t // side))
    new = spec(kvs.maps_view(gm, layer, Style()).figure)
    old = spec(fig_kv.grouped_maps_figure(m.weights, m.k, m.v, toks, toks, groups, max_cells=side))
    _same_figure_data(new, old)
    if gm.factor == 1:
        for head in range(h):
            np.testing.assert_allclose(gm.weights_of(head), m.weights[head], atol=1e-6)
        n_rep = h // kv
        spread = [float(np.max(np.abs(m.weights[g * n_rep : (g + 1) * n_rep] - m.weights[g * n_rep]))) for g in groups]
        np.testing.assert_allclose(kvs.group_spread(gm), spread, atol=1e-6)
    else:
        title = new["layout"]["title"]["text"]
        assert f"each cell: the largest weight in a block of {gm.factor}×{gm.factor}" in title
    table = kvs.maps_view(gm, layer, Style()).data  # the CSV: exact weights, also when the chart is pooled
    got = table.sort_values(["head"], kind="stable")["weight"].to_numpy().reshape(h, t, t)
    np.testing.assert_allclose(got, m.weights, atol=1e-6)


def test_maps_side_keeps_every_chart_small():
    for h, kv in [(64, 8), (64, 1), (32, 32), (8, 2), (64, 64)]:
        groups = kvs.maps_groups(kv, 0)
        for t in (11, 40, 8192):
            p = kvs.Params(n_heads=h, n_kv_heads=kv, head_dim=256, source="synthetic", seq_len=t)
            side = kvs.maps_side(p, len(groups), Style(present=True))
            assert 1 <= side <= (64 if len(groups) * h // kv <= 8 else 40)
    p = kvs.Params(n_heads=16, n_kv_heads=2, head_dim=64, d_model=128, source="synthetic", seq_len=1000)
    gm = kvs.group_maps(p.layer(), [0, 1], kvs.maps_side(p, 2, Style()))
    s = kvs.maps_view(gm, p.layer(), Style()).figure.to_json()
    assert len(s) < 2_000_000
    assert gm.maps.weights.shape[0] == 16 and gm.kt.shape == (2, 64, gm.maps.weights.shape[2])


def test_long_sequences_stay_under_a_budget_the_full_maps_exceed(monkeypatch):
    # 8 heads × 2048 tokens: the full [H, T, T] path needs about 1.3 GB and refuses under 256 MiB; the
    # chunked views run under it, and say what they measured.
    monkeypatch.setenv("ATTN_MAX_BYTES", str(256 * 2**20))
    toks = [f"t{i}" for i in range(2048)]
    with pytest.raises(ConfigError, match="budget"):
        compute_attention_maps(AttentionConfig(n_heads=8, n_kv_heads=2, head_dim=16, d_model=128), toks)
    views = kvs.views(kvs.Params(source="synthetic", seq_len=2048), Style(), ["maps", "mapping", "convert"])
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


# ---------------------------------------------------------------- issue 13: the view model
def test_the_command_line_keeps_every_flag_of_the_page():
    from attn_core.export import parser
    from attn_core.views import page

    flags = {s for a in parser(page("kv_sharing"))._actions for s in a.option_strings}
    old = {
        "--n-heads",
        "--n-kv-heads",
        "--d-k",
        "--seq-len",
        "--text",
        "--seed",
        "--view",
        "--head",
        "--d-model",
        "--dtype",
        "--built-with",
        "--conv-source",
        "--n-base",
        "--noise",
        "--kv-first",
    }
    assert old <= flags
    assert "--kv-view" not in flags  # --view picks the views


def test_views_come_in_the_page_order_and_unknown_ones_are_named():
    assert kvs.wanted_views(None) == list(kvs.VIEW_NAMES)
    assert kvs.wanted_views("all") == list(kvs.VIEW_NAMES)
    assert kvs.wanted_views("convert, diagram") == ["diagram", "convert"]
    for bad, shown in (("heads", "heads"), ("", "(none)")):
        with pytest.raises(ConfigError) as err:
            kvs.wanted_views(bad)
        assert err.value.key == "unknown_view" and str(err.value).startswith(f"view {shown} is not known")


@pytest.mark.parametrize("built_with", ["contiguous", "interleaved"])
def test_the_pair_kept_by_the_study_equals_the_pair_computed_alone(built_with):
    # Short sequences take the pair from the study (every map kept), long ones compute it by chunks:
    # both paths give one head's maps as trained and as run.
    layer = kvs.Params(n_heads=12, n_kv_heads=3, head_dim=8, d_model=64, seed=2).layer()
    mm = kvs.mapping_study(layer, built_with)
    assert mm.full
    for head in (0, 5, 11):
        kept, alone = kvs.kept_pair(mm, head), kvs.pair_maps(layer, built_with, head)
        assert (
            (kept.kv_built, kept.kv_run, kept.factor)
            == (alone.kv_built, alone.kv_run, alone.factor)
            == (mm.built[head], mm.run[head], 1)
        )
        # two float32 computations of the same weights (in 0..1)
        np.testing.assert_allclose(alone.weights_built, kept.weights_built, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(alone.weights_run, kept.weights_run, rtol=1e-5, atol=1e-6)
        assert alone.max_diff == pytest.approx(kept.max_diff, rel=1e-5, abs=1e-6)
