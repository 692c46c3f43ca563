"""The softmax-saturation page's view model: its Params, its steps and its charts.

The page (``app_pages/saturation.py``) and the command line (``python -m attn_core.export
--page saturation``) both turn a :class:`Params` into the sequences drawn
(:attr:`Params.sampling`), compute through the steps below and draw with the views
below, so a slide matches the screen. The page shows the six views in the order of
:data:`VIEW_NAMES` (the command line's ``--view`` picks some): the first two always,
the four against d_k and for one row in sections that are measured and sent while
open (a slide shows one section); while they are closed the sentences take the
current d_k's numbers from :func:`current_weights`, the same as the whole sweep's.

The four steps that sample and measure (:func:`score_sample`,
:func:`saturation_sweep`, :func:`example_maps`, :func:`query_scores`) take only
what their numbers depend on, so the page caches them (``ui.compute``) across the
controls that do not change them: the scaling, τ and the row leave the sweep as it
is. :func:`row_softmax` and :func:`float16_demo` work on one row of scores and are
cheap enough to run on every rerun.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial

import numpy as np
import pandas as pd

from attn_core.attention.tokens import MAX_TEXT_CHARS, synthetic_tokens
from attn_core.figures import Style
from attn_core.figures import saturation as fs
from attn_core.runtime.config import FLOAT16_MAX, MAX_HEAD_DIM, MAX_SEQ_LEN, SMALL_NORM, check_int
from attn_core.saturation import examples as sat_examples
from attn_core.saturation import measures as sat_measures
from attn_core.saturation import sweep as sat_sweep
from attn_core.saturation.examples import ExampleMaps
from attn_core.saturation.measures import Float16Demo, RowSoftmax
from attn_core.saturation.sampling import DISTRIBUTIONS, SamplingSpec, row_plan
from attn_core.saturation.sweep import SWEEP_D_K, ScoreSample, SweepScores
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

DEFAULT_D_K = 64
# The page's views, top to bottom; the chart keys of the page are ``sat_<name>``.
VIEW_NAMES = ("dist", "maps", "curves", "grads", "row", "fp16")
FLOAT16_COLUMNS = ("key_pos", "key", "score_fp16", "exp_fp16", "naive_fp16", "stable_fp16", "reference_fp64")


@dataclass(frozen=True)
class Params:
    """Everything the page's controls set; the field names are the URL keys, the controls the widgets and flags."""

    head_dim: int = control(
        DEFAULT_D_K, "pow2", lo=1, hi=MAX_HEAD_DIM, help="help.sat_d_k", cli="--d-k", cli_help="head dimension d_k"
    )
    scaling: bool = control(True, "bool", help="help.scaling", cli_help="do not divide the scores by sqrt(d_k)")
    seq_len: int = control(
        16,
        "int",
        lo=2,
        hi=MAX_SEQ_LEN,
        help="help.sat_seq_len",
        cli_help="keys (and queries) of each sampled sequence",
    )
    samples: int = control(256, "pow2", lo=16, hi=16384, help="help.samples", cli_help="random sequences per d_k")
    temperature: float = control(
        1.0, "float", lo=0.1, hi=5.0, step=0.1, help="help.temperature", cli_help="softmax temperature τ"
    )
    dist: str = control(
        "normal", "choice", options=DISTRIBUTIONS, help="help.dist", cli_help="q/k entries: normal or projected"
    )
    row: int = control(
        0,
        "int",
        lo=0,
        hi=MAX_SEQ_LEN - 1,
        data=True,
        help="help.row",
        cli_help="the query row of the row and float16 views",
    )
    seed: int = control(0, "seed", cli_help="the sample's seed")
    text: str | None = control(
        None, "text", hi=MAX_TEXT_CHARS, cli_only=True, cli_help="sets --seq-len to its number of words (at least 2)"
    )

    def __post_init__(self) -> None:
        check_choices(self)
        if self.text is not None:  # the command line's --text: as many keys as it has words
            object.__setattr__(self, "seq_len", max(2, len(self.text.split())))

    @property
    def sampling(self) -> SamplingSpec:
        """What the sampled queries and keys depend on (not d_k's value, the scaling, τ or the row)."""
        return SamplingSpec(self.seq_len, self.samples, self.seed, self.dist)

    @property
    def sqrt_d(self) -> float:
        return math.sqrt(self.head_dim)

    @property
    def factor(self) -> float:
        """The factor softmax applies to q·k besides 1/τ: 1/√d_k with the scaling, else 1."""
        return 1.0 / self.sqrt_d if self.scaling else 1.0


