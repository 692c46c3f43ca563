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


def format_sig(x: float, digits: int = 3) -> str:
    """``x`` to ``digits`` significant figures without an exponent from 10**digits up: ``0.505``, ``2.65``,
    ``1,152`` (not ``1.15e+03``)."""
    if abs(x) >= 10**digits:
        return f"{x:,.0f}"
    return f"{x:.{digits}g}"


def format_ratio(r: float) -> str:
    """A ratio as people say it: two significant figures below 10 (``1.2``, ``2.2``, ``0.52``), whole numbers from
    10 on (``12``, ``1,234``)."""
    if abs(r) >= 10:
        return f"{r:,.0f}"
    return f"{r:.2g}"


def about_one(r: float) -> bool:
    """Whether a positive ratio is about 1: within 5 % either way, what :func:`format_ratio` prints as ``1``."""
    return max(r, 1 / r) < 1.05 if r > 0 else False
