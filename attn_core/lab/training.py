"""The training lab: tiny causal transformers trained on synthetic tasks, in the session, step by step.

Tasks (:data:`TASKS`) are seeded generators of ``(inputs, targets, loss_mask)`` batches, each ``[B, T]``
(the mask marks the targets the loss and the accuracy count). The model (:class:`LabModel`) is built from
:class:`~attn_core.attention.gqa.GroupedQueryAttention`, the layer the other pages explain: per block a pre-norm
attention (``project`` then ``attend`` with the factor of :attr:`LabSpec.factor`, RoPE on q and k or learned
positions) and a pre-norm MLP. :func:`train` is a generator of :class:`Record` s, one per optimiser step,
stoppable between steps; with the same seed it gives bit-identical losses on the CPU (the weights are drawn
under a forked torch RNG and the data from ``torch.Generator`` s, so no global state is left changed).

:func:`convert_and_uptrain` turns a trained MHA checkpoint into GQA with :func:`attn_core.kv.convert.mha_to_gqa`
(the GQA paper's uptraining, Ainslie et al. 2023, arXiv 2305.13245, section 2.1), and :func:`head_roles`
scores every head with the pretrained-models page's definitions (:func:`attn_core.pretrained.models.role_scores`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd
import torch
from torch import nn

from attn_core.attention.gqa import GroupedQueryAttention
from attn_core.kv.convert import METHODS, mha_to_gqa
from attn_core.mla.attention import apply_rope
from attn_core.pretrained.models import SCORES, role_scores
from attn_core.runtime.config import ConfigError, check_int, check_kv_heads, unknown_option
from attn_core.runtime.guard import check_budget

TASKS = ("copy", "induction", "recall", "sorting")
POSITIONS = ("rope", "learned")
SCALE_RULES = ("sqrt", "mup")  # 1/√d_k (Vaswani et al. 2017, section 3.2.1) or 1/d_k (µP, Yang et al. 2022, Def. 4.1)
ROPE_THETA = 10_000.0
SEP = 0  # the separator token of copy and sorting; content tokens are 1 .. vocab-1
EVAL_SEED = 1_000_003  # the held-out batches' generator is seeded with seed + this (never a training batch)
UPTRAIN_SEED = 2_000_003  # the uptraining data after a conversion: seed + this (the same for every method)
MAX_TRAIN_FLOPS = 6e12  # a run the lab accepts: about a minute on two laptop cores (see bench/)
CPU_FLOPS = 2e10  # the rough training speed (FLOP/s) a time estimate assumes on a CPU
ROLE_THRESHOLD = 0.4  # a head whose previous-token or induction score reaches this is labelled with that role
MAX_LAYERS, MAX_D_MODEL, MAX_HEADS, MAX_HEAD_DIM = 6, 512, 16, 512
MAX_VOCAB, MAX_LENGTH, MAX_STEPS, MAX_BATCH = 512, 64, 5000, 256


# ---------------------------------------------------------------- tasks
@dataclass(frozen=True)
class Task:
    """A synthetic task: ``name`` (:data:`TASKS`), ``vocab`` tokens, ``length`` its size parameter.

    copy: ``x_1..x_n SEP x_1..x_n``; induction: filler then ``m`` random tokens twice (Olsson et al. 2022), ``m``
    from ``n/2`` to ``n`` per row, the second copy's tokens after its first predicted; recall: ``k_1 v_1 .. k_n v_n q`` with q one of the keys, its value
    predicted (keys from the lower half of the vocabulary, values from the upper); sorting: ``x_1..x_n SEP
    sorted(x)``. ``n = length``; the model reads the sequence but its last token and predicts the next ones.
    """

    name: str = "induction"
    vocab: int = 64
    length: int = 16

    def validate(self) -> Task:
        if self.name not in TASKS:
            raise unknown_option("task", self.name, TASKS)
        check_int("vocab", self.vocab, 8, MAX_VOCAB)
        check_int("length", self.length, 2, MAX_LENGTH)
        if self.name == "recall" and self.length > self.vocab // 2 - 1:
            n, v = self.length, self.vocab
            raise ConfigError(
                f"recall needs vocab ≥ 2·length + 2 (vocab {v}, length {n})",
                "vocab",
                "lab_recall_vocab",
                vocab=v,
                length=n,
                need=2 * n + 2,
            )
        return self

    @property
    def seq_len(self) -> int:
        """Tokens the model reads (the sequence less its last token)."""
        n = self.length
        return {"copy": 2 * n, "induction": 2 * n - 1, "recall": 2 * n + 1, "sorting": 2 * n}[self.name]


def as_task(task: str | Task) -> Task:
    return (Task(task) if isinstance(task, str) else task).validate()


def _sequences(task: Task, batch: int, gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """Full sequences ``[B, T+1]`` and which of their positions are predicted ``[B, T+1]`` (bool)."""
    n, v = task.length, task.vocab
    sep = torch.full((batch, 1), SEP, dtype=torch.long)
    if task.name == "induction":
        return _induction(task, batch, gen)
    if task.name in ("copy", "sorting"):
        x = torch.randint(1, v, (batch, n), generator=gen)
        tail = x if task.name == "copy" else x.sort(dim=1).values
        seq = torch.cat([x, sep, tail], dim=1)
        start = n + 1
    else:
        half = v // 2
        keys = torch.stack([torch.randperm(half - 1, generator=gen)[:n] + 1 for _ in range(batch)])  # distinct keys
        values = torch.randint(half, v, (batch, n), generator=gen)
        pick = torch.randint(0, n, (batch, 1), generator=gen)
        seq = torch.cat(
            [torch.stack([keys, values], dim=2).flatten(1), keys.gather(1, pick), values.gather(1, pick)], 1
        )
        start = seq.shape[1] - 1
    predicted = torch.zeros_like(seq, dtype=torch.bool)
    predicted[:, start:] = True
    return seq, predicted


def _induction(task: Task, batch: int, gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """Rows of ``2n`` tokens: random filler, then ``m`` random tokens twice, ``m`` drawn per row from ``n/2 .. n``.

    The period varies from row to row, so the second copy can only be predicted by looking up the
    earlier occurrence of the current token (an induction head), not by a fixed positional offset.
    """
    n, v = task.length, task.vocab
    seq = torch.randint(1, v, (batch, 2 * n), generator=gen)
    periods = torch.randint(max(2, n // 2), n + 1, (batch,), generator=gen)
    predicted = torch.zeros_like(seq, dtype=torch.bool)
    for row, m in enumerate(periods.tolist()):
        first = 2 * n - 2 * m
        seq[row, first + m :] = seq[row, first : first + m]
        predicted[row, first + m + 1 :] = True
    return seq, predicted


def batches(task: str | Task, batch: int, seed: int) -> Iterator[tuple[torch.Tensor, torch.Tensor, torch.Tensor]]:
    """Endless seeded batches ``(inputs, targets, loss_mask)``, each ``[batch, T]`` (``T`` = :attr:`Task.seq_len`).

    ``targets`` are the inputs shifted by one; ``loss_mask`` is True where the target is part of the answer.
    """
    task = as_task(task)
    gen = torch.Generator().manual_seed(int(seed))
    while True:
        seq, predicted = _sequences(task, batch, gen)
        yield seq[:, :-1], seq[:, 1:], predicted[:, 1:]


# ---------------------------------------------------------------- the model
@dataclass(frozen=True)
class LabSpec:
    """A lab model: ``n_layers`` blocks of ``n_heads`` query heads sharing ``n_kv_heads`` K/V heads of ``head_dim``.

    ``scaled``: the attention scores are multiplied by :attr:`factor` (1/√d_k, or 1/d_k with
    ``scale_rule="mup"``) or not at all. ``position``: RoPE on q and k, or learned absolute positions.
    """

    n_layers: int = 2
    d_model: int = 64
    n_heads: int = 4
    n_kv_heads: int = 4
    head_dim: int = 16
    scaled: bool = True
    scale_rule: str = "sqrt"
    position: str = "rope"

    def validate(self) -> LabSpec:
        check_int("n_layers", self.n_layers, 1, MAX_LAYERS)
        check_int("d_model", self.d_model, 8, MAX_D_MODEL)
        check_int("n_heads", self.n_heads, 1, MAX_HEADS)
        check_int("n_kv_heads", self.n_kv_heads, 1, MAX_HEADS)
        check_int("head_dim", self.head_dim, 2, MAX_HEAD_DIM)
        check_kv_heads(self.n_heads, self.n_kv_heads)
        if self.scale_rule not in SCALE_RULES:
            raise unknown_option("scale_rule", self.scale_rule, SCALE_RULES)
        if self.position not in POSITIONS:
            raise unknown_option("position", self.position, POSITIONS)
        if self.position == "rope" and self.head_dim % 2:
            raise ConfigError(
                f"RoPE rotates pairs: head_dim ({self.head_dim}) must be even",
                "head_dim",
                "lab_rope_odd",
                d=self.head_dim,
            )
        return self

    @property
    def factor(self) -> float:
        """The factor applied to q·k: 1/√d_k, 1/d_k (µP) or 1 (unscaled)."""
        if not self.scaled:
            return 1.0
        return 1.0 / self.head_dim if self.scale_rule == "mup" else 1.0 / math.sqrt(self.head_dim)

    def n_params(self, vocab: int, seq_len: int) -> int:
        d, a = self.d_model, (2 * self.n_heads + 2 * self.n_kv_heads) * self.head_dim * self.d_model
        per_block = a + 8 * d * d + 5 * d + 4 * d  # attention, MLP (4d hidden, biases), two LayerNorms
        pos = seq_len * d if self.position == "learned" else 0
        return self.n_layers * per_block + 2 * vocab * d + pos + 2 * d


class Block(nn.Module):
    """Pre-norm attention (:class:`GroupedQueryAttention`) and pre-norm MLP, each with a residual."""

    def __init__(self, spec: LabSpec):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(spec.d_model), nn.LayerNorm(spec.d_model)
        self.attn = GroupedQueryAttention(spec.d_model, spec.n_heads, spec.n_kv_heads, spec.head_dim)
        self.mlp = nn.Sequential(
            nn.Linear(spec.d_model, 4 * spec.d_model), nn.GELU(), nn.Linear(4 * spec.d_model, spec.d_model)
        )
        self.rope, self.factor = spec.position == "rope", spec.factor

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``x`` ``[B, T, d]`` → the block's output ``[B, T, d]`` and the attention weights ``[B, H, T, T]``."""
        q, k, v = self.attn.project(self.ln1(x))  # (B, H, T, D), (B, H_kv, T, D)
        if self.rope:
            pos = torch.arange(x.shape[1], device=x.device)
            q = apply_rope(q.transpose(1, 2), pos, ROPE_THETA).transpose(1, 2)  # rotate along T
            k = apply_rope(k.transpose(1, 2), pos, ROPE_THETA).transpose(1, 2)
        out, res = self.attn.attend(q, k, v, causal=True, scale=self.factor)
        x = x + out
        return x + self.mlp(self.ln2(x)), res.weights


