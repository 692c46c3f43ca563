"""AppTest: the softmax-saturation page, its controls, URL parameters, the memory guard and the numbers shown."""

import json
import math

import numpy as np
import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from attn_core.saturation import examples, measures, sampling
from attn_core.saturation import sweep as sat_sweep
from attn_core.saturation.sampling import SamplingSpec as S
from tests.conftest import ROOT, no_exception
from tests.util import arr, decoded

PAGE = "app_pages/saturation.py"


def open_page(app_test, head_dim: int = 64, **session) -> AppTest:
    """The page inside the whole app. The fixture runs the heatmap page first, whose head_dim (16) carries
    over through the shared key, so d_k is set once the page has run (its default, 64, unless told)."""
    at = app_test(PAGE, session=session or None)
    at.session_state["head_dim"] = head_dim
    return at.run()


def charts(at) -> dict[str, dict]:
    """Plotly JSON of every chart, by the key the page gave it (``sat_curves`` ...)."""
    return {c.proto.id.rsplit("-", 1)[-1]: json.loads(c.proto.spec) for c in at.get("plotly_chart")}


def traces(spec: dict, name: str) -> list[dict]:
    return [tr for tr in spec["data"] if tr.get("name") == name]


def fresh(query: dict[str, str]) -> AppTest:
    """The page alone in a brand-new session, as a visitor opening a link: no state from other pages."""
    at = AppTest.from_file(str(ROOT / PAGE), default_timeout=600)
    for key, value in query.items():
        at.query_params[key] = value
    return at.run()


def sweep(seq_len=16, n_samples=256, seed=0, distribution="normal", temperature=1.0):
    return sat_sweep.saturation_sweep(S(seq_len, n_samples, seed, distribution), sat_sweep.SWEEP_D_K, temperature)


def curve(spec: dict, panel: int, name: str, field: str = "y") -> np.ndarray:
    """``field`` of the ``name`` curve (``unscaled``/``scaled by 1/√d_k``) in panel ``panel`` (0-based) of a chart."""
    axis = "y" if panel == 0 else f"y{panel + 1}"
    (tr,) = [t for t in spec["data"] if t.get("name") == name and t.get("yaxis", "y") == axis]
    return arr(tr[field])


def test_defaults_render_with_the_numbers_of_attn_core(app_test):
    at = open_page(app_test)
    no_exception(at)
    assert not at.error and not at.warning
    specs = charts(at)
    assert list(specs) == ["sat_dist", "sat_maps", "sat_curves", "sat_grads", "sat_row", "sat_fp16"]
    sample = sat_sweep.score_sample(S(16, 256, 0), 64)
    example = examples.example_scores(S(16, 256, 0), 64)  # the first sequence: maps, row and float16 views
    summary = at.markdown[0].value
    assert f"{sample.raw_var:.4g}" in summary and f"{sample.scaled_var:.4g}" in summary and "65,536" in summary
    assert "√64 = **8**" in summary and "**0.125**" in summary
    # the curves are the sweep, unscaled and scaled, in every panel
    df = sweep()
    unscaled, scaled = df[~df["scaled"]], df[df["scaled"]]
    c = specs["sat_curves"]
    for panel, column in enumerate(("score_var", "max_weight", "entropy", "saturated_frac")):
        np.testing.assert_allclose(curve(c, panel, "unscaled"), unscaled[column], rtol=1e-6)
        np.testing.assert_allclose(curve(c, panel, "scaled by 1/√d_k"), scaled[column], rtol=1e-6)
    assert c["layout"]["xaxis"]["type"] == "log"
    # the current d_k is marked in all four panels, on both curves
    markers = traces(c, "current")
    assert len(markers) == 4 and all(m["x"] == [64, 64] for m in markers)
    # the gradients: mean, median and share of tiny rows of ‖J‖_F, ‖∂L/∂z‖ and ‖∂L/∂q‖, as measured
    g = specs["sat_grads"]
    columns = [n + x for n in ("jacobian_norm", "grad_norm", "grad_q_norm") for x in ("", "_median", "_small")]
    for panel, column in enumerate(columns):
        np.testing.assert_allclose(curve(g, panel, "unscaled", "customdata"), unscaled[column], rtol=1e-6)
        np.testing.assert_allclose(curve(g, panel, "scaled by 1/√d_k", "customdata"), scaled[column], rtol=1e-6)
    assert len(traces(g, "current")) == 9
    # the two maps: same scores, scaled and unscaled, on one 0..1 colour axis
    m = specs["sat_maps"]
    np.testing.assert_allclose(arr(m["data"][0]["z"]), measures.softmax_weights(example, 1.0), atol=1e-6)
    np.testing.assert_allclose(arr(m["data"][1]["z"]), measures.softmax_weights(example, 1 / 8), atol=1e-6)
    assert m["data"][0]["coloraxis"] == m["data"][1]["coloraxis"] == "coloraxis"
    assert (m["layout"]["coloraxis"]["cmin"], m["layout"]["coloraxis"]["cmax"]) == (0, 1)
    # one row: the first query of the first sequence, scaled, with its Jacobian on a fixed ±0.25 scale
    row = measures.row_softmax(example[0], 1 / 8, 1.0)
    r = specs["sat_row"]
    np.testing.assert_allclose(arr(r["data"][0]["y"]), row.p, atol=1e-6)
    np.testing.assert_allclose(arr(r["data"][1]["z"]), row.jacobian, rtol=1e-5, atol=1e-6)  # float32 entries <= 0.25
    assert (r["layout"]["coloraxis"]["cmin"], r["layout"]["coloraxis"]["cmax"]) == (-0.25, 0.25)


