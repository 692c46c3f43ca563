"""The cost page's view model: attention's FLOPs and memory counted stage by stage, measured against n, prefill
against decode per token, and the course note's complexity formula corrected.

The page (``app_pages/complexity.py``) and the command line (``python -m attn_core.export --page complexity``) turn a
:class:`Params` into counts (:mod:`attn_core.complexity.stages`) and measurements, and draw them with
:mod:`attn_core.figures.complexity`. Every sentence that concludes is chosen from the numbers it reports.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import pandas as pd
import torch

from attn_core.complexity import stages as cx
from attn_core.figures import Style
from attn_core.figures import complexity as cfig
from attn_core.runtime.config import MAX_SEQ_LEN, ConfigError
from attn_core.runtime.guard import stays_on_device
from attn_core.runtime.units import about_one, format_bytes, format_ratio, format_sig
from attn_core.views.base import PageChecks, Scenario, View, check_choices, control, view_list, with_values  # noqa: F401 - with_values for the page

VIEW_FIELD = "view"
PAGE_VIEWS = ("counted", "measured", "prefill_decode", "formula")
VIEW_NAMES = PAGE_VIEWS
DEVICES = ("auto", "cpu", "cuda")
SWEEP_FROM = 64  # the measured sweep's smallest n
REPEATS, WARMUP = 3, 1
CURVE_POINTS = tuple(2**k for k in range(4, 17))  # n of the FLOPs chart: 16 .. 65,536
PD_STEP = 4  # prefill against decode: every 4th power of two of the sweep (64, 256, 1024, 4096 ...)
HEAD_COUNTS = (1, 2, 4, 8, 16, 32, 64)
MLP_FACTOR = 4  # the whole layer's MLP: 4·d wide, two matrices (GPT-2's)
SOFTMAX_BOUND = 0.25  # softmax FLOP/s below this share of the score matmul's: it waits on memory, not arithmetic
SLOPE_LOW, SLOPE_HIGH = 1.6, 2.4  # an n² stage's fitted slope outside these departs from the count
# an n² stage that departs upwards departs more than the linear stages when its slope's excess over 2 exceeds
# theirs over 1 by more than this; else the whole run slowed as n rose, not the n × n matrices alone
SLOPE_MARGIN = 0.2


@dataclass(frozen=True)
class Params:
    """Everything the page's controls set; the field names are the URL keys, the controls the widgets and flags."""

    view: str = control("counted", "choice", options=PAGE_VIEWS)
    seq_len: int = control(
        4096,
        "pow2",
        lo=SWEEP_FROM,
        hi=MAX_SEQ_LEN,
        help="help.cx_seq_len",
        cli_help="tokens n of the counts; the measured sweep runs n = 64 .. this",
    )
    d_model: int = control(256, "int", lo=16, hi=4096, help="help.cx_d_model", cli_help="model width d")
    n_heads: int = control(4, "int", lo=1, hi=64, help="help.cx_n_heads", cli_help="query heads h")
    n_kv_heads: int = control(4, "kv_heads", cli_help="key/value heads (a divisor of n_heads)")
    head_dim: int = control(64, "int", lo=4, hi=256, help="help.cx_head_dim", cli_help="head width d_h")
    causal: bool = control(False, "bool", help="help.cx_causal", cli_help="count and run with a causal mask")
    run_on: str = control(
        "auto",
        "choice",
        options=DEVICES,
        help="help.cx_device",
        cli_help="where the sweep runs: auto (the app's device), cpu or cuda",
    )
    seed: int = control(0, "seed", cli_help="the seed of the measured layer's inputs and weights")

    def __post_init__(self) -> None:
        check_choices(self)

    @property
    def shape(self) -> cx.LayerShape:
        """The layer's shape, checked (:class:`ConfigError` names the field)."""
        return cx.LayerShape(self.d_model, self.n_heads, self.n_kv_heads, self.head_dim, self.causal).validate()

    @property
    def sweep_lens(self) -> tuple[int, ...]:
        """The measured n: powers of two from :data:`SWEEP_FROM` to ``seq_len``."""
        return tuple(2**k for k in range(int(math.log2(SWEEP_FROM)), int(math.log2(self.seq_len)) + 1))

    def flops(self, n: int | None = None, mlp: bool = False) -> dict[str, int]:
        s = self.shape
        return cx.flops_by_stage(
            n or self.seq_len,
            s.d_model,
            s.n_heads,
            s.n_kv_heads,
            s.head_dim,
            s.causal,
            MLP_FACTOR * s.d_model if mlp else None,
        )


