"""Page: KV sharing. MHA, GQA and MQA side by side: who reads which K/V, the maps, the costs, conversion."""

import hashlib
import json

import numpy as np
import pandas as pd
import streamlit as st

import ui
from attn_core import fig_kv
from attn_core.config import AttentionConfig, ConfigError
from attn_core.convert import (
    MAPPINGS,
    ConversionStudy,
    conversion_on_tokens,
    is_paper_order,
    kv_map,
    mapping_on_tokens,
    mismatched_heads,
    mixed_groups,
    pair_from_mismatch,
    pair_on_tokens,
    rank_methods,
)
from attn_core.guard import run_with_fallback
from attn_core.memory import dtype_bits, format_bytes

DEFAULT_TEXT = "The cat sat on the mat because it was tired ."


# The page's computations: attn_core functions of (..., tokens=..., device=...), CPU numpy out.
COMPUTE = {
    "maps": fig_kv.group_maps,  # the shown groups' maps, pooled by chunks of rows
    "mapping": mapping_on_tokens,  # the layer run with the mapping it was built with and with the other one
    "pair": pair_on_tokens,  # one head's pair of maps by chunks of rows (long sequences)
    "conversion": conversion_on_tokens,  # MHA -> GQA for every divisor of n_heads
}


@st.cache_data(max_entries=48, show_spinner=False)
def computed(what: str, tokens_id: str, _tokens: tuple[str, ...], device_name: str, **kwargs):
    """``COMPUTE[what](tokens=_tokens, device=..., **kwargs)``, cached by primitive arguments.

    ``tokens_id`` (:func:`tokens_key`) stands for the tokens in the cache key:
    Streamlit hashes a tuple element by element, about 40 ms for 8192 tokens on
    every call. A CUDA out-of-memory error reruns the computation on the CPU.
    """
    fn = COMPUTE[what]
    return run_with_fallback(lambda dev: fn(tokens=_tokens, device=dev, **kwargs), device_name)[0]


def tokens_key(tokens: list[str]) -> str:
    """A digest of the token sequence: its key in the page's cache."""
    return hashlib.blake2b(json.dumps(tokens).encode(), digest_size=16).hexdigest()


def n(value: int) -> str:
    """A whole number with thousands separators."""
    return f"{value:,}"


def nbytes(value: int) -> str:
    """Exact bytes, plus the binary unit when that is shorter to read."""
    return f"{value:,} B" if value < 1024 else f"{value:,} B = {format_bytes(value)}"


def maps_weights_help(gm: fig_kv.GroupMaps) -> str:
    """What the drawn maps are: exact weights (rows sum to 1) or block maxima of pooled ones."""
    if gm.factor == 1:
        return ui.t("kv.maps_help_exact")
    r, c = gm.maps.weights.shape[-2:]
    t_q, t_k = len(gm.maps.tokens_q), len(gm.maps.tokens_k)
    return ui.t("kv.maps_help_pooled", f=gm.factor, r=r, c=c, tq=n(t_q), tk=n(t_k))


def mapping_effect(n_heads: int, n_kv_heads: int, kind: str) -> str:
    """How many query heads the other mapping convention would pair with another KV head, for these settings."""
    wrong = len(mismatched_heads(n_heads, n_kv_heads))
    if wrong == 0:
        return ui.t("kv.mapping_effect_none", kind=kind)
    return ui.t("kv.mapping_effect", n=wrong, h=n_heads, pct=f"{100 * wrong / n_heads:.3g}")


def ranking(values: dict[str, float], decimals: int) -> tuple[str, bool]:
    """The methods from the smallest error up as text ("mean-pooled 0.919 < …"), and whether that is the paper's order."""
    groups = rank_methods(values, decimals)
    text = " < ".join(
        " = ".join(f"{ui.t(f'kv.method.{m}')} {values[m]:.{decimals}f}" for m in group) for group in groups
    )
    return text, is_paper_order(groups)


