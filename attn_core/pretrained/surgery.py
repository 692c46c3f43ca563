"""Surgery on a pretrained model: copies with fewer KV heads, another score scale, heads ablated, an evicted cache.

Every function takes a :class:`~attn_core.pretrained.models.LoadedModel` and returns a NEW one; the model
given is never changed (a loaded model is shared read-only by every session and thread of a server).
The copy is shallow where it can be: its modules are new objects, but every weight it does not change
is the original's tensor (no memory copied), and the few it changes are new tensors of the copy alone.
The copy records what was done (:attr:`LoadedModel.edits`), so it pickles as the original model loaded
again with the same edits, and edits compose (``ablate_heads(pool_kv_heads(m, 1), 3, [0])``).

- :func:`pool_kv_heads`: merge each group of KV heads into one, in weight space (the GQA paper's
  conversion, Ainslie et al. 2023): mean pooling of the K and V projections, the group's first
  head, or new random heads. A model with a per-head key norm (Gemma 3, Qwen3) normalises the
  pooled key, as a converted checkpoint would.
- :func:`scale_scores`: multiply the model's own 1/√d_k by a factor, or drop it (scale 1).
- :func:`ablate_heads`: zero some query heads' outputs before the output projection.
- :func:`evict_cache`: StreamingLLM (Xiao et al. 2023, arXiv 2309.17453): each query attends only
  to the first ``sinks`` tokens and the last ``window`` tokens, as a mask in one forward pass.
- :func:`evaluate`: a decoder's perplexity, the KL divergence and top-1 agreement of its next-token
  distributions against a reference (an encoder's: the cosine similarity of its hidden states), and
  the KV cache per token.
"""

from __future__ import annotations

import copy
import dataclasses
import itertools
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch import nn

from attn_core.kv.convert import METHODS
from attn_core.kv.memory import kv_cache_bytes, windowed_cache_bytes
from attn_core.pretrained.models import STREAMING_ATTR, LoadedModel, forward_bytes
from attn_core.runtime.config import ConfigError, check_int, divisors, unknown_option
from attn_core.runtime.guard import check_budget

LOGIT_CHUNK_BYTES = 32 * 2**20  # one block of a [rows, vocab] float32 logits matrix in evaluate


# ---------------------------------------------------------------- where each family keeps its attention
@dataclass(frozen=True)
class _Parts:
    """Names, inside one transformer block, of the attention module (the one that calls the attention function
    and holds ``scaling``), its K and V projections (None: fused, as GPT-2's ``c_attn``) and its output projection."""

    attn: str
    k: str | None
    v: str | None
    out: str


