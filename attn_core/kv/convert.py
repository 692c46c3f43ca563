"""From MHA to GQA: converting a layer, measuring what the conversion loses, mapping conventions.

:func:`mha_to_gqa` builds a grouped-query layer from a multi-head one by pooling
the K and V projection heads of each group (the GQA paper's mean pooling), by
keeping the first head of each group, or by drawing new random heads.
:func:`conversion_study` measures, for every divisor of ``n_heads``, how far each
converted layer's output and attention maps are from the original.

Two conventions map query heads to KV heads: **contiguous** (query head ``h``
reads KV head ``h // n_rep``; ``repeat_kv`` / ``repeat_interleave``, what
:class:`~attn_core.attention.gqa.GroupedQueryAttention` and LLaMA use) and
**interleaved** (``h mod n_kv_heads``; a plain ``Tensor.repeat``). A checkpoint
trained with one and run with the other pairs most query heads with the wrong
keys and values.

Long sequences: the ``[H, T, T]`` maps of thousands of tokens do not fit in memory
and would take minutes to compare for every head and every conversion. Up to
:data:`EXACT_CELLS` map cells the studies run as they always did, on every
query row at once; beyond that they run by chunks of query rows
(:data:`CHUNK_CELLS` cells at a time) and, past :data:`STUDY_CELLS`, on an
evenly spaced subset of the query rows (:func:`study_rows`), each still scored
against every key. The results say how many rows they were measured on.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import torch

from attn_core.attention.gqa import (
    AttentionOutput,
    GroupedQueryAttention,
    kv_group_of,
    repeat_kv,
    resolve_scale,
    scaled_dot_product_attention,
)
from attn_core.attention.longmaps import pool_factor
from attn_core.attention.maps import estimate_bytes, init_layer
from attn_core.attention.tokens import embed
from attn_core.runtime.config import AttentionConfig, ConfigError, check_int, check_kv_heads, divisors, unknown_option
from attn_core.runtime.guard import check_budget, max_bytes

if TYPE_CHECKING:
    from attn_core.attention.sources import AttentionSource

METHODS = ("mean", "first", "random")
# The GQA paper's ranking of the conversions after uptraining, best first (Ainslie et al. 2023,
# "GQA: Training Generalized Multi-Query Transformer Models from Multi-Head Checkpoints",
# arXiv 2305.13245, ablation on checkpoint conversion): mean pooling, then the first head, then random.
PAPER_ORDER = ("mean", "first", "random")
MAPPINGS = ("contiguous", "interleaved")
SOURCES = ("random", "correlated")
EXACT_CELLS = 2**22  # H × Tq × Tk up to which the studies build every map at once (the exact, original path)
STUDY_CELLS = 2**26  # H × rows × Tk the mapping study measures at most: beyond it the query rows are subsampled
CONV_CELLS = 2**24  # the same for the conversion study, which runs the layer once per divisor and method
CHUNK_CELLS = 2**21  # H × rows × Tk of one chunk of query rows on the long path
PAIR_SIDE = 64  # cells a side of the pair maps (block max beyond)


def study_rows(n_heads: int, t_q: int, t_k: int, cells: int | None = None) -> range:
    """The query rows a long study measures: all of them, or every ``step``-th so ``H × rows × Tk <= cells``.

    ``range(0, t_q, step)``: evenly spaced from row 0, so the rows stand for the
    whole sequence, each scored against all ``t_k`` keys. ``cells`` defaults to :data:`STUDY_CELLS`.
    """
    cells = STUDY_CELLS if cells is None else cells
    budget_rows = max(1, int(cells) // max(1, int(n_heads) * int(t_k)))
    step = max(1, -(-int(t_q) // budget_rows))
    return range(0, int(t_q), step)


def _exact_fits(cfg: AttentionConfig, t_q: int, t_k: int) -> bool:
    """Whether the original path (every ``[H, Tq, Tk]`` map of the layer ``cfg`` at once) is small enough to take."""
    if cfg.n_heads * t_q * t_k > EXACT_CELLS:
        return False
    return estimate_bytes(cfg, t_q, t_k) <= max_bytes()


def _source_config(source: AttentionSource) -> AttentionConfig:
    """The shape of ``source`` as a config (``d_model`` the source's own, else ``n_heads × d_k``), checked."""
    cfg = AttentionConfig(
        n_heads=source.n_heads,
        n_kv_heads=source.n_kv_heads,
        head_dim=source.head_dim,
        d_model=getattr(source, "d_model", None),
        seq_len=max(1, len(source.tokens_q)),
    )
    cfg.validate()
    return cfg


# ---------------------------------------------------------------- mapping conventions
def _check_mapping(mapping: str) -> None:
    if mapping not in MAPPINGS:
        raise unknown_option("mapping", mapping, MAPPINGS)


def kv_head_for(head: int, n_heads: int, n_kv_heads: int, mapping: str = "contiguous") -> int:
    """The KV head query head ``head`` reads: ``head // n_rep`` (contiguous) or ``head % n_kv_heads`` (interleaved)."""
    _check_mapping(mapping)
    group = kv_group_of(head, n_heads, n_kv_heads)  # validates head and the divisibility
    return group if mapping == "contiguous" else head % n_kv_heads


def kv_map(n_heads: int, n_kv_heads: int, mapping: str = "contiguous") -> list[int]:
    """``[kv_head_for(h) for h in range(n_heads)]``."""
    check_kv_heads(n_heads, n_kv_heads)
    return [kv_head_for(h, n_heads, n_kv_heads, mapping) for h in range(n_heads)]


def mismatched_heads(n_heads: int, n_kv_heads: int) -> list[int]:
    """The query heads that read a different KV head under the contiguous and the interleaved mapping.

    E.g. 8 heads, 2 KV heads: heads 1, 3, 4, 6 (4 of 8); none for MHA or MQA.
    """
    both = zip(kv_map(n_heads, n_kv_heads, "contiguous"), kv_map(n_heads, n_kv_heads, "interleaved"), strict=True)
    return [h for h, (a, b) in enumerate(both) if a != b]


def expand_kv(x: torch.Tensor, n_rep: int, mapping: str = "contiguous") -> torch.Tensor:
    """``[B, H_kv, T, D] -> [B, H_kv·n_rep, T, D]`` under either convention.

    contiguous: output head ``h`` is input head ``h // n_rep`` (:func:`repeat_kv`);
    interleaved: output head ``h`` is input head ``h % H_kv`` (``x.repeat(1, n_rep, 1, 1)``).
    """
    _check_mapping(mapping)
    if mapping == "contiguous":
        return repeat_kv(x, n_rep)
    return x.repeat(1, n_rep, 1, 1)


def _attend_with_mapping(
    q: np.ndarray, k: np.ndarray, scale: float, mask: np.ndarray | None, mapping: str
) -> tuple[torch.Tensor, torch.Tensor]:
    """(weights, scores) ``[H, Tq, Tk]`` with the KV heads expanded by ``mapping``."""
    qt = torch.from_numpy(np.asarray(q, dtype=np.float32))[None]  # (1, H, Tq, D)
    kt = torch.from_numpy(np.asarray(k, dtype=np.float32))[None]  # (1, H_kv, Tk, D)
    h, h_kv = qt.shape[1], kt.shape[1]
    check_kv_heads(h, h_kv)
    k_full = expand_kv(kt, h // h_kv, mapping)  # (1, H, Tk, D)
    m = None if mask is None else torch.from_numpy(np.asarray(mask, dtype=bool))
    res = scaled_dot_product_attention(qt, k_full, k_full, mask=m, scale=scale)
    return res.weights[0], res.scores[0]


def weights_with_mapping(
    q: np.ndarray, k: np.ndarray, scale: float, mask: np.ndarray | None = None, mapping: str = "contiguous"
) -> np.ndarray:
    """Attention weights when the KV heads are expanded with ``mapping``.

    q ``[H, Tq, D]``, k ``[H_kv, Tk, D]`` (CPU numpy, as in :class:`~attn_core.attention.maps.AttentionMaps`),
    mask bool ``[Tq, Tk]`` (True = may attend). Returns float32 ``[H, Tq, Tk]``.
    """
    return _attend_with_mapping(q, k, scale, mask, mapping)[0].numpy().astype(np.float32)


@dataclass(frozen=True)
class MappingMismatch:
    """A checkpoint built with one mapping and run with the other.

    ``built[h]`` / ``run[h]``: the KV head query head ``h`` reads as trained and as
    run; ``weights_built``, ``weights_run`` float32 ``[H, Tq, Tk]`` (None on the
    long path, :func:`mapping_mismatch_rows`); ``kl`` float64 ``[H]``: mean over
    query rows of KL(P_built ‖ P_run) in nats (0 where both mappings agree),
    measured on ``kl_rows`` of the ``t_q`` query rows, rows ``0, row_step, 2·row_step …``.
    """

    built_with: str
    run_with: str
    built: tuple[int, ...]
    run: tuple[int, ...]
    weights_built: np.ndarray | None
    weights_run: np.ndarray | None
    kl: np.ndarray
    t_q: int = 0
    kl_rows: int = 0
    row_step: int = 1

    @property
    def full(self) -> bool:
        """True when the weights of every head are kept (the original path); False on the long path."""
        return self.weights_built is not None

    @property
    def subset(self) -> bool:
        """True when ``kl`` was measured on ``kl_rows`` of the ``t_q`` query rows (every ``row_step``-th)."""
        return 0 < self.kl_rows < self.t_q


def mapping_mismatch(
    q: np.ndarray, k: np.ndarray, scale: float, mask: np.ndarray | None = None, built_with: str = "contiguous"
) -> MappingMismatch:
    """Run ``q`` ``[H, Tq, D]`` against ``k`` ``[H_kv, Tk, D]`` with the right and with the wrong mapping.

    ``built_with`` is the convention the weights were trained with; the other one
    is the mistake. mask bool ``[Tq, Tk]``.
    """
    _check_mapping(built_with)
    run_with = MAPPINGS[1 - MAPPINGS.index(built_with)]
    h, h_kv = np.shape(q)[0], np.shape(k)[0]
    w_b, s_b = _attend_with_mapping(q, k, scale, mask, built_with)
    w_r, s_r = _attend_with_mapping(q, k, scale, mask, run_with)
    lp, lq = torch.log_softmax(s_b.double(), -1), torch.log_softmax(s_r.double(), -1)
    p = lp.exp()
    kl = torch.where(p > 0, p * (lp - lq), torch.zeros_like(p)).sum(-1).mean(-1)  # (H,)
    return MappingMismatch(
        built_with=built_with,
        run_with=run_with,
        built=tuple(kv_map(h, h_kv, built_with)),
        run=tuple(kv_map(h, h_kv, run_with)),
        weights_built=w_b.numpy().astype(np.float32),
        weights_run=w_r.numpy().astype(np.float32),
        kl=kl.numpy(),
        t_q=int(w_b.shape[1]),
        kl_rows=int(w_b.shape[1]),
    )


def _as_tensor(x: np.ndarray | torch.Tensor, device: torch.device | None = None) -> torch.Tensor:
    t = x if isinstance(x, torch.Tensor) else torch.from_numpy(np.asarray(x, dtype=np.float32))
    return t.to(device=device or t.device, dtype=torch.float32)


def mapping_mismatch_rows(
    q: np.ndarray | torch.Tensor,
    k: np.ndarray | torch.Tensor,
    scale: float,
    built_with: str = "contiguous",
    rows: Sequence[int] | None = None,
    chunk_cells: int = CHUNK_CELLS,
) -> MappingMismatch:
    """:func:`mapping_mismatch` without masks for long sequences: the KL per head only, by chunks of query rows.

    q ``[H, Tq, D]``, k ``[H_kv, Tk, D]`` (numpy or torch; torch stays on its
    device). The KL of each head whose KV head changes is summed row by row over
    ``rows`` (default: every row), each row against every key, with the same
    arithmetic as :func:`mapping_mismatch` (float32 scores, float64 softmax);
    at most ``chunk_cells`` scores are alive at once and no weights are kept.
    """
    _check_mapping(built_with)
    run_with = MAPPINGS[1 - MAPPINGS.index(built_with)]
    qt = _as_tensor(q)
    kt = _as_tensor(k, qt.device)
    h, t_q, _ = qt.shape
    h_kv, t_k, _ = kt.shape
    check_kv_heads(h, h_kv)
    built, run = kv_map(h, h_kv, built_with), kv_map(h, h_kv, run_with)
    rows = range(t_q) if rows is None else rows
    row_idx = torch.as_tensor(list(rows), dtype=torch.long, device=qt.device)
    if row_idx.numel() == 0 or int(row_idx.min()) < 0 or int(row_idx.max()) >= t_q:
        raise ConfigError(f"rows must be query rows between 0 and {t_q - 1}", "rows", "rows_range", last=t_q - 1)
    n_rows = int(row_idx.numel())
    step = rows.step if isinstance(rows, range) and n_rows > 1 else 1
    kl = np.zeros(h, dtype=np.float64)
    per = max(1, int(chunk_cells) // t_k)  # query rows per chunk
    with torch.no_grad():
        for i in (i for i in range(h) if built[i] != run[i]):  # heads that keep their KV head have KL 0
            q_rows = qt[i, row_idx]  # (R, D)
            k_b, k_r = kt[built[i]].T, kt[run[i]].T  # (D, Tk), no copies
            total = 0.0
            for r0 in range(0, n_rows, per):
                qc = q_rows[r0 : r0 + per]  # (c, D)
                lp = torch.log_softmax(((qc @ k_b) * scale).double(), -1)  # (c, Tk)
                lq = torch.log_softmax(((qc @ k_r) * scale).double(), -1)
                p = lp.exp()
                total += float(torch.where(p > 0, p * (lp - lq), torch.zeros_like(p)).sum())
                del lp, lq, p
            kl[i] = total / n_rows
    return MappingMismatch(
        built_with=built_with,
        run_with=run_with,
        built=tuple(built),
        run=tuple(run),
        weights_built=None,
        weights_run=None,
        kl=kl,
        t_q=t_q,
        kl_rows=n_rows,
        row_step=step,
    )


def estimate_study_bytes(source: AttentionSource, n_shown: int, chunk_cells: int = CHUNK_CELLS) -> int:
    """Peak bytes of a long study of ``n_shown`` heads of ``source`` (an upper bound): what the source needs
    to make their Q and K (:meth:`~attn_core.attention.sources.SeededLayer.extra_bytes`) and one chunk of rows
    (float32 scores, float64 log-softmaxes, p and the terms)."""
    return source.extra_bytes(n_shown) + 4 * 14 * min(chunk_cells, len(source.tokens_q) * len(source.keys))


def _all_qk(source: AttentionSource, dev: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """Q of every head ``[H, Tq, D]`` and K of every KV head ``[H_kv, Tk, D]`` of ``source``, on ``dev``."""
    q, k, _ = source.qkv(range(source.n_heads), dev)
    return q, torch.stack([k[g] for g in range(source.n_kv_heads)])


def mapping_on_source(
    source: AttentionSource, built_with: str = "contiguous", device: str | torch.device = "cpu"
) -> MappingMismatch:
    """An attention source (the KV-sharing page's seeded layer) run with ``built_with`` and with the other mapping.

    Short sequences take the original path (:func:`mapping_mismatch` on every map,
    every weight kept, the source's mask applied). Long ones (more than
    :data:`EXACT_CELLS` map cells, or above the memory budget) take
    :func:`mapping_mismatch_rows` on the rows of :func:`study_rows` (no mask: the
    page's layer has none): the full ``[H, Tq, Tk]`` maps are never built.
    """
    _check_mapping(built_with)
    h, t_q, t_k = source.n_heads, len(source.tokens_q), len(source.keys)
    cfg = _source_config(source)
    dev = torch.device(device)
    if _exact_fits(cfg, t_q, t_k):
        q, k = _all_qk(source, dev)
        allowed = source.allowed(torch.arange(t_q, device=dev))
        mask = None if bool(allowed.all()) else allowed.cpu().numpy()
        return mapping_mismatch(q.cpu().numpy(), k.cpu().numpy(), source.scale, mask, built_with)
    check_budget(
        estimate_study_bytes(source, h),
        f"the mapping study of {h} heads × {t_q} tokens",
        "use fewer tokens or fewer heads",
        "seq_len",
    )
    q, k = _all_qk(source, dev)
    return mapping_mismatch_rows(q, k, source.scale, built_with, study_rows(h, t_q, t_k))


@dataclass(frozen=True)
class PairMaps:
    """One query head's map as trained and as run with the other mapping, for the pair view (CPU numpy).

    ``weights_built`` / ``weights_run`` ``[R, C]``: the full ``[Tq, Tk]`` maps when
    ``factor`` is 1, else block maxima of ``factor × factor`` blocks (the last
    ones smaller). ``max_diff``: the largest ``|P_built − P_run|`` over every
    cell, measured before any pooling.
    """

    head: int
    kv_built: int
    kv_run: int
    weights_built: np.ndarray
    weights_run: np.ndarray
    factor: int
    max_diff: float
    t_q: int
    t_k: int

    @property
    def pooled(self) -> bool:
        return self.factor > 1


def pair_from_mismatch(mm: MappingMismatch, head: int) -> PairMaps:
    """The :class:`PairMaps` of ``head`` from a study that kept every weight (``mm.full``)."""
    if not mm.full:
        raise ConfigError("this mapping study kept no maps; use pair_on_source", "head", "no_maps_kept")
    head = check_int("head", head, 0, len(mm.built) - 1)
    a, b = mm.weights_built[head], mm.weights_run[head]
    return PairMaps(head, mm.built[head], mm.run[head], a, b, 1, float(np.max(np.abs(a - b))), *a.shape)


def _pool_rows_cols(p: torch.Tensor, f: int, n_c: int) -> torch.Tensor:
    """Block max of ``[..., c, Tk]`` over ``f`` rows and ``f`` keys: ``[..., ceil(c/f), n_c]`` (padding ignored)."""
    if f == 1:
        return p
    *lead, c, t_k = p.shape
    n_r = -(-c // f)
    if c == n_r * f and t_k == n_c * f:  # whole blocks: no padded copy
        return p.view(*lead, n_r, f, n_c, f).amax(dim=(-3, -1))
    padded = torch.full((*lead, n_r * f, n_c * f), float("-inf"), dtype=p.dtype, device=p.device)
    padded[..., :c, :t_k] = p
    return padded.view(*lead, n_r, f, n_c, f).amax(dim=(-3, -1))


def pair_maps_rows(
    q_h: np.ndarray | torch.Tensor,
    k_built: np.ndarray | torch.Tensor,
    k_run: np.ndarray | torch.Tensor,
    scale: float,
    max_side: int = PAIR_SIDE,
    chunk_cells: int = CHUNK_CELLS,
) -> tuple[np.ndarray, np.ndarray, int, float]:
    """(block max of P_built, of P_run, factor, max |P_built − P_run|) of one head, by chunks of query rows.

    q_h ``[Tq, D]``, k_built / k_run ``[Tk, D]``; no mask. The maps are pooled to
    at most ``max_side`` cells a side (:func:`attn_core.attention.longmaps.pool_factor`);
    the difference is measured on every unpooled weight.
    """
    qt = _as_tensor(q_h)
    ks = torch.stack([_as_tensor(k_built, qt.device), _as_tensor(k_run, qt.device)]).transpose(-2, -1)  # (2, D, Tk)
    t_q, t_k = qt.shape[0], ks.shape[-1]
    f = pool_factor(t_q, t_k, max_side)
    n_r, n_c = -(-t_q // f), -(-t_k // f)
    out = torch.empty((2, n_r, n_c), dtype=torch.float32, device=qt.device)
    per = max(f, (max(1, int(chunk_cells) // (2 * t_k)) // f) * f)  # whole row blocks per chunk
    max_diff = 0.0
    with torch.no_grad():
        for r0 in range(0, t_q, per):
            qc = qt[r0 : r0 + per]  # (c, D)
            p = (qc[None] @ ks).mul_(scale)  # (2, c, Tk) scores, turned into weights in place
            p.sub_(p.amax(-1, keepdim=True)).exp_()
            p.div_(p.sum(-1, keepdim=True))
            max_diff = max(max_diff, float((p[0] - p[1]).abs_().max()))
            out[:, r0 // f : r0 // f + -(-qc.shape[0] // f)] = _pool_rows_cols(p, f, n_c)
            del p
    w = out.cpu().numpy()
    return w[0], w[1], f, max_diff


def pair_on_source(
    source: AttentionSource,
    head: int,
    built_with: str = "contiguous",
    max_side: int = PAIR_SIDE,
    device: str | torch.device = "cpu",
) -> PairMaps:
    """:class:`PairMaps` of ``head`` of an unmasked source, by chunks of query rows (any length, never ``[T, T]``)."""
    _check_mapping(built_with)
    n_heads, n_kv_heads, t_q, t_k = source.n_heads, source.n_kv_heads, len(source.tokens_q), len(source.keys)
    _source_config(source)
    head = check_int("head", head, 0, n_heads - 1)
    run_with = MAPPINGS[1 - MAPPINGS.index(built_with)]
    a, b = kv_head_for(head, n_heads, n_kv_heads, built_with), kv_head_for(head, n_heads, n_kv_heads, run_with)
    check_budget(estimate_study_bytes(source, 2), f"the maps of one head × {t_q} tokens", "use fewer tokens", "seq_len")
    n_rep = n_heads // n_kv_heads
    other = b if a == head // n_rep else a  # the KV head that head's own group does not bring
    q, k, _ = source.qkv([head, other * n_rep], torch.device(device))
    wb, wr, f, diff = pair_maps_rows(q[0], k[a], k[b], source.scale, max_side)
    return PairMaps(head, a, b, wb, wr, f, diff, t_q, t_k)


# ---------------------------------------------------------------- conversion
def _head_rms(w: torch.Tensor) -> float:
    return float(w.float().pow(2).mean().sqrt())


def mha_to_gqa(
    mha: GroupedQueryAttention, n_kv_heads: int, method: str = "mean", seed: int = 0
) -> GroupedQueryAttention:
    """A new grouped-query layer with ``n_kv_heads`` KV heads built from the MHA layer ``mha``.

    W_Q and W_O (and their biases) are copied. The K and V projections of the
    ``n_rep = n_heads // n_kv_heads`` heads in each contiguous group
    (heads ``g·n_rep .. (g+1)·n_rep - 1``, the heads that will read KV head ``g``)
    become one head:

    - ``mean``: the element-wise mean of the group's projection weights (and biases);
    - ``first``: the group's first head, copied;
    - ``random``: new N(0, σ²) weights drawn from ``seed``, σ the RMS of the original
      weights (biases zero), i.e. throwing the trained K/V away.

    Each projection head is a ``[d_k, d_model]`` slice of W_K / W_V. ``mha`` is not
    changed. ``mha_to_gqa(m, m.n_heads, "mean")`` (or ``"first"``) reproduces ``m``.
    """
    if not isinstance(mha, GroupedQueryAttention):
        raise ConfigError("mha must be a GroupedQueryAttention layer", "mha", "not_a_layer", name="mha")
    if mha.n_kv_heads != mha.n_heads:
        raise ConfigError(
            f"the source layer must be MHA (n_kv_heads == n_heads), got n_heads={mha.n_heads}, "
            f"n_kv_heads={mha.n_kv_heads}",
            "mha",
            "source_not_mha",
            h=mha.n_heads,
            kv=mha.n_kv_heads,
        )
    if method not in METHODS:
        raise unknown_option("method", method, METHODS)
    n_kv_heads = check_int("n_kv_heads", n_kv_heads, 1, mha.n_heads)
    check_kv_heads(mha.n_heads, n_kv_heads)
    seed = check_int("seed", seed, 0, 2**63 - 1)
    h, d, dm = mha.n_heads, mha.head_dim, mha.d_model
    n_rep = h // n_kv_heads
    has_bias = mha.k_proj.bias is not None
    ref = mha.q_proj.weight
    with torch.device("meta"):  # no random init: every parameter is written below
        gqa = GroupedQueryAttention(dm, h, n_kv_heads, head_dim=d, bias=has_bias)
    gqa = gqa.to_empty(device=ref.device).to(ref.dtype)
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        gqa.q_proj.load_state_dict(mha.q_proj.state_dict())
        gqa.o_proj.load_state_dict(mha.o_proj.state_dict())
        for src, dst in ((mha.k_proj, gqa.k_proj), (mha.v_proj, gqa.v_proj)):
            w = src.weight.view(n_kv_heads, n_rep, d, dm)  # (H_kv, n_rep, d_k, d_model), contiguous groups
            b = src.bias.view(n_kv_heads, n_rep, d) if has_bias else None
            if method == "mean":
                new_w = w.mean(dim=1)
                new_b = b.mean(dim=1) if has_bias else None
            elif method == "first":
                new_w = w[:, 0]
                new_b = b[:, 0] if has_bias else None
            else:
                sigma = _head_rms(src.weight)
                new_w = (torch.randn(n_kv_heads, d, dm, generator=g) * sigma).to(ref.device, ref.dtype)
                new_b = torch.zeros(n_kv_heads, d, device=ref.device, dtype=ref.dtype) if has_bias else None
            dst.weight.copy_(new_w.reshape(n_kv_heads * d, dm))
            if has_bias:
                dst.bias.copy_(new_b.reshape(n_kv_heads * d))
    return gqa


def base_heads(n_heads: int, n_base: int) -> list[int]:
    """The base head each head of :func:`correlated_mha` copies: ``h · n_base // n_heads`` (neighbours share one)."""
    return [h * n_base // n_heads for h in range(n_heads)]


def mixed_groups(n_heads: int, n_kv_heads: int, n_base: int) -> int:
    """How many KV groups of a correlated layer hold copies of more than one base head.

    Groups are contiguous (query heads ``g·n_rep … (g+1)·n_rep − 1``). E.g. 8 heads from
    2 base heads (heads 0–3 copy base 0, 4–7 base 1): 0 mixed groups for 2, 4 or 8 KV heads,
    1 (the only group) for MQA.
    """
    check_kv_heads(n_heads, n_kv_heads)
    base, n_rep = base_heads(n_heads, n_base), n_heads // n_kv_heads
    return sum(len(set(base[g * n_rep : (g + 1) * n_rep])) > 1 for g in range(n_kv_heads))


def correlated_mha(
    d_model: int, n_heads: int, head_dim: int, n_base: int, noise: float, seed: int = 0
) -> GroupedQueryAttention:
    """An MHA layer whose heads are noisy copies of ``n_base`` base heads (redundant heads, as in trained models).

    Query head ``h`` copies base head ``b(h) = h · n_base // n_heads`` (contiguous
    blocks, so the heads of a block fall in one GQA group whenever ``n_base``
    divides ``n_kv_heads``). Each Q, K and V projection head is
    ``(base_b + noise · ε_h) / sqrt(1 + noise²)`` with base and ε entries
    N(0, 1/d_model), so every entry keeps variance 1/d_model whatever the noise.
    W_O is random N(0, 1/(H·d_k)). ``noise = 0`` makes the heads of a block identical.
    """
    d_model = check_int("d_model", d_model, 1)
    n_heads = check_int("n_heads", n_heads, 1)
    head_dim = check_int("head_dim", head_dim, 1)
    n_base = check_int("n_base", n_base, 1, n_heads)
    if not (isinstance(noise, (int, float)) and math.isfinite(noise) and noise >= 0):
        raise ConfigError(
            f"noise must be a number ≥ 0, got {noise!r}", "noise", "not_negative", name="noise", value=repr(noise)
        )
    layer = init_layer(GroupedQueryAttention(d_model, n_heads, n_heads, head_dim=head_dim), seed)
    g = torch.Generator().manual_seed(int(seed) + 1)
    base_of = torch.tensor(base_heads(n_heads, n_base))
    std = 1.0 / math.sqrt(d_model)
    with torch.no_grad():
        for lin in (layer.q_proj, layer.k_proj, layer.v_proj):
            base = torch.randn(n_base, head_dim, d_model, generator=g) * std  # (n_base, d_k, d_model)
            eps = torch.randn(n_heads, head_dim, d_model, generator=g) * std  # (H, d_k, d_model)
            heads = (base[base_of] + noise * eps) / math.sqrt(1.0 + noise**2)  # (H, d_k, d_model)
            lin.weight.copy_(heads.reshape(n_heads * head_dim, d_model))
    return layer


def _nonnegative(kl: float) -> float:
    """A KL divergence, which is >= 0: a tiny negative value (or -0.0) from float rounding becomes 0.0."""
    return kl if kl > 0 else 0.0


def mean_kl(p_log: torch.Tensor, q_log: torch.Tensor) -> float:
    """Mean over heads and query rows of KL(P ‖ Q) in nats.

    ``p_log``, ``q_log``: log-probabilities ``[..., Tq, Tk]`` (``-inf`` where masked
    in both). Terms with P = 0 contribute 0.
    """
    p = p_log.exp()
    terms = torch.where(p > 0, p * (p_log - q_log), torch.zeros_like(p))
    return _nonnegative(float(terms.sum(-1).mean()))


@dataclass(frozen=True)
class ConversionStudy:
    """Errors of MHA -> GQA conversion for every divisor of ``n_heads``.

    ``n_kv`` ``[K]`` the divisors; ``rel_l2[method]`` ``[K]``: ‖y_gqa − y_mha‖ / ‖y_mha‖
    (Frobenius norms of the layer outputs ``[T, d_model]``); ``kl[method]`` ``[K]``:
    mean KL(P_mha ‖ P_gqa) in nats over heads and query rows of the attention maps;
    measured on ``n_rows`` of the ``t_q`` query rows (rows ``0, row_step, …``;
    all of them unless :attr:`subset`).
    """

    n_kv: tuple[int, ...]
    rel_l2: dict[str, np.ndarray]
    kl: dict[str, np.ndarray]
    source: str
    t_q: int = 0
    n_rows: int = 0
    row_step: int = 1

    @property
    def subset(self) -> bool:
        """True when measured on ``n_rows`` of the ``t_q`` query rows (every ``row_step``-th, each against all keys)."""
        return 0 < self.n_rows < self.t_q


def rank_methods(values: Mapping[str, float], decimals: int) -> list[tuple[str, ...]]:
    """The methods from the smallest value to the largest, those equal to ``decimals`` places tied together.

    ``values``: method -> error (one n_kv_heads of a :class:`ConversionStudy`). Values are
    compared as rounded to ``decimals`` places, the precision a page shows them with, so a
    ranking never calls two numbers shown equal different; a value that is not finite is left out. E.g. ``{"mean": 0.919, "first": 1.347,
    "random": 1.255}`` -> ``[("mean",), ("random",), ("first",)]``.
    """
    rounded = {m: round(float(v), decimals) + 0.0 for m, v in values.items() if math.isfinite(v)}  # -0.0 -> 0.0
    return [tuple(m for m in rounded if rounded[m] == r) for r in sorted(set(rounded.values()))]


def is_paper_order(ranking: Sequence[tuple[str, ...]]) -> bool:
    """Whether a :func:`rank_methods` ranking is the GQA paper's (:data:`PAPER_ORDER`, strictly, no ties)."""
    return [tuple(group) for group in ranking] == [(m,) for m in PAPER_ORDER]


def build_source(
    source: str, d_model: int, n_heads: int, head_dim: int, seed: int = 0, n_base: int = 2, noise: float = 0.3
) -> GroupedQueryAttention:
    """The MHA layer to convert: ``random`` (N(0, 1/fan_in) weights) or ``correlated`` (see :func:`correlated_mha`)."""
    if source == "random":
        return init_layer(GroupedQueryAttention(d_model, n_heads, n_heads, head_dim=head_dim), seed)
    if source == "correlated":
        return correlated_mha(d_model, n_heads, head_dim, n_base, noise, seed)
    raise unknown_option("source", source, SOURCES)


def conversion_errors(
    mha: GroupedQueryAttention,
    gqa: GroupedQueryAttention,
    x: torch.Tensor,
    mask: torch.Tensor | None = None,
    reference: AttentionOutput | None = None,
) -> tuple[float, float]:
    """(relative L2 error of the output, mean KL of the maps) of ``gqa`` against ``mha``.

    x ``[B, T, d_model]``; ``reference`` is ``mha(x, mask=mask)`` when already computed.
    """
    with torch.no_grad():
        ref = mha(x, mask=mask) if reference is None else reference
        out = gqa(x, mask=mask)
        rel = float(torch.linalg.vector_norm(out.output - ref.output) / torch.linalg.vector_norm(ref.output))
        kl = mean_kl(torch.log_softmax(ref.scores, -1), torch.log_softmax(out.scores, -1))
    return rel, kl


def conversion_study(
    mha: GroupedQueryAttention,
    x: torch.Tensor,
    methods: tuple[str, ...] = METHODS,
    seed: int = 0,
    mask: torch.Tensor | None = None,
    source: str = "random",
) -> ConversionStudy:
    """Convert ``mha`` to every ``n_kv_heads`` dividing ``n_heads`` with each method and measure the loss.

    x ``[B, T, d_model]``; mask bool broadcastable to ``[B, H, T, T]``. ``source``
    only labels the result. Returns CPU numpy (float64) in a :class:`ConversionStudy`.
    """
    n_kv = tuple(divisors(mha.n_heads))
    rel = {m: np.zeros(len(n_kv)) for m in methods}
    kl = {m: np.zeros(len(n_kv)) for m in methods}
    with torch.no_grad():
        reference = mha(x, mask=mask)
    for i, kv in enumerate(n_kv):
        for method in methods:
            gqa = mha_to_gqa(mha, kv, method, seed=seed)
            rel[method][i], kl[method][i] = conversion_errors(mha, gqa, x, mask, reference)
    t = int(x.shape[1])
    return ConversionStudy(n_kv=n_kv, rel_l2=rel, kl=kl, source=source, t_q=t, n_rows=t)


def _rows_forward(
    layer: GroupedQueryAttention, x_rows: torch.Tensor, k: torch.Tensor, v: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(output ``[c, d_model]``, scaled scores ``[H, c, Tk]``, their log-sum-exp ``[H, c]``) of some query rows.

    x_rows ``[c, d_model]``; k, v ``[H_kv, Tk, D]`` of every key; no mask. The
    heads of a group are multiplied together against their one KV head (no
    ``repeat_kv`` copy); the softmax is float32 as in :func:`scaled_dot_product_attention`.
    """
    h, h_kv, d = layer.n_heads, layer.n_kv_heads, layer.head_dim
    c, t_k = x_rows.shape[0], k.shape[1]
    q = layer.q_proj(x_rows).view(c, h, d).transpose(0, 1)  # (H, c, D)
    qg = q.reshape(h_kv, (h // h_kv) * c, d)  # heads g·n_rep .. are contiguous: (H_kv, n_rep·c, D)
    scores = (qg @ k.transpose(-2, -1)) * resolve_scale(d)  # (H_kv, n_rep·c, Tk)
    top = scores.amax(-1, keepdim=True)
    w = (scores - top).exp_()
    total = w.sum(-1, keepdim=True)
    lse = (top + total.log()).view(h, c)
    heads = (w.div_(total) @ v).view(h, c, d)  # (H, c, D)
    del w
    out = layer.o_proj(heads.transpose(0, 1).reshape(c, h * d))  # (c, d_model)
    return out, scores.view(h, c, t_k), lse


def conversion_study_rows(
    mha: GroupedQueryAttention,
    x: torch.Tensor,
    rows: Sequence[int] | None = None,
    methods: tuple[str, ...] = METHODS,
    seed: int = 0,
    source: str = "random",
    chunk_cells: int = CHUNK_CELLS,
) -> ConversionStudy:
    """:func:`conversion_study` (no mask) measured on the query rows ``rows`` (default all), by chunks of rows.

    x ``[1, T, d_model]``. Each measured row attends to all ``T`` keys, so its
    output and its map are exactly the layer's; the relative L2 error is over
    the outputs of those rows and the KL the mean over heads and those rows,
    from KL(P ‖ Q) = Σ P·log P − (Σ P·s_Q − logsumexp s_Q) per row (s_Q the
    converted layer's scaled scores). At most ``chunk_cells`` scores are alive
    per chunk; the original layer's weights of the measured rows are kept
    (``H × rows × T`` floats).
    """
    if x.dim() != 3 or x.shape[0] != 1:
        raise ConfigError("x must be one sequence [1, T, d_model]", "x", "one_sequence", name="x")
    t = int(x.shape[1])
    rows = range(t) if rows is None else rows
    row_idx = torch.as_tensor(list(rows), dtype=torch.long, device=x.device)
    if row_idx.numel() == 0 or int(row_idx.min()) < 0 or int(row_idx.max()) >= t:
        raise ConfigError(f"rows must be query rows between 0 and {t - 1}", "rows", "rows_range", last=t - 1)
    n_rows = int(row_idx.numel())
    h = mha.n_heads
    xa, xr = x[0], x[0, row_idx]  # (T, d_model), (R, d_model)
    per = max(1, int(chunk_cells) // (h * t))
    chunks = [(r0, min(n_rows, r0 + per)) for r0 in range(0, n_rows, per)]

    def kv_of(layer: GroupedQueryAttention) -> tuple[torch.Tensor, torch.Tensor]:
        hk, d = layer.n_kv_heads, layer.head_dim
        k = layer.k_proj(xa).view(t, hk, d).transpose(0, 1).contiguous()  # (H_kv, T, D)
        v = layer.v_proj(xa).view(t, hk, d).transpose(0, 1).contiguous()
        return k, v

    n_kv = tuple(divisors(h))
    rel = {m: np.zeros(len(n_kv)) for m in methods}
    kl = {m: np.zeros(len(n_kv)) for m in methods}
    with torch.no_grad():
        k, v = kv_of(mha)
        ref_out, ref_p = [], []
        neg_entropy = 0.0  # Σ P·log P over the measured rows of every head
        for r0, r1 in chunks:
            out, scores, lse = _rows_forward(mha, xr[r0:r1], k, v)
            lp = scores.sub_(lse[..., None])  # log P, in place of the scores
            p = lp.exp()
            neg_entropy += float(torch.where(p > 0, p * lp, torch.zeros_like(p)).sum(-1).double().sum())
            ref_out.append(out)
            ref_p.append(p)
            del scores, lp
        ref_sq = sum(float(o.double().pow(2).sum()) for o in ref_out)
        del k, v
        for i, kv in enumerate(n_kv):
            for method in methods:
                gqa = mha_to_gqa(mha, kv, method, seed=seed)
                k, v = kv_of(gqa)
                err_sq, cross = 0.0, 0.0  # Σ (y_gqa − y_mha)², Σ P·log Q
                for c, (r0, r1) in enumerate(chunks):
                    out, scores, lse = _rows_forward(gqa, xr[r0:r1], k, v)
                    err_sq += float((out - ref_out[c]).double().pow(2).sum())
                    p_s = (ref_p[c] * scores).sum(-1).double()  # (H, c): Σ_j P_j s_Q,j
                    cross += float((p_s - lse.double()).sum())
                    del out, scores, lse
                rel[method][i] = math.sqrt(err_sq / ref_sq) if ref_sq > 0 else float("nan")
                kl[method][i] = _nonnegative((neg_entropy - cross) / (h * n_rows))
                del gqa, k, v
    step = rows.step if isinstance(rows, range) and n_rows > 1 else 1
    return ConversionStudy(n_kv=n_kv, rel_l2=rel, kl=kl, source=source, t_q=t, n_rows=n_rows, row_step=step)


def estimate_conversion_bytes(
    n_heads: int, head_dim: int, d_model: int, t: int, n_rows: int, chunk_cells: int = CHUNK_CELLS
) -> int:
    """Peak bytes of the long conversion study (an upper bound): two layers, K and V, kept log-weights, one chunk."""
    floats = 2 * 4 * d_model * n_heads * head_dim + 3 * n_heads * head_dim * d_model  # MHA, a converted layer
    floats += 2 * t * d_model + n_rows * d_model * 2  # embeddings, the measured rows and their outputs
    floats += 2 * n_heads * t * head_dim  # K and V of one layer (the MHA's are freed before the converted ones)
    floats += n_heads * n_rows * t  # the MHA's log-weights of the measured rows
    floats += 6 * min(chunk_cells, n_heads * n_rows * t)  # scores, weights, log-weights, p, terms of one chunk
    return 4 * floats


@dataclass(frozen=True)
class MhaSpec:
    """The MHA layer a conversion study converts: :func:`build_source` of these values.

    ``kind`` ``random`` or ``correlated`` (``n_base`` base heads, copies with ``noise``,
    see :func:`correlated_mha`); ``seed`` draws the weights and the input embeddings.
    """

    kind: str
    d_model: int
    n_heads: int
    head_dim: int
    n_base: int = 2
    noise: float = 0.3
    seed: int = 0

    def build(self) -> GroupedQueryAttention:
        return build_source(
            self.kind, self.d_model, self.n_heads, self.head_dim, seed=self.seed, n_base=self.n_base, noise=self.noise
        )


def conversion_on_tokens(spec: MhaSpec, tokens: Sequence[str], device: str | torch.device = "cpu") -> ConversionStudy:
    """:func:`conversion_study` of the KV-sharing page: the layer ``spec`` builds, run on ``tokens``.

    The input is ``embed(tokens, d_model, seed)`` ``[1, T, d_model]`` (no mask);
    the layer and the input live on ``device``, the result is CPU numpy. Short
    sequences take :func:`conversion_study` (every row, every map at once); long
    ones :func:`conversion_study_rows` on the rows of :func:`study_rows`, so no
    ``[H, T, T]`` tensor is built. Raises :class:`ConfigError` when the layer is
    too large to simulate (:func:`check_sim_size`) or above the memory budget.
    """
    h, d, dm = spec.n_heads, spec.head_dim, spec.d_model
    check_sim_size(dm, h, d)
    t = len(tokens)
    exact = _exact_fits(AttentionConfig(n_heads=h, n_kv_heads=h, head_dim=d, d_model=dm, seq_len=max(1, t)), t, t)
    rows = study_rows(h, t, t, CONV_CELLS)
    if not exact:
        AttentionConfig(n_heads=h, n_kv_heads=1, head_dim=d, d_model=dm, seq_len=t).validate()
        check_budget(
            estimate_conversion_bytes(h, d, dm, t, len(rows)),
            f"the conversion study of {h} heads × {t} tokens",
            "use fewer tokens or fewer heads",
            "seq_len",
        )
    mha = spec.build().to(device)
    x = embed(list(tokens), dm, spec.seed)[None].to(device)  # (1, T, d_model)
    with torch.no_grad():
        if exact:
            return conversion_study(mha, x, seed=spec.seed, source=spec.kind)
        return conversion_study_rows(mha, x, rows, seed=spec.seed, source=spec.kind)


# Largest projection (d_model × n_heads × d_k weights) the pages simulate live: 64 MiB in float32.
MAX_SIM_ELEMENTS = 2**24


def check_sim_size(d_model: int, n_heads: int, head_dim: int) -> None:
    """Raise ConfigError when W_Q (``d_model × n_heads·d_k``) is too large to simulate interactively."""
    size = int(d_model) * int(n_heads) * int(head_dim)
    if size > MAX_SIM_ELEMENTS:
        raise ConfigError(
            f"d_model × n_heads × head_dim = {d_model} × {n_heads} × {head_dim} = {size:,} weights per projection "
            f"is more than the {MAX_SIM_ELEMENTS:,} simulated live; reduce d_model, n_heads or head_dim "
            "(the diagram and the cost table work at any size)",
            "d_model",
            "sim_size",
            dm=d_model,
            h=n_heads,
            d=head_dim,
            size=f"{size:,}",
            limit=f"{MAX_SIM_ELEMENTS:,}",
        )
