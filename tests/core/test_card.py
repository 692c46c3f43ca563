"""attn_core.pretrained.card: model cards from config dicts and GGUF headers, against the presets, transformers'
own parameter counts and the memory formulas."""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pytest

from attn_core.kv.memory import kv_cache_bytes, layer_windows, load_presets, mla_cache_bytes, windowed_cache_bytes
from attn_core.pretrained import card
from attn_core.runtime.config import ConfigError

EN = json.loads((Path(__file__).resolve().parents[2] / "assets/i18n/en.json").read_text(encoding="utf-8"))
ZH = json.loads((Path(__file__).resolve().parents[2] / "assets/i18n/zh.json").read_text(encoding="utf-8"))

# The fields of the official config.json of each model that the card reads (the presets' 'source' links).
LLAMA3_8B = {
    "model_type": "llama",
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_attention_heads": 32,
    "num_hidden_layers": 32,
    "num_key_value_heads": 8,
    "max_position_embeddings": 8192,
    "vocab_size": 128256,
    "tie_word_embeddings": False,
}
LLAMA2_7B = {**LLAMA3_8B, "num_key_value_heads": 32, "intermediate_size": 11008, "vocab_size": 32000}
LLAMA2_7B["max_position_embeddings"] = 4096
MISTRAL_7B = {**LLAMA3_8B, "model_type": "mistral", "max_position_embeddings": 32768, "vocab_size": 32000}
MISTRAL_7B["sliding_window"] = 4096
QWEN25_7B = {
    "model_type": "qwen2",
    "hidden_size": 3584,
    "intermediate_size": 18944,
    "num_attention_heads": 28,
    "num_hidden_layers": 28,
    "num_key_value_heads": 4,
    "max_position_embeddings": 131072,
    "vocab_size": 152064,
    "tie_word_embeddings": False,
    "use_sliding_window": False,
    "sliding_window": 131072,
    "max_window_layers": 28,
}
GEMMA2_9B = {
    "model_type": "gemma2",
    "hidden_size": 3584,
    "intermediate_size": 14336,
    "num_attention_heads": 16,
    "num_hidden_layers": 42,
    "num_key_value_heads": 8,
    "head_dim": 256,
    "max_position_embeddings": 8192,
    "vocab_size": 256000,
    "sliding_window": 4096,
}
GEMMA3_270M = {
    "model_type": "gemma3_text",
    "hidden_size": 640,
    "intermediate_size": 2048,
    "num_attention_heads": 4,
    "num_hidden_layers": 18,
    "num_key_value_heads": 1,
    "head_dim": 256,
    "max_position_embeddings": 32768,
    "vocab_size": 262144,
    "sliding_window": 512,
    "layer_types": (["sliding_attention"] * 5 + ["full_attention"]) * 3,
}
GEMMA3_27B = {
    "model_type": "gemma3",
    "text_config": {
        "hidden_size": 5376,
        "intermediate_size": 21504,
        "num_attention_heads": 32,
        "num_hidden_layers": 62,
        "num_key_value_heads": 16,
        "head_dim": 128,
        "max_position_embeddings": 131072,
        "vocab_size": 262208,
        "sliding_window": 1024,
    },
}
DEEPSEEK_V3 = {
    "model_type": "deepseek_v3",
    "hidden_size": 7168,
    "intermediate_size": 18432,
    "moe_intermediate_size": 2048,
    "n_routed_experts": 256,
    "n_shared_experts": 1,
    "first_k_dense_replace": 3,
    "num_attention_heads": 128,
    "num_hidden_layers": 61,
    "num_key_value_heads": 128,
    "q_lora_rank": 1536,
    "kv_lora_rank": 512,
    "qk_nope_head_dim": 128,
    "qk_rope_head_dim": 64,
    "v_head_dim": 128,
    "max_position_embeddings": 163840,
    "vocab_size": 129280,
    "tie_word_embeddings": False,
}
DEEPSEEK_V2_LITE = {
    **DEEPSEEK_V3,
    "model_type": "deepseek_v2",
    "hidden_size": 2048,
    "intermediate_size": 10944,
    "moe_intermediate_size": 1408,
    "n_routed_experts": 64,
    "n_shared_experts": 2,
    "first_k_dense_replace": 1,
    "num_attention_heads": 16,
    "num_hidden_layers": 27,
    "num_key_value_heads": 16,
    "q_lora_rank": None,
    "vocab_size": 102400,
}
GPT2 = {"model_type": "gpt2", "n_embd": 768, "n_head": 12, "n_layer": 12, "n_positions": 1024, "vocab_size": 50257}
FALCON_7B = {
    "model_type": "falcon",
    "hidden_size": 4544,
    "n_head": 71,
    "n_layer": 32,
    "multi_query": True,
    "vocab_size": 65024,
    "bias": False,
}
BERT_BASE = {
    "model_type": "bert",
    "hidden_size": 768,
    "intermediate_size": 3072,
    "num_attention_heads": 12,
    "num_hidden_layers": 12,
    "max_position_embeddings": 512,
    "type_vocab_size": 2,
    "vocab_size": 30522,
}
PRESET_CONFIGS = {
    "gpt2": GPT2,
    "llama-2-7b": LLAMA2_7B,
    "llama-3-8b": LLAMA3_8B,
    "mistral-7b": MISTRAL_7B,
    "qwen2.5-7b": QWEN25_7B,
    "gemma-2-9b": GEMMA2_9B,
    "gemma-3-270m": GEMMA3_270M,
    "gemma-3-27b": GEMMA3_27B,
    "falcon-7b": FALCON_7B,
    "deepseek-v2-lite": DEEPSEEK_V2_LITE,
    "deepseek-v3": DEEPSEEK_V3,
}


