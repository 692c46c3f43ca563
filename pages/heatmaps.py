"""Page: attention-weight heatmaps, one head step by step, tensor shapes, row entropy."""

import numpy as np
import pandas as pd
import streamlit as st

import ui
from attn_core import figures
from attn_core.config import AttentionConfig, ConfigError
from attn_core.maps import shape_walk
from attn_core.tokens import synthetic_tokens, tokenize

DEFAULT_TEXT = "The cat sat on the mat because it was tired ."
DEFAULT_CROSS = "Le chat était fatigué ."

ui.page_guard()
st.title(ui.t("heatmap.title"))
st.caption(ui.t("heatmap.intro"))

c1, c2, c3 = st.columns([1.3, 1, 1], gap="large")
with c1:
    source = ui.choice("source", ["text", "synthetic"], "text")
    if source == "text":
        text = ui.text_area("text", DEFAULT_TEXT, ui.MAX_TEXT_CHARS)
        seq_len = None
    else:
        text = None
        seq_len = ui.int_slider("seq_len", 1, 512, 16)
    cross = ui.toggle("cross", False, help_key="help.cross")
    cross_text = ui.text_area("cross_text", DEFAULT_CROSS, ui.MAX_TEXT_CHARS, height=68) if cross else None
with c2:
    n_heads = ui.int_slider("n_heads", 1, 64, 8, help_key="help.n_heads")
    n_kv_heads = ui.kv_heads_select(n_heads, 2)
    head_dim = ui.int_slider("head_dim", 1, 256, 16, help_key="help.head_dim")
with c3:
    mask_kind = ui.choice("mask", ["none", "causal", "padding"], "none", help_key="help.mask")
    use_scaling = ui.toggle("scaling", True, help_key="help.scaling")
    temperature = ui.float_slider("temperature", 0.1, 5.0, 1.0, 0.1, help_key="help.temperature")

# ---- tokens
notes = []
if source == "text":
    all_tokens = tokenize(text or "")
    tokens_q = all_tokens[: ui.MAX_TEXT_TOKENS]
    if len(all_tokens) > ui.MAX_TEXT_TOKENS:
        notes.append(ui.t("heatmap.cut", n=len(all_tokens), limit=ui.MAX_TEXT_TOKENS))
else:
    tokens_q = synthetic_tokens(seq_len)
tokens_k = None
if cross:
    all_k = tokenize(cross_text or "")
    tokens_k = all_k[: ui.MAX_TEXT_TOKENS]
    if len(all_k) > ui.MAX_TEXT_TOKENS:
        notes.append(ui.t("heatmap.cut", n=len(all_k), limit=ui.MAX_TEXT_TOKENS))
for note in notes:
    st.warning(note, icon="✂️")

