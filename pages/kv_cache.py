"""Page: KV-cache memory. Calculator with real model presets, memory against sequence length,
a live decode whose measured cache equals the formula, and prefill against decode."""

import re
import time

import pandas as pd
import streamlit as st

import ui
from attn_core import fig_memory, kv_cache, memory
from attn_core.config import ConfigError

DEFAULT_MODEL = "llama-2-7b"
DEFAULT_DEVICE_GIB = 80
LIVE_REDRAW_S = 0.5  # least time between two redraws of the live charts
LIVE_REPEATS = 3  # each step is timed this many times, the best is shown

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


def ratio_text(size: int, reference: int) -> str:
    """``size`` as a multiple of ``reference``: ``1×``, ``1/8``, ``1/71.1``."""
    if reference == 0:
        return "–"
    r = size / reference
    return f"{r:.4g}×" if r >= 1 else f"1/{1 / r:.4g}"


style = ui.style()
presets = memory.load_presets()

st.title(ui.t("kvcache.title"))
st.caption(ui.t("kvcache.intro"))

# ---------------------------------------------------------------- 1. calculator
c1, c2, c3 = st.columns([1.2, 1, 1], gap="large")
with c1:
    model_id = ui.choice("model", ["custom", *presets], DEFAULT_MODEL, widget="select", help_key="help.model")
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
        shape = ui.t(
            "kvcache.preset_shape",
            L=preset.n_layers,
            d=f"{preset.hidden_size:,}",
            h=preset.n_heads,
            kv=preset.n_kv_heads,
            dk=preset.head_dim,
            max=f"{preset.max_positions:,}",
            params=f"{preset.n_params:,}",
        )
        if preset.is_mla:
            shape += " " + ui.t(
                "kvcache.preset_mla",
                r=preset.kv_lora_rank,
                rope=preset.qk_rope_head_dim,
                nope=preset.qk_nope_head_dim,
                dv=preset.v_head_dim,
            )
        st.markdown(shape)
        st.caption(ui.t("kvcache.source", url=preset.source))
with c2:
    dtype = ui.choice("dtype", list(memory.DTYPES), "fp16", widget="select", help_key="help.dtype")
    batch = ui.int_slider("batch", 1, 256, 1, help_key="help.batch")
    seq_len = ui.pow2_slider("seq_len", 1, memory.MAX_CALC_SEQ_LEN, 4096, help_key="help.kv_seq_len")
with c3:
    gpu_total = kv_cache.device_total_memory(ui.device()) if ui.device().startswith("cuda") else None
    if gpu_total is not None:
        device_bytes = gpu_total
        device_label = ui.t("kvcache.gpu_label")
        st.markdown(ui.t("kvcache.device_cuda", size=memory.format_bytes_exact(gpu_total)))
    else:
        device_gib = ui.int_slider("device_gib", 1, 2048, DEFAULT_DEVICE_GIB, help_key="help.device_gib")
        device_bytes = device_gib * 1024**3
        device_label = ui.t("kvcache.device_label")
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

layouts = ui.run_safely(
    lambda: (
        memory.preset_layouts(preset)
        if preset is not None
        else memory.cache_layouts(n_layers, n_heads, n_kv_heads, head_dim)
    )
)
if layouts is None:
    st.stop()
native = next(lay for lay in layouts if lay.native)
mha = layouts[0]
weights = memory.weights_bytes(preset.n_params, weights_dtype) if stack and preset is not None else None

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
    st.markdown(
        ui.t("kvcache.result_exact", exact=f"{total:,}", per_token=memory.format_bytes_exact(native.bytes(1, 1, dtype)))
    )
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
rows = []
for lay in layouts:
    size = lay.bytes(seq_len, batch, dtype)
    fits = lay.max_context(budget, batch, dtype)
    rows.append(
        {
            ui.t("kvcache.col_layout"): fig_memory.layout_name(lay, style),
            ui.t("kvcache.col_kv"): str(lay.n_kv_heads)
            if lay.kind != "MLA"
            else f"{lay.kv_lora_rank} + {lay.rope_dim}",
            ui.t("kvcache.col_per_token"): memory.format_bytes(lay.bytes(1, 1, dtype)),
            ui.t("kvcache.col_total", s=f"{seq_len:,}"): memory.format_bytes(size),
            ui.t("kvcache.col_bytes"): f"{size:,}",
            ui.t("kvcache.col_vs_mha"): ratio_text(size, mha.bytes(seq_len, batch, dtype)),
            ui.t("kvcache.col_fits"): f"{fits:,}",
        }
    )
st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
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
    ui.help_expander(
        "kvcache.mla_help",
        nope=preset.qk_nope_head_dim,
        rope=preset.qk_rope_head_dim,
        dv=preset.v_head_dim,
        h=n_heads,
        r=preset.kv_lora_rank,
        ratio=f"{mha.elements_per_token() / native.elements_per_token():.1f}",
    )