def error_of(call, *args):
    with pytest.raises(ConfigError) as err:
        call(*args)
    exc = err.value
    for catalog in (EN, ZH):
        catalog[f"err.{exc.key}"].format(**exc.params)
    return exc


@pytest.mark.parametrize("pid", list(PRESET_CONFIGS))
def test_cards_of_the_presets_configs_match_the_presets(pid):
    p, c = load_presets()[pid], card.card_from_config(PRESET_CONFIGS[pid])
    assert (c.n_layers, c.n_heads, c.n_kv_heads, c.head_dim, c.v_head_dim) == (
        p.n_layers,
        p.n_heads,
        p.n_kv_heads,
        p.head_dim,
        p.v_head_dim,
    )
    assert (c.hidden_size, c.max_positions or 2048, c.attention) == (p.hidden_size, p.max_positions, p.attention)
    assert c.n_params == p.n_params and c.n_params_exact  # the published totals, from the shapes alone
    assert c.layer_windows == p.layer_windows and c.sliding_window == p.sliding_window
    for s in (1, 1000, 4096, 4097, 131072):
        for dtype, batch in (("bf16", 1), ("int4", 3)):
            if c.is_mla:
                want = mla_cache_bytes(p.n_layers, p.kv_lora_rank, p.qk_rope_head_dim, s, batch, dtype)
            elif p.sliding_window is None or s <= p.sliding_window:
                want = kv_cache_bytes(p.n_layers, p.n_kv_heads, p.head_dim, s, batch, dtype)
            else:
                want = windowed_cache_bytes(p.layer_windows, p.n_kv_heads, p.head_dim, s, batch, dtype)
            assert c.kv_bytes(s, dtype, batch) == want == p.windowed_bytes(s, batch, dtype)


def test_mla_ranks_and_windows_by_hand():
    v3 = card.card_from_config(DEEPSEEK_V3)
    assert (v3.kv_lora_rank, v3.q_lora_rank, v3.qk_rope_head_dim, v3.qk_nope_head_dim) == (512, 1536, 64, 128)
    assert v3.kv_bytes(4096, "bf16") == 61 * 4096 * (512 + 64) * 2 and v3.attention == "MLA"
    assert card.card_from_config(DEEPSEEK_V2_LITE).q_lora_rank is None
    m = card.card_from_config(MISTRAL_7B)
    assert m.local_layers == tuple(range(32)) and m.kv_bytes(32768) == 32 * 4096 * 2 * 8 * 128 * 2
    g = card.card_from_config(GEMMA3_270M)
    assert g.local_layers == tuple(i for i in range(18) if i % 6 != 5) and g.sliding_window == 512
    assert g.kv_bytes(32768, "bf16") == (3 * 32768 + 15 * 512) * 2 * 256 * 2
    no_types = card.card_from_config({k: v for k, v in GEMMA3_270M.items() if k != "layer_types"})
    assert no_types.layer_windows == g.layer_windows  # Gemma 3's own default: five local layers to one global
    assert card.card_from_config(GEMMA2_9B).layer_windows == layer_windows(42, 4096, 2)
    qwen = card.card_from_config({**QWEN25_7B, "use_sliding_window": True, "sliding_window": 4096})
    assert qwen.layer_windows == (None,) * 28  # max_window_layers 28: no layer slides
    bert = card.card_from_config(BERT_BASE)
    assert bert.n_params == 109_482_240 and bert.kv_bytes(512, "fp32") == kv_cache_bytes(12, 12, 64, 512, 1, "fp32")


def test_a_size_left_out_makes_the_count_an_estimate():
    c = card.card_from_config({k: v for k, v in LLAMA3_8B.items() if k != "intermediate_size"})
    assert not c.n_params_exact and c.n_params != card.card_from_config(LLAMA3_8B).n_params
    assert card.card_from_config(GPT2).n_params_exact  # n_inner absent means 4 x n_embd, by definition


