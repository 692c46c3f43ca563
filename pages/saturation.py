"""Page: softmax saturation, what the 1/sqrt(d_k) scaling prevents, measured."""

import math

import streamlit as st

import ui
from attn_core import fig_saturation, stats
from attn_core.guard import run_with_fallback

DEFAULT_D_K = 64

ui.page_guard()


@st.cache_data(max_entries=32, show_spinner=False)
def cached_sweep(seq_len: int, n_samples: int, seed: int, distribution: str, temperature: float, device_name: str):
    """:func:`attn_core.stats.saturation_sweep` over d_k = 1..1024, cached by primitive arguments."""
    sweep, _ = run_with_fallback(  # a CUDA out-of-memory reruns on the CPU
        lambda dev: stats.saturation_sweep(stats.SWEEP_D_K, seq_len, n_samples, seed, dev, distribution, temperature),
        device_name,
    )
    return sweep


@st.cache_data(max_entries=64, show_spinner=False)
def cached_sample(d_k: int, seq_len: int, n_samples: int, seed: int, distribution: str, device_name: str):
    """:func:`attn_core.stats.score_sample` (histograms and variances, CPU numpy), cached by primitive arguments."""
    sample, _ = run_with_fallback(
        lambda dev: stats.score_sample(d_k, seq_len, n_samples, seed, dev, distribution), device_name
    )
    return sample


@st.cache_data(max_entries=64, show_spinner=False)
def cached_maps(
    d_k: int, seq_len: int, n_samples: int, seed: int, distribution: str, temperature: float, device_name: str
):
    """:func:`attn_core.stats.example_maps`: the first sequence's maps, pooled to 64 per side (CPU numpy)."""
    maps, _ = run_with_fallback(
        lambda dev: stats.example_maps(
            d_k, seq_len, n_samples, seed, distribution, temperature, fig_saturation.MAX_HEATMAP_CELLS, dev
        ),
        device_name,
    )
    return maps


@st.cache_data(max_entries=64, show_spinner=False)
def cached_row(d_k: int, seq_len: int, n_samples: int, seed: int, distribution: str, row: int, device_name: str):
    """Raw q·k ``[T]`` of query ``row`` of the first sequence (:func:`attn_core.stats.example_scores`)."""
    raw, _ = run_with_fallback(
        lambda dev: stats.example_scores(d_k, seq_len, n_samples, seed, distribution, dev, rows=[row])[0],
        device_name,
    )
    return raw


def measured_note(plan: stats.RowPlan, distribution: str) -> str:
    """Which query rows every statistic measured, and what they estimate for this distribution."""
    if plan.queries < plan.seq_len:
        key, note = "sat.measured_queries", "projected_queries"
    else:
        key, note = ("sat.measured_seq1" if plan.sequences == 1 else "sat.measured_seqs"), "projected_seqs"
    rows = ui.t(key, rows=f"{plan.rows:,}", total=f"{plan.total_rows:,}", m=f"{plan.sequences:,}",
                n=f"{plan.n_samples:,}", t=f"{plan.seq_len:,}", scores=f"{plan.scores:,}")  # fmt: skip
    return rows + " " + ui.t("sat.sample_note." + ("normal" if distribution == "normal" else note))


def _cmp(code: str) -> str:
    return ui.t(f"sat.grad.cmp.{code}")


