"""Page: attention-weight heatmaps (pooled for long sequences), one head zoomed or step by step, shapes, entropy."""

import contextlib

import streamlit as st

import ui
from attn_core.views import heatmaps as hm

P = hm.Params
ui.title("heatmap.title")
intro = st.empty()  # said once the source is known

with ui.controls_box():
    c1, c2, c3 = st.columns([1.3, 1, 1], gap="large")
    with c1:
        v = {"attn_from": ui.control(P, "attn_from", widget="select")}
        lang = ui.style().lang  # the example sentence in the viewer's language, until one is typed or linked
        v |= ui.token_input(P, cut_note=v["attn_from"] == "seeded", default_text=hm.default_text(lang))
        if v["attn_from"] == "seeded":
            v["cross"] = ui.control(P, "cross")
        if v.get("cross"):
            v["cross_text"] = ui.control(P, "cross_text", height=68, default=hm.default_cross(lang))
            ui.note_cut(v["cross_text"])
    model = ui.model(lambda: v["attn_from"]) if v["attn_from"] != "seeded" else None
    if v["attn_from"] != "seeded":
        if model is None:
            ui.stop()
        with c2:
            v["model_layer"] = ui.control(P, "model_layer", hi=model.n_layers - 1, default=model.n_layers // 2)
            if (kind := hm.layer_kind(model, v["model_layer"], ui.style())) is not None:
                st.caption(kind)  # Gemma 3: a local layer (its window) or a global one
        c3.markdown(hm.model_line(model, ui.style()))
    else:
        with c2:
            v["n_heads"] = ui.control(P, "n_heads")
            v["n_kv_heads"] = ui.control(P, "n_kv_heads", n_heads=v["n_heads"])
            v["head_dim"] = ui.control(P, "head_dim")
        with c3:
            v["mask"] = ui.control(P, "mask")
            v["scaling"] = ui.control(P, "scaling")
            v["temperature"] = ui.control(P, "temperature")
            pad_slot = st.empty() if v["mask"] == "padding" else None  # the padding's length, under the mask

intro.caption(ui.t("heatmap.intro_model" if model is not None else "heatmap.intro"))
p = P(**v, seed=ui.seed())
if model is not None:  # the model's captured layer is the source of every view, on the page's own text
    with st.spinner(ui.t("models.capturing", layer=p.model_layer), show_time=True):
        att = ui.compute(hm.capture_layer, model, hm.model_text(p), hm.model_layer_of(p, model))
    if att is None:
        ui.stop()
    p, layer = hm.for_model(p, model, att), hm.model_source(att)
else:
    if pad_slot is not None and p.t_k >= 1:
        with pad_slot.container():
            p = hm.with_values(p, pad_len=ui.control(P, "pad_len", hi=p.t_k, default=p.pad))
    layer = ui.run_safely(p.layer)  # the attention source of every view; a bad setting says what to change
    if layer is None:
        ui.stop()
with ui.drawer():  # slide mode: in the controls bar, the slide keeps its room for the chart
    st.markdown(hm.summary(p, ui.style()))
for note in hm.model_notes(model, att, ui.style()) if model is not None else []:
    st.caption(note)

style = ui.style()
p = hm.with_values(p, view=ui.control(P, "view"))
big = p.n_heads * p.t_q * p.t_k >= 2**24  # long enough that the first computation takes a moment


def window_start(key: str, length: int, size: int) -> int:
    """A window's first position, on a slider only while the window is shorter than the sequence."""
    return 0 if size >= length else ui.control(P, key, hi=length - size)


def computing(n_rows: int, n_cols: int, n: int):
    text = ui.t("heatmap.computing", heads=ui.count(n, "head"), tq=n_rows, tk=n_cols)
    return st.spinner(text, show_time=True) if n * n_rows * n_cols >= 2**24 else contextlib.nullcontext()


def show_maps(pm, key: str) -> None:
    v = ui.view(hm.grid_view, pm, style, p.fit)
    ui.show_view(v, key)


if p.view == "grid":
    p = ui.map_options(p, p.t_q, p.t_k, hm.grid_side(p), p.t_k)
    with computing(p.t_q, p.t_k, p.n_heads):
        pm = ui.compute(hm.grid_maps, layer, p.pool)
    if pm is None:
        ui.stop()
    ui.head_grid(layer, pm, p.fit, "grid", ui.open_zoom, "focus.hint")  # click a panel: its zoom
    ui.help_text("heatmap.read.title", hm.read_help(pm, p.fit, style))
elif p.view == "zoom":
    with ui.drawer():  # slide mode: in the controls bar
        c1, c2, c3, c4 = st.columns(4, gap="medium")
        with c1:
            p = hm.with_values(p, head=ui.control(P, "head", hi=p.n_heads - 1))
        with c2:
            whole = p.whole_zoom
            size = whole if whole == 16 else ui.control(P, "zoom_size", hi=whole, default=whole)
        with c3:
            q0 = window_start("q_start", p.t_q, size)
        with c4:
            k0 = window_start("k_start", p.t_k, size)
    p = hm.with_values(p, zoom_size=size, q_start=q0, k_start=k0)
    q0, q1, k0, k1 = window = p.zoom_window()
    p = ui.map_options(p, q1 - q0, k1 - k0, hm.ZOOM_SIDE, p.t_k)
    with computing(q1 - q0, p.t_k, 1):
        pm = ui.compute(hm.zoom_maps, layer, p.head, window, p.pool)
    if pm is None:
        ui.stop()
    show_maps(pm, "zoom")
    st.caption(hm.zoom_note(p, pm, style))
    ui.help_text("heatmap.read.title", hm.read_help(pm, p.fit, style))
elif p.view == "steps":
    with ui.drawer():  # slide mode: in the controls bar
        head = ui.control(P, "head", hi=p.n_heads - 1)
        c1, c2 = st.columns(2, gap="medium")
        with c1:
            q0 = window_start("q_start", p.t_q, hm.STEP_WINDOW)
        with c2:
            k0 = window_start("k_start", p.t_k, hm.STEP_WINDOW)
    p = hm.with_values(p, head=head, q_start=q0, k_start=k0)
    hw = ui.compute(hm.step_window, layer, head, q0, k0)
    if hw is None:
        ui.stop()
    first, *window_note = hm.step_notes(p, hw, style)
    if not ui.present():  # a slide's stepper names the head and its KV head
        st.markdown(first)
    for note in window_note:
        st.caption(note)
    n_cols = hm.step_columns(hw, style)  # one chart a row when the key labels need the whole width
    steps = ui.view(hm.step_views, hw, style, n_cols)
    sentences = hm.step_sentences(p, hw, style, (model, att) if model is not None else None)
    if ui.present():
        # one step per slide; Page Down / Page Up (what a clicker sends) move through them
        i = ui.slide_controls("slide", len(steps), label=lambda k: hm.step_label(hw, k, len(steps), style))
        st.markdown(f"**{i + 1}.** {sentences[i]}")
        ui.show_view(steps[i], f"step{i}")
    else:
        ui.show_steps(steps, sentences, n_cols)
elif p.view == "shapes":
    ui.table(hm.shapes_table(p, style), hide_index=True, width="stretch")
    st.caption(hm.shapes_note(p, style, model))
else:
    with computing(p.t_q, p.t_k, p.n_heads):
        pm = ui.compute(hm.entropy_maps, layer)
    if pm is None:
        ui.stop()
    v = ui.view(hm.entropy_view, pm.entropy, pm.tokens_q, p.n_heads, p.n_kv_heads, style)
    ui.show_view(v, "entropy")
    ui.help_expander("heatmap.entropy_help")
if model is None:  # after the chart: the first screen shows the chart
    st.caption(ui.t("heatmap.random_short", seed=p.seed))
