"""AppTest: the KV-cache memory page: calculator, presets, formula, bad input, live decode, prefill against decode."""

import dataclasses
import json

import numpy as np
import pytest

from attn_core.kv.cache import DecodeConfig, run_decode
from attn_core.kv.memory import kv_cache_bytes, load_presets, mla_cache_bytes
from attn_core.views import kv_cache as kc
from tests.conftest import no_exception
from tests.util import arr, chart_specs, decoded
from ui.compute import LiveRun

PAGE = "app_pages/kv_cache.py"
GiB = 1024**3


def latex(at) -> str:
    return at.get("latex")[0].proto.body


def metric(at) -> str:
    return at.metric[0].value


def memory_chart(at) -> dict:
    return next(s for s in chart_specs(at) if s["layout"].get("uirevision") == "kv_memory")


def line(spec: dict, prefix: str) -> tuple[np.ndarray, np.ndarray]:
    tr = next(t for t in spec["data"] if t.get("name", "").startswith(prefix))
    return arr(tr["x"]).astype(np.int64), arr(tr["y"])


def texts(at) -> str:
    return "\n".join(e.value for e in [*at.markdown, *at.caption, *at.warning, *at.info, *at.error, *at.success])


def test_defaults_open_on_a_gqa_model_so_the_comparison_has_a_gqa_row(app_test):
    at = app_test(PAGE)
    no_exception(at)
    assert not at.error and not at.warning
    assert at.selectbox(key="model").value == "llama-3-8b"
    table = at.dataframe[0].value
    assert table.iloc[:, 0].tolist() == ["MHA", "GQA-8 (this model)", "MQA"]
    assert table.iloc[:, 1].tolist() == ["2 × 32 × 128 = 8,192", "2 × 8 × 128 = 2,048", "2 × 1 × 128 = 256"]
    # 2 x 32 layers x 8 KV heads x 4096 tokens x 128 x 2 bytes = 512 MiB, a quarter of MHA's, 8 times MQA's
    assert metric(at) == "512 MiB" and table.iloc[:, 4].tolist() == ["2,147,483,648", "536,870,912", "67,108,864"]
    assert table.iloc[:, 5].tolist() == ["1×", "1/4", "1/32"]
    assert "query heads **32** · KV heads **8** · head_dim **128**" in texts(at)


def test_llama_2_7b_at_4096_tokens_is_2_gib(app_test):
    at = app_test(PAGE, query={"model": "llama-2-7b"})
    no_exception(at)
    assert not at.error and not at.warning
    assert metric(at) == "2.00 GiB"
    body = latex(at)
    # the formula with the user's numbers substituted, ending in the exact bytes and the binary unit
    assert r"2 \times L \times B \times H_{kv} \times S \times d_k \times b" in body
    assert r"2 \times 32 \times 1 \times 32 \times 4{,}096 \times 128 \times 2\,\mathrm{B}" in body
    assert r"2{,}147{,}483{,}648\,\mathrm{B}" in body and r"\text{2.00 GiB}" in body
    assert "2,147,483,648 bytes" in texts(at)
    assert "https://huggingface.co/meta-llama/Llama-2-7b-hf/blob/main/config.json" in texts(at)
    x, y = line(memory_chart(at), "MHA")
    assert y[x == 4096][0] == 2 * GiB and np.all(y == x * 512 * 1024)
    table = at.dataframe[0].value
    assert "2,147,483,648" in table.iloc[:, 4].tolist()
    assert table.iloc[0, -1] == "163,840"  # 80 GiB / 512 KiB per token
    assert "Press Run decode" in texts(at) and "Press Measure prefill and decode" in texts(at)
    # the memory chart, the tensors and the live decode's prediction: nothing is measured or timed until asked
    assert [s["layout"].get("uirevision") for s in chart_specs(at)] == ["kv_memory", "kv_tensors", "kv_live_mem"]


