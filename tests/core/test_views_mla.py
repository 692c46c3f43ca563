"""The MLA page's view model: the layer it runs, the layouts it compares, and sentences chosen from the numbers."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from attn_core.figures import Style
from attn_core.kv import memory
from attn_core.mla import attention as eng
from attn_core.runtime.config import ConfigError
from attn_core.runtime.units import format_bytes
from attn_core.views import mla as mv

S = Style()


def test_run_config_keeps_small_layers_and_cuts_heads_of_large_ones():
    small = mv.Params().config
    assert mv.run_config(small) == small and mv.run_note(mv.Params(), S) is None
    v3 = mv.Params(preset="deepseek-v3").config
    run = mv.run_config(v3)
    assert run.n_params() <= mv.MAX_RUN_PARAMS < eng.MLAConfig(**{**v3.__dict__, "n_heads": 2 * run.n_heads}).n_params()
    assert (run.kv_lora_rank, run.qk_head_dim, run.v_head_dim, run.d_model) == (512, 192, 128, 7168)
    assert f"runs {run.n_heads} of its 128 heads" in mv.run_note(mv.Params(preset="deepseek-v3"), S)


def test_n_params_counts_the_modules_parameters():
    for cfg in (mv.Params().config, eng.MLAConfig(32, 4, 16, 8, 4, 6)):
        layer = eng.MultiHeadLatentAttention(cfg)
        assert cfg.n_params() == sum(p.numel() for p in layer.parameters())


def test_layouts_match_the_kv_cache_page_and_add_gqa():
    p = mv.Params(preset="deepseek-v3", n_kv_heads=16)
    lays = mv.layouts(p)
    assert [lay.label for lay in lays] == ["MHA", "GQA-16", "MQA", "MLA-naive", "MLA"]
    page = memory.preset_layouts(memory.load_presets()["deepseek-v3"])
    for lay in page:
        same = next(x for x in lays if x.label == lay.label)
        assert same.bytes(4096, 1, "bf16") == lay.bytes(4096, 1, "bf16")
    assert lays[1].per_layer() == ("2 × 16 × 128", 4096)
    with pytest.raises(ConfigError):
        mv.layouts(mv.Params(preset="deepseek-v3", n_kv_heads=3))


def test_cache_frame_ratios_and_whole_model_bytes():
    df = mv.cache_frame(mv.Params(preset="deepseek-v2-lite", cache_len=1024), S)
    assert list(df["values"]) == [16 * 256, 2 * 8 * 128, 256, 16 * 320, 576]
    mla = 27 * 1024 * 576 * 2
    assert df["whole model, 1K tokens"].iloc[-1] == format_bytes(mla)
    assert df["× MLA"].iloc[0] == f"{16 * 256 / 576:,.1f}×" == "7.1×"


def test_agree_sentences_follow_the_measured_differences():
    w = np.zeros((1, 2, 2), dtype=np.float32)
    same = eng.Agreement(w, w, 2e-7, 8e-7, 3.0)
    off = eng.Agreement(w, w, 0.3, 0.9, 3.0)
    kinds = [k for k, _ in mv.agree_sentences(mv.Compared(same, off, 1), S)]
    assert kinds == ["success", "warning"]
    text = mv.agree_sentences(mv.Compared(off, same, 1), S)
    assert text[0][0] == "warning" and "differ more" in text[0][1]
    assert text[1][0] == "info" and "nearly cancel" in text[1][1]
    assert "even d_h" in mv.agree_sentences(mv.Compared(same, None, 1), S)[1][1]


def test_gqa_line_is_the_papers_225_groups_for_deepseek():
    line = mv.gqa_line(mv.Params(preset="deepseek-v2"), S)
    assert "512 + 64 = **576**" in line and "**2.25 groups**" in line and "32,768" in line
    assert "**1.25 groups**" in mv.gqa_line(mv.Params(), S)  # 80 / (32 + 32)


def test_cost_sentence_and_formulas_carry_the_users_numbers():
    p = mv.Params(preset="deepseek-v3", cache_len=4096)
    a, n, lat = (eng.path_cost(p.config, x) for x in ("absorb", "naive", "latent"))
    line = mv.cost_sentence(p, S)
    assert f"**{a.flops(4096) / n.flops(4096):.2f}×**" in line and "1/**71.1**" in line
    assert f"**{lat.flops(4096) / a.flops(4096):,.0f}×**" in line
    label, formula = mv.cost_formulas(p, S)[1]
    assert "2 \\cdot 128 \\cdot (512+64+512) \\cdot 4,096" in formula and formula.endswith(f" = {a.flops(4096):,}")
    assert "576 × 4,096 = 2,359,296 values" in label


def test_decode_summary_and_timing_sentence_choose_from_numbers():
    spec = eng.DecodeSpec(mv.Params().config, 0, 2, 6)
    steps = [eng.DecodeStep(i, 2 + i, 10, 2, 10, 2, 0.002 * (1 + 0.01 * i), 0.001, 1e-7) for i in range(7)]
    kind, text = mv.decode_summary(spec, steps, S)
    assert kind == "success" and "absorbed was 2.07× faster" in text
    steps[1] = eng.DecodeStep(1, 3, 11, 2, 10, 2, 0.001, 0.003, 1e-7)
    kind, text = mv.decode_summary(spec, steps, S)
    assert kind == "warning" and "absorbed was" in text
    df = pd.DataFrame(
        [
            {"cached": n, "path": m, "ms": (1.0 if m == "absorb" else 3.0), "ms_max": 1.2, "runs": 5}
            for n in mv.TIMED_LENGTHS
            for m in ("naive", "absorb")
        ]
    )
    assert "absorbed is 3.00× faster" in mv.timing_sentence(df, spec.cfg, S)


ZH = Style(lang="zh")


def test_decode_speed_within_the_noise_is_said_and_explained_by_the_work_per_token():
    spec = eng.DecodeSpec(mv.Params().config, 0, 16, 48)  # d_c 64, d_R 16, d_h = d_v = 32, H 8
    rng = np.random.default_rng(0)
    jitter = rng.uniform(0.85, 1.15, size=(2, 49))  # a shared CPU: ±15 % from step to step
    steps = [
        eng.DecodeStep(i, 16 + i, 10, 2, 10, 2, 1.0e-3 * jitter[0, i], 1.04e-3 * jitter[1, i], 1e-7) for i in range(49)
    ]
    naive = np.median([s.naive_s for s in steps[1:]])
    assert np.median([s.absorb_s for s in steps[1:]]) > naive  # naive a few percent faster in the median
    for style, noise in ((S, "within the run-to-run noise"), (ZH, "波动范围内")):
        _, text = mv.decode_summary(spec, steps, style)
        assert noise in text and "fixed cost" not in text and "固定开销" not in text
        assert "2,304" in text and "1,280" in text and "1.8" in text  # 2·8·(2·64 + 16) against 2·8·(32 + 16 + 32)
    v2 = mv.work_sentence(mv.Params(preset="deepseek-v2").config, S)
    assert "(3.4×)" in v2  # (2·512 + 64) / (128 + 64 + 128)
    timed = pd.DataFrame(
        [
            {"cached": n, "path": m, "ms": ms, "ms_max": ms * 1.2, "runs": 5}
            for n in mv.TIMED_LENGTHS
            for m, ms in (("naive", 1.0), ("absorb", 1.04))
        ]
    )
    for style, noise in ((S, "within the run-to-run noise"), (ZH, "波动范围内")):
        text = mv.timing_sentence(timed, spec.cfg, style)
        assert noise in text and "fixed cost" not in text and "固定开销" not in text and "2,304" in text


def test_cost_sentence_gives_the_arithmetic_intensity_against_a_machine_balance():
    v2 = mv.Params(preset="deepseek-v2", cache_len=4096)
    a = eng.path_cost(v2.config, "absorb")
    assert round(a.flops(4096) / a.read(4096)) == 249  # (278,528·4,096 + 33,554,432) / (576·4,096·2)
    en, zh = mv.cost_sentence(v2, S), mv.cost_sentence(v2, ZH)
    assert "**249 FLOP per byte**" in en and "within a data-centre GPU's balance of about 150–300" in en
    assert "usually limited by memory traffic" not in en and "通常受内存流量限制" not in zh
    assert "**249 FLOP**" in zh and "平衡点范围内" in zh
    small = mv.cost_sentence(mv.Params(cache_len=4096), S)  # (2,304·4,096 + 65,536) / (80·4,096·2) = 14.5
    assert "**14.5 FLOP per byte**" in small and "below a data-centre GPU's" in small
    assert "A100 SXM 312 TFLOP/s" in S.t("mla.cost_help.body") and "A100 SXM" in ZH.t("mla.cost_help.body")


def test_rope_on_the_latent_recomputes_the_prefix_keys_or_caches_them():
    p = mv.Params(mode="rope_on_latent")
    en, zh = mv.flow_sentence(p, S), mv.flow_sentence(p, ZH)
    assert "recomputes them for all the prefix tokens" in en and "§2.1.3" in en and "must cache" not in en
    assert "重新计算" in zh and "2.1.3" in zh and "必须缓存" not in zh


def test_the_flow_of_a_layer_without_query_compression_has_no_c_q():
    lite = mv.Params(preset="deepseek-v2-lite")
    for mode in mv.RUN_MODES:
        view = mv.flow_view(mv.with_values(lite, mode=mode), S)
        labels = [a["text"] for a in view.figure.layout.annotations if a["text"]]
        assert not any("c_Q" in x or "q_C" in x for x in labels)
        assert any(x.startswith("q_nope [16×128]") for x in labels)
        assert not any("c_Q" in x or "q_C" in x for x in view.data.tensor)
        arrows = [a for a in view.figure.layout.annotations if a["showarrow"]]
        assert len(arrows) == 12  # h feeds q_nope and q_R directly
    full = mv.flow_view(mv.Params(preset="deepseek-v2"), S)
    assert any(a["text"].startswith("q_C [128×128]") for a in full.figure.layout.annotations)


def test_the_mla_sketch_help_says_where_it_fails_and_names_what_is_meant():
    for style in (S, ZH):
        body = style.t("mla.notes_help.body")
        assert "cat([key, value])" in body and "2·d_model" in body and "k_decoder_full_matrix" in body
        assert "`Linear(d_model, …)`" in body and "`Linear(latent_kv_heads·kv_dim, …)`" in body
    en = S.t("mla.notes_help.body")
    assert "two latents, not one" in en and "compressed separately" not in en.replace("K and V are", "")
    assert "两个潜在向量" in ZH.t("mla.notes_help.body") and "分别压缩" not in ZH.t("mla.notes_help.body")
    from attn_core.i18n import catalog

    for lang, words in (("en", ("course note", "the note's", "the notes'", "note 003")), ("zh", ("笔记",))):
        bad = {k: v for k, v in catalog(lang).items() if any(w in v.lower() for w in words)}
        assert not bad, bad


def test_command_line_views_in_both_languages():
    p = mv.Params(dec_steps=2, dec_prompt=2, seq_len=4)
    for lang in ("en", "zh"):
        names = [v.name for v in mv.views(p, Style(lang=lang), "all")]
        assert names[0] == "mla_flow_absorb" and "mla_decode_bytes_p2_n2" in names and len(names) == 8
    assert [v.name for v in mv.views(mv.with_values(p, view="agree"), S)][-1] == "mla_weights_absorb_t4"
