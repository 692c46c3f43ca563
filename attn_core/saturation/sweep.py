"""The saturation sweep and what reads it: softmax saturation and its gradients against d_k, with and without
the 1/sqrt(d_k) scaling, measured on the rows of a :class:`~attn_core.saturation.sampling.SamplingSpec`.

Saturation (one weight near 1, the rest near 0) makes the softmax Jacobian diag(p) - p pᵀ nearly vanish: the
gradient of most rows vanishes while a few rows keep a large one, so the sweep reports each gradient's
median and share of tiny rows beside its mean. The τ-independent part of a sweep can be kept
(:class:`SweepScores`) and measured again at any τ. Also here: one d_k's measured scores
(:func:`score_sample`), its largest weights alone (:func:`weight_summary`), and the sweep's numbers at one d_k
(:func:`sweep_at`) with what its gradients show (:func:`gradient_findings`).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from attn_core.runtime.config import SATURATION_THRESHOLD, SMALL_NORM, ConfigError, check_temperature
from attn_core.saturation.measures import (
    ROW_NORMS,
    Moments,
    fp16_failures,
    jacobian_norm_and_top,
    row_entropy,
)
from attn_core.saturation.sampling import (
    RowPlan,
    SamplingSpec,
    check_d_k,
    check_memory,
    first_sequence_fits,
    measured_loss,
    pairs_per_batch,
    qk_chunks,
    score_chunks,
    sweep_scores_bytes,
)

# d_k values of the sweep: 1, 2, 4, ..., 1024 (the page's log steps).
SWEEP_D_K = tuple(2**i for i in range(11))
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


# ---------------------------------------------------------------- one chunk of rows through softmax and back
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
    jac, top = jacobian_norm_and_top(p)
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
    spec: SamplingSpec, d: int, dev: torch.device, with_basis: bool = True, first: list | None = None
) -> Iterator[ScoreChunk]:
    """Every chunk of measured rows at ``d_k = d`` as τ leaves it: the raw scores s = q·kᵀ and the keys' basis
    for ∂L/∂q (:func:`_key_basis`: Rᵀ of Kᵀ = Q R when T ≤ d_k, else K itself; None without ``with_basis``);
    ``first``: :func:`~attn_core.saturation.sampling.qk_chunks`."""
    for b, ranges, q, k in qk_chunks(spec, d, dev, first):
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
    autograd at once (:func:`_measure_batch`, :func:`~attn_core.saturation.sampling.pairs_per_batch`).
    """
    moments = [Moments() for _ in values]
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


# ---------------------------------------------------------------- the sweep
# The τ-independent part of a sweep is kept between τ moves when it takes at most this many bytes.
SCORE_CACHE_BYTES = 48 * 2**20


@dataclass(frozen=True)
class SweepScores:
    """What :func:`saturation_sweep` measures that the temperature τ does not change, kept on the CPU.

    ``chunks[i]`` holds every chunk of measured rows at ``d_k[i]`` as numpy arrays:
    ``(block, (i0, i1, r0, r1), s, basis)`` with the raw scores s = q·kᵀ ``[n, r, T]``
    (float32) and the keys' basis (:func:`_grad_q_norm`), or None for every basis when ``with_basis`` is False
    (scores for what measures no gradient: :func:`score_sample`, :func:`weight_summary`). ``d_k_values`` and
    ``sampling`` drew them. ``first``: q, k ``[T, d_k]`` of the first sequence, drawn with them
    (:func:`attn_core.saturation.examples.first_sequence` reads it), or None.
    """

    d_k_values: tuple[int, ...]
    sampling: SamplingSpec
    chunks: tuple[tuple[tuple, ...], ...]
    with_basis: bool = True
    first: tuple[np.ndarray, np.ndarray] | None = None

    @property
    def nbytes(self) -> int:
        kept = sum(s.nbytes + (0 if basis is None else basis.nbytes) for part in self.chunks for _, _, s, basis in part)
        return kept + (0 if self.first is None else self.first[0].nbytes + self.first[1].nbytes)

    def check_drawn(self, d_k_values: tuple[int, ...], sampling: SamplingSpec) -> None:
        """Raise ValueError unless these scores were drawn for ``d_k_values`` and ``sampling``."""
        if (self.d_k_values, self.sampling) != (tuple(d_k_values), sampling):
            raise ValueError(
                f"scores were drawn for d_k {self.d_k_values} and {self.sampling}, not d_k {tuple(d_k_values)} "
                f"and {sampling}"
            )

    def parts(self, i: int, device: torch.device) -> Iterator[ScoreChunk]:
        """The chunks of ``d_k[i]`` as tensors on ``device`` (each basis None without ``with_basis``)."""
        for b, ranges, s, basis in self.chunks[i]:
            kept = None if basis is None else torch.from_numpy(basis).to(device)
            yield b, ranges, torch.from_numpy(s).to(device), kept


