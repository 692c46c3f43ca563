"""KV-cache and weight memory (attn_core.kv.memory) against hand arithmetic, and the model presets."""

import ast
import json
import re
import string
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import attn_core
from attn_core.i18n import CATALOG_DIR, translate
from attn_core.kv.memory import (
    DTYPES,
    CacheLayout,
    bytes_per_element_text,
    cache_layouts,
    kv_cache_bytes,
    kv_formula,
    load_presets,
    max_context,
    memory_curves,
    mla_cache_bytes,
    mla_formula,
    preset_layouts,
    seq_points,
    weights_bytes,
    windowed_cache_bytes,
    windowed_formula,
    windowed_max_context,
)
from attn_core.runtime.config import ConfigError
from attn_core.runtime.units import binary_unit, format_bytes, format_bytes_exact, format_tokens

GiB = 1024**3
MiB = 1024**2


# ---------------------------------------------------------------- the formula, by hand
def test_llama_7b_at_4096_tokens_fp16_is_exactly_2_gib():
    # 2 (K and V) x 32 layers x 1 sequence x 32 KV heads x 4096 tokens x 128 dims x 2 bytes
    assert 2 * 32 * 1 * 32 * 4096 * 128 * 2 == 2_147_483_648
    assert kv_cache_bytes(32, 32, 128, 4096, dtype="fp16") == 2_147_483_648 == 2 * GiB
    llama = load_presets()["llama-2-7b"]
    (mha,) = [lay for lay in preset_layouts(llama) if lay.native]
    assert mha.kind == "MHA" and mha.bytes(4096, 1, "fp16") == 2_147_483_648
    assert format_bytes(mha.bytes(4096, 1, "fp16")) == "2.00 GiB"


@pytest.mark.parametrize(
    ("preset", "seq_len", "dtype", "expected", "kind"),
    [
        # MHA: GPT-2 small, 12 layers x 12 heads x 64 dims, its full 1024 positions in fp16 = 36 MiB
        ("gpt2", 1024, "fp16", 2 * 12 * 12 * 1024 * 64 * 2, "MHA"),
        # GQA: Llama-3-8B, 8 KV heads, 8192 tokens bf16 = 1 GiB exactly
        ("llama-3-8b", 8192, "bf16", 2 * 32 * 8 * 8192 * 128 * 2, "GQA"),
        # GQA: Llama-2-70B, 80 layers x 8 KV heads
        ("llama-2-70b", 4096, "fp16", 2 * 80 * 8 * 4096 * 128 * 2, "GQA"),
        # GQA: Qwen2.5-7B, 28 layers x 4 KV heads, 32K tokens
        ("qwen2.5-7b", 32768, "bf16", 2 * 28 * 4 * 32768 * 128 * 2, "GQA"),
        # GQA: Gemma-2-9B, head_dim 256 (not 3584 / 16 = 224); 21 global layers at S, 21 local at min(S, 4096)
        ("gemma-2-9b", 8192, "bf16", 2 * 8 * (21 * 8192 + 21 * 4096) * 256 * 2, "GQA"),
        # MQA: Falcon-7B, one KV head of 64, 2048 tokens = 16 MiB
        ("falcon-7b", 2048, "fp16", 2 * 32 * 1 * 2048 * 64 * 2, "MQA"),
        # MLA: DeepSeek-V3, 61 layers x (512 latent + 64 RoPE key), no factor 2, no heads
        ("deepseek-v3", 4096, "bf16", 61 * 4096 * (512 + 64) * 2, "MLA"),
        ("deepseek-v2-lite", 32768, "bf16", 27 * 32768 * (512 + 64) * 2, "MLA"),
    ],
)
def test_presets_native_cache_matches_hand_arithmetic(preset, seq_len, dtype, expected, kind):
    p = load_presets()[preset]
    (native,) = [lay for lay in preset_layouts(p) if lay.native]
    assert native.kind == kind == p.attention
    assert native.bytes(seq_len, 1, dtype) == expected


def test_hand_values_in_binary_units():
    assert kv_cache_bytes(12, 12, 64, 1024) == 36 * MiB
    assert kv_cache_bytes(32, 8, 128, 8192, dtype="bf16") == 1 * GiB
    assert kv_cache_bytes(80, 8, 128, 4096) == 1280 * MiB
    assert kv_cache_bytes(32, 1, 64, 2048) == 16 * MiB
    assert mla_cache_bytes(61, 512, 64, 1) == 70_272  # DeepSeek-V3, per token, bf16


