"""The KV-sharing page's view model (MHA, GQA, MQA): its Params, its steps, its texts and its charts.

The page (``app_pages/kv_sharing.py``) and the command line (``python -m attn_core.export
--page kv_sharing``) both turn a :class:`Params` into the seeded layer
(:meth:`Params.layer`, an attention source), run the steps below and draw with the
builders of :mod:`attn_core.figures.kv`, in the same order, so a slide matches the screen.

Long sequences (up to 8192 tokens, 64 heads): the maps view (:func:`group_maps`)
computes the shown heads' weights by chunks of query rows, pooled as they are made
(:mod:`attn_core.attention.longmaps`), with a side (:func:`maps_side`) that keeps the chart's
JSON under 2 MB; the mapping and conversion studies run by chunks, on a stated subset
of query rows when every row would take too long (:mod:`attn_core.kv.convert`). No view
builds the ``[H, T, T]`` maps of a long sequence.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from attn_core.attention.longmaps import PooledMaps, pool_factor, pooled_attention
from attn_core.attention.sources import SeededLayer
from attn_core.figures import Style, block_labels
from attn_core.figures import kv as kvfig
from attn_core.kv.convert import (
    MAPPINGS,
    PAIR_SIDE,
    ConversionStudy,
    MappingMismatch,
    MhaSpec,
    PairMaps,
    check_sim_size,
    conversion_on_tokens,
    is_paper_order,
    kv_map,
    mapping_on_source,
    mismatched_heads,
    mixed_groups,
    pair_from_mismatch,
    pair_on_source,
    rank_methods,
)
from attn_core.kv.costs import attention_costs
from attn_core.kv.memory import dtype_bits
from attn_core.runtime.config import MAX_HEADS, AttentionConfig, ConfigError, attention_kind, check_int, divisors
from attn_core.runtime.units import binary_unit, format_bytes
from attn_core.views.base import (  # noqa: F401
    DEFAULT_TEXT,
    HEAD_SHAPES,
    PageChecks,
    Scenario,
    Shown,  # noqa: F401
    TokenInput,
    View,
    check_choices,
    control,
    step_at,
    view_list,
    with_values,
)

VIEW_FIELD = "kv_view"
VIEW_NAMES = ("diagram", "maps", "costs", "mapping", "convert")  # the page's views, in its order
DTYPES = ("fp32", "fp16", "int8")  # KV-cache element types of the cost view
CONV_SOURCES = ("correlated", "random")  # the MHA layer the conversion view converts, in the control's order
MAX_GROUPS_SHOWN = 8  # KV groups drawn at once in the maps view
MAX_EXPORT_CELLS = 250_000  # beyond this the exported map numbers are the pooled ones drawn
SHOWN_GROUP_LINES = 8  # KV groups the diagram's caption lists


@dataclass(frozen=True)
class Params(TokenInput):
    """Everything the page's controls set; the field names are the URL keys, the controls the widgets and flags."""

    n_heads: int = control(8, "int", lo=1, hi=MAX_HEADS, help="help.n_heads_own_d_model", cli_help="query heads")
    n_kv_heads: int = control(2, "kv_heads", cli_help="KV heads (a divisor of n_heads)")
    head_dim: int = control(16, "int", lo=1, hi=256, help="help.head_dim", cli="--d-k", cli_help="head dimension d_k")
    d_model: int = control(128, "int", lo=8, hi=4096, step=8, help="help.d_model", cli_help="model width d_model")
    kv_view: str = control("diagram", "choice", options=VIEW_NAMES)
    kv_dtype: str = control(
        "fp16",
        "choice",
        options=DTYPES,
        help="help.kv_dtype",
        cli="--dtype",
        cli_help="KV-cache element type of the costs view: fp32, fp16 or int8",
    )
    built_with: str = control(
        "contiguous",
        "choice",
        options=MAPPINGS,
        help="help.built_with",
        cli_help="the mapping the checkpoint of the mapping view was trained with",
    )
    head: int | None = control(
        None,
        "int",
        lo=0,
        hi=MAX_HEADS - 1,
        data=True,
        help="help.kv_head",
        cli_help="the head whose maps the mapping view compares (default: the first that reads another KV head)",
    )
    conv_source: str = control(
        "correlated",
        "choice",
        options=CONV_SOURCES,
        help="help.conv_source",
        cli_help="the MHA layer the convert view converts",
    )
    n_base: int | None = control(
        None,
        "int",
        lo=1,
        hi=MAX_HEADS,
        data=True,
        help="help.n_base",
        cli_help="base heads of a correlated source (default min(2, n_heads))",
    )
    noise: float = control(
        0.3, "float", lo=0.0, hi=1.0, step=0.05, help="help.noise", cli_help="noise of a correlated source's copies"
    )
    kv_first: int = control(
        0,
        "int",
        lo=0,
        hi=MAX_HEADS - MAX_GROUPS_SHOWN,
        data=True,
        help="help.kv_first",
        cli_help="first KV group of the maps view when there are more than 8",
    )
    seed: int = control(0, "seed", cli_help="the layer's seed")

    def __post_init__(self) -> None:
        if self.kv_dtype not in DTYPES:
            options = ", ".join(DTYPES)
            raise ConfigError(
                f"dtype '{self.kv_dtype}' is not offered here; use one of: {options}",
                "kv_dtype",
                "not_offered",
                name="dtype",
                value=self.kv_dtype,
                options=options,
            )
        check_choices(self)

    @property
    def tokens(self) -> tuple[str, ...]:
        return self.input_tokens

    @property
    def t(self) -> int:
        return len(self.tokens)

    @property
    def n_rep(self) -> int:
        return self.n_heads // self.n_kv_heads

    @property
    def kind(self) -> str:
        return attention_kind(self.n_heads, self.n_kv_heads)

    @property
    def mappings_differ(self) -> bool:
        """Whether contiguous and interleaved mappings pair some query head with different KV heads."""
        return bool(mismatched_heads(self.n_heads, self.n_kv_heads))

    def check(self) -> AttentionConfig:
        """The layer's shape, checked with every setting: :class:`ConfigError` naming the field when one is wrong."""
        if not self.tokens:
            raise ConfigError("the text has no tokens; type some words", "text", "no_tokens")
        cfg = AttentionConfig(
            n_heads=self.n_heads,
            n_kv_heads=self.n_kv_heads,
            head_dim=self.head_dim,
            seq_len=self.t,
            d_model=self.d_model,
            seed=self.seed,
        )
        cfg.validate()
        if self.head is not None:
            check_int("head", self.head, 0, self.n_heads - 1)
        self.mha()
        return cfg

    def layer(self) -> SeededLayer:
        """The attention source of the maps and mapping views; :class:`ConfigError` when too large to simulate."""
        check_sim_size(self.d_model, self.n_heads, self.head_dim)
        return SeededLayer(
            self.n_heads, self.n_kv_heads, self.head_dim, self.tokens, d_model=self.d_model, seed=self.seed
        )

    def mha(self) -> MhaSpec:
        """The MHA layer the conversion view converts, with the page's rules for its base heads and noise.

        A random source has no base heads and no noise (1, 0.0); a correlated one takes
        ``n_base`` (default ``min(2, n_heads)``; 1 with one head) and ``noise`` rounded to
        4 decimals, as the page's sliders give them.
        """
        if self.conv_source == "random":
            return MhaSpec("random", self.d_model, self.n_heads, self.head_dim, 1, 0.0, self.seed)
        n_base, noise = self.n_base, self.noise
        if n_base is None or self.n_heads == 1:
            n_base = min(2, self.n_heads)
        n_base = check_int("n_base", n_base, 1, self.n_heads)
        if isinstance(noise, bool) or not isinstance(noise, (int, float)) or not math.isfinite(noise) or noise < 0:
            raise ConfigError(
                f"noise must be a number ≥ 0, got {noise!r}", "noise", "not_negative", name="noise", value=repr(noise)
            )
        noise = round(float(noise), 4)
        return MhaSpec("correlated", self.d_model, self.n_heads, self.head_dim, n_base, noise, self.seed)


