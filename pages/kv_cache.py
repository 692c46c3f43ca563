"""Page: KV-cache memory. Calculator with real model presets, memory against sequence length,
a live decode whose measured cache equals the formula, and prefill against decode."""

import re
import time

import streamlit as st

import ui
from attn_core import fig_memory, figures, kv_cache, memory
from attn_core.config import ConfigError

LIVE_REDRAW_S = 0.5  # least time between two redraws of the live charts

ui.page_guard()


def latex_formula(symbolic: str, substituted: str, total: int) -> str:
    """The formula as three aligned LaTeX lines: symbols, the numbers substituted, bytes and binary units."""

    def tex(s: str) -> str:
        s = s.replace("H_kv", "H_{kv}").replace("d_c", "d_{c}").replace("d_R", "d_{R}").replace("d_v", "d_{v}")
        s = s.replace("×", r"\times").replace(",", "{,}")
        return re.sub(r"(\d) B\b", r"\1\\,\\mathrm{B}", s)  # the unit after a number, not the batch symbol B

    numbers, exact = substituted.rsplit(" = ", 1)
    return (
        rf"\begin{{aligned}}\mathrm{{KV}} &= {tex(symbolic)} \\ &= {tex(numbers)} \\ "
        rf"&= {tex(exact)} = \text{{{memory.format_bytes(total)}}}\end{{aligned}}"
    )


style = ui.style()
presets = memory.load_presets()

st.title(ui.t("kvcache.title"))
st.caption(ui.t("kvcache.intro"))

# ---------------------------------------------------------------- 1. calculator
c1, c2, c3 = st.columns([1.2, 1, 1], gap="large")
with c1:
    model_id = ui.choice(
        "model", ["custom", *presets], fig_memory.DEFAULT_MODEL, widget="select", help_key="help.model"
    )
    preset = presets.get(model_id)
    if preset is None:
        n_heads = ui.int_slider("n_heads", 1, 128, 8, help_key="help.kv_n_heads")
        n_kv_heads = ui.kv_heads_select(n_heads, 2)
        head_dim = ui.int_slider("head_dim", 1, 256, 16, help_key="help.kv_head_dim")
        n_layers = ui.int_slider("n_layers", 1, 128, 12, help_key="help.n_layers")
        model_name = ui.t("opt.model.custom")
        st.caption(ui.t("kvcache.custom_note"))
    else:
        n_heads, n_kv_heads, head_dim, n_layers = preset.n_heads, preset.n_kv_heads, preset.head_dim, preset.n_layers
        model_name = preset.name
        common = dict(L=preset.n_layers, d=f"{preset.hidden_size:,}", h=preset.n_heads, max=f"{preset.max_positions:,}")
        common["params"] = f"{preset.n_params:,}"
        if preset.is_mla:  # no KV heads: the latent and the RoPE key are shared by all heads
            shape = ui.t(
                "kvcache.preset_shape_mla",
                **common,
                nope=preset.qk_nope_head_dim,
                rope=preset.qk_rope_head_dim,
                dv=preset.v_head_dim,
                r=preset.kv_lora_rank,
            )
        else:
            shape = ui.t("kvcache.preset_shape", **common, kv=preset.n_kv_heads, dk=preset.head_dim)
        st.markdown(shape)
        if preset.paper:
            st.caption(ui.t("kvcache.source_paper", url=preset.source, paper=preset.paper))
        else:
            st.caption(ui.t("kvcache.source", url=preset.source))
with c2:
    dtype = ui.choice("dtype", list(memory.DTYPES), "fp16", widget="select", help_key="help.dtype")
    batch = ui.int_slider("batch", 1, 256, 1, help_key="help.batch")
    seq_len = ui.pow2_slider("seq_len", 1, memory.MAX_CALC_SEQ_LEN, 4096, help_key="help.kv_seq_len")
with c3:
    gpu_total = kv_cache.device_total_memory(ui.device()) if ui.device().startswith("cuda") else None
    if gpu_total is not None:
        device_bytes, device_label = fig_memory.device_memory(ui.device(), None, style)
        st.markdown(ui.t("kvcache.device_cuda", size=memory.format_bytes_exact(gpu_total)))
    else:
        device_gib = ui.int_slider(
            "device_gib", 1, fig_memory.MAX_DEVICE_GIB, fig_memory.DEFAULT_DEVICE_GIB, help_key="help.device_gib"
        )
        device_bytes, device_label = fig_memory.device_memory(ui.device(), device_gib, style)
    if preset is not None:
        stack = ui.toggle("stack_weights", False, help_key="help.stack_weights")
        weights_dtype = (
            ui.choice("weights_dtype", list(memory.DTYPES), "bf16", widget="select", help_key="help.weights_dtype")
            if stack
            else "bf16"
        )
    else:
        stack, weights_dtype = False, "bf16"
        st.caption(ui.t("kvcache.no_weights"))
    y_scale = ui.choice("y_scale", ["log", "linear"], "log")

