"""A preallocated K/V cache and a small decoder that generates with it, measured step by step.

``KVCache`` follows gpt-fast: one layer's keys and values live in fixed buffers
``[B, H_kv, S_max, D]`` and each new position is written in place, so the
memory is reserved once and never copied. ``TinyDecoder`` is a seeded,
randomly initialised transformer built from
:class:`~attn_core.attention.gqa.GroupedQueryAttention` layers, whose own projection and
attention (:func:`~attn_core.attention.gqa.scaled_dot_product_attention`) it runs; it generates
greedily either with the cache (one new token per step) or without it
(recomputing every key and value of the whole sequence each step), and
:func:`run_decode` yields per-step measurements so a page can draw them live.

Everything computes in float32; the cache stores K and V in its own dtype
(fp32, fp16 or bf16). The no-cache path rounds its keys and values to the same
dtype, so both paths compute the same function and pick the same tokens.
"""

from __future__ import annotations

import math
import os
import statistics
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import torch
from torch import nn

from attn_core.attention.gqa import GroupedQueryAttention, repeat_kv
from attn_core.attention.tokens import sinusoidal_positions
from attn_core.kv.memory import kv_cache_bytes
from attn_core.runtime import guard
from attn_core.runtime.config import ConfigError, check_int, check_kv_heads
from attn_core.runtime.device import sync
from attn_core.runtime.units import format_bytes

#: Cache dtypes torch can compute with on every device.
TORCH_DTYPES: dict[str, torch.dtype] = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
DECODE_DTYPES: tuple[str, ...] = tuple(TORCH_DTYPES)

#: Upper limits of the live decode (a teaching model, not a server).
MAX_DECODE_HEADS = 128
MAX_DECODE_HEAD_DIM = 256
MAX_DECODE_LAYERS = 8
MAX_DECODE_BATCH = 16
MAX_DECODE_STEPS = 2048
MAX_PROMPT_LEN = 512


def unsupported_dtype(dtype: object, field: str = "dtype") -> ConfigError:
    """The error for a cache dtype the decode cannot compute with, naming ``field`` (the cache's ``dtype``, or the
    page's ``dec_dtype``)."""
    shown = str(dtype) if isinstance(dtype, torch.dtype) else repr(dtype)
    options = ", ".join(DECODE_DTYPES)
    return ConfigError(
        f"{'cache dtype' if field == 'dtype' else field} {shown} is not supported; use one of: {options}",
        field,
        "kv_unknown_choice",
        name=field,
        value=shown,
        options=options,
    )


def torch_dtype(dtype: str | torch.dtype) -> torch.dtype:
    """``fp32``/``fp16``/``bf16`` (or the torch dtype itself) as a torch dtype."""
    if isinstance(dtype, torch.dtype):
        if dtype not in TORCH_DTYPES.values():
            raise unsupported_dtype(dtype)
        return dtype
    if dtype not in TORCH_DTYPES:
        raise unsupported_dtype(dtype)
    return TORCH_DTYPES[dtype]


def dtype_name(dtype: torch.dtype) -> str:
    """The short name (``fp32``, ``fp16``, ``bf16``) of a torch dtype."""
    for name, value in TORCH_DTYPES.items():
        if value == dtype:
            return name
    raise unsupported_dtype(dtype)