def test_d_k_moves_the_marker_and_changes_the_maps(app_test):
    at = open_page(app_test)
    at.select_slider(key="head_dim").set_value(512).run()
    no_exception(at)
    specs = charts(at)
    markers = traces(specs["sat_curves"], "current")
    assert all(m["x"] == [512, 512] for m in markers)
    df = sweep().set_index(["d_k", "scaled"])
    # panel 2 (mean max weight): the markers sit on the unscaled and scaled values at d_k = 512
    np.testing.assert_allclose(
        arr(markers[1]["y"]), [df.loc[(512, False), "max_weight"], df.loc[(512, True), "max_weight"]], rtol=1e-6
    )
    assert df.loc[(512, False), "max_weight"] > 0.9
    example = examples.example_scores(S(16, 256, 0), 512)
    np.testing.assert_allclose(
        arr(specs["sat_maps"]["data"][0]["z"]), measures.softmax_weights(example, 1.0), atol=1e-6
    )
    assert traces(specs["sat_fp16"], "current")[0]["x"] == [512]
    assert "d_k = **512**" in at.markdown[0].value
    # unscaled scores at d_k = 512 break the naive float16 softmax of this row
    assert "broken" in " ".join(md.value for md in at.markdown)
    table = at.dataframe[0].value  # headers translated for the screen
    assert table["naive exp/Σexp (float16)"].isna().any() and np.isfinite(table["max-subtracted (float16)"]).all()
    demo = measures.float16_demo(example[0])
    np.testing.assert_allclose(table["max-subtracted (float16)"], demo.stable)


def test_scaling_and_temperature_change_the_row_and_the_marker(app_test):
    at = open_page(app_test)
    example = examples.example_scores(S(16, 256, 0), 64)
    at.toggle(key="scaling").set_value(False).run()
    no_exception(at)
    specs = charts(at)
    np.testing.assert_allclose(
        arr(specs["sat_row"]["data"][0]["y"]), measures.row_softmax(example[0], 1.0).p, atol=1e-6
    )
    symbols = traces(specs["sat_curves"], "current")[0]["marker"]["symbol"]
    assert symbols == ["circle", "circle-open"]  # the unscaled marker is filled now
    assert "**off**" in at.markdown[1].value
    at.slider(key="temperature").set_value(0.5).run()
    no_exception(at)
    specs = charts(at)
    np.testing.assert_allclose(
        arr(specs["sat_row"]["data"][0]["y"]), measures.row_softmax(example[0], 1.0, 0.5).p, atol=1e-6
    )
    df = sweep(temperature=0.5)
    np.testing.assert_allclose(curve(specs["sat_curves"], 1, "unscaled"), df[~df["scaled"]]["max_weight"], rtol=1e-6)