resolved = ui.run_safely(lambda: fig_memory.model_layouts(model_id, n_heads, n_kv_heads, head_dim, n_layers))
if resolved is None:
    st.stop()
layouts = resolved[1]
native = next(lay for lay in layouts if lay.native)
weights = fig_memory.stacked_weights(preset, weights_dtype) if stack and preset is not None else None
tag = fig_memory.model_tag(model_id, n_heads, n_kv_heads, head_dim, n_layers)

if preset is not None and seq_len > preset.max_positions:
    st.warning(
        ui.t("kvcache.beyond_max", model=preset.name, max=f"{preset.max_positions:,}", s=f"{seq_len:,}"), icon="⚠️"
    )
if preset is not None and preset.sliding_window:
    st.info(ui.t("kvcache.sliding", model=preset.name, w=f"{preset.sliding_window:,}"), icon="ℹ️")

total = native.bytes(seq_len, batch, dtype)
symbolic, substituted = native.formula(seq_len, batch, dtype)
m1, m2 = st.columns([1, 2.4], gap="large")
with m1:
    st.metric(ui.t("kvcache.result_label", kind=native.label), memory.format_bytes(total))
    per_token = memory.format_bytes_exact(native.bytes(1, 1, dtype))
    st.markdown(ui.t(fig_memory.count_key("kvcache.result_exact", total), exact=f"{total:,}", per_token=per_token))
with m2:
    st.latex(latex_formula(symbolic, substituted, total))
    b_text = memory.bytes_per_element_text(dtype)
    if native.kind == "MLA":
        st.caption(
            ui.t(
                "kvcache.symbols_mla",
                L=n_layers,
                B=batch,
                S=f"{seq_len:,}",
                r=native.kv_lora_rank,
                rope=native.rope_dim,
                b=b_text,
                dtype=dtype,
            )
        )
    else:
        st.caption(
            ui.t(
                "kvcache.symbols",
                L=n_layers,
                B=batch,
                H=native.n_kv_heads,
                S=f"{seq_len:,}",
                D=head_dim,
                b=b_text,
                dtype=dtype,
            )
        )

budget = max(0, device_bytes - (weights or 0))
comparison = fig_memory.comparison_data(layouts, seq_len, batch, dtype, budget)
st.dataframe(fig_memory.comparison_table(comparison, style), hide_index=True, width="stretch")
if weights is not None:
    st.caption(
        ui.t(
            "kvcache.weights_line",
            params=f"{preset.n_params:,}",
            b=memory.bytes_per_element_text(weights_dtype),
            size=memory.format_bytes_exact(weights),
            dtype=weights_dtype,
        )
    )
    if weights >= device_bytes:
        st.warning(
            ui.t("kvcache.weights_exceed", w=memory.format_bytes(weights), dev=memory.format_bytes(device_bytes)),
            icon="⚠️",
        )
if native.kind == "MLA":
    ui.help_expander("kvcache.mla_help", **fig_memory.mla_help_numbers(layouts, preset, style))

# ---------------------------------------------------------------- 2. memory against sequence length
st.subheader(ui.t("kvcache.chart_header"))
mem_view = fig_memory.memory_view(
    layouts,
    name=f"kv_cache_{tag}_{dtype}_b{batch}",
    model_name=model_name,
    batch=batch,
    dtype=dtype,
    seq_len=seq_len,
    device_bytes=device_bytes,
    device_label=device_label,
    weights=weights,
    max_positions=preset.max_positions if preset is not None else None,
    y_log=y_scale == "log",
    style=style,
)
ui.show_view(mem_view, "kv_memory", name=mem_view.name)
ui.help_expander("kvcache.chart_help")

# ---------------------------------------------------------------- 3. live decode
st.subheader(ui.t("kvcache.live_header"))
dec_heads, dec_kv, dec_dim = fig_memory.decode_shape(preset, n_heads, n_kv_heads, head_dim)
if native.kind == "MLA":
    st.info(ui.t("kvcache.live_mla", model=model_name, h=dec_heads, d=dec_dim), icon="ℹ️")  # the table's MHA row