def uptrain_ranking(study: ConversionStudy, i: int, n_kv_heads: int) -> dict[str, object]:
    """The uptraining note's measured part: how the chart ranks the conversions at ``study.n_kv[i]``."""
    out: dict[str, object] = {"kv": n_kv_heads}
    for name, data, decimals in (("l2", study.rel_l2, 3), ("kl", study.kl, 4)):
        text, as_paper = ranking({m: float(v[i]) for m, v in data.items()}, decimals)
        out[name] = text
        out[f"{name}_cmp"] = ui.t("kv.order_paper" if as_paper else "kv.order_not_paper")
    return out


def source_note(conv_source: str, n_heads: int, n_kv_heads: int, n_base: int, noise: float) -> str:
    """The caption under the conversion chart: the source layer and, for correlated heads, the current groups."""
    heads = ui.count(n_heads, "head")
    if conv_source == "random":
        return ui.t("kv.conv_source_random", heads=heads)
    mixed = mixed_groups(n_heads, n_kv_heads, n_base)
    groups = (
        ui.t("kv.conv_groups_mixed", kv=n_kv_heads, m=mixed, g=n_kv_heads)
        if mixed
        else ui.t("kv.conv_groups_pure", kv=n_kv_heads)
    )
    return ui.t(
        "kv.conv_source_correlated",
        heads=heads,
        bases=ui.count(n_base, "base_head"),
        noise=f"{noise:g}",
        groups=groups,
    )


ui.page_guard()
st.title(ui.t("kv.title"))
st.caption(ui.t("kv.intro"))
ui.random_weights_note()

with ui.controls_box():
    c1, c2, c3 = st.columns([1.3, 1, 1], gap="large")
    with c1:
        tokens = ui.token_input(DEFAULT_TEXT)
    with c2:
        n_heads = ui.int_slider("n_heads", 1, 64, 8, help_key="help.n_heads_own_d_model")
        n_kv_heads = ui.kv_heads_select(n_heads, 2)
    with c3:
        head_dim = ui.int_slider("head_dim", 1, 256, 16, help_key="help.head_dim")
        d_model = ui.int_slider("d_model", 8, 4096, 128, step=8, help_key="help.d_model")

if not tokens:
    ui.show_error(ConfigError(ui.t("heatmap.no_tokens"), "text"))
    st.stop()

seed = ui.seed()
cfg = AttentionConfig(
    n_heads=n_heads, n_kv_heads=n_kv_heads, head_dim=head_dim, seq_len=len(tokens), d_model=d_model, seed=seed
)
if ui.run_safely(cfg.validate) is None:
    st.stop()
T = len(tokens)
cache_args = (tokens_key(tokens), tuple(tokens), ui.device())  # (tokens_id, _tokens, device_name) of computed()
shape = dict(n_heads=n_heads, n_kv_heads=n_kv_heads, head_dim=head_dim, d_model=d_model, seed=seed)
n_rep = cfg.n_rep
kind = cfg.kind
kv_elems = 2 * n_kv_heads * head_dim
st.markdown(
    ui.t(
        "kv.summary",
        kind=kind,
        qh=ui.count(n_heads, "query_head"),
        kvh=ui.count(n_kv_heads, "kv_head"),
        kv=n_kv_heads,
        rep_q=ui.count(n_rep, "query_head"),
        d=head_dim,
        dm=d_model,
        toks=ui.count(T, "token"),
        elems=n(kv_elems),
        mha=n(2 * n_heads * head_dim),
        pct=f"{100 * n_kv_heads / n_heads:.4g}",
    )
)
if d_model != n_heads * head_dim:
    st.caption(ui.t("kv.dmodel_note", dm=d_model, h=n_heads, d=head_dim, hd=n_heads * head_dim))

style = ui.style()
view = ui.choice("kv_view", ["diagram", "maps", "costs", "mapping", "convert"], "diagram")


