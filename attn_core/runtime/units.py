"""Sizes and counts as people read them: bytes in binary units (KiB = 1024 B), token counts (4K, 1M)."""

from __future__ import annotations

BINARY_UNITS: tuple[str, ...] = ("B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB")


def binary_unit(n_bytes: int | float) -> tuple[int, str]:
    """(divisor, label) of the largest binary unit not above ``n_bytes`` (B, KiB = 1024 B, MiB, ...)."""
    p = 0
    value = abs(n_bytes)
    while p < len(BINARY_UNITS) - 1 and value >= 1024 ** (p + 1):
        p += 1
    return 1024**p, BINARY_UNITS[p]


def format_bytes(n_bytes: int | float) -> str:
    """``n_bytes`` in binary units with three significant figures: ``2.00 GiB``, ``68.6 KiB``, ``512 B``.

    Whole bytes below 1 KiB are printed exactly. The label always says KiB/MiB/GiB
    (powers of 1024), never kB/MB/GB.
    """
    div, unit = binary_unit(n_bytes)
    if div == 1:
        return f"{n_bytes:,.0f} B" if float(n_bytes).is_integer() else f"{n_bytes:.3g} B"
    v = n_bytes / div
    if abs(v) >= 100:
        text = f"{v:.0f}"
    elif abs(v) >= 10:
        text = f"{v:.1f}"
    else:
        text = f"{v:.2f}"
    if text in ("1024", "1024.0"):  # rounding reached the next unit
        return format_bytes(div * 1024)
    return f"{text} {unit}"


def format_bytes_exact(n_bytes: int) -> str:
    """``2.00 GiB (2,147,483,648 B)``: the rounded binary value with the exact count (language-neutral)."""
    if binary_unit(n_bytes)[0] == 1:
        return format_bytes(n_bytes)
    return f"{format_bytes(n_bytes)} ({n_bytes:,} B)"


def format_tokens(n: int) -> str:
    """A token count written compactly for axes and labels: ``4K``, ``128K``, ``1M``, else ``4,000``.

    ``K`` and ``M`` mean 2**10 and 2**20 tokens and are used only when exact.
    """
    if n >= 1 << 20 and n % (1 << 20) == 0:
        return f"{n >> 20}M"
    if n >= 1 << 10 and n % (1 << 10) == 0:
        return f"{n >> 10}K"
    return f"{n:,}"