class LabModel(nn.Module):
    """Token embedding (plus learned positions), :class:`Block` s, a final LayerNorm and the unembedding."""

    def __init__(self, spec: LabSpec, vocab: int, seq_len: int):
        super().__init__()
        self.spec = spec
        self.embed = nn.Embedding(vocab, spec.d_model)
        self.pos = nn.Embedding(seq_len, spec.d_model) if spec.position == "learned" else None
        self.blocks = nn.ModuleList(Block(spec) for _ in range(spec.n_layers))
        self.ln_f = nn.LayerNorm(spec.d_model)
        self.unembed = nn.Linear(spec.d_model, vocab)

    def forward(self, ids: torch.Tensor) -> tuple[torch.Tensor, list[torch.Tensor]]:
        """Logits ``[B, T, vocab]`` of ``ids`` ``[B, T]`` and every layer's weights ``[B, H, T, T]``."""
        x = self.embed(ids)
        if self.pos is not None:
            x = x + self.pos(torch.arange(ids.shape[1], device=ids.device))
        maps = []
        for block in self.blocks:
            x, w = block(x)
            maps.append(w)
        return self.unembed(self.ln_f(x)), maps


def build_model(spec: LabSpec, task: Task, seed: int) -> LabModel:
    """The model's initial weights, drawn from ``seed`` under a forked RNG (the global one is left as it was)."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(seed))
        return LabModel(spec, task.vocab, task.seq_len)


# ---------------------------------------------------------------- budgets
def train_flops(spec: LabSpec, task: Task, steps: int, batch: int) -> float:
    """Training FLOPs: 6 · params · tokens plus the attention maps (3 × forward 4·B·H·T²·d_k per layer)."""
    t = task.seq_len
    dense = 6 * spec.n_params(task.vocab, t) * batch * t
    attn = 3 * 4 * batch * spec.n_heads * t * t * spec.head_dim * spec.n_layers
    return float(steps) * (dense + attn)


def train_bytes(spec: LabSpec, task: Task, batch: int) -> int:
    """Peak memory: weights, gradients and Adam's two moments (4 float32 copies) and the kept activations."""
    t, d = task.seq_len, spec.d_model
    acts = spec.n_layers * batch * t * (16 * d + 3 * spec.n_heads * t + 4 * spec.n_heads * spec.head_dim)
    return 4 * (4 * spec.n_params(task.vocab, t) + acts + 3 * batch * t * task.vocab)