if view == "diagram":
    left, right = st.columns([1.15, 1], gap="medium")
    with left:
        v = fig_kv.diagram_view(n_heads, n_kv_heads, style)
        ui.show_view(v, "kv_diagram", name=v.name)
        groups_txt = "; ".join(
            ui.t("kv.group_line", g=g, a=g * n_rep, b=(g + 1) * n_rep - 1) if n_rep > 1 else ui.t("kv.group_one", g=g)
            for g in range(min(n_kv_heads, 8))
        )
        more = ui.t("kv.more_groups", rest=ui.count(n_kv_heads - 8, "kv_head")) if n_kv_heads > 8 else ""
        st.caption(groups_txt + more)
    with right:
        v = fig_kv.repeat_kv_view(n_heads, n_kv_heads, T, head_dim, style)
        ui.show_view(v, "repeat_kv", name=v.name)
        st.caption(
            ui.t(
                "kv.repeat_note",
                hk=n_kv_heads,
                h=n_heads,
                t=T,
                d=head_dim,
                rep=n_rep,
                cache=n(2 * n_kv_heads * T * head_dim),
                full=n(2 * n_heads * T * head_dim),
            )
        )
    ui.help_expander(
        "kv.diagram_help", rep=n_rep, qh=ui.count(n_heads, "query_head"), kvh=ui.count(n_kv_heads, "kv_head")
    )

elif view == "maps":
    first = 0
    if n_kv_heads > fig_kv.MAX_GROUPS_SHOWN:
        first = ui.int_slider("kv_first", 0, n_kv_heads - fig_kv.MAX_GROUPS_SHOWN, 0, help_key="help.kv_first")
    groups = fig_kv.maps_groups(n_kv_heads, first)
    side = fig_kv.maps_side(n_heads, n_kv_heads, head_dim, T, len(groups), style)
    gm = ui.run_safely(lambda: computed("maps", *cache_args, **shape, groups=tuple(groups), max_side=side))
    if gm is None:
        st.stop()
    ui.fell_back_to_cpu(gm.maps.device)
    v = fig_kv.maps_view(gm, style)
    ui.show_view(v, "kv_maps", name=v.name)
    if n_rep > 1:
        spread = fig_kv.group_spread(gm)
        g_best = groups[int(np.argmax(spread))]
        differ = ui.t(
            "kv.maps_differ", g=g_best, a=g_best * n_rep, b=(g_best + 1) * n_rep - 1, diff=f"{max(spread):.3f}"
        )
        st.markdown(differ + (ui.t("kv.maps_differ_pooled", f=gm.factor) if gm.factor > 1 else ""))
    else:
        st.markdown(ui.t("kv.maps_mha"))
    ui.help_expander("kv.maps_help", weights=maps_weights_help(gm))