def gradient_findings(cur: dict[bool, dict[str, float]], seq_len: int) -> list[str]:
    """The sentences under the gradient chart, each chosen from the measured numbers at the current d_k."""
    u, s = cur[False], cur[True]
    f = stats.gradient_findings(cur)
    g = "{:.3g}".format
    thr = f"{stats.SMALL_NORM:g}"
    small = dict(small_u=f"{u['grad_q_norm_small']:.1%}", small_s=f"{s['grad_q_norm_small']:.1%}", thr=thr)
    med_u, med_s = u["grad_q_norm_median"], s["grad_q_norm_median"]
    if f.identical:
        return [ui.t("sat.grad.identical", mean_u=g(u["grad_q_norm"]), med_u=g(med_u), **small)]
    out = [ui.t("sat.grad.vanished" if f.vanished else "sat.grad.small", **small)]
    hi, lo = max(med_u, med_s), min(med_u, med_s)
    ratio = g(hi / lo) if lo > 0 else "∞"
    out.append(ui.t(f"sat.grad.median_{f.median_q}", med_u=g(med_u), med_s=g(med_s), r=ratio))
    means = dict(cmp=_cmp(f.mean_q), mean_u=g(u["grad_q_norm"]), mean_s=g(s["grad_q_norm"]))
    if f.concentrated:
        k = "∞" if math.isinf(f.skew_q[0]) else g(f.skew_q[0])
        out.append(ui.t("sat.grad.mean_concentrated", k=k, ks=g(f.skew_q[1]), **means))
    else:
        out.append(ui.t("sat.grad.mean", **means))
    out.append(
        ui.t("sat.grad.z", cmp_mean=_cmp(f.mean_z), cmp_median=_cmp(f.median_z), cmp_j=_cmp(f.mean_j),
             zu=g(u["grad_norm"]), zs=g(s["grad_norm"]), zmu=g(u["grad_norm_median"]),
             zms=g(s["grad_norm_median"]), ju=g(u["jacobian_norm"]), js=g(s["jacobian_norm"]))
    )  # fmt: skip
    if f.mean_j == "higher":
        out.append(ui.t("sat.grad.spread", t=f"{seq_len:,}", u=g(even_jacobian(seq_len)), js=g(s["jacobian_norm"])))
    return out


def even_jacobian(t: int) -> float:
    """‖J‖_F of softmax weights spread evenly over t keys: √(t − 1)/t."""
    return math.sqrt(t - 1) / t


st.title(ui.t("sat.title"))
st.caption(ui.t("sat.intro"))

with ui.controls_box():
    c1, c2, c3 = st.columns(3, gap="large")
    with c1:
        d_k = ui.pow2_slider("head_dim", 1, 1024, DEFAULT_D_K, help_key="help.sat_d_k")
        use_scaling = ui.toggle("scaling", True, help_key="help.scaling")
    with c2:
        seq_len = ui.int_slider("seq_len", 2, stats.MAX_SEQ_LEN, 16, help_key="help.sat_seq_len")
        n_samples = ui.pow2_slider("samples", 16, 16384, 256, help_key="help.samples")
    with c3:
        temperature = ui.float_slider("temperature", 0.1, 5.0, 1.0, 0.1, help_key="help.temperature")
        distribution = ui.choice("dist", list(stats.DISTRIBUTIONS), "normal", help_key="help.dist")

seed, device = ui.seed(), ui.device()
style = ui.style()
sqrt_d = math.sqrt(d_k)
scale = 1.0 / sqrt_d if use_scaling else 1.0

with st.spinner(ui.t("sat.computing")):
    sample = ui.run_safely(lambda: cached_sample(d_k, seq_len, n_samples, seed, distribution, device))
    sweep = ui.run_safely(lambda: cached_sweep(seq_len, n_samples, seed, distribution, float(temperature), device))

if sample is not None:
    st.markdown(
        ui.t("sat.summary", d=d_k, sq=f"{sqrt_d:.4g}", inv=f"{1 / sqrt_d:.4g}", n=f"{sample.n_scores:,}",
             var=f"{sample.raw_var:.4g}", svar=f"{sample.scaled_var:.4g}")
    )  # fmt: skip
plan = stats.row_plan(seq_len, n_samples)
if not plan.complete:  # long sequences × many samples: say how many rows every statistic below measured
    st.info(measured_note(plan, distribution), icon="ℹ️")
st.markdown(
    ui.t("sat.current_on" if use_scaling else "sat.current_off", d=d_k, sq=f"{sqrt_d:.4g}", tau=f"{temperature:g}",
         c=f"{scale / temperature:.4g}")
)  # fmt: skip

# ---- 1. score distributions
st.subheader(ui.t("sat.h1"))
st.caption(ui.t("sat.c1", d=d_k))
if sample is not None:
    v = fig_saturation.distribution_view(sample, style)
    ui.show_view(v, "sat_dist", name=v.name)

# ---- 2. the same queries and keys, unscaled and scaled
st.subheader(ui.t("sat.h2"))
cur = None if sweep is None else fig_saturation.sweep_at(sweep, d_k)
if cur is not None:  # what the maps show, said from the measured mean largest weight of a row
    mw_u, mw_s = cur[False]["max_weight"], cur[True]["max_weight"]
    shape = "peaked" if mw_u >= 0.9 else "sharper" if mw_u > 1.2 * mw_s else "alike"
    st.caption(ui.t(f"sat.c2_{shape}", d=d_k, mw_u=f"{mw_u:.3f}", mw_s=f"{mw_s:.3f}"))
