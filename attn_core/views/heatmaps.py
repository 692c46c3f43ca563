"""The attention-heatmaps page's view model: its Params, its steps and its charts.

The page (``app_pages/heatmaps.py``) and the command line (``python -m attn_core.export
--page heatmaps``) both turn a :class:`Params` into the seeded layer
(:meth:`Params.layer`, an attention source), compute through the steps below and
draw with the builders below, so a slide matches the screen.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import partial

import numpy as np
import pandas as pd

from attn_core import figures
from attn_core.attention.longmaps import (  # noqa: F401 - the page's window sizes
    REDUCES,
    STEP_WINDOW,
    ZOOM_SIDE,
    HeadWindow,
    PooledMaps,
    head_window,
    pool_factor,
    pooled_attention,
)
from attn_core.attention.maps import ShapeStep, shape_walk
from attn_core.attention.masks import MASK_KINDS
from attn_core.attention.sources import SeededLayer, TensorLayer
from attn_core.attention.tokens import MAX_TEXT_CHARS, MAX_TEXT_TOKENS, synthetic_tokens, tokenize
from attn_core.pretrained import store
from attn_core.pretrained.models import LoadedModel, ModelAttention, load_model, model_attention
from attn_core.runtime.config import MAX_HEADS, MAX_SEQ_LEN, AttentionConfig
from attn_core.runtime.guard import stays_on_device
from attn_core.views.base import (  # noqa: F401
    DEFAULT_TEXT,
    HEAD_SHAPES,
    PageChecks,
    Scenario,
    Shown,
    TokenInput,
    View,
    check_choices,
    control,
    matrix_frame,
    step_at,
    view_list,
    with_values,
)

DEFAULT_CROSS = "Le chat était fatigué ."
# the example sentence and cross-attention context in each language (11 tokens: a slide labels every one);
# a typed text, or a link's, stays as it is
DEFAULT_TEXTS = {"en": DEFAULT_TEXT, "zh": "猫坐在垫子上，它累了。"}
DEFAULT_CROSSES = {"en": DEFAULT_CROSS, "zh": "小猫很累。"}
VIEW_FIELD = "view"
PAGE_VIEWS = ("grid", "zoom", "steps", "shapes", "entropy")  # what the page offers, in its order
VIEW_NAMES = ("grid", "zoom", "steps", "entropy")  # what the command line draws (the shapes are a table)
FIT_FROM_KEYS = 64  # longer rows spread their weight thin (about 1/T each): the colour scale is fitted from here
ENTROPY_SIDE = 8  # the entropy view needs no map: the smallest pooled grid goes with it
ATTN_FROM = (
    "seeded",
    "smollm2-135m",
    "minilm-l6",
    "gemma3-270m",
)  # the seeded layer, or a shipped pretrained model's layer


def default_text(lang: str) -> str:
    """The page's example sentence in ``lang`` (English for a language without one)."""
    return DEFAULT_TEXTS.get(lang, DEFAULT_TEXT)


def default_cross(lang: str) -> str:
    """The cross-attention context of the example in ``lang``."""
    return DEFAULT_CROSSES.get(lang, DEFAULT_CROSS)


def in_language(p: Params, lang: str) -> Params:
    """``p`` with the example sentence and context in ``lang`` where it holds the English ones (a link or a command
    line that set no text): what the page shows a viewer of that language."""
    changes = {}
    if p.text == DEFAULT_TEXT and default_text(lang) != DEFAULT_TEXT:
        changes["text"] = default_text(lang)
    if p.cross_text == DEFAULT_CROSS and default_cross(lang) != DEFAULT_CROSS:
        changes["cross_text"] = default_cross(lang)
    return with_values(p, **changes) if changes else p


def default_cscale(t_k: int) -> str:
    """The colour scale that follows the data: fitted from :data:`FIT_FROM_KEYS` keys on, else 0..1."""
    return "fit" if t_k > FIT_FROM_KEYS else "fixed"