def test_prefill_against_decode_is_measured_on_request(app_test):
    at = app_test(PAGE, query={"model": "gpt2", "pd_tokens": "8"})
    at.button(key="kv_pd_run").click().run()
    no_exception(at)
    bars = next(s for s in chart_specs(at) if s["data"][0]["type"] == "bar")
    ms = arr(bars["data"][0]["y"])
    assert len(ms) == 2 and np.all(ms > 0)
    timing = at.session_state["kv_pd"].steps[-1]
    assert timing.n_tokens == 8 and ms.tolist() == [timing.prefill_s * 1e3, timing.decode_s * 1e3]
    assert "query heads 12, KV heads 12, d_k = 64, layers 2" in texts(at)
    at.slider(key="pd_tokens").set_value(16).run()  # other settings: the old bars stay, marked as such
    assert "earlier settings" in texts(at)


def test_prefill_says_which_model_it_will_time_before_it_is_pressed(app_test):
    at = app_test(PAGE, query={"model": "gpt2", "dec_layers": "3", "dec_batch": "2"})
    no_exception(at)
    plan = next(c.value for c in at.caption if c.value.startswith("Times the live-decode model"))
    assert plan == (
        "Times the live-decode model: query heads 12, KV heads 12, d_k = 64, layers 3, batch 2, cache fp16. "
        "Its controls are in “Live decode” above."
    )  # the live decode's own controls (AppTest draws every section open), before any measurement


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_plan_says_where_its_settings_come_from(lang):
    from attn_core.figures import Style

    p = kc.Params(model="gpt2", dec_layers=5)
    spec = kc.prefill_spec(p)
    closed, opened = (kc.prefill_plan(spec, from_live, Style(lang=lang)) for from_live in (False, True))
    assert ("layers 5" if lang == "en" else "层数 5") in closed and closed != opened
    assert closed.endswith(
        "These are the defaults of the “Live decode” section: open it to change them."
        if lang == "en"
        else "这些是“实时解码”部分的默认值：展开该部分即可修改。"
    )


def test_preset_switch_updates_formula_result_and_chart(app_test):
    at = app_test(PAGE, query={"model": "llama-2-7b"})  # from an MHA model (the default is Llama-3-8B)
    at.selectbox(key="model").set_value("llama-3-8b").run()
    no_exception(at)
    assert metric(at) == "512 MiB"
    assert r"2 \times 32 \times 1 \times 8 \times 4{,}096 \times 128 \times 2\,\mathrm{B}" in latex(at)
    x, y = line(memory_chart(at), "GQA-8")
    assert y[x == 8192][0] == kv_cache_bytes(32, 8, 128, 8192)
    at.selectbox(key="model").set_value("deepseek-v3").run()
    no_exception(at)
    assert at.query_params["model"] in ("deepseek-v3", ["deepseek-v3"])  # the choice is in the link
    want = mla_cache_bytes(61, 512, 64, 4096, dtype="fp16")
    assert r"61 \times 1 \times 4{,}096 \times (512 + 64) \times 2\,\mathrm{B}" in latex(at)
    assert f"{want:,}".replace(",", "{,}") in latex(at)
    assert "MLA is not simulated" in texts(at)
    table = at.dataframe[0].value  # the KV heads (or d_c + d_R) inside the elements cached per token and layer
    assert table.iloc[:, 1].tolist() == [
        "2 × 128 × 128 = 32,768",
        "2 × 1 × 128 = 256",
        "128 × (192 + 128) = 40,960",
        "512 + 64 = 576",
    ]
    # MHA is DeepSeek-V2's comparison, 2 x 128 heads x d_h 128 = 32,768 elements per token and layer
    assert table.iloc[:, 5].tolist() == ["1×", f"1/{128:.4g}", "1.25×", f"1/{32768 / 576:.4g}"]
    names = [t.get("name", "") for t in memory_chart(at)["data"]]
    assert any(n.startswith("MLA (this model)") for n in names) and any(n.startswith("MHA") for n in names)
    assert any(n.startswith("MLA decompressed, cached per head (naive) · ") for n in names)
    at.selectbox(key="model").set_value("falcon-7b").run()
    assert r"2 \times 32 \times 1 \times 1 \times 4{,}096 \times 64 \times 2" in latex(at)
    assert at.warning  # 4096 > Falcon-7B's 2048 positions: warned, still computed
    assert metric(at) == "32.0 MiB"