_LLAMA = _Parts("self_attn", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj")
PARTS = {
    **dict.fromkeys(("llama", "mistral", "qwen2", "qwen3", "gemma3_text"), _LLAMA),
    "bert": _Parts("attention.self", "attention.self.key", "attention.self.value", "attention.output.dense"),
    "gpt2": _Parts("attn", None, None, "attn.c_proj"),
}


def _blocks(module: nn.Module) -> nn.ModuleList:
    """The transformer blocks of a loaded model, in order."""
    base = module.base_model
    for path in ("layers", "encoder.layer", "h"):
        try:
            return base.get_submodule(path)
        except AttributeError:
            continue
    kind = type(base).__name__
    raise ConfigError(
        f"surgery is not available for {kind}: no transformer blocks found",
        "model",
        "surgery_unsupported",
        what="surgery",
        name=kind,
        arch=kind,
    )


def _set(root: nn.Module, path: str, value: nn.Module) -> None:
    parent, _, name = path.rpartition(".")
    setattr(root.get_submodule(parent) if parent else root, name, value)


def _copy(model: LoadedModel, fn: Any, **kwargs: Any) -> tuple[LoadedModel, nn.Module]:
    """(a copy of ``model`` recording the edit ``fn(**kwargs)``, its module): new module objects, the same tensors."""
    memo = {id(t): t for t in itertools.chain(model.module.parameters(), model.module.buffers())}
    module = copy.deepcopy(model.module, memo)
    edits = (*model.edits, (fn, tuple(kwargs.items())))
    return dataclasses.replace(model, module=module, edits=edits), module


def _unsupported(model: LoadedModel, what: str) -> ConfigError:
    return ConfigError(
        f"{what} is not available for {model.name} (architecture {model.arch})",
        "model",
        "surgery_unsupported",
        what=what,
        name=model.name,
        arch=model.arch,
    )


# ---------------------------------------------------------------- KV-head pooling
def _pooled_linear(lin: nn.Linear, d: int, n_groups: int, how: tuple[str, torch.Generator]) -> nn.Linear:
    """``lin`` ``[H_kv·d, in]`` with each run of ``H_kv / n_groups`` heads (``d`` rows each) made one head."""
    method, gen = how
    w = lin.weight.detach()
    heads = w.view(n_groups, -1, d, w.shape[-1])  # (G', r, d, in): group g' holds the KV heads g'r .. g'r + r - 1
    bias = lin.bias.detach().view(n_groups, -1, d) if lin.bias is not None else None
    if method == "mean":
        new_w, new_b = heads.mean(1), bias.mean(1) if bias is not None else None
    elif method == "first":
        new_w, new_b = heads[:, 0], bias[:, 0] if bias is not None else None
    else:  # random: throw the trained projection away (N(0, σ²), σ the RMS of the original weights)
        sigma = float(w.float().pow(2).mean().sqrt())
        new_w = torch.randn(heads[:, 0].shape, generator=gen, dtype=torch.float32).to(w) * sigma
        new_b = torch.zeros_like(bias[:, 0]) if bias is not None else None
    out = nn.Linear(w.shape[-1], n_groups * d, bias=new_b is not None, device=w.device, dtype=w.dtype)
    out.weight = nn.Parameter(new_w.reshape(n_groups * d, -1).contiguous(), requires_grad=False)
    if new_b is not None:
        out.bias = nn.Parameter(new_b.reshape(-1).contiguous(), requires_grad=False)
    return out


def _check_pool(model: LoadedModel, n_kv_heads: int, method: str) -> int:
    if method not in METHODS:
        raise unknown_option("method", method, METHODS)
    n = check_int("n_kv_heads", n_kv_heads, 1, model.n_kv_heads)
    if model.n_kv_heads % n:
        valid = ", ".join(map(str, divisors(model.n_kv_heads)))
        raise ConfigError(
            f"{model.name} has {model.n_kv_heads} KV heads: pooling merges whole groups of them, so the new "
            f"number must divide {model.n_kv_heads} (got {n}); valid: {valid}",
            "n_kv_heads",
            "surgery_kv_divisor",
            name=model.name,
            n_kv=model.n_kv_heads,
            n=n,
            valid=valid,
        )
    if PARTS.get(model.arch, _Parts("", None, None, "")).k is None:
        raise _unsupported(model, "pool_kv_heads")
    return n


def pool_kv_heads(model: LoadedModel, n_kv_heads: int, method: str = "mean", seed: int = 0) -> LoadedModel:
    """A copy of ``model`` whose every layer has ``n_kv_heads`` KV heads, each made from one contiguous group
    of ``model.n_kv_heads / n_kv_heads`` of the original ones (the query heads that read them keep reading
    their group's head: query head ``h`` reads ``h // (H / n_kv_heads)``, as ``repeat_kv``).

    ``method`` (:data:`attn_core.kv.convert.METHODS`, as the seeded layer's conversion): ``mean`` the
    element-wise mean of the group's K and V projection rows ``[d, d_model]`` (and biases); ``first`` the
    group's first head; ``random`` new N(0, σ²) projections drawn from ``seed`` (σ the RMS of the
    layer's original ones, biases 0). ``n_kv_heads`` must divide the model's own count (SmolLM2: 3 → 1 or
    3; MiniLM: 12 → 1, 2, 3, 4, 6, 12), else :class:`ConfigError` (``surgery_kv_divisor``). Pooling to
    the same number with ``mean`` or ``first`` leaves every weight as it was. GPT-2's fused
    projection is refused (``surgery_unsupported``).
    """
    n = _check_pool(model, n_kv_heads, method)
    parts = PARTS[model.arch]
    new, module = _copy(model, pool_kv_heads, n_kv_heads=n, method=method, seed=int(seed))
    gen = torch.Generator().manual_seed(int(seed))
    for block in _blocks(module):
        for path in (parts.k, parts.v):
            _set(block, path, _pooled_linear(block.get_submodule(path), model.head_dim, n, (method, gen)))
        block.get_submodule(parts.attn).num_key_value_groups = model.n_heads // n  # read by SDPA's repeat_kv
    module.config.num_key_value_heads = n
    preset = dataclasses.replace(model.preset, n_kv_heads=n)
    return dataclasses.replace(new, n_kv_heads=n, preset=preset)


# ---------------------------------------------------------------- score scale, ablation, eviction
def scale_scores(model: LoadedModel, factor: float | str | None) -> LoadedModel:
    """A copy of ``model`` whose every layer multiplies q·k by its own scale times ``factor``.

    The model's own scale is 1/√d_k (Gemma 3: ``query_pre_attn_scalar``^-½, also 1/√256 for the 270M
    model; GPT-2 may add 1/(layer + 1)). ``factor`` 1 changes nothing; 2 sharpens every softmax, ½
    flattens it. ``None`` (or ``"none"``) drops the scale altogether: q·k enters the softmax as it is
    (scale 1, the "no 1/√d_k" lesson). 0 or a negative factor is refused (``surgery_factor``): it
    would make every row uniform (or reversed), not "no scaling".
    """
    if factor is None or (isinstance(factor, str) and factor.strip().lower() == "none"):
        factor = None
    elif isinstance(factor, bool) or not isinstance(factor, (int, float)) or not np.isfinite(factor) or factor <= 0:
        raise ConfigError(
            f"factor must be a positive number, or None for no scaling at all (scale 1); got {factor!r}",
            "factor",
            "surgery_factor",
            value=repr(factor),
        )
    new, module = _copy(model, scale_scores, factor=None if factor is None else float(factor))
    parts = _parts_of(model, "scale_scores")
    for block in _blocks(module):
        attn = block.get_submodule(parts.attn)
        attn.scaling = 1.0 if factor is None else float(attn.scaling) * float(factor)
    return new


def scale_of(model: LoadedModel, layer: int = 0) -> float:
    """The factor layer ``layer`` of ``model`` applies to q·k: 1/√d_k (Gemma 3: ``query_pre_attn_scalar``^-½),
    times a :func:`scale_scores` factor, or 1 with no scale at all."""
    layer = check_int("layer", layer, 0, model.n_layers - 1)
    attn = _blocks(model.module)[layer].get_submodule(_parts_of(model, "scale_of").attn)
    return float(attn.scaling)


def _parts_of(model: LoadedModel, what: str) -> _Parts:
    if model.arch not in PARTS:
        raise _unsupported(model, what)
    return PARTS[model.arch]


class _HeadMask(nn.Module):
    """``inner`` (the output projection, shared with the original) reading its input times ``keep`` ``[H·d]``
    (1 for a kept head's slice, 0 for an ablated one): the ablated heads' outputs are exactly 0."""

    def __init__(self, inner: nn.Module, keep: torch.Tensor):
        super().__init__()
        self.inner = inner
        self.register_buffer("keep", keep, persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.inner(x * self.keep)


def ablate_heads(model: LoadedModel, layer: int, heads: Sequence[int] | int) -> LoadedModel:
    """A copy of ``model`` whose query heads ``heads`` of layer ``layer`` output 0: their slices
    ``[h·d, (h+1)·d)`` of the output projection's input (``o_proj``; BERT's ``attention.output.dense``;
    GPT-2's ``c_proj``) are zeroed, the same as zeroing those input columns of its weight.
    """
    layer = check_int("layer", layer, 0, model.n_layers - 1)
    chosen = (heads,) if isinstance(heads, int) else tuple(heads)
    if not chosen:
        raise ConfigError("Pick at least one head to ablate", "heads", "surgery_no_heads")
    chosen = tuple(sorted({check_int("head", h, 0, model.n_heads - 1) for h in chosen}))
    parts = _parts_of(model, "ablate_heads")
    new, module = _copy(model, ablate_heads, layer=layer, heads=chosen)
    block = _blocks(module)[layer]
    out = block.get_submodule(parts.out)
    keep = torch.ones(model.n_heads, model.head_dim, device=model.device)
    keep[list(chosen)] = 0.0
    _set(block, parts.out, _HeadMask(out, keep.reshape(-1)))
    return new


def evict_cache(model: LoadedModel, window: int, sinks: int = 4) -> LoadedModel:
    """A copy of a decoder whose every query attends only to the first ``sinks`` tokens (attention sinks) and
    the last ``window`` tokens, itself included: StreamingLLM (Xiao et al. 2023) as a mask, so one forward
    pass over a long text gives what a cache holding only those ``sinks + window`` positions would.

    The keys keep their original positions (transformers caches keys after RoPE, so evicting entries from
    its cache gives exactly this); StreamingLLM's own implementation re-numbers the positions inside the
    cache, which changes only the sinks' distance. A window at least as long as the text changes
    nothing. On a sliding-window layer both limits apply. An encoder is refused (``surgery_not_decoder``).
    """
    if not model.causal:
        raise ConfigError(
            f"{model.name} is an encoder: it keeps no cache to evict", "model", "surgery_not_decoder", name=model.name
        )
    window, sinks = check_int("window", window, 1), check_int("sinks", sinks, 0)
    parts = _parts_of(model, "evict_cache")
    new, module = _copy(model, evict_cache, window=window, sinks=sinks)
    for block in _blocks(module):
        setattr(block.get_submodule(parts.attn), STREAMING_ATTR, (sinks, window))
    return dataclasses.replace(new, streaming=(sinks, window))


# ---------------------------------------------------------------- evaluation
@dataclass(frozen=True)
class Reference:
    """What :func:`evaluate` compares with, computed once per text: the reference model's last hidden states
    ``hidden`` ``[T, d_model]`` over ``ids`` (a decoder's after its final norm, what its LM head reads)."""

    model: LoadedModel
    ids: tuple[int, ...]
    hidden: torch.Tensor = field(repr=False)


@dataclass(frozen=True)
class Evaluation:
    """How well one (edited) model reads one text of ``n_tokens`` ids.

    Decoder: ``loss`` the mean next-token negative log-likelihood (nats) over the ``T - 1`` predicted
    tokens, ``perplexity`` its exponential; against a reference, ``kl`` the mean KL(reference ‖ model)
    of those next-token distributions (nats) and ``top1`` the share of positions whose most likely
    next token is the same. Encoder (no LM head: :func:`evaluate`): ``cosine`` the mean cosine
    similarity of each token's last hidden state to the reference's, ``embedding_cosine`` that of the
    mean-pooled text embedding (what a sentence-embedding model outputs). A measure that does not
    apply, or needs the reference when there is none, is None.
    ``kv_bytes_per_token``: K and V of one token over all layers (float32, ``2·L·H_kv·d·4``);
    ``kv_bytes``: the cache for the ``n_tokens`` read, a sliding layer or an evicted cache counted at the
    positions it keeps (:func:`kept_positions`). ``seconds``: wall time, the reference's included when
    it was computed here. ``token_losses`` (decoder): the negative log-likelihood (nats) of each of the
    ``T - 1`` predicted tokens, in order (their mean is ``loss``); empty for an encoder.
    """

    model: str
    edits: tuple[str, ...]
    n_tokens: int
    loss: float | None
    perplexity: float | None
    kl: float | None
    top1: float | None
    cosine: float | None
    embedding_cosine: float | None
    kv_bytes_per_token: int
    kv_bytes: int
    seconds: float
    token_losses: tuple[float, ...] = field(default=(), repr=False, compare=False)


def _hidden(model: LoadedModel, ids: Sequence[int]) -> torch.Tensor:
    """The base model's last hidden states ``[T, d_model]`` over ``ids``."""
    with torch.inference_mode():
        feed = torch.tensor([list(ids)], device=model.device)
        return model.module.base_model(input_ids=feed, use_cache=False).last_hidden_state[0]


def _log_probs(model: LoadedModel, hidden: torch.Tensor) -> torch.Tensor:
    """Log-softmax ``[R, V]`` of the LM head over ``hidden`` ``[R, d_model]`` (a final soft-cap when the config has one)."""
    logits = model.module.get_output_embeddings()(hidden)
    cap = getattr(model.module.config, "final_logit_softcapping", None)
    if cap:
        logits = torch.tanh(logits / cap) * cap
    return torch.log_softmax(logits.float(), dim=-1)


def _vocab(model: LoadedModel) -> int:
    return int(model.module.get_input_embeddings().weight.shape[0])


def _rows(model: LoadedModel) -> int:
    """Rows of one block of logits (:data:`LOGIT_CHUNK_BYTES`)."""
    return max(1, LOGIT_CHUNK_BYTES // (4 * _vocab(model)))


def _checked_ids(model: LoadedModel, ids: Sequence[int]) -> list[int]:
    out = [int(i) for i in ids]
    check_int("text_ids", len(out), 2, model.max_positions)
    need = 2 * forward_bytes(model, len(out)) + 6 * 4 * _rows(model) * _vocab(model)
    check_budget(need, f"evaluating {len(out)} tokens", "evaluate a shorter text", "text_ids")
    return out


def reference_of(model: LoadedModel, ids: Sequence[int]) -> Reference:
    """The :class:`Reference` of ``model`` (usually the unedited one) over ``ids``: compute it once, then compare
    every edited copy with it (:func:`evaluate`)."""
    ids = _checked_ids(model, ids)
    return Reference(model=model, ids=tuple(ids), hidden=_hidden(model, ids))


def _decoder_scores(model: LoadedModel, ids: list[int], hidden: torch.Tensor, ref: Reference | None) -> dict:
    """loss, perplexity, kl, top1 over the ``T - 1`` next-token predictions, by blocks of rows so a
    ``[T, V]`` matrix never exists at once."""
    targets, n = torch.tensor(ids[1:], device=hidden.device), len(ids) - 1
    tot = {"nll": 0.0, "kl": 0.0, "top1": 0}
    losses: list[float] = []
    with torch.inference_mode():
        for r in range(0, n, _rows(model)):
            rows = slice(r, min(n, r + _rows(model)))
            lp = _log_probs(model, hidden[rows])
            nll = -lp.gather(-1, targets[rows, None])[:, 0]
            losses += nll.double().cpu().tolist()
            tot["nll"] += float(nll.sum())
            if ref is not None:
                ref_lp = _log_probs(ref.model, ref.hidden[rows])
                tot["kl"] += float((ref_lp.exp() * (ref_lp - lp)).sum())
                tot["top1"] += int((ref_lp.argmax(-1) == lp.argmax(-1)).sum())
    loss = tot["nll"] / n
    has_ref = ref is not None
    return {
        "loss": loss,
        "perplexity": float(np.exp(loss)),
        "kl": tot["kl"] / n if has_ref else None,
        "top1": tot["top1"] / n if has_ref else None,
        "cosine": None,
        "embedding_cosine": None,
        "token_losses": tuple(losses),
    }


def _encoder_scores(hidden: torch.Tensor, ref: Reference | None) -> dict:
    """cosine (per token, averaged) and embedding_cosine (mean-pooled) against the reference's hidden states."""
    out = dict.fromkeys(("loss", "perplexity", "kl", "top1", "cosine", "embedding_cosine"))
    if ref is not None:
        with torch.inference_mode():
            other = ref.hidden.to(hidden.device)
            out["cosine"] = float(torch.cosine_similarity(hidden.double(), other.double(), dim=-1).mean())
            pooled = torch.cosine_similarity(hidden.double().mean(0), other.double().mean(0), dim=0)
            out["embedding_cosine"] = float(pooled)
    return out


def evaluate(
    model: LoadedModel, text_ids: Sequence[int], reference: LoadedModel | Reference | None = None
) -> Evaluation:
    """How well ``model`` reads ``text_ids`` (2 .. ``model.max_positions`` ids, special tokens included), in one
    forward pass; ``reference`` is the model to compare with (usually the unedited one), or its
    :func:`reference_of` over the same ids (compute it once for many settings).

    A decoder predicts every next token: loss and perplexity, and against the reference the KL divergence
    and top-1 agreement of the ``T - 1`` next-token distributions (logits by blocks of rows). An encoder
    has no language-model head here (MiniLM ships as a sentence-embedding model, without its masked-LM
    head: read out through its tied input embeddings, masked tokens score worse than a uniform guess), so
    it is compared with the reference by the cosine similarity of its hidden states. Raises
    :class:`ConfigError` for a text too long or over the memory budget, or a reference over other ids.
    """
    t0 = time.perf_counter()
    ids = _checked_ids(model, text_ids)
    if isinstance(reference, LoadedModel):
        reference = reference_of(reference, ids)
    if reference is not None and (list(reference.ids) != ids or _vocab(reference.model) != _vocab(model)):
        raise ConfigError(
            "the reference must have read the same token ids with the same vocabulary", "reference", "eval_reference"
        )
    # the reference's own model (the same object) has read these ids already: its hidden states are the same
    hidden = reference.hidden if reference is not None and reference.model is model else _hidden(model, ids)
    scores = _decoder_scores(model, ids, hidden, reference) if model.causal else _encoder_scores(hidden, reference)
    return Evaluation(
        model=model.name,
        edits=tuple(_edit_label(fn, kw) for fn, kw in model.edits),
        n_tokens=len(ids),
        **scores,
        kv_bytes_per_token=kv_cache_bytes(model.n_layers, model.n_kv_heads, model.head_dim, 1, 1, "fp32"),
        kv_bytes=windowed_cache_bytes(kept_positions(model), model.n_kv_heads, model.head_dim, len(ids), 1, "fp32"),
        seconds=time.perf_counter() - t0,
    )


def kept_positions(model: LoadedModel) -> tuple[int | None, ...]:
    """The positions each layer's cache must keep at most (None: all): a sliding layer's window, an evicted
    cache's ``sinks + window``, the smaller of the two when both apply."""
    windows = model.layer_windows or (None,) * model.n_layers
    if model.streaming is None:
        return tuple(windows)
    cap = sum(model.streaming)
    return tuple(cap if w is None else min(w, cap) for w in windows)


def _edit_label(fn: Any, kwargs: tuple[tuple[str, Any], ...]) -> str:
    """``pool_kv_heads(n_kv_heads=1, method='mean', seed=0)``: an edit as text."""
    return f"{fn.__name__}({', '.join(f'{k}={v!r}' for k, v in kwargs)})"
