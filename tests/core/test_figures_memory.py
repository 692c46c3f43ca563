"""Figures of the KV-cache page (attn_core.figures.memory, fed by attn_core.views.kv_cache): the plotted numbers
against attn_core.kv.memory."""

import json
import math

import numpy as np
import pytest

from attn_core.figures import Style
from attn_core.figures import memory as mf
from attn_core.kv.memory import MAX_CALC_SEQ_LEN, load_presets, memory_curves, preset_layouts, seq_points, weights_bytes
from attn_core.views import kv_cache as kc
from tests.util import arr

GiB = 1024**3


def spec(fig) -> dict:
    return json.loads(fig.to_json())


def traces_by_name(s: dict) -> dict[str, dict]:
    return {t.get("name", ""): t for t in s["data"]}


def memory_figure(
    layouts,
    *,
    batch,
    dtype,
    device_bytes,
    device_label,
    model_name,
    weights=None,
    seq_len=None,
    max_positions=None,
    y_log=True,
    style=Style(),
):
    """The memory chart of these layouts, computed (attn_core.kv.memory.memory_curves) then drawn."""
    curves = memory_curves(layouts, batch, dtype, seq_points(), device_bytes, weights)
    return mf.memory_figure(curves, mf.MemoryChart(model_name, device_label, seq_len, max_positions, y_log), style)


def preset_figure(preset_id: str, device_gib: float, dtype: str = "fp16", **kwargs):
    """The memory chart of a model preset's layouts for one sequence on a device of ``device_gib`` GiB."""
    p = load_presets()[preset_id]
    return memory_figure(
        preset_layouts(p),
        batch=1,
        dtype=dtype,
        device_bytes=device_gib * GiB,
        device_label="device",
        model_name=p.name,
        **kwargs,
    )


def test_seq_points_cover_one_to_a_million_on_a_log_grid():
    pts = seq_points()
    assert pts[0] == 1 and pts[-1] == MAX_CALC_SEQ_LEN == 2**20
    assert np.all(np.diff(pts) > 0) and pts.dtype == np.int64
    assert {2**k for k in range(21)} <= set(pts.tolist())


def test_memory_figure_plots_exact_bytes_and_the_max_context():
    llama = load_presets()["llama-2-7b"]
    layouts = preset_layouts(llama)
    fig = memory_figure(
        layouts,
        batch=1,
        dtype="fp16",
        device_bytes=80 * GiB,
        device_label="device",
        model_name=llama.name,
        seq_len=4096,
        max_positions=4096,
    )
    s = spec(fig)
    mha = next(t for t in s["data"] if t.get("name", "").startswith("MHA"))
    x, y = arr(mha["x"]).astype(np.int64), arr(mha["y"])
    i = int(np.where(x == 4096)[0][0])
    assert y[i] == 2 * GiB  # 2 x 32 x 32 x 4096 x 128 x 2
    assert np.all(y == x * 512 * 1024)  # 512 KiB per token, exactly, at every point
    assert "(this model)" in mha["name"] and "fits 163,840 tokens" in mha["name"]
    mqa = next(t for t in s["data"] if t.get("name", "").startswith("MQA"))
    assert mqa["name"] == "MQA · fits 5,242,880 tokens"  # beyond the axis: 80 GiB / 16 KiB, written out in full
    markers = [t for t in s["data"] if t.get("mode") == "markers"]
    assert len(markers) == 1 and arr(markers[0]["x"]).tolist() == [163_840]  # only MHA's fit is on the axis
    assert arr(markers[0]["y"]).tolist() == [80 * GiB]
    labels = [a for a in s["layout"]["annotations"] if a.get("yref") == "y"]
    assert [(a["text"], a["x"], a["y"]) for a in labels] == [("163,840", math.log10(163_840), math.log10(80 * GiB))]
    device = next(t for t in s["data"] if t.get("name", "").startswith("device"))
    assert arr(device["y"]).tolist() == [80 * GiB, 80 * GiB] and "80.0 GiB" in device["name"]
    xa, ya = s["layout"]["xaxis"], s["layout"]["yaxis"]
    assert xa["type"] == "log" and xa["range"] == [0, pytest.approx(math.log10(2**20))]
    assert "1M" in xa["ticktext"] and "4K" in xa["ticktext"]
    assert xa["title"]["text"] == "sequence length S (tokens, log scale; K = 1,024, M = 1,048,576)"  # K, M defined
    assert ya["type"] == "log"
    assert all(math.log2(v).is_integer() for v in ya["tickvals"])  # powers of two ...
    assert all(t.split()[-1] in ("B", "KiB", "MiB", "GiB", "TiB") for t in ya["ticktext"])  # ... in binary units