def check_run(spec: LabSpec, task: Task, steps: int, batch: int) -> None:
    """Refuse a run over the memory budget (``err.budget``) or over :data:`MAX_TRAIN_FLOPS` (``err.lab_time``)."""
    check_budget(
        train_bytes(spec, task, batch), f"training with batch {batch}", "use a smaller batch or model", "batch"
    )
    check_flops(train_flops(spec, task, steps, batch), "steps")


def check_flops(flops: float, field: str) -> None:
    """Refuse ``flops`` of training over :data:`MAX_TRAIN_FLOPS` (``err.lab_time``, naming ``field``)."""
    if flops > MAX_TRAIN_FLOPS:
        s = flops / CPU_FLOPS
        raise ConfigError(
            f"this run needs about {flops:.2g} FLOPs (about {s:.0f} s on a CPU), more than the lab's "
            f"{MAX_TRAIN_FLOPS:.2g}; use fewer steps, a smaller batch or a smaller model",
            field,
            "lab_time",
            flops=f"{flops:.2g}",
            seconds=f"{s:.0f}",
            limit=f"{MAX_TRAIN_FLOPS:.2g}",
        )


# ---------------------------------------------------------------- training
@dataclass(frozen=True)
class Checkpoint:
    """A trained model's weights (CPU tensors) with what it was: kept by the caller (the session), never here."""

    spec: LabSpec
    task: Task
    state: dict = field(repr=False)
    step: int
    seed: int


