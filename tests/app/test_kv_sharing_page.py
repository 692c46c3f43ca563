"""AppTest: the KV-sharing page (MHA / GQA / MQA), its five views, URL parameters and bad input."""

import re

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from attn_core.attention.gqa import kv_group_of
from attn_core.attention.maps import compute_attention_maps
from attn_core.attention.tokens import embed, tokenize
from attn_core.kv import convert
from attn_core.kv.convert import build_source, conversion_study, kv_map, weights_with_mapping
from attn_core.runtime.config import AttentionConfig
from tests.conftest import ROOT, no_exception
from tests.util import arr, chart_specs

PAGE = "app_pages/kv_sharing.py"
TEXT = "The cat sat on the mat because it was tired ."
T = len(tokenize(TEXT))  # 11


def fresh(query: dict[str, str]) -> AppTest:
    """The page alone in a brand-new session, as a visitor opening a link: no state from other pages."""
    at = AppTest.from_file(str(ROOT / PAGE), default_timeout=600)
    for key, value in query.items():
        at.query_params[key] = value
    return at.run()


def expected_maps(n_heads=8, n_kv_heads=2, head_dim=16, d_model=128, seed=0):
    cfg = AttentionConfig(n_heads=n_heads, n_kv_heads=n_kv_heads, head_dim=head_dim, d_model=d_model, seed=seed)
    return compute_attention_maps(cfg, tokenize(TEXT))


def diagram_links(spec: dict) -> dict[int, int]:
    """query head -> KV head, read from the link traces of a KV diagram (meta and geometry must agree)."""
    kv_nodes = next(t for t in spec["data"] if t.get("name") == "KV heads")
    kv_x = list(arr(kv_nodes["x"]))
    links = {}
    for trace in spec["data"]:
        meta = trace.get("meta")
        if not isinstance(meta, dict):
            continue
        g = meta["kv_head"]
        xs, ys = trace["x"], trace["y"]
        for i in range(0, len(xs), 3):  # (query x, 1) -> (kv x, 0), None
            assert ys[i] == 1 and ys[i + 1] == 0 and xs[i + 2] is None
            assert xs[i + 1] == pytest.approx(kv_x[g])
            links[int(xs[i])] = g
        assert sorted(meta["query_heads"]) == sorted(h for h, k in links.items() if k == g)
    return links


def panels(spec: dict) -> tuple[dict[str, tuple[float, int]], np.ndarray, np.ndarray]:
    """Panel label -> the z block under it, in the grouped-maps figure (weights or K/V trace).

    The K/V trace starts at column ``x0`` (the Kᵀ panel); it is padded back to column 0 here, so that
    both traces are indexed by the x of the panel labels.
    """
    z_w, z_kv = arr(spec["data"][0]["z"]), arr(spec["data"][1]["z"])
    x0 = int(spec["data"][1].get("x0", 0))
    z_kv = np.hstack([np.full((z_kv.shape[0], x0), np.nan, dtype=z_kv.dtype), z_kv])
    out = {}
    for ann in spec["layout"]["annotations"]:
        label = re.sub(r"</?b>", "", ann["text"])
        x0, y0 = ann["x"], int(round(ann["y"] + 0.6))
        out[label] = (x0, y0)
    return out, z_w, z_kv


def block(z: np.ndarray, center_x: float, y0: int, rows: int, cols: int) -> np.ndarray:
    x0 = int(round(center_x - (cols - 1) / 2))
    return z[y0 : y0 + rows, x0 : x0 + cols]


def table_numbers(at) -> dict:
    df = at.dataframe[0].value
    names = list(df.iloc[:, 0])
    out = {}
    for col in df.columns[2:]:
        out[col] = {n: int(str(v).split(" ")[0].replace(",", "")) for n, v in zip(names, df[col], strict=True)}
    return out


