"""The KV-cache page with the shipped pretrained models as presets (issue 15): their shape from the installed
config, the encoder said to keep no cache, and the live decode run by the real decoder, whose cache measured
from its tensors equals 2·L·B·H_kv·S·d_k·b (float32) at every step."""

from __future__ import annotations

import functools

import numpy as np
import pytest

from attn_core import export
from attn_core.figures import Style
from attn_core.kv.memory import kv_cache_bytes
from attn_core.pretrained.models import generate, load_model, model_preset
from attn_core.views import kv_cache as kc
from attn_core.views import page
from tests.app.test_kv_cache_page import PAGE, latex, line, memory_chart, metric, texts
from tests.conftest import no_exception
from tests.util import arr, chart_specs


@functools.cache
def shipped(key: str):
    return load_model(key, device="cpu")


def test_the_presets_are_the_installed_configs_without_loading_a_model():
    for key, causal in (("smollm2-135m", True), ("minilm-l6", False)):
        preset, decodes = model_preset(key)
        assert decodes == causal and preset == shipped(key).preset  # the loaded model's own preset
        assert preset.validate() is preset and preset.source.startswith("https://huggingface.co/")
    assert model_preset("smollm2-135m")[0].n_kv_heads == 3 and model_preset("minilm-l6")[0].attention == "MHA"
    assert set(kc.SHIPPED_MODELS) <= set(kc.MODELS)


def test_smollm2_preset_in_the_calculator(app_test):
    at = app_test(PAGE, query={"model": "smollm2-135m", "seq_len": "8192", "dtype": "fp16"})
    no_exception(at)
    assert not at.error
    # 2 · 30 layers · 3 KV heads · 8192 positions · 64 · 2 bytes
    assert 2 * 30 * 3 * 8192 * 64 * 2 == kv_cache_bytes(30, 3, 64, 8192, 1, "fp16") == 188_743_680
    assert metric(at) == "180 MiB"
    text = texts(at)
    assert "query heads **9** · KV heads **3** · head_dim **64**" in text and "134,515,008" in text
    assert "config.json of the installed model" in text and "is an encoder" not in text
    assert any(t.key == "dec_real" for t in at.toggle)  # a decoder: its own decode is offered


def test_minilm_is_an_encoder_in_both_languages(app_test):
    at = app_test(PAGE, query={"model": "minilm-l6", "dec_real": "true"})
    no_exception(at)
    info = "\n".join(i.value for i in at.info)
    assert "keeps no K/V cache" in info and "it does not decode" in info
    assert not any(t.key == "dec_real" for t in at.toggle)
    at = app_test(PAGE, query={"model": "minilm-l6"}, session={"lang": "zh"})
    no_exception(at)
    assert "是编码器" in "\n".join(i.value for i in at.info)


def test_live_decode_with_the_real_model_matches_the_formula_at_every_step(app_test):
    at = app_test(PAGE, query={"model": "smollm2-135m", "dec_real": "true", "dec_steps": "6", "dec_prompt": "4"})
    no_exception(at)
    assert "**SmolLM2-135M-Instruct** itself generates greedily" in texts(at)
    assert not any(s.key in ("dec_layers", "dec_batch") for s in at.slider)  # the model's own, not the seeded one's
    at.button(key="kv_run").click().run()
    no_exception(at)
    assert not at.error
    done = at.success[0].value
    assert "equals the formula at every one of the 6 steps" in done and "same token 6 times out of 6" in done
    mem = next(s for s in chart_specs(at) if s["layout"].get("uirevision") == "kv_live_mem")
    by_name = {t["name"]: t for t in mem["data"]}
    seq = arr(by_name["measured (tensor sizes)"]["x"]).astype(int)
    assert seq.tolist() == [4, 5, 6, 7, 8, 9]  # the prompt's 4 positions, then one more per step
    measured, formula = arr(by_name["measured (tensor sizes)"]["y"]), arr(by_name["formula 2·L·B·H·S·d_k·b"]["y"])
    assert np.array_equal(measured, formula)
    pairs = at.session_state["kv_decode"].steps
    assert [p.cached.cache_bytes for p in pairs] == [2 * 30 * 1 * 3 * s * 64 * 4 for s in seq]  # float32, bytes
    # the tokens are the model's greedy ones (generate() called directly on the same prompt)
    prompt = kc.real_prompt(shipped("smollm2-135m"), 4)
    direct = list(generate(shipped("smollm2-135m"), "", 6, prompt_ids=prompt, rows=False))
    assert [p.cached.token_id for p in pairs] == [s.token_id for s in direct]
    timing = next(s for s in chart_specs(at) if s["layout"].get("uirevision") == "kv_live_time")
    assert timing["layout"]["title"]["text"].startswith("Time per generated token (one run of each step)")


