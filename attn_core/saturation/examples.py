"""The sample's first sequence, the one the page's example views show: its raw scores (:func:`example_scores`)
and its softmax maps without and with 1/sqrt(d_k) (:func:`example_maps`, :func:`sequence_maps`), pooled so that no
``[T, T]`` map is ever held.

Its q and k can be kept (:func:`first_sequence`) and passed back as ``qk``, so that moves of τ or of the row draw
nothing. Results are CPU float32 numpy and small dataclasses.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from attn_core.runtime.config import check_int, check_temperature
from attn_core.saturation import sampling
from attn_core.saturation.sampling import (
    SamplingSpec,
    check_d_k,
    check_example_bytes,
    draw_first_sequence,
    first_sequence_fits,
)
from attn_core.saturation.sweep import SweepScores


def _first_sequence(
    spec: SamplingSpec, d_k: int, device: torch.device | str, qk: tuple[np.ndarray, np.ndarray] | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """q, k ``[T, d_k]`` of the sample's first sequence (the one every example view shows), on ``device``:
    ``qk`` (:func:`first_sequence` of the same arguments) when given, else drawn (its whole sampling block)."""
    if qk is not None:
        t = spec.seq_len
        if qk[0].shape != (t, d_k) or qk[1].shape != (t, d_k):
            raise ValueError(f"qk holds {qk[0].shape} and {qk[1].shape}, not the first sequence's ({t}, {d_k})")
        return torch.from_numpy(qk[0]).to(device), torch.from_numpy(qk[1]).to(device)
    return draw_first_sequence(spec, d_k, device)


def first_sequence(
    spec: SamplingSpec, d_k: int, scores: SweepScores | None = None
) -> tuple[np.ndarray, np.ndarray] | None:
    """q, k ``[T, d_k]`` (CPU float32) of the first sampled sequence, the one :func:`example_maps` and
    :func:`example_scores` show, to pass them as ``qk=`` (drawing it means drawing its whole sampling block:
    up to 256 sequences). None when they would take more than
    :data:`~attn_core.saturation.sampling.FIRST_SEQUENCE_BYTES`. Raises :class:`~attn_core.runtime.config.ConfigError` as those functions
    do. ``scores`` (:func:`~attn_core.saturation.sweep.sweep_scores` of ``(d_k,)``, the same ``spec`` and
    ``with_first``) gives them without drawing; ``ValueError`` for scores of other arguments."""
    d_k = _check_example(spec, d_k, 1)
    if not first_sequence_fits(spec, d_k):
        return None
    if scores is not None:
        scores.check_drawn((d_k,), spec)
        if scores.first is not None:
            return scores.first
    q, k = _first_sequence(spec, d_k, "cpu")
    return q.numpy(), k.numpy()


def _check_example(spec: SamplingSpec, d_k: object, rows: int) -> int:
    """``d_k`` checked, and the memory of the first sequence's scores with ``rows`` query rows at once."""
    d_k = check_d_k(d_k)
    check_example_bytes(spec, d_k, rows)
    return d_k


def example_scores(
    spec: SamplingSpec,
    d_k: int,
    device: torch.device | str = "cpu",
    rows: list[int] | None = None,
    qk: tuple[np.ndarray, np.ndarray] | None = None,
) -> np.ndarray:
    """Raw q·k of the first sampled sequence, the one the maps, the row and the float16 views show.

    float32 ``[len(rows), T]`` (query rows, key columns; every row when ``rows`` is
    None), the same numbers the sweep measures for that sequence. ``qk``: :func:`first_sequence` of the
    same arguments, so nothing is drawn.
    """
    t = spec.seq_len
    idx = list(range(t)) if rows is None else [int(r) for r in rows]
    for r in idx:
        check_int("row", r, 0, t - 1)
    d_k = _check_example(spec, d_k, len(idx))
    q, k = _first_sequence(spec, d_k, device, qk)
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
    spec: SamplingSpec,
    d_k: int,
    temperature: float = 1.0,
    max_cells: int = 64,
    device: torch.device | str = "cpu",
) -> ExampleMaps:
    """Softmax maps of the first sampled sequence, unscaled and scaled, pooled to at most ``max_cells`` per side
    (:func:`sequence_maps` of its q and k; with :func:`first_sequence` kept, call that directly: nothing drawn)."""
    check_temperature(temperature)
    d_k = _check_example(spec, d_k, max(_map_chunk(spec.seq_len, max_cells)))
    q, k = _first_sequence(spec, d_k, device)
    return sequence_maps(q, k, temperature, max_cells)


def _map_chunk(t: int, max_cells: int) -> tuple[int, int]:
    """(query rows per chunk, pooling factor) of :func:`sequence_maps` for ``t`` keys."""
    f = -(-t // max_cells) if t > max_cells else 1
    return min(t, f * max(1, (sampling.CHUNK_SCORES // t) // f)), f  # a whole number of block rows per chunk


def sequence_maps(
    q: torch.Tensor | np.ndarray,
    k: torch.Tensor | np.ndarray,
    temperature: float = 1.0,
    max_cells: int = 64,
    device: torch.device | str | None = None,
) -> ExampleMaps:
    """Softmax maps of one sequence's q, k ``[T, d_k]`` (tensors or arrays; computed on ``device``, default
    where q is), unscaled and scaled, pooled to at most ``max_cells`` per side.

    Computed by chunks of query rows (float64 softmax, like :func:`attn_core.saturation.measures.softmax_weights`)
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
