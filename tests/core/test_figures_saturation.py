"""attn_core.figures.saturation: the figures of the softmax-saturation page carry the right numbers."""

import json
import math

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio
import pytest
import torch
from plotly.subplots import make_subplots

from attn_core.attention.tokens import synthetic_tokens
from attn_core.figures import Style, pool_max
from attn_core.figures import saturation as fs
from attn_core.figures.base import slide_title
from attn_core.saturation import examples, measures
from attn_core.saturation import sweep as sat_sweep
from attn_core.saturation.sampling import SamplingSpec as S
from attn_core.views import saturation as sat
from tests.util import arr


def spec(fig) -> dict:
    """The figure as plotly JSON, as the browser receives it."""
    return json.loads(pio.to_json(fig))


@pytest.fixture(scope="module")
def sweep():
    return sat_sweep.saturation_sweep(S(8, 32, 0), (1, 4, 16, 64))


def test_distribution_figure_states_measured_and_theoretical_variance():
    sample = sat_sweep.score_sample(S(8, 64, 1), 64, bins=30)
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
    data = sat.score_distribution_data(sample)
    assert len(data) == 60 and set(data["score"]) == {"q·k", "q·k/√64"}


def test_maps_are_pooled_above_64_keys_and_say_so():
    maps = examples.example_maps(S(200, 32, 0), 100, 1.0)
    raw = examples.example_scores(S(200, 32, 0), 100)  # the first sequence, [200, 200]
    w_u, w_s = measures.softmax_weights(raw, 1.0), measures.softmax_weights(raw, 0.1)
    s = spec(fs.scaled_unscaled_figure(maps, synthetic_tokens(200)))
    z_u, z_s = arr(s["data"][0]["z"]), arr(s["data"][1]["z"])
    assert z_u.shape == z_s.shape == (50, 50) and s["data"][0]["z"]["dtype"] == "f4"  # factor 4, float32
    np.testing.assert_allclose(z_u[0, 0], w_u[:4, :4].max(), rtol=1e-5)  # block maximum
    np.testing.assert_allclose(z_u, pool_max(w_u[None], 64)[0][0], atol=1e-5)
    np.testing.assert_allclose(z_s, pool_max(w_s[None], 64)[0][0], atol=1e-5)
    assert "showing 50×50 blocks (max) of 200×200" in s["layout"]["title"]["text"]
    assert s["data"][0]["x"][:2] == ["0–3", "4–7"] and "customdata" not in s["data"][0]
    titles = [a["text"] for a in s["layout"]["annotations"]]
    assert f"mean row max {w_u.max(-1).mean():.3f}" in titles[0]
    table = sat.maps_data(maps)
    assert len(table) == 2500 and table["block_max_unscaled"].iloc[0] == pytest.approx(z_u[0, 0])


def test_small_maps_carry_every_weight_and_score():
    maps = examples.example_maps(S(8, 32, 3), 16, 0.5)
    raw = examples.example_scores(S(8, 32, 3), 16)
    s = spec(fs.scaled_unscaled_figure(maps, synthetic_tokens(8)))
    np.testing.assert_allclose(arr(s["data"][0]["z"]), measures.softmax_weights(raw, 2.0), atol=1e-6)
    np.testing.assert_allclose(arr(s["data"][1]["z"]), measures.softmax_weights(raw, 0.5), atol=1e-6)
    np.testing.assert_allclose(arr(s["data"][0]["customdata"]), raw, atol=1e-5)
    assert s["data"][0]["x"][0] == "t0 (0)" and "blocks" not in s["layout"]["title"]["text"]