def test_a_temperature_move_measures_from_the_kept_scores(app_test, monkeypatch):
    at = open_page(app_test)
    drawn = []
    real = sampling._draw_block
    monkeypatch.setattr(sampling, "_draw_block", lambda *a, **k: drawn.append(a[0]) or real(*a, **k))
    at.slider(key="temperature").set_value(0.35).run()  # a τ no other test uses: the sweep is not cached
    no_exception(at)
    assert drawn == []  # no q and k sampled again: only the softmax and the gradients were measured
    df = sweep(temperature=0.35)
    np.testing.assert_allclose(
        curve(charts(at)["sat_curves"], 1, "unscaled"), df[~df["scaled"]]["max_weight"], rtol=1e-6
    )


def test_keys_samples_distribution_row_and_seed_change_the_numbers(app_test):
    at = open_page(app_test)
    at.slider(key="seq_len").set_value(8).run()
    no_exception(at)
    assert arr(charts(at)["sat_maps"]["data"][0]["z"]).shape == (8, 8)
    at.select_slider(key="samples").set_value(64).run()
    no_exception(at)
    assert f"{64 * 8 * 8:,} scores" in at.markdown[0].value
    at.slider(key="row").set_value(5).run()
    example = examples.example_scores(S(8, 64, 0), 64)
    np.testing.assert_allclose(
        arr(charts(at)["sat_row"]["data"][0]["y"]), measures.row_softmax(example[5], 1 / 8).p, atol=1e-6
    )
    at.segmented_control(key="dist").set_value("projected").run()
    no_exception(at)
    projected = sat_sweep.score_sample(S(8, 64, 0, "projected"), 64)
    assert f"{projected.raw_var:.4g}" in at.markdown[0].value
    df = sweep(8, 64, 0, "projected")
    np.testing.assert_allclose(
        curve(charts(at)["sat_curves"], 0, "unscaled"), df[~df["scaled"]]["score_var"], rtol=1e-6
    )
    # the global seed (sidebar) resamples everything
    at.session_state["seed"] = 7
    at.run()
    no_exception(at)
    assert f"{sat_sweep.score_sample(S(8, 64, 7, 'projected'), 64).raw_var:.4g}" in at.markdown[0].value


def test_a_shorter_sequence_clamps_the_row(app_test):
    at = open_page(app_test)
    at.slider(key="row").set_value(15).run()
    at.slider(key="seq_len").set_value(4).run()
    no_exception(at)
    assert at.slider(key="row").value == 3
    assert len(arr(charts(at)["sat_row"]["data"][0]["y"])) == 4


@pytest.mark.parametrize(
    "query,kind,text,d_k",
    [
        ({"head_dim": "0"}, "warning", "head_dim=0", 64),
        ({"head_dim": "abc"}, "warning", "head_dim=abc", 64),
        ({"head_dim": "100"}, "info", "nearest one, 128", 128),
        ({"samples": "100"}, "info", "nearest one, 128", 64),
        ({"seq_len": "1"}, "warning", "seq_len=1", 64),
        ({"dist": "uniform"}, "warning", "dist=uniform", 64),
        ({"scaling": "maybe"}, "warning", "scaling=maybe", 64),
    ],
)
def test_bad_url_values_give_a_notice_not_a_traceback(query, kind, text, d_k):
    at = fresh(query)
    no_exception(at)
    notices = [n.value for n in getattr(at, kind)]
    assert any(text in n for n in notices), notices
    assert at.select_slider(key="head_dim").value == d_k
    assert len(at.get("plotly_chart")) == 6


def test_memory_budget_refuses_the_sweep_and_keeps_the_rest(app_test, monkeypatch):
    # 8 MiB: one d_k = 64 sample (5 MiB) fits, the sweep up to d_k = 1024 (35 MiB) does not
    monkeypatch.setenv("ATTN_MAX_BYTES", str(8 * 2**20))
    st.cache_data.clear()  # earlier tests cached this sweep under the default budget
    at = open_page(app_test)
    no_exception(at)
    (err,) = at.error
    assert "ATTN_MAX_BYTES" in err.value and "8.00 MiB" in err.value and "at most" in err.value
    assert list(charts(at)) == ["sat_dist", "sat_maps", "sat_row"]
    assert [s.value for s in at.subheader][-1].startswith("7")


