"""Page: attention-weight heatmaps (pooled for long sequences), one head zoomed or step by step, shapes, entropy."""

import contextlib

import numpy as np
import pandas as pd
import streamlit as st

import ui
from attn_core import figures, views
from attn_core.attention import resolve_scale
from attn_core.config import AttentionConfig, ConfigError
from attn_core.longmaps import STEP_WINDOW, ZOOM_SIDE, pool_factor
from attn_core.maps import shape_walk

DEFAULT_TEXT = "The cat sat on the mat because it was tired ."
DEFAULT_CROSS = "Le chat était fatigué ."

ui.page_guard()
st.title(ui.t("heatmap.title"))
st.caption(ui.t("heatmap.intro"))

with ui.controls_box():
    c1, c2, c3 = st.columns([1.3, 1, 1], gap="large")
    with c1:
        tokens_q = ui.token_input(DEFAULT_TEXT)
        cross = ui.toggle("cross", False, help_key="help.cross")
        tokens_k = (
            ui.limited_tokens(ui.text_area("cross_text", DEFAULT_CROSS, ui.MAX_TEXT_CHARS, height=68))
            if cross
            else None
        )
    with c2:
        n_heads = ui.int_slider("n_heads", 1, 64, 8, help_key="help.n_heads")
        n_kv_heads = ui.kv_heads_select(n_heads, 2)
        head_dim = ui.int_slider("head_dim", 1, 256, 16, help_key="help.head_dim")
    with c3:
        mask_kind = ui.choice("mask", ["none", "causal", "padding"], "none", help_key="help.mask")
        use_scaling = ui.toggle("scaling", True, help_key="help.scaling")
        temperature = ui.float_slider("temperature", 0.1, 5.0, 1.0, 0.1, help_key="help.temperature")
        pad_slot = st.empty()