def _checked_sweep(spec: SamplingSpec, d_k_values: tuple[int, ...] | list[int], temperature: float) -> list[int]:
    """The sweep's d_k values, checked with τ and the memory of ``spec`` (before anything is allocated)."""
    values = [check_d_k(d) for d in d_k_values]
    if not values:
        raise ConfigError("d_k_values is empty; give at least one d_k from 1 to 1024", "d_k", "empty_sweep")
    check_temperature(temperature)
    check_memory(spec, max(values), f"the sweep over d_k = {min(values)}…{max(values)}")
    return values


def sweep_scores(
    spec: SamplingSpec,
    d_k_values: tuple[int, ...] | list[int] = SWEEP_D_K,
    device: torch.device | str = "cpu",
    with_basis: bool = True,
    with_first: bool = False,
) -> SweepScores | None:
    """The τ-independent part of :func:`saturation_sweep` (pass it as ``scores=`` to measure any τ from it).

    ``with_basis=False`` keeps the raw scores alone, without the keys' basis that only the sweep's gradients
    read (:func:`_key_basis`: at d_k = 1,024 about a quarter of the time, 24 of 96 ms for 256 sequences of 16
    tokens): enough for :func:`score_sample` and :func:`weight_summary`, refused by :func:`saturation_sweep`.
    ``with_first`` (one d_k only) also keeps the first sequence's q and k, the ones
    :func:`attn_core.saturation.examples.first_sequence` gives, from the same draw (drawing them alone draws their
    whole sampling block again: as long as the scores at d_k = 1,024), unless they are larger than
    :data:`~attn_core.saturation.sampling.FIRST_SEQUENCE_BYTES`.
    None when it would hold more than :data:`SCORE_CACHE_BYTES` (without it,
    :func:`saturation_sweep` measures chunk by chunk and keeps nothing). Raises
    :class:`ConfigError` for a bad argument or over the memory budget.
    """
    values = _checked_sweep(spec, d_k_values, 1.0)
    if with_first and len(values) != 1:
        raise ValueError(f"with_first keeps one d_k's first sequence, not {len(values)} d_k values'")
    if sweep_scores_bytes(spec, values, with_basis) > SCORE_CACHE_BYTES:
        return None  # too large to keep: saturation_sweep measures chunk by chunk and keeps nothing
    dev = torch.device(device)
    first: list | None = [] if with_first and first_sequence_fits(spec, values[0]) else None
    chunks = tuple(
        tuple(
            (b, r, s.cpu().numpy(), None if basis is None else basis.cpu().numpy())
            for b, r, s, basis in _score_parts(spec, d, dev, with_basis, first)
        )
        for d in values
    )
    kept_first = None if not first else (first[0].numpy(), first[1].numpy())
    return SweepScores(tuple(values), spec, chunks, with_basis, kept_first)


