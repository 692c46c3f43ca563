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
    assert f"**{a.flops(4096) / n.flops(4096):.2f}×**" in line and "**71.1×**" in line
    assert f"**{lat.flops(4096) / a.flops(4096):,.0f}×**" in line
    label, formula = mv.cost_formulas(p, S)[1]
    assert "2 \\cdot 128 \\cdot (512+64+512) \\cdot 4,096" in formula and formula.endswith(f" = {a.flops(4096):,}")
    assert "576 × 4,096 = 2,359,296 values" in label


def test_decode_summary_and_timing_sentence_choose_from_numbers():
    spec = eng.DecodeSpec(mv.Params().config, 0, 2, 2)
    steps = [eng.DecodeStep(i, 2 + i, 10, 2, 10, 2, 0.002, 0.001, 1e-7) for i in range(3)]
    kind, text = mv.decode_summary(spec, steps, S)
    assert kind == "success" and "absorbed was 2.00× faster" in text
    steps[1] = eng.DecodeStep(1, 3, 11, 2, 10, 2, 0.001, 0.003, 1e-7)
    kind, text = mv.decode_summary(spec, steps, S)
    assert kind == "warning" and "naive was" in text
    df = pd.DataFrame(
        [
            {"cached": n, "path": m, "ms": (1.0 if m == "absorb" else 3.0)}
            for n in mv.TIMED_LENGTHS
            for m in ("naive", "absorb")
        ]
    )
    assert "absorbed is 3.00× faster" in mv.timing_sentence(df, spec.cfg, S)


def test_command_line_views_in_both_languages():
    p = mv.Params(dec_steps=2, dec_prompt=2, seq_len=4)
    for lang in ("en", "zh"):
        names = [v.name for v in mv.views(p, Style(lang=lang), "all")]
        assert names[0] == "mla_flow_absorb" and "mla_decode_bytes_p2_n2" in names and len(names) == 8
    assert [v.name for v in mv.views(mv.with_values(p, view="agree"), S)][-1] == "mla_weights_absorb_t4"
