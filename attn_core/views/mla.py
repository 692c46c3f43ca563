"""The MLA page's view model: multi-head latent attention's data flow, its two paths, its cache and its costs.

The page (``app_pages/mla.py``) and the command line (``python -m attn_core.export --page mla``) build the layer
of :mod:`attn_core.mla.attention` from a :class:`Params` (a DeepSeek preset or the dimensions), run it through the
steps below and draw with :mod:`attn_core.figures.mla` and the heatmaps page's grid (the layer is an
attention source). Every sentence that concludes is chosen from the numbers it reports.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from attn_core import figures
from attn_core.attention.longmaps import PooledMaps
from attn_core.figures import mla as mfig
from attn_core.kv.memory import DTYPES, CacheLayout, cache_layouts, elements_to_bytes
from attn_core.mla import attention as eng
from attn_core.runtime.config import check_kv_heads
from attn_core.runtime.units import format_bytes, format_ratio, format_sig, format_tokens
from attn_core.views import heatmaps as hm
from attn_core.views.base import (  # noqa: F401 - with_values for the page  # noqa: F401 - with_values for the page
    PageChecks,
    Scenario,
    Shown,
    View,
    check_choices,
    control,
    step_at,
    view_list,
    with_values,
)

PRESETS = (*eng.load_mla_presets(), "custom")
RUN_MODES = ("naive", "absorb", "rope_on_latent")
VIEW_FIELD = "view"
PAGE_VIEWS = ("flow", "agree", "cache", "decode", "cost")
VIEW_NAMES = PAGE_VIEWS  # "agree" draws its three maps and the grid of every head, as the page
MAX_RUN_PARAMS = 24_000_000  # a layer the page runs (float32: about 92 MiB); larger presets run fewer heads
TOLERANCE = 1e-5  # float32: two computations of the same function agree to about this
TIMED_LENGTHS = (256, 1024, 4096)  # cached tokens at which the page times one decode step of each path
COST_POINTS = tuple(2**k for k in range(0, 18))  # cached tokens of the cost chart, 1 .. 128K
MIN_NOISE_STEPS = 3  # timed decode steps needed to measure the run-to-run spread of their times
# Machine balance (peak FLOP/s over memory bandwidth) the absorbed path's arithmetic intensity is compared with,
# in FLOP per byte. A data-centre GPU: NVIDIA's datasheets give the A100 SXM 312 TFLOP/s dense bf16 over 2.04 TB/s
# (about 150) and the H100 SXM 989 TFLOP/s over 3.35 TB/s (about 300). A server CPU: e.g. 32 cores × 2.5 GHz ×
# 64 float32 FLOP a cycle (two AVX-512 FMA units) ≈ 5 TFLOP/s over 8 channels of DDR5-4800 ≈ 307 GB/s, about 17.
GPU_BALANCE = (150, 300)
CPU_BALANCE = (10, 30)


@dataclass(frozen=True)
class Params:
    """Everything the page's controls set; the field names are the URL keys, the controls the widgets and flags."""

    preset: str = control(
        "small",
        "choice",
        options=PRESETS,
        help="help.mla_preset",
        cli_help="a DeepSeek shape, small (scaled down) or custom (the dimensions below)",
    )
    d_model: int = control(256, "int", lo=8, hi=2048, help="help.mla_d_model", cli_help="model width (custom)")
    n_heads: int = control(8, "int", lo=1, hi=32, help="help.mla_n_heads", cli_help="attention heads (custom)")
    kv_lora_rank: int = control(64, "int", lo=2, hi=512, help="help.mla_kv_lora", cli_help="latent width d_c (custom)")
    qk_nope: int = control(32, "int", lo=2, hi=256, help="help.mla_nope", cli_help="per-head key width d_h (custom)")
    qk_rope: int = control(16, "int", lo=2, hi=128, help="help.mla_rope", cli_help="RoPE key width d_R (custom)")
    v_dim: int = control(32, "int", lo=1, hi=256, help="help.mla_v", cli_help="per-head value width (custom)")
    q_lora_rank: int = control(
        64, "int", lo=0, hi=1024, help="help.mla_q_lora", cli_help="query latent width, 0 = no compression (custom)"
    )
    n_layers: int = control(4, "int", lo=1, hi=128, help="help.mla_layers", cli_help="layers (custom)")
    view: str = control("flow", "choice", options=PAGE_VIEWS)
    mode: str = control(
        "absorb",
        "choice",
        options=RUN_MODES,
        help="help.mla_mode",
        cli_help="the path drawn: naive, absorb or rope_on_latent",
    )
    seq_len: int = control(12, "int", lo=2, hi=64, help="help.mla_seq_len", cli_help="tokens of the compared maps")
    head: int = control(0, "int", lo=0, hi=127, data=True, help="help.head", cli_help="the head compared")
    n_kv_heads: int = control(8, "kv_heads", help="help.mla_groups", cli_help="GQA groups in the cache comparison")
    cache_len: int = control(
        4096,
        "pow2",
        lo=1,
        hi=1 << 20,
        help="help.mla_cache_len",
        cli_help="cached tokens for the whole-model sizes and the costs",
    )
    dtype: str = control("bf16", "choice", options=DTYPES, help="help.dtype", cli_help="cache dtype of the sizes")
    dec_steps: int = control(48, "int", lo=1, hi=512, help="help.mla_dec_steps", cli_help="tokens decoded live")
    dec_prompt: int = control(16, "int", lo=1, hi=256, help="help.mla_dec_prompt", cli_help="prompt tokens")
    seed: int = control(0, "seed", cli_help="the seed of the weights and inputs")

    def __post_init__(self) -> None:
        check_choices(self)

    @property
    def custom(self) -> bool:
        return self.preset == "custom"

    @property
    def config(self) -> eng.MLAConfig:
        """The layer's shape: the preset's, or the dimensions (checked: :class:`ConfigError` names the field)."""
        if not self.custom:
            return eng.load_mla_presets()[self.preset].config
        return eng.MLAConfig(
            self.d_model, self.n_heads, self.kv_lora_rank, self.qk_nope, self.qk_rope, self.v_dim, self.q_lora_rank
        ).validate()

    @property
    def layers(self) -> int:
        return self.n_layers if self.custom else eng.load_mla_presets()[self.preset].n_layers

    @property
    def name(self) -> str:
        return "custom" if self.custom else eng.load_mla_presets()[self.preset].name

    @property
    def tokens(self) -> tuple[str, ...]:
        return tuple(f"x{i}" for i in range(self.seq_len))