def test_curves_mark_the_current_d_k_and_fill_the_current_scaling(sweep):
    s = spec(fs.saturation_curves_figure(sweep, 16, False, 8, 32, 1.0))
    markers = [t for t in s["data"] if t.get("name") == "current"]
    assert len(markers) == 4 and all(m["x"] == [16, 16] for m in markers)
    assert markers[0]["marker"]["symbol"] == ["circle", "circle-open"]
    row = sweep[sweep["d_k"] == 16].set_index("scaled")
    np.testing.assert_allclose(
        arr(markers[3]["y"]), [row.loc[False, "saturated_frac"], row.loc[True, "saturated_frac"]]
    )
    assert all(s["layout"][f"xaxis{i if i > 1 else ''}"]["type"] == "log" for i in range(1, 5))
    scaled_marker = spec(fs.saturation_curves_figure(sweep, 64, True, 8, 32, 1.0))
    m = [t for t in scaled_marker["data"] if t.get("name") == "current"][0]
    assert m["x"] == [64, 64] and m["marker"]["symbol"] == ["circle-open", "circle"]


def test_gradient_figure_plots_mean_median_and_tiny_rows_of_each_norm():
    sweep = sat_sweep.saturation_sweep(S(16, 64, 0), (1, 16, 512))
    s = spec(fs.gradient_curves_figure(sweep, 512, False, 16, 64, 1.0))
    titles = [a["text"] for a in s["layout"]["annotations"]]
    assert titles[:3] == ["mean ‖J‖_F", "median ‖J‖_F", "rows with ‖J‖_F < 0.001"]
    assert titles[6:] == ["mean ‖∂L/∂q‖", "median ‖∂L/∂q‖", "rows with ‖∂L/∂q‖ < 0.001"]
    assert "L = Σ p·G" in s["layout"]["title"]["text"]
    by = sweep.set_index(["scaled", "d_k"])
    columns = [n + x for n in ("jacobian_norm", "grad_norm", "grad_q_norm") for x in ("", "_median", "_small")]
    for i, column in enumerate(columns, start=1):
        axis = "y" if i == 1 else f"y{i}"
        for flag, name in ((False, "unscaled"), (True, "scaled by 1/√d_k")):
            (tr,) = [t for t in s["data"] if t.get("name") == name and t.get("yaxis", "y") == axis]
            np.testing.assert_allclose(arr(tr["customdata"]), by.loc[flag][column], rtol=1e-6)  # hover: measured
            assert arr(tr["y"]).min() > 0 or column.endswith("_small")
        layout_axis = s["layout"]["yaxis" if i == 1 else f"yaxis{i}"]
        assert layout_axis.get("type") == ("log" if not column.endswith("_small") else None)
    # mean and median of one norm share a range, so a median far below its mean shows as such
    assert s["layout"]["yaxis7"]["range"] == s["layout"]["yaxis8"]["range"]
    markers = [t for t in s["data"] if t.get("name") == "current"]
    assert len(markers) == 9 and markers[7]["customdata"][0][1] == pytest.approx(
        by.loc[(False, 512), "grad_q_norm_median"]
    )


def test_a_zero_norm_is_drawn_at_the_bottom_of_its_log_axis_and_hovers_as_zero():
    sweep = sat_sweep.saturation_sweep(S(8, 16, 0), (1, 16))
    sweep.loc[~sweep["scaled"] & (sweep["d_k"] == 16), "grad_norm_median"] = 0.0  # every row exactly saturated
    s = spec(fs.gradient_curves_figure(sweep, 16, False, 8, 16, 1.0))
    (tr,) = [t for t in s["data"] if t.get("name") == "unscaled" and t.get("yaxis") == "y5"]
    lo = 10 ** s["layout"]["yaxis5"]["range"][0]
    assert arr(tr["customdata"])[1] == 0.0 and arr(tr["y"])[1] == pytest.approx(lo, rel=1e-5)
    assert np.isfinite(s["layout"]["yaxis5"]["range"]).all()


