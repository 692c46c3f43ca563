"""AppTest: the attention-heatmap page, its controls, URL parameters and bad input."""

import numpy as np
import pytest

from attn_core.config import AttentionConfig
from attn_core.maps import compute_attention_maps
from attn_core.tokens import tokenize
from tests.conftest import no_exception
from tests.util import arr, chart_specs

PAGE = "pages/heatmaps.py"
DEFAULT_TEXT = "The cat sat on the mat because it was tired ."


def grid_z(at) -> np.ndarray:
    return arr(chart_specs(at)[0]["data"][0]["z"])


def expected(n_heads=8, n_kv_heads=2, head_dim=16, text=DEFAULT_TEXT, seed=0, **kw):
    cfg = AttentionConfig(n_heads=n_heads, n_kv_heads=n_kv_heads, head_dim=head_dim, seed=seed)
    return compute_attention_maps(cfg, tokenize(text), **kw)


def test_defaults_render_grid_with_right_numbers(app_test):
    at = app_test(PAGE)
    no_exception(at)
    assert not at.error and not at.warning
    z = grid_z(at)
    m = expected()
    t = len(m.tokens_q)
    # head 1 sits in the second panel of the first row
    gap = max(1, round(0.12 * t))
    np.testing.assert_allclose(z[:t, t + gap : 2 * t + gap], m.weights[1], atol=1e-6)
    assert "GQA" in at.markdown[0].value and "8" in at.markdown[0].value


def test_controls_change_the_map(app_test):
    at = app_test(PAGE)
    before = grid_z(at)
    at.slider(key="n_heads").set_value(4).run()
    no_exception(at)
    after = grid_z(at)
    assert after.shape != before.shape
    at.select_slider(key="n_kv_heads").set_value(1).run()
    np.testing.assert_allclose(grid_z(at)[:11, :11], expected(n_heads=4, n_kv_heads=1).weights[0], atol=1e-6)
    at.toggle(key="scaling").set_value(False).run()
    unscaled = compute_attention_maps(
        AttentionConfig(n_heads=4, n_kv_heads=1, head_dim=16, use_scaling=False), tokenize(DEFAULT_TEXT)
    )
    np.testing.assert_allclose(grid_z(at)[:11, :11], unscaled.weights[0], atol=1e-6)


def test_causal_mask_greys_out_upper_triangle(app_test):
    at = app_test(PAGE, query={"mask": "causal"})
    no_exception(at)
    spec = chart_specs(at)[0]
    z = arr(spec["data"][0]["z"])
    assert np.isnan(z[0, 1]) and not np.isnan(z[1, 0])
    assert spec["data"][1]["name"] == "mask"


def test_text_and_synthetic_tokens(app_test):
    at = app_test(PAGE)
    at.text_area(key="text").set_value("注意力 is all you need 👍🏽").run()
    no_exception(at)
    ticks = chart_specs(at)[0]["layout"]["xaxis"]["ticktext"]
    assert "注 (0)" in ticks and "👍🏽 (7)" in ticks
    at.segmented_control(key="source").set_value("synthetic").run()
    at.slider(key="seq_len").set_value(40).run()
    no_exception(at)
    assert "t0 (0)" in chart_specs(at)[0]["layout"]["xaxis"]["ticktext"]
    assert grid_z(at).shape == (2 * 40 + 12, 4 * 40 + 3 * 5)  # 8 heads in 2 rows of 4; row gap 12, column gap 5


def test_cross_attention_is_rectangular(app_test):
    at = app_test(PAGE, query={"cross": "true", "n_heads": "2", "n_kv_heads": "1"})
    no_exception(at)
    z = grid_z(at)
    tq, tk = len(tokenize(DEFAULT_TEXT)), len(tokenize("Le chat était fatigué ."))
    assert z.shape[0] == tq and z.shape[1] > tk
    at.segmented_control(key="mask").set_value("causal").run()
    no_exception(at)
    assert at.error and "cross" in at.error[0].value