def run_config(cfg: eng.MLAConfig) -> eng.MLAConfig:
    """The layer the page runs: ``cfg``, or with fewer heads (the same per-head and latent widths) when its weights
    exceed :data:`MAX_RUN_PARAMS`."""
    h = cfg.n_heads
    while h > 1 and eng.MLAConfig(**{**cfg.__dict__, "n_heads": h}).n_params() > MAX_RUN_PARAMS:
        h //= 2
    return eng.MLAConfig(**{**cfg.__dict__, "n_heads": h})


# ---------------------------------------------------------------- steps (cacheable: plain values in)
@dataclass(frozen=True)
class Compared:
    """Naive against absorbed, and rope_on_latent naive against its absorbed form, on the same inputs."""

    right: eng.Agreement
    wrong: eng.Agreement | None  # None when d_h is odd (RoPE cannot pair it)
    n_heads: int


def layer(cfg: eng.MLAConfig, seed: int, *, device: str = "cpu") -> eng.MultiHeadLatentAttention:
    """The seeded layer of ``cfg`` (its weights do not depend on the sequence: a page shares it between lengths)."""
    return eng.MultiHeadLatentAttention(cfg, seed)


def compare(
    cfg: eng.MLAConfig,
    seq_len: int,
    seed: int,
    *,
    device: str = "cpu",
    layer: eng.MultiHeadLatentAttention | None = None,
) -> Compared:
    """:func:`attn_core.mla.attention.agreement` of both pairs on ``seq_len`` seeded inputs (causal prefill); ``layer``: the
    seeded layer of ``cfg`` when already made (:func:`layer`)."""
    layer = layer if layer is not None else eng.MultiHeadLatentAttention(cfg, seed)
    x = eng.hidden_states(cfg, seq_len, seed)
    right = eng.agreement(layer, x, "naive", "absorb")
    wrong = (
        eng.agreement(layer, x, "rope_on_latent", "rope_on_latent_absorb") if cfg.qk_nope_head_dim % 2 == 0 else None
    )
    return Compared(right, wrong, cfg.n_heads)