def test_chinese_and_presentation_mode(app_test):
    at = open_page(app_test, lang="zh", present=True)
    no_exception(at)
    assert at.title[0].value.startswith("Softmax 饱和")
    assert "分数的分布" in at.subheader[0].value
    assert list(charts(at)) == ["sat_dist"]  # one section a slide
    fonts = [charts(at)["sat_dist"]["layout"]["font"]["size"]]
    for _ in range(2):  # Next, Next: the third section, saturation against d_k
        at.button(key="slide__next").click().run()
    no_exception(at)
    specs = charts(at)
    assert list(specs) == ["sat_curves"] and [s.value for s in at.subheader] == ["3 · 饱和程度随 d_k 的变化"]
    assert "softmax 饱和随 d_k 的变化" in specs["sat_curves"]["layout"]["title"]["text"]
    assert min(fonts + [s["layout"]["font"]["size"] for s in specs.values()]) >= 20
    assert specs["sat_curves"]["layout"]["xaxis3"]["title"]["text"].startswith("d_k（")  # a slide: under the bottom row


def test_explanations_substitute_the_users_numbers(app_test):
    at = open_page(app_test, 256)
    body = " ".join(md.value for md in at.markdown)
    assert "d_k = **256**" in body and "√256 = **16**" in body and "1/16 = 0.0625" in body
    df = sweep().set_index(["d_k", "scaled"])
    assert f"**{df.loc[(256, False), 'max_weight']:.3f}**" in body
    assert f"**{df.loc[(256, True), 'grad_norm']:.3g}**" in body
    assert math.isclose(df.loc[(256, True), "score_var"], 1.0, rel_tol=0.05)


LARGEST = {"seq_len": "8192", "samples": "16384"}


@pytest.mark.parametrize("d_k", [1024, 1])
def test_largest_settings_render_light_charts_and_say_what_was_measured(app_test, d_k):
    at = app_test(PAGE, query={**LARGEST, "head_dim": str(d_k)})
    no_exception(at)
    assert not at.error, [e.value for e in at.error]
    assert at.slider(key="seq_len").value == 8192 and at.select_slider(key="samples").value == 16384
    charts_ = at.get("plotly_chart")
    sizes = {c.proto.id.rsplit("-", 1)[-1]: len(c.proto.spec.encode("utf-8")) for c in charts_}
    assert list(sizes) == ["sat_dist", "sat_maps", "sat_curves", "sat_grads", "sat_row", "sat_fp16"]
    assert all(size < 2_000_000 for size in sizes.values()), sizes
    # 16384 × 8192 query rows; 8,388,608 / 8192 = 1024 of them measured, evenly spaced in the first sequence
    (note,) = [i.value for i in at.info if "query rows" in i.value]
    assert "**1,024** of the 134,217,728 query rows" in note and "8,388,608 scores per d_k" in note
    sample = sat_sweep.score_sample(S(8192, 16384, 0), d_k)
    assert sample.n_rows == 1024 and f"{sample.raw_var:.4g}" in at.markdown[0].value
    assert "Measured on 8,388,608 scores" in at.markdown[0].value
    specs = charts(at)
    assert "measured on 1,024 of 134,217,728 query rows" in specs["sat_curves"]["layout"]["title"]["text"]
    assert "measured on 1,024 of 134,217,728 query rows" in specs["sat_grads"]["layout"]["title"]["text"]
    assert "measured on 1,024 of 134,217,728 query rows" in specs["sat_dist"]["layout"]["title"]["text"]
    maps = specs["sat_maps"]
    assert "showing 64×64 blocks (max) of 8192×8192" in maps["layout"]["title"]["text"]
    assert arr(maps["data"][0]["z"]).shape == (64, 64) and maps["data"][0]["z"]["dtype"] == "f4"
    row = specs["sat_row"]
    assert len(arr(row["data"][0]["y"])) == 8192 and arr(row["data"][1]["z"]).shape == (32, 32)
    assert "32 largest of 8192" in row["layout"]["title"]["text"]
    raw = examples.example_scores(S(8192, 16384, 0), d_k, rows=[0])[0]
    np.testing.assert_allclose(arr(row["data"][0]["y"]), measures.row_softmax(raw, 1 / math.sqrt(d_k)).p, atol=1e-6)
    assert len(specs["sat_fp16"]["data"][0]["x"]) == 128
    table = at.dataframe[0].value
    assert len(table) == 128


def test_largest_settings_in_chinese(app_test):
    from tests.app.test_languages import english_runs, screen_texts

    at = app_test(PAGE, query={**LARGEST, "head_dim": "1024", "lang": "zh"})
    no_exception(at)
    assert any("134,217,728" in i.value and "1,024" in i.value for i in at.info)
    found = [r for text in screen_texts(at) for r in english_runs(text)]
    assert found == []