def test_row_figure_shows_the_jacobian_of_the_top_32_keys_on_a_fixed_scale():
    raw = np.random.default_rng(1).normal(size=100).astype(np.float32) * 3
    row = measures.row_softmax(raw, 1.0)
    s = spec(fs.row_figure(row, synthetic_tokens(100), "t0 (0)", "title"))
    jac = arr(s["data"][1]["z"])
    p = torch.softmax(torch.tensor(raw, dtype=torch.float64), -1)
    keep = np.sort(np.argsort(-p.numpy())[:32])
    np.testing.assert_allclose(jac, measures.softmax_jacobian(p).numpy()[np.ix_(keep, keep)], atol=1e-7)
    assert s["data"][1]["x"] == [f"t{i} ({i})" for i in keep]
    np.testing.assert_allclose(arr(s["data"][0]["y"]), p.numpy(), atol=1e-7)
    assert len(arr(s["data"][0]["y"])) == 100 and s["data"][0]["x"][99] == "t99 (99)"
    assert (s["layout"]["coloraxis"]["cmin"], s["layout"]["coloraxis"]["cmax"], s["layout"]["coloraxis"]["cmid"]) == (
        -0.25,
        0.25,
        0.0,
    )
    assert "32 largest of 100" in s["layout"]["title"]["text"]


def test_long_rows_stay_light():
    raw = np.random.default_rng(2).normal(size=8192).astype(np.float32) * 32  # d_k = 1024, unscaled
    row = measures.row_softmax(raw, 1.0)
    labels = synthetic_tokens(8192)
    fig = fs.row_figure(row, labels, "t0 (0)", "title")
    s = spec(fig)
    bars = s["data"][0]
    assert "x" not in bars and (bars["x0"], bars["dx"]) == (0, 1)  # bars against the key position, no labels
    assert bars["y"]["dtype"] == "f4" and bars["customdata"]["dtype"] == "f4"
    np.testing.assert_allclose(arr(bars["y"]), row.p)
    assert arr(s["data"][1]["z"]).shape == (32, 32)
    demo = measures.float16_demo(raw)
    sweep = sat_sweep.saturation_sweep(S(8, 16), (1, 1024))
    f16 = spec(fs.float16_figure(demo, sweep, labels, 1024))
    keys = np.sort(np.argsort(-demo.scores16, kind="stable")[:128])
    assert f16["data"][0]["x"] == [f"t{i} ({i})" for i in keys]  # the 128 largest scores, in key order
    np.testing.assert_allclose(arr(f16["data"][0]["y"]), demo.stable[keys])
    n_inf = int(np.isinf(demo.exp_naive).sum())
    assert f"{n_inf} of 8192 exp(q·k) overflow" in f16["layout"]["annotations"][0]["text"]
    assert "the 128 largest of 8192 scores" in f16["layout"]["annotations"][0]["text"]
    for f in (fig, fs.float16_figure(demo, sweep, labels, 1024)):
        assert len(pio.to_json(f)) < 200_000
    assert len(sat.float16_data(demo, labels, fs.float16_keys(demo))) == 128
    assert len(sat.float16_data(demo)) == 8192


def test_float16_figure_marks_nan_keys(sweep):
    demo = measures.float16_demo(np.array([20.0, 1.0, -3.0, 15.0]))
    s = spec(fs.float16_figure(demo, sweep, synthetic_tokens(4), 16))
    (marks,) = [t for t in s["data"] if t.get("name") == "non-finite"]
    assert marks["x"] == ["t0 (0)", "t3 (3)"] and marks["text"] == ["NaN", "NaN"]
    assert "2 of 4 exp(q·k) overflow, Σ = inf" in s["layout"]["annotations"][0]["text"]
    one = spec(fs.float16_figure(measures.float16_demo(np.array([20.0, 1.0, -3.0])), sweep, synthetic_tokens(3), 16))
    assert "1 of 3 exp(q·k) overflows, Σ = inf" in one["layout"]["annotations"][0]["text"]  # not "1 ... overflow"
    table = sat.float16_data(demo, synthetic_tokens(4))
    assert list(table.columns) == list(sat.FLOAT16_COLUMNS)
    assert np.isinf(table["exp_fp16"][0]) and np.isnan(table["naive_fp16"][0]) and table["key"][3] == "t3"


