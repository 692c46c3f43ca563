"""Page: KV-cache memory. Calculator with real model presets, memory against sequence length,
a live decode whose measured cache equals the formula, and prefill against decode."""

import streamlit as st

import ui
from attn_core.views import kv_cache as kc

P = kc.Params
style = ui.style()
ui.title("kvcache.title")
st.caption(ui.t("kvcache.intro"))


with ui.controls_box():  # ------------ the calculator's controls (presentation mode: a bar at the slide's top right)
    c1, c2, c3 = st.columns([1.2, 1, 1], gap="large")
    with c1:
        v = {"model": ui.control(P, "model", widget="select")}
        preset = ui.run_safely(lambda: P(model=v["model"]).preset)  # a shipped model's: from its installed config
        if preset is None and v["model"] != "custom":
            ui.stop()
        if preset is None:
            v["n_heads"] = ui.control(P, "n_heads")
            v["n_kv_heads"] = ui.control(P, "n_kv_heads", n_heads=v["n_heads"])
            v["head_dim"] = ui.control(P, "head_dim")
            v["n_layers"] = ui.control(P, "n_layers")
            st.caption(ui.t("kvcache.custom_note"))
        else:
            st.markdown(kc.preset_line(preset, style))
            st.caption(kc.source_line(preset, style))
    with c2:
        v["dtype"] = ui.control(P, "dtype", widget="select")
        v["batch"] = ui.control(P, "batch")
        v["seq_len"] = ui.control(P, "seq_len")
    with c3:
        gpu = kc.gpu_memory(ui.device())
        if gpu is not None:  # the GPU's own memory; the calculator uses it
            st.markdown(ui.t("kvcache.device_cuda", size=kc.format_bytes_exact(gpu)))
        else:
            v["device_gib"] = ui.control(P, "device_gib", default=kc.DEFAULT_DEVICE_GIB)
        if preset is not None:
            v["stack_weights"] = ui.control(P, "stack_weights")
            if v["stack_weights"]:
                v["weights_dtype"] = ui.control(P, "weights_dtype", widget="select")
        else:
            st.caption(ui.t("kvcache.no_weights"))
        v["y_scale"] = ui.control(P, "y_scale")

p = P(**v, seed=ui.seed())
calc = ui.compute(kc.calculator, p)  # the layouts, the device memory, the weights; a bad value says what to change
if calc is None:
    ui.stop()
shown = ui.slide_sections(5, deck_picks=True)  # presentation mode: one section a slide (a deck's slide picks one)
if shown(0):  # ---------------------------------------------------------------- 1. the calculator's result
    ui.notices(kc.notices(p, calc, style))
    label, value, exact = kc.result(p, calc, style)
    m1, m2 = st.columns([1, 2.4], gap="large")
    with m1:
        st.metric(label, value)
        st.markdown(exact)
    with m2:
        st.latex(kc.latex_formula(p, calc, ui.on_phone()))
        st.caption(kc.symbols(p, calc, style))

if shown(1):  # ------------------------ 2. memory against sequence length (first screen: above the table)
    st.subheader(ui.t("kvcache.chart_header"))
    ui.show_view(ui.view(kc.memory_view, p, calc, style, ui.on_phone()), "kv_memory")  # a phone: its own layout
    ui.help_expander("kvcache.chart_help")
if shown(0):  # the layouts compared, the weights, MLA's rows
    ui.table(kc.comparison_table(kc.comparison(p, calc), style), hide_index=True, width="stretch")
    ui.notices(kc.weights_notes(p, calc, style))
    if (mla_numbers := kc.mla_help_numbers(calc, style)) is not None:
        ui.help_expander("kvcache.mla_help", **mla_numbers)
    ui.help_expander("kvcache.about", live=ui.t("kvcache.live_header"))
# ---- 3. the buffers filling token by token (slide: Next, one token); sent while open (~195 ms of drawing a move)
if (tensors := ui.section_box(shown, 2, ui.t("kvcache.tensor_header"), "x_kv_tensors")) is not None:
    with tensors:
        fill = kc.tensor_fill(p, calc)
        at = ui.slide_controls("kv_token", len(fill.tokens)) if ui.present() else None
        ui.show_view(ui.view(kc.tensor_view, fill, p.tag, style, at), "kv_tensors")
        st.caption(kc.tensor_caption(fill, style))

