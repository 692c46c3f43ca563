"""A model card from a configuration alone: the attention shape, parameter count and KV cache of a model whose
weights are never loaded (a Hugging Face ``config.json`` as a dict, or a GGUF file's header).

:func:`card_from_config` reads the fields of the families below; :func:`card_from_gguf` parses a GGUF
file's header (magic, key-value metadata, tensor infos) from a memory map, never reading a tensor, and
checks that the file is long enough for the tensors it announces; :func:`card_from_file` picks one of
the two. The parameter count is computed from the shapes: exact for every family here when the config
gives every size it needs (the presets' published totals: Llama-3-8B 8,030,261,248, DeepSeek-V3
671,026,419,200 without its multi-token-prediction module), an estimate when a size had to be assumed
(:attr:`ModelCard.n_params_exact`); a GGUF file's is the sum of its tensors' elements, exact as stored.

Families (``model_type``): llama, mistral, qwen2, qwen3, gemma, gemma2, gemma3_text (and gemma3, read
from its ``text_config``), gpt2, bert, falcon, deepseek_v2, deepseek_v3.
"""

from __future__ import annotations

import json
import mmap
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from attn_core.kv.memory import layer_windows, mla_cache_bytes, windowed_cache_bytes
from attn_core.runtime.config import ConfigError

LLAMA_LIKE = ("llama", "mistral", "qwen2", "qwen3", "gemma", "gemma2", "gemma3_text")
FAMILIES = (*LLAMA_LIKE, "gemma3", "gpt2", "bert", "falcon", "deepseek_v2", "deepseek_v3")
GLOBAL_EVERY = {"gemma2": 2, "gemma3_text": 6}  # every k-th layer global (their configs' layer_types, by default)


@dataclass(frozen=True)
class ModelCard:
    """What a configuration says about a model's attention and size.

    ``arch`` the config's ``model_type`` (a GGUF file's ``general.architecture``); ``n_heads`` query
    heads, ``n_kv_heads`` KV heads, ``head_dim`` / ``v_head_dim`` the key / value width per head (an
    MLA model: the decompressed key, ``qk_nope_head_dim + qk_rope_head_dim``); ``layer_windows`` ``[L]``
    each layer's sliding window (None: global); ``kv_lora_rank``, ``q_lora_rank``, ``qk_rope_head_dim``
    and ``qk_nope_head_dim``: multi-head latent attention (DeepSeek-V2/V3), else None.
    ``n_params``: see :attr:`n_params_exact`; ``source``: ``config`` or ``gguf``.
    """

    arch: str
    n_layers: int
    hidden_size: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    v_head_dim: int
    vocab_size: int
    max_positions: int | None
    n_params: int
    n_params_exact: bool
    layer_windows: tuple[int | None, ...]
    kv_lora_rank: int | None = None
    q_lora_rank: int | None = None
    qk_rope_head_dim: int | None = None
    qk_nope_head_dim: int | None = None
    source: str = "config"

    @property
    def is_mla(self) -> bool:
        return self.kv_lora_rank is not None

    @property
    def attention(self) -> str:
        """``MLA``, else ``MHA``, ``GQA`` or ``MQA`` from the head counts."""
        if self.is_mla:
            return "MLA"
        if self.n_kv_heads == self.n_heads:
            return "MHA"
        return "MQA" if self.n_kv_heads == 1 else "GQA"

    @property
    def sliding_window(self) -> int | None:
        """The sliding window of the local layers (None when no layer slides)."""
        return next((w for w in self.layer_windows if w is not None), None)

    @property
    def local_layers(self) -> tuple[int, ...]:
        """The layers with a sliding window."""
        return tuple(i for i, w in enumerate(self.layer_windows) if w is not None)

    def kv_bytes(self, seq_len: int, dtype: str = "fp16", batch: int = 1) -> int:
        """Exact K/V-cache bytes at ``seq_len`` tokens: :func:`~attn_core.kv.memory.mla_cache_bytes` for MLA (the
        latent and the RoPE key), else :func:`~attn_core.kv.memory.windowed_cache_bytes` (a sliding layer at
        ``min(seq_len, window)`` positions; equal to ``kv_cache_bytes`` when no layer slides)."""
        if self.is_mla:
            return mla_cache_bytes(self.n_layers, self.kv_lora_rank, self.qk_rope_head_dim or 0, seq_len, batch, dtype)
        return windowed_cache_bytes(
            self.layer_windows, self.n_kv_heads, self.head_dim, seq_len, batch, dtype, v_head_dim=self.v_head_dim
        )