# ---------------------------------------------------------------- steps
def score_sample(
    sampling: SamplingSpec, d_k: int, *, device: str = "cpu", scores: SweepScores | None = None
) -> ScoreSample:
    """The measured scores at ``d_k``: histograms and variances (:func:`attn_core.saturation.sweep.score_sample`); from
    ``scores`` (:func:`current_scores` of ``sampling`` and ``d_k``) when given, so the sample is not drawn again."""
    return sat_sweep.score_sample(sampling, d_k, device, scores=scores)


def sweep_scores(sampling: SamplingSpec, *, device: str = "cpu") -> SweepScores | None:
    """What the sweep measures that τ does not change (:func:`attn_core.saturation.sweep.sweep_scores`), None when too large."""
    return sat_sweep.sweep_scores(sampling, SWEEP_D_K, device)


def saturation_sweep(
    sampling: SamplingSpec, temperature: float, *, device: str = "cpu", scores: SweepScores | None = None
) -> pd.DataFrame:
    """Saturation and gradients at every d_k of :data:`attn_core.saturation.sweep.SWEEP_D_K`, unscaled and scaled;
    from ``scores`` (:func:`sweep_scores` of ``sampling``) when given, so a τ move does not sample again."""
    return sat_sweep.saturation_sweep(sampling, SWEEP_D_K, temperature, device, scores)


#: Work (scores measured × their d_k) above which the page shows a spinner while a step computes. The default
#: page measures 65,536 scores at d_k = 64 (~4·10⁶; its steps take ~50 ms in all).
SLOW_WORK = 2**25


def slow(p: Params, every_d_k: bool = False) -> bool:
    """Whether measuring at ``p``'s d_k (or at every d_k of the sweep) may take long enough to show a spinner:
    Streamlit shows one after half a second, and each costs a thread and a message on every run, shown or not."""
    d_k = sum(SWEEP_D_K) if every_d_k else p.head_dim
    return row_plan(p.seq_len, p.samples).scores * d_k > SLOW_WORK


def current_scores(sampling: SamplingSpec, d_k: int, *, device: str = "cpu") -> SweepScores | None:
    """:func:`sweep_scores` of ``d_k`` alone: what :func:`current_weights` and :func:`score_sample` measure that τ
    does not change, the raw scores without the keys' basis (which only the sweep's gradients read), and the
    first sequence's q and k from the same draw (:func:`first_sequence`)."""
    return sat_sweep.sweep_scores(sampling, (d_k,), device, with_basis=False, with_first=True)


def current_weights(
    sampling: SamplingSpec, d_k: int, temperature: float, *, device: str = "cpu", scores: SweepScores | None = None
) -> dict[bool, dict[str, float]]:
    """The sweep's largest weights and saturated rows at ``d_k`` alone (:func:`attn_core.saturation.sweep.weight_summary`),
    ``{scaled: {column: value}}`` like :func:`sweep_at`: all that the maps' caption and the closing explanation
    read (:func:`maps_caption`, :func:`saturation_cost`) while the sections against d_k are closed, without the
    gradients the sweep measures with them."""
    return sat_sweep.weight_summary(sampling, d_k, temperature, device, scores)