@dataclass(frozen=True)
class Params(TokenInput):
    """Everything the page's controls set; the field names are the URL keys, the controls the widgets and flags."""

    cross: bool = control(
        False, "bool", help="help.cross", cli_help="cross-attention: keys and values from --cross-text"
    )
    cross_text: str = control(
        DEFAULT_CROSS,
        "text",
        hi=MAX_TEXT_CHARS,
        cli_help="the key/value text of cross-attention",
        implies=(("cross", True),),
    )
    n_heads: int = control(8, "int", lo=1, hi=MAX_HEADS, help="help.n_heads", cli_help="query heads")
    n_kv_heads: int = control(2, "kv_heads", cli_help="KV heads (a divisor of n_heads)")
    head_dim: int = control(16, "int", lo=1, hi=256, help="help.head_dim", cli="--d-k", cli_help="head dimension d_k")
    mask: str = control("none", "choice", options=MASK_KINDS, help="help.mask", cli_help="none, causal or padding")
    scaling: bool = control(True, "bool", help="help.scaling", cli_help="do not divide the scores by sqrt(d_k)")
    temperature: float = control(
        1.0, "float", lo=0.1, hi=5.0, step=0.1, help="help.temperature", cli_help="softmax temperature τ"
    )
    pad_len: int | None = control(
        None,
        "int",
        lo=1,
        hi=MAX_SEQ_LEN,
        data=True,
        help="help.pad_len",
        cli_help="real keys of --mask padding (default 3/4 of them)",
    )
    view: str = control("grid", "choice", options=PAGE_VIEWS)
    cscale: str | None = control(
        None,
        "choice",
        options=("fixed", "fit"),
        help="help.cscale",
        cli_help="fixed (0..1) or fit; default: fit from 64 keys on",
    )
    pool: str = control("max", "choice", options=REDUCES, help="help.pool", cli_help="what a pooled cell shows")
    head: int = control(
        0,
        "int",
        lo=0,
        hi=MAX_HEADS - 1,
        data=True,
        help="help.head",
        cli_help="the head of the zoom and step-by-step views",
    )
    zoom_size: int | None = control(
        None,
        "pow2",
        lo=16,
        hi=MAX_SEQ_LEN,
        data=True,
        help="help.zoom_size",
        cli_help="zoom window, tokens a side (default: all)",
    )
    q_start: int = control(
        0,
        "int",
        lo=0,
        hi=MAX_SEQ_LEN - 1,
        data=True,
        help="help.q_start",
        cli_help="first query row of the zoom/steps window",
    )
    k_start: int = control(
        0,
        "int",
        lo=0,
        hi=MAX_SEQ_LEN - 1,
        data=True,
        help="help.k_start",
        cli_help="first key of the zoom/steps window",
    )
    attn_from: str = control(
        "seeded",
        "choice",
        options=ATTN_FROM,
        help="help.attn_from",
        cli_help="seeded (the shape flags) or a pretrained model's layer: smollm2-135m, minilm-l6, gemma3-270m",
    )
    model_layer: int | None = control(
        None,
        "int",
        lo=0,
        hi=255,
        data=True,
        help="help.model_layer",
        cli_help="the model's layer (default: the middle one)",
    )
    seed: int = control(0, "seed", cli_help="the layer's seed")
    model_tokens: tuple[str, ...] | None = field(default=None, repr=False)  # the model's tokens (:func:`for_model`)
    model_hidden: int | None = field(default=None, repr=False)  # the model's d_model (:func:`for_model`)

    def __post_init__(self) -> None:
        check_choices(self)

    @property
    def tokens_q(self) -> tuple[str, ...]:
        return self.model_tokens if self.model_tokens is not None else self.input_tokens

    @property
    def tokens_k(self) -> tuple[str, ...] | None:
        """The context's tokens in cross-attention, else None (the keys are the queries' own tokens)."""
        return tuple(tokenize(self.cross_text, MAX_TEXT_TOKENS)) if self.cross else None

    @property
    def t_q(self) -> int:
        return len(self.tokens_q)

    @property
    def t_k(self) -> int:
        return len(self.tokens_k) if self.cross else self.t_q

    @property
    def pad(self) -> int | None:
        """The real keys of a padding mask: the chosen number, else three quarters of the keys."""
        if self.mask != "padding":
            return None
        return self.pad_len if self.pad_len is not None else max(1, (self.t_k * 3 + 3) // 4)

    @property
    def fit(self) -> bool:
        """Whether the colour scale is fitted to the data: as chosen, else as :func:`default_cscale` says."""
        return (self.cscale or default_cscale(self.t_k)) == "fit"

    @property
    def from_model(self) -> bool:
        return self.attn_from != "seeded"

    @property
    def scale(self) -> float:
        if self.model_tokens is not None:  # a captured layer: its own factor, as 1/√d_k ÷ τ (:func:`for_model`)
            return self.head_dim**-0.5 / self.temperature
        return self.layer().scale

    @property
    def n_rep(self) -> int:
        return self.n_heads // self.n_kv_heads

    @property
    def kind(self) -> str:
        return self.config().kind

    def config(self) -> AttentionConfig:
        return AttentionConfig(
            n_heads=self.n_heads,
            n_kv_heads=self.n_kv_heads,
            head_dim=self.head_dim,
            seq_len=max(1, self.t_q),
            use_scaling=self.scaling,
            seed=self.seed,
            d_model=self.model_hidden,
        )

    def layer(self) -> SeededLayer:
        """The attention source every view draws from; :class:`ConfigError` naming the field when invalid."""
        return SeededLayer(
            self.n_heads,
            self.n_kv_heads,
            self.head_dim,
            self.tokens_q,
            self.tokens_k,
            mask_kind=self.mask,
            pad_len=self.pad,
            use_scaling=self.scaling,
            temperature=self.temperature,
            seed=self.seed,
        )

    @property
    def whole_zoom(self) -> int:
        """The smallest power of two (at least 16) that holds every token: the zoom's default and largest size."""
        return max(16, 1 << (max(self.t_q, self.t_k) - 1).bit_length())

    def zoom_window(self) -> tuple[int, int, int, int]:
        """``(q0, q1, k0, k1)`` of the zoom: ``zoom_size`` tokens a side from the starts, inside the sequence."""
        size = self.zoom_size or self.whole_zoom
        q0, k0 = window_start(self.q_start, self.t_q, size), window_start(self.k_start, self.t_k, size)
        return q0, min(self.t_q, q0 + size), k0, min(self.t_k, k0 + size)


def window_start(start: int, length: int, size: int) -> int:
    """A window's first position: ``start``, moved back so ``size`` positions fit (0 when the window holds all)."""
    return 0 if size >= length else min(max(0, start), length - size)


# ---------------------------------------------------------------- a pretrained model's layer as the source
def model_text(p: Params) -> str:
    """What the model reads: the page's text, or its synthetic tokens written out (``t0 t1 ...``)."""
    return p.text if p.source == "text" else " ".join(synthetic_tokens(p.seq_len))


def model_layer_of(p: Params, model: LoadedModel) -> int:
    """The model's layer shown: the chosen one (within its layers), else the middle one."""
    return model.n_layers // 2 if p.model_layer is None else min(max(0, int(p.model_layer)), model.n_layers - 1)


@stays_on_device  # bound to where it runs: an out-of-memory error is a message, not a CPU retry
def capture_layer(model: LoadedModel, text: str, layer: int, *, device: str = "cpu") -> ModelAttention:
    """The queries, keys and values ``model`` uses in ``layer`` on ``text`` (its own tokenizer; the pass stops there)."""
    return model_attention(model, text, layers=layer, with_weights=False)


def for_model(p: Params, model: LoadedModel, att: ModelAttention) -> Params:
    """``p`` with the model's shape, mask, factor and tokens in place of the shape controls, so every
    sentence and window of the page is the model's (the URL keeps the seeded layer's settings)."""
    layer = att.layers[0]
    tau = round((model.head_dim**-0.5) / att.scales[0], 6)  # 1 when the model scales by 1/√d_k
    return with_values(
        p,
        n_heads=model.n_heads,
        n_kv_heads=model.n_kv_heads,
        head_dim=model.head_dim,
        mask="causal" if model.causal else "none",
        scaling=True,
        temperature=tau,
        cross=False,
        pad_len=None,
        model_layer=layer,
        model_tokens=att.tokens,
        model_hidden=model.hidden_size,
        head=min(max(0, p.head), model.n_heads - 1),
    )


def model_source(att: ModelAttention) -> TensorLayer:
    """The captured layer as the attention source of every view."""
    return att.source(att.layers[0])


def licence_line(key: str, style: figures.Style) -> str | None:
    """A shipped model's licence when it is not Apache 2.0 (Gemma 3: the Gemma Terms of Use), else None."""
    shipped = store.SHIPPED.get(key)
    if shipped is None or not shipped.licence:
        return None
    return style.t("surgery.licence", title=shipped.title, licence=shipped.licence)


def layer_list(layers: Sequence[int]) -> str:
    """``5, 11, 17`` or ``0–4`` (a run of three or more)."""
    layers = list(layers)
    if len(layers) > 2 and layers == list(range(layers[0], layers[-1] + 1)):
        return f"{layers[0]}–{layers[-1]}"
    return ", ".join(str(i) for i in layers)


def global_layers(model: LoadedModel) -> tuple[int, ...]:
    """The layers without a sliding window, when some layers have one (Gemma 3 270M: 5, 11, 17), else ()."""
    if not model.local_layers:
        return ()
    return tuple(i for i in range(model.n_layers) if i not in model.local_layers)


def window_facts(model: LoadedModel, style: figures.Style) -> str | None:
    """Which layers slide and which are global (None for a model without a window)."""
    local = model.local_layers
    if not local:
        return None
    return style.t(
        "models.window_facts",
        n=len(local),
        window=model.layer_windows[local[0]],
        g=len(global_layers(model)),
        layers=layer_list(global_layers(model)),
    )


def layer_kind(model: LoadedModel, layer: int, style: figures.Style) -> str | None:
    """Whether ``layer`` is local (its window) or global, for a model with local layers; else None."""
    if not model.local_layers:
        return None
    window = model.window(layer)
    if window is None:
        return style.t("models.layer_global", layer=layer)
    return style.t("models.layer_local", layer=layer, window=window)


def model_notes(model: LoadedModel, att: ModelAttention, style: figures.Style) -> list[str]:
    """Where the weights come from (in place of the random-weights note), the model's licence when it has its own,
    and the text cut to the model's limit."""
    notes = [
        style.t(
            "heatmap.model_source", title=model.title, url=model.preset.source, layer=att.layers[0], t=len(att.tokens)
        )
    ]
    if (licence := licence_line(model.name, style)) is not None:
        notes.append(licence)
    if att.truncated:
        notes.append(style.t("models.cut", n=f"{att.n_text_tokens:,}", max=f"{model.max_positions:,}"))
    return notes


def model_shapes_note(p: Params, model: LoadedModel, style: figures.Style) -> str:
    """The legend under a model layer's shapes table: its numbers, and whether it keeps a K/V cache."""
    c = style.count
    key = "heatmap.shapes_model_decoder" if model.causal else "heatmap.shapes_model_encoder"
    return style.t(
        key,
        title=model.title,
        layer=p.model_layer,
        b=1,
        tokens=c(p.t_q, "token"),
        dm=model.hidden_size,
        heads=c(p.n_heads, "query_head"),
        kvs=c(p.n_kv_heads, "kv_head"),
        d=p.head_dim,
    )


# ---------------------------------------------------------------- steps (cacheable: source and plain values in)
def is_pooled(t_rows: int, t_cols: int, side: int) -> bool:
    """Whether a map of ``t_rows × t_cols`` is drawn pooled at ``side`` cells a side (then block max or mean matters)."""
    return pool_factor(t_rows, t_cols, side) > 1


def grid_side(p: Params) -> int:
    """Cells a side of each pooled head of the grid (:func:`attn_core.figures.grid_side`)."""
    return figures.grid_side(p.n_heads)


def grid_maps(layer: SeededLayer, reduce: str, *, device: str = "cpu") -> PooledMaps:
    """Every head's weights, pooled so the whole grid stays small (:func:`attn_core.figures.grid_side`)."""
    return pooled_attention(layer, max_side=figures.grid_side(layer.n_heads), reduce=reduce, device=device)


def zoom_maps(
    layer: SeededLayer, head: int, window: tuple[int, int, int, int], reduce: str, *, device: str = "cpu"
) -> PooledMaps:
    """One head's window, at full resolution up to :data:`ZOOM_SIDE` a side, pooled beyond."""
    return pooled_attention(layer, max_side=ZOOM_SIDE, reduce=reduce, heads=(head,), window=window, device=device)


def step_window(layer: SeededLayer, head: int, q_start: int, k_start: int, *, device: str = "cpu") -> HeadWindow:
    """One head's Q, K, V, scores, weights and output for a :data:`STEP_WINDOW` window."""
    return head_window(layer, head=head, q_start=q_start, k_start=k_start, device=device)


def entropy_maps(layer: SeededLayer, *, device: str = "cpu") -> PooledMaps:
    """Every head's normalised row entropy (with the smallest pooled maps, which the view does not draw)."""
    return pooled_attention(layer, max_side=ENTROPY_SIDE, entropy=True, device=device)


def shapes(p: Params) -> list[ShapeStep]:
    """The tensor shapes of the layer, from the input to the output, with ``p``'s numbers."""
    return shape_walk(p.config(), p.t_q, p.t_k if p.cross else None)


def pooled_frame(pm: PooledMaps) -> pd.DataFrame:
    """The numbers of a grid or zoom chart in long format, one row per drawn cell.

    Unpooled: head, kv_group, query/key position and token, weight, masked.
    Pooled: head, kv_group, the first and last query and key position of each
    block and its ``weight_max`` or ``weight_mean`` (NaN where all is masked).
    """
    hs, r, c = pm.weights.shape
    (q0, q1), (k0, k1), f = pm.q_range, pm.k_range, pm.factor
    head = np.repeat(np.asarray(pm.heads), r * c)
    cols: dict[str, np.ndarray] = {"head": head, "kv_group": np.array([pm.group_of(h) for h in pm.heads]).repeat(r * c)}
    qa = np.arange(q0, q1, f)
    ka = np.arange(k0, k1, f)
    if f == 1:
        cols["query_pos"] = np.tile(np.repeat(qa, c), hs)
        cols["query"] = np.asarray(pm.tokens_q, dtype=object)[cols["query_pos"]]
        cols["key_pos"] = np.tile(ka, hs * r)
        cols["key"] = np.asarray(pm.tokens_k, dtype=object)[cols["key_pos"]]
        cols["weight"] = np.nan_to_num(pm.weights.reshape(-1).astype(np.float64), nan=0.0)
        cols["masked"] = np.tile(~pm.allowed.reshape(-1), hs)
    else:
        cols["query_from"] = np.tile(np.repeat(qa, c), hs)
        cols["query_to"] = np.minimum(cols["query_from"] + f, q1) - 1
        cols["key_from"] = np.tile(ka, hs * r)
        cols["key_to"] = np.minimum(cols["key_from"] + f, k1) - 1
        cols[f"weight_{pm.reduce}"] = pm.weights.reshape(-1).astype(np.float64)
    return pd.DataFrame(cols)


FIT_PERCENTILE = 99.5  # of the drawn values: the top of a fitted colour scale


def fitted_top(pm: PooledMaps, fit: bool) -> float | None:
    """The top of :func:`grid_view`'s fitted colour scale: with ``fit``, the :data:`FIT_PERCENTILE`
    percentile of the values drawn (their largest value if that percentile is 0); None when the scale
    is the fixed 0..1 (``fit`` off, or nothing above 0 drawn)."""
    finite = pm.weights[np.isfinite(pm.weights)]
    if not fit or not finite.size or float(finite.max()) <= 0:
        return None
    # robust: a few large weights (the first rows of a causal map are 1) would otherwise set the scale
    top = float(np.percentile(finite, FIT_PERCENTILE))
    return top if top > 0 else float(finite.max())


def grid_view(
    pm: PooledMaps,
    style: figures.Style,
    fit: bool = False,
    focus: tuple[int, int] | None = None,
    heads: tuple[int, ...] | None = None,
) -> View:
    """The grid of every head (or the zoom on one head's window), pooled as ``pm`` says, with its title.

    ``fit`` stretches the colour scale from 0 to the :data:`FIT_PERCENTILE`
    percentile of the values drawn instead of 0..1 (long sequences spread their
    weights thin; larger values take the top colour), and the title says so.
    The whole grid has a click layer (a click on a panel opens its head); ``focus`` = ``(query position,
    KV group)`` outlines the row holding that query in every panel of that group (:func:`focus_outline`).
    ``heads``: one slide's page of the grid (:func:`grid_pages`), those heads alone and no title (the page's
    stepper names them, :func:`page_label`); the colour scale stays the whole grid's.
    """
    (q0, q1), (k0, k1), f = pm.q_range, pm.k_range, pm.factor
    t_q, t_k = len(pm.tokens_q), len(pm.tokens_k)
    whole = (q0, q1, k0, k1) == (0, t_q, 0, t_k)
    hs, r, c = pm.weights.shape
    if whole and hs == pm.n_heads:
        heads_n, groups = style.count(hs, "query_head"), style.count(pm.n_kv_heads, "kv_group")
        title, name, panel_px = style.t("fig.grid_title", heads=heads_n, groups=groups), "attention_weights", None
    else:
        h = pm.heads[0]
        title = style.t("fig.zoom_title", h=h, g=pm.group_of(h), q0=q0, q1=q1 - 1, k0=k0, k1=k1 - 1, tq=t_q, tk=t_k)
        name, panel_px = f"head{h}_q{q0}-{q1 - 1}_k{k0}-{k1 - 1}", 640 if hs == 1 else None
    value = style.t("fig.weight")
    notes = []
    if f > 1:
        how = style.t(f"fig.how.{pm.reduce}")
        notes.append(style.t("fig.grid_pooled", how=how, f=f, tq=q1 - q0, tk=k1 - k0, r=r, c=c))
        value = style.t(f"fig.block_{pm.reduce}")
    top = fitted_top(pm, fit)
    cmax = 1.0 if top is None else top
    if top is not None:
        notes.append(style.t("fig.fit_note", top=f"{cmax:.3g}", pct=f"{FIT_PERCENTILE:g}"))
    shown = list(range(hs))
    if heads is not None and tuple(heads) != tuple(pm.heads):  # a slide's page: its stepper says which heads
        shown = [pm.heads.index(h) for h in heads]
        title, name = "", f"{name}_heads{heads[0]}-{heads[-1]}"
    grid = figures.HeadGrid(
        pm.weights[shown],
        tuple(pm.heads[i] for i in shown),
        pm.n_heads,
        pm.n_kv_heads,
        figures.block_labels(pm.tokens_q, q0, q1, f),
        figures.block_labels(pm.tokens_k, k0, k1, f),
        title=title,
        value_label=value,
        panel_px=panel_px,
        cmax=cmax,
        clickable=whole and hs == pm.n_heads,
        notes=tuple(notes),
        pooled=f > 1,
        **focus_outline(pm, focus),
    )
    fig = figures.heatmap_grid(grid, style)
    return View(name, fig, lambda: pooled_frame(pm))


def grid_pages(pm: PooledMaps, style: figures.Style) -> list[tuple[int, ...]]:
    """The heads each slide of the grid shows: as many panels as a slide labels in full
    (:func:`attn_core.figures.slide_capacity`), whole KV groups a slide where one fits (else parts of one group);
    one page of every head on a page, for the zoom, and where a slide holds them all."""
    if not style.present or len(pm.heads) != pm.n_heads or pm.n_heads == 1:
        return [tuple(pm.heads)]
    (q0, q1), (k0, k1), f = pm.q_range, pm.k_range, pm.factor
    labels_q = figures.block_labels(pm.tokens_q, q0, q1, f)
    labels_k = figures.block_labels(pm.tokens_k, k0, k1, f)
    value = style.t(f"fig.block_{pm.reduce}" if f > 1 else "fig.weight")
    whole = figures.GridText(labels_q, labels_k, value, notes=int(f > 1))  # one slide, titled, no stepper
    ncols, nrows = figures.slide_capacity(whole, style, pm.n_heads)
    if ncols * nrows >= pm.n_heads:
        return [tuple(pm.heads)]
    ncols, nrows = figures.slide_capacity(replace(whole, titled=False), style, pm.n_heads)
    return figures.slide_pages(pm.n_heads, pm.n_kv_heads, ncols * nrows)


def page_label(pm: PooledMaps, heads: tuple[int, ...], style: figures.Style) -> str:
    """What one slide's page of the grid shows: "Heads 0–1 of 8 · KV group 0 (frame colour = KV group)"."""
    t = style.t
    groups = sorted({pm.group_of(h) for h in heads})
    shown = t("fig.page_head", a=heads[0], n=pm.n_heads) if len(heads) == 1 else None
    shown = shown or t("fig.page_heads", a=heads[0], b=heads[-1], n=pm.n_heads)
    if len(groups) == 1:
        kv = t("fig.page_group", g=groups[0])
    else:
        kv = t("fig.page_groups", g0=groups[0], g1=groups[-1])
    return t("fig.page_title", heads=shown, groups=kv)


# ---------------------------------------------------------------- one token's row in the heads of a KV group
FOCUS_MAX = figures.LABELLED  # tokens a side up to which a query token can be followed (its lines readable)


def focus_ok(pm: PooledMaps) -> bool:
    """Whether a query token of ``pm``'s maps can be followed: at most :data:`FOCUS_MAX` queries and keys."""
    return 0 < len(pm.tokens_q) <= FOCUS_MAX and 0 < len(pm.tokens_k) <= FOCUS_MAX


def group_heads(n_heads: int, n_kv_heads: int, group: int) -> tuple[int, ...]:
    """The query heads reading KV head ``group``."""
    n_rep = n_heads // n_kv_heads
    return tuple(range(group * n_rep, (group + 1) * n_rep))


def focus_outline(pm: PooledMaps, focus: tuple[int, int] | None) -> dict:
    """The :class:`~attn_core.figures.HeadGrid` fields outlining query ``focus[0]``'s row (the block row
    holding it when pooled) in the panels of KV group ``focus[1]``; nothing when the row is not drawn."""
    if focus is None:
        return {}
    q, group = focus
    (q0, q1), f = pm.q_range, pm.factor
    if not (q0 <= q < q1 and 0 <= group < pm.n_kv_heads):
        return {}
    return dict(focus_row=(q - q0) // f, focus_heads=group_heads(pm.n_heads, pm.n_kv_heads, group))


def focus_rows(layer: SeededLayer, heads: tuple[int, ...], q: int, *, device: str = "cpu") -> PooledMaps:
    """Query ``q``'s exact row of weights in each of ``heads`` (``[len(heads), 1, T_k]``, NaN = masked)."""
    t_k = len(layer.keys)
    return pooled_attention(layer, max_side=max(FOCUS_MAX, t_k), heads=heads, window=(q, q + 1, 0, t_k), device=device)


def lines_view(rows: PooledMaps, style: figures.Style) -> View:
    """The line view of :func:`focus_rows`: where the query attends in each head (the first
    :data:`~attn_core.figures.LINES_MAX_HEADS` of its group), and the weights as a table."""
    q = rows.q_range[0]
    heads = rows.heads[: figures.LINES_MAX_HEADS]
    n_rep = rows.n_heads // rows.n_kv_heads
    group = rows.group_of(heads[0])
    labels_q = figures.block_labels(rows.tokens_q, 0, len(rows.tokens_q), 1)
    labels_k = figures.block_labels(rows.tokens_k, 0, len(rows.tokens_k), 1)
    title = style.t("fig.focus_title", q=labels_q[q], g=group)
    note = style.t("fig.focus_legend")
    if len(heads) < len(rows.heads):
        note = style.t("fig.focus_first", n=len(heads), m=len(rows.heads)) + " · " + note
    w = rows.weights[: len(heads), 0, :]
    spec = figures.TokenLines(w, tuple(heads), group, n_rep, labels_q, labels_k, q, title, note)
    fig = figures.token_lines_figure(spec, style)

    def frame() -> pd.DataFrame:
        n, t_k = w.shape
        return pd.DataFrame(
            {
                "head": np.repeat(np.asarray(heads), t_k),
                "kv_group": group,
                "query_pos": q,
                "query": rows.tokens_q[q],
                "key_pos": np.tile(np.arange(t_k), n),
                "key": np.tile(np.asarray(rows.tokens_k, dtype=object), n),
                "weight": np.nan_to_num(w.reshape(-1).astype(np.float64), nan=0.0),
                "masked": np.isnan(w.reshape(-1)),
            }
        )

    return View(f"token{q}_kv{group}_lines", fig, frame)


def focus_sentence(rows: PooledMaps, style: figures.Style) -> str:
    """What the line view shows, from its numbers: each head's strongest key, and how far the heads of
    the group differ (they read the same keys and values; only their queries differ)."""
    q, k0 = rows.q_range[0], rows.k_range[0]
    w = np.nan_to_num(rows.weights[:, 0, :], nan=0.0)
    top = w.argmax(axis=1)
    parts = style.t("focus.sep").join(
        style.t("focus.head_top", head=h, key=quoted(rows.tokens_k, k0 + int(top[i])), w=f"{float(w[i, top[i]]):.3f}")
        for i, h in enumerate(rows.heads)
    )
    says = dict(q=quoted(rows.tokens_q, q), g=rows.group_of(rows.heads[0]), parts=parts)
    if len(rows.heads) == 1:
        return style.t("focus.tops", **says)
    gap = float(np.max(np.abs(w[:, None, :] - w[None, :, :])))
    key = "focus.tops_differ" if gap >= 5e-4 else "focus.tops_same"
    return style.t(key, d=f"{gap:.3f}", n=style.count(len(rows.heads), "query_head"), **says)


def quoted(tokens: Sequence[str], i: int) -> str:
    """Token ``i`` as a sentence names it: “cat” (1)."""
    return f"“{tokens[i]}” ({i})"


def focus_pooled_note(pm: PooledMaps, q: int, style: figures.Style) -> str:
    """What the outlined row of a pooled grid is: the block of ``f`` queries holding query ``q``."""
    f = pm.factor
    a = pm.q_range[0] + ((q - pm.q_range[0]) // f) * f
    b = min(a + f, pm.q_range[1]) - 1
    return style.t("focus.pooled_row", f=f, a=a, b=b, q=quoted(pm.tokens_q, q), how=style.t(f"fig.how.{pm.reduce}"))


def clicked(points: object, index: int, kind: str | None, limit: int) -> int | None:
    """``customdata[index]`` of the first clicked point (of ``kind``, customdata[3], when given) if it is an
    integer in ``0 .. limit-1``, else None: a selection from the browser is checked, never trusted."""
    if not isinstance(points, (list, tuple)) or not points:
        return None
    point = points[0]
    cd = point.get("customdata") if isinstance(point, dict) else None
    if not isinstance(cd, (list, tuple)) or len(cd) <= index:
        return None
    if kind is not None and (len(cd) <= 3 or cd[3] != kind):
        return None
    value = cd[index]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != int(value):
        return None
    return int(value) if 0 <= value < limit else None


STEP_NAMES = ("q", "k", "v", "scores", "scaled", "masked", "softmax", "output")
STEP_HALF_PX = 358  # px across a step chart beside another: a phone's width (half a 1280 px main column is 384)
STEP_SLIDE_H = 430  # px a slide leaves a step's chart at 1280 × 720, under the title, stepper and sentence


def step_columns(hw: HeadWindow, style: figures.Style) -> int:
    """Step charts side by side (2) or one per row (1): two while every key label fits a chart of
    :data:`STEP_HALF_PX` (its colour bar under it) at a readable font; such charts fit a phone as they are."""
    if style.present:
        return 1
    lk = [f"{tok} ({hw.k0 + i})" for i, tok in enumerate(hw.tokens_k)]
    spec = figures.MatrixSpec(hw.weights, lk, lk, "", chart_px=STEP_HALF_PX, bar_below=True)  # keys: the widest
    x_axis = figures.matrix_figure(spec, style).__dict__["_plain"][1]["xaxis"]
    readable = x_axis["tickfont"]["size"] >= figures.READABLE_TICK_FONT[False]
    return 2 if len(x_axis.get("tickvals", ())) == len(lk) and readable else 1


def step_views(hw: HeadWindow, style: figures.Style, columns: int = 1) -> list[View]:
    """The eight matrices of one head's computation: Q, K, V, QKᵀ, scaled, masked, softmax weights, output.

    For the rows and keys of ``hw``'s window; the shapes in the titles are those of the whole sequence
    (``T_q`` and ``T_k`` for cross-attention). The scaling step's title writes out the factors applied:
    ×1/√d_k ÷ τ, or ÷ τ alone when the scaling is off. ``columns``: how many charts the page puts side
    by side (:func:`step_columns`), which sets the width every key label must fit in.
    """
    head, group = hw.head, hw.group
    lq = [f"{tok} ({hw.q0 + i})" for i, tok in enumerate(hw.tokens_q)]
    lk = [f"{tok} ({hw.k0 + i})" for i, tok in enumerate(hw.tokens_k)]
    d = hw.q.shape[-1]
    dims = [f"d{i}" for i in range(d)]
    tq, tk = hw.t_q, hw.t_k
    t = style.t
    nq, nk = ("T_q", "T_k") if hw.cross or tq != tk else ("T", "T")  # cross-attention: two lengths
    sq, sk, st_ = f"[{nq}, d_k] = [{tq}, {d}]", f"[{nk}, d_k] = [{tk}, {d}]", f"[{nq}, {nk}] = [{tq}, {tk}]"
    q_t, k_t, d_t = t("fig.query"), t("fig.key"), t("fig.dim")
    scaled_title = t(
        "heatmap.step_scaled" if hw.use_scaling else "heatmap.step_unscaled",
        d=d,
        tau=f"{hw.temperature:g}",
        scale=f"{hw.scale:.4g}",
    )
    spec = [
        ("q", f"Q · {t('fig.head')} {head}", hw.q, lq, dims, "values", None, q_t, d_t, sq),
        ("k", f"K · KV {group}", hw.k, lk, dims, "values", None, k_t, d_t, sk),
        ("v", f"V · KV {group}", hw.v, lk, dims, "values", None, k_t, d_t, sk),
        ("scores", "QKᵀ", hw.raw_scores, lq, lk, "scores", None, None, None, st_),
        ("scaled", scaled_title, hw.scaled_scores, lq, lk, "scores", None, None, None, st_),
        ("masked", t("heatmap.step_masked"), hw.scaled_scores, lq, lk, "scores", hw.mask, None, None, st_),
        ("softmax", "softmax", hw.weights, lq, lk, "weights", hw.mask, None, None, st_),
        ("output", t("heatmap.step_output"), hw.head_output, lq, dims, "values", None, q_t, d_t, sq),
    ]
    views = []
    chart_px = STEP_HALF_PX if columns > 1 else None  # side by side: narrow, the colour bar under each
    for name, title, mat, rows, cols, kind, mask, rt, ct, shape in spec:
        matrix = figures.MatrixSpec(
            mat,
            rows,
            cols,
            f"{title}   {shape}",
            kind=kind,
            mask=mask,
            row_title=rt,
            col_title=ct,
            label_cols=cols is lk,
            chart_px=chart_px,
            slide_h=STEP_SLIDE_H,
            bar_below=columns > 1,
        )  # key tokens; Q, K, V dimensions are not labelled each
        fig = figures.matrix_figure(matrix, style)
        data = mat if mask is None else np.where(mask, mat, -np.inf)
        views.append(View(f"head{head}_{name}", fig, partial(matrix_frame, data, rows, cols, "row", "col", "value")))
    return views


def entropy_view(
    entropy: np.ndarray, tokens_q: tuple[str, ...], n_heads: int, n_kv_heads: int, style: figures.Style
) -> View:
    """Every head's normalised row entropy ``[H, Tq]`` as lines, and as a table."""
    fig = figures.entropy_figure(entropy, list(tokens_q), n_kv_heads, style=style, n_heads=n_heads)
    h, tq = entropy.shape
    n_rep = n_heads // n_kv_heads

    def frame() -> pd.DataFrame:
        return pd.DataFrame(
            {
                "head": np.repeat(np.arange(h), tq),
                "kv_group": np.repeat(np.arange(h) // n_rep, tq),
                "query_pos": np.tile(np.arange(tq), h),
                "query": np.tile(np.asarray(tokens_q, dtype=object), h),
                "normalized_entropy": entropy.reshape(-1).astype(np.float64),
            }
        )

    return View("row_entropy", fig, frame)


# ---------------------------------------------------------------- what the page says about the current settings
def summary(p: Params, style: figures.Style) -> str:
    """The line under the controls: the sharing, the shape and the score factor as it is applied."""
    t, c = style.t, style.count
    # × 1/√d_k ÷ τ, or ÷ τ alone with the scaling off
    scale_line = t(
        "heatmap.scale_on" if p.scaling else "heatmap.scale_off",
        d=p.head_dim,
        sqrt=f"{np.sqrt(p.head_dim):.4g}",
        tau=f"{p.temperature:g}",
        scale=f"{p.scale:.4g}",
    )
    return t(
        "heatmap.summary",
        kind=p.kind,
        heads=c(p.n_heads, "query_head"),
        kvs=c(p.n_kv_heads, "kv_head"),
        per=c(p.n_rep, "query_head"),
        d=p.head_dim,
        queries=c(p.t_q, "query"),
        keys=c(p.t_k, "key"),
        scale=scale_line,
    )


def read_help(pm: PooledMaps, fit: bool, style: figures.Style) -> str:
    """The "how to read" help of the chart drawn from ``pm``, saying what it is.

    Exact or pooled (max / mean) cells, whole rows or a window of keys, one panel or a grid of KV
    groups, masked cells if any, and the colour scale actually used (0..1, or fitted with its top).
    """
    t = style.t
    f, (k0, k1) = pm.factor, pm.k_range
    if f > 1:
        parts = [t(f"heatmap.read.cells_{pm.reduce}", f=f)]
    elif (k0, k1) == (0, len(pm.tokens_k)):
        parts = [t("heatmap.read.cells_exact")]
    else:
        parts = [t("heatmap.read.cells_window", keys=style.count(len(pm.tokens_k), "key"))]
    if len(pm.heads) > 1:
        parts.append(t("heatmap.read.groups"))
    if not pm.allowed.all():
        parts.append(t("heatmap.read.masked"))
    top = fitted_top(pm, fit)
    if top is None:
        parts.append(t("heatmap.read.scale_fixed"))
    else:
        parts.append(t("heatmap.read.scale_fit", top=f"{top:.3g}", pct=f"{FIT_PERCENTILE:g}"))
    return " ".join(parts)


def zoom_note(p: Params, pm: PooledMaps, style: figures.Style) -> str:
    """The caption under the zoom: the whole head, or a window of it (the softmax still over every key)."""
    if p.zoom_window() == (0, p.t_q, 0, p.t_k):
        return style.t("heatmap.zoom_whole", side=ZOOM_SIDE, f=pm.factor)
    return style.t("heatmap.zoom_note", side=ZOOM_SIDE, f=pm.factor, keys=style.count(p.t_k, "key"))


def explanation(p: Params, i: int, style: figures.Style) -> str:
    """The sentence above step ``i`` (0-based) of the step-by-step view, for the current settings."""
    if i == 4:  # the scaling: the factors actually applied, and the variance they give
        key = "heatmap.explain5" if p.scaling else "heatmap.explain5_off"
        key += "_tau" if p.temperature != 1 else ""
        var = (1.0 if p.scaling else p.head_dim) / p.temperature**2
        return style.t(key, d=p.head_dim, tau=f"{p.temperature:g}", scale=f"{p.scale:.4g}", var=f"{var:.4g}")
    if p.cross and i in (1, 2):  # keys and values come from the context
        return style.t(f"heatmap.explain{i + 1}_cross")
    if i == 5:  # the mask actually set: none changes nothing
        return style.t(f"heatmap.explain6_{p.mask}")
    if i == 6 and p.mask == "none":  # no masked cells to get 0
        return style.t("heatmap.explain7_none")
    return style.t(f"heatmap.explain{i + 1}")


def sentence_gap(style: figures.Style) -> str:
    """What goes between two sentences: a space, none after Chinese punctuation."""
    return "" if style.lang == "zh" else " "


def model_line(model: LoadedModel, style: figures.Style) -> str:
    """The model's shape in one line: layers, query heads sharing KV heads, d_k, positions, quantization."""
    t = style.t
    kind = "MHA" if model.n_kv_heads == model.n_heads else ("MQA" if model.n_kv_heads == 1 else "GQA")
    line = t(
        "models.shape",
        title=model.title,
        layers=model.n_layers,
        heads=model.n_heads,
        kvs=style.count(model.n_kv_heads, "kv_head"),
        kind=kind,
        per=style.count(model.n_rep, "query_head"),
        d=model.head_dim,
        pos=f"{model.max_positions:,}",
        how=t("models.decoder" if model.causal else "models.encoder"),
    )
    if model.quantization:
        line += sentence_gap(style) + t("models.quantized", q=model.quantization)
    if (facts := window_facts(model, style)) is not None:
        line += sentence_gap(style) + facts
    return line


@dataclass(frozen=True)
class StepFacts:
    """What the heatmaps page's step sentences need (:func:`explanation`, :func:`step_notes`), for a real layer."""

    head_dim: int
    scale: float
    n_rep: int
    t_q: int
    t_k: int
    scaling: bool = True
    temperature: float = 1.0
    cross: bool = False
    mask: str = "causal"


def step_facts(model: LoadedModel, att: ModelAttention) -> StepFacts:
    d, t = model.head_dim, len(att.tokens)
    tau = round((d**-0.5) / att.scales[0], 6)
    return StepFacts(d, att.scales[0], model.n_rep, t, t, temperature=tau, mask="causal" if att.causal else "none")


def head_score_variance(att: ModelAttention, head: int, n_rep: int) -> tuple[float, float]:
    """Variance of q·k and of the scaled scores of one head over every allowed (query, key) pair of the text."""
    q, k = att.q[0, head].astype(np.float64), att.k[0, head // n_rep].astype(np.float64)
    s = q @ k.T
    t = s.shape[0]
    allowed = np.tril(np.ones((t, t), dtype=bool)) if att.causal else np.ones((t, t), dtype=bool)
    v = float(s[allowed].var())
    return v, v * att.scales[0] ** 2


def step_texts(model: LoadedModel, att: ModelAttention, hw: HeadWindow, style: figures.Style) -> tuple[list, list]:
    """(notes above the steps, the sentence above each of the eight steps) for a real head: where its Q, K and V
    come from in this model, and the variance its scores really have (not the random layer's unit variance)."""
    facts = step_facts(model, att)
    sentences = [explanation(facts, i, style) for i in range(len(STEP_NAMES))]
    how = "rope" if model.rope else "abs"
    kv = dict(layer=att.layers[0], head=hw.head, kv=hw.group, per=model.n_rep)
    for i in range(3):
        sentences[i] = style.t(f"models.explain{i + 1}_{how}", **kv)
    raw, scaled = head_score_variance(att, hw.head, model.n_rep)
    sentences[4] = style.t(
        "models.explain5",
        d=model.head_dim,
        scale=f"{att.scales[0]:.4g}",
        raw=f"{raw:.3g}",
        scaled=f"{scaled:.3g}",
        t=len(att.tokens),
    )
    return step_notes(facts, hw, style), sentences


def step_sentences(p: Params, hw: HeadWindow, style: figures.Style, real: tuple | None = None) -> list[str]:
    """The sentence above each step of the step-by-step view. For a pretrained model's layer (``real`` =
    ``(model, captured layer)``), where its Q, K, V come from and its measured score variance
    (:func:`step_texts`), not the random layer's embeddings and unit variance."""
    if real is None:
        return [explanation(p, i, style) for i in range(len(STEP_NAMES))]
    return step_texts(real[0], real[1], hw, style)[1]


def step_notes(p: Params, hw: HeadWindow, style: figures.Style) -> list[str]:
    """What the step-by-step view says first: whose keys the head reads, and the window when it is one."""
    t = style.t
    if p.n_rep > 1:
        notes = [t("heatmap.step_head", head=hw.head, group=hw.group, per=style.count(p.n_rep, "query_head"))]
    else:
        notes = [t("heatmap.step_head_own", head=hw.head, group=hw.group)]
    if not hw.complete:
        mass = hw.row_mass
        notes.append(
            t(
                "heatmap.step_window",
                q0=hw.q0,
                q1=hw.q0 + len(hw.tokens_q) - 1,
                k0=hw.k0,
                k1=hw.k0 + len(hw.tokens_k) - 1,
                tq=p.t_q,
                tk=p.t_k,
                keys=style.count(p.t_k, "key"),
                lo=f"{mass.min():.3f}",
                hi=f"{mass.max():.3f}",
            )
        )
    return notes


def step_label(hw: HeadWindow, i: int, n: int, style: figures.Style) -> str:
    """A slide's stepper over the steps: "Step 5 of 8 · head 0 reads KV head 0"."""
    return style.t("heatmap.step_of", i=i + 1, n=n, h=hw.head, g=hw.group)


def op_key(p: Params, op: str) -> str:
    """The catalog key of a shapes row's operation: a model layer's input is the hidden states, not embeddings."""
    return "input_model" if op == "input" and p.from_model else op


def shapes_table(p: Params, style: figures.Style) -> pd.DataFrame:
    """The tensor shapes as a table in the user's language (step, operation, shape with ``p``'s numbers)."""
    t = style.t
    rows = shapes(p)
    return pd.DataFrame(
        {
            t("shapes.step"): [t(f"shapes.{r.step}") for r in rows],
            t("shapes.op"): [t(f"shapes.ops.{op_key(p, r.op)}", rep=p.n_rep, layer=p.model_layer) for r in rows],
            t("shapes.shape"): [t("shapes.each", shape=r.formula) if r.pair else r.formula for r in rows],
        }
    )


def shapes_note(p: Params, style: figures.Style, model: LoadedModel | None = None) -> str:
    """The legend under the shapes table, with ``p``'s numbers (a pretrained ``model``'s: :func:`model_shapes_note`)."""
    if model is not None:
        return model_shapes_note(p, model, style)
    c = style.count
    counts = dict(
        b=1, dm=p.config().d_model, heads=c(p.n_heads, "query_head"), kvs=c(p.n_kv_heads, "kv_head"), d=p.head_dim
    )
    if p.cross:
        return style.t("shapes.note_cross", tq=c(p.t_q, "token"), tk=c(p.t_k, "token"), **counts)
    return style.t("shapes.note", tokens=c(p.t_q, "token"), **counts)


# ---------------------------------------------------------------- the command line's charts
def views(p: Params, style: figures.Style, which: str | Sequence[str] | None = None, device: str = "cpu") -> list[View]:
    """The charts of ``which`` views (default: the page's current view, if it draws one) for ``p``."""
    default = [p.view] if p.view in VIEW_NAMES else ["grid"]
    p = in_language(p, style.lang)
    if p.from_model:
        model = load_model(p.attn_from, device=device)
        att = capture_layer(model, model_text(p), model_layer_of(p, model))
        p, layer = for_model(p, model, att), model_source(att)
    else:
        layer = p.layer()
    out: list[View] = []
    for name in view_list(which, VIEW_NAMES, default):
        if name == "grid":
            out.append(grid_view(grid_maps(layer, p.pool, device=device), style, p.fit))
        elif name == "zoom":
            out.append(grid_view(zoom_maps(layer, p.head, p.zoom_window(), p.pool, device=device), style, p.fit))
        elif name == "steps":
            hw = step_window(layer, p.head, p.q_start, p.k_start, device=device)
            out.extend(step_views(hw, style, step_columns(hw, style)))
        else:
            pm = entropy_maps(layer, device=device)
            out.append(entropy_view(pm.entropy, pm.tokens_q, p.n_heads, p.n_kv_heads, style))
    return out


#: The heatmaps page in the browser test, the fuzz, the colour checks and the benchmarks (PageChecks).
CHECKS = PageChecks(
    slider="head_dim",
    chart="grid",
    presses=3,
    scenarios=(
        Scenario("defaults", {}, "head_dim", (17, 16)),
        Scenario(
            "largest",
            {"source": "synthetic", "seq_len": "8192", "n_heads": "64", "n_kv_heads": "8"},
            "head_dim",
            (17, 16),
            600,
        ),
    ),
    cli="--n-heads 4 --n-kv-heads 2 --d-k 8 --seq-len 8 --mask causal --view all",
    extremes=(
        *HEAD_SHAPES,
        {"cross": "true"},
        {"cross": "true", "n_heads": "1", "n_kv_heads": "1", "cross_text": "x", "mask": "padding"},
        {"cross": "true", "source": "synthetic", "seq_len": "8192", "cross_text": "x"},
    ),
    sub_choices={"grid": {"cscale": ("fixed", "fit"), "pool": ("max", "mean")}, "zoom": {"cscale": ("fixed", "fit")}},
    cases=(
        *({"attn_from": m, "view": v} for m in ("smollm2-135m", "minilm-l6", "gemma3-270m") for v in PAGE_VIEWS),
        {"attn_from": "gemma3-270m", "model_layer": "4", "source": "synthetic", "seq_len": "600", "view": "grid"},
        {"attn_from": "gemma3-270m", "model_layer": "40", "head": "9", "source": "synthetic", "seq_len": "1"},
        {"attn_from": "smollm2-135m", "model_layer": "29", "source": "synthetic", "seq_len": "1"},
        {"attn_from": "smollm2-135m", "model_layer": "99", "head": "63", "n_heads": "64", "mask": "padding"},
        {"attn_from": "minilm-l6", "source": "synthetic", "seq_len": "8192"},
        {"attn_from": "minilm-l6", "text": "小猫坐在垫子上。", "cross": "true"},
    ),
    widget_steps=25,
)


def slide_shown(p: Params, style: figures.Style, steps: dict[str, int], device: str = "cpu") -> Shown:
    """What a slide of this page shows (slide mode): the current view's charts and the summary line; the
    step-by-step view one step a slide (``steps["slide"]``, 1-based) with its sentence; the shapes a table (no
    chart). A pretrained model's layer says its own sentences on the page; here only the charts."""
    p = in_language(p, style.lang)
    said = [] if p.from_model else [summary(p, style)]
    if p.view == "shapes":
        return Shown([], [] if p.from_model else [shapes_note(p, style)])
    charts = views(p, style, None, device)
    if p.view != "steps":
        return Shown(charts, said)
    i = step_at(steps, "slide", len(charts))
    return Shown([charts[i]], ([] if p.from_model else [f"{i + 1}. {explanation(p, i, style)}"]) + said)