def grid(
    cfg: eng.MLAConfig,
    tokens: tuple[str, ...],
    seed: int,
    mode: str,
    *,
    device: str = "cpu",
    layer: eng.MultiHeadLatentAttention | None = None,
) -> PooledMaps:
    """Every head's weights of ``mode`` through the layer's attention source (the heatmaps page's grid);
    ``layer`` as in :func:`compare`."""
    layer = layer if layer is not None else eng.MultiHeadLatentAttention(cfg, seed)
    src = eng.attention_source(layer, eng.hidden_states(cfg, len(tokens), seed), tokens, mode)
    return hm.grid_maps(src, "max", device=device)


def timings(cfg: eng.MLAConfig, seed: int, *, device: str = "cpu") -> pd.DataFrame:
    """Measured ms of one decode step of each path at :data:`TIMED_LENGTHS` cached tokens: the fastest (``ms``)
    and the slowest (``ms_max``) of 5 runs."""
    rows = []
    for n in TIMED_LENGTHS:
        for m in ("naive", "absorb"):
            runs = eng.time_step_runs(cfg, n, m, device=device, seed=seed)
            rows.append({"cached": n, "path": m, "ms": min(runs) * 1e3, "ms_max": max(runs) * 1e3, "runs": len(runs)})
    return pd.DataFrame(rows)


def decode_spec(p: Params) -> eng.DecodeSpec:
    return eng.DecodeSpec(run_config(p.config), p.seed, p.dec_prompt, p.dec_steps)


def decode_steps(spec: eng.DecodeSpec, *, device: str = "cpu") -> Iterator[eng.DecodeStep]:
    return eng.decode_steps(spec, device=device)


# ---------------------------------------------------------------- what the page says
def shape_line(p: Params, style: figures.Style) -> str:
    c = p.config
    q = style.t("mla.q_lora", r=c.q_lora_rank) if c.q_lora_rank else style.t("mla.no_q_lora")
    return style.t(
        "mla.shape",
        name=p.name,
        L=p.layers,
        d=c.d_model,
        h=c.n_heads,
        dc=c.kv_lora_rank,
        dh=c.qk_nope_head_dim,
        dr=c.qk_rope_head_dim,
        dv=c.v_head_dim,
        q=q,
        scale=f"1/√{c.qk_head_dim}",
    )


def run_note(p: Params, style: figures.Style) -> str | None:
    """Said when the page runs fewer heads than the preset has."""
    cfg, run = p.config, run_config(p.config)
    if run.n_heads == cfg.n_heads:
        return None
    return style.t("mla.run_fewer", h=run.n_heads, n=cfg.n_heads, name=p.name, m=f"{cfg.n_params() / 1e6:.0f}")


def flow_view(p: Params, style: figures.Style) -> View:
    c = p.config
    fig = mfig.flow_figure(c, p.mode, style)
    rows = [{"tensor": name, "shape": shape, "cached": cached} for name, shape, cached in mfig.flow_tensors(c, p.mode)]
    return View(f"mla_flow_{p.mode}", fig, pd.DataFrame(rows))


def flow_sentence(p: Params, style: figures.Style) -> str:
    c = p.config
    n = c.elements(p.mode)
    return style.t(
        f"mla.flow_{p.mode}",
        n=f"{n:,}",
        h=c.n_heads,
        dh=c.qk_head_dim,
        dv=c.v_head_dim,
        dc=c.kv_lora_rank,
        dr=c.qk_rope_head_dim,
        nope=c.qk_nope_head_dim,
    )


def agree_views(res: Compared, head: int, tokens: Sequence[str], style: figures.Style) -> list[View]:
    """One head's weights, naive and absorbed side by side, and their |difference|: one figure of three panels."""
    h = min(max(0, head), res.n_heads - 1)
    labels = list(tokens) if len(set(tokens)) == len(tokens) else [f"{tok} ({i})" for i, tok in enumerate(tokens)]
    a, b = res.right.weights_a[h], res.right.weights_b[h]
    fig = mfig.agree_figure(a, b, labels, h, style)

    def table() -> pd.DataFrame:
        cells = {
            name: hm.matrix_frame(mat, labels, labels, "query", "key", name)
            for name, mat in (("naive", a), ("absorbed", b), ("abs_diff", np.abs(a.astype(np.float64) - b)))
        }
        return cells["naive"].assign(absorbed=cells["absorbed"]["absorbed"], abs_diff=cells["abs_diff"]["abs_diff"])

    return [View(f"mla_head{h}_agree", fig, table)]