# ---------------------------------------------------------------- issue 12: the gradient, for a stated loss
def page_text(at) -> str:
    return " ".join(e.value for kind in ("markdown", "caption", "info") for e in getattr(at, kind))


def at_d_k(df, d_k: int) -> tuple[dict, dict]:
    rows = df[df["d_k"] == d_k].set_index("scaled")
    return rows.loc[False].to_dict(), rows.loc[True].to_dict()


def test_the_gradient_section_states_the_loss_and_says_the_gradient_vanishes_for_most_rows(app_test):
    at = open_page(app_test, 512)
    no_exception(at)
    text = page_text(at)
    # L is stated, with the user's numbers: the shape of G, the seed, the factor c both ways
    assert "L = Σ p·G" in text and "256 sequences × 16 queries × 16 keys, from seed 0" in text
    assert "c = 1/(√512 · 1) = 0.04419 scaled and c = 1/1 = 1 unscaled" in text and "√512 = 22.63 times" in text
    u, s = at_d_k(sweep(), 512)
    assert u["grad_q_norm_median"] < 0.05 * s["grad_q_norm_median"] and u["grad_q_norm_small"] > 0.3
    assert "Without scaling the gradient vanishes for many rows:" in text
    assert f"{u['grad_q_norm_small']:.1%} of the query rows get ‖∂L/∂q‖ < 0.001, against 0.0% with scaling" in text
    assert f"**{u['grad_q_norm_median']:.3g}** without scaling against **{s['grad_q_norm_median']:.3g}**" in text
    assert f"larger without scaling: **{u['grad_q_norm']:.3g}** against **{s['grad_q_norm']:.3g}**" in text
    assert "concentrated in a few rows" in text
    assert "a wider head would learn more slowly" not in text and "prevents both" not in text  # the old fixed claim


def test_the_sentences_follow_the_numbers_when_a_long_sequence_reverses_them():
    at = fresh({"seq_len": "1024", "head_dim": "64"})
    no_exception(at)
    text = page_text(at)
    u, s = at_d_k(sweep(1024, 256), 64)
    assert u["grad_norm"] > 2 * s["grad_norm"] and u["grad_q_norm_median"] > s["grad_q_norm_median"]
    assert "The median row gets more without scaling, not less" in text
    assert f"mean ‖∂L/∂z‖ is larger without scaling: **{u['grad_norm']:.3g}** against **{s['grad_norm']:.3g}**" in text
    assert "√(T − 1)/T = 0.0312" in text and f"the scaled rows measure {s['jacobian_norm']:.3g}" in text
    assert "vanishes for many rows" not in text and "concentrated in a few rows" not in text


def test_at_d_k_1_the_page_says_scaling_changes_nothing(app_test):
    at = open_page(app_test, 1)
    text = page_text(at)
    assert "At d_k = 1, 1/√d_k = 1: scaling changes nothing" in text
    assert "larger without scaling" not in text and "smaller without scaling" not in text


def test_the_gradient_sentences_in_chinese(app_test):
    from tests.app.test_languages import english_runs, screen_texts

    at = open_page(app_test, 512, lang="zh")
    no_exception(at)
    assert "不缩放时，许多行的梯度消失了" in page_text(at)
    assert [r for text in screen_texts(at) for r in english_runs(text)] == []


@pytest.mark.parametrize(
    "query,says,never",
    [
        ({"seq_len": "1024"}, "Every entry of q and k is an independent N(0, 1) draw", "not independent"),
        ({"seq_len": "1024", "dist": "projected"}, "Projected q and k are not independent", "systematic"),
        ({"seq_len": "8192", "dist": "projected"}, "a systematic sample, not a random one", "without bias"),
        (
            {"seq_len": "2500", "samples": "16"},
            "those of the first of the 16 sequences (all its 2,500 queries",
            "first 1",
        ),
    ],
)
def test_the_note_on_measured_rows_is_true_for_the_distribution(app_test, query, says, never):
    """Issue 12: "the queries are drawn independently" is not true for projected embeddings (they share W_Q and
    W_K and depend on their position); one measured sequence is "the first", not "the first 1"."""
    from tests.app.test_languages import english_runs

    at = fresh(query)
    no_exception(at)
    (note,) = [i.value for i in at.info if "query rows" in i.value]
    assert says in note and never not in note
    assert "The queries are drawn independently" not in note
    at = app_test(PAGE, query={**query, "lang": "zh"})
    no_exception(at)
    (note,) = [i.value for i in at.info if "查询行" in i.value]
    assert "各查询独立采样" not in note and english_runs(note) == []


