"""Page: attention-weight heatmaps, one head step by step, tensor shapes, row entropy."""

import numpy as np
import pandas as pd
import streamlit as st

import ui
from attn_core import views
from attn_core.config import AttentionConfig, ConfigError
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
        pad_len = min(
            ui.int_slider("pad_len", 1, max(t_k, 2), max(1, (t_k * 3 + 3) // 4), help_key="help.pad_len"), t_k
        )

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
maps = ui.run_safely(
    lambda: ui.attention_maps(
        n_heads,
        n_kv_heads,
        head_dim,
        cfg.d_model,
        tuple(tokens_q),
        None if tokens_k is None else tuple(tokens_k),
        mask_kind,
        pad_len,
        use_scaling,
        float(temperature),
        ui.seed(),
        ui.device(),
    )
)
if maps is None:
    st.stop()
ui.fell_back_to_cpu(maps.device)

st.markdown(
    ui.t(
        "heatmap.summary",
        kind=cfg.kind,
        h=n_heads,
        kv=n_kv_heads,
        rep=cfg.n_rep,
        d=head_dim,
        tq=len(tokens_q),
        tk=t_k,
        scale=f"{maps.scale:.4g}",
        sqrt=f"{np.sqrt(head_dim):.4g}",
        tau=f"{temperature:g}",
    )
)

style = ui.style()
stem = f"h{n_heads}_kv{n_kv_heads}_dk{head_dim}_seed{ui.seed()}"
view = ui.choice("view", ["grid", "steps", "shapes", "entropy"], "grid")

if view == "grid":
    v = views.heatmap_grid_view(maps, style)
    ui.show_view(v, "grid", name=f"{v.name}_{stem}")
    ui.help_expander("heatmap.read")
elif view == "steps":
    head = ui.int_slider("head", 0, n_heads - 1, 0, help_key="help.head")
    st.markdown(ui.t("heatmap.step_head", head=head, group=head // cfg.n_rep, rep=cfg.n_rep))
    steps = views.step_views(maps, head, style)
    if ui.present():
        # one step per slide; Page Down / Page Up (what a clicker sends) move through them
        i = ui.slide_controls("slide", len(steps))
        st.markdown(f"### {i + 1}. {ui.t(f'heatmap.explain{i + 1}')}")
        ui.show_view(steps[i], f"step{i}", name=f"{steps[i].name}_{stem}")
    else:
        for i, v in enumerate(steps):
            if i % 2 == 0:
                cols = st.columns(2)  # one row per pair, so the steps read left to right, top to bottom
            with cols[i % 2]:
                st.markdown(f"**{i + 1}.** {ui.t(f'heatmap.explain{i + 1}')}")
                ui.show_view(v, f"step{i}", name=f"{v.name}_{stem}")
elif view == "shapes":
    rows = shape_walk(cfg, len(tokens_q), t_k)
    df = pd.DataFrame(
        {
            ui.t("shapes.step"): [ui.t(f"shapes.{r['step']}") for r in rows],
            ui.t("shapes.op"): [r["op"] for r in rows],
            ui.t("shapes.shape"): [r["shape"] for r in rows],
        }
    )
    st.dataframe(df, hide_index=True, width="stretch")
    st.caption(ui.t("shapes.note", b=cfg.batch, t=len(tokens_q), dm=cfg.d_model, h=n_heads, kv=n_kv_heads, d=head_dim))
else:
    v = views.entropy_view(maps, style)
    ui.show_view(v, "entropy", name=f"{v.name}_{stem}")
    ui.help_expander("heatmap.entropy_help")
