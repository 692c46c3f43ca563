"""Tiny random transformers models with real tokenizers, written to a folder: no download needed.

Each family's config is small (2 layers) and its weights are drawn with a larger initializer range than
the default so the attention is far from uniform (a wrong head-to-KV-head mapping or a wrong scale then
shows). Tokenizers: byte-level BPE over the 256 byte characters (GPT-2 style, a BOS added for Llama) and
a WordPiece vocabulary for BERT.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

WORDS = ["the", "cat", "sat", "on", "mat", "play", "a", "dog", "ran", "and", ",", ".", "!", "?"]
PIECES = ["##ing", "##s", "##ed"]
LETTERS = [chr(c) for c in range(ord("a"), ord("z") + 1)]


def require(module: str) -> None:
    """Skip when ``module`` is not installed; under CI (``CI=true``) fail instead: CI installs everything."""
    if importlib.util.find_spec(module) is None:
        reason = f"{module} is not installed (pip install -r requirements.txt)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(reason)
        pytest.skip(reason, allow_module_level=True)


def byte_level_tokenizer(bos: bool):
    """Byte-level BPE with no merges: every byte is a token; ``<|endoftext|>`` 256, ``<s>`` 257 (prepended if ``bos``)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    vocab = {c: i for i, c in enumerate(alphabet)}
    vocab.update({"<|endoftext|>": 256, "<s>": 257})
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    extra = {}
    if bos:
        tok.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", 257)])
        extra["bos_token"] = "<s>"
    return PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|endoftext|>", **extra)


def wordpiece_tokenizer():
    """A BERT WordPiece tokenizer over a few words, ``##`` pieces and single letters; [CLS] text [SEP]."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS, *PIECES, *LETTERS, *[f"##{c}" for c in LETTERS]]
    vocab = {t: i for i, t in enumerate(dict.fromkeys(tokens))}
    tok = Tokenizer(models.WordPiece(vocab=vocab, unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])]
    )
    tok.decoder = decoders.WordPiece()
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        unk_token="[UNK]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        pad_token="[PAD]",
        mask_token="[MASK]",
    )


def _config(family: str):
    import transformers as tf

    decoder = {
        "vocab_size": 258,
        "hidden_size": 64,
        "intermediate_size": 96,
        "num_hidden_layers": 2,
        "max_position_embeddings": 128,
        "initializer_range": 0.2,
        "eos_token_id": 256,
    }
    if family == "llama":  # GQA: 4 query heads share 2 KV heads
        return tf.LlamaConfig(**decoder, num_attention_heads=4, num_key_value_heads=2, bos_token_id=257)
    if family == "qwen2":  # MQA: 4 query heads share 1 KV head
        return tf.Qwen2Config(**decoder, num_attention_heads=4, num_key_value_heads=1)
    if family == "qwen3":  # q and k normalised per head before RoPE; an explicit head_dim
        return tf.Qwen3Config(**decoder, num_attention_heads=4, num_key_value_heads=2, head_dim=8)
    if family == "mistral":  # a sliding window shorter than the position table
        return tf.MistralConfig(**decoder, num_attention_heads=4, num_key_value_heads=2, sliding_window=32)
    if family == "gemma3":  # MQA, q/k norms, two local layers (window 8), then a global one; scale 32**-0.5
        return tf.Gemma3TextConfig(
            **{**decoder, "num_hidden_layers": 3},
            num_attention_heads=4,
            num_key_value_heads=1,
            head_dim=16,
            sliding_window=8,
            layer_types=["sliding_attention", "sliding_attention", "full_attention"],
            query_pre_attn_scalar=32,
            bos_token_id=257,
            pad_token_id=256,
        )
    if family == "gpt2":
        return tf.GPT2Config(
            vocab_size=258,
            n_embd=32,
            n_layer=2,
            n_head=4,
            n_positions=128,
            initializer_range=0.2,
            bos_token_id=256,
            eos_token_id=256,
        )
    if family == "bert":
        n_vocab = len(wordpiece_tokenizer())
        return tf.BertConfig(
            vocab_size=n_vocab,
            hidden_size=32,
            num_hidden_layers=2,
            num_attention_heads=4,
            intermediate_size=64,
            max_position_embeddings=16,
            initializer_range=0.2,
        )
    raise ValueError(family)


FAMILIES = ("llama", "qwen2", "qwen3", "mistral", "gemma3", "gpt2", "bert")


def write_model(family: str, folder: Path, seed: int = 0) -> Path:
    """A tiny random ``family`` model and its tokenizer saved in ``folder`` (safetensors)."""
    import torch
    import transformers as tf

    cfg = _config(family)
    torch.manual_seed(seed)
    auto = tf.AutoModel if family == "bert" else tf.AutoModelForCausalLM
    model = auto.from_config(cfg)
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(folder))
    tok = wordpiece_tokenizer() if family == "bert" else byte_level_tokenizer(bos=family in ("llama", "gemma3"))
    tok.save_pretrained(str(folder))
    return folder


def eager_reference(folder: Path, family: str):
    """The same folder loaded by transformers alone, with eager attention: the reference to compare with."""
    import transformers as tf

    auto = tf.AutoModel if family == "bert" else tf.AutoModelForCausalLM
    return auto.from_pretrained(str(folder), attn_implementation="eager", local_files_only=True).eval()