def test_the_command_line_decodes_with_the_real_model():
    spec = page("kv_cache")
    argv = [
        "--page",
        "kv_cache",
        "--model",
        "smollm2-135m",
        "--decode",
        "--dec-real",
        "--dec-steps",
        "3",
        "--dec-prompt",
        "2",
        "--no-recompute",
    ]
    params, _ = export.params_from(spec, argv)
    views = spec.views(params, Style())
    assert len(views) == 5 and views[3].name == "kv_decode_memory_smollm2-135m_p2_n3_fp32"
    data = views[3].data
    assert (data.cache_bytes_measured == data.cache_bytes_formula).all()
    assert data.context_tokens.tolist() == [2, 3, 4]


GEMMA_GLOBAL = (5, 11, 17)


def gemma_windowed(s: int, kept: int, dtype_bytes: int) -> int:
    """By hand: 2 (K and V) · (3 global layers at S + 15 local layers at min(S, kept)) · 1 KV head · 256 · bytes."""
    return 2 * (3 * s + 15 * min(s, kept)) * 256 * dtype_bytes


def test_gemma_in_the_calculator_counts_its_local_layers_at_the_window(app_test):
    for model in ("gemma3-270m", "gemma-3-270m"):  # the shipped model's installed config, and the preset
        at = app_test(PAGE, query={"model": model, "seq_len": "32768", "dtype": "fp32"})
        no_exception(at)
        own = gemma_windowed(32768, 512, 4)  # 207 MiB
        assert metric(at) == kc.format_bytes(own) == "207 MiB"  # not the full 2 · 18 · 1 · 32768 · 256 · 4 bytes
        assert kv_cache_bytes(18, 1, 256, 32768, 1, "fp32") == 2 * 18 * 32768 * 256 * 4
        note = "\n".join(i.value for i in at.info)
        assert "15 local layers (sliding window: each keeps only the last 512 tokens) and 3 global layers" in note
        assert "(5, 11, 17)" in note and "min(S, 512) = 512 positions" in note
        assert f"**{kc.format_bytes(own)}**" in note and f"{own / (2 * 18 * 32768 * 256 * 4):.0%}" in note
        assert f"{own:,}".replace(",", "{,}") in latex(at) and f"{own:,}" in texts(at)
        assert at.dataframe[0].value.iloc[:, 4].tolist()[1] == f"{own:,}"  # MHA, then MQA (this model)
        terms = "Gemma 3 270M is distributed under the Gemma Terms of Use (https://ai.google.dev/gemma/terms)"
        assert (terms in texts(at)) == (model == "gemma3-270m")  # the shipped model's own files
    at = app_test(PAGE, query={"model": "mistral-7b", "seq_len": "100"}, session={"lang": "zh"})
    no_exception(at)
    assert "全部 32 层都是局部层" in "\n".join(i.value for i in at.info)  # every layer slides; 100 < 4096: all kept


