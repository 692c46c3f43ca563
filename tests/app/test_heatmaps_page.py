"""AppTest: the attention-heatmap page, its controls, URL parameters and bad input."""

import re

import numpy as np
import pytest

from attn_core.attention.maps import compute_attention_maps
from attn_core.attention.tokens import tokenize
from attn_core.runtime.config import AttentionConfig
from tests.conftest import no_exception
from tests.util import arr, chart_specs, grid_heads, grid_labels

PAGE = "app_pages/heatmaps.py"
DEFAULT_TEXT = "The cat sat on the mat because it was tired ."


def grid_z(at) -> np.ndarray:
    """The grid chart's panels, one per head: ``[H, Tq, Tk]`` (NaN = masked; the click layer's scatters left out)."""
    return grid_heads(chart_specs(at)[0])


def expected(n_heads=8, n_kv_heads=2, head_dim=16, text=DEFAULT_TEXT, seed=0, **kw):
    cfg = AttentionConfig(n_heads=n_heads, n_kv_heads=n_kv_heads, head_dim=head_dim, seed=seed)
    return compute_attention_maps(cfg, tokenize(text), **kw)


def test_defaults_render_grid_with_right_numbers(app_test):
    at = app_test(PAGE)
    no_exception(at)
    assert not at.error and not at.warning
    z = grid_z(at)
    m = expected()
    np.testing.assert_allclose(z, m.weights, atol=1e-6)
    spec = chart_specs(at)[0]
    assert (
        "text" not in spec["data"][0]
        and "head %{customdata[0]}</b> · KV %{customdata[2]}" in spec["data"][1]["hovertemplate"]
    )
    labels_q, labels_k = grid_labels(spec)
    assert labels_k[2] == "sat (2)" and labels_q[0] == "The (0)"
    assert "GQA" in at.markdown[0].value and "8" in at.markdown[0].value
    assert not at.get("segmented_control") or all(w.key != "pool" for w in at.segmented_control)  # not pooled


def test_controls_change_the_map(app_test):
    at = app_test(PAGE)
    before = grid_z(at)
    at.slider(key="n_heads").set_value(4).run()
    no_exception(at)
    after = grid_z(at)
    assert after.shape != before.shape
    at.select_slider(key="n_kv_heads").set_value(1).run()
    np.testing.assert_allclose(grid_z(at), expected(n_heads=4, n_kv_heads=1).weights, atol=1e-6)
    at.toggle(key="scaling").set_value(False).run()
    unscaled = compute_attention_maps(
        AttentionConfig(n_heads=4, n_kv_heads=1, head_dim=16, use_scaling=False), tokenize(DEFAULT_TEXT)
    )
    np.testing.assert_allclose(grid_z(at), unscaled.weights, atol=1e-6)


def test_causal_mask_greys_out_upper_triangle(app_test):
    at = app_test(PAGE, query={"mask": "causal"})
    no_exception(at)
    spec = chart_specs(at)[0]
    z = grid_z(at)
    assert np.isnan(z[:, 0, 1]).all() and not np.isnan(z[:, 1, 0]).any()
    m = expected(mask_kind="causal")
    np.testing.assert_allclose(z, np.where(m.mask, m.weights, np.nan), atol=1e-6)
    greys = [sh for sh in spec["layout"]["shapes"] if sh.get("fillcolor") == "#b8b8b8"]
    assert len(greys) == 8 and all(sh["layer"] == "below" for sh in greys)  # shows through the NaN cells


def test_text_and_synthetic_tokens(app_test):
    at = app_test(PAGE)
    at.text_area(key="text").set_value("注意力 is all you need 👍🏽").run()
    no_exception(at)
    ticks = grid_labels(chart_specs(at)[0])[1]
    assert "注 (0)" in ticks and "👍🏽 (7)" in ticks
    at.segmented_control(key="source").set_value("synthetic").run()
    at.slider(key="seq_len").set_value(40).run()
    no_exception(at)
    assert "t0 (0)" in grid_labels(chart_specs(at)[0])[1]
    assert grid_z(at).shape == (8, 40, 40)


