"""Softmax statistics that need no sampling: per-row entropy, largest weight, saturation, the softmax Jacobian
and its norm, float16 softmax and its failures, and one row through softmax for the page's views.

Large scores push softmax into saturation (one weight near 1, the rest near 0), where its Jacobian
diag(p) - p pᵀ nearly vanishes. Everything here is plain torch; the functions meant for the UI return CPU
float32 numpy or small dataclasses.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from attn_core.runtime.config import FLOAT16_MAX, SATURATION_THRESHOLD, check_temperature

# Per-row norms the sweep measures: (column prefix, what is measured). The sweep reports each one's mean over the
# measured rows (``<prefix>``), median (``<prefix>_median``) and share of rows below SMALL_NORM (``<prefix>_small``).
ROW_NORMS = ("jacobian_norm", "grad_norm", "grad_q_norm")


# ---------------------------------------------------------------- row statistics
def row_entropy(weights: torch.Tensor, normalized: bool = True, mask: torch.Tensor | None = None) -> torch.Tensor:
    """Entropy of each row of attention weights, in nats.

    weights ``[..., T]`` (rows sum to 1); mask bool broadcastable to it (False =
    masked key; default: every key allowed). Returns ``[...]``. With
    ``normalized`` the entropy is divided by log(number of allowed keys), so 1
    means spread evenly and 0 all on one key; a row with one or no allowed key
    has normalized entropy 0. ``0·log 0`` counts as 0.
    """
    p = torch.as_tensor(weights)
    p = p if p.is_floating_point() else p.float()
    # p·log p with log's argument clamped to the smallest normal number: 0 stays 0, and below that
    # p·(log p - log tiny) is under 1e-36 (the same as where(p > 0, p log p, 0), at a third of the cost)
    ent = -(p * torch.log(p.clamp_min(torch.finfo(p.dtype).tiny))).sum(-1)  # (...)
    if not normalized:
        return ent
    if mask is None:
        n = torch.full_like(ent, float(p.shape[-1]))
    else:
        n = torch.as_tensor(mask, device=p.device).bool().expand_as(p).sum(-1).to(ent.dtype)  # (...)
    denom = torch.where(n > 1, torch.log(n.clamp_min(2.0)), torch.ones_like(n))
    return torch.where(n > 1, ent / denom, torch.zeros_like(ent))


def max_weight(weights: torch.Tensor) -> torch.Tensor:
    """The largest weight of each row: ``[..., T] -> [...]``."""
    return torch.as_tensor(weights).float().amax(dim=-1)


def saturated_fraction(weights: torch.Tensor, threshold: float = SATURATION_THRESHOLD) -> float:
    """Fraction of rows of ``weights`` ``[..., T]`` whose largest weight exceeds ``threshold``."""
    m = max_weight(weights)
    return float((m > threshold).float().mean()) if m.numel() else 0.0


def softmax_jacobian(p: torch.Tensor) -> torch.Tensor:
    """Jacobian of softmax at output ``p``: ``[..., T] -> [..., T, T]``, ``J = diag(p) - p pᵀ``.

    ``J[..., i, j] = ∂p_i/∂z_j = p_i (δ_ij - p_j)``. It is symmetric, its rows sum to
    0, and every entry tends to 0 as one weight tends to 1 (saturation). Keeps a
    floating dtype (float64 stays float64); anything else becomes float32.
    """
    p = torch.as_tensor(p)
    p = p if p.is_floating_point() else p.float()
    return torch.diag_embed(p) - p[..., :, None] * p[..., None, :]  # (..., T, T)


def jacobian_norm(p: torch.Tensor) -> torch.Tensor:
    """Frobenius norm of the softmax Jacobian of each row: ``[..., T] -> [...]`` (p's floating dtype).

    Row i of J = diag(p) - p pᵀ has squared norm p_i² ((1 - p_i)² + Σ_{j≠i} p_j²),
    so no ``[T, T]`` matrix is built. For the largest weight p_m, 1 - p_m and
    q = Σ_{j≠m} p_j² are summed from the other weights o_j (nothing cancels, even
    when p_m is within 1e-10 of 1: the tests compare with :func:`softmax_jacobian`).
    The other rows add up to Σ_{i≠m} o_i² (1 - 2 o_i + q + p_m²) = q (1 + q + p_m²)
    - 2 Σ o_i³: every o_i ≤ min(p_m, 1 - p_m), so the subtracted part is at most
    5/6 of the first (float32 keeps ~1e-6 relative) and the whole is three sums of
    non-negative terms (torch sums them by cascade, ~1e-7 relative).
    """
    return jacobian_norm_and_top(p)[0]


def jacobian_norm_and_top(p: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`jacobian_norm` of ``p`` ``[..., T]`` and, found on the way, :func:`max_weight`: two ``[...]``."""
    p = torch.as_tensor(p)
    p = p if p.is_floating_point() else p.float()
    pm, m = p.max(dim=-1, keepdim=True)  # (..., 1) the largest weight and where it is
    o = p.scatter(-1, m, 0.0)  # (..., T) the other weights, 0 at m
    o2 = o * o
    q = o2.sum(-1, keepdim=True)  # Σ_{j≠m} p_j²
    rest = o.sum(-1, keepdim=True)  # Σ_{j≠m} p_j = 1 - p_m
    cubes = (o2 * o).sum(-1, keepdim=True)  # Σ_{j≠m} p_j³
    pm2, q, rest, cubes = pm.double() ** 2, q.double(), rest.double(), cubes.double()
    total = q * (1.0 + q + pm2) - 2.0 * cubes + pm2 * (rest**2 + q)  # rows i ≠ m, then row m
    return total.squeeze(-1).clamp_min(0.0).sqrt().to(p.dtype), pm.squeeze(-1)


# ---------------------------------------------------------------- float16 numerics
def naive_softmax_fp16(z: torch.Tensor) -> torch.Tensor:
    """``exp(z) / Σ exp(z)`` in float16 with no max subtraction: ``[..., T] -> [..., T]`` float16.

    ``exp`` overflows to inf above ln 65504 ≈ 11.09, and then inf/inf gives NaN.
    """
    e = torch.exp(z.to(torch.float16))
    return e / e.sum(dim=-1, keepdim=True)


def stable_softmax_fp16(z: torch.Tensor) -> torch.Tensor:
    """Softmax in float16 after subtracting each row's max (every exp is then ≤ 1): ``[..., T]``."""
    h = z.to(torch.float16)
    e = torch.exp(h - h.amax(dim=-1, keepdim=True))
    return e / e.sum(dim=-1, keepdim=True)


def invalid_rows(w: torch.Tensor, atol: float = 1e-2) -> torch.Tensor:
    """Bool ``[...]``: rows of ``w`` ``[..., T]`` that are not a distribution (inf/NaN, or sum off 1 by > atol).

    One float32 sum per row decides both: it is inf or NaN exactly when some entry
    is (finite float16 or softmax entries cannot add up to inf).
    """
    sums = w.sum(dim=-1, dtype=torch.float32)
    return ~torch.isfinite(sums) | ((sums - 1.0).abs() > atol)


# A row whose largest float32 score lies in [FP16_SAFE_LO, ln(65504 / T) - 1] cannot fail in float16 without
# the max subtracted, and one whose largest score is finite and within ±FP16_STABLE_SAFE cannot fail with it
# (see :func:`fp16_failures`); only the other rows go through float16.
FP16_SAFE_LO = -8.0
FP16_STABLE_SAFE = 6.0e4


def fp16_failures(z: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """How many rows of z ``[m, R, T]`` (float32) :func:`invalid_rows` finds after :func:`naive_softmax_fp16`
    and after :func:`stable_softmax_fp16`: two float64 ``[m]``, the same counts as running both on every row.

    Only rows that can fail are run. Without the max subtracted, a row whose largest score z_max (rounded
    to float16 by at most 0.05 %) lies in [-8, ln(65504 / T) - 1] has a normal largest exp ≥ e^-8 and a sum
    ≤ 65504 / e, so nothing overflows or divides by 0, and each weight and the sum are rounded once
    (relative 2⁻¹¹, absolute 2⁻²⁵ for subnormal weights): the weights add up to 1 within 2⁻¹⁰ + T·2⁻²⁵
    < 1e-2 for T ≤ 8192. With the max subtracted, a finite z_max within ±6·10⁴ stays finite in float16
    (the largest is 65504), every exp is ≤ 1 and the largest is exactly 1, so the same bound holds. The
    tests compare these counts with both softmaxes run on every row, across every regime.
    """
    m, t = z.shape[0], z.shape[-1]
    top = z.amax(dim=-1)  # (m, R)
    finite = torch.isfinite(top)
    naive = ~finite | (top < FP16_SAFE_LO) | (top > math.log(FLOAT16_MAX / t) - 1.0)
    stable = ~finite | (top.abs() > FP16_STABLE_SAFE)
    out = []
    for risky, softmax in ((naive, naive_softmax_fp16), (stable, stable_softmax_fp16)):
        counts = torch.zeros(m, dtype=torch.float64, device=z.device)
        if bool(risky.any()):
            pair, row = risky.nonzero(as_tuple=True)
            bad = invalid_rows(softmax(z[pair, row])).double()  # (risky rows,)
            counts.index_add_(0, pair, bad)
        out.append(counts)
    return out[0], out[1]


# ---------------------------------------------------------------- moments over chunks
class Moments:
    """Count, mean and sum of squared deviations of every value seen, merged chunk by chunk in float64."""

    def __init__(self) -> None:
        self.n, self.mean, self.m2 = 0, 0.0, 0.0

    def add(self, x: torch.Tensor) -> None:
        n_b = x.numel()
        if n_b == 0:
            return
        mean_b = float(x.sum()) / n_b  # torch sums by cascade: ~1e-7 relative, even in float32
        d = x - mean_b  # two passes per chunk
        m2_b = float((d * d).sum())
        del d
        n = self.n + n_b
        delta = mean_b - self.mean
        self.mean += delta * n_b / n
        self.m2 += m2_b + delta * delta * self.n * n_b / n
        self.n = n

    @property
    def var(self) -> float:
        return self.m2 / self.n if self.n else float("nan")


# ---------------------------------------------------------------- one row, for the page's views
def softmax_weights(scores: np.ndarray, factor: float) -> np.ndarray:
    """softmax(scores · factor) over the last axis, float32 numpy ``[..., T] -> [..., T]`` (computed in float64)."""
    z = torch.as_tensor(np.asarray(scores), dtype=torch.float64) * float(factor)
    return torch.softmax(z, dim=-1).float().numpy()


@dataclass(frozen=True)
class RowSoftmax:
    """One query row through softmax, CPU float32 numpy.

    ``z`` ``[T]`` the scores softmax receives (q·k · scale / τ); ``p`` ``[T]`` the
    weights; ``keys`` ``[K]`` the key positions whose Jacobian is kept (all of them
    up to ``max_keys``, else the ``max_keys`` largest weights, in key order);
    ``jacobian`` ``[K, K]`` = (diag(p) - p pᵀ) on those keys; ``jacobian_norm`` the
    Frobenius norm of the whole ``[T, T]`` Jacobian; ``max_weight``, ``entropy``
    (normalized).
    """

    z: np.ndarray
    p: np.ndarray
    keys: np.ndarray
    jacobian: np.ndarray
    jacobian_norm: float
    max_weight: float
    entropy: float


def row_softmax(raw_row: np.ndarray, scale: float, temperature: float = 1.0, max_keys: int = 32) -> RowSoftmax:
    """softmax(raw_row · scale / τ) and its Jacobian for one row of raw q·k ``[T]`` (memory ~ max_keys², not T²)."""
    check_temperature(temperature)
    z = torch.as_tensor(np.asarray(raw_row), dtype=torch.float64) * (float(scale) / float(temperature))  # (T,)
    p = torch.softmax(z, dim=-1)  # (T,)
    t = p.shape[0]
    if t > max_keys:
        keys = np.sort(np.argsort(-p.numpy(), kind="stable")[:max_keys])
    else:
        keys = np.arange(t)
    jac = softmax_jacobian(p[torch.from_numpy(keys)])  # (K, K): diag(p) - p pᵀ restricted to the kept keys
    return RowSoftmax(
        z=z.float().numpy(),
        p=p.float().numpy(),
        keys=keys,
        jacobian=jac.float().numpy(),
        jacobian_norm=float(jacobian_norm(p)),
        max_weight=float(p.max()),
        entropy=float(row_entropy(p[None])[0]),
    )


@dataclass(frozen=True)
class Float16Demo:
    """One row of unscaled scores through softmax in float16, CPU float32 numpy ``[T]`` (inf/NaN kept).

    ``scores16``: the scores rounded to float16; ``exp_naive``: exp of them in
    float16 (inf above ≈ 11.09); ``sum_naive``: their float16 sum; ``naive``:
    exp / sum; ``stable``: float16 softmax after subtracting the row max;
    ``reference``: float64 softmax of the same scores.
    """

    scores16: np.ndarray
    exp_naive: np.ndarray
    sum_naive: float
    naive: np.ndarray
    stable: np.ndarray
    reference: np.ndarray
    naive_ok: bool
    stable_ok: bool


def float16_demo(scores: np.ndarray) -> Float16Demo:
    """Naive ``exp/Σexp`` against max-subtracted softmax, both in float16, for one row ``[T]``."""
    z = torch.as_tensor(np.asarray(scores), dtype=torch.float32)  # (T,)
    h = z.to(torch.float16)
    e = torch.exp(h)
    naive = naive_softmax_fp16(z)
    stable = stable_softmax_fp16(z)
    ref = torch.softmax(z.double(), dim=-1)
    return Float16Demo(
        scores16=h.float().numpy(),
        exp_naive=e.float().numpy(),
        sum_naive=float(e.sum()),
        naive=naive.float().numpy(),
        stable=stable.float().numpy(),
        reference=ref.float().numpy(),
        naive_ok=not bool(invalid_rows(naive)),
        stable_ok=not bool(invalid_rows(stable)),
    )
