"""The surgery page's view model: one change at a time to a trained model, what it costs, and its maps beside the
original's; a model card from a configuration alone.

A view (:data:`PAGE_VIEWS`) measures a sweep of :class:`Setting` s over an evaluation text
(:func:`sweep`): every number of KV heads by each pooling method, the score scale from ¼ to 4 times the model's
own and none at all, each head of a layer silenced, a cache evicted to a window with and without attention sinks
(:mod:`attn_core.pretrained.surgery`). :func:`measure` is one setting (the page runs it through ``ui.compute``,
cached for the server, in a live run that queues a class's runs); the chosen setting's maps are captured beside the
original's (:func:`map_pair`, drawn by the heat-map grid). The model card (:func:`card_of`) reads a ``config.json``
or a GGUF header, never a weight. Every sentence is chosen from the measured numbers.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from attn_core import figures
from attn_core.attention.longmaps import PooledMaps, pooled_attention
from attn_core.figures import kv as kvfig
from attn_core.figures import surgery as sf
from attn_core.kv.convert import METHODS
from attn_core.kv.memory import kv_cache_bytes
from attn_core.pretrained import card as cards
from attn_core.pretrained import store
from attn_core.pretrained import surgery as sg
from attn_core.pretrained.models import LoadedModel, load_model, model_attention, score_scale, special_frame
from attn_core.pretrained.texts import eval_text
from attn_core.runtime.config import MAX_HEADS, ConfigError, attention_kind, divisors
from attn_core.runtime.guard import stays_on_device
from attn_core.runtime.units import format_bytes, format_tokens
from attn_core.views import models as mv
from attn_core.views.base import (  # noqa: F401 - with_values for the page
    PageChecks,
    Scenario,
    View,
    check_choices,
    control,
    matrix_frame,
    view_list,
    with_values,
)

MODELS = ("smollm2-135m", "minilm-l6", "gemma3-270m")
TEXTS = ("en", "zh", "own")
VIEW_FIELD = "view"
PAGE_VIEWS = ("kv_heads", "scale", "ablate", "evict", "card")
VIEW_NAMES = PAGE_VIEWS
FACTORS = ("0.25", "0.5", "2", "4", "none")  # the factors a page can show (1, the model's own scale, is the original)
SWEEP_FACTORS = (0.25, 0.5, 2.0, 4.0, None)  # measured by the scale view (None: no 1/√d_k at all)
KV_CHOICES = ("1", "2", "3", "4", "6")  # the divisors any shipped model pools to (MiniLM's 12: 1, 2, 3, 4, 6)
SINKS = (0, 4)  # StreamingLLM without attention sinks, and with its four (Xiao et al. 2023)
CARD_SOURCES = ("shipped", "paste", "upload")
DEFAULT_LAYERS = {"smollm2-135m": 17, "minilm-l6": 3, "gemma3-270m": 5}  # SmolLM2: three induction heads (3-5)
DEFAULT_HEADS = {"smollm2-135m": 3}
OWN_TEXT_CHARS = 20_000
CONFIG_CHARS = 100_000  # a pasted config.json (DeepSeek-V3's is about 1,700 characters)
MAX_LAYERS = 256
# tokens of the maps, every one labelled: two panels in the page's column beside its controls at 1280 px (a slide: at
# 20 px); an evicted cache's maps read the whole text, pooled to as many blocks a side
MAP_TOKENS = {False: 16, True: 12}
EVICT_MAP_SIDE = {False: 16, True: 8}  # blocks of 32 and 64 of 512 tokens: short range labels
PROSE_LINE = 40  # the maps read the text from its first line this long (after a title and a chapter heading)
STAT_TOKENS = 256  # the scale view's largest weight and entropy per layer: over the text's first tokens
ROLL = 64  # tokens in the running window of the perplexity against the position
ROLE_MIN = 0.5  # a head scoring at least this (models page's roles, head_scores) is called a head of that role
STANDS_OUT = 2.0  # a silenced head stands out when it hurts at least this many times the layer's median head
ROLES = ("previous_token", "induction")
CARD_DTYPE = "fp16"
CARD_LENGTHS = tuple(2**p for p in range(0, 21))
LLAMA3_CONFIG = json.dumps(
    {
        "architectures": ["LlamaForCausalLM"],
        "hidden_size": 4096,
        "intermediate_size": 14336,
        "max_position_embeddings": 8192,
        "model_type": "llama",
        "num_attention_heads": 32,
        "num_hidden_layers": 32,
        "num_key_value_heads": 8,
        "rms_norm_eps": 1e-05,
        "rope_theta": 500000.0,
        "tie_word_embeddings": False,
        "vocab_size": 128256,
    },
    indent=1,
)  # Meta-Llama-3-8B's config.json, the fields a card reads


@dataclass(frozen=True)
class Params:
    """Everything the page's controls set; the field names are the URL keys."""

    model: str = control(
        "smollm2-135m",
        "choice",
        options=MODELS,
        help="help.sg_model",
        cli_help="smollm2-135m, minilm-l6 or gemma3-270m",
    )
    view: str = control("kv_heads", "choice", options=PAGE_VIEWS, help="help.sg_view")
    sg_text: str = control(
        "en", "choice", options=TEXTS, help="help.sg_text", cli_help="the evaluation text: en, zh or own (--sg-own)"
    )
    sg_own: str = control(
        "", "text", hi=OWN_TEXT_CHARS, cli_help="your own evaluation text", implies=(("sg_text", "own"),)
    )
    sg_tokens: int = control(
        512, "pow2", lo=128, hi=4096, help="help.sg_tokens", cli_help="tokens of the text read (at most)"
    )
    sg_kv: str = control("1", "choice", options=KV_CHOICES, help="help.sg_kv", cli_help="KV heads after pooling")
    sg_method: str = control("mean", "choice", options=METHODS, help="help.sg_method", cli_help="mean, first, random")
    sg_factor: str = control(
        "none", "choice", options=FACTORS, help="help.sg_factor", cli_help="factor on 1/sqrt(d_k): 0.25 .. 4, none"
    )
    sg_layer: int | None = control(
        None, "int", lo=0, hi=MAX_LAYERS - 1, data=True, help="help.sg_layer", cli_help="the layer (maps, ablation)"
    )
    sg_head: int | None = control(
        None, "int", lo=0, hi=MAX_HEADS - 1, data=True, help="help.sg_head", cli_help="the head (maps; silenced)"
    )
    sg_group: bool = control(False, "bool", help="help.sg_group", cli_help="silence the head's whole KV group")
    sg_window: int = control(128, "pow2", lo=16, hi=2048, help="help.sg_window", cli_help="recent tokens kept (w)")
    sg_sinks: str = control("4", "choice", options=("0", "4"), help="help.sg_sinks", cli_help="sinks in the maps (k)")
    sg_card: str = control(
        "shipped", "choice", options=CARD_SOURCES, help="help.sg_card", cli_help="shipped or paste (--sg-config)"
    )
    sg_config: str = control(
        LLAMA3_CONFIG, "text", hi=CONFIG_CHARS, cli_help="a config.json's text", implies=(("sg_card", "paste"),)
    )
    sg_card_len: int = control(
        8192, "pow2", lo=256, hi=2**20, help="help.sg_card_len", cli_help="the sequence length of the card's cache"
    )
    seed: int = control(0, "seed", cli_help="the seed of random pooling")

    def __post_init__(self) -> None:
        check_choices(self)

    def layer_of(self, model: LoadedModel) -> int:
        """The layer chosen (within the model's layers), else the model's default (:data:`DEFAULT_LAYERS`)."""
        if self.sg_layer is None:
            return min(DEFAULT_LAYERS.get(model.name, model.n_layers // 2), model.n_layers - 1)
        return min(max(0, int(self.sg_layer)), model.n_layers - 1)

    def head_of(self, model: LoadedModel) -> int:
        if self.sg_head is None:
            return min(DEFAULT_HEADS.get(model.name, 0), model.n_heads - 1)
        return min(max(0, int(self.sg_head)), model.n_heads - 1)


def default_layer(model: LoadedModel) -> int:
    return Params().layer_of(model)


def default_head(model: LoadedModel) -> int:
    return Params().head_of(model)


def kv_choices(model: LoadedModel) -> list[str]:
    """The numbers of KV heads the model's can be pooled to (its divisors below it): SmolLM2 ``["1"]``, MiniLM
    ``["1", "2", "3", "4", "6"]``, Gemma 3 none (it has one already)."""
    return [str(d) for d in divisors(model.n_kv_heads) if d < model.n_kv_heads]


# ---------------------------------------------------------------- the text read
@dataclass(frozen=True)
class EvalInput:
    """The token ids a model reads (its special tokens around the text), and how many the text had before the cut."""

    model: str
    source: str
    ids: tuple[int, ...]
    n_text: int
    prefix: tuple[int, ...] = ()
    prose: tuple[int, ...] = ()  # the first tokens of the text's first paragraph of prose: what the maps read

    @property
    def cut(self) -> bool:
        return self.n_text > len(self.ids)


def eval_input(model: LoadedModel, p: Params) -> EvalInput:
    """The first ``p.sg_tokens`` tokens (at most the model's positions) of the shipped text or the user's own, and
    the first tokens of its first line of prose (:data:`PROSE_LINE` characters or more; else of the text)."""
    text = p.sg_own if p.sg_text == "own" else eval_text(p.sg_text)
    if not text or not text.strip():
        raise ConfigError("the text has no tokens; type some words", "sg_own", "no_tokens")
    prefix, suffix = special_frame(model.tokenizer)
    body = list(model.tokenizer(text, add_special_tokens=False, verbose=False)["input_ids"])
    room = min(int(p.sg_tokens), model.max_positions) - len(prefix) - len(suffix)
    ids = [int(i) for i in prefix + body[: max(0, room)] + suffix]
    if len(ids) < 2 or not body:
        raise ConfigError("the text has no tokens; type some words", "sg_own", "no_tokens")
    start = next((m.start() for m in re.finditer(rf"^.{{{PROSE_LINE},}}$", text, re.M)), 0)
    prose = model.tokenizer(text[start:], add_special_tokens=False, verbose=False)["input_ids"][
        : max(MAP_TOKENS.values())
    ]
    n = len(prefix) + len(body) + len(suffix)
    return EvalInput(model.name, p.sg_text, tuple(ids), n, tuple(prefix), tuple(int(i) for i in prose))


# ---------------------------------------------------------------- settings and their measurement
@dataclass(frozen=True)
class Setting:
    """One change: ``kind`` ``original``, ``pool`` (n_kv, method, seed: the seed of random heads, else 0),
    ``scale`` (factor or None), ``ablate`` (layer, heads) or ``evict`` (window, sinks), its arguments in ``args``."""

    kind: str
    args: tuple = ()

    def apply(self, model: LoadedModel) -> LoadedModel:
        if self.kind == "pool":
            return sg.pool_kv_heads(model, self.args[0], self.args[1], seed=self.args[2])
        if self.kind == "scale":
            return sg.scale_scores(model, self.args[0])
        if self.kind == "ablate":
            return sg.ablate_heads(model, self.args[0], list(self.args[1]))
        if self.kind == "evict":
            return sg.evict_cache(model, self.args[0], self.args[1])
        return model


ORIGINAL = Setting("original")


@dataclass(frozen=True)
class Measured:
    """One setting's :class:`~attn_core.pretrained.surgery.Evaluation` and, for the scale view, each layer's mean
    largest weight and entropy over the text's first :data:`STAT_TOKENS` tokens (``layers``); the step
    ``Setting("roles", (seed,))`` holds every head's role scores (``roles``) instead of an evaluation."""

    setting: Setting
    evaluation: sg.Evaluation | None
    layers: pd.DataFrame | None = field(default=None, compare=False)
    roles: pd.DataFrame | None = field(default=None, compare=False)


@stays_on_device  # bound to the model's device: an out-of-memory error is a message, not a CPU retry
def reference(model: LoadedModel, ids: tuple[int, ...], *, device: str = "cpu") -> sg.Reference:
    """The original model's reading of ``ids``, what every setting is compared with (computed once per text)."""
    return sg.reference_of(model, ids)


@stays_on_device
def measure(
    model: LoadedModel,
    ids: tuple[int, ...],
    setting: Setting,
    *,
    reference: sg.Reference | Callable[[], sg.Reference | None] | None = None,
    device: str = "cpu",
) -> Measured:
    """``setting`` applied to ``model``, evaluated on ``ids`` against ``reference`` (or a function giving it, called
    only here, when the result is not cached); the scale view's settings also measure each layer's softmax."""
    if setting.kind == "roles":  # the models page's head roles: the silenced heads' chart names them
        return Measured(setting, None, roles=roles(model, setting.args[0], device=device))
    ref = reference() if callable(reference) else reference
    edited = setting.apply(model)
    ev = sg.evaluate(edited, ids, ref)
    layers = None
    if setting.kind == "scale" or (setting.kind == "original" and setting.args == ("layers",)):
        att = model_attention(edited, "", None, with_weights=False, ids=list(ids[:STAT_TOKENS]))
        layers = score_scale(att)[["layer", "max_weight", "entropy", "saturated"]]
    return Measured(setting, ev, layers)


def sweep(p: Params, model: LoadedModel) -> tuple[Setting, ...]:
    """The settings a view measures, the original first and the chosen one next (its numbers come first)."""
    chosen = chosen_setting(p, model)
    if p.view == "evict" and not model.causal:
        return ()  # an encoder keeps no cache
    if p.view == "kv_heads":
        rest = [pool_setting(int(n), m, p.seed) for n in kv_choices(model)[::-1] for m in METHODS]
    elif p.view == "scale":
        rest = [Setting("scale", (f,)) for f in SWEEP_FACTORS]
    elif p.view == "ablate":
        layer = p.layer_of(model)
        rest = [Setting("ablate", (layer, (h,))) for h in range(model.n_heads)] + [Setting("roles", (p.seed,))]
    elif p.view == "evict" and model.causal:
        rest = [Setting("evict", (int(p.sg_window), k)) for k in SINKS]
    else:
        rest = []
    first = Setting("original", ("layers",)) if p.view == "scale" else ORIGINAL
    ordered = [first] + ([chosen] if chosen is not None else []) + rest
    return tuple(dict.fromkeys(ordered))


def chosen_setting(p: Params, model: LoadedModel) -> Setting | None:
    """The one change the page shows (maps, before and after); None where the view has none for this model."""
    if p.view == "kv_heads":
        choices = kv_choices(model)
        return pool_setting(int(p.sg_kv), p.sg_method, p.seed) if p.sg_kv in choices else None
    if p.view == "scale":
        return Setting("scale", (None if p.sg_factor == "none" else float(p.sg_factor),))
    if p.view == "ablate":
        layer, head = p.layer_of(model), p.head_of(model)
        heads = group_heads(model, head) if p.sg_group else (head,)
        return Setting("ablate", (layer, heads))
    if p.view == "evict" and model.causal:
        return Setting("evict", (int(p.sg_window), int(p.sg_sinks)))
    return None


def pool_setting(n_kv: int, method: str, seed: int) -> Setting:
    """Pooling to ``n_kv`` KV heads by ``method``; the seed matters only to new random heads."""
    return Setting("pool", (n_kv, method, int(seed) if method == "random" else 0))


def group_heads(model: LoadedModel, head: int) -> tuple[int, ...]:
    """The query heads that read the same KV head as ``head``."""
    g = model.kv_head(head)
    return tuple(range(g * model.n_rep, (g + 1) * model.n_rep))


def measure_all(
    model: LoadedModel, inp: EvalInput, settings: Sequence[Setting], device: str = "cpu"
) -> Iterator[Measured]:
    """Every setting measured in turn, against the original's reading computed once (the command line's sweep)."""
    ref = reference(model, inp.ids, device=device)
    for s in settings:
        yield measure(model, inp.ids, s, reference=ref, device=device)


# ---------------------------------------------------------------- maps: the original's beside the changed model's
@dataclass(frozen=True)
class MapPair:
    """Every head's weights in ``layer`` of the original (``before``) and of the changed model (``after``) over the
    same tokens, pooled alike; ``change`` ``[H]``: each head's largest change of a weight (masked cells as 0)."""

    before: PooledMaps
    after: PooledMaps
    layer: int
    change: tuple[float, ...]


@stays_on_device
def map_pair(
    model: LoadedModel, ids: tuple[int, ...], setting: Setting, layer: int, max_side: int, *, device: str = "cpu"
) -> MapPair:
    """``layer``'s maps over ``ids`` before and after ``setting`` (each captured by one forward pass that stops at
    the layer), pooled to at most ``max_side`` cells a side."""
    pooled = []
    for m in (model, setting.apply(model)):
        att = model_attention(m, "", layer, with_weights=False, ids=list(ids))
        pooled.append(pooled_attention(att.source(layer), max_side=max_side, device=device))
    a, b = (np.nan_to_num(pm.weights, nan=0.0) for pm in pooled)
    change = np.abs(a - b).reshape(a.shape[0], -1).max(axis=1)
    return MapPair(pooled[0], pooled[1], layer, tuple(float(c) for c in change))


def maps_layer(p: Params, model: LoadedModel) -> int:
    """The layer whose maps are compared: the chosen layer; for a silenced head the next one, the first that
    reads what the silenced heads no longer write (the last layer has none after it)."""
    layer = p.layer_of(model)
    return min(layer + 1, model.n_layers - 1) if p.view == "ablate" else layer


def map_ids(p: Params, inp: EvalInput, style: figures.Style) -> tuple[tuple[int, ...], int]:
    """(the ids the maps read, cells a side): the first tokens of the text's prose, labelled every one; an evicted
    cache's maps read the whole text (what is evicted is far back), pooled."""
    if p.view == "evict":
        return inp.ids, EVICT_MAP_SIDE[style.present]
    n = MAP_TOKENS[style.present]
    return (inp.prefix + inp.prose)[:n], n


def shown_head(p: Params, model: LoadedModel, pair: MapPair) -> int:
    """The head whose maps are drawn: the chosen one; for a silenced head, the head of the next layer whose map
    changed most."""
    if p.view == "ablate" and pair.layer != p.layer_of(model):
        return int(np.argmax(pair.change))
    return p.head_of(model)


HEX_LABEL = re.compile(r"^<([0-9A-F]{2}(?: [0-9A-F]{2})*)>$")
SUBSCRIPTS = str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉")


def piece_labels(tokens: Sequence[str]) -> list[str]:
    """Token labels with a character split over several byte tokens (SmolLM2 on Chinese: ``<E6 9B>``, ``<B0>``)
    written as that character's pieces, ``曰₁``, ``曰₂``: as honest as the hex, and short enough to label a map."""
    out = list(tokens)
    i = 0
    while i < len(out):
        raw, j = b"", i
        while j < len(out) and (m := HEX_LABEL.match(out[j])):
            raw += bytes.fromhex(m.group(1).replace(" ", ""))
            j += 1
            try:
                char = raw.decode("utf-8")
            except UnicodeDecodeError:
                continue
            if len(char) == 1 and j - i > 1:
                out[i:j] = [f"{char}{str(k + 1).translate(SUBSCRIPTS)}" for k in range(j - i)]
            break
        i = max(j, i + 1)
    return out


def pair_view(pair: MapPair, head: int, names: tuple[str, str], title: str, style: figures.Style) -> View:
    """One head's map before and after, side by side on one colour scale from 0 to 1 (pooled maps: each cell the
    largest weight of its block, said under the title; on a slide at the title's size)."""
    pm = pair.before
    (q0, q1), (k0, k1), f = pm.q_range, pm.k_range, pm.factor
    before, after = pair.before.weights[head], pair.after.weights[head]
    value = style.t("fig.weight")
    if f > 1:
        how = style.t(f"fig.how.{pm.reduce}")
        r, c = before.shape
        note = style.t("fig.grid_pooled", how=how, f=f, tq=q1 - q0, tk=k1 - k0, r=r, c=c)
        title += f" · {style.t('surgery.map_blocks', f=f)}" if style.present else f"<br><sub>{note}</sub>"
        value = style.t(f"fig.block_{pm.reduce}")
    cmax = 1.0
    tokens_q, tokens_k = piece_labels(pm.tokens_q), piece_labels(pm.tokens_k)
    labels = (figures.block_labels(tokens_q, q0, q1, f), figures.block_labels(tokens_k, k0, k1, f))
    fig = sf.pair_maps_figure((before, after), labels, names, title, cmax, value, style)

    def frame() -> pd.DataFrame:
        parts = []
        for name, w in zip(("original", "changed"), (before, after), strict=True):
            part = matrix_frame(w, labels[0], labels[1], "query", "key", "weight")
            parts.append(part.assign(model=name))
        return pd.concat(parts, ignore_index=True)

    return View(f"surgery_maps_layer{pair.layer}_head{head}", fig, frame)


# ---------------------------------------------------------------- numbers into words
def quality(ev: sg.Evaluation) -> float:
    """A decoder's perplexity, or an encoder's cosine to the original's hidden states (NaN: not measured)."""
    v = ev.perplexity if ev.perplexity is not None else ev.cosine
    return float(v) if v is not None else math.nan


def q_text(v: float, decoder: bool) -> str:
    """A quality as the page writes it: a perplexity to 3-4 figures, a cosine to 4 decimals."""
    if not math.isfinite(v):
        return "–"
    if not decoder:
        return f"{v:.4f}"
    return f"{v:,.0f}" if v >= 1000 else f"{v:.3g}" if v >= 100 else f"{v:.2f}"


def q_word(model: LoadedModel, style: figures.Style) -> str:
    return style.t("surgery.q_ppl" if model.causal else "surgery.q_cos")


def kind_of(model: LoadedModel, n_kv: int) -> str:
    return attention_kind(model.n_heads, n_kv)


def factor_text(factor: float | None, style: figures.Style) -> str:
    """×¼, ×½, ×2, ×4, or "no 1/√d_k"."""
    if factor is None:
        return style.t("opt.sg_factor.none")
    return {0.25: "×¼", 0.5: "×½", 1.0: "×1"}.get(factor, f"×{factor:g}")


def heads_text(heads: Sequence[int]) -> str:
    heads = list(heads)
    if len(heads) > 2 and heads == list(range(heads[0], heads[-1] + 1)):
        return f"{heads[0]}–{heads[-1]}"
    return ", ".join(str(h) for h in heads)


def setting_label(s: Setting, model: LoadedModel, style: figures.Style) -> str:
    """A setting in a few words: "1 KV head (MQA), mean", "×2", "head 3 silenced", "w = 256, k = 4"."""
    t = style.t
    if s.kind == "pool":
        n, method = s.args[0], s.args[1]
        return t(
            "surgery.s_pool", kv=style.count(n, "kv_head"), kind=kind_of(model, n), method=t(f"opt.sg_method.{method}")
        )
    if s.kind == "scale":
        return factor_text(s.args[0], style)
    if s.kind == "ablate":
        layer, heads = s.args
        key = "surgery.s_ablate_one" if len(heads) == 1 else "surgery.s_ablate_many"
        return t(key, heads=heads_text(heads), layer=layer)
    if s.kind == "evict":
        return t("surgery.s_evict", w=s.args[0], k=s.args[1])
    if s.kind == "roles":
        return t("surgery.s_roles")
    return t("surgery.s_original")


def progress(settings: Sequence[Setting], done: int, model: LoadedModel, style: figures.Style) -> tuple[float, str]:
    """(fraction, text) of a sweep of ``settings`` with ``done`` measured."""
    n = len(settings)
    if done >= n:
        return 1.0, style.t("surgery.progress_done", n=n)
    what = setting_label(settings[done], model, style)
    key = "surgery.progress_first" if done == 0 else "surgery.progress"
    return done / n, style.t(key, i=done + 1, n=n, what=what, title=model.title)


def by_setting(results: Sequence[Measured | None]) -> dict[Setting, Measured]:
    """The measured settings (a setting measured with its layers counts as the original too)."""
    out: dict[Setting, Measured] = {}
    for r in results:
        if not isinstance(r, Measured):
            continue
        out[r.setting] = r
        if r.setting.kind == "original":
            out[ORIGINAL] = r
    return out


def before_after(model: LoadedModel, orig: Measured, new: Measured, style: figures.Style) -> str:
    """One line: the quality and the KV cache before and after the change (the cache for the text read)."""
    t, dec = style.t, model.causal
    a, b = orig.evaluation, new.evaluation
    parts = [t("surgery.ba_quality", what=q_word(model, style), a=q_text(quality(a), dec), b=q_text(quality(b), dec))]
    if dec and b.kl is not None:
        parts.append(t("surgery.ba_kl", kl=f"{b.kl:.3g}", top1=f"{b.top1:.0%}"))
    if b.kv_bytes != a.kv_bytes:
        saved = 1 - b.kv_bytes / a.kv_bytes
        parts.append(
            t(
                "surgery.ba_bytes",
                a=format_bytes(a.kv_bytes),
                b=format_bytes(b.kv_bytes),
                saved=f"{saved:.0%}",
                n=a.n_tokens,
            )
        )
    else:
        parts.append(t("surgery.ba_same_bytes", b=format_bytes(a.kv_bytes), n=a.n_tokens))
    return t("surgery.ba", what=setting_label(new.setting, model, style)) + " " + " · ".join(parts)


def verdict(model: LoadedModel, before: float, after: float) -> str:
    """``keeps``, ``costs`` or ``breaks``: a perplexity within 5 % / within twice / beyond (a cosine to the original
    of at least 0.99 / 0.9 / below)."""
    if model.causal:
        r = after / before if before > 0 else math.inf
        return "keeps" if r <= 1.05 else "costs" if r <= 2 else "breaks"
    return "keeps" if after >= 0.99 else "costs" if after >= 0.9 else "breaks"


# ---------------------------------------------------------------- KV heads
def kv_rows(got: dict[Setting, Measured], model: LoadedModel, seed: int) -> list[tuple[int, dict[str, float], int]]:
    """(KV heads, {method: quality}, KV bytes per token) for the original count and each divisor below it."""
    orig = got.get(ORIGINAL)
    rows = []
    for n in [model.n_kv_heads] + [int(c) for c in kv_choices(model)[::-1]]:
        qs: dict[str, float] = {}
        per_token = kv_cache_bytes(model.n_layers, n, model.head_dim, 1, 1, "fp32")
        for m in METHODS:
            r = got.get(ORIGINAL if n == model.n_kv_heads else pool_setting(n, m, seed))
            if n == model.n_kv_heads and orig is None:
                r = None
            qs[m] = quality(r.evaluation) if r is not None else math.nan
        rows.append((n, qs, per_token))
    return rows


def kv_table(got: dict[Setting, Measured], model: LoadedModel, seed: int, style: figures.Style) -> pd.DataFrame:
    """Every number of KV heads: its kind, the KV cache per token, what it saves, the quality by each method."""
    t = style.t
    rows, out = kv_rows(got, model, seed), []
    full = rows[0][2]
    for n, qs, per_token in rows:
        row = {
            t("surgery.col_kv"): f"{n} · {kind_of(model, n)}",
            t("surgery.col_bytes"): format_bytes(per_token),
            t("surgery.col_saved"): f"{1 - per_token / full:.0%}",
        }
        for m in METHODS:
            row[t("surgery.col_method", what=q_word(model, style), method=t(f"opt.sg_method.{m}"))] = q_text(
                qs[m], model.causal
            )
        out.append(row)
    return pd.DataFrame(out)


def kv_view(got: dict[Setting, Measured], p: Params, model: LoadedModel, style: figures.Style) -> View:
    """The quality at each number of KV heads by each pooling method, the original as a line."""
    t = style.t
    rows = kv_rows(got, model, p.seed)[1:]
    labels = tuple(f"{n} · {kind_of(model, n)} ({format_bytes(b)}{t('surgery.per_token')})" for n, _, b in rows)
    chosen = None
    for i, (n, _, _) in enumerate(rows):
        if str(n) == p.sg_kv:
            chosen = (i, METHODS.index(p.sg_method))
    orig = got.get(ORIGINAL)
    chart = sf.KvChart(
        labels=labels,
        methods=METHODS,
        method_names=tuple(t(f"opt.sg_method.{m}") for m in METHODS),
        values=tuple(tuple(qs[m] for m in METHODS) for _, qs, _ in rows),
        original=quality(orig.evaluation) if orig is not None else None,
        original_name=t("surgery.s_original_n", n=model.n_kv_heads),
        title=t("surgery.kv_title", title=model.title, n=model.n_kv_heads),
        x_title=t("surgery.kv_axis"),
        y_title=q_word(model, style),
        log_y=model.causal,
        chosen=chosen,
    )
    data = pd.DataFrame(
        [
            {"kv_heads": n, "method": m, "kv_bytes_per_token_fp32": b, "quality": qs[m]}
            for n, qs, b in kv_rows(got, model, p.seed)
            for m in METHODS
        ]
    )
    return View(f"surgery_kv_heads_{model.name}", sf.kv_quality_figure(chart, style), data)


def kv_lines(got: dict[Setting, Measured], p: Params, model: LoadedModel, style: figures.Style) -> list[str]:
    """The chosen pooling's cost, and the methods in the order the numbers put them."""
    t, dec = style.t, model.causal
    orig, new = got.get(ORIGINAL), got.get(chosen_setting(p, model))
    if orig is None or new is None:
        return []
    a, b = quality(orig.evaluation), quality(new.evaluation)
    n = int(p.sg_kv)
    lines = [
        t(
            f"surgery.kv_{verdict(model, a, b)}",
            title=model.title,
            n0=model.n_kv_heads,
            n=style.count(n, "kv_head"),
            kind=kind_of(model, n),
            method=t(f"opt.sg_method.{p.sg_method}"),
            what=q_word(model, style),
            a=q_text(a, dec),
            b=q_text(b, dec),
            saved=f"{1 - n / model.n_kv_heads:.0%}",
        )
    ]
    qs = {m: got[pool_setting(n, m, p.seed)] for m in METHODS if pool_setting(n, m, p.seed) in got}
    if len(qs) == len(METHODS):
        order = sorted(METHODS, key=lambda m: quality(qs[m].evaluation) * (1 if dec else -1))
        sep = " < " if dec else " > "
        ranked = sep.join(f"{t(f'opt.sg_method.{m}')} {q_text(quality(qs[m].evaluation), dec)}" for m in order)
        lines.append(t("surgery.kv_order", n=style.count(n, "kv_head"), order=ranked, what=q_word(model, style)))
    return lines


def mqa_view(model: LoadedModel, style: figures.Style) -> View:
    """A model with one KV head (MQA): its query heads, every one reading that head."""
    title = style.t("surgery.mqa_title", title=model.title, h=model.n_heads)
    fig = kvfig.kv_diagram([0] * model.n_heads, 1, style, title)
    return View(f"surgery_heads_{model.name}", fig, pd.DataFrame({"query_head": range(model.n_heads), "kv_head": 0}))


def kv_notes(model: LoadedModel, style: figures.Style) -> list[str]:
    """What the KV-heads view cannot do for this model, or how it measures it."""
    t = style.t
    if model.n_kv_heads == 1:
        return [t("surgery.kv_mqa", title=model.title, h=model.n_heads)]
    return [] if model.causal else [t("surgery.encoder_quality", title=model.title)]


# ---------------------------------------------------------------- the score scale
def own_scale(model: LoadedModel) -> float:
    """The factor the model's first layer applies to q·k (1/√d_k; Gemma 3: query_pre_attn_scalar^-½)."""
    return sg.scale_of(model, 0)


def scale_points(model: LoadedModel) -> tuple[tuple[float | None, float], ...]:
    """(factor as measured, where it sits on the axis) from ×¼ to ×4 and no scale at all (at 1 / the own scale)."""
    pts = [(f, f) for f in (0.25, 0.5)] + [(1.0, 1.0)] + [(f, f) for f in (2.0, 4.0)]
    return (*pts, (None, 1 / own_scale(model)))


def scale_setting(factor: float | None) -> Setting:
    return ORIGINAL if factor == 1.0 else Setting("scale", (factor,))


def scale_views(got: dict[Setting, Measured], p: Params, model: LoadedModel, style: figures.Style) -> list[View]:
    """The quality against the factor, and each layer's largest weight and entropy at every factor."""
    t = style.t
    pts = scale_points(model)
    chosen_f = None if p.sg_factor == "none" else float(p.sg_factor)
    vals = [quality(got[scale_setting(f)].evaluation) if scale_setting(f) in got else math.nan for f, _ in pts]
    none_at = 1 / own_scale(model)
    ticks = [factor_text(f, style) if f is not None else t("surgery.none_tick", x=f"{none_at:.3g}") for f, _ in pts]
    chart = sf.ScaleChart(
        factors=tuple(x for _, x in pts),
        ticks=tuple(ticks),
        values=tuple(vals),
        title=t("surgery.scale_title", title=model.title, d=model.head_dim, s=f"{own_scale(model):.4g}"),
        x_title=t("surgery.scale_axis"),
        y_title=q_word(model, style),
        log_y=model.causal,
        chosen=next(i for i, (f, _) in enumerate(pts) if f == chosen_f),
    )
    data = pd.DataFrame({"factor": [f for f, _ in pts], "on_axis": [x for _, x in pts], "quality": vals})
    out = [View(f"surgery_scale_{model.name}", sf.scale_quality_figure(chart, style), data)]
    stats = [(f, got.get(Setting("original", ("layers",)) if f == 1.0 else scale_setting(f))) for f, _ in pts]
    stats = [(f, m) for f, m in stats if m is not None and m.layers is not None]
    if stats:
        order = sorted(stats, key=lambda fm: fm[0] != 1.0)  # the original first
        names = tuple(t("surgery.s_own") if f == 1.0 else factor_text(f, style) for f, _ in order)
        tables = [m.layers for _, m in order]
        layers = sf.LayerStats(
            layers=tuple(int(v) for v in tables[0].layer),
            names=names,
            max_weight=tuple(tuple(float(v) for v in tab.max_weight) for tab in tables),
            entropy=tuple(tuple(float(v) for v in tab.entropy) for tab in tables),
            titles=(t("surgery.stat_max"), t("surgery.stat_entropy")),
            title=t("surgery.stats_title", n=min(STAT_TOKENS, order[0][1].evaluation.n_tokens)),
            x_title=t("models.axis_layer"),
            chosen=next((i for i, (f, _) in enumerate(order) if f == chosen_f), None),
        )
        frame = pd.concat([m.layers.assign(factor=f) for f, m in order], ignore_index=True)
        out.append(View(f"surgery_scale_layers_{model.name}", sf.layer_stats_figure(layers, style), frame))
    return out


def scale_lines(got: dict[Setting, Measured], p: Params, model: LoadedModel, style: figures.Style) -> list[str]:
    """The chosen factor's cost, the best factor measured, and what the softmax does on average."""
    t, dec = style.t, model.causal
    chosen = chosen_setting(p, model)
    orig, new = got.get(ORIGINAL), got.get(chosen)
    if orig is None or new is None:
        return []
    a, b = quality(orig.evaluation), quality(new.evaluation)
    factor = chosen.args[0]
    lines = [
        t(
            f"surgery.scale_{verdict(model, a, b)}",
            change=t("surgery.scale_times", f=factor_text(factor, style), d=model.head_dim)
            if factor is not None
            else t("surgery.scale_drop", d=model.head_dim),
            what=q_word(model, style),
            a=q_text(a, dec),
            b=q_text(b, dec),
        )
    ]
    measured = [(f, got[scale_setting(f)]) for f, _ in scale_points(model) if scale_setting(f) in got]
    if len(measured) == len(scale_points(model)):
        best_f, best = min(measured, key=lambda fm: quality(fm[1].evaluation) * (1 if dec else -1))
        key = "surgery.scale_best_own" if best_f == 1.0 else "surgery.scale_best_other"
        name = factor_text(best_f, style)
        lines.append(t(key, f=name, q=q_text(quality(best.evaluation), dec), own=q_text(a, dec)))
    base = got.get(Setting("original", ("layers",)))
    if base is not None and base.layers is not None and new.layers is not None:
        x, y = base.layers, new.layers
        lines.append(
            t(
                "surgery.scale_softmax",
                n=len(x),
                mw0=f"{x.max_weight.mean():.2f}",
                mw1=f"{y.max_weight.mean():.2f}",
                e0=f"{x.entropy.mean():.2f}",
                e1=f"{y.entropy.mean():.2f}",
                s0=f"{x.saturated.mean():.0%}",
                s1=f"{y.saturated.mean():.0%}",
            )
        )
    return lines


# ---------------------------------------------------------------- silencing heads
def roles(model: LoadedModel, seed: int, *, device: str = "cpu") -> pd.DataFrame:
    """Every head's role scores, as the models page's roles view measures them (:func:`attn_core.views.models.roles`)."""
    return mv.roles(model, seed, device=device)


def roles_of(got: dict[Setting, Measured]) -> pd.DataFrame | None:
    return next((m.roles for s, m in got.items() if s.kind == "roles"), None)


def hurt(model: LoadedModel, m: Measured) -> float:
    """How much a change hurts: a decoder's KL from the original (nats), an encoder's 1 − cosine."""
    ev = m.evaluation
    if model.causal:
        return float(ev.kl) if ev.kl is not None else math.nan
    return 1.0 - ev.cosine if ev.cosine is not None else math.nan


def layer_roles(df: pd.DataFrame | None, layer: int, n_heads: int) -> tuple[tuple[str, ...], dict[int, float]]:
    """Each head's role in ``layer`` ("" when it scores under :data:`ROLE_MIN` in both roles) and its score."""
    names, scores = [""] * n_heads, {}
    if df is None:
        return tuple(names), scores
    rows = df[df.layer == layer]
    for r in rows.itertuples():
        best = max(ROLES, key=lambda role: getattr(r, role))
        if getattr(r, best) >= ROLE_MIN:
            names[int(r.head)], scores[int(r.head)] = best, float(getattr(r, best))
    return tuple(names), scores


def ablation_values(got: dict[Setting, Measured], model: LoadedModel, layer: int) -> list[float]:
    out = []
    for h in range(model.n_heads):
        m = got.get(Setting("ablate", (layer, (h,))))
        out.append(hurt(model, m) if m is not None else math.nan)
    return out


def ablation_view(got: dict[Setting, Measured], p: Params, model: LoadedModel, style: figures.Style) -> View:
    """How much silencing each head of the layer hurts, heads coloured by KV group, roles hatched."""
    t, df = style.t, roles_of(got)
    layer = p.layer_of(model)
    values = ablation_values(got, model, layer)
    role_of, _ = layer_roles(df, layer, model.n_heads)
    chosen = chosen_setting(p, model).args[1]
    chart = sf.AblationChart(
        heads=tuple(range(model.n_heads)),
        values=tuple(values),
        groups=tuple(model.kv_head(h) for h in range(model.n_heads)),
        roles=role_of,
        role_names={r: t(f"surgery.role_{r}", th=f"{ROLE_MIN:g}") for r in ROLES},
        head_word=t("fig.head"),
        title=t("surgery.ablate_title", title=model.title, layer=layer),
        x_title=t("surgery.ablate_axis"),
        y_title=t("surgery.hurt_kl" if model.causal else "surgery.hurt_cos"),
        chosen=tuple(chosen),
    )
    data = pd.DataFrame(
        {"layer": layer, "head": range(model.n_heads), "kv_head": chart.groups, "hurt": values, "role": role_of}
    )
    return View(f"surgery_ablate_{model.name}_layer{layer}", sf.ablation_figure(chart, style), data)


def ablation_lines(got: dict[Setting, Measured], p: Params, model: LoadedModel, style: figures.Style) -> list[str]:
    """The chosen heads' cost, the heads that hurt most, and whether the layer's role heads stand out."""
    t, dec, df = style.t, model.causal, roles_of(got)
    layer, chosen = p.layer_of(model), chosen_setting(p, model)
    orig, new = got.get(ORIGINAL), got.get(chosen)
    lines = []
    if orig is not None and new is not None:
        a, b = quality(orig.evaluation), quality(new.evaluation)
        heads = chosen.args[1]
        key = "surgery.ablate_one" if len(heads) == 1 else "surgery.ablate_group"
        lines.append(
            t(
                key,
                heads=heads_text(heads),
                layer=layer,
                kv=model.kv_head(heads[0]),
                what=q_word(model, style),
                a=q_text(a, dec),
                b=q_text(b, dec),
                hurt=f"{hurt(model, new):.3g}",
            )
        )
    values = ablation_values(got, model, layer)
    if any(math.isnan(v) for v in values):
        return lines
    order = sorted(range(model.n_heads), key=lambda h: -values[h])
    median = float(np.median(values))
    top = t("surgery.sep").join(t("surgery.head_value", h=h, v=f"{values[h]:.3g}") for h in order[:3])
    lines.append(t("surgery.ablate_top", layer=layer, top=top, median=f"{median:.3g}"))
    return lines + role_lines(values, df, layer, model, style)


def role_lines(
    values: list[float], df: pd.DataFrame | None, layer: int, model: LoadedModel, style: figures.Style
) -> list[str]:
    """For each role with heads in the layer: whether they stand out (≥ :data:`STANDS_OUT` × the median head)."""
    t = style.t
    role_of, scores = layer_roles(df, layer, model.n_heads)
    median = float(np.median(values))
    ranks = {h: 1 + sorted(range(len(values)), key=lambda x: -values[x]).index(h) for h in range(len(values))}
    out = []
    for role in ROLES:
        heads = [h for h, r in enumerate(role_of) if r == role]
        if not heads:
            continue
        out_ = [h for h in heads if median > 0 and values[h] >= STANDS_OUT * median]
        key = "surgery.role_out" if len(out_) == len(heads) else "surgery.role_some" if out_ else "surgery.role_not"
        listed = t("surgery.sep").join(
            t("surgery.role_head", h=h, s=f"{scores[h]:.2f}", rank=ranks[h], n=len(values)) for h in heads
        )
        out.append(t(key, role=t(f"surgery.roles_{role}"), heads=listed, x=f"{STANDS_OUT:g}"))
    if not out and df is not None:
        best = t("surgery.sep").join(
            t("surgery.role_best", role=t(f"surgery.roles_{r}"), layer=la, h=h, s=f"{s:.2f}")
            for r in ROLES
            for la, h, s in mv.strongest(df, r, 1)
        )
        out.append(t("surgery.role_none", layer=layer, th=f"{ROLE_MIN:g}", best=best))
    return out


# ---------------------------------------------------------------- cache eviction
def block_size(n: int) -> int:
    """Tokens a point of the perplexity-against-position curve averages (at most 32 points, at least 32 tokens)."""
    return max(32, -(-n // 32))


def position_curve(losses: Sequence[float], block: int) -> tuple[list[int], list[float]]:
    """(the middle position of each block of ``block`` predicted tokens, the perplexity over the block)."""
    x = np.asarray(losses, dtype=np.float64)
    xs, ys = [], []
    for s in range(0, len(x), block):
        part = x[s : s + block]
        xs.append(int(s + 1 + len(part) // 2))  # the loss at index i predicts the token at position i + 1
        ys.append(float(np.exp(part.mean())))
    return xs, ys


def past(losses: Sequence[float], start: int) -> float:
    """The perplexity over the tokens predicted from position ``start`` on (NaN when there are none)."""
    x = np.asarray(losses, dtype=np.float64)[start:]
    return float(np.exp(x.mean())) if x.size else math.nan


def eviction_view(got: dict[Setting, Measured], p: Params, model: LoadedModel, style: figures.Style) -> View:
    """Perplexity against the position: the full cache, and the window of ``w`` with k = 0 and k = 4 sinks."""
    t = style.t
    w = int(p.sg_window)
    shown = [(None, got.get(ORIGINAL))] + [(k, got.get(Setting("evict", (w, k)))) for k in SINKS]
    shown = [(k, m) for k, m in shown if m is not None and m.evaluation.token_losses]
    n = max((len(m.evaluation.token_losses) for _, m in shown), default=1)
    block = block_size(n)
    curves = [position_curve(m.evaluation.token_losses, block) for _, m in shown]
    names = tuple(t("surgery.s_full") if k is None else t("surgery.s_evict", w=w, k=k) for k, _ in shown)
    marks = [(w, t("surgery.mark_full", w=w))] if w < n else []
    window = next((x for x in model.layer_windows if x is not None), None)
    if window is not None and window < n and window != w:
        marks.append((window, t("surgery.mark_local", w=window)))
    chart = sf.EvictionChart(
        positions=tuple(curves[0][0]) if curves else (),
        names=names,
        sinks=tuple(k for k, _ in shown),
        curves=tuple(tuple(c[1]) for c in curves),
        starts=tuple(None if k is None else w + k for k, _ in shown),
        marks=tuple(marks),
        title=t("surgery.evict_title", title=model.title, n=n + 1, w=w),
        x_title=t("surgery.evict_axis", b=block),
        y_title=t("surgery.evict_y"),
    )
    rows = [
        {"setting": name, "position": x, "perplexity": y}
        for name, (xs, ys) in zip(names, curves, strict=True)
        for x, y in zip(xs, ys, strict=True)
    ]
    return View(f"surgery_evict_{model.name}_w{w}", sf.eviction_figure(chart, style), pd.DataFrame(rows))


def eviction_lines(got: dict[Setting, Measured], p: Params, model: LoadedModel, style: figures.Style) -> list[str]:
    """The perplexity past the window without and with sinks, against the full cache's; what the cache keeps."""
    t = style.t
    w = int(p.sg_window)
    orig = got.get(ORIGINAL)
    runs = {k: got.get(Setting("evict", (w, k))) for k in SINKS}
    if orig is None or any(m is None for m in runs.values()):
        return []
    n = orig.evaluation.n_tokens
    if n <= w + max(SINKS):
        return [t("surgery.evict_short", n=n, w=w, k=max(SINKS))]
    start = w + max(SINKS)
    full, p0, p4 = (past(m.evaluation.token_losses, start) for m in (orig, runs[0], runs[4]))
    key = "surgery.evict_sinks_help" if p0 > 1.1 * p4 else "surgery.evict_sinks_same"
    lines = [t(key, w=w, start=start, n=n, full=q_text(full, True), p0=q_text(p0, True), p4=q_text(p4, True))]
    kept = runs[int(p.sg_sinks)].evaluation
    lines.append(
        t(
            "surgery.evict_bytes",
            k=int(p.sg_sinks),
            kept=w + int(p.sg_sinks),
            n=n,
            b=format_bytes(kept.kv_bytes),
            full=format_bytes(orig.evaluation.kv_bytes),
            saved=f"{1 - kept.kv_bytes / orig.evaluation.kv_bytes:.0%}",
        )
    )
    return lines


def window_note(model: LoadedModel, w: int, style: figures.Style) -> str | None:
    """A model whose local layers already keep a window (Gemma 3): which layers, and what an eviction changes."""
    local = model.local_layers
    if not local:
        return None
    window = model.layer_windows[local[0]]
    glob = [i for i in range(model.n_layers) if i not in local]
    key = "surgery.local_inside" if w < window else "surgery.local_outside"
    return style.t(key, title=model.title, n=len(local), window=window, g=len(glob), layers=heads_text(glob), w=w)


# ---------------------------------------------------------------- a model card from a configuration alone
@dataclass(frozen=True)
class CardResult:
    """A model card, what it was read from (``name``) and the seconds reading it took."""

    card: cards.ModelCard
    name: str
    seconds: float


def _shipped_card(key: str) -> tuple[cards.ModelCard, str]:
    """The card of a shipped model's own file: its GGUF header (SmolLM2, Gemma 3) or its config.json (MiniLM)."""
    shipped = store.SHIPPED[key]
    path = store.shipped_file(shipped)
    if path.suffix.lower() == ".zip":
        return cards.card_from_file(store.extracted_zip(path, stem=key) / "config.json"), f"{shipped.title} config.json"
    return cards.card_from_gguf(path), path.name


def load_card(p: Params, upload: tuple[str, bytes] | None) -> CardResult:
    """The card of ``p``'s source (``upload``: the uploaded file's name and bytes); ConfigError when it cannot be
    read (``surgery_no_upload`` when the source is an upload and there is none). Reads no weight."""
    import time

    t0 = time.perf_counter()
    if p.sg_card == "shipped":
        card, name = _shipped_card(p.model)
    elif p.sg_card == "paste":
        card, name = cards.card_from_text(p.sg_config, "config.json"), "config.json"
    elif upload is None:
        raise ConfigError("Choose a config.json or a .gguf file to upload", "sg_card", "surgery_no_upload")
    else:
        card, name = cards.card_from_bytes(upload[1], upload[0]), upload[0]
    return CardResult(card, name, time.perf_counter() - t0)


def read_card(p: Params, upload: tuple[str, bytes] | None, style: figures.Style) -> tuple[CardResult | None, str]:
    """(the card, "") or (None, what is wrong in the user's language; "" while no file is uploaded yet)."""
    try:
        return load_card(p, upload), ""
    except ConfigError as exc:
        return None, "" if exc.key == "surgery_no_upload" else card_error(exc, style)


def card_error(exc: ConfigError, style: figures.Style) -> str:
    """A card's error in the user's language, with the reason a file is not a configuration."""
    params = {k: str(v) for k, v in exc.params.items()}
    if exc.key == "card_not_config":
        return style.t(f"surgery.card_why_{params.get('reason', 'unreadable')}", **params)
    if exc.key and f"err.{exc.key}" in _catalog_keys(style):
        return style.t(f"err.{exc.key}", **params)
    return str(exc)


def _catalog_keys(style: figures.Style) -> Any:
    from attn_core.i18n import catalog

    return catalog(style.lang)


def owner_of(card: cards.ModelCard) -> list[int]:
    """The KV head each query head reads (contiguous groups, as ``repeat_kv``)."""
    per = card.n_heads // max(1, card.n_kv_heads)
    return [min(h // max(1, per), card.n_kv_heads - 1) for h in range(card.n_heads)]


def local_text(card: cards.ModelCard) -> str:
    """The local layers as ranges: "0–4, 6–10, 12–16"."""
    layers, runs = card.local_layers, []
    for i in layers:
        if runs and runs[-1][1] == i - 1:
            runs[-1][1] = i
        else:
            runs.append([i, i])
    return ", ".join(str(a) if a == b else f"{a}–{b}" for a, b in runs)


def head_counts(card: cards.ModelCard, style: figures.Style) -> dict[str, str]:
    """ "32 query heads", "1 KV head": the card's head counts in words."""
    return {"qh": style.count(card.n_heads, "query_head"), "kvh": style.count(card.n_kv_heads, "kv_head")}


def card_table(card: cards.ModelCard, length: int, style: figures.Style) -> pd.DataFrame:
    """The architecture, as rows of (what, value)."""
    t = style.t
    rows = [
        (t("surgery.card_arch"), card.arch),
        (t("surgery.card_attention"), t("surgery.card_heads", kind=card.attention, **head_counts(card, style))),
        (
            t("surgery.card_head_dim"),
            str(card.head_dim) + (f" / {card.v_head_dim}" if card.v_head_dim != card.head_dim else ""),
        ),
        (t("surgery.card_layers"), str(card.n_layers)),
        (
            t("surgery.card_window"),
            t("surgery.card_local", w=card.sliding_window, layers=local_text(card), n=len(card.local_layers))
            if card.local_layers
            else t("surgery.card_no_window"),
        ),
    ]
    if card.is_mla:
        rows.append(
            (
                t("surgery.card_mla"),
                t(
                    "surgery.card_mla_ranks",
                    kv=card.kv_lora_rank,
                    q=card.q_lora_rank or "–",
                    rope=card.qk_rope_head_dim,
                ),
            )
        )
    rows += [
        (
            t("surgery.card_params"),
            t(
                "surgery.card_params_exact" if card.n_params_exact else "surgery.card_params_est",
                n=f"{card.n_params:,}",
            ),
        ),
        (t("surgery.card_vocab"), f"{card.vocab_size:,}"),
        (t("surgery.card_positions"), f"{card.max_positions:,}" if card.max_positions else "–"),
        (t("surgery.card_per_token"), format_bytes(card.kv_bytes(1, CARD_DTYPE))),
        (t("surgery.card_at", n=format_tokens(length)), format_bytes(card.kv_bytes(length, CARD_DTYPE))),
    ]
    return pd.DataFrame(rows, columns=[t("surgery.card_col_what"), t("surgery.card_col_value")])


def card_lines(res: CardResult, length: int, style: figures.Style) -> list[str]:
    """The card in two sentences: the attention and size; the cache at ``length`` tokens (and without windows)."""
    t, card = style.t, res.card
    per = card.n_heads // max(1, card.n_kv_heads)
    lines = [
        t(
            "surgery.card_line_mla" if card.is_mla else "surgery.card_line",
            name=res.name,
            arch=card.arch,
            kind=card.attention,
            h=card.n_heads,
            kv=style.count(card.n_kv_heads, "kv_head"),
            per=per,
            d=card.head_dim,
            layers=style.count(card.n_layers, "layer"),
            params=params_text(card.n_params, style),
            exact=t("surgery.exact" if card.n_params_exact else "surgery.estimate"),
            rank=card.kv_lora_rank,
            rope=card.qk_rope_head_dim,
            ms=f"{res.seconds * 1e3:.0f}",
        )
    ]
    b = card.kv_bytes(length, CARD_DTYPE)
    if card.local_layers:
        full = no_windows(card).kv_bytes(length, CARD_DTYPE)
        lines.append(
            t(
                "surgery.card_cache_window",
                n=f"{length:,}",
                b=format_bytes(b),
                full=format_bytes(full),
                local=len(card.local_layers),
                w=card.sliding_window,
                layers=card.n_layers,
            )
        )
    else:
        lines.append(
            t("surgery.card_cache", n=f"{length:,}", b=format_bytes(b), per=format_bytes(card.kv_bytes(1, CARD_DTYPE)))
        )
    return lines


def params_text(n: int, style: figures.Style) -> str:
    """A parameter count as each language says it: 8.03 B, 135 M; 80.3 亿, 1.35 亿, 2270 万."""
    if style.lang == "zh":
        return f"{n / 1e8:.3g} 亿" if n >= 1e8 else f"{n / 1e4:.4g} 万"
    return f"{n / 1e9:.3g} B" if n >= 1e9 else f"{n / 1e6:.3g} M"


def no_windows(card: cards.ModelCard) -> cards.ModelCard:
    """The same card with every layer global."""
    import dataclasses

    return dataclasses.replace(card, layer_windows=(None,) * card.n_layers)


def card_views(res: CardResult, length: int, style: figures.Style) -> list[View]:
    """The KV-sharing diagram of the card's heads, and its KV cache against the sequence length."""
    t, card = style.t, res.card
    owner = owner_of(card)
    title = t("surgery.card_diagram", name=res.name, kind=card.attention, **head_counts(card, style))
    diagram = kvfig.kv_diagram(owner, card.n_kv_heads, style, title)
    heads = pd.DataFrame({"query_head": range(card.n_heads), "kv_head": owner})
    lengths = CARD_LENGTHS
    cache = tuple(card.kv_bytes(n, CARD_DTYPE) for n in lengths)
    full = tuple(no_windows(card).kv_bytes(n, CARD_DTYPE) for n in lengths) if card.local_layers else None
    chart = sf.CacheChart(
        lengths=lengths,
        cache=cache,
        full=full,
        chosen=length,
        chosen_bytes=card.kv_bytes(length, CARD_DTYPE),
        names=(t("surgery.card_curve"), t("surgery.card_curve_full")),
        title=t(
            "surgery.card_cache_title",
            name=res.name,
            n=format_tokens(length),
            b=format_bytes(card.kv_bytes(length, CARD_DTYPE)),
        ),
        x_title=t("surgery.card_axis_x"),
        y_title=t("surgery.card_axis_y"),
        tick_words=tuple(format_tokens(n) for n in lengths if n & (n - 1) == 0 and round(math.log2(n)) % 2 == 0),
    )
    data = pd.DataFrame({"seq_len": lengths, "kv_bytes_fp16": cache, **({"kv_bytes_all_global": full} if full else {})})
    return [
        View("surgery_card_cache", sf.card_cache_figure(chart, style), data),
        View("surgery_card_heads", diagram, heads),
    ]


# ---------------------------------------------------------------- the page's words around the charts
def input_notes(model: LoadedModel, inp: EvalInput, p: Params, style: figures.Style) -> list[str]:
    """What the model reads of the text: cut to the tokens asked for, or to the model's positions."""
    t, out = style.t, []
    if inp.cut:
        limit = min(int(p.sg_tokens), model.max_positions)
        key = "surgery.cut_model" if model.max_positions < int(p.sg_tokens) else "surgery.cut"
        out.append(t(key, n=f"{inp.n_text:,}", k=f"{limit:,}", title=model.title))
    unk = getattr(model.tokenizer, "unk_token_id", None)
    n_unk = sum(i == unk for i in inp.ids) if unk is not None else 0
    if n_unk:
        out.append(t("surgery.unknown", n=n_unk, total=len(inp.ids), unk=model.tokenizer.unk_token, title=model.title))
    return out


def model_notes(key: str, style: figures.Style) -> list[str]:
    """A shipped model's licence when it is not Apache 2.0 (Gemma: the Gemma Terms of Use), known without loading it."""
    shipped = store.SHIPPED.get(key)
    if shipped is None or not shipped.licence:
        return []
    return [style.t("surgery.licence", title=shipped.title, licence=shipped.licence)]


def map_names(p: Params, model: LoadedModel, style: figures.Style) -> tuple[str, str]:
    chosen = chosen_setting(p, model)
    return style.t("surgery.map_original"), setting_label(chosen, model, style)


def map_title(p: Params, model: LoadedModel, pair: MapPair, head: int, style: figures.Style) -> str:
    """The maps' title; on a slide a short one (the panels say which model each is)."""
    n = len(pair.before.tokens_k)
    key = "surgery.map_title_next" if pair.layer != p.layer_of(model) else "surgery.map_title"
    return style.t(key + ("_slide" if style.present else ""), layer=pair.layer, head=head, n=n, title=model.title)


def map_line(p: Params, model: LoadedModel, pair: MapPair, head: int, style: figures.Style) -> str:
    """How much the maps changed: this head, and the head of the layer that changed most."""
    t = style.t
    most = int(np.argmax(pair.change))
    if p.view == "ablate":
        layer = p.layer_of(model)
        if pair.layer == layer:
            return t("surgery.map_ablate_last", layer=layer)
        return t("surgery.map_ablate", layer=layer, next=pair.layer, h=most, c=f"{pair.change[most]:.3g}")
    line = t("surgery.map_change", h=head, c=f"{pair.change[head]:.3g}", most=most, cm=f"{pair.change[most]:.3g}")
    pieces = piece_labels(pair.before.tokens_k) != list(pair.before.tokens_k)
    return line + (" " + t("surgery.map_pieces") if pieces and pair.before.factor == 1 else "")


def result_views(got: dict[Setting, Measured], p: Params, model: LoadedModel, style: figures.Style) -> list[View]:
    """The charts of a view's measured settings (so far)."""
    if p.view == "kv_heads":
        return [kv_view(got, p, model, style)] if kv_choices(model) else []
    if p.view == "scale":
        return scale_views(got, p, model, style)
    if p.view == "ablate":
        return [ablation_view(got, p, model, style)]
    if p.view == "evict" and model.causal:
        return [eviction_view(got, p, model, style)]
    return []


def result_lines(got: dict[Setting, Measured], p: Params, model: LoadedModel, style: figures.Style) -> list[str]:
    """The view's sentences, from what was measured."""
    if p.view == "kv_heads":
        return kv_lines(got, p, model, style)
    if p.view == "scale":
        return scale_lines(got, p, model, style)
    if p.view == "ablate":
        return ablation_lines(got, p, model, style)
    if p.view == "evict" and model.causal:
        return eviction_lines(got, p, model, style)
    return []


def view_notes(p: Params, model: LoadedModel, style: figures.Style) -> list[str]:
    """What a view says before its numbers: a model it cannot change that way, how it measures an encoder."""
    t = style.t
    if p.view == "kv_heads":
        return kv_notes(model, style)
    if p.view == "evict":
        if not model.causal:
            return [t("surgery.evict_encoder", title=model.title)]
        note = window_note(model, int(p.sg_window), style)
        return [note] if note else []
    return [] if model.causal else [t("surgery.encoder_quality", title=model.title)]


# ---------------------------------------------------------------- the command line's charts
def views(p: Params, style: figures.Style, which: str | Sequence[str] | None = None, device: str = "cpu") -> list[View]:
    """The charts of ``which`` views (default: ``p``'s), every setting of each measured to the end."""
    out: list[View] = []
    for name in view_list(which, VIEW_NAMES, [p.view]):
        q = with_values(p, view=name)
        if name == "card":
            out.extend(card_views(load_card(q, None), int(q.sg_card_len), style))
            continue
        model = load_model(q.model, device=device)
        inp = eval_input(model, q)
        got = by_setting(measure_all(model, inp, sweep(q, model), device))
        out.extend(result_views(got, q, model, style))
        chosen = chosen_setting(q, model)
        if chosen is not None:
            ids, side = map_ids(q, inp, style)
            pair = map_pair(model, ids, chosen, maps_layer(q, model), side, device=device)
            head = shown_head(q, model, pair)
            out.append(pair_view(pair, head, map_names(q, model, style), map_title(q, model, pair, head, style), style))
    return out


#: The surgery page in the browser test, the fuzz, the colour checks and the benchmarks (PageChecks).
CHECKS = PageChecks(
    slider="sg_head",
    chart="sg_maps",  # the head's maps before and after pooling (measured once, cached: a move redraws the maps)
    query="sg_tokens=128",
    scenarios=(Scenario("defaults", {}, "sg_head", (3, 4), 400),),
    cli="--sg-tokens 128 --sg-window 32 --view kv_heads,evict,card",  # the maps (a heat map), the card
    extremes=(
        {"sg_tokens": "128"},
        {"sg_tokens": "128", "model": "minilm-l6"},
        {
            "sg_text": "zh",
            "sg_tokens": "128",
            "sg_layer": "29",
            "sg_head": "8",
            "sg_group": "true",
            "sg_window": "2048",
            "sg_sinks": "0",
            "sg_factor": "0.25",
        },
    ),
    cases=(
        {"sg_text": "own", "sg_own": "x", "sg_tokens": "128"},
        {"sg_tokens": "128", "sg_kv": "3", "sg_method": "random"},
        {"view": "card", "sg_card": "paste", "sg_config": "{not json"},
        {"view": "card", "sg_card": "paste", "sg_config": '{"model_type": "t5", "d_model": 8}'},
        {"view": "card", "sg_card": "upload"},
        {"view": "card", "model": "gemma3-270m", "sg_card_len": "1048576"},
    ),
    fuzz_sets=8,  # each new setting is a forward pass of a real model per change measured
    widget_steps=8,
)
