"""Pretrained models: load one offline, capture the queries and keys it really uses, score its heads, generate.

:func:`load_model` loads a shipped model (``"smollm2-135m"``, ``"minilm-l6"``, ``"gemma3-270m"``: see
:mod:`attn_core.pretrained.store`) or a local Hugging Face folder or ``.gguf`` file of a supported family
(:data:`SUPPORTED`), in float32, never downloading. The loaded model runs with an attention function
of ours, registered in transformers' ``AttentionInterface``: it hands the queries ``[B, H, T, D]`` (after
RoPE), the keys and values ``[B, H_kv, S, D]`` (before ``repeat_kv``) and the scale of each layer to a
recorder passed with the call, then computes the layer with transformers' own SDPA attention, so
the model's outputs are those of ``attn_implementation="sdpa"`` and the full ``[H, T, T]`` weights
are never built by the model, even at 8192 tokens. A call without a recorder is an ordinary forward
pass; the recorder travels with the call, so threads sharing one model never see each other's tensors.

Sliding-window layers (Mistral: every layer; Gemma 3: five local layers to one global) are read from
the config (:attr:`LoadedModel.layer_windows`): the model's own mask applies them, and every weight
recomputed here applies them too (:func:`layer_weights`, :meth:`LoadedModel.limits`).

- :func:`model_attention`: the captured q, k, v of some layers as CPU float32 numpy, and, when they
  fit, the weights recomputed by :func:`attn_core.attention.gqa.scaled_dot_product_attention`;
  :meth:`ModelAttention.source` turns a layer into a :class:`~attn_core.attention.sources.TensorLayer` for the
  pooled, zoom, step-by-step and entropy views.
- :func:`head_scores`: previous-token, first-token, duplicate-token and induction scores and the
  normalised entropy of every head, on random tokens repeated twice.
- :func:`generate`: decoding step by step with the measured K/V cache and the newest token's attention.

Everything runs under :func:`torch.inference_mode`; the model is only read.
"""

from __future__ import annotations

import importlib.util
import json
import os
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

from attn_core.attention.gqa import scaled_dot_product_attention
from attn_core.attention.masks import limit_keys
from attn_core.attention.sources import KeyLimits, SeededLayer, TensorLayer
from attn_core.kv.memory import ModelPreset, global_every_of, kv_cache_bytes, windowed_cache_bytes
from attn_core.pretrained import store as model_store
from attn_core.runtime.config import SATURATION_THRESHOLD, ConfigError, check_int
from attn_core.runtime.device import pick_device, sync
from attn_core.runtime.guard import check_budget, max_bytes
from attn_core.runtime.units import format_bytes

DECODERS = ("llama", "mistral", "qwen2", "qwen3", "gemma3_text", "gpt2")
# rotary positions on q and k; GPT-2 and BERT add positions to the input
ROPE = ("llama", "mistral", "qwen2", "qwen3", "gemma3_text")
ENCODERS = ("bert",)
SUPPORTED = DECODERS + ENCODERS
# a GGUF header's general.architecture -> transformers' model_type, where they differ
GGUF_ARCHS = {"gemma3": "gemma3_text"}
CAPTURE_IMPL = "attn_explorer_capture"  # the attention function's name in transformers' AttentionInterface
_RECORDER_KW = "attn_explorer_recorder"  # the keyword the recorder travels with, down to the attention function
STREAMING_ATTR = "attn_explorer_streaming"  # (sinks, recent) on an attention module of an evicted copy (surgery)
NO_LIMITS: KeyLimits = (None, 0, None)
MAX_WEIGHTS_BYTES = 128 * 2**20  # model_attention builds the full weights by default only up to this size
MAX_NEW_TOKENS = 1024
INSTALL_LIBS = "pip install -r requirements.txt"
WEIGHT_FILES = ("*.safetensors", "pytorch_model*.bin")
QUANT_FILE = "quantization.json"  # written next to a converted GGUF's weights: what they were dequantized from


# ---------------------------------------------------------------- transformers, lazily
def _hf() -> Any:
    """transformers, imported on first use with the capture function registered; ConfigError when missing."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    try:
        import transformers
        from transformers.masking_utils import AttentionMaskInterface, sdpa_mask
    except ImportError as exc:
        raise ConfigError(
            f"Pretrained models need the packages transformers, gguf and accelerate: install them with {INSTALL_LIBS}",
            "model",
            "model_transformers_missing",
            command=INSTALL_LIBS,
        ) from exc
    transformers.AttentionInterface.register(CAPTURE_IMPL, _capturing_attention)  # idempotent: same function
    AttentionMaskInterface.register(CAPTURE_IMPL, sdpa_mask)  # the masks SDPA takes (None for plain causal)
    transformers.utils.logging.disable_progress_bar()
    return transformers


def _capturing_attention(module, query, key, value, attention_mask, dropout=0.0, scaling=None, **kwargs):
    """transformers' attention-function interface: hand q, k, v to the call's recorder, then run SDPA."""
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    recorder = kwargs.pop(_RECORDER_KW, None)
    streaming = getattr(module, STREAMING_ATTR, None)
    if streaming is not None:
        attention_mask = _streaming_mask(attention_mask, query.shape[-2], key.shape[-2], streaming, query.device)
    if recorder is not None:
        recorder(query, key, value, query.shape[-1] ** -0.5 if scaling is None else float(scaling))
    return sdpa_attention_forward(module, query, key, value, attention_mask, dropout=dropout, scaling=scaling, **kwargs)


def _streaming_mask(
    mask: torch.Tensor | None, t_q: int, t_k: int, streaming: tuple[int, int], device: torch.device
) -> torch.Tensor:
    """The layer's mask (None: plain causal; bool, True = attend; or additive float) ``[B, 1, T_q, T_k]``
    narrowed to StreamingLLM's keys (:func:`~attn_core.attention.masks.limit_keys`): the queries are the
    last ``T_q`` of the ``T_k`` positions, every key cached from position 0 on. Unchanged when every key is a
    sink or a recent one (``T_k <= sinks + recent``)."""
    sinks, recent = streaming
    if t_k <= sinks + recent:
        return mask
    keep = _causal_mask(t_q, t_k, device)
    keep = limit_keys(keep, torch.arange(t_k - t_q, t_k, device=keep.device), None, sinks, recent)[None, None]
    if mask is None:
        return keep
    if mask.dtype == torch.bool:
        return mask & keep
    return mask.masked_fill(~keep, torch.finfo(mask.dtype).min)


class _Stop(Exception):  # control flow, not an error: the recorder has every layer it needs
    pass


# ---------------------------------------------------------------- the loaded model
@dataclass(frozen=True, eq=False)
class LoadedModel:
    """A pretrained model ready to read: its shape, its tokenizer, and a preset for the KV-cache calculator.

    ``name`` is what :func:`load_model` was given (a shipped key or a path), ``path`` the folder the
    weights were read from, ``arch`` the transformers ``model_type``; ``causal`` is True for a decoder.
    ``max_positions`` is the longest input (the position table, or a sliding window if shorter).
    ``quantization`` names the GGUF type the weights were dequantized from (``"Q4_1"``), or None.
    ``layer_windows`` ``[L]``: each layer's sliding window (query ``p`` sees keys ``p - W < j <= p``),
    None for a layer that sees every earlier token. ``streaming`` (sinks, recent): a copy whose
    cache is evicted StreamingLLM-style (:func:`attn_core.pretrained.surgery.evict_cache`), else None.
    ``edits``: the surgery that made this copy, as ``(function, keyword arguments)`` pairs.
    Pickles as ``load_model(name, device)`` with its edits replayed: cheap to hash, and a copy is the
    same model loaded again.
    """

    name: str
    title: str
    path: str
    arch: str
    n_layers: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    hidden_size: int
    causal: bool
    max_positions: int
    n_params: int
    quantization: str | None
    device: str
    preset: ModelPreset
    module: Any = field(repr=False)
    tokenizer: Any = field(repr=False)
    layer_windows: tuple[int | None, ...] = ()
    streaming: tuple[int, int] | None = None
    edits: tuple[tuple[Any, tuple[tuple[str, Any], ...]], ...] = ()

    def __reduce__(self) -> tuple:
        if self.edits:
            return _edited, (self.name, self.device, self.edits)
        return load_model, (self.name, self.device)

    @property
    def local_layers(self) -> tuple[int, ...]:
        """The layers with a sliding window (Gemma 3 270M: every layer but 5, 11 and 17)."""
        return tuple(i for i, w in enumerate(self.layer_windows) if w is not None)

    def window(self, layer: int) -> int | None:
        """Layer ``layer``'s sliding window, or None when it sees every earlier token."""
        return self.layer_windows[check_int("layer", layer, 0, self.n_layers - 1)] if self.layer_windows else None

    def limits(self, layer: int) -> KeyLimits:
        """(window, sinks, recent) narrowing layer ``layer``'s causal mask
        (:func:`~attn_core.attention.masks.limit_keys`)."""
        sinks, recent = self.streaming if self.streaming is not None else (0, None)
        return self.window(layer), sinks, recent

    @property
    def rope(self) -> bool:
        """Whether the queries and keys are rotated by RoPE (else positions were added to the embeddings)."""
        return self.arch in ROPE

    @property
    def n_rep(self) -> int:
        """Query heads per KV head."""
        return self.n_heads // self.n_kv_heads

    def kv_head(self, head: int) -> int:
        """The KV head that query head ``head`` reads (``head // n_rep``, as ``repeat_kv``)."""
        return check_int("head", head, 0, self.n_heads - 1) // self.n_rep

    def encode(self, text: str) -> tuple[list[int], int]:
        """The token ids the model reads for ``text`` (special tokens included), cut to ``max_positions``,
        and how many there were before the cut."""
        ids, _, n_text = self.encode_spans(text)
        return ids, n_text

    def encode_spans(self, text: str) -> tuple[list[int], list[tuple[int, int]], int]:
        """:meth:`encode` with each token's character span in ``text`` (``(0, 0)`` for special tokens)."""
        if not isinstance(text, str) or not text.strip():
            raise ConfigError("the text has no tokens; type some words", "text", "no_tokens")
        n_text = len(self.tokenizer(text, add_special_tokens=True, verbose=False)["input_ids"])  # no length warning
        enc = self.tokenizer(
            text, add_special_tokens=True, truncation=True, max_length=self.max_positions, return_offsets_mapping=True
        )
        return list(enc["input_ids"]), [tuple(o) for o in enc["offset_mapping"]], n_text

    def tokenize(self, text: str) -> list[str]:
        """Readable labels of the tokens the model reads for ``text`` (see :func:`token_labels`)."""
        ids, spans, _ = self.encode_spans(text)
        return token_labels(self.tokenizer, ids, spans)