def first_sequence(
    sampling: SamplingSpec, d_k: int, *, device: str = "cpu", scores: SweepScores | None = None
) -> tuple[np.ndarray, np.ndarray] | None:
    """q, k of the first sequence (:func:`attn_core.saturation.examples.first_sequence`), which τ and the row leave as
    they are: pass them as ``qk`` to :func:`example_maps` and :func:`query_scores`. None when large. From ``scores``
    (:func:`current_scores` of ``sampling`` and ``d_k``) when they hold them, so nothing is drawn again."""
    return sat_examples.first_sequence(sampling, d_k, scores)


QK = tuple[np.ndarray, np.ndarray]


def example_maps(
    sampling: SamplingSpec, d_k: int, temperature: float, *, device: str = "cpu", qk: QK | None = None
) -> ExampleMaps:
    """The first sequence's weights without and with 1/√d_k, pooled to
    :data:`~attn_core.figures.saturation.MAX_HEATMAP_CELLS`; from ``qk`` (:func:`first_sequence` of ``sampling`` and
    ``d_k``) when given, so nothing is drawn."""
    if qk is None:
        return sat_examples.example_maps(sampling, d_k, temperature, fs.MAX_HEATMAP_CELLS, device)
    if qk[0].shape != (sampling.seq_len, d_k):
        raise ValueError(f"qk holds q {qk[0].shape}, not the first sequence's ({sampling.seq_len}, {d_k})")
    return sat_examples.sequence_maps(qk[0], qk[1], temperature, fs.MAX_HEATMAP_CELLS, device)


def query_scores(
    sampling: SamplingSpec, d_k: int, row: int, *, device: str = "cpu", qk: QK | None = None
) -> np.ndarray:
    """Raw q·k ``[T]`` of query ``row`` of the first sequence (the row and float16 views; from ``qk`` when given)."""
    return sat_examples.example_scores(sampling, d_k, device, rows=[row], qk=qk)[0]


def row_softmax(raw: np.ndarray, p: Params) -> RowSoftmax:
    """One row of raw q·k through softmax with ``p``'s scaling and τ, with its Jacobian (on the CPU: one row)."""
    return sat_measures.row_softmax(raw, p.factor, p.temperature, fs.MAX_JACOBIAN_KEYS)


def float16_demo(raw: np.ndarray) -> Float16Demo:
    """One row of unscaled q·k through naive and max-subtracted softmax in float16."""
    return sat_measures.float16_demo(raw)


def sweep_at(sweep: pd.DataFrame, p: Params) -> dict[bool, dict[str, float]] | None:
    """The sweep's numbers at ``p``'s d_k (:func:`attn_core.saturation.sweep.sweep_at`)."""
    return sat_sweep.sweep_at(sweep, p.head_dim)


# ---------------------------------------------------------------- the charts and their numbers
def score_distribution_data(sample: ScoreSample) -> pd.DataFrame:
    """The histogram numbers behind the distribution chart (one row per bin and panel)."""
    frames = []
    for kind, density, edges in (
        ("q·k", sample.raw_density, sample.raw_edges),
        (f"q·k/√{sample.d_k}", sample.scaled_density, sample.scaled_edges),
    ):
        frames.append(pd.DataFrame({"score": kind, "bin_from": edges[:-1], "bin_to": edges[1:], "density": density}))
    return pd.concat(frames, ignore_index=True)


def maps_data(maps: ExampleMaps) -> pd.DataFrame:
    """The numbers behind the two maps: one row per cell (or per pooled block)."""
    n_r, n_c = maps.unscaled.shape
    f, t = maps.factor, maps.seq_len
    if f == 1:
        labels = np.asarray(synthetic_tokens(t), dtype=object)
        return pd.DataFrame(
            {
                "query_pos": np.repeat(np.arange(t), t),
                "query": np.repeat(labels, t),
                "key_pos": np.tile(np.arange(t), t),
                "key": np.tile(labels, t),
                "score_qk": maps.raw.reshape(-1).astype(np.float64),
                "weight_unscaled": maps.unscaled.reshape(-1).astype(np.float64),
                "weight_scaled": maps.scaled.reshape(-1).astype(np.float64),
            }
        )
    starts_r, starts_c = np.arange(n_r) * f, np.arange(n_c) * f
    return pd.DataFrame(
        {
            "query_from": np.repeat(starts_r, n_c),
            "query_to": np.repeat(np.minimum(starts_r + f, t) - 1, n_c),
            "key_from": np.tile(starts_c, n_r),
            "key_to": np.tile(np.minimum(starts_c + f, t) - 1, n_r),
            "block_max_unscaled": maps.unscaled.reshape(-1).astype(np.float64),
            "block_max_scaled": maps.scaled.reshape(-1).astype(np.float64),
        }
    )


