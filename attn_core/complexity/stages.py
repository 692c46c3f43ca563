"""What one attention layer costs in time and memory, counted stage by stage and measured.

Counted (:func:`flops_by_stage`, :func:`memory_by_stage`): plain arithmetic on the layer's shape, per layer and
per sequence of ``n`` tokens (batch 1). A multiply-add counts as 2 FLOPs (Hoffmann et al. 2022, "Training
Compute-Optimal Large Language Models", App. F). With ``h`` query heads, ``h_kv`` key/value heads of width
``d_h`` and model width ``d``:

======================  =============================================  ==========================================
stage                   FLOPs                                          eager activations held (elements)
======================  =============================================  ==========================================
``qkv_projection``      2·n·d·(h·d_h + 2·h_kv·d_h)                     Q ``[h, n, d_h]``, K and V ``[h_kv, n, d_h]``
``scores``              2·n²·h·d_h  (QKᵀ, every query head)            ``[h, n, n]``
``softmax``             3·h·n²  (convention below)                     ``[h, n, n]``
``weighted_sum``        2·n²·h·d_h  (weights·V)                        ``[h, n, d_h]``
``output_projection``   2·n·h·d_h·d                                    ``[n, d]``
``mlp`` (if asked)      2·n·d·w·m  (m matrices of width w)             not measured
======================  =============================================  ==========================================

Conventions: the softmax costs 3 FLOPs per score (one exp, one add into the row sum, one divide); the row
maximum, its subtraction and the 1/√d_h scaling are not counted. The n² terms do not shrink with GQA: every
query head still scores every key. ``causal=True`` counts the n·(n+1)/2 unmasked (query, key) pairs in the n²
terms, as a kernel that skips masked blocks would (it also computes the masked half of each diagonal block,
about n·block/2 pairs more, not counted); an eager path that masks a full score matrix does the full n² work.

The fused path (torch's ``scaled_dot_product_attention`` with a flash-style kernel; Dao et al. 2022,
"FlashAttention", Theorems 1-2) never stores the ``[h, n, n]`` scores or weights: it keeps Q, K, V, the output
``[h, n, d_h]`` and one log-sum-exp per row ``[h, n]`` (for the backward pass), O(n) memory beyond its inputs.

Measured (:func:`measure_sweep`): wall time per stage of the eager path and per part of the fused path,
synchronised on CUDA, the median and the spread of ``repeats`` runs after ``warmup``; the peak memory
(``torch.cuda.max_memory_allocated`` on CUDA; on the CPU the bytes of the tensors alive at once, from their
``nbytes``), and which SDPA backend ran (found by forcing each backend, not assumed).
"""

from __future__ import annotations

import math
import statistics
import time
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from attn_core.runtime import guard
from attn_core.runtime.config import ConfigError, check_int, check_kv_heads
from attn_core.runtime.device import sync

STAGES: tuple[str, ...] = ("qkv_projection", "scores", "softmax", "weighted_sum", "output_projection")
N2_STAGES: tuple[str, ...] = ("scores", "softmax", "weighted_sum")  # the stages whose work grows with n²
FUSED_PARTS: tuple[str, ...] = ("qkv_projection", "attention", "output_projection")
PATHS: tuple[str, ...] = ("eager", "fused")
SOFTMAX_FLOPS = 3  # per score: exp, add into the row sum, divide
BYTES = 4  # the measured layer computes in float32
MAX_SWEEP_POINTS = 32
MAX_REPEATS = 50
SLOPE_FROM = 256  # fitted slopes use n from here on: below it fixed overheads (calls, threads) dominate
#: SDPA backends in the order torch tries them when all are enabled (torch 2.x; the live order is read when torch
#: exposes it). The first one that runs on its own is the one the default call runs.
_BACKEND_ORDER = ("FLASH_ATTENTION", "EFFICIENT_ATTENTION", "MATH", "CUDNN_ATTENTION", "OVERRIDEABLE")