def agree_table(res: Compared, style: figures.Style) -> pd.DataFrame:
    t = style.t
    rows = [(t("mla.pair_right"), res.right)] + ([(t("mla.pair_wrong"), res.wrong)] if res.wrong else [])
    return pd.DataFrame(
        {
            t("mla.col_pair"): [r[0] for r in rows],
            t("mla.col_dw"): [f"{r[1].max_weight_diff:.2e}" for r in rows],
            t("mla.col_do"): [f"{r[1].max_output_diff:.2e}" for r in rows],
            t("mla.col_tol"): [f"{r[1].max_output_diff / TOLERANCE:,.2f}×" for r in rows],
        }
    )


def agree_sentences(res: Compared, style: figures.Style) -> list[tuple[str, str]]:
    """(kind, text): whether the paths agree, and how far rope_on_latent's absorbed form is off, from the numbers."""
    r, t = res.right, style.t
    ok = max(r.max_weight_diff, r.max_output_diff) <= TOLERANCE
    out = [
        (
            "success" if ok else "warning",
            t(
                "mla.agree_yes" if ok else "mla.agree_no",
                dw=f"{r.max_weight_diff:.1e}",
                do=f"{r.max_output_diff:.1e}",
                tol=f"{TOLERANCE:.0e}",
            ),
        )
    ]
    if res.wrong is None:
        out.append(("info", t("mla.wrong_odd")))
    else:
        w = res.wrong
        far = w.max_output_diff > 100 * TOLERANCE
        out.append(
            (
                "warning" if far else "info",
                t(
                    "mla.wrong_far" if far else "mla.wrong_close",
                    dw=f"{w.max_weight_diff:.3g}",
                    do=f"{w.max_output_diff:.3g}",
                    x=f"{w.max_output_diff / TOLERANCE:,.0f}",
                    rel=f"{w.max_output_diff / max(w.output_scale, 1e-30):.0%}",
                ),
            )
        )
    return out


def grid_view(pm: PooledMaps, mode: str, style: figures.Style, heads: tuple[int, ...] | None = None) -> View:
    """The heatmaps page's grid of every head, named for the path it shows; ``heads``: one slide's page of it."""
    v = hm.grid_view(pm, style, False, None, heads)
    return View(f"mla_weights_{mode}_t{len(pm.tokens_q)}", v.figure, v.source)


# ---------------------------------------------------------------- cache per token
def layouts(p: Params) -> list[CacheLayout]:
    """MHA, GQA (``n_kv_heads`` groups), MQA, MLA-naive and MLA at the same width, as the KV-cache page counts them."""
    c = p.config
    check_kv_heads(c.n_heads, p.n_kv_heads)
    out = cache_layouts(
        p.layers,
        c.n_heads,
        c.n_heads,
        c.qk_head_dim,
        v_head_dim=c.v_head_dim,
        kv_lora_rank=c.kv_lora_rank,
        rope_dim=c.qk_rope_head_dim,
    )
    if 1 < p.n_kv_heads < c.n_heads:
        out.insert(1, CacheLayout("GQA", p.layers, p.n_kv_heads, c.qk_nope_head_dim, c.v_head_dim))
    return out


def cache_frame(p: Params, style: figures.Style) -> pd.DataFrame:
    """One row per layout: per token and layer (formula, values, bytes), the whole model at ``cache_len``, × MLA."""
    lays = layouts(p)
    mla = lays[-1].bytes(p.cache_len, 1, p.dtype)
    t = style.t
    rows = []
    for lay in lays:
        formula, n = lay.per_layer()
        total = lay.bytes(p.cache_len, 1, p.dtype)
        rows.append(
            {
                t("mla.col_layout"): lay.label,
                t("mla.col_formula"): formula,
                t("mla.col_values"): n,
                t("mla.col_bytes_tok"): format_bytes(elements_to_bytes(n, p.dtype)),
                t("mla.col_model", s=format_tokens(p.cache_len)): format_bytes(total),
                t("mla.col_ratio"): f"{total / mla:,.1f}×",
            }
        )
    return pd.DataFrame(rows)