def test_step_by_step_shapes_and_entropy_views(app_test):
    at = app_test(PAGE, query={"view": "steps"})
    no_exception(at)
    specs = chart_specs(at)
    assert len(specs) == 8
    m = expected()
    np.testing.assert_allclose(arr(specs[3]["data"][0]["z"]), m.raw_scores[0], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(arr(specs[6]["data"][0]["z"]), m.weights[0], atol=1e-6)
    at.slider(key="head").set_value(5).run()
    np.testing.assert_allclose(arr(chart_specs(at)[1]["data"][0]["z"]), m.k[5 // 4], atol=1e-6)
    at.segmented_control(key="view").set_value("shapes").run()
    no_exception(at)
    table = at.dataframe[0].value
    assert "[B, H_kv, T, d_k] = [1, 2, 11, 16] each" in table.iloc[:, 2].tolist()
    at.segmented_control(key="view").set_value("entropy").run()
    no_exception(at)
    specs = chart_specs(at)
    assert len(specs[0]["data"]) == 8
    np.testing.assert_allclose(arr(specs[0]["data"][2]["y"]), m.entropy[2], atol=1e-6)


@pytest.mark.parametrize(
    "query,needle",
    [
        ({"n_heads": "abc"}, "n_heads=abc"),
        ({"n_heads": "1000"}, "n_heads=1000"),
        ({"head_dim": "-4"}, "head_dim=-4"),
        ({"temperature": "nan"}, "temperature=nan"),
        ({"mask": "diagonal"}, "mask=diagonal"),
        ({"view": "<script>"}, "view=<script>"),
    ],
)
def test_bad_url_values_warn_and_fall_back(app_test, query, needle):
    at = app_test(PAGE, query=query)
    no_exception(at)
    assert any(needle in w.value for w in at.warning), [w.value for w in at.warning]
    assert chart_specs(at), "the page still draws with defaults"


def test_non_divisor_kv_heads_snaps_with_notice(app_test):
    at = app_test(PAGE, query={"n_heads": "12", "n_kv_heads": "5"})
    no_exception(at)
    assert at.select_slider(key="n_kv_heads").value == 4
    assert any("valid values: 1, 2, 3, 4, 6, 12" in i.value.lower() for i in at.info)
    # changing n_heads so that the current choice no longer divides it also snaps
    at.slider(key="n_heads").set_value(9).run()
    no_exception(at)
    assert at.select_slider(key="n_kv_heads").value in (3,)


def test_empty_text_shows_error_not_traceback(app_test):
    at = app_test(PAGE)
    at.text_area(key="text").set_value("   ").run()
    no_exception(at)
    assert at.error and "no tokens" in at.error[0].value


def test_long_text_is_cut_with_notice(app_test):
    at = app_test(PAGE)
    at.text_area(key="text").set_value("word " * 300).run()
    no_exception(at)
    assert any("300" in w.value and "256" in w.value for w in at.warning)


def test_url_reproduces_numbers_and_chinese(app_test):
    q = {"n_heads": "4", "n_kv_heads": "2", "head_dim": "8", "seed": "7", "lang": "zh"}
    a, b = app_test(PAGE, query=q), app_test(PAGE, query=q)
    assert np.array_equal(grid_z(a), grid_z(b), equal_nan=True)
    np.testing.assert_allclose(grid_z(a)[:11, :11], expected(4, 2, 8, seed=7).weights[0], atol=1e-6)
    assert a.title[0].value == "注意力热力图"


def test_export_menu_under_every_chart(app_test):
    at = app_test(PAGE)
    buttons = at.get("download_button")
    labels = sorted(b.proto.label for b in buttons)
    assert labels == ["CSV", "HTML", "PDF", "PNG", "SVG"]


def test_presentation_mode_slides(app_test):
    at = app_test(PAGE, query={"present": "1", "view": "steps"})
    no_exception(at)
    assert at.session_state["present"] is True
    assert len(chart_specs(at)) == 1  # one step per slide
    spec = chart_specs(at)[0]
    assert spec["layout"]["font"]["size"] >= 20
    assert spec["layout"]["title"]["text"].startswith("Q ")

    def click(key):
        at.button(key=key).click().run()
        no_exception(at)
        return chart_specs(at)[0]["layout"]["title"]["text"]

    click("slide__next")
    click("slide__next")
    assert click("slide__next").startswith("QKᵀ")
    assert click("slide__prev").startswith("V ")
    title = ""
    for _ in range(10):
        if not at.button(key="slide__next").disabled:
            title = click("slide__next")
    assert title.startswith("output")
    assert at.button(key="slide__next").disabled