def test_defaults_render_diagram_and_repeat_kv(app_test):
    at = app_test(PAGE)
    no_exception(at)
    assert not at.error and not at.warning
    assert at.title[0].value == "KV sharing: MHA, GQA and MQA"
    assert "**GQA**" in at.markdown[0].value and "2 × 2 × 16 = **64** elements" in at.markdown[0].value
    specs = chart_specs(at)
    assert len(specs) == 2
    links = diagram_links(specs[0])
    assert links == {h: kv_group_of(h, 8, 2) for h in range(8)}
    texts = [a["text"] for a in specs[1]["layout"]["annotations"]]
    assert "cache [B, H_kv, T, D]<br>= [1, 2, 11, 16]" in texts
    assert "repeat_kv → [B, H, T, D]<br>= [1, 8, 11, 16]" in texts
    assert "<b>× 4</b>" in texts and "head 5 ← KV 1" in texts
    assert any("2 × 2 × 11 × 16 = 704" in c.value and "2 × 8 × 11 × 16 = 2,816" in c.value for c in at.caption)


@pytest.mark.parametrize("n_heads,n_kv", [(12, 3), (12, 12), (6, 1)])
def test_diagram_follows_the_sliders_and_kv_group_of(app_test, n_heads, n_kv):
    at = app_test(PAGE)
    at.slider(key="n_heads").set_value(n_heads).run()
    at.select_slider(key="n_kv_heads").set_value(n_kv).run()
    no_exception(at)
    spec = chart_specs(at)[0]
    assert diagram_links(spec) == {h: kv_group_of(h, n_heads, n_kv) for h in range(n_heads)}
    q_nodes = next(t for t in spec["data"] if t.get("name") == "query heads")
    assert len(q_nodes["text"]) == n_heads and q_nodes["text"][0] == "Q0"  # a label on every node