# ---------------------------------------------------------------- shapes
@dataclass(frozen=True)
class LayerShape:
    """One attention layer: width ``d_model``, ``n_heads`` query heads, ``n_kv_heads`` K/V heads of ``head_dim``."""

    d_model: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    causal: bool = False

    def validate(self) -> LayerShape:
        """The shape checked: :class:`ConfigError` naming the field of a bad value."""
        for name in ("d_model", "n_heads", "n_kv_heads", "head_dim"):
            check_int(name, getattr(self, name), 1)
        check_kv_heads(self.n_heads, self.n_kv_heads)
        return self

    @property
    def group(self) -> int:
        """Query heads per K/V head."""
        return self.n_heads // self.n_kv_heads


def _shape(seq_len: int, d_model: int, n_heads: int, n_kv_heads: int, head_dim: int, causal: bool) -> LayerShape:
    check_int("seq_len", seq_len, 1)
    return LayerShape(d_model, n_heads, n_kv_heads, head_dim, bool(causal)).validate()


def pairs(seq_len: int, causal: bool) -> int:
    """(query, key) pairs scored: n² , or n·(n+1)/2 unmasked ones with a causal mask."""
    return seq_len * (seq_len + 1) // 2 if causal else seq_len * seq_len


def flops_by_stage(
    seq_len: int,
    d_model: int,
    n_heads: int,
    n_kv_heads: int,
    head_dim: int,
    causal: bool = False,
    mlp_width: int | None = None,
    mlp_matrices: int = 2,
) -> dict[str, int]:
    """FLOPs of each stage of one layer over ``seq_len`` tokens (the table and conventions of the module doc).

    Keys :data:`STAGES`, plus ``mlp`` when ``mlp_width`` is given (``mlp_matrices`` matrices of ``d_model ×
    mlp_width``: 2 for a GELU MLP, 3 for a gated one such as SwiGLU). Integers; :class:`ConfigError` for bad values.
    """
    s = _shape(seq_len, d_model, n_heads, n_kv_heads, head_dim, causal)
    n, d, hd = seq_len, s.d_model, s.n_heads * s.head_dim
    p = pairs(n, s.causal)
    out = {
        "qkv_projection": 2 * n * d * (hd + 2 * s.n_kv_heads * s.head_dim),
        "scores": 2 * p * hd,
        "softmax": SOFTMAX_FLOPS * s.n_heads * p,
        "weighted_sum": 2 * p * hd,
        "output_projection": 2 * n * hd * d,
    }
    if mlp_width is not None:
        out["mlp"] = 2 * n * d * check_int("mlp_width", mlp_width, 1) * check_int("mlp_matrices", mlp_matrices, 1)
    return out


def memory_by_stage(
    seq_len: int,
    d_model: int,
    n_heads: int,
    n_kv_heads: int,
    head_dim: int,
    path: str = "eager",
    bytes_per: int = BYTES,
) -> dict[str, int]:
    """Bytes of the activations each stage holds (batch 1), ``bytes_per`` bytes an element.

    ``eager``: keys :data:`STAGES` (the module doc's table; the causal mask changes nothing here: the eager path
    stores the full matrix). ``fused``: keys :data:`FUSED_PARTS`, the ``attention`` part holding only the output
    ``[h, n, d_h]`` and the float32 log-sum-exp ``[h, n]`` of each row.
    """
    s = _shape(seq_len, d_model, n_heads, n_kv_heads, head_dim, False)
    n, h, dh = seq_len, s.n_heads, s.head_dim
    qkv = (h + 2 * s.n_kv_heads) * n * dh * bytes_per
    out_proj = n * s.d_model * bytes_per
    if path == "fused":
        return {"qkv_projection": qkv, "attention": h * n * dh * bytes_per + h * n * 4, "output_projection": out_proj}
    if path != "eager":
        raise ConfigError(
            f"path '{path}' is not known; use one of: eager, fused",
            "path",
            "unknown_option",
            name="path",
            value=path,
            options="eager, fused",
        )
    return {
        "qkv_projection": qkv,
        "scores": h * n * n * bytes_per,
        "softmax": h * n * n * bytes_per,
        "weighted_sum": h * n * dh * bytes_per,
        "output_projection": out_proj,
    }


