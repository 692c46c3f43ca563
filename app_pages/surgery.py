"""Page: surgery on a real model. One change at a time to a trained model (KV heads pooled, the score scale, heads
silenced, the cache evicted) measured on an evaluation text, its maps beside the original's; a model card from a
configuration alone."""

import streamlit as st

import ui
from attn_core.views import surgery as sv

P = sv.Params
style = ui.style()
ui.title("surgery.title")
st.caption(ui.t("surgery.intro"))

upload = None
with ui.controls_box():
    v = {"view": ui.control(P, "view", widget="select")}
    if v["view"] == "card":
        v["sg_card"] = ui.control(P, "sg_card", widget="select")
        if v["sg_card"] == "shipped":
            v["model"] = ui.control(P, "model", widget="select")
        elif v["sg_card"] == "paste":
            v["sg_config"] = ui.control(P, "sg_config", height=180)
        else:
            upload = st.file_uploader(ui.t("surgery.upload"), key="sg_upload", help=ui.t("help.sg_upload"))
        v["sg_card_len"] = ui.control(P, "sg_card_len")
    else:
        v["model"] = ui.control(P, "model", widget="select")
        lang_text = "zh" if style.lang == "zh" else "en"  # the text in the page's language, until one is chosen
        v["sg_text"] = ui.control(P, "sg_text", widget="select", default=lang_text, data_default=True)
        if v["sg_text"] == "own":
            v["sg_own"] = ui.control(P, "sg_own", height=120)
        v["sg_tokens"] = ui.control(P, "sg_tokens")

for note in sv.model_notes(v.get("model", "") if v.get("sg_card", "shipped") == "shipped" else "", style):
    st.caption(note)  # Gemma: its terms of use, wherever it is chosen
if v["view"] == "card":  # ---------------------------------------------------------------- the model card
    p = P(**v, seed=ui.seed())
    res, err = sv.read_card(p, (upload.name, upload.getvalue()) if upload is not None else None, style)
    if err:
        st.error(err, icon="🛑")
        res = st.session_state.get("_sg_card")  # keep what is shown: the last card read
        if res is not None:
            st.caption(ui.t("surgery.card_kept", name=res.name))
    elif res is not None:
        st.session_state["_sg_card"] = res
    if res is None:
        if not err:  # nothing uploaded yet
            st.info(ui.t("surgery.card_upload_first"), icon="📄")
        ui.stop()
    shown = ui.slide_sections(2)
    lines = sv.card_lines(res, p.sg_card_len, style)
    cache_view, heads_view = ui.view(sv.card_views, res, p.sg_card_len, style)
    slide = ui.present()  # a slide's one chart keeps its element from slide to slide
    if shown(0):
        ui.show_view(cache_view, "sg_card_slide" if slide else "sg_card_cache")
        st.markdown(lines[1])
    if shown(1):
        ui.show_view(heads_view, "sg_card_slide" if slide else "sg_card_heads")
        st.markdown(lines[0])
    if not ui.present():
        ui.table(sv.card_table(res.card, p.sg_card_len, style), hide_index=True, width="stretch")
    ui.help_expander("surgery.card_help")
    ui.stop()

model = ui.model(lambda: v["model"])
if model is None:
    ui.stop()
with ui.drawer():  # ---------------------------------------------------------------- the change and the maps
    choices = sv.kv_choices(model)
    if v["view"] == "kv_heads" and choices:
        v["sg_kv"] = ui.control(P, "sg_kv", options=choices, default=choices[0])
        v["sg_method"] = ui.control(P, "sg_method", widget="select")
    elif v["view"] == "scale":
        v["sg_factor"] = ui.control(P, "sg_factor")
    elif v["view"] == "evict" and model.causal:
        v["sg_window"] = ui.control(P, "sg_window")
        v["sg_sinks"] = ui.control(P, "sg_sinks")
    v["sg_layer"] = ui.control(P, "sg_layer", hi=model.n_layers - 1, default=sv.default_layer(model))
    v["sg_head"] = ui.control(P, "sg_head", hi=model.n_heads - 1, default=sv.default_head(model))
    if v["view"] == "ablate" and model.n_rep > 1:
        v["sg_group"] = ui.control(P, "sg_group")
