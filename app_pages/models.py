"""Page: a pretrained model's attention: head roles by KV group, one layer, one head, generation, score scale."""

import streamlit as st

import ui
from attn_core.views import models as mv

P = mv.Params
style = ui.style()
ui.title("models.title")
st.caption(ui.t("models.intro"))

with ui.controls_box():
    c1, c2 = st.columns([1, 1.5], gap="large")
    with c1:
        v = {"model": ui.control(P, "model", widget="select")}
        if v["model"] == "local":
            v["model_path"] = ui.control(P, "model_path", height=68)
        model = ui.model(lambda: P(**v).model_key)
        if model is not None:  # what the model is and where it comes from, with the model's choice
            st.markdown(mv.model_line(model, style))
            st.caption(mv.source_line(model, style))
    with c2:
        v["example"] = ui.control(P, "example", widget="select", default=mv.default_example(style.lang))
        if v["example"] == "own":
            v["text"] = ui.control(P, "text", height=110)
        elif v["example"] == "repeated" and model is not None:
            v["repeat_len"] = ui.control(P, "repeat_len", hi=mv.max_repeat(model))
        elif v["example"] in mv.EXAMPLE_TEXTS:
            st.markdown(f"> {mv.EXAMPLE_TEXTS[v['example']]}")
if model is None:
    ui.stop()
p = P(**v, seed=ui.seed())
if (inp := ui.run_safely(lambda: mv.model_input(model, p))) is None:
    ui.stop()
p = mv.with_values(p, view=ui.control(P, "view"))


def open_head(layer: int, head: int) -> None:
    """Open a head of the roles list: its layer and head, in the one-head view."""
    st.session_state.update(layer=layer, head=head, view="head")
    st.query_params.update(layer=str(layer), head=str(head), view="head")  # URL-bound sliders read it when made


def captured(layer: int):
    """The layer's captured q, k, v on the input (cached), with the notes about the input."""
    with st.spinner(ui.t("models.capturing", layer=layer), show_time=True):
        att = ui.compute(mv.capture, model, inp, layer)
    if att is None:
        ui.stop()
    st.caption(mv.input_line(inp, att, style))
    for note in mv.input_notes(model, inp, att, style):
        st.warning(note, icon="✂️")
    return att


