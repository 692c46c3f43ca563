"""Page: attention as convolution. Heads with the quadratic relative-position encoding attend to a shift; K² of
them, with the kernel's taps as value projections, compute a K×K convolution (Cordonnier, Loukas & Jaggi, 2020)."""

import streamlit as st

import ui
from attn_core.views import conv_attention as cv

P = cv.Params
style = ui.style()
ui.title("conv.title")
st.caption(ui.t("conv.intro"))


def about() -> None:
    ui.help_expander("conv.about")


def say(kind_text) -> None:
    kind, text = kind_text
    getattr(st, kind)(text)


def image_controls(v: dict) -> tuple[dict, bytes | None]:
    """The image (pattern and size, or an upload), the kernel and the padding; the upload's bytes."""
    c1, c2, c3 = st.columns(3, gap="medium")
    v["pattern"] = ui.control(P, "pattern", container=c1, widget="select")
    v["image_size"] = ui.control(P, "image_size", container=c1)
    file = ui.file_input(ui.t("conv.upload"), "conv_upload", ui.t("help.conv_upload"), container=c2)
    v["kernel"] = ui.control(P, "kernel", container=c3, widget="select")
    if v["kernel"] == "custom":
        v["kernel_text"] = ui.control(P, "kernel_text", container=c3, height=80)
    else:
        v["k"] = ui.control(P, "k", container=c3)
    v["padding"] = ui.control(P, "padding", container=c2)
    return v, (file.getvalue() if file is not None else None)


def load(p: cv.Params, upload: bytes | None):
    """The image: the upload's when it reads, else the pattern (a refused upload says why, the pattern stays)."""
    if upload is not None:
        img = ui.run_safely(lambda: cv.image_of(p, upload))
        if img is not None:
            st.caption(ui.t("conv.upload_used", h=img.shape[1], w=img.shape[2], c=img.shape[0]))
            return img
        st.caption(ui.t("conv.pattern_stays"))
    return cv.image_of(p)


p = P(view=ui.control(P, "view"))
with ui.controls_box():
    a1, a2 = st.columns(2, gap="large")
    v = {"view": p.view, "alpha": ui.control(P, "alpha", container=a1)}
    if p.view == "line":
        v["k"] = ui.control(P, "k", container=a2)
        b1, b2, b3 = st.columns(3, gap="medium")
        v["seq_len"] = ui.control(P, "seq_len", container=b1)
        v["query"] = ui.control(P, "query", hi=v["seq_len"] - 1, container=b2)
        v["shift"] = ui.control(P, "shift", container=b3)
        upload = None
    else:
        v, upload = image_controls(v)
p = P(**v)
kernel = ui.run_safely(lambda: p.kernel2d)
if p.view != "line" and kernel is None:
    ui.stop()

if p.view == "line":
    res = ui.compute(cv.line_step, p.seq_len, p.query, p.shift, p.alpha, p.k)
    if res is None:
        ui.stop()
    views = ui.view(cv.line_views, res, style)
    shown = ui.slide_sections(2)  # a slide: one head's scores and window; then the K heads
    if shown(0):
        st.latex(cv.line_formula(res))
        say(cv.line_sentence(res, style))
        for box, view, key in zip(st.columns(2, gap="medium"), views, ("conv_score", "conv_window"), strict=False):
            with box:
                ui.show_view(view, key)
    if shown(1):
        ui.show_view(views[2], "conv_heads")
        (st.markdown if ui.present() else st.caption)(ui.t("conv.line_heads", k=len(res.shifts)))
    ui.help_expander("conv.encoding_help")
    about()
    ui.stop()

image = load(p, upload)
c, h, w = image.shape
if p.view == "analogy":  # a slide: half the rows at a time
    shown = ui.slide_sections(2)
    part = next(i for i in range(2) if shown(i)) if ui.present() else None
    ui.show_view(ui.view(cv.analogy_view, kernel.shape[0], c, style, part), "conv_analogy")
    ui.help_expander("conv.analogy_help")
    about()
    ui.stop()
if ui.run_safely(lambda: cv.check_size(kernel, image)) is None:
    ui.stop()

if p.view == "image":
    with ui.drawer():  # slide mode: in the controls bar
        q1, q2, q3 = st.columns(3, gap="medium")
        p = cv.with_values(
            p,
            q_row=ui.control(P, "q_row", hi=h - 1, container=q1),
            q_col=ui.control(P, "q_col", hi=w - 1, container=q2),
            channel=ui.control(P, "channel", hi=c - 1, container=q3),
        )
    res = ui.compute(cv.image_step, image, kernel, p.alpha, p.padding, p.q_row, p.q_col)
    if res is None:
        ui.stop()
    say(cv.image_sentence(res, style))
    views = ui.view(cv.image_views, res, p.channel, style)
    shown = ui.slide_sections(3)  # a slide: the maps; the input and attention's output; conv2d and the difference
    rows = [(1, 0), (2, 1), (2, 2)]
    charts = [((1, "maps"),), ((0, "input"), (2, "att")), ((3, "conv"), (4, "diff"))]
    for (n, row), pair in zip(rows, charts, strict=True):
        if shown(row):
            for box, (i, key) in zip(st.columns(n, gap="medium"), pair, strict=True):
                with box:
                    ui.show_view(views[i], f"conv_{key}")
    st.caption(cv.image_note(res, style))
    ui.help_text("conv.padding_help.title", cv.padding_help(image, kernel, style))
else:
    with st.spinner(ui.t("conv.sweeping", n=len(cv.SWEEP_ALPHAS))):
        sw = ui.compute(cv.sweep_step, image, kernel, p.padding)
    if sw is None:
        ui.stop()
    say(cv.sweep_sentence(sw, p.padding, style))
    ui.show_view(ui.view(cv.sweep_view, sw, p.alpha, p.padding, style), "conv_sweep")
    st.caption(ui.t("conv.sweep_note", k=kernel.shape[0], n=kernel.shape[0] ** 2, h=h, w=w, c=c))
about()
