"""From MHA to GQA: converting a layer, measuring what the conversion loses, mapping conventions.

:func:`mha_to_gqa` builds a grouped-query layer from a multi-head one by pooling
the K and V projection heads of each group (the GQA paper's mean pooling), by
keeping the first head of each group, or by drawing new random heads.
:func:`conversion_study` measures, for every divisor of ``n_heads``, how far each
converted layer's output and attention maps are from the original.

Two conventions map query heads to KV heads: **contiguous** (query head ``h``
reads KV head ``h // n_rep``; ``repeat_kv`` / ``repeat_interleave``, what
:class:`~attn_core.attention.GroupedQueryAttention` and LLaMA use) and
**interleaved** (``h mod n_kv_heads``; a plain ``Tensor.repeat``). A checkpoint
trained with one and run with the other pairs most query heads with the wrong
keys and values.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from .attention import AttentionOutput, GroupedQueryAttention, kv_group_of, repeat_kv, scaled_dot_product_attention
from .config import ConfigError, check_int, check_kv_heads, divisors
from .maps import init_layer
from .tokens import embed

METHODS = ("mean", "first", "random")
MAPPINGS = ("contiguous", "interleaved")
SOURCES = ("random", "correlated")


# ---------------------------------------------------------------- mapping conventions
def _check_mapping(mapping: str) -> None:
    if mapping not in MAPPINGS:
        raise ConfigError(f"mapping '{mapping}' is not known; use one of: {', '.join(MAPPINGS)}", "mapping")


def kv_head_for(head: int, n_heads: int, n_kv_heads: int, mapping: str = "contiguous") -> int:
    """The KV head query head ``head`` reads: ``head // n_rep`` (contiguous) or ``head % n_kv_heads`` (interleaved)."""
    _check_mapping(mapping)
    group = kv_group_of(head, n_heads, n_kv_heads)  # validates head and the divisibility
    return group if mapping == "contiguous" else head % n_kv_heads


