"""Multi-head latent attention (MLA, DeepSeek-V2/V3): two ways to run it, their caches and their costs.

Per token ``h`` ``[d_model]`` and head ``i`` (DeepSeek-V2, arXiv 2405.04434, §2.1.2-2.1.3; DeepSeek-V3's
``inference/model.py``):

    c_KV = RMSNorm(W_DKV h)                          [d_c]       the latent, the only K/V state cached
    k_R  = RoPE(W_KR h)                              [d_R]       one RoPE key shared by all heads, cached
    k_i  = [W_UK,i c_KV ; k_R]                       [d_h + d_R]
    v_i  = W_UV,i c_KV                               [d_v]
    c_Q  = RMSNorm(W_DQ h)   (or h without query compression)
    q_i  = [W_UQ,i c_Q ; RoPE(W_QR,i c_Q)]           [d_h + d_R]
    o    = W_O [softmax(q_i·k_i / √(d_h + d_R)) v_i]_i

``W_DKV`` and ``W_KR`` are one matrix ``wkv_a`` ``[d_c + d_R, d_model]``, ``W_UK`` and ``W_UV`` one matrix
``wkv_b`` ``[H (d_h + d_v), d_c]``, as in the reference code. Two paths compute the same attention:

- ``naive`` decompresses the latent and caches every head's key ``[B, S, H, d_h + d_R]`` and value
  ``[B, S, H, d_v]``;
- ``absorb`` multiplies ``W_UK`` into the query (``q_i W_UK,i``, ``[d_c]`` per head) and applies ``W_UV`` after
  the weighted sum of latents, so it attends directly to the cache of latents ``[B, S, d_c]`` and RoPE keys
  ``[B, S, d_R]``. That works because nothing position-dependent sits between ``q_i`` and ``W_UK,i c_KV``.

``rope_on_latent`` is the design MLA avoids: RoPE on the decompressed keys and the queries (no ``k_R``); run
naively it is a valid attention, but its "absorbed" form (``rope_on_latent_absorb``: the rotated query times
``W_UK`` against the latents) is not the same function, because ``R_m q · R_n W_UK c = q · R_(n-m) W_UK c``
depends on the key's position. :func:`agreement` measures both gaps.

Everything is float32 and seeded (weights N(0, 1/fan_in) as the app's other layers); shapes in the comments.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np
import torch
from torch import nn

from attn_core.attention.sources import TensorLayer, draw_weight, layer_generator
from attn_core.kv.memory import kv_cache_bytes, mla_cache_bytes
from attn_core.runtime.config import ConfigError, check_int, unknown_option
from attn_core.runtime.device import sync

PRESET_FILE = Path(__file__).resolve().parents[2] / "assets" / "mla_presets.json"
MODES = ("naive", "absorb", "rope_on_latent", "rope_on_latent_absorb")
PATHS = ("naive", "absorb", "latent")  # the decode paths costed: naive, absorbed, latent cache without absorption
MAX_DIM = 16384
MAX_HEADS = 256
RMS_EPS = 1e-6
BYTES_FP32 = 4


# ---------------------------------------------------------------- configuration and presets
@dataclass(frozen=True)
class MLAConfig:
    """One MLA layer's shape. ``q_lora_rank`` 0: no query compression (DeepSeek-V2-Lite)."""

    d_model: int
    n_heads: int
    kv_lora_rank: int
    qk_nope_head_dim: int
    qk_rope_head_dim: int
    v_head_dim: int
    q_lora_rank: int = 0
    rope_theta: float = 10000.0

    def validate(self) -> MLAConfig:
        """Return ``self`` or raise :class:`ConfigError` naming the field (RoPE rotates pairs: even widths)."""
        check_int("d_model", self.d_model, 1, MAX_DIM)
        check_int("n_heads", self.n_heads, 1, MAX_HEADS)
        for name in ("kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"):
            check_int(name, getattr(self, name), 1, MAX_DIM)
        check_int("q_lora_rank", self.q_lora_rank, 0, MAX_DIM)
        if self.qk_rope_head_dim % 2:
            raise ConfigError(
                f"qk_rope_head_dim ({self.qk_rope_head_dim}) must be even: RoPE rotates pairs",
                "qk_rope_head_dim",
                "mla_rope_even",
                name="qk_rope_head_dim",
                value=self.qk_rope_head_dim,
            )
        theta = self.rope_theta
        if isinstance(theta, bool) or not isinstance(theta, (int, float)) or not math.isfinite(theta) or theta <= 1:
            raise ConfigError(
                f"rope_theta must be a number above 1, got {theta!r}", "rope_theta", "mla_theta", value=repr(theta)
            )
        return self

    @property
    def qk_head_dim(self) -> int:
        """Per-head query and key width: d_h + d_R (192 in DeepSeek-V2/V3)."""
        return self.qk_nope_head_dim + self.qk_rope_head_dim

    @property
    def scale(self) -> float:
        """The softmax scale 1/√(d_h + d_R), the same in both paths."""
        return 1.0 / math.sqrt(self.qk_head_dim)

    @property
    def absorbed_elements(self) -> int:
        """Cached values per token and layer, absorbed: d_c + d_R."""
        return self.kv_lora_rank + self.qk_rope_head_dim

    @property
    def naive_elements(self) -> int:
        """Cached values per token and layer, naive: H (d_h + d_R + d_v)."""
        return self.n_heads * (self.qk_head_dim + self.v_head_dim)

    def elements(self, mode: str) -> int:
        """Cached values per token and layer in ``mode``."""
        if mode == "absorb":
            return self.absorbed_elements
        if mode == "rope_on_latent_absorb":
            return self.kv_lora_rank
        if mode == "rope_on_latent":
            return self.n_heads * (self.qk_nope_head_dim + self.v_head_dim)
        return self.naive_elements

    def n_params(self) -> int:
        """Parameters of the layer (the RMSNorm weights included)."""
        h, d = self.n_heads, self.d_model
        q = d * h * self.qk_head_dim if not self.q_lora_rank else self.q_lora_rank * (d + 1 + h * self.qk_head_dim)
        kv = d * self.absorbed_elements + self.kv_lora_rank * (1 + h * (self.qk_nope_head_dim + self.v_head_dim))
        return q + kv + h * self.v_head_dim * d