def test_bad_kv_heads_url_value_snaps_with_a_visible_notice(app_test):
    at = fresh({"n_heads": "12", "n_kv_heads": "5"})
    no_exception(at)
    assert at.select_slider(key="n_kv_heads").value == 4
    assert any("n_kv_heads = 5" in i.value and "valid values: 1, 2, 3, 4, 6, 12" in i.value.lower() for i in at.info)
    assert diagram_links(chart_specs(at)[0]) == {h: h // 3 for h in range(12)}


@pytest.mark.parametrize(
    "query,needle",
    [
        ({"kv_view": "<script>"}, "kv_view=<script>"),
        ({"d_model": "abc"}, "d_model=abc"),
        ({"d_model": "100"}, "d_model=100"),  # not a multiple of the step, 8
        ({"kv_view": "costs", "kv_dtype": "fp64"}, "kv_dtype=fp64"),
    ],
)
def test_bad_url_values_warn_and_fall_back(query, needle):
    at = fresh(query)
    no_exception(at)
    assert any(needle in w.value for w in at.warning), [w.value for w in at.warning]
    assert chart_specs(at)


def test_cost_table_equals_hand_arithmetic(app_test):
    at = app_test(PAGE, query={"kv_view": "costs"})
    no_exception(at)
    cols = table_numbers(at)
    cur, mha, mqa = (cols[c] for c in cols)
    assert list(cols) == ["This page: GQA, n_kv_heads = 2", "MHA, n_kv_heads = 8", "MQA, n_kv_heads = 1"]
    # d_model 128, 8 heads of 16, T = 11 tokens, fp16
    for col, kv in ((cur, 2), (mha, 8), (mqa, 1)):
        rows = list(col.values())
        q, k, v, o, total, elems, nbytes, seq, proj, attn, flops = rows
        assert q == 128 * 8 * 16 == 16_384 and o == 16_384
        assert k == v == 128 * kv * 16
        assert total == q + k + v + o
        assert elems == 2 * kv * 16 and nbytes == 2 * elems and seq == nbytes * T
        assert proj == 2 * 128 * (2 * 8 + 2 * kv) * 16
        assert attn == 4 * 8 * T * 16 == 5_632
        assert flops == proj + attn
    assert list(cur.values()) == [16384, 4096, 4096, 16384, 40960, 64, 128, 1408, 81920, 5632, 87552]
    assert list(mqa.values())[6] == 64 and list(mha.values())[6] == 512
    formulas = list(at.dataframe[0].value.iloc[:, 1])
    assert "2 × H_kv × d_k = 2 × 2 × 16" in formulas
    assert "1,408 B = 1.38 KiB" in list(at.dataframe[0].value.iloc[:, 2])
    bars = chart_specs(at)[0]["data"][0]
    assert list(arr(bars["customdata"])) == [64, 128, 256, 512] and bars["x"][1] == "2 · GQA"
    at.segmented_control(key="kv_dtype").set_value("fp32").run()
    no_exception(at)
    assert list(table_numbers(at).values())[0]["KV cache bytes per token"] == 256


def test_controls_change_what_is_shown(app_test):
    at = app_test(PAGE, query={"kv_view": "costs"})
    before = table_numbers(at)
    at.slider(key="d_model").set_value(256).run()
    no_exception(at)
    assert list(table_numbers(at).values())[0]["W_Q parameters"] == 256 * 8 * 16
    assert any("d_model = 256 differs from n_heads × d_k = 8 × 16 = 128" in c.value for c in at.caption)
    at.slider(key="head_dim").set_value(32).run()
    assert list(table_numbers(at).values())[0]["KV cache elements per token"] == 2 * 2 * 32
    at.text_area(key="text").set_value("one two three").run()
    assert list(table_numbers(at).values())[0]["FLOPs per token: QKᵀ and weights · V over T = 3 keys"] == 4 * 8 * 3 * 32
    at.segmented_control(key="source").set_value("synthetic").run()
    at.slider(key="seq_len").set_value(40).run()
    no_exception(at)
    assert "40 tokens" in at.markdown[0].value
    assert table_numbers(at) != before


def test_maps_view_groups_heads_with_their_k_and_v(app_test):
    at = app_test(PAGE, query={"kv_view": "maps"})
    no_exception(at)
    m = expected_maps()
    where, z_w, z_kv = panels(chart_specs(at)[0])
    for h in range(8):
        x, y0 = where[f"head {h}"]
        np.testing.assert_allclose(block(z_w, x, y0, T, T), m.weights[h], atol=1e-6)
        g = kv_group_of(h, 8, 2)
        kx, ky = where[f"Kᵀ · KV {g}"]
        vx, vy = where[f"Vᵀ · KV {g}"]
        assert ky == y0 and vy == y0  # drawn once, in the same band as the heads that read them
        np.testing.assert_allclose(block(z_kv, kx, ky, 16, T), m.k[g].T, atol=1e-6)
        np.testing.assert_allclose(block(z_kv, vx, vy, 16, T), m.v[g].T, atol=1e-6)
    assert sum(1 for k in where if k.startswith("Kᵀ")) == 2
    spread = [float(np.max(np.abs(m.weights[4 * g : 4 * g + 4] - m.weights[4 * g]))) for g in (0, 1)]
    g = int(np.argmax(spread))
    assert f"in KV group {g}, the maps of heads {4 * g}–{4 * g + 3}" in at.markdown[1].value
    assert f"**{max(spread):.3f}**" in at.markdown[1].value


def test_mapping_view_shows_the_maps_differ(app_test):
    at = app_test(PAGE, query={"kv_view": "mapping"})
    no_exception(at)
    specs = chart_specs(at)
    assert diagram_links(specs[0]) == dict(enumerate(kv_map(8, 2, "contiguous")))
    assert diagram_links(specs[1]) == {h: h % 2 for h in range(8)}
    assert "k.repeat(1, 4, 1, 1)" in at.code[0].value and "[0, 1, 0, 1, 0, 1, 0, 1]" in at.code[0].value
    bars = specs[2]["data"][0]
    assert [tuple(p) for p in bars["customdata"]] == [(h // 4, h % 2) for h in range(8)]
    kl = arr(bars["y"])
    assert all((kl[h] == 0) == (h // 4 == h % 2) for h in range(8))
    m = expected_maps()
    pair = arr(specs[3]["data"][0]["z"])
    assert at.slider(key="head").value == 1  # the first head that reads another KV head
    np.testing.assert_allclose(pair[:, :T], m.weights[1], atol=1e-6)
    wrong = weights_with_mapping(m.q, m.k, m.scale, m.mask, "interleaved")
    np.testing.assert_allclose(pair[:, -T:], wrong[1], atol=1e-6)
    assert not np.allclose(pair[:, :T], pair[:, -T:])
    at.slider(key="head").set_value(0).run()
    assert "reads KV head 0 under both conventions" in at.markdown[1].value
    at.segmented_control(key="built_with").set_value("interleaved").run()
    no_exception(at)
    bars = chart_specs(at)[2]["data"][0]
    assert [tuple(p) for p in bars["customdata"]] == [(h % 2, h // 4) for h in range(8)]
    at.slider(key="head").set_value(3).run()
    pair = arr(chart_specs(at)[3]["data"][0]["z"])
    np.testing.assert_allclose(pair[:, :T], wrong[3], atol=1e-6)  # as trained: interleaved
    np.testing.assert_allclose(pair[:, -T:], m.weights[3], atol=1e-6)
    at.select_slider(key="n_kv_heads").set_value(8).run()
    no_exception(at)
    assert at.info and "MHA" in at.info[0].value and len(chart_specs(at)) == 2


def test_conversion_view_numbers_and_sources(app_test):
    at = app_test(PAGE, query={"kv_view": "convert"})
    no_exception(at)
    spec = chart_specs(at)[0]
    mha = build_source("correlated", 128, 8, 16, seed=0, n_base=2, noise=0.3)
    study = conversion_study(mha, embed(tokenize(TEXT), 128, 0)[None], seed=0)
    lines = {(t["name"], t["xaxis"]): arr(t["y"]) for t in spec["data"]}
    np.testing.assert_allclose(lines[("mean of the group's K/V heads", "x")], study.rel_l2["mean"], rtol=1e-6)
    np.testing.assert_allclose(lines[("new random K/V heads", "x2")], study.kl["random"], rtol=1e-6)
    assert spec["data"][0]["x"] == ["1 · MQA", "2 · GQA", "4 · GQA", "8 · MHA"]
    assert any("uptraining" in e.label for e in at.expander)
    assert f"off by **{study.rel_l2['mean'][1]:.3f}** (mean-pooled)" in at.markdown[1].value
    at.slider(key="noise").set_value(0.0).run()
    no_exception(at)
    exact = arr(chart_specs(at)[0]["data"][0]["y"])
    assert exact[1] < 1e-5 and exact[2] < 1e-5  # identical copies of 2 bases: mean pooling is exact at 2 and 4
    at.slider(key="n_base").set_value(4).run()
    assert arr(chart_specs(at)[0]["data"][0]["y"])[1] > 0.01  # 2 KV heads now mix copies of different bases
    at.segmented_control(key="conv_source").set_value("random").run()
    no_exception(at)
    assert "n_base" not in [w.key for w in at.slider] and "noise" not in [w.key for w in at.slider]
    rnd = arr(chart_specs(at)[0]["data"][0]["y"])
    assert not np.allclose(rnd, study.rel_l2["mean"])
    assert rnd[-1] == 0  # mean pooling back to n_heads KV heads is exact


def test_too_large_layer_shows_error_but_diagram_and_table_still_work():
    q = {"d_model": "4096", "n_heads": "64", "head_dim": "256", "n_kv_heads": "8"}
    at = fresh(q | {"kv_view": "maps"})
    no_exception(at)
    assert at.error and "d_model × n_heads × head_dim" in at.error[0].value
    at = fresh(q | {"kv_view": "costs"})
    no_exception(at)
    assert list(table_numbers(at).values())[0]["W_Q parameters"] == 4096 * 64 * 256


def test_chinese(app_test):
    at = app_test(PAGE, query={"kv_view": "costs"}, session={"lang": "zh"})
    no_exception(at)
    assert at.title[0].value == "KV 共享：MHA、GQA 与 MQA"
    assert "本页设置：GQA，n_kv_heads = 2" in at.dataframe[0].value.columns


def test_many_kv_groups_are_shown_eight_at_a_time(app_test):
    at = app_test(PAGE, query={"kv_view": "maps"})
    at.slider(key="n_heads").set_value(16).run()
    at.select_slider(key="n_kv_heads").set_value(16).run()
    no_exception(at)
    where, _, _ = panels(chart_specs(at)[0])
    assert [k for k in where if k.startswith("head")] == [f"head {h}" for h in range(8)]
    at.slider(key="kv_first").set_value(8).run()
    no_exception(at)
    where, z_w, _ = panels(chart_specs(at)[0])
    assert [k for k in where if k.startswith("head")] == [f"head {h}" for h in range(8, 16)]
    m = expected_maps(n_heads=16, n_kv_heads=16)
    x, y0 = where["head 11"]
    np.testing.assert_allclose(block(z_w, x, y0, T, T), m.weights[11], atol=1e-6)


def test_seed_and_kv_heads_carry_over_from_another_page(app_test):
    at = app_test()  # the heatmap page
    at.select_slider(key="n_kv_heads").set_value(4).run()
    at.switch_page(PAGE)
    at.session_state["kv_view"] = "maps"
    at.session_state["seed"] = 3
    at.run()
    no_exception(at)
    assert at.select_slider(key="n_kv_heads").value == 4 and "n_kv_heads = 4 KV heads" in at.markdown[0].value
    where, z_w, _ = panels(chart_specs(at)[0])
    x, y0 = where["head 5"]
    np.testing.assert_allclose(block(z_w, x, y0, T, T), expected_maps(n_kv_heads=4, seed=3).weights[5], atol=1e-6)


@pytest.mark.parametrize("view", ["diagram", "maps", "costs", "mapping", "convert"])
def test_single_head_renders_every_view(view):
    at = fresh({"n_heads": "1", "n_kv_heads": "1", "kv_view": view})
    no_exception(at)
    assert not at.error and chart_specs(at)


LARGEST = {"source": "synthetic", "seq_len": "8192"}
MAX_SPEC_BYTES = 2_000_000


@pytest.mark.parametrize("heads", [{"n_heads": "64", "n_kv_heads": "8"}, {"n_heads": "32", "n_kv_heads": "32"}])
@pytest.mark.parametrize("view", ["diagram", "maps", "costs", "mapping", "convert"])
def test_largest_settings_render_every_view_with_small_charts(view, heads):
    # 8192 tokens and up to 64 heads: nothing builds the [H, T, T] maps, every chart's JSON stays under 2 MB.
    at = AppTest.from_file(str(ROOT / PAGE), default_timeout=900)
    for key, value in (LARGEST | heads | {"kv_view": view}).items():
        at.query_params[key] = value
    at.run()
    no_exception(at)
    assert not at.error, [e.value for e in at.error]
    assert "8192 tokens" in at.markdown[0].value  # the page really ran at 8192 tokens
    charts = at.get("plotly_chart")
    assert charts
    for chart in charts:
        assert len(chart.proto.spec) < MAX_SPEC_BYTES
    specs = chart_specs(at)
    texts = " ".join(m.value for m in at.markdown) + " ".join(c.value for c in at.caption)
    h, kv = int(heads["n_heads"]), int(heads["n_kv_heads"])
    if view == "maps":
        title = specs[0]["layout"]["title"]["text"]
        assert "blocks (max) of 8192×8192" in title and "the largest weight in a block of" in title
        n_shown = min(kv, 8) * (h // kv)
        assert sum(1 for a in specs[0]["layout"]["annotations"] if a["text"].startswith("<b>head ")) == n_shown
        if h > kv:
            assert "Measured on the maps as drawn" in texts
    elif view == "mapping" and h > kv:
        rows = convert.STUDY_CELLS // (h * 8192)  # every step-th query row, step = 8192 / rows
        note = f"measured on {rows} of 8,192 query rows (rows 0, {8192 // rows}, {2 * 8192 // rows}, …)"
        assert note in specs[2]["layout"]["title"]["text"]
        assert f"The KL of each head is measured on {rows} of 8,192 query rows" in texts
        assert "blocks (max) of 8192×8192" in specs[3]["layout"]["title"]["text"]
        kl = arr(specs[2]["data"][0]["y"])
        assert np.all(np.isfinite(kl)) and (kl > 0).sum() == 56  # 8 of 64 heads keep their KV head
    elif view == "convert":
        rows = convert.CONV_CELLS // (h * 8192)
        assert f"Measured on {rows} of 8,192 query rows" in texts
        assert f"measured on {rows} of 8,192 query rows" in specs[0]["layout"]["title"]["text"]


# ---------------------------------------------------------------- issue 12
def page_texts(at) -> str:
    """Every sentence the run showed: markdown (expanders included), captions, notices and chart titles."""
    shown = [e.value for e in [*at.markdown, *at.caption, *at.info, *at.warning, *at.error]]
    titles = [s["layout"].get("title", {}).get("text", "") for s in chart_specs(at)]
    return "\n".join(shown + titles)


def element_order(at) -> list[tuple[str, str]]:
    """(type, key or start of the text) of every element of the main area, in page order."""
    out = []

    def walk(node):
        children = getattr(node, "children", None)
        if children is None:
            out.append((node.type, getattr(node, "key", None) or str(getattr(node, "value", ""))[:40]))
            return
        for k in sorted(children) if isinstance(children, dict) else range(len(children)):
            walk(children[k])

    walk(at.main)
    return out


KV_PAGES = [PAGE, "app_pages/heatmaps.py"]


@pytest.mark.parametrize("page", KV_PAGES)
@pytest.mark.parametrize(
    "start,path",
    [
        # 2 KV heads for 8 (groups of 4): 9 -> 3 (groups of 3), 10 -> 5 (groups of 2: at most 4), back at 8 -> 2
        (2, [(9, 3), (10, 5), (8, 2), (12, 3), (7, 7), (16, 4), (8, 2)]),
        (8, [(9, 9), (10, 10), (8, 8)]),  # MHA stays MHA
        (1, [(9, 1), (10, 1), (8, 1)]),  # MQA stays MQA
    ],
)
def test_changing_n_heads_keeps_the_learners_kv_choice(app_test, page, start, path):
    at = app_test(page)
    at.select_slider(key="n_kv_heads").set_value(start).run()
    for n_heads, kv in path:
        at.slider(key="n_heads").set_value(n_heads).run()
        no_exception(at)
        assert at.select_slider(key="n_kv_heads").value == kv, (n_heads, at.select_slider(key="n_kv_heads").value)
    # a move of the KV control itself is the new choice: 4 of 8 (groups of 2), then 12 heads -> 6
    at.select_slider(key="n_kv_heads").set_value(4).run()
    at.slider(key="n_heads").set_value(12).run()
    assert at.select_slider(key="n_kv_heads").value == 6


@pytest.mark.parametrize("page", KV_PAGES)
def test_kv_notice_says_what_changed_below_the_controls(app_test, page):
    at = app_test(page)
    at.slider(key="n_heads").set_value(9).run()  # from the default 2 of 8
    no_exception(at)
    notes = [i.value for i in at.info if "n_kv_heads 2 → 3" in i.value]
    assert len(notes) == 1, [i.value for i in at.info]
    assert "not a multiple of your ratio n_heads / n_kv_heads = 4 (8 / 2)" in notes[0]
    order = element_order(at)
    notice = next(i for i, (kind, text) in enumerate(order) if kind == "info" and text.startswith("n_heads = 9"))
    controls = [i for i, (kind, _) in enumerate(order) if kind in ("slider", "select_slider", "text_area")]
    assert notice > max(controls), order[: notice + 1]  # the notice comes after every control: none moves
    at.slider(key="n_heads").set_value(16).run()
    assert [i.value for i in at.info if "n_kv_heads" in i.value] == [
        "n_heads = 16: n_kv_heads 3 → 4, which keeps your ratio n_heads / n_kv_heads = 4."
    ]
    at.run()  # a rerun without a change shows no notice
    assert not any("n_kv_heads" in i.value for i in at.info)


def test_bad_kv_heads_url_value_notice_is_below_the_controls():
    at = fresh({"n_heads": "12", "n_kv_heads": "5"})
    order = element_order(at)
    notice = next(i for i, (kind, text) in enumerate(order) if kind == "info" and text.startswith("n_kv_heads = 5"))
    assert notice > max(i for i, (kind, _) in enumerate(order) if kind in ("slider", "select_slider"))
    at.slider(key="n_heads").set_value(9).run()  # the snapped 4 of 12 (groups of 3) is the choice now
    assert at.select_slider(key="n_kv_heads").value == 3


def ranked(values: dict[str, float], decimals: int) -> str:
    names = {"mean": "mean-pooled", "first": "first head", "random": "random"}
    order = sorted(values, key=lambda m: round(values[m], decimals))
    return " < ".join(f"{names[m]} {values[m]:.{decimals}f}" for m in order)


@pytest.mark.parametrize(
    "query,n_kv,l2_paper",
    [
        ({"conv_source": "random", "n_kv_heads": "1"}, 1, False),  # the case: first 1.347 > random 1.255
        ({}, 2, True),  # correlated heads, 2 KV heads: mean < first < random
    ],
)
def test_uptraining_note_says_what_the_chart_shows(query, n_kv, l2_paper):
    at = fresh({"kv_view": "convert", **query})
    no_exception(at)
    source = query.get("conv_source", "correlated")
    study = conversion_study(
        build_source(source, 128, 8, 16, seed=0, n_base=2 if source == "correlated" else 1, noise=0.3),
        embed(tokenize(TEXT), 128, 0)[None],
        source=source,
    )
    i = list(study.n_kv).index(n_kv)
    l2 = {m: float(study.rel_l2[m][i]) for m in study.rel_l2}
    kl = {m: float(study.kl[m][i]) for m in study.kl}
    note = next(e.markdown[0].value for e in at.expander if "Ainslie" in e.markdown[0].value)
    assert "as the chart shows" not in note
    assert "mean pooling did best, then keeping the first head, then random initialisation" in note
    assert "arXiv 2305.13245" in note
    paper = "(the paper's order)" if l2_paper else "(not the paper's order)"
    assert f"layer output {ranked(l2, 3)} {paper}" in note
    assert f"attention maps (KL) {ranked(kl, 4)} (the paper's order)" in note
    if not l2_paper:
        assert "random 1.255 < first head 1.347" in note  # the numbers the issue read off the chart


def test_n_heads_help_fits_the_page():
    kv_page = fresh({})
    help_kv = kv_page.slider(key="n_heads").proto.help
    assert "d_model = n_heads × d_k" not in help_kv and "d_model has its own slider" in help_kv
    assert kv_page.slider(key="d_model")  # the slider that help refers to
    heat = AppTest.from_file(str(ROOT / "app_pages/heatmaps.py"), default_timeout=600).run()
    assert "d_model = n_heads × d_k" in heat.slider(key="n_heads").proto.help  # true there: no d_model slider


def maps_help(at) -> str:
    return next(e.markdown[0].value for e in at.expander if e.markdown and "One row per KV head" in e.markdown[0].value)


def test_maps_help_says_what_the_drawn_maps_are():
    exact = fresh({"kv_view": "maps"})
    z = panels(chart_specs(exact)[0])[1]
    where = panels(chart_specs(exact)[0])[0]
    x, y0 = where["head 5"]
    np.testing.assert_allclose(np.nansum(block(z, x, y0, T, T), axis=1), 1.0, rtol=1e-5)  # drawn rows sum to 1
    assert "each row sums to 1" in maps_help(exact) and "pooled" not in maps_help(exact)

    pooled = fresh({"kv_view": "maps", "source": "synthetic", "seq_len": "200"})
    no_exception(pooled)
    spec = chart_specs(pooled)[0]
    where, z, _ = panels(spec)
    x, y0 = where["head 5"]
    drawn = block(z, x, y0, 50, 50)  # 200 tokens pooled 4×4 into 50×50 blocks (the chart's subtitle says so)
    assert "showing 50×50 blocks (max) of 200×200" in spec["layout"]["title"]["text"]
    assert np.nanmax(np.abs(np.nansum(drawn, axis=1) - 1.0)) > 0.05  # block maxima: rows do not sum to 1
    text = maps_help(pooled)
    assert "each row sums to 1" not in text
    assert "(200×200 → 50×50): each cell is the largest weight in a block of 4×4" in text
    assert "a drawn row does not sum to 1" in text


@pytest.mark.parametrize("n_heads,n_kv", [(8, 2), (12, 3), (12, 4), (8, 8), (8, 1)])
def test_mapping_help_counts_the_heads_that_read_another_kv_head(n_heads, n_kv):
    at = fresh({"kv_view": "mapping", "n_heads": str(n_heads), "n_kv_heads": str(n_kv)})
    no_exception(at)
    contiguous, interleaved = kv_map(n_heads, n_kv, "contiguous"), kv_map(n_heads, n_kv, "interleaved")
    wrong = sum(a != b for a, b in zip(contiguous, interleaved, strict=True))
    help_text = next(e.markdown[0].value for e in at.expander if "Both conventions are valid" in e.markdown[0].value)
    assert "most query heads" not in help_text
    if wrong:
        assert f"{wrong} of the {n_heads} query heads ({100 * wrong / n_heads:.3g} %) would read another" in help_text
        assert any(f"{wrong} of {n_heads} query heads read the wrong KV head" in c.value for c in at.caption)
    else:
        assert "no head would be affected" in help_text
    if (n_heads, n_kv) == (8, 2):
        assert "4 of the 8 query heads (50 %)" in help_text  # exactly half, not "most"


SINGULAR_WRONG = re.compile(r"\b1 (query |KV |base |independent random )?heads\b|\b1 (tokens|keys)\b")


@pytest.mark.parametrize("view", ["diagram", "maps", "costs", "mapping", "convert"])
@pytest.mark.parametrize(
    "query", [{"n_heads": "1"}, {"n_heads": "8", "n_kv_heads": "1", "n_base": "1"}, {"n_heads": "9", "n_kv_heads": "1"}]
)
def test_no_plural_after_one(view, query):
    at = fresh({"kv_view": view, **query})
    no_exception(at)
    text = page_texts(at)
    assert not SINGULAR_WRONG.search(text), SINGULAR_WRONG.search(text).group(0)
    if query["n_heads"] == "1" and view == "diagram":
        assert "n_heads = 1 query head, n_kv_heads = 1 KV head, n_rep = 1 query head per KV head" in text
    if query.get("n_kv_heads") == "1" and query["n_heads"] == "8":
        assert "n_kv_heads = 1 KV head, n_rep = 8 query heads per KV head" in text
        if view == "convert":
            assert "built from 1 base head:" in text


@pytest.mark.parametrize(
    "n_kv,n_base,mixed",
    [
        (2, 2, 0),  # heads 0-3 copy base 0, 4-7 base 1: groups 0-3 and 4-7 are pure
        (1, 2, 1),  # MQA: the one group holds both bases
        (2, 4, 2),  # bases 0,0,1,1,2,2,3,3 in groups of 4: both groups mix two bases
        (4, 4, 0),  # groups of 2: pure
    ],
)
def test_correlated_source_caption_describes_the_current_groups(n_kv, n_base, mixed):
    at = fresh({"kv_view": "convert", "n_kv_heads": str(n_kv), "n_base": str(n_base)})
    no_exception(at)
    caption = next(c.value for c in at.caption if c.value.startswith("Source: an MHA layer of 8 heads"))
    assert f"built from {n_base} base heads" in caption
    assert "mean < first < random" not in caption  # no fixed claim about the measured order
    if mixed:
        assert f"At n_kv_heads = {n_kv}, groups mixing copies of different base heads" in caption
        assert caption.endswith(f"): {mixed} of {n_kv}.")
    else:
        assert caption.endswith(f"At n_kv_heads = {n_kv} every group holds copies of a single base head.")


def test_the_address_keeps_n_kv_heads_as_a_plain_number(app_test):
    """A link's ?n_kv_heads=4 stays in the address (Streamlit's own binding wrote "4 · GQA" and dropped "4")."""
    at = app_test("app_pages/heatmaps.py", query={"n_heads": "12", "n_kv_heads": "4"})
    no_exception(at)
    assert at.select_slider(key="n_kv_heads").value == 4
    assert at.query_params["n_kv_heads"] == ["4"] or at.query_params["n_kv_heads"] == "4"
    at.select_slider(key="n_kv_heads").set_value(6).run()
    assert at.query_params["n_kv_heads"] in ("6", ["6"])
    at.select_slider(key="n_kv_heads").set_value(2).run()  # the default: the address leaves it out
    assert "n_kv_heads" not in at.query_params


def test_the_mapping_view_on_slides_is_one_part_a_slide(app_test):
    """On a slide the mapping view drew its four charts, the code and the sentences in one viewport (59 texts over
    each other, "KV0/KV1" cut by their charts): now the two conventions, then the mismatch of every head, then one
    head's maps, with Previous and Next; its options in the controls bar."""
    from tests.util import chart_specs

    at = app_test("app_pages/kv_sharing.py", query={"kv_view": "mapping"}, session={"present": True})
    no_exception(at)
    shown = []
    for i in range(3):
        shown.append([s["layout"]["title"]["text"].split("<br>")[0] for s in chart_specs(at)])
        if i < 2:
            at.button(key="slide__next").click().run()
    assert [len(s) for s in shown] == [2, 1, 1], shown
    assert shown[0][0].startswith("Contiguous:") and shown[1][0].startswith("Run with the other convention:")
    assert shown[2][0].startswith("One query head:")
    at = app_test("app_pages/kv_sharing.py", query={"kv_view": "mapping", "n_kv_heads": "8"}, session={"present": True})
    assert "slide__next" not in [b.key for b in at.button]  # MHA: the two conventions agree, one slide
