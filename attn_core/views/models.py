"""The pretrained-models page's view model: a real model's head roles, layers, heads, generation and score scale.

The page (``app_pages/models.py``) and the command line (``python -m attn_core.export --page models``)
both load the model (:func:`attn_core.pretrained.models.load_model`), turn a :class:`Params` into the text the
model reads (:func:`model_input`), capture one layer's queries and keys (:func:`capture`, an attention
source) and draw through the heatmaps page's steps and builders, so a real head is drawn exactly as
the seeded layer's heads are.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from attn_core import figures
from attn_core.attention.longmaps import HeadWindow, PooledMaps
from attn_core.figures import memory as mf
from attn_core.figures import models as modfig
from attn_core.kv.memory import kv_cache_bytes
from attn_core.pretrained.models import (
    SCORES,
    GenStep,
    LoadedModel,
    ModelAttention,
    ScaleResult,
    generate,
    head_scores,
    kv_group_test,
    load_model,
    model_attention,
    repeated_tokens,
    score_scale,
    seeded_attention,
)
from attn_core.runtime.config import MAX_HEADS, ConfigError, check_int
from attn_core.runtime.guard import stays_on_device
from attn_core.runtime.units import format_bytes, format_bytes_exact
from attn_core.views import heatmaps as hm
from attn_core.views.base import (  # noqa: F401 - with_values for the page
    PageChecks,
    Scenario,
    Shown,
    View,
    check_choices,
    control,
    step_at,
    view_list,
    with_values,
)

MODELS = ("smollm2-135m", "minilm-l6", "gemma3-270m", "local")
EXAMPLES = ("english", "chinese", "repeated", "own")
EXAMPLE_TEXTS = {
    "english": "The cat sat on the mat. The dog sat on the rug. Then the cat sat on the mat again.",
    "chinese": "小猫坐在垫子上。小狗坐在地毯上。后来小猫又坐在垫子上。",
}
MODEL_TEXT_CHARS = 8000  # a typed text (about 2000 tokens); longer inputs come from "repeated random tokens"
MAX_LAYERS = 256
MAX_REPEAT = 4095  # random tokens repeated twice: up to 8190 tokens, SmolLM2's 8192 positions with its frame
VIEW_FIELD = "view"
PAGE_VIEWS = ("roles", "layer", "head", "generate", "scale")
VIEW_NAMES = ("roles", "layer", "zoom", "steps", "generate", "scale")
ROLE_SEQ_LEN, ROLE_SEQS = 50, 4  # head_scores' sequences: 4 × 50 random tokens, each repeated
TOP_HEADS = 3  # strongest heads listed per role
MAX_GEN_TOKENS = 32  # tokens written at each context length of a timing run
SPEED_SHORTEST, MAX_SPEED_CONTEXT = 16, 4096  # the timed context lengths: from 16 tokens, doubled, up to 4096
SAME_SPEED = 1.5  # recomputing within this factor of the cached step: "about as long" (reading the weights dominates)
FEW_TIMES = 4  # c tokens recomputed in at most c / 4 times a cached token's time: reading the weights dominates
RECOMPUTE_REPEATS, REPEAT_UP_TO = 3, 64  # contexts up to 64 tokens: their pass timed 3 times (the fastest counts)
SCORE_CODES = SCORES
LOW_IS_STRONG = ("entropy",)  # a low entropy marks a focused head
ALPHA = 0.05  # the KV grouping's permutation p-value below which heads sharing a KV head are called (un)alike


@dataclass(frozen=True)
class Params:
    """Everything the page's controls set; the field names are the URL keys, the controls the widgets and flags."""

    model: str = control(
        "smollm2-135m",
        "choice",
        options=MODELS,
        help="help.model_pick",
        cli_help="smollm2-135m, minilm-l6, gemma3-270m, or local (with --model-path)",
    )
    model_path: str = control(
        "", "text", hi=400, cli_help="a local model folder or .gguf file", implies=(("model", "local"),)
    )
    example: str = control(
        "english",
        "choice",
        options=EXAMPLES,
        help="help.model_example",
        cli_help="english, chinese, repeated (random tokens twice) or own (--text)",
    )
    text: str = control(
        EXAMPLE_TEXTS["english"], "text", hi=MODEL_TEXT_CHARS, cli_help="your own text", implies=(("example", "own"),)
    )
    repeat_len: int = control(
        24,
        "int",
        lo=2,
        hi=MAX_REPEAT,
        help="help.repeat_len",
        cli_help="random tokens before they repeat (example repeated)",
    )
    view: str = control("roles", "choice", options=PAGE_VIEWS)
    score: str = control(
        "induction", "choice", options=SCORE_CODES, help="help.role_score", cli_help="the head-roles score drawn"
    )
    layer: int | None = control(
        None,
        "int",
        lo=0,
        hi=MAX_LAYERS - 1,
        data=True,
        help="help.model_layer",
        cli_help="the layer drawn (default: the middle one)",
    )
    head: int = control(
        0,
        "int",
        lo=0,
        hi=MAX_HEADS - 1,
        data=True,
        help="help.head",
        cli_help="the head of the zoom and step-by-step views",
    )
    q_start: int = control(
        0, "int", lo=0, hi=8191, data=True, help="help.q_start", cli_help="first query row of the step-by-step window"
    )
    k_start: int = control(
        0, "int", lo=0, hi=8191, data=True, help="help.k_start", cli_help="first key of the step-by-step window"
    )
    cscale: str | None = control(
        None,
        "choice",
        options=("fixed", "fit"),
        help="help.cscale",
        cli_help="fixed (0..1) or fit; default: fit from 64 keys on",
    )
    pool: str = control("max", "choice", options=hm.REDUCES, help="help.pool", cli_help="what a pooled cell shows")
    gen_context: int = control(
        512,
        "pow2",
        lo=64,
        hi=MAX_SPEED_CONTEXT,
        data=True,
        help="help.gen_context",
        cli_help="the longest context the generation is timed at (tokens, a power of two)",
    )
    gen_tokens: int = control(
        8,
        "int",
        lo=2,
        hi=MAX_GEN_TOKENS,
        help="help.gen_tokens",
        cli_help="tokens written at each context length (the first reads the whole context)",
    )
    seed: int = control(0, "seed", cli_help="the seed of the random tokens")

    def __post_init__(self) -> None:
        check_choices(self)

    @property
    def model_key(self) -> str:
        """What :func:`load_model` is given: a shipped model's key, or the local path."""
        if self.model != "local":
            return self.model
        path = (self.model_path or "").strip()
        if not path:
            raise ConfigError("Type the path of a local model folder or .gguf file", "model_path", "model_path_empty")
        return path

    def layer_of(self, model: LoadedModel) -> int:
        """The layer shown: the chosen one (within the model's layers), else the middle one."""
        if self.layer is None:
            return model.n_layers // 2
        return min(max(0, int(self.layer)), model.n_layers - 1)

    def head_of(self, model: LoadedModel) -> int:
        return min(max(0, int(self.head)), model.n_heads - 1)

    def fit(self, t_k: int) -> bool:
        return (self.cscale or hm.default_cscale(t_k)) == "fit"