def test_presentation_mode_and_chinese(sweep):
    style = Style(present=True, lang="zh")
    sample = sat_sweep.score_sample(S(8, 16), 4)
    raw = examples.example_scores(S(8, 16), 4, rows=[0])[0]
    figs = [
        fs.score_distribution_figure(sample, style),
        fs.saturation_curves_figure(sweep, 4, True, 8, 32, 1.0, style),
        fs.gradient_curves_figure(sweep, 4, True, 8, 32, 1.0, style),
        fs.row_figure(measures.row_softmax(raw, 0.5), synthetic_tokens(8), "t0 (0)", "x", style),
        fs.scaled_unscaled_figure(examples.example_maps(S(8, 16), 4), synthetic_tokens(8), style),
    ]
    for f in figs:
        s = spec(f)
        assert s["layout"]["font"]["size"] >= 20
        assert all(a["font"]["size"] >= 20 for a in s["layout"].get("annotations", []))
    assert "理论" in spec(figs[0])["layout"]["annotations"][0]["text"]


def test_subplots_are_laid_out_as_make_subplots_does():
    for rows, cols, kw in (
        (1, 2, {"horizontal_spacing": 0.08}),
        (2, 2, {"horizontal_spacing": 0.1, "vertical_spacing": 0.22}),
        (3, 3, {"horizontal_spacing": 0.08, "vertical_spacing": 0.13}),
        (1, 2, {"column_widths": [0.55, 0.45], "horizontal_spacing": 0.1}),
    ):
        titles = [f"p{i}" for i in range(rows * cols)]
        ref = make_subplots(rows=rows, cols=cols, subplot_titles=titles, **kw).to_dict()["layout"]
        ours = fs._grid(
            rows, cols, titles, kw.get("column_widths"), kw.get("horizontal_spacing"), kw.get("vertical_spacing")
        )
        for key, axis in ref.items():
            if key.startswith(("xaxis", "yaxis")):
                assert ours[key]["anchor"] == axis["anchor"]
                np.testing.assert_allclose(ours[key]["domain"], axis["domain"], atol=1e-12)
        for a, b in zip(ours["annotations"], ref["annotations"], strict=True):
            assert a["text"] == b["text"] and (a["x"], a["y"]) == pytest.approx((b["x"], b["y"]))


def test_figures_survive_plotly_validation():
    """Built without validation for speed: every property must still be one plotly accepts."""
    sweep = sat_sweep.saturation_sweep(S(8, 16), (1, 4, 16))
    raw = np.random.default_rng(0).normal(size=600).astype(np.float32) * 20
    demo = measures.float16_demo(raw)
    figs = [
        fs.score_distribution_figure(sat_sweep.score_sample(S(8, 16), 16)),
        fs.scaled_unscaled_figure(examples.example_maps(S(8, 16), 16), synthetic_tokens(8)),
        fs.scaled_unscaled_figure(examples.example_maps(S(100, 16), 16), synthetic_tokens(100)),
        fs.saturation_curves_figure(sweep, 4, True, 8, 16, 1.0),
        fs.gradient_curves_figure(sweep, 4, True, 8, 16, 1.0),
        fs.row_figure(measures.row_softmax(raw, 1.0), synthetic_tokens(600), "t0 (0)", "x"),
        fs.row_figure(measures.row_softmax(raw[:20], 1.0), synthetic_tokens(20), "t0 (0)", "x"),
        fs.float16_figure(demo, sweep, synthetic_tokens(600), 16),
    ]
    for fig in figs:
        go.Figure(fig.to_dict())  # raises ValueError on any invalid property