d1, d2, d3 = st.columns(3, gap="large")
with d1:
    dec_layers = ui.int_slider("dec_layers", 1, kv_cache.MAX_DECODE_LAYERS, 2, help_key="help.dec_layers")
    dec_steps = ui.int_slider("dec_steps", 2, fig_memory.MAX_DEC_STEPS, 128, help_key="help.dec_steps")
with d2:
    dec_prompt = ui.int_slider("dec_prompt", 1, fig_memory.MAX_DEC_PROMPT, 16, help_key="help.dec_prompt")
    dec_batch = ui.int_slider("dec_batch", 1, kv_cache.MAX_DECODE_BATCH, 1, help_key="help.dec_batch")
with d3:
    dec_dtype = ui.choice("dec_dtype", list(kv_cache.DECODE_DTYPES), "fp16", help_key="help.dec_dtype")
    dec_wrong = ui.toggle("dec_wrong", False, help_key="help.dec_wrong")
    dec_recompute = ui.toggle("dec_recompute", True, help_key="help.dec_recompute")

dec_shape = dict(n_layers=dec_layers, batch=dec_batch, dtype=dec_dtype, seed=ui.seed())
dec_cfg = fig_memory.decode_config(preset, n_heads, n_kv_heads, head_dim, cache_after_repeat=dec_wrong, **dec_shape)
buf_b, buf_h, buf_s, buf_d = dec_cfg.cache_shape(dec_prompt + dec_steps - 1)  # what the buffers really hold
buffers = ui.t(
    "kvcache.live_buffers_wrong" if dec_cfg.cache_heads != dec_cfg.n_kv_heads else "kvcache.live_buffers",
    dtype=dec_dtype,
    B=buf_b,
    H=buf_h,
    S=f"{buf_s:,}",
    d=buf_d,
    kv=dec_kv,
)
st.markdown(
    ui.t(
        "kvcache.live_intro",
        h=dec_heads,
        kv=dec_kv,
        d=dec_dim,
        L=dec_layers,
        dm=dec_cfg.d_model,
        p=dec_prompt,
        n=dec_steps,
        B=dec_batch,
        seed=ui.seed(),
        buffers=buffers,
    )
)
if dec_wrong:
    if dec_cfg.n_rep == 1:
        st.info(ui.t("kvcache.wrong_mha"), icon="ℹ️")
    else:
        st.warning(ui.t("kvcache.wrong_note", h=dec_heads, kv=dec_kv, rep=dec_cfg.n_rep), icon="⚠️")
params = (dec_cfg, dec_prompt, dec_steps, dec_recompute, ui.device())

b1, b2, _ = st.columns([1, 1, 4])
run = b1.button(ui.t("kvcache.run"), key="kv_run", type="primary", icon=":material/play_arrow:")
b2.button(ui.t("kvcache.stop"), key="kv_stop", disabled=not run, icon=":material/stop:")
state = st.session_state.get("kv_decode")
if state is not None and state["status"] == "running" and not run:
    # The last run was interrupted (Stop, or any other control): keep what it measured.
    state["status"] = "stopped"

progress_box = st.empty()
status_box = st.empty()
g1, g2 = st.columns(2, gap="medium")
mem_box, time_box = g1.container(key="kv_live_mem").empty(), g2.container(key="kv_live_time").empty()


if run:
    state = {"params": params, "steps": [], "status": "running", "error": None}
    st.session_state["kv_decode"] = state
    bar = progress_box.progress(0.0, text=ui.t("kvcache.starting"))
    try:
        last_draw = 0.0
        for step in kv_cache.run_decode(
            dec_cfg, dec_prompt, dec_steps, ui.device(), recompute=dec_recompute, repeats=fig_memory.DECODE_REPEATS
        ):
            state["steps"].append(step)
            bar.progress(
                step.step / dec_steps, text=ui.t("kvcache.progress", i=step.step, n=dec_steps, s=f"{step.seq_len:,}")
            )
            now = time.perf_counter()
            if now - last_draw >= LIVE_REDRAW_S or step.step == dec_steps:
                mem_fig, time_fig = fig_memory.decode_figures(
                    state["steps"], dec_steps, dec_cfg, dec_prompt, style=style
                )
                # no key: each frame replaces the chart in place (a new key would remount it, and it blinks)
                for box, fig in ((mem_box, mem_fig), (time_box, time_fig)):
                    box.plotly_chart(figures.apply_fonts(fig, style), config=ui.PLOT_CONFIG, theme="streamlit")
                last_draw = now
        state["status"] = "done"
    except ConfigError as exc:
        state["status"] = "error"
        state["error"] = ui.error_text(exc)
    progress_box.empty()