# ---------------------------------------------------------------- the cache
class KVCache:
    """One layer's keys and values in preallocated buffers ``k``, ``v`` of shape ``[B, H_kv, S_max, D]``.

    ``append(k, v)`` writes ``[B, H_kv, T, D]`` at the next ``T`` positions and
    returns the filled views ``[B, H_kv, length, D]`` (no copy). Appending past
    ``max_seq_len`` raises :class:`ConfigError`.
    """

    def __init__(
        self,
        batch: int,
        n_kv_heads: int,
        max_seq_len: int,
        head_dim: int,
        dtype: str | torch.dtype = "fp32",
        device: str | torch.device = "cpu",
    ):
        self.batch = check_int("batch", batch, 1)
        self.n_kv_heads = check_int("n_kv_heads", n_kv_heads, 1)
        self.max_seq_len = check_int("max_seq_len", max_seq_len, 1)
        self.head_dim = check_int("head_dim", head_dim, 1)
        self.dtype = torch_dtype(dtype)
        shape = (self.batch, self.n_kv_heads, self.max_seq_len, self.head_dim)
        self.k = torch.zeros(shape, dtype=self.dtype, device=device)  # (B, H_kv, S_max, D)
        self.v = torch.zeros(shape, dtype=self.dtype, device=device)  # (B, H_kv, S_max, D)
        self.length = 0

    @property
    def device(self) -> torch.device:
        return self.k.device

    def append(self, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Store ``k``, ``v`` ``[B, H_kv, T, D]`` (cast to the cache dtype); return the filled views."""
        want = (self.batch, self.n_kv_heads, self.head_dim)
        for name, x in (("k", k), ("v", v)):
            if x.dim() != 4 or (x.shape[0], x.shape[1], x.shape[3]) != want:
                holds = f"[{self.batch}, {self.n_kv_heads}, T, {self.head_dim}]"
                raise ConfigError(
                    f"{name} has shape {list(x.shape)}; this cache holds [B, H_kv, T, D] = {holds}",
                    "shape",
                    "kv_cache_shape",
                    name=name,
                    shape=str(list(x.shape)),
                    holds=holds,
                )
        if k.shape[2] != v.shape[2]:
            raise ConfigError(
                f"k has {k.shape[2]} positions but v has {v.shape[2]}",
                "shape",
                "kv_cache_positions",
                k=k.shape[2],
                v=v.shape[2],
            )
        t = k.shape[2]
        end = self.length + t
        if end > self.max_seq_len:
            raise ConfigError(
                f"the cache holds {self.max_seq_len} positions; appending {t} to {self.length} would need {end}. "
                "Allocate it with a larger max_seq_len",
                "max_seq_len",
                "kv_cache_full",
                max=self.max_seq_len,
                t=t,
                length=self.length,
                end=end,
            )
        self.k[:, :, self.length : end].copy_(k)
        self.v[:, :, self.length : end].copy_(v)
        self.length = end
        return self.views()

    def views(self) -> tuple[torch.Tensor, torch.Tensor]:
        """The filled part ``[B, H_kv, length, D]`` of K and V (views, no copy)."""
        return self.k[:, :, : self.length], self.v[:, :, : self.length]

    @property
    def nbytes_used(self) -> int:
        """Bytes of the filled K and V views, from their tensor sizes."""
        k, v = self.views()
        return k.numel() * k.element_size() + v.numel() * v.element_size()

    @property
    def nbytes_allocated(self) -> int:
        """Bytes of both preallocated buffers (what the device reserves up front)."""
        return self.k.numel() * self.k.element_size() + self.v.numel() * self.v.element_size()

    def reset(self) -> None:
        """Forget every position (the buffers stay allocated)."""
        self.length = 0


# ---------------------------------------------------------------- the model
@dataclass(frozen=True)
class DecodeConfig:
    """The small decoder of the live demo.

    ``cache_after_repeat`` reproduces a common bug: caching K and V *after*
    ``repeat_kv``, so the cache holds ``n_heads`` heads instead of
    ``n_kv_heads`` and is ``n_heads / n_kv_heads`` times larger (same tokens).
    """

    n_heads: int = 8
    n_kv_heads: int = 2
    head_dim: int = 16
    n_layers: int = 2
    d_model: int = 64
    vocab: int = 256
    batch: int = 1
    dtype: str = "fp32"
    seed: int = 0
    cache_after_repeat: bool = False

    @property
    def n_rep(self) -> int:
        return self.n_heads // self.n_kv_heads

    @property
    def cache_heads(self) -> int:
        """K/V heads the cache really holds."""
        return self.n_heads if self.cache_after_repeat else self.n_kv_heads

    def cache_shape(self, max_seq_len: int) -> tuple[int, int, int, int]:
        """Shape ``[B, heads held, S_max, D]`` of each layer's K and V buffer (n_heads heads after repeat_kv)."""
        return (self.batch, self.cache_heads, max_seq_len, self.head_dim)

    def validate(self) -> DecodeConfig:
        check_int("n_heads", self.n_heads, 1, MAX_DECODE_HEADS)
        check_int("n_kv_heads", self.n_kv_heads, 1, MAX_DECODE_HEADS)
        check_kv_heads(self.n_heads, self.n_kv_heads)
        check_int("head_dim", self.head_dim, 1, MAX_DECODE_HEAD_DIM)
        check_int("n_layers", self.n_layers, 1, MAX_DECODE_LAYERS)
        check_int("d_model", self.d_model, 2, 4096)
        if self.d_model % 2:
            raise ConfigError(
                f"d_model ({self.d_model}) must be even (sinusoidal positions)",
                "d_model",
                "kv_d_model_even",
                d_model=self.d_model,
            )
        check_int("vocab", self.vocab, 2, 65536)
        check_int("batch", self.batch, 1, MAX_DECODE_BATCH)
        check_int("seed", self.seed, 0, 2**31 - 1)
        torch_dtype(self.dtype)
        return self

    def n_params(self) -> int:
        """Parameters of :class:`TinyDecoder` with this configuration."""
        d, h, hkv, dh = self.d_model, self.n_heads, self.n_kv_heads, self.head_dim
        attn = d * h * dh + 2 * d * hkv * dh + h * dh * d
        mlp = d * 4 * d + 4 * d + 4 * d * d + d
        norms = 2 * 2 * d
        return self.vocab * d * 2 + self.n_layers * (attn + mlp + norms) + 2 * d


class Block(nn.Module):
    """Pre-norm transformer block: GQA self-attention and a 4x GELU MLP, each with a residual."""

    def __init__(self, cfg: DecodeConfig):
        super().__init__()
        self.norm1 = nn.LayerNorm(cfg.d_model)
        self.attn = GroupedQueryAttention(cfg.d_model, cfg.n_heads, cfg.n_kv_heads, head_dim=cfg.head_dim)
        self.norm2 = nn.LayerNorm(cfg.d_model)
        self.mlp = nn.Sequential(
            nn.Linear(cfg.d_model, 4 * cfg.d_model), nn.GELU(), nn.Linear(4 * cfg.d_model, cfg.d_model)
        )


class TinyDecoder(nn.Module):
    """A seeded, randomly initialised decoder-only transformer (embedding, blocks, unembedding).

    ``forward(tokens, caches=None, start=0)``: tokens ``[B, T]`` at positions
    ``start .. start+T-1``; with ``caches`` (one :class:`KVCache` per layer,
    holding ``start`` positions) the new keys/values are appended and the
    queries attend to the whole cache; without, the sequence attends to itself
    causally. Returns logits ``[B, T, vocab]`` float32.
    """

    def __init__(self, cfg: DecodeConfig):
        super().__init__()
        self.cfg = cfg.validate()
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(cfg.seed)
            self.embed = nn.Embedding(cfg.vocab, cfg.d_model)
            self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layers))
            self.norm_f = nn.LayerNorm(cfg.d_model)
            self.unembed = nn.Linear(cfg.d_model, cfg.vocab, bias=False)
        self.cache_dtype = torch_dtype(cfg.dtype)
        self.eval()

    def new_caches(self, max_seq_len: int, device: torch.device | str | None = None) -> list[KVCache]:
        """One empty :class:`KVCache` per layer, ``[B, cache_heads, max_seq_len, head_dim]`` each."""
        device = device or next(self.parameters()).device
        c = self.cfg
        return [
            KVCache(c.batch, c.cache_heads, max_seq_len, c.head_dim, self.cache_dtype, device)
            for _ in range(c.n_layers)
        ]

    def _attention(self, attn: GroupedQueryAttention, h: torch.Tensor, cache: KVCache | None) -> torch.Tensor:
        """One block's attention through the layer's own :meth:`~GroupedQueryAttention.project` and
        :meth:`~GroupedQueryAttention.attend`, its keys and values kept in ``cache`` between steps."""
        c = self.cfg
        q, k, v = attn.project(h)  # (B, H, T, D); (B, H_kv, T, D) each
        if c.cache_after_repeat:
            k, v = repeat_kv(k, c.n_rep), repeat_kv(v, c.n_rep)  # (B, H, T, D): the bug, n_rep copies cached
        if cache is not None:
            k, v = cache.append(k, v)  # (B, H_c, start + T, D) in the cache dtype: the preallocated buffers' views
        else:
            k, v = k.to(self.cache_dtype), v.to(self.cache_dtype)  # same rounding as the cache
        # computed in float32 (converted before the KV heads are repeated: a quarter of the work for GQA-4);
        # one new query row attends to every key, a longer step is causal, aligned to the end of the keys
        out, _ = attn.attend(q, k.float(), v.float(), causal=q.shape[2] > 1)
        return out  # (B, T, d_model)

    def forward(self, tokens: torch.Tensor, caches: list[KVCache] | None = None, start: int = 0) -> torch.Tensor:
        if caches is not None:
            if len(caches) != self.cfg.n_layers:
                raise ConfigError(
                    f"need {self.cfg.n_layers} caches, got {len(caches)}",
                    "caches",
                    "kv_n_caches",
                    want=self.cfg.n_layers,
                    got=len(caches),
                )
            start = caches[0].length
        t = tokens.shape[1]
        x = self.embed(tokens) + sinusoidal_positions(t, self.cfg.d_model, start).to(tokens.device)  # (B, T, d)
        for i, blk in enumerate(self.blocks):
            x = x + self._attention(blk.attn, blk.norm1(x), None if caches is None else caches[i])
            x = x + blk.mlp(blk.norm2(x))
        return self.unembed(self.norm_f(x))  # (B, T, vocab)