def cache_view(p: Params, style: figures.Style) -> View:
    lays = layouts(p)
    values = [lay.per_layer()[1] for lay in lays]
    fig = mfig.cache_bars([lay.label for lay in lays], values, p.dtype, style.t("mla.cache_title", name=p.name), style)
    return View(f"mla_cache_{p.preset}_{p.dtype}", fig, cache_frame(p, style))


def gqa_line(p: Params, style: figures.Style) -> str:
    """The paper's comparison with the current numbers: MLA's cache as a GQA group count, and against MHA."""
    c = p.config
    mla, per_group = c.absorbed_elements, c.qk_nope_head_dim + c.v_head_dim
    mha = c.n_heads * per_group
    return style.t(
        "mla.gqa_line",
        dc=c.kv_lora_rank,
        dr=c.qk_rope_head_dim,
        mla=f"{mla:,}",
        dh=c.qk_nope_head_dim,
        dv=c.v_head_dim,
        g=f"{mla / per_group:.3g}",
        h=c.n_heads,
        mha=f"{mha:,}",
        ratio=f"{mha / mla:.1f}",
    )


def presets_frame(p: Params, style: figures.Style) -> pd.DataFrame:
    """The real DeepSeek presets at ``cache_len`` tokens in ``dtype``: MLA against MHA and naive MLA."""
    t, rows = style.t, []
    for pid, pre in eng.load_mla_presets().items():
        if pid == "small":
            continue
        c = pre.config
        mha = CacheLayout("MHA", pre.n_layers, c.n_heads, c.qk_nope_head_dim, c.v_head_dim).bytes(
            p.cache_len, 1, p.dtype
        )
        mla = pre.cache_bytes(p.cache_len, "absorb", dtype=p.dtype)
        rows.append(
            {
                t("mla.col_model_name"): pre.name,
                t("mla.col_mla_tok"): f"{c.absorbed_elements:,}",
                t("mla.col_mha_tok"): f"{c.n_heads * (c.qk_nope_head_dim + c.v_head_dim):,}",
                t("mla.col_mla_total", s=format_tokens(p.cache_len)): format_bytes(mla),
                t("mla.col_mha_total"): format_bytes(mha),
                t("mla.col_naive_total"): format_bytes(pre.cache_bytes(p.cache_len, "naive", dtype=p.dtype)),
                t("mla.col_ratio"): f"{mha / mla:.1f}×",
            }
        )
    return pd.DataFrame(rows)


# ---------------------------------------------------------------- live decode
def decode_frame(steps: Sequence[eng.DecodeStep]) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "step": [s.step for s in steps],
            "tokens_cached": [s.seq_len for s in steps],
            "naive_bytes_measured": [s.naive_bytes for s in steps],
            "naive_bytes_formula": [s.naive_formula for s in steps],
            "absorb_bytes_measured": [s.absorb_bytes for s in steps],
            "absorb_bytes_formula": [s.absorb_formula for s in steps],
            "naive_ms": [s.naive_s * 1e3 for s in steps],
            "absorb_ms": [s.absorb_s * 1e3 for s in steps],
            "max_output_diff": [s.max_diff for s in steps],
        }
    )


def decode_views(steps: Sequence[eng.DecodeStep], spec: eng.DecodeSpec, style: figures.Style) -> list[View]:
    x_max = spec.prompt + spec.steps
    data = decode_frame(steps)
    y_max = eng.cache_bytes(spec.cfg, x_max, "naive")
    tag = f"p{spec.prompt}_n{spec.steps}"
    return [
        View(f"mla_decode_bytes_{tag}", mfig.decode_bytes_figure(data, x_max, y_max, style), data),
        View(f"mla_decode_time_{tag}", mfig.decode_time_figure(data, x_max, style), data),
    ]


def decode_progress(spec: eng.DecodeSpec, steps: Sequence, style: figures.Style) -> tuple[float, str]:
    done = max(0, len(steps) - 1)
    return min(1.0, done / spec.steps), style.t("mla.dec_progress", i=done, n=spec.steps)