def test_the_headline_formula_table_and_chart_count_gemma_s_local_layers_at_the_window(app_test):
    """Gemma 3 270M at 32,768 tokens in fp16: the headline is the windowed cache, 104 MiB (3 global layers at S,
    15 local at 512), not the 576 MiB of every layer at every position; the chart draws that full cache too."""
    at = app_test(PAGE, query={"model": "gemma-3-270m", "seq_len": "32768"})
    no_exception(at)
    own, full = gemma_windowed(32768, 512, 2), 2 * 18 * 32768 * 256 * 2
    assert (own, full) == (108_527_616, 603_979_776)
    assert metric(at) == "104 MiB" and f"**{own:,} bytes**" in texts(at)
    assert r"(3 \times 32{,}768 + 15 \times 512) \times 256 \times 2\,\mathrm{B}" in latex(at)
    table = at.dataframe[0].value
    assert table.iloc[1, 0] == "MQA (this model)" and table.iloc[1, 4] == f"{own:,}"
    assert table.iloc[1, -1] == f"{(80 * 1024**3 // 1024 - 15 * 512) // 3:,}"  # 3 S + 15 x 512 positions fit
    spec = memory_chart(at)
    x, y = line(spec, "MQA (this model)")
    xf, yf = line(spec, "MQA without the window")
    assert y[x == 32768][0] == own and yf[xf == 32768][0] == full
    at = app_test(PAGE, query={"model": "mistral-7b", "seq_len": "32768"}, session={"lang": "zh"})
    no_exception(at)
    assert metric(at) == "512 MiB"  # every layer at 4,096: 2 · 32 · 8 · 4,096 · 128 · 2 bytes, not 4 GiB
    assert at.dataframe[0].value.iloc[:, -1].tolist() == ["任意长度"] * 3


def test_gemma_live_decode_plans_the_windowed_formula_and_says_what_its_cache_keeps(app_test):
    """Before Run, the chart's formula counts the local layers at min(S, 511) (past 511 positions: less than the
    full cache); a short run's measured cache equals it; the page says what DynamicCache keeps."""
    at = app_test(PAGE, query={"model": "gemma3-270m", "dec_real": "true", "dec_steps": "4", "dec_prompt": "8"})
    no_exception(at)
    assert "DynamicCache keeps 511 positions on each of them between steps" in texts(at)
    at.button(key="kv_run").click().run()
    no_exception(at)
    assert "equals the formula at every one of the 4 steps" in at.success[0].value
    pairs = at.session_state["kv_decode"].steps
    assert [p.cached.cache_bytes for p in pairs] == [gemma_windowed(s, 511, 4) for s in range(8, 12)]
    mem = next(s for s in chart_specs(at) if s["layout"].get("uirevision") == "kv_live_mem")
    assert "formula (windowed)" in [t["name"] for t in mem["data"]]  # not the plain 2·L·B·H·S·d_k·b
    spec = kc.decode_spec(
        kc.Params(model="gemma3-270m", dec_real=True, dec_steps=264, dec_prompt=256), shipped("gemma3-270m")
    )
    plan = kc.planned_series(spec)
    assert list(plan.seq_len) == list(range(256, 520))
    assert list(plan.formula) == [gemma_windowed(s, 511, 4) for s in plan.seq_len]
    assert plan.formula[-1] < kv_cache_bytes(18, 1, 256, 519, 1, "fp32")


@pytest.mark.slow
def test_gemma_live_decode_past_its_window_matches_the_windowed_formula_at_every_step(app_test):
    """A prompt of 256 tokens and 264 steps: the cache grows past 511 positions, where DynamicCache stops adding
    to the 15 local layers; the bytes measured from its tensors equal the windowed formula at every step."""
    query = {"model": "gemma3-270m", "dec_real": "true", "dec_steps": "264", "dec_prompt": "256"}
    at = app_test(PAGE, query={**query, "dec_recompute": "false"})
    no_exception(at)
    said = texts(at)
    assert "**Gemma 3 270M** itself generates greedily" in said
    assert "DynamicCache keeps 511 positions on each of them between steps" in said and "(5, 11, 17)" in said
    at.button(key="kv_run").click().run()
    no_exception(at)
    assert not at.error
    assert "equals the formula at every one of the 264 steps" in at.success[0].value
    mem = next(s for s in chart_specs(at) if s["layout"].get("uirevision") == "kv_live_mem")
    by_name = {t["name"]: t for t in mem["data"]}
    seq = arr(by_name["measured (tensor sizes)"]["x"]).astype(int)
    assert seq[0] == 256 and seq[-1] == 256 + 263 > 511
    pairs = at.session_state["kv_decode"].steps
    measured = [p.cached.cache_bytes for p in pairs]
    assert measured == [gemma_windowed(s, 511, 4) for s in seq]  # float32
    assert measured[-1] < kv_cache_bytes(18, 1, 256, int(seq[-1]), 1, "fp32")  # the window saves bytes past 511
    np.testing.assert_array_equal(arr(by_name["measured (tensor sizes)"]["y"]), arr(by_name["formula (windowed)"]["y"]))
