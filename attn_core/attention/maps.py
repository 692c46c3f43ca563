"""Everything the attention-heatmap views show, computed in one pass.

:func:`compute_attention_maps` builds token embeddings, a seeded
:class:`GroupedQueryAttention` layer and runs it on the picked device, then
returns CPU float32 numpy arrays only, ready for plotting or caching.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from attn_core.attention.gqa import GroupedQueryAttention, repeat_kv, resolve_scale
from attn_core.attention.masks import MASK_KINDS, build_mask, check_layer_input  # noqa: F401 - MASK_KINDS re-exported
from attn_core.attention.sources import draw_weight, layer_generator
from attn_core.attention.tokens import embed
from attn_core.runtime.config import AttentionConfig
from attn_core.runtime.guard import check_budget


def init_layer(layer: GroupedQueryAttention, seed: int) -> GroupedQueryAttention:
    """Seed the projections with N(0, 1/d_in) weights.

    With unit-variance inputs this gives q and k entries of unit variance, the
    setting in which Var(q·k) = d_k and the 1/sqrt(d_k) scaling matters.
    """
    g = layer_generator(seed)
    with torch.no_grad():
        for lin in (layer.q_proj, layer.k_proj, layer.v_proj, layer.o_proj):
            lin.weight.copy_(draw_weight(g, *lin.weight.shape))
            if lin.bias is not None:
                lin.bias.zero_()
    return layer


@dataclass(frozen=True)
class AttentionMaps:
    """One layer's attention for one sequence, as CPU float32 numpy.

    Shapes: ``q`` ``[H, Tq, D]``; ``k``, ``v`` ``[H_kv, Tk, D]``; ``raw_scores``
    (q·k), ``scaled_scores`` (times scale/τ), ``masked_scores`` (-inf where
    masked) and ``weights`` ``[H, Tq, Tk]``; ``head_outputs`` ``[H, Tq, D]``;
    ``output`` ``[Tq, d_model]``; ``mask`` bool ``[Tq, Tk]``; ``entropy``
    ``[H, Tq]`` normalised to [0, 1].
    """

    tokens_q: tuple[str, ...]
    tokens_k: tuple[str, ...]
    q: np.ndarray
    k: np.ndarray
    v: np.ndarray
    raw_scores: np.ndarray
    scaled_scores: np.ndarray
    masked_scores: np.ndarray
    weights: np.ndarray
    head_outputs: np.ndarray
    output: np.ndarray
    mask: np.ndarray
    entropy: np.ndarray
    scale: float
    n_kv_heads: int
    device: str


def normalized_entropy(weights: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Row entropy divided by log(number of allowed keys), in [0, 1].

    weights ``[..., Tq, Tk]``, mask bool broadcastable to it. Rows with one or no
    allowed key have entropy 0.
    """
    p = weights.float()
    ent = -(torch.where(p > 0, p * torch.log(p), torch.zeros_like(p))).sum(-1)
    n = mask.expand_as(p).sum(-1).float()
    denom = torch.log(n.clamp_min(1.0))
    return torch.where(n > 1, ent / torch.where(n > 1, denom, torch.ones_like(denom)), torch.zeros_like(ent))


def estimate_bytes(cfg: AttentionConfig, t_q: int, t_k: int) -> int:
    """Peak bytes of :func:`compute_attention_maps` (float32), an upper-bound estimate.

    q ``[H, Tq, D]``; k, v ``[H_kv, Tk, D]`` and their repeated copies ``[H, Tk, D]``;
    about ten ``[H, Tq, Tk]`` score/weight tensors (raw, scaled, masked, weights,
    entropy terms and the CPU copies); embeddings and outputs ``[T, d_model]``.
    """
    h, hk, d, dm = cfg.n_heads, cfg.n_kv_heads, cfg.head_dim, cfg.d_model
    floats = h * t_q * d * 3 + 2 * hk * t_k * d * 2 + 2 * h * t_k * d + 10 * h * t_q * t_k + 4 * (t_q + t_k) * dm
    floats += 4 * dm * h * d  # the four projection matrices
    return 4 * floats


