"""Softmax statistics and the saturation sweep: what the 1/sqrt(d_k) scaling prevents, measured.

For q, k with independent zero-mean unit-variance entries, Var(q·k) = d_k.
Large scores push softmax into saturation (one weight near 1, the rest near 0),
where its Jacobian diag(p) - p pᵀ nearly vanishes: the gradient of most rows
vanishes while a few rows keep a large one, so the sweep reports each gradient's
median and share of tiny rows beside its mean.
Everything here is plain torch (CPU or CUDA inside); the functions meant for
the UI return CPU float32 numpy, small dataclasses or a pandas DataFrame.

Time and memory stay bounded at every setting the page offers (up to 8192 keys
and 16384 samples): sequences are drawn in blocks, scores are measured by chunks
of query rows, and at most :data:`MAX_MEASURED_ROWS` query rows (and
:data:`MAX_MEASURED_SCORES` scores) are measured per d_k. :func:`row_plan` says
which rows; every result carries how many rows it measured, so the page can say so.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from attn_core.attention.tokens import sinusoidal_positions
from attn_core.runtime.config import (  # noqa: F401 - SATURATION_THRESHOLD, SMALL_NORM and FLOAT16_MAX are this module's names too
    FLOAT16_MAX,
    MAX_HEAD_DIM,
    MAX_SEQ_LEN,
    SATURATION_THRESHOLD,
    SMALL_NORM,
    ConfigError,
    check_int,
    check_temperature,
    unknown_option,
)
from attn_core.runtime.guard import format_bytes, max_bytes

DISTRIBUTIONS = ("normal", "projected")
# d_k values of the sweep: 1, 2, 4, ..., 1024 (the page's log steps).
SWEEP_D_K = tuple(2**i for i in range(11))
# Width of the token embeddings that the "projected" distribution projects to q and k.
PROJECTED_D_MODEL = 512
# Sequences are drawn in blocks of max(1, BLOCK_ROWS // T) sequences, each block from its own seeded
# generator, so that any block can be drawn alone and the numbers never depend on the memory budget.
BLOCK_ROWS = 4096
# Per d_k at most this many query rows, and at most this many scores (rows × keys), are measured.
MAX_MEASURED_ROWS = 2**16
MAX_MEASURED_SCORES = 2**23
# Scores measured at once (one chunk of query rows through softmax and autograd).
CHUNK_SCORES = 2**20
# Memory per score of a chunk, in float32 slots (an upper bound): scores, softmax input and output, the
# downstream weights, autograd's gradient and saved output and its temporaries, the deviations for the
# variance, the Jacobian norm's terms, and the float16 softmax paths.
_SCORE_SLOTS = 16
# Per score of the first sequence's maps: scores, a float64 input and output, float32 weights, pooling.
_MAP_SLOTS = 8
# SATURATION_THRESHOLD, SMALL_NORM (a row whose norm ‖J‖_F, ‖∂L/∂z‖ or ‖∂L/∂q‖ is below it counts as one whose
# gradient has vanished), FLOAT16_MAX and MAX_SEQ_LEN (the longest sequence measured) come from attn_core.runtime.config.
# Per-row norms of the sweep: (column prefix, what is measured). The sweep reports each one's mean over the
# measured rows (``<prefix>``), median (``<prefix>_median``) and share of rows below SMALL_NORM (``<prefix>_small``).
ROW_NORMS = ("jacobian_norm", "grad_norm", "grad_q_norm")
_SWEEP_COLUMNS = (
    "d_k",
    "scaled",
    "score_var",
    "max_weight",
    "entropy",
    "saturated_frac",
    "jacobian_norm",
    "grad_norm",
    "grad_q_norm",
    "jacobian_norm_median",
    "grad_norm_median",
    "grad_q_norm_median",
    "jacobian_norm_small",
    "grad_norm_small",
    "grad_q_norm_small",
    "fp16_naive_fail",
    "fp16_stable_fail",
    "measured_rows",
    "total_rows",
)


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
    return _jacobian_norm_and_top(p)[0]


def _jacobian_norm_and_top(p: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
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


# ---------------------------------------------------------------- which rows are measured
@dataclass(frozen=True)
class RowPlan:
    """Which query rows are sampled and measured for (seq_len, n_samples), the same at every d_k.

    All ``n_samples × seq_len`` query rows are measured when there are at most
    :data:`MAX_MEASURED_ROWS` of them and at most :data:`MAX_MEASURED_SCORES`
    scores. Otherwise the first ``sequences`` sequences are measured, every query
    of each, or, when one sequence alone has too many scores, ``queries`` evenly
    spaced queries of the first sequence, each against all its keys. Every
    statistic is that of the measured rows. With ``normal`` q and k every entry is
    an independent N(0, 1) draw, so every row has the same distribution and their
    averages estimate those of all rows without bias. With ``projected`` q and k
    the rows share one W_Q and W_K and depend on their position: the sequences are
    still drawn independently and identically (so the first ones estimate the
    others without bias), but evenly spaced queries of one sequence are a
    systematic sample, not an unbiased one.
    Sequences are drawn in blocks of ``block`` sequences (:data:`BLOCK_ROWS`).
    """

    seq_len: int
    n_samples: int
    sequences: int  # measured sequences (the first ones)
    queries: int  # measured queries per measured sequence
    block: int  # sequences per sampling block

    @property
    def rows(self) -> int:
        """Query rows measured."""
        return self.sequences * self.queries

    @property
    def total_rows(self) -> int:
        """Query rows of the whole sample, ``n_samples × seq_len``."""
        return self.n_samples * self.seq_len

    @property
    def scores(self) -> int:
        """Scores measured (every measured row has ``seq_len`` keys)."""
        return self.rows * self.seq_len

    @property
    def complete(self) -> bool:
        """Whether every query row of the sample is measured."""
        return self.rows == self.total_rows

    def positions(self) -> np.ndarray:
        """The measured query positions within a sequence, int64 ``[queries]`` (``0..T-1`` when all)."""
        return (np.arange(self.queries, dtype=np.int64) * self.seq_len) // self.queries

    def blocks(self) -> Iterator[tuple[int, int, int]]:
        """``(block index, sequences drawn, sequences measured)`` for every block holding a measured sequence."""
        for b, start in enumerate(range(0, self.sequences, self.block)):
            yield b, min(self.block, self.n_samples - start), min(self.block, self.sequences - start)

    def chunks(self, n_sequences: int) -> Iterator[tuple[int, int, int, int]]:
        """``(i0, i1, r0, r1)``: sequences i0..i1 and query rows r0..r1 of a block, at most CHUNK_SCORES scores each."""
        t, tq = self.seq_len, self.queries
        if tq * t <= CHUNK_SCORES:
            per = max(1, CHUNK_SCORES // (tq * t))
            for i0 in range(0, n_sequences, per):
                yield i0, min(i0 + per, n_sequences), 0, tq
        else:
            rc = max(1, CHUNK_SCORES // t)
            for i in range(n_sequences):
                for r0 in range(0, tq, rc):
                    yield i, i + 1, r0, min(r0 + rc, tq)

    def chunk_scores(self) -> int:
        """The most scores one chunk holds."""
        t, tq = self.seq_len, self.queries
        if tq * t <= CHUNK_SCORES:
            return min(max(1, CHUNK_SCORES // (tq * t)), self.block, self.sequences) * tq * t
        return min(max(1, CHUNK_SCORES // t), tq) * t


def row_plan(seq_len: int, n_samples: int) -> RowPlan:
    """The :class:`RowPlan` for ``n_samples`` sequences of ``seq_len`` tokens."""
    t, n = int(seq_len), int(n_samples)
    block = max(1, BLOCK_ROWS // t)
    limit = max(1, min(MAX_MEASURED_ROWS, MAX_MEASURED_SCORES // t))
    if n * t <= limit:
        return RowPlan(t, n, n, t, block)
    if limit >= t:
        return RowPlan(t, n, limit // t, t, block)
    return RowPlan(t, n, 1, limit, block)


# ---------------------------------------------------------------- validation and memory
def _check_common(seq_len: int, n_samples: int, seed: int, distribution: str, temperature: float) -> None:
    check_int("seq_len", seq_len, 1, MAX_SEQ_LEN)
    check_int("samples", n_samples, 1)
    check_int("seed", seed, 0, 2**31 - 1)
    if distribution not in DISTRIBUTIONS:
        raise unknown_option("distribution", distribution, DISTRIBUTIONS)
    check_temperature(temperature)


def check_d_k(d_k: object) -> int:
    """``d_k`` as an int from 1 to 1024, or :class:`ConfigError` naming ``d_k``."""
    return check_int("d_k", d_k, 1, MAX_HEAD_DIM)


def _block_bytes(d_k: int, seq_len: int, n_drawn: int, distribution: str) -> int:
    """q and k of one block ``[n, T, d_k]`` float32, and for ``projected`` its embeddings and positions."""
    rows, d, m = n_drawn * seq_len, int(d_k), PROJECTED_D_MODEL
    total = 4 * 2 * rows * d
    if distribution == "projected":
        # embeddings twice while positions are added, the float64 positions being built, the projections
        total += 4 * (2 * rows * m + 6 * seq_len * m + 2 * m * d)
    return total


def estimate_bytes(d_k: int, seq_len: int, n_samples: int, distribution: str = "normal") -> int:
    """Peak memory, in bytes, of sampling and measuring one ``d_k`` (an upper-bound estimate).

    One sampling block of q and k (:func:`_block_bytes`) plus the copy of the
    measured queries, the downstream weights of every measured row and their
    block as drawn, the measured scores kept for the histogram, the per-row norms
    kept for the medians (:data:`ROW_NORMS`, unscaled and scaled), one chunk of at
    most :data:`CHUNK_SCORES` scores at ``_SCORE_SLOTS`` float32 slots each, and
    that chunk's gradient ∂L/∂q (all float32). Bounded by the plan, so it stops
    growing with ``n_samples``. The sweep measures more chunks' (d_k, scaling) pairs at once only within
    what the budget leaves (:func:`_pairs_per_batch`).
    """
    plan = row_plan(seq_len, n_samples)
    t = plan.seq_len
    n_drawn = min(plan.block, plan.n_samples)
    total = _block_bytes(d_k, t, n_drawn, distribution)
    if plan.queries < t:
        total += 4 * plan.queries * int(d_k)  # the measured queries, picked out of the sequence
    total += 4 * (2 * plan.scores + n_drawn * plan.queries * t)  # G, the kept scores, one block of G
    total += 4 * 2 * len(ROW_NORMS) * plan.rows  # the per-row norms
    total += 4 * _SCORE_SLOTS * plan.chunk_scores()
    total += 4 * (plan.chunk_scores() // t) * int(d_k)  # ∂L/∂q of one chunk's rows
    return total


def _largest_fitting_samples(d_k: int, seq_len: int, n_samples: int, distribution: str, budget: int) -> int:
    """The largest sample count below ``n_samples`` whose estimate fits ``budget`` (0 if none)."""
    lo, hi = 0, int(n_samples)  # estimate(lo) fits (0 trivially), estimate(hi) does not
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if estimate_bytes(d_k, seq_len, mid, distribution) <= budget:
            lo = mid
        else:
            hi = mid
    return lo


def _pairs_per_batch(plan: RowPlan, d_k: int, distribution: str) -> int:
    """How many (d_k, scaling) pairs of one chunk the sweep measures at once: as many as fit in
    :data:`CHUNK_SCORES` scores and in what the memory budget leaves beside :func:`estimate_bytes` (which
    counts one), at least one. Each further pair takes its chunk's score slots; its ∂L/∂q (rows × d_k, only
    when T > d_k) is smaller than those."""
    cs = plan.chunk_scores()
    room = max_bytes() - estimate_bytes(d_k, plan.seq_len, plan.n_samples, distribution)
    extra = max(0, room) // (4 * _SCORE_SLOTS)  # scores a batch may hold beyond one chunk's
    return max(1, min(CHUNK_SCORES, cs + extra) // cs)


def check_memory(d_k: int, seq_len: int, n_samples: int, distribution: str = "normal", what: str = "") -> int:
    """Return the estimate of :func:`estimate_bytes`, or raise ConfigError if it exceeds :func:`max_bytes`.

    The message (prefixed by ``what`` when given) names the samples field and the
    largest sample count that fits.
    """
    need = estimate_bytes(d_k, seq_len, n_samples, distribution)
    budget = max_bytes()
    if need > budget:
        fits = _largest_fitting_samples(d_k, seq_len, n_samples, distribution, budget)
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


def _check_bytes(need: int, what: str) -> None:
    budget = max_bytes()
    if need > budget:
        raise ConfigError(
            f"{what} needs about {format_bytes(need)} of memory, more than the budget of {format_bytes(budget)} "
            "(set by ATTN_MAX_BYTES); use fewer samples or keys",
            "samples",
            "budget",
            need=format_bytes(need),
            budget=format_bytes(budget),
            reduce="samples / seq_len",
        )


# ---------------------------------------------------------------- sampling
def _seed(*parts: object) -> int:
    digest = hashlib.blake2b("\x00".join(map(str, parts)).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") & (2**63 - 1)


def _generator(block: int, *parts: object) -> torch.Generator:
    """Block 0 keeps the seed of ``parts`` alone (the numbers of a one-block sample); block b adds b."""
    return torch.Generator().manual_seed(_seed(*parts) if block == 0 else _seed(*parts, block))


def _draw_block(
    d_k: int, seq_len: int, n: int, block: int, seed: int, distribution: str, w: tuple | None = None
) -> tuple[torch.Tensor, torch.Tensor, tuple | None]:
    """q, k float32 ``[n, T, d_k]`` (CPU) of sampling block ``block``, and the projections used.

    ``normal``: independent N(0, 1) entries. ``projected``: token embeddings
    (N(0, 1) plus sinusoidal positions, unit variance, width 512) times the two
    projections W_Q, W_K with N(0, 1/512) entries, drawn once per seed and d_k
    after block 0's embeddings (one layer); later blocks pass them back as ``w``.
    """
    g = _generator(block, "qk", seed, d_k, distribution)
    if distribution == "normal":
        q = torch.randn(n, seq_len, d_k, generator=g)  # (n, T, d_k)
        k = torch.randn(n, seq_len, d_k, generator=g)  # (n, T, d_k)
        return q, k, None
    m = PROJECTED_D_MODEL
    x = torch.randn(n, seq_len, m, generator=g)  # (n, T, m)
    # Same mixing as tokens.embed: positions (variance 1/2) weighted by sqrt 2, sum / sqrt 2.
    x = (x + sinusoidal_positions(seq_len, m) * math.sqrt(2.0)) / math.sqrt(2.0)
    if w is None:
        w_q = torch.randn(m, d_k, generator=g) / math.sqrt(m)  # (m, d_k)
        w_k = torch.randn(m, d_k, generator=g) / math.sqrt(m)  # (m, d_k)
        w = (w_q, w_k)
    return x @ w[0], x @ w[1], w  # (n, T, d_k) each


def sample_qk(
    d_k: int,
    seq_len: int,
    n_samples: int,
    seed: int = 0,
    distribution: str = "normal",
    device: torch.device | str = "cpu",
) -> tuple[torch.Tensor, torch.Tensor]:
    """Queries and keys of all ``n_samples`` sequences of ``seq_len`` tokens, the ones the sweep measures.

    Returns q, k float32 ``[N, T, d_k]`` on ``device``, drawn on the CPU block by
    block (:func:`_draw_block`) from generators seeded by (seed, d_k,
    distribution, block), so every device sees the same numbers. Refuses, before
    allocating, when the whole sample exceeds the memory budget (the sweep itself
    never holds it all).
    """
    d_k = check_d_k(d_k)
    _check_common(seq_len, n_samples, seed, distribution, 1.0)
    plan = row_plan(seq_len, n_samples)
    _check_bytes(_block_bytes(d_k, seq_len, n_samples, distribution), "the whole sample of q and k")
    qs, ks, w = [], [], None
    for b, start in enumerate(range(0, n_samples, plan.block)):
        q, k, w = _draw_block(d_k, seq_len, min(plan.block, n_samples - start), b, seed, distribution, w)
        qs.append(q)
        ks.append(k)
    return torch.cat(qs).to(device), torch.cat(ks).to(device)


def _loss_block(plan: RowPlan, block: int, n_drawn: int, seed: int) -> torch.Tensor:
    """Downstream weights of sampling block ``block``: float32 ``[n_drawn, queries, T]`` N(0, 1) (CPU)."""
    g = _generator(block, "loss", seed, plan.seq_len, plan.n_samples)
    return torch.randn(n_drawn, plan.queries, plan.seq_len, generator=g)


def downstream_weights(seq_len: int, n_samples: int, seed: int = 0, device: torch.device | str = "cpu") -> torch.Tensor:
    """The fixed downstream loss ``L = Σ p · G`` of the whole sample: G float32 ``[N, T, T]``, N(0, 1) entries.

    L = Σ_n Σ_i Σ_j p_nij G_nij is a random linear function of the weights p: its
    gradient ∂L/∂p = G stands in for the gradient arriving from the layers above. It depends on
    the seed and the shape only, never on d_k or the scaling, so every point of
    the sweep backpropagates the same loss. Drawn block by block like the queries;
    the sweep draws only the blocks (and, at long sequences, the rows) it measures.
    """
    plan = row_plan(seq_len, n_samples)
    full = RowPlan(plan.seq_len, plan.n_samples, plan.n_samples, plan.seq_len, plan.block)
    _check_bytes(4 * full.scores, "the downstream weights of the whole sample")
    blocks = [_loss_block(full, b, n, seed) for b, n, _ in full.blocks()]
    return torch.cat(blocks).to(device)


def _measured_blocks(
    d_k: int, plan: RowPlan, seed: int, distribution: str, device: torch.device, first: list | None = None
) -> Iterator[tuple[int, torch.Tensor, torch.Tensor]]:
    """``(block, q, k)`` of the measured rows: q ``[n, queries, d_k]``, k ``[n, T, d_k]`` on ``device``.
    ``first``, when given, receives the first sequence's whole q and k ``[T, d_k]`` (CPU) as block 0 is drawn."""
    w = None
    pos = None if plan.queries == plan.seq_len else torch.from_numpy(plan.positions())
    for b, n_drawn, n_used in plan.blocks():
        q, k, w = _draw_block(d_k, plan.seq_len, n_drawn, b, seed, distribution, w)
        if b == 0 and first is not None:
            first.extend((q[0].clone(), k[0].clone()))  # every query position, as :func:`first_sequence` draws it
        q, k = q[:n_used], k[:n_used]
        if pos is not None:
            q = q[:, pos]  # (n, queries, d_k): the measured positions only
        yield b, q.to(device), k.to(device)
        del q, k