def _tag(n_heads: int, n_kv_heads: int) -> str:
    return f"h{n_heads}_kv{n_kv_heads}"


def nice(value: int) -> str:
    """A whole number with thousands separators."""
    return f"{value:,}"


def nbytes(value: int) -> str:
    """Exact bytes, plus the binary unit when that is shorter to read."""
    return f"{value:,} B" if value < 1024 else f"{value:,} B = {format_bytes(value)}"


# ---------------------------------------------------------------- the summary under the controls
def summary(p: Params, style: Style) -> str:
    """The sharing, the shapes and the K/V elements per token, for the current settings."""
    c = style.count
    return style.t(
        "kv.summary",
        kind=p.kind,
        qh=c(p.n_heads, "query_head"),
        kvh=c(p.n_kv_heads, "kv_head"),
        kv=p.n_kv_heads,
        rep_q=c(p.n_rep, "query_head"),
        d=p.head_dim,
        dm=p.d_model,
        toks=c(p.t, "token"),
        elems=nice(2 * p.n_kv_heads * p.head_dim),
        mha=nice(2 * p.n_heads * p.head_dim),
        pct=f"{100 * p.n_kv_heads / p.n_heads:.4g}",
    )


def dmodel_note(p: Params, style: Style) -> str | None:
    """The caption when d_model is not n_heads × d_k (the page lets them differ), else None."""
    hd = p.n_heads * p.head_dim
    return None if p.d_model == hd else style.t("kv.dmodel_note", dm=p.d_model, h=p.n_heads, d=p.head_dim, hd=hd)


# ---------------------------------------------------------------- diagram view
def links_frame(n_heads: int, n_kv_heads: int, mapping: str = "contiguous") -> pd.DataFrame:
    """One row per query head: ``query_head``, the ``kv_head`` it reads under ``mapping``."""
    return pd.DataFrame({"query_head": np.arange(n_heads), "kv_head": kv_map(n_heads, n_kv_heads, mapping)})


def diagram_view(p: Params, style: Style) -> View:
    """Diagram view, left: who reads which K/V (contiguous mapping, as ``repeat_kv``)."""
    return heads_diagram_view(p.n_heads, p.n_kv_heads, style)


def heads_diagram_view(n_heads: int, n_kv_heads: int, style: Style) -> View:
    """:func:`diagram_view` from the only two numbers it depends on (the page caches it by them: moving d_k,
    d_model or the text leaves it as it is)."""
    fig = kvfig.kv_diagram(kv_map(n_heads, n_kv_heads), n_kv_heads, style)
    return View(f"kv_diagram_{_tag(n_heads, n_kv_heads)}", fig, links_frame(n_heads, n_kv_heads))


def repeat_kv_view(p: Params, style: Style) -> View:
    """Diagram view, right: ``repeat_kv`` as tensor blocks; data: every block and the KV head it holds."""
    fig = kvfig.repeat_kv_figure(p.n_heads, p.n_kv_heads, p.t, p.head_dim, style=style)
    data = pd.DataFrame(
        {
            "tensor": ["K, V cache"] * p.n_kv_heads + ["after repeat_kv"] * p.n_heads,
            "head": list(range(p.n_kv_heads)) + list(range(p.n_heads)),
            "kv_head": list(range(p.n_kv_heads)) + kv_map(p.n_heads, p.n_kv_heads),
        }
    )
    return View(f"repeat_kv_{_tag(p.n_heads, p.n_kv_heads)}_t{p.t}_d{p.head_dim}", fig, data)


