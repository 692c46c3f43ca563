"""Choosing the torch device: CUDA when present, else Apple MPS, else the CPU."""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch

from attn_core.runtime.config import ConfigError, unknown_option

_KNOWN = ("auto", "cpu", "cuda", "mps")


def _available(kind: str) -> bool:
    if kind == "cpu":
        return True
    if kind == "cuda":
        return torch.cuda.is_available()
    if kind == "mps":
        backend = getattr(torch.backends, "mps", None)
        return bool(backend and backend.is_available())
    return False


def pick_device(prefer: str = "auto") -> torch.device:
    """Return the device to compute on.

    ``auto`` picks cuda if available, else mps, else cpu. The environment variable
    ``ATTN_DEVICE`` (``auto``/``cpu``/``cuda``/``mps``, optionally ``cuda:N``)
    overrides ``prefer``. Asking for a device that is not present raises
    :class:`ConfigError`; callers show the message and fall back to the CPU.
    """
    choice = (os.environ.get("ATTN_DEVICE") or prefer or "auto").strip().lower()
    kind = choice.split(":", 1)[0]
    if kind not in _KNOWN:
        raise unknown_option("device", choice, _KNOWN)
    if kind == "auto":
        for candidate in ("cuda", "mps"):
            if _available(candidate):
                return torch.device(candidate)
        return torch.device("cpu")
    if not _available(kind):
        raise ConfigError(
            f"device '{choice}' was requested but is not available on this machine; "
            "unset ATTN_DEVICE or set it to 'cpu'",
            "device",
            "device_missing",
            device=choice,
        )
    dev = torch.device(choice)
    if dev.type == "cuda" and dev.index is not None and dev.index >= torch.cuda.device_count():
        raise ConfigError(
            f"device '{choice}' does not exist: this machine has {torch.cuda.device_count()} CUDA device(s)",
            "device",
            "device_index",
            device=choice,
            n=torch.cuda.device_count(),
        )
    return dev


@dataclass(frozen=True)
class DeviceInfo:
    """What the UI says about a device, as numbers and names it translates.

    ``kind``: ``cpu``, ``cuda`` or ``mps``; ``name`` and ``memory_gib``: the GPU model and its memory
    (CUDA only); ``threads``: torch's CPU threads (CPU only).
    """

    kind: str
    name: str = ""
    memory_gib: float = 0.0
    threads: int = 0


def device_info(device: torch.device) -> DeviceInfo:
    """The kind of ``device`` and what identifies it: the GPU model on CUDA, the thread count on the CPU."""
    if device.type == "cuda":
        idx = device.index if device.index is not None else torch.cuda.current_device()
        props = torch.cuda.get_device_properties(idx)
        return DeviceInfo("cuda", name=props.name, memory_gib=props.total_memory / 2**30)
    if device.type == "mps":
        return DeviceInfo("mps")
    return DeviceInfo("cpu", threads=torch.get_num_threads())


def device_label(device: torch.device) -> str:
    """An English one-line name for logs and the benchmark's tables (the UI translates :func:`device_info`)."""
    info = device_info(device)
    if info.kind == "cuda":
        return f"CUDA · {info.name} ({info.memory_gib:.0f} GiB)"
    if info.kind == "mps":
        return "Apple MPS"
    return f"CPU · {info.threads} thread{'s' if info.threads != 1 else ''}"


def sync(device: torch.device | str) -> None:
    """Wait until ``device`` has finished its queued work (CUDA kernels run asynchronously); a no-op elsewhere.

    Call before reading a clock, so a timing covers the work and not only its launch.
    """
    dev = torch.device(device)
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)


def total_memory(device: torch.device | str) -> int | None:
    """Total memory of a CUDA device in bytes (``torch.cuda.get_device_properties``); ``None`` elsewhere."""
    dev = torch.device(device)
    if dev.type != "cuda":
        return None
    idx = dev.index if dev.index is not None else torch.cuda.current_device()
    return int(torch.cuda.get_device_properties(idx).total_memory)