@dataclass(frozen=True)
class MLAPreset:
    """A named MLA shape: its layer ``config`` and ``n_layers`` (for whole-model cache sizes)."""

    id: str
    name: str
    n_layers: int
    config: MLAConfig
    source: str

    def cache_bytes(self, seq_len: int, mode: str = "absorb", batch: int = 1, dtype: str = "bf16") -> int:
        """Whole-model cache bytes (:func:`cache_bytes` times the layers)."""
        return cache_bytes(self.config, seq_len, mode, batch, dtype, n_layers=self.n_layers)


@lru_cache(maxsize=2)
def _load(path: str) -> tuple[MLAPreset, ...]:
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    known = set(MLAConfig.__dataclass_fields__)
    out = []
    for raw in data["presets"]:
        cfg = MLAConfig(**{k: v for k, v in raw.items() if k in known}).validate()
        out.append(MLAPreset(raw["id"], raw["name"], check_int("n_layers", raw["n_layers"], 1), cfg, raw["source"]))
    return tuple(out)


def load_mla_presets(path: str | Path | None = None) -> dict[str, MLAPreset]:
    """The MLA presets of ``assets/mla_presets.json``, by id, in file order."""
    return {p.id: p for p in _load(str(path or PRESET_FILE))}


def cache_bytes(
    cfg: MLAConfig, seq_len: int, mode: str, batch: int = 1, dtype: str = "fp32", *, n_layers: int = 1
) -> int:
    """Exact cache bytes of ``mode`` for ``seq_len`` tokens, from :mod:`attn_core.kv.memory`'s formulas.

    ``absorb``: :func:`~attn_core.kv.memory.mla_cache_bytes` (d_c + d_R per token); ``naive``:
    :func:`~attn_core.kv.memory.kv_cache_bytes` with H heads of keys d_h + d_R and values d_v.
    """
    if mode == "absorb":
        return mla_cache_bytes(n_layers, cfg.kv_lora_rank, cfg.qk_rope_head_dim, seq_len, batch, dtype)
    if mode == "rope_on_latent_absorb":
        return mla_cache_bytes(n_layers, cfg.kv_lora_rank, 0, seq_len, batch, dtype)
    k_dim = cfg.qk_nope_head_dim if mode == "rope_on_latent" else cfg.qk_head_dim
    return kv_cache_bytes(n_layers, cfg.n_heads, k_dim, seq_len, batch, dtype, v_head_dim=cfg.v_head_dim)