def group_lines(p: Params, style: Style) -> str:
    """The caption under the diagram: which query heads each KV head serves (the first groups)."""
    n_rep, t = p.n_rep, style.t
    lines = "; ".join(
        t("kv.group_line", g=g, a=g * n_rep, b=(g + 1) * n_rep - 1) if n_rep > 1 else t("kv.group_one", g=g)
        for g in range(min(p.n_kv_heads, SHOWN_GROUP_LINES))
    )
    rest = p.n_kv_heads - SHOWN_GROUP_LINES
    return lines + (t("kv.more_groups", rest=style.count(rest, "kv_head")) if rest > 0 else "")


def repeat_note(p: Params, style: Style) -> str:
    """The caption under the blocks: the cache kept against the copies ``repeat_kv`` makes."""
    return style.t(
        "kv.repeat_note",
        hk=p.n_kv_heads,
        h=p.n_heads,
        t=p.t,
        d=p.head_dim,
        rep=p.n_rep,
        cache=nice(2 * p.n_kv_heads * p.t * p.head_dim),
        full=nice(2 * p.n_heads * p.t * p.head_dim),
    )


def diagram_help(p: Params, style: Style) -> str:
    return style.t(
        "kv.diagram_help.body",
        rep=p.n_rep,
        qh=style.count(p.n_heads, "query_head"),
        kvh=style.count(p.n_kv_heads, "kv_head"),
    )


# ---------------------------------------------------------------- maps view
@dataclass(frozen=True)
class GroupMaps:
    """What the maps view draws, as CPU float32 numpy: the query heads of some KV groups with their K and V.

    ``maps``: the weights of every query head of ``groups`` (in order), pooled as they
    were computed (:func:`attn_core.attention.longmaps.pooled_attention`, block max, ``maps.factor``
    = f; exact when f = 1). ``kt``, ``vt`` ``[G, dk, C]``: Kᵀ and Vᵀ of each KV head of
    ``groups`` (the first ``dk = min(d_k, 64)`` dimensions), each column the mean of the
    same ``f`` keys as the maps' columns.
    """

    maps: PooledMaps
    groups: tuple[int, ...]
    kt: np.ndarray
    vt: np.ndarray
    head_dim: int

    @property
    def factor(self) -> int:
        return self.maps.factor

    def weights_of(self, head: int) -> np.ndarray:
        """The (pooled) map ``[R, C]`` of query head ``head``."""
        return self.maps.weights[self.maps.heads.index(head)]

    def panels(self) -> kvfig.MapPanels:
        """The figure's input: each head's map and each group's Kᵀ, Vᵀ by index."""
        pm = self.maps
        return kvfig.MapPanels(
            dict(zip(pm.heads, pm.weights, strict=True)),
            dict(zip(self.groups, self.kt, strict=True)),
            dict(zip(self.groups, self.vt, strict=True)),
            pm.n_heads,
            pm.n_kv_heads,
            self.groups,
            pm.factor,
            pm.tokens_q,
            pm.tokens_k,
            self.head_dim,
        )


def maps_groups(n_kv_heads: int, kv_first: int = 0) -> list[int]:
    """The KV groups the maps view draws: all of them, or :data:`MAX_GROUPS_SHOWN` from ``kv_first`` on."""
    if n_kv_heads <= MAX_GROUPS_SHOWN:
        if kv_first != 0:
            raise ConfigError(
                f"kv_first ({kv_first}) must be 0: with at most {MAX_GROUPS_SHOWN} KV groups (here {n_kv_heads}) all are shown",
                "kv_first",
                "kv_first_zero",
                value=kv_first,
                n=n_kv_heads,
                most=MAX_GROUPS_SHOWN,
            )
        return list(range(n_kv_heads))
    kv_first = check_int("kv_first", kv_first, 0, n_kv_heads - MAX_GROUPS_SHOWN)
    return list(range(kv_first, kv_first + MAX_GROUPS_SHOWN))