elif view == "costs":
    dtype = ui.choice("kv_dtype", list(fig_kv.DTYPES), "fp16", help_key="help.kv_dtype")
    nbytes_el = dtype_bits(dtype) // 8
    bytes_view = fig_kv.kv_bytes_view(d_model, n_heads, n_kv_heads, head_dim, T, dtype, style)
    by_kv = {row["n_kv_heads"]: row for row in bytes_view.data.to_dict("records")}  # attention_costs per choice
    settings = [("current", n_kv_heads), ("mha", n_heads), ("mqa", 1)]
    costs = {name: by_kv[kv] for name, kv in settings}
    cols = {name: ui.t(f"kv.col_{name}", kind=kind, kv=kv) for name, kv in settings}
    cur = costs["current"]
    rows = [
        ("params_q", f"d_model × H × d_k = {d_model} × {n_heads} × {head_dim}", n),
        ("params_k", f"d_model × H_kv × d_k = {d_model} × {n_kv_heads} × {head_dim}", n),
        ("params_v", f"d_model × H_kv × d_k = {d_model} × {n_kv_heads} × {head_dim}", n),
        ("params_o", f"H × d_k × d_model = {n_heads} × {head_dim} × {d_model}", n),
        ("params_total", "W_Q + W_K + W_V + W_O", n),
        ("kv_elements_per_token", f"2 × H_kv × d_k = 2 × {n_kv_heads} × {head_dim}", n),
        (
            "kv_bytes_per_token",
            f"2 × H_kv × d_k × {nbytes_el} B = 2 × {n_kv_heads} × {head_dim} × {nbytes_el} B",
            nbytes,
        ),
        ("kv_bytes_seq", f"… × T = {n(cur['kv_bytes_per_token'])} B × {T}", nbytes),
        (
            "flops_proj",
            f"2 × d_model × (2H + 2H_kv) × d_k = 2 × {d_model} × ({2 * n_heads} + {2 * n_kv_heads}) × {head_dim}",
            n,
        ),
        ("flops_attn", f"2 × 2 × H × T × d_k = 4 × {n_heads} × {T} × {head_dim}", n),
        ("flops_total", ui.t("kv.row_sum"), n),
    ]

    def value(c: dict, key: str) -> int:
        if key == "flops_proj":
            return c["flops_q_proj"] + c["flops_k_proj"] + c["flops_v_proj"] + c["flops_o_proj"]
        if key == "flops_attn":
            return c["flops_scores"] + c["flops_weighted_sum"]
        return c[key]

    table = pd.DataFrame(
        {
            ui.t("kv.col_quantity"): [ui.t(f"kv.row_{key}", t=T) for key, _, _ in rows],
            ui.t("kv.col_formula"): [formula for _, formula, _ in rows],
            **{cols[name]: [fmt(value(costs[name], key)) for key, _, fmt in rows] for name, _ in settings},
        }
    )
    st.dataframe(table, hide_index=True, width="stretch", height=38 * (len(rows) + 1) + 4)
    if kind == "MHA":
        st.caption(ui.t("kv.cost_ratio_mha"))
    else:
        saved = nbytes(costs["mha"]["kv_bytes_per_token"] - cur["kv_bytes_per_token"])
        pct = f"{100 * n_kv_heads / n_heads:.4g}"
        st.caption(ui.t("kv.cost_ratio", kind=kind, pct=pct, kv=n_kv_heads, h=n_heads, saved=saved))
    st.caption(
        ui.t(
            "kv.flops_note",
            h=n_heads,
            t=T,
            keys=ui.count(T, "key"),
            before=ui.count(T - 1, "token"),
            d=head_dim,
            attn=n(value(cur, "flops_attn")),
        )
    )
    ui.show_view(bytes_view, "kv_bytes", name=bytes_view.name)
    ui.help_expander("kv.costs_help")

elif view == "mapping":
    n_rep_txt = str(n_rep)
    left, right = st.columns(2, gap="medium")
    contiguous, interleaved = kv_map(n_heads, n_kv_heads, "contiguous"), kv_map(n_heads, n_kv_heads, "interleaved")
    diagrams = fig_kv.mapping_diagram_views(n_heads, n_kv_heads, style)  # contiguous, interleaved
    for column, mapping, v in zip((left, right), MAPPINGS, diagrams, strict=True):
        with column:
            ui.show_view(v, f"map_{mapping}", name=v.name)
    calls = [f"k.repeat_interleave({n_rep}, dim=1)", f"k.repeat(1, {n_rep}, 1, 1)"]
    width = max(map(len, calls)) + 2
    st.code(
        f"# {ui.t('kv.code_k', kv=n_kv_heads, t=T, d=head_dim)}\n"
        f"{calls[0]:<{width}}# {ui.t('kv.code_contiguous', m=contiguous)}\n"
        f"{calls[1]:<{width}}# {ui.t('kv.code_interleaved', m=interleaved)}",
        language="python",
    )
    if not fig_kv.mappings_differ(n_heads, n_kv_heads):
        st.info(ui.t("kv.mapping_same", kind=kind), icon="ℹ️")
    else:
        built_with = ui.choice("built_with", list(MAPPINGS), "contiguous", help_key="help.built_with")
        mm = ui.run_safely(lambda: computed("mapping", *cache_args, **shape, built_with=built_with))
        if mm is None:
            st.stop()
        v = fig_kv.mismatch_view(mm, style)
        ui.show_view(v, "mismatch", name=v.name)
        if mm.subset:
            step = mm.row_step
            st.caption(ui.t("kv.mismatch_rows", n=n(mm.kl_rows), t=n(T), step=step, step2=2 * step, h=n_heads))
        wrong = [h for h in range(n_heads) if mm.built[h] != mm.run[h]]
        if st.session_state.get("head", 0) >= n_heads:
            st.session_state["head"] = n_heads - 1
        head = ui.int_slider("head", 0, n_heads - 1, fig_kv.first_wrong_head(mm), help_key="help.kv_head")
        a, b = mm.built[head], mm.run[head]
        if mm.full:
            pair = pair_from_mismatch(mm, head)
        else:  # long sequence: this head's maps alone, by chunks of rows
            pair = ui.run_safely(lambda: computed("pair", *cache_args, **shape, built_with=built_with, head=head))
            if pair is None:
                st.stop()
        v = fig_kv.pair_view(mm, head, tokens, style, pair)
        ui.show_view(v, "mismatch_pair", name=v.name)
        if a == b:
            st.markdown(ui.t("kv.pair_same", h=head, g=a))
        else:
            st.markdown(
                ui.t(
                    "kv.pair_diff",
                    h=head,
                    a=a,
                    b=b,
                    kl=f"{mm.kl[head]:.4f}",
                    diff=f"{pair.max_diff:.3f}",
                )
            )
        st.caption(ui.t("kv.mismatch_count", n=len(wrong), h=n_heads))
    ui.help_expander("kv.mapping_help", rep=n_rep_txt, kv=n_kv_heads, effect=mapping_effect(n_heads, n_kv_heads, kind))