# ---------------------------------------------------------------- RoPE
def rope_angles(dim: int, positions: torch.Tensor, theta: float) -> torch.Tensor:
    """Angles ``[T, dim/2]``: position × θ^(-2i/dim) for each rotated pair i."""
    inv = theta ** (-torch.arange(0, dim, 2, dtype=torch.float64, device=positions.device) / dim)
    return (positions.to(torch.float64)[:, None] * inv[None, :]).to(torch.float32)


def apply_rope(x: torch.Tensor, positions: torch.Tensor, theta: float) -> torch.Tensor:
    """Rotate the adjacent pairs (x_2i, x_2i+1) of the last dim of ``x`` ``[B, T, ..., D]`` by position × θ^(-2i/D).

    The interleaved (complex) form of DeepSeek's reference code. ``positions`` ``[T]``.
    """
    ang = rope_angles(x.shape[-1], positions, theta)  # (T, D/2)
    shape = (1, ang.shape[0]) + (1,) * (x.dim() - 3) + (ang.shape[1],)
    cos, sin = ang.cos().view(shape), ang.sin().view(shape)
    pairs = x.float().unflatten(-1, (-1, 2))  # (B, T, ..., D/2, 2)
    a, b = pairs[..., 0], pairs[..., 1]
    return torch.stack((a * cos - b * sin, a * sin + b * cos), dim=-1).flatten(-2)


def rms_norm(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """RMSNorm over the last dim (ε = 1e-6), times ``weight``."""
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + RMS_EPS) * weight


# ---------------------------------------------------------------- the cache
@dataclass
class MLACache:
    """One layer's cache in ``mode``, grown by concatenation (so its bytes are exactly what it holds).

    ``naive``: ``k`` ``[B, S, H, d_h + d_R]`` and ``v`` ``[B, S, H, d_v]``; ``absorb``: ``kv`` (the normalised
    latents) ``[B, S, d_c]`` and ``pe`` (the RoPE keys after rotation) ``[B, S, d_R]``.
    """

    mode: str
    tensors: dict[str, torch.Tensor] = field(default_factory=dict)

    @property
    def length(self) -> int:
        """Tokens cached (S)."""
        return next(iter(self.tensors.values())).shape[1] if self.tensors else 0

    @property
    def elements_per_token(self) -> int:
        """Values cached per token and sequence, counted from the tensors' shapes."""
        return sum(math.prod(t.shape[2:]) for t in self.tensors.values())

    @property
    def nbytes(self) -> int:
        """Bytes the cache tensors hold (numel × element size)."""
        return sum(t.numel() * t.element_size() for t in self.tensors.values())

    def append(self, **new: torch.Tensor) -> dict[str, torch.Tensor]:
        """Add the new positions (dim 1) and return the whole cache."""
        for name, t in new.items():
            old = self.tensors.get(name)
            self.tensors[name] = t if old is None else torch.cat([old, t], dim=1)
        return self.tensors


@dataclass(frozen=True)
class MLAOutput:
    """``output`` ``[B, T, d_model]``, ``weights`` ``[B, H, T, S]`` (S = cached + T), the updated ``cache``."""

    output: torch.Tensor
    weights: torch.Tensor
    cache: MLACache


