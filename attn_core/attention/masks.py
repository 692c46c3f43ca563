"""Boolean attention masks. ``True`` means the query may attend to that key."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from attn_core.runtime.config import ConfigError, check_int, check_temperature, unknown_option

MASK_KINDS = ("none", "causal", "padding")


def causal_mask(t: int, t_k: int | None = None, device: torch.device | str = "cpu") -> torch.Tensor:
    """Lower-triangular mask, bool ``[T, T_k]`` (``T_k`` defaults to ``T``).

    Query ``i`` sits at absolute position ``T_k - T + i``, so with a cache of
    ``T_k - T`` earlier keys it may attend to every key up to and including itself.
    """
    t_k = t if t_k is None else t_k
    offset = t_k - t
    q_pos = torch.arange(t, device=device)[:, None] + offset
    k_pos = torch.arange(t_k, device=device)[None, :]
    return k_pos <= q_pos


def padding_mask(lengths: Sequence[int] | torch.Tensor, t: int, device: torch.device | str = "cpu") -> torch.Tensor:
    """Key-padding mask, bool ``[B, 1, 1, T]``: key ``j`` of sequence ``b`` is real iff ``j < lengths[b]``."""
    lengths = torch.as_tensor(lengths, device=device).reshape(-1, 1)
    return (torch.arange(t, device=device)[None, :] < lengths)[:, None, None, :]


def build_mask(kind: str, t_q: int, t_k: int, pad_len: int | None = None) -> torch.Tensor:
    """Bool ``[Tq, Tk]`` mask for ``none``, ``causal`` or ``padding`` (keys ``>= pad_len`` hidden)."""
    if kind == "none":
        return torch.ones(t_q, t_k, dtype=torch.bool)
    if kind == "causal":
        return causal_mask(t_q, t_k)
    if kind == "padding":
        length = check_int("pad_len", t_k if pad_len is None else pad_len, 1, t_k)
        return (torch.arange(t_k) < length)[None, :].expand(t_q, t_k).clone()
    raise unknown_option("mask", kind, MASK_KINDS)


def check_layer_input(
    tokens_q: Sequence[str], tokens_k: Sequence[str] | None, mask_kind: str, temperature: object
) -> float:
    """Check one layer's input (what :func:`compute_attention_maps` and the chunked path share); return τ.

    Raises :class:`ConfigError` for an empty query or key text, an unknown mask,
    a causal mask on cross-attention, or a temperature that is not a positive number.
    """
    if not tokens_q:
        raise ConfigError(
            "the query text has no tokens; type some text or use synthetic tokens", "text", "no_query_tokens"
        )
    if tokens_k is not None and not tokens_k:
        raise ConfigError(
            "the key/value text has no tokens; type some text for the keys", "cross_text", "no_key_tokens"
        )
    if mask_kind not in MASK_KINDS:
        raise unknown_option("mask", mask_kind, MASK_KINDS)
    if mask_kind == "causal" and tokens_k is not None:
        raise ConfigError(
            "a causal mask needs self-attention; pick 'none' or 'padding' for cross-attention", "mask", "causal_cross"
        )
    return check_temperature(temperature)


def limit_keys(
    allowed: torch.Tensor, q_pos: torch.Tensor, window: int | None = None, sinks: int = 0, recent: int | None = None
) -> torch.Tensor:
    """``allowed`` bool ``[R, T_k]`` further limited for queries at absolute positions ``q_pos`` ``[R]``.

    ``window``: a sliding-window layer (Mistral, Gemma's local layers): query ``p`` sees only the keys
    ``p - window < j``, i.e. the last ``window`` positions, itself included (as transformers'
    ``sliding_window_overlay``). ``recent``: StreamingLLM's eviction (Xiao et al. 2023): query ``p``
    keeps the first ``sinks`` keys and the last ``recent`` ones (``j < sinks`` or ``p - recent < j``).
    None leaves the mask as it is.
    """
    keys = torch.arange(allowed.shape[-1], device=allowed.device)[None, :]
    p = q_pos.to(allowed.device)[:, None]
    if window is not None:
        allowed = allowed & (keys > p - int(window))
    if recent is not None:
        allowed = allowed & ((keys < int(sinks)) | (keys > p - int(recent)))
    return allowed