# ---------------------------------------------------------------- 2. memory against sequence length
st.subheader(ui.t("kvcache.chart_header"))
fig = fig_memory.memory_figure(
    layouts,
    batch=batch,
    dtype=dtype,
    device_bytes=device_bytes,
    device_label=device_label,
    model_name=model_name,
    weights=weights,
    seq_len=seq_len,
    max_positions=preset.max_positions if preset is not None else None,
    y_log=y_scale == "log",
    style=style,
)
curves = fig_memory.memory_curves(layouts, batch, dtype, fig_memory.seq_points(), weights)
ui.show_figure(fig, "kv_memory", data=pd.DataFrame(curves), name=f"kv_cache_{model_id}_{dtype}_b{batch}")
ui.help_expander("kvcache.chart_help")

# ---------------------------------------------------------------- 3. live decode
st.subheader(ui.t("kvcache.live_header"))
if native.kind == "MLA":
    dec_heads, dec_kv, dec_dim = n_heads, n_heads, preset.v_head_dim
    st.info(ui.t("kvcache.live_mla", model=model_name, h=dec_heads, d=dec_dim), icon="ℹ️")
else:
    dec_heads, dec_kv, dec_dim = n_heads, n_kv_heads, head_dim
d1, d2, d3 = st.columns(3, gap="large")
with d1:
    dec_layers = ui.int_slider("dec_layers", 1, kv_cache.MAX_DECODE_LAYERS, 2, help_key="help.dec_layers")
    dec_steps = ui.int_slider("dec_steps", 2, 1024, 128, help_key="help.dec_steps")
with d2:
    dec_prompt = ui.int_slider("dec_prompt", 1, 256, 16, help_key="help.dec_prompt")
    dec_batch = ui.int_slider("dec_batch", 1, kv_cache.MAX_DECODE_BATCH, 1, help_key="help.dec_batch")
with d3:
    dec_dtype = ui.choice("dec_dtype", list(kv_cache.DECODE_DTYPES), "fp16", help_key="help.dec_dtype")
    dec_wrong = ui.toggle("dec_wrong", False, help_key="help.dec_wrong")
    dec_recompute = ui.toggle("dec_recompute", True, help_key="help.dec_recompute")