def make_prompt(cfg: DecodeConfig, prompt_len: int) -> torch.Tensor:
    """Seeded random prompt tokens ``[B, prompt_len]`` int64 on the CPU."""
    check_int("prompt_len", prompt_len, 1, MAX_PROMPT_LEN)
    g = torch.Generator().manual_seed(cfg.seed + 1)
    return torch.randint(0, cfg.vocab, (cfg.batch, prompt_len), generator=g)


# ---------------------------------------------------------------- memory budget
def device_budget(device: torch.device | str) -> int:
    """Bytes a live decode may use on ``device``.

    The project's memory budget (:func:`attn_core.runtime.guard.max_bytes`: 1 GiB unless
    ``ATTN_MAX_BYTES`` says otherwise), and never more than 90 % of the free GPU
    memory on CUDA or half the available RAM on the CPU.
    """
    dev = torch.device(device)
    if dev.type == "cuda":
        free, _total = torch.cuda.mem_get_info(dev)
        room = int(free * 0.9)
    else:
        try:
            room = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // 2
        except (ValueError, OSError, AttributeError):
            room = guard.max_bytes()
    return int(min(guard.max_bytes(), room))


@dataclass(frozen=True)
class DecodeNeed:
    """Bytes a live decode needs: parameters, all caches, and the largest transient of one step."""

    weights: int
    cache: int
    transient: int

    @property
    def total(self) -> int:
        return self.weights + self.cache + self.transient