def times(r: float) -> str:
    """A measured time ratio: two decimals below 10 (``1.04``), where a few percent matter; whole numbers above."""
    return f"{r:.2f}" if r < 10 else format_ratio(r)


def work_sentence(cfg: eng.MLAConfig, style: figures.Style) -> str:
    """What the cost model (:func:`attn_core.mla.attention.path_cost`) says differs between the paths: the work and
    the values read per cached token, and the work per step outside the cache."""
    n, a = eng.path_cost(cfg, "naive"), eng.path_cost(cfg, "absorb")
    return style.t(
        "mla.work_per_token",
        wa=f"{a.per_token:,}",
        wn=f"{n.per_token:,}",
        w=format_ratio(a.per_token / n.per_token),
        ra=f"{a.values:,}",
        rn=f"{n.values:,}",
        fa=f"{a.fixed:,}",
        fn=f"{n.fixed:,}",
    )


def speed_sentence(naive_s: Sequence[float], absorb_s: Sequence[float], style: figures.Style) -> str:
    """Which path was faster, or that the difference is within the run-to-run noise, from paired step times: the
    middle half (25th to 75th percentile) of the steps' naive/absorbed ratios. A range on both sides of 1 is noise."""
    r = np.asarray(naive_s, dtype=float) / np.maximum(np.asarray(absorb_s, dtype=float), 1e-12)
    med = float(np.median(r))
    if len(r) < MIN_NOISE_STEPS:
        return style.t("mla.faster_few", k=len(r), r=times(med))
    lo, hi = (float(x) for x in np.percentile(r, [25, 75]))
    if lo <= 1 <= hi:
        return style.t("mla.faster_noise", k=len(r), lo=f"{lo:.2f}", hi=f"{hi:.2f}")
    if med > 1:
        return style.t("mla.faster_absorb", k=len(r), r=times(med), lo=f"{lo:.2f}", hi=f"{hi:.2f}")
    return style.t("mla.faster_naive", k=len(r), r=times(1 / med), lo=f"{1 / hi:.2f}", hi=f"{1 / lo:.2f}")


def decode_summary(spec: eng.DecodeSpec, steps: Sequence[eng.DecodeStep], style: figures.Style) -> tuple[str, str]:
    """(kind, text): whether every step's measured bytes equal the formula and the outputs agree, and the times: which
    path was faster beyond the steps' run-to-run spread (:func:`speed_sentence`), and the cost model's per-token work."""
    exact = all(s.naive_bytes == s.naive_formula and s.absorb_bytes == s.absorb_formula for s in steps)
    worst = max(s.max_diff for s in steps)
    last = steps[-1]
    timed = steps[1:] or steps
    naive_ms = float(np.median([s.naive_s for s in timed])) * 1e3
    absorb_ms = float(np.median([s.absorb_s for s in timed])) * 1e3
    speed = speed_sentence([s.naive_s for s in timed], [s.absorb_s for s in timed], style)
    faster = f"{speed}{'' if style.lang == 'zh' else ' '}{work_sentence(spec.cfg, style)}"
    ok = exact and worst <= TOLERANCE
    return ("success" if ok else "warning"), style.t(
        "mla.dec_summary_ok" if ok else "mla.dec_summary_off",
        n=len(steps) - 1,
        s=last.seq_len,
        nb=format_bytes(last.naive_bytes),
        ab=format_bytes(last.absorb_bytes),
        r=format_ratio(last.naive_bytes / last.absorb_bytes),
        d=f"{worst:.1e}",
        tn=f"{naive_ms:.3g}",
        ta=f"{absorb_ms:.3g}",
        faster=faster,
    )


# ---------------------------------------------------------------- cost of absorbing
def cost_frame(cfg: eng.MLAConfig) -> pd.DataFrame:
    rows = []
    for s in COST_POINTS:
        for path in eng.PATHS:
            c = eng.path_cost(cfg, path)
            rows.append({"cached": s, "path": path, "flops": c.flops(s), "bytes_read_bf16": c.read(s)})
    return pd.DataFrame(rows)