def maps_side(p: Params, n_groups: int, style: Style) -> int:
    """Cells a side of each map in the maps view: 64 (8 heads or fewer) or 40, less when the chart would be too heavy.

    The largest side whose figure (``n_groups`` bands of ``n_rep`` maps and their Kᵀ, Vᵀ,
    :func:`attn_core.figures.kv.maps_layout`) holds at most
    :data:`~attn_core.figures.kv.MAX_MAP_CELLS` heatmap cells, so its JSON stays under 2 MB.
    """
    t = check_int("seq_len", p.t, 1)
    cap = 64 if n_groups * p.n_rep <= 8 else 40
    for side in range(cap, 0, -1):
        r = -(-t // pool_factor(t, t, side))
        if kvfig.maps_layout(p.n_rep, n_groups, (r, r), p.head_dim, style).cells <= kvfig.MAX_MAP_CELLS:
            return side
    return 1


def group_maps(
    layer: SeededLayer, groups: Sequence[int] | None = None, max_side: int = 64, *, device: str = "cpu"
) -> GroupMaps:
    """The maps view's numbers: the query heads of ``groups`` (default all) of ``layer``, and their K and V.

    The weights come from :func:`attn_core.attention.longmaps.pooled_attention` by chunks of query
    rows, pooled to at most ``max_side`` cells a side: the ``[H, T, T]`` maps are never
    built, and for ``T <= max_side`` they are the exact weights. K and V of each group
    come from the same source, block-mean pooled along the keys like the maps' columns.
    """
    n_rep = layer.n_heads // layer.n_kv_heads
    groups = tuple(range(layer.n_kv_heads)) if groups is None else tuple(int(g) for g in groups)
    for g in groups:
        check_int("kv_group", g, 0, layer.n_kv_heads - 1)
    pm = pooled_attention(
        layer, max_side=max_side, heads=[h for g in groups for h in range(g * n_rep, (g + 1) * n_rep)], device=device
    )
    _, k, v = layer.qkv([g * n_rep for g in groups], device, values=True)  # one query head per group brings its K, V
    dk = min(layer.head_dim, kvfig.MAX_DIMS)

    def pooled_t(x: dict) -> np.ndarray:  # {g: (T, D)} -> Kᵀ of the groups (G, dk, C), pooled
        return kvfig.pool_mean_last(np.stack([x[g][:, :dk].T.cpu().float().numpy() for g in groups]), pm.factor)

    return GroupMaps(pm, groups, pooled_t(k), pooled_t(v), layer.head_dim)


def exact_maps(layer: SeededLayer, heads: Sequence[int], *, device: str = "cpu") -> PooledMaps:
    """The unpooled weights of ``heads`` (for the maps view's table when its chart is pooled)."""
    side = max(len(layer.tokens_q), len(layer.keys))
    return pooled_attention(layer, max_side=side, heads=heads, device=device)


def maps_frame(pm: PooledMaps) -> pd.DataFrame:
    """Long table (head, KV head, query, key, weight) of the maps of ``pm`` (position ranges when pooled)."""
    w, f, n_rep = pm.weights, pm.factor, pm.n_heads // pm.n_kv_heads
    lq, lk = block_labels(pm.tokens_q, 0, len(pm.tokens_q), f), block_labels(pm.tokens_k, 0, len(pm.tokens_k), f)
    hh, qq, kk = np.meshgrid(np.array(pm.heads), np.arange(w.shape[1]), np.arange(w.shape[2]), indexing="ij")
    return pd.DataFrame(
        {
            "head": hh.ravel(),
            "kv_head": hh.ravel() // n_rep,
            "query": np.array(lq, dtype=object)[qq.ravel()],
            "key": np.array(lk, dtype=object)[kk.ravel()],
            "weight": w.ravel(),
        }
    )


def maps_table(gm: GroupMaps, layer: SeededLayer) -> pd.DataFrame:
    """The maps view's numbers: exact weights while the shown heads hold at most :data:`MAX_EXPORT_CELLS`
    cells (:func:`exact_maps` when the chart is pooled), else the pooled ones drawn."""
    pm = gm.maps
    if pm.factor > 1 and len(pm.heads) * len(pm.tokens_q) * len(pm.tokens_k) <= MAX_EXPORT_CELLS:
        return maps_frame(exact_maps(layer, pm.heads, device=pm.device))
    return maps_frame(pm)


def maps_view(gm: GroupMaps, layer: SeededLayer, style: Style) -> View:
    """Maps view: the weights of the query heads of ``gm.groups``, banded by KV head with its K and V."""
    pm, groups = gm.maps, gm.groups
    name = f"kv_maps_{_tag(pm.n_heads, pm.n_kv_heads)}_d{gm.head_dim}_t{len(pm.tokens_q)}"
    if len(groups) < pm.n_kv_heads:
        name += f"_groups{groups[0]}-{groups[-1]}"
    return View(name, kvfig.maps_figure(gm.panels(), style), lambda: maps_table(gm, layer))


def group_spread(gm: GroupMaps) -> list[float]:
    """Per shown KV group: the largest ``|w_h − w_first|`` between the maps of its heads and its first head's.

    Measured on the maps as drawn: exact weights when ``gm.factor`` is 1, block maxima otherwise.
    """
    n_rep = gm.maps.n_heads // gm.maps.n_kv_heads
    out = []
    for g in gm.groups:
        w = np.stack([gm.weights_of(h) for h in range(g * n_rep, (g + 1) * n_rep)])
        diff = np.abs(w - w[0][None])
        out.append(float(np.nanmax(diff)) if np.isfinite(diff).any() else 0.0)
    return out


def maps_differ(p: Params, gm: GroupMaps, style: Style) -> str:
    """What the maps show: the group whose heads differ most (and by how much), or that MHA shares nothing."""
    if p.n_rep == 1:
        return style.t("kv.maps_mha")
    spread = group_spread(gm)
    g = gm.groups[int(np.argmax(spread))]
    text = style.t("kv.maps_differ", g=g, a=g * p.n_rep, b=(g + 1) * p.n_rep - 1, diff=f"{max(spread):.3f}")
    return text + (style.t("kv.maps_differ_pooled", f=gm.factor) if gm.factor > 1 else "")


def maps_help(gm: GroupMaps, style: Style) -> str:
    """How to read the maps: exact weights (rows sum to 1) or block maxima of pooled ones."""
    if gm.factor == 1:
        weights = style.t("kv.maps_help_exact")
    else:
        r, c = gm.maps.weights.shape[-2:]
        tq, tk = nice(len(gm.maps.tokens_q)), nice(len(gm.maps.tokens_k))
        weights = style.t("kv.maps_help_pooled", f=gm.factor, r=r, c=c, tq=tq, tk=tk)
    return style.t("kv.maps_help.body", weights=weights)


# ---------------------------------------------------------------- costs view
def cost_frame(p: Params) -> pd.DataFrame:
    """:func:`attn_core.kv.costs.attention_costs` for every ``n_kv_heads`` dividing ``n_heads``, one row each.

    Columns: ``n_kv_heads``, ``kind`` (MHA/GQA/MQA), ``current`` (the row of the page's
    ``n_kv_heads``), ``dtype``, then every key of ``attention_costs`` (parameters, KV
    elements and bytes per token and for the page's tokens, FLOPs of one decoding step).
    """
    size = dtype_bits(p.kv_dtype) // 8
    rows = []
    for d in divisors(p.n_heads):
        c = attention_costs(p.d_model, p.n_heads, d, p.head_dim, p.t, bytes_per_element=size)
        head = {
            "n_kv_heads": d,
            "kind": attention_kind(p.n_heads, d),
            "current": d == p.n_kv_heads,
            "dtype": p.kv_dtype,
        }
        rows.append(head | {k: v for k, v in c.items() if k != "n_kv_heads"})
    return pd.DataFrame(rows)


def bytes_view(p: Params, frame: pd.DataFrame, style: Style) -> View:
    """Costs view: KV-cache bytes per token per layer for every ``n_kv_heads``; data: every cost of each choice."""
    kv_bytes = frame["kv_bytes_per_token"].tolist()
    unit = binary_unit(max(kv_bytes))
    fig = kvfig.kv_bytes_figure(frame["n_kv_heads"].tolist(), kv_bytes, p.n_heads, p.n_kv_heads, unit, style)
    return View(f"kv_bytes_{_tag(p.n_heads, p.n_kv_heads)}_d{p.head_dim}_{p.kv_dtype}", fig, frame)


COST_COLUMNS = ("current", "mha", "mqa")  # the cost table's columns: the page's n_kv_heads, MHA, MQA


def _cost_value(row: dict, key: str) -> int:
    if key == "flops_proj":
        return row["flops_q_proj"] + row["flops_k_proj"] + row["flops_v_proj"] + row["flops_o_proj"]
    if key == "flops_attn":
        return row["flops_scores"] + row["flops_weighted_sum"]
    return row[key]


def _cost_rows(p: Params, per_token: int, style: Style) -> list[tuple[str, str, object]]:
    """(row key, formula with the page's numbers, number format) of every row of the cost table."""
    dm, h, kv, d, t = p.d_model, p.n_heads, p.n_kv_heads, p.head_dim, p.t
    el = dtype_bits(p.kv_dtype) // 8
    return [
        ("params_q", f"d_model × H × d_k = {dm} × {h} × {d}", nice),
        ("params_k", f"d_model × H_kv × d_k = {dm} × {kv} × {d}", nice),
        ("params_v", f"d_model × H_kv × d_k = {dm} × {kv} × {d}", nice),
        ("params_o", f"H × d_k × d_model = {h} × {d} × {dm}", nice),
        ("params_total", "W_Q + W_K + W_V + W_O", nice),
        ("kv_elements_per_token", f"2 × H_kv × d_k = 2 × {kv} × {d}", nice),
        ("kv_bytes_per_token", f"2 × H_kv × d_k × {el} B = 2 × {kv} × {d} × {el} B", nbytes),
        ("kv_bytes_seq", f"… × T = {nice(per_token)} B × {t}", nbytes),
        ("flops_proj", f"2 × d_model × (2H + 2H_kv) × d_k = 2 × {dm} × ({2 * h} + {2 * kv}) × {d}", nice),
        ("flops_attn", f"2 × 2 × H × T × d_k = 4 × {h} × {t} × {d}", nice),
        ("flops_total", style.t("kv.row_sum"), nice),
    ]


def _cost_columns(p: Params, frame: pd.DataFrame) -> dict[str, dict]:
    """The cost-table row of each column of :data:`COST_COLUMNS`."""
    by_kv = {row["n_kv_heads"]: row for row in frame.to_dict("records")}
    return {"current": by_kv[p.n_kv_heads], "mha": by_kv[p.n_heads], "mqa": by_kv[1]}


def cost_table(p: Params, frame: pd.DataFrame, style: Style) -> pd.DataFrame:
    """Parameters, KV cache and FLOPs of the page's layer, MHA and MQA, each with its formula and numbers."""
    cols = _cost_columns(p, frame)
    rows = _cost_rows(p, cols["current"]["kv_bytes_per_token"], style)
    kv_of = {"current": p.n_kv_heads, "mha": p.n_heads, "mqa": 1}
    table = {
        style.t("kv.col_quantity"): [style.t(f"kv.row_{key}", t=p.t) for key, _, _ in rows],
        style.t("kv.col_formula"): [formula for _, formula, _ in rows],
    }
    for name in COST_COLUMNS:
        label = style.t(f"kv.col_{name}", kind=p.kind, kv=kv_of[name])
        table[label] = [fmt(_cost_value(cols[name], key)) for key, _, fmt in rows]
    return pd.DataFrame(table)


def cost_notes(p: Params, frame: pd.DataFrame, style: Style) -> list[str]:
    """The captions under the cost table: what the sharing saves against MHA, and what the attention costs."""
    cols = _cost_columns(p, frame)
    cur = cols["current"]
    if p.kind == "MHA":
        ratio = style.t("kv.cost_ratio_mha")
    else:
        saved = nbytes(cols["mha"]["kv_bytes_per_token"] - cur["kv_bytes_per_token"])
        pct = f"{100 * p.n_kv_heads / p.n_heads:.4g}"
        ratio = style.t("kv.cost_ratio", kind=p.kind, pct=pct, kv=p.n_kv_heads, h=p.n_heads, saved=saved)
    flops = style.t(
        "kv.flops_note",
        h=p.n_heads,
        t=p.t,
        keys=style.count(p.t, "key"),
        before=style.count(p.t - 1, "token"),
        d=p.head_dim,
        attn=nice(_cost_value(cur, "flops_attn")),
    )
    return [ratio, flops]


# ---------------------------------------------------------------- mapping view
def mapping_diagram_views(p: Params, style: Style) -> list[View]:
    """Mapping view: the contiguous and the interleaved diagrams (in :data:`MAPPINGS` order), each with its links."""
    titles = {
        "contiguous": style.t("kv.map_contiguous", rep=p.n_rep),
        "interleaved": style.t("kv.map_interleaved", kv=p.n_kv_heads),
    }
    if style.present:  # half a slide each: the calls that make the mapping on a line of their own, at 20 px
        titles = {m: _call_below(title, style) for m, title in titles.items()}
    return [
        View(
            f"mapping_{m}_{_tag(p.n_heads, p.n_kv_heads)}",
            kvfig.kv_diagram(kv_map(p.n_heads, p.n_kv_heads, m), p.n_kv_heads, style, titles[m]),
            links_frame(p.n_heads, p.n_kv_heads, m),
        )
        for m in MAPPINGS
    ]


def _call_below(title: str, style: Style) -> str:
    """``"Contiguous: head h → KV h // 4 (repeat_kv, repeat_interleave)"`` with its bracketed calls as a line under
    it (:func:`~attn_core.figures.kv.with_sub`)."""
    cut = max(title.rfind(" ("), title.rfind("（"))
    if cut < 0 or not title.endswith((")", "）")):
        return title
    return kvfig.with_sub(title[:cut].rstrip(), title[cut:].strip()[1:-1], style)


def mapping_code(p: Params, style: Style) -> str:
    """The two PyTorch calls that expand K, each with the KV head every query head then reads."""
    calls = [f"k.repeat_interleave({p.n_rep}, dim=1)", f"k.repeat(1, {p.n_rep}, 1, 1)"]
    width = max(map(len, calls)) + 2
    maps = [kv_map(p.n_heads, p.n_kv_heads, m) for m in MAPPINGS]
    return (
        f"# {style.t('kv.code_k', kv=p.n_kv_heads, t=p.t, d=p.head_dim)}\n"
        f"{calls[0]:<{width}}# {style.t('kv.code_contiguous', m=maps[0])}\n"
        f"{calls[1]:<{width}}# {style.t('kv.code_interleaved', m=maps[1])}"
    )


def mapping_same(p: Params, style: Style) -> str:
    """The notice when both conventions pair every query head with the same KV head (MHA, MQA)."""
    return style.t("kv.mapping_same", kind=p.kind)


def mapping_study(layer: SeededLayer, built_with: str, *, device: str = "cpu") -> MappingMismatch:
    """The layer run with the mapping it was built with and with the other one (KL per head)."""
    return mapping_on_source(layer, built_with, device)


def first_wrong_head(mm: MappingMismatch) -> int:
    """The first query head that reads another KV head under the wrong mapping (0 when none does)."""
    return next((h for h, (a, b) in enumerate(zip(mm.built, mm.run, strict=True)) if a != b), 0)


def kept_pair(mm: MappingMismatch, head: int) -> PairMaps | None:
    """The pair maps of ``head`` from a study that kept every map (short sequences), else None."""
    return pair_from_mismatch(mm, head) if mm.full else None


def pair_maps(layer: SeededLayer, built_with: str, head: int, *, device: str = "cpu") -> PairMaps:
    """The pair maps of ``head`` alone, by chunks of rows (long sequences, whose study kept no maps)."""
    return pair_on_source(layer, head, built_with, PAIR_SIDE, device)


def rows_note(n_rows: int, t_q: int, step: int, style: Style) -> str:
    """``measured on 32 of 8192 query rows (0, 256, 512, …), each against all 8192 keys``, translated."""
    return style.t("kvfig.rows_note", n=f"{n_rows:,}", t=f"{t_q:,}", step=step, step2=2 * step)


def mismatch_view(mm: MappingMismatch, style: Style) -> View:
    """Mapping view: mean KL per query head when a checkpoint runs with the other mapping."""
    n = len(mm.built)
    note = rows_note(mm.kl_rows, mm.t_q, mm.row_step, style) if mm.subset else None
    fig = kvfig.mismatch_figure(mm.kl, mm.built, mm.run, style=style, note=note)
    data = pd.DataFrame(
        {
            "query_head": range(n),
            "kv_head_built": mm.built,
            "kv_head_run": mm.run,
            "mean_kl_nats": mm.kl,
            "query_rows_measured": mm.kl_rows,
        }
    )
    return View(f"mapping_mismatch_{mm.built_with}_{_tag(n, len(set(mm.built)))}", fig, data)


def mismatch_rows(p: Params, mm: MappingMismatch, style: Style) -> str | None:
    """The caption when the KL was measured on a subset of the query rows, else None."""
    if not mm.subset:
        return None
    step = mm.row_step
    return style.t("kv.mismatch_rows", n=nice(mm.kl_rows), t=nice(p.t), step=step, step2=2 * step, h=p.n_heads)


def pair_view(mm: MappingMismatch, head: int, tokens: Sequence[str], style: Style, pair: PairMaps) -> View:
    """Mapping view: the map of query ``head`` as built and as run with the other mapping, side by side."""
    n = len(mm.built)
    head = check_int("head", head, 0, n - 1)
    if pair.head != head:
        raise ConfigError(
            f"the pair maps are of head {pair.head}, not {head}", "head", "pair_head", got=pair.head, head=head
        )
    a, b, f = pair.kv_built, pair.kv_run, pair.factor
    titles = (
        style.t("kv.pair_built", h=head, g=a, m=style.t(f"opt.built_with.{mm.built_with}")),
        style.t("kv.pair_run", h=head, g=b, m=style.t(f"opt.built_with.{mm.run_with}")),
    )
    if style.present:  # a slide: one 20 px line over each map (the sentence under it names the conventions)
        titles = (style.t("kv.pair_built_short", g=a), style.t("kv.pair_run_short", g=b))
    fig = kvfig.pair_maps_figure(pair, tokens, titles, style, PAIR_SIDE)
    labels_q = np.array(block_labels(tuple(tokens), 0, pair.t_q, f), dtype=object)  # positions of blocks when pooled
    labels_k = np.array(block_labels(tuple(tokens), 0, pair.t_k, f), dtype=object)
    data = pd.DataFrame(
        {
            "query": np.repeat(labels_q, len(labels_k)),
            "key": np.tile(labels_k, len(labels_q)),
            f"weight_{mm.built_with}_kv{a}": pair.weights_built.ravel(),
            f"weight_{mm.run_with}_kv{b}": pair.weights_run.ravel(),
        }
    )
    return View(f"mapping_head{head}_{mm.built_with}_{_tag(n, len(set(mm.built)))}", fig, data)


def pair_text(mm: MappingMismatch, pair: PairMaps, style: Style) -> str:
    """What the pair shows: the same KV head either way, or two KV heads with the KL and the largest change."""
    h, a, b = pair.head, pair.kv_built, pair.kv_run
    if a == b:
        return style.t("kv.pair_same", h=h, g=a)
    return style.t("kv.pair_diff", h=h, a=a, b=b, kl=f"{mm.kl[h]:.4f}", diff=f"{pair.max_diff:.3f}")


def mismatch_count(mm: MappingMismatch, style: Style) -> str:
    wrong = sum(a != b for a, b in zip(mm.built, mm.run, strict=True))
    return style.t("kv.mismatch_count", n=wrong, h=len(mm.built))


def mapping_help(p: Params, style: Style) -> str:
    """The mapping view's help, with how many query heads the other convention would pair with another KV head."""
    wrong = len(mismatched_heads(p.n_heads, p.n_kv_heads))
    if wrong == 0:
        effect = style.t("kv.mapping_effect_none", kind=p.kind)
    else:
        effect = style.t("kv.mapping_effect", n=wrong, h=p.n_heads, pct=f"{100 * wrong / p.n_heads:.3g}")
    return style.t("kv.mapping_help.body", rep=str(p.n_rep), kv=p.n_kv_heads, effect=effect)


# ---------------------------------------------------------------- conversion view
def conversion(spec: MhaSpec, tokens: tuple[str, ...], *, device: str = "cpu") -> ConversionStudy:
    """MHA -> GQA for every divisor of ``n_heads``: output error and map KL per method."""
    return conversion_on_tokens(spec, tokens, device)


def conversion_view(study: ConversionStudy, p: Params, style: Style) -> View:
    """Conversion view: output error and map KL of MHA -> GQA for every ``n_kv_heads``, per method."""
    note = rows_note(study.n_rows, study.t_q, study.row_step, style) if study.subset else None
    fig = kvfig.conversion_figure(study.n_kv, study.rel_l2, study.kl, p.n_heads, p.n_kv_heads, style, note)
    data = pd.DataFrame(
        {
            "n_kv_heads": list(study.n_kv),
            **{f"rel_l2_{m}": study.rel_l2[m] for m in study.rel_l2},
            **{f"mean_kl_{m}": study.kl[m] for m in study.kl},
            "query_rows_measured": study.n_rows,
        }
    )
    spec = p.mha()
    name = f"mha_to_gqa_{study.source}_h{p.n_heads}"
    if study.source == "correlated":
        name += f"_base{spec.n_base}_noise{spec.noise:g}"
    return View(name, fig, data)


def conversion_now(p: Params, study: ConversionStudy, style: Style) -> str:
    """The errors of the page's own ``n_kv_heads``, per method."""
    i = list(study.n_kv).index(p.n_kv_heads)
    l2, kl = study.rel_l2, study.kl
    return style.t(
        "kv.conv_now",
        kv=p.n_kv_heads,
        kind=p.kind,
        mean=f"{l2['mean'][i]:.3f}",
        first=f"{l2['first'][i]:.3f}",
        rnd=f"{l2['random'][i]:.3f}",
        kl_mean=f"{kl['mean'][i]:.4f}",
        kl_first=f"{kl['first'][i]:.4f}",
        kl_rnd=f"{kl['random'][i]:.4f}",
    )


def conversion_rows(p: Params, study: ConversionStudy, style: Style) -> str | None:
    """The caption when the study measured a subset of the query rows, else None."""
    if not study.subset:
        return None
    step = study.row_step
    runs = 1 + len(study.n_kv) * len(study.rel_l2)  # the source and every converted layer
    return style.t("kv.conv_rows", n=nice(study.n_rows), t=nice(p.t), step=step, step2=2 * step, runs=runs)


def source_note(p: Params, style: Style) -> str:
    """The caption under the conversion chart: the source layer and, for correlated heads, the current groups."""
    heads = style.count(p.n_heads, "head")
    spec = p.mha()
    if spec.kind == "random":
        return style.t("kv.conv_source_random", heads=heads)
    mixed = mixed_groups(p.n_heads, p.n_kv_heads, spec.n_base)
    if mixed:
        groups = style.t("kv.conv_groups_mixed", kv=p.n_kv_heads, m=mixed, g=p.n_kv_heads)
    else:
        groups = style.t("kv.conv_groups_pure", kv=p.n_kv_heads)
    return style.t(
        "kv.conv_source_correlated",
        heads=heads,
        bases=style.count(spec.n_base, "base_head"),
        noise=f"{spec.noise:g}",
        groups=groups,
    )


def ranking(values: dict[str, float], decimals: int, style: Style) -> tuple[str, bool]:
    """The methods from the smallest error up as text ("mean-pooled 0.919 < …"), and whether that is the paper's order."""
    groups = rank_methods(values, decimals)
    text = " < ".join(
        " = ".join(f"{style.t(f'kv.method.{m}')} {values[m]:.{decimals}f}" for m in group) for group in groups
    )
    return text, is_paper_order(groups)


def uptrain_help(p: Params, study: ConversionStudy, style: Style) -> str:
    """The uptraining note, with how the chart ranks the conversions at the page's ``n_kv_heads``."""
    i = list(study.n_kv).index(p.n_kv_heads)
    out: dict[str, object] = {"kv": p.n_kv_heads}
    for name, data, decimals in (("l2", study.rel_l2, 3), ("kl", study.kl, 4)):
        text, as_paper = ranking({m: float(v[i]) for m, v in data.items()}, decimals, style)
        out[name] = text
        out[f"{name}_cmp"] = style.t("kv.order_paper" if as_paper else "kv.order_not_paper")
    return style.t("kv.uptrain.body", **out)


# ---------------------------------------------------------------- the command line's charts
def _diagram_views(p: Params, style: Style, device: str) -> list[View]:
    return [diagram_view(p, style), repeat_kv_view(p, style)]


def _maps_views(p: Params, style: Style, device: str) -> list[View]:
    layer = p.layer()
    groups = maps_groups(p.n_kv_heads, p.kv_first)
    gm = group_maps(layer, groups, maps_side(p, len(groups), style), device=device)
    return [maps_view(gm, layer, style)]


def _costs_views(p: Params, style: Style, device: str) -> list[View]:
    return [bytes_view(p, cost_frame(p), style)]


def _mapping_views(p: Params, style: Style, device: str) -> list[View]:
    out = mapping_diagram_views(p, style)
    if p.mappings_differ:
        layer = p.layer()
        mm = mapping_study(layer, p.built_with, device=device)
        head = first_wrong_head(mm) if p.head is None else p.head
        pair = kept_pair(mm, head) or pair_maps(layer, p.built_with, head, device=device)
        out += [mismatch_view(mm, style), pair_view(mm, head, p.tokens, style, pair)]
    return out


def _convert_views(p: Params, style: Style, device: str) -> list[View]:
    return [conversion_view(conversion(p.mha(), p.tokens, device=device), p, style)]


VIEW_BUILDERS = {
    "diagram": _diagram_views,
    "maps": _maps_views,
    "costs": _costs_views,
    "mapping": _mapping_views,
    "convert": _convert_views,
}


def wanted_views(which: str | Sequence[str] | None) -> list[str]:
    """The views a command line asked for (default: all), in the page's order; an unknown name is an error."""
    try:
        asked = view_list(which, VIEW_NAMES, VIEW_NAMES)
    except ConfigError as exc:
        asked = [str(exc.params.get("value"))]
    unknown = [v for v in asked if v not in VIEW_NAMES]
    if unknown or not asked:
        shown, options = ", ".join(unknown) or "(none)", ", ".join(VIEW_NAMES)
        raise ConfigError(
            f"view {shown} is not known; use: {options}", "view", "unknown_view", value=shown, options=options
        )
    return [v for v in VIEW_NAMES if v in asked]


def views(p: Params, style: Style, which: str | Sequence[str] | None = None, device: str = "cpu") -> list[View]:
    """The charts of ``which`` views (default: every view, as the command line always gave) for ``p``.

    Every setting is checked first (:meth:`Params.check`), so a bad value fails before any file is written.
    """
    p.check()
    wanted = wanted_views(which)
    out: list[View] = []
    for name in wanted:
        out += VIEW_BUILDERS[name](p, style, device)
    return out


#: The KV sharing page in the browser test, the fuzz, the colour checks and the benchmarks (PageChecks).
CHECKS = PageChecks(
    slider="head_dim",
    chart="repeat_kv",
    scenarios=(
        Scenario("defaults", {}, "head_dim", (17, 16)),
        Scenario(
            "largest",
            {"source": "synthetic", "seq_len": "8192", "n_heads": "64", "n_kv_heads": "8", "kv_view": "maps"},
            "head_dim",
            (17, 16),
            600,
        ),
    ),
    cli="--n-heads 4 --n-kv-heads 2 --d-k 8 --seq-len 8 --view all",
    extremes=(*HEAD_SHAPES, {"d_model": "8"}, {"d_model": "4096", "n_heads": "64", "n_kv_heads": "8"}),
    sub_choices={
        "mapping": {"built_with": ("contiguous", "interleaved")},
        "convert": {"conv_source": ("correlated", "random")},
    },
)


def slide_shown(p: Params, style: Style, steps: dict[str, int], device: str = "cpu") -> Shown:
    """What a slide of this page shows: the current view's charts (``p.kv_view``) and the summary line; the
    mapping view, where the two conventions differ, one part a slide (``steps["slide"]``, 1-based): the two
    diagrams, the mismatch of every head, one head's maps."""
    shown = views(p, style, p.kv_view, device)
    if p.kv_view == "mapping" and p.mappings_differ:
        shown = [shown[:2], shown[2:3], shown[3:]][step_at(steps, "slide", 3)]
    return Shown(shown, [summary(p, style)])
