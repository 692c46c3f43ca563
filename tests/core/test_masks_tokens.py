"""Masks, the tokenizer and the deterministic embeddings."""

import torch

from attn_core.attention.masks import causal_mask, padding_mask
from attn_core.attention.tokens import embed, sinusoidal_positions, tokenize, unique_labels


def test_causal_mask():
    m = causal_mask(4)
    assert m.dtype == torch.bool and m.shape == (4, 4)
    assert torch.equal(m, torch.tril(torch.ones(4, 4, dtype=torch.bool)))
    # with 3 cached keys, the 2 new queries see everything up to their own position
    m2 = causal_mask(2, 5)
    assert m2.tolist() == [[True, True, True, True, False], [True, True, True, True, True]]


def test_padding_mask():
    m = padding_mask([2, 4], 4)
    assert m.shape == (2, 1, 1, 4)
    assert m[0, 0, 0].tolist() == [True, True, False, False]
    assert m[1, 0, 0].tolist() == [True] * 4


def test_tokenize_words_punctuation():
    assert tokenize("Hello, world! It's 2024.") == ["Hello", ",", "world", "!", "It's", "2024", "."]
    assert tokenize("  ") == [] and tokenize("") == []


def test_tokenize_cjk_each_character():
    assert tokenize("注意力机制很重要。") == ["注", "意", "力", "机", "制", "很", "重", "要", "。"]
    assert tokenize("GPT的注意力") == ["GPT", "的", "注", "意", "力"]


def test_tokenize_keeps_emoji_intact():
    family = "👨\u200d👩\u200d👧"
    thumbs = "👍🏽"
    flag = "🇨🇳"
    toks = tokenize(f"hi {family} {thumbs}{flag} ❤️ 1️⃣")
    assert toks == ["hi", family, thumbs, flag, "❤️", "1️⃣"]


def test_tokenize_rtl_and_limit():
    assert tokenize("שלום עולם") == ["שלום", "עולם"]
    assert tokenize("a b c d e", 3) == ["a", "b", "c"]
    assert tokenize("<script>alert(1)</script>")[:3] == ["<", "script", ">"]


def test_unique_labels():
    assert unique_labels(["the", "cat", "the"]) == ["the (0)", "cat (1)", "the (2)"]


def test_embed_deterministic_and_token_identity():
    a = embed(["the", "cat", "the"], 16, seed=1, positions=False)
    b = embed(["the", "cat", "the"], 16, seed=1, positions=False)
    assert torch.equal(a, b) and a.dtype == torch.float32
    assert torch.equal(a[0], a[2]) and not torch.equal(a[0], a[1])
    assert not torch.equal(a, embed(["the", "cat", "the"], 16, seed=2, positions=False))
    p = embed(["the", "cat", "the"], 16, seed=1, positions=True)
    assert not torch.equal(p[0], p[2])  # positions make repeated tokens distinct


def test_embed_unit_variance_and_positions_formula():
    x = embed([f"w{i}" for i in range(400)], 64, seed=0)
    assert abs(x.var().item() - 1.0) < 0.1
    pe = sinusoidal_positions(3, 4)
    assert abs(pe[1, 0].item() - torch.sin(torch.tensor(1.0)).item()) < 1e-6
    assert abs(pe[1, 1].item() - torch.cos(torch.tensor(1.0)).item()) < 1e-6
    assert abs(pe[2, 2].item() - torch.sin(torch.tensor(2 / 100.0)).item()) < 1e-6