def test_stacked_weights_shift_every_line_and_shrink_what_fits():
    w = weights_bytes(load_presets()["llama-3-8b"].n_params, "bf16")
    fig = preset_figure("llama-3-8b", 24, "bf16", weights=w, y_log=False)
    s = spec(fig)
    gqa = next(t for t in s["data"] if t.get("name", "").startswith("GQA-8"))
    x, y = arr(gqa["x"]).astype(np.int64), arr(gqa["y"])
    assert np.all(y == w + x * 2 * 32 * 8 * 128 * 2)
    fits = (24 * GiB - w) // (2 * 32 * 8 * 128 * 2)
    assert f"fits {fits:,} tokens" in gqa["name"]
    weights_trace = next(t for t in s["data"] if t.get("name", "").startswith("weights"))
    assert arr(weights_trace["y"]).tolist() == [w, w] and weights_trace["fill"] == "tozeroy"
    assert s["layout"]["yaxis"]["type"] == "linear" and s["layout"]["yaxis"]["ticktext"][0] == "0"


def test_weights_larger_than_the_device_fit_nothing():
    p = load_presets()["llama-2-70b"]
    fig = memory_figure(
        preset_layouts(p),
        batch=1,
        dtype="fp16",
        device_bytes=80 * GiB,
        device_label="device",
        model_name=p.name,
        weights=weights_bytes(p.n_params),
    )
    names = [t.get("name", "") for t in spec(fig)["data"]]
    assert sum("nothing fits" in n for n in names) == 3


def test_curves_table_matches_the_figure():
    p = load_presets()["deepseek-v3"]
    lays = preset_layouts(p)
    data = kc.curves_frame(memory_curves(lays, 2, "bf16", np.array([1, 4096]), 80 * GiB))
    assert data["MLA cache (bytes)"].tolist() == [2 * 61 * 576 * 2, 2 * 4096 * 61 * 576 * 2]
    # batch 2 x 61 layers x 2 x 128 heads x d_h 128 x 2 bytes: the DeepSeek-V2 paper's MHA
    assert data["MHA cache (bytes)"].tolist()[0] == 2 * 61 * 2 * 128 * 128 * 2
    # 128 heads x (192 + 128): MLA decompressed per head, its own column
    assert data["MLA-naive cache (bytes)"].tolist()[0] == 2 * 61 * 128 * 320 * 2


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_mla_rows_are_named_and_counted_as_the_paper_does(lang):
    v3 = load_presets()["deepseek-v3"]
    style = Style(lang=lang)
    data = kc.comparison_data(preset_layouts(v3), 4096, 1, "bf16", 80 * GiB)
    assert data["layout"].tolist() == ["MHA", "MQA", "MLA-naive", "MLA"]
    assert data["elements_per_token_layer"].tolist() == [32_768, 256, 40_960, 576]
    assert data["k_dim"].tolist()[:3] == [128, 128, 192] and data["v_dim"].tolist()[:3] == [128, 128, 128]
    assert data["vs_mha"].tolist()[3] == pytest.approx(576 / 32_768)
    table = kc.comparison_table(data, style)
    names, per_layer, ratio = table.iloc[:, 0].tolist(), table.iloc[:, 1].tolist(), table.iloc[:, 5].tolist()
    assert per_layer == ["2 × 128 × 128 = 32,768", "2 × 1 × 128 = 256", "128 × (192 + 128) = 40,960", "512 + 64 = 576"]
    assert ratio == ["1×", "1/128", "1.25×", "1/56.89"]
    naive = {"en": "MLA decompressed, cached per head (naive)", "zh": "MLA 解压后逐头缓存（朴素实现）"}[lang]
    this = {"en": "MLA (this model)", "zh": "MLA（本模型）"}[lang]  # no space before the full-width bracket
    assert names == ["MHA", "MQA", naive, this]
    fig = memory_figure(
        preset_layouts(v3), batch=1, dtype="bf16", device_bytes=80 * GiB, device_label="d", model_name="V3", style=style
    )
    legend = [t.get("name", "") for t in spec(fig)["data"] if t.get("name")]
    assert legend[2].startswith(naive + " · ") and legend[3].startswith(this + " · ")


def test_the_live_decode_runs_the_table_s_mha_row_for_mla():
    for pid, heads in (("deepseek-v3", 128), ("deepseek-v2-lite", 16)):
        p = load_presets()[pid]
        mha = preset_layouts(p)[0]
        params = kc.Params(model=pid, n_heads=8, n_kv_heads=2, head_dim=16, dec_layers=1, dec_dtype="fp16")
        assert kc.decode_shape(params) == (heads, mha.n_kv_heads, mha.k_dim) == (heads, heads, 128)
        cfg = kc.decode_config(params)
        assert (cfg.n_heads, cfg.n_kv_heads, cfg.head_dim) == (heads, heads, 128)


def test_a_count_of_one_is_singular():
    lay = preset_layouts(load_presets()["gpt2"])[0]
    one = lay.bytes(1, 1, "fp16")  # the device holds exactly one token's cache
    fig = memory_figure([lay], batch=1, dtype="fp16", device_bytes=one, device_label="d", model_name="g")
    assert spec(fig)["data"][0]["name"] == "MHA (this model) · fits 1 token"
    params = kc.Params(model="gpt2", seq_len=1, dtype="fp16")
    view = kc.comparison_view(params, kc.Calculator(None, (lay,), kc.DeviceMemory(one), None), Style())
    assert "S = 1 token ·" in view.figure.layout.title.text
    two = memory_figure([lay], batch=1, dtype="fp16", device_bytes=2 * one, device_label="d", model_name="g")
    assert spec(two)["data"][0]["name"] == "MHA (this model) · fits 2 tokens"  # and the plural for two