def _qk_chunks(
    d_k: int, plan: RowPlan, seed: int, distribution: str, device: torch.device, first: list | None = None
) -> Iterator[tuple[int, tuple[int, int, int, int], torch.Tensor, torch.Tensor]]:
    """``(block, (i0, i1, r0, r1), q, k)`` of every chunk of measured rows: q ``[n, r, d_k]``, k ``[n, T, d_k]``
    (``first``: :func:`_measured_blocks`)."""
    for b, q, k in _measured_blocks(d_k, plan, seed, distribution, device, first):
        for i0, i1, r0, r1 in plan.chunks(q.shape[0]):
            yield b, (i0, i1, r0, r1), q[i0:i1, r0:r1], k[i0:i1]


def _score_chunks(
    d_k: int, plan: RowPlan, seed: int, distribution: str, device: torch.device
) -> Iterator[tuple[int, tuple[int, int, int, int], torch.Tensor]]:
    """``(block, (i0, i1, r0, r1), s)``: raw scores s = q·k ``[rows, T]`` of every chunk of measured rows."""
    for b, ranges, q, k in _qk_chunks(d_k, plan, seed, distribution, device):
        yield b, ranges, (q @ k.transpose(-2, -1)).reshape(-1, plan.seq_len)  # (n·r, T)