def decode_need(cfg: DecodeConfig, prompt_len: int, n_new: int, recompute: bool = True) -> DecodeNeed:
    """Memory a :func:`run_decode` of ``n_new`` tokens after ``prompt_len`` will need.

    The cache term is exact (the buffers); the transient term bounds one step's
    attention scores and weights (float32 ``[B, H, T, T]``, a few live at once)
    and activations.
    """
    cfg.validate()
    s = prompt_len + n_new - 1  # the last generated token is never fed back
    elem = torch.tensor([], dtype=torch_dtype(cfg.dtype)).element_size()
    cache = cfg.n_layers * 2 * cfg.batch * cfg.cache_heads * s * cfg.head_dim * elem
    t_q = s if recompute else prompt_len
    scores = 4 * cfg.batch * cfg.n_heads * t_q * s * 4  # scores, exp, weights, masked copy (float32)
    acts = 4 * cfg.batch * t_q * (8 * cfg.d_model + cfg.vocab + 4 * cfg.n_heads * cfg.head_dim)
    return DecodeNeed(cfg.n_params() * 4, cache, scores + acts)


def check_decode_budget(
    cfg: DecodeConfig,
    prompt_len: int,
    n_new: int,
    device: torch.device | str = "cpu",
    budget_bytes: int | None = None,
    recompute: bool = True,
) -> DecodeNeed:
    """Raise :class:`ConfigError` before anything is allocated if the decode cannot fit.

    ``budget_bytes`` defaults to :func:`device_budget` of ``device``. Returns
    the :class:`DecodeNeed` when it fits.
    """
    check_int("prompt_len", prompt_len, 1, MAX_PROMPT_LEN)
    check_int("n_new", n_new, 1, MAX_DECODE_STEPS)
    need = decode_need(cfg, prompt_len, n_new, recompute)
    budget = device_budget(device) if budget_bytes is None else int(budget_bytes)
    if need.total > budget:
        why = (
            f" (the smaller of the budget set by ATTN_MAX_BYTES, {format_bytes(guard.max_bytes())}, "
            "and the device's free memory)"
            if budget_bytes is None
            else ""
        )
        raise ConfigError(
            f"the live decode needs about {format_bytes(need.total)} (cache {format_bytes(need.cache)}, "
            f"weights {format_bytes(need.weights)}, largest step {format_bytes(need.transient)}) but only "
            f"{format_bytes(budget)} may be used on {torch.device(device)}{why}; lower the steps, the batch, "
            "the heads or the head dimension",
            "budget",
            "budget",
            need=format_bytes(need.total),
            budget=format_bytes(budget),
            reduce="dec_steps / dec_batch / n_heads / head_dim",
        )
    return need


