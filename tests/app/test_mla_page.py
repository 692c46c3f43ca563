"""AppTest: the MLA page, every view. The charts carry the engine's numbers (naive and absorbed weights from
torch, cache sizes by hand), the sentences conclude from them, and a live decode's measured cache equals the
formula at every step with equal outputs."""

from __future__ import annotations

import numpy as np
import pytest

from attn_core.figures import Style
from attn_core.mla import attention as eng
from attn_core.views import mla as mv
from tests.conftest import no_exception
from tests.util import arr, chart_specs

PAGE = "app_pages/mla.py"


def texts(at) -> str:
    return "\n".join(e.value for e in [*at.markdown, *at.caption, *at.warning, *at.info, *at.error, *at.success])


def test_flow_view_marks_what_each_mode_caches(app_test):
    at = app_test(PAGE)
    no_exception(at)
    (spec,) = chart_specs(at)
    labels = [a["text"] for a in spec["layout"]["annotations"] if a.get("text")]
    assert "c_KV [64]" in labels and "k_R [16] RoPE" in labels
    cached = [s for s in spec["layout"]["shapes"] if s["fillcolor"] == "#fde3a7"]
    assert len(cached) == 2  # absorbed: the latent and the RoPE key
    assert "**80** values per token and layer" in texts(at)  # 64 + 16
    at = app_test(PAGE, query={"mode": "naive"})
    (spec,) = chart_specs(at)
    assert len([s for s in spec["layout"]["shapes"] if s["fillcolor"] == "#fde3a7"]) == 2  # k_C (with k_R) and v
    assert "8 × (48 + 32) = **640**" in texts(at)


