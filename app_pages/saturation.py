"""Page: softmax saturation, what the 1/sqrt(d_k) scaling prevents, measured."""

import contextlib

import streamlit as st

import ui
from attn_core.views import saturation as sat

P = sat.Params
ui.title("sat.title")
st.caption(ui.t("sat.intro"))

with ui.controls_box():
    c1, c2, c3 = st.columns(3, gap="large")
    with c1:
        v = {"head_dim": ui.control(P, "head_dim"), "scaling": ui.control(P, "scaling")}
    with c2:
        v["seq_len"] = ui.control(P, "seq_len")
        v["samples"] = ui.control(P, "samples")
    with c3:
        v["temperature"] = ui.control(P, "temperature")
        v["dist"] = ui.control(P, "dist")

p = P(**v, seed=ui.seed())
style = ui.style()
sampling = p.sampling  # the sampled sequences: the steps take only what their numbers depend on


def busy(slow: bool):
    """A spinner where a step may take long (each costs a thread and a message a run, shown or not)."""
    return st.spinner(ui.t("sat.computing")) if slow else contextlib.nullcontext()


with busy(sat.slow(p)):  # the current d_k's sample, drawn once: its histograms here, the sentences below
    one_scores = ui.shared(sat.current_scores, sampling, p.head_dim)
    sample = ui.compute(sat.score_sample, sampling, p.head_dim, given={"scores": one_scores})

shown = ui.slide_sections(6)  # presentation mode: one section a slide (the explanations stay off the slides)

# ---- 1. score distributions
if shown(0):  # the chart first (the page's first screen shows it), what it measured below
    st.subheader(ui.t("sat.h1"))
    if sample is not None:
        ui.show_view(ui.view(sat.distribution_view, sample, style), "sat_dist")
    st.caption(ui.t("sat.c1", d=p.head_dim))
    if sample is not None:
        st.markdown(sat.summary(p, sample, style))
    if note := sat.measured_note(p, style):  # long sequences × many samples: how many rows every statistic measured
        st.info(note, icon="ℹ️")
    if not ui.present():  # a slide: the chart and what it measured (a deck's slide adds its note above)
        st.markdown(sat.current_line(p, style))

# the first sequence's q and k, which τ and the row leave as they are: their moves draw nothing
qk = (
    ui.shared(sat.first_sequence, sampling, p.head_dim, given={"scores": one_scores})
    if shown(1) or shown(4) or shown(5)
    else None
)

# ---- 2. the same queries and keys, unscaled and scaled
if shown(1):
    st.subheader(ui.t("sat.h2"))
    maps_caption = st.empty()  # filled from the sweep, measured after these maps are on their way
    with busy(sat.slow(p)):
        maps = ui.compute(sat.example_maps, sampling, p.head_dim, p.temperature, given={"qk": qk})
    if maps is not None:
        ui.show_view(ui.view(sat.maps_view, maps, style), "sat_maps")

# ---- 3-6 on the page: expanders computed and sent while open (a τ move then measures 2 softmaxes, not 22)
box = {
    i: ui.section_box(shown, i, ui.t(h), f"x_sat_{name}")
    for i, h, name in ((2, "sat.h3", "curves"), (3, "sat.h_grad", "grads"), (4, "sat.h4", "row"), (5, "sat.h5", "fp16"))
}
sweep = cur = None
if any(box[i] is not None for i in (2, 3, 5)):  # the whole sweep against d_k
    with busy(sat.slow(p, every_d_k=True)):
        scores = ui.shared(sat.sweep_scores, sampling)  # what τ does not change: a τ move only re-measures
        sweep = ui.compute(sat.saturation_sweep, sampling, p.temperature, given={"scores": scores})
    cur = None if sweep is None else sat.sweep_at(sweep, p)
elif shown(1) or shown(6):  # the sentences read the current d_k's largest weights alone: the sweep's numbers
    with busy(sat.slow(p)):
        cur = ui.compute(sat.current_weights, sampling, p.head_dim, p.temperature, given={"scores": one_scores})
if shown(1) and cur is not None:
    maps_caption.caption(sat.maps_caption(p, cur, style))

# ---- 3. saturation against d_k
if box[2] is not None:
    with box[2]:
        st.caption(ui.t("sat.c3"))
        if sweep is not None:
            ui.show_view(ui.view(sat.curves_view, p, sweep, style), "sat_curves")

# ---- 4. the gradients against d_k, for a stated loss
if box[3] is not None:
    with box[3]:
        st.caption(sat.gradient_caption(p, style))
        if sweep is not None:
            ui.show_view(ui.view(sat.gradient_view, p, sweep, style), "sat_grads")
        if cur is not None:
            st.markdown("\n\n".join(sat.gradient_sentences(p, cur, style)[: 2 if ui.present() else None]))  # slide: 2
    ui.help_text("sat.grad_how.title", sat.grad_how(p, style))  # below the section: expanders do not nest

# ---- 5. one query row and its Jacobian; 6. float16 numerics (both on the row's scores)
raw = None
if box[4] is not None or box[5] is not None:
    with box[4] if box[4] is not None else box[5], ui.drawer():  # slide mode: in the controls bar
        p = sat.with_values(p, row=ui.control(P, "row", hi=p.seq_len - 1, container=st.columns(3)[0]))
    raw = ui.compute(sat.query_scores, sampling, p.head_dim, p.row, given={"qk": qk})
if box[4] is not None and raw is not None:
    with box[4]:
        st.caption(ui.t("sat.c4"))
        ui.show_view(ui.view(sat.row_view, p, sat.row_softmax(raw, p), style), "sat_row")
if box[5] is not None:
    with box[5]:
        st.caption(sat.float16_caption(style))
        demo = None if raw is None or sweep is None else sat.float16_demo(raw)
        if demo is not None:
            ui.show_view(ui.view(sat.float16_view, p, demo, sweep, style), "sat_fp16")
            st.markdown(sat.float16_verdict(p, demo, style))
    if demo is not None and (table_box := ui.lazy_expander(ui.t("sat.fp16_table"), "x_fp16_table")) is not None:
        with table_box:  # below the section (expanders do not nest), sent while open
            top, table = sat.float16_table(p, demo, style)
            if top:
                st.caption(top)
            ui.table(table, hide_index=True, width="stretch")

# ---- 7. explanations, with the user's numbers (not on a slide)
if shown(6):
    st.subheader(ui.t("sat.h6"))
    ui.help_text("sat.why_var.title", sat.why_var(p, sample, style))
    ui.help_expander("sat.why_softmax")
    if cur is not None:
        ui.help_text("sat.cost.title", sat.saturation_cost(p, cur, style))
    ui.help_expander("sat.about")
