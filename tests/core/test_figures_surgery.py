"""attn_core.figures.surgery: what each chart of the surgery page draws, from the numbers it is given."""

from __future__ import annotations

import json
import math

import numpy as np
import plotly.io as pio
import pytest

from attn_core import figures
from attn_core.figures import surgery as sf
from tests.util import arr, grid_panel

STYLES = [figures.Style(), figures.Style(present=True)]


def spec(fig) -> dict:
    return json.loads(pio.to_json(fig, validate=False))


@pytest.mark.parametrize("style", STYLES, ids=["page", "slide"])
def test_kv_chart_bars_by_method_and_the_original_labelled_on_its_log_axis(style):
    c = sf.KvChart(
        labels=("1 · MQA", "2 · GQA"),
        methods=("mean", "first", "random"),
        method_names=("mean", "first head", "new random heads"),
        values=((120.0, 900.0, math.nan), (15.0, 40.0, 300.0)),
        original=12.5,
        original_name="original",
        title="t",
        x_title="x",
        y_title="perplexity",
        log_y=True,
        chosen=(1, 0),
    )
    s = spec(sf.kv_quality_figure(c, style))
    assert [t["name"] for t in s["data"]] == ["mean", "first head", "new random heads"]
    assert s["data"][2]["y"] == [None, 300.0]  # not measured yet: no bar
    assert s["data"][0]["marker"]["line"]["width"] == [0.5, 3]  # the chosen setting outlined
    (line,) = s["layout"]["shapes"]
    (note,) = s["layout"]["annotations"]
    assert line["y0"] == 12.5 and note["y"] == pytest.approx(math.log10(12.5)) and note["text"] == "original: 12.5"
    lo, hi = s["layout"]["yaxis"]["range"]
    assert s["layout"]["yaxis"]["type"] == "log" and lo < math.log10(12.5) and hi > math.log10(900)


def test_scale_chart_places_no_scale_at_its_factor():
    c = sf.ScaleChart(
        (0.25, 0.5, 1.0, 2.0, 4.0, 8.0),
        ("×¼", "×½", "×1", "×2", "×4", "none (×8)"),
        (50.0, 12.0, 10.0, 9.5, 30.0, 400.0),
        "t",
        "x",
        "y",
        True,
        chosen=5,
    )
    s = spec(sf.scale_quality_figure(c))
    assert s["data"][0]["x"] == [-2.0, -1.0, 0.0, 1.0, 2.0, 3.0] and s["layout"]["xaxis"]["ticktext"][-1] == "none (×8)"
    assert s["data"][1]["x"] == [3.0] and s["data"][1]["y"] == [400.0]  # the chosen factor ringed


def test_layer_stats_draw_two_panels_a_line_per_setting():
    c = sf.LayerStats(
        (0, 1, 2),
        ("×1", "×2"),
        ((0.4, 0.5, 0.6), (0.8, 0.9, 0.95)),
        ((0.5, 0.4, 0.3), (0.1, 0.05, 0.0)),
        ("largest", "entropy"),
        "t",
        "layer",
        chosen=1,
    )
    s = spec(sf.layer_stats_figure(c))
    assert [(t["name"], t["xaxis"]) for t in s["data"]] == [("×1", "x"), ("×1", "x2"), ("×2", "x"), ("×2", "x2")]
    assert s["data"][3]["y"] == [0.1, 0.05, 0.0] and [t["showlegend"] for t in s["data"]] == [True, False] * 2


def test_ablation_bars_are_coloured_by_kv_group_and_hatched_by_role():
    c = sf.AblationChart(
        heads=(0, 1, 2, 3),
        values=(0.1, 0.5, 0.02, math.nan),
        groups=(0, 0, 1, 1),
        roles=("previous_token", "", "", "induction"),
        role_names={"previous_token": "previous-token head", "induction": "induction head"},
        head_word="head",
        title="t",
        x_title="x",
        y_title="KL",
        chosen=(1,),
    )
    s = spec(sf.ablation_figure(c))
    bars = s["data"][0]
    assert bars["marker"]["color"] == [figures.group_color(g) for g in (0, 0, 1, 1)]
    assert bars["marker"]["pattern"]["shape"] == ["/", "", "", "x"] and bars["y"][3] is None
    assert [t["name"] for t in s["data"][1:]] == ["previous-token head", "induction head"]  # the legend of the roles
    assert s["layout"]["showlegend"] is True
    plain = sf.AblationChart(**{**c.__dict__, "roles": ("", "", "", "")})
    assert spec(sf.ablation_figure(plain))["layout"]["showlegend"] is False


def test_eviction_marks_where_the_cache_is_full():
    c = sf.EvictionChart(
        (8, 24),
        ("full cache", "w = 16, k = 0"),
        (None, 0),
        ((10.0, 11.0), (10.0, 40.0)),
        (None, 16),
        ((16, "cache full: 16"),),
        "t",
        "x",
        "y",
    )
    s = spec(sf.eviction_figure(c))
    assert s["layout"]["shapes"][0]["x0"] == 16 and s["layout"]["annotations"][0]["text"] == "cache full: 16"
    assert s["data"][0]["line"]["dash"] == "dash" and s["data"][1]["line"]["color"] == sf.SINK_COLORS[0]


def test_card_cache_draws_the_all_global_curve_only_for_sliding_layers():
    lengths = tuple(2**p for p in range(0, 11))
    c = sf.CacheChart(
        lengths,
        tuple(10 * n for n in lengths),
        None,
        256,
        2560,
        ("cache", "global"),
        "t",
        "x",
        "y",
        tuple(str(n) for n in lengths if n & (n - 1) == 0 and round(math.log2(n)) % 2 == 0),
    )
    s = spec(sf.card_cache_figure(c))
    assert (
        len(s["data"]) == 2
        and s["data"][1]["x"] == [256]
        and s["layout"]["xaxis"]["tickvals"] == [1, 4, 16, 64, 256, 1024]
    )
    with_full = sf.CacheChart(**{**c.__dict__, "full": tuple(20 * n for n in lengths)})
    assert [t.get("name") for t in spec(sf.card_cache_figure(with_full))["data"]][:2] == ["cache", "global"]


def test_the_maps_before_and_after_are_two_panels_of_one_grid_titled_by_their_model():
    rng = np.random.default_rng(0)
    before, after = (np.tril(rng.random((5, 5))) for _ in range(2))
    labels = [f"t{i} ({i})" for i in range(5)]
    fig = sf.pair_maps_figure((before, after), (labels, labels), ("original", "pooled"), "title", 1.0, "weight")
    s = spec(fig)
    assert [a["text"] for a in s["layout"]["annotations"]] == ["<b>original</b>", "<b>pooled</b>"]
    for i, w in enumerate((before, after)):
        drawn, rows, cols = grid_panel(s, i)
        assert np.allclose(drawn, w) and len(rows) == len(cols) == 5
    assert arr(s["data"][0]["z"]).size > 0 and s["layout"]["coloraxis"]["cmax"] == 1.0