def test_on_a_slide_the_curves_stand_side_by_side_with_fewer_d_k_ticks(sweep):
    """A 16:9 slide leaves a chart about 450 px: four panels in one row (a 2x2 grid gave 60 px panels whose titles
    and ticks ran into each other), long names on two lines, every other d_k ticked (and the last)."""
    s = spec(fs.saturation_curves_figure(sweep, 4, True, 8, 32, 1.0, Style(present=True)))
    lay = s["layout"]
    y_domains = {tuple(lay[k]["domain"]) for k in ("yaxis", "yaxis2", "yaxis3", "yaxis4")}
    assert y_domains == {(0.0, 1.0)}  # one row
    x = [lay[k]["domain"] for k in ("xaxis", "xaxis2", "xaxis3", "xaxis4")]
    assert all(a[1] < b[0] for a, b in zip(x, x[1:], strict=False))  # side by side, apart
    d_values = [int(d) for d in sweep["d_k"].unique()]
    ticks = lay["xaxis"]["tickvals"]
    assert ticks[0] == d_values[0] and ticks[-1] == d_values[-1]
    assert fs._d_k_axis(Style(present=True), [2**k for k in range(11)])["tickvals"] == [1, 4, 16, 64, 256, 1024]
    assert len(ticks) <= len(d_values) // 2 + 1 if len(d_values) > 6 else ticks == d_values
    assert lay["xaxis"]["title"]["text"] == "d_k (log scale)"
    names = [a["text"] for a in lay["annotations"]]
    assert "score variance<br>(theory: d_k and 1)" in names
    normal = spec(fs.saturation_curves_figure(sweep, 4, True, 8, 32, 1.0, Style()))["layout"]
    assert normal["xaxis"]["tickvals"] == d_values and normal["yaxis"]["domain"][0] > 0  # the page: 2x2, every d_k


def test_a_title_too_wide_for_a_slide_breaks_after_its_colon(sweep):
    """At 1024 px a slide holds about 80 Latin characters of 26 px title (35 Chinese ones): the curves' title,
    89 characters, ran past the right edge (in Chinese, its last "= 64" was cut)."""
    zh = spec(fs.saturation_curves_figure(sweep, 4, True, 8, 32, 1.0, Style(present=True, lang="zh")))
    assert zh["layout"]["title"]["text"].startswith("softmax 饱和随 d_k 的变化：<br>每个 d_k 采样")
    en = slide_title("Softmax saturation against d_k: 256 sequences × 16 keys per d_k, τ = 1, current d_k = 256")
    assert en == "Softmax saturation against d_k:<br>256 sequences × 16 keys per d_k, τ = 1, current d_k = 256"
    short = "Distribution of 65,536 scores at d_k = 64: raw against scaled"
    assert slide_title(short) == short  # fits: left alone
    page = spec(fs.saturation_curves_figure(sweep, 4, True, 8, 32, 1.0, Style(lang="zh")))
    assert "：<br>" not in page["layout"]["title"]["text"]  # the page is wide enough


def test_a_slide_title_without_a_colon_breaks_at_a_comma_or_bracket_outside_brackets():
    """The example maps' title has no colon; at 88 characters it ran past a 1024 px slide's right edge."""
    en = "The same 16×16 scores q·k at d_k = 64, without and with 1/√d_k (one colour scale, 0 to 1)"
    assert (
        slide_title(en)
        == "The same 16×16 scores q·k at d_k = 64, without and with 1/√d_k<br>(one colour scale, 0 to 1)"
    )
    zh = "d_k = 1024 时同一组 256×256 分数 q·k，不乘与乘以 1/√d_k（同一色标，0 到 1）"
    assert slide_title(zh) == "d_k = 1024 时同一组 256×256 分数 q·k，不乘与乘以 1/√d_k<br>（同一色标，0 到 1）"
    assert slide_title(zh, 40) == zh  # no break leaves the first part within 40: left as it is
    assert slide_title("one, two, three (four, five), six", 24) == "one, two, three<br>(four, five), six"
    assert slide_title("one, two, three (four, five), six", 30) == "one, two, three (four, five),<br>six"


def test_the_example_maps_on_a_slide_label_their_rows_once_and_title_panels_on_two_lines():
    """At 1024 × 768 the two panel titles ran into each other and the second map's row labels sat on the first
    map's right edge: the rows are the same queries, so only the first map labels them."""
    maps = examples.example_maps(S(16, 16), 64)
    for style in (Style(), Style(present=True), Style(present=True, lang="zh")):
        lay = spec(fs.scaled_unscaled_figure(maps, synthetic_tokens(16), style))["layout"]
        assert lay["yaxis"].get("showticklabels", True) and lay["yaxis2"]["showticklabels"] is False
        names = [a["text"] for a in lay["annotations"]]
        assert all(("<br>" in n) == style.present for n in names), names