# ---------------------------------------------------------------- generation
def _cuda_allocated(device: torch.device) -> int | None:
    return int(torch.cuda.memory_allocated(device)) if device.type == "cuda" else None


@dataclass(frozen=True)
class DecodeStep:
    """One generated token of :func:`run_decode` and what it cost.

    ``seq_len`` tokens were in the context when it was computed (the prompt and
    the earlier generated tokens; step 1 is the prefill). ``cache_bytes`` is
    measured from the cache tensors' sizes; ``formula_bytes`` is
    :func:`~attn_core.kv.memory.kv_cache_bytes` for the heads the cache really
    holds, ``correct_bytes`` the same with ``n_kv_heads`` (they differ only
    with ``cache_after_repeat``). ``allocated_bytes`` is what the preallocated
    buffers reserve and ``cuda_bytes`` the growth of
    ``torch.cuda.memory_allocated`` since just before they were allocated
    (``None`` off CUDA). Times are seconds; ``time_recompute_s`` and
    ``token_recompute`` are ``None`` when the no-cache run is off.
    """

    step: int
    seq_len: int
    token: int
    token_recompute: int | None
    cache_bytes: int
    formula_bytes: int
    correct_bytes: int
    allocated_bytes: int
    cuda_bytes: int | None
    time_cached_s: float
    time_recompute_s: float | None


def _timed_step(model: TinyDecoder, tokens: torch.Tensor, caches: list[KVCache] | None) -> tuple[torch.Tensor, float]:
    """One greedy step: tokens ``[B, T]`` (CPU) in, next tokens ``[B]`` (CPU) and seconds out.

    Every device tensor it creates dies when it returns, so between steps the
    caches are the only device memory a decode holds (what the CUDA counter sees).
    """
    device = next(model.parameters()).device
    # The grad mode is entered per step, never held across a generator's yield: it is
    # thread-local and would otherwise leak into the consumer's code while the generator waits.
    with torch.inference_mode():
        t0 = time.perf_counter()
        logits = model(tokens.to(device), caches)  # (B, T, V)
        nxt = logits[:, -1].argmax(dim=-1)  # (B,)
        sync(device)
        dt = time.perf_counter() - t0
        return nxt.cpu(), dt