else:
    cc1, cc2, cc3 = st.columns([1.2, 1, 1], gap="large")
    with cc1:
        conv_source = ui.choice("conv_source", ["correlated", "random"], "correlated", help_key="help.conv_source")
    n_base, noise = None, 0.0
    if conv_source == "correlated":
        if n_heads > 1:  # with one head there is one base head and nothing to choose
            if st.session_state.get("n_base", 1) > n_heads:
                st.session_state["n_base"] = n_heads
            with cc2:
                n_base = ui.int_slider("n_base", 1, n_heads, min(2, n_heads), help_key="help.n_base")
        with cc3:
            noise = ui.float_slider("noise", 0.0, 1.0, 0.3, 0.05, help_key="help.noise")
    n_base, noise = fig_kv.conversion_settings(n_heads, conv_source, n_base, noise)
    with st.spinner(ui.t("kv.study_running")):
        study = ui.run_safely(
            lambda: computed(
                "conversion",
                *cache_args,
                n_heads=n_heads,
                head_dim=head_dim,
                d_model=d_model,
                seed=seed,
                source=conv_source,
                n_base=n_base,
                noise=noise,
            )  # fmt: skip
        )
    if study is None:
        st.stop()
    v = fig_kv.conversion_view(study, n_heads, n_kv_heads, n_base, noise, style)
    ui.show_view(v, "conversion", name=v.name)
    i = list(study.n_kv).index(n_kv_heads)
    st.markdown(
        ui.t(
            "kv.conv_now",
            kv=n_kv_heads,
            kind=kind,
            mean=f"{study.rel_l2['mean'][i]:.3f}",
            first=f"{study.rel_l2['first'][i]:.3f}",
            rnd=f"{study.rel_l2['random'][i]:.3f}",
            kl_mean=f"{study.kl['mean'][i]:.4f}",
            kl_first=f"{study.kl['first'][i]:.4f}",
            kl_rnd=f"{study.kl['random'][i]:.4f}",
        )
    )
    if study.subset:
        step = study.row_step
        runs = 1 + len(study.n_kv) * len(study.rel_l2)  # the source and every converted layer
        st.caption(ui.t("kv.conv_rows", n=n(study.n_rows), t=n(T), step=step, step2=2 * step, runs=runs))
    st.caption(source_note(conv_source, n_heads, n_kv_heads, n_base, noise))
    ui.help_expander("kv.conv_methods")
    ui.help_expander("kv.uptrain", **uptrain_ranking(study, i, n_kv_heads))