if (live := ui.section_box(shown, 3, ui.t("kvcache.live_header"), "x_kv_live", ui.linked("dec_"))) is not None:
    with live:  # 4. live decode: sent while open (~27 ms of drawing a move), open for a link that sets it
        ui.notices(("info", n, "ℹ️") for n in [kc.live_mla(p, calc, style)] if n)  # MLA: decodes the MHA row
        model = None  # a shipped decoder preset can decode with the real model; an encoder says it does not decode
        if p.shipped and not p.preset_decodes:
            st.info(ui.t("kvcache.real_encoder", model=p.preset.name), icon="ℹ️")
        elif p.shipped and ui.control(P, "dec_real"):
            p = kc.with_values(p, dec_real=True)
            if (model := ui.model(lambda: p.model)) is None:
                ui.stop()
        with ui.drawer():  # slide mode: in the controls bar; the real model has its own layers, batch 1 and float32
            d1, d2, d3 = st.columns(3, gap="large")
            dec = {} if model else {"dec_layers": ui.control(P, "dec_layers", container=d1)}
            dec["dec_steps"] = ui.control(P, "dec_steps", container=d1)
            dec["dec_prompt"] = ui.control(P, "dec_prompt", container=d2)
            if model is None:
                dec["dec_batch"] = ui.control(P, "dec_batch", container=d2)
                dec["dec_dtype"] = ui.control(P, "dec_dtype", container=d3)
                dec["dec_wrong"] = ui.control(P, "dec_wrong", container=d3)
            dec["dec_recompute"] = ui.control(P, "dec_recompute", container=d3)
        p = kc.with_values(p, **dec)
        spec = kc.decode_spec(p, model)
        st.markdown(kc.live_intro(p, spec, style))
        ui.notices(n for n in [kc.wrong_notice(spec, style)] if n is not None)

        run = ui.live_state("kv_decode", (spec, ui.device()))
        start = ui.live_buttons("kv", "kvcache.run", "kvcache.stop")
        bar, status = st.empty(), st.empty()
        g1, g2 = st.columns(2, gap="medium")
        boxes = g1.container(key="kv_live_mem").empty(), g2.container(key="kv_live_time").empty()

        def frame(r: ui.LiveRun) -> None:  # the charts so far, each replacing the last in its box (no key: no blinking)
            ui.live_charts(kc.decode_views(r.steps, spec, style), boxes)

        if start:
            progress = lambda r: kc.decode_progress(spec, r.steps, style)  # noqa: E731
            steps = lambda: kc.decode_steps(spec, device=ui.device(), model=model)  # noqa: E731
            run = ui.live_run("kv_decode", (spec, ui.device()), steps, frame, progress=progress, bar=bar)
        if run.status == "idle":  # before Run: the formula's prediction, which the measured points will land on
            with boxes[0].container():
                ui.show_view(ui.view(kc.decode_plan_view, spec, style), "kv_decode_plan")
        if ui.live_status(run, status, "kvcache.press_run"):
            run_spec = run.params[0]  # what the run measured, also after the controls moved on
            kind, text, icon = kc.decode_summary(run_spec, run.steps, run.status == "stopped", style)
            getattr(status, kind)(text, icon=icon)
            if run.steps:
                if run.stale:
                    st.caption(ui.t("kvcache.stale"))
                keys = ("kv_decode_memory", "kv_decode_time")
                for box, view, key in zip(boxes, kc.decode_views(run.steps, run_spec, style), keys, strict=True):
                    with box.container():
                        ui.show_view(view, key)

if (pd_box := ui.section_box(shown, 4, ui.t("kvcache.pd_header"), "x_kv_pd", ui.linked("pd_"))) is not None:  # 5.
    with pd_box:
        p1, p2 = st.columns([1, 2], gap="large")
        with p1:
            p = kc.with_values(p, pd_tokens=ui.control(P, "pd_tokens"))
            pd_spec = kc.prefill_spec(p)
            measure = st.button(ui.t("kvcache.pd_run"), key="kv_pd_run", icon=":material/timer:")
            st.caption(kc.prefill_plan(pd_spec, live is not None, style))  # the decode controls', or their defaults
            st.markdown(ui.t("kvcache.pd_body"))
        with p2:
            timed = ui.live_state("kv_pd", (pd_spec, ui.device()))
            if measure:
                with st.spinner(ui.t("kvcache.pd_running")):
                    pd_steps = lambda: kc.prefill_decode(pd_spec, device=ui.device())  # noqa: E731
                    timed = ui.live_run("kv_pd", (pd_spec, ui.device()), pd_steps)
            if timed.status == "error":
                ui.show_error(timed.error)
            if not timed.steps:
                st.caption(ui.t("kvcache.pd_press"))
            else:
                if timed.stale:
                    st.caption(ui.t("kvcache.stale_pd"))
                measured, measured_on = timed.params
                # this session's own timings: drawn directly, not cached for the server
                ui.show_view(kc.prefill_decode_view(timed.steps[-1], measured, style), "kv_prefill_decode")
                st.caption(kc.prefill_caption(measured, measured_on, style))