def test_controls_change_the_numbers(app_test):
    at = app_test(PAGE, query={"model": "llama-2-7b"})
    at.selectbox(key="dtype").set_value("int4").run()
    assert metric(at) == "512 MiB" and r"\times 0.5\,\mathrm{B}" in latex(at)
    at.slider(key="batch").set_value(8).run()
    assert metric(at) == "4.00 GiB" and r"2 \times 32 \times 8 \times 32" in latex(at)
    at.select_slider(key="seq_len").set_value(1 << 20).run()
    no_exception(at)
    assert at.warning  # beyond Llama-2-7B's 4096 positions
    assert metric(at) == f"{kv_cache_bytes(32, 32, 128, 1 << 20, 8, 'int4') / 1024**4:.2f} TiB"
    at.slider(key="device_gib").set_value(24).run()
    device = next(t for t in memory_chart(at)["data"] if t.get("name", "").startswith("device memory"))
    assert arr(device["y"]).tolist() == [24 * GiB] * 2
    at.toggle(key="stack_weights").set_value(True).run()
    no_exception(at)
    w = 2 * load_presets()["llama-2-7b"].n_params
    x, y = line(memory_chart(at), "MHA")
    assert np.all(y == w + x * kv_cache_bytes(32, 32, 128, 1, 8, "int4"))
    assert memory_chart(at)["layout"]["yaxis"]["type"] == "log"
    at.segmented_control(key="y_scale").set_value("linear").run()
    assert memory_chart(at)["layout"]["yaxis"]["type"] == "linear"


def test_current_settings_come_from_the_shared_parameters(app_test):
    query = {
        "model": "custom",
        "n_heads": "16",
        "n_kv_heads": "4",
        "head_dim": "64",
        "n_layers": "24",
        "seq_len": "2048",
    }
    at = app_test(PAGE, query=query)
    no_exception(at)
    assert not at.warning and not at.info
    want = kv_cache_bytes(24, 4, 64, 2048)
    assert r"2 \times 24 \times 1 \times 4 \times 2{,}048 \times 64 \times 2\,\mathrm{B}" in latex(at)
    assert f"{want:,}".replace(",", "{,}") in latex(at)
    assert metric(at) == "48.0 MiB" == f"{want / 2**20:.1f} MiB"
    at.slider(key="head_dim").set_value(80).run()
    assert metric(at) == f"{kv_cache_bytes(24, 4, 80, 2048) / 2**20:.1f} MiB"


@pytest.mark.parametrize(
    ("query", "kind", "text"),
    [
        ({"model": "gpt-5"}, "warning", "model=gpt-5"),
        ({"dtype": "fp64"}, "warning", "dtype=fp64"),
        ({"seq_len": "5000"}, "info", "4096"),
        ({"seq_len": "-3"}, "warning", "seq_len=-3"),
        ({"batch": "0"}, "warning", "batch=0"),
        ({"device_gib": "lots"}, "warning", "device_gib=lots"),
        (
            {"model": "custom", "n_heads": "12", "n_kv_heads": "5"},
            "info",
            "nearest divisor, 4. Valid values: 1, 2, 3, 4, 6, 12",
        ),
    ],
)
def test_bad_url_values_give_a_notice_and_keep_the_page(app_test, query, kind, text):
    at = app_test(PAGE, query=query)
    no_exception(at)
    notices = " ".join(e.value for e in getattr(at, kind))
    assert text in notices
    assert at.metric and memory_chart(at)