def run_device(choice: str, session: str) -> str:
    """The device a sweep runs on: the session's for ``auto``; ``cuda`` only where there is one (else ConfigError)."""
    if choice == "auto":
        return session
    if choice == "cuda" and not torch.cuda.is_available():
        raise ConfigError(
            "device 'cuda' was requested but is not available on this machine",
            "device",
            "device_missing",
            device="cuda",
        )
    return choice


def sweep_spec(p: Params) -> cx.SweepSpec:
    return cx.check_sweep(cx.SweepSpec(p.sweep_lens, p.shape, cx.PATHS, REPEATS, WARMUP, p.seed))


def run_key(spec: cx.SweepSpec, device: str) -> str:
    """The session-state key of the sweep of ``spec`` on ``device``: one finished run kept per setting."""
    return "cx_sweep_" + hashlib.blake2b(repr((spec, device)).encode(), digest_size=8).hexdigest()


def measure(spec: cx.SweepSpec, *, device: str = "cpu") -> Iterator[cx.Measured]:
    return cx.measure_sweep(spec, device)


# ---------------------------------------------------------------- text helpers
def si(x: float) -> str:
    return cfig.si(x)


def stage_name(style: Style, stage: str) -> str:
    return style.t(f"cx.stage_{stage}")


def ratio(r: float) -> str:
    """A ratio on this page: ``1.2``, ``2.2``, ``12`` (:func:`~attn_core.runtime.units.format_ratio`)."""
    return format_ratio(r)


def sentences(parts: Sequence[str], style: Style) -> str:
    """Sentences run together: a space between them in English, none after Chinese full stops."""
    return ("" if style.lang == "zh" else " ").join(parts)


def join_list(items: Sequence[str], style: Style) -> str:
    """``a, b and c`` in English, ``a、b和c`` in Chinese."""
    if len(items) < 2:
        return "".join(items)
    return style.t("list.and", a=style.t("list.sep").join(items[:-1]), b=items[-1])


def _tex(v: int) -> str:
    return rf"\text{{{v:,} FLOP}}"


def formula_lines(p: Params) -> list[tuple[str, str]]:
    """(stage, LaTeX with the user's numbers) of every stage's FLOPs."""
    s, n, f = p.shape, p.seq_len, {k: _tex(v) for k, v in p.flops().items()}
    nn = r"\tfrac{n(n+1)}{2}" if s.causal else "n^2"
    nv = f"{n * (n + 1) // 2:,}" if s.causal else f"{n:,}^2"
    h, kv, dh, d = s.n_heads, s.n_kv_heads, s.head_dim, s.d_model
    return [
        (
            "qkv_projection",
            rf"2\,n\,d\,(h\,d_h + 2\,h_{{kv}} d_h) = 2 \cdot {n:,} \cdot {d} \cdot ({h}\cdot{dh} + 2\cdot{kv}\cdot{dh}) = {f['qkv_projection']}",
        ),
        ("scores", rf"2\,{nn}\,h\,d_h = 2 \cdot {nv} \cdot {h} \cdot {dh} = {f['scores']}"),
        ("softmax", rf"3\,h\,{nn} = 3 \cdot {h} \cdot {nv} = {f['softmax']}"),
        ("weighted_sum", rf"2\,{nn}\,h\,d_h = 2 \cdot {nv} \cdot {h} \cdot {dh} = {f['weighted_sum']}"),
        (
            "output_projection",
            rf"2\,n\,h\,d_h\,d = 2 \cdot {n:,} \cdot {h}\cdot{dh} \cdot {d} = {f['output_projection']}",
        ),
    ]


def formulas_markdown(p: Params, style: Style) -> str:
    """Every stage's name and its FLOP formula with the user's numbers (:func:`formula_lines`) as one markdown text,
    each formula in display math: one element on the page instead of two a stage (each element costs a slider
    move ~1 ms of the browser's and ~0.5 ms of the server's time)."""
    return "\n\n".join(f"**{stage_name(style, stage)}**\n\n$$\n{line}\n$$" for stage, line in formula_lines(p))


def share_sentence(p: Params, style: Style) -> str:
    f = p.flops()
    quad = sum(f[s] for s in cx.N2_STAGES)
    total = sum(f.values())
    key = "cx.share_quad" if quad >= total / 2 else "cx.share_linear"
    return style.t(key, n=f"{p.seq_len:,}", share=f"{quad / total:.0%}", total=si(total), quad=si(quad))


def crossovers(s: cx.LayerShape) -> tuple[float, float]:
    """Where every n² stage (the softmax too, as the FLOPs curve draws them) overtakes the projections: the
    attention alone, and the whole layer with a 4d MLP."""
    return cx.crossover_n(s, softmax=True), cx.crossover_n(s, MLP_FACTOR * s.d_model, softmax=True)


