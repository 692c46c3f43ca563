"""Attention weights of long sequences, computed by chunks of query rows and pooled as they are made.

One head's weights at 8192 tokens are 8192² float32 = 256 MiB, and 64 heads 16 GiB: too much to
build, and far too much to draw. :func:`pooled_attention` takes any attention source (:mod:`attn_core.attention.sources`: the seeded
layer of :func:`attn_core.attention.maps.compute_attention_maps`, or captured tensors) and walks the query rows in chunks that fit a fixed
scratch budget and keeps only what is shown: every head's weights pooled to at most
``max_side × max_side`` blocks (block max or block mean) and, on request, every row's entropy.
:func:`head_window` gives one head's full computation (Q, K, V, scores, softmax, output) for a
window of rows and keys, with the softmax taken over all keys.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from attn_core.attention.sources import AttentionSource, group_of
from attn_core.runtime.config import ConfigError, check_int, unknown_option
from attn_core.runtime.guard import check_budget

REDUCES = ("max", "mean")
CHUNK_BYTES = 192 * 2**20  # scratch for one chunk of query rows (scores, weights and their temporaries)
_SLOTS = 4  # [heads, rows, keys] float32 tensors alive at once in a chunk
STEP_WINDOW = 64  # rows and keys of the step-by-step matrices
ZOOM_SIDE = 512  # cells per side of the one-head zoom: 512² float32 is about 1.4 MB of chart


@dataclass(frozen=True)
class PooledMaps:
    """Weights of some heads pooled into blocks, as CPU float32 numpy.

    ``weights`` ``[Hs, R, C]``: cell ``(i, j)`` of head ``heads[s]`` is the
    ``reduce`` (max or mean) of the weights of query rows ``q0 + i·f ..`` and keys
    ``k0 + j·f ..`` (``f = factor``, the last block may be smaller) over the cells
    the mask allows; NaN where the mask allows none. ``allowed`` bool ``[R, C]``.
    ``entropy`` ``[Hs, q1 - q0]`` normalised row entropy over all keys, or None.
    """

    weights: np.ndarray
    allowed: np.ndarray
    entropy: np.ndarray | None
    factor: int
    reduce: str
    heads: tuple[int, ...]
    n_heads: int
    n_kv_heads: int
    tokens_q: tuple[str, ...]
    tokens_k: tuple[str, ...]
    q_range: tuple[int, int]
    k_range: tuple[int, int]
    scale: float
    device: str

    @property
    def pooled(self) -> bool:
        return self.factor > 1

    def group_of(self, head: int) -> int:
        return head // (self.n_heads // self.n_kv_heads)


def pool_factor(t_q: int, t_k: int, max_side: int) -> int:
    """Block side ``f`` so that ``ceil(t/f) <= max_side`` for both lengths (1 = no pooling)."""
    return max(1, -(-max(t_q, t_k) // max(1, int(max_side))))


def _chunk_rows(n_heads: int, t_k: int) -> int:
    return max(1, CHUNK_BYTES // (_SLOTS * 4 * max(1, n_heads) * max(1, t_k)))


def estimate_pooled_bytes(source: AttentionSource, n_shown: int) -> int:
    """Peak bytes of :func:`pooled_attention` over ``n_shown`` heads of ``source`` (an upper bound).

    What the source needs to make Q, K and V (:meth:`~attn_core.attention.sources.SeededLayer.extra_bytes`),
    one chunk of rows and the entropy.
    """
    t_q, t_k = len(source.tokens_q), len(source.keys)
    rows = min(t_q, _chunk_rows(n_shown, t_k))
    return source.extra_bytes(n_shown) + 4 * (_SLOTS * n_shown * rows * t_k + n_shown * t_q)


def _pool_last(x: torch.Tensor, f: int, how: str) -> torch.Tensor:
    """Max or sum over blocks of ``f`` along the last dim: ``[..., W] -> [..., ceil(W/f)]``."""
    if f == 1:
        return x
    w = x.shape[-1]
    n_full = w // f
    parts = []
    if n_full:
        blocks = x[..., : n_full * f].reshape(*x.shape[:-1], n_full, f)
        parts.append(blocks.amax(-1) if how == "max" else blocks.sum(-1))
    if w % f:
        tail = x[..., n_full * f :]
        parts.append(tail.amax(-1, keepdim=True) if how == "max" else tail.sum(-1, keepdim=True))
    return torch.cat(parts, -1) if len(parts) > 1 else parts[0]


def _checked_request(
    source: AttentionSource, reduce: str, heads: Sequence[int] | None, window: tuple[int, int, int, int] | None
) -> tuple[tuple[int, ...], tuple[int, int, int, int]]:
    """The heads and the window asked of ``source``, checked (:class:`ConfigError` naming the field)."""
    if reduce not in REDUCES:
        raise unknown_option("pool", reduce, REDUCES)
    heads = tuple(range(source.n_heads)) if heads is None else tuple(int(h) for h in heads)
    if not heads:
        raise ConfigError("pick at least one head", "head", "no_heads")
    for h in heads:
        check_int("head", h, 0, source.n_heads - 1)
    t_q, t_k = len(source.tokens_q), len(source.keys)
    q0, q1, k0, k1 = window if window is not None else (0, t_q, 0, t_k)
    check_int("q_start", q0, 0, t_q - 1)
    check_int("q_end", q1, q0 + 1, t_q)
    check_int("k_start", k0, 0, t_k - 1)
    check_int("k_end", k1, k0 + 1, t_k)
    return heads, (q0, q1, k0, k1)


def _chunk_entropy(s: torch.Tensor, p: torch.Tensor, allowed: torch.Tensor) -> torch.Tensor:
    """Normalised entropy ``[Hs, c]`` of a chunk's rows from its scaled scores ``s`` and weights ``p`` ``[Hs, c, Tk]``.

    H(p) = lse - Σ_j p_j s_j, with lse = max_j s_j - log(max_j p_j) (both at the argmax); divided by
    log(allowed keys), 0 for a row with one allowed key. Overwrites the masked scores of ``s`` with 0.
    """
    lse = s.amax(-1) - torch.log(p.amax(-1))  # (Hs, c)
    s.masked_fill_(~allowed, 0.0)  # p is 0 there; avoids 0 * -inf
    ps = torch.einsum("hck,hck->hc", p, s)  # (Hs, c)
    n_ok = allowed.sum(-1).float()  # (c,)
    norm = torch.where(n_ok > 1, torch.log(n_ok.clamp_min(2.0)), torch.ones_like(n_ok))
    return torch.where(n_ok > 1, (lse - ps).clamp_min(0.0) / norm, 0.0)


@dataclass
class _Pooler:
    """Block maxima (or sums) of the weights of ``Hs`` heads over a window, filled a chunk of rows at a time."""

    acc: torch.Tensor  # (Hs, R, C): block max, or block sums
    count: torch.Tensor  # (R, C): allowed cells per block
    factor: int
    reduce: str
    q0: int
    k_range: tuple[int, int]

    @classmethod
    def new(cls, hs: int, window: tuple[int, int, int, int], factor: int, reduce: str, dev: torch.device) -> _Pooler:
        q0, q1, k0, k1 = window
        n_r, n_c = -(-(q1 - q0) // factor), -(-(k1 - k0) // factor)
        fill = float("-inf") if reduce == "max" else 0.0
        acc = torch.full((hs, n_r, n_c), fill, dtype=torch.float32, device=dev)
        return cls(acc, torch.zeros((n_r, n_c), dtype=torch.float32, device=dev), factor, reduce, q0, (k0, k1))

    def add(self, p: torch.Tensor, allowed: torch.Tensor, r0: int) -> None:
        """Add the weights ``p`` ``[Hs, c, Tk]`` of rows ``r0 ..`` (masked weights are exactly 0: a block's max
        is over its allowed cells, its mean the sum over the count of allowed cells)."""
        (k0, k1), f = self.k_range, self.factor
        hs, c = p.shape[:2]
        cols = _pool_last(p[..., k0:k1], f, "max" if self.reduce == "max" else "sum")  # (Hs, c, C)
        rows = torch.arange(r0, r0 + c, device=p.device)
        row_block = ((rows - self.q0) // f)[None, :, None].expand(hs, c, self.acc.shape[2])
        if self.reduce == "max":
            self.acc.scatter_reduce_(1, row_block, cols, "amax")
        else:
            self.acc.scatter_add_(1, row_block, cols)
        self.count.scatter_add_(0, row_block[0], _pool_last(allowed[:, k0:k1].float(), f, "sum"))

    def result(self) -> tuple[np.ndarray, np.ndarray]:
        """(weights ``[Hs, R, C]`` with NaN where a block has no allowed cell, allowed ``[R, C]``) as numpy."""
        has = self.count > 0
        acc = self.acc / self.count.clamp_min(1.0) if self.reduce == "mean" else self.acc
        acc = torch.where(has, acc, torch.tensor(float("nan"), device=acc.device))
        return acc.to("cpu", torch.float32).numpy(), has.cpu().numpy()


def pooled_attention(
    source: AttentionSource,
    *,
    max_side: int = 256,
    reduce: str = "max",
    heads: Sequence[int] | None = None,
    window: tuple[int, int, int, int] | None = None,
    entropy: bool = False,
    device: torch.device | str = "cpu",
) -> PooledMaps:
    """The weights of ``heads`` (default: all) of ``source``, pooled to at most ``max_side`` cells a side.

    ``window = (q0, q1, k0, k1)`` keeps query rows ``q0 .. q1-1`` and keys
    ``k0 .. k1-1`` (default: everything); the softmax is always over all keys.
    Only the window's rows are computed, a chunk at a time, so the memory stays at
    :func:`estimate_pooled_bytes` whatever the length; the full ``[H, Tq, Tk]``
    tensor is never built. ``reduce`` ``max`` or ``mean`` (over the allowed cells
    of each block). With ``entropy`` the rows' normalised entropy is returned too.
    """
    heads, (q0, q1, k0, k1) = _checked_request(source, reduce, heads, window)
    check_int("max_side", max_side, 1)
    t_q, t_k, d = len(source.tokens_q), len(source.keys), source.head_dim
    check_budget(
        estimate_pooled_bytes(source, len(heads)),
        f"{len(heads)} heads × {t_q} × {t_k} tokens at d_k = {d}",
        "use fewer tokens, fewer heads or a smaller d_k",
        "seq_len",
    )
    dev = torch.device(device)
    pool = _Pooler.new(len(heads), (q0, q1, k0, k1), pool_factor(q1 - q0, k1 - k0, max_side), reduce, dev)
    ent = torch.zeros((len(heads), q1 - q0), dtype=torch.float32, device=dev) if entropy else None
    # heads that read the same KV head are multiplied together: [m, c, D] -> [m*c, D] @ [D, Tk]
    by_group: dict[int, list[int]] = {}
    for i, h in enumerate(heads):
        by_group.setdefault(group_of(h, source.n_heads, source.n_kv_heads), []).append(i)
    step = _chunk_rows(len(heads), t_k)
    with torch.no_grad():
        q, k, _ = source.qkv(heads, dev)
        q.mul_(source.scale)  # scale once here instead of on every score
        k_t = {g: kg.T for g, kg in k.items()}  # (D, Tk) each
        for r0 in range(q0, q1, step):
            r1 = min(q1, r0 + step)
            s = torch.empty((len(heads), r1 - r0, t_k), dtype=torch.float32, device=dev)  # scaled scores
            for g, idx in by_group.items():
                if idx == list(range(idx[0], idx[0] + len(idx))):  # a run of heads: written in place, no copy
                    torch.matmul(q[idx[0] : idx[-1] + 1, r0:r1], k_t[g], out=s[idx[0] : idx[-1] + 1])
                else:
                    s[idx] = (q[idx, r0:r1].reshape(-1, d) @ k_t[g]).view(len(idx), r1 - r0, t_k)
            allowed = source.allowed(torch.arange(r0, r1, device=dev))  # (c, Tk)
            if not bool(allowed.all()):  # a pass over the scores saved when nothing is masked
                s.masked_fill_(~allowed, float("-inf"))
            p = torch.softmax(s, dim=-1)  # (Hs, c, Tk); every row has an allowed key
            if ent is not None:
                ent[:, r0 - q0 : r1 - q0] = _chunk_entropy(s, p, allowed)
            del s
            pool.add(p, allowed, r0)
            del p
    weights, allowed_blocks = pool.result()
    return PooledMaps(
        weights=weights,
        allowed=allowed_blocks,
        entropy=None if ent is None else ent.to("cpu", torch.float32).numpy(),
        factor=pool.factor,
        reduce=reduce,
        heads=heads,
        n_heads=source.n_heads,
        n_kv_heads=source.n_kv_heads,
        tokens_q=tuple(source.tokens_q),
        tokens_k=tuple(source.keys),
        q_range=(q0, q1),
        k_range=(k0, k1),
        scale=source.scale,
        device=str(dev),
    )


@dataclass(frozen=True)
class HeadWindow:
    """One head's computation for query rows ``q0 ..`` and keys ``k0 ..``, as CPU float32 numpy.

    ``q`` ``[W, D]``; ``k``, ``v`` ``[Wk, D]`` (its KV head ``group``); ``raw_scores``
    (q·k), ``scaled_scores`` (× scale/τ) and ``weights`` ``[W, Wk]``, where the
    softmax ran over all ``t_k`` keys, so a row of the window sums to its
    ``row_mass`` (1 when the window holds every key); ``head_output`` ``[W, D]``
    (all keys); ``mask`` bool ``[W, Wk]`` (True = may attend). ``scale`` is the
    factor applied, from ``use_scaling`` (1/√d_k or 1) and ``temperature`` (÷ τ);
    ``cross``: the keys come from a second sequence (cross-attention).
    """

    head: int
    group: int
    q0: int
    k0: int
    t_q: int
    t_k: int
    tokens_q: tuple[str, ...]
    tokens_k: tuple[str, ...]
    q: np.ndarray
    k: np.ndarray
    v: np.ndarray
    raw_scores: np.ndarray
    scaled_scores: np.ndarray
    weights: np.ndarray
    head_output: np.ndarray
    mask: np.ndarray
    row_mass: np.ndarray
    scale: float
    device: str
    use_scaling: bool = True
    temperature: float = 1.0
    cross: bool = False

    @property
    def complete(self) -> bool:
        """True when the window holds the whole sequence (every row and every key)."""
        return len(self.tokens_q) == self.t_q and len(self.tokens_k) == self.t_k


def head_window(
    source: AttentionSource,
    *,
    head: int = 0,
    q_start: int = 0,
    k_start: int = 0,
    size: int = STEP_WINDOW,
    device: torch.device | str = "cpu",
) -> HeadWindow:
    """Head ``head``'s Q, K, V, scores, weights and output for at most ``size`` rows and keys of ``source``.

    Rows ``q_start ..`` and keys ``k_start ..`` (clipped so the window stays
    inside the sequence). The scores of the window's rows are computed against
    every key, so the weights and the output are exactly the layer's.
    """
    n_heads, head_dim = source.n_heads, source.head_dim
    t_q, t_k, scale = len(source.tokens_q), len(source.keys), source.scale
    check_int("head", head, 0, n_heads - 1)
    size = check_int("size", size, 1)
    q0 = min(check_int("q_start", q_start, 0), max(0, t_q - size))
    k0 = min(check_int("k_start", k_start, 0), max(0, t_k - size))
    q1, k1 = min(t_q, q0 + size), min(t_k, k0 + size)
    check_budget(
        estimate_pooled_bytes(source, 1),
        f"one head × {t_q} × {t_k} tokens at d_k = {head_dim}",
        "use fewer tokens or a smaller d_k",
        "seq_len",
    )
    dev = torch.device(device)
    group = group_of(head, n_heads, source.n_kv_heads)
    with torch.no_grad():
        q, k, v = source.qkv([head], dev, values=True)
        qw = q[0, q0:q1]  # (W, D)
        raw = qw @ k[group].T  # (W, Tk)
        allowed = source.allowed(torch.arange(q0, q1, device=dev))  # (W, Tk)
        p = torch.softmax((raw * scale).masked_fill(~allowed, float("-inf")), dim=-1)  # (W, Tk)
        out = p @ v[group]  # (W, D)

    def np32(t: torch.Tensor) -> np.ndarray:
        return t.to("cpu", torch.float32).numpy()

    w = p[:, k0:k1]
    return HeadWindow(
        head=head,
        group=group,
        q0=q0,
        k0=k0,
        t_q=t_q,
        t_k=t_k,
        tokens_q=tuple(source.tokens_q[q0:q1]),
        tokens_k=tuple(source.keys[k0:k1]),
        q=np32(qw),
        k=np32(k[group][k0:k1]),
        v=np32(v[group][k0:k1]),
        raw_scores=np32(raw[:, k0:k1]),
        scaled_scores=np32(raw[:, k0:k1] * scale),
        weights=np32(w),
        head_output=np32(out),
        mask=allowed[:, k0:k1].cpu().numpy(),
        row_mass=np32(w.sum(-1)),
        scale=scale,
        device=str(dev),
        use_scaling=bool(source.use_scaling),
        temperature=float(source.temperature),
        cross=source.cross,
    )