def test_live_decode_runs_to_completion_and_matches_the_formula(app_test):
    at = app_test(PAGE, query={"model": "llama-3-8b", "dec_steps": "6", "dec_prompt": "4"})
    at.button(key="kv_run").click().run()
    no_exception(at)
    assert not at.error
    done = at.success[0].value
    assert "Measured cache = formula at every one of the 6 steps" in done
    assert "Same tokens with and without the cache: 6 of 6" in done
    assert "Median time per generated token after the prefill" in done  # a conclusion from the measured medians
    assert "per layer each [B, H_kv, S_max, d_k] = [1, 8, 9, 128]" in texts(at)  # 4 + 6 - 1 positions
    mem = next(s for s in chart_specs(at) if s["layout"].get("uirevision") == "kv_live_mem")
    by_name = {t["name"]: t for t in mem["data"]}
    measured, formula = arr(by_name["measured (tensor sizes)"]["y"]), arr(by_name["formula 2·L·B·H·S·d_k·b"]["y"])
    seq = arr(by_name["measured (tensor sizes)"]["x"]).astype(int)
    assert seq.tolist() == [4, 5, 6, 7, 8, 9]
    assert np.array_equal(measured, formula)
    # the same steps computed directly: 32 query heads, 8 KV heads of 128, 2 layers, fp16, in KiB on the axis
    assert mem["layout"]["yaxis"]["title"]["text"] == "cache (KiB, binary)"
    assert np.array_equal(measured * 1024, [kv_cache_bytes(2, 8, 128, int(s), 1, "fp16") for s in seq])
    cfg = DecodeConfig(n_heads=32, n_kv_heads=8, head_dim=128, n_layers=2, dtype="fp16", seed=0)
    direct = list(run_decode(cfg, 4, 6, recompute=False))
    assert [s.token for s in at.session_state["kv_decode"].steps] == [s.token for s in direct]
    timing = next(s for s in chart_specs(at) if s["layout"].get("uirevision") == "kv_live_time")
    assert [t["name"] for t in timing["data"]] == ["with the KV cache", "no cache (recompute all K, V)"]
    # a later rerun keeps the results on screen
    at.run()
    assert "6 steps" in at.success[0].value


@pytest.mark.parametrize("wrong", [False, True])
def test_before_run_the_decode_chart_shows_the_formula_s_prediction(app_test, wrong):
    """Before Run the live decode's memory chart is already there (on a slide too, where captions are folded away):
    the formula at each step the run will make, nothing measured yet, on the axes the run then draws its measured
    points on; with the repeat_kv mistake, the right-sized cache beside it. Run replaces it with the measurement."""
    query = {"model": "llama-3-8b", "dec_steps": "6", "dec_prompt": "4", "dec_recompute": "false"}
    at = app_test(PAGE, query={**query, "dec_wrong": str(wrong).lower()})
    no_exception(at)
    plans = [s for s in chart_specs(at) if s["layout"].get("uirevision") == "kv_live_mem"]
    assert len(plans) == 1
    plan = plans[0]
    assert plan["layout"]["title"]["text"] == "Cache at each step: the formula's prediction"
    by_name = {t["name"]: t for t in plan["data"]}
    formula = by_name["formula 2·L·B·H·S·d_k·b"]
    seq = arr(formula["x"]).astype(int)
    assert seq.tolist() == [4, 5, 6, 7, 8, 9]  # the cache after each of the 6 steps: 4 + 6 - 1 at the end
    heads = 32 if wrong else 8  # what the cache holds: every query head's copy with the mistake
    assert np.array_equal(arr(formula["y"]) * 1024, [kv_cache_bytes(2, heads, 128, int(t), 1, "fp16") for t in seq])
    measured = by_name["measured, cached after repeat_kv" if wrong else "measured (tensor sizes)"]
    assert len(arr(measured["x"])) == 0 and len(arr(measured["y"])) == 0
    if wrong:
        right = by_name["correct cache (n_kv_heads heads)"]
        assert np.array_equal(arr(right["y"]) * 1024, [kv_cache_bytes(2, 8, 128, int(t), 1, "fp16") for t in seq])
    at.button(key="kv_run").click().run()
    no_exception(at)
    mems = [s for s in chart_specs(at) if s["layout"].get("uirevision") == "kv_live_mem"]
    assert len(mems) == 1 and mems[0]["layout"]["title"]["text"].startswith("Cache at each step: measured")
    for axis in ("xaxis", "yaxis"):  # the measured points land on the chart the prediction drew
        assert mems[0]["layout"][axis]["range"] == plan["layout"][axis]["range"]
    done = {t["name"]: t for t in mems[0]["data"]}
    assert np.array_equal(arr(done[measured["name"]]["x"]), seq)