def crossover_sentence(p: Params, style: Style) -> str:
    s = p.shape
    a, w = crossovers(s)
    n = p.seq_len
    where = "cx.cross_past" if n > a else "cx.cross_before"
    return style.t(
        where,
        a=f"{a:,.0f}",
        w=f"{w:,.0f}",
        n=f"{n:,}",
        d=s.d_model,
        ra=ratio(a / s.d_model),
        rw=ratio(w / s.d_model),
        mask=style.t("cx.mask_causal" if s.causal else "cx.mask_none"),
    )


def shipped_frame(style: Style) -> pd.DataFrame:
    """GPT-2 small and SmolLM2-135M: crossovers of the attention alone and of the whole layer, against the context."""
    t, rows = style.t, []
    for m in cx.SHIPPED_SHAPES.values():
        s = m.shape
        rows.append(
            {
                t("cx.col_model"): m.name,
                "d": m.d_model,
                "h : h_kv": f"{m.n_heads} : {m.n_kv_heads}",
                t("cx.col_cross_attn"): f"{crossovers(s)[0]:,.0f}",
                t("cx.col_cross_layer"): f"{crossovers(s)[1]:,.0f}",
                t("cx.col_cross_real"): f"{cx.crossover_n(s, m.mlp_width, m.mlp_matrices, softmax=True):,.0f}",
                t("cx.col_context"): f"{m.context:,}",
            }
        )
    return pd.DataFrame(rows)


def shipped_note(style: Style) -> str:
    """Where the shipped models' layers cross over (:func:`crossovers`, the softmax included) against their
    contexts."""
    g, m = cx.SHIPPED_SHAPES["gpt2"], cx.SHIPPED_SHAPES["smollm2-135m"]
    return style.t(
        "cx.shipped_note",
        g=f"{crossovers(g.shape)[0]:,.0f}",
        gctx=f"{g.context:,}",
        s=f"{crossovers(m.shape)[0]:,.0f}",
        sw=f"{m.mlp_width:,}",
        sl=f"{cx.crossover_n(m.shape, m.mlp_width, m.mlp_matrices, softmax=True):,.0f}",
        sctx=f"{m.context:,}",
    )


def memory_frame(p: Params, style: Style) -> pd.DataFrame:
    """Bytes each stage holds, eager against fused, for the current n (float32, batch 1)."""
    s, n, t = p.shape, p.seq_len, style.t
    e = cx.memory_by_stage(n, s.d_model, s.n_heads, s.n_kv_heads, s.head_dim, "eager")
    f = cx.memory_by_stage(n, s.d_model, s.n_heads, s.n_kv_heads, s.head_dim, "fused")
    fused = {
        "qkv_projection": f["qkv_projection"],
        "scores": 0,
        "softmax": 0,
        "weighted_sum": f["attention"],
        "output_projection": f["output_projection"],
    }
    shapes = {
        "qkv_projection": f"Q [{s.n_heads}, n, {s.head_dim}], K, V [{s.n_kv_heads}, n, {s.head_dim}]",
        "scores": f"[{s.n_heads}, n, n]",
        "softmax": f"[{s.n_heads}, n, n]",
        "weighted_sum": f"[{s.n_heads}, n, {s.head_dim}]",
        "output_projection": f"[n, {s.d_model}]",
    }
    return pd.DataFrame(
        {
            t("cx.col_stage"): [stage_name(style, k) for k in cx.STAGES],
            t("cx.col_tensor"): [shapes[k] for k in cx.STAGES],
            t("cx.col_eager"): [format_bytes(e[k]) for k in cx.STAGES],
            t("cx.col_fused"): [format_bytes(fused[k]) if fused[k] else "—" for k in cx.STAGES],
        }
    )


def peak_text(n: int, shape: cx.LayerShape, path: str, style: Style) -> str:
    """The tensors alive at the path's peak (:func:`~attn_core.complexity.stages.peak_tensors`), each with its
    shape and bytes, as one list."""
    dims = {"h": shape.n_heads, "n": f"{n:,}", "dh": shape.head_dim, "d": shape.d_model}
    parts = cx.peak_tensors(n, shape, path)
    return join_list([style.t(f"cx.peak_{k}", b=format_bytes(v), **dims) for k, v in parts.items()], style)


def memory_sentence(p: Params, style: Style) -> str:
    s, n = p.shape, p.seq_len
    e, f = (cx.peak_bytes(n, s, path) for path in cx.PATHS)
    return style.t(
        "cx.memory_line_same" if about_one(e / f) else "cx.memory_line",
        n=f"{n:,}",
        eager=format_bytes(e),
        fused=format_bytes(f),
        parts=peak_text(n, s, "eager", style),
        fparts=peak_text(n, s, "fused", style),
        ratio=ratio(e / f),
    )