def cost_views(p: Params, style: figures.Style) -> list[View]:
    data = cost_frame(p.config)
    tag = f"mla_cost_{p.preset}"
    return [
        View(f"{tag}_flops", mfig.cost_figure(data, "flops", p.cache_len, style), data),
        View(f"{tag}_bytes", mfig.cost_figure(data, "bytes_read_bf16", p.cache_len, style), data),
    ]


def cost_formulas(p: Params, style: figures.Style) -> list[tuple[str, str]]:
    """(label with the cache read, LaTeX FLOPs formula with the user's numbers) of each path at ``cache_len``."""
    c, s = p.config, p.cache_len
    h, dc, dr, dh, dv = c.n_heads, c.kv_lora_rank, c.qk_rope_head_dim, c.qk_nope_head_dim, c.v_head_dim
    flops = {
        "naive": rf"2 \cdot {h} \cdot ({dh}+{dr}+{dv}) \cdot {s:,} + 2 \cdot {dc} \cdot {h} \cdot ({dh}+{dv})",
        "absorb": rf"2 \cdot {h} \cdot ({dc}+{dr}+{dc}) \cdot {s:,} + 2 \cdot {h} \cdot {dc} \cdot ({dh}+{dv})",
        "latent": rf"(2 \cdot {dc} \cdot {h} \cdot ({dh}+{dv}) + 2 \cdot {h} \cdot ({dh}+{dr}+{dv})) \cdot {s:,}",
    }
    out = []
    for path in eng.PATHS:
        cost = eng.path_cost(c, path)
        label = style.t(
            "mla.formula_label",
            path=style.t(f"mla.path_{path}"),
            v=f"{cost.values:,}",
            s=f"{s:,}",
            n=f"{cost.values * s:,}",
        )
        out.append((label, flops[path] + rf" = {cost.flops(s):,}"))
    return out


def balance_verdict(intensity: float, balance: tuple[int, int], device: str, style: figures.Style) -> str:
    """Below, within or above a machine balance range (FLOP per byte)."""
    lo, hi = balance
    where = "below" if intensity < lo else "above" if intensity > hi else "within"
    return style.t(f"mla.intensity_{device}_{where}", lo=lo, hi=hi)


def cost_sentence(p: Params, style: figures.Style) -> str:
    """The absorbed path's FLOPs and cache read against the naive one's at ``cache_len``, and its arithmetic
    intensity (attention FLOPs per byte of bf16 cache read) against a GPU's and a CPU's machine balance."""
    c, s = p.config, p.cache_len
    n, a, lat = (eng.path_cost(c, x) for x in eng.PATHS)
    intensity = a.flops(s) / a.read(s)
    return style.t(
        "mla.cost_line",
        s=format_tokens(s),
        f=f"{a.flops(s) / n.flops(s):.2f}",
        b=f"{n.read(s) / a.read(s):.1f}",
        lat=f"{lat.flops(s) / a.flops(s):,.0f}",
        ft=f"{a.per_token / n.per_token:.2f}",
        i=format_sig(intensity),
        gpu=balance_verdict(intensity, GPU_BALANCE, "gpu", style),
        cpu=balance_verdict(intensity, CPU_BALANCE, "cpu", style),
    )


def timing_sentence(df: pd.DataFrame, cfg: eng.MLAConfig, style: figures.Style) -> str:
    """The measured step times of the run layer at the longest length: which path was faster when the fastest run of
    the slower path is slower than every run of the faster one, else within the run-to-run noise; and the cost
    model's per-token work (:func:`work_sentence`)."""
    top = max(TIMED_LENGTHS)
    at = df[df.cached == top].set_index("path")
    fast, slow = ("absorb", "naive") if at.ms["absorb"] < at.ms["naive"] else ("naive", "absorb")
    if at.ms[slow] <= at.ms_max[fast]:
        key = "mla.time_noise"
    else:
        key = "mla.time_absorb_faster" if fast == "absorb" else "mla.time_naive_faster"
    return style.t(
        key,
        s=format_tokens(top),
        a=f"{at.ms['absorb']:.3g}",
        n=f"{at.ms['naive']:.3g}",
        ax=f"{at.ms_max['absorb']:.3g}",
        nx=f"{at.ms_max['naive']:.3g}",
        k=int(at.runs.iloc[0]),
        r=times(at.ms[slow] / max(at.ms[fast], 1e-9)),
        h=cfg.n_heads,
        dc=cfg.kv_lora_rank,
        work=work_sentence(cfg, style),
    )