def _warm_up(model: TinyDecoder, prompt: torch.Tensor, recompute: bool) -> None:
    """Run every kind of measured step once at the real prompt length, on throwaway caches.

    The prefill of the whole prompt and two cached one-token steps, and with
    ``recompute`` full passes over the prompt and the prompt plus one token.
    First calls pay one-off costs (kernel selection, thread pools, cuBLAS
    workspaces); doing them here keeps them out of both measured paths alike.
    """
    scratch = model.new_caches(prompt.shape[1] + 2)
    nxt, _ = _timed_step(model, prompt, scratch)
    nxt2, _ = _timed_step(model, nxt[:, None], scratch)
    _timed_step(model, nxt2[:, None], scratch)
    if recompute:
        _timed_step(model, prompt, None)
        _timed_step(model, torch.cat([prompt, nxt[:, None]], dim=1), None)
    del scratch
    sync(next(model.parameters()).device)


def _cached_step(
    model: TinyDecoder, step_input: torch.Tensor, caches: list[KVCache], start: int
) -> tuple[torch.Tensor, float]:
    """One timed step with the cache rewound to ``start`` positions (a repeat rewrites the same positions)."""
    for c in caches:
        c.length = start
    return _timed_step(model, step_input, caches)


def generate_cached(
    model: TinyDecoder, prompt: torch.Tensor, n_new: int, caches: list[KVCache] | None = None, repeats: int = 1
) -> Iterator[tuple[torch.Tensor, list[KVCache], float]]:
    """Greedy decoding with the K/V cache: yields ``(tokens [B] on the CPU, caches, seconds)`` per new token.

    The first token comes from the prefill of ``prompt`` ``[B, P]``; each later
    one feeds only the previous token. ``caches`` default to fresh ones sized
    ``P + n_new - 1`` on the model's device. With ``repeats > 1`` each step is
    timed that many times (rewinding the caches, which rewrites the same
    positions with the same values) and the best time is reported.
    """
    check_int("repeats", repeats, 1, 20)
    caches = caches if caches is not None else model.new_caches(prompt.shape[1] + n_new - 1)
    step_input = prompt.cpu()
    for _ in range(n_new):
        start = caches[0].length
        timings = [_cached_step(model, step_input, caches, start) for _ in range(repeats)]
        nxt = timings[-1][0]
        yield nxt, caches, min(t for _, t in timings)
        step_input = nxt[:, None]  # (B, 1)


def generate_recompute(
    model: TinyDecoder, prompt: torch.Tensor, n_new: int, repeats: int = 1
) -> Iterator[tuple[torch.Tensor, float]]:
    """Greedy decoding without a cache: every step runs the whole sequence again.

    Yields ``(tokens [B] on the CPU, seconds)`` per new token, the best of ``repeats`` timings.
    """
    check_int("repeats", repeats, 1, 20)
    seq = prompt.cpu()
    for _ in range(n_new):
        timings = [_timed_step(model, seq, None) for _ in range(repeats)]  # all keys and values recomputed
        nxt, dt = timings[-1][0], min(t for _, t in timings)
        yield nxt, dt
        seq = torch.cat([seq, nxt[:, None]], dim=1)  # (B, T + 1)