def test_byte_ticks():
    vals, text = mf.byte_ticks_log(1000, 3 * 1024**4)
    assert all(math.log2(v).is_integer() for v in vals) and len(vals) <= 9 and "1 GiB" in text
    vals, text = mf.byte_ticks_linear(100 * GiB)
    assert vals[0] == 0 and text[0] == "0" and all(v % (16 * GiB) == 0 for v in vals)
    assert "64 GiB" in text


def test_decode_figures_plot_the_given_steps():
    seq = [4, 5, 6]
    measured = [1024, 1280, 1536]
    series = mf.DecodeSeries(seq, measured, measured, x_max=10, y_max=2560, correct=[256, 320, 384], allocated=2560)
    fig = mf.decode_memory_figure(series, style=Style(lang="zh"))
    s = traces_by_name(spec(fig))
    assert arr(s["实测：在 repeat_kv 之后缓存"]["y"]).tolist() == [1.0, 1.25, 1.5]  # KiB
    assert arr(s["正确的缓存（n_kv_heads 个头）"]["y"]).tolist() == [0.25, 0.3125, 0.375]
    assert spec(fig)["layout"]["yaxis"]["title"]["text"] == "缓存（KiB，二进制）"
    t = mf.decode_time_figure(seq, [1.0, 0.5, 0.5], [1.0, 1.5, 2.0], x_max=10)
    names = [tr["name"] for tr in spec(t)["data"]]
    assert names == ["with the KV cache", "no cache (recompute all K, V)"]
    bars = spec(mf.prefill_decode_figure(64, 0.002, 0.05))
    assert arr(bars["data"][0]["y"]).tolist() == [2.0, 50.0]
    assert "25.0×" in bars["layout"]["title"]["text"]


def test_fit_labels_sit_where_their_own_line_is_not_and_stay_in_the_chart():
    """Llama-3-8B (GQA-8) at 80 GiB: MHA fits 163,840 tokens, GQA 655,360 (both on the axis), MQA 5,242,880
    (beyond it). A rising line leaves the sides above-left and below-right of its marker free; GQA's label,
    0.7 doublings from the axis's end, would leave the chart below-right: it goes below-left, in its box."""

    def labels(device_gib, y_log=True):
        fig = preset_figure("llama-3-8b", device_gib, y_log=y_log)
        return {a["text"]: a for a in spec(fig)["layout"]["annotations"] if a.get("yref") == "y"}

    got = labels(80)
    assert set(got) == {"163,840", "655,360"}
    assert (got["163,840"]["xanchor"], got["163,840"]["yanchor"]) == ("right", "bottom")  # above-left
    assert (got["655,360"]["xanchor"], got["655,360"]["yanchor"]) == ("right", "top")  # below-left, near the end
    assert all(a["bgcolor"] == mf.LABEL_BOX and a["x"] < math.log10(2**20) for a in got.values())
    assert got["655,360"]["font"]["color"] == mf.LAYOUT_COLORS["GQA"]
    # 8 GiB: GQA fits 65,536 tokens, 4 doublings from the end: below-right; MQA's 524,288 above-left again
    got = labels(8)
    assert (got["65,536"]["xanchor"], got["65,536"]["yanchor"]) == ("left", "top")
    assert (got["524,288"]["xanchor"], got["524,288"]["yanchor"]) == ("right", "bottom")
    # a linear memory axis: the label sits at the marker's bytes, not their log
    assert labels(8, y_log=False)["65,536"]["y"] == 8 * GiB


def test_a_fit_label_just_right_of_the_s_line_goes_below_its_marker():
    """Qwen2.5-7B (GQA-4) at 80 GiB and S = 131,072: MHA fits 213,995 tokens, 0.7 doublings right of the S line.
    Above-left of its marker (near the device line, at the top) its text reached back over "S = 131,072", which
    is labelled at the top of the plot: it goes below. Without an S line it keeps its side above-left."""

    def notes(seq_len):
        fig = preset_figure("qwen2.5-7b", 80, seq_len=seq_len)
        return {a["text"]: a for a in spec(fig)["layout"]["annotations"]}

    got = notes(131_072)
    assert (got["S = 131,072"]["yref"], got["S = 131,072"]["y"]) == ("paper", 1.0)  # at the top of the plot
    assert (got["213,995"]["yanchor"], got["213,995"]["yshift"]) == ("top", -5)  # below its marker
    assert notes(None)["213,995"]["yanchor"] == "bottom"  # no S line: above-left
    assert notes(1024)["213,995"]["yanchor"] == "bottom"  # an S line far left of it: above-left