t_k = len(tokens_k) if tokens_k is not None else len(tokens_q)
pad_len = None
if mask_kind == "padding" and t_k >= 1:
    with pad_slot.container():
        pad_len = ui.int_slider("pad_len", 1, t_k, max(1, (t_k * 3 + 3) // 4), help_key="help.pad_len")

problem = None
if not tokens_q:
    problem = ConfigError(ui.t("heatmap.no_tokens"), "text")
elif cross and not tokens_k:
    problem = ConfigError(ui.t("heatmap.no_cross_tokens"), "cross_text")
elif mask_kind == "causal" and cross:
    problem = ConfigError(ui.t("heatmap.causal_cross"), "mask")
if problem is not None:
    ui.show_error(problem)
    st.stop()

cfg = AttentionConfig(
    n_heads=n_heads,
    n_kv_heads=n_kv_heads,
    head_dim=head_dim,
    seq_len=len(tokens_q),
    use_scaling=use_scaling,
    seed=ui.seed(),
)
if ui.run_safely(cfg.validate) is None:
    st.stop()
t_q = len(tokens_q)
scale = resolve_scale(head_dim, use_scaling) / float(temperature)
# the factor as it is applied: × 1/√d_k ÷ τ, or ÷ τ alone with the scaling off
scale_line = ui.t(
    "heatmap.scale_on" if use_scaling else "heatmap.scale_off",
    d=head_dim,
    sqrt=f"{np.sqrt(head_dim):.4g}",
    tau=f"{temperature:g}",
    scale=f"{scale:.4g}",
)
st.markdown(
    ui.t(
        "heatmap.summary",
        kind=cfg.kind,
        heads=ui.count(n_heads, "query_head"),
        kvs=ui.count(n_kv_heads, "kv_head"),
        per=ui.count(cfg.n_rep, "query_head"),
        d=head_dim,
        queries=ui.count(t_q, "query"),
        keys=ui.count(t_k, "key"),
        scale=scale_line,
    )
)
ui.random_weights_note()

style = ui.style()
stem = f"h{n_heads}_kv{n_kv_heads}_dk{head_dim}_seed{ui.seed()}"
# the layer and its input: the same arguments for every view's cached computation
layer = (n_heads, n_kv_heads, head_dim, cfg.d_model, tuple(tokens_q), None if tokens_k is None else tuple(tokens_k),
         mask_kind, pad_len, use_scaling, float(temperature), ui.seed(), ui.device())  # fmt: skip
big = n_heads * t_q * t_k >= 2**24  # long enough that the first computation takes a moment
view = ui.choice("view", ["grid", "zoom", "steps", "shapes", "entropy"], "grid")


def map_options(t_rows: int, t_cols: int, side: int) -> tuple[str, bool]:
    """Block max or mean (asked only when the map is pooled), and the colour scale: 0..1 or fitted to the data.

    Long rows spread their weight thin (about 1/T each), so the scale is fitted by default from 64 keys on.
    """
    c1, c2 = st.columns(2, gap="medium")
    with c1:
        default = "fit" if t_k > 64 else "fixed"  # follows the data until the learner picks one
        fit = ui.choice("cscale", ["fixed", "fit"], default, help_key="help.cscale", data_default=True) == "fit"
    if pool_factor(t_rows, t_cols, side) == 1:
        return "max", fit
    with c2:
        return ui.choice("pool", ["max", "mean"], "max", help_key="help.pool"), fit


def window_start(key: str, length: int, size: int) -> int:
    """First position of a window of ``size`` in a sequence of ``length`` (0 when it holds everything)."""
    if size >= length:
        return 0
    return ui.int_slider(key, 0, length - size, 0, help_key=f"help.{key}")


def read_help(pm, fit: bool) -> None:
    """The "how to read" help of the chart drawn from ``pm``, saying what it is.

    Exact or pooled (max / mean) cells, whole rows or a window of keys, one panel or a grid of KV
    groups, masked cells if any, and the colour scale actually used (0..1, or fitted with its top).
    """
    f, (k0, k1) = pm.factor, pm.k_range
    if f > 1:
        cells = ui.t(f"heatmap.read.cells_{pm.reduce}", f=f)
    elif (k0, k1) == (0, len(pm.tokens_k)):
        cells = ui.t("heatmap.read.cells_exact")
    else:
        cells = ui.t("heatmap.read.cells_window", keys=ui.count(len(pm.tokens_k), "key"))
    parts = [cells]
    if len(pm.heads) > 1:
        parts.append(ui.t("heatmap.read.groups"))
    if not pm.allowed.all():
        parts.append(ui.t("heatmap.read.masked"))
    top = views.fitted_top(pm, fit)
    if top is None:
        parts.append(ui.t("heatmap.read.scale_fixed"))
    else:
        parts.append(ui.t("heatmap.read.scale_fit", top=f"{top:.3g}", pct=f"{views.FIT_PERCENTILE:g}"))
    with st.expander(ui.t("heatmap.read.title")):
        st.markdown(" ".join(parts))


def computing(n_rows: int, n_cols: int, n: int):
    return st.spinner(ui.t("heatmap.computing", heads=ui.count(n, "head"), tq=n_rows, tk=n_cols), show_time=True)


def explain(i: int) -> str:
    """The sentence above step ``i`` (0-based) of the step-by-step view, for the current settings."""
    if i == 4:  # the scaling: say the factors actually applied, and the variance they give
        key = "heatmap.explain5" if use_scaling else "heatmap.explain5_off"
        if temperature != 1:
            key += "_tau"
        var = (1.0 if use_scaling else head_dim) / temperature**2
        return ui.t(key, d=head_dim, tau=f"{temperature:g}", scale=f"{scale:.4g}", var=f"{var:.4g}")
    if cross and i in (1, 2):  # keys and values come from the context
        return ui.t(f"heatmap.explain{i + 1}_cross")
    return ui.t(f"heatmap.explain{i + 1}")


if view == "grid":
    side = figures.grid_side(n_heads)
    reduce, fit = map_options(t_q, t_k, side)
    with computing(t_q, t_k, n_heads) if big else contextlib.nullcontext():
        pm = ui.run_safely(lambda: ui.pooled_maps(*layer, side, reduce))
    if pm is None:
        st.stop()
    ui.fell_back_to_cpu(pm.device)
    v = views.grid_view(pm, style, fit)
    ui.show_view(v, "grid", name=f"{v.name}_{stem}")
    read_help(pm, fit)
elif view == "zoom":
    c1, c2, c3, c4 = st.columns(4, gap="medium")
    with c1:
        head = ui.int_slider("head", 0, n_heads - 1, 0, help_key="help.head")
    longest = max(t_q, t_k)
    with c2:
        whole = max(16, 1 << (longest - 1).bit_length())  # the smallest power of two that holds every token
        size = whole if whole == 16 else ui.pow2_slider("zoom_size", 16, whole, whole, help_key="help.zoom_size")
    with c3:
        q0 = window_start("q_start", t_q, size)
    with c4:
        k0 = window_start("k_start", t_k, size)
    window = (q0, min(t_q, q0 + size), k0, min(t_k, k0 + size))
    reduce, fit = map_options(window[1] - q0, window[3] - k0, ZOOM_SIDE)
    with computing(window[1] - q0, t_k, 1) if t_q * t_k >= 2**24 else contextlib.nullcontext():
        pm = ui.run_safely(lambda: ui.pooled_maps(*layer, ZOOM_SIDE, reduce, (head,), window))
    if pm is None:
        st.stop()
    v = views.grid_view(pm, style, fit)
    ui.show_view(v, "zoom", name=f"{v.name}_{stem}")
    if window == (0, t_q, 0, t_k):
        st.caption(ui.t("heatmap.zoom_whole", side=ZOOM_SIDE, f=pm.factor))
    else:
        st.caption(ui.t("heatmap.zoom_note", side=ZOOM_SIDE, f=pm.factor, keys=ui.count(t_k, "key")))
    read_help(pm, fit)
elif view == "steps":
    head = ui.int_slider("head", 0, n_heads - 1, 0, help_key="help.head")
    c1, c2 = st.columns(2, gap="medium")
    with c1:
        q0 = window_start("q_start", t_q, STEP_WINDOW)
    with c2:
        k0 = window_start("k_start", t_k, STEP_WINDOW)
    hw = ui.run_safely(lambda: ui.head_window(*layer, head, q0, k0))
    if hw is None:
        st.stop()
    if cfg.n_rep > 1:
        st.markdown(ui.t("heatmap.step_head", head=head, group=hw.group, per=ui.count(cfg.n_rep, "query_head")))
    else:
        st.markdown(ui.t("heatmap.step_head_own", head=head, group=hw.group))
    if not hw.complete:
        mass = hw.row_mass
        st.caption(
            ui.t("heatmap.step_window", q0=hw.q0, q1=hw.q0 + len(hw.tokens_q) - 1, k0=hw.k0,
                 k1=hw.k0 + len(hw.tokens_k) - 1, tq=t_q, tk=t_k, keys=ui.count(t_k, "key"), lo=f"{mass.min():.3f}",
                 hi=f"{mass.max():.3f}")
        )  # fmt: skip
    n_cols = views.step_columns(hw, style)  # one chart a row when the key labels need the whole width
    steps = views.step_views(hw, style, n_cols)
    if ui.present():
        # one step per slide; Page Down / Page Up (what a clicker sends) move through them
        i = ui.slide_controls("slide", len(steps))
        st.markdown(f"### {i + 1}. {explain(i)}")
        ui.show_view(steps[i], f"step{i}", name=f"{steps[i].name}_{stem}")
    else:
        for i, v in enumerate(steps):
            if i % n_cols == 0:
                cols = st.columns(n_cols)  # one row per pair, so the steps read left to right, top to bottom
            with cols[i % n_cols]:
                st.markdown(f"**{i + 1}.** {explain(i)}")
                ui.show_view(v, f"step{i}", name=f"{v.name}_{stem}")
elif view == "shapes":
    rows = shape_walk(cfg, t_q, t_k if cross else None)
    df = pd.DataFrame(
        {
            ui.t("shapes.step"): [ui.t(f"shapes.{r.step}") for r in rows],
            ui.t("shapes.op"): [ui.t(f"shapes.ops.{r.op}", rep=cfg.n_rep) for r in rows],
            ui.t("shapes.shape"): [ui.t("shapes.each", shape=r.formula) if r.pair else r.formula for r in rows],
        }
    )
    st.dataframe(df, hide_index=True, width="stretch")
    counts = dict(heads=ui.count(n_heads, "query_head"), kvs=ui.count(n_kv_heads, "kv_head"), d=head_dim)
    if cross:
        st.caption(ui.t("shapes.note_cross", b=cfg.batch, tq=ui.count(t_q, "token"), tk=ui.count(t_k, "token"),
                        dm=cfg.d_model, **counts))  # fmt: skip
    else:
        st.caption(ui.t("shapes.note", b=cfg.batch, tokens=ui.count(t_q, "token"), dm=cfg.d_model, **counts))
else:
    with computing(t_q, t_k, n_heads) if big else contextlib.nullcontext():
        pm = ui.run_safely(lambda: ui.pooled_maps(*layer, 8, "max", None, None, True))
    if pm is None:
        st.stop()
    v = views.entropy_view(pm.entropy, pm.tokens_q, n_heads, n_kv_heads, style)
    ui.show_view(v, "entropy", name=f"{v.name}_{stem}")
    ui.help_expander("heatmap.entropy_help")