def test_gemma_head_dim_is_not_hidden_over_heads():
    g = load_presets()["gemma-2-9b"]
    assert (g.hidden_size, g.n_heads, g.head_dim) == (3584, 16, 256)
    assert g.hidden_size // g.n_heads == 224 != g.head_dim
    wrong = kv_cache_bytes(42, 8, 224, 8192, dtype="bf16")
    right = kv_cache_bytes(42, 8, 256, 8192, dtype="bf16")
    assert right - wrong == 2 * 42 * 8 * 8192 * 32 * 2


@pytest.mark.parametrize(
    ("preset", "layers", "heads", "mha_per_layer", "naive_per_layer", "ratio"),
    [
        # DeepSeek-V2 (arXiv 2405.04434) Table 1: MHA caches 2 n_h d_h l, MLA (d_c + d_h^R) l; d_h = 128, d_c = 512,
        # d_h^R = 64. DeepSeek-V3: 61 layers, 128 heads: 2 x 128 x 128 = 32,768 against 576, about 56.9x
        ("deepseek-v3", 61, 128, 2 * 128 * 128, 128 * (192 + 128), 56.9),
        # DeepSeek-V2-Lite: 27 layers, 16 heads: 2 x 16 x 128 = 4,096 against 576, about 7.1x
        ("deepseek-v2-lite", 27, 16, 2 * 16 * 128, 16 * (192 + 128), 7.1),
    ],
)
def test_mla_is_compared_with_the_paper_s_mha_and_the_naive_per_head_cache(
    preset, layers, heads, mha_per_layer, naive_per_layer, ratio
):
    mha, mqa, naive, mla = preset_layouts(load_presets()[preset])
    assert (mha.kind, mqa.kind, naive.kind, mla.kind) == ("MHA", "MQA", "MLA-naive", "MLA")
    assert [lay.native for lay in (mha, mqa, naive, mla)] == [False, False, False, True]
    # the paper's MHA: n_h heads with keys and values of d_h = 128 (not the 192-wide decompressed key)
    assert (mha.n_kv_heads, mha.k_dim, mha.v_dim) == (heads, 128, 128)
    assert mha.per_layer() == (f"2 × {heads} × 128", mha_per_layer)
    assert mha.bytes(1, 1, "bf16") == layers * mha_per_layer * 2
    assert mqa.per_layer() == ("2 × 1 × 128", 256) and mqa.bytes(1, 1, "bf16") == layers * 256 * 2
    assert mla.per_layer() == ("512 + 64", 576) and mla.bytes(1, 1, "bf16") == layers * 576 * 2
    assert mha.elements_per_token() / mla.elements_per_token() == pytest.approx(ratio, abs=0.05)
    # MLA decompressed and cached per head (a naive implementation): keys of 128 + 64, values of 128
    assert (naive.n_kv_heads, naive.k_dim, naive.v_dim) == (heads, 192, 128)
    assert naive.per_layer() == (f"{heads} × (192 + 128)", naive_per_layer)
    assert naive.bytes(1, 1, "bf16") == layers * naive_per_layer * 2
    assert naive.elements_per_token() / mla.elements_per_token() == pytest.approx(320 * heads / 576)


def test_deepseek_v3_by_hand_at_4096_tokens():
    mha, _, naive, mla = preset_layouts(load_presets()["deepseek-v3"])
    assert mha.bytes(4096, 1, "bf16") == 61 * 4096 * 32_768 * 2 == 16_374_562_816
    assert mla.bytes(4096, 1, "bf16") == 61 * 4096 * 576 * 2 == 287_834_112
    assert naive.bytes(4096, 1, "bf16") == 61 * 4096 * 40_960 * 2
    assert f"{mha.bytes(4096) / mla.bytes(4096):.1f}" == "56.9"  # the 71.1 was the naive row's ratio
    assert f"{naive.bytes(4096) / mla.bytes(4096):.1f}" == "71.1"


