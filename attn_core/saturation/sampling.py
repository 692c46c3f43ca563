"""Sampling queries and keys for the saturation measures: what a sample depends on (:class:`SamplingSpec`), which
rows of it are measured (:func:`row_plan`), the draws themselves, and the memory they take.

For q, k with independent zero-mean unit-variance entries, Var(q·k) = d_k. Every draw is seeded by the spec's
seed, d_k, the distribution and the sampling block, on the CPU, so every device sees the same numbers.

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
import torch

from attn_core.attention.tokens import sinusoidal_positions
from attn_core.runtime.config import MAX_HEAD_DIM, MAX_SEQ_LEN, ConfigError, check_int, unknown_option
from attn_core.runtime.guard import format_bytes, max_bytes
from attn_core.saturation.measures import ROW_NORMS

DISTRIBUTIONS = ("normal", "projected")
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
# The first sequence is kept between τ and row moves when its q and k take at most this many bytes.
FIRST_SEQUENCE_BYTES = 8 * 2**20


# ---------------------------------------------------------------- what a sample depends on
@dataclass(frozen=True)
class SamplingSpec:
    """What a sample of queries and keys depends on besides d_k: ``n_samples`` sequences of ``seq_len`` tokens,
    their entries drawn from ``distribution`` (:data:`DISTRIBUTIONS`) by generators seeded with ``seed``.

    Checked when made: :class:`ConfigError` naming ``seq_len`` (1 to MAX_SEQ_LEN), ``samples`` (at least 1),
    ``seed`` (0 to 2³¹ - 1) or ``distribution``; whole numbers given as floats are kept as ints.
    """

    seq_len: int = 16
    n_samples: int = 256
    seed: int = 0
    distribution: str = "normal"

    def __post_init__(self) -> None:
        object.__setattr__(self, "seq_len", check_int("seq_len", self.seq_len, 1, MAX_SEQ_LEN))
        object.__setattr__(self, "n_samples", check_int("samples", self.n_samples, 1))
        object.__setattr__(self, "seed", check_int("seed", self.seed, 0, 2**31 - 1))
        if self.distribution not in DISTRIBUTIONS:
            raise unknown_option("distribution", self.distribution, DISTRIBUTIONS)

    @property
    def plan(self) -> RowPlan:
        """The rows of this sample that are measured (:func:`row_plan`)."""
        return row_plan(self.seq_len, self.n_samples)


def check_d_k(d_k: object) -> int:
    """``d_k`` as an int from 1 to 1024, or :class:`ConfigError` naming ``d_k``."""
    return check_int("d_k", d_k, 1, MAX_HEAD_DIM)


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


# ---------------------------------------------------------------- memory
def _block_bytes(d_k: int, seq_len: int, n_drawn: int, distribution: str) -> int:
    """q and k of one block ``[n, T, d_k]`` float32, and for ``projected`` its embeddings and positions."""
    rows, d, m = n_drawn * seq_len, int(d_k), PROJECTED_D_MODEL
    total = 4 * 2 * rows * d
    if distribution == "projected":
        # embeddings twice while positions are added, the float64 positions being built, the projections
        total += 4 * (2 * rows * m + 6 * seq_len * m + 2 * m * d)
    return total


def estimate_bytes(spec: SamplingSpec, d_k: int) -> int:
    """Peak memory, in bytes, of sampling and measuring one ``d_k`` of ``spec`` (an upper-bound estimate).

    One sampling block of q and k (:func:`_block_bytes`) plus the copy of the
    measured queries, the downstream weights of every measured row and their
    block as drawn, the measured scores kept for the histogram, the per-row norms
    kept for the medians (:data:`ROW_NORMS`, unscaled and scaled), one chunk of at
    most :data:`CHUNK_SCORES` scores at ``_SCORE_SLOTS`` float32 slots each, and
    that chunk's gradient ∂L/∂q (all float32). Bounded by the plan, so it stops
    growing with ``n_samples``. The sweep measures more chunks' (d_k, scaling) pairs at once only within
    what the budget leaves (:func:`pairs_per_batch`).
    """
    return _plan_bytes(spec.plan, int(d_k), spec.distribution)


def _plan_bytes(plan: RowPlan, d_k: int, distribution: str) -> int:
    """:func:`estimate_bytes` of the rows of ``plan``."""
    t = plan.seq_len
    n_drawn = min(plan.block, plan.n_samples)
    total = _block_bytes(d_k, t, n_drawn, distribution)
    if plan.queries < t:
        total += 4 * plan.queries * d_k  # the measured queries, picked out of the sequence
    total += 4 * (2 * plan.scores + n_drawn * plan.queries * t)  # G, the kept scores, one block of G
    total += 4 * 2 * len(ROW_NORMS) * plan.rows  # the per-row norms
    total += 4 * _SCORE_SLOTS * plan.chunk_scores()
    total += 4 * (plan.chunk_scores() // t) * d_k  # ∂L/∂q of one chunk's rows
    return total


def _largest_fitting_samples(spec: SamplingSpec, d_k: int, budget: int) -> int:
    """The largest sample count below ``spec.n_samples`` whose estimate fits ``budget`` (0 if none)."""
    lo, hi = 0, spec.n_samples  # estimate(lo) fits (0 trivially), estimate(hi) does not
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if _plan_bytes(row_plan(spec.seq_len, mid), d_k, spec.distribution) <= budget:
            lo = mid
        else:
            hi = mid
    return lo


def pairs_per_batch(spec: SamplingSpec, d_k: int) -> int:
    """How many (d_k, scaling) pairs of one chunk the sweep measures at once: as many as fit in
    :data:`CHUNK_SCORES` scores and in what the memory budget leaves beside :func:`estimate_bytes` (which
    counts one), at least one. Each further pair takes its chunk's score slots; its ∂L/∂q (rows × d_k, only
    when T > d_k) is smaller than those."""
    cs = spec.plan.chunk_scores()
    room = max_bytes() - estimate_bytes(spec, d_k)
    extra = max(0, room) // (4 * _SCORE_SLOTS)  # scores a batch may hold beyond one chunk's
    return max(1, min(CHUNK_SCORES, cs + extra) // cs)


def check_memory(spec: SamplingSpec, d_k: int, what: str = "") -> int:
    """Return the estimate of :func:`estimate_bytes`, or raise ConfigError if it exceeds :func:`max_bytes`.

    The message (prefixed by ``what`` when given) names the samples field and the
    largest sample count that fits.
    """
    need = estimate_bytes(spec, d_k)
    budget = max_bytes()
    if need > budget:
        fits = _largest_fitting_samples(spec, int(d_k), budget)
        fix = f"use at most {fits} samples, or fewer keys" if fits >= 1 else "use fewer keys or a smaller d_k"
        raise ConfigError(
            (f"{what}: " if what else "")
            + f"samples ({spec.n_samples}) × keys ({spec.seq_len}) at d_k = {d_k} need about {format_bytes(need)} "
            f"of memory, more than the budget of {format_bytes(budget)} (set by ATTN_MAX_BYTES); {fix}",
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


def check_example_bytes(spec: SamplingSpec, d_k: int, rows: int) -> None:
    """Raise ConfigError when drawing the first sequence at ``d_k`` (its whole sampling block) and ``rows`` query
    rows of its scores and softmax maps at once exceed the memory budget."""
    t = spec.seq_len
    n_drawn = min(spec.plan.block, spec.n_samples)
    need = _block_bytes(d_k, t, n_drawn, spec.distribution) + 4 * 2 * t * d_k + 4 * _MAP_SLOTS * rows * t
    _check_bytes(need, "the first sequence's scores")


def first_sequence_fits(spec: SamplingSpec, d_k: int) -> bool:
    """Whether q and k of the first sequence at ``d_k`` take at most :data:`FIRST_SEQUENCE_BYTES` (so are kept)."""
    return 2 * 4 * spec.seq_len * int(d_k) <= FIRST_SEQUENCE_BYTES


def sweep_scores_bytes(spec: SamplingSpec, d_k_values: tuple[int, ...] | list[int], with_basis: bool = True) -> int:
    """Bytes the sweep's kept scores (:class:`attn_core.saturation.sweep.SweepScores`) of ``d_k_values`` would hold
    (counted from :func:`row_plan`'s chunks)."""
    plan = spec.plan
    t, total = plan.seq_len, 0
    chunks = [c for _, _, used in plan.blocks() for c in plan.chunks(used)]
    for d in d_k_values:
        per_key = 4 * min(t, int(d)) if with_basis else 0  # float32 Rᵀ [T, T] or K [T, d_k] (the keys' basis)
        total += sum((i1 - i0) * ((r1 - r0) * t * 4 + t * per_key) for i0, i1, r0, r1 in chunks)
    return total


# ---------------------------------------------------------------- the draws
def _seed(*parts: object) -> int:
    digest = hashlib.blake2b("\x00".join(map(str, parts)).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") & (2**63 - 1)


def _generator(block: int, *parts: object) -> torch.Generator:
    """Block 0 keeps the seed of ``parts`` alone (the numbers of a one-block sample); block b adds b."""
    return torch.Generator().manual_seed(_seed(*parts) if block == 0 else _seed(*parts, block))


def _draw_block(
    spec: SamplingSpec, d_k: int, n: int, block: int, w: tuple | None = None
) -> tuple[torch.Tensor, torch.Tensor, tuple | None]:
    """q, k float32 ``[n, T, d_k]`` (CPU) of sampling block ``block``, and the projections used.

    ``normal``: independent N(0, 1) entries. ``projected``: token embeddings
    (N(0, 1) plus sinusoidal positions, unit variance, width 512) times the two
    projections W_Q, W_K with N(0, 1/512) entries, drawn once per seed and d_k
    after block 0's embeddings (one layer); later blocks pass them back as ``w``.
    """
    seq_len = spec.seq_len
    g = _generator(block, "qk", spec.seed, d_k, spec.distribution)
    if spec.distribution == "normal":
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


def sample_qk(spec: SamplingSpec, d_k: int, device: torch.device | str = "cpu") -> tuple[torch.Tensor, torch.Tensor]:
    """Queries and keys of all ``spec.n_samples`` sequences of ``spec.seq_len`` tokens, the ones the sweep measures.

    Returns q, k float32 ``[N, T, d_k]`` on ``device``, drawn on the CPU block by
    block (:func:`_draw_block`) from generators seeded by (seed, d_k,
    distribution, block), so every device sees the same numbers. Refuses, before
    allocating, when the whole sample exceeds the memory budget (the sweep itself
    never holds it all).
    """
    d_k = check_d_k(d_k)
    plan, n = spec.plan, spec.n_samples
    _check_bytes(_block_bytes(d_k, spec.seq_len, n, spec.distribution), "the whole sample of q and k")
    qs, ks, w = [], [], None
    for b, start in enumerate(range(0, n, plan.block)):
        q, k, w = _draw_block(spec, d_k, min(plan.block, n - start), b, w)
        qs.append(q)
        ks.append(k)
    return torch.cat(qs).to(device), torch.cat(ks).to(device)


def draw_first_sequence(
    spec: SamplingSpec, d_k: int, device: torch.device | str = "cpu"
) -> tuple[torch.Tensor, torch.Tensor]:
    """q, k ``[T, d_k]`` of the sample's first sequence (the one every example view shows), on ``device``: drawn
    with its whole sampling block (up to 256 sequences)."""
    q, k, _ = _draw_block(spec, d_k, min(spec.plan.block, spec.n_samples), 0)
    return q[0].clone().to(device), k[0].clone().to(device)


def _loss_block(plan: RowPlan, block: int, n_drawn: int, seed: int) -> torch.Tensor:
    """Downstream weights of sampling block ``block``: float32 ``[n_drawn, queries, T]`` N(0, 1) (CPU)."""
    g = _generator(block, "loss", seed, plan.seq_len, plan.n_samples)
    return torch.randn(n_drawn, plan.queries, plan.seq_len, generator=g)


def downstream_weights(spec: SamplingSpec, device: torch.device | str = "cpu") -> torch.Tensor:
    """The fixed downstream loss ``L = Σ p · G`` of the whole sample: G float32 ``[N, T, T]``, N(0, 1) entries.

    L = Σ_n Σ_i Σ_j p_nij G_nij is a random linear function of the weights p: its
    gradient ∂L/∂p = G stands in for the gradient arriving from the layers above. It depends on
    the seed and the shape only, never on d_k, the distribution or the scaling, so every point of
    the sweep backpropagates the same loss. Drawn block by block like the queries;
    the sweep draws only the blocks (and, at long sequences, the rows) it measures (:func:`measured_loss`).
    """
    plan = spec.plan
    full = RowPlan(plan.seq_len, plan.n_samples, plan.n_samples, plan.seq_len, plan.block)
    _check_bytes(4 * full.scores, "the downstream weights of the whole sample")
    blocks = [_loss_block(full, b, n, spec.seed) for b, n, _ in full.blocks()]
    return torch.cat(blocks).to(device)


def measured_loss(spec: SamplingSpec, device: torch.device | str = "cpu") -> list[torch.Tensor]:
    """The downstream weights G of the measured rows (:func:`downstream_weights`, those rows alone), one float32
    ``[sequences, queries, T]`` per sampling block, on ``device``."""
    plan = spec.plan
    return [
        _loss_block(plan, b, n_drawn, spec.seed)[:n_used].clone().to(device) for b, n_drawn, n_used in plan.blocks()
    ]


def _measured_blocks(
    spec: SamplingSpec, plan: RowPlan, d_k: int, device: torch.device, first: list | None = None
) -> Iterator[tuple[int, torch.Tensor, torch.Tensor]]:
    """``(block, q, k)`` of the measured rows: q ``[n, queries, d_k]``, k ``[n, T, d_k]`` on ``device``.
    ``first``, when given, receives the first sequence's whole q and k ``[T, d_k]`` (CPU) as block 0 is drawn."""
    w = None
    pos = None if plan.queries == plan.seq_len else torch.from_numpy(plan.positions())
    for b, n_drawn, n_used in plan.blocks():
        q, k, w = _draw_block(spec, d_k, n_drawn, b, w)
        if b == 0 and first is not None:
            first.extend((q[0].clone(), k[0].clone()))  # every query position, as draw_first_sequence draws it
        q, k = q[:n_used], k[:n_used]
        if pos is not None:
            q = q[:, pos]  # (n, queries, d_k): the measured positions only
        yield b, q.to(device), k.to(device)
        del q, k


def qk_chunks(
    spec: SamplingSpec, d_k: int, device: torch.device, first: list | None = None
) -> Iterator[tuple[int, tuple[int, int, int, int], torch.Tensor, torch.Tensor]]:
    """``(block, (i0, i1, r0, r1), q, k)`` of every chunk of measured rows: q ``[n, r, d_k]``, k ``[n, T, d_k]``
    (``first``: :func:`_measured_blocks`)."""
    plan = spec.plan
    for b, q, k in _measured_blocks(spec, plan, d_k, device, first):
        for i0, i1, r0, r1 in plan.chunks(q.shape[0]):
            yield b, (i0, i1, r0, r1), q[i0:i1, r0:r1], k[i0:i1]


def score_chunks(
    spec: SamplingSpec, d_k: int, device: torch.device
) -> Iterator[tuple[int, tuple[int, int, int, int], torch.Tensor]]:
    """``(block, (i0, i1, r0, r1), s)``: raw scores s = q·k ``[rows, T]`` of every chunk of measured rows."""
    for b, ranges, q, k in qk_chunks(spec, d_k, device):
        yield b, ranges, (q @ k.transpose(-2, -1)).reshape(-1, spec.seq_len)  # (n·r, T)


def measured_rows(spec: SamplingSpec, d_k: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Exactly what the sweep measures at ``d_k``, for checking it by other means.

    Returns q ``[S, queries, d_k]``, k ``[S, T, d_k]`` and the downstream weights
    G ``[S, queries, T]`` (float32, CPU) of the ``S`` measured sequences of
    :func:`row_plan`. Refuses when they exceed the memory budget.
    """
    d_k = check_d_k(d_k)
    plan = spec.plan
    _check_bytes(4 * (plan.rows * d_k + plan.sequences * spec.seq_len * d_k + plan.scores), "the measured rows")
    blocks = list(_measured_blocks(spec, plan, d_k, torch.device("cpu")))
    g = measured_loss(spec)
    return torch.cat([q for _, q, _ in blocks]), torch.cat([k for _, _, k in blocks]), torch.cat(g)