def check_rotatable(c: MLAConfig) -> None:
    """rope_on_latent rotates the d_h dims: they must pair up (:class:`ConfigError` otherwise)."""
    if c.qk_nope_head_dim % 2:
        raise ConfigError(
            f"qk_nope_head_dim ({c.qk_nope_head_dim}) must be even to rotate it",
            "qk_nope_head_dim",
            "mla_rope_even",
            name="qk_nope_head_dim",
            value=c.qk_nope_head_dim,
        )


def _check_mode(mode: str) -> None:
    if mode not in MODES:
        raise unknown_option("mode", mode, MODES)


# ---------------------------------------------------------------- the layer
class MultiHeadLatentAttention(nn.Module):
    """One MLA layer with seeded weights; :meth:`forward` runs any of :data:`MODES`."""

    def __init__(self, cfg: MLAConfig, seed: int = 0):
        super().__init__()
        self.cfg = cfg.validate()
        gen = layer_generator(seed)
        h, d = cfg.n_heads, cfg.d_model

        def w(n_out: int, n_in: int) -> nn.Parameter:
            return nn.Parameter(draw_weight(gen, n_out, n_in), requires_grad=False)

        if cfg.q_lora_rank:
            self.wq_a = w(cfg.q_lora_rank, d)  # W_DQ
            self.q_norm = nn.Parameter(torch.ones(cfg.q_lora_rank), requires_grad=False)
            self.wq_b = w(h * cfg.qk_head_dim, cfg.q_lora_rank)  # W_UQ and W_QR
        else:
            self.wq = w(h * cfg.qk_head_dim, d)
        self.wkv_a = w(cfg.kv_lora_rank + cfg.qk_rope_head_dim, d)  # W_DKV and W_KR
        self.kv_norm = nn.Parameter(torch.ones(cfg.kv_lora_rank), requires_grad=False)
        self.wkv_b = w(h * (cfg.qk_nope_head_dim + cfg.v_head_dim), cfg.kv_lora_rank)  # W_UK and W_UV
        self.wo = w(d, h * cfg.v_head_dim)

    # -- pieces shared by the paths
    def w_uk(self) -> torch.Tensor:
        """W_UK per head ``[H, d_h, d_c]``."""
        c = self.cfg
        return self.wkv_b.view(c.n_heads, c.qk_nope_head_dim + c.v_head_dim, c.kv_lora_rank)[:, : c.qk_nope_head_dim]

    def w_uv(self) -> torch.Tensor:
        """W_UV per head ``[H, d_v, d_c]``."""
        c = self.cfg
        return self.wkv_b.view(c.n_heads, c.qk_nope_head_dim + c.v_head_dim, c.kv_lora_rank)[:, c.qk_nope_head_dim :]

    def queries(self, x: torch.Tensor, pos: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(q_nope ``[B, T, H, d_h]``, q_pe after RoPE ``[B, T, H, d_R]``)."""
        c = self.cfg
        q = x @ self.wq.T if not c.q_lora_rank else rms_norm(x @ self.wq_a.T, self.q_norm) @ self.wq_b.T
        q = q.view(*x.shape[:2], c.n_heads, c.qk_head_dim)  # (B, T, H, d_h + d_R)
        q_nope, q_pe = q.split([c.qk_nope_head_dim, c.qk_rope_head_dim], dim=-1)
        return q_nope, apply_rope(q_pe, pos, c.rope_theta)

    def latents(self, x: torch.Tensor, pos: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(c_KV normalised ``[B, T, d_c]``, k_pe after RoPE ``[B, T, d_R]``), both from ``x``."""
        c = self.cfg
        kv, k_pe = (x @ self.wkv_a.T).split([c.kv_lora_rank, c.qk_rope_head_dim], dim=-1)
        return rms_norm(kv, self.kv_norm), apply_rope(k_pe.unsqueeze(2), pos, c.rope_theta).squeeze(2)

    def up(self, c_kv: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Decompress latents ``[B, S, d_c]``: (k_nope ``[B, S, H, d_h]``, v ``[B, S, H, d_v]``)."""
        c = self.cfg
        kv = (c_kv @ self.wkv_b.T).view(*c_kv.shape[:2], c.n_heads, c.qk_nope_head_dim + c.v_head_dim)
        return kv.split([c.qk_nope_head_dim, c.v_head_dim], dim=-1)

    # -- forward
    def forward(
        self, x: torch.Tensor, *, mode: str = "naive", cache: MLACache | None = None, causal: bool = True
    ) -> MLAOutput:
        """Attend ``x`` ``[B, T, d_model]`` (positions from the cache's length on) in ``mode``."""
        _check_mode(mode)
        cache = cache if cache is not None else MLACache(mode)
        if cache.mode != mode:
            raise ConfigError(
                f"a {cache.mode} cache cannot serve mode {mode}", "mode", "mla_cache_mode", cache=cache.mode, mode=mode
            )
        start, t = cache.length, x.shape[1]
        pos = torch.arange(start, start + t, device=x.device)
        run = {"naive": self._naive, "absorb": self._absorb}.get(mode, self._rope_on_latent)
        scores, finish = run(x, pos, cache, mode)  # scores (B, H, T, S)
        if causal:
            keys = torch.arange(cache.length, device=x.device)
            scores = scores.masked_fill(keys[None, :] > pos[:, None], float("-inf"))
        weights = torch.softmax(scores.float(), dim=-1)
        out = finish(weights)  # (B, T, H, d_v)
        return MLAOutput(out.flatten(2) @ self.wo.T, weights, cache)

    def _naive(self, x, pos, cache, mode):
        c = self.cfg
        q_nope, q_pe = self.queries(x, pos)
        c_kv, k_pe = self.latents(x, pos)
        k_nope, v = self.up(c_kv)  # (B, T, H, d_h), (B, T, H, d_v)
        k = torch.cat([k_nope, k_pe.unsqueeze(2).expand(-1, -1, c.n_heads, -1)], dim=-1)  # (B, T, H, d_h + d_R)
        held = cache.append(k=k, v=v)
        q = torch.cat([q_nope, q_pe], dim=-1)  # (B, T, H, d_h + d_R)
        scores = torch.einsum("bthd,bshd->bhts", q, held["k"]) * c.scale
        return scores, lambda w: torch.einsum("bhts,bshd->bthd", w, held["v"])

    def _absorb(self, x, pos, cache, mode):
        c = self.cfg
        q_nope, q_pe = self.queries(x, pos)
        c_kv, k_pe = self.latents(x, pos)
        held = cache.append(kv=c_kv, pe=k_pe)  # (B, S, d_c), (B, S, d_R)
        q_lat = torch.einsum("bthd,hdc->bthc", q_nope, self.w_uk())  # W_UK absorbed into the query: (B, T, H, d_c)
        scores = (
            torch.einsum("bthc,bsc->bhts", q_lat, held["kv"]) + torch.einsum("bthr,bsr->bhts", q_pe, held["pe"])
        ) * c.scale

        def finish(w: torch.Tensor) -> torch.Tensor:
            o_lat = torch.einsum("bhts,bsc->bthc", w, held["kv"])  # weighted latents (B, T, H, d_c)
            return torch.einsum("bthc,hdc->bthd", o_lat, self.w_uv())  # W_UV after the sum: (B, T, H, d_v)

        return scores, finish

    def _rope_on_latent(self, x, pos, cache, mode):
        """RoPE on the decompressed keys and the queries' d_h part; no k_R (the q_pe and k_pe dims unused)."""
        c = self.cfg
        check_rotatable(c)
        q_nope, _ = self.queries(x, pos)
        q_rot = apply_rope(q_nope, pos, c.rope_theta)  # (B, T, H, d_h)
        c_kv, _ = self.latents(x, pos)
        scale = 1.0 / math.sqrt(c.qk_nope_head_dim)
        if mode == "rope_on_latent_absorb":  # the rotated query times W_UK against the latents: not the same function
            held = cache.append(kv=c_kv)
            q_lat = torch.einsum("bthd,hdc->bthc", q_rot, self.w_uk())
            scores = torch.einsum("bthc,bsc->bhts", q_lat, held["kv"]) * scale
            return scores, lambda w: torch.einsum(
                "bthc,hdc->bthd", torch.einsum("bhts,bsc->bthc", w, held["kv"]), self.w_uv()
            )
        k_nope, v = self.up(c_kv)
        held = cache.append(k=apply_rope(k_nope, pos, c.rope_theta), v=v)
        scores = torch.einsum("bthd,bshd->bhts", q_rot, held["k"]) * scale
        return scores, lambda w: torch.einsum("bhts,bshd->bthd", w, held["v"])


# ---------------------------------------------------------------- inputs, agreement, the attention source
def hidden_states(cfg: MLAConfig, seq_len: int, seed: int, batch: int = 1) -> torch.Tensor:
    """Seeded unit-variance inputs ``[batch, seq_len, d_model]`` (a layer's hidden states, not real text)."""
    gen = torch.Generator().manual_seed(int(seed) + 1)
    return torch.randn(batch, seq_len, cfg.d_model, generator=gen)


@dataclass(frozen=True)
class Agreement:
    """Two paths on the same input: the weights ``[H, T, T]`` of each, and the largest differences."""

    weights_a: np.ndarray
    weights_b: np.ndarray
    max_weight_diff: float
    max_output_diff: float
    output_scale: float  # max |output| of the first path, for a relative figure


@torch.no_grad()
def agreement(layer: MultiHeadLatentAttention, x: torch.Tensor, a: str = "naive", b: str = "absorb") -> Agreement:
    """Run ``x`` ``[1, T, d_model]`` causally in modes ``a`` and ``b`` (prefill) and compare."""
    ra, rb = layer(x, mode=a), layer(x, mode=b)
    wa, wb = ra.weights[0].cpu().numpy(), rb.weights[0].cpu().numpy()
    return Agreement(
        wa, wb, float(np.abs(wa - wb).max()), float((ra.output - rb.output).abs().max()), float(ra.output.abs().max())
    )


@torch.no_grad()
def attention_source(
    layer: MultiHeadLatentAttention, x: torch.Tensor, tokens: tuple[str, ...], mode: str = "naive"
) -> TensorLayer:
    """The layer's causal attention on ``x`` ``[1, T, d_model]`` as a :class:`TensorLayer`.

    ``naive``: H query heads and H key heads of d_h + d_R, values d_v. ``absorb``: the same weights as an
    MQA over the latents: H queries ``[q W_UK ; q_R]`` of d_c + d_R against one key ``[c_KV ; k_R]``, values
    the latents (W_UV comes after). ``rope_on_latent``: H heads of d_h, rotated. Scale as the layer's.
    """
    _check_mode(mode)
    c, t = layer.cfg, x.shape[1]
    if mode.startswith("rope_on_latent"):
        check_rotatable(c)
    pos = torch.arange(t, device=x.device)
    q_nope, q_pe = layer.queries(x, pos)
    c_kv, k_pe = layer.latents(x, pos)
    if mode in ("absorb", "rope_on_latent_absorb"):
        q_lat = torch.einsum(
            "bthd,hdc->bthc", q_nope if mode == "absorb" else apply_rope(q_nope, pos, c.rope_theta), layer.w_uk()
        )
        if mode == "absorb":
            q, k = torch.cat([q_lat, q_pe], -1)[0].transpose(0, 1), torch.cat([c_kv, k_pe], -1)  # (H, T, D), (1, T, D)
        else:
            q, k = q_lat[0].transpose(0, 1), c_kv
        v, scale = c_kv, c.scale if mode == "absorb" else 1 / math.sqrt(c.qk_nope_head_dim)
    else:
        k_nope, v = layer.up(c_kv)
        if mode == "naive":
            k = torch.cat([k_nope, k_pe.unsqueeze(2).expand(-1, -1, c.n_heads, -1)], -1)[0].transpose(0, 1)
            q, scale = torch.cat([q_nope, q_pe], -1)[0].transpose(0, 1), c.scale
        else:
            k = apply_rope(k_nope, pos, c.rope_theta)[0].transpose(0, 1)
            q, scale = apply_rope(q_nope, pos, c.rope_theta)[0].transpose(0, 1), 1 / math.sqrt(c.qk_nope_head_dim)
        v = v[0].transpose(0, 1)  # (H, T, d_v)
    cpu = [a.detach().cpu().numpy() for a in (q, k, v)]  # a source holds CPU arrays
    return TensorLayer(*cpu, float(scale), tuple(tokens), mask_kind="causal")


# ---------------------------------------------------------------- live decode of both paths
@dataclass(frozen=True)
class DecodeSpec:
    """A decode of both paths: the layer's shape and seed, the prompt length, the steps, the batch."""

    cfg: MLAConfig
    seed: int
    prompt: int
    steps: int
    batch: int = 1


@dataclass(frozen=True)
class DecodeStep:
    """One decode step of both paths: tokens cached after it, each cache's measured and formula bytes (fp32),
    the wall time of each path (best of ``repeats``) and the largest |difference| of their outputs."""

    step: int
    seq_len: int
    naive_bytes: int
    absorb_bytes: int
    naive_formula: int
    absorb_formula: int
    naive_s: float
    absorb_s: float
    max_diff: float


def _timed_runs(
    layer: MultiHeadLatentAttention, x: torch.Tensor, mode: str, cache: MLACache, repeats: int
) -> tuple[object, list[float]]:
    """Run one step ``repeats`` times on copies of the cache's state; keep the first result and every run's time."""
    times, first = [], None
    for _ in range(repeats):
        trial = MLACache(mode, dict(cache.tensors))
        sync(x.device)
        t0 = time.perf_counter()
        res = layer(x, mode=mode, cache=trial)
        sync(x.device)
        times.append(time.perf_counter() - t0)
        first = first or res
    return first, times


def _timed(layer: MultiHeadLatentAttention, x: torch.Tensor, mode: str, cache: MLACache, repeats: int) -> tuple:
    """Run one step ``repeats`` times on copies of the cache's state; keep the first result, the best time."""
    first, times = _timed_runs(layer, x, mode, cache, repeats)
    return first, min(times)


@torch.no_grad()
def decode_steps(spec: DecodeSpec, *, device: str = "cpu", repeats: int = 1) -> Iterator[DecodeStep]:
    """Prefill ``spec.prompt`` inputs in both paths, then decode ``spec.steps`` more, one at a time.

    Yields step 0 (the prefill) and each decode step; both paths see the same inputs.
    """
    layer = MultiHeadLatentAttention(spec.cfg, spec.seed).to(device)
    x = hidden_states(spec.cfg, spec.prompt + spec.steps, spec.seed, spec.batch).to(device)
    caches = {m: MLACache(m) for m in ("naive", "absorb")}
    for i in range(spec.steps + 1):
        chunk = x[:, : spec.prompt] if i == 0 else x[:, spec.prompt + i - 1 : spec.prompt + i]
        res, secs = {}, {}
        for m in ("naive", "absorb"):
            res[m], secs[m] = _timed(layer, chunk, m, caches[m], repeats)
            caches[m] = res[m].cache
        s = caches["naive"].length
        yield DecodeStep(
            i,
            s,
            caches["naive"].nbytes,
            caches["absorb"].nbytes,
            cache_bytes(spec.cfg, s, "naive", spec.batch),
            cache_bytes(spec.cfg, s, "absorb", spec.batch),
            secs["naive"],
            secs["absorb"],
            float((res["naive"].output - res["absorb"].output).abs().max()),
        )


@torch.no_grad()
def fill_cache(layer: MultiHeadLatentAttention, x: torch.Tensor, mode: str) -> MLACache:
    """The ``naive`` or ``absorb`` cache after ``x`` ``[B, T, d_model]``, built without running the attention (a
    prefill of 8192 tokens would otherwise hold H × T × T weights only to time one later step)."""
    c = layer.cfg
    c_kv, k_pe = layer.latents(x, torch.arange(x.shape[1], device=x.device))
    if mode == "absorb":
        return MLACache(mode, {"kv": c_kv, "pe": k_pe})
    if mode != "naive":
        raise unknown_option("mode", mode, ("naive", "absorb"))
    k_nope, v = layer.up(c_kv)
    return MLACache(mode, {"k": torch.cat([k_nope, k_pe.unsqueeze(2).expand(-1, -1, c.n_heads, -1)], -1), "v": v})


@torch.no_grad()
def time_step_runs(
    cfg: MLAConfig, cached: int, mode: str, *, device: str = "cpu", repeats: int = 5, seed: int = 0
) -> list[float]:
    """Seconds of each of ``repeats`` runs of one decode step of ``mode`` against a cache of ``cached`` tokens."""
    layer = MultiHeadLatentAttention(cfg, seed).to(device)
    x = hidden_states(cfg, cached + 1, seed).to(device)
    cache = fill_cache(layer, x[:, :cached], mode)
    return _timed_runs(layer, x[:, cached:], mode, cache, repeats)[1]


def time_step(cfg: MLAConfig, cached: int, mode: str, *, device: str = "cpu", repeats: int = 5, seed: int = 0) -> float:
    """Seconds (best of ``repeats``) of one decode step of ``mode`` against a cache of ``cached`` tokens."""
    return min(time_step_runs(cfg, cached, mode, device=device, repeats=repeats, seed=seed))


# ---------------------------------------------------------------- costs per decode step
@dataclass(frozen=True)
class PathCost:
    """One decode path's attention cost per layer and step: ``per_token`` FLOPs and ``values`` read per cached
    token, ``fixed`` FLOPs per step (beyond the projections every path shares)."""

    path: str
    per_token: int
    fixed: int
    values: int

    def flops(self, cached: int) -> int:
        return self.per_token * cached + self.fixed

    def read(self, cached: int, bytes_per_value: int = 2) -> int:
        return self.values * cached * bytes_per_value


def path_cost(cfg: MLAConfig, path: str) -> PathCost:
    """Multiply-adds counted as 2 FLOPs, one new token, one sequence.

    - ``naive``: q·k over d_h + d_R and the weighted sum over d_v per head: 2H(d_h + d_R + d_v) per cached
      token, reading H(d_h + d_R + d_v) values; the new token's up-projection 2 d_c H (d_h + d_v) per step.
    - ``absorb``: q·[c_KV; k_R] over d_c + d_R and the weighted sum of latents over d_c per head:
      2H(d_c + d_R + d_c) per cached token, reading d_c + d_R values; the query's W_UK (2H d_h d_c) and the
      output's W_UV (2H d_c d_v) per step.
    - ``latent``: the latent cache without absorption: every cached latent decompressed again each step
      (2 d_c H (d_h + d_v)) and then the naive attention; reads d_c + d_R values per cached token.
    """
    h, dc, dr = cfg.n_heads, cfg.kv_lora_rank, cfg.qk_rope_head_dim
    dh, dv = cfg.qk_nope_head_dim, cfg.v_head_dim
    up = 2 * dc * h * (dh + dv)
    naive = 2 * h * (dh + dr + dv)
    if path == "naive":
        return PathCost(path, naive, up, h * (dh + dr + dv))
    if path == "absorb":
        return PathCost(path, 2 * h * (dc + dr + dc), 2 * h * dh * dc + 2 * h * dc * dv, dc + dr)
    if path == "latent":
        return PathCost(path, naive + up, 0, dc + dr)
    raise unknown_option("path", path, PATHS)