def test_per_layer_formulas_of_ordinary_layouts():
    mha, gqa, mqa = preset_layouts(load_presets()["llama-3-8b"])
    assert [lay.per_layer() for lay in (mha, gqa, mqa)] == [
        ("2 × 32 × 128", 8192),
        ("2 × 8 × 128", 2048),
        ("2 × 1 × 128", 256),
    ]
    assert 32 * gqa.per_layer()[1] == gqa.elements_per_token()


def test_layout_lists_per_model():
    presets = load_presets()
    kinds = {pid: [(lay.label, lay.native) for lay in preset_layouts(p)] for pid, p in presets.items()}
    assert kinds["llama-2-7b"] == [("MHA", True), ("MQA", False)]
    assert kinds["llama-3-8b"] == [("MHA", False), ("GQA-8", True), ("MQA", False)]
    assert kinds["falcon-7b"] == [("MHA", False), ("MQA", True)]
    assert kinds["deepseek-v3"] == [("MHA", False), ("MQA", False), ("MLA-naive", False), ("MLA", True)]
    # a single head: MHA and MQA coincide, one line
    assert [lay.kind for lay in cache_layouts(4, 1, 1, 64)] == ["MHA"]


# ---------------------------------------------------------------- dtypes and exactness
@pytest.mark.parametrize(
    ("dtype", "num", "den"),
    [("fp32", 4, 1), ("fp16", 2, 1), ("bf16", 2, 1), ("fp8", 1, 1), ("int8", 1, 1), ("int4", 1, 2)],
)
def test_every_dtype_scales_the_element_count(dtype, num, den):
    elements = 2 * 32 * 1 * 32 * 4096 * 128
    assert kv_cache_bytes(32, 32, 128, 4096, dtype=dtype) == elements * num // den


def test_int4_is_half_a_byte_and_rounds_an_odd_count_up():
    assert kv_cache_bytes(32, 32, 128, 4096, dtype="int4") == 512 * MiB
    assert bytes_per_element_text("int4") == "0.5"
    # 3 elements of 4 bits need 2 bytes, 1 element 1 byte
    assert mla_cache_bytes(1, 3, 0, 1, dtype="int4") == 2
    assert mla_cache_bytes(1, 1, 0, 1, dtype="int4") == 1
    assert weights_bytes(7, "int4") == 4


def test_results_are_exact_integers_at_the_largest_sizes():
    got = kv_cache_bytes(512, 1024, 4096, 1 << 20, batch=4096, dtype="fp32")
    assert isinstance(got, int)
    assert got == 2 * 512 * 4096 * 1024 * (1 << 20) * 4096 * 4  # beyond 2**53, no float rounding
    assert got > 2**53


def test_batch_and_asymmetric_value_width():
    assert kv_cache_bytes(2, 3, 4, 5, batch=7, dtype="fp32") == 2 * 2 * 7 * 3 * 5 * 4 * 4
    assert kv_cache_bytes(2, 3, 6, 5, dtype="fp16", v_head_dim=4) == 2 * 3 * 5 * (6 + 4) * 2


def test_weights_of_presets():
    p = load_presets()
    assert weights_bytes(p["llama-2-7b"].n_params, "bf16") == 2 * 6_738_415_616
    assert weights_bytes(p["deepseek-v3"].n_params, "fp8") == 671_026_419_200


def test_preset_parameter_counts_from_their_shapes():
    # Llama-2-7B: untied embeddings (32000 x 4096, twice); per layer q, k, v, o 4096^2, MLP 3 x 4096 x 11008,
    # two RMSNorm weights; a final norm.
    layer = 4 * 4096 * 4096 + 3 * 4096 * 11008 + 2 * 4096
    assert load_presets()["llama-2-7b"].n_params == 32 * layer + 2 * 32000 * 4096 + 4096
    # Llama-3-8B: 8 KV heads of 128, MLP 14336, vocabulary 128256
    layer = 2 * 4096 * 4096 + 2 * 4096 * 1024 + 3 * 4096 * 14336 + 2 * 4096
    assert load_presets()["llama-3-8b"].n_params == 32 * layer + 2 * 128256 * 4096 + 4096


