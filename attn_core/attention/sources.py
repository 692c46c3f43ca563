"""Attention sources: where the queries, keys and values of every map view come from.

A source is one attention layer's input to the softmax: per query head the
queries ``[T_q, D]``, per KV head the keys and values ``[T_k, D]`` (after any
position encoding, before ``repeat_kv``), the factor applied to q·k, and the mask.
The chunked, pooled maps (:func:`attn_core.attention.longmaps.pooled_attention`), a head's
step-by-step window (:func:`attn_core.attention.longmaps.head_window`), the row entropy and
the grouped KV-sharing maps all take a source, so any source works in every view:

- :class:`SeededLayer`: the app's seeded random layer (token embeddings and N(0, 1/d)
  projections drawn from a seed), computed on demand: only the rows of the heads a
  view shows are drawn, so 8192 tokens × 64 heads never hold every head at once;
- :class:`TensorLayer`: tensors captured elsewhere (a pretrained model's q/k/v, an
  MLA layer's paths), held as CPU float32 numpy.

Both answer :meth:`qkv`, :meth:`allowed` and :meth:`extra_bytes` the same way.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
import torch

from attn_core.attention.gqa import resolve_scale
from attn_core.attention.masks import MASK_KINDS, check_layer_input, limit_keys
from attn_core.attention.tokens import embed
from attn_core.runtime.config import AttentionConfig, check_int, check_kv_heads

# q of the shown heads [Hs, T_q, D]; k and v of the KV heads they read, by KV head: [T_k, D] each
QKV = tuple[torch.Tensor, dict[int, torch.Tensor], dict[int, torch.Tensor]]
# (sliding window, sinks, recent keys) of masks.limit_keys: None, 0, None limit nothing
KeyLimits = tuple[int | None, int, int | None]


class AttentionSource(Protocol):
    """What a map view needs of one attention layer (see the module docstring)."""

    n_heads: int
    n_kv_heads: int
    head_dim: int
    tokens_q: tuple[str, ...]
    mask_kind: str
    use_scaling: bool  # whether the scale holds 1/√d_k (as the step-by-step view says)
    temperature: float  # τ in the scale

    @property
    def keys(self) -> tuple[str, ...]: ...

    @property
    def scale(self) -> float: ...

    @property
    def cross(self) -> bool: ...

    def qkv(self, heads: Sequence[int], device: torch.device, values: bool = False) -> QKV: ...

    def allowed(self, rows: torch.Tensor) -> torch.Tensor: ...

    def extra_bytes(self, n_shown: int) -> int: ...


def group_of(head: int, n_heads: int, n_kv_heads: int) -> int:
    """The KV head that query head ``head`` reads (contiguous groups, as ``repeat_kv``)."""
    return head // (n_heads // n_kv_heads)


def allowed_rows(
    mask_kind: str, rows: torch.Tensor, t_q: int, t_k: int, pad_len: int | None, limits: KeyLimits = (None, 0, None)
) -> torch.Tensor:
    """Bool ``[len(rows), T_k]``: which keys each query row in ``rows`` may attend to (True = allowed).

    ``causal`` is aligned to the end of the keys, as :func:`attn_core.attention.masks.causal_mask`;
    ``padding`` hides the keys from ``pad_len`` on. ``limits`` = (window, sinks, recent) of
    :func:`attn_core.attention.masks.limit_keys` (a sliding window, StreamingLLM's eviction).
    """
    keys = torch.arange(t_k, device=rows.device)
    if mask_kind == "causal":
        allowed = keys[None, :] <= rows[:, None] + (t_k - t_q)
    elif mask_kind == "padding":
        allowed = (keys < pad_len)[None, :].expand(len(rows), t_k)
    else:
        allowed = torch.ones(len(rows), t_k, dtype=torch.bool, device=rows.device)
    window, sinks, recent = limits
    if window is None and recent is None:
        return allowed
    return limit_keys(allowed, rows + (t_k - t_q), window, sinks, recent)


class _Sequences:
    """What both sources derive from their tokens and mask: the key tokens, cross-attention, the allowed keys."""

    tokens_q: tuple[str, ...]
    tokens_k: tuple[str, ...] | None
    mask_kind: str
    pad_len: int | None
    limits: KeyLimits = (None, 0, None)  # TensorLayer's field; the seeded layer limits nothing

    @property
    def keys(self) -> tuple[str, ...]:
        """The tokens the keys and values come from (the queries' own in self-attention)."""
        return self.tokens_k if self.tokens_k is not None else self.tokens_q

    @property
    def cross(self) -> bool:
        return self.tokens_k is not None

    def allowed(self, rows: torch.Tensor) -> torch.Tensor:
        return allowed_rows(self.mask_kind, rows, len(self.tokens_q), len(self.keys), self.pad_len, self.limits)


# ---------------------------------------------------------------- the seeded random layer
def layer_generator(seed: int) -> torch.Generator:
    """The generator every seeded layer draws its projections from, in the order W_Q, W_K, W_V, W_O."""
    return torch.Generator().manual_seed(int(seed))


def draw_weight(gen: torch.Generator, out_features: int, in_features: int) -> torch.Tensor:
    """One projection matrix ``[out, in]`` with N(0, 1/in) entries (unit-variance outputs for unit-variance inputs).

    The one place the seeded layer's weights are drawn: :func:`attn_core.attention.maps.init_layer`
    draws all four matrices with it, :class:`SeededLayer` the same draws and keeps the rows it needs.
    """
    return torch.randn(out_features, in_features, generator=gen) / math.sqrt(in_features)


@dataclass(frozen=True)
class SeededLayer(_Sequences):
    """The app's seeded random layer over ``tokens_q`` (and ``tokens_k`` for cross-attention).

    The same layer as :func:`attn_core.attention.maps.compute_attention_maps` builds for the same
    arguments: embeddings from :func:`attn_core.attention.tokens.embed`, projections from
    :func:`draw_weight`; scores times 1/√d_k (``use_scaling``) divided by ``temperature``.
    Checked when made (:class:`ConfigError` naming the field).
    """

    n_heads: int
    n_kv_heads: int
    head_dim: int
    tokens_q: tuple[str, ...]
    tokens_k: tuple[str, ...] | None = None
    d_model: int | None = None
    mask_kind: str = "none"
    pad_len: int | None = None
    use_scaling: bool = True
    temperature: float = 1.0
    seed: int = 0

    def __post_init__(self) -> None:
        put = object.__setattr__
        put(self, "tokens_q", tuple(self.tokens_q))
        if self.tokens_k is not None:
            put(self, "tokens_k", tuple(self.tokens_k))
        cfg = AttentionConfig(
            n_heads=self.n_heads,
            n_kv_heads=self.n_kv_heads,
            head_dim=self.head_dim,
            d_model=self.d_model,
            seq_len=max(1, len(self.tokens_q)),
            use_scaling=self.use_scaling,
            seed=self.seed,
        )
        cfg.validate()
        put(self, "d_model", cfg.d_model)
        put(self, "temperature", check_layer_input(self.tokens_q, self.tokens_k, self.mask_kind, self.temperature))
        if self.mask_kind == "padding":
            t_k = len(self.keys)
            put(self, "pad_len", check_int("pad_len", t_k if self.pad_len is None else self.pad_len, 1, t_k))

    @property
    def scale(self) -> float:
        """The factor applied to q·k: 1/√d_k (or 1 unscaled) divided by the temperature."""
        return resolve_scale(self.head_dim, self.use_scaling) / self.temperature

    def extra_bytes(self, n_shown: int) -> int:
        """Peak bytes of :meth:`qkv` for ``n_shown`` heads: embeddings, the drawn rows, Q, K and V."""
        d, dm = self.head_dim, int(self.d_model)
        t_q, t_k = len(self.tokens_q), len(self.keys)
        groups = min(self.n_kv_heads, n_shown)
        floats = (t_q + t_k if self.cross else t_q) * dm + 3 * 512 * dm  # embeddings, a block of positions
        floats += (self.n_heads + n_shown + 2 * groups) * d * dm  # W_Q drawn, kept rows of W_Q, W_K, W_V
        floats += n_shown * t_q * d + 4 * groups * t_k * d  # Q; K and V with their projections
        return 4 * floats

    def qkv(self, heads: Sequence[int], device: torch.device, values: bool = False) -> QKV:
        """Q of ``heads`` ``[Hs, T_q, D]``, and K (with ``values`` V too) ``[T_k, D]`` of the KV heads they read.

        Draws W_Q, W_K, W_V in turn from :func:`layer_generator` (W_O, which no map
        needs, is never drawn) and keeps only the rows of the needed heads.
        """
        d, dm = self.head_dim, int(self.d_model)
        groups = sorted({group_of(h, self.n_heads, self.n_kv_heads) for h in heads})
        gen = layer_generator(self.seed)

        def rows_of(n_out: int, keep: Sequence[int]) -> torch.Tensor:  # [len(keep)*D, d_model]
            w = draw_weight(gen, n_out * d, dm)
            return torch.cat([w[i * d : (i + 1) * d] for i in keep]).to(device)

        w_q = rows_of(self.n_heads, heads)
        w_k = rows_of(self.n_kv_heads, groups)
        w_v = rows_of(self.n_kv_heads, groups) if values else None
        with torch.no_grad():
            x = embed(list(self.tokens_q), dm, self.seed).to(device)  # (Tq, d_model)
            q = (x @ w_q.T).view(len(self.tokens_q), len(heads), d).transpose(0, 1).contiguous()  # (Hs, Tq, D)
            if self.cross:
                x = embed(list(self.keys), dm, self.seed).to(device)  # (Tk, d_model)
            k_all = x @ w_k.T  # (Tk, G*D)
            k = {g: k_all[:, i * d : (i + 1) * d].contiguous() for i, g in enumerate(groups)}
            v = {}
            if w_v is not None:
                v_all = x @ w_v.T  # (Tk, G*D)
                v = {g: v_all[:, i * d : (i + 1) * d].contiguous() for i, g in enumerate(groups)}
        return q, k, v


# ---------------------------------------------------------------- captured tensors
@dataclass(frozen=True)
class TensorLayer(_Sequences):
    """A layer's captured queries, keys and values, as CPU float32 numpy.

    ``q`` ``[H, T_q, D]``; ``k`` ``[H_kv, T_k, D]``, ``v`` ``[H_kv, T_k, D_v]`` (after any position
    encoding, before ``repeat_kv``; values may be narrower or wider than keys, as in MLA); ``scale`` the factor the layer applies to q·k;
    ``mask_kind`` ``none``, ``causal`` or ``padding`` (keys from ``pad_len`` on hidden);
    ``use_scaling`` and ``temperature`` say what ``scale`` holds (1/√d_k, ÷ τ); ``limits`` (window,
    sinks, recent) narrow the mask further (a pretrained model's sliding-window layer, an evicted cache:
    :func:`attn_core.attention.masks.limit_keys`).
    """

    q: np.ndarray = field(repr=False)
    k: np.ndarray = field(repr=False)
    v: np.ndarray = field(repr=False)
    scale: float
    tokens_q: tuple[str, ...]
    tokens_k: tuple[str, ...] | None = None
    mask_kind: str = "none"
    pad_len: int | None = None
    use_scaling: bool = True
    temperature: float = 1.0
    limits: KeyLimits = (None, 0, None)

    def __post_init__(self) -> None:
        put = object.__setattr__
        for name in ("q", "k", "v"):
            put(self, name, np.ascontiguousarray(getattr(self, name), dtype=np.float32))
        put(self, "tokens_q", tuple(self.tokens_q))
        if self.tokens_k is not None:
            put(self, "tokens_k", tuple(self.tokens_k))
        if (
            self.q.ndim != 3
            or self.k.shape[:2] != self.v.shape[:2]
            or self.k.ndim != 3
            or self.v.ndim != 3
            or self.q.shape[2] != self.k.shape[2]
        ):
            raise ValueError(
                f"q [H, T_q, D], k [H_kv, T_k, D] and v [H_kv, T_k, D_v] expected, got {self.q.shape}, {self.k.shape}"
            )
        check_kv_heads(self.q.shape[0], self.k.shape[0])
        if self.q.shape[1] != len(self.tokens_q) or self.k.shape[1] != len(self.keys):
            raise ValueError(
                f"{self.q.shape[1]} queries, {self.k.shape[1]} keys for {len(self.tokens_q)}, {len(self.keys)} tokens"
            )
        if self.mask_kind not in MASK_KINDS:
            raise ValueError(f"mask {self.mask_kind!r} is not one of {MASK_KINDS}")
        if self.mask_kind == "padding":
            put(self, "pad_len", check_int("pad_len", self.pad_len, 1, len(self.keys)))

    @property
    def n_heads(self) -> int:
        return int(self.q.shape[0])

    @property
    def n_kv_heads(self) -> int:
        return int(self.k.shape[0])

    @property
    def head_dim(self) -> int:
        return int(self.q.shape[2])

    def extra_bytes(self, n_shown: int) -> int:
        """Bytes of the copies :meth:`qkv` makes: Q of the shown heads, K and V of their KV heads."""
        groups = min(self.n_kv_heads, n_shown)
        return 4 * (n_shown * self.q.shape[1] + 2 * groups * self.k.shape[1]) * self.head_dim

    def qkv(self, heads: Sequence[int], device: torch.device, values: bool = False) -> QKV:
        groups = sorted({group_of(h, self.n_heads, self.n_kv_heads) for h in heads})
        q = torch.from_numpy(self.q[list(heads)]).to(device)  # (Hs, Tq, D)
        k = {g: torch.from_numpy(self.k[g]).to(device) for g in groups}  # (Tk, D) each
        v = {g: torch.from_numpy(self.v[g]).to(device) for g in groups} if values else {}
        return q, k, v