# ---------------------------------------------------------------- counted
def stage_view(p: Params, style: Style) -> View:
    """FLOPs by stage of the layer (h heads of d_h) beside one head of width h·d_h: the matmuls cost the same."""
    s, n = p.shape, p.seq_len
    one = cx.flops_by_stage(n, s.d_model, 1, 1, s.n_heads * s.head_dim, s.causal)
    many = p.flops()
    if s.n_kv_heads != s.n_heads:  # the same K/V width as the layer, in one head: compare only the attention heads
        one["qkv_projection"] = many["qkv_projection"]
    cols = [
        style.t("cx.col_heads", heads=style.count(s.n_heads, "head"), dh=s.head_dim),
        style.t("cx.col_one_head", w=s.n_heads * s.head_dim),
    ]
    stacks = {k: [many[k], one[k]] for k in cx.STAGES}
    fig = cfig.stage_bars(
        cols, stacks, {k: stage_name(style, k) for k in cx.STAGES}, style.t("cx.bars_title", n=f"{n:,}"), style
    )
    df = pd.DataFrame(
        {
            "stage": list(cx.STAGES),
            "flops_h_heads": [many[k] for k in cx.STAGES],
            "flops_one_head": [one[k] for k in cx.STAGES],
        }
    )
    return View(f"complexity_stages_n{n}_h{s.n_heads}_kv{s.n_kv_heads}{'_causal' if s.causal else ''}", fig, df)


def heads_sentence(p: Params, style: Style) -> str:
    s, n = p.shape, p.seq_len
    one = cx.flops_by_stage(n, s.d_model, 1, 1, s.n_heads * s.head_dim, s.causal)
    many = p.flops()
    mat = sum(many[k] for k in ("scores", "weighted_sum"))
    if s.n_heads == 1:  # one softmax: nothing to compare
        return style.t("cx.heads_line_one", w=s.head_dim, mat=si(mat), sm=si(many["softmax"]))
    return style.t(
        "cx.heads_line",
        heads=style.count(s.n_heads, "head"),
        w=s.n_heads * s.head_dim,
        mat=si(mat),
        same="=" if mat == one["scores"] + one["weighted_sum"] else "≠",
        sm=si(many["softmax"]),
        sm1=si(one["softmax"]),
    )


def curve_frame(p: Params, style: Style) -> pd.DataFrame:
    s, rows = p.shape, []
    for n in sorted({*CURVE_POINTS, p.seq_len}):
        f = cx.flops_by_stage(n, s.d_model, s.n_heads, s.n_kv_heads, s.head_dim, s.causal)
        lin = f["qkv_projection"] + f["output_projection"]
        quad = sum(f[k] for k in cx.N2_STAGES)
        rows.append({"n": n, "linear": lin, "quadratic": quad, "total": lin + quad})
    df = pd.DataFrame(rows)
    df.attrs["names"] = {
        "linear": style.t("cx.curve_linear"),
        "quadratic": style.t("cx.curve_quad"),
        "total": style.t("cx.curve_total"),
    }
    return df


def curve_view(p: Params, style: Style) -> View:
    s = p.shape
    a, w = crossovers(s)
    marks = [(a, style.t("cx.mark_attn", n=f"{a:,.0f}")), (w, style.t("cx.mark_layer", n=f"{w:,.0f}"))]
    df = curve_frame(p, style)
    fig = cfig.flops_curve(df, marks, p.seq_len, style.t("cx.curve_title"), style)
    causal = "_causal" if s.causal else ""
    return View(
        f"complexity_flops_d{s.d_model}_h{s.n_heads}_kv{s.n_kv_heads}_dh{s.head_dim}{causal}",
        fig,
        pd.DataFrame(df.to_dict("list")),
    )