# ---------------------------------------------------------------- errors
#: Why a file is not a model configuration (``reason`` of a ``card_not_config`` error; a page words each one itself)
NOT_CONFIG_REASONS = (
    "not_object",  # not a JSON object
    "not_json",  # not JSON at all
    "no_model_type",
    "missing",  # a size the family needs (``name``)
    "not_whole",  # a size that is not a whole number (``name``, ``value``)
    "not_gguf",  # a .gguf file that does not start with GGUF
    "gguf_version",  # a GGUF version other than 2 and 3 (``version``)
    "gguf_value",  # an unknown value type in a GGUF header (``kind``)
    "unreadable",
)


def _not_config(what: str, why: str, reason: str, **detail: object) -> ConfigError:
    """``card_not_config``: ``why`` in English, ``reason`` one of :data:`NOT_CONFIG_REASONS` with its ``detail``
    (``name``, ``value``, ``version`` or ``kind``), so a page can say it in its own language."""
    return ConfigError(
        f"{what} is not a model configuration: {why}",
        "config",
        "card_not_config",
        what=what,
        why=why,
        reason=reason,
        **{k: str(v) for k, v in detail.items()},
    )


def _unknown_arch(what: str, arch: str) -> ConfigError:
    return ConfigError(
        f"{what}: the architecture {arch!r} is not known; known: {', '.join(FAMILIES)}",
        "config",
        "card_unknown_arch",
        what=what,
        arch=arch,
        known=", ".join(FAMILIES),
    )


class _Fields:
    """A config's values, with the names each family uses and the defaults it assumed (then the count is an estimate)."""

    def __init__(self, config: dict[str, Any], what: str):
        self.config, self.what, self.assumed = config, what, []

    def get(self, *names: str, default: Any = None, needed: bool = False) -> Any:
        """The first of ``names`` the config gives, else ``default`` (``needed``: else ``card_not_config``)."""
        for name in names:
            if self.config.get(name) is not None:
                return self.config[name]
        if needed:
            raise _not_config(self.what, f"it has no {names[0]}", "missing", name=names[0])
        return default

    def int(self, *names: str, default: int | None = None, needed: bool = False, assume: bool = True) -> int | None:
        """A whole number; a ``default`` used is recorded as assumed unless it is the family's definition
        (``assume=False``: no KV-head count means one per head)."""
        value = self.get(*names, default=None, needed=needed)
        if value is None and default is not None and assume:
            self.assumed.append(names[0])
        value = default if value is None else value
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value != int(value) or value < 0:
            raise _not_config(
                self.what,
                f"{names[0]} is {value!r}, not a whole number",
                "not_whole",
                name=names[0],
                value=repr(value)[:40],
            )
        return int(value)


# ---------------------------------------------------------------- parameter counts from the shapes
def _llama_like_params(f: _Fields, arch: str, shape: dict[str, int]) -> int:
    """Embeddings (tied or not), per layer Q, K, V, O (biases: Qwen2), a gated MLP, two or four norms and a
    per-head q/k norm (Qwen3, Gemma 3), the final norm."""
    h, n_layers, vocab = shape["hidden_size"], shape["n_layers"], shape["vocab_size"]
    q, kv = shape["n_heads"] * shape["head_dim"], shape["n_kv_heads"] * shape["head_dim"]
    inner = f.int("intermediate_size", default=4 * h)
    attn = h * q + 2 * h * kv + q * h
    if arch == "qwen2" or f.get("attention_bias", default=False) is True:
        attn += q + 2 * kv + (h if f.get("attention_bias", default=False) is True else 0)
    if arch in ("qwen3", "gemma3_text"):
        attn += 2 * shape["head_dim"]
    norms = (4 if arch in ("gemma2", "gemma3_text") else 2) * h
    tied = f.get("tie_word_embeddings", default=arch.startswith("gemma"))
    return n_layers * (attn + 3 * h * inner + norms) + vocab * h * (1 if tied else 2) + h