@dataclass(frozen=True)
class ModelText:
    """What the model reads: a text, or token ids (``ids``, then ``text`` only names them)."""

    text: str
    ids: tuple[int, ...] | None = None
    kind: str = "text"  # "text" or "repeated"
    repeat_len: int = 0


def default_example(lang: str) -> str:
    """The example text a page in ``lang`` starts with: its own language's where the app has one."""
    return "chinese" if lang == "zh" else "english"


def max_repeat(model: LoadedModel) -> int:
    """The longest run of random tokens that fits twice in the model's positions (with its special tokens)."""
    framed = len(model.tokenizer("a", add_special_tokens=True)["input_ids"]) - len(
        model.tokenizer("a", add_special_tokens=False)["input_ids"]
    )
    return max(2, min(MAX_REPEAT, (model.max_positions - framed) // 2))


def model_input(model: LoadedModel, p: Params) -> ModelText:
    """The text of ``p``'s example (or its own text), or ``repeat_len`` random tokens repeated twice (seeded)."""
    if p.example == "repeated":
        n = check_int("repeat_len", p.repeat_len, 2, max_repeat(model))
        ids, _ = repeated_tokens(model, n, 1, p.seed)
        return ModelText(f"repeated:{n}:{p.seed}", tuple(int(i) for i in ids[0].tolist()), "repeated", n)
    text = p.text if p.example == "own" else EXAMPLE_TEXTS[p.example]
    if not text or not text.strip():
        raise ConfigError("the text has no tokens; type some words", "text", "no_tokens")
    return ModelText(text)


# ---------------------------------------------------------------- steps (cacheable: model and plain values in)
@stays_on_device  # bound to where it runs: an out-of-memory error is a message, not a CPU retry
def capture(model: LoadedModel, inp: ModelText, layer: int, *, device: str = "cpu") -> ModelAttention:
    """The queries, keys and values ``model`` uses in ``layer`` on ``inp`` (one layer: the pass stops there)."""
    return model_attention(model, inp.text, layers=layer, with_weights=False, ids=inp.ids)


@stays_on_device  # bound to where it runs: an out-of-memory error is a message, not a CPU retry
def roles(model: LoadedModel, seed: int, *, device: str = "cpu") -> pd.DataFrame:
    """Every head's role scores (:func:`attn_core.pretrained.models.head_scores`, :data:`ROLE_SEQS` × :data:`ROLE_SEQ_LEN`)."""
    n = min(ROLE_SEQ_LEN, max_repeat(model))
    return head_scores(model, seq_len=n, n_seqs=ROLE_SEQS, seed=seed)


def first_steps(model: LoadedModel) -> list[tuple[Callable[..., object], tuple]]:
    """What the page's first view computes for ``model`` (the head roles at the default seed), as ``(step,
    arguments)``: the server computes them at its start (``server.py``), so a class's first visit finds them."""
    return [(roles, (model, Params().seed))]


@stays_on_device  # bound to where it runs: an out-of-memory error is a message, not a CPU retry
def scale(model: LoadedModel, inp: ModelText, seed: int, *, device: str = "cpu") -> ScaleResult:
    """The score scale of every layer of ``model`` on ``inp``, and of a random layer with its shape."""
    att = model_attention(model, inp.text, layers=None, with_weights=False, ids=inp.ids)
    t = len(att.tokens)
    rand = seeded_attention(model.n_heads, model.n_kv_heads, model.head_dim, t, model.causal, seed)
    return ScaleResult(score_scale(att), score_scale(rand), t, model.head_dim)


@dataclass(frozen=True)
class GenSpec:
    """A generation: the model, the prompt, how many tokens, whether recomputing is timed too."""

    model: str
    inp: ModelText
    n_new: int
    compare: bool


@dataclass
class GenPair:
    """One generated token: with the cache (``cached``) and, when compared, recomputing everything.

    Mutable: :func:`gen_steps` drops the attention rows of a pair once the next one is made (a run of
    256 tokens would otherwise keep every layer's rows of every step in the session).
    """

    cached: GenStep
    recomputed: GenStep | None


def gen_steps(model: LoadedModel, spec: GenSpec) -> Iterator[GenPair]:
    """Greedy decoding with the cache, and (``spec.compare``) the same tokens recomputed, in lockstep.

    Both generators are checked before the first step (:class:`ConfigError`); closing this generator
    closes both (their caches are freed).
    """
    ids = spec.inp.ids
    cached = generate(model, spec.inp.text, spec.n_new, use_cache=True, rows=True, prompt_ids=ids)
    plain = (
        generate(model, spec.inp.text, spec.n_new, use_cache=False, rows=False, prompt_ids=ids)
        if spec.compare
        else None
    )
    prev: GenPair | None = None
    try:
        for step in cached:
            if prev is not None:
                prev.cached = dataclasses.replace(prev.cached, attention=None)
            prev = GenPair(step, next(plain, None) if plain is not None else None)
            yield prev
    finally:
        cached.close()
        if plain is not None:
            plain.close()


# ---------------------------------------------------------------- what the page says
def input_notes(model: LoadedModel, inp: ModelText, att: ModelAttention, style: figures.Style) -> list[str]:
    """Notices about the input: cut to the model's positions; unknown tokens (MiniLM and Chinese)."""
    t, notes = style.t, []
    if att.truncated:
        notes.append(t("models.cut", n=f"{att.n_text_tokens:,}", max=f"{model.max_positions:,}"))
    unk = getattr(model.tokenizer, "unk_token", None)
    n_unk = sum(tok == unk for tok in att.tokens) if unk else 0
    if n_unk:
        notes.append(t("models.unknown", n=n_unk, total=len(att.tokens), unk=unk, title=model.title))
    return notes


def input_line(inp: ModelText, att: ModelAttention, style: figures.Style) -> str:
    if inp.kind == "repeated":
        return style.t("models.input_repeated", n=inp.repeat_len, t=len(att.tokens))
    return style.t("models.input_text", t=len(att.tokens))


def role_table(df: pd.DataFrame, style: figures.Style) -> pd.DataFrame:
    """The :data:`TOP_HEADS` strongest heads of every role (the lowest entropy), in the user's language."""
    rows = []
    for score in SCORE_CODES:
        top = df.nsmallest(TOP_HEADS, score) if score in LOW_IS_STRONG else df.nlargest(TOP_HEADS, score)
        for r in top.itertuples():
            rows.append(
                {
                    style.t("models.col_role"): style.t(f"opt.score.{score}"),
                    style.t("models.col_layer"): int(r.layer),
                    style.t("models.col_head"): int(r.head),
                    style.t("models.col_kv"): int(r.kv_head),
                    style.t("models.col_score"): round(getattr(r, score), 3),
                }
            )
    return pd.DataFrame(rows)


def strongest(df: pd.DataFrame, score: str, n: int = TOP_HEADS) -> list[tuple[int, int, float]]:
    """``(layer, head, score)`` of the ``n`` strongest heads for ``score``."""
    top = df.nsmallest(n, score) if score in LOW_IS_STRONG else df.nlargest(n, score)
    return [(int(r.layer), int(r.head), float(getattr(r, score))) for r in top.itertuples()]


def open_choices(model: LoadedModel, df: pd.DataFrame, score: str, style: figures.Style) -> dict[tuple[int, int], str]:
    """The strongest heads of ``score`` as ``{(layer, head): label}``, the page's "open a head" choices."""
    return {
        (layer, head): style.t("models.open_label", layer=layer, head=head, kv=model.kv_head(head), v=f"{v:.2f}")
        for layer, head, v in strongest(df, score)
    }


def group_similarity(df: pd.DataFrame, score: str) -> tuple[float, float] | None:
    """Mean |difference| of ``score`` between two heads of one layer sharing a KV head, and not sharing one.

    None when no layer has two heads of one KV head (MHA) or no two of different ones (MQA).
    """
    within, between = [], []
    for _, layer in df.groupby("layer"):
        vals, kv = layer[score].to_numpy(), layer["kv_head"].to_numpy()
        for i, j in itertools.combinations(range(len(vals)), 2):
            (within if kv[i] == kv[j] else between).append(abs(vals[i] - vals[j]))
    if not within or not between:
        return None
    return float(np.mean(within)), float(np.mean(between))


def gqa_note(model: LoadedModel, df: pd.DataFrame, score: str, style: figures.Style, short: bool = False) -> str:
    """What the measured scores say about heads that share a KV head: alike, unlike or neither, decided by the seeded
    permutation test of the KV-head labels (:func:`attn_core.pretrained.models.kv_group_test`) at p < :data:`ALPHA`.
    ``short``: the verdict and its numbers in one sentence (a slide's)."""
    t = style.t
    name = t(f"opt.score.{score}")
    test = kv_group_test(df, score)
    if test is None:
        return t("models.gqa_mha" if model.n_kv_heads == model.n_heads else "models.gqa_mqa", title=model.title)
    if test.p >= ALPHA:
        verdict = "same"
    else:
        verdict = "alike" if test.ratio < test.null_median else "unlike"
    layer, head, value = strongest(df, score, 1)[0]
    kv = model.kv_head(head)
    mates = df[(df.layer == layer) & (df.kv_head == kv)].sort_values("head")
    mates_text = ", ".join(f"{int(r.head)}: {getattr(r, score):.2f}" for r in mates.itertuples())
    return t(
        f"models.gqa_{verdict}" + ("_short" if short else ""),
        score=name,
        within=f"{test.within:.3f}",
        between=f"{test.between:.3f}",
        ratio=f"{test.ratio:.2f}",
        p=f"{test.p:.2g}",
        lo=f"{test.null_lo:.2f}",
        hi=f"{test.null_hi:.2f}",
        shuffles=f"{test.shuffles:,}",
        per=model.n_rep,
        layer=layer,
        head=head,
        kv=kv,
        value=f"{value:.2f}",
        mates=mates_text,
    )


def roles_method(model: LoadedModel, df: pd.DataFrame, style: figures.Style) -> str:
    return style.t(
        "models.roles_method",
        n=df.attrs.get("seq_len", ROLE_SEQ_LEN),
        k=df.attrs.get("n_seqs", ROLE_SEQS),
        seed=df.attrs.get("seed", 0),
        title=model.title,
    )


def scale_summary(res: ScaleResult, style: figures.Style) -> str:
    """The score-scale sentence: the trained layers' spread against the random layer's, from the numbers."""
    tab, rnd = res.table, res.random.iloc[0]
    hi = tab.loc[tab.scaled_var.idxmax()]
    peakier = int((tab.max_weight > rnd.max_weight).sum())
    return style.t(
        "models.scale_summary",
        t=res.n_tokens,
        lo=f"{tab.scaled_var.min():.3g}",
        hi=f"{tab.scaled_var.max():.3g}",
        hi_layer=int(hi.layer),
        rnd=f"{rnd.scaled_var:.3g}",
        raw_rnd=f"{rnd.score_var:.3g}",
        d=res.head_dim,
        mw_lo=f"{tab.max_weight.min():.2f}",
        mw_hi=f"{tab.max_weight.max():.2f}",
        mw_rnd=f"{rnd.max_weight:.2f}",
        peakier=peakier,
        n=len(tab),
    )


# ---------------------------------------------------------------- generation: numbers and sentences
def speed(pairs: Sequence[GenPair]) -> tuple[float, float | None]:
    """Tokens per second with the cache and recomputing, over the steps after the first (which reads the prompt)."""
    after = pairs[1:] if len(pairs) > 1 else pairs
    c = sum(p.cached.seconds for p in after)
    cached = len(after) / c if c > 0 else math.inf
    if not after or after[0].recomputed is None:
        return cached, None
    r = sum(p.recomputed.seconds for p in after if p.recomputed is not None)
    return cached, (len(after) / r if r > 0 else math.inf)


def gen_summary(pairs: Sequence[GenPair], spec: GenSpec, stopped: bool, style: figures.Style) -> tuple[str, str]:
    """(Streamlit call, text) saying what a generation measured, each sentence from its numbers."""
    t, n = style.t, len(pairs)
    parts = [t("models.gen_stopped", i=n, n=spec.n_new)] if stopped else []
    if pairs:
        equal = all(p.cached.cache_bytes == p.cached.formula_bytes for p in pairs)
        last = pairs[-1].cached
        parts.append(
            t(
                "models.gen_equal" if equal else "models.gen_unequal",
                n=n,
                s=last.seq_len,
                b=format_bytes_exact(last.cache_bytes),
            )
        )
        if pairs[-1].cached.eos:
            parts.append(t("models.gen_eos", n=n))
        with_c, without = speed(pairs)
        if without is not None:
            same = sum(p.recomputed is not None and p.recomputed.token_id == p.cached.token_id for p in pairs)
            parts.append(t("models.gen_same", same=same, n=n))
            key = "models.gen_faster" if with_c >= without else "models.gen_slower"
            parts.append(t(key, c=f"{with_c:.1f}", r=f"{without:.1f}", x=f"{with_c / without:.2f}", s=last.seq_len))
        else:
            parts.append(t("models.gen_rate", c=f"{with_c:.1f}"))
    text = ("" if style.lang == "zh" else " ").join(parts)
    return ("warning" if stopped else "success"), text


MARKDOWN_SPECIAL = "\\`*_{}[]<>()#+-.!|~$"


def plain_markdown(text: str) -> str:
    """``text`` shown as it is in Markdown: every character Markdown would read as markup escaped."""
    return "".join("\\" + c if c in MARKDOWN_SPECIAL else c for c in text).replace("\n", "  \n")


def gen_frame(pairs: Sequence[GenPair]) -> pd.DataFrame:
    """One row per generated token: the token, the context, the measured and formula cache bytes, the times."""
    return pd.DataFrame(
        {
            "step": [p.cached.step for p in pairs],
            "token": [p.cached.token for p in pairs],
            "token_id": [p.cached.token_id for p in pairs],
            "context_tokens": [p.cached.seq_len for p in pairs],
            "cache_bytes_measured": [p.cached.cache_bytes for p in pairs],
            "cache_bytes_formula": [p.cached.formula_bytes for p in pairs],
            "ms_with_cache": [p.cached.seconds * 1e3 for p in pairs],
            "ms_recomputing": [p.recomputed.seconds * 1e3 if p.recomputed else None for p in pairs],
            "token_recomputing": [p.recomputed.token if p.recomputed else None for p in pairs],
        }
    )


# ---------------------------------------------------------------- the cache's speed against the context length
@dataclass(frozen=True)
class SpeedSpec:
    """A timing run: ``model`` writes ``n_new`` tokens after the first ``c`` tokens of a prompt (``inp`` repeated
    to ``context`` tokens), for each ``c`` of :func:`speed_contexts`."""

    model: str
    inp: ModelText
    context: int
    n_new: int


@dataclass(frozen=True)
class SpeedPoint:
    """One context length of a timing run: a token's time recomputing and with the cache, after ``context`` tokens.

    ``recompute_s``: the run's first step, which reads all ``context`` tokens with nothing cached, what every step
    costs without a cache (:func:`attn_core.pretrained.models.generate` with ``use_cache=False`` runs this same
    pass at every step), and at short contexts the same pass again without the cache (:data:`RECOMPUTE_REPEATS`
    in all). ``cached_s``: each later step, one new token through the model while the earlier tokens' keys and
    values come from the cache. A time is the fastest of its passes or steps: what another process's work adds
    to one of them is not the model's. ``held``, ``cache_bytes``, ``formula_bytes``: the positions the cache
    holds after the last step, its bytes measured from its tensors and by the formula. ``text`` and ``token_ids``:
    what was written.
    """

    context: int
    recompute_s: tuple[float, ...]
    cached_s: tuple[float, ...]
    held: int
    cache_bytes: int
    formula_bytes: int
    text: str
    token_ids: tuple[int, ...] = ()

    @property
    def recompute_ms(self) -> float:
        return min(self.recompute_s) * 1e3

    @property
    def cached_ms(self) -> float:
        """The fastest cached step, NaN without one."""
        return min(self.cached_s) * 1e3 if self.cached_s else math.nan

    @property
    def ratio(self) -> float:
        """How many times as long recomputing takes as a step with the cache."""
        return self.recompute_ms / self.cached_ms if self.cached_s and self.cached_ms > 0 else math.nan


def speed_contexts(longest: int) -> list[int]:
    """The context lengths timed: :data:`SPEED_SHORTEST` doubled until ``longest``, and ``longest``."""
    out, c = [], SPEED_SHORTEST
    while c < longest:
        out.append(c)
        c *= 2
    return [*out, longest]


def max_context(model: LoadedModel) -> int:
    """The longest context a timing run may ask of ``model``: a power of two that leaves room for the tokens it
    writes, at most :data:`MAX_SPEED_CONTEXT`."""
    room = model.max_positions - MAX_GEN_TOKENS - 1
    return max(SPEED_SHORTEST, min(MAX_SPEED_CONTEXT, 2 ** int(math.log2(max(room, 1)))))


def speed_spec(model: LoadedModel, p: Params, inp: ModelText) -> SpeedSpec:
    """The timing run ``p`` asks of ``model``: its longest context within what the model holds (:func:`max_context`)."""
    longest = min(check_int("gen_context", p.gen_context, SPEED_SHORTEST, MAX_SPEED_CONTEXT), max_context(model))
    return SpeedSpec(model.name, inp, longest, check_int("gen_tokens", p.gen_tokens, 2, MAX_GEN_TOKENS))


def long_prompt(model: LoadedModel, inp: ModelText, n: int) -> tuple[int, ...]:
    """``n`` token ids: the input's leading special tokens, then its other tokens again and again (a text ends each
    copy with a line break)."""
    ids = list(inp.ids) if inp.ids is not None else model.encode(inp.text.strip() + "\n")[0]
    special = set(getattr(model.tokenizer, "all_special_ids", None) or [])
    head = list(itertools.takewhile(lambda i: i in special, ids))
    body = [i for i in ids[len(head) :] if i not in special] or ids
    copies = -(-max(n - len(head), 0) // len(body))
    return tuple((head + body * copies)[:n])


def speed_points(model: LoadedModel, spec: SpeedSpec) -> Iterator[SpeedPoint]:
    """For each context length, shortest first: ``spec.n_new`` greedy tokens after the prompt's first tokens (the
    first step reads them all, the others come one at a time with the cache). Every generation is checked before
    the first step (:class:`ConfigError`); a run closed between lengths frees its cache."""
    prompt = long_prompt(model, spec.inp, spec.context)
    runs = [
        (c, generate(model, "", spec.n_new, rows=False, prompt_ids=prompt[:c])) for c in speed_contexts(len(prompt))
    ]
    try:
        for _ in generate(model, "", 2, rows=False, prompt_ids=prompt[:SPEED_SHORTEST]):  # untimed: a process's
            pass  # first passes also set up its kernels and buffers, which no later step pays again
        for c, run in runs:
            steps = list(run)
            last = steps[-1]
            again = [  # a short context's pass is cheap: timed again, without the cache
                s.seconds
                for _ in range(RECOMPUTE_REPEATS - 1 if c <= REPEAT_UP_TO else 0)
                for s in generate(model, "", 1, use_cache=False, rows=False, prompt_ids=prompt[:c])
            ]
            yield SpeedPoint(
                c,
                (steps[0].seconds, *again),
                tuple(s.seconds for s in steps[1:]),
                c + len(steps) - 1,
                last.cache_bytes,
                last.formula_bytes,
                last.text,
                tuple(s.token_id for s in steps),
            )
    finally:
        for _, run in runs:
            run.close()


def speed_progress(spec: SpeedSpec, points: Sequence[SpeedPoint], style: figures.Style) -> tuple[float, str]:
    """The share of the run done (a pass's time grows with its context: counted in tokens read) and what is next."""
    contexts = speed_contexts(spec.context)
    done = len(points)
    frac = sum(contexts[:done]) / sum(contexts)
    if done >= len(contexts):
        return 1.0, style.t("models.speed_done")
    return frac, style.t("models.speed_progress", c=f"{contexts[done]:,}", i=done + 1, n=len(contexts))


def speed_summary(
    points: Sequence[SpeedPoint],
    spec: SpeedSpec,
    stopped: bool,
    model: LoadedModel,
    style: figures.Style,
    short: bool = False,
) -> tuple[str, str]:
    """(Streamlit call, text): where reading the weights dominates (recomputing about as fast as the cache) and
    where recomputing grows with the context, each chosen and quantified from the measured points (the weights:
    ``model``'s parameters in float32)."""
    t, parts = style.t, []
    n_all = len(speed_contexts(spec.context))
    if stopped:
        parts.append(t("models.speed_stopped", i=len(points), n=n_all))
    timed = [p for p in points if p.cached_s]
    if timed:
        alike = list(itertools.takewhile(lambda p: p.ratio < SAME_SPEED, timed))
        first, last = timed[0], timed[-1]
        w = format_bytes(4 * model.n_params)

        def ms(v: float) -> str:
            return f"{v:,.3g}" if v < 1000 else f"{v:,.0f}"

        if alike:  # about the same time: what both do once a step, reading the weights, is the step
            a = alike[-1]
            parts.append(t("models.speed_weights", c=f"{a.context:,}", r=ms(a.recompute_ms), k=ms(a.cached_ms), w=w))
        else:  # c tokens for a few times one token's time: the weights' reading still outweighs the tokens
            key = "models.speed_weights_few" if first.ratio <= first.context / FEW_TIMES else "models.speed_already"
            x = f"{first.ratio:.1f}"
            parts.append(t(key, c=f"{first.context:,}", r=ms(first.recompute_ms), k=ms(first.cached_ms), x=x, w=w))
        if last.ratio >= SAME_SPEED and len(timed) > 1:
            parts.append(
                t(
                    "models.speed_grows",
                    c=f"{last.context:,}",
                    r=ms(last.recompute_ms),
                    k=ms(last.cached_ms),
                    x=f"{last.ratio:.0f}",
                )
            )
        elif len(alike) == len(timed):
            parts.append(t("models.speed_longer"))
        if not short and all(p.cache_bytes == p.formula_bytes for p in points):  # a slide: the times alone
            parts.append(t("models.speed_cache", b=format_bytes_exact(last.cache_bytes), s=f"{last.held:,}"))
    text = ("" if style.lang == "zh" else " ").join(parts)
    return ("warning" if stopped else "success"), text


def speed_text(model: LoadedModel, spec: SpeedSpec, points: Sequence[SpeedPoint], style: figures.Style) -> str:
    """What the model read and, at the longest context timed so far, what it wrote (in bold, shown as it is)."""
    line = style.t("models.speed_prompt", n=f"{spec.context:,}")
    if not points:
        return line
    last = points[-1]
    return (
        line
        + "  \n"
        + style.t("models.speed_wrote", c=f"{last.context:,}")
        + f" **{plain_markdown(last.text.strip())}**"
    )


def speed_frame(points: Sequence[SpeedPoint]) -> pd.DataFrame:
    """One row per context length: its recomputed and cached times, the cache's measured and formula bytes."""
    return pd.DataFrame(
        {
            "context_tokens": [p.context for p in points],
            "ms_recomputing_fastest": [p.recompute_ms for p in points],
            "ms_recomputing_each": [" ".join(f"{s * 1e3:.3f}" for s in p.recompute_s) for p in points],
            "ms_with_cache_fastest": [p.cached_ms for p in points],
            "ms_with_cache_each": [" ".join(f"{s * 1e3:.3f}" for s in p.cached_s) for p in points],
            "cache_positions": [p.held for p in points],
            "cache_bytes_measured": [p.cache_bytes for p in points],
            "cache_bytes_formula": [p.formula_bytes for p in points],
            "text_written": [p.text for p in points],
        }
    )


def speed_views(points: Sequence[SpeedPoint], spec: SpeedSpec, model: LoadedModel, style: figures.Style) -> list[View]:
    """The time of a token against the context, recomputing and with the cache; and the cache's bytes, measured
    against the formula for ``model``'s layers, KV heads and head size in float32."""
    data = speed_frame(points)
    contexts = speed_contexts(spec.context)
    fig = modfig.speed_figure(
        [p.context for p in points], [p.recompute_ms for p in points], [p.cached_ms for p in points], contexts, style
    )
    whole = kv_cache_bytes(model.n_layers, model.n_kv_heads, model.head_dim, spec.context + spec.n_new, 1, "fp32")
    series = mf.DecodeSeries(
        [p.held for p in points],
        [p.cache_bytes for p in points],
        [p.formula_bytes for p in points],
        spec.context + spec.n_new,
        whole,
    )
    return [View("gen_speed", fig, data), View("gen_cache", mf.decode_memory_figure(series, style), data)]


# ---------------------------------------------------------------- the heatmaps page's steps, on a real layer
grid_maps, zoom_maps, step_window, grid_view, step_views, step_columns = (
    hm.grid_maps,
    hm.zoom_maps,
    hm.step_window,
    hm.grid_view,
    hm.step_views,
    hm.step_columns,
)
read_help, is_pooled, default_cscale, ZOOM_SIDE, STEP_WINDOW = (
    hm.read_help,
    hm.is_pooled,
    hm.default_cscale,
    hm.ZOOM_SIDE,
    hm.STEP_WINDOW,
)
grid_side = figures.grid_side
model_line, step_texts = hm.model_line, hm.step_texts  # the models page shows the heatmaps page's steps
# px of plot a slide leaves the head's map and a step's (the smaller of a 1024×768 and a 1280×720 slide): the
# figures plan their labels for their own height, a slide gives them the screen's
SLIDE_ZOOM_PX, SLIDE_STEP_PX = (600, 200), (700, 250)


def zoom_view(pm: PooledMaps, style: figures.Style, fit: bool) -> View:
    """One head's map: the heatmaps page's zoom (its title, colour scale and numbers), drawn as one heat map whose
    labels fit the room a page or a slide gives it (:func:`attn_core.figures.models.head_figure`)."""
    v = hm.grid_view(pm, style, fit)
    lay = figures.figure_spec(v.figure)["layout"]
    title = lay["title"]["text"]
    if style.present:
        title = re.sub(r"</?sub>", "", title)  # a note under the title at the title's size
    (q0, q1), (k0, k1), f = pm.q_range, pm.k_range, pm.factor
    labels = (figures.block_labels(pm.tokens_q, q0, q1, f), figures.block_labels(pm.tokens_k, k0, k1, f))
    allowed = pm.allowed if pm.allowed.ndim == 2 else pm.allowed[0]
    weights = np.where(allowed, pm.weights[0], np.nan)
    bar = lay["coloraxis"]
    scale = (str(bar["colorbar"]["title"]["text"]), float(bar.get("cmax", 1.0)))
    room = SLIDE_ZOOM_PX if style.present else None
    fig = modfig.head_figure(weights, labels, title, scale, pm.group_of(pm.heads[0]), style, room)
    return dataclasses.replace(v, figure=fig)


def head_step_views(hw: HeadWindow, style: figures.Style, n_cols: int) -> list[View]:
    """The head's eight steps (the heatmaps page's); on a slide with their labels at 20 px, thinned to fit."""
    views = hm.step_views(hw, style, n_cols)
    if not style.present:
        return views
    return [dataclasses.replace(v, figure=modfig.slide_labels(v.figure, SLIDE_STEP_PX, style)) for v in views]


def layer_line(model: LoadedModel, layer: int, style: figures.Style) -> str:
    """Above the grid: which layer, and how its query heads share the KV heads."""
    line = style.t(
        "models.layer_line",
        layer=layer,
        heads=model.n_heads,
        kvs=style.count(model.n_kv_heads, "kv_head"),
        per=model.n_rep,
    )
    kind = hm.layer_kind(model, layer, style)
    return line if kind is None else line + hm.sentence_gap(style) + kind


def source_line(model: LoadedModel, style: figures.Style) -> str:
    """Where the model comes from (its preset's source), and that its maps are a trained model's."""
    url = model.preset.source
    shown = url.split("://", 1)[-1] if url.startswith("https://") else url
    line = style.t("models.source", title=model.title, url=f"[{shown}]({url})")  # a link that ends where it says
    licence = hm.licence_line(model.name, style)  # Gemma 3: the Gemma Terms of Use
    return line if licence is None else line + hm.sentence_gap(style) + licence


# ---------------------------------------------------------------- charts
def roles_view(df: pd.DataFrame, model: LoadedModel, score: str, style: figures.Style) -> View:
    """The layers × heads map of one role score, heads framed by the KV head they share."""
    mat = df.pivot(index="layer", columns="head", values=score).to_numpy(dtype=np.float32)
    fig = modfig.roles_figure(
        mat,
        model.n_kv_heads,
        style.t(f"opt.score.{score}"),
        style.t("models.roles_title", score=style.t(f"opt.score.{score}"), title=model.title),
        style,
        (hm.global_layers(model), model.window(model.local_layers[0]) if model.local_layers else None),
    )
    return View(f"head_roles_{score}", fig, df)


def scale_views(res: ScaleResult, style: figures.Style) -> list[View]:
    """Per layer: the variance of q·k and of the scaled scores; the largest weight, saturated rows and entropy."""
    data = res.table.assign(**{f"random_{c}": float(res.random.iloc[0][c]) for c in res.table.columns if c != "layer"})
    return [
        View("score_variance", modfig.variance_figure(res, style), data),
        View("softmax_peak", modfig.peak_figure(res, style), data),
    ]


# ---------------------------------------------------------------- the command line's charts
def views(p: Params, style: figures.Style, which: str | Sequence[str] | None = None, device: str = "cpu") -> list[View]:
    """The charts of ``which`` views (default: the page's current view) for ``p``."""
    default = {"head": ["zoom", "steps"]}.get(p.view, [p.view])
    model = load_model(p.model_key, device=device)
    inp = model_input(model, p)
    layer, head = p.layer_of(model), p.head_of(model)
    out: list[View] = []
    for name in view_list(which, VIEW_NAMES, default):
        if name == "roles":
            out.append(roles_view(roles(model, p.seed), model, p.score, style))
        elif name == "scale":
            out.extend(scale_views(scale(model, inp, p.seed), style))
        elif name == "generate":
            spec = speed_spec(model, p, inp)
            points = list(speed_points(model, spec))
            out.extend(speed_views(points, spec, model, style))
        else:
            att = capture(model, inp, layer)
            t = len(att.tokens)
            src = att.source(layer)
            if name == "layer":
                out.append(hm.grid_view(hm.grid_maps(src, p.pool), style, p.fit(t)))
            elif name == "zoom":
                out.append(zoom_view(hm.zoom_maps(src, head, (0, t, 0, t), p.pool), style, p.fit(t)))
            else:
                hw = hm.step_window(src, head, p.q_start, p.k_start)
                out.extend(head_step_views(hw, style, hm.step_columns(hw, style)))
    return out


def slide_shown(p: Params, style: figures.Style, steps: dict[str, int], device: str = "cpu") -> Shown:
    """What a slide of this page shows (slide mode, a deck's files): the head roles with the verdict on heads that
    share a KV head; one head's map, then each of its eight steps with its sentence (``steps["slide"]``: 1 the
    map, 2-9 the steps); one score-scale chart a slide; a layer's grid; nothing for a generation (a live run)."""
    model = load_model(p.model_key, device=device)
    if p.view == "generate":
        return Shown([])
    if p.view == "roles":
        df = roles(model, p.seed)
        return Shown([roles_view(df, model, p.score, style)], [gqa_note(model, df, p.score, style, short=True)])
    inp = model_input(model, p)
    if p.view == "scale":
        charts = scale_views(scale(model, inp, p.seed), style)
        return Shown([charts[step_at(steps, "slide", len(charts))]])
    if p.view == "layer":
        return Shown(views(p, style, "layer", device))
    layer, head = p.layer_of(model), p.head_of(model)
    att = capture(model, inp, layer)
    src, t = att.source(layer), len(att.tokens)
    i = step_at(steps, "slide", 9)
    if i == 0:
        return Shown([zoom_view(hm.zoom_maps(src, head, (0, t, 0, t), p.pool), style, p.fit(t))])
    hw = hm.step_window(src, head, p.q_start, p.k_start)
    _, sentences = step_texts(model, att, hw, style)
    return Shown([head_step_views(hw, style, hm.step_columns(hw, style))[i - 1]], [sentences[i - 1]])


#: The pretrained-models page in the browser test, the fuzz, the colour checks and the benchmarks (PageChecks).
CHECKS = PageChecks(
    slider="head",
    chart="mdl_zoom",
    query="view=head&layer=17",  # SmolLM2's layer 17 captured once (cached): a head change redraws zoom and steps
    scenarios=(
        Scenario("defaults", {"view": "head", "layer": "17"}, "head", (4, 3)),
        Scenario(
            # SmolLM2's 8192 positions: 4095 random tokens twice, every head of the last layer, pooled
            "largest",
            {"view": "layer", "example": "repeated", "repeat_len": "4095", "layer": "29"},
            "cscale",
            ("fixed", "fit"),
            600,
        ),
    ),
    cli="--model smollm2-135m --example repeated --repeat-len 8 --gen-context 64 --gen-tokens 2 --view all",
    extremes=(
        {},
        {"model": "minilm-l6"},
        {"example": "repeated", "repeat_len": "2"},
        {"example": "own", "text": "x"},
        {"example": "chinese", "layer": "29", "head": "8"},
        {"model": "minilm-l6", "example": "repeated", "repeat_len": "255", "layer": "5", "head": "11"},
        {"model": "local", "model_path": "/nonexistent"},
    ),
    cases=(
        {"view": "layer", "example": "repeated", "repeat_len": "1024", "cscale": "fixed", "pool": "mean"},
        {"view": "head", "example": "repeated", "repeat_len": "100", "q_start": "199", "k_start": "0"},
        {"view": "generate", "model": "minilm-l6", "gen_tokens": "32", "gen_context": "4096"},
        *({"model": "gemma3-270m", "view": v} for v in PAGE_VIEWS if v != "generate"),
        {"model": "gemma3-270m", "view": "generate", "gen_tokens": "2", "gen_context": "16"},
        {
            "model": "gemma3-270m",
            "view": "head",
            "example": "repeated",
            "repeat_len": "300",
            "layer": "17",
            "head": "3",
        },
    ),
    fuzz_sets=25,  # each new text is a forward pass of a real model
)