# ---------------------------------------------------------------- measured
def sweep_frame(steps: Sequence[cx.Measured], shape: cx.LayerShape, style: Style) -> pd.DataFrame:
    """One row per (n, path, part): median, min and max ms, the FLOPs the path does, achieved GFLOP/s, peak bytes.

    With a causal mask the eager path computes the full n × n scores, softmax and weights·V and masks the scores (all
    n² pairs counted); the fused path's kernel skips the masked blocks (the n·(n+1)/2 unmasked pairs counted)."""
    rows = []
    for m in steps:
        causal = shape.causal and m.path == "fused"  # eager masks a full n × n matrix: it does all n² pairs
        f = cx.flops_by_stage(m.n, shape.d_model, shape.n_heads, shape.n_kv_heads, shape.head_dim, causal)
        f["attention"] = sum(f[k] for k in cx.N2_STAGES)
        parts = {**m.median_s, "total": m.total_s}
        for part, sec in parts.items():
            flops = sum(f[k] for k in cx.STAGES) if part == "total" else f[part]
            lo = sum(m.min_s.values()) if part == "total" else m.min_s[part]
            hi = sum(m.max_s.values()) if part == "total" else m.max_s[part]
            label = (
                style.t(f"cx.path_{m.path}")
                + " · "
                + (style.t("cx.part_total") if part == "total" else stage_name(style, part))
            )
            rows.append(
                {
                    "n": m.n,
                    "path": m.path,
                    "part": part,
                    "label": label,
                    "ms": sec * 1e3,
                    "ms_min": lo * 1e3,
                    "ms_max": hi * 1e3,
                    "flops": flops,
                    "gflop_per_s": flops / sec / 1e9 if sec > 0 else 0.0,
                    "peak_bytes": m.peak_bytes,
                    "peak_kind": m.peak_kind,
                    "backend": m.backend,
                }
            )
    return pd.DataFrame(rows)


def time_frame(df: pd.DataFrame) -> pd.DataFrame:
    """The parts the time chart draws: every eager stage and the eager total, the fused attention and total."""
    keep = (df.path == "eager") | df.part.isin(["attention", "total"])
    return df[keep].reset_index(drop=True)


def measured_views(steps: Sequence[cx.Measured], spec: cx.SweepSpec, style: Style) -> list[View]:
    """Time against n and peak memory against n of a sweep (so far)."""
    df = sweep_frame(steps, spec.shape, style)
    tag = f"d{spec.shape.d_model}_h{spec.shape.n_heads}_kv{spec.shape.n_kv_heads}_n{max(spec.seq_lens)}"
    time_view = View(
        f"complexity_time_{tag}", cfig.measured_time(time_frame(df), style.t("cx.time_title"), style), time_frame(df)
    )
    mem = df[df.part == "total"][["n", "path", "peak_bytes", "peak_kind"]].reset_index(drop=True)
    mem["formula_bytes"] = [cx.peak_bytes(int(n), spec.shape, path) for n, path in zip(mem.n, mem.path, strict=True)]
    mem["label"] = [
        style.t(f"cx.mem_measured_{k}", path=style.t(f"cx.path_{p}"))
        for p, k in zip(mem.path, mem.peak_kind, strict=True)
    ]
    mem["formula_label"] = [style.t("cx.mem_formula", path=style.t(f"cx.path_{p}")) for p in mem.path]
    mem_view = View(f"complexity_memory_{tag}", cfig.measured_memory(mem, style.t("cx.mem_title"), style), mem)
    return [time_view, mem_view]


def sweep_progress(spec: cx.SweepSpec, steps: Sequence[cx.Measured], style: Style) -> tuple[float, str]:
    total = len(spec.seq_lens) * len(spec.paths)
    done = len(steps)
    last = f"n = {steps[-1].n:,} · {style.t('cx.path_' + steps[-1].path)}" if steps else ""
    return done / total, style.t("cx.progress", done=done, total=total, last=last)


def slopes_frame(steps: Sequence[cx.Measured], spec: cx.SweepSpec, style: Style) -> pd.DataFrame:
    """Fitted log-log slope of each eager stage and the fused attention (fastest of the repeats, n ≥ 256), and the
    achieved GFLOP/s at the largest n."""
    df = sweep_frame(steps, spec.shape, style)
    t, rows = style.t, []
    top = df.n.max() if len(df) else 0
    for (_path, part), g in df[df.part != "total"].groupby(["path", "part"], sort=False):
        fit = cx.fit_slope(g.n, g.ms_min)
        last = g[g.n == top]
        rows.append(
            {
                t("cx.col_part"): g["label"].iloc[0],
                t("cx.col_expect"): "2" if part in (*cx.N2_STAGES, "attention") else "1",
                t("cx.col_slope"): f"{fit.slope:.2f}" if fit else "—",
                t("cx.col_range"): f"{fit.n_lo:,} … {fit.n_hi:,}" if fit else "—",
                t("cx.col_gflops", n=f"{top:,}"): format_sig(last.gflop_per_s.iloc[0]) if len(last) else "—",
            }
        )
    return pd.DataFrame(rows)


def slopes_note(shape: cx.LayerShape, style: Style) -> str:
    """What the slopes table fits and what its GFLOP/s divide: the FLOPs each path does (with a mask, see
    :func:`sweep_frame`)."""
    note = style.t("cx.slopes_note", lo=cx.SLOPE_FROM)
    return sentences([note, style.t("cx.slopes_note_causal")], style) if shape.causal else note