if state is not None:
    steps = state["steps"]
    s_cfg, s_prompt, s_n, s_recompute, _ = state["params"]
    if state["status"] == "error":
        with status_box.container():
            ui.show_error(ConfigError(state["error"], "budget"))
    elif steps:
        if state["params"] != params:
            st.caption(ui.t("kvcache.stale"))
        equal = all(s.cache_bytes == s.formula_bytes for s in steps)
        parts = [] if state["status"] != "stopped" else [ui.t("kvcache.stopped", i=len(steps), n=s_n)]
        parts.append(
            ui.t(
                fig_memory.count_key("kvcache.equal_yes" if equal else "kvcache.equal_no", len(steps)),
                n=len(steps),
                last=memory.format_bytes_exact(steps[-1].cache_bytes),
            )
        )
        if s_recompute:
            same = sum(s.token == s.token_recompute for s in steps)
            parts.append(ui.t("kvcache.same_tokens", same=same, n=len(steps)))
            speed = kv_cache.decode_speed(steps)
            if speed is not None:  # the conclusion the measured medians support
                parts.append(ui.t(f"kvcache.speed_{speed.verdict}", **fig_memory.speed_numbers(speed)))
        if steps[0].cuda_bytes is not None:
            parts.append(
                ui.t(
                    "kvcache.cuda_note",
                    alloc=memory.format_bytes_exact(steps[0].allocated_bytes),
                    grow=memory.format_bytes_exact(steps[-1].cuda_bytes),
                )
            )
        else:
            parts.append(ui.t("kvcache.cpu_note", alloc=memory.format_bytes_exact(steps[0].allocated_bytes)))
        msg = ("" if ui.lang() == "zh" else " ").join(parts)  # Chinese sentences follow each other without a space
        if state["status"] == "stopped":
            status_box.warning(msg, icon=":material/stop_circle:")
        else:
            status_box.success(msg, icon=":material/check_circle:")
        dec_mem_view, dec_time_view = fig_memory.decode_views(steps, s_n, s_cfg, s_prompt, style=style)
        with mem_box.container():
            ui.show_view(dec_mem_view, "kv_decode_memory", name=dec_mem_view.name)
        with time_box.container():
            ui.show_view(dec_time_view, "kv_decode_time", name=dec_time_view.name)
    elif state["status"] == "stopped":
        status_box.warning(ui.t("kvcache.stopped", i=0, n=s_n), icon=":material/stop_circle:")
else:
    status_box.caption(ui.t("kvcache.press_run"))

# ---------------------------------------------------------------- 4. prefill against decode
st.subheader(ui.t("kvcache.pd_header"))
p1, p2 = st.columns([1, 2], gap="large")
with p1:
    pd_tokens = ui.int_slider("pd_tokens", 2, fig_memory.MAX_PD_TOKENS, 64, help_key="help.pd_tokens")
    measure = st.button(ui.t("kvcache.pd_run"), key="kv_pd_run", icon=":material/timer:")
    st.markdown(ui.t("kvcache.pd_body"))
with p2:
    pd_cfg = fig_memory.decode_config(preset, n_heads, n_kv_heads, head_dim, **dec_shape)
    pd_params = (pd_cfg, pd_tokens, ui.device())
    if measure:
        with st.spinner(ui.t("kvcache.pd_running")):
            timing = ui.run_safely(lambda: kv_cache.time_prefill_vs_decode(pd_cfg, pd_tokens, ui.device()))
        if timing is not None:
            st.session_state["kv_pd"] = {"params": pd_params, "timing": timing}
    measured = st.session_state.get("kv_pd")
    if measured is None:
        st.caption(ui.t("kvcache.pd_press"))
    else:
        timing = measured["timing"]
        if measured["params"] != pd_params:
            st.caption(ui.t("kvcache.stale_pd"))
        m_cfg, _, m_device = measured["params"]
        pd_view = fig_memory.prefill_decode_view(timing, m_cfg, style)
        ui.show_view(pd_view, "kv_prefill_decode", name=pd_view.name)
        st.caption(
            ui.t(
                "kvcache.pd_caption",
                h=m_cfg.n_heads,
                kv=m_cfg.n_kv_heads,
                d=m_cfg.head_dim,
                L=m_cfg.n_layers,
                B=m_cfg.batch,
                dtype=m_cfg.dtype,
                device=m_device,
            )
        )