def test_repeat_kv_mistake_caches_n_rep_times_more(app_test):
    at = app_test(
        PAGE,
        query={
            "model": "llama-3-8b",
            "dec_steps": "3",
            "dec_prompt": "2",
            "dec_wrong": "true",
            "dec_recompute": "false",
        },
    )
    assert "32 heads instead of 8: 4× the memory" in texts(at)
    # the buffers hold all 32 query heads' copies: [B, H, S_max, d_k] with S_max = 2 + 3 - 1
    assert "per layer each [B, H, S_max, d_k] = [1, 32, 4, 128]: cached after repeat_kv" in texts(at)
    assert "[B, H_kv, S_max, d_k]" not in texts(at)
    at.button(key="kv_run").click().run()
    no_exception(at)
    mem = next(s for s in chart_specs(at) if s["layout"].get("uirevision") == "kv_live_mem")
    by_name = {t["name"]: t for t in mem["data"]}
    wrong = arr(by_name["measured, cached after repeat_kv"]["y"])
    right = arr(by_name["correct cache (n_kv_heads heads)"]["y"])
    assert np.allclose(wrong, 4 * right) and wrong[0] > 0
    timing = next(s for s in chart_specs(at) if s["layout"].get("uirevision") == "kv_live_time")
    assert [t["name"] for t in timing["data"]] == ["with the KV cache"]


def test_a_stopped_run_leaves_the_page_usable(app_test):
    cfg = DecodeConfig(n_heads=32, n_kv_heads=32, head_dim=128, n_layers=2, dtype="fp16", seed=0)
    gen = run_decode(cfg, 16, 128)
    partial = [next(gen) for _ in range(5)]
    gen.close()
    state = LiveRun(params=(kc.DecodeSpec(cfg, 16, 128, True), "cpu"), steps=partial, status="running")
    at = app_test(PAGE, session={"kv_decode": state})
    no_exception(at)
    assert "Stopped after 5 of 128 steps" in at.warning[0].value
    assert at.session_state["kv_decode"].status == "stopped"
    mem = next(s for s in chart_specs(at) if s["layout"].get("uirevision") == "kv_live_mem")
    assert len(arr(mem["data"][-1]["x"])) == 5
    at.selectbox(key="model").set_value("gpt2").run()  # the rest of the page still works
    no_exception(at)
    assert metric(at) == "144 MiB"


def test_a_decode_the_device_cannot_hold_is_refused(app_test):
    at = app_test(PAGE, query={"model": "deepseek-v3", "dec_batch": "16", "dec_steps": "1024", "dec_prompt": "256"})
    at.button(key="kv_run").click().run()
    no_exception(at)
    assert "the live decode needs about" in at.error[0].value and "may be used on cpu" in at.error[0].value
    assert at.session_state["kv_decode"].steps == []
    assert memory_chart(at)  # the calculator is untouched


def test_chinese_page(app_test):
    at = app_test(PAGE, query={"model": "llama-2-7b"}, session={"lang": "zh"})
    no_exception(at)
    assert at.title[0].value == "KV 缓存的显存占用"
    assert metric(at) == "2.00 GiB"
    assert (
        memory_chart(at)["layout"]["xaxis"]["title"]["text"]
        == "序列长度 S（词元数，对数刻度；K = 1,024，M = 1,048,576）"
    )


def test_mla_model_line_and_help_follow_the_deepseek_v2_paper(app_test):
    at = app_test(PAGE, query={"model": "deepseek-v2-lite"})
    no_exception(at)
    line = at.markdown[0].value
    assert "KV heads" not in line and "head_dim" not in line  # no "16 KV heads · head_dim 192"
    assert "attention heads **16**, each with a key of 128 + 64 (RoPE) and a value of 128" in line
    assert "one latent c_KV of **512** and one RoPE key of **64**" in line
    assert "https://arxiv.org/abs/2405.04434" in texts(at)
    # 2 x 16 x 128 = 4,096 against 512 + 64 = 576: 7.1x (the naive per-head cache: 16 x 320 = 5,120, 8.9x)
    assert "2 × 16 × 128 = 4,096 elements per token and layer, **7.1×** the MLA cache" in texts(at)
    assert "16 × (192 + 128) = 5,120 elements per token and layer, 8.9× the MLA cache" in texts(at)
    assert "16 heads of d_h = 128" in at.info[0].value  # the live decode runs the table's MHA row


def injected(cached_ms: float, recompute_ms: float, n: int = 6) -> LiveRun:
    """A finished decode of llama-3-8b's shape with the given per-step times, as the page keeps it."""
    cfg = DecodeConfig(n_heads=32, n_kv_heads=8, head_dim=128, n_layers=2, dtype="fp16", seed=0)
    steps = list(run_decode(cfg, 4, n, recompute=True))
    steps = [dataclasses.replace(s, time_cached_s=cached_ms / 1e3, time_recompute_s=recompute_ms / 1e3) for s in steps]
    return LiveRun(params=(kc.DecodeSpec(cfg, 4, n, True), "cpu"), steps=steps, status="done")