def measured_sentences(steps: Sequence[cx.Measured], spec: cx.SweepSpec, device: str, style: Style) -> list[str]:
    """What the sweep measured, chosen from its numbers: the backend, the slopes that depart from the count and why,
    the softmax's FLOP/s against the matmul's, the memory saved."""
    t = style.t
    df = sweep_frame(steps, spec.shape, style)
    if df.empty:
        return []
    top = int(df.n.max())
    backends = sorted({b for b in df.backend if b})
    out = [t("cx.backend_line", backend=", ".join(backends) or "—", device=device, threads=torch.get_num_threads())]
    eager = df[(df.path == "eager") & (df.n == top)].set_index("part")
    if {"scores", "softmax"} <= set(eager.index) and eager.gflop_per_s["scores"] > 0:
        r = eager.gflop_per_s["softmax"] / eager.gflop_per_s["scores"]
        key = "cx.softmax_bound" if r < SOFTMAX_BOUND else "cx.softmax_not_bound"
        out.append(
            t(
                key,
                sm=format_sig(eager.gflop_per_s["softmax"]),
                mm=format_sig(eager.gflop_per_s["scores"]),
                r=f"{r:.0%}",
                n=f"{top:,}",
            )
        )
    linear = {}  # the linear stages' fitted slopes: how much the whole run slowed as n rose
    for stage in ("qkv_projection", "output_projection"):
        g = df[(df.path == "eager") & (df.part == stage)]
        fit = cx.fit_slope(g.n, g.ms_min)
        if fit is not None:
            linear[stage] = fit.slope
    lin_stage = max(linear, key=linear.get) if linear else None
    lin_excess = linear[lin_stage] - 1 if lin_stage else 0.0
    on_cpu = torch.device(device).type == "cpu"
    for stage in cx.N2_STAGES:
        g = df[(df.path == "eager") & (df.part == stage)]
        fit = cx.fit_slope(g.n, g.ms_min)
        if fit is None:
            out.append(t("cx.slope_short", lo=cx.SLOPE_FROM))
            break
        if SLOPE_LOW <= fit.slope <= SLOPE_HIGH:
            continue
        if fit.slope < SLOPE_LOW:
            key = "cx.slope_low"
        elif lin_stage is not None and fit.slope - 2 - lin_excess <= SLOPE_MARGIN:
            key = "cx.slope_high_all"  # the projections departed as much: not the n × n matrices' own
        else:
            key = "cx.slope_high" if on_cpu else "cx.slope_high_device"
        out.append(
            t(
                key,
                stage=stage_name(style, stage),
                s=f"{fit.slope:.2f}",
                lo=f"{fit.n_lo:,}",
                hi=f"{fit.n_hi:,}",
                threads=torch.get_num_threads(),
                lstage=stage_name(style, lin_stage) if lin_stage else "",
                ls=f"{linear[lin_stage]:.2f}" if lin_stage else "",
                device=device,
            )
        )
    tot = df[(df.part == "total") & (df.n == top)].set_index("path")
    if {"eager", "fused"} <= set(tot.index):
        e, f = tot.loc["eager"], tot.loc["fused"]
        if e.ms > 0 and f.ms > 0:
            r = e.ms / f.ms
            key = "cx.fused_line_same" if about_one(r) else "cx.fused_line" if r > 1 else "cx.fused_line_slower"
            out.append(
                t(
                    key,
                    n=f"{top:,}",
                    te=format_sig(e.ms),
                    tf=format_sig(f.ms),
                    me=format_bytes(int(e.peak_bytes)),
                    mf=format_bytes(int(f.peak_bytes)),
                    r=ratio(max(r, 1 / r)),
                )
            )
    return out


# ---------------------------------------------------------------- prefill against decode
def pd_lens(p: Params) -> tuple[int, ...]:
    """The n timed for prefill against decode: every :data:`PD_STEP`-th point of the sweep, and ``seq_len``."""
    lens = p.sweep_lens
    return tuple(sorted({*lens[::PD_STEP], lens[-1]}))


@stays_on_device  # bound to where it runs: an out-of-memory error is a message, not a CPU retry
def time_pd(
    shape: cx.LayerShape, lens: tuple[int, ...], target: str | None = None, *, device: str = "cpu"
) -> pd.DataFrame:
    """Measured seconds per token of a causal prefill of n tokens and of one decode step against n cached tokens, on
    ``target`` (the page's device choice, :func:`run_device`) or else ``device``."""
    rows = []
    for n in lens:
        pre, dec = cx.time_prefill_decode(n, shape, target or device)
        rows += [{"n": n, "mode": "prefill", "s_per_token": pre / n}, {"n": n, "mode": "decode", "s_per_token": dec}]
    return pd.DataFrame(rows)