def test_agree_view_shows_torch_weights_and_concludes_from_the_differences(app_test):
    at = app_test(PAGE, query={"view": "agree", "seq_len": "6", "head": "3"})
    no_exception(at)
    specs = chart_specs(at, phone=False)  # less the phone's one-head copy of the grid
    assert len(specs) == 2  # naive, absorbed and |difference| in one figure; the grid of every head
    layer = eng.MultiHeadLatentAttention(mv.Params().config, 0)
    x = eng.hidden_states(layer.cfg, 6, 0)
    naive, absorb = layer(x, mode="naive").weights[0, 3].numpy(), layer(x, mode="absorb").weights[0, 3].numpy()
    maps = [t for t in specs[0]["data"] if t.get("coloraxis")]  # less the grey layers of the masked cells
    assert [(t["xaxis"], t["coloraxis"]) for t in maps] == [
        ("x", "coloraxis"),
        ("x2", "coloraxis"),
        ("x3", "coloraxis2"),
    ]
    drawn = [np.nan_to_num(arr(t["z"])) for t in maps]
    lower = np.tril(np.ones((6, 6), dtype=bool))
    np.testing.assert_allclose(drawn[0], np.where(lower, naive, 0), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(drawn[1], np.where(lower, absorb, 0), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(drawn[2], np.where(lower, np.abs(naive - absorb), 0), atol=1e-6)
    layout = specs[0]["layout"]
    assert layout["coloraxis"]["cmin"] == 0 and layout["coloraxis"]["cmax"] == 1  # both paths on one 0..1 bar
    top = float(drawn[2].max())
    assert layout["coloraxis2"]["cmax"] == pytest.approx(top, rel=1e-3)  # the difference on its own scale
    assert f"max {top:.2g}" in " ".join(a["text"] for a in layout["annotations"])
    assert layout["xaxis"]["ticktext"] == [f"x{i}" for i in range(6)]  # every key labelled under each panel
    assert "agree" in at.success[0].value
    res = mv.compare(layer.cfg, 6, 0)
    assert f"{res.wrong.max_output_diff:.3g}" in at.warning[0].value  # rope_on_latent, measured
    assert res.wrong.max_output_diff > 100 * mv.TOLERANCE


def test_cache_view_counts_as_the_paper_and_the_kv_cache_page(app_test):
    at = app_test(PAGE, query={"view": "cache", "preset": "deepseek-v2", "n_kv_heads": "8"})
    no_exception(at)
    assert "GQA with **2.25 groups**" in at.info[0].value and "**56.9×**" in at.info[0].value
    (spec,) = chart_specs(at)
    assert spec["data"][0]["x"] == ["MHA", "GQA-8", "MQA", "MLA-naive", "MLA"]
    assert list(arr(spec["data"][0]["y"])) == [32768, 2 * 8 * 128, 256, 128 * 320, 576]
    table = at.dataframe[1].value
    assert list(table.iloc[:, 0]) == ["DeepSeek-V2-Lite", "DeepSeek-V2", "DeepSeek-V3"]


def test_cost_view_substitutes_the_numbers(app_test):
    at = app_test(PAGE, query={"view": "cost", "preset": "deepseek-v3", "cache_len": "4096"})
    no_exception(at)
    cfg = eng.load_mla_presets()["deepseek-v3"].config
    a, n = eng.path_cost(cfg, "absorb"), eng.path_cost(cfg, "naive")
    assert f"**{a.flops(4096) / n.flops(4096):.2f}×**" in at.info[0].value and "1/**71.1**" in at.info[0].value
    assert any(f"= {a.flops(4096):,}" in e.value for e in at.get("latex"))
    assert "40,960 × 4,096 = 167,772,160 values" in texts(at)
    assert len(chart_specs(at)) == 2 and len(at.dataframe[0].value) == len(mv.TIMED_LENGTHS)


def test_live_decode_measures_formula_bytes_and_equal_outputs(app_test):
    at = app_test(PAGE, query={"view": "decode", "dec_steps": "5", "dec_prompt": "3"})
    no_exception(at)
    assert not chart_specs(at)
    at.button(key="mla_run").click().run()
    no_exception(at)
    assert "5 steps: at every step the measured caches equal the formulas" in at.success[0].value
    bytes_spec = chart_specs(at)[0]
    series = {d["name"]: arr(d["y"]) for d in bytes_spec["data"]}
    assert list(arr(bytes_spec["data"][0]["x"])) == [3, 4, 5, 6, 7, 8]
    per_token = {"naive": 8 * (48 + 32) * 4, "absorb": (64 + 16) * 4}  # fp32, bytes per token, by hand
    s = Style()
    for path, size in per_token.items():
        measured = series[s.t(f"mla.dec_measured_{path}")]
        np.testing.assert_array_equal(measured, series[s.t(f"mla.dec_formula_{path}")])
        np.testing.assert_allclose(measured * 1024, np.arange(3, 9) * size, rtol=1e-12)  # drawn in KiB
    assert "KiB" in bytes_spec["layout"]["yaxis"]["title"]["text"]
    data = mv.decode_frame(at.session_state["mla_decode"].steps)
    assert (data.max_output_diff < mv.TOLERANCE).all() and len(data) == 6


@pytest.mark.parametrize("view", mv.PAGE_VIEWS)
def test_every_view_in_chinese(app_test, view):
    at = app_test(PAGE, query={"view": view, "lang": "zh"})
    no_exception(at)
    assert at.get("plotly_chart") or at.button
    assert "MLA" in at.title[0].value and "多头潜在注意力" in at.title[0].value


def test_custom_dimensions_and_bad_values_say_what_to_change(app_test):
    at = app_test(PAGE, query={"preset": "custom", "qk_rope": "5", "view": "agree"})
    no_exception(at)
    assert "qk_rope_head_dim (5) must be even" in at.error[0].value
    at = app_test(PAGE, query={"preset": "custom", "qk_nope": "7", "view": "agree"})
    no_exception(at)
    assert "even d_h" in at.info[0].value  # the paths still agree; the rope mistake needs pairs


def test_the_cost_view_on_slides_gives_its_charts_a_slide(app_test):
    """On a slide the cost view put a five-line notice and three formulas over its two charts, which plotly then
    drew with no height ("Something went wrong with axis scaling"): the charts, then what they say and the
    formulas, then the measured times."""
    at = app_test("app_pages/mla.py", query={"view": "cost"}, session={"present": True})
    no_exception(at)
    assert len(chart_specs(at)) == 2 and not at.get("latex") and not at.info
    at.button(key="slide__next").click().run()
    assert not chart_specs(at) and len(at.get("latex")) == 3 and at.info