@dataclass(frozen=True)
class Record:
    """One optimiser step of :func:`train`.

    ``loss``: the training batch's masked cross-entropy (nats) before this step's update; ``eval_loss`` and
    ``accuracy`` (argmax = target over the masked positions) on the held-out batches, measured every
    ``eval_every`` steps and at the last (NaN between); ``seconds`` since the run began; ``maps`` the attention
    weights ``[L, H, T, T]`` of the probe sequence when probed (every ``probe_every`` steps and at the last);
    ``max_weight`` the probe's mean largest attention weight per row; ``checkpoint`` on the last step only.
    """

    step: int
    loss: float
    eval_loss: float
    accuracy: float
    seconds: float
    maps: np.ndarray | None = field(default=None, repr=False)
    max_weight: float = math.nan
    checkpoint: Checkpoint | None = field(default=None, repr=False)


@dataclass(frozen=True)
class RunSpec:
    """How a run trains: ``steps`` Adam steps of ``batch`` sequences at learning rate ``lr``; the held-out
    accuracy every ``eval_every`` steps (0: only at the end) on ``eval_batches`` batches; probe maps every
    ``probe_every`` steps (0: only at the end)."""

    steps: int = 200
    batch: int = 64
    lr: float = 3e-3
    seed: int = 0
    eval_every: int = 10
    eval_batches: int = 2
    probe_every: int = 0

    def validate(self) -> RunSpec:
        check_int("steps", self.steps, 1, MAX_STEPS)
        check_int("batch", self.batch, 1, MAX_BATCH)
        check_int("seed", self.seed, 0, 2**31 - 1)
        check_int("eval_every", self.eval_every, 0, MAX_STEPS)
        check_int("eval_batches", self.eval_batches, 1, 16)
        check_int("probe_every", self.probe_every, 0, MAX_STEPS)
        if not (isinstance(self.lr, (int, float)) and math.isfinite(self.lr) and 0 < self.lr <= 1):
            raise ConfigError(f"lr must be a number in (0, 1], got {self.lr!r}", "lr", "lab_lr", value=repr(self.lr))
        return self