dec_cfg = kv_cache.DecodeConfig(
    n_heads=dec_heads,
    n_kv_heads=dec_kv,
    head_dim=dec_dim,
    n_layers=dec_layers,
    batch=dec_batch,
    dtype=dec_dtype,
    seed=ui.seed(),
    cache_after_repeat=dec_wrong,
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
        dtype=dec_dtype,
        seed=ui.seed(),
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
mem_box, time_box = g1.empty(), g2.empty()


def decode_frames(steps: list, n_total: int, cfg: kv_cache.DecodeConfig, prompt_len: int):
    """The two live figures for the steps so far."""
    x_max = prompt_len + n_total - 1
    y_max = max(
        memory.kv_cache_bytes(cfg.n_layers, cfg.cache_heads, cfg.head_dim, x_max, cfg.batch, cfg.dtype),
        steps[0].allocated_bytes if steps else 0,
    )
    seq = [s.seq_len for s in steps]
    cuda = [s.cuda_bytes for s in steps] if steps and steps[0].cuda_bytes is not None else None
    mem_fig = fig_memory.decode_memory_figure(
        seq,
        [s.cache_bytes for s in steps],
        [s.formula_bytes for s in steps],
        x_max=x_max,
        y_max=y_max,
        correct=[s.correct_bytes for s in steps] if cfg.cache_after_repeat else None,
        cuda=cuda,
        allocated=steps[0].allocated_bytes if steps else None,
        style=style,
    )
    rec = [s.time_recompute_s * 1e3 for s in steps] if steps and steps[0].time_recompute_s is not None else None
    time_fig = fig_memory.decode_time_figure(
        seq, [s.time_cached_s * 1e3 for s in steps], rec, x_max=x_max, repeats=LIVE_REPEATS, style=style
    )
    return mem_fig, time_fig


def decode_table(steps: list) -> pd.DataFrame:
    """The numbers behind the live figures, one row per generated token."""
    return pd.DataFrame(
        {
            "step": [s.step for s in steps],
            "tokens in cache": [s.seq_len for s in steps],
            "token (cache)": [s.token for s in steps],
            "token (recompute)": [s.token_recompute for s in steps],
            "measured cache (bytes)": [s.cache_bytes for s in steps],
            "formula (bytes)": [s.formula_bytes for s in steps],
            "correct cache (bytes)": [s.correct_bytes for s in steps],
            "cuda memory_allocated growth (bytes)": [s.cuda_bytes for s in steps],
            "time with cache (ms)": [s.time_cached_s * 1e3 for s in steps],
            "time recompute (ms)": [None if s.time_recompute_s is None else s.time_recompute_s * 1e3 for s in steps],
        }
    )


if run:
    state = {"params": params, "steps": [], "status": "running", "error": None}
    st.session_state["kv_decode"] = state
    bar = progress_box.progress(0.0, text=ui.t("kvcache.starting"))
    try:
        frame, last_draw = 0, 0.0
        for step in kv_cache.run_decode(
            dec_cfg, dec_prompt, dec_steps, ui.device(), recompute=dec_recompute, repeats=LIVE_REPEATS
        ):
            state["steps"].append(step)
            bar.progress(
                step.step / dec_steps, text=ui.t("kvcache.progress", i=step.step, n=dec_steps, s=f"{step.seq_len:,}")
            )
            now = time.perf_counter()
            if now - last_draw >= LIVE_REDRAW_S or step.step == dec_steps:
                mem_fig, time_fig = decode_frames(state["steps"], dec_steps, dec_cfg, dec_prompt)
                mem_box.plotly_chart(mem_fig, key=f"kv_live_mem_{frame}", config=ui.PLOT_CONFIG)
                time_box.plotly_chart(time_fig, key=f"kv_live_time_{frame}", config=ui.PLOT_CONFIG)
                frame, last_draw = frame + 1, now
        state["status"] = "done"
    except ConfigError as exc:
        state["status"] = "error"
        state["error"] = str(exc)
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
        msg = ui.t(
            "kvcache.equal_yes" if equal else "kvcache.equal_no",
            n=len(steps),
            last=memory.format_bytes_exact(steps[-1].cache_bytes),
        )
        if s_recompute:
            same = sum(s.token == s.token_recompute for s in steps)
            msg += " " + ui.t("kvcache.same_tokens", same=same, n=len(steps))
            msg += " " + ui.t(
                "kvcache.speed",
                cached=f"{sum(s.time_cached_s for s in steps) * 1e3:,.1f}",
                recompute=f"{sum(s.time_recompute_s for s in steps) * 1e3:,.1f}",
            )
        if steps[0].cuda_bytes is not None:
            msg += " " + ui.t(
                "kvcache.cuda_note",
                alloc=memory.format_bytes_exact(steps[0].allocated_bytes),
                grow=memory.format_bytes_exact(steps[-1].cuda_bytes),
            )
        else:
            msg += " " + ui.t("kvcache.cpu_note", alloc=memory.format_bytes_exact(steps[0].allocated_bytes))
        if state["status"] == "stopped":
            status_box.warning(ui.t("kvcache.stopped", i=len(steps), n=s_n) + " " + msg, icon=":material/stop_circle:")
        else:
            status_box.success(msg, icon=":material/check_circle:")
        mem_fig, time_fig = decode_frames(steps, s_n, s_cfg, s_prompt)
        data = decode_table(steps)
        with mem_box.container():
            ui.show_figure(mem_fig, "kv_decode_memory", data=data, name="kv_decode_memory")
        with time_box.container():
            ui.show_figure(time_fig, "kv_decode_time", data=data, name="kv_decode_time")
    elif state["status"] == "stopped":
        status_box.warning(ui.t("kvcache.stopped", i=0, n=s_n), icon=":material/stop_circle:")
else:
    status_box.caption(ui.t("kvcache.press_run"))

# ---------------------------------------------------------------- 4. prefill against decode
st.subheader(ui.t("kvcache.pd_header"))
p1, p2 = st.columns([1, 2], gap="large")
with p1:
    pd_tokens = ui.int_slider("pd_tokens", 2, 256, 64, help_key="help.pd_tokens")
    measure = st.button(ui.t("kvcache.pd_run"), key="kv_pd_run", icon=":material/timer:")
    st.markdown(ui.t("kvcache.pd_body"))
with p2:
    pd_cfg = kv_cache.DecodeConfig(
        n_heads=dec_heads,
        n_kv_heads=dec_kv,
        head_dim=dec_dim,
        n_layers=dec_layers,
        batch=dec_batch,
        dtype=dec_dtype,
        seed=ui.seed(),
    )
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
        pd_fig = fig_memory.prefill_decode_figure(timing.n_tokens, timing.prefill_s, timing.decode_s, style=style)
        pd_data = pd.DataFrame(
            {
                "phase": ["prefill", "decode"],
                "tokens": [timing.n_tokens] * 2,
                "total (ms)": [timing.prefill_s * 1e3, timing.decode_s * 1e3],
                "per token (ms)": [timing.prefill_per_token_s * 1e3, timing.decode_per_token_s * 1e3],
            }
        )
        ui.show_figure(pd_fig, "kv_prefill_decode", data=pd_data, name="kv_prefill_decode")
        m_cfg, _, m_device = measured["params"]
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