def saturation_sweep(
    spec: SamplingSpec,
    d_k_values: tuple[int, ...] | list[int] = SWEEP_D_K,
    temperature: float = 1.0,
    device: torch.device | str = "cpu",
    scores: SweepScores | None = None,
) -> pd.DataFrame:
    """Softmax saturation against d_k, with and without the 1/sqrt(d_k) scaling.

    For each d_k, the ``spec.n_samples`` sequences of ``spec.seq_len`` queries and keys
    (:func:`~attn_core.saturation.sampling.sample_qk`) give raw scores s = q·k; softmax runs on z = s · c / τ with
    c = 1/sqrt(d_k) (scaled) or 1 (unscaled). The rows of :func:`~attn_core.saturation.sampling.row_plan` are
    measured (all of them unless there are more than ``MAX_MEASURED_ROWS`` or
    ``MAX_MEASURED_SCORES`` scores), by chunks of at most ``CHUNK_SCORES`` scores
    (:mod:`attn_core.saturation.sampling`). ``scores`` (:func:`sweep_scores` of the same
    arguments) skips the sampling: only the part τ changes is computed. One row per
    (d_k, scaled) with columns:

    - ``score_var``: measured Var(s · c) = c² Var(s) over all measured scores
      (theory: d_k unscaled, 1 scaled; τ not included);
    - ``max_weight``, ``entropy`` (normalized), ``saturated_frac`` (rows with a
      weight > 0.99): averages over the measured rows;
    - the loss: L = Σ_rows Σ_j p_ij G_ij, with G the fixed N(0, 1) numbers of
      :func:`~attn_core.saturation.sampling.downstream_weights`, one per score (they stand in for ∂L/∂p, the
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
    values = _checked_sweep(spec, d_k_values, temperature)
    if scores is not None:
        scores.check_drawn(tuple(values), spec)
        if not scores.with_basis:
            raise ValueError(
                "these scores hold no keys' basis for the gradients: give sweep_scores(..., with_basis=True)"
            )
    plan = spec.plan
    dev = torch.device(device)
    # the downstream weights of the measured rows, drawn once for every d_k: [sequences, queries, T] per block
    loss = measured_loss(spec, dev)
    if scores is not None:  # every d_k's chunks of the same rows together, measured in batches
        every = [scores.parts(i, dev) for i in range(len(values))]  # the same chunks of rows at every d_k
        parts = (list(enumerate(same)) for same in zip(*every, strict=True))
    else:  # drawn d_k by d_k, chunk by chunk: nothing is kept
        parts = ([(i, part)] for i, d in enumerate(values) for part in _score_parts(spec, d, dev))
    per_batch = pairs_per_batch(spec, max(values))
    rows = _sweep_rows(values, plan, parts, float(temperature), loss, per_batch)
    return pd.DataFrame(rows, columns=list(_SWEEP_COLUMNS))


def _scores_of(spec: SamplingSpec, d_k: int, dev: torch.device, scores: SweepScores | None) -> Iterator[torch.Tensor]:
    """The raw scores s = q·k of ``d_k``'s measured rows, chunk by chunk ``[rows, T]``: from ``scores``
    (:func:`sweep_scores` of ``(d_k,)`` and ``spec``; ``ValueError`` at once for scores of other arguments) or drawn."""
    if scores is None:
        return (s for _, _, s in score_chunks(spec, d_k, dev))
    scores.check_drawn((d_k,), spec)
    return (s.reshape(-1, spec.seq_len) for _, _, s, _ in scores.parts(0, dev))


#: The columns of :func:`saturation_sweep` that :func:`weight_summary` measures alone.
WEIGHT_COLUMNS = ("max_weight", "saturated_frac")


def weight_summary(
    spec: SamplingSpec,
    d_k: int,
    temperature: float = 1.0,
    device: torch.device | str = "cpu",
    scores: SweepScores | None = None,
) -> dict[bool, dict[str, float]]:
    """:data:`WEIGHT_COLUMNS` of :func:`saturation_sweep`'s two rows at ``d_k`` alone, ``{scaled: {column: value}}``
    (unscaled False, scaled True, as :func:`sweep_at` gives them): the same rows, raw scores and softmax, without
    the gradients, Jacobians and float16 checks the sweep measures with them (a tenth of its work).

    ``scores`` (:func:`sweep_scores` of ``(d_k,)`` and the same arguments) skips the sampling. Raises
    :class:`ConfigError` for a bad argument or over the memory budget, ``ValueError`` for scores of other arguments.
    """
    (d,) = _checked_sweep(spec, (d_k,), temperature)
    plan = spec.plan
    chunks = _scores_of(spec, d, torch.device(device), scores)
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


# ---------------------------------------------------------------- one d_k's scores, for the page's views
@dataclass(frozen=True)
class ScoreSample:
    """Scores at one d_k, as CPU float32 numpy and plain numbers (small: cached as is).

    ``n_scores``: scores measured (``n_rows`` measured query rows of
    ``total_rows`` = N·T, ``seq_len`` keys each; see :func:`~attn_core.saturation.sampling.row_plan`).
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
    spec: SamplingSpec,
    d_k: int,
    device: torch.device | str = "cpu",
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
    check_memory(spec, d_k)
    plan = spec.plan
    moments = Moments()
    flat = torch.empty(plan.scores, dtype=torch.float32)  # every measured score, for the histogram
    at = 0
    for s in _scores_of(spec, d_k, torch.device(device), scores):
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
        seq_len=spec.seq_len,
        n_samples=spec.n_samples,
        distribution=spec.distribution,
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


# ---------------------------------------------------------------- the sweep at one d_k
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
