"""Softmax statistics and the saturation sweep: what the 1/sqrt(d_k) scaling prevents, measured.

For q, k with independent zero-mean unit-variance entries, Var(q·k) = d_k.
Large scores push softmax into saturation (one weight near 1, the rest near 0),
where its Jacobian diag(p) - p pᵀ, and so the gradient, nearly vanishes.
Everything here is plain torch (CPU or CUDA inside); the functions meant for
the UI return CPU float32 numpy or a pandas DataFrame.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from .config import MAX_HEAD_DIM, MAX_SEQ_LEN, ConfigError, check_int
from .guard import format_bytes, max_bytes
from .tokens import sinusoidal_positions

DISTRIBUTIONS = ("normal", "projected")
# d_k values of the sweep: 1, 2, 4, ..., 1024 (the page's log steps).
SWEEP_D_K = tuple(2**i for i in range(11))
# Width of the token embeddings that the "projected" distribution projects to q and k.
PROJECTED_D_MODEL = 512
SATURATION_THRESHOLD = 0.99
FLOAT16_MAX = float(torch.finfo(torch.float16).max)  # 65504
# Same memory model as estimate_bytes: per score, float32 scores, logits, weights,
# loss weights, gradient and autograd's saved weights, two float16 softmax paths
# and a float64 copy for the variance (12 float32 slots in all).
_SCORE_SLOTS = 12
_SWEEP_COLUMNS = (
    "d_k", "scaled", "score_var", "max_weight", "entropy", "saturated_frac", "jacobian_norm", "grad_norm",
    "fp16_naive_fail", "fp16_stable_fail",
)  # fmt: skip


# ---------------------------------------------------------------- row statistics
def row_entropy(weights: torch.Tensor, normalized: bool = True, mask: torch.Tensor | None = None) -> torch.Tensor:
    """Entropy of each row of attention weights, in nats.

    weights ``[..., T]`` (rows sum to 1); mask bool broadcastable to it (False =
    masked key; default: every key allowed). Returns ``[...]``. With
    ``normalized`` the entropy is divided by log(number of allowed keys), so 1
    means spread evenly and 0 all on one key; a row with one or no allowed key
    has normalized entropy 0. ``0·log 0`` counts as 0.
    """
    p = torch.as_tensor(weights).float()
    ent = -torch.where(p > 0, p * torch.log(p), torch.zeros_like(p)).sum(-1)  # (...)
    if not normalized:
        return ent
    if mask is None:
        n = torch.full_like(ent, float(p.shape[-1]))
    else:
        n = torch.as_tensor(mask, device=p.device).bool().expand_as(p).sum(-1).float()  # (...)
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
    """Frobenius norm of the softmax Jacobian of each row: ``[..., T] -> [...]``.

    Uses ``‖diag(p) - p pᵀ‖²_F = Σp² - 2Σp³ + (Σp²)²`` so no ``[T, T]`` matrix is
    built per row (the tests compare it with :func:`softmax_jacobian`).
    """
    p = torch.as_tensor(p).double()
    s2 = (p * p).sum(-1)
    s3 = (p * p * p).sum(-1)
    return (s2 - 2.0 * s3 + s2 * s2).clamp_min(0.0).sqrt().float()


# ---------------------------------------------------------------- validation and memory
def _check_common(seq_len: int, n_samples: int, seed: int, distribution: str, temperature: float) -> None:
    check_int("seq_len", seq_len, 1, MAX_SEQ_LEN)
    check_int("samples", n_samples, 1)
    check_int("seed", seed, 0, 2**31 - 1)
    if distribution not in DISTRIBUTIONS:
        raise ConfigError(
            f"distribution '{distribution}' is not known; use one of: {', '.join(DISTRIBUTIONS)}", "distribution"
        )
    if isinstance(temperature, bool) or not (
        isinstance(temperature, (int, float)) and math.isfinite(temperature) and temperature > 0
    ):
        raise ConfigError(f"temperature must be a positive number, got {temperature!r}", "temperature")


def check_d_k(d_k: object) -> int:
    """``d_k`` as an int from 1 to 1024, or :class:`ConfigError` naming ``d_k``."""
    return check_int("d_k", d_k, 1, MAX_HEAD_DIM)


def estimate_bytes(d_k: int, seq_len: int, n_samples: int, distribution: str = "normal") -> int:
    """Peak memory, in bytes, of sampling and measuring one ``d_k`` (an upper-bound estimate).

    q and k ``[N, T, d_k]`` float32, about 12 float32 tensors ``[N, T, T]`` of
    scores, weights, gradients and their float16/float64 copies, and for
    ``projected`` the embeddings ``[N, T, 512]`` (twice, while positions are
    added) and the two ``[512, d_k]`` projections.
    """
    n, t, d = int(n_samples), int(seq_len), int(d_k)
    total = 4 * (2 * n * t * d + _SCORE_SLOTS * n * t * t)
    if distribution == "projected":
        total += 4 * (2 * n * t * PROJECTED_D_MODEL + 2 * PROJECTED_D_MODEL * d)
    return total


def check_memory(d_k: int, seq_len: int, n_samples: int, distribution: str = "normal", what: str = "") -> int:
    """Return the estimate of :func:`estimate_bytes`, or raise ConfigError if it exceeds :func:`max_bytes`.

    The message (prefixed by ``what`` when given) names the samples field and the
    largest sample count that fits.
    """
    need = estimate_bytes(d_k, seq_len, n_samples, distribution)
    budget = max_bytes()
    if need > budget:
        per_sample = estimate_bytes(d_k, seq_len, 1, distribution)
        fits = max(0, budget // per_sample)
        fix = f"use at most {fits} samples, or fewer keys" if fits >= 1 else "use fewer keys or a smaller d_k"
        raise ConfigError(
            (f"{what}: " if what else "")
            + f"samples ({n_samples}) × keys ({seq_len}) at d_k = {d_k} need about {format_bytes(need)} of memory, "
            f"more than the budget of {format_bytes(budget)} (set by ATTN_MAX_BYTES); {fix}",
            "samples",
            "budget",
            need=format_bytes(need),
            budget=format_bytes(budget),
            reduce="samples / seq_len",
        )
    return need


# ---------------------------------------------------------------- sampling
def _seed(*parts: object) -> int:
    digest = hashlib.blake2b("\x00".join(map(str, parts)).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") & (2**63 - 1)


def sample_qk(
    d_k: int,
    seq_len: int,
    n_samples: int,
    seed: int = 0,
    distribution: str = "normal",
    device: torch.device | str = "cpu",
) -> tuple[torch.Tensor, torch.Tensor]:
    """Queries and keys for ``n_samples`` independent sequences of ``seq_len`` tokens.

    Returns q, k float32 ``[N, T, d_k]`` on ``device``. ``normal``: independent
    N(0, 1) entries. ``projected``: as on the heatmap page, token embeddings
    (N(0, 1) plus sinusoidal positions, unit variance, width 512) times two
    random projections with N(0, 1/512) entries, one pair per seed and d_k (one
    layer). Drawn on the CPU from a generator seeded by (seed, d_k, distribution),
    so every device sees the same numbers. Checks the memory budget first.
    """
    d_k = check_d_k(d_k)
    _check_common(seq_len, n_samples, seed, distribution, 1.0)
    check_memory(d_k, seq_len, n_samples, distribution)
    g = torch.Generator().manual_seed(_seed("qk", seed, d_k, distribution))
    n, t = n_samples, seq_len
    if distribution == "normal":
        q = torch.randn(n, t, d_k, generator=g)  # (N, T, d_k)
        k = torch.randn(n, t, d_k, generator=g)  # (N, T, d_k)
    else:
        m = PROJECTED_D_MODEL
        x = torch.randn(n, t, m, generator=g)  # (N, T, m)
        # Same mixing as tokens.embed: positions (variance 1/2) weighted by sqrt 2, sum / sqrt 2.
        x = (x + sinusoidal_positions(t, m) * math.sqrt(2.0)) / math.sqrt(2.0)
        w_q = torch.randn(m, d_k, generator=g) / math.sqrt(m)  # (m, d_k)
        w_k = torch.randn(m, d_k, generator=g) / math.sqrt(m)  # (m, d_k)
        q, k = x @ w_q, x @ w_k  # (N, T, d_k) each
        del x
    return q.to(device), k.to(device)


def downstream_weights(seq_len: int, n_samples: int, seed: int = 0, device: torch.device | str = "cpu") -> torch.Tensor:
    """The fixed downstream loss ``L = Σ p · G``: G float32 ``[N, T, T]`` with N(0, 1) entries.

    G stands in for the gradient arriving from the layers above. It depends on
    the seed and the shape only, never on d_k or the scaling, so every point of
    the sweep backpropagates the same loss.
    """
    g = torch.Generator().manual_seed(_seed("loss", seed, seq_len, n_samples))
    return torch.randn(n_samples, seq_len, seq_len, generator=g).to(device)


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
    """Bool ``[...]``: rows of ``w`` ``[..., T]`` that are not a distribution (inf/NaN, or sum off 1 by > atol)."""
    w = w.float()
    finite = torch.isfinite(w).all(dim=-1)
    sums = torch.where(torch.isfinite(w), w, torch.zeros_like(w)).sum(dim=-1)
    return ~finite | ((sums - 1.0).abs() > atol)


# ---------------------------------------------------------------- the sweep
def _measure(s: torch.Tensor, factor: float, temperature: float, loss_g: torch.Tensor) -> dict[str, float]:
    """Statistics of softmax(s · factor / τ) for raw scores ``s`` ``[N, T, T]``."""
    z = (s * (factor / temperature)).detach().requires_grad_(True)  # (N, T, T) softmax input
    p = torch.softmax(z, dim=-1)
    (grad,) = torch.autograd.grad((p * loss_g).sum(), z)  # (N, T, T) = J·G row by row
    p = p.detach()
    zs = z.detach()
    return {
        "score_var": float((s * factor).double().var(unbiased=False)),
        "max_weight": float(max_weight(p).mean()),
        "entropy": float(row_entropy(p).mean()),
        "saturated_frac": saturated_fraction(p),
        "jacobian_norm": float(jacobian_norm(p).mean()),
        "grad_norm": float(grad.norm(dim=-1).mean()),
        "fp16_naive_fail": float(invalid_rows(naive_softmax_fp16(zs)).float().mean()),
        "fp16_stable_fail": float(invalid_rows(stable_softmax_fp16(zs)).float().mean()),
    }


def saturation_sweep(
    d_k_values: tuple[int, ...] | list[int] = SWEEP_D_K,
    seq_len: int = 16,
    n_samples: int = 256,
    seed: int = 0,
    device: torch.device | str = "cpu",
    distribution: str = "normal",
    temperature: float = 1.0,
) -> pd.DataFrame:
    """Softmax saturation against d_k, with and without the 1/sqrt(d_k) scaling.

    For each d_k, ``n_samples`` sequences of ``seq_len`` queries and keys
    (:func:`sample_qk`) give raw scores s = q·k ``[N, T, T]``; softmax runs on
    z = s · c / τ with c = 1/sqrt(d_k) (scaled) or 1 (unscaled). One row per
    (d_k, scaled) with columns:

    - ``score_var``: measured Var(s · c) over all N·T² scores (theory: d_k unscaled, 1 scaled; τ not included);
    - ``max_weight``, ``entropy`` (normalized), ``saturated_frac`` (rows with a weight > 0.99): over all N·T rows;
    - ``jacobian_norm``: mean Frobenius norm of each row's softmax Jacobian;
    - ``grad_norm``: mean per-row norm of ∂L/∂z measured by torch autograd, for the
      fixed loss L = Σ p·G of :func:`downstream_weights`, where z is the q·k score
      as softmax receives it (the raw q·k itself when unscaled and τ = 1). It equals
      ‖J G_row‖ per row. The gradient that reaches the queries is
      ∂L/∂q_i = c Σ_j (∂L/∂z_ij) k_j, and ‖k_j‖ ≈ sqrt(d_k) cancels c = 1/sqrt(d_k),
      so this norm is the one that decides whether W_Q and W_K still learn;
    - ``fp16_naive_fail`` / ``fp16_stable_fail``: fraction of rows where softmax in
      float16 without / with the row max subtracted is not a valid distribution.

    Raises :class:`ConfigError` for a bad argument or when the largest d_k would
    exceed the memory budget (checked before anything is allocated).
    """
    values = [check_d_k(d) for d in d_k_values]
    if not values:
        raise ConfigError("d_k_values is empty; give at least one d_k from 1 to 1024", "d_k")
    _check_common(seq_len, n_samples, seed, distribution, temperature)
    check_memory(max(values), seq_len, n_samples, distribution, f"the sweep over d_k = {min(values)}…{max(values)}")
    dev = torch.device(device)
    loss_g = downstream_weights(seq_len, n_samples, seed, dev)  # (N, T, T)
    rows = []
    for d in values:
        q, k = sample_qk(d, seq_len, n_samples, seed, distribution, dev)  # (N, T, d) each
        s = q @ k.transpose(-2, -1)  # (N, T, T) raw q·k
        del q, k
        for scaled in (False, True):
            factor = 1.0 / math.sqrt(d) if scaled else 1.0
            rows.append({"d_k": d, "scaled": scaled, **_measure(s, factor, float(temperature), loss_g)})
        del s
    return pd.DataFrame(rows, columns=list(_SWEEP_COLUMNS))


# ---------------------------------------------------------------- one d_k, for the page's views
@dataclass(frozen=True)
class ScoreSample:
    """Scores at one d_k, as CPU float32 numpy.

    ``raw_var``/``scaled_var``: measured Var(q·k) and Var(q·k/sqrt(d_k)) over all
    ``n_scores`` = N·T² scores. ``raw_density``/``scaled_density`` ``[bins]`` are
    histogram densities (per unit of score) over ``raw_edges``/``scaled_edges``
    ``[bins + 1]``. ``example`` ``[T, T]`` holds the raw q·k of the first sequence
    (query rows, key columns).
    """

    d_k: int
    seq_len: int
    n_samples: int
    distribution: str
    n_scores: int
    raw_var: float
    scaled_var: float
    raw_density: np.ndarray
    raw_edges: np.ndarray
    scaled_density: np.ndarray
    scaled_edges: np.ndarray
    example: np.ndarray


def score_sample(
    d_k: int,
    seq_len: int = 16,
    n_samples: int = 256,
    seed: int = 0,
    device: torch.device | str = "cpu",
    distribution: str = "normal",
    bins: int = 60,
) -> ScoreSample:
    """Sample q, k at ``d_k`` exactly as :func:`saturation_sweep` does and summarise the scores.

    The measured ``raw_var`` equals the sweep's unscaled ``score_var`` at this d_k
    for the same arguments (same samples).
    """
    q, k = sample_qk(d_k, seq_len, n_samples, seed, distribution, device)
    s = (q @ k.transpose(-2, -1)).detach().to("cpu", torch.float32)  # (N, T, T)
    del q, k
    scale = 1.0 / math.sqrt(d_k)
    flat = s.reshape(-1).double().numpy()
    raw_var = float(s.double().var(unbiased=False))
    scaled_var = float((s * scale).double().var(unbiased=False))
    lim = float(np.max(np.abs(flat))) if flat.size else 1.0
    lim = lim if lim > 0 else 1.0
    raw_density, raw_edges = np.histogram(flat, bins=bins, range=(-lim, lim), density=True)
    scaled_density, scaled_edges = np.histogram(
        flat * scale, bins=bins, range=(-lim * scale, lim * scale), density=True
    )
    return ScoreSample(
        d_k=int(d_k),
        seq_len=int(seq_len),
        n_samples=int(n_samples),
        distribution=distribution,
        n_scores=int(flat.size),
        raw_var=raw_var,
        scaled_var=scaled_var,
        raw_density=raw_density.astype(np.float32),
        raw_edges=raw_edges.astype(np.float32),
        scaled_density=scaled_density.astype(np.float32),
        scaled_edges=scaled_edges.astype(np.float32),
        example=s[0].numpy().astype(np.float32),
    )


def softmax_weights(scores: np.ndarray, factor: float) -> np.ndarray:
    """softmax(scores · factor) over the last axis, float32 numpy ``[..., T] -> [..., T]`` (computed in float64)."""
    z = torch.as_tensor(np.asarray(scores), dtype=torch.float64) * float(factor)
    return torch.softmax(z, dim=-1).float().numpy()


@dataclass(frozen=True)
class RowSoftmax:
    """One query row through softmax, CPU float32 numpy.

    ``z`` ``[T]`` the scores softmax receives (q·k · scale / τ); ``p`` ``[T]`` the
    weights; ``jacobian`` ``[T, T]`` = diag(p) - p pᵀ; ``jacobian_norm`` its
    Frobenius norm; ``max_weight``, ``entropy`` (normalized).
    """

    z: np.ndarray
    p: np.ndarray
    jacobian: np.ndarray
    jacobian_norm: float
    max_weight: float
    entropy: float


def row_softmax(raw_row: np.ndarray, scale: float, temperature: float = 1.0) -> RowSoftmax:
    """softmax(raw_row · scale / τ) and its Jacobian for one row of raw q·k ``[T]``."""
    if not (math.isfinite(temperature) and temperature > 0):
        raise ConfigError(f"temperature must be a positive number, got {temperature!r}", "temperature")
    z = torch.as_tensor(np.asarray(raw_row), dtype=torch.float64) * (float(scale) / float(temperature))  # (T,)
    p = torch.softmax(z, dim=-1)  # (T,)
    jac = softmax_jacobian(p)  # (T, T)
    return RowSoftmax(
        z=z.float().numpy(),
        p=p.float().numpy(),
        jacobian=jac.float().numpy(),
        jacobian_norm=float(torch.linalg.matrix_norm(jac)),
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