def pick_layer(box) -> int:  # the middle layer until one is picked
    return ui.control(P, "layer", hi=model.n_layers - 1, default=model.n_layers // 2, container=box)


if p.view == "roles":
    p = mv.with_values(p, score=ui.control(P, "score"))
    with st.spinner(ui.t("models.scoring", title=model.title), show_time=True):
        df = ui.compute(mv.roles, model, p.seed)
    if df is None:
        ui.stop()
    ui.show_view(ui.view(mv.roles_view, df, model, p.score, style), "mdl_roles")
    st.info(mv.gqa_note(model, df, p.score, style, short=ui.present()), icon="🔎")  # a slide: its verdict alone
    st.caption(mv.roles_method(model, df, style))
    if not ui.present():  # a slide: the map and its sentence
        st.markdown(f"**{ui.t('models.strongest')}**")
        ui.table(mv.role_table(df, style), hide_index=True, width="stretch", height="content")
        picks = mv.open_choices(model, df, p.score, style)
        o1, o2 = st.columns([2, 1], vertical_alignment="bottom")
        pick = o1.selectbox(ui.t("models.open_pick"), list(picks), key="role_pick", format_func=picks.get)
        o2.button(ui.t("models.open"), key="role_open", icon=":material/zoom_in:", on_click=open_head, args=pick)
elif p.view == "layer":
    layer = pick_layer(ui.drawer())  # slide mode: in the controls bar
    att = captured(layer)
    st.markdown(mv.layer_line(model, layer, style))
    t = len(att.tokens)
    p = ui.map_options(p, t, t, mv.grid_side(model.n_heads), t)
    pm = ui.compute(mv.grid_maps, att.source(layer), p.pool)
    if pm is None:
        ui.stop()
    ui.head_grid(att.source(layer), pm, p.fit(t), "mdl_layer", lambda h: ui.open_zoom(h, "head"), "focus.hint_model")
    ui.help_text("heatmap.read.title", mv.read_help(pm, p.fit(t), style))
elif p.view == "head":
    c1, c2 = ui.drawer().columns(2, gap="medium")  # slide mode: in the controls bar
    layer, head = pick_layer(c1), ui.control(P, "head", hi=model.n_heads - 1, container=c2)
    shown = ui.slide_sections(1 + 8)  # a slide: the head, then each of its eight steps
    att = captured(layer)
    src, t = att.source(layer), len(att.tokens)
    p = ui.map_options(p, t, t, mv.ZOOM_SIDE, t)
    if shown(0):
        pm = ui.compute(mv.zoom_maps, src, head, (0, t, 0, t), p.pool)
        if pm is None:
            ui.stop()
        ui.show_view(ui.view(mv.zoom_view, pm, style, p.fit(t)), "mdl_zoom")
    title = ui.t("models.steps_header")  # 8 charts: on the page sent while its section is open, on a slide one each
    steps = (
        ui.section_box(shown, 0, title, "x_mdl_steps") if not ui.present() else (None if shown(0) else st.container())
    )
    if steps is not None:
        with steps:
            q0 = k0 = 0
            if t > mv.STEP_WINDOW:  # a window of the sequence: where it starts (a slide: in the controls bar)
                w1, w2 = (ui.drawer() if ui.present() else st).columns(2, gap="medium")
                q0 = ui.control(P, "q_start", hi=t - mv.STEP_WINDOW, container=w1)
                k0 = ui.control(P, "k_start", hi=t - mv.STEP_WINDOW, container=w2)
            hw = ui.compute(mv.step_window, src, head, q0, k0)
            if hw is None:
                ui.stop()
            notes, sentences = mv.step_texts(model, att, hw, style)
            for note in notes:
                st.caption(note)
            n_cols = mv.step_columns(hw, style)
            views = ui.view(mv.head_step_views, hw, style, n_cols)
            if ui.present():  # one step a slide
                i = next(i for i in range(8) if shown(i + 1))
                st.markdown(f"### {sentences[i]}")  # the stepper counts the head's slide too
                ui.show_view(views[i], f"mdl_step{i}")
            else:
                ui.show_steps(views, sentences, n_cols, key="mdl_step")
elif p.view == "generate":
    if not model.causal:
        st.info(ui.t("models.gen_encoder", title=model.title), icon="ℹ️")
        ui.stop()
    g1, g2 = ui.drawer().columns(2, gap="large")  # slide mode: in the controls bar
    ctx = ui.control(P, "gen_context", hi=mv.max_context(model), container=g1)
    p = mv.with_values(p, gen_context=ctx, gen_tokens=ui.control(P, "gen_tokens", container=g2))
    if (spec := ui.run_safely(lambda: mv.speed_spec(model, p, inp))) is None:
        ui.stop()
    run = ui.live_state("model_gen", (spec, ui.device()))
    start = ui.live_buttons("gen", "models.gen_run", "models.gen_stop")
    bar, status, text_box, *boxes = [st.empty() for _ in range(4 if ui.present() else 5)]  # a slide: the time alone

    def frame(r: ui.LiveRun) -> None:
        ui.live_charts(mv.speed_views(r.steps, spec, model, style), boxes)
        text_box.caption(mv.speed_text(model, spec, r.steps, style))

    if start:
        progress = lambda r: mv.speed_progress(spec, r.steps, style)  # noqa: E731
        points = lambda: mv.speed_points(model, spec)  # noqa: E731
        run = ui.live_run("model_gen", (spec, ui.device()), points, frame, progress=progress, bar=bar)
    if ui.live_status(run, status, "models.gen_press") and run.steps:
        run_spec = run.params[0]
        kind, text = mv.speed_summary(run.steps, run_spec, run.status == "stopped", model, style, ui.present())
        getattr(status, kind)(text)
        if run.stale:
            st.caption(ui.t("models.gen_stale"))
        ui.show_views(mv.speed_views(run.steps, run_spec, model, style), boxes, "mdl_")  # drawn directly, not cached
        text_box.caption(mv.speed_text(model, run_spec, run.steps, style))
else:
    with st.spinner(ui.t("models.scaling", title=model.title), show_time=True):
        res = ui.compute(mv.scale, model, inp, p.seed)
    if res is None:
        ui.stop()
    st.markdown(mv.scale_summary(res, style))
    shown = ui.slide_sections(2)  # a slide: one chart
    views = [v for i, v in enumerate(ui.view(mv.scale_views, res, style)) if shown(i)]
    ui.show_views(views, [st.container()] if ui.present() else st.columns(2, gap="medium"), "mdl_")
    ui.help_expander("models.scale_help")