def _gpt2_params(f: _Fields, shape: dict[str, int]) -> int:
    h, vocab = shape["hidden_size"], shape["vocab_size"]
    inner = f.int("n_inner", default=None) or 4 * h
    block = 2 * h + (h * 3 * h + 3 * h) + (h * h + h) + 2 * h + (h * inner + inner) + (inner * h + h)
    return vocab * h + (shape["max_positions"] or 0) * h + shape["n_layers"] * block + 2 * h


def _bert_params(f: _Fields, shape: dict[str, int]) -> int:
    h, vocab = shape["hidden_size"], shape["vocab_size"]
    inner = f.int("intermediate_size", default=4 * h)
    types = f.int("type_vocab_size", default=2)
    block = 4 * (h * h + h) + 2 * h + (h * inner + inner) + (inner * h + h) + 2 * h
    embeddings = (vocab + (shape["max_positions"] or 0) + types) * h + 2 * h
    return embeddings + shape["n_layers"] * block + h * h + h  # the pooler


def _falcon_params(f: _Fields, shape: dict[str, int]) -> int:
    """Falcon's layout: one fused QKV, a 4h MLP, LayerNorms with biases (one per block when attention and MLP run
    in parallel, as Falcon-7B), linear biases only with ``bias``, tied embeddings."""
    h, vocab, d = shape["hidden_size"], shape["vocab_size"], shape["head_dim"]
    qkv = (shape["n_heads"] + 2 * shape["n_kv_heads"]) * d
    norms = 2 * h * (1 if f.get("parallel_attn", default=True) is True else 2)
    biases = qkv + h + 4 * h + h if f.get("bias", default=False) is True else 0
    block = norms + h * qkv + h * h + 2 * h * 4 * h + biases
    return vocab * h + shape["n_layers"] * block + 2 * h


def _deepseek_params(f: _Fields, arch: str, shape: dict[str, int]) -> int:
    """MLA attention (a low-rank query or a full one, the latent K/V), dense MLP layers then MoE ones
    (routed and shared experts, the router; V3's router bias, a stored tensor of the checkpoint that
    transformers keeps as a buffer), untied embeddings; the multi-token-prediction module is left out."""
    h, n_heads = shape["hidden_size"], shape["n_heads"]
    nope, rope = shape["qk_nope_head_dim"], shape["qk_rope_head_dim"]
    q_rank, kv_rank, v = shape["q_lora_rank"], shape["kv_lora_rank"], shape["v_head_dim"]
    q = h * q_rank + q_rank + q_rank * n_heads * (nope + rope) if q_rank else h * n_heads * (nope + rope)
    attn = q + h * (kv_rank + rope) + kv_rank + kv_rank * n_heads * (nope + v) + n_heads * v * h + 2 * h
    dense = 3 * h * f.int("intermediate_size", needed=True)
    routed, shared = f.int("n_routed_experts", needed=True), f.int("n_shared_experts", default=0)
    expert = 3 * h * f.int("moe_intermediate_size", needed=True)
    router = routed * h + (routed if arch == "deepseek_v3" else 0)
    moe = (routed + shared) * expert + router
    n_dense = min(shape["n_layers"], f.int("first_k_dense_replace", default=0))
    layers = n_dense * (attn + dense) + (shape["n_layers"] - n_dense) * (attn + moe)
    tied = f.get("tie_word_embeddings", default=False) is True
    return layers + shape["vocab_size"] * h * (1 if tied else 2) + h


# ---------------------------------------------------------------- from a config dict
def _windows_of(f: _Fields, arch: str, n_layers: int) -> tuple[int | None, ...]:
    """Each layer's sliding window: ``layer_types`` when given, else each family's own rule."""
    window = f.get("sliding_window")
    types = f.config.get("layer_types")
    if isinstance(types, list) and len(types) == n_layers:
        return tuple(int(window) if t == "sliding_attention" and window else None for t in types)
    if arch == "qwen2":
        if not f.config.get("use_sliding_window") or not window:
            return (None,) * n_layers
        start = int(f.config.get("max_window_layers") or 0)
        return tuple(int(window) if i >= start else None for i in range(n_layers))
    if not window or arch not in ("mistral", *GLOBAL_EVERY):
        return (None,) * n_layers
    every = f.config.get("sliding_window_pattern") or f.config.get("_sliding_window_pattern") or GLOBAL_EVERY.get(arch)
    return layer_windows(n_layers, int(window), int(every) if every else None)


