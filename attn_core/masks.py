"""Boolean attention masks. ``True`` means the query may attend to that key."""

from __future__ import annotations

from collections.abc import Sequence

import torch


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