def pd_counted(p: Params, style: Style) -> pd.DataFrame:
    """Counted per token (causal: a decoder's prompt): FLOPs and float32 bytes read of a prefill of n tokens
    (divided by n) and of the decode step at position n (its query against n cached keys)."""
    s, rows = p.shape, []
    wbytes = cx.weights_bytes(s)
    lin = cx.linear_flops_per_token(s)
    for n in sorted({*(x for x in CURVE_POINTS if x <= p.seq_len), p.seq_len}):
        f = cx.flops_by_stage(n, s.d_model, s.n_heads, s.n_kv_heads, s.head_dim, True)
        kv = 2 * s.n_kv_heads * n * s.head_dim * cx.BYTES
        rows.append(
            {
                "n": n,
                "mode": "prefill",
                "label": style.t("cx.pd_prefill"),
                "flops_per_token": sum(f.values()) / n,
                "bytes_per_token": (wbytes + kv) / n,
            }
        )
        rows.append(
            {
                "n": n,
                "mode": "decode",
                "label": style.t("cx.pd_decode"),
                "flops_per_token": lin + (4 * s.n_heads * s.head_dim + cx.SOFTMAX_FLOPS * s.n_heads) * n,
                "bytes_per_token": wbytes + kv,
            }
        )
    df = pd.DataFrame(rows)
    df["flop_per_byte"] = df.flops_per_token / df.bytes_per_token
    return df


def pd_views(p: Params, measured: pd.DataFrame | None, style: Style) -> list[View]:
    s = p.shape
    tag = f"d{s.d_model}_h{s.n_heads}_kv{s.n_kv_heads}_n{p.seq_len}"
    df = pd_counted(p, style)
    out = [
        View(
            f"complexity_pd_flops_{tag}",
            cfig.per_token(df, "flops_per_token", style.t("cx.axis_flops_token"), style.t("cx.pd_flops_title"), style),
            df,
        )
    ]
    if measured is not None and len(measured):
        m = measured.copy()
        m["label"] = [style.t(f"cx.pd_{x}") for x in m["mode"]]
        m["us_per_token"] = m.s_per_token * 1e6
        out.append(
            View(
                f"complexity_pd_time_{tag}",
                cfig.per_token(m, "us_per_token", style.t("cx.axis_us_token"), style.t("cx.pd_time_title"), style),
                m,
            )
        )
    return out


def pd_sentences(p: Params, measured: pd.DataFrame | None, style: Style) -> list[str]:
    df = pd_counted(p, style)
    n = p.seq_len
    pre, dec = (df[(df.n == n) & (df["mode"] == m)].iloc[0] for m in ("prefill", "decode"))
    r = dec.flops_per_token / pre.flops_per_token  # ≥ 1: the last step scores n keys, prefill's (n+1)/2 on average
    flops = style.t(
        "cx.pd_flops_same" if about_one(r) else "cx.pd_flops_ratio",
        n=f"{n:,}",
        fp=si(pre.flops_per_token),
        fd=si(dec.flops_per_token),
        r=ratio(r),
    )
    key = "cx.pd_counted" if dec.flop_per_byte < pre.flop_per_byte else "cx.pd_counted_even"
    out = [sentences([flops, style.t(key, ip=format_sig(pre.flop_per_byte), id=format_sig(dec.flop_per_byte))], style)]
    if measured is not None and len(measured):
        top = int(measured.n.max())
        m = measured[measured.n == top].set_index("mode").s_per_token
        r = m["decode"] / m["prefill"]
        key = "cx.pd_measured_same" if about_one(r) else "cx.pd_measured_slower" if r > 1 else "cx.pd_measured_faster"
        out.append(
            style.t(
                key,
                n=f"{top:,}",
                tp=format_sig(m["prefill"] * 1e6),
                td=format_sig(m["decode"] * 1e6),
                r=ratio(max(r, 1 / r)),
            )
        )
    return out


# ---------------------------------------------------------------- the course note's formula
def note_numbers(p: Params) -> dict[str, int]:
    """One head's n² matmuls, all h heads', the note's n²·d/h and the whole counted layer, for the current n."""
    s, n = p.shape, p.seq_len
    f = cx.flops_by_stage(n, s.d_model, s.n_heads, s.n_kv_heads, s.head_dim)
    return {
        "per_head": 4 * n * n * s.head_dim,
        "total": f["scores"] + f["weighted_sum"],
        "note_quad": n * n * s.d_model // s.n_heads,
        "note_linear": n * s.d_model**2,
        "linear": f["qkv_projection"] + f["output_projection"],
        "all": sum(f.values()),
    }