# ---------------------------------------------------------------- max context
def test_max_context_hand_examples():
    # Llama-2-7B fp16 caches 512 KiB per token: 80 GiB hold 163,840 tokens exactly
    assert kv_cache_bytes(32, 32, 128, 1) == 512 * 1024
    assert max_context(80 * GiB, 32, 32, 128) == 163_840
    assert max_context(80 * GiB - 1, 32, 32, 128) == 163_839
    assert max_context(0, 32, 32, 128) == 0
    assert max_context(512 * 1024 - 1, 32, 32, 128) == 0
    # MLA: DeepSeek-V3 bf16, 70,272 bytes per token
    assert max_context(70_272 * 1000, 61, kv_lora_rank=512, rope_head_dim=64, dtype="bf16") == 1000
    # int4 with an odd element count per token: 3 elements per token, 1.5 bytes
    assert max_context(3, 1, kv_lora_rank=3, rope_head_dim=0, dtype="int4") == 2  # 2 tokens = 6 elements = 3 B
    assert max_context(2, 1, kv_lora_rank=3, rope_head_dim=0, dtype="int4") == 1  # 1 token = 2 B (rounded up)
    # the batch divides the room
    assert max_context(80 * GiB, 32, 32, 128, batch=4) == 163_840 // 4


@settings(max_examples=60, deadline=None)
@given(
    budget=st.integers(0, 2**44),
    layers=st.integers(1, 128),
    kv=st.integers(1, 64),
    dim=st.integers(1, 256),
    batch=st.integers(1, 16),
    dtype=st.sampled_from(DTYPES),
)
def test_max_context_is_the_longest_that_fits(budget, layers, kv, dim, batch, dtype):
    s = max_context(budget, layers, kv, dim, batch=batch, dtype=dtype)
    assert kv_cache_bytes(layers, kv, dim, s, batch, dtype) <= budget
    assert kv_cache_bytes(layers, kv, dim, s + 1, batch, dtype) > budget


def test_layout_max_context_agrees():
    lay = CacheLayout("GQA", 32, 8, 128, 128)
    assert lay.max_context(80 * GiB, 1, "fp16") == max_context(80 * GiB, 32, 8, 128) == 655_360


# ---------------------------------------------------------------- the formula as text
def _evaluate(substituted: str) -> tuple[float, int]:
    left, right = substituted.split("=")
    expr = left.replace(",", "").replace("×", "*").replace("B", "")
    return eval(expr, {"__builtins__": {}}), int(right.replace(",", "").replace("B", ""))  # noqa: S307


@pytest.mark.parametrize("dtype", DTYPES)
def test_formula_text_substitutes_the_numbers_and_adds_up(dtype):
    sym, text = kv_formula(32, 8, 128, 4096, batch=3, dtype=dtype)
    assert sym == "2 × L × B × H_kv × S × d_k × b"
    assert text.startswith("2 × 32 × 3 × 8 × 4,096 × 128 × ")
    value, total = _evaluate(text)
    assert value == total == kv_cache_bytes(32, 8, 128, 4096, 3, dtype)


def test_mla_and_asymmetric_formula_text():
    sym, text = mla_formula(61, 512, 64, 4096)
    assert sym == "L × B × S × (d_c + d_R) × b" and "(512 + 64)" in text
    value, total = _evaluate(text)
    assert value == total == mla_cache_bytes(61, 512, 64, 4096)
    sym, text = kv_formula(61, 128, 192, 10, v_head_dim=128)
    assert "(192 + 128)" in text
    value, total = _evaluate(text)
    assert value == total == 61 * 128 * 10 * 320 * 2


# ---------------------------------------------------------------- units
def test_binary_units_and_labels():
    assert binary_unit(1023) == (1, "B") and binary_unit(1024) == (1024, "KiB")
    assert format_bytes(1023) == "1,023 B"
    assert format_bytes(1536) == "1.50 KiB"
    assert format_bytes(70_272) == "68.6 KiB"
    assert format_bytes(512 * MiB) == "512 MiB"
    assert format_bytes(2 * GiB) == "2.00 GiB"
    assert format_bytes(1024**4) == "1.00 TiB"
    assert format_bytes(1024 * 1024 - 1) == "1.00 MiB"  # never "1024 KiB"
    assert format_bytes_exact(2 * GiB) == "2.00 GiB (2,147,483,648 B)"
    assert format_bytes_exact(512) == "512 B"
    assert all(u in ("B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB") for u in (binary_unit(10**n)[1] for n in range(19)))


