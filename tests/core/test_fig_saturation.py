"""attn_core.fig_saturation: the figures of the softmax-saturation page carry the right numbers."""

import json
import math

import numpy as np
import plotly.io as pio
import pytest

from attn_core import fig_saturation as fs
from attn_core import stats
from attn_core.config import ConfigError
from attn_core.figures import Style
from attn_core.tokens import synthetic_tokens
from tests.util import arr


def spec(fig) -> dict:
    """The figure as plotly JSON, as the browser receives it."""
    return json.loads(pio.to_json(fig))


@pytest.fixture(scope="module")
def sweep():
    return stats.saturation_sweep((1, 4, 16, 64), seq_len=8, n_samples=32, seed=0)


def test_distribution_figure_states_measured_and_theoretical_variance():
    sample = stats.score_sample(64, 8, 64, seed=1, bins=30)
    s = spec(fs.score_distribution_figure(sample))
    titles = [a["text"] for a in s["layout"]["annotations"]]
    assert f"Var measured {sample.raw_var:.4g}, theory d_k = 64" in titles[0]
    assert f"Var measured {sample.scaled_var:.4g}, theory 1" in titles[1]
    bars = [t for t in s["data"] if t["type"] == "bar"]
    np.testing.assert_allclose(arr(bars[0]["y"]), sample.raw_density, rtol=1e-6)
    # the dashed curves are the N(0, d_k) and N(0, 1) densities: peaks 1/sqrt(2π·64) and 1/sqrt(2π)
    curves = [t for t in s["data"] if t["type"] == "scatter"]
    assert arr(curves[0]["y"]).max() == pytest.approx(1 / math.sqrt(2 * math.pi * 64), rel=1e-3)
    assert arr(curves[1]["y"]).max() == pytest.approx(1 / math.sqrt(2 * math.pi), rel=1e-3)
    data = fs.score_distribution_data(sample)
    assert len(data) == 60 and set(data["score"]) == {"q·k", "q·k/√64"}


def test_maps_are_pooled_above_64_keys_and_say_so():
    raw = np.random.default_rng(0).normal(size=(200, 200)).astype(np.float32) * 10
    w_u, w_s = stats.softmax_weights(raw, 1.0), stats.softmax_weights(raw, 0.1)
    s = spec(fs.scaled_unscaled_figure(raw, w_u, w_s, synthetic_tokens(200), 100, 1.0))
    z = arr(s["data"][0]["z"])
    assert z.shape == (50, 50)  # factor 4
    np.testing.assert_allclose(z[0, 0], w_u[:4, :4].max(), rtol=1e-6)  # block maximum
    assert "showing 50×50 blocks (max) of 200×200" in s["layout"]["title"]["text"]


def test_curves_mark_the_current_d_k_and_fill_the_current_scaling(sweep):
    s = spec(fs.saturation_curves_figure(sweep, 16, False, 8, 32, 1.0))
    markers = [t for t in s["data"] if t.get("name") == "current"]
    assert len(markers) == 6 and all(m["x"] == [16, 16] for m in markers)
    assert markers[0]["marker"]["symbol"] == ["circle", "circle-open"]
    row = sweep[sweep["d_k"] == 16].set_index("scaled")
    np.testing.assert_allclose(arr(markers[5]["y"]), [row.loc[False, "grad_norm"], row.loc[True, "grad_norm"]])
    assert all(s["layout"][f"xaxis{i if i > 1 else ''}"]["type"] == "log" for i in range(1, 7))
    scaled_marker = spec(fs.saturation_curves_figure(sweep, 64, True, 8, 32, 1.0))
    m = [t for t in scaled_marker["data"] if t.get("name") == "current"][0]
    assert m["x"] == [64, 64] and m["marker"]["symbol"] == ["circle-open", "circle"]


def test_row_figure_shows_the_jacobian_of_the_top_32_keys_on_a_fixed_scale():
    raw = np.random.default_rng(1).normal(size=100).astype(np.float32) * 3
    row = stats.row_softmax(raw, 1.0)
    s = spec(fs.row_figure(row, synthetic_tokens(100), "t0 (0)", "title"))
    jac = arr(s["data"][1]["z"])
    keep = np.sort(np.argsort(-row.p)[:32])
    np.testing.assert_allclose(jac, row.jacobian[np.ix_(keep, keep)], atol=1e-8)
    assert len(arr(s["data"][0]["y"])) == 100
    assert (s["layout"]["coloraxis"]["cmin"], s["layout"]["coloraxis"]["cmax"], s["layout"]["coloraxis"]["cmid"]) == (
        -0.25, 0.25, 0.0
    )  # fmt: skip
    assert "32 largest of 100" in s["layout"]["title"]["text"]


def test_float16_figure_marks_nan_keys(sweep):
    demo = stats.float16_demo(np.array([20.0, 1.0, -3.0, 15.0]))
    s = spec(fs.float16_figure(demo, sweep, synthetic_tokens(4), 16))
    (marks,) = [t for t in s["data"] if t.get("name") == "non-finite"]
    assert marks["x"] == ["t0 (0)", "t3 (3)"] and marks["text"] == ["NaN", "NaN"]
    assert "2 of 4 exp(q·k) overflow, Σ = inf" in s["layout"]["annotations"][0]["text"]
    table = fs.float16_data(demo, synthetic_tokens(4))
    assert list(table.columns) == list(fs.FLOAT16_COLUMNS)
    assert np.isinf(table["exp_fp16"][0]) and np.isnan(table["naive_fp16"][0]) and table["key"][3] == "t3"


def test_presentation_mode_and_chinese(sweep):
    style = Style(present=True, lang="zh")
    sample = stats.score_sample(4, 8, 16)
    figs = [
        fs.score_distribution_figure(sample, style),
        fs.saturation_curves_figure(sweep, 4, True, 8, 32, 1.0, style),
        fs.row_figure(stats.row_softmax(sample.example[0], 0.5), synthetic_tokens(8), "t0 (0)", "x", style),
    ]
    for f in figs:
        s = spec(f)
        assert s["layout"]["font"]["size"] >= 20
        assert all(a["font"]["size"] >= 20 for a in s["layout"].get("annotations", []))
    assert "理论" in spec(figs[0])["layout"]["annotations"][0]["text"]


def test_saturation_views_build_every_view_with_its_numbers():
    views = fs.saturation_views(d_k=128, seq_len=8, n_samples=32, seed=4, use_scaling=False, temperature=0.5, row=2)
    assert [v.name for v in views] == ["scores_dk128", "maps_dk128", "saturation_sweep", "row2_dk128",
                                       "float16_row2_dk128"]  # fmt: skip
    sample = stats.score_sample(128, 8, 32, seed=4)
    maps = views[1].data
    assert len(maps) == 64
    np.testing.assert_allclose(
        maps["weight_unscaled"], stats.softmax_weights(sample.example, 2.0).reshape(-1), rtol=1e-6
    )
    row = views[3].data
    np.testing.assert_allclose(row["weight"], stats.row_softmax(sample.example[2], 1.0, 0.5).p, rtol=1e-6)
    assert "no 1/√d_k scaling" in spec(views[3].figure)["layout"]["title"]["text"]
    sweep = stats.saturation_sweep(stats.SWEEP_D_K, 8, 32, 4, temperature=0.5)
    np.testing.assert_allclose(views[2].data["max_weight"], sweep["max_weight"])
    with pytest.raises(ConfigError, match="row"):
        fs.saturation_views(seq_len=8, row=8)
