"""The training lab's view model: experiments (presets or custom) of tiny transformers trained live, their curves,
the KV-heads trade-off, the conversion to GQA and what the heads learn.

An :class:`Experiment` is a tuple of :class:`Arm` s (one model each: a spec, a task, a run, or a conversion of
an earlier arm's checkpoint). :func:`experiment_steps` trains them one after the other with
:mod:`attn_core.lab.training`, yielding a :class:`Point` per step: the page keeps them in a live run and draws them as they
come; the command line runs them to the end. Every sentence that concludes is chosen from the measured numbers;
the curves are this app's measurements on this machine.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace

import pandas as pd

from attn_core import figures
from attn_core.figures import lab as lfig
from attn_core.kv.convert import PAPER_ORDER
from attn_core.kv.memory import elements_to_bytes, kv_elements_per_token
from attn_core.lab import training as eng
from attn_core.runtime.config import divisors
from attn_core.runtime.units import format_bytes
from attn_core.views.base import PageChecks, Scenario, View, check_choices, control, view_list, with_values  # noqa: F401 - with_values for the page

EXPERIMENTS = ("scaling", "kv_heads", "convert", "heads", "custom")
VIEW_FIELD = "experiment"
VIEW_NAMES = EXPERIMENTS
DEFAULT_STEPS = {"scaling": 30, "kv_heads": 60, "convert": 100, "heads": 400, "custom": 100}
DEFAULT_SEEDS = {"scaling": 2, "kv_heads": 1, "convert": 1, "heads": 1, "custom": 1}
SCALING_DK = (16, 256)
SCALING_CLEAR = 0.1  # a loss difference between the scaled and unscaled models beyond this is clear either way
SCALING_HEADS = 2  # heads of the scaling models: at d_k 256 four heads would double the preset's time
UPTRAIN = 0.05  # the GQA paper's uptraining: 5 % of the original pre-training steps (Ainslie et al. 2023, sec. 2.1)
TARGET_LOSS = 2.0  # nats: the KV-heads preset's "steps to reach" (the copy task starts near ln 63 = 4.1)
PROBES = 20  # probe snapshots over a run (the time-lapse and the max-weight curve)
KEPT_RUNS = 6  # finished runs a session keeps (per experiment and device): a run is at most a few hundred kB


@dataclass(frozen=True)
class Params:
    """Everything the page's controls set; the field names are the URL keys."""

    experiment: str = control(
        "scaling", "choice", options=EXPERIMENTS, help="help.lab_experiment", cli_help="a preset experiment or custom"
    )
    lab_steps: int = control(
        0,
        "int",
        lo=0,
        hi=1000,
        step=5,
        data=True,
        help="help.lab_steps",
        cli_help="training steps per model (0: the experiment's default)",
    )
    lab_seeds: int = control(
        0, "int", lo=0, hi=5, data=True, help="help.lab_seeds", cli_help="seeds per model (0: the experiment's default)"
    )
    lab_task: str = control("induction", "choice", options=eng.TASKS, help="help.lab_task", cli_help="task (custom)")
    lab_vocab: int = control(16, "int", lo=8, hi=128, help="help.lab_vocab", cli_help="vocabulary (custom)")
    lab_length: int = control(8, "int", lo=2, hi=32, help="help.lab_length", cli_help="task size n (custom)")
    lab_layers: int = control(2, "int", lo=1, hi=4, help="help.lab_layers", cli_help="layers (custom)")
    lab_d_model: int = control(64, "pow2", lo=16, hi=256, help="help.lab_d_model", cli_help="model width (custom)")
    lab_heads: int = control(4, "int", lo=1, hi=8, help="help.lab_heads", cli_help="query heads (custom)")
    lab_kv_heads: int = control(4, "kv_heads", help="help.lab_kv_heads", cli_help="KV heads (custom)")
    lab_head_dim: int = control(16, "pow2", lo=2, hi=256, help="help.lab_head_dim", cli_help="d_k (custom)")
    lab_scale: str = control(
        "sqrt",
        "choice",
        options=("sqrt", "mup", "none"),
        help="help.lab_scale",
        cli_help="1/sqrt(d_k), 1/d_k (muP) or none (custom)",
    )
    lab_position: str = control(
        "rope", "choice", options=eng.POSITIONS, help="help.lab_position", cli_help="RoPE or learned positions (custom)"
    )
    lab_batch: int = control(32, "pow2", lo=4, hi=128, help="help.lab_batch", cli_help="batch (custom)")
    lab_lr: float = control(0.01, "float", lo=0.001, hi=0.05, step=0.001, help="help.lab_lr", cli_help="Adam lr")
    lab_frame: int = control(
        0,
        "int",
        lo=0,
        hi=PROBES,
        data=True,
        help="help.lab_frame",
        cli_help="time-lapse snapshot of the heads experiment (0: the last)",
    )
    seed: int = control(0, "seed", cli_help="the seed of the weights and data")

    def __post_init__(self) -> None:
        check_choices(self)

    @property
    def steps(self) -> int:
        return int(self.lab_steps) or DEFAULT_STEPS[self.experiment]

    @property
    def seeds(self) -> int:
        return int(self.lab_seeds) or DEFAULT_SEEDS[self.experiment]