def test_the_memory_budget_messages_write_bytes_as_the_calculator_does():
    """One byte formatter: the resource guard's "needs about ... budget of ..." uses this module's."""
    from attn_core.runtime import guard

    assert guard.format_bytes is format_bytes
    assert guard.format_bytes(1536) == "1.50 KiB" and guard.format_bytes(2**30) == "1.00 GiB"


def test_memory_curves_are_the_layouts_bytes_and_what_fits():
    lays = preset_layouts(load_presets()["llama-2-7b"])  # MHA (this model) and MQA: 512 KiB and 16 KiB a token
    weights = 13 * GiB
    c = memory_curves(lays, 1, "fp16", seq_points(), 80 * GiB, weights)
    assert c.tokens[0] == 1 and c.tokens[-1] == 2**20 and c.cache.shape == (2, len(c.tokens))
    assert c.cache[0].tolist() == [2 * 32 * 32 * int(s) * 128 * 2 for s in c.tokens]
    assert c.budget == 67 * GiB and c.fits == (67 * GiB // (512 * 1024), 67 * GiB // (16 * 1024))
    assert c.fit_totals[0] == c.fits[0] * 512 * 1024 + weights  # the weights under the longest cache that fits


@pytest.mark.parametrize("dtype", ["int4", "fp8", "fp32"])
def test_memory_curves_equal_each_layout_s_own_bytes(dtype):
    """The curves' integer arithmetic is CacheLayout.bytes at every point: int4's rounding up, an MLA layout, a
    batch of 3, odd token counts."""
    presets = load_presets()
    mla = next(p for p in presets.values() if p.kv_lora_rank)
    lays = preset_layouts(presets["llama-2-7b"]) + preset_layouts(mla)
    points = np.array([0, 1, 3, 999, 4097, 2**20])
    c = memory_curves(lays, 3, dtype, points, 80 * GiB)
    assert c.cache.tolist() == [[lay.bytes(int(s), 3, dtype) for s in points] for lay in lays]


def test_token_labels_only_round_when_exact():
    assert format_tokens(4096) == "4K" and format_tokens(1 << 20) == "1M" and format_tokens(131_072) == "128K"
    assert format_tokens(1000) == "1,000" and format_tokens(163_840) == "160K" and format_tokens(4097) == "4,097"


# ---------------------------------------------------------------- bad values
@pytest.mark.parametrize(
    ("kwargs", "field", "text"),
    [
        ({"dtype": "fp64"}, "dtype", "fp32, fp16, bf16, fp8, int8, int4"),
        ({"seq_len": -1}, "seq_len", "at least 0"),
        ({"n_kv_heads": 0}, "n_kv_heads", "between 1"),
        ({"head_dim": 2.5}, "head_dim", "whole number"),
        ({"n_layers": True}, "n_layers", "whole number"),
        ({"batch": "4"}, "batch", "whole number"),
    ],
)
def test_bad_values_raise_config_error_naming_the_field(kwargs, field, text):
    args = {"n_layers": 32, "n_kv_heads": 8, "head_dim": 128, "seq_len": 16, **kwargs}
    with pytest.raises(ConfigError, match=text) as info:
        kv_cache_bytes(**args)
    assert info.value.field == field and field in str(info.value)


def test_max_context_bad_budget_and_missing_shape():
    with pytest.raises(ConfigError, match="budget_bytes"):
        max_context(-1, 32, 8, 128)
    with pytest.raises(ConfigError, match="budget_bytes"):
        max_context(1.5, 32, 8, 128)
    with pytest.raises(ConfigError, match="n_kv_heads and head_dim"):
        max_context(100, 32)


def test_cache_layouts_refuse_non_divisors():
    with pytest.raises(ConfigError, match="valid n_kv_heads: 1, 2, 3, 4, 6, 12"):
        cache_layouts(12, 12, 5, 64)


# ---------------------------------------------------------------- presets
def test_presets_are_complete_and_sourced():
    presets = load_presets()
    want = {
        "gpt2",
        "llama-2-7b",
        "llama-2-70b",
        "llama-3-8b",
        "mistral-7b",
        "qwen2.5-7b",
        "gemma-2-9b",
        "falcon-7b",
        "deepseek-v2-lite",
        "deepseek-v3",
    }
    assert want <= set(presets)
    for p in presets.values():
        assert re.fullmatch(r"https://huggingface\.co/[\w.-]+/[\w.-]+/blob/main/config\.json", p.source), p.source
        assert p.n_heads % p.n_kv_heads == 0 and p.max_positions > 0 and p.n_params > 0
        if p.is_mla:
            assert p.head_dim == p.qk_nope_head_dim + p.qk_rope_head_dim
        else:
            assert p.v_head_dim == p.head_dim
    table = {pid: (p.n_layers, p.n_heads, p.n_kv_heads, p.head_dim, p.max_positions) for pid, p in presets.items()}
    assert table["gpt2"] == (12, 12, 12, 64, 1024)
    assert table["llama-2-70b"] == (80, 64, 8, 128, 4096)
    assert table["mistral-7b"] == (32, 32, 8, 128, 32768)
    assert table["qwen2.5-7b"] == (28, 28, 4, 128, 131072)
    assert table["gemma-2-9b"] == (42, 16, 8, 256, 8192)
    assert table["falcon-7b"] == (32, 71, 1, 64, 2048)
    v3, lite = presets["deepseek-v3"], presets["deepseek-v2-lite"]
    assert (v3.n_layers, v3.n_heads, v3.kv_lora_rank, v3.qk_rope_head_dim, v3.v_head_dim) == (61, 128, 512, 64, 128)
    assert (lite.n_layers, lite.n_heads, lite.kv_lora_rank, lite.qk_rope_head_dim) == (27, 16, 512, 64)
    # from their config.json: hidden_size, qk_nope_head_dim, v_head_dim, max_position_embeddings
    assert (v3.hidden_size, v3.qk_nope_head_dim, v3.max_positions) == (7168, 128, 163840)
    assert (lite.hidden_size, lite.qk_nope_head_dim, lite.v_head_dim, lite.max_positions) == (2048, 128, 128, 163840)
    # MLA models cite their paper (the comparison with MHA is DeepSeek-V2's Table 1); the others have none
    assert (lite.paper, v3.paper) == ("https://arxiv.org/abs/2405.04434", "https://arxiv.org/abs/2412.19437")
    assert all(p.paper is None for p in presets.values() if not p.is_mla)


def test_bad_preset_file_gives_config_error(tmp_path):
    raw = json.loads((load_presets.__globals__["PRESET_FILE"]).read_text(encoding="utf-8"))
    raw["presets"][0]["n_kv_heads"] = 5
    path = tmp_path / "presets.json"
    path.write_text(json.dumps(raw), encoding="utf-8")
    with pytest.raises(ConfigError, match=r"preset gpt2: n_heads \(12\) must be divisible by n_kv_heads \(5\)"):
        load_presets(path)
    path.write_text("{not json", encoding="utf-8")
    with pytest.raises(ConfigError, match="cannot read the model presets"):
        load_presets(path)


# ---------------------------------------------------------------- every error can be shown in Chinese
KV_MODULES = ("kv/memory.py", "kv/cache.py", "views/kv_cache.py")


def config_error_calls(path: Path) -> list[ast.Call]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) == "ConfigError"
    ]


