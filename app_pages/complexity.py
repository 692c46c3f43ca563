"""Page: cost and complexity. Attention's FLOPs and memory counted stage by stage, measured against n (eager and
fused), prefill against decode per token, and the course note's complexity formula corrected."""

import streamlit as st

import ui
from attn_core.views import complexity as cv

P = cv.Params
style = ui.style()
ui.title("cx.title")
st.caption(ui.t("cx.intro"))

with ui.controls_box():
    c1, c2, c3, c4 = st.columns(4, gap="medium")
    v = {"seq_len": ui.control(P, "seq_len", container=c1), "d_model": ui.control(P, "d_model", container=c2)}
    v["n_heads"] = ui.control(P, "n_heads", container=c3)
    v["n_kv_heads"] = ui.control(P, "n_kv_heads", n_heads=v["n_heads"], container=c4)
    v["head_dim"] = ui.control(P, "head_dim", container=c1)
    v["causal"] = ui.control(P, "causal", container=c2)
    v["run_on"] = ui.control(P, "run_on", widget="select", container=c3)
p = P(**v, seed=ui.seed())
if ui.run_safely(lambda: p.shape) is None:
    ui.stop()
p = cv.with_values(p, view=ui.control(P, "view"))


def say(lines) -> None:
    for line in lines:
        st.markdown(line)


if p.view == "counted":
    slide = ui.present()
    shown = ui.slide_sections(2)  # a slide: the stages, then FLOPs against n, each as wide as the slide
    if shown(0):
        st.info(cv.share_sentence(p, style), icon="🧮")
    boxes = [st.container(), st.container()] if slide else st.columns(2, gap="medium")
    charts = ((cv.stage_view, "cx_stages", cv.heads_sentence), (cv.curve_view, "cx_curve", cv.crossover_sentence))
    for i, (box, (view, key, sentence)) in enumerate(zip(boxes, charts, strict=True)):
        if shown(i):
            with box:
                ui.show_view(ui.view(view, p, style), key)
                say([] if slide and i == 0 else [sentence(p, style)])  # slide 1 says the share above
    with st.expander(ui.t("cx.formulas_header"), expanded=True):  # below the charts: the first screen shows them
        st.markdown(cv.formulas_markdown(p, style))  # every stage's name and formula, one element
        st.caption(ui.t("cx.conventions"))
    if not slide:
        st.markdown(f"**{ui.t('cx.shipped_header')}**")
        ui.table(cv.shipped_frame(style), hide_index=True, width="stretch")
        st.caption(cv.shipped_note(style))
        st.markdown(f"**{ui.t('cx.memory_header')}**")
        st.markdown(cv.memory_sentence(p, style))
        ui.table(cv.memory_frame(p, style), hide_index=True, width="stretch")
        ui.help_expander("cx.flash_help")
elif p.view == "measured":
    spec = ui.run_safely(lambda: cv.sweep_spec(p))  # over the memory budget: said here, before anything runs
    dev = ui.run_safely(lambda: cv.run_device(p.run_on, ui.device()))
    if spec is None or dev is None:
        ui.stop()
    st.markdown(
        ui.t(
            "cx.sweep_intro",
            lo=spec.seq_lens[0],
            hi=spec.seq_lens[-1],
            k=len(spec.seq_lens),
            r=spec.repeats,
            w=spec.warmup,
            device=dev,
        )
    )
    key = cv.run_key(spec, dev)  # one run kept per setting: moving back to a setting shows its sweep at once
    run = ui.live_state(key, (spec, dev))
    start = ui.live_buttons("cx", "cx.run", "cx.stop")
    bar, status = st.empty(), st.empty()
    boxes = [c.empty() for c in st.columns(2, gap="medium")]

    def frame(r: ui.LiveRun) -> None:
        ui.live_charts(cv.measured_views(r.steps, spec, style), boxes)

    if start:
        run = ui.live_run(
            key,
            (spec, dev),
            lambda: cv.measure(spec, device=dev),
            frame,
            progress=lambda r: cv.sweep_progress(spec, r.steps, style),
            bar=bar,
        )
    ui.live_status(run, status, "cx.press_run")
    if run.steps:  # also the steps a failed run made before its error
        if run.status == "stopped":
            status.warning(ui.t("cx.stopped", k=len(run.steps)))
        steps = tuple(run.steps)  # keyed by the measurements themselves: a rerun redraws nothing
        ui.show_views(ui.view(cv.measured_views, steps, spec, style), boxes, "cx_")
        say(cv.measured_sentences(steps, spec, dev, style))
        ui.table(cv.slopes_frame(steps, spec, style), hide_index=True, width="stretch")
        st.caption(cv.slopes_note(spec.shape, style))
    ui.help_expander("cx.measured_help")
elif p.view == "prefill_decode":
    dev = ui.run_safely(lambda: cv.run_device(p.run_on, ui.device()))
    if dev is None:
        ui.stop()
    if not ui.present():  # a slide: the toggle, the sentence and the chart
        st.markdown(ui.t("cx.pd_intro"))
    measured = None
    if st.toggle(ui.t("cx.pd_measure"), key="cx_pd_measure"):
        with st.spinner(ui.t("cx.pd_running")):
            measured = ui.compute(cv.time_pd, p.shape, cv.pd_lens(p), dev)
    say(cv.pd_sentences(p, measured, style))
    pd_views = ui.view(cv.pd_views, p, measured, style)  # the counts, and the timings once measured
    ui.show_views(pd_views, st.columns(len(pd_views), gap="medium"), "cx_pd_")
    st.page_link("app_pages/kv_cache.py", label=ui.t("cx.pd_link"), icon=":material/memory:")
    ui.help_expander("cx.pd_help")
else:
    st.warning(cv.note_sentence(p, style), icon="📏")
    ui.show_view(ui.view(cv.heads_view, p, style), "cx_heads")  # the chart, then the numbers behind it
    ui.table(cv.note_frame(p, style), hide_index=True, width="stretch")
    ui.help_expander("cx.note_help")
ui.help_expander("cx.about")