@dataclass(frozen=True)
class Arm:
    """One model of an experiment: ``code`` names its curve (its ``group`` pools seeds), ``spec``/``task``/``run``
    how it trains; ``method`` converts arm ``source`` 's checkpoint instead (curve shifted by ``offset`` steps)."""

    code: str
    group: str
    spec: eng.LabSpec
    task: eng.Task
    run: eng.RunSpec
    method: str = ""
    source: int = -1
    offset: int = 0


@dataclass(frozen=True)
class Experiment:
    name: str
    arms: tuple[Arm, ...]

    @property
    def total_steps(self) -> int:
        """Optimiser steps of every arm together (each arm's step 0 is a measurement, not a step)."""
        return sum(a.run.steps for a in self.arms)


def steps_done(points: Sequence[Point]) -> int:
    return sum(1 for pt in points if pt.rec.step > 0)


def _run(p: Params, steps: int, seed: int, batch: int = 32, lr: float = 3e-3, probe: bool = False) -> eng.RunSpec:
    every = max(1, steps // PROBES) if probe else 0
    return eng.RunSpec(steps, batch, lr, seed, eval_every=max(1, steps // 10), probe_every=every)


def experiment(p: Params) -> Experiment:
    """The arms of ``p`` 's experiment, each checked against the budgets (:func:`attn_core.lab.training.check_run`)."""
    n, seeds = p.steps, range(p.seed, p.seed + p.seeds)
    copy = eng.Task("copy", 64, 16)
    arms: list[Arm] = []
    if p.experiment == "scaling":
        for dk in SCALING_DK:
            for scaled in (True, False):
                g = f"dk{dk}_{'scaled' if scaled else 'unscaled'}"
                spec = eng.LabSpec(n_heads=SCALING_HEADS, n_kv_heads=SCALING_HEADS, head_dim=dk, scaled=scaled)
                arms += [Arm(f"{g}_s{s}", g, spec, copy, _run(p, n, s, probe=True)) for s in seeds]
    elif p.experiment == "kv_heads":
        for kv in divisors(4)[::-1]:
            arms += [Arm(f"kv{kv}_s{s}", f"kv{kv}", eng.LabSpec(n_kv_heads=kv), copy, _run(p, n, s)) for s in seeds]
    elif p.experiment == "convert":
        task, up = eng.Task("induction", 16, 8), max(1, round(UPTRAIN * n))
        arms.append(Arm("mha", "mha", eng.LabSpec(), task, _run(p, n, p.seed, lr=1e-2)))
        for m in eng.METHODS:
            arms.append(Arm(m, m, eng.LabSpec(n_kv_heads=1), task, _run(p, up, p.seed, lr=1e-2), m, 0, n))
        arms.append(Arm("scratch", "scratch", eng.LabSpec(n_kv_heads=1), task, _run(p, n + up, p.seed, lr=1e-2)))
    elif p.experiment == "heads":
        task = eng.Task("induction", 16, 8)
        arms.append(Arm("heads", "heads", eng.LabSpec(), task, _run(p, n, p.seed, lr=1e-2, probe=True)))
    else:
        spec = eng.LabSpec(
            p.lab_layers,
            p.lab_d_model,
            p.lab_heads,
            p.lab_kv_heads,
            p.lab_head_dim,
            p.lab_scale != "none",
            "mup" if p.lab_scale == "mup" else "sqrt",
            p.lab_position,
        )
        task = eng.Task(p.lab_task, p.lab_vocab, p.lab_length)
        arms += [Arm(f"custom_s{s}", "custom", spec, task, _run(p, n, s, p.lab_batch, p.lab_lr, True)) for s in seeds]
    for a in arms:
        eng.check_run(a.spec.validate(), a.task.validate(), a.run.validate().steps, a.run.batch)
    eng.check_flops(sum(eng.train_flops(a.spec, a.task, a.run.steps, a.run.batch) for a in arms), "lab_steps")
    return Experiment(p.experiment, tuple(arms))


# ---------------------------------------------------------------- the run
@dataclass(frozen=True)
class Point:
    """One step of one arm: the engine's :class:`~attn_core.lab.training.Record` less its checkpoint (``maps`` only where
    the experiment draws them), and at the heads experiment's end the head roles."""

    arm: int
    rec: eng.Record
    roles: pd.DataFrame | None = field(default=None, repr=False)


def experiment_steps(exp: Experiment, *, device: str = "cpu") -> Iterator[Point]:
    """Train every arm in turn; a conversion arm starts from its source arm's last checkpoint."""
    ckpts: dict[int, eng.Checkpoint] = {}
    keep_maps = exp.name in ("heads", "custom")
    for i, a in enumerate(exp.arms):
        if a.method:
            gen = eng.convert_and_uptrain(ckpts[a.source], a.spec.n_kv_heads, a.method, a.run.steps, device, a.run)
        else:
            gen = eng.train(a.spec, a.task, device=device, run=a.run)
        for rec in gen:
            roles = None
            if rec.checkpoint is not None:
                ckpts[i] = rec.checkpoint
                if keep_maps:
                    roles = eng.head_roles(eng.load(rec.checkpoint, device), a.task, seed=a.run.seed)
            yield Point(i, replace(rec, checkpoint=None, maps=rec.maps if keep_maps else None), roles)


def curve_frame(points: Sequence[Point], exp: Experiment) -> pd.DataFrame:
    """One row per arm and step: the numbers behind every curve."""
    rows = []
    for pt in points:
        a, r = exp.arms[pt.arm], pt.rec
        rows.append(
            {
                "arm": a.code,
                "group": a.group,
                "seed": a.run.seed,
                "step": r.step + a.offset,
                "loss": r.loss,
                "eval_loss": r.eval_loss,
                "accuracy": r.accuracy,
                "max_weight": r.max_weight,
                "seconds": r.seconds,
            }
        )
    return pd.DataFrame(
        rows, columns=["arm", "group", "seed", "step", "loss", "eval_loss", "accuracy", "max_weight", "seconds"]
    )


def progress(exp: Experiment, points: Sequence[Point], style: figures.Style) -> tuple[float, str]:
    done = steps_done(points)
    arm = exp.arms[points[-1].arm].code if points else exp.arms[0].code
    return min(1.0, done / exp.total_steps), style.t("lab.progress", i=done, n=exp.total_steps, arm=arm)


# ---------------------------------------------------------------- charts
def group_label(code: str, style: figures.Style) -> str:
    if code.startswith("dk"):
        dk, how = code[2:].split("_")
        return style.t(f"lab.g_{how}", dk=dk)
    if code.startswith("kv"):
        return style.count(int(code[2:]), "kv_head")
    return style.t(f"lab.g_{code}")


def loss_view(df: pd.DataFrame, exp: Experiment, style: figures.Style, column: str = "loss") -> View:
    groups = list(dict.fromkeys(a.group for a in exp.arms))
    x_max = max(a.run.steps + a.offset for a in exp.arms)
    fig = lfig.curves_figure(
        df,
        groups,
        [group_label(g, style) for g in groups],
        column,
        x_max,
        style.t(f"lab.title_{column}", exp=style.t(f"opt.experiment.{exp.name}")),
        style,
        mark_of(exp, style),
    )
    return View(f"lab_{exp.name}_{column}", fig, df)


def mark_of(exp: Experiment, style: figures.Style) -> tuple[int, str] | None:
    """The dotted line of the experiment's curves (:func:`mark_step`) and what it marks, said on the chart."""
    step = mark_step(exp)
    return None if step is None else (step, style.t(f"lab.mark_{exp.name}", n=step))


def mark_step(exp: Experiment) -> int | None:
    """The step the experiment's sentence compares at (scaling: 20 or the last; KV heads: the last) or where the
    conversion starts; None for the others."""
    last = max(a.run.steps for a in exp.arms)
    marks = {"scaling": min(20, last), "kv_heads": last, "convert": exp.arms[1].offset if len(exp.arms) > 1 else 0}
    return marks.get(exp.name)


def kv_frame(df: pd.DataFrame, exp: Experiment, at: int) -> pd.DataFrame:
    """Per KV-heads group: cache bytes per token (fp16, :mod:`attn_core.kv.memory`), the mean loss at step ``at`` and
    the first step whose mean loss reaches :data:`TARGET_LOSS` (NaN: not within the run)."""
    rows = []
    for g in dict.fromkeys(a.group for a in exp.arms):
        arm = next(a for a in exp.arms if a.group == g)
        mean = df[df.group == g].groupby("step").loss.mean()
        hit = mean[mean <= TARGET_LOSS]
        n = kv_elements_per_token(arm.spec.n_layers, arm.spec.n_kv_heads, arm.spec.head_dim)
        rows.append(
            {
                "kv_heads": arm.spec.n_kv_heads,
                "bytes_per_token": elements_to_bytes(n, "fp16"),
                "loss_at": float(mean.get(at, math.nan)),
                "steps_to_target": float(hit.index[0]) if len(hit) else math.nan,
            }
        )
    return pd.DataFrame(rows)


def kv_view(df: pd.DataFrame, exp: Experiment, style: figures.Style) -> View:
    at = max(a.run.steps for a in exp.arms)  # the last step: the curves part late
    kf = kv_frame(df, exp, at)
    fig = lfig.tradeoff_figure(kf, at, style)
    return View("lab_kv_tradeoff", fig, kf)


def snapshots(points: Sequence[Point]) -> list[Point]:
    """The points that carry probe maps, in step order (the time-lapse)."""
    return [pt for pt in points if pt.rec.maps is not None]


def heads_view(points: Sequence[Point], frame: int, exp: Experiment, style: figures.Style) -> View:
    """Every head's map of the probe sequence at snapshot ``frame`` (0 or past the end: the last), roles labelled."""
    snaps = snapshots(points)
    pt = snaps[frame - 1] if 0 < frame <= len(snaps) else snaps[-1]
    roles = next((q.roles for q in points if q.roles is not None), None)
    arm = exp.arms[pt.arm]
    tokens = [str(int(t)) for t in eng.probe_sequence(arm.task, arm.run.seed)[0].tolist()]
    labels = [
        [_role_text(roles, layer, h, style) for h in range(arm.spec.n_heads)] for layer in range(arm.spec.n_layers)
    ]
    fig = lfig.heads_figure(pt.rec.maps, tokens, labels, style.t("lab.heads_title", step=pt.rec.step), style)
    mats = pt.rec.maps
    data = pd.DataFrame(
        [
            {"step": pt.rec.step, "layer": la, "head": h, "query": i, "key": j, "weight": float(mats[la, h, i, j])}
            for la in range(mats.shape[0])
            for h in range(mats.shape[1])
            for i in range(mats.shape[2])
            for j in range(i + 1)
        ]
    )
    return View(f"lab_heads_step{pt.rec.step}", fig, data)


def _role_text(roles: pd.DataFrame | None, layer: int, head: int, style: figures.Style) -> str:
    name = style.t("lab.head_name", layer=layer, head=head)
    if roles is None:
        return name
    row = roles[(roles["layer"] == layer) & (roles["head"] == head)].iloc[0]
    if not row.role:
        return name
    return f"{name} · {style.t(f'opt.score.{row.role}')} {row[row.role]:.2f}"


def result_views(points: Sequence[Point], exp: Experiment, frame: int, style: figures.Style) -> list[View]:
    """The charts of a run so far: the loss curves, and the experiment's second chart."""
    df = curve_frame(points, exp)
    out = [loss_view(df, exp, style)]
    if exp.name == "scaling":
        out.append(loss_view(df[df.max_weight.notna()], exp, style, "max_weight"))
    elif exp.name == "kv_heads":
        out.append(kv_view(df, exp, style))
    elif exp.name == "convert":
        out.append(loss_view(df[df.eval_loss.notna()], exp, style, "eval_loss"))
    elif snapshots(points):
        out.append(heads_view(points, frame, exp, style))
    return out


# ---------------------------------------------------------------- sentences
def summary(points: Sequence[Point], exp: Experiment, style: figures.Style) -> list[str]:
    """What the run measured, chosen from its numbers."""
    df = curve_frame(points, exp)
    if df.empty:
        return []
    t = style.t
    if exp.name == "scaling":
        return _scaling_lines(df, style)
    if exp.name == "kv_heads":
        at = max(a.run.steps for a in exp.arms)  # the last step: the curves part late
        kf = kv_frame(df, exp, at).dropna(subset=["loss_at"])
        if kf.empty:
            return []
        best, worst = kf.loc[kf.loss_at.idxmin()], kf.loc[kf.loss_at.idxmax()]
        return [
            t(
                "lab.kv_line",
                at=at,
                best=style.count(int(best.kv_heads), "kv_head"),
                bl=f"{best.loss_at:.2f}",
                bb=format_bytes(int(best.bytes_per_token)),
                worst=style.count(int(worst.kv_heads), "kv_head"),
                wl=f"{worst.loss_at:.2f}",
                wb=format_bytes(int(worst.bytes_per_token)),
                target=f"{TARGET_LOSS:g}",
            )
        ]
    if exp.name == "convert":
        return _convert_lines(df, exp, style)
    step = int(df.step.max())
    ev = df[df.accuracy.notna()]
    at = int(ev.step.max())
    out = [
        t(
            "lab.final_line",
            loss=f"{df[df.step == step].loss.mean():.3f}",
            step=step,
            at=at,
            acc=f"{ev[ev.step == at].accuracy.mean():.0%}",
        )
    ]
    roles = next((q.roles for q in points if q.roles is not None), None)
    if roles is not None:
        found = roles[roles.role != ""]
        heads = ", ".join(
            f"{t('lab.head_name', layer=int(r.layer), head=int(r['head']))} {t(f'opt.score.{r.role}')} {r[r.role]:.2f}"
            for _, r in found.iterrows()
        )
        th = f"{eng.ROLE_THRESHOLD:g}"
        out.append(t("lab.roles_found", heads=heads, th=th) if len(found) else t("lab.roles_none", th=th))
    return out


def _scaling_lines(df: pd.DataFrame, style: figures.Style) -> list[str]:
    at = min(20, int(df.step.max()))
    out = []
    for dk in SCALING_DK:
        s = df[(df.group == f"dk{dk}_scaled") & (df.step == at)].loss.mean()
        u = df[(df.group == f"dk{dk}_unscaled") & (df.step == at)].loss.mean()
        if math.isnan(s) or math.isnan(u):
            continue
        key = (
            "lab.scaling_slower"
            if u > s + SCALING_CLEAR
            else "lab.scaling_faster"
            if u < s - SCALING_CLEAR
            else "lab.scaling_same"
        )
        out.append(style.t(key, dk=dk, at=at, s=f"{s:.2f}", u=f"{u:.2f}", f=f"1/√{dk} = {1 / math.sqrt(dk):.3g}"))
    return out


def _convert_lines(df: pd.DataFrame, exp: Experiment, style: figures.Style) -> list[str]:
    starts = {m: df[(df.group == m) & (df.step == exp.arms[1].offset)].eval_loss for m in eng.METHODS}
    ends = {m: df[df.group == m].eval_loss.dropna() for m in eng.METHODS}
    if any(s.empty for s in starts.values()) or any(e.empty for e in ends.values()):
        return []
    first = sorted(eng.METHODS, key=lambda m: float(starts[m].iloc[0]))
    after = sorted(eng.METHODS, key=lambda m: float(ends[m].iloc[-1]))
    t = style.t
    order = " < ".join(f"{t(f'lab.g_{m}')} {float(starts[m].iloc[0]):.2f}" for m in first)
    order_after = " < ".join(f"{t(f'lab.g_{m}')} {float(ends[m].iloc[-1]):.2f}" for m in after)
    paper = tuple(after) == PAPER_ORDER
    return [
        t("lab.convert_start", order=order),
        t("lab.convert_after" if paper else "lab.convert_not_paper", order=order_after),
    ]


def intro(p: Params, exp: Experiment, style: figures.Style) -> str:
    a = exp.arms[0]
    return style.t(
        f"lab.intro_{exp.name}",
        n=p.steps,
        seeds=p.seeds,
        arms=len(exp.arms),
        task=style.t(f"opt.lab_task.{a.task.name}"),
        vocab=a.task.vocab,
        length=a.task.length,
        L=a.spec.n_layers,
        d=a.spec.d_model,
        h=a.spec.n_heads,
        dk=a.spec.head_dim,
        up=exp.arms[1].run.steps if len(exp.arms) > 1 else 0,
        batch=a.run.batch,
        lr=f"{a.run.lr:g}",
    )


# ---------------------------------------------------------------- the command line's charts
def views(p: Params, style: figures.Style, which: str | Sequence[str] | None = None, device: str = "cpu") -> list[View]:
    """The charts of the experiments ``which`` (default: ``p`` 's), each trained to the end."""
    out: list[View] = []
    for name in view_list(which, VIEW_NAMES, [p.experiment]):
        q = with_values(p, experiment=name)
        exp = experiment(q)
        out.extend(result_views(list(experiment_steps(exp, device=device)), exp, q.lab_frame, style))
    return out


#: The training lab in the browser test, the fuzz, the colour checks and the benchmarks (PageChecks).
CHECKS = PageChecks(
    slider="lab_steps",
    chart="lab_lab_kv_heads_loss",
    query="experiment=kv_heads",  # its dotted line marks the last step, so the steps slider moves it
    scenarios=(Scenario("defaults", {}, "lab_steps", (35, 30)),),  # idle (no run): the empty axes redrawn
    cli="--view heads --lab-steps 3",
    extremes=(
        {},
        {
            "experiment": "custom",
            "lab_task": "recall",
            "lab_vocab": "8",
            "lab_length": "32",
            "lab_layers": "1",
            "lab_d_model": "16",
            "lab_heads": "1",
            "lab_head_dim": "2",
            "lab_steps": "5",
            "lab_seeds": "5",
        },
        {
            "experiment": "custom",
            "lab_layers": "4",
            "lab_d_model": "256",
            "lab_heads": "8",
            "lab_kv_heads": "1",
            "lab_head_dim": "256",
            "lab_batch": "128",
            "lab_steps": "1000",
            "lab_position": "learned",
            "lab_scale": "mup",
        },
    ),
    fuzz_sets=25,
)