@pytest.mark.parametrize("module", KV_MODULES)
def test_every_config_error_of_the_kv_cache_engine_has_a_catalog_key(module):
    """Each ConfigError(msg, field, key, **params) names err.<key> in both catalogs, with every placeholder given."""
    catalogs = {lang: json.loads((CATALOG_DIR / f"{lang}.json").read_text(encoding="utf-8")) for lang in ("en", "zh")}
    calls = config_error_calls(Path(attn_core.__file__).parent / module)
    assert calls, module
    for call in calls:
        where = f"{module}:{call.lineno}"
        key = call.args[2] if len(call.args) > 2 else next((k.value for k in call.keywords if k.arg == "key"), None)
        assert isinstance(key, ast.Constant) and isinstance(key.value, str), f"{where}: ConfigError without a key"
        given = {k.arg for k in call.keywords if k.arg is not None}
        for lang, cat in catalogs.items():
            text = cat.get(f"err.{key.value}")
            assert text, f"{where}: err.{key.value} missing in {lang}.json"
            wanted = {f for _, f, _, _ in string.Formatter().parse(text) if f}
            assert wanted <= given, f"{where}: err.{key.value} ({lang}) needs {sorted(wanted - given)}"


def test_engine_errors_read_in_chinese():
    with pytest.raises(ConfigError) as info:
        kv_cache_bytes(32, 8, 128, 16, dtype="fp64")
    err = info.value
    assert translate(f"err.{err.key}", "zh", **err.params) == (
        "dtype 的取值 'fp64' 无效；可选：fp32, fp16, bf16, fp8, int8, int4"
    )
    with pytest.raises(ConfigError) as info:
        max_context(100, 32)
    assert translate(f"err.{info.value.key}", "zh", **info.value.params).startswith("max_context 需要")