#: The tensors :func:`peak_tensors` names: Q, K and V together, the scores and the weights ``[h, n, n]``, the heads'
#: outputs ``[h, n, d_h]``, the fused kernel's row log-sum-exp ``[h, n]`` and the layer's output ``[n, d]``.
PEAK_TENSORS: tuple[str, ...] = ("qkv", "scores", "weights", "heads_output", "lse", "output")


def peak_tensors(seq_len: int, shape: LayerShape, path: str) -> dict[str, int]:
    """The tensors alive at once at the path's peak and their bytes (float32, as the measured runs hold them), keys
    from :data:`PEAK_TENSORS` in that order; their sum is :func:`peak_bytes`.

    Eager: Q, K, V with either the scores and the weights (during the softmax; the scores are freed after it) or
    the weights, the heads' outputs and the layer's output (at the end), whichever is larger (the first on a tie).
    Fused: Q, K, V, the attention's output and row log-sum-exp, and the layer's output."""
    m = memory_by_stage(seq_len, shape.d_model, shape.n_heads, shape.n_kv_heads, shape.head_dim, path)
    if path == "eager":
        during = {"qkv": m["qkv_projection"], "scores": m["scores"], "weights": m["softmax"]}
        end = {
            "qkv": m["qkv_projection"],
            "weights": m["softmax"],
            "heads_output": m["weighted_sum"],
            "output": m["output_projection"],
        }
        return during if sum(during.values()) >= sum(end.values()) else end
    lse = shape.n_heads * seq_len * 4
    return {
        "qkv": m["qkv_projection"],
        "heads_output": m["attention"] - lse,
        "lse": lse,
        "output": m["output_projection"],
    }


def peak_bytes(seq_len: int, shape: LayerShape, path: str) -> int:
    """Activation bytes alive at once at the path's peak: the sum of :func:`peak_tensors`."""
    return sum(peak_tensors(seq_len, shape, path).values())


def weights_bytes(shape: LayerShape) -> int:
    """float32 bytes of W_Q, W_K, W_V and W_O (no biases)."""
    hd, kvd = shape.n_heads * shape.head_dim, shape.n_kv_heads * shape.head_dim
    return BYTES * shape.d_model * (2 * hd + 2 * kvd)


# ---------------------------------------------------------------- crossover and slopes
@dataclass(frozen=True)
class ShippedShape:
    """A real model's layer for the crossover table, from its official config.json (``source``)."""

    name: str
    d_model: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    mlp_width: int
    mlp_matrices: int  # 2: GELU MLP (GPT-2), 3: SwiGLU (SmolLM2: gate, up and down)
    context: int
    source: str

    @property
    def shape(self) -> LayerShape:
        return LayerShape(self.d_model, self.n_heads, self.n_kv_heads, self.head_dim)


SHIPPED_SHAPES: dict[str, ShippedShape] = {
    "gpt2": ShippedShape(
        "GPT-2 small",
        768,
        12,
        12,
        64,
        3072,
        2,
        1024,
        "https://huggingface.co/openai-community/gpt2/blob/main/config.json",
    ),  # n_inner: 4·768
    "smollm2-135m": ShippedShape(
        "SmolLM2-135M",
        576,
        9,
        3,
        64,
        1536,
        3,
        8192,
        "https://huggingface.co/HuggingFaceTB/SmolLM2-135M/blob/main/config.json",
    ),
}


def linear_flops_per_token(shape: LayerShape, mlp_width: int | None = None, mlp_matrices: int = 2) -> int:
    """FLOPs per token of the stages linear in n: the projections (and the MLP when ``mlp_width`` is given)."""
    f = flops_by_stage(
        1, shape.d_model, shape.n_heads, shape.n_kv_heads, shape.head_dim, False, mlp_width, mlp_matrices
    )
    return f["qkv_projection"] + f["output_projection"] + f.get("mlp", 0)