def timing_table(df: pd.DataFrame, style: figures.Style) -> pd.DataFrame:
    wide = df.pivot(index="cached", columns="path", values="ms").reset_index()
    t = style.t
    return pd.DataFrame(
        {
            t("mla.col_cached"): [f"{int(v):,}" for v in wide["cached"]],
            t("mla.col_naive_ms"): [f"{v:.3g}" for v in wide["naive"]],
            t("mla.col_absorb_ms"): [f"{v:.3g}" for v in wide["absorb"]],
        }
    )


# ---------------------------------------------------------------- the command line's charts
def views(p: Params, style: figures.Style, which: str | Sequence[str] | None = None, device: str = "cpu") -> list[View]:
    """The charts of ``which`` views (default: the page's current view) for ``p``."""
    out: list[View] = []
    for name in view_list(which, VIEW_NAMES, [p.view]):
        if name == "flow":
            out.append(flow_view(p, style))
        elif name == "agree":
            cfg = run_config(p.config)
            out.extend(agree_views(compare(cfg, p.seq_len, p.seed), p.head, p.tokens, style))
            out.append(grid_view(grid(cfg, p.tokens, p.seed, p.mode, device=device), p.mode, style))
        elif name == "cache":
            out.append(cache_view(p, style))
        elif name == "decode":
            spec = decode_spec(p)
            out.extend(decode_views(list(decode_steps(spec, device=device)), spec, style))
        else:
            out.extend(cost_views(p, style))
    return out


#: The MLA page in the browser test, the fuzz, the colour checks and the benchmarks (PageChecks).
CHECKS = PageChecks(
    slider="seq_len",
    chart="mla_agree",  # its grid of every head is drawn while its section is open
    query="view=agree",
    scenarios=(
        Scenario("defaults", {}, "mode", ("naive", "absorb")),  # the data flow redrawn for another path
        Scenario("agree", {"view": "agree"}, "seq_len", (13, 12)),
        Scenario("largest", {"view": "agree", "preset": "deepseek-v3", "seq_len": "64"}, "head", (1, 0), 600),
    ),
    cli="--seq-len 6 --dec-steps 2 --dec-prompt 2 --view all",
    extremes=(
        {},
        {
            "preset": "custom",
            "d_model": "8",
            "n_heads": "1",
            "kv_lora_rank": "2",
            "qk_nope": "2",
            "qk_rope": "2",
            "v_dim": "1",
            "q_lora_rank": "0",
            "n_layers": "1",
            "seq_len": "2",
            "dec_steps": "1",
            "dec_prompt": "1",
        },
        {"preset": "deepseek-v3", "seq_len": "64", "head": "127", "cache_len": "1048576", "n_kv_heads": "1"},
        {"preset": "custom", "qk_nope": "3", "mode": "rope_on_latent", "n_heads": "32", "n_kv_heads": "5"},
    ),
)


def slide_shown(p: Params, style: figures.Style, steps: dict[str, int], device: str = "cpu") -> Shown:
    """What a slide of this page shows (slide mode): the current view's charts with its sentence; the agreement
    view one section a slide (``steps["slide"]``, 1-based): what the two paths measure (sentences), one head's
    maps by both, every head; the cost view too: its two charts, then what they say (and the formulas), then the
    times measured on the presenter's machine (none before they are)."""
    if p.view == "cost":
        i = step_at(steps, "slide", 3)
        return Shown(views(p, style, None, device) if i == 0 else [], [cost_sentence(p, style)] if i == 1 else [])
    if p.view != "agree":
        said = {"flow": flow_sentence}.get(p.view)
        return Shown(views(p, style, None, device), [said(p, style)] if said else [])
    cfg = run_config(p.config)
    i = step_at(steps, "slide", 3)
    if i == 2:
        return Shown([grid_view(grid(cfg, p.tokens, p.seed, p.mode, device=device), p.mode, style)])
    res = compare(cfg, p.seq_len, p.seed)
    if i == 0:
        return Shown([], [text for _, text in agree_sentences(res, style)])
    return Shown([agree_views(res, p.head, p.tokens, style)[0]])
