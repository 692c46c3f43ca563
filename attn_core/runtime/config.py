"""Configuration dataclass, limits and the error every bad parameter raises."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

# Upper limits the UI offers. The engine itself accepts larger values where they
# fit the resource guard; these bound what a slider or a URL may ask for.
MAX_HEADS = 64
MAX_HEAD_DIM = 1024
MAX_SEQ_LEN = 8192
MAX_BATCH = 64
MAX_D_MODEL = 16384

# Softmax saturation (measured by attn_core.saturation, named in the figures' titles, so kept free of torch here):
SATURATION_THRESHOLD = 0.99  # a row whose largest weight exceeds this counts as saturated
SMALL_NORM = 1e-3  # a row whose gradient norm is below this counts as one whose gradient has vanished
FLOAT16_MAX = 65504.0  # the largest finite float16, torch.finfo(torch.float16).max


class ConfigError(ValueError):
    """A parameter is invalid. The message names the field and says how to fix it.

    ``key`` and ``params`` optionally name a catalog entry (``err.<key>``) with the
    same content, so the UI can show the message in the user's language.
    """

    def __init__(self, message: str, field: str | None = None, key: str | None = None, **params: object):
        super().__init__(message)
        self.field = field
        self.key = key
        self.params = params


def unknown_option(name: str, value: object, options: Sequence[str]) -> ConfigError:
    """The error for ``value`` not among the ``options`` of the field ``name`` (catalog ``err.unknown_option``)."""
    listed = ", ".join(options)
    return ConfigError(
        f"{name} '{value}' is not known; use one of: {listed}",
        name,
        "unknown_option",
        name=name,
        value=value,
        options=listed,
    )


def divisors(n: int) -> list[int]:
    """All positive divisors of ``n`` in increasing order (``[]`` for n < 1)."""
    if n < 1:
        return []
    small, large = [], []
    for d in range(1, math.isqrt(n) + 1):
        if n % d == 0:
            small.append(d)
            if d != n // d:
                large.append(n // d)
    return small + large[::-1]


def nearest_divisor(n: int, value: float) -> int:
    """The divisor of ``n`` closest to ``value`` (the smaller one on a tie)."""
    return min(divisors(n), key=lambda d: (abs(d - value), d))


def kv_heads_keeping_group(n_heads: int, chosen_heads: int, chosen_kv: int) -> int:
    """The ``n_kv_heads`` for ``n_heads`` query heads that keeps a learner's choice (``chosen_kv`` of ``chosen_heads``).

    The rule, in order:

    1. MQA stays MQA: ``chosen_kv == 1 < chosen_heads`` gives 1.
    2. The group size ``g = chosen_heads // chosen_kv`` (query heads per KV head) is kept
       when it divides ``n_heads``: ``n_heads // g`` KV heads. MHA (g = 1) stays MHA.
    3. Otherwise the largest group size below ``g`` that divides ``n_heads``: the fewest KV
       heads that still give each at most ``g`` query heads, i.e. the nearest ratio on the side
       of more KV heads (never more sharing than chosen).

    The result depends only on the choice and ``n_heads``, not on the path there, so
    the choice comes back at every ``n_heads`` that ``g`` divides (at ``chosen_heads``,
    ``chosen_kv`` itself). E.g. a choice of 2 KV heads for 8 (g = 4) gives 3 for 9
    heads (g = 3), 5 for 10 (g = 2; g = 5 would share more), 3 for 12, 2 for 8.
    """
    check_kv_heads(chosen_heads, chosen_kv)
    if chosen_kv == 1 and chosen_heads > 1:
        return 1
    group = chosen_heads // chosen_kv
    return min(d for d in divisors(n_heads) if n_heads <= group * d)


def check_int(name: str, value: object, lo: int, hi: int | None = None) -> int:
    """Return ``value`` as an int in ``[lo, hi]`` or raise ConfigError naming ``name``."""
    if type(value) is int and lo <= value and (hi is None or value <= hi):  # the common case, checked first
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(f"{name} must be a whole number, got {value!r}", name, "whole", name=name, value=repr(value))
    if isinstance(value, float):
        if not math.isfinite(value) or value != int(value):
            raise ConfigError(
                f"{name} must be a whole number, got {value!r}", name, "whole", name=name, value=repr(value)
            )
        value = int(value)
    if value < lo or (hi is not None and value > hi):
        if hi is not None:
            raise ConfigError(
                f"{name} ({value}) must be between {lo} and {hi}", name, "between", name=name, value=value, lo=lo, hi=hi
            )
        raise ConfigError(f"{name} ({value}) must be at least {lo}", name, "at_least", name=name, value=value, lo=lo)
    return int(value)


def check_temperature(value: object) -> float:
    """Return the softmax temperature ``value`` as a float, or raise ConfigError unless it is a number > 0."""
    if isinstance(value, bool) or not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
        raise ConfigError(
            f"temperature must be a positive number, got {value!r}", "temperature", "temperature", value=repr(value)
        )
    return float(value)


def check_kv_heads(n_heads: int, n_kv_heads: int) -> None:
    """Raise ConfigError unless ``n_kv_heads`` divides ``n_heads`` (and so is at most ``n_heads``)."""
    if n_kv_heads > n_heads:
        raise ConfigError(
            f"n_kv_heads ({n_kv_heads}) cannot exceed n_heads ({n_heads}); "
            f"valid n_kv_heads: {', '.join(map(str, divisors(n_heads)))}",
            "n_kv_heads",
            "kv_exceeds_valid",
            n_kv_heads=n_kv_heads,
            n_heads=n_heads,
            valid=", ".join(map(str, divisors(n_heads))),
        )
    if n_heads % n_kv_heads != 0:
        valid = ", ".join(str(d) for d in divisors(n_heads))
        raise ConfigError(
            f"n_heads ({n_heads}) must be divisible by n_kv_heads ({n_kv_heads}); valid n_kv_heads: {valid}",
            "n_kv_heads",
            "divisible",
            n_heads=n_heads,
            n_kv_heads=n_kv_heads,
            valid=valid,
        )


@dataclass(frozen=True)
class AttentionConfig:
    """Shape of one attention layer.

    ``n_kv_heads == n_heads`` is multi-head attention (MHA), ``1`` is multi-query
    attention (MQA), any other divisor of ``n_heads`` is grouped-query attention
    (GQA). ``d_model`` defaults to ``n_heads * head_dim``.
    """

    n_heads: int = 8
    n_kv_heads: int = 2
    head_dim: int = 16
    seq_len: int = 12
    d_model: int | None = field(default=None)
    batch: int = 1
    causal: bool = False
    use_scaling: bool = True
    seed: int = 0

    def __post_init__(self) -> None:
        if self.d_model is None and isinstance(self.n_heads, int) and isinstance(self.head_dim, int):
            object.__setattr__(self, "d_model", self.n_heads * self.head_dim)

    @property
    def n_rep(self) -> int:
        """Query heads per KV head (the group size)."""
        return self.n_heads // self.n_kv_heads

    @property
    def kind(self) -> str:
        """``"MHA"``, ``"GQA"`` or ``"MQA"``."""
        return attention_kind(self.n_heads, self.n_kv_heads)

    def validate(self) -> AttentionConfig:
        """Check every field; return ``self`` or raise :class:`ConfigError`."""
        check_int("n_heads", self.n_heads, 1, MAX_HEADS)
        check_int("n_kv_heads", self.n_kv_heads, 1, MAX_HEADS)
        check_int("head_dim", self.head_dim, 1, MAX_HEAD_DIM)
        check_int("seq_len", self.seq_len, 1, MAX_SEQ_LEN)
        check_int("d_model", self.d_model, 1, MAX_D_MODEL)
        check_int("batch", self.batch, 1, MAX_BATCH)
        check_int("seed", self.seed, 0, 2**31 - 1)
        check_kv_heads(self.n_heads, self.n_kv_heads)
        for name in ("causal", "use_scaling"):
            if not isinstance(getattr(self, name), bool):
                raise ConfigError(f"{name} must be True or False", name, "true_false", name=name)
        return self


def attention_kind(n_heads: int, n_kv_heads: int) -> str:
    """Name the sharing pattern: MHA (no sharing), MQA (one KV head) or GQA."""
    if n_kv_heads == n_heads:
        return "MHA"
    if n_kv_heads == 1:
        return "MQA"
    return "GQA"
