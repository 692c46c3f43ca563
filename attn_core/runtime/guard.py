"""Resource guard: estimate memory before allocating, and fall back to the CPU on CUDA out-of-memory.

The budget is 1 GiB unless the environment variable ``ATTN_MAX_BYTES`` says
otherwise. Computations estimate their peak bytes first and refuse with a
:class:`ConfigError` that names the field to reduce, instead of letting a
lecture-hall server swap or die.
"""

from __future__ import annotations

import functools
import gc
import os
from collections.abc import Callable
from typing import TypeVar

import torch

from attn_core.runtime.config import ConfigError
from attn_core.runtime.units import format_bytes  # the project's one byte formatter (binary units)

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


def free_cuda() -> None:
    """Give the CUDA memory of what is no longer referenced back to the device (a failed step's tensors).

    Call it after leaving the ``except`` block of an out-of-memory error: inside it the traceback still holds
    the failed frames and their tensors, so nothing would be freed (PyTorch's FAQ)."""
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def out_of_memory(dev: torch.device | str, doing: str, reduce: str) -> ConfigError:
    """The error for ``dev`` running out of memory while ``doing`` (what to lower follows); raise it after
    :func:`free_cuda`, outside the ``except`` that caught the out-of-memory error (no chained traceback then
    keeps the failed step's tensors on the device while a page shows the message)."""
    return ConfigError(f"{dev} ran out of memory {doing}", "budget", "oom", dev=str(dev), reduce=reduce)


def step_out_of_memory(dev: torch.device | str) -> ConfigError:
    """:func:`out_of_memory` for a page's step, a live run or a model load that cannot fall back to the CPU (it
    is bound to a model on the device, or it ran out of memory there too): lower the page's sizes or pick the
    CPU."""
    why = "(other work may be using it); lower this page's sizes, or choose the CPU in the sidebar."
    return ConfigError(f"{dev} ran out of memory {why}", "budget", "oom_step", dev=str(dev))


def stays_on_device(fn: Callable[..., T]) -> Callable[..., T]:
    """``fn`` (a step with a ``device`` keyword) for :func:`run_with_fallback`, when running it on the CPU instead
    would not help or would mislabel it: a step bound to a model already on the device, or a timing of a chosen
    device. Its CUDA out-of-memory error becomes :func:`step_out_of_memory` (a :class:`ConfigError`: no retry, a
    message saying what to lower), raised with the device's memory freed."""

    @functools.wraps(fn)
    def step(*args: object, **kwargs: object) -> T:
        try:
            return fn(*args, **kwargs)
        except torch.OutOfMemoryError:
            pass
        free_cuda()  # out of the except block: the failed frames are gone
        raise step_out_of_memory(kwargs.get("device", "cuda"))

    return step


def run_with_fallback(fn: Callable[[str], T], device: str) -> tuple[T, str]:
    """Run ``fn(device)``; on CUDA out-of-memory free the cache and rerun ``fn("cpu")``.

    Returns ``(result, device_used)`` so the caller can tell the user it fell back. A step that does not
    move (one bound to a model already on the device) may run out of memory again: that error is the
    caller's (``ui.compute`` says what to lower).
    """
    try:
        return fn(device), device
    except torch.OutOfMemoryError:
        if not str(device).startswith("cuda"):
            raise
    free_cuda()  # out of the except block: the failed frames are gone
    return fn("cpu"), "cpu"