def note_frame(p: Params, style: Style) -> pd.DataFrame:
    s, n, v, t = p.shape, p.seq_len, note_numbers(p), style.t
    rows = [
        (t("cx.note_row_head"), f"4·n²·d_h = 4 · {n:,}² · {s.head_dim}", v["per_head"]),
        (
            t("cx.note_row_total", h=s.n_heads) if s.n_heads > 1 else t("cx.note_row_total_one"),
            f"4·n²·h·d_h = 4 · {n:,}² · {s.n_heads} · {s.head_dim}",
            v["total"],
        ),
        (t("cx.note_row_note"), f"n²·d/h = {n:,}² · {s.d_model} / {s.n_heads}", v["note_quad"]),
        (
            t("cx.note_row_linear"),
            f"2·n·d·(2·h·d_h + 2·h_kv·d_h) = 2 · {n:,} · {s.d_model} · "
            f"{2 * s.n_heads * s.head_dim + 2 * s.n_kv_heads * s.head_dim}",
            v["linear"],
        ),
        (t("cx.note_row_note_linear"), f"n·d² = {n:,} · {s.d_model}²", v["note_linear"]),
    ]
    return pd.DataFrame(
        {
            t("cx.col_term"): [r[0] for r in rows],
            t("cx.col_formula"): [r[1] for r in rows],
            t("cx.col_flops"): [f"{r[2]:,}" for r in rows],
            "≈": [si(r[2]) for r in rows],
        }
    )


def note_sentence(p: Params, style: Style) -> str:
    s, v = p.shape, note_numbers(p)
    ratio_ = v["total"] / v["note_quad"]
    key = "cx.note_wrong" if s.n_heads > 1 else "cx.note_one_head"
    width = style.t(
        "cx.note_width_eq" if s.n_heads * s.head_dim == s.d_model else "cx.note_width_ne",
        hd=s.n_heads * s.head_dim,
        d=s.d_model,
    )
    return style.t(
        key,
        h=s.n_heads,
        total=si(v["total"]),
        head=si(v["per_head"]),
        note=si(v["note_quad"]),
        r=ratio(ratio_),
        width=width,
    )


def heads_view(p: Params, style: Style) -> View:
    """The n² matmuls against the head count at the layer's attention width h·d_h: total, one head, the note."""
    s, n = p.shape, p.seq_len
    width = s.n_heads * s.head_dim
    heads = sorted({h for h in (*HEAD_COUNTS, s.n_heads) if width % h == 0})
    df = pd.DataFrame(
        {
            "heads": heads,
            "head_dim": [width // h for h in heads],
            "total": [4 * n * n * width for _ in heads],
            "per_head": [4 * n * n * (width // h) for h in heads],
            "note": [n * n * s.d_model // h for h in heads],
        }
    )
    df.attrs["names"] = {
        "total": style.t("cx.heads_total"),
        "per_head": style.t("cx.heads_one"),
        "note": style.t("cx.heads_note"),
    }
    fig = cfig.heads_figure(df, s.n_heads, style.t("cx.heads_title", n=f"{n:,}", w=width), style)
    return View(f"complexity_note_n{n}_w{width}", fig, pd.DataFrame(df.to_dict("list")))


# ---------------------------------------------------------------- the command line
def views(p: Params, style: Style, which: str | Sequence[str] | None = None, device: str = "cpu") -> list[View]:
    """The page's charts for ``p`` (what the command line exports): ``counted`` (default), ``measured`` (runs the
    whole sweep), ``prefill_decode`` (times it), ``formula``, or ``all``."""
    out: list[View] = []
    for name in view_list(which, VIEW_NAMES, (p.view,)):
        if name == "counted":
            out += [stage_view(p, style), curve_view(p, style)]
        elif name == "measured":
            spec = sweep_spec(p)
            out += measured_views(list(measure(spec, device=run_device(p.run_on, device))), spec, style)
        elif name == "prefill_decode":
            out += pd_views(p, time_pd(p.shape, pd_lens(p), run_device(p.run_on, device)), style)
        else:
            out.append(heads_view(p, style))
    return out


#: The cost page in the browser test, the fuzz, the colour checks and the benchmarks (PageChecks).
CHECKS = PageChecks(
    slider="head_dim",
    chart="cx_stages",
    scenarios=(Scenario("defaults", {}, "head_dim", (65, 64)),),  # the counts and their charts: pure arithmetic
    cli="--seq-len 128 --d-model 32 --n-heads 2 --n-kv-heads 1 --head-dim 16 --view all",
    extremes=(
        {},
        {"seq_len": "64", "d_model": "16", "n_heads": "1", "n_kv_heads": "1", "head_dim": "4"},
        {"seq_len": "8192", "d_model": "4096", "n_heads": "64", "n_kv_heads": "1", "head_dim": "256", "causal": "true"},
    ),
    fuzz_sets=25,  # the sweep waits for its Start
)