def run_decode(
    cfg: DecodeConfig,
    prompt_len: int,
    n_new: int,
    device: torch.device | str = "cpu",
    *,
    recompute: bool = True,
    budget_bytes: int | None = None,
    repeats: int = 1,
) -> Iterator[DecodeStep]:
    """Generate ``n_new`` tokens with the cache (and, with ``recompute``, without it), one step at a time.

    Checks the memory budget first (:func:`check_decode_budget`, which raises
    :class:`ConfigError` before anything is allocated), builds the seeded
    model and prompt, allocates the caches for ``prompt_len + n_new - 1``
    positions, and yields one :class:`DecodeStep` per generated token. Each
    step's time is the best of ``repeats`` runs of that step (on a shared
    machine single timings are noisy). A consumer may stop iterating at any
    time; nothing outlives the generator.
    """
    dev = torch.device(device)
    check_decode_budget(cfg, prompt_len, n_new, dev, budget_bytes, recompute)
    try:
        yield from _decode_steps(cfg, prompt_len, n_new, dev, recompute, repeats)
        return
    except torch.OutOfMemoryError:
        pass
    guard.free_cuda()  # outside the except: its traceback held the model and the caches on the device
    doing = "during the live decode (other work may be using it); lower the steps, the batch, the heads or "
    raise guard.out_of_memory(dev, doing + "the head dimension", "dec_steps / dec_batch / n_heads / head_dim")


def _decode_steps(
    cfg: DecodeConfig, prompt_len: int, n_new: int, dev: torch.device, recompute: bool, repeats: int
) -> Iterator[DecodeStep]:
    """The steps of :func:`run_decode`: both paths warmed up, then timed alike, their runs interleaved.

    Each step runs the cached step and (with ``recompute``) the full pass in
    turn, ``repeats`` times, and keeps each one's best time, so a burst of load
    from elsewhere on the machine slows both, not one of them.
    """
    check_int("repeats", repeats, 1, 20)
    model = TinyDecoder(cfg).to(dev)
    prompt = make_prompt(cfg, prompt_len)
    _warm_up(model, prompt, recompute)
    before = _cuda_allocated(dev)
    caches = model.new_caches(prompt_len + n_new - 1, dev)
    sync(dev)  # the buffers' zero fill runs before the first step's clock starts, not inside it
    allocated = sum(c.nbytes_allocated for c in caches)
    step_input, seq = prompt, prompt  # (B, 1) or the prompt; the no-cache path's whole sequence (B, T)
    for step in range(1, n_new + 1):
        start = caches[0].length
        best, best_r, tok_r = math.inf, math.inf, None
        for _ in range(repeats):
            tok, dt = _cached_step(model, step_input, caches, start)
            best = min(best, dt)
            if recompute:
                tok_r, dt_r = _timed_step(model, seq, None)  # every key and value of the sequence again
                best_r = min(best_r, dt_r)
        after = _cuda_allocated(dev)
        seq_len = caches[0].length
        yield DecodeStep(
            step=step,
            seq_len=seq_len,
            token=int(tok[0]),
            token_recompute=None if tok_r is None else int(tok_r[0]),
            cache_bytes=sum(c.nbytes_used for c in caches),
            formula_bytes=kv_cache_bytes(cfg.n_layers, cfg.cache_heads, cfg.head_dim, seq_len, cfg.batch, cfg.dtype),
            correct_bytes=kv_cache_bytes(cfg.n_layers, cfg.n_kv_heads, cfg.head_dim, seq_len, cfg.batch, cfg.dtype),
            allocated_bytes=allocated,
            cuda_bytes=None if after is None or before is None else after - before,
            time_cached_s=best,
            time_recompute_s=best_r if recompute else None,
        )
        step_input = tok[:, None]  # (B, 1)
        if tok_r is not None:
            seq = torch.cat([seq, tok_r[:, None]], dim=1)  # (B, T + 1)


#: A path counts as faster only when its median step is at least this many times quicker.
SPEED_MARGIN = 1.1