@pytest.mark.parametrize(
    ("cached", "recompute", "needles", "absent"),
    [
        (1.0, 3.0, ["**1 ms** with the cache, **3 ms** recomputing", "the cache was **3× faster**"], "overhead"),
        (2.0, 2.1, ["about the same (1.05×)", "mostly fixed overhead", "takes 2 ms"], "faster"),
        # the case: a tiny model at ~20 tokens, the cache slower: the page says why
        (3.8, 1.6, ["the cache took **2.38× as long**", "mostly fixed overhead", "at most 9 tokens"], "faster"),
    ],
)
def test_the_speed_sentence_follows_the_measured_medians(app_test, cached, recompute, needles, absent):
    at = app_test(PAGE, query={"dec_steps": "6", "dec_prompt": "4"}, session={"kv_decode": injected(cached, recompute)})
    no_exception(at)
    done = at.success[0].value
    assert all(n in done for n in needles), done
    assert absent not in done


def test_a_count_of_one_is_singular_on_the_page(app_test):
    query = {
        "model": "custom",
        "n_heads": "1",
        "n_kv_heads": "1",
        "head_dim": "1",
        "n_layers": "1",
        "seq_len": "1",
        "dtype": "int4",
    }
    at = app_test(PAGE, query=query)
    no_exception(at)
    assert "**1 byte** in all" in texts(at)  # 2 x 1 x 1 x 1 x 1 x 1 x 0.5 B
    assert "query heads 1" in at.markdown[-1].value or "query heads H = **1**" in texts(at)
    assert "1 KV heads" not in texts(at) and "1 query heads" not in texts(at) and "1 layers" not in texts(at)


def test_chinese_page_has_no_english_token_and_no_stray_spaces(app_test):
    at = app_test(PAGE, query={"model": "deepseek-v3"}, session={"lang": "zh", "kv_decode": injected(3.8, 1.6)})
    no_exception(at)
    shown = [texts(at), *[e.value for e in at.title], at.dataframe[0].value.to_string()]
    shown += [str(c) for c in at.dataframe[0].value.columns]
    for spec in chart_specs(at):
        shown += [str(t.get("name", "")) + str(t.get("hovertemplate", "")) for t in spec["data"]]
        shown += [str(spec["layout"].get("title", {}).get("text", ""))]
        shown += [str(spec["layout"].get(ax, {}).get("title", {}).get("text", "")) for ax in ("xaxis", "yaxis")]
    for w in [*at.slider, *at.selectbox, *at.toggle]:
        shown += [w.label or "", w.help or ""]
    page = "\n".join(shown)
    assert "token" not in page.lower()  # 词元 throughout
    assert " （" not in page and "。 " not in page  # no space before a full-width bracket or after a full stop
    assert "MLA（本模型）" in page and "MLA 解压后逐头缓存（朴素实现）" in page
    assert "带缓存反而用了 **2.38** 倍的时间" in at.success[0].value


# ---------------------------------------------------------------- page = command line
PARITY = [
    # the defaults (the calculator's charts; a default live decode takes minutes on a shared CPU), in Chinese, large
    ({"slide": "2"}, {"lang": "zh", "present": True}, ["--lang", "zh", "--present"]),  # slide 2: the chart
    (
        {
            "model": "deepseek-v3",
            "seq_len": "1048576",
            "batch": "256",
            "stack_weights": "true",
            "weights_dtype": "fp8",
            "device_gib": "2048",
            "y_scale": "linear",
            "dec_layers": "1",
            "dec_steps": "4",
            "dec_prompt": "3",
            "dec_batch": "2",
            "dec_dtype": "bf16",
            "dec_wrong": "true",
            "seed": "3",
        },
        {},
        [
            "--model",
            "deepseek-v3",
            "--seq-len",
            "1048576",
            "--batch",
            "256",
            "--stack-weights",
            "--weights-dtype",
            "fp8",
            "--device-gib",
            "2048",
            "--y-scale",
            "linear",
            "--dec-layers",
            "1",
            "--dec-steps",
            "4",
            "--dec-prompt",
            "3",
            "--dec-batch",
            "2",
            "--dec-dtype",
            "bf16",
            "--dec-wrong",
            "--seed",
            "3",
            "--decode",
        ],
    ),  # the longest context, the largest batch and preset, weights stacked, a live decode (AppTest cannot click
    # a button of a Chinese page with select boxes: it formats their options in English outside the script run)
]