def float16_data(demo: Float16Demo, labels: list[str] | None = None, keys: np.ndarray | None = None) -> pd.DataFrame:
    """The numbers behind the left panel of the float16 chart, one row per key (inf/NaN kept).

    Columns :data:`FLOAT16_COLUMNS`: the score rounded to float16, its float16 exp,
    the naive and the max-subtracted float16 softmax, and the float64 softmax.
    ``labels`` default to the synthetic tokens; ``keys`` picks some keys (e.g.
    :func:`~attn_core.figures.saturation.float16_keys`, the ones drawn), default all.
    """
    labels = synthetic_tokens(demo.scores16.shape[0]) if labels is None else labels
    idx = np.arange(len(labels)) if keys is None else np.asarray(keys)
    values = (demo.scores16, demo.exp_naive, demo.naive, demo.stable, demo.reference)
    key_labels = [labels[i] for i in idx]
    return pd.DataFrame(dict(zip(FLOAT16_COLUMNS, (idx, key_labels, *(v[idx] for v in values)), strict=True)))


def row_data(result: RowSoftmax) -> pd.DataFrame:
    """The numbers behind the row chart: every key's score z (after the scaling and τ) and weight."""
    labels = synthetic_tokens(len(result.p))
    return pd.DataFrame({"key_pos": np.arange(len(labels)), "key": labels, "z": result.z, "weight": result.p})


def distribution_view(sample: ScoreSample, style: Style = Style()) -> View:
    """View 1: score histograms, raw against scaled."""
    fig = fs.score_distribution_figure(sample, style)
    return View(f"scores_dk{sample.d_k}", fig, partial(score_distribution_data, sample))


def maps_view(maps: ExampleMaps, style: Style = Style()) -> View:
    """View 2: the first sampled sequence through softmax without and with 1/sqrt(d_k), at temperature τ."""
    labels = synthetic_tokens(maps.seq_len) if maps.factor == 1 else []  # pooled maps are labelled by key ranges
    fig = fs.scaled_unscaled_figure(maps, labels, style)
    return View(f"maps_dk{maps.d_k}", fig, partial(maps_data, maps))


def curves_view(p: Params, sweep: pd.DataFrame, style: Style = Style()) -> View:
    """View 3: saturation against d_k, ``p``'s d_k and scaling marked; the data is the sweep itself."""
    fig = fs.saturation_curves_figure(sweep, p.head_dim, p.scaling, p.seq_len, p.samples, p.temperature, style)
    return View("saturation_sweep", fig, sweep)


def gradient_view(p: Params, sweep: pd.DataFrame, style: Style = Style()) -> View:
    """View 4: the gradients against d_k (mean, median, share of tiny rows); the data is the sweep itself."""
    fig = fs.gradient_curves_figure(sweep, p.head_dim, p.scaling, p.seq_len, p.samples, p.temperature, style)
    return View("gradient_sweep", fig, sweep)


def row_view(p: Params, result: RowSoftmax, style: Style = Style()) -> View:
    """View 5: query ``p.row`` as softmax bars with its Jacobian (``result`` of :func:`row_softmax`)."""
    labels = synthetic_tokens(len(result.p))
    q = f"{labels[p.row]} ({p.row})"
    formula = style.t(
        "sat.row_formula_on" if p.scaling else "sat.row_formula_off",
        q=q,
        sq=f"{p.sqrt_d:.4g}",
        tau=f"{p.temperature:g}",
    )
    fig = fs.row_figure(result, labels, q, formula, style)
    return View(f"row{p.row}_dk{p.head_dim}", fig, partial(row_data, result))