@dataclass(frozen=True)
class DecodeSpeed:
    """Median seconds per generated token after the prefill, with the cache and recomputing, over ``n`` steps.

    ``verdict`` is ``faster`` when the cached median is at least :data:`SPEED_MARGIN`
    times quicker, ``slower`` when it is that much slower, else ``similar``.
    ``max_context`` is the most tokens a step recomputed.
    """

    n: int
    first_step: int
    last_step: int
    cached_s: float
    recompute_s: float
    max_context: int

    @property
    def ratio(self) -> float:
        """Recompute median / cached median: above 1 the cache is faster."""
        return self.recompute_s / self.cached_s if self.cached_s > 0 else math.inf

    @property
    def verdict(self) -> str:
        if self.ratio >= SPEED_MARGIN:
            return "faster"
        return "slower" if self.ratio <= 1 / SPEED_MARGIN else "similar"


def decode_speed(steps: Sequence[DecodeStep]) -> DecodeSpeed | None:
    """The two paths compared on the generated steps after the prefill (step 1 feeds both the same prompt).

    ``None`` without recompute times or without a step after the prefill.
    """
    after = [s for s in steps if s.step > 1 and s.time_recompute_s is not None]
    if not after:
        return None
    return DecodeSpeed(
        n=len(after),
        first_step=after[0].step,
        last_step=after[-1].step,
        cached_s=statistics.median(s.time_cached_s for s in after),
        recompute_s=statistics.median(s.time_recompute_s for s in after),
        max_context=max(s.seq_len for s in after),
    )


# ---------------------------------------------------------------- prefill against decode
@dataclass(frozen=True)
class PrefillDecodeTiming:
    """Seconds to put ``n_tokens`` into the cache at once (prefill) and one by one (decode); best of repeats."""

    n_tokens: int
    prefill_s: float
    decode_s: float

    @property
    def prefill_per_token_s(self) -> float:
        return self.prefill_s / self.n_tokens

    @property
    def decode_per_token_s(self) -> float:
        return self.decode_s / self.n_tokens


def time_prefill_vs_decode(
    cfg: DecodeConfig, n_tokens: int, device: torch.device | str = "cpu", repeats: int = 3
) -> PrefillDecodeTiming:
    """Time processing ``n_tokens`` prompt tokens in one forward pass against one token per pass.

    Both fill the same cache with the same keys and values; the prefill is one
    large matrix product per projection (compute-bound), the decode
    ``n_tokens`` small ones that each read all weights and the cache
    (memory-bandwidth-bound on a GPU).
    """
    check_int("n_tokens", n_tokens, 1, MAX_PROMPT_LEN)
    check_int("repeats", repeats, 1, 20)
    dev = torch.device(device)
    check_decode_budget(cfg, n_tokens, 1, dev, recompute=False)
    try:
        best_p, best_d = _time_phases(cfg, n_tokens, dev, repeats)
        return PrefillDecodeTiming(n_tokens, best_p, best_d)
    except torch.OutOfMemoryError:
        pass
    guard.free_cuda()  # outside the except: its traceback held the model on the device
    doing = "timing prefill and decode; lower the tokens, the batch or the heads"
    raise guard.out_of_memory(dev, doing, "pd_tokens / batch / n_heads")


def _time_phases(cfg: DecodeConfig, n_tokens: int, dev: torch.device, repeats: int) -> tuple[float, float]:
    """(best prefill seconds, best decode seconds) for :func:`time_prefill_vs_decode`."""
    model = TinyDecoder(cfg).to(dev)
    prompt = make_prompt(cfg, n_tokens).to(dev)
    best_p = best_d = math.inf
    with torch.inference_mode():
        scratch = model.new_caches(n_tokens + 1)  # warm-up: one prefill and one decode step, as both are timed
        model(prompt, scratch)
        model(prompt[:, -1:], scratch)
        del scratch
        for _ in range(repeats):
            caches = model.new_caches(n_tokens, dev)
            sync(dev)
            t0 = time.perf_counter()
            model(prompt, caches)
            sync(dev)
            best_p = min(best_p, time.perf_counter() - t0)
            caches = model.new_caches(n_tokens, dev)
            sync(dev)
            t0 = time.perf_counter()
            for i in range(n_tokens):
                model(prompt[:, i : i + 1], caches)
            sync(dev)
            best_d = min(best_d, time.perf_counter() - t0)
    return best_p, best_d