def test_view_numbers_in_the_texts_match_the_sections(app_test):
    at = open_page(app_test)
    heads = [s.value for s in at.subheader]  # sections 1, 2 and 7; 3-6 are expanders (sent while open)
    assert heads[0].startswith("1 · ") and heads[1].startswith("2 · ") and heads[2].startswith("7 · ")
    sections = [e.label.strip("*") for e in at.expander if e.label.strip("*")[:1] in "3456"]
    assert [h[:4] for h in sections] == ["3 · ", "4 · ", "5 · ", "6 · "]
    assert sections[1].startswith("4 · The gradient") and sections[2].startswith("5 · One query row")
    assert sections[3].startswith("6 · Numerics")
    assert at.slider(key="row").label == "Query row (views 5 and 6)"  # the row and float16 sections
    text = page_text(at)
    assert "view 4 shows the median" in text and "subtract the row max (view 6)" in text


@pytest.mark.parametrize(
    "query,variant",
    [({"head_dim": "1024", "seq_len": "16"}, "peaked"), ({"head_dim": "1", "seq_len": "16"}, "alike")],
)
def test_the_maps_caption_says_what_the_measured_weights_show(app_test, query, variant):
    """The sentence under the two maps is chosen from the measured mean largest weight, not a fixed prediction."""
    at = app_test("app_pages/saturation.py", query=query)
    no_exception(at)
    d_k = int(query["head_dim"])
    df = sweep().set_index(["d_k", "scaled"])
    mw_u, mw_s = df.loc[(d_k, False), "max_weight"], df.loc[(d_k, True), "max_weight"]
    caption = next(c.value for c in at.caption if "largest weight of a row averages" in c.value)
    assert f"**{mw_u:.3f}** unscaled against **{mw_s:.3f}** scaled" in caption
    wanted = {"peaked": "nearly all their weight on one key", "alike": "changes the maps little"}[variant]
    assert wanted in caption and (mw_u >= 0.9) == (variant == "peaked")


# ---------------------------------------------------------------- issue 13: the page and the command line draw the same
@pytest.mark.parametrize(
    "query,argv",
    [
        ({}, []),
        (
            {
                "head_dim": "256",
                "seq_len": "100",
                "samples": "64",
                "dist": "projected",
                "scaling": "false",
                "temperature": "0.7",
                "row": "7",
                "lang": "zh",
            },
            [
                "--d-k",
                "256",
                "--seq-len",
                "100",
                "--samples",
                "64",
                "--dist",
                "projected",
                "--no-scaling",
                "--temperature",
                "0.7",
                "--row",
                "7",
            ],
        ),
    ],
    ids=["defaults", "long-unscaled-projected-zh"],
)
def test_the_page_draws_what_the_command_line_exports(query, argv):
    """Page = CLI: every chart of the page is the exporter's figure for the same settings, number for number."""
    import plotly.io as pio

    from attn_core import export, figures
    from attn_core.views import page

    at = fresh(query)
    no_exception(at)
    shown = charts(at)
    spec = page("saturation")
    params, _ = export.params_from(spec, argv)
    style = figures.Style(lang=query.get("lang", "en"))
    views = spec.views(params, style)
    assert list(shown) == [f"sat_{name}" for name in spec.view_names] and len(views) == len(shown)
    for (key, got), view in zip(shown.items(), views, strict=True):
        want = json.loads(pio.to_json(figures.apply_fonts(view.figure, style)))
        # the same code on the same numbers: equal, value for value (titles, hover texts, arrays)
        np.testing.assert_equal(decoded(got["data"]), decoded(want["data"]), err_msg=key)
        assert got["layout"]["title"]["text"] == want["layout"]["title"]["text"], key
        assert [a["text"] for a in got["layout"].get("annotations", [])] == [
            a["text"] for a in want["layout"].get("annotations", [])
        ], key
        assert got["layout"] == want["layout"], key