def float16_view(p: Params, demo: Float16Demo, sweep: pd.DataFrame, style: Style = Style()) -> View:
    """View 6: query ``p.row``'s unscaled scores through naive and max-subtracted float16 softmax (``demo``)."""
    labels = synthetic_tokens(demo.scores16.shape[0])
    fig = fs.float16_figure(demo, sweep, labels, p.head_dim, style)
    return View(f"float16_row{p.row}_dk{p.head_dim}", fig, partial(float16_data, demo, labels))


def float16_table(p: Params, demo: Float16Demo, style: Style) -> tuple[str | None, pd.DataFrame]:
    """The numbers of the keys the float16 chart draws, with headers in the user's language, and the line
    above them when they are not every key (else None)."""
    keys = fs.float16_keys(demo)
    headers = {col: style.t(f"sat.col.{col}") for col in FLOAT16_COLUMNS}
    note = style.t("sat.fp16_table_top", k=len(keys), t=f"{p.seq_len:,}") if len(keys) < p.seq_len else None
    return note, float16_data(demo, keys=keys).rename(columns=headers)


# ---------------------------------------------------------------- what the page says about the current settings
def summary(p: Params, sample: ScoreSample, style: Style) -> str:
    """The measured variances at ``p``'s d_k against the theory."""
    return style.t(
        "sat.summary",
        d=p.head_dim,
        sq=f"{p.sqrt_d:.4g}",
        inv=f"{1 / p.sqrt_d:.4g}",
        n=f"{sample.n_scores:,}",
        var=f"{sample.raw_var:.4g}",
        svar=f"{sample.scaled_var:.4g}",
    )


def measured_note(p: Params, style: Style) -> str | None:
    """Which query rows every statistic measured and what they estimate for ``p.dist``; None when all were."""
    plan = row_plan(p.seq_len, p.samples)
    if plan.complete:
        return None
    if plan.queries < plan.seq_len:
        key, note = "sat.measured_queries", "projected_queries"
    else:
        key, note = ("sat.measured_seq1" if plan.sequences == 1 else "sat.measured_seqs"), "projected_seqs"
    rows = style.t(
        key,
        rows=f"{plan.rows:,}",
        total=f"{plan.total_rows:,}",
        m=f"{plan.sequences:,}",
        n=f"{plan.n_samples:,}",
        t=f"{plan.seq_len:,}",
        scores=f"{plan.scores:,}",
    )
    return rows + " " + style.t("sat.sample_note." + ("normal" if p.dist == "normal" else note))


def current_line(p: Params, style: Style) -> str:
    """What softmax receives with the current scaling and τ: the factor applied to q·k."""
    return style.t(
        "sat.current_on" if p.scaling else "sat.current_off",
        d=p.head_dim,
        sq=f"{p.sqrt_d:.4g}",
        tau=f"{p.temperature:g}",
        c=f"{p.factor / p.temperature:.4g}",
    )


def maps_caption(p: Params, cur: dict[bool, dict[str, float]], style: Style) -> str:
    """What the maps show, said from the measured mean largest weight of a row (peaked / sharper / alike)."""
    mw_u, mw_s = cur[False]["max_weight"], cur[True]["max_weight"]
    shape = "peaked" if mw_u >= 0.9 else "sharper" if mw_u > 1.2 * mw_s else "alike"
    return style.t(f"sat.c2_{shape}", d=p.head_dim, mw_u=f"{mw_u:.3f}", mw_s=f"{mw_s:.3f}")


def gradient_caption(p: Params, style: Style) -> str:
    """The caption of the gradient section: the loss, with ``p``'s sample."""
    return style.t("sat.c_grad", n=f"{p.samples:,}", t=f"{p.seq_len:,}", seed=p.seed, thr=f"{SMALL_NORM:g}")


