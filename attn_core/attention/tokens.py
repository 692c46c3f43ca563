"""Turning text into tokens and tokens into deterministic embeddings.

This is a teaching tokenizer, not a subword one: words and numbers are tokens,
each punctuation mark is a token, every CJK character is a token of its own and
emoji sequences (flags, skin tones, ZWJ families, keycaps) stay whole.
"""

from __future__ import annotations

import hashlib
import math
import re

import torch

MAX_TEXT_TOKENS = 256  # tokens of a typed text (longer texts are cut, with a notice)
MAX_TEXT_CHARS = 2000  # characters of a typed text

_EMOJI_BASE = (
    "\U0001f000-\U0001faff"  # pictographs, emoticons, transport, symbols ...
    "\u2600-\u27bf"  # misc symbols, dingbats
    "\u2b00-\u2bff"  # arrows, stars
    "\u2300-\u23ff"  # technical (watch, hourglass)
)
_EMOJI_MOD = "\ufe0f\ufe0e\U0001f3fb-\U0001f3ff\u20e3\U000e0020-\U000e007f"
_CJK = (
    "\u3040-\u30ff"  # hiragana, katakana
    "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"  # CJK ideographs
    "\uac00-\ud7af"  # hangul syllables
    "\U00020000-\U0003134f"
)
_TOKEN_RE = re.compile(
    "|".join(
        [
            "[\U0001f1e6-\U0001f1ff]{2}",  # flag: two regional indicators
            "[0-9#*]\ufe0f?\u20e3",  # keycap
            f"[{_EMOJI_BASE}][{_EMOJI_MOD}]*(?:\u200d[{_EMOJI_BASE}][{_EMOJI_MOD}]*)*",
            f"[{_CJK}]",
            # words: letters, digits, marks, with inner apostrophes/hyphens
            rf"[^\W_{_CJK}]+(?:['’\-][^\W_{_CJK}]+)*",
            r"[^\s]",  # anything else: one punctuation mark or symbol
        ]
    )
)


def tokenize(text: str, max_tokens: int | None = None) -> list[str]:
    """Split ``text`` into tokens, keeping at most ``max_tokens`` (None = all)."""
    tokens = _TOKEN_RE.findall(text or "")
    return tokens if max_tokens is None else tokens[:max_tokens]


def unique_labels(tokens: list[str]) -> list[str]:
    """Axis labels that stay distinct when a token repeats: ``"the (3)"`` is position 3."""
    return [f"{tok} ({i})" for i, tok in enumerate(tokens)]


def synthetic_tokens(n: int) -> list[str]:
    """Placeholder tokens ``t0 .. t{n-1}`` for a sequence with no text."""
    return [f"t{i}" for i in range(n)]


def _token_seed(token: str, seed: int) -> int:
    digest = hashlib.blake2b(f"{seed}\x00{token}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") & (2**63 - 1)


def sinusoidal_positions(t: int, d_model: int, start: int = 0) -> torch.Tensor:
    """The Transformer's fixed positional encoding of positions ``start .. start+t-1``, float32 ``[T, d_model]``."""
    pos = torch.arange(start, start + t, dtype=torch.float64)[:, None]
    i = torch.arange(0, d_model, 2, dtype=torch.float64)
    angle = pos / torch.pow(10000.0, i / d_model)  # (T, ceil(d/2))
    pe = torch.zeros(t, d_model, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(angle)
    pe[:, 1::2] = torch.cos(angle[:, : d_model // 2])
    return pe.float()


EMBED_CHUNK_ROWS = 512  # positions are added this many rows at a time (the float64 table is 2x the rows)


def embed(tokens: list[str], d_model: int, seed: int = 0, positions: bool = True) -> torch.Tensor:
    """Deterministic embeddings, float32 ``[T, d_model]`` on the CPU.

    The same token gets the same N(0, 1) vector within a seed (hashed with BLAKE2,
    so it is stable across processes and machines). With ``positions`` the
    sinusoidal encoding (entries of variance 1/2) is added with weight sqrt(2)
    and the sum divided by sqrt(2), so entries keep unit variance. Built in place,
    so 8192 tokens of width 16384 take the output's memory and little more.
    """
    x = torch.empty(len(tokens), d_model)
    for row, tok in enumerate(tokens):
        g = torch.Generator().manual_seed(_token_seed(tok, seed))
        x[row] = torch.randn(d_model, generator=g)
    if positions:
        for r0 in range(0, len(tokens), EMBED_CHUNK_ROWS):
            r1 = min(len(tokens), r0 + EMBED_CHUNK_ROWS)
            pe = sinusoidal_positions(r1 - r0, d_model, start=r0)
            x[r0:r1] = (x[r0:r1] + pe * math.sqrt(2.0)) / math.sqrt(2.0)
    return x