def _edited(name: str, device: str, edits: tuple) -> LoadedModel:
    """``load_model(name, device)`` with ``edits`` (function, keyword arguments) applied in turn."""
    model = load_model(name, device)
    for fn, kwargs in edits:
        model = fn(model, **dict(kwargs))
    return model


def _folder_of(name_or_path: str) -> tuple[str, Path, model_store.Shipped | None]:
    """(title, file or folder, shipped entry) of a shipped key or a local path; ConfigError when it is neither."""
    key = str(name_or_path).strip()
    if key in model_store.SHIPPED:
        shipped = model_store.SHIPPED[key]
        return shipped.title, model_store.shipped_file(shipped), shipped
    path = Path(key).expanduser()
    if key and (path.is_dir() or (path.is_file() and path.suffix.lower() == ".gguf")):
        return path.resolve().name, path.resolve(), None
    shipped = ", ".join(model_store.SHIPPED)
    raise ConfigError(
        f"{key!r} is not a model: give a folder with config.json and weights, a .gguf file, "
        f"or one of the shipped models: {shipped}",
        "model",
        "model_not_found",
        path=key,
        shipped=shipped,
    )


def _not_a_model(path: str, why: str, detail: str = "") -> ConfigError:
    """The error for a folder or file that is not a model: ``why`` is ``config`` (no config.json),
    ``weights`` (no weight files) or ``unreadable`` (with the reader's ``detail``)."""
    if why == "config":
        return ConfigError(
            f"{path} has no config.json: it is not a Hugging Face model folder", "model", "model_no_config", path=path
        )
    if why == "weights":
        return ConfigError(
            f"{path} has no weights (*.safetensors or pytorch_model.bin)", "model", "model_no_weights", path=path
        )
    return ConfigError(
        f"{path} could not be read as a model: {detail}", "model", "model_unreadable", path=path, detail=detail
    )


def _unsupported(path: str, arch: str) -> ConfigError:
    return ConfigError(
        f"{path}: the architecture {arch!r} is not supported; supported: {', '.join(SUPPORTED)}",
        "model",
        "model_unsupported",
        path=path,
        arch=arch,
        supported=", ".join(SUPPORTED),
    )


def _check_model_budget(name: str, n_params: int) -> None:
    """The float32 weights must fit the memory budget (:mod:`attn_core.runtime.guard`), checked before loading."""
    need, budget = 4 * int(n_params), max_bytes()
    if need > budget:
        raise ConfigError(
            f"The model {name} needs about {format_bytes(need)} for its float32 weights, more than the budget of "
            f"{format_bytes(budget)} (set by ATTN_MAX_BYTES); pick a smaller model or raise ATTN_MAX_BYTES",
            "model",
            "model_budget",
            name=name,
            need=format_bytes(need),
            budget=format_bytes(budget),
        )


def _gguf_facts(path: Path) -> tuple[str, int, str | None]:
    """(architecture, parameter count, quantization type) read from a GGUF file's header."""
    if importlib.util.find_spec("gguf") is None or importlib.util.find_spec("accelerate") is None:
        raise ConfigError(
            f"Pretrained models need the packages transformers, gguf and accelerate: install them with {INSTALL_LIBS}",
            "model",
            "model_transformers_missing",
            command=INSTALL_LIBS,
        )
    import gguf

    try:
        reader = gguf.GGUFReader(str(path))
        arch_field = reader.fields["general.architecture"]
        arch = bytes(arch_field.parts[arch_field.data[0]]).decode()
    except (ValueError, KeyError, OSError, IndexError) as exc:
        raise _not_a_model(str(path), "unreadable", f"not a GGUF file ({exc})") from exc
    n_params = sum(int(t.n_elements) for t in reader.tensors)
    quant = None
    if "general.file_type" in reader.fields:
        ft = reader.fields["general.file_type"]
        try:
            quant = gguf.LlamaFileType(int(ft.parts[ft.data[0]][0])).name.removeprefix("MOSTLY_")
        except ValueError:
            quant = None
    return arch, n_params, quant