def crossover_n(shape: LayerShape, mlp_width: int | None = None, mlp_matrices: int = 2, softmax: bool = False) -> float:
    """The n where the n² stages cost as much as the linear stages: the matmuls QKᵀ and weights·V (4·h·d_h FLOPs a
    pair), and with ``softmax`` also the softmax (3·h a pair: every n² stage, as the FLOPs curve draws them).

    Without a mask: n = L / q with L the linear FLOPs per token and q the n² FLOPs per pair; causal (n·(n+1)/2
    pairs): n = 2·L / q − 1. The softmax moves n by a factor d_h / (d_h + 3/4). Matmuls only, with
    h·d_h = h_kv·d_h = d: 2·d for the attention alone, 6·d with a 4d two-matrix MLP.
    """
    lin = linear_flops_per_token(shape, mlp_width, mlp_matrices)
    quad = 4 * shape.n_heads * shape.head_dim + (SOFTMAX_FLOPS * shape.n_heads if softmax else 0)
    return 2 * lin / quad - 1 if shape.causal else lin / quad


@dataclass(frozen=True)
class Slope:
    """A straight line through log t against log n: ``slope`` (t ∝ n^slope), over ``n_lo``..``n_hi`` (``points``)."""

    slope: float
    intercept: float
    n_lo: int
    n_hi: int
    points: int


def fit_slope(
    n: Sequence[float], t: Sequence[float], n_min: int = SLOPE_FROM, n_max: int | None = None
) -> Slope | None:
    """Least-squares slope of log t against log n over ``n_min <= n <= n_max`` (positive t only); None with fewer than
    two distinct n in that range."""
    na, ta = np.asarray(n, dtype=float), np.asarray(t, dtype=float)
    keep = (na >= n_min) & (ta > 0) & np.isfinite(ta)
    if n_max is not None:
        keep &= na <= n_max
    na, ta = na[keep], ta[keep]
    if len(np.unique(na)) < 2:
        return None
    slope, intercept = np.polyfit(np.log(na), np.log(ta), 1)
    return Slope(float(slope), float(intercept), int(na.min()), int(na.max()), int(len(na)))


# ---------------------------------------------------------------- the layer, eager and fused
@dataclass(frozen=True)
class Layer:
    """A seeded layer's input ``x [n, d]`` and weights (``nn.Linear`` convention ``[out, in]``)."""

    x: torch.Tensor  # [n, d]
    wq: torch.Tensor  # [h·d_h, d]
    wk: torch.Tensor  # [h_kv·d_h, d]
    wv: torch.Tensor  # [h_kv·d_h, d]
    wo: torch.Tensor  # [d, h·d_h]


def make_layer(seq_len: int, shape: LayerShape, device: str = "cpu", seed: int = 0) -> Layer:
    """Random float32 input N(0, 1) and N(0, 1/fan_in) weights of ``shape`` on ``device``."""
    g = torch.Generator().manual_seed(seed)
    d, hd, kvd = shape.d_model, shape.n_heads * shape.head_dim, shape.n_kv_heads * shape.head_dim

    def draw(*size: int, fan_in: int = 1) -> torch.Tensor:
        return (torch.randn(*size, generator=g) / math.sqrt(fan_in)).to(device)

    return Layer(
        draw(seq_len, d), draw(hd, d, fan_in=d), draw(kvd, d, fan_in=d), draw(kvd, d, fan_in=d), draw(d, hd, fan_in=hd)
    )