def test_cross_attention_is_rectangular(app_test):
    at = app_test(PAGE, query={"cross": "true", "n_heads": "2", "n_kv_heads": "1"})
    no_exception(at)
    z = grid_z(at)
    tq, tk = len(tokenize(DEFAULT_TEXT)), len(tokenize("Le chat était fatigué ."))
    assert z.shape == (2, tq, tk)
    np.testing.assert_allclose(z.sum(-1), 1.0, atol=1e-5)
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
    np.testing.assert_allclose(arr(specs[0]["data"][2]["y"]), m.entropy[2], atol=1e-5)


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
    np.testing.assert_allclose(grid_z(a), expected(4, 2, 8, seed=7, text="猫坐在垫子上，它累了。").weights, atol=1e-6)
    assert a.title[0].value == "注意力热力图"


def test_export_menu_under_every_chart_drawn_only_when_open(app_test):
    at = app_test(PAGE)
    assert not at.get("download_button")  # closed: one element per chart, no buttons built on a rerun
    at.session_state["grid__export"] = True  # what opening the popover sends
    at.run()
    no_exception(at)
    labels = sorted(b.proto.label for b in at.get("download_button"))
    assert labels == ["CSV", "HTML", "PDF", "PNG", "SVG"]
    assert [b.proto.options for b in at.get("button_group")][-1]  # the image-size choice is there too


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


LONG = {"source": "synthetic", "seq_len": "8192", "n_heads": "32", "n_kv_heads": "8"}
MAX_CHART_BYTES = 2_000_000


def chart_sizes(at) -> list[int]:
    return [len(el.proto.spec) for el in at.get("plotly_chart")]