def _scores_of(
    d_k: int, plan: RowPlan, seed: int, distribution: str, dev: torch.device, scores: SweepScores | None, spec: tuple
) -> Iterator[torch.Tensor]:
    """The raw scores s = q·k of ``d_k``'s measured rows, chunk by chunk ``[rows, T]``: from ``scores``
    (:func:`sweep_scores` of ``spec``; ``ValueError`` at once for scores of other arguments) or drawn."""
    if scores is None:
        return (s for _, _, s in _score_chunks(d_k, plan, seed, distribution, dev))
    if scores.spec != spec:
        raise ValueError(f"scores were drawn for {scores.spec}, not {spec}")
    return (s.reshape(-1, plan.seq_len) for _, _, s, _ in scores.parts(0, dev))


def measured_rows(
    d_k: int, seq_len: int, n_samples: int, seed: int = 0, distribution: str = "normal"
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Exactly what the sweep measures at ``d_k``, for checking it by other means.

    Returns q ``[S, queries, d_k]``, k ``[S, T, d_k]`` and the downstream weights
    G ``[S, queries, T]`` (float32, CPU) of the ``S`` measured sequences of
    :func:`row_plan`. Refuses when they exceed the memory budget.
    """
    d_k = check_d_k(d_k)
    _check_common(seq_len, n_samples, seed, distribution, 1.0)
    plan = row_plan(seq_len, n_samples)
    _check_bytes(4 * (plan.rows * d_k + plan.sequences * seq_len * d_k + plan.scores), "the measured rows")
    blocks = list(_measured_blocks(d_k, plan, seed, distribution, torch.device("cpu")))
    g = [_loss_block(plan, b, n_drawn, seed)[:n_used] for b, n_drawn, n_used in plan.blocks()]
    return torch.cat([q for _, q, _ in blocks]), torch.cat([k for _, _, k in blocks]), torch.cat(g)


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


# ---------------------------------------------------------------- the sweep
class _Moments:
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


_ROW_SUMS = ("max_weight", "entropy", "saturated_frac", *ROW_NORMS, "fp16_naive_fail", "fp16_stable_fail")


def _grad_q_norm(grad_z: torch.Tensor, basis: torch.Tensor) -> torch.Tensor:
    """‖Σ_j (∂L/∂z_ij) k_j‖ of every row ``[..., n, r]`` from ∂L/∂z ``[..., n, r, T]`` (times the scale c / τ
    it is ‖∂L/∂q_i‖).

    ``basis`` ``[n, T, w]`` (float32) is the chunk's keys K ``[n, T, d_k]``, or, when T ≤ d_k, Rᵀ ``[n, T, T]``
    from the QR factorisation Kᵀ = Q R (:func:`_key_basis`): Kᵀg = Q (R g) and Q's columns are orthonormal, so
    ‖Kᵀg‖ = ‖R g‖, the same number from a T-wide product instead of a d_k-wide one (and, unlike the Gram
    matrix gᵀ K Kᵀ g, nothing is squared, so float32 keeps the precision of the product with K itself).
    """
    return (grad_z @ basis).norm(dim=-1)


def _key_basis(k: torch.Tensor) -> torch.Tensor:
    """What :func:`_grad_q_norm` multiplies by for keys ``k`` ``[n, T, d_k]``: K itself when T > d_k, else Rᵀ
    ``[n, T, T]`` of Kᵀ = Q R (in float64; float32 out).

    Rᵀ is the Cholesky factor L of K Kᵀ = Rᵀ Qᵀ Q R = Rᵀ R (up to the signs of its columns, which no norm sees):
    a float64 product and a T × T factorisation cost about half of a Householder QR of the d_k × T matrix Kᵀ at
    d_k = 1,024 (33 against 63 ms for 256 sequences of 16 keys). The product squares K's condition number, which
    float64 holds with room to spare (two keys 1e-4 apart still give ‖Kᵀg‖ within 1e-5, tested); a sequence whose
    K Kᵀ is not positive definite in float64 (keys linearly dependent) is factorised by QR instead.
    """
    if k.shape[-2] > k.shape[-1]:
        return k
    kd = k.double()
    low, info = torch.linalg.cholesky_ex(kd @ kd.transpose(-2, -1))  # (n, T, T) lower triangular: Rᵀ
    bad = torch.nonzero(info).flatten()
    if len(bad):
        low[bad] = torch.linalg.qr(kd[bad].transpose(-2, -1), mode="r").R.transpose(-2, -1)
    return low.to(torch.float32)


def _measure_batch(
    s: torch.Tensor, bases: list[torch.Tensor], scales: list[float], loss_g: torch.Tensor
) -> tuple[np.ndarray, dict[str, torch.Tensor]]:
    """One chunk of rows through softmax(s · c / τ) and back from L = Σ p·G, for ``m`` (d_k, scaling) pairs at once.

    s ``[m, n, r, T]``: the raw scores q·kᵀ of the same rows at each pair's d_k; ``bases[j]`` the keys
    (or Rᵀ, :func:`_key_basis`) of pair j's d_k; ``scales[j]`` its c / τ (c = 1 or
    1/√d_k); G ``[n, r, T]``. ∂L/∂z at the softmax input z is measured by torch autograd;
    ∂L/∂q = (c / τ) Σ_j (∂L/∂z_j) k_j follows from it (the chain rule through z = (c / τ) · q·kᵀ).
    Returns the sums over the rows of :data:`_ROW_SUMS` (float64 ``[m, len(_ROW_SUMS)]``) and the per-row norms
    of :data:`ROW_NORMS` (float32 ``[m, n·r]``, on s's device): ‖J‖_F, ‖∂L/∂z‖ and ‖∂L/∂q‖, the gradient that
    reaches the query (and through it W_Q).
    """
    m, t = s.shape[0], s.shape[-1]
    scale = torch.tensor(scales, dtype=s.dtype, device=s.device).view(m, 1, 1, 1)
    with torch.enable_grad():
        z = (s * scale).requires_grad_(True)  # (m, n, r, T) the softmax inputs
        p = torch.softmax(z, dim=-1)
        (grad_z,) = torch.autograd.grad(p, z, grad_outputs=loss_g.expand_as(z))
    p, zs = p.detach().reshape(m, -1, t), z.detach().reshape(m, -1, t)
    del z
    grad_q = torch.empty(m, p.shape[1], dtype=torch.float32, device=s.device)
    for basis_id in dict.fromkeys(id(b) for b in bases):  # the pairs of one d_k share their keys' product
        idx = [j for j, b in enumerate(bases) if id(b) == basis_id]
        sel = torch.tensor(idx, device=s.device)
        raw = _grad_q_norm(grad_z.index_select(0, sel), bases[idx[0]]).reshape(len(idx), -1)
        grad_q[sel] = raw * torch.tensor([scales[j] for j in idx], device=s.device).view(-1, 1)
    jac, top = _jacobian_norm_and_top(p)
    norms = {"grad_norm": grad_z.norm(dim=-1).reshape(m, -1), "grad_q_norm": grad_q, "jacobian_norm": jac}
    del grad_z
    out = {key: v.double().sum(-1) for key, v in norms.items()}  # per-row values, added up in float64
    out["max_weight"] = top.double().sum(-1)
    out["saturated_frac"] = (top > SATURATION_THRESHOLD).sum(-1).double()
    out["entropy"] = row_entropy(p).double().sum(-1)
    del p
    out["fp16_naive_fail"], out["fp16_stable_fail"] = fp16_failures(zs)
    return torch.stack([out[key] for key in _ROW_SUMS], dim=1).cpu().numpy(), norms


def _norm_summaries(norms: list[list[torch.Tensor]]) -> tuple[np.ndarray, np.ndarray]:
    """Median and share below :data:`SMALL_NORM` of every measured row's norm, for each of several norms at once.

    ``norms[j]`` holds norm j's per-row values chunk by chunk (every norm the same rows). Returns two float64
    arrays ``[len(norms)]``: the medians and the shares (one partition over all of them, not one per norm).
    """
    x = torch.stack([torch.cat(chunks) for chunks in norms]).to("cpu", torch.float64).numpy()
    return np.median(x, axis=1), np.mean(x < SMALL_NORM, axis=1)


# One measured chunk without τ: (block, (i0, i1, r0, r1), raw scores s [n, r, T], the keys' basis)
ScoreChunk = tuple[int, tuple[int, int, int, int], torch.Tensor, torch.Tensor | None]


def _score_parts(
    d: int,
    plan: RowPlan,
    seed: int,
    distribution: str,
    dev: torch.device,
    with_basis: bool = True,
    first: list | None = None,
) -> Iterator[ScoreChunk]:
    """Every chunk of measured rows at ``d_k = d`` as τ leaves it: the raw scores s = q·kᵀ and the keys' basis
    for ∂L/∂q (:func:`_key_basis`: Rᵀ of Kᵀ = Q R when T ≤ d_k, else K itself; None without ``with_basis``);
    ``first``: :func:`_measured_blocks`."""
    for b, ranges, q, k in _qk_chunks(d, plan, seed, distribution, dev, first):
        s = q @ k.transpose(-2, -1)  # (n, r, T) raw q·k, once for both scalings and every τ
        basis = _key_basis(k) if with_basis else None
        yield b, ranges, s, basis
        del q, k, s, basis


def _sweep_rows(
    values: list[int],
    plan: RowPlan,
    parts: Iterator[list[tuple[int, ScoreChunk]]],
    temperature: float,
    loss: list[torch.Tensor],
    per_batch: int,
) -> list[dict[str, float]]:
    """The sweep's two rows (unscaled, scaled) at every d_k of ``values``.

    ``parts`` yields lists of ``(index in values, chunk)`` whose chunks (:func:`_score_parts`) hold the same
    rows at different d_k (every d_k's chunks, in any grouping); ``loss`` holds the downstream weights of every
    sampling block (on the device the sweep runs on). ``per_batch`` (d_k, scaling) pairs go through softmax and
    autograd at once (:func:`_measure_batch`, :func:`_pairs_per_batch`).
    """
    moments = [_Moments() for _ in values]
    sums = np.zeros((len(values), 2, len(_ROW_SUMS)))
    norms: list[list[dict[str, list[torch.Tensor]]]] = [
        [{key: [] for key in ROW_NORMS} for _ in (False, True)] for _ in values
    ]
    for same_rows in parts:
        _, (b, (i0, i1, r0, r1), _, _) = same_rows[0]
        g = loss[b][i0:i1, r0:r1]  # (n, r, T)
        for i, (_, _, s, _) in same_rows:
            moments[i].add(s)
        pairs = [(i, scaled, s, basis) for i, (_, _, s, basis) in same_rows for scaled in (False, True)]
        for at in range(0, len(pairs), per_batch):
            batch = pairs[at : at + per_batch]
            scales = [(1.0 / math.sqrt(values[i]) if scaled else 1.0) / temperature for i, scaled, _, _ in batch]
            stacked = torch.stack([s for _, _, s, _ in batch]) if len(batch) > 1 else batch[0][2][None]
            batch_sums, batch_norms = _measure_batch(stacked, [basis for *_, basis in batch], scales, g)
            for j, (i, scaled, _, _) in enumerate(batch):
                sums[i, int(scaled)] += batch_sums[j]
                for key, value in batch_norms.items():
                    norms[i][int(scaled)][key].append(value[j].to("cpu", torch.float32))
            del stacked, batch_norms
        del same_rows, pairs, g
    rows = []
    for i, d in enumerate(values):
        medians, smalls = _norm_summaries([norms[i][s][key] for s in (0, 1) for key in ROW_NORMS])
        for scaled in (False, True):
            factor = 1.0 / math.sqrt(d) if scaled else 1.0
            row = {
                "d_k": d,
                "scaled": scaled,
                "score_var": moments[i].var * factor * factor,
                "measured_rows": plan.rows,
                "total_rows": plan.total_rows,
            }
            row.update({key: float(sums[i, int(scaled), j]) / plan.rows for j, key in enumerate(_ROW_SUMS)})
            for j, key in enumerate(ROW_NORMS, start=int(scaled) * len(ROW_NORMS)):
                row.update({f"{key}_median": float(medians[j]), f"{key}_small": float(smalls[j])})
            rows.append(row)
    return rows


# The τ-independent part of a sweep is kept between τ moves when it takes at most this many bytes.
SCORE_CACHE_BYTES = 48 * 2**20


@dataclass(frozen=True)
class SweepScores:
    """What :func:`saturation_sweep` measures that the temperature τ does not change, kept on the CPU.

    ``chunks[i]`` holds every chunk of measured rows at ``d_k[i]`` as numpy arrays:
    ``(block, (i0, i1, r0, r1), s, basis)`` with the raw scores s = q·kᵀ ``[n, r, T]``
    (float32) and the keys' basis (:func:`_grad_q_norm`), or None for every basis when ``with_basis`` is False
    (scores for what measures no gradient: :func:`score_sample`, :func:`weight_summary`). ``spec`` is
    ``(d_k, seq_len, n_samples, seed, distribution)``: what drew them. ``first``: q, k ``[T, d_k]`` of the first
    sequence, drawn with them (:func:`first_sequence` reads it), or None.
    """

    spec: tuple
    chunks: tuple[tuple[tuple, ...], ...]
    with_basis: bool = True
    first: tuple[np.ndarray, np.ndarray] | None = None

    @property
    def nbytes(self) -> int:
        kept = sum(s.nbytes + (0 if basis is None else basis.nbytes) for part in self.chunks for _, _, s, basis in part)
        return kept + (0 if self.first is None else self.first[0].nbytes + self.first[1].nbytes)

    def parts(self, i: int, device: torch.device) -> Iterator[ScoreChunk]:
        """The chunks of ``d_k[i]`` as tensors on ``device`` (each basis None without ``with_basis``)."""
        for b, ranges, s, basis in self.chunks[i]:
            kept = None if basis is None else torch.from_numpy(basis).to(device)
            yield b, ranges, torch.from_numpy(s).to(device), kept


def sweep_scores_bytes(
    d_k_values: tuple[int, ...] | list[int], seq_len: int, n_samples: int, with_basis: bool = True
) -> int:
    """Bytes a :class:`SweepScores` of these arguments would hold (counted from :func:`row_plan`'s chunks)."""
    plan = row_plan(seq_len, n_samples)
    t, total = plan.seq_len, 0
    chunks = [c for _, _, used in plan.blocks() for c in plan.chunks(used)]
    for d in d_k_values:
        per_key = 4 * min(t, int(d)) if with_basis else 0  # float32 Rᵀ [T, T] or K [T, d_k] (_key_basis)
        total += sum((i1 - i0) * ((r1 - r0) * t * 4 + t * per_key) for i0, i1, r0, r1 in chunks)
    return total


def _checked_sweep(
    d_k_values: tuple[int, ...] | list[int],
    seq_len: int,
    n_samples: int,
    seed: int,
    distribution: str,
    temperature: float,
) -> list[int]:
    """The sweep's d_k values, checked with its other arguments and its memory (before anything is allocated)."""
    values = [check_d_k(d) for d in d_k_values]
    if not values:
        raise ConfigError("d_k_values is empty; give at least one d_k from 1 to 1024", "d_k", "empty_sweep")
    _check_common(seq_len, n_samples, seed, distribution, temperature)
    check_memory(max(values), seq_len, n_samples, distribution, f"the sweep over d_k = {min(values)}…{max(values)}")
    return values


def sweep_scores(
    d_k_values: tuple[int, ...] | list[int] = SWEEP_D_K,
    seq_len: int = 16,
    n_samples: int = 256,
    seed: int = 0,
    device: torch.device | str = "cpu",
    distribution: str = "normal",
    with_basis: bool = True,
    with_first: bool = False,
) -> SweepScores | None:
    """The τ-independent part of :func:`saturation_sweep` (pass it as ``scores=`` to measure any τ from it).

    ``with_basis=False`` keeps the raw scores alone, without the keys' basis that only the sweep's gradients
    read (:func:`_key_basis`: at d_k = 1,024 about a quarter of the time, 24 of 96 ms for 256 sequences of 16
    tokens): enough for :func:`score_sample` and :func:`weight_summary`, refused by :func:`saturation_sweep`.
    ``with_first`` (one d_k only) also keeps the first sequence's q and k, the ones :func:`first_sequence` gives,
    from the same draw (drawing them alone draws their whole sampling block again: as long as the scores at
    d_k = 1,024), unless they are larger than :data:`FIRST_SEQUENCE_BYTES`.
    None when it would hold more than :data:`SCORE_CACHE_BYTES` (without it,
    :func:`saturation_sweep` measures chunk by chunk and keeps nothing). Raises
    :class:`ConfigError` for a bad argument or over the memory budget.
    """
    values = _checked_sweep(d_k_values, seq_len, n_samples, seed, distribution, 1.0)
    if with_first and len(values) != 1:
        raise ValueError(f"with_first keeps one d_k's first sequence, not {len(values)} d_k values'")
    if sweep_scores_bytes(values, seq_len, n_samples, with_basis) > SCORE_CACHE_BYTES:
        return None  # too large to keep: saturation_sweep measures chunk by chunk and keeps nothing
    plan, dev = row_plan(seq_len, n_samples), torch.device(device)
    first: list | None = [] if with_first and 2 * 4 * int(seq_len) * values[0] <= FIRST_SEQUENCE_BYTES else None
    chunks = tuple(
        tuple(
            (b, r, s.cpu().numpy(), None if basis is None else basis.cpu().numpy())
            for b, r, s, basis in _score_parts(d, plan, seed, distribution, dev, with_basis, first)
        )
        for d in values
    )
    spec = (tuple(values), int(seq_len), int(n_samples), int(seed), distribution)
    return SweepScores(spec, chunks, with_basis, None if not first else (first[0].numpy(), first[1].numpy()))


def saturation_sweep(
    d_k_values: tuple[int, ...] | list[int] = SWEEP_D_K,
    seq_len: int = 16,
    n_samples: int = 256,
    seed: int = 0,
    device: torch.device | str = "cpu",
    distribution: str = "normal",
    temperature: float = 1.0,
    scores: SweepScores | None = None,
) -> pd.DataFrame:
    """Softmax saturation against d_k, with and without the 1/sqrt(d_k) scaling.

    For each d_k, ``n_samples`` sequences of ``seq_len`` queries and keys
    (:func:`sample_qk`) give raw scores s = q·k; softmax runs on z = s · c / τ with
    c = 1/sqrt(d_k) (scaled) or 1 (unscaled). The rows of :func:`row_plan` are
    measured (all of them unless there are more than :data:`MAX_MEASURED_ROWS` or
    :data:`MAX_MEASURED_SCORES` scores), by chunks of at most
    :data:`CHUNK_SCORES` scores. ``scores`` (:func:`sweep_scores` of the same
    arguments) skips the sampling: only the part τ changes is computed. One row per
    (d_k, scaled) with columns:

    - ``score_var``: measured Var(s · c) = c² Var(s) over all measured scores
      (theory: d_k unscaled, 1 scaled; τ not included);
    - ``max_weight``, ``entropy`` (normalized), ``saturated_frac`` (rows with a
      weight > 0.99): averages over the measured rows;
    - the loss: L = Σ_rows Σ_j p_ij G_ij, with G the fixed N(0, 1) numbers of
      :func:`downstream_weights`, one per score (they stand in for ∂L/∂p, the
      gradient the layers above would send), the same at every d_k and for both
      scalings. ∂L/∂z is measured by torch autograd back from L through the softmax,
      and ∂L/∂q follows by the chain rule through z = (c / τ) · q·kᵀ;
    - ``jacobian_norm``: ‖J‖_F of each row's softmax Jacobian J = diag(p) - p pᵀ;
    - ``grad_norm``: ‖∂L/∂z‖ of each row at the softmax input z = s · c / τ
      (∂L/∂z = J G_row);
    - ``grad_q_norm``: ‖∂L/∂q‖ of each query, ∂L/∂q_i = (c / τ) Σ_j (∂L/∂z_ij) k_j,
      the gradient that reaches W_Q (and, through the keys, W_K). For the same
      ∂L/∂z it is √d_k times larger unscaled than scaled (c = 1 against 1/√d_k);
    - for each of these three norms (:data:`ROW_NORMS`) the mean over the measured
      rows (the column itself), the median (``<name>_median``) and the share of
      rows below :data:`SMALL_NORM` = 1e-3 (``<name>_small``). Saturation shows in
      the median and the share: most rows' gradients vanish while a few stay large,
      so the mean alone can even grow without scaling;
    - ``fp16_naive_fail`` / ``fp16_stable_fail``: fraction of rows where softmax in
      float16 without / with the row max subtracted is not a valid distribution;
    - ``measured_rows`` / ``total_rows``: query rows measured, of ``n_samples × seq_len``.

    Raises :class:`ConfigError` for a bad argument or when the largest d_k would
    exceed the memory budget (checked before anything is allocated).
    """
    values = _checked_sweep(d_k_values, seq_len, n_samples, seed, distribution, temperature)
    spec = (tuple(values), int(seq_len), int(n_samples), int(seed), distribution)
    if scores is not None and scores.spec != spec:
        raise ValueError(f"scores were drawn for {scores.spec}, not {spec}")
    if scores is not None and not scores.with_basis:
        raise ValueError("these scores hold no keys' basis for the gradients: give sweep_scores(..., with_basis=True)")
    plan = row_plan(seq_len, n_samples)
    dev = torch.device(device)
    # the downstream weights of the measured rows, drawn once for every d_k: [sequences, queries, T] per block
    loss = [_loss_block(plan, b, n_drawn, seed)[:n_used].clone().to(dev) for b, n_drawn, n_used in plan.blocks()]
    if scores is not None:  # every d_k's chunks of the same rows together, measured in batches
        every = [scores.parts(i, dev) for i in range(len(values))]  # the same chunks of rows at every d_k
        parts = (list(enumerate(same)) for same in zip(*every, strict=True))
    else:  # drawn d_k by d_k, chunk by chunk: nothing is kept
        parts = ([(i, part)] for i, d in enumerate(values) for part in _score_parts(d, plan, seed, distribution, dev))
    per_batch = _pairs_per_batch(plan, max(values), distribution)
    rows = _sweep_rows(values, plan, parts, float(temperature), loss, per_batch)
    return pd.DataFrame(rows, columns=list(_SWEEP_COLUMNS))


#: The columns of :func:`saturation_sweep` that :func:`weight_summary` measures alone.
WEIGHT_COLUMNS = ("max_weight", "saturated_frac")


def weight_summary(
    d_k: int,
    seq_len: int = 16,
    n_samples: int = 256,
    seed: int = 0,
    device: torch.device | str = "cpu",
    distribution: str = "normal",
    temperature: float = 1.0,
    scores: SweepScores | None = None,
) -> dict[bool, dict[str, float]]:
    """:data:`WEIGHT_COLUMNS` of :func:`saturation_sweep`'s two rows at ``d_k`` alone, ``{scaled: {column: value}}``
    (unscaled False, scaled True, as :func:`sweep_at` gives them): the same rows, raw scores and softmax, without
    the gradients, Jacobians and float16 checks the sweep measures with them (a tenth of its work).

    ``scores`` (:func:`sweep_scores` of ``(d_k,)`` and the same arguments) skips the sampling. Raises
    :class:`ConfigError` for a bad argument or over the memory budget, ``ValueError`` for scores of other arguments.
    """
    (d,) = _checked_sweep((d_k,), seq_len, n_samples, seed, distribution, temperature)
    plan, spec = row_plan(seq_len, n_samples), ((d,), int(seq_len), int(n_samples), int(seed), distribution)
    chunks = _scores_of(d, plan, seed, distribution, torch.device(device), scores, spec)
    # z = s · c / τ in float32 from the same float64 factors as the sweep's batches, so every weight is the sweep's
    factors = [(1.0 / math.sqrt(d) if scaled else 1.0) / float(temperature) for scaled in (False, True)]
    sums = np.zeros((2, len(WEIGHT_COLUMNS)))
    for s in chunks:  # (rows, T)
        scale = torch.tensor(factors, dtype=s.dtype, device=s.device).view(2, 1, 1)
        top = torch.softmax(s * scale, dim=-1).max(dim=-1).values  # (2, rows)
        sums += torch.stack([top.double().sum(-1), (top > SATURATION_THRESHOLD).sum(-1).double()], 1).cpu().numpy()
        del s, top
    return {
        scaled: {c: float(sums[int(scaled), j]) / plan.rows for j, c in enumerate(WEIGHT_COLUMNS)}
        for scaled in (False, True)
    }


def sweep_at(sweep: pd.DataFrame, d_k: int) -> dict[bool, dict[str, float]] | None:
    """The sweep's numbers at ``d_k``: ``{scaled: {column: value}}`` for unscaled (False) and scaled (True),
    or None if ``d_k`` was not measured."""
    cols = list(sweep.columns)
    values = sweep.to_numpy(dtype=float)  # (rows, columns): one pandas call (a tenth of selecting columns), then numpy
    d, scaled = values[:, cols.index("d_k")], values[:, cols.index("scaled")] != 0
    keep = [(j, c) for j, c in enumerate(cols) if c not in ("d_k", "scaled")]
    out = {}
    for flag in (False, True):
        hit = np.flatnonzero((d == d_k) & (scaled == flag))
        if not len(hit):
            return None
        out[flag] = {c: float(values[hit[0], j]) for j, c in keep}
    return out


# ---------------------------------------------------------------- what the gradients show at one d_k
# Unscaled against scaled: a ratio within 1/SIMILAR_RATIO .. SIMILAR_RATIO reads "about the same".
SIMILAR_RATIO = 1.1
# "Vanishes for many rows": at least this share of rows below SMALL_NORM, and at least twice the scaled share.
VANISHED_SHARE = 0.1
# "Concentrated in a few rows": mean / median at least this many times the scaled mean / median.
CONCENTRATED = 3.0


def compare(unscaled: float, scaled: float) -> str:
    """``"lower"``, ``"similar"`` or ``"higher"``: the unscaled value against the scaled one (see SIMILAR_RATIO)."""
    if unscaled == scaled:
        return "similar"
    if scaled <= 0 or unscaled <= 0:
        return "higher" if unscaled > scaled else "lower"
    ratio = unscaled / scaled
    return "higher" if ratio > SIMILAR_RATIO else "lower" if ratio < 1 / SIMILAR_RATIO else "similar"


def _skew(row: dict[str, float], norm: str) -> float:
    """mean / median of one norm (inf when the median is 0 and the mean is not)."""
    mean, median = row[norm], row[f"{norm}_median"]
    if median > 0:
        return mean / median
    return math.inf if mean > 0 else 1.0


@dataclass(frozen=True)
class GradientFindings:
    """What the sweep's gradients show at one d_k, unscaled against scaled, as codes (the page words them).

    ``identical``: both cases gave the same numbers (d_k = 1, where 1/√d_k = 1).
    ``mean_q``, ``median_q``, ``mean_z``, ``median_z``, ``mean_j``: :func:`compare` of
    the mean or median ‖∂L/∂q‖, ‖∂L/∂z‖ and ‖J‖_F. ``vanished``: without scaling
    many rows' ‖∂L/∂q‖ fall below SMALL_NORM (VANISHED_SHARE). ``concentrated``:
    without scaling ‖∂L/∂q‖ is concentrated in a few rows, its mean far above its
    median compared with scaling (CONCENTRATED); ``skew_q`` gives mean / median
    unscaled and scaled.
    """

    identical: bool
    mean_q: str
    median_q: str
    mean_z: str
    median_z: str
    mean_j: str
    vanished: bool
    concentrated: bool
    skew_q: tuple[float, float]


def gradient_findings(at: dict[bool, dict[str, float]]) -> GradientFindings:
    """:class:`GradientFindings` from the sweep's numbers at one d_k (``{scaled: {column: value}}``)."""
    u, s = at[False], at[True]
    identical = all(u[f"{n}{x}"] == s[f"{n}{x}"] for n in ROW_NORMS for x in ("", "_median", "_small"))
    skew = (_skew(u, "grad_q_norm"), _skew(s, "grad_q_norm"))
    small_u, small_s = u["grad_q_norm_small"], s["grad_q_norm_small"]
    return GradientFindings(
        identical=identical,
        mean_q=compare(u["grad_q_norm"], s["grad_q_norm"]),
        median_q=compare(u["grad_q_norm_median"], s["grad_q_norm_median"]),
        mean_z=compare(u["grad_norm"], s["grad_norm"]),
        median_z=compare(u["grad_norm_median"], s["grad_norm_median"]),
        mean_j=compare(u["jacobian_norm"], s["jacobian_norm"]),
        vanished=not identical and small_u >= VANISHED_SHARE and small_u >= 2 * small_s,
        concentrated=not identical and skew[0] >= CONCENTRATED * skew[1],
        skew_q=skew,
    )


# ---------------------------------------------------------------- one d_k, for the page's views
@dataclass(frozen=True)
class ScoreSample:
    """Scores at one d_k, as CPU float32 numpy and plain numbers (small: cached as is).

    ``n_scores``: scores measured (``n_rows`` measured query rows of
    ``total_rows`` = N·T, ``seq_len`` keys each; see :func:`row_plan`).
    ``raw_var``/``scaled_var``: measured Var(q·k) and Var(q·k/sqrt(d_k)) over them.
    ``raw_density``/``scaled_density`` ``[bins]`` are histogram densities (per unit
    of score) over ``raw_edges``/``scaled_edges`` ``[bins + 1]``.
    """

    d_k: int
    seq_len: int
    n_samples: int
    distribution: str
    n_scores: int
    n_rows: int
    total_rows: int
    raw_var: float
    scaled_var: float
    raw_density: np.ndarray
    raw_edges: np.ndarray
    scaled_density: np.ndarray
    scaled_edges: np.ndarray

    @property
    def complete(self) -> bool:
        """Whether every query row of the sample was measured."""
        return self.n_rows == self.total_rows


def score_sample(
    d_k: int,
    seq_len: int = 16,
    n_samples: int = 256,
    seed: int = 0,
    device: torch.device | str = "cpu",
    distribution: str = "normal",
    bins: int = 60,
    scores: SweepScores | None = None,
) -> ScoreSample:
    """Sample q, k at ``d_k`` exactly as :func:`saturation_sweep` does and summarise the measured scores.

    The measured ``raw_var`` equals the sweep's unscaled ``score_var`` at this d_k
    for the same arguments (same rows). The scaled histogram is the raw one with
    its score axis divided by sqrt(d_k) (the same counts: x < e ⟺ x/√d_k < e/√d_k).
    ``scores``: :func:`sweep_scores` of ``(d_k,)`` and the same arguments, whose raw scores are these (the same
    q·kᵀ of the same chunks), so nothing is drawn again.
    """
    d_k = check_d_k(d_k)
    _check_common(seq_len, n_samples, seed, distribution, 1.0)
    check_memory(d_k, seq_len, n_samples, distribution)
    plan = row_plan(seq_len, n_samples)
    moments = _Moments()
    flat = torch.empty(plan.scores, dtype=torch.float32)  # every measured score, for the histogram
    at = 0
    spec = ((d_k,), int(seq_len), int(n_samples), int(seed), distribution)
    for s in _scores_of(d_k, plan, seed, distribution, torch.device(device), scores, spec):
        moments.add(s)
        flat[at : at + s.numel()] = s.detach().reshape(-1).to("cpu", torch.float32)
        at += s.numel()
    scale = 1.0 / math.sqrt(d_k)
    values = flat.numpy()
    lim = float(np.max(np.abs(values))) if values.size else 1.0
    lim = lim if lim > 0 else 1.0
    density, edges = np.histogram(values, bins=bins, range=(-lim, lim), density=True)
    return ScoreSample(
        d_k=int(d_k),
        seq_len=int(seq_len),
        n_samples=int(n_samples),
        distribution=distribution,
        n_scores=plan.scores,
        n_rows=plan.rows,
        total_rows=plan.total_rows,
        raw_var=moments.var,
        scaled_var=moments.var * scale * scale,
        raw_density=density.astype(np.float32),
        raw_edges=edges.astype(np.float32),
        scaled_density=(density / scale).astype(np.float32),
        scaled_edges=(edges * scale).astype(np.float32),
    )


def _first_sequence(
    d_k: int,
    seq_len: int,
    n_samples: int,
    seed: int,
    distribution: str,
    device: torch.device | str,
    qk: tuple[np.ndarray, np.ndarray] | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """q, k ``[T, d_k]`` of the sample's first sequence (the one every example view shows), on ``device``:
    ``qk`` (:func:`first_sequence` of the same arguments) when given, else drawn (its whole sampling block)."""
    if qk is not None:
        if qk[0].shape != (seq_len, d_k) or qk[1].shape != (seq_len, d_k):
            raise ValueError(f"qk holds {qk[0].shape} and {qk[1].shape}, not the first sequence's ({seq_len}, {d_k})")
        return torch.from_numpy(qk[0]).to(device), torch.from_numpy(qk[1]).to(device)
    plan = row_plan(seq_len, n_samples)
    q, k, _ = _draw_block(d_k, seq_len, min(plan.block, n_samples), 0, seed, distribution)
    return q[0].clone().to(device), k[0].clone().to(device)


# The first sequence is kept between τ and row moves (first_sequence) when its q and k take at most this many bytes.
FIRST_SEQUENCE_BYTES = 8 * 2**20


def first_sequence(
    d_k: int,
    seq_len: int = 16,
    n_samples: int = 256,
    seed: int = 0,
    distribution: str = "normal",
    scores: SweepScores | None = None,
) -> tuple[np.ndarray, np.ndarray] | None:
    """q, k ``[T, d_k]`` (CPU float32) of the first sampled sequence, the one :func:`example_maps` and
    :func:`example_scores` show, to pass them as ``qk=`` (drawing it means drawing its whole sampling block:
    up to 256 sequences). None when they would take more than :data:`FIRST_SEQUENCE_BYTES`. Raises
    :class:`ConfigError` as those functions do. ``scores`` (:func:`sweep_scores` of ``(d_k,)``, the same
    arguments and ``with_first``) gives them without drawing; ``ValueError`` for scores of other arguments."""
    d_k = _check_example(d_k, seq_len, n_samples, seed, distribution, 1)
    if 2 * 4 * int(seq_len) * d_k > FIRST_SEQUENCE_BYTES:
        return None
    if scores is not None:
        spec = ((d_k,), int(seq_len), int(n_samples), int(seed), distribution)
        if scores.spec != spec:
            raise ValueError(f"scores were drawn for {scores.spec}, not {spec}")
        if scores.first is not None:
            return scores.first
    q, k = _first_sequence(d_k, int(seq_len), n_samples, seed, distribution, "cpu")
    return q.numpy(), k.numpy()


def _check_example(d_k: object, seq_len: int, n_samples: int, seed: int, distribution: str, rows: int) -> int:
    d_k = check_d_k(d_k)
    _check_common(seq_len, n_samples, seed, distribution, 1.0)
    n_drawn = min(row_plan(seq_len, n_samples).block, n_samples)
    need = _block_bytes(d_k, seq_len, n_drawn, distribution) + 4 * 2 * seq_len * d_k + 4 * _MAP_SLOTS * rows * seq_len
    _check_bytes(need, "the first sequence's scores")
    return d_k


def example_scores(
    d_k: int,
    seq_len: int = 16,
    n_samples: int = 256,
    seed: int = 0,
    distribution: str = "normal",
    device: torch.device | str = "cpu",
    rows: list[int] | None = None,
    qk: tuple[np.ndarray, np.ndarray] | None = None,
) -> np.ndarray:
    """Raw q·k of the first sampled sequence, the one the maps, the row and the float16 views show.

    float32 ``[len(rows), T]`` (query rows, key columns; every row when ``rows`` is
    None), the same numbers the sweep measures for that sequence. ``qk``: :func:`first_sequence` of the
    same arguments, so nothing is drawn.
    """
    idx = list(range(seq_len)) if rows is None else [int(r) for r in rows]
    for r in idx:
        check_int("row", r, 0, seq_len - 1)
    d_k = _check_example(d_k, seq_len, n_samples, seed, distribution, len(idx))
    q, k = _first_sequence(d_k, seq_len, n_samples, seed, distribution, device, qk)
    return (q[idx] @ k.T).to("cpu", torch.float32).numpy()  # (R, T)


@dataclass(frozen=True)
class ExampleMaps:
    """The first sequence through softmax without and with 1/sqrt(d_k), block-max pooled, CPU float32.

    ``unscaled``/``scaled`` ``[B, B]``: the largest weight of each ``factor × factor``
    block of softmax(q·k/τ) and softmax(q·k/(√d_k·τ)) over ``[T, T]`` (``factor`` 1:
    the weights themselves; the last blocks may be partial). ``raw`` ``[T, T]``: the
    q·k scores, only when not pooled. ``mean_max_*``: the mean over all T rows of
    each row's largest weight.
    """

    d_k: int
    seq_len: int
    temperature: float
    factor: int
    unscaled: np.ndarray
    scaled: np.ndarray
    raw: np.ndarray | None
    mean_max_unscaled: float
    mean_max_scaled: float


def _pool_rows(w: torch.Tensor, f: int, cols: int) -> torch.Tensor:
    """Block max of ``w`` ``[r, T]`` (r a multiple of f, except at the end) over f×f blocks: ``[ceil(r/f), cols]``."""
    r, t = w.shape
    rp, tp = -(-r // f) * f, cols * f
    if (rp, tp) != (r, t):
        w = torch.nn.functional.pad(w, (0, tp - t, 0, rp - r), value=-math.inf)
    return w.reshape(rp // f, f, cols, f).amax(dim=(1, 3))


def example_maps(
    d_k: int,
    seq_len: int = 16,
    n_samples: int = 256,
    seed: int = 0,
    distribution: str = "normal",
    temperature: float = 1.0,
    max_cells: int = 64,
    device: torch.device | str = "cpu",
) -> ExampleMaps:
    """Softmax maps of the first sampled sequence, unscaled and scaled, pooled to at most ``max_cells`` per side
    (:func:`sequence_maps` of its q and k; with :func:`first_sequence` kept, call that directly: nothing drawn)."""
    _check_common(seq_len, n_samples, seed, distribution, temperature)
    t = int(seq_len)
    d_k = _check_example(d_k, t, n_samples, seed, distribution, max(_map_chunk(t, max_cells)))
    q, k = _first_sequence(d_k, t, n_samples, seed, distribution, device)
    return sequence_maps(q, k, temperature, max_cells)


def _map_chunk(t: int, max_cells: int) -> tuple[int, int]:
    """(query rows per chunk, pooling factor) of :func:`sequence_maps` for ``t`` keys."""
    f = -(-t // max_cells) if t > max_cells else 1
    return min(t, f * max(1, (CHUNK_SCORES // t) // f)), f  # a whole number of block rows per chunk


def sequence_maps(
    q: torch.Tensor | np.ndarray,
    k: torch.Tensor | np.ndarray,
    temperature: float = 1.0,
    max_cells: int = 64,
    device: torch.device | str | None = None,
) -> ExampleMaps:
    """Softmax maps of one sequence's q, k ``[T, d_k]`` (tensors or arrays; computed on ``device``, default
    where q is), unscaled and scaled, pooled to at most ``max_cells`` per side.

    Computed by chunks of query rows (float64 softmax, like :func:`softmax_weights`)
    and pooled on the way with one block factor for both sides, the same blocks
    as :func:`attn_core.figures.pool_max`, so no ``[T, T]`` map is ever held.
    """
    temperature = check_temperature(temperature)
    q = torch.as_tensor(q, device=device)
    k = torch.as_tensor(k, device=q.device)
    if q.ndim != 2 or k.shape != q.shape:
        raise ValueError(f"q and k must both be [T, d_k], got {tuple(q.shape)} and {tuple(k.shape)}")
    t, d_k = q.shape
    rc, f = _map_chunk(t, max_cells)
    cols = -(-t // f)
    factors = (1.0 / temperature, 1.0 / (math.sqrt(d_k) * temperature))
    # outputs allocated up front: small results kept between the large chunk tensors fragment the heap
    pooled = (np.empty((cols, cols), dtype=np.float32), np.empty((cols, cols), dtype=np.float32))
    raw = np.empty((t, t), dtype=np.float32) if f == 1 else None
    row_max = [0.0, 0.0]
    for r0 in range(0, t, rc):
        s = q[r0 : r0 + rc] @ k.T  # (rc, T) raw q·k
        if raw is not None:
            raw[r0 : r0 + rc] = s.cpu().numpy()
        for i, c in enumerate(factors):
            w = torch.softmax(s.double() * c, dim=-1).float()  # (rc, T)
            row_max[i] += float(w.amax(dim=-1).double().sum())
            pooled[i][r0 // f : (r0 + rc + f - 1) // f] = _pool_rows(w, f, cols).cpu().numpy()
            del w
        del s
    unscaled, scaled = pooled
    return ExampleMaps(
        d_k=int(d_k),
        seq_len=int(t),
        temperature=float(temperature),
        factor=f,
        unscaled=unscaled,
        scaled=scaled,
        raw=raw,
        mean_max_unscaled=row_max[0] / t,
        mean_max_scaled=row_max[1] / t,
    )


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