def trace_numbers(spec: dict) -> list[tuple]:
    return [(t.get("name"), arr(t["x"]).tolist(), arr(t["y"]).tolist()) for t in spec["data"]]


@pytest.mark.parametrize(("query", "session", "argv"), PARITY, ids=["defaults-zh", "deepseek-v3-1M-decode"])
def test_the_page_draws_the_charts_of_the_command_line(app_test, query, session, argv):
    """The charts AppTest shows are the view model's for the same parameters (what the command line writes)."""
    import plotly.io as pio

    from attn_core import export
    from attn_core.figures import Style
    from attn_core.views import page
    from ui.output import slide_figure

    at = app_test(PAGE, query=query, session=session)
    decode = "--decode" in argv
    if decode:
        at.button(key="kv_run").click().run()
    no_exception(at)
    assert not at.error
    spec = page("kv_cache")
    params, args = export.params_from(spec, argv)
    views = spec.views(params, Style(lang=args.lang, present=args.present))
    assert len(views) == (5 if decode else 3)
    shown = {s["layout"]["uirevision"]: s for s in chart_specs(at)}
    present = bool(session.get("present"))  # slide mode: slide 2 holds the memory chart alone
    live = ["kv_live_mem", "kv_live_time"] if decode else []
    assert sorted(shown) == sorted(["kv_memory"] if present else ["kv_memory", "kv_tensors", *live])
    for key, view in zip(["kv_memory", "kv_tensors", "kv_live_mem"], views[1:4], strict=False):  # exact numbers
        if key not in shown:
            continue
        fig = slide_figure(view.figure) if present else view.figure  # a slide: the legend pinned
        cli = json.loads(pio.to_json(fig, validate=False))
        if key != "kv_tensors":  # its bars are categories (trace_numbers reads numbers): compared whole below
            assert trace_numbers(shown[key]) == trace_numbers(cli)
        assert shown[key]["layout"]["title"]["text"] == cli["layout"]["title"]["text"]
        assert decoded(shown[key]) == decoded(cli)  # a small chart's arrays go out as lists
    if present:  # slide mode: one section a slide; the table is on the first
        at = app_test(PAGE, query={k: v for k, v in query.items() if k != "slide"}, session=session)
    cells = views[0].figure.to_plotly_json()["data"][0]["cells"]["values"]  # the table: the page's dataframe
    table = (at.table if present else at.dataframe)[0].value  # a slide's is st.table (ui.table)
    assert [list(c) for c in cells] == [table[c].tolist() for c in table.columns]
    if decode:
        cli_time = json.loads(pio.to_json(views[4].figure, validate=False))  # measured times differ run to run
        page_time = shown["kv_live_time"]
        assert [arr(t["x"]).tolist() for t in page_time["data"]] == [arr(t["x"]).tolist() for t in cli_time["data"]]
        assert page_time["layout"]["title"]["text"] == cli_time["layout"]["title"]["text"]
        tokens = [s.token for s in at.session_state["kv_decode"].steps]
        assert tokens == views[3].data["token (cache)"].tolist()  # the same seeded model decodes the same tokens


def test_another_page_opens_at_its_first_slide_and_this_one_keeps_its_own(app_test):
    """The section index is per page: slide 3 here does not open the saturation page at its slide 3."""
    at = app_test(PAGE, query={"slide": "3"}, session={"present": True})
    no_exception(at)
    assert at.session_state["slide"] == 2 and "kv_tensors" in {s["layout"]["uirevision"] for s in chart_specs(at)}
    at.query_params.clear()  # a browser's page link clears the query parameters (AppTest keeps them)
    at.switch_page("app_pages/saturation.py").run()
    no_exception(at)
    shown = [s["layout"]["title"]["text"] for s in chart_specs(at)]
    assert at.session_state["slide"] == 0 and len(shown) == 1 and shown[0].startswith("Distribution of")  # slide 1
    at.button(key="slide__next").click().run()
    assert at.session_state["slide"] == 1