def _converted_gguf(hf: Any, path: Path, label: str) -> Path:
    """The float32 safetensors folder of a GGUF file: converted once into :func:`model_store.cache_root`."""
    final = model_store.cache_folder(path, f"transformers {hf.__version__}")
    if final.is_dir():
        return final
    arch, n_params, quant = _gguf_facts(path)
    arch = GGUF_ARCHS.get(arch, arch)
    if arch not in SUPPORTED:
        raise _unsupported(label, arch)
    _check_model_budget(label, n_params)

    def build(tmp: Path) -> None:
        auto = hf.AutoModel if arch in ENCODERS else hf.AutoModelForCausalLM
        src = {"gguf_file": path.name, "local_files_only": True}
        model = auto.from_pretrained(str(path.parent), dtype=torch.float32, **src)
        model.hf_quantizer = None  # dequantized already: save plain float32 weights
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config
        model.save_pretrained(str(tmp))
        hf.AutoTokenizer.from_pretrained(str(path.parent), **src).save_pretrained(str(tmp))
        (tmp / QUANT_FILE).write_text(json.dumps({"gguf": str(path), "quantization": quant}), encoding="utf-8")

    return model_store.publish(final, build)


def layer_windows_of(cfg: Any) -> tuple[int | None, ...]:
    """Each layer's sliding window from a transformers config (None: the layer sees every earlier token).

    ``layer_types`` names each layer ``sliding_attention`` or ``full_attention`` (Gemma 2/3, Qwen2);
    a Mistral config without it slides on every layer (as transformers' MistralModel masks).
    """
    n = int(cfg.num_hidden_layers)
    window = getattr(cfg, "sliding_window", None)
    types = getattr(cfg, "layer_types", None)
    if not window:
        return (None,) * n
    if types:
        return tuple(int(window) if t == "sliding_attention" else None for t in types)
    return (int(window),) * n if cfg.model_type == "mistral" else (None,) * n


def _shape_of(cfg: Any) -> dict[str, Any]:
    """n_layers, n_heads, n_kv_heads, head_dim, hidden_size, max_positions, causal, layer_windows of a config."""
    n_heads = int(cfg.num_attention_heads)
    head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // n_heads
    max_pos = int(cfg.max_position_embeddings)
    return {
        "n_layers": int(cfg.num_hidden_layers),
        "n_heads": n_heads,
        "n_kv_heads": int(getattr(cfg, "num_key_value_heads", None) or n_heads),
        "head_dim": int(head_dim),
        "hidden_size": int(cfg.hidden_size),
        "max_positions": max_pos,
        "causal": cfg.model_type in DECODERS or bool(getattr(cfg, "is_decoder", False)),
        "layer_windows": layer_windows_of(cfg),
    }


def _checked_folder(hf: Any, folder: Path, label: str) -> tuple[Any, int]:
    """(config, parameter count) of a model folder, checked before any weight is read."""
    if not (folder / "config.json").is_file():
        raise _not_a_model(label, "config")
    if not any(any(folder.glob(pattern)) for pattern in WEIGHT_FILES):
        raise _not_a_model(label, "weights")
    try:
        cfg = hf.AutoConfig.from_pretrained(str(folder), local_files_only=True)
    except (ValueError, KeyError, OSError) as exc:
        raise _not_a_model(label, "unreadable", f"config.json: {exc}") from exc
    if cfg.model_type not in SUPPORTED:
        raise _unsupported(label, cfg.model_type)
    auto = hf.AutoModel if cfg.model_type in ENCODERS else hf.AutoModelForCausalLM
    with torch.device("meta"):
        n_params = sum(p.numel() for p in auto.from_config(cfg).parameters())  # shapes only, no memory
    _check_model_budget(label, n_params)
    return cfg, int(n_params)


def _preset(title: str, source: str, shape: dict[str, Any], n_params: int) -> ModelPreset:
    window, every = global_every_of(shape["layer_windows"])
    return ModelPreset(
        id=f"model:{title}",
        name=title,
        n_layers=shape["n_layers"],
        hidden_size=shape["hidden_size"],
        n_heads=shape["n_heads"],
        n_kv_heads=shape["n_kv_heads"],
        head_dim=shape["head_dim"],
        v_head_dim=shape["head_dim"],
        max_positions=shape["max_positions"],
        n_params=n_params,
        source=source,
        sliding_window=window,
        global_every=every,
    )


def _model_folder(hf: Any, name_or_path: str) -> tuple[str, Path, model_store.Shipped | None, Path, str]:
    """(title, file or folder given, shipped entry, the Hugging Face folder to read, label for messages).

    A GGUF file is converted once and a zip extracted once (:mod:`attn_core.pretrained.store`)."""
    title, path, shipped = _folder_of(name_or_path)
    label = shipped.key if shipped else str(path)
    if path.suffix.lower() == ".gguf":
        folder = _converted_gguf(hf, path, label)
    elif path.suffix.lower() == ".zip":
        folder = model_store.extracted_zip(path, stem=shipped.key if shipped else None)
    else:
        folder = path
    return title, path, shipped, folder, label


@lru_cache(maxsize=8)
def model_preset(name_or_path: str) -> tuple[ModelPreset, bool]:
    """(the KV-cache calculator's preset of a model, whether it decodes), from its config alone.

    No weights are loaded into a model (the shapes of its parameters are counted on the meta device);
    a shipped GGUF file is converted once first, as :func:`load_model` does. Read once per process.
    Raises the same :class:`ConfigError` as :func:`load_model` (a package missing, not a model ...).
    """
    hf = _hf()
    title, path, shipped, folder, label = _model_folder(hf, name_or_path)
    cfg, n_params = _checked_folder(hf, folder, label)
    shape = _shape_of(cfg)
    source = shipped.source if shipped else path.as_uri()
    return _preset(title, source, shape, n_params), bool(shape["causal"])


def load_model(name_or_path: str, device: str | torch.device | None = None) -> LoadedModel:
    """Load a shipped model (``"smollm2-135m"``, ``"minilm-l6"``) or a local folder / ``.gguf`` file, in float32.

    Never downloads. A GGUF file is dequantized and saved as safetensors once (later loads read that
    copy); MiniLM's zip is extracted once. Before any weight is read: a clear :class:`ConfigError` for
    transformers or a model package missing (with the install command), a path that is not a model,
    an unsupported architecture, or float32 weights over the memory budget. ``device`` defaults to
    :func:`~attn_core.runtime.device.pick_device`.
    """
    hf = _hf()
    title, path, shipped, folder, label = _model_folder(hf, name_or_path)
    cfg, n_params = _checked_folder(hf, folder, label)
    dev = torch.device(device) if device is not None else pick_device()
    auto = hf.AutoModel if cfg.model_type in ENCODERS else hf.AutoModelForCausalLM
    try:
        module = auto.from_pretrained(
            str(folder), dtype=torch.float32, attn_implementation=CAPTURE_IMPL, local_files_only=True
        )
        tokenizer = hf.AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
    except (OSError, ValueError, KeyError, RuntimeError) as exc:
        raise _not_a_model(label, "unreadable", str(exc)) from exc
    module.eval().requires_grad_(False).to(dev)
    quant_file = folder / QUANT_FILE
    quant = json.loads(quant_file.read_text(encoding="utf-8"))["quantization"] if quant_file.is_file() else None
    shape = _shape_of(cfg)
    source = shipped.source if shipped else path.as_uri()
    return LoadedModel(
        name=shipped.key if shipped else str(path),
        title=title,
        path=str(folder),
        arch=cfg.model_type,
        n_params=n_params,
        quantization=quant,
        device=str(dev),
        preset=_preset(title, source, shape, n_params),
        module=module,
        tokenizer=tokenizer,
        **shape,
    )


# ---------------------------------------------------------------- readable token labels
def _bytes_to_unicode() -> dict[int, str]:
    """GPT-2's byte-level alphabet: every byte as a printable character (as the ByteLevel pre-tokenizer)."""
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), 256))
    chars, extra = {}, 0
    for b in range(256):
        if b in keep:
            chars[b] = chr(b)
        else:
            chars[b] = chr(256 + extra)
            extra += 1
    return chars


