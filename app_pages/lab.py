"""Page: the training lab. Tiny transformers trained live on synthetic tasks: scaling, KV heads, MHA → GQA,
what heads learn, or custom; curves drawn as they grow, stoppable, kept per experiment."""

import streamlit as st

import ui
from attn_core.views import lab as lv

P = lv.Params
style = ui.style()
ui.title("lab.title")
st.caption(ui.t("lab.intro"))

with ui.controls_box():
    v = {"experiment": ui.control(P, "experiment")}
    c1, c2 = st.columns(2, gap="large")
    v["lab_steps"] = ui.control(P, "lab_steps", lo=5, default=lv.DEFAULT_STEPS[v["experiment"]], container=c1)
    v["lab_seeds"] = ui.control(P, "lab_seeds", lo=1, default=lv.DEFAULT_SEEDS[v["experiment"]], container=c2)
    if v["experiment"] == "custom":
        d1, d2, d3 = st.columns(3, gap="medium")
        for box, names in (
            (d1, ("lab_task", "lab_vocab", "lab_length", "lab_scale")),
            (d2, ("lab_layers", "lab_d_model", "lab_heads", "lab_position")),
            (d3, ("lab_head_dim", "lab_batch", "lab_lr")),
        ):
            for name in names:
                v[name] = ui.control(P, name, container=box, **({"widget": "select"} if name == "lab_task" else {}))
        v["lab_kv_heads"] = ui.control(P, "lab_kv_heads", n_heads=v["lab_heads"], container=d3)
p = P(**v, seed=ui.seed())
exp = ui.run_safely(lambda: lv.experiment(p))  # a run over the time or memory budget says what to reduce
if exp is None:
    ui.stop()
st.markdown(lv.intro(p, exp, style))

KEY, DONE = "lab_live", "lab_done"
done = st.session_state.setdefault(DONE, {})  # finished runs of this session, per experiment: kept across pages
run = ui.live_state(KEY, (exp, ui.device()))
start = ui.live_buttons("lab", "lab.run", "lab.stop")
bar, status = st.empty(), st.empty()
boxes = [c.empty() for c in st.columns(2, gap="medium")] + [st.empty()]  # the heads' maps take the full width


def frame(r: ui.LiveRun) -> None:
    """The curves so far; no key, so each frame replaces the chart in place."""
    ui.live_charts(lv.result_views(r.steps, exp, 0, style)[:1], boxes)


if start:
    run = ui.live_run(
        KEY,
        (exp, ui.device()),
        lambda: lv.experiment_steps(exp, device=ui.device()),
        frame,
        progress=lambda r: lv.progress(exp, r.steps, style),
        bar=bar,
        every_s=1.0,
    )
    if run.status == "done":
        done[ui.digest(exp, ui.device())] = run.steps
        while len(done) > lv.KEPT_RUNS:
            done.pop(next(iter(done)))
shown_steps, shown_exp = None, exp
if run.status == "error":
    with status.container():
        ui.show_error(run.error)
elif run.steps and not run.stale:
    shown_steps = run.steps
elif ui.digest(exp, ui.device()) in done:
    shown_steps = done[ui.digest(exp, ui.device())]
    status.caption(ui.t("lab.cached"))
elif run.steps:
    shown_steps, shown_exp = run.steps, run.params[0]
    st.caption(ui.t("lab.stale"))
else:
    status.caption(ui.t("lab.press_run"))
    ui.show_views(lv.result_views([], exp, 0, style)[:1], boxes, "lab_")  # the empty axes the curves will fill

if shown_steps:
    if run.status == "stopped" and shown_steps is run.steps:
        status.warning(ui.t("lab.stopped", n=lv.steps_done(run.steps), total=shown_exp.total_steps), icon="⏹️")
    fr = 0
    if shown_exp.name in ("heads", "custom") and len(lv.snapshots(shown_steps)) > 1:
        fr = ui.control(P, "lab_frame", lo=1, hi=len(lv.snapshots(shown_steps)), default=len(lv.snapshots(shown_steps)))
    wide = shown_exp.name in ("heads", "custom")
    ui.show_views(lv.result_views(shown_steps, shown_exp, fr, style), boxes[::2] if wide else boxes, "lab_")
    for line in lv.summary(shown_steps, shown_exp, style):
        st.markdown(line)
    st.caption(ui.t("lab.measured_here", device=ui.device()))
ui.help_expander("lab.help")
ui.help_expander("lab.about")