with st.spinner(ui.t("sat.computing")):
    maps = ui.run_safely(lambda: cached_maps(d_k, seq_len, n_samples, seed, distribution, float(temperature), device))
if maps is not None:
    v = fig_saturation.maps_view(maps, style)
    ui.show_view(v, "sat_maps", name=v.name)

# ---- 3. saturation against d_k
st.subheader(ui.t("sat.h3"))
st.caption(ui.t("sat.c3"))
if sweep is not None:
    v = fig_saturation.curves_view(sweep, d_k, use_scaling, seq_len, n_samples, temperature, style)
    ui.show_view(v, "sat_curves", name=v.name)

# ---- 4. the gradients against d_k, for a stated loss
st.subheader(ui.t("sat.h_grad"))
st.caption(ui.t("sat.c_grad", n=f"{n_samples:,}", t=f"{seq_len:,}", seed=seed, thr=f"{stats.SMALL_NORM:g}"))
if sweep is not None:
    v = fig_saturation.gradient_view(sweep, d_k, use_scaling, seq_len, n_samples, temperature, style)
    ui.show_view(v, "sat_grads", name=v.name)
if cur is not None:
    st.markdown("\n\n".join(gradient_findings(cur, seq_len)))
ui.help_expander("sat.grad_how", d=d_k, tau=f"{temperature:g}", sq=f"{sqrt_d:.4g}",
                 cs=f"{1 / (sqrt_d * temperature):.4g}", cu=f"{1 / temperature:.4g}")  # fmt: skip

# ---- 5. one query row and its Jacobian
st.subheader(ui.t("sat.h4"))
row = ui.int_slider("row", 0, seq_len - 1, 0, container=st.columns(3)[0], help_key="help.row")
raw_row = ui.run_safely(lambda: cached_row(d_k, seq_len, n_samples, seed, distribution, row, device))
if raw_row is not None:
    st.caption(ui.t("sat.c4"))
    v, _ = fig_saturation.row_view(raw_row, row, d_k, use_scaling, temperature, style)
    ui.show_view(v, "sat_row", name=v.name)

# ---- 6. float16 numerics
st.subheader(ui.t("sat.h5"))
st.caption(ui.t("sat.c5", lim=f"{math.log(stats.FLOAT16_MAX):.2f}"))
if raw_row is not None and sweep is not None:
    v, demo = fig_saturation.float16_view(raw_row, row, d_k, sweep, style)
    ui.show_view(v, "sat_fp16", name=v.name)
    st.markdown(ui.t("sat.fp16_ok" if demo.naive_ok else "sat.fp16_broken", d=d_k))
    with st.expander(ui.t("sat.fp16_table")):
        keys = fig_saturation.float16_keys(demo)
        if len(keys) < seq_len:
            st.caption(ui.t("sat.fp16_table_top", k=len(keys), t=f"{seq_len:,}"))
        headers = {col: ui.t(f"sat.col.{col}") for col in fig_saturation.FLOAT16_COLUMNS}
        table = fig_saturation.float16_data(demo, keys=keys)
        st.dataframe(table.rename(columns=headers), hide_index=True, width="stretch")

# ---- 7. explanations, with the user's numbers
st.subheader(ui.t("sat.h6"))
ui.help_expander("sat.why_var", d=d_k, sq=f"{sqrt_d:.4g}", inv=f"{1 / sqrt_d:.4g}",
                 var="—" if sample is None else f"{sample.raw_var:.4g}",
                 svar="—" if sample is None else f"{sample.scaled_var:.4g}")  # fmt: skip
ui.help_expander("sat.why_softmax")
if cur is not None:
    ui.help_expander(
        "sat.cost", d=d_k, thr=f"{stats.SMALL_NORM:g}", t=f"{seq_len:,}", u=f"{even_jacobian(seq_len):.3g}",
        mw_u=f"{cur[False]['max_weight']:.3f}", mw_s=f"{cur[True]['max_weight']:.3f}",
        sat_u=f"{cur[False]['saturated_frac']:.1%}", sat_s=f"{cur[True]['saturated_frac']:.1%}",
    )  # fmt: skip