def kv_map(n_heads: int, n_kv_heads: int, mapping: str = "contiguous") -> list[int]:
    """``[kv_head_for(h) for h in range(n_heads)]``."""
    check_kv_heads(n_heads, n_kv_heads)
    return [kv_head_for(h, n_heads, n_kv_heads, mapping) for h in range(n_heads)]


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

    q ``[H, Tq, D]``, k ``[H_kv, Tk, D]`` (CPU numpy, as in :class:`~attn_core.maps.AttentionMaps`),
    mask bool ``[Tq, Tk]`` (True = may attend). Returns float32 ``[H, Tq, Tk]``.
    """
    return _attend_with_mapping(q, k, scale, mask, mapping)[0].numpy().astype(np.float32)


@dataclass(frozen=True)
class MappingMismatch:
    """A checkpoint built with one mapping and run with the other.

    ``built[h]`` / ``run[h]``: the KV head query head ``h`` reads as trained and as
    run; ``weights_built``, ``weights_run`` float32 ``[H, Tq, Tk]``; ``kl`` float64
    ``[H]``: mean over query rows of KL(P_built ‖ P_run) in nats (0 where both
    mappings agree).
    """

    built_with: str
    run_with: str
    built: tuple[int, ...]
    run: tuple[int, ...]
    weights_built: np.ndarray
    weights_run: np.ndarray
    kl: np.ndarray


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
    )


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
        raise ConfigError("mha must be a GroupedQueryAttention layer", "mha")
    if mha.n_kv_heads != mha.n_heads:
        raise ConfigError(
            f"the source layer must be MHA (n_kv_heads == n_heads), got n_heads={mha.n_heads}, "
            f"n_kv_heads={mha.n_kv_heads}",
            "mha",
        )
    if method not in METHODS:
        raise ConfigError(f"method '{method}' is not known; use one of: {', '.join(METHODS)}", "method")
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
        raise ConfigError(f"noise must be a number ≥ 0, got {noise!r}", "noise")
    layer = init_layer(GroupedQueryAttention(d_model, n_heads, n_heads, head_dim=head_dim), seed)
    g = torch.Generator().manual_seed(int(seed) + 1)
    base_of = torch.tensor([h * n_base // n_heads for h in range(n_heads)])
    std = 1.0 / math.sqrt(d_model)
    with torch.no_grad():
        for lin in (layer.q_proj, layer.k_proj, layer.v_proj):
            base = torch.randn(n_base, head_dim, d_model, generator=g) * std  # (n_base, d_k, d_model)
            eps = torch.randn(n_heads, head_dim, d_model, generator=g) * std  # (H, d_k, d_model)
            heads = (base[base_of] + noise * eps) / math.sqrt(1.0 + noise**2)  # (H, d_k, d_model)
            lin.weight.copy_(heads.reshape(n_heads * head_dim, d_model))
    return layer


def mean_kl(p_log: torch.Tensor, q_log: torch.Tensor) -> float:
    """Mean over heads and query rows of KL(P ‖ Q) in nats.

    ``p_log``, ``q_log``: log-probabilities ``[..., Tq, Tk]`` (``-inf`` where masked
    in both). Terms with P = 0 contribute 0.
    """
    p = p_log.exp()
    terms = torch.where(p > 0, p * (p_log - q_log), torch.zeros_like(p))
    return float(terms.sum(-1).mean())


@dataclass(frozen=True)
class ConversionStudy:
    """Errors of MHA -> GQA conversion for every divisor of ``n_heads``.

    ``n_kv`` ``[K]`` the divisors; ``rel_l2[method]`` ``[K]``: ‖y_gqa − y_mha‖ / ‖y_mha‖
    (Frobenius norms of the layer outputs ``[T, d_model]``); ``kl[method]`` ``[K]``:
    mean KL(P_mha ‖ P_gqa) in nats over heads and query rows of the attention maps.
    """

    n_kv: tuple[int, ...]
    rel_l2: dict[str, np.ndarray]
    kl: dict[str, np.ndarray]
    source: str


def build_source(
    source: str, d_model: int, n_heads: int, head_dim: int, seed: int = 0, n_base: int = 2, noise: float = 0.3
) -> GroupedQueryAttention:
    """The MHA layer to convert: ``random`` (N(0, 1/fan_in) weights) or ``correlated`` (see :func:`correlated_mha`)."""
    if source == "random":
        return init_layer(GroupedQueryAttention(d_model, n_heads, n_heads, head_dim=head_dim), seed)
    if source == "correlated":
        return correlated_mha(d_model, n_heads, head_dim, n_base, noise, seed)
    raise ConfigError(f"source '{source}' is not known; use one of: {', '.join(SOURCES)}", "source")


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
    return ConversionStudy(n_kv=n_kv, rel_l2=rel, kl=kl, source=source)


def conversion_on_tokens(
    n_heads: int,
    head_dim: int,
    d_model: int,
    tokens: Sequence[str],
    source: str = "correlated",
    n_base: int = 2,
    noise: float = 0.3,
    seed: int = 0,
    device: str | torch.device = "cpu",
) -> ConversionStudy:
    """:func:`conversion_study` of the KV-sharing page: the source layer of :func:`build_source` run on ``tokens``.

    The input is ``embed(tokens, d_model, seed)`` ``[1, T, d_model]`` (no mask);
    the layer and the input live on ``device``, the result is CPU numpy. Raises
    :class:`ConfigError` (from :func:`check_sim_size`) when the layer is too large.
    """
    check_sim_size(d_model, n_heads, head_dim)
    mha = build_source(source, d_model, n_heads, head_dim, seed=seed, n_base=n_base, noise=noise).to(device)
    x = embed(list(tokens), d_model, seed)[None].to(device)  # (1, T, d_model)
    with torch.no_grad():
        return conversion_study(mha, x, seed=seed, source=source)


# Largest projection (d_model × n_heads × d_k weights) the pages simulate live: 64 MiB in float32.
MAX_SIM_ELEMENTS = 2**24


def check_sim_size(d_model: int, n_heads: int, head_dim: int) -> None:
    """Raise ConfigError when W_Q (``d_model × n_heads·d_k``) is too large to simulate interactively."""
    size = int(d_model) * int(n_heads) * int(head_dim)
    if size > MAX_SIM_ELEMENTS:
        raise ConfigError(
            f"d_model × n_heads × head_dim = {d_model} × {n_heads} × {head_dim} = {size:,} weights per projection "
            f"is more than {MAX_SIM_ELEMENTS:,} that are simulated live; reduce d_model, n_heads or head_dim "
            "(the diagram and the cost table work at any size)",
            "d_model",
            "sim_size",
            dm=d_model,
            h=n_heads,
            d=head_dim,
            size=f"{size:,}",
            limit=f"{MAX_SIM_ELEMENTS:,}",
        )