@pytest.mark.parametrize(
    "family", ["llama", "qwen2", "qwen3", "mistral", "gemma", "gemma2", "gemma3", "gpt2", "bert", "falcon", "v2", "v3"]
)
def test_parameter_counts_equal_transformers_own(family):
    """Small configs of every family, built by transformers on the meta device: the card counts the same."""
    pytest.importorskip("transformers")
    import torch
    import transformers as tf

    small = {"vocab_size": 300, "hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 3}
    heads = {"num_attention_heads": 4, "num_key_value_heads": 2}
    mla = {"kv_lora_rank": 16, "qk_rope_head_dim": 8, "qk_nope_head_dim": 16, "v_head_dim": 16}
    moe = {"moe_intermediate_size": 32, "n_routed_experts": 4, "n_shared_experts": 1, "first_k_dense_replace": 1}
    cfg = {
        "llama": lambda: tf.LlamaConfig(**small, **heads),
        "qwen2": lambda: tf.Qwen2Config(**small, **heads),
        "qwen3": lambda: tf.Qwen3Config(**small, **heads, head_dim=24),
        "mistral": lambda: tf.MistralConfig(**small, **heads, sliding_window=16),
        "gemma": lambda: tf.GemmaConfig(**small, **heads, head_dim=32),
        "gemma2": lambda: tf.Gemma2Config(**small, **heads, head_dim=32),
        "gemma3": lambda: tf.Gemma3TextConfig(**small, **heads, head_dim=32),
        "gpt2": lambda: tf.GPT2Config(vocab_size=300, n_embd=64, n_layer=3, n_head=4, n_positions=40),
        "bert": lambda: tf.BertConfig(**small, num_attention_heads=4, max_position_embeddings=40),
        "falcon": lambda: tf.FalconConfig(vocab_size=300, hidden_size=64, num_hidden_layers=3, num_attention_heads=4),
        "v2": lambda: tf.DeepseekV2Config(**small, **heads, **mla, **moe, q_lora_rank=None),
        "v3": lambda: tf.DeepseekV3Config(**small, **heads, **mla, **moe, q_lora_rank=24),
    }[family]()
    auto = tf.AutoModel if family == "bert" else tf.AutoModelForCausalLM
    with torch.device("meta"):
        model = auto.from_config(cfg)
    router_bias = [
        b for n, b in model.named_buffers() if n.endswith("e_score_correction_bias")
    ]  # stored, a buffer here
    want = sum(p.numel() for p in model.parameters()) + sum(b.numel() for b in router_bias)
    c = card.card_from_config(cfg.to_dict())
    assert c.n_params == want and c.n_layers == 3


def test_files_that_are_not_configs_are_refused(tmp_path):
    notes = tmp_path / "notes.txt"
    notes.write_text("hello")
    assert error_of(card.card_from_file, notes).key == "card_not_config"
    (tmp_path / "list.json").write_text("[1, 2]")
    assert error_of(card.card_from_file, tmp_path / "list.json").key == "card_not_config"
    (tmp_path / "tok.json").write_text('{"bos_token": "<s>"}')
    assert error_of(card.card_from_file, tmp_path / "tok.json").key == "card_not_config"
    assert error_of(card.card_from_config, {"model_type": "t5", "d_model": 8}).key == "card_unknown_arch"
    assert error_of(card.card_from_config, {"model_type": "llama", "hidden_size": 8}).key == "card_not_config"
    assert error_of(card.card_from_config, {**LLAMA3_8B, "hidden_size": "big"}).key == "card_not_config"
    (tmp_path / "config.json").write_text(json.dumps(LLAMA3_8B))
    assert card.card_from_file(tmp_path / "config.json") == card.card_from_config(LLAMA3_8B, "config.json")


# ---------------------------------------------------------------- GGUF headers
def write_gguf(path: Path, arch: str = "llama", extra: dict | None = None) -> Path:
    """A small GGUF file written by the gguf package: a few metadata keys, two tensors, a vocabulary of 5000."""
    gguf = pytest.importorskip("gguf")
    w = gguf.GGUFWriter(str(path), arch)
    w.add_block_count(2)
    w.add_embedding_length(32)
    w.add_head_count(4)
    w.add_head_count_kv(2)
    w.add_context_length(128)
    w.add_token_list([f"t{i}" for i in range(5000)])
    for key, value in (extra or {}).items():
        getattr(w, key)(value)
    w.add_tensor("token_embd.weight", np.zeros((5000, 32), dtype=np.float32))
    w.add_tensor("blk.0.attn_q.weight", np.zeros((32, 32), dtype=np.float16))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def test_a_gguf_header_gives_the_card_without_reading_tensors(tmp_path):
    path = write_gguf(tmp_path / "m.gguf")
    c = card.card_from_gguf(path)
    assert (c.arch, c.n_layers, c.hidden_size, c.n_heads, c.n_kv_heads, c.head_dim) == ("llama", 2, 32, 4, 2, 8)
    assert (c.vocab_size, c.max_positions, c.n_params, c.source) == (5000, 128, 5000 * 32 + 32 * 32, "gguf")
    assert c.kv_bytes(100, "fp16") == kv_cache_bytes(2, 2, 8, 100)
    g = card.card_from_gguf(write_gguf(tmp_path / "g.gguf", "gemma3", {"add_sliding_window": 16}))
    assert g.layer_windows == (16, 16) and g.kv_bytes(100) == windowed_cache_bytes((16, 16), 2, 8, 100)


def test_truncated_and_foreign_gguf_files_are_refused(tmp_path):
    data = write_gguf(tmp_path / "m.gguf").read_bytes()
    in_infos = data.index(b"blk.0.attn_q.weight") + 5  # inside the tensor infos, after the metadata
    for cut, key in ((10, "header"), (data.index(b"t4999"), "header"), (in_infos, "header"), (len(data) - 100, "data")):
        part = tmp_path / f"cut{cut}.gguf"
        part.write_bytes(data[:cut])
        assert error_of(card.card_from_gguf, part).key == f"card_truncated_{key}"
    (tmp_path / "empty.gguf").write_bytes(b"")
    (tmp_path / "text.gguf").write_text("not a gguf file at all")
    for name in ("empty.gguf", "text.gguf"):
        assert error_of(card.card_from_file, tmp_path / name).key == "card_not_config"
    no_arch = write_gguf(tmp_path / "x.gguf", "llama").read_bytes().replace(b"llama.block_count", b"llama.block_c0unt")
    (tmp_path / "x.gguf").write_bytes(no_arch)
    assert "block_count" in str(error_of(card.card_from_gguf, tmp_path / "x.gguf"))


def test_a_large_header_reads_in_well_under_a_second(tmp_path):
    gguf = pytest.importorskip("gguf")
    w = gguf.GGUFWriter(str(tmp_path / "big.gguf"), "llama")
    for add, v in (("add_block_count", 2), ("add_embedding_length", 8), ("add_head_count", 2)):
        getattr(w, add)(v)
    w.add_token_list([f"token{i}" for i in range(262144)])  # Gemma 3's vocabulary size
    w.add_token_scores([0.0] * 262144)
    w.add_tensor("token_embd.weight", np.zeros((4, 8), dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    t0 = time.process_time()  # CPU seconds: the wall time of a busy shared machine is longer
    c = card.card_from_gguf(tmp_path / "big.gguf")
    assert time.process_time() - t0 < 1.0 and c.vocab_size == 262144


def test_pasted_text_and_uploaded_bytes_give_the_same_cards_and_say_why_they_are_refused(tmp_path):
    text = json.dumps(GEMMA3_270M)
    assert card.card_from_text(text, "pasted") == card.card_from_config(GEMMA3_270M, "pasted")
    assert card.card_from_bytes(text.encode(), "config.json") == card.card_from_config(GEMMA3_270M, "config.json")
    path = write_gguf(tmp_path / "m.gguf")
    assert card.card_from_bytes(path.read_bytes(), "upload.bin") == card.card_from_gguf(path)  # by its magic
    cases = [
        (card.card_from_text, ("{not json",), "not_json"),
        (card.card_from_text, ("[1, 2]",), "not_object"),
        (card.card_from_text, ('{"bos_token": "<s>"}',), "no_model_type"),
        (card.card_from_bytes, (b"\xff\xfe{", "c.json"), "not_json"),
        (card.card_from_bytes, (b"GGUF\x09\x00\x00\x00", "x.gguf"), "gguf_version"),
        (card.card_from_bytes, (b"not gguf", "x.gguf"), "not_gguf"),
        (card.card_from_config, ({"model_type": "llama", "hidden_size": 8},), "missing"),
        (card.card_from_config, ({**LLAMA3_8B, "hidden_size": "big"},), "not_whole"),
    ]
    for call, args, reason in cases:
        err = error_of(call, *args)
        assert (err.key, err.params["reason"]) == ("card_not_config", reason), args
        assert err.params["reason"] in card.NOT_CONFIG_REASONS
    assert error_of(card.card_from_config, {"model_type": "llama", "hidden_size": 8}).params["name"] == (
        "num_attention_heads"
    )
    data = path.read_bytes()
    assert error_of(card.card_from_bytes, data[:-100], "m.gguf").key == "card_truncated_data"
    assert error_of(card.card_from_bytes, data[:10], "m.gguf").key == "card_truncated_header"
