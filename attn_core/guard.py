"""Resource guard: estimate memory before allocating, and fall back to the CPU on CUDA out-of-memory.

The budget is 1 GiB unless the environment variable ``ATTN_MAX_BYTES`` says
otherwise. Computations estimate their peak bytes first and refuse with a
:class:`ConfigError` that names the field to reduce, instead of letting a
lecture-hall server swap or die.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TypeVar

import torch

from .config import ConfigError
from .memory import format_bytes  # the project's one byte formatter (binary units)

DEFAULT_MAX_BYTES = 2**30
T = TypeVar("T")


def max_bytes() -> int:
    """The memory budget in bytes: ``ATTN_MAX_BYTES`` if set, else 1 GiB."""
    raw = os.environ.get("ATTN_MAX_BYTES")
    if raw is None or not raw.strip():
        return DEFAULT_MAX_BYTES
    try:
        value = int(raw.strip())
    except ValueError:
        value = 0
    if value < 1:
        raise ConfigError(
            f"ATTN_MAX_BYTES must be a positive whole number of bytes, got {raw!r}",
            "ATTN_MAX_BYTES",
            "max_bytes_env",
            value=repr(raw),
        )
    return value


def check_budget(need: int, what: str, fix: str, field: str) -> int:
    """Return ``need`` if it fits :func:`max_bytes`, else raise ConfigError saying what to reduce.

    The translated message (``err.budget``) names the field to reduce instead of
    repeating ``what`` and ``fix``, which are English.
    """
    budget = max_bytes()
    if need > budget:
        raise ConfigError(
            f"{what} needs about {format_bytes(need)} of memory, more than the budget of {format_bytes(budget)} "
            f"(set by ATTN_MAX_BYTES); {fix}",
            field,
            "budget",
            need=format_bytes(need),
            budget=format_bytes(budget),
            reduce=field,
        )
    return need


def run_with_fallback(fn: Callable[[str], T], device: str) -> tuple[T, str]:
    """Run ``fn(device)``; on CUDA out-of-memory free the cache and rerun ``fn("cpu")``.

    Returns ``(result, device_used)`` so the caller can tell the user it fell back.
    """
    try:
        return fn(device), device
    except torch.OutOfMemoryError:
        if not str(device).startswith("cuda"):
            raise
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
        return fn("cpu"), "cpu"