def compute_attention_maps(
    cfg: AttentionConfig,
    tokens_q: list[str],
    tokens_k: list[str] | None = None,
    mask_kind: str = "none",
    pad_len: int | None = None,
    temperature: float = 1.0,
    device: torch.device | str = "cpu",
    positions: bool = True,
) -> AttentionMaps:
    """Run one GQA layer over ``tokens_q`` (self-attention) or from ``tokens_q`` to ``tokens_k`` (cross).

    The layer is ``cfg``'s shape with weights drawn from ``cfg.seed``; the scores
    are multiplied by ``1/sqrt(d_k)`` (if ``cfg.use_scaling``) and divided by
    ``temperature``. Returns :class:`AttentionMaps` on the CPU.
    """
    cfg.validate()
    check_layer_input(tokens_q, tokens_k, mask_kind, temperature)
    check_budget(
        estimate_bytes(cfg, len(tokens_q), len(tokens_k or tokens_q)),
        f"{cfg.n_heads} heads × {len(tokens_q)} × {len(tokens_k or tokens_q)} tokens",
        "use fewer tokens or fewer heads",
        "seq_len",
    )
    dev = torch.device(device)
    cross = tokens_k is not None
    keys = tokens_k if cross else tokens_q
    x = embed(list(tokens_q), cfg.d_model, cfg.seed, positions=positions)[None].to(dev)  # (1, Tq, d_model)
    ctx = embed(list(keys), cfg.d_model, cfg.seed, positions=positions)[None].to(dev) if cross else None
    layer = init_layer(GroupedQueryAttention(cfg.d_model, cfg.n_heads, cfg.n_kv_heads, cfg.head_dim), cfg.seed)
    layer = layer.to(dev)
    mask = build_mask(mask_kind, len(tokens_q), len(keys), pad_len).to(dev)  # (Tq, Tk)
    scale = resolve_scale(cfg.head_dim, cfg.use_scaling) / float(temperature)
    with torch.no_grad():
        out = layer(x, mask=mask, context=ctx, scale=scale)
        raw = out.q.float() @ repeat_kv(out.k, cfg.n_rep).float().transpose(-2, -1)  # (1, H, Tq, Tk)
        ent = normalized_entropy(out.weights, mask)

    def np32(t: torch.Tensor) -> np.ndarray:
        return t.detach().to("cpu", torch.float32).numpy()

    return AttentionMaps(
        tokens_q=tuple(tokens_q),
        tokens_k=tuple(keys),
        q=np32(out.q[0]),
        k=np32(out.k[0]),
        v=np32(out.v[0]),
        raw_scores=np32(raw[0]),
        scaled_scores=np32(raw[0] * scale),
        masked_scores=np32(out.scores[0]),
        weights=np32(out.weights[0]),
        head_outputs=np32(out.head_outputs[0]),
        output=np32(out.output[0]),
        mask=mask.cpu().numpy(),
        entropy=np32(ent[0]),
        scale=scale,
        n_kv_heads=cfg.n_kv_heads,
        device=str(dev),
    )


@dataclass(frozen=True)
class ShapeStep:
    """One row of :func:`shape_walk`, as codes and numbers (pages translate the codes).

    ``step`` and ``op`` name the step and its operation (catalog keys ``shapes.<step>`` and
    ``shapes.ops.<op>``); ``dims`` are the tensor's dimension names and ``sizes`` their values;
    ``pair``: two tensors of this shape (K and V).
    """

    step: str
    op: str
    dims: tuple[str, ...]
    sizes: tuple[int, ...]
    pair: bool = False

    @property
    def formula(self) -> str:
        """The shape in symbols and numbers: ``[B, H, T, d_k] = [1, 8, 11, 16]``."""
        return f"[{', '.join(self.dims)}] = [{', '.join(map(str, self.sizes))}]"


def shape_walk(cfg: AttentionConfig, t_q: int, t_k: int | None = None) -> list[ShapeStep]:
    """The tensor shapes of one attention layer with ``cfg``'s numbers substituted.

    Self-attention (``t_k`` None) has one length, ``T``. Cross-attention (``t_k`` given: the keys and
    values come from a context of ``t_k`` tokens) has two, ``T_q`` and ``T_k``, and a context input row.
    From the input ``[B, T, d_model]`` to the output ``[B, T, d_model]``.
    """
    b, h, hk, d, dm = cfg.batch, cfg.n_heads, cfg.n_kv_heads, cfg.head_dim, cfg.d_model
    cross = t_k is not None
    tk = t_k if cross else t_q
    nq, nk = ("T_q", "T_k") if cross else ("T", "T")
    rows = [ShapeStep("input", "input", ("B", nq, "d_model"), (b, t_q, dm))]
    if cross:
        rows.append(ShapeStep("context", "context", ("B", nk, "d_model"), (b, tk, dm)))
    rows += [
        ShapeStep("q_proj", "q_proj", ("B", "H", nq, "d_k"), (b, h, t_q, d)),
        ShapeStep("kv_proj", "kv_proj_context" if cross else "kv_proj", ("B", "H_kv", nk, "d_k"), (b, hk, tk, d), True),
        ShapeStep("repeat_kv", "repeat_kv" if h > hk else "repeat_none", ("B", "H", nk, "d_k"), (b, h, tk, d)),
        ShapeStep("scores", "scores", ("B", "H", nq, nk), (b, h, t_q, tk)),
        ShapeStep("softmax", "softmax", ("B", "H", nq, nk), (b, h, t_q, tk)),
        ShapeStep("weighted_sum", "weighted_sum", ("B", "H", nq, "d_k"), (b, h, t_q, d)),
        ShapeStep("merge", "merge", ("B", nq, "H·d_k"), (b, t_q, h * d)),
        ShapeStep("o_proj", "o_proj", ("B", nq, "d_model"), (b, t_q, dm)),
    ]
    return rows