t_k = len(tokens_k) if tokens_k is not None else len(tokens_q)
pad_len = None
if mask_kind == "padding" and t_k >= 1:
    pad_len = ui.int_slider("pad_len", 1, max(t_k, 2), max(1, (t_k * 3 + 3) // 4), container=c3,
                            help_key="help.pad_len")
    pad_len = min(pad_len, t_k)

if not tokens_q:
    ui.show_error(ConfigError(ui.t("heatmap.no_tokens"), "text"))
    st.stop()
if cross and not tokens_k:
    ui.show_error(ConfigError(ui.t("heatmap.no_cross_tokens"), "cross_text"))
    st.stop()
if mask_kind == "causal" and cross:
    ui.show_error(ConfigError(ui.t("heatmap.causal_cross"), "mask"))
    st.stop()

cfg = AttentionConfig(n_heads=n_heads, n_kv_heads=n_kv_heads, head_dim=head_dim, seq_len=len(tokens_q),
                      use_scaling=use_scaling, seed=ui.seed())
maps = ui.run_safely(
    lambda: ui.attention_maps(
        n_heads, n_kv_heads, head_dim, cfg.d_model, tuple(tokens_q),
        None if tokens_k is None else tuple(tokens_k), mask_kind, pad_len, use_scaling, float(temperature),
        ui.seed(), ui.device(),
    )
)
if maps is None:
    st.stop()

kind = cfg.kind
st.markdown(
    ui.t("heatmap.summary", kind=kind, h=n_heads, kv=n_kv_heads, rep=cfg.n_rep, d=head_dim, tq=len(tokens_q),
         tk=t_k, scale=f"{maps.scale:.4g}", sqrt=f"{np.sqrt(head_dim):.4g}", tau=f"{temperature:g}")
)

style = ui.style()
view = ui.choice("view", ["grid", "steps", "shapes", "entropy"], "grid")

if view == "grid":
    fig = figures.heatmap_grid(maps.weights, list(maps.tokens_q), list(maps.tokens_k), n_kv_heads,
                               mask=maps.mask, style=style)
    ui.show_figure(fig, "grid")
    ui.help_expander("heatmap.read")
elif view == "steps":
    head = ui.int_slider("head", 0, n_heads - 1, 0, help_key="help.head")
    group = head // cfg.n_rep
    st.markdown(ui.t("heatmap.step_head", head=head, group=group, rep=cfg.n_rep))
    lq, lk = list(maps.tokens_q), list(maps.tokens_k)
    dims = [f"d{i}" for i in range(head_dim)]
    tq = len(lq)
    steps = [
        ("Q", maps.q[head], lq, dims, "values", None, ui.t("fig.query"), ui.t("fig.dim"),
         f"[T, d_k] = [{tq}, {head_dim}]"),
        ("K", maps.k[group], lk, dims, "values", None, ui.t("fig.key"), ui.t("fig.dim"),
         f"[T, d_k] = [{t_k}, {head_dim}]"),
        ("V", maps.v[group], lk, dims, "values", None, ui.t("fig.key"), ui.t("fig.dim"),
         f"[T, d_k] = [{t_k}, {head_dim}]"),
        ("QKᵀ", maps.raw_scores[head], lq, lk, "scores", None, None, None, f"[T, T] = [{tq}, {t_k}]"),
        (ui.t("heatmap.step_scaled", scale=f"{maps.scale:.4g}"), maps.scaled_scores[head], lq, lk, "scores", None,
         None, None, f"[T, T] = [{tq}, {t_k}]"),
        (ui.t("heatmap.step_masked"), maps.scaled_scores[head], lq, lk, "scores", maps.mask, None, None,
         f"[T, T] = [{tq}, {t_k}]"),
        ("softmax", maps.weights[head], lq, lk, "weights", maps.mask, None, None, f"[T, T] = [{tq}, {t_k}]"),
        (ui.t("heatmap.step_output"), maps.head_outputs[head], lq, dims, "values", None, ui.t("fig.query"),
         ui.t("fig.dim"), f"[T, d_k] = [{tq}, {head_dim}]"),
    ]
    for i, (name, mat, rows, colsl, kind_, msk, rt, ct, shape) in enumerate(steps):
        if i % 2 == 0:
            cols = st.columns(2)  # one row per pair, so the steps read left to right, top to bottom
        with cols[i % 2]:
            st.markdown(f"**{i + 1}. {name}**  `{shape}`")
            st.caption(ui.t(f"heatmap.explain{i + 1}"))
            fig = figures.matrix_figure(mat, rows, colsl, f"{name}  {shape}", kind=kind_, style=style, mask=msk,
                                        row_title=rt, col_title=ct)
            ui.show_figure(fig, f"step{i}")
elif view == "shapes":
    rows = shape_walk(cfg, len(tokens_q), t_k)
    df = pd.DataFrame(
        {ui.t("shapes.step"): [ui.t(f"shapes.{r['step']}") for r in rows],
         ui.t("shapes.op"): [r["op"] for r in rows],
         ui.t("shapes.shape"): [r["shape"] for r in rows]}
    )
    st.dataframe(df, hide_index=True, width="stretch")
    st.caption(ui.t("shapes.note", b=cfg.batch, t=len(tokens_q), dm=cfg.d_model, h=n_heads, kv=n_kv_heads,
                    d=head_dim))
else:
    fig = figures.entropy_figure(maps.entropy, list(maps.tokens_q), n_kv_heads, style=style)
    ui.show_figure(fig, "entropy")
    ui.help_expander("heatmap.entropy_help")
