"""The cache as tensors: MHA, GQA and MQA buffers filling token by token (attn_core.kv.memory.cache_fill), their
figure (attn_core.figures.kv_tensors) and the KV-cache page's view of them (attn_core.views.kv_cache)."""

import json

import pandas as pd
import plotly.io as pio
import pytest
import torch

from attn_core import export
from attn_core.attention.gqa import repeat_kv
from attn_core.figures import Style, apply_fonts, group_color
from attn_core.figures import kv_tensors as kt
from attn_core.figures.memory import LAYOUT_COLORS
from attn_core.kv.cache import DecodeConfig, TinyDecoder, make_prompt
from attn_core.kv.memory import MAX_CALC_SEQ_LEN, cache_fill, fill_tokens, gqa_heads
from attn_core.runtime.units import format_bytes
from attn_core.views import kv_cache as kc


def spec(fig) -> dict:
    return json.loads(pio.to_json(fig, validate=False))


def bars(s: dict) -> dict:
    return next(t for t in s["data"] if t["type"] == "bar")


# ---------------------------------------------------------------- the engine
def test_bytes_per_frame_by_hand():
    fill = cache_fill(12, 8, 2, (16, 16), 4096, batch=1, dtype="fp16")
    assert [(lay.kind, lay.n_kv_heads, lay.native) for lay in fill.layouts] == [
        ("MHA", 8, False),
        ("GQA", 2, True),
        ("MQA", 1, False),
    ]
    assert fill.tokens == tuple(range(64, 4097, 64)) and fill.thinned and not fill.gqa_chosen
    # 2 (K and V) x 12 layers x 1 sequence x H_kv heads x 64 tokens x 16 elements x 2 bytes
    assert fill.bytes[0] == (2 * 12 * 8 * 64 * 16 * 2, 2 * 12 * 2 * 64 * 16 * 2, 2 * 12 * 1 * 64 * 16 * 2)
    assert fill.bytes[0] == (393_216, 98_304, 49_152)
    assert fill.bytes[-1] == (25_165_824, 6_291_456, 3_145_728)  # 4,096 tokens
    assert [fill.shape(i) for i in range(3)] == [(12, 2, 1, h, 4096, 16) for h in (8, 2, 1)]
    int4 = cache_fill(1, 2, 1, (3, 3), 3, batch=1, dtype="int4")  # odd element counts round up to whole bytes
    assert int4.tokens == (1, 2, 3) and [b[1] for b in int4.bytes] == [(2 * 3 + 1) // 2, 6, (18 + 1) // 2]


def test_the_gqa_layout_keeps_the_model_s_kv_heads_or_picks_a_divisor():
    assert gqa_heads(8, 2) == (2, False) and gqa_heads(32, 8) == (8, False)
    assert gqa_heads(8, 8) == (2, True) and gqa_heads(32, 1) == (8, True) and gqa_heads(128, None) == (32, True)
    assert gqa_heads(6, 6) == (2, True)  # groups of 3 and 2 are equally near 4: the fewer KV heads
    assert gqa_heads(7, 7) == (None, True) and gqa_heads(2, 1) == (None, True)
    assert [lay.kind for lay in cache_fill(2, 7, 7, (4, 4), 8).layouts] == ["MHA", "MQA"]
    assert [lay.kind for lay in cache_fill(2, 1, 1, (4, 4), 8).layouts] == ["MHA"]
    assert [lay.native for lay in cache_fill(2, 8, None, (4, 4), 8).layouts] == [False] * 3  # an MLA model


def test_token_counts_every_token_or_evenly_thinned():
    assert fill_tokens(5) == (1, 2, 3, 4, 5) and fill_tokens(64) == tuple(range(1, 65))
    long = fill_tokens(1000)
    assert len(long) == 64 and long[-1] == 1000 and all(b > a for a, b in zip(long, long[1:], strict=False))
    assert fill_tokens(MAX_CALC_SEQ_LEN) == tuple(range(16_384, MAX_CALC_SEQ_LEN + 1, 16_384))


@pytest.mark.parametrize("n_heads,n_kv", [(8, 8), (8, 2), (8, 1), (6, 3)])
def test_reads_are_what_repeat_kv_does(n_heads, n_kv):
    fill = cache_fill(1, n_heads, n_kv, (1, 1), 4)
    i = next(j for j, lay in enumerate(fill.layouts) if lay.n_kv_heads == n_kv)
    kv = torch.arange(n_kv, dtype=torch.float32).reshape(1, n_kv, 1, 1)  # each KV head holds its index
    assert fill.reads(i) == tuple(int(x) for x in repeat_kv(kv, n_heads // n_kv).flatten())


@pytest.mark.parametrize("n_kv", [4, 2, 1])
def test_bytes_equal_the_nbytes_of_real_buffers_after_a_decode_step(n_kv):
    """Prefill 3 tokens and decode one with the live decode's model: its buffers hold 4 of 6 positions."""
    cfg = DecodeConfig(n_heads=4, n_kv_heads=n_kv, head_dim=8, n_layers=2, d_model=32, vocab=16, batch=2, dtype="fp16")
    model = TinyDecoder(cfg)
    caches = model.new_caches(6)
    with torch.inference_mode():
        nxt = model(make_prompt(cfg, 3), caches)[:, -1].argmax(-1)  # prefill
        model(nxt[:, None], caches)  # one decode step
    assert caches[0].length == 4
    fill = cache_fill(2, 4, n_kv, (8, 8), 6, batch=2, dtype="fp16")
    i = next(j for j, lay in enumerate(fill.layouts) if lay.n_kv_heads == n_kv)
    buffers = torch.stack([torch.stack([c.k, c.v]) for c in caches])  # [L, 2, B, H_kv, S, d]
    assert tuple(buffers.shape) == fill.shape(i)
    filled = sum(c.k[:, :, : c.length].nbytes + c.v[:, :, : c.length].nbytes for c in caches)
    assert fill.bytes[fill.tokens.index(4)][i] == filled == buffers[:, :, :, :, :4].nbytes
    assert fill.bytes[-1][i] == buffers.nbytes  # all 6 positions: the whole buffers


# ---------------------------------------------------------------- the figure
def test_frames_slider_and_bytes_labels_equal_the_engine():
    fill = cache_fill(12, 8, 2, (16, 16), 4096)
    s = spec(kt.tensor_figure(fill, Style()))
    assert [f["name"] for f in s["frames"]] == [str(t) for t in fill.tokens] and len(s["frames"]) == 64
    assert [st["label"] for st in s["layout"]["sliders"][0]["steps"]] == [f"{t:,}" for t in fill.tokens]
    bar_index = s["data"].index(bars(s))
    for f, frame in enumerate(s["frames"]):
        assert frame["traces"][-1] == bar_index
        assert [d["type"] for d in frame["data"]] == ["scatter"] * 9 + ["bar"]  # untyped, plotly.js draws a line
        b = frame["data"][-1]
        assert b["x"] == list(fill.bytes[f])
        assert b["text"] == [f"{format_bytes(n)} ({n:,} B)" for n in fill.bytes[f]]
        assert all(h.endswith(f"= {n:,} B") for h, n in zip(b["hovertext"], fill.bytes[f], strict=True))
    assert "64 frames: every 64th token count of 4,096" in s["layout"]["title"]["text"]
    assert bars(s)["x"] == list(fill.bytes[0])


def test_colours_are_the_layouts_and_the_kv_groups():
    fill = cache_fill(2, 8, 2, (4, 4), 16)
    s = spec(kt.tensor_figure(fill, Style()))
    assert bars(s)["marker"]["color"] == [LAYOUT_COLORS[k] for k in ("MHA", "GQA", "MQA")]
    heads = [t for t in s["data"] if t.get("mode") == "markers"]
    assert [h["marker"]["color"] for h in heads] == [[group_color(g) for g in fill.reads(i)] for i in range(3)]
    assert heads[1]["marker"]["color"] == [group_color(0)] * 4 + [group_color(1)] * 4
    fills = [t for t in s["data"] if t.get("fillcolor") in LAYOUT_COLORS.values()]
    assert [t["fillcolor"] for t in fills] == [LAYOUT_COLORS[k] for k in ("MHA", "GQA", "MQA") for _ in range(2)]


def test_each_query_head_s_lookup_ends_on_its_kv_head_s_row_at_the_newest_token():
    fill = cache_fill(2, 8, 2, (4, 4), 16)
    s = spec(kt.tensor_figure(fill, Style(), at=5))  # a still: 6 tokens of 16
    assert "frames" not in s and "sliders" not in s["layout"] and "updatemenus" not in s["layout"]
    assert bars(s)["x"] == list(fill.bytes[5]) and "6 of 16 tokens" in s["layout"]["title"]["text"]
    lines = [t for t in s["data"] if t.get("line", {}).get("color") == kt.READ_LINE]
    for i, trace in enumerate(lines):
        ends_x, ends_y = trace["x"][1::3], trace["y"][1::3]
        assert ends_x == [round(i * kt.PANEL_STEP + 6 / 16, 4)] * 8
        assert ends_y == [kt._row_y(g, fill.layouts[i].n_kv_heads) for g in fill.reads(i)]


def test_the_payload_stays_small_at_the_page_s_extremes():
    for fill, style in (
        (cache_fill(128, 128, 128, (256, 256), MAX_CALC_SEQ_LEN, batch=256, dtype="fp32"), Style()),
        (cache_fill(128, 128, 1, (256, 256), MAX_CALC_SEQ_LEN, 256, "int4"), Style(True, "zh")),
    ):
        text = pio.to_json(apply_fonts(kt.tensor_figure(fill, style), style), validate=False)
        assert len(text.encode("utf-8")) < 1_000_000


# ---------------------------------------------------------------- the view model and the command line
def test_the_view_follows_the_page_s_model():
    p = kc.Params()  # Llama-3-8B: GQA-8 of 32 query heads
    fill = kc.tensor_fill(p, kc.calculator(p))
    assert [lay.label for lay in fill.layouts] == ["MHA", "GQA-8", "MQA"] and fill.layouts[1].native
    p = kc.Params(model="deepseek-v3")  # MLA: its MHA row's 128 heads of 128, GQA chosen
    fill = kc.tensor_fill(p, kc.calculator(p))
    assert [lay.n_kv_heads for lay in fill.layouts] == [128, 32, 1] and fill.gqa_chosen
    assert not any(lay.native for lay in fill.layouts) and fill.layouts[0].k_dim == 128
    zh = kc.tensor_caption(fill, Style(lang="zh"))
    assert "32 个 KV 头" in zh and "(1/4)" in zh
    en = kc.tensor_caption(
        kc.tensor_fill(
            kc.Params(model="custom", n_heads=7, n_kv_heads=7),
            kc.calculator(kc.Params(model="custom", n_heads=7, n_kv_heads=7)),
        ),
        Style(),
    )
    assert "No GQA layout" in en


def test_the_command_line_exports_the_view(tmp_path):
    argv = ["--page", "kv_cache", "--view", "tensors", "--seq-len", "8", "--format", "csv,html", "--out", str(tmp_path)]
    paths = export.run(argv)
    assert [p.suffix for p in paths] == [".csv", ".html"] and paths[0].name.startswith("kv_cache_kv_tensors_")
    table = pd.read_csv(paths[0], encoding="utf-8-sig")
    assert len(table) == 8 * 3 and table["tokens"].max() == 8
    last = table[table["tokens"] == 8]
    assert last["bytes"].tolist() == [2 * 32 * h * 8 * 128 * 2 for h in (32, 8, 1)]  # Llama-3-8B, fp16


def test_an_image_of_the_animation_is_its_first_state_without_the_controls():
    from attn_core.render import still

    fig = kt.tensor_figure(cache_fill(2, 4, 2, (4, 4), 8), Style())
    image = spec(still(fig))
    assert "frames" not in image and "sliders" not in image["layout"] and "updatemenus" not in image["layout"]
    assert image["data"] == spec(fig)["data"]
    plain = kt.tensor_figure(cache_fill(2, 4, 2, (4, 4), 8), Style(), at=3)
    assert still(plain) is plain  # a figure without frames is drawn as it is


def test_on_a_slide_headings_hang_by_pixels_and_the_text_is_short():
    """A slide squeezes the figure: the panels' headings hang from the plot's top in pixels (data units shrink under
    them), the read rule is the short form, the buffers' axes go in the subtitle instead of two legend lines."""
    fill = cache_fill(32, 32, 8, (128, 128), 4096)
    s = spec(kt.tensor_figure(fill, Style(present=True), at=3))
    heads = [a for a in s["layout"]["annotations"] if "[32, 2, 1," in a["text"]]
    assert len(heads) == 3 and all(a["yref"] == "y domain" and a["y"] == 1.0 for a in heads)
    assert "head h → KV head h // 4" in heads[1]["text"] and "all 32 heads → KV head 0" in heads[2]["text"]
    # the title pushes the top margin itself (plotly keeps a push within the chart's height), over a pad that holds
    # the 3 heading lines: a fixed top margin of 204 px was taller than the chart on the deck's slide, which left
    # plotly a plot of negative height ("Something went wrong with axis scaling")
    title = s["layout"]["title"]
    assert title["automargin"] and title["yref"] == "paper" and title["yanchor"] == "bottom"
    assert title["pad"]["b"] >= 1.3 * 3 * Style(present=True).font and s["layout"]["margin"]["t"] <= 20
    assert "buffers [L, 2, B, H_kv, S, d]" in s["layout"]["title"]["text"]
    assert not any("a row per KV head" in a["text"] for a in s["layout"]["annotations"])
    page = spec(kt.tensor_figure(fill, Style(), at=3))
    assert any("a row per KV head" in a["text"] for a in page["layout"]["annotations"])
    assert "query head h reads KV head h // 4" in " ".join(a["text"] for a in page["layout"]["annotations"])


def test_on_a_slide_every_text_of_the_buffers_is_20_px():
    """The panels' headings wrote H<sub>kv</sub> (a 14 px subscript) and the positions 0 and S at 19 px."""
    fill = cache_fill(32, 32, 8, (128, 128), 4096)
    s = spec(kt.tensor_figure(fill, Style(present=True), at=3))
    notes = s["layout"]["annotations"]
    assert all(a["font"]["size"] >= 20 for a in notes), [(a["text"], a["font"]["size"]) for a in notes]
    assert not any("<sub>" in a["text"] for a in notes) and sum("H_kv = " in a["text"] for a in notes) == 3
    assert "<sub>kv</sub>" in " ".join(
        a["text"] for a in spec(kt.tensor_figure(fill, Style(), at=3))["layout"]["annotations"]
    )