def _shown(raw: bytes) -> str:
    """Bytes as text: valid UTF-8 decoded (control characters escaped), any other bytes as hex ``<E4 BD>``."""
    out, i = [], 0
    while i < len(raw):
        try:
            text = raw[i:].decode("utf-8")
            i = len(raw)
        except UnicodeDecodeError as exc:
            text = raw[i : i + exc.start].decode("utf-8")
            bad = raw[i + exc.start : i + exc.end]
            i += exc.end
            text += "<" + " ".join(f"{b:02X}" for b in bad) + ">"
        out.append(text)
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode() for c in "".join(out))


def _family(tokenizer: Any) -> str:
    """``bytelevel`` (GPT-2, Llama 3, SmolLM2, Qwen), ``wordpiece`` (BERT) or ``metaspace`` (SentencePiece)."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    decoder = repr(getattr(backend, "decoder", "")) if backend is not None else ""
    if "ByteLevel" in decoder:
        return "bytelevel"
    if "WordPiece" in decoder:
        return "wordpiece"
    return "metaspace"


def _spaced(pos: int, ids: Sequence[int], spans: Sequence[tuple[int, int]] | None, special: set[int]) -> bool:
    """Whether WordPiece token ``pos`` (not a ``##`` piece) follows a space: from the character spans when
    given (a gap after the previous token), else any word start that is not the text's first token."""
    before = [p for p in range(pos) if int(ids[p]) not in special or (spans is not None and spans[p][1] > 0)]
    if not before:
        return False
    if spans is None:
        return True
    return spans[pos][0] > spans[before[-1]][1]


def token_labels(tokenizer: Any, ids: Sequence[int], spans: Sequence[tuple[int, int]] | None = None) -> list[str]:
    """Readable labels of token ids: what each token stands for in the text, honestly.

    Byte-level tokens (``Ġworld``) are turned back into their bytes (`` world``); bytes that are not
    whole UTF-8 characters (half of a Chinese character) are shown as hex ``<E4 BD>``. SentencePiece's
    ``▁`` becomes a space and its byte tokens ``<0xE4>`` hex the same way; WordPiece's ``##ing`` joins
    the previous token (``ing``) while a token after a space in the text gets a leading space (with
    ``spans``, the tokens' character spans; without them every word start after the first does).
    Special tokens stay as they are.
    """
    tokens = tokenizer.convert_ids_to_tokens([int(i) for i in ids])
    special = set(tokenizer.all_special_ids)
    family = _family(tokenizer)
    to_byte = {c: b for b, c in _bytes_to_unicode().items()}
    out: list[str] = []
    for pos, (tid, tok) in enumerate(zip(ids, tokens, strict=True)):
        if tok is None:  # an id past the tokenizer's vocabulary (padding rows of the embedding)
            out.append(f"#{int(tid)}")
        elif int(tid) in special:
            out.append(tok)
        elif family == "bytelevel" and all(c in to_byte for c in tok):
            out.append(_shown(bytes(to_byte[c] for c in tok)))
        elif family == "wordpiece":
            out.append(tok[2:] if tok.startswith("##") else (" " + tok if _spaced(pos, ids, spans, special) else tok))
        elif len(tok) == 6 and tok.startswith("<0x") and tok.endswith(">"):
            out.append(_shown(bytes([int(tok[3:5], 16)])))
        else:
            out.append(_shown(tok.replace("▁", " ").encode("utf-8")))
    return out


# ---------------------------------------------------------------- capture
class _QKVRecorder:
    """Keeps q ``[H, T, D]``, k, v ``[H_kv, T, D]`` and the scale of the layers in ``layers`` (batch row 0),
    written straight into preallocated float32 arrays; stops the forward pass after the last one."""

    def __init__(self, model: LoadedModel, layers: tuple[int, ...], t: int):
        n, d = len(layers), model.head_dim
        self.slot = {layer: j for j, layer in enumerate(layers)}
        self.last = max(layers)
        self.calls, self.expected = 0, self.last + 1
        self.q = np.empty((n, model.n_heads, t, d), dtype=np.float32)
        self.k = np.empty((n, model.n_kv_heads, t, d), dtype=np.float32)
        self.v = np.empty((n, model.n_kv_heads, t, d), dtype=np.float32)
        self.scales = [0.0] * n

    def __call__(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float) -> None:
        layer, self.calls = self.calls, self.calls + 1
        if layer in self.slot:
            j = self.slot[layer]
            self.q[j] = q[0].float().cpu().numpy()
            self.k[j] = k[0].float().cpu().numpy()
            self.v[j] = v[0].float().cpu().numpy()
            self.scales[j] = scale
        if layer == self.last:
            raise _Stop


def _run(model: LoadedModel, ids: torch.Tensor, recorder: Any) -> None:
    """One forward pass of the model's base (no head, no logits) over ``ids`` ``[B, T]`` with ``recorder``."""
    base = model.module.base_model
    with torch.inference_mode():
        try:
            base(input_ids=ids.to(model.device), use_cache=False, **{_RECORDER_KW: recorder})
        except _Stop:
            pass
    if recorder.calls != recorder.expected:  # every layer must have gone through the capture function
        raise RuntimeError(
            f"the model ran {recorder.calls} attention layers through the capture, not {recorder.expected}"
        )


def _causal_mask(t_q: int, t_k: int, device: torch.device | str = "cpu") -> torch.Tensor:
    """Bool ``[T_q, T_k]``: query i (the last of the keys aligned to the last query) may see key j ≤ its position."""
    return torch.ones(t_q, t_k, dtype=torch.bool, device=device).tril(t_k - t_q)


def layer_weights(
    q: torch.Tensor, k: torch.Tensor, scale: float, causal: bool, limits: KeyLimits = NO_LIMITS
) -> torch.Tensor:
    """Attention weights ``[B, H, T_q, T_k]`` of q ``[B, H, T_q, D]`` over k ``[B, H_kv, T_k, D]``, by
    :func:`attn_core.attention.gqa.scaled_dot_product_attention` (``repeat_kv`` inside), float32.

    The queries are the last ``T_q`` of the ``T_k`` positions; ``limits`` (window, sinks, recent) narrow the
    mask (:meth:`LoadedModel.limits`): a key outside them gets a weight of exactly 0."""
    t_q, t_k = q.shape[-2], k.shape[-2]
    mask = _causal_mask(t_q, t_k, q.device) if causal else None
    if limits != NO_LIMITS:
        full = mask if mask is not None else torch.ones(t_q, t_k, dtype=torch.bool, device=q.device)
        mask = limit_keys(full, torch.arange(t_k - t_q, t_k, device=q.device), *limits)
    return scaled_dot_product_attention(q, k, k, mask=mask, scale=scale).weights


@dataclass(frozen=True)
class ModelAttention:
    """What one text does in some layers of a pretrained model, as CPU float32 numpy.

    ``tokens`` the readable labels (:func:`token_labels`) of the ``T`` tokens read (``ids``);
    ``layers`` the model's layer numbers kept; ``q`` ``[L_sel, H, T, D]`` the queries after RoPE,
    ``k``, ``v`` ``[L_sel, H_kv, T, D]`` the keys (after RoPE) and values before ``repeat_kv``;
    ``scales`` the factor each layer applies to q·k; ``weights`` ``[L_sel, H, T, T]`` recomputed from
    q and k by :func:`attn_core.attention.gqa.scaled_dot_product_attention`, or None when not asked for
    (long texts: the views compute them by chunks from :meth:`source`). ``n_text_tokens`` counts the
    text's tokens before the cut to the model's ``max_positions``. ``limits`` (window, sinks, recent)
    per captured layer: a sliding-window layer's window (:meth:`LoadedModel.limits`), applied to the weights.
    """

    model: str
    tokens: tuple[str, ...]
    ids: tuple[int, ...]
    layers: tuple[int, ...]
    q: np.ndarray = field(repr=False)
    k: np.ndarray = field(repr=False)
    v: np.ndarray = field(repr=False)
    scales: tuple[float, ...]
    causal: bool
    weights: np.ndarray | None = field(repr=False)
    n_text_tokens: int
    limits: tuple[KeyLimits, ...] = ()

    @property
    def truncated(self) -> bool:
        return self.n_text_tokens > len(self.ids)

    def layer_limits(self, j: int) -> KeyLimits:
        """The limits of the ``j``-th captured layer (none when not recorded)."""
        return self.limits[j] if self.limits else NO_LIMITS

    def index(self, layer: int) -> int:
        """The position of the model's layer ``layer`` in :attr:`layers`."""
        if layer not in self.layers:
            raise ConfigError(
                f"Layer {layer} was not captured; captured: {list(self.layers)}",
                "layer",
                "model_layer_not_captured",
                layer=layer,
                layers=str(list(self.layers)),
            )
        return self.layers.index(layer)

    def source(self, layer: int) -> TensorLayer:
        """The model's layer ``layer`` as an attention source for :mod:`attn_core.attention.longmaps` and the views."""
        j = self.index(layer)
        d = self.q.shape[-1]
        return TensorLayer(
            q=self.q[j],
            k=self.k[j],
            v=self.v[j],
            scale=self.scales[j],
            tokens_q=self.tokens,
            mask_kind="causal" if self.causal else "none",
            temperature=(d**-0.5) / self.scales[j],
            limits=self.layer_limits(j),
        )


def _layers(model: LoadedModel, layers: Sequence[int] | int | None) -> tuple[int, ...]:
    if layers is None:
        return tuple(range(model.n_layers))
    chosen = (layers,) if isinstance(layers, int) else tuple(layers)
    if not chosen:
        raise ConfigError("Pick at least one layer", "layer", "model_no_layers")
    return tuple(sorted({check_int("layer", x, 0, model.n_layers - 1) for x in chosen}))


def forward_bytes(model: LoadedModel, t: int, batch: int = 1) -> int:
    """An upper bound of the activations one forward pass over ``batch × t`` tokens holds at once (float32).

    The residual stream and its norms, q, k, v, the attention output and the MLP's hidden layer
    (gate, up and their product), a few of each alive at once; SDPA's scratch is per block of rows.
    """
    per_token = 6 * model.hidden_size + 3 * (model.n_heads + 2 * model.n_kv_heads) * model.head_dim
    inner = getattr(model.module.config, "intermediate_size", None) or 4 * model.hidden_size
    return 4 * batch * t * (per_token + 4 * int(inner)) + 64 * 2**20


def attention_bytes(model: LoadedModel, t: int, n_layers: int, weights: bool) -> int:
    """Peak bytes of :func:`model_attention` over ``t`` tokens and ``n_layers`` layers (with the full weights or not)."""
    captured = 4 * n_layers * t * model.head_dim * (model.n_heads + 2 * model.n_kv_heads)
    full = 4 * n_layers * model.n_heads * t * t + 3 * 4 * model.n_heads * t * t if weights else 0
    return forward_bytes(model, t) + captured + full


def model_attention(
    model: LoadedModel,
    text: str,
    layers: Sequence[int] | int | None = None,
    with_weights: bool | None = None,
    ids: Sequence[int] | None = None,
) -> ModelAttention:
    """The queries, keys and values ``model`` uses on ``text`` in ``layers`` (default all), and their weights.

    The text is cut to ``model.max_positions`` tokens (:attr:`ModelAttention.truncated` says so).
    ``with_weights``: build ``weights`` ``[L_sel, H, T, T]`` (True), never (False), or when they take
    at most :data:`MAX_WEIGHTS_BYTES` (None). The forward pass stops after the last layer asked for.
    ``ids``: read these token ids instead of ``text`` (e.g. :func:`repeated_tokens`; ``text`` is then
    ignored), cut to ``max_positions`` as well. Checks the memory budget before computing
    (:class:`ConfigError` naming ``text``).
    """
    if ids is not None:
        n_text = len(ids)
        ids, spans = [int(i) for i in ids][: model.max_positions], None
        if not ids:
            raise ConfigError("the text has no tokens; type some words", "text", "no_tokens")
    else:
        ids, spans, n_text = model.encode_spans(text)
    chosen = _layers(model, layers)
    t = len(ids)
    want = with_weights if with_weights is not None else 4 * len(chosen) * model.n_heads * t * t <= MAX_WEIGHTS_BYTES
    check_budget(
        attention_bytes(model, t, len(chosen), want),
        f"{t} tokens through {len(chosen)} layers",
        "shorten the text, pick fewer layers or leave out the full weights",
        "text",
    )
    recorder = _QKVRecorder(model, chosen, t)
    _run(model, torch.tensor([ids]), recorder)
    limits = tuple(model.limits(layer) for layer in chosen)
    weights = None
    if want:
        weights = np.empty((len(chosen), model.n_heads, t, t), dtype=np.float32)
        with torch.inference_mode():
            for j in range(len(chosen)):
                q, k = torch.from_numpy(recorder.q[j])[None], torch.from_numpy(recorder.k[j])[None]
                weights[j] = layer_weights(q, k, recorder.scales[j], model.causal, limits[j])[0].numpy()
    return ModelAttention(
        model=model.name,
        tokens=tuple(token_labels(model.tokenizer, ids, spans)),
        ids=tuple(ids),
        layers=chosen,
        q=recorder.q,
        k=recorder.k,
        v=recorder.v,
        scales=tuple(recorder.scales),
        causal=model.causal,
        weights=weights,
        n_text_tokens=n_text,
        limits=limits,
    )


# ---------------------------------------------------------------- score scale
SCALE_CHUNK_BYTES = 32 * 2**20  # scratch of one block of query rows in score_scale


def _scale_block(
    q: torch.Tensor, k: torch.Tensor, scale: float, rows: range, causal: bool, limits: KeyLimits = NO_LIMITS
) -> dict[str, float]:
    """Sums over the rows ``rows`` of one layer: q ``[H, T, D]``, k ``[H, T, D]`` (already repeated)."""
    s = q[:, rows.start : rows.stop] @ k.transpose(-2, -1)  # (H, R, T) raw q·k
    if causal:
        allowed = torch.arange(k.shape[-2])[None, :] <= torch.arange(rows.start, rows.stop)[:, None]  # (R, T)
    else:
        allowed = torch.ones(len(rows), k.shape[-2], dtype=torch.bool)
    if limits != NO_LIMITS:
        allowed = limit_keys(allowed, torch.arange(rows.start, rows.stop), *limits)
    picked = s[:, allowed].double()  # every allowed pair of every head
    w = torch.softmax((s * scale).masked_fill(~allowed, float("-inf")), dim=-1)  # (H, R, T)
    n_keys = allowed.sum(-1)  # (R,)
    keep = n_keys > 1  # a row with one key says nothing about spread
    ent = -torch.special.xlogy(w, w).sum(-1)[:, keep] / n_keys[keep].float().log()
    top = w.amax(-1)[:, keep]
    return {
        "n": picked.numel(),
        "s1": float(picked.sum()),
        "s2": float((picked**2).sum()),
        "rows": int(top.numel()),
        "max": float(top.sum()),
        "sat": float((top > SATURATION_THRESHOLD).sum()),
        "ent": float(ent.sum()),
    }


@dataclass(frozen=True)
class ScaleResult:
    """Per layer :func:`score_scale` of the model on a text, and the same for the seeded
    random layer of the same shape on the same number of tokens (``random``, one row)."""

    table: pd.DataFrame
    random: pd.DataFrame
    n_tokens: int
    head_dim: int


def score_scale(att: ModelAttention) -> pd.DataFrame:
    """How large each captured layer's scores are, and how peaked its softmax: one row per layer.

    Over every head and every allowed (query, key) pair: ``score_var`` the variance of q·k and
    ``scaled_var`` of q·k × the layer's scale (1/√d_k); over every row with at least two allowed keys:
    ``max_weight`` the mean largest weight, ``saturated`` the share of rows whose largest weight
    exceeds :data:`~attn_core.runtime.config.SATURATION_THRESHOLD`, and ``entropy`` the mean entropy over
    log(allowed keys). Computed by blocks of query rows, so long texts never hold ``[H, T, T]``.
    """
    rows_out = []
    h, t, d = att.q.shape[1:]
    n_rep = h // att.k.shape[1]
    step = max(1, SCALE_CHUNK_BYTES // (4 * 4 * h * t))
    with torch.inference_mode():
        for j, layer in enumerate(att.layers):
            q = torch.from_numpy(att.q[j])
            k = torch.from_numpy(att.k[j]).repeat_interleave(n_rep, dim=0)  # (H, T, D), head h reads h // n_rep
            lim = att.layer_limits(j)
            parts = [
                _scale_block(q, k, att.scales[j], range(r, min(t, r + step)), att.causal, lim)
                for r in range(0, t, step)
            ]
            tot = {key: sum(p[key] for p in parts) for key in parts[0]}
            mean = tot["s1"] / tot["n"]
            var = max(0.0, tot["s2"] / tot["n"] - mean**2)
            n_rows = max(1, tot["rows"])
            rows_out.append(
                {
                    "layer": layer,
                    "score_var": var,
                    "scaled_var": var * att.scales[j] ** 2,
                    "max_weight": tot["max"] / n_rows,
                    "saturated": tot["sat"] / n_rows,
                    "entropy": tot["ent"] / n_rows,
                }
            )
    return pd.DataFrame(rows_out, columns=["layer", "score_var", "scaled_var", "max_weight", "saturated", "entropy"])


def seeded_attention(n_heads: int, n_kv_heads: int, head_dim: int, t: int, causal: bool, seed: int) -> ModelAttention:
    """The app's seeded random layer (:class:`~attn_core.attention.sources.SeededLayer`, N(0, 1/d) projections of
    seeded embeddings) with a model's shape over ``t`` tokens, as a one-layer :class:`ModelAttention`:
    the baseline :func:`score_scale` compares a trained model with."""
    labels = tuple(f"t{i}" for i in range(t))
    layer = SeededLayer(n_heads, n_kv_heads, head_dim, labels, mask_kind="causal" if causal else "none", seed=seed)
    with torch.inference_mode():
        q, k, v = layer.qkv(list(range(n_heads)), torch.device("cpu"), values=True)
        ks = torch.stack([k[g] for g in range(n_kv_heads)]).numpy()[None]
        vs = torch.stack([v[g] for g in range(n_kv_heads)]).numpy()[None]
        return ModelAttention(
            model="random",
            tokens=labels,
            ids=tuple(range(t)),
            layers=(0,),
            q=q.numpy()[None],
            k=ks,
            v=vs,
            scales=(layer.scale,),
            causal=causal,
            weights=None,
            n_text_tokens=t,
        )


# ---------------------------------------------------------------- head roles
SCORES = ("previous_token", "first_token", "duplicate_token", "induction", "entropy")


def special_frame(tokenizer: Any) -> tuple[list[int], list[int]]:
    """The special tokens the tokenizer puts before and after a text (``[CLS]``/``[SEP]``, a BOS, or none)."""
    plain = list(tokenizer("a", add_special_tokens=False)["input_ids"])
    full = list(tokenizer("a", add_special_tokens=True)["input_ids"])
    for start in range(len(full) - len(plain) + 1):
        if full[start : start + len(plain)] == plain:
            return full[:start], full[start + len(plain) :]
    return [], []


_frame = special_frame


def repeated_tokens(model: LoadedModel, seq_len: int, n_seqs: int, seed: int) -> tuple[torch.Tensor, int]:
    """``n_seqs`` rows of ``seq_len`` random tokens repeated twice, framed by the model's special tokens.

    Returns the ids ``[n_seqs, T]`` and the position ``o`` of the first random token: the first copy
    is at ``o .. o+n-1``, the second at ``o+n .. o+2n-1``. Tokens are drawn uniformly (numpy,
    ``seed``) from the vocabulary less the special tokens.
    """
    prefix, suffix = special_frame(model.tokenizer)
    vocab = min(int(model.module.config.vocab_size), len(model.tokenizer))  # rows past the tokenizer are padding
    special = set(model.tokenizer.all_special_ids)
    pool = np.array([i for i in range(vocab) if i not in special], dtype=np.int64)
    drawn = np.random.default_rng(seed).choice(pool, size=(n_seqs, seq_len))
    rows = [prefix + list(r) + list(r) + suffix for r in drawn.tolist()]
    return torch.tensor(rows, dtype=torch.long), len(prefix)


class _ScoreRecorder:
    """Scores every head of every layer as the forward pass goes (weights of one layer alive at a time)."""

    def __init__(self, model: LoadedModel, n: int, offset: int):
        self.causal, self.n, self.o = model.causal, n, offset
        self.calls, self.expected = 0, model.n_layers
        self.rows: list[dict[str, Any]] = []
        self.kv_of = [model.kv_head(h) for h in range(model.n_heads)]
        self.limits = [model.limits(layer) for layer in range(model.n_layers)]

    def __call__(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float) -> None:
        layer, self.calls = self.calls, self.calls + 1
        w = layer_weights(q.float(), k.float(), scale, self.causal, self.limits[layer])  # (B, H, T, T)
        scores = role_scores(w, self.n, self.o, self.causal)
        for h in range(w.shape[1]):
            self.rows.append(
                {
                    "layer": layer,
                    "head": h,
                    "kv_head": self.kv_of[h],
                    **{name: float(s[h]) for name, s in scores.items()},
                }
            )


def role_scores(w: torch.Tensor, n: int, offset: int, causal: bool) -> dict[str, torch.Tensor]:
    """Each of :data:`SCORES` per head ``[H]`` from weights ``w`` ``[B, H, T, T]`` of sequences whose random tokens
    ``offset .. offset+n-1`` are repeated at ``offset+n .. offset+2n-1`` (the definitions of :func:`head_scores`)."""
    o = offset
    second = w[:, :, o + n : o + 2 * n]  # rows of the second copy
    return {
        "previous_token": w.diagonal(offset=-1, dim1=-2, dim2=-1).mean(dim=(0, 2)),
        "first_token": w[:, :, 1:, 0].mean(dim=(0, 2)),
        "duplicate_token": second[..., o : o + n].diagonal(dim1=-2, dim2=-1).mean(dim=(0, 2)),
        "induction": second[..., o + 1 : o + n + 1].diagonal(dim1=-2, dim2=-1).mean(dim=(0, 2)),
        "entropy": _normalised_entropy(w, causal),
    }


def _normalised_entropy(w: torch.Tensor, causal: bool) -> torch.Tensor:
    """Per head ``[H]``: the mean over rows (and the batch) of a row's entropy over log(its allowed keys).

    Rows with one allowed key (a causal model's first) are left out: their entropy is 0 of 0.
    """
    t = w.shape[-1]
    h = -torch.special.xlogy(w, w).sum(-1)  # (B, H, T) in nats
    # row i allows i + 1 keys in a causal model (row 0, one key, left out), all t in an encoder (none kept at t = 1);
    # made on the weights' device, and sliced, not masked, so no step depends on the data
    first = 1 if causal else (0 if t > 1 else t)
    allowed = (
        torch.arange(first + 1, t + 1, dtype=w.dtype, device=w.device)
        if causal
        else torch.full((t - first,), float(t), dtype=w.dtype, device=w.device)
    )
    return (h[..., first:] / allowed.log()).mean(dim=(0, 2))


def head_scores(model: LoadedModel, seq_len: int = 50, n_seqs: int = 4, seed: int = 0) -> pd.DataFrame:
    """The role scores of every head, one row per (layer, head), measured on repeated random tokens.

    ``n_seqs`` sequences of ``seq_len`` random tokens, each repeated twice (:func:`repeated_tokens`,
    as in Olsson et al. 2022). Per head, means over the sequences:
    ``previous_token`` the weight on position i-1 (every row i ≥ 1); ``first_token`` the weight on
    position 0 (rows i ≥ 1); ``duplicate_token`` from the second copy's rows, the weight on the
    earlier copy of the same token; ``induction`` from the same rows, the weight on the token after
    that earlier copy (Olsson et al.'s prefix-matching score); ``entropy`` a row's entropy over log(its allowed keys), rows with ≥ 2 keys.
    Weights are recomputed from the captured q and k (:func:`layer_weights`). Columns: ``layer,
    head, kv_head`` and :data:`SCORES`; ``attrs`` holds ``seq_len``, ``n_seqs``, ``seed``.
    """
    prefix, suffix = special_frame(model.tokenizer)
    check_int("seq_len", seq_len, 2, max(2, (model.max_positions - len(prefix) - len(suffix)) // 2))
    check_int("n_seqs", n_seqs, 1, 64)
    ids, offset = repeated_tokens(model, seq_len, n_seqs, seed)
    t = ids.shape[1]
    need = forward_bytes(model, t, n_seqs) + 4 * 4 * n_seqs * model.n_heads * t * t
    check_budget(need, f"head scores over {n_seqs} × {t} tokens", "use fewer or shorter sequences", "seq_len")
    recorder = _ScoreRecorder(model, seq_len, offset)
    _run(model, ids, recorder)
    df = pd.DataFrame(recorder.rows, columns=["layer", "head", "kv_head", *SCORES])
    df.attrs.update(seq_len=seq_len, n_seqs=n_seqs, seed=seed)
    return df


KV_SHUFFLES = 2000  # shuffles of the KV-head labels in :func:`kv_group_test`
KV_SHUFFLE_SEED = 0


@dataclass(frozen=True)
class GroupTest:
    """Whether heads that share a KV head score more alike than heads that do not (:func:`kv_group_test`).

    ``within`` and ``between``: the mean |difference| of the score between two heads of one layer reading the same
    KV head and different ones; ``ratio`` within / between; ``p`` the two-sided permutation p-value; ``null_lo``,
    ``null_hi`` the 2.5th and 97.5th percentiles of the ratio over the ``shuffles`` shuffled labellings;
    ``null_median`` their median."""

    within: float
    between: float
    ratio: float
    p: float
    null_lo: float
    null_median: float
    null_hi: float
    shuffles: int


def kv_group_test(
    df: pd.DataFrame, score: str, shuffles: int = KV_SHUFFLES, seed: int = KV_SHUFFLE_SEED
) -> GroupTest | None:
    """A permutation test of the KV grouping on a score table (columns ``layer``, ``kv_head`` and ``score``).

    The statistic is the ratio of the mean |difference| of ``score`` between heads of one layer that share a KV head
    to that between heads that do not (pairs pooled over the layers). Its null distribution: the KV-head labels
    shuffled among the heads of each layer, independently per layer and shuffle (group sizes kept), ``shuffles``
    times from a generator seeded with ``seed``. p is two-sided: twice the smaller tail, each tail counting the
    observed labelling, (1 + #{null ≤ ratio}) / (shuffles + 1) (Phipson & Smyth 2010). Vectorised: each layer's
    pairs' differences are summed over its shuffles' same-group masks in one matrix product. None when no layer
    has two heads of one KV head (MHA) or none of different ones (MQA).
    """
    check_int("shuffles", shuffles, 1, 100_000)
    rng = np.random.default_rng(seed)
    obs_w = total = 0.0
    n_w = n_b = 0
    perm_w = np.zeros(shuffles)
    for _, layer in df.groupby("layer", sort=True):
        v, kv = layer[score].to_numpy(dtype=float), layer["kv_head"].to_numpy()
        i, j = np.triu_indices(len(v), 1)
        d = np.abs(v[i] - v[j])
        same = kv[i] == kv[j]
        obs_w += float(same.astype(float) @ d)
        total += float(d.sum())
        n_w, n_b = n_w + int(same.sum()), n_b + int((~same).sum())
        labels = rng.permuted(np.tile(kv, (shuffles, 1)), axis=1)  # [shuffles, H]
        perm_w += (labels[:, i] == labels[:, j]).astype(float) @ d
    if n_w == 0 or n_b == 0:
        return None

    def ratio(w: np.ndarray | float) -> np.ndarray:
        within, between = np.asarray(w) / n_w, (total - np.asarray(w)) / n_b
        return np.where(between > 0, within / np.where(between > 0, between, 1.0), 1.0)

    obs, null = float(ratio(obs_w)), ratio(perm_w)
    tie = 1e-9 * max(abs(obs), 1e-12)  # the same labelling summed in another order: equal up to round-off
    low = (1 + int((null <= obs + tie).sum())) / (shuffles + 1)
    high = (1 + int((null >= obs - tie).sum())) / (shuffles + 1)
    lo, med, hi = (float(x) for x in np.percentile(null, [2.5, 50, 97.5]))
    return GroupTest(obs_w / n_w, (total - obs_w) / n_b, obs, min(1.0, 2 * min(low, high)), lo, med, hi, shuffles)


# ---------------------------------------------------------------- generation
@dataclass(frozen=True)
class GenStep:
    """One generated token of :func:`generate`.

    ``step`` counts from 1 (step 1 reads the whole prompt); ``seq_len`` tokens were in the context it
    was computed from. ``text`` is the generated text so far (decoded, special tokens kept).
    ``cache_bytes`` is measured from the K/V cache's tensors after the step and ``formula_bytes``
    is 2·L·B·H_kv·S·d·b for the S positions it holds, a sliding layer counted at the positions it
    keeps (:func:`_new_cache`; both 0 without the cache). ``seconds`` is the
    step's time (the forward pass, the choice of the token, and the attention row when kept).
    ``attention`` ``[L, H, seq_len]``: the newest position's attention weights in every layer and
    head (None with ``rows=False``). ``eos``: the token ends the text (generation stops after it).
    """

    step: int
    token_id: int
    token: str
    text: str
    seq_len: int
    cache_bytes: int
    formula_bytes: int
    seconds: float
    attention: np.ndarray | None = field(repr=False)
    eos: bool


class _RowRecorder:
    """Keeps the last query's weights over every key, per layer, on the model's device; :meth:`collect` gives
    them as ``[L, H, S]`` (float32, CPU) once the step is timed (a copy to the CPU per layer inside the timed
    step would wait for the GPU at every layer, on the cached path only).

    A sliding layer's cache may hold only the last keys: its row is over those, placed at the end of the
    ``S`` positions (the keys it no longer holds get 0, as the window gives them anyway)."""

    def __init__(self, model: LoadedModel, s: int):
        self.kept: list[torch.Tensor] = []
        self.shape = (model.n_layers, model.n_heads, s)
        self.calls, self.expected = 0, model.n_layers
        self.limits = [model.limits(layer) for layer in range(model.n_layers)]

    def __call__(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float) -> None:
        layer, self.calls = self.calls, self.calls + 1
        lim = self.limits[layer] if layer < len(self.limits) else NO_LIMITS
        w = layer_weights(q[:1, :, -1:].float(), k[:1].float(), scale, False, lim)[0, :, 0]  # (H, T_k): the last row
        s = self.shape[-1]
        if w.shape[-1] < s:
            w = torch.cat([w.new_zeros(w.shape[0], s - w.shape[-1]), w], dim=-1)
        self.kept.append(w)  # (H, S)

    def collect(self) -> np.ndarray:
        """The rows ``[L, H, S]`` (float32, CPU)."""
        rows = torch.stack(self.kept).to("cpu", torch.float32).numpy()
        if rows.shape != self.shape:
            raise RuntimeError(f"captured rows of shape {rows.shape}, not {self.shape}")
        return rows


def cache_bytes(cache: Any) -> int:
    """Bytes held by a transformers cache's key and value tensors, measured from the tensors."""
    if cache is None:
        return 0
    total = 0
    for layer in getattr(cache, "layers", []):
        for t in (getattr(layer, "keys", None), getattr(layer, "values", None)):
            if isinstance(t, torch.Tensor):
                total += t.numel() * t.element_size()
    return total


def _eos_ids(model: LoadedModel) -> set[int]:
    ids: set[int] = set()
    for src in (getattr(model.module, "generation_config", None), model.module.config, model.tokenizer):
        value = getattr(src, "eos_token_id", None)
        ids.update([value] if isinstance(value, int) else list(value or []))
    return ids


def generate(
    model: LoadedModel,
    prompt: str,
    max_new_tokens: int,
    greedy: bool = True,
    use_cache: bool = True,
    seed: int = 0,
    rows: bool = True,
    prompt_ids: Sequence[int] | None = None,
) -> Iterator[GenStep]:
    """Decode up to ``max_new_tokens`` tokens after ``prompt``, one :class:`GenStep` at a time.

    ``greedy``: the most likely token, else one sampled from the softmax with a generator seeded by
    ``seed``. ``use_cache``: a transformers ``DynamicCache`` (each step reads one new token), else every
    step reads the whole sequence again. ``rows``: keep the newest token's attention row.
    ``prompt_ids``: start from these token ids instead of ``prompt``. Checked at
    once (:class:`ConfigError` for an encoder, a bad length or the memory budget); the returned
    generator may be closed at any time, which frees the cache.
    """
    if not model.causal:
        raise ConfigError(
            f"{model.name} is an encoder: it does not generate text", "model", "model_not_decoder", name=model.name
        )
    ids = [int(i) for i in prompt_ids] if prompt_ids is not None else model.encode(prompt)[0]
    if not ids:
        raise ConfigError("the text has no tokens; type some words", "text", "no_tokens")
    room = model.max_positions - len(ids)
    if room < 1:
        raise ConfigError(
            f"The prompt fills the model's {model.max_positions} positions; shorten it",
            "prompt",
            "model_prompt_full",
            max=model.max_positions,
        )
    n_new = check_int("max_new_tokens", max_new_tokens, 1, min(MAX_NEW_TOKENS, room))
    s = len(ids) + n_new
    cache = kv_cache_bytes(model.n_layers, model.n_kv_heads, model.head_dim, s, 1, "fp32") if use_cache else 0
    logits = 4 * int(model.module.config.vocab_size) * 4
    need = cache + forward_bytes(model, len(ids) if use_cache else s) + 4 * model.n_layers * model.n_heads * s
    check_budget(
        need + logits, f"generating {n_new} tokens after {len(ids)}", "generate fewer tokens", "max_new_tokens"
    )
    return _steps(model, ids, n_new, (greedy, use_cache, seed, rows))


def _pick(logits: torch.Tensor, greedy: bool, gen: torch.Generator) -> int:
    if greedy:
        return int(logits.argmax())
    return int(torch.multinomial(torch.softmax(logits.float().cpu(), dim=-1), 1, generator=gen))


def _new_cache(hf: Any, model: LoadedModel) -> tuple[Any, tuple[int | None, ...]]:
    """(a transformers ``DynamicCache`` for ``model``, the positions each layer keeps between steps).

    Its sliding layers keep the last ``window - 1`` positions (the next token's own key makes ``window``;
    tests/models pins this). An evicted copy (``streaming``) gets a cache that keeps every position on every
    layer: its mask, built for keys counted from position 0, does the eviction."""
    if model.streaming is not None:
        return hf.DynamicCache(), (None,) * model.n_layers
    return hf.DynamicCache(config=model.module.config), cache_kept(model)


def cache_kept(model: LoadedModel) -> tuple[int | None, ...]:
    """The positions each layer of ``model``'s ``DynamicCache`` keeps between decode steps: ``window - 1`` on a
    sliding layer (Gemma 3 270M: 511; the next token's own key makes the window), None (every one) on the others."""
    return tuple(None if w is None else max(1, w - 1) for w in model.layer_windows or (None,) * model.n_layers)


def _steps(model: LoadedModel, ids: list[int], n_new: int, how: tuple[bool, bool, int, bool]) -> Iterator[GenStep]:
    """The generator behind :func:`generate`: inference mode is entered per step, never held across a yield."""
    greedy, use_cache, seed, rows = how
    hf = _hf()
    eos = _eos_ids(model)
    gen = torch.Generator().manual_seed(int(seed))
    cache, kept = _new_cache(hf, model) if use_cache else (None, ())
    seq, feed = list(ids), torch.tensor([ids])
    try:
        for step in range(1, n_new + 1):
            recorder = _RowRecorder(model, len(seq)) if rows else None
            with torch.inference_mode():
                t0 = time.perf_counter()
                out = model.module(
                    input_ids=feed.to(model.device),
                    past_key_values=cache,
                    use_cache=use_cache,
                    logits_to_keep=1,
                    **({_RECORDER_KW: recorder} if rows else {}),
                )
                token = _pick(out.logits[0, -1], greedy, gen)
                if recorder is not None and recorder.calls != recorder.expected:
                    raise RuntimeError(f"{recorder.calls} of {recorder.expected} attention layers were captured")
                sync(model.device)
                seconds = time.perf_counter() - t0
                del out
            held = cache.get_seq_length() if cache is not None else 0
            formula = windowed_cache_bytes(kept, model.n_kv_heads, model.head_dim, held, 1, "fp32") if held else 0
            context = len(seq)
            seq.append(token)
            yield GenStep(
                step=step,
                token_id=token,
                token=token_labels(model.tokenizer, [token])[0],
                text=model.tokenizer.decode(seq[len(ids) :]),
                seq_len=context,
                cache_bytes=cache_bytes(cache),
                formula_bytes=formula,
                seconds=seconds,
                attention=recorder.collect() if recorder is not None else None,
                eos=token in eos,
            )
            if token in eos:
                return
            feed = torch.tensor([[token]]) if use_cache else torch.tensor([seq])
    finally:
        cache = None
