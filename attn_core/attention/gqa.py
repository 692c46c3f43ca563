"""Scaled dot-product attention and a grouped-query attention layer.

One code path serves MHA (``n_kv_heads == n_heads``), GQA and MQA
(``n_kv_heads == 1``): key/value heads are expanded with :func:`repeat_kv` only
inside the attention computation and are cached un-expanded.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch
from torch import nn

from attn_core.attention.masks import causal_mask
from attn_core.runtime.config import ConfigError, check_int, check_kv_heads


def kv_group_of(head: int, n_heads: int, n_kv_heads: int) -> int:
    """Index of the KV head that query head ``head`` reads (contiguous mapping).

    Query heads ``0 .. n_rep-1`` share KV head 0, the next ``n_rep`` KV head 1, and
    so on, with ``n_rep = n_heads // n_kv_heads``.
    """
    check_kv_heads(n_heads, n_kv_heads)
    check_int("head", head, 0, n_heads - 1)
    return head // (n_heads // n_kv_heads)


def repeat_kv(x: torch.Tensor, n_rep: int) -> torch.Tensor:
    """Expand KV heads for grouped-query attention.

    ``[B, H_kv, T, D] -> [B, H_kv * n_rep, T, D]``; output head ``h`` is input head
    ``h // n_rep`` (the same as ``torch.repeat_interleave(x, n_rep, dim=1)``).
    """
    if n_rep == 1:
        return x
    b, h_kv, t, d = x.shape
    return x[:, :, None, :, :].expand(b, h_kv, n_rep, t, d).reshape(b, h_kv * n_rep, t, d)


class AttentionResult(NamedTuple):
    """``output`` ``[B, H, Tq, D]`` (dtype of q), ``weights`` and ``scores`` ``[B, H, Tq, Tk]`` float32."""

    output: torch.Tensor
    weights: torch.Tensor
    scores: torch.Tensor


def resolve_scale(head_dim: int, use_scaling: bool = True, scale: float | None = None) -> float:
    """The factor applied to ``q·k``: ``scale`` if given, else ``1/sqrt(head_dim)`` or ``1``."""
    if scale is not None:
        return float(scale)
    return 1.0 / math.sqrt(head_dim) if use_scaling else 1.0


def masked_softmax(scores: torch.Tensor) -> torch.Tensor:
    """Softmax over the last dim in float32; ``-inf`` entries get weight 0.

    A row whose every entry is ``-inf`` (fully masked) gives all-zero weights,
    never NaN. The row maximum is subtracted first so ``exp`` cannot overflow.
    """
    scores = scores.float()
    row_max = scores.amax(dim=-1, keepdim=True)
    row_max = torch.where(torch.isfinite(row_max), row_max, torch.zeros_like(row_max))
    e = torch.exp(scores - row_max)
    total = e.sum(dim=-1, keepdim=True)
    return torch.where(total > 0, e / total.clamp_min(torch.finfo(torch.float32).tiny), 0.0)


def scaled_dot_product_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor | None = None,
    use_scaling: bool = True,
    scale: float | None = None,
) -> AttentionResult:
    """softmax(q kᵀ · scale + mask) v with explicit weights.

    q ``[B, H, Tq, D]``; k, v ``[B, H_kv, Tk, D]`` with ``H % H_kv == 0``;
    mask bool broadcastable to ``[B, H, Tq, Tk]`` (True = may attend).
    ``scores`` are after scaling and masking (masked = -inf). The softmax runs in
    float32 whatever the input dtype; ``output`` is cast back to q's dtype.
    """
    if q.dim() != 4 or k.dim() != 4 or v.dim() != 4:
        raise ConfigError("q, k and v must be 4-D tensors [B, H, T, D]", "shape", "qkv_rank")
    h, h_kv = q.shape[1], k.shape[1]
    if v.shape[1] != h_kv:
        raise ConfigError(
            f"k has {h_kv} heads but v has {v.shape[1]}", "n_kv_heads", "kv_heads_differ", k=h_kv, v=v.shape[1]
        )
    check_kv_heads(h, h_kv)
    n_rep = h // h_kv
    factor = resolve_scale(q.shape[-1], use_scaling, scale)
    k_full = repeat_kv(k, n_rep).float()  # (B, H, Tk, D)
    v_full = repeat_kv(v, n_rep).float()  # (B, H, Tk, D)
    scores = (q.float() @ k_full.transpose(-2, -1)).mul_(factor)  # (B, H, Tq, Tk), scaled in place
    if mask is None:
        weights = torch.softmax(scores, dim=-1)  # (B, H, Tq, Tk); torch's fused kernel
    else:
        allowed = mask.to(torch.bool)
        scores.masked_fill_(~allowed, float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        row_ok = allowed.any(dim=-1, keepdim=True)  # a fully masked row: NaN from softmax, weights 0 here
        if not bool(row_ok.all()):
            weights = weights.masked_fill(~row_ok, 0.0)
    output = (weights @ v_full).to(q.dtype)  # (B, H, Tq, D)
    return AttentionResult(output, weights, scores)


class AttentionOutput(NamedTuple):
    """What :class:`GroupedQueryAttention` returns.

    ``output`` ``[B, T, d_model]``; ``weights`` ``[B, H, T, Tk]``; ``q`` ``[B, H, T, D]``;
    ``k``, ``v`` ``[B, H_kv, Tk, D]`` (all keys/values attended to, cache included);
    ``present_kv`` the ``(K, V)`` pair to feed back as ``past_kv`` (``None`` unless
    ``use_cache``), with ``H_kv`` heads, never the repeated ones;
    ``head_outputs`` ``[B, H, T, D]`` before the output projection; ``scores``
    ``[B, H, T, Tk]`` after scaling and masking.
    """

    output: torch.Tensor
    weights: torch.Tensor
    q: torch.Tensor
    k: torch.Tensor
    v: torch.Tensor
    present_kv: tuple[torch.Tensor, torch.Tensor] | None
    head_outputs: torch.Tensor
    scores: torch.Tensor


class GroupedQueryAttention(nn.Module):
    """Multi-head attention whose ``n_heads`` query heads share ``n_kv_heads`` K/V heads.

    ``n_kv_heads == n_heads`` is MHA, ``1`` is MQA. ``head_dim`` defaults to
    ``d_model // n_heads``.
    """

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        n_kv_heads: int,
        head_dim: int | None = None,
        bias: bool = False,
    ):
        super().__init__()
        check_int("d_model", d_model, 1)
        check_int("n_heads", n_heads, 1)
        check_int("n_kv_heads", n_kv_heads, 1)
        check_kv_heads(n_heads, n_kv_heads)
        if head_dim is None:
            if d_model % n_heads:
                raise ConfigError(
                    f"d_model ({d_model}) must be divisible by n_heads ({n_heads}) when head_dim is not given",
                    "d_model",
                    "d_model_heads",
                    d_model=d_model,
                    n_heads=n_heads,
                )
            head_dim = d_model // n_heads
        check_int("head_dim", head_dim, 1)
        self.d_model, self.n_heads, self.n_kv_heads, self.head_dim = d_model, n_heads, n_kv_heads, head_dim
        self.num_key_value_groups = n_heads // n_kv_heads
        self.q_proj = nn.Linear(d_model, n_heads * head_dim, bias=bias)
        self.k_proj = nn.Linear(d_model, n_kv_heads * head_dim, bias=bias)
        self.v_proj = nn.Linear(d_model, n_kv_heads * head_dim, bias=bias)
        self.o_proj = nn.Linear(n_heads * head_dim, d_model, bias=bias)

    def _split(self, x: torch.Tensor, n: int) -> torch.Tensor:
        b, t, _ = x.shape
        return x.view(b, t, n, self.head_dim).transpose(1, 2)  # (B, n, T, D)

    def project(
        self, x: torch.Tensor, context: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The queries ``[B, H, T, D]`` of ``x`` and the keys and values ``[B, H_kv, S, D]`` of ``context``
        (default ``x``), split into heads: what a cache stores, before any :func:`repeat_kv`."""
        src = x if context is None else context
        q = self._split(self.q_proj(x), self.n_heads)  # (B, H, T, D)
        k = self._split(self.k_proj(src), self.n_kv_heads)  # (B, H_kv, S, D)
        v = self._split(self.v_proj(src), self.n_kv_heads)  # (B, H_kv, S, D)
        return q, k, v

    def attend(
        self,
        q: torch.Tensor,
        k: torch.Tensor,
        v: torch.Tensor,
        mask: torch.Tensor | None = None,
        *,
        causal: bool = False,
        use_scaling: bool = True,
        scale: float | None = None,
    ) -> tuple[torch.Tensor, AttentionResult]:
        """Attention of ``q`` ``[B, H, T, D]`` over every key and value given (``[B, H_c, Tk, D]``, cache included).

        ``H_c`` may be any divisor of ``H`` (:func:`scaled_dot_product_attention`
        repeats the KV heads). ``causal`` adds a causal mask aligned to the end of
        the keys. Returns the layer's output ``[B, T, d_model]`` (heads merged, then
        ``o_proj``) and the :class:`AttentionResult` of the heads.
        """
        if causal:
            cm = causal_mask(q.shape[2], k.shape[2], device=q.device)
            mask = cm if mask is None else (mask & cm)
        res = scaled_dot_product_attention(q, k, v, mask=mask, use_scaling=use_scaling, scale=scale)
        b, _, t, _ = res.output.shape
        merged = res.output.transpose(1, 2).reshape(b, t, self.n_heads * self.head_dim)  # (B, T, H*D)
        return self.o_proj(merged), res  # (B, T, d_model)

    def forward(
        self,
        x: torch.Tensor,
        mask: torch.Tensor | None = None,
        past_kv: tuple[torch.Tensor, torch.Tensor] | None = None,
        use_cache: bool = False,
        use_scaling: bool = True,
        *,
        context: torch.Tensor | None = None,
        causal: bool = False,
        scale: float | None = None,
    ) -> AttentionOutput:
        """Attend from ``x`` ``[B, T, d_model]``: :meth:`project`, then :meth:`attend`.

        ``context`` ``[B, S, d_model]`` supplies keys/values for cross-attention
        (default: ``x`` itself). ``past_kv`` holds cached ``(K, V)``
        ``[B, H_kv, T_past, D]`` that are prepended. ``causal`` adds a causal mask
        aligned to the end of the keys (so it is right with a cache); ``mask``
        (bool, broadcastable to ``[B, H, T, Tk]``) is combined with it.
        """
        q, k, v = self.project(x, context)
        if past_kv is not None:
            k = torch.cat([past_kv[0], k], dim=2)  # (B, H_kv, T_past + S, D)
            v = torch.cat([past_kv[1], v], dim=2)
        out, res = self.attend(q, k, v, mask, causal=causal, use_scaling=use_scaling, scale=scale)
        present = (k, v) if use_cache else None
        return AttentionOutput(out, res.weights, q, k, v, present, res.output, res.scores)
