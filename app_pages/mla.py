"""Page: multi-head latent attention (DeepSeek-V2/V3). Its data flow and cache, naive against absorbed with
the same numbers, the rope-on-latent mistake measured, a live decode of both paths, and the cost of absorbing."""

import streamlit as st

import ui
from attn_core.views import mla as mv

P = mv.Params
style = ui.style()
ui.title("mla.title")
st.caption(ui.t("mla.intro"))

with ui.controls_box():
    c1, c2 = st.columns([1, 2], gap="large")
    with c1:
        v = {"preset": ui.control(P, "preset", widget="select")}
    if v["preset"] == "custom":
        with c2:
            d1, d2, d3 = st.columns(3, gap="medium")
            for box, names in (
                (d1, ("d_model", "n_heads", "n_layers")),
                (d2, ("kv_lora_rank", "q_lora_rank")),
                (d3, ("qk_nope", "qk_rope", "v_dim")),
            ):
                for name in names:
                    v[name] = ui.control(P, name, container=box)
    v["mode"] = ui.control(P, "mode")
p = P(**v, seed=ui.seed())
if ui.run_safely(lambda: p.config) is None:
    ui.stop()
with ui.drawer():  # slide mode: in the controls bar
    st.markdown(mv.shape_line(p, style))
note = mv.run_note(p, style)
p = mv.with_values(p, view=ui.control(P, "view"))
run_cfg = mv.run_config(p.config)


def say(kind_text) -> None:
    kind, text = kind_text
    getattr(st, kind)(text)


if p.view == "flow":
    ui.show_view(ui.view(mv.flow_view, p, style), "mla_flow")
    st.markdown(mv.flow_sentence(p, style))
    ui.help_expander("mla.absorb_help")
    ui.help_expander("mla.notes_help")
elif p.view == "agree":
    with ui.drawer():  # slide mode: in the controls bar
        a1, a2 = st.columns(2, gap="large")
        p = mv.with_values(
            p,
            seq_len=ui.control(P, "seq_len", container=a1),
            head=ui.control(P, "head", hi=run_cfg.n_heads - 1, container=a2),
        )
    if note:
        st.caption(note)
    shown = ui.slide_sections(3)  # slides: what the two paths measure; one head's maps by both; every head
    lay = ui.shared(mv.layer, run_cfg, p.seed)  # one seeded layer for every length (None: compare says why)
    res = ui.compute(mv.compare, run_cfg, p.seq_len, p.seed, given={"layer": lay}) if shown(0) or shown(1) else None
    if (shown(0) or shown(1)) and res is None:
        ui.stop()
    if shown(0):
        for item in mv.agree_sentences(res, style):
            say(item)
        ui.table(mv.agree_table(res, style), hide_index=True, width="stretch")
    if shown(1):
        ui.show_view(ui.view(mv.agree_views, res, p.head, p.tokens, style)[0], "mla_agree")
    grid_title = ui.t("mla.grid_header", mode=ui.t(f"opt.mode.{p.mode}"))
    grid_box = ui.section_box(shown, 2, grid_title, "x_mla_grid", slide_heading=False)  # the grid takes the slide
    if grid_box is not None:  # every head: on the page computed and sent while open
        with grid_box:
            pm = ui.compute(mv.grid, run_cfg, p.tokens, p.seed, p.mode, given={"layer": lay})
            if pm is not None:
                heads = ui.grid_page(pm, "mla_heads")  # a slide: as many heads as it labels in full
                ui.show_heads(ui.view(mv.grid_view, pm, p.mode, style, heads), "mla_grid")
    st.caption(ui.t("mla.random_inputs", seed=p.seed))
elif p.view == "cache":
    with ui.drawer():  # with the page's controls (slide mode: in the controls bar)
        k1, k2, k3 = st.columns(3, gap="large")
        p = mv.with_values(
            p,
            n_kv_heads=ui.control(P, "n_kv_heads", n_heads=p.config.n_heads, container=k1),
            cache_len=ui.control(P, "cache_len", container=k2),
            dtype=ui.control(P, "dtype", widget="select", container=k3),
        )
    lays = ui.run_safely(lambda: mv.layouts(p))
    if lays is None:
        ui.stop()
    st.info(mv.gqa_line(p, style), icon="📐")
    ui.show_view(ui.view(mv.cache_view, p, style), "mla_cache")
    if not ui.present():  # a slide: the chart and its sentence
        ui.table(mv.cache_frame(p, style), hide_index=True, width="stretch")
        st.markdown(f"**{ui.t('mla.presets_header')}**")
        ui.table(mv.presets_frame(p, style), hide_index=True, width="stretch")
    st.caption(ui.t("mla.cache_note"))
elif p.view == "decode":
    with ui.drawer():  # with the page's controls (slide mode: in the controls bar)
        e1, e2 = st.columns(2, gap="large")
        p = mv.with_values(
            p, dec_steps=ui.control(P, "dec_steps", container=e1), dec_prompt=ui.control(P, "dec_prompt", container=e2)
        )
    if note:
        st.caption(note)
    spec = mv.decode_spec(p)
    st.markdown(ui.t("mla.dec_intro", h=spec.cfg.n_heads, p=spec.prompt, n=spec.steps))
    run = ui.live_state("mla_decode", (spec, ui.device()))
    start = ui.live_buttons("mla", "mla.dec_run", "mla.dec_stop")
    bar, status = st.empty(), st.empty()
    boxes = [c.empty() for c in st.columns(2, gap="medium")]

    def frame(r: ui.LiveRun) -> None:
        ui.live_charts(mv.decode_views(r.steps, spec, style), boxes)

    if start:
        run = ui.live_run(
            "mla_decode",
            (spec, ui.device()),
            lambda: mv.decode_steps(spec, device=ui.device()),
            frame,
            progress=lambda r: mv.decode_progress(spec, r.steps, style),
            bar=bar,
        )
    if ui.live_status(run, status, "mla.dec_press") and run.steps:
        run_spec = run.params[0]
        kind, text = mv.decode_summary(run_spec, run.steps, style)
        getattr(status, kind)(text)
        if run.stale:
            st.caption(ui.t("mla.dec_stale"))
        ui.show_views(mv.decode_views(run.steps, run_spec, style), boxes, "mla_")  # this session's own run
else:
    with ui.drawer():  # with the page's controls (slide mode: in the controls bar)
        p = mv.with_values(p, cache_len=ui.control(P, "cache_len"))
    shown = ui.slide_sections(3)  # slides: the two charts; what they say and the formulas; the measured times
    if shown(0):
        ui.show_views(ui.view(mv.cost_views, p, style), st.columns(2, gap="medium"), "mla_")
    if shown(1):
        st.info(mv.cost_sentence(p, style), icon="⚖️")
    for label, line in mv.cost_formulas(p, style) if shown(1) else ():
        st.markdown(label)
        st.latex(line)
    if shown(2):
        with st.spinner(ui.t("mla.timing")):
            df = ui.compute(mv.timings, run_cfg, p.seed)
        if df is not None:
            st.markdown(mv.timing_sentence(df, run_cfg, style))
            ui.table(mv.timing_table(df, style), hide_index=True)
    ui.help_expander("mla.cost_help")
ui.help_expander("mla.about")