def even_jacobian(t: int) -> float:
    """‖J‖_F of softmax weights spread evenly over t keys: √(t − 1)/t."""
    return math.sqrt(t - 1) / t


def gradient_sentences(p: Params, cur: dict[bool, dict[str, float]], style: Style) -> list[str]:
    """The sentences under the gradient chart, each chosen from the measured numbers at ``p``'s d_k."""
    u, s = cur[False], cur[True]
    f = sat_sweep.gradient_findings(cur)
    g, t = "{:.3g}".format, style.t
    small = dict(
        small_u=f"{u['grad_q_norm_small']:.1%}", small_s=f"{s['grad_q_norm_small']:.1%}", thr=f"{SMALL_NORM:g}"
    )
    med_u, med_s = u["grad_q_norm_median"], s["grad_q_norm_median"]
    if f.identical:
        return [t("sat.grad.identical", mean_u=g(u["grad_q_norm"]), med_u=g(med_u), **small)]
    out = [t("sat.grad.vanished" if f.vanished else "sat.grad.small", **small)]
    hi, lo = max(med_u, med_s), min(med_u, med_s)
    out.append(t(f"sat.grad.median_{f.median_q}", med_u=g(med_u), med_s=g(med_s), r=g(hi / lo) if lo > 0 else "∞"))
    means = dict(cmp=t(f"sat.grad.cmp.{f.mean_q}"), mean_u=g(u["grad_q_norm"]), mean_s=g(s["grad_q_norm"]))
    if f.concentrated:
        k = "∞" if math.isinf(f.skew_q[0]) else g(f.skew_q[0])
        out.append(t("sat.grad.mean_concentrated", k=k, ks=g(f.skew_q[1]), **means))
    else:
        out.append(t("sat.grad.mean", **means))
    out.append(
        t(
            "sat.grad.z",
            cmp_mean=t(f"sat.grad.cmp.{f.mean_z}"),
            cmp_median=t(f"sat.grad.cmp.{f.median_z}"),
            cmp_j=t(f"sat.grad.cmp.{f.mean_j}"),
            zu=g(u["grad_norm"]),
            zs=g(s["grad_norm"]),
            zmu=g(u["grad_norm_median"]),
            zms=g(s["grad_norm_median"]),
            ju=g(u["jacobian_norm"]),
            js=g(s["jacobian_norm"]),
        )
    )
    if f.mean_j == "higher":
        out.append(t("sat.grad.spread", t=f"{p.seq_len:,}", u=g(even_jacobian(p.seq_len)), js=g(s["jacobian_norm"])))
    return out


def grad_how(p: Params, style: Style) -> str:
    """How the gradients are measured, with ``p``'s d_k and τ and the factors c they give."""
    return style.t(
        "sat.grad_how.body",
        d=p.head_dim,
        tau=f"{p.temperature:g}",
        sq=f"{p.sqrt_d:.4g}",
        cs=f"{1 / (p.sqrt_d * p.temperature):.4g}",
        cu=f"{1 / p.temperature:.4g}",
    )


def float16_caption(style: Style) -> str:
    """The caption of the float16 section: where exp overflows."""
    return style.t("sat.c5", lim=f"{math.log(FLOAT16_MAX):.2f}")


def float16_verdict(p: Params, demo: Float16Demo, style: Style) -> str:
    """Whether the naive float16 softmax of the row works, as measured."""
    return style.t("sat.fp16_ok" if demo.naive_ok else "sat.fp16_broken", d=p.head_dim)


def why_var(p: Params, sample: ScoreSample | None, style: Style) -> str:
    """Why Var(q·k) = d_k, with ``p``'s d_k and the measured variances (— when they could not be measured)."""
    return style.t(
        "sat.why_var.body",
        d=p.head_dim,
        sq=f"{p.sqrt_d:.4g}",
        inv=f"{1 / p.sqrt_d:.4g}",
        var="—" if sample is None else f"{sample.raw_var:.4g}",
        svar="—" if sample is None else f"{sample.scaled_var:.4g}",
    )