def _shape(f: _Fields, arch: str) -> dict[str, Any]:
    """The sizes every family shares, under each family's names."""
    n_heads = f.int("num_attention_heads", "n_head", needed=True)
    hidden = f.int("hidden_size", "n_embd", "d_model", needed=True)
    n_kv = f.int("num_key_value_heads", "num_kv_heads", default=n_heads, assume=False)
    if arch == "falcon" and f.config.get("multi_query") and not f.config.get("new_decoder_architecture"):
        n_kv = 1
    nope, rope = f.int("qk_nope_head_dim"), f.int("qk_rope_head_dim")
    if nope is not None and rope is not None:
        head_dim = nope + rope
    else:
        head_dim = f.int("head_dim", default=hidden // n_heads, assume=False)
    return {
        "n_layers": f.int("num_hidden_layers", "n_layer", "num_layers", needed=True),
        "hidden_size": hidden,
        "n_heads": n_heads,
        "n_kv_heads": n_kv,
        "head_dim": head_dim,
        "v_head_dim": f.int("v_head_dim", default=head_dim, assume=False),
        "vocab_size": f.int("vocab_size", needed=True),
        "max_positions": f.int("max_position_embeddings", "n_positions"),
        "kv_lora_rank": f.int("kv_lora_rank"),
        "q_lora_rank": f.int("q_lora_rank"),
        "qk_rope_head_dim": rope,
        "qk_nope_head_dim": nope,
    }


def card_from_config(config: dict[str, Any], what: str = "the config") -> ModelCard:
    """The :class:`ModelCard` of a Hugging Face ``config.json`` given as a dict (``what`` names it in errors).

    Raises :class:`ConfigError`: ``card_not_config`` for something that is not a model configuration
    (not a dict, no ``model_type``, a size missing or not a whole number), ``card_unknown_arch`` for a
    ``model_type`` outside :data:`FAMILIES`.
    """
    if not isinstance(config, dict) or not config:
        raise _not_config(what, "it is not a JSON object", "not_object")
    arch = config.get("model_type")
    if not isinstance(arch, str) or not arch:
        raise _not_config(what, "it has no model_type", "no_model_type")
    if arch not in FAMILIES:
        raise _unknown_arch(what, arch)
    if arch == "gemma3":  # the multimodal model: its language model's config
        return card_from_config({"model_type": "gemma3_text", **(config.get("text_config") or {})}, what)
    f = _Fields(config, what)
    shape = _shape(f, arch)
    if arch in LLAMA_LIKE:
        n_params = _llama_like_params(f, arch, shape)
    elif arch.startswith("deepseek"):
        n_params = _deepseek_params(f, arch, shape)
    else:
        n_params = {"gpt2": _gpt2_params, "bert": _bert_params, "falcon": _falcon_params}[arch](f, shape)
    return ModelCard(
        arch=arch,
        n_params=n_params,
        n_params_exact=not f.assumed,
        layer_windows=_windows_of(f, arch, shape["n_layers"]),
        source="config",
        **shape,
    )


def card_from_file(path: str | Path) -> ModelCard:
    """The card of a ``config.json`` (any JSON file) or a ``.gguf`` file (:func:`card_from_gguf`)."""
    path = Path(path)
    if path.suffix.lower() == ".gguf":
        return card_from_gguf(path)
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise _not_config(path.name, f"it cannot be read as JSON ({exc.__class__.__name__})", "not_json") from exc
    return card_from_config(config, path.name)


def card_from_text(text: str, what: str = "the text") -> ModelCard:
    """The card of a ``config.json`` pasted as text (``card_not_config`` with reason ``not_json`` when it is not JSON)."""
    try:
        config = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as exc:
        raise _not_config(what, f"it cannot be read as JSON ({exc.__class__.__name__})", "not_json") from exc
    return card_from_config(config, what)


def card_from_bytes(data: bytes | memoryview, what: str) -> ModelCard:
    """The card of a file's contents (an upload): a GGUF header when it starts with ``GGUF`` or ``what`` ends in
    ``.gguf`` (:func:`card_from_gguf`, read in place), else a ``config.json`` (UTF-8 JSON)."""
    view = memoryview(data)
    if what.lower().endswith(".gguf") or bytes(view[:4]) == GGUF_MAGIC:
        meta, n_params = _read_gguf(view, what)
        return _gguf_card(meta, n_params, what)
    try:
        text = bytes(view).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _not_config(what, "it cannot be read as JSON (UnicodeDecodeError)", "not_json") from exc
    return card_from_text(text, what)


# ---------------------------------------------------------------- from a GGUF header
GGUF_MAGIC = b"GGUF"
# GGUF value types: struct format of the fixed-size ones (8 string, 9 array are read apart)
_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
MAX_ARRAY_KEPT = 4096  # longer arrays (a tokenizer's vocabulary) are skipped, their length kept


class _Reader:
    """Reads a GGUF header from a memory map; past the end of the file raises ``card_truncated_header``."""

    def __init__(self, buf: mmap.mmap, what: str):
        self.buf, self.pos, self.what = buf, 0, what

    def take(self, fmt: str) -> Any:
        size = struct.calcsize(fmt)
        if self.pos + size > len(self.buf):
            raise _truncated(self.what, "header")
        (value,) = struct.unpack_from(fmt, self.buf, self.pos)
        self.pos += size
        return value

    def string(self) -> str:
        n = self.take("<Q")
        if self.pos + n > len(self.buf):
            raise _truncated(self.what, "header")
        raw = bytes(self.buf[self.pos : self.pos + n])
        self.pos += n
        return raw.decode("utf-8", errors="replace")

    def value(self, kind: int) -> Any:
        if kind in _SCALARS:
            return self.take(_SCALARS[kind])
        if kind == 8:
            return self.string()
        if kind == 9:
            return self.array()
        raise _not_gguf(self.what, f"unknown value type {kind} in its metadata", "gguf_value", kind=kind)

    def array(self) -> list[Any] | int:
        """The array's items, or only its length when longer than :data:`MAX_ARRAY_KEPT` (skipped)."""
        kind, n = self.take("<I"), self.take("<Q")
        if n <= MAX_ARRAY_KEPT:
            return [self.value(kind) for _ in range(n)]
        if kind in _SCALARS:
            self.pos += n * struct.calcsize(_SCALARS[kind])
            if self.pos > len(self.buf):
                raise _truncated(self.what, "header")
        elif kind == 8:  # strings: only their lengths are read
            for _ in range(n):
                length = self.take("<Q")  # advances past the length first
                self.pos += length
            if self.pos > len(self.buf):
                raise _truncated(self.what, "header")
        else:
            for _ in range(n):
                self.value(kind)
        return n


def _truncated(what: str, where: str) -> ConfigError:
    """``where``: ``header`` (the metadata or tensor infos) or ``data`` (the tensors it announces)."""
    if where == "header":
        return ConfigError(
            f"{what} is cut short: the file ends inside its header", "config", "card_truncated_header", what=what
        )
    return ConfigError(
        f"{what} is cut short: the file ends before the end of its tensors' data",
        "config",
        "card_truncated_data",
        what=what,
    )


def _not_gguf(what: str, why: str, reason: str = "not_gguf", **detail: object) -> ConfigError:
    return _not_config(what, why, reason, **detail)


def _tensor_bytes(kind: int, n_elements: int) -> int | None:
    """Bytes of a tensor of ``n_elements`` of GGML type ``kind`` (None when the type is unknown here)."""
    try:
        from gguf import GGML_QUANT_SIZES, GGMLQuantizationType

        block, size = GGML_QUANT_SIZES[GGMLQuantizationType(kind)]
    except (ImportError, ValueError, KeyError):
        return None
    return n_elements // block * size


def _read_gguf(buf: mmap.mmap, what: str) -> tuple[dict[str, Any], int]:
    """(metadata, parameter count) of a GGUF file, checking that its tensors' data fits in the file."""
    r = _Reader(buf, what)
    if len(buf) < 4 or bytes(buf[:4]) != GGUF_MAGIC:
        raise _not_gguf(what, "it does not start with GGUF")
    r.pos = len(GGUF_MAGIC)
    version = r.take("<I")
    if version not in (2, 3):
        raise _not_gguf(what, f"GGUF version {version} is not read here (2 and 3 are)", "gguf_version", version=version)
    n_tensors, n_kv = r.take("<Q"), r.take("<Q")
    meta = {}
    for _ in range(n_kv):
        key = r.string()
        meta[key] = r.value(r.take("<I"))
    n_params, end = 0, 0
    for _ in range(n_tensors):
        r.string()
        dims = [r.take("<Q") for _ in range(r.take("<I"))]
        kind, offset = r.take("<I"), r.take("<Q")
        n = 1
        for d in dims:
            n *= d
        n_params += n
        end = max(end, offset + (_tensor_bytes(kind, n) or 0))
    align = int(meta.get("general.alignment", 32))
    start = -(-r.pos // align) * align
    if start + end > len(buf):
        raise _truncated(what, "data")
    return meta, n_params


def card_from_gguf(path: str | Path) -> ModelCard:
    """The :class:`ModelCard` of a GGUF file, from its header alone (memory-mapped: no tensor is read).

    ``card_not_config`` for a file that is not GGUF (or lacks the sizes), ``card_truncated_header`` or
    ``card_truncated_data`` for one cut short (inside the header, or before the end of the tensors' data
    it announces).
    """
    path = Path(path)
    try:
        with open(path, "rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as buf:
            meta, n_params = _read_gguf(buf, path.name)
    except (OSError, ValueError) as exc:
        if isinstance(exc, ConfigError):
            raise
        raise _not_config(path.name, f"it cannot be read ({exc.__class__.__name__})", "unreadable") from exc
    return _gguf_card(meta, n_params, path.name)


def _gguf_card(meta: dict[str, Any], n_params: int, what: str) -> ModelCard:
    """The card of a GGUF header's metadata (``{arch}.block_count`` and the like, as llama.cpp writes them)."""
    arch = meta.get("general.architecture")
    if not isinstance(arch, str):
        raise _not_config(what, "its header has no general.architecture", "missing", name="general.architecture")

    def key(name: str, default: Any = None, needed: bool = False) -> Any:
        value = meta.get(f"{arch}.{name}", default)
        if isinstance(value, list):  # per-layer head counts: the largest
            value = max(value) if value else default
        if value is None and needed:
            raise _not_config(what, f"its header has no {arch}.{name}", "missing", name=f"{arch}.{name}")
        return value

    n_heads, hidden = int(key("attention.head_count", needed=True)), int(key("embedding_length", needed=True))
    n_layers = int(key("block_count", needed=True))
    tokens = meta.get("tokenizer.ggml.tokens")
    vocab = key("vocab_size") or (tokens if isinstance(tokens, int) else len(tokens or []))
    kv_rank = key("attention.kv_lora_rank")
    head_dim = int(key("attention.key_length_mla") or key("attention.key_length") or hidden // n_heads)
    v_dim = int(key("attention.value_length_mla") or key("attention.value_length") or head_dim)
    rope = key("rope.dimension_count") if kv_rank else None
    window = key("attention.sliding_window")
    every = key("attention.sliding_window_pattern") or {"gemma2": 2, "gemma3": 6}.get(arch)
    return ModelCard(
        arch=arch,
        n_layers=n_layers,
        hidden_size=hidden,
        n_heads=n_heads,
        n_kv_heads=int(key("attention.head_count_kv", n_heads)),
        head_dim=head_dim,
        v_head_dim=v_dim,
        vocab_size=int(vocab),
        max_positions=key("context_length"),
        n_params=n_params,
        n_params_exact=True,
        layer_windows=layer_windows(n_layers, int(window) if window else None, every if window else None),
        kv_lora_rank=kv_rank,
        q_lora_rank=key("attention.q_lora_rank") or None,
        qk_rope_head_dim=rope,
        qk_nope_head_dim=head_dim - rope if kv_rank and rope else None,
        source="gguf",
    )