def _project(layer: Layer, shape: LayerShape) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Q ``[h, n, d_h]``, K and V ``[h_kv, n, d_h]`` (contiguous: the layout every attention kernel reads)."""
    n, dh = layer.x.shape[0], shape.head_dim
    q = (layer.x @ layer.wq.T).view(n, shape.n_heads, dh).transpose(0, 1).contiguous()  # [h, n, d_h]
    k = (layer.x @ layer.wk.T).view(n, shape.n_kv_heads, dh).transpose(0, 1).contiguous()  # [h_kv, n, d_h]
    v = (layer.x @ layer.wv.T).view(n, shape.n_kv_heads, dh).transpose(0, 1).contiguous()  # [h_kv, n, d_h]
    return q, k, v


def _out_project(o: torch.Tensor, layer: Layer) -> torch.Tensor:
    """``o [h, n, d_h]`` → ``[n, h·d_h]`` → ``[n, d]``."""
    h, n, dh = o.shape
    return o.transpose(0, 1).reshape(n, h * dh) @ layer.wo.T


def eager_stages(layer: Layer, shape: LayerShape) -> Iterator[tuple[str, tuple[torch.Tensor, ...]]]:
    """The eager path one stage at a time: ``(stage, the tensors it made)``, in :data:`STAGES` order.

    GQA without copies: the ``g`` query heads of a K/V head are rows of one ``[h_kv, g·n, d_h]`` view, so
    ``[h_kv, g·n, n]`` scores are the ``[h, n, n]`` of every head (no ``repeat_kv``).
    """
    n, hkv, g = layer.x.shape[0], shape.n_kv_heads, shape.group
    q, k, v = _project(layer, shape)
    yield "qkv_projection", (q, k, v)
    qs = q.view(hkv, g * n, shape.head_dim) * (1.0 / math.sqrt(shape.head_dim))  # scaled before: n·d_h, not n²
    s = (qs @ k.transpose(1, 2)).view(shape.n_heads, n, n)  # [h, n, n]
    if shape.causal:
        s.masked_fill_(torch.ones(n, n, dtype=torch.bool, device=s.device).triu_(1), float("-inf"))
    yield "scores", (s,)
    p = torch.softmax(s, dim=-1)  # [h, n, n]
    yield "softmax", (p,)
    o = (p.view(hkv, g * n, n) @ v).view(shape.n_heads, n, shape.head_dim)  # [h, n, d_h]
    yield "weighted_sum", (o,)
    yield "output_projection", (_out_project(o, layer),)


def eager_forward(layer: Layer, shape: LayerShape) -> torch.Tensor:
    """The layer's output ``[n, d]`` by the eager path."""
    out = None
    for _, made in eager_stages(layer, shape):
        out = made[0]
    return out


def fused_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool) -> torch.Tensor:
    """torch's ``scaled_dot_product_attention`` on ``[h, n, d_h]`` queries and ``[h_kv, n, d_h]`` keys/values."""
    o = F.scaled_dot_product_attention(q[None], k[None], v[None], is_causal=causal, enable_gqa=q.shape[0] != k.shape[0])
    return o[0]  # [h, n, d_h]


def fused_forward(layer: Layer, shape: LayerShape) -> torch.Tensor:
    """The layer's output ``[n, d]`` with the attention fused (torch picks the backend)."""
    q, k, v = _project(layer, shape)
    return _out_project(fused_attention(q, k, v, shape.causal), layer)


def backend_names() -> list[str]:
    """The SDPA backends torch knows, in the order it tries them."""
    from torch.nn.attention import SDPBackend

    known = [b for b in _BACKEND_ORDER if hasattr(SDPBackend, b)]
    try:
        order = list(torch._C._get_sdp_priority_order())
        by_value = {int(getattr(SDPBackend, b)): b for b in known}
        return [by_value[i] for i in order if i in by_value] or known
    except (AttributeError, RuntimeError, TypeError):
        return known


