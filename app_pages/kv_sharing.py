"""Page: KV sharing. MHA, GQA and MQA side by side: who reads which K/V, the maps, the costs, conversion."""

import streamlit as st

import ui
from attn_core.views import kv_sharing as kv

P = kv.Params
ui.title("kv.title")
st.caption(ui.t("kv.intro"))
ui.random_weights_note()

with ui.controls_box():
    c1, c2, c3 = st.columns([1.3, 1, 1], gap="large")
    with c1:
        v = ui.token_input(P)
    with c2:
        v["n_heads"] = ui.control(P, "n_heads")
        v["n_kv_heads"] = ui.control(P, "n_kv_heads", n_heads=v["n_heads"])
    with c3:
        v["head_dim"] = ui.control(P, "head_dim")
        v["d_model"] = ui.control(P, "d_model")

p = P(**v, seed=ui.seed())
if ui.run_safely(p.check) is None:  # every setting checked; a bad one says what to change
    ui.stop()
style = ui.style()
with ui.drawer():  # slide mode: in the controls bar
    st.markdown(kv.summary(p, style))
if note := kv.dmodel_note(p, style):
    st.caption(note)
p = kv.with_values(p, kv_view=ui.control(P, "kv_view"))


def show(view, key: str) -> None:
    ui.show_view(view, key, name=view.name)


def caption(text: str | None) -> None:
    if text:
        st.caption(text)


def computed(value):
    """A step's result, or the end of the run when the step showed an error instead."""
    if value is None:
        ui.stop()
    return value


if p.kv_view == "diagram":
    left, right = st.columns([1.15, 1], gap="medium")
    with left:
        show(ui.view(kv.heads_diagram_view, p.n_heads, p.n_kv_heads, style), "kv_diagram")
        st.caption(kv.group_lines(p, style))
    with right:
        show(ui.view(kv.repeat_kv_view, p, style), "repeat_kv")
        st.caption(kv.repeat_note(p, style))
    ui.help_text("kv.diagram_help.title", kv.diagram_help(p, style))

elif p.kv_view == "maps":
    if p.n_kv_heads > kv.MAX_GROUPS_SHOWN:
        p = kv.with_values(p, kv_first=ui.control(P, "kv_first", hi=p.n_kv_heads - kv.MAX_GROUPS_SHOWN))
    layer = computed(ui.run_safely(p.layer))
    groups = kv.maps_groups(p.n_kv_heads, p.kv_first)
    gm = computed(ui.compute(kv.group_maps, layer, tuple(groups), kv.maps_side(p, len(groups), style)))
    show(ui.view(kv.maps_view, gm, layer, style), "kv_maps")
    st.markdown(kv.maps_differ(p, gm, style))
    ui.help_text("kv.maps_help.title", kv.maps_help(gm, style))

elif p.kv_view == "costs":
    p = kv.with_values(p, kv_dtype=ui.control(P, "kv_dtype"))
    frame = kv.cost_frame(p)
    table = kv.cost_table(p, frame, style)
    ui.table(table, hide_index=True, width="stretch", height=38 * (len(table) + 1) + 4)
    for note in kv.cost_notes(p, frame, style):
        st.caption(note)
    show(ui.view(kv.bytes_view, p, frame, style), "kv_bytes")
    ui.help_expander("kv.costs_help")

elif p.kv_view == "mapping":  # slides: the two conventions; what running the other one costs; one head's maps
    shown = ui.slide_sections(3) if p.mappings_differ else (lambda i: True)
    if shown(0):
        diagrams = kv.mapping_diagram_views(p, style)  # contiguous, interleaved
        for column, mapping, view in zip(st.columns(2, gap="medium"), kv.MAPPINGS, diagrams, strict=True):
            with column:
                show(view, f"map_{mapping}")
        st.code(kv.mapping_code(p, style), language="python")
    if not p.mappings_differ:
        st.info(kv.mapping_same(p, style), icon="ℹ️")
    else:
        with ui.drawer():  # with the page's controls (slide mode: in the controls bar)
            p = kv.with_values(p, built_with=ui.control(P, "built_with"))
        layer = computed(ui.run_safely(p.layer))
        mm = computed(ui.compute(kv.mapping_study, layer, p.built_with))
        if shown(1):
            show(ui.view(kv.mismatch_view, mm, style), "mismatch")
            caption(kv.mismatch_rows(p, mm, style))
        with ui.drawer():
            head = ui.control(P, "head", hi=p.n_heads - 1, default=kv.first_wrong_head(mm))
        if shown(2):
            pair = kv.kept_pair(mm, head) or computed(ui.compute(kv.pair_maps, layer, p.built_with, head))
            show(ui.view(kv.pair_view, mm, head, p.tokens, style, pair), "mismatch_pair")
            st.markdown(kv.pair_text(mm, pair, style))
        st.caption(kv.mismatch_count(mm, style))
    ui.help_text("kv.mapping_help.title", kv.mapping_help(p, style))

else:
    c1, c2, c3 = st.columns([1.2, 1, 1], gap="large")
    with c1:
        p = kv.with_values(p, conv_source=ui.control(P, "conv_source"))
    if p.conv_source == "correlated":
        if p.n_heads > 1:  # with one head there is one base head and nothing to choose
            with c2:
                p = kv.with_values(p, n_base=ui.control(P, "n_base", hi=p.n_heads, default=min(2, p.n_heads)))
        with c3:
            p = kv.with_values(p, noise=ui.control(P, "noise"))
    with st.spinner(ui.t("kv.study_running")):
        study = computed(ui.compute(kv.conversion, p.mha(), p.tokens))
    show(ui.view(kv.conversion_view, study, p, style), "conversion")
    st.markdown(kv.conversion_now(p, study, style))
    caption(kv.conversion_rows(p, study, style))
    st.caption(kv.source_note(p, style))
    ui.help_expander("kv.conv_methods")
    ui.help_text("kv.uptrain.title", kv.uptrain_help(p, study, style))
ui.help_expander("kv.about")