p = P(**v, seed=ui.seed())
if (inp := ui.run_safely(lambda: sv.eval_input(model, p))) is None:
    ui.stop()
for note in sv.input_notes(model, inp, p, style):
    st.caption(note)
for note in sv.view_notes(p, model, style):
    st.info(note, icon="ℹ️")

settings, chosen = sv.sweep(p, model), sv.chosen_setting(p, model)
shown = ui.slide_sections(3 if p.view == "scale" else 2)
KEY, RUN = f"sg_run_{p.view}", (model.name, inp.ids, settings, ui.device())
run = ui.live_state(KEY, RUN)
bar, status, stop_box = st.empty(), st.empty(), st.empty()
boxes, lines_box = [st.empty(), st.empty()], st.container()
if p.view == "kv_heads" and not choices:  # nothing to pool (MQA): the heads as they share their one KV head
    ui.show_view(ui.view(sv.mqa_view, model, style), "sg_mqa")

if chosen is not None and shown(1):  # the maps need no sweep: drawn while it runs
    ids, side = sv.map_ids(p, inp, style)
    layer = sv.maps_layer(p, model)
    with st.spinner(ui.t("surgery.capturing", layer=layer), show_time=True):
        pair = ui.compute(sv.map_pair, model, ids, chosen, layer, side)
    if pair is not None:
        head = sv.shown_head(p, model, pair)
        names, title = sv.map_names(p, model, style), sv.map_title(p, model, pair, head, style)
        ui.show_view(ui.view(sv.pair_view, pair, head, names, title, style), "sg_maps")
        st.caption(sv.map_line(p, model, pair, head, style))


def drawn(views: list) -> list:
    """The result charts this slide shows: the first on the first slide, the second (the layers) on the third."""
    return [view for i, view in enumerate(views) if shown(0 if i == 0 else 2)]


def frame(r: ui.LiveRun) -> None:
    """The charts so far, each replacing the last in its box (no key: no blinking)."""
    ui.live_charts(drawn(sv.result_views(sv.by_setting(r.steps), p, model, style)), boxes)


resume = run.status == "stopped" and not run.stale and stop_box.button(ui.t("surgery.resume"), key="sg_resume")
if settings and (run.status == "idle" or run.stale or resume):
    stop_box.button(ui.t("surgery.stop"), key="sg_stop", icon=":material/stop:")

    def steps():
        ref = lambda: ui.shared(sv.reference, model, inp.ids)  # noqa: E731 - read only when a setting is measured
        for s in settings:
            yield ui.compute(sv.measure, model, inp.ids, s, given={"reference": ref})

    progress = lambda r: sv.progress(settings, len(r.steps), model, style)  # noqa: E731
    run = ui.live_run(KEY, RUN, steps, frame, progress=progress, bar=bar)
    stop_box.empty()
if run.status == "error":
    ui.show_error(run.error)
elif run.status == "stopped":
    status.warning(ui.t("surgery.stopped", i=len(run.steps), n=len(settings)), icon="⏹️")
got = sv.by_setting(run.steps)
if got:
    ui.show_views(drawn(ui.view(sv.result_views, got, p, model, style)), boxes, "sg_")
with lines_box:  # a slide: its chart's one sentence (the verdict; the layers' softmax)
    lines = sv.result_lines(got, p, model, style)
    if ui.present():
        lines = lines[:1] if shown(0) else lines[-1:] if shown(2) else []
    elif sv.ORIGINAL in got and chosen in got:
        st.markdown(sv.before_after(model, got[sv.ORIGINAL], got[chosen], style))
    for line in lines:
        st.markdown(line)
if p.view == "kv_heads" and got and not ui.present():
    ui.table(sv.kv_table(got, model, p.seed, style), hide_index=True, width="stretch")
ui.help_expander(f"surgery.help_{p.view}")