def saturation_cost(p: Params, cur: dict[bool, dict[str, float]], style: Style) -> str:
    """What saturation does to the gradient, with the measured largest weights and saturated rows at ``p``'s d_k."""
    u, s = cur[False], cur[True]
    return style.t(
        "sat.cost.body",
        d=p.head_dim,
        thr=f"{SMALL_NORM:g}",
        t=f"{p.seq_len:,}",
        u=f"{even_jacobian(p.seq_len):.3g}",
        mw_u=f"{u['max_weight']:.3f}",
        mw_s=f"{s['max_weight']:.3f}",
        sat_u=f"{u['saturated_frac']:.1%}",
        sat_s=f"{s['saturated_frac']:.1%}",
    )


# ---------------------------------------------------------------- the command line's charts
def views(p: Params, style: Style, which: str | Sequence[str] | None = None, device: str = "cpu") -> list[View]:
    """The charts of ``which`` views (default: all six, as the page shows them) for ``p``."""
    names = view_list(which, VIEW_NAMES, VIEW_NAMES)
    check_int("row", p.row, 0, p.seq_len - 1)
    sampling, want = p.sampling, set(names)
    # the page's steps, in the page's order, each only when a view asked for needs it
    sample = score_sample(sampling, p.head_dim, device=device) if "dist" in want else None
    sweep = saturation_sweep(sampling, p.temperature, device=device) if want & {"curves", "grads", "fp16"} else None
    maps = example_maps(sampling, p.head_dim, p.temperature, device=device) if "maps" in want else None
    raw = query_scores(sampling, p.head_dim, p.row, device=device) if want & {"row", "fp16"} else None
    build = {
        "dist": lambda: distribution_view(sample, style),
        "maps": lambda: maps_view(maps, style),
        "curves": lambda: curves_view(p, sweep, style),
        "grads": lambda: gradient_view(p, sweep, style),
        "row": lambda: row_view(p, row_softmax(raw, p), style),
        "fp16": lambda: float16_view(p, float16_demo(raw), sweep, style),
    }
    return [build[name]() for name in names]


#: The saturation page in the browser test, the fuzz, the colour checks and the benchmarks (PageChecks).
CHECKS = PageChecks(
    slider="temperature",
    chart="sat_maps",
    other_sliders=(("head_dim", "sat_dist"),),
    scenarios=(
        Scenario("defaults", {}, "temperature", (1.1, 1.0)),
        Scenario(
            "largest", {"seq_len": "8192", "samples": "16384", "head_dim": "1024"}, "temperature", (1.1, 1.0), 600
        ),
    ),
    cli="--d-k 16 --seq-len 8 --samples 16",
    cases=(
        {"head_dim": "1"},
        {"head_dim": "1024", "scaling": "false"},
        {"seq_len": "2", "samples": "16"},
        {"seq_len": "8192", "samples": "16384", "head_dim": "1024"},
        {"seq_len": "8192", "row": "8191", "temperature": "0.1"},
        {"dist": "projected", "head_dim": "1", "temperature": "5"},
        {"dist": "projected", "seq_len": "2", "row": "1"},
    ),
    widget_steps=8,  # each of its runs measures up to 16384 rows of 8192 keys
)


def slide_shown(p: Params, style: Style, steps: dict[str, int], device: str = "cpu") -> Shown:
    """What a slide of this page shows (slide mode: one section a slide, ``steps["slide"]``, 1-based): the
    section's chart and the lines the page writes with it."""
    i = step_at(steps, "slide", len(VIEW_NAMES))
    said = {
        0: [current_line(p, style), style.t("sat.c1", d=p.head_dim)],
        2: [style.t("sat.c3")],
        3: [gradient_caption(p, style)],
        4: [style.t("sat.c4")],
        5: [float16_caption(style)],
    }
    return Shown(views(p, style, VIEW_NAMES[i], device), said.get(i, []))