def test_long_sequence_grid_is_pooled_light_and_says_so(app_test):
    """8192 tokens x 8 heads: every head pooled to at most 256x256 blocks, the chart under 2 MB, pooling stated
    (64 heads: tests/app/test_chart_sizes.py)."""
    at = app_test(PAGE, query={**LONG, "n_heads": "8", "n_kv_heads": "2"})
    no_exception(at)
    assert not at.error
    z = grid_z(at)
    assert z.shape[0] == 8 and z.shape[1] == z.shape[2] <= 256
    f = -(-8192 // z.shape[1])
    spec = chart_specs(at)[0]
    assert f"{f}×{f}" in spec["layout"]["title"]["text"] and "8192×8192" in spec["layout"]["title"]["text"]
    assert grid_labels(spec)[1][0] == f"0–{f - 1}"
    assert max(chart_sizes(at)) < MAX_CHART_BYTES
    assert np.nanmax(z) <= 1.0 and np.nanmin(z) >= 0.0
    # long rows spread their weight thin: the colour scale is fitted (99.5th percentile) by default, and says so
    top = spec["layout"]["coloraxis"]["cmax"]
    assert top == pytest.approx(float(np.percentile(z[np.isfinite(z)], 99.5)), rel=1e-5) and top < 0.5
    assert "99.5th percentile" in spec["layout"]["title"]["text"]
    at.segmented_control(key="cscale").set_value("fixed").run()
    assert chart_specs(at)[0]["layout"]["coloraxis"]["cmax"] == 1
    # block mean: the mean weight of a block of a row-stochastic map is 1/8192 on average
    at.segmented_control(key="pool").set_value("mean").run()
    no_exception(at)
    mean = grid_z(at)
    assert "mean" in chart_specs(at)[0]["layout"]["title"]["text"]
    np.testing.assert_allclose(np.nanmean(mean, axis=(1, 2)), 1 / 8192, rtol=0.05)
    assert (mean <= z + 1e-7).all()  # a block's mean never exceeds its max


@pytest.mark.parametrize("view", ["zoom", "steps", "shapes"])  # entropy at 64 heads: tests/app/test_chart_sizes.py
def test_long_sequence_views_stay_light(app_test, view):
    at = app_test(PAGE, query={**LONG, "view": view, "mask": "causal"})
    no_exception(at)
    assert not at.error
    assert all(size < MAX_CHART_BYTES for size in chart_sizes(at))


def test_zoom_window_shows_exact_weights(app_test):
    """A 64-token window of one head at full resolution equals the full computation's weights there."""
    q = {"source": "synthetic", "seq_len": "300", "n_heads": "4", "n_kv_heads": "2", "view": "zoom", "mask": "causal"}
    at = app_test(PAGE, query=q)
    no_exception(at)
    whole = grid_z(at)
    assert whole.shape == (1, 300, 300)  # 300 <= 512 a side: no pooling
    at.select_slider(key="zoom_size").set_value(64).run()
    at.slider(key="head").set_value(3).run()
    at.slider(key="q_start").set_value(100).run()
    at.slider(key="k_start").set_value(40).run()
    no_exception(at)
    cfg = AttentionConfig(n_heads=4, n_kv_heads=2, head_dim=16)
    m = compute_attention_maps(cfg, [f"t{i}" for i in range(300)], mask_kind="causal")
    want = np.where(m.mask, m.weights, np.nan)[3, 100:164, 40:104]
    np.testing.assert_allclose(grid_z(at)[0], want, atol=1e-6)
    assert "queries 100–163, keys 40–103 of 300×300" in chart_specs(at)[0]["layout"]["title"]["text"]


def test_steps_window_on_a_long_sequence(app_test):
    q = {"source": "synthetic", "seq_len": "200", "view": "steps"}
    at = app_test(PAGE, query=q)
    at.slider(key="q_start").set_value(50).run()
    no_exception(at)
    m = compute_attention_maps(AttentionConfig(), [f"t{i}" for i in range(200)])
    specs = chart_specs(at)
    np.testing.assert_allclose(arr(specs[6]["data"][0]["z"]), m.weights[0, 50:114, :64], atol=1e-6)
    np.testing.assert_allclose(arr(specs[7]["data"][0]["z"]), m.head_outputs[0, 50:114], atol=1e-5)
    assert specs[6]["data"][0]["y"][0] == "t50 (50)"
    assert any("rows 50–113" in c.value for c in at.caption)


# ---- issue 12: the scale line, shapes of cross-attention, the "how to read" help, plurals, random weights


def summary(at) -> str:
    """The page's summary line (the first markdown after any "only possible value" control lines)."""
    return next(m.value for m in at.markdown if "(the only possible value here)" not in m.value)


@pytest.mark.parametrize(
    "query,line",
    [
        ({}, "scores × 1/√16 ÷ τ = 1/4 ÷ 1 = **0.25**"),
        ({"temperature": "0.5"}, "scores × 1/√16 ÷ τ = 1/4 ÷ 0.5 = **0.5**"),
        ({"scaling": "false", "temperature": "0.5"}, "scores ÷ τ = 1 ÷ 0.5 = **2**"),
        ({"scaling": "false"}, "scores ÷ τ = 1 ÷ 1 = **1**"),
        ({"scaling": "false", "temperature": "0.5", "lang": "zh"}, "分数 ÷ τ = 1 ÷ 0.5 = **2**"),
    ],
)
def test_scale_line_is_built_from_the_factors_applied(app_test, query, line):
    at = app_test(PAGE, query=query)
    no_exception(at)
    assert line in summary(at)
    if query.get("scaling") == "false":
        assert "× 1/√" not in summary(at).rsplit("·", 1)[1]  # no 1/√d_k factor in the formula


@pytest.mark.parametrize(
    "scaling,tau,factor,title,needle,absent",
    [
        ("false", "0.5", 2.0, "not scaled by 1/√d_k: ÷ 0.5 = ×2", "Var(q·k/τ) ≈ d_k/τ² = 64", "unit variance"),
        ("false", "1", 1.0, "not scaled by 1/√d_k: ÷ 1 = ×1", "about d_k = 16, not 1", "unit variance"),
        ("true", "2", 0.125, "scaled ×1/√16 ÷ 2 = ×0.125", "1/τ² = 0.25", "keep unit variance"),
        ("true", "1", 0.25, "scaled ×1/√16 ÷ 1 = ×0.25", "the scores keep unit variance", "τ²"),
    ],
)
def test_step_five_says_what_is_applied(app_test, scaling, tau, factor, title, needle, absent):
    """The scaled panel's title and the sentence above it match the factor that produced its numbers."""
    at = app_test(PAGE, query={"view": "steps", "scaling": scaling, "temperature": tau})
    no_exception(at)
    specs = chart_specs(at)
    raw, scaled = arr(specs[3]["data"][0]["z"]), arr(specs[4]["data"][0]["z"])
    np.testing.assert_allclose(scaled, raw * factor, rtol=1e-5, atol=1e-6)
    assert specs[4]["layout"]["title"]["text"].startswith(title)
    step5 = next(m.value for m in at.markdown if m.value.startswith("**5.**"))
    assert needle in step5 and absent not in step5


def test_step_five_in_chinese(app_test):
    at = app_test(PAGE, query={"view": "steps", "scaling": "false", "temperature": "0.5", "lang": "zh"})
    no_exception(at)
    step5 = next(m.value for m in at.markdown if m.value.startswith("**5.**"))
    assert "Var(q·k/τ) ≈ d_k/τ² = 64" in step5 and "未按 1/√d_k 缩放" in step5
    assert chart_specs(at)[4]["layout"]["title"]["text"].startswith("未按 1/√d_k 缩放：÷ 0.5 = ×2")


CROSS = {"cross": "true", "n_heads": "12", "n_kv_heads": "4", "head_dim": "64"}


def test_cross_attention_shapes_name_both_lengths(app_test):
    at = app_test(PAGE, query={**CROSS, "view": "shapes"})
    no_exception(at)
    table = at.dataframe[0].value
    steps, ops, shapes = (table.iloc[:, i].tolist() for i in range(3))
    assert steps[:2] == ["Input", "Context (keys and values)"]
    assert shapes[:2] == ["[B, T_q, d_model] = [1, 11, 768]", "[B, T_k, d_model] = [1, 5, 768]"]
    assert "[B, H_kv, T_k, d_k] = [1, 4, 5, 64] each" in shapes
    assert shapes.count("[B, H, T_q, T_k] = [1, 12, 11, 5]") == 2  # scores and softmax
    assert not [s for s in shapes if "T," in s or "T]" in s]  # no bare T once there are two lengths
    assert "c W_K and c W_V, split into KV heads" in ops and "repeat each KV head 3×" in ops
    note = next(c.value for c in at.caption if "T_q =" in c.value)
    assert "T_q = 11 tokens" in note and "T_k = 5 tokens" in note and "[B, H_kv, T_k, d_k]" in note


def test_shapes_table_is_translated(app_test):
    at = app_test(PAGE, query={**CROSS, "view": "shapes", "lang": "zh"})
    no_exception(at)
    ops = at.dataframe[0].value.iloc[:, 1].tolist()
    assert "c W_K 与 c W_V，拆分为各 KV 头" in ops and "每个 KV 头重复 3 次" in ops and "对键做 softmax" in ops
    words = {w.lower() for op in ops for w in re.findall(r"[A-Za-z]{3,}", op)}
    assert words <= {"softmax"}, words


def test_cross_attention_step_titles_name_both_lengths(app_test):
    at = app_test(PAGE, query={**CROSS, "view": "steps"})
    no_exception(at)
    titles = [s["layout"]["title"]["text"] for s in chart_specs(at)]
    assert titles[0].endswith("[T_q, d_k] = [11, 64]") and titles[1].endswith("[T_k, d_k] = [5, 64]")
    assert titles[3] == "QKᵀ   [T_q, T_k] = [11, 5]" and titles[6].endswith("[T_q, T_k] = [11, 5]")
    assert any("context's embeddings times W_K" in m.value for m in at.markdown)


def read_help(at) -> str:
    exp = next(e for e in at.expander if e.label == "How to read these maps")
    return " ".join(m.value for m in exp.markdown)


def test_read_help_says_what_the_chart_is(app_test):
    at = app_test(PAGE)
    text = read_help(at)
    assert "each row sums to 1" in text and "fixed from 0 to 1" in text and "Grey" not in text
    # a long sequence: pooled (block max) and a fitted scale, with its top value
    at = app_test(PAGE, query={"source": "synthetic", "seq_len": "600", "mask": "causal"})
    no_exception(at)
    spec = chart_specs(at)[0]
    top = spec["layout"]["coloraxis"]["cmax"]
    f = -(-600 // len(grid_labels(spec)[1]))
    text = read_help(at)
    assert top < 1 and f"0 to {top:.3g}" in text and "fitted" in text and "99.5th percentile" in text
    assert f"largest weight in a block of {f}×{f}" in text and "does not sum to 1" in text
    assert "each row sums to 1" not in text and "fixed from 0 to 1" not in text and "Grey cells" in text
    at.segmented_control(key="pool").set_value("mean").run()
    assert "mean weight over the allowed cells" in read_help(at)
    at.segmented_control(key="cscale").set_value("fixed").run()
    assert "fixed from 0 to 1" in read_help(at) and "fitted" not in read_help(at)


SINGULAR_AS_PLURAL = re.compile(r"\b1 (query heads|KV heads|KV groups|heads|queries|keys|tokens|base heads)\b")


def page_text(at) -> str:
    texts = [e.value for kind in ("markdown", "caption", "info", "warning") for e in at.get(kind)]
    texts += [e.value for exp in at.expander for e in exp.markdown]
    texts += [s["layout"]["title"]["text"] for s in chart_specs(at)]
    if at.get("arrow_data_frame"):
        texts += [str(v) for df in at.dataframe for v in df.value.to_numpy().ravel()]
    return "\n".join(texts)


@pytest.mark.parametrize(
    "query",
    [
        {"n_heads": "1", "n_kv_heads": "1"},
        {"n_heads": "8", "n_kv_heads": "1"},
        {"n_heads": "8", "n_kv_heads": "8", "view": "steps"},
        {"n_heads": "1", "view": "shapes"},
        {"cross": "true", "cross_text": "chat", "n_heads": "1", "view": "shapes"},
        {"text": "cat", "n_heads": "1", "view": "zoom"},
    ],
)
def test_counts_of_one_are_singular(app_test, query):
    at = app_test(PAGE, query=query)
    no_exception(at)
    text = page_text(at)
    assert not SINGULAR_AS_PLURAL.search(text), SINGULAR_AS_PLURAL.search(text)


def test_plural_wording_in_the_summary_and_titles(app_test):
    at = app_test(PAGE, query={"n_heads": "8", "n_kv_heads": "1"})
    assert "8 query heads, 1 KV head (8 query heads per KV head)" in summary(at)
    assert "8 query heads, 1 KV group" in chart_specs(at)[0]["layout"]["title"]["text"]
    at = app_test(PAGE, query={"n_heads": "1", "text": "cat", "cross": "true", "cross_text": "chat"})
    assert "1 query head, 1 KV head (1 query head per KV head)" in summary(at)
    assert "1 query × 1 key" in summary(at)


@pytest.mark.parametrize("lang,needle", [("en", "seeded random numbers"), ("zh", "按种子生成的随机数")])
def test_random_weights_are_said_to_be_random(app_test, lang, needle):
    at = app_test(PAGE, query={"lang": lang, "seed": "5"})
    no_exception(at)
    note = [c.value for c in at.caption if needle in c.value]
    assert note and ("seed 5" in note[0] or "种子 5" in note[0])


def test_fitted_colour_scale_follows_the_data_until_the_learner_picks(app_test):
    """The scale's default depends on the length: it must follow a change of data, not stick to the first."""
    at = app_test(PAGE)
    assert at.segmented_control(key="cscale").value == "fixed"  # 11 tokens
    at.segmented_control(key="source").set_value("synthetic").run()
    at.slider(key="seq_len").set_value(300).run()
    no_exception(at)
    assert at.segmented_control(key="cscale").value == "fit"
    assert chart_specs(at)[0]["layout"]["coloraxis"]["cmax"] < 0.5
    at.slider(key="seq_len").set_value(40).run()
    assert at.segmented_control(key="cscale").value == "fixed"  # back to a short sequence
    # an explicit choice pins it: longer data no longer moves it, also after a visit to another view
    at.segmented_control(key="cscale").set_value("fit").run()
    at.slider(key="seq_len").set_value(30).run()
    assert at.segmented_control(key="cscale").value == "fit"
    at.segmented_control(key="view").set_value("shapes").run()
    at.segmented_control(key="view").set_value("grid").run()
    no_exception(at)
    assert at.segmented_control(key="cscale").value == "fit"
    assert chart_specs(at)[0]["layout"]["coloraxis"]["cmax"] < 1


def test_colour_scale_from_the_link_is_kept(app_test):
    at = app_test(PAGE, query={"source": "synthetic", "seq_len": "300", "cscale": "fixed"})
    assert at.segmented_control(key="cscale").value == "fixed"
    at.slider(key="seq_len").set_value(400).run()
    assert at.segmented_control(key="cscale").value == "fixed"
    assert chart_specs(at)[0]["layout"]["coloraxis"]["cmax"] == 1


# ---- the example sentence follows the viewer's language; a typed or linked text stays
ZH_TEXT = "猫坐在垫子上，它累了。"


def test_the_example_sentence_is_chinese_under_zh(app_test):
    at = app_test(PAGE, query={"lang": "zh"})
    no_exception(at)
    assert at.text_area(key="text").value == ZH_TEXT
    labels_q, labels_k = grid_labels(chart_specs(at)[0])
    assert labels_q == [f"{tok} ({i})" for i, tok in enumerate(tokenize(ZH_TEXT))] == labels_k
    assert labels_q[7] == "它 (7)" and len(labels_q) == 11
    np.testing.assert_allclose(grid_z(at), expected(text=ZH_TEXT).weights, atol=1e-6)
    assert "text" not in at.query_params  # the default: not in the address or the share link
    at = app_test(PAGE, query={"lang": "zh", "cross": "true"})
    no_exception(at)
    assert at.text_area(key="cross_text").value == "小猫很累。"
    _, labels_k = grid_labels(chart_specs(at)[0])
    assert labels_k == [f"{tok} ({i})" for i, tok in enumerate(tokenize("小猫很累。"))]


def test_a_linked_text_stays_in_either_language(app_test):
    at = app_test(PAGE, query={"lang": "zh", "text": "The cat sat"})
    no_exception(at)
    assert at.text_area(key="text").value == "The cat sat"
    assert grid_labels(chart_specs(at)[0])[0] == ["The (0)", "cat (1)", "sat (2)"]
    at = app_test(PAGE, query={"lang": "en", "text": ZH_TEXT})
    assert at.text_area(key="text").value == ZH_TEXT


def test_the_example_follows_a_change_of_language_and_a_typed_text_does_not(app_test):
    at = app_test(PAGE)
    assert at.text_area(key="text").value == DEFAULT_TEXT
    at.segmented_control(key="lang").set_value("zh").run()
    no_exception(at)
    assert at.text_area(key="text").value == ZH_TEXT
    assert grid_labels(chart_specs(at)[0])[0][0] == "猫 (0)"
    at = app_test(PAGE)  # (AppTest cannot press a selector again once its options changed language)
    at.text_area(key="text").input("the dog barked").run()
    at.segmented_control(key="lang").set_value("zh").run()
    no_exception(at)
    assert at.text_area(key="text").value == "the dog barked"
    assert grid_labels(chart_specs(at)[0])[0] == ["the (0)", "dog (1)", "barked (2)"]


def test_the_command_line_draws_the_example_in_the_charts_language():
    from attn_core import figures
    from attn_core.views import heatmaps as hm

    (zh,) = hm.views(hm.Params(), figures.Style(lang="zh"), "grid")
    assert zh.figure.__dict__["_plain"][1]["yaxis"]["ticktext"][0] == "猫 (0)"
    (typed,) = hm.views(hm.Params(text="the dog"), figures.Style(lang="zh"), "grid")
    assert typed.figure.__dict__["_plain"][1]["yaxis"]["ticktext"][0] == "the (0)"
