"""KV-cache and weight memory, exact to the byte, and the model presets behind the calculator.

During generation every layer keeps the keys and values of all earlier tokens.
With ``n_kv_heads`` K/V heads of width ``head_dim`` the cache holds

    2 x n_layers x batch x n_kv_heads x seq_len x head_dim  elements

(the 2 counts K and V), times the bytes per element of the storage dtype.
MHA has ``n_kv_heads == n_heads``, GQA a divisor of it, MQA 1. DeepSeek's
multi-head latent attention (MLA) caches one compressed latent ``c_KV`` of
``kv_lora_rank`` elements plus one decoupled RoPE key of ``qk_rope_head_dim``
elements per token and layer, shared by all heads:

    n_layers x batch x seq_len x (kv_lora_rank + qk_rope_head_dim)  elements.

An MLA model is compared, as in the DeepSeek-V2 paper (arXiv 2405.04434,
Table 1), with MHA at its per-head dimension d_h (``qk_nope_head_dim`` for
keys, ``v_head_dim`` for values, 128 for DeepSeek-V2/V3): 2 x n_heads x d_h
elements per token and layer. Decompressing the latent and caching every
head's key (``qk_nope_head_dim + qk_rope_head_dim``) and value
(``v_head_dim``) instead is a naive implementation of MLA
(``CacheLayout`` kind ``MLA-naive``), larger than that MHA.

A sliding-window layer (Mistral-7B-v0.1: every layer, window 4096; Gemma 2: every other layer, 4096;
Gemma 3: five local layers to one global, 1024, or 512 for the 270M model) needs only the keys and
values of the last ``window`` tokens, so it caches ``min(seq_len, window)`` positions
(:func:`windowed_cache_bytes`, :func:`layer_windows`); a global layer caches every position.

Every function here works on Python integers, so results are exact: no float
rounding even at a million tokens. ``int4`` stores two elements per byte; a
tensor with an odd element count needs one more, partly used, byte.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from attn_core.runtime.config import ConfigError, check_int, check_kv_heads

PRESET_FILE = Path(__file__).resolve().parents[2] / "assets" / "model_presets.json"

#: Storage bits per element of each cache/weight dtype.
DTYPE_BITS: dict[str, int] = {"fp32": 32, "fp16": 16, "bf16": 16, "fp8": 8, "int8": 8, "int4": 4}
DTYPES: tuple[str, ...] = tuple(DTYPE_BITS)

#: Longest sequence the calculator offers (2**20 = 1,048,576 tokens, "1M").
MAX_CALC_SEQ_LEN = 1 << 20
MAX_CALC_LAYERS = 512
MAX_CALC_HEADS = 1024
MAX_CALC_HEAD_DIM = 4096
MAX_CALC_BATCH = 4096


def unknown_choice(name: str, value: object, options: Sequence[str]) -> ConfigError:
    """The error for a value outside a fixed list (catalog key ``kv_unknown_choice``)."""
    listed = ", ".join(options)
    return ConfigError(
        f"{name} {value!r} is not known; use one of: {listed}",
        name,
        "kv_unknown_choice",
        name=name,
        value=repr(value),
        options=listed,
    )


# ---------------------------------------------------------------- dtypes and elements
def dtype_bits(dtype: str) -> int:
    """Bits per stored element of ``dtype`` (one of :data:`DTYPES`)."""
    if not isinstance(dtype, str) or dtype not in DTYPE_BITS:
        raise unknown_choice("dtype", dtype, DTYPES)
    return DTYPE_BITS[dtype]


def bytes_per_element_text(dtype: str) -> str:
    """The bytes per element as written in a formula: ``4``, ``2``, ``1`` or ``0.5``."""
    bits = dtype_bits(dtype)
    return str(bits // 8) if bits % 8 == 0 else "0.5"


def elements_to_bytes(n_elements: int, dtype: str) -> int:
    """Bytes needed to store ``n_elements`` in ``dtype`` (int4 packs two per byte, rounding up)."""
    n = check_int("n_elements", n_elements, 0)
    return (n * dtype_bits(dtype) + 7) // 8


def kv_elements_per_token(n_layers: int, n_kv_heads: int, head_dim: int, v_head_dim: int | None = None) -> int:
    """Cached elements per token and sequence, all layers: ``n_layers x n_kv_heads x (d_k + d_v)``.

    ``v_head_dim`` defaults to ``head_dim`` (then this is ``2 x n_layers x n_kv_heads x head_dim``).
    """
    n_layers = check_int("n_layers", n_layers, 1, MAX_CALC_LAYERS)
    n_kv_heads = check_int("n_kv_heads", n_kv_heads, 1, MAX_CALC_HEADS)
    head_dim = check_int("head_dim", head_dim, 1, MAX_CALC_HEAD_DIM)
    v_dim = head_dim if v_head_dim is None else check_int("v_head_dim", v_head_dim, 1, MAX_CALC_HEAD_DIM)
    return n_layers * n_kv_heads * (head_dim + v_dim)


def mla_elements_per_token(n_layers: int, kv_lora_rank: int, rope_head_dim: int) -> int:
    """MLA cached elements per token and sequence, all layers: ``n_layers x (kv_lora_rank + rope_head_dim)``."""
    n_layers = check_int("n_layers", n_layers, 1, MAX_CALC_LAYERS)
    rank = check_int("kv_lora_rank", kv_lora_rank, 1, MAX_CALC_HEAD_DIM * 4)
    rope = check_int("rope_head_dim", rope_head_dim, 0, MAX_CALC_HEAD_DIM)
    return n_layers * (rank + rope)


def _seq_batch(seq_len: int, batch: int) -> tuple[int, int]:
    return (check_int("seq_len", seq_len, 0), check_int("batch", batch, 1, MAX_CALC_BATCH))


# ---------------------------------------------------------------- cache sizes
def kv_cache_bytes(
    n_layers: int,
    n_kv_heads: int,
    head_dim: int,
    seq_len: int,
    batch: int = 1,
    dtype: str = "fp16",
    *,
    v_head_dim: int | None = None,
) -> int:
    """Exact bytes of a K/V cache: ``2 x n_layers x batch x n_kv_heads x seq_len x head_dim x bytes``.

    One layer's cache is K and V, each ``[batch, n_kv_heads, seq_len, head_dim]``.
    ``v_head_dim`` (default ``head_dim``) gives V its own width, as in the
    MHA-equivalent of an MLA model (K 192, V 128 per head). Raises
    :class:`ConfigError` for a non-integer, out-of-range value or an unknown dtype.

    >>> kv_cache_bytes(32, 32, 128, 4096, dtype="fp16")  # LLaMA-7B, one sequence
    2147483648
    """
    seq_len, batch = _seq_batch(seq_len, batch)
    per_token = kv_elements_per_token(n_layers, n_kv_heads, head_dim, v_head_dim)
    return elements_to_bytes(per_token * seq_len * batch, dtype)


def mla_cache_bytes(
    n_layers: int,
    kv_lora_rank: int,
    rope_head_dim: int,
    seq_len: int,
    batch: int = 1,
    dtype: str = "bf16",
) -> int:
    """Exact bytes of an MLA cache: ``n_layers x batch x seq_len x (kv_lora_rank + rope_head_dim) x bytes``.

    Per token and layer DeepSeek-V2/V3 keep the latent ``c_KV`` ``[kv_lora_rank]``
    and the shared RoPE key ``k_R`` ``[rope_head_dim]``; the per-head keys and
    values are rebuilt from the latent (or the up-projections are absorbed).

    >>> mla_cache_bytes(61, 512, 64, 1)  # DeepSeek-V3, one token, bf16
    70272
    """
    seq_len, batch = _seq_batch(seq_len, batch)
    per_token = mla_elements_per_token(n_layers, kv_lora_rank, rope_head_dim)
    return elements_to_bytes(per_token * seq_len * batch, dtype)


# ---------------------------------------------------------------- sliding windows
def layer_windows(n_layers: int, window: int | None, global_every: int | None = None) -> tuple[int | None, ...]:
    """Each layer's sliding window ``[L]`` (None: a global layer, caching every position).

    ``window`` None: no layer slides. ``global_every`` k: layers k-1, 2k-1, ... (every k-th, counted from 1)
    are global and the others slide (Gemma 2: k = 2, Gemma 3: k = 6, as their configs' ``layer_types``);
    None: every layer slides (Mistral-7B-v0.1).
    """
    n_layers = check_int("n_layers", n_layers, 1, MAX_CALC_LAYERS)
    if window is None:
        return (None,) * n_layers
    window = check_int("sliding_window", window, 1)
    if global_every is None:
        return (window,) * n_layers
    every = check_int("global_every", global_every, 1)
    return tuple(None if (i + 1) % every == 0 else window for i in range(n_layers))


def global_every_of(windows: Sequence[int | None]) -> tuple[int | None, int | None]:
    """(window, global_every) describing ``windows`` as :func:`layer_windows` does; (None, None) when no layer
    slides, or when the layers' windows follow no such pattern (then counted as global: an upper bound)."""
    windows = tuple(windows)
    sliding = {w for w in windows if w is not None}
    if len(sliding) != 1:
        return None, None
    window = sliding.pop()
    for every in (None, *range(1, len(windows) + 1)):
        if layer_windows(len(windows), window, every) == windows:
            return window, every
    return None, None


def windowed_cache_bytes(
    windows: Sequence[int | None],
    n_kv_heads: int,
    head_dim: int,
    seq_len: int,
    batch: int = 1,
    dtype: str = "fp16",
    *,
    v_head_dim: int | None = None,
) -> int:
    """Exact bytes of a K/V cache whose layer ``l`` keeps ``min(seq_len, windows[l])`` positions (all of them for
    a ``None`` window): ``sum_l min(S, W_l) x B x H_kv x (d_k + d_v) x bytes``. Equals :func:`kv_cache_bytes`
    when no layer slides or ``seq_len`` fits every window.

    >>> windowed_cache_bytes(layer_windows(18, 512, 6), 1, 256, 32768, dtype="bf16")  # Gemma 3 270M
    108527616
    """
    windows = tuple(windows)
    seq_len, batch = _seq_batch(seq_len, batch)
    per_position = kv_elements_per_token(1, n_kv_heads, head_dim, v_head_dim)
    kept = sum(seq_len if w is None else min(seq_len, check_int("sliding_window", w, 1)) for w in windows)
    check_int("n_layers", len(windows), 1, MAX_CALC_LAYERS)
    return elements_to_bytes(per_position * kept * batch, dtype)


def kept_positions(windows: Sequence[int | None], seq_len: int) -> int:
    """Positions all layers keep together at ``seq_len`` tokens: ``sum_l min(S, W_l)`` (S on a global layer)."""
    return sum(seq_len if w is None else min(seq_len, w) for w in windows)


def windowed_max_context(
    budget_bytes: int, windows: Sequence[int | None], per_position: int, batch: int = 1, dtype: str = "fp16"
) -> int | None:
    """The longest sequence whose cache fits ``budget_bytes`` when layer ``l`` keeps ``min(S, windows[l])``
    positions of ``per_position`` elements (None: a global layer). None when every layer slides and the cache at
    its largest (every window full) fits: then any length fits. Exact: ``bytes(S) <= budget < bytes(S + 1)``."""
    budget_bytes = check_int("budget_bytes", budget_bytes, 0)
    batch = check_int("batch", batch, 1, MAX_CALC_BATCH)
    windows = tuple(windows)
    # bytes(S) <= budget  <=>  per_position * batch * kept(S) * bits <= 8 * budget
    most = (8 * budget_bytes) // (per_position * batch * dtype_bits(dtype))  # the most positions that fit
    if all(w is not None for w in windows) and kept_positions(windows, max(windows)) <= most:
        return None
    lo, hi = 0, most  # kept(S) >= S once a global layer keeps every position, so S <= most
    while lo < hi:  # the largest S with kept(S) <= most (kept grows with S)
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if kept_positions(windows, mid) <= most else (lo, mid - 1)
    return lo


def max_context(
    budget_bytes: int,
    n_layers: int,
    n_kv_heads: int | None = None,
    head_dim: int | None = None,
    *,
    batch: int = 1,
    dtype: str = "fp16",
    kv_lora_rank: int | None = None,
    rope_head_dim: int | None = None,
) -> int:
    """The longest sequence (tokens) whose cache fits in ``budget_bytes``; 0 if not even one token fits.

    Give ``n_kv_heads`` and ``head_dim`` for a K/V cache, or ``kv_lora_rank`` and
    ``rope_head_dim`` for an MLA cache (keys and values of different widths:
    :meth:`CacheLayout.max_context`). The answer ``S`` satisfies
    ``bytes(S) <= budget_bytes < bytes(S + 1)`` exactly.
    """
    if kv_lora_rank is not None:
        per_token = mla_elements_per_token(n_layers, kv_lora_rank, rope_head_dim or 0)
    elif n_kv_heads is not None and head_dim is not None:
        per_token = kv_elements_per_token(n_layers, n_kv_heads, head_dim)
    else:
        raise ConfigError(
            "max_context needs n_kv_heads and head_dim, or kv_lora_rank and rope_head_dim",
            "n_kv_heads",
            "kv_max_context_args",
        )
    return tokens_that_fit(budget_bytes, per_token, batch, dtype)


def tokens_that_fit(budget_bytes: int, elements_per_token: int, batch: int = 1, dtype: str = "fp16") -> int:
    """The longest sequence whose cache of ``elements_per_token`` (all layers, one sequence) fits ``budget_bytes``."""
    budget_bytes = check_int("budget_bytes", budget_bytes, 0)
    batch = check_int("batch", batch, 1, MAX_CALC_BATCH)
    # bytes(S) = ceil(per_token * batch * S * bits / 8) <= budget  <=>  per_token * batch * S * bits <= 8 * budget
    return (8 * budget_bytes) // (elements_per_token * batch * dtype_bits(dtype))


def weights_bytes(n_params: int, dtype: str = "bf16") -> int:
    """Bytes to hold ``n_params`` weights in ``dtype`` (no optimizer state, no activations)."""
    return elements_to_bytes(check_int("n_params", n_params, 0), dtype)


# ---------------------------------------------------------------- formulas as text
def _n(x: int) -> str:
    return f"{x:,}"


def kv_formula(
    n_layers: int,
    n_kv_heads: int,
    head_dim: int,
    seq_len: int,
    batch: int = 1,
    dtype: str = "fp16",
    *,
    v_head_dim: int | None = None,
) -> tuple[str, str]:
    """(symbolic formula, the same with the numbers substituted) for :func:`kv_cache_bytes`.

    The right-hand side ends in the exact byte count.
    """
    total = kv_cache_bytes(n_layers, n_kv_heads, head_dim, seq_len, batch, dtype, v_head_dim=v_head_dim)
    b = bytes_per_element_text(dtype)
    if v_head_dim is None or v_head_dim == head_dim:
        sym = "2 × L × B × H_kv × S × d_k × b"
        num = f"2 × {_n(n_layers)} × {_n(batch)} × {_n(n_kv_heads)} × {_n(seq_len)} × {_n(head_dim)} × {b} B"
    else:
        sym = "L × B × H_kv × S × (d_k + d_v) × b"
        num = (
            f"{_n(n_layers)} × {_n(batch)} × {_n(n_kv_heads)} × {_n(seq_len)} × "
            f"({_n(head_dim)} + {_n(v_head_dim)}) × {b} B"
        )
    return sym, f"{num} = {_n(total)} B"


def mla_formula(
    n_layers: int, kv_lora_rank: int, rope_head_dim: int, seq_len: int, batch: int = 1, dtype: str = "bf16"
) -> tuple[str, str]:
    """(symbolic formula, substituted formula ending in the byte count) for :func:`mla_cache_bytes`."""
    total = mla_cache_bytes(n_layers, kv_lora_rank, rope_head_dim, seq_len, batch, dtype)
    b = bytes_per_element_text(dtype)
    sym = "L × B × S × (d_c + d_R) × b"
    num = f"{_n(n_layers)} × {_n(batch)} × {_n(seq_len)} × ({_n(kv_lora_rank)} + {_n(rope_head_dim)}) × {b} B"
    return sym, f"{num} = {_n(total)} B"


def windowed_formula(
    windows: Sequence[int | None],
    n_kv_heads: int,
    head_dim: int,
    seq_len: int,
    batch: int = 1,
    dtype: str = "fp16",
) -> tuple[str, str]:
    """(symbolic, substituted) formula of :func:`windowed_cache_bytes` for layers sharing one window ``W``: the
    global layers at ``S``, the local ones at ``min(S, W)``; every layer local: ``2 × L × B × H_kv × min(S, W) ×
    d_k × b``. The substituted line gives ``min(S, W)`` as its value and ends in the exact byte count."""
    windows = tuple(windows)
    total = windowed_cache_bytes(windows, n_kv_heads, head_dim, seq_len, batch, dtype)
    b, local = bytes_per_element_text(dtype), [w for w in windows if w is not None]
    kept = min(seq_len, max(local))
    n_local, n_global = len(local), len(windows) - len(local)
    if n_global == 0:
        sym = "2 × L × B × H_kv × min(S, W) × d_k × b"
        num = f"2 × {_n(n_local)} × {_n(batch)} × {_n(n_kv_heads)} × {_n(kept)} × {_n(head_dim)} × {b} B"
    else:
        sym = "2 × B × H_kv × (L_global × S + L_local × min(S, W)) × d_k × b"
        num = (
            f"2 × {_n(batch)} × {_n(n_kv_heads)} × ({_n(n_global)} × {_n(seq_len)} + {_n(n_local)} × {_n(kept)}) × "
            f"{_n(head_dim)} × {b} B"
        )
    return sym, f"{num} = {_n(total)} B"


# ---------------------------------------------------------------- presets
@dataclass(frozen=True)
class ModelPreset:
    """Attention shape of a real model, as in its official configuration.

    ``head_dim`` is the per-head key width and ``v_head_dim`` the value width
    (equal except for MLA models, where ``head_dim`` is the decompressed key
    ``qk_nope_head_dim + qk_rope_head_dim`` and ``n_kv_heads`` equals
    ``n_heads``, as in their config). ``n_params`` counts every stored
    parameter once (tied embeddings once). ``paper`` links the paper an MLA
    model's comparison follows. ``sliding_window`` and ``global_every``: which
    layers slide, as :func:`layer_windows` (both None: none).
    """

    id: str
    name: str
    n_layers: int
    hidden_size: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    v_head_dim: int
    max_positions: int
    n_params: int | None
    source: str
    kv_lora_rank: int | None = None
    qk_rope_head_dim: int | None = None
    qk_nope_head_dim: int | None = None
    sliding_window: int | None = None
    global_every: int | None = None
    paper: str | None = None

    @property
    def is_mla(self) -> bool:
        return self.kv_lora_rank is not None

    @property
    def layer_windows(self) -> tuple[int | None, ...]:
        """Each layer's sliding window (:func:`layer_windows`)."""
        return layer_windows(self.n_layers, self.sliding_window, self.global_every)

    def windowed_bytes(self, seq_len: int, batch: int = 1, dtype: str = "fp16") -> int:
        """The model's own K/V cache for ``seq_len`` tokens, sliding layers at ``min(seq_len, window)``
        (:func:`windowed_cache_bytes`; an MLA model: :func:`mla_cache_bytes`, none of them slide)."""
        if self.is_mla:
            return mla_cache_bytes(self.n_layers, self.kv_lora_rank, self.qk_rope_head_dim, seq_len, batch, dtype)
        return windowed_cache_bytes(
            self.layer_windows, self.n_kv_heads, self.head_dim, seq_len, batch, dtype, v_head_dim=self.v_head_dim
        )

    @property
    def attention(self) -> str:
        """``MLA`` for latent-attention models, else ``MHA``, ``GQA`` or ``MQA`` from the head counts."""
        if self.is_mla:
            return "MLA"
        if self.n_kv_heads == self.n_heads:
            return "MHA"
        return "MQA" if self.n_kv_heads == 1 else "GQA"

    def validate(self) -> ModelPreset:
        """Check every field; return ``self`` or raise :class:`ConfigError` naming the preset and field."""
        try:
            self._check()
        except ConfigError as exc:
            raise ConfigError(
                f"preset {self.id}: {exc}", exc.field, "kv_preset_invalid", id=self.id, detail=str(exc)
            ) from exc
        return self

    def _check(self) -> None:
        check_int("n_layers", self.n_layers, 1, MAX_CALC_LAYERS)
        check_int("hidden_size", self.hidden_size, 1)
        check_int("n_heads", self.n_heads, 1, MAX_CALC_HEADS)
        check_int("n_kv_heads", self.n_kv_heads, 1, MAX_CALC_HEADS)
        check_kv_heads(self.n_heads, self.n_kv_heads)
        check_int("head_dim", self.head_dim, 1, MAX_CALC_HEAD_DIM)
        check_int("v_head_dim", self.v_head_dim, 1, MAX_CALC_HEAD_DIM)
        check_int("max_positions", self.max_positions, 1)
        if self.n_params is not None:
            check_int("n_params", self.n_params, 1)
        if self.global_every is not None and self.sliding_window is None:
            raise ConfigError("global_every needs a sliding_window", "global_every", "kv_preset_global_every")
        layer_windows(self.n_layers, self.sliding_window, self.global_every)  # checks the window and the pattern
        if self.is_mla:
            check_int("kv_lora_rank", self.kv_lora_rank, 1)
            check_int("qk_rope_head_dim", self.qk_rope_head_dim, 1)
            check_int("qk_nope_head_dim", self.qk_nope_head_dim, 1)
            if self.head_dim != self.qk_nope_head_dim + self.qk_rope_head_dim or self.n_kv_heads != self.n_heads:
                raise ConfigError(
                    f"an MLA model needs head_dim = qk_nope_head_dim + qk_rope_head_dim "
                    f"({self.qk_nope_head_dim} + {self.qk_rope_head_dim}) and n_kv_heads = n_heads ({self.n_heads}); "
                    f"got head_dim {self.head_dim}, n_kv_heads {self.n_kv_heads}",
                    "head_dim",
                    "kv_preset_mla_shape",
                )
        elif self.v_head_dim != self.head_dim:
            raise ConfigError(
                "v_head_dim must equal head_dim unless the model uses MLA", "v_head_dim", "kv_preset_v_dim"
            )
        for name in ("source", "paper"):
            link = getattr(self, name)
            if (name == "source" or link is not None) and not str(link).startswith("https://"):
                raise ConfigError(
                    f"{name} must be an https:// link to the official config or paper",
                    name,
                    "kv_preset_link",
                    name=name,
                )


@lru_cache(maxsize=4)
def _load(path: str) -> tuple[ModelPreset, ...]:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ConfigError(
            f"cannot read the model presets from {path}: {exc}", "presets", "kv_preset_read", path=path, detail=str(exc)
        ) from exc
    known = set(ModelPreset.__dataclass_fields__)
    out = []
    for raw in data.get("presets", []):
        fields = {k: v for k, v in raw.items() if k in known}
        if "v_head_dim" not in fields and "head_dim" in fields:
            fields["v_head_dim"] = fields["head_dim"]
        pid = raw.get("id", "?")
        try:
            preset = ModelPreset(**fields)
        except TypeError as exc:
            raise ConfigError(f"preset {pid}: {exc}", "presets", "kv_preset_invalid", id=pid, detail=str(exc)) from exc
        out.append(preset.validate())
    ids = [p.id for p in out]
    if len(set(ids)) != len(ids):
        raise ConfigError("model preset ids must be unique", "presets", "kv_preset_ids")
    return tuple(out)


def load_presets(path: str | Path | None = None) -> dict[str, ModelPreset]:
    """The model presets from ``assets/model_presets.json``, by id, in file order (read once per process)."""
    return {p.id: p for p in _load(str(path or PRESET_FILE))}


# ---------------------------------------------------------------- cache layouts of one model
@dataclass(frozen=True)
class CacheLayout:
    """One way to cache a model's keys and values: MHA, GQA, MQA, MLA, or MLA decompressed per head.

    ``kind`` names it (``MHA``, ``GQA``, ``MQA``, ``MLA-naive`` or ``MLA``); ``n_kv_heads``, ``k_dim``,
    ``v_dim`` describe a K/V cache (``kv_lora_rank`` and ``rope_dim`` an MLA
    cache); ``native`` marks the layout the model really uses. ``MLA-naive``
    is a K/V cache: every head's decompressed key (``k_dim`` = nope + rope)
    and value. ``windows``: each layer's sliding window (:func:`layer_windows`; empty: no layer slides): a
    local layer keeps ``min(S, W)`` positions, and :meth:`bytes`, :meth:`max_context`, :meth:`formula` count it so.
    """

    kind: str
    n_layers: int
    n_kv_heads: int = 0
    k_dim: int = 0
    v_dim: int = 0
    kv_lora_rank: int = 0
    rope_dim: int = 0
    native: bool = False
    windows: tuple[int | None, ...] = ()

    @property
    def windowed(self) -> bool:
        """Whether some layer slides (keeps only its window's last positions)."""
        return any(w is not None for w in self.windows)

    def full(self) -> CacheLayout:
        """The same layout with every layer keeping every position (the cache without the window)."""
        return dataclasses.replace(self, windows=())

    def positions(self, seq_len: int) -> int:
        """Positions all layers keep together at ``seq_len`` tokens (``L x S`` when no layer slides)."""
        return kept_positions(self.windows, seq_len) if self.windowed else self.n_layers * seq_len

    @property
    def label(self) -> str:
        """``MHA`` / ``GQA-8`` / ``MQA`` / ``MLA-naive`` / ``MLA``: the kind with the KV-head count for GQA."""
        return f"GQA-{self.n_kv_heads}" if self.kind == "GQA" else self.kind

    def elements_per_token(self) -> int:
        """Cached elements per token and sequence, all layers."""
        if self.kind == "MLA":
            return mla_elements_per_token(self.n_layers, self.kv_lora_rank, self.rope_dim)
        return kv_elements_per_token(self.n_layers, self.n_kv_heads, self.k_dim, self.v_dim)

    def per_layer(self) -> tuple[str, int]:
        """(formula, value) of the elements cached per token and layer, e.g. ``("2 × 8 × 128", 2048)``.

        ``2 × H_kv × d`` when keys and values are equally wide, ``H_kv × (d_k + d_v)``
        otherwise, ``d_c + d_R`` for MLA.
        """
        if self.kind == "MLA":
            return f"{_n(self.kv_lora_rank)} + {_n(self.rope_dim)}", self.kv_lora_rank + self.rope_dim
        value = self.n_kv_heads * (self.k_dim + self.v_dim)
        if self.k_dim == self.v_dim:
            return f"2 × {_n(self.n_kv_heads)} × {_n(self.k_dim)}", value
        return f"{_n(self.n_kv_heads)} × ({_n(self.k_dim)} + {_n(self.v_dim)})", value

    def bytes(self, seq_len: int, batch: int = 1, dtype: str = "fp16") -> int:
        """Exact cache bytes for ``seq_len`` tokens and ``batch`` sequences."""
        if self.kind == "MLA":
            return mla_cache_bytes(self.n_layers, self.kv_lora_rank, self.rope_dim, seq_len, batch, dtype)
        if self.windowed:
            return windowed_cache_bytes(
                self.windows, self.n_kv_heads, self.k_dim, seq_len, batch, dtype, v_head_dim=self.v_dim
            )
        return kv_cache_bytes(self.n_layers, self.n_kv_heads, self.k_dim, seq_len, batch, dtype, v_head_dim=self.v_dim)

    def max_context(self, budget_bytes: int, batch: int = 1, dtype: str = "fp16") -> int | None:
        """The longest sequence that fits ``budget_bytes`` (see :func:`max_context`; with sliding layers
        :func:`windowed_max_context`: None when any length fits)."""
        if self.windowed:
            return windowed_max_context(budget_bytes, self.windows, self.per_layer()[1], batch, dtype)
        return tokens_that_fit(budget_bytes, self.elements_per_token(), batch, dtype)

    def formula(self, seq_len: int, batch: int = 1, dtype: str = "fp16") -> tuple[str, str]:
        """(symbolic, substituted) formula for :meth:`bytes`."""
        if self.kind == "MLA":
            return mla_formula(self.n_layers, self.kv_lora_rank, self.rope_dim, seq_len, batch, dtype)
        if self.windowed and self.k_dim == self.v_dim:
            return windowed_formula(self.windows, self.n_kv_heads, self.k_dim, seq_len, batch, dtype)
        return kv_formula(self.n_layers, self.n_kv_heads, self.k_dim, seq_len, batch, dtype, v_head_dim=self.v_dim)


def cache_layouts(
    n_layers: int,
    n_heads: int,
    n_kv_heads: int,
    head_dim: int,
    *,
    v_head_dim: int | None = None,
    kv_lora_rank: int | None = None,
    rope_dim: int | None = None,
) -> list[CacheLayout]:
    """The layouts to compare for one model, in the order MHA, (this) GQA, MQA, MLA-naive, (this) MLA.

    MHA keeps ``n_heads`` K/V heads, MQA one, GQA the model's own ``n_kv_heads``
    (listed only when it lies strictly between). With ``kv_lora_rank`` the
    model uses MLA and ``head_dim`` is its decompressed key width (nope + rope,
    192 for DeepSeek-V3): then MHA and MQA use keys of ``head_dim - rope_dim``
    and values of ``v_head_dim`` (the paper's d_h, as in DeepSeek-V2 Table 1),
    and ``MLA-naive`` keeps ``n_heads`` keys of ``head_dim`` and values of
    ``v_head_dim`` (the latent decompressed and cached per head).
    """
    check_int("n_heads", n_heads, 1, MAX_CALC_HEADS)
    check_int("n_kv_heads", n_kv_heads, 1, MAX_CALC_HEADS)
    check_kv_heads(n_heads, n_kv_heads)
    v_dim = head_dim if v_head_dim is None else v_head_dim
    mla = kv_lora_rank is not None
    k_dim = head_dim
    if mla:
        rope = check_int("rope_dim", rope_dim or 0, 0, MAX_CALC_HEAD_DIM)
        k_dim = check_int("head_dim", head_dim, 1, MAX_CALC_HEAD_DIM) - rope
        if k_dim < 1:
            raise ConfigError(
                f"head_dim ({head_dim}) must be larger than rope_dim ({rope}) for MLA",
                "head_dim",
                "kv_mla_rope",
                head_dim=head_dim,
                rope=rope,
            )
    out = [CacheLayout("MHA", n_layers, n_heads, k_dim, v_dim, native=not mla and n_kv_heads == n_heads)]
    if 1 < n_kv_heads < n_heads and not mla:
        out.append(CacheLayout("GQA", n_layers, n_kv_heads, k_dim, v_dim, native=True))
    if n_heads > 1:
        out.append(CacheLayout("MQA", n_layers, 1, k_dim, v_dim, native=not mla and n_kv_heads == 1))
    if mla:
        out.append(CacheLayout("MLA-naive", n_layers, n_heads, head_dim, v_dim))
        out.append(CacheLayout("MLA", n_layers, kv_lora_rank=kv_lora_rank, rope_dim=rope_dim or 0, native=True))
    for lay in out:
        lay.elements_per_token()  # validates the numbers
    return out


def preset_layouts(preset: ModelPreset) -> list[CacheLayout]:
    """:func:`cache_layouts` for a preset; a model with sliding layers: every K/V layout with its windows (the
    layers slide whichever way their heads share K and V)."""
    layouts = cache_layouts(
        preset.n_layers,
        preset.n_heads,
        preset.n_kv_heads,
        preset.head_dim,
        v_head_dim=preset.v_head_dim,
        kv_lora_rank=preset.kv_lora_rank,
        rope_dim=preset.qk_rope_head_dim,
    )
    if preset.sliding_window is None or preset.is_mla:
        return layouts
    return [dataclasses.replace(lay, windows=preset.layer_windows) for lay in layouts]


# ---------------------------------------------------------------- memory against sequence length
def seq_points(max_seq: int = MAX_CALC_SEQ_LEN, per_octave: int = 8) -> np.ndarray:
    """Integer sequence lengths from 1 to ``max_seq``, evenly spaced on a log axis (int64), ``max_seq`` included."""
    octaves = math.log2(max_seq)
    k = np.arange(0, int(math.ceil(octaves * per_octave)) + 1)
    pts = np.unique(np.clip(np.round(2.0 ** (k / per_octave)), 1, max_seq).astype(np.int64))
    return np.unique(np.append(pts, max_seq))


@dataclass(frozen=True)
class MemoryCurves:
    """The cache of each layout against the sequence length, and the longest context that fits a device.

    ``cache[i]`` holds the exact bytes of ``layouts[i]`` at each of ``tokens``
    (int64) for ``batch`` sequences in ``dtype``; ``weights`` (bytes, or None) are
    stacked under every line and taken from the device first. ``fits[i]`` is the
    longest context whose cache fits ``device_bytes - weights`` (None: any length, when every layer slides and
    its full windows fit), and ``fit_totals[i]`` what the device then holds (that cache plus the weights; 0
    when nothing fits; with any length, the largest cache: every window full). ``unwindowed``: for a model
    with sliding layers, the bytes of its own layout without the window (every layer at every position).
    """

    layouts: tuple[CacheLayout, ...]
    tokens: np.ndarray
    cache: np.ndarray
    fits: tuple[int | None, ...]
    fit_totals: tuple[int, ...]
    device_bytes: int
    weights: int | None
    batch: int
    dtype: str
    unwindowed: np.ndarray | None = None

    @property
    def budget(self) -> int:
        """Bytes left for the cache: the device's memory less the weights (never below 0)."""
        return max(0, self.device_bytes - (self.weights or 0))


def memory_curves(
    layouts: Sequence[CacheLayout],
    batch: int,
    dtype: str,
    points: np.ndarray,
    device_bytes: int,
    weights: int | None = None,
) -> MemoryCurves:
    """:class:`MemoryCurves` of ``layouts`` at the sequence lengths ``points``, on a device of ``device_bytes``."""
    w = int(weights or 0)
    budget = max(0, int(device_bytes) - w)
    tokens = np.asarray(points, dtype=np.int64)
    for lay in layouts:  # every argument checked once, at the longest point: the rest is exact integer arithmetic
        lay.bytes(int(tokens.max(initial=0)), batch, dtype)
    bits = dtype_bits(dtype)

    def sizes(lay: CacheLayout) -> list[int]:  # what CacheLayout.bytes gives at each point, as exact integers
        per = lay.per_layer()[1] * batch * bits  # bits of one position of one layer, all sequences
        return [(per * lay.positions(int(s)) + 7) // 8 for s in tokens]

    cache = np.array([sizes(lay) for lay in layouts], dtype=np.int64)
    fits = tuple(lay.max_context(budget, batch, dtype) for lay in layouts)
    largest = int(tokens.max(initial=1))
    totals = tuple(
        lay.bytes(largest if n is None else n, batch, dtype) + w if n != 0 else 0
        for lay, n in zip(layouts, fits, strict=True)
    )
    native = next((lay for lay in layouts if lay.native and lay.windowed), None)
    return MemoryCurves(
        tuple(layouts),
        tokens,
        cache.reshape(len(layouts), len(tokens)),
        fits,
        totals,
        int(device_bytes),
        weights,
        batch,
        dtype,
        None if native is None else np.array(sizes(native.full()), dtype=np.int64),
    )


# ---------------------------------------------------------------- the cache as tensors, filling token by token
#: Most frames the tensor animation draws: longer sequences are shown at evenly thinned token counts.
MAX_FILL_FRAMES = 64
#: The group size the tensor view's GQA takes when the model is MHA or MQA (a divisor of n_heads nearest it).
GQA_GROUP = 4


def gqa_heads(n_heads: int, n_kv_heads: int | None) -> tuple[int | None, bool]:
    """(KV heads of the GQA layout, whether they were chosen here): ``n_kv_heads`` when it lies strictly between
    1 and ``n_heads``; else the divisor of ``n_heads`` strictly between whose group ``n_heads / d`` is nearest
    :data:`GQA_GROUP` (the smaller on a tie); ``None`` when ``n_heads`` has no such divisor (1, 2 or a prime)."""
    n_heads = check_int("n_heads", n_heads, 1, MAX_CALC_HEADS)
    if n_kv_heads is not None and 1 < n_kv_heads < n_heads:
        check_kv_heads(n_heads, n_kv_heads)
        return n_kv_heads, False
    between = [d for d in range(2, n_heads) if n_heads % d == 0]
    if not between:
        return None, True
    return min(between, key=lambda d: (abs(n_heads / d - GQA_GROUP), d)), True


@dataclass(frozen=True)
class CacheFill:
    """The K/V buffers of MHA, GQA and MQA at the same ``n_heads`` query heads, filled one token at a time.

    Each layout's buffers are ``[L, 2, B, H_kv, S, d]`` (K and V of every layer; ``seq_len`` = S positions);
    query head ``h`` reads KV head ``h // (n_heads / H_kv)`` (what ``repeat_kv`` does). ``tokens[f]`` is the
    number of positions filled in frame ``f`` (1 .. S; every token when S <= the frame cap, else evenly
    thinned, ``S`` always last) and ``bytes[f][i]`` the exact bytes ``layouts[i]`` holds then
    (:meth:`CacheLayout.bytes`, the formula of :func:`kv_cache_bytes`). ``gqa_chosen``: the GQA layout's KV
    heads were chosen by :func:`gqa_heads` (the model itself is MHA, MQA or MLA).
    """

    layouts: tuple[CacheLayout, ...]
    n_heads: int
    seq_len: int
    batch: int
    dtype: str
    tokens: tuple[int, ...]
    bytes: tuple[tuple[int, ...], ...]
    gqa_chosen: bool

    @property
    def thinned(self) -> bool:
        """Whether some token counts are skipped (more tokens than frames)."""
        return len(self.tokens) < self.seq_len

    def shape(self, i: int) -> tuple[int, int, int, int, int, int]:
        """``(L, 2, B, H_kv, S, d_k)`` of layout ``i``'s buffers."""
        lay = self.layouts[i]
        return (lay.n_layers, 2, self.batch, lay.n_kv_heads, self.seq_len, lay.k_dim)

    def reads(self, i: int) -> tuple[int, ...]:
        """The KV head each query head reads in layout ``i``: ``h // (n_heads / H_kv)``."""
        n_rep = self.n_heads // self.layouts[i].n_kv_heads
        return tuple(h // n_rep for h in range(self.n_heads))


def fill_tokens(seq_len: int, max_frames: int = MAX_FILL_FRAMES) -> tuple[int, ...]:
    """The token counts drawn: ``1 .. seq_len`` when it fits ``max_frames``, else ``ceil(k * S / n)``, k = 1 .. n."""
    s, n = check_int("seq_len", seq_len, 1, MAX_CALC_SEQ_LEN), check_int("max_frames", max_frames, 1, 10_000)
    n = min(s, n)
    return tuple(-(-k * s // n) for k in range(1, n + 1))


def cache_fill(
    n_layers: int,
    n_heads: int,
    n_kv_heads: int | None,
    dims: tuple[int, int],
    seq_len: int,
    batch: int = 1,
    dtype: str = "fp16",
    max_frames: int = MAX_FILL_FRAMES,
) -> CacheFill:
    """:class:`CacheFill` of MHA (``n_heads`` KV heads), GQA (:func:`gqa_heads` of the model's ``n_kv_heads``;
    left out when ``n_heads`` has no divisor strictly between 1 and itself) and MQA (1; left out when
    ``n_heads`` is 1), each with keys and values of ``dims = (d_k, d_v)``, for ``seq_len`` positions.
    ``n_kv_heads`` None: the model is none of the three (MLA); no layout is marked as the model's own."""
    if n_kv_heads is not None:
        check_kv_heads(n_heads, check_int("n_kv_heads", n_kv_heads, 1, MAX_CALC_HEADS))
    gqa, chosen = gqa_heads(n_heads, n_kv_heads)
    k_dim, v_dim = dims
    kinds = [("MHA", n_heads)] + ([("GQA", gqa)] if gqa else []) + ([("MQA", 1)] if n_heads > 1 else [])
    layouts = tuple(CacheLayout(kind, n_layers, h, k_dim, v_dim, native=h == n_kv_heads) for kind, h in kinds)
    for lay in layouts:
        lay.elements_per_token()  # validates the layers and widths
    tokens = fill_tokens(seq_len, max_frames)
    sizes = tuple(tuple(lay.bytes(t, batch, dtype) for lay in layouts) for t in tokens)
    return CacheFill(layouts, n_heads, seq_len, batch, dtype, tokens, sizes, chosen)