def sdpa_backend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool) -> str:
    """The backend the default SDPA call runs for these inputs: the first, in torch's order, that runs when it is the
    only one enabled (``torch.nn.attention.sdpa_kernel``); ``"none"`` if none does."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    for name in backend_names():
        try:
            with warnings.catch_warnings(), sdpa_kernel([getattr(SDPBackend, name)]):
                warnings.simplefilter("ignore")  # torch warns why each refusing backend refused
                fused_attention(q, k, v, causal)
            return name.lower()
        except RuntimeError:
            continue
    return "none"


# ---------------------------------------------------------------- the sweep
@dataclass(frozen=True)
class SweepSpec:
    """A measured sweep: ``seq_lens`` tokens through ``shape`` on each of ``paths``, ``repeats`` timed runs after
    ``warmup``; ``seed`` draws the layer."""

    seq_lens: tuple[int, ...]
    shape: LayerShape
    paths: tuple[str, ...] = PATHS
    repeats: int = 3
    warmup: int = 1
    seed: int = 0


@dataclass(frozen=True)
class Measured:
    """One path at one n: per stage (:data:`STAGES` eager, :data:`FUSED_PARTS` fused) the median and the spread
    (min, max) of the wall time in seconds; the peak bytes and how they were read (``cuda_max_allocated`` or
    ``tensor_bytes``); the SDPA backend the fused path ran (``""`` for eager)."""

    n: int
    path: str
    median_s: dict[str, float]
    min_s: dict[str, float]
    max_s: dict[str, float]
    peak_bytes: int
    peak_kind: str
    backend: str = ""

    @property
    def total_s(self) -> float:
        return sum(self.median_s.values())


def sweep_bytes(spec: SweepSpec) -> int:
    """The most bytes the sweep holds at once: the largest n's input, weights and the larger path's peak."""
    n = max(spec.seq_lens)
    peak = max(peak_bytes(n, spec.shape, path) for path in spec.paths)
    return n * spec.shape.d_model * BYTES + weights_bytes(spec.shape) + peak


def check_sweep(spec: SweepSpec) -> SweepSpec:
    """``spec`` checked before anything is allocated: its shape, its lengths, paths and counts, and its memory
    against the budget (:func:`attn_core.runtime.guard.check_budget`, naming ``seq_len``)."""
    spec.shape.validate()
    if not spec.seq_lens or len(spec.seq_lens) > MAX_SWEEP_POINTS:
        raise ConfigError(
            f"a sweep takes 1 to {MAX_SWEEP_POINTS} lengths, got {len(spec.seq_lens)}",
            "seq_len",
            "between",
            name="seq_lens",
            value=len(spec.seq_lens),
            lo=1,
            hi=MAX_SWEEP_POINTS,
        )
    for n in spec.seq_lens:
        check_int("seq_len", n, 1)
    for path in spec.paths:
        if path not in PATHS:
            raise ConfigError(
                f"path '{path}' is not known; use one of: eager, fused",
                "path",
                "unknown_option",
                name="path",
                value=path,
                options=", ".join(PATHS),
            )
    check_int("repeats", spec.repeats, 1, MAX_REPEATS)
    check_int("warmup", spec.warmup, 0, MAX_REPEATS)
    guard.check_budget(
        sweep_bytes(spec),
        f"a sweep up to {max(spec.seq_lens)} tokens",
        "lower seq_len (the largest n) or n_heads",
        "seq_len",
    )
    return spec


def _timed_eager(layer: Layer, shape: LayerShape, dev: torch.device) -> tuple[dict[str, float], int]:
    """One eager run: seconds per stage, and the most tensor bytes alive at once (Q, K, V, scores, weights ...)."""
    times, alive, peak = {}, {}, 0
    sync(dev)
    start = time.perf_counter()
    for stage, made in eager_stages(layer, shape):
        sync(dev)
        now = time.perf_counter()
        times[stage], start = now - start, now
        alive[stage] = sum(t.nbytes for t in made)
        peak = max(peak, sum(alive.values()))
        if stage == "softmax":
            alive.pop("scores")  # freed once the weights exist
    return times, peak


def _timed_fused(layer: Layer, shape: LayerShape, dev: torch.device) -> tuple[dict[str, float], int]:
    """One fused run: seconds of the projections, the fused attention and the output projection; tensor bytes."""
    sync(dev)
    t0 = time.perf_counter()
    q, k, v = _project(layer, shape)
    sync(dev)
    t1 = time.perf_counter()
    o = fused_attention(q, k, v, shape.causal)
    sync(dev)
    t2 = time.perf_counter()
    y = _out_project(o, layer)
    sync(dev)
    t3 = time.perf_counter()
    lse = shape.n_heads * q.shape[1] * 4  # the row log-sum-exp the flash kernel keeps (inside torch: not a tensor here)
    peak = q.nbytes + k.nbytes + v.nbytes + o.nbytes + lse + y.nbytes
    return {"qkv_projection": t1 - t0, "attention": t2 - t1, "output_projection": t3 - t2}, peak


def measure_point(layer: Layer, spec: SweepSpec, path: str, dev: torch.device) -> Measured:
    """Time one path on ``layer`` (``warmup`` untimed runs, then ``repeats`` timed ones)."""
    run = _timed_eager if path == "eager" else _timed_fused
    cuda = dev.type == "cuda"
    with torch.inference_mode():
        for _ in range(spec.warmup):
            run(layer, spec.shape, dev)
        if cuda:
            torch.cuda.reset_peak_memory_stats(dev)
            base = torch.cuda.memory_allocated(dev)
        runs = [run(layer, spec.shape, dev) for _ in range(spec.repeats)]
    peak = torch.cuda.max_memory_allocated(dev) - base if cuda else max(r[1] for r in runs)
    stages = list(runs[0][0])
    median = {s: statistics.median(r[0][s] for r in runs) for s in stages}
    lo, hi = ({s: f(r[0][s] for r in runs) for s in stages} for f in (min, max))
    backend = ""
    if path == "fused":
        q, k, v = _project(layer, spec.shape)
        backend = sdpa_backend(q, k, v, spec.shape.causal)
    return Measured(
        layer.x.shape[0], path, median, lo, hi, int(peak), "cuda_max_allocated" if cuda else "tensor_bytes", backend
    )


def measure_sweep(spec: SweepSpec, device: str = "cpu") -> Iterator[Measured]:
    """Measure every path at every n of ``spec`` (smallest first), one :class:`Measured` at a time.

    The spec is checked against the memory budget before anything is allocated (:func:`check_sweep`), so a
    sweep over the budget raises :class:`ConfigError` on the first ``next`` with nothing allocated.
    """
    check_sweep(spec)
    dev = torch.device(device)
    for n in sorted(spec.seq_lens):
        layer = make_layer(n, spec.shape, str(dev), spec.seed)
        for path in spec.paths:
            yield measure_point(layer, spec, path, dev)
        del layer


def time_prefill_decode(seq_len: int, shape: LayerShape, device: str = "cpu", repeats: int = 3) -> tuple[float, float]:
    """Seconds (fastest of ``repeats``) of a causal prefill of ``seq_len`` tokens through the layer (fused attention)
    and of one decode step: one new token's projections and its query against ``seq_len`` cached keys and values."""
    check_int("repeats", repeats, 1, MAX_REPEATS)
    dev = torch.device(device)
    layer = make_layer(seq_len, shape, str(dev))
    causal = LayerShape(shape.d_model, shape.n_heads, shape.n_kv_heads, shape.head_dim, True)
    _, k, v = _project(layer, shape)  # the cache a prefill leaves: [h_kv, n, d_h]
    token = Layer(layer.x[-1:], layer.wq, layer.wk, layer.wv, layer.wo)

    def decode() -> torch.Tensor:
        q, _, _ = _project(token, shape)  # [h, 1, d_h]; its own K and V would be appended to the cache
        return _out_project(fused_attention(q, k, v, False), token)

    out = []
    with torch.inference_mode():
        for fn in (lambda: fused_forward(layer, causal), decode):
            fn()
            best = math.inf
            for _ in range(repeats):
                sync(dev)
                t0 = time.perf_counter()
                fn()
                sync(dev)
                best = min(best, time.perf_counter() - t0)
            out.append(best)
    return out[0], out[1]