@settings(max_examples=150, deadline=None)
@given(
    budget=st.integers(0, 1 << 34),
    layers=st.integers(1, 24),
    window=st.integers(1, 5000),
    every=st.sampled_from([None, 1, 2, 6]),
    kv=st.integers(1, 8),
    dim=st.sampled_from([1, 3, 64, 256]),
    batch=st.integers(1, 4),
    dtype=st.sampled_from(DTYPES),
)
def test_windowed_max_context_is_the_longest_that_fits(budget, layers, window, every, kv, dim, batch, dtype):
    """bytes(S) <= budget < bytes(S + 1) with each local layer at min(S, W); None only when every layer slides
    and the cache with every window full fits (then it never grows past that)."""
    from attn_core.kv.memory import layer_windows

    windows = layer_windows(layers, window, every)
    s = windowed_max_context(budget, windows, 2 * kv * dim, batch, dtype)
    size = lambda n: windowed_cache_bytes(windows, kv, dim, n, batch, dtype)  # noqa: E731
    if s is None:
        assert all(w is not None for w in windows) and size(window) <= budget
        assert size(10 * window) == size(window)
    else:
        assert (s == 0 or size(s) <= budget) and size(s + 1) > budget


def test_windowed_cache_by_hand_for_gemma_3_and_mistral():
    gemma = load_presets()["gemma-3-270m"]
    (mqa,) = [lay for lay in preset_layouts(gemma) if lay.native]
    # 3 global layers at S, 15 local at min(S, 512); one KV head of 256, K and V, 2 bytes: 104 MiB against 576 MiB
    assert mqa.bytes(32768) == 2 * (3 * 32768 + 15 * 512) * 256 * 2 == 108_527_616
    assert mqa.full().bytes(32768) == kv_cache_bytes(18, 1, 256, 32768) == 576 * MiB
    assert mqa.bytes(512) == mqa.full().bytes(512)  # inside the window every position is kept
    assert mqa.max_context(80 * GiB) == (80 * GiB // 1024 - 15 * 512) // 3 == 27_959_466
    assert mqa.formula(32768)[1] == "2 × 1 × 1 × (3 × 32,768 + 15 × 512) × 256 × 2 B = 108,527,616 B"
    mistral = load_presets()["mistral-7b"]
    (gqa,) = [lay for lay in preset_layouts(mistral) if lay.native]
    assert gqa.bytes(32768) == 2 * 32 * 8 * 4096 * 128 * 2 == 512 * MiB and gqa.full().bytes(32768) == 4 * GiB
    assert gqa.max_context(80 * GiB) is None and gqa.max_context(512 * MiB - 1) == 4095
    assert windowed_formula(mistral.layer_windows, 8, 128, 100)[1] == "2 × 32 × 1 × 8 × 100 × 128 × 2 B = 13,107,200 B"
    assert all(not lay.windowed for lay in preset_layouts(load_presets()["llama-3-8b"]))


def test_windowed_memory_curves_are_the_layouts_bytes_at_every_point():
    for pid, dtype in (("gemma-3-270m", "int4"), ("gemma-2-9b", "bf16"), ("mistral-7b", "fp8")):
        layouts = preset_layouts(load_presets()[pid])
        c = memory_curves(layouts, 3, dtype, seq_points(), 80 * GiB)
        for i, lay in enumerate(layouts):
            assert c.cache[i].tolist() == [lay.bytes(int(s), 3, dtype) for s in c.tokens]
        (native,) = [lay for lay in layouts if lay.native]
        assert c.unwindowed.tolist() == [native.full().bytes(int(s), 3, dtype) for s in c.tokens]
    assert memory_curves(preset_layouts(load_presets()["llama-3-8b"]), 1, "fp16", seq_points(), GiB).unwindowed is None