def masked_loss(logits: torch.Tensor, targets: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy over the masked positions (``logits`` ``[B, T, V]``, ``targets``/``mask`` ``[B, T]``)."""
    return nn.functional.cross_entropy(logits[mask], targets[mask])


def probe_sequence(task: Task, seed: int) -> torch.Tensor:
    """The one sequence ``[1, T]`` whose attention maps the lab shows (the held-out stream's first)."""
    return next(batches(task, 1, seed + EVAL_SEED + 1))[0]


@torch.no_grad()
def evaluate(model: LabModel, held_out: list, device: torch.device) -> tuple[float, float]:
    """(mean masked loss, accuracy) of ``model`` on the held-out batches."""
    losses, hits, total = [], 0, 0
    for x, y, m in held_out:
        x, y, m = x.to(device), y.to(device), m.to(device)
        logits, _ = model(x)
        losses.append(float(masked_loss(logits, y, m)))
        hits += int((logits.argmax(-1)[m] == y[m]).sum())
        total += int(m.sum())
    return float(np.mean(losses)), hits / max(total, 1)


@torch.no_grad()
def probe(model: LabModel, ids: torch.Tensor) -> tuple[np.ndarray, float]:
    """The probe's weights ``[L, H, T, T]`` (CPU float32) and the mean of each row's largest weight."""
    _, maps = model(ids)
    w = torch.stack([m[0] for m in maps]).float().cpu()
    return w.numpy(), float(w.amax(-1).mean())


@dataclass
class _Loop:
    """One run's moving parts (the model, its optimiser, its data), all local to one generator."""

    model: LabModel
    task: Task
    run: RunSpec
    device: torch.device
    data_seed: int


def _steps(loop: _Loop) -> Iterator[Record]:
    """The optimiser steps of ``loop``: one :class:`Record` per step; the last carries the checkpoint."""
    model, run, dev = loop.model, loop.run, loop.device
    opt = torch.optim.AdamW(model.parameters(), lr=run.lr, weight_decay=0.0, foreach=False)
    data = batches(loop.task, run.batch, loop.data_seed)
    held = held_out(loop)
    ids = probe_sequence(loop.task, run.seed).to(dev)
    start = time.perf_counter()
    for step in range(1, run.steps + 1):
        x, y, m = (t.to(dev) for t in next(data))
        model.train()
        logits, _ = model(x)
        loss = masked_loss(logits, y, m)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        last = step == run.steps
        model.eval()
        ev, acc = (math.nan, math.nan)
        if last or (run.eval_every and step % run.eval_every == 0):
            ev, acc = evaluate(model, held, dev)
        maps, top = None, math.nan
        if last or (run.probe_every and step % run.probe_every == 0):
            maps, top = probe(model, ids)
        ckpt = (
            Checkpoint(
                model.spec,
                loop.task,
                {k: v.detach().cpu().clone() for k, v in model.state_dict().items()},
                step,
                run.seed,
            )
            if last
            else None
        )
        yield Record(step, float(loss.detach()), ev, acc, time.perf_counter() - start, maps, top, ckpt)


def held_out(loop: _Loop) -> list:
    """The run's held-out batches (seed + :data:`EVAL_SEED`: never a training batch)."""
    gen = batches(loop.task, loop.run.batch, loop.run.seed + EVAL_SEED)
    return [next(gen) for _ in range(loop.run.eval_batches)]


def start_record(loop: _Loop) -> Record:
    """Step 0: the held-out loss and accuracy of the model before any update (and its probe maps)."""
    held = held_out(loop)
    loop.model.eval()
    ev, acc = evaluate(loop.model, held, loop.device)
    maps, top = probe(loop.model, probe_sequence(loop.task, loop.run.seed).to(loop.device))
    return Record(0, ev, ev, acc, 0.0, maps, top)


def train(
    spec: LabSpec,
    task: str | Task = "induction",
    steps: int = 200,
    batch: int = 64,
    lr: float = 3e-3,
    seed: int = 0,
    device: str | torch.device = "cpu",
    run: RunSpec | None = None,
) -> Iterator[Record]:
    """Train a new :class:`LabModel` from ``seed``: a generator of :class:`Record` s, step 0 (before any update:
    its loss is the held-out loss) then one per step, stoppable between steps (close the generator).

    ``run`` (a :class:`RunSpec`) overrides ``steps``, ``batch``, ``lr`` and ``seed`` and sets the evaluation and
    probe cadence. Refused with :class:`ConfigError` before anything is built when over the budgets
    (:func:`check_run`). On the CPU two runs with one seed give bit-identical records (but ``seconds``).
    """
    spec, task = spec.validate(), as_task(task)
    run = (run or RunSpec(steps, batch, lr, seed)).validate()
    check_run(spec, task, run.steps, run.batch)
    dev = torch.device(device)
    loop = _Loop(build_model(spec, task, run.seed).to(dev), task, run, dev, run.seed)
    yield start_record(loop)
    yield from _steps(loop)


def load(ckpt: Checkpoint, device: str | torch.device = "cpu") -> LabModel:
    """A :class:`LabModel` holding ``ckpt`` 's weights."""
    model = LabModel(ckpt.spec, ckpt.task.vocab, ckpt.task.seq_len)
    model.load_state_dict(ckpt.state)
    return model.to(torch.device(device)).eval()


def convert(ckpt: Checkpoint, n_kv_heads: int, method: str = "mean", seed: int = 0) -> LabModel:
    """The MHA checkpoint as a GQA model: every block's attention through :func:`attn_core.kv.convert.mha_to_gqa`
    (K/V heads of a group pooled by ``method``), everything else copied."""
    mha = load(ckpt)
    if method not in METHODS:
        raise unknown_option("method", method, METHODS)
    spec = replace(ckpt.spec, n_kv_heads=check_int("n_kv_heads", n_kv_heads, 1, ckpt.spec.n_heads)).validate()
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)  # every weight is overwritten below
        gqa = LabModel(spec, ckpt.task.vocab, ckpt.task.seq_len)
    state = {k: v for k, v in ckpt.state.items() if ".attn." not in k}
    gqa.load_state_dict(state, strict=False)
    for i, (src, dst) in enumerate(zip(mha.blocks, gqa.blocks, strict=True)):
        dst.attn.load_state_dict(mha_to_gqa(src.attn, n_kv_heads, method, seed=seed + i).state_dict())
    return gqa


def convert_and_uptrain(
    mha_state: Checkpoint,
    n_kv_heads: int,
    method: str = "mean",
    steps: int = 10,
    device: str | torch.device = "cpu",
    run: RunSpec | None = None,
) -> Iterator[Record]:
    """Convert ``mha_state`` (:func:`convert`) and train on: records from step 0 (the held-out loss right after the
    conversion) to ``steps``. Every method reads the same uptraining data (seed + :data:`UPTRAIN_SEED`) and is
    measured on the checkpoint's held-out batches; ``run`` sets lr, batch and cadence (its seed is the checkpoint's).
    """
    run = replace(run or RunSpec(), steps=steps, seed=mha_state.seed).validate()
    model = convert(mha_state, n_kv_heads, method, seed=mha_state.seed)
    check_run(model.spec, mha_state.task, run.steps, run.batch)
    dev = torch.device(device)
    loop = _Loop(model.to(dev), mha_state.task, run, dev, run.seed + UPTRAIN_SEED)
    yield start_record(loop)
    yield from _steps(loop)


# ---------------------------------------------------------------- head roles
ROLE_SEQ_LEN, ROLE_SEQS = 12, 8


@torch.no_grad()
def head_roles(model: LabModel, task: str | Task, seed: int = 0) -> pd.DataFrame:
    """Every head's role scores on repeated random tokens (:data:`ROLE_SEQS` sequences of :data:`ROLE_SEQ_LEN`
    tokens twice, from the task's vocabulary), with the pretrained-models page's definitions
    (:func:`attn_core.pretrained.models.role_scores`). Columns ``layer, head, kv_head``, :data:`SCORES` and ``role``
    (``previous_token``, ``induction`` or ``""``: the larger of the two when it reaches :data:`ROLE_THRESHOLD`).
    """
    task = as_task(task)
    n = min(ROLE_SEQ_LEN, task.seq_len // 2)
    x = torch.randint(1, task.vocab, (ROLE_SEQS, n), generator=torch.Generator().manual_seed(int(seed)))
    ids = torch.cat([x, x], dim=1).to(next(model.parameters()).device)
    model.eval()
    _, maps = model(ids)
    spec, rows = model.spec, []
    for layer, w in enumerate(maps):
        scores = role_scores(w.float().cpu(), n, 0, causal=True)
        for h in range(spec.n_heads):
            row = {
                "layer": layer,
                "head": h,
                "kv_head": h // (spec.n_heads // spec.n_kv_heads),
                **{s: float(scores[s][h]) for s in SCORES},
            }
            best = max(("previous_token", "induction"), key=lambda s: row[s])
            row["role"] = best if row[best] >= ROLE_THRESHOLD else ""
            rows.append(row)
    df = pd.DataFrame(rows)
    df.attrs.update(seq_len=n, n_seqs=ROLE_SEQS, seed=seed)
    return df
