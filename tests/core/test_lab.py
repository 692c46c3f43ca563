"""The training lab's engine: the tasks' data, the model's attention is the app's layer, training lowers the loss,
one seed gives one run, 1/√d_k matters at d_k 256, conversions keep what they should, budgets refuse."""

from __future__ import annotations

import dataclasses
import math

import pytest
import torch

from attn_core.kv.convert import mha_to_gqa
from attn_core.lab import training as lab
from attn_core.pretrained.models import role_scores
from attn_core.runtime.config import ConfigError

SMALL = lab.LabSpec(n_layers=1, d_model=32, n_heads=4, n_kv_heads=4, head_dim=8)


def run(spec=SMALL, task="sorting", steps=8, batch=16, seed=0, **how):
    return list(lab.train(spec, task, run=lab.RunSpec(steps, batch, how.pop("lr", 3e-3), seed, **how)))


# ---------------------------------------------------------------- tasks
def test_tasks_hold_what_they_say():
    x, y, m = next(lab.batches(lab.Task("sorting", 16, 5), 4, 0))
    assert x.shape == y.shape == m.shape == (4, 10)
    assert torch.equal(x[:, 1:], y[:, :-1])  # targets are the inputs shifted by one
    full = torch.cat([x, y[:, -1:]], 1)
    assert torch.equal(full[:, 6:], full[:, :5].sort(1).values) and (full[:, 5] == lab.SEP).all()
    assert m.sum(1).tolist() == [5] * 4 and m[:, 5:].all()
    x, y, m = next(lab.batches(lab.Task("copy", 16, 5), 4, 0))
    assert torch.equal(torch.cat([x, y[:, -1:]], 1)[:, 6:], x[:, :5])
    x, y, m = next(lab.batches(lab.Task("recall", 32, 6), 8, 0))
    full = torch.cat([x, y[:, -1:]], 1)
    keys, values, query, answer = full[:, 0:12:2], full[:, 1:12:2], full[:, 12], full[:, 13]
    assert (keys < 16).all() and (values >= 16).all() and m.sum().item() == 8
    for r in range(8):
        assert answer[r] == values[r][keys[r] == query[r]].item()
    x, y, m = next(lab.batches(lab.Task("induction", 32, 8), 16, 0))
    full = torch.cat([x, y[:, -1:]], 1)
    periods = set()
    for r in range(16):
        start = int(m[r].float().argmax())  # the second copy starts here (its first token is not predicted)
        period = 16 - start
        assert torch.equal(full[r, start:], full[r, start - period : start]), r
        assert m[r, start:].all() and not m[r, :start].any()
        periods.add(period)
    assert len(periods) > 1  # the period varies: no fixed positional offset solves the task


def test_tasks_are_seeded_and_refuse_bad_shapes():
    a, b = next(lab.batches("induction", 4, 3)), next(lab.batches("induction", 4, 3))
    assert all(torch.equal(u, v) for u, v in zip(a, b, strict=True))
    assert not torch.equal(a[0], next(lab.batches("induction", 4, 4))[0])
    with pytest.raises(ConfigError) as err:
        lab.as_task(lab.Task("recall", 16, 8))
    assert err.value.key == "lab_recall_vocab"
    with pytest.raises(ConfigError) as err:
        lab.as_task("parity")
    assert err.value.key == "unknown_option"


# ---------------------------------------------------------------- the model
def test_block_attention_is_the_apps_layer():
    """Each block's weights are GroupedQueryAttention's for the ln1 input (learned positions: no rotation)."""
    spec = lab.LabSpec(n_layers=1, d_model=32, n_heads=4, n_kv_heads=2, head_dim=8, position="learned")
    model = lab.build_model(spec, lab.Task("copy", 16, 4), 0)
    x = torch.randn(2, 9, 32, generator=torch.Generator().manual_seed(1))
    block = model.blocks[0]
    _, w = block(x)
    ref = block.attn(block.ln1(x), causal=True, scale=1 / math.sqrt(8)).weights
    torch.testing.assert_close(w, ref, rtol=1e-5, atol=1e-6)
    assert lab.LabSpec(head_dim=64, scaled=False).factor == 1.0
    assert lab.LabSpec(head_dim=64, scale_rule="mup").factor == 1 / 64


def test_training_leaves_the_global_rng_alone():
    state = torch.random.get_rng_state()
    run(steps=2)
    assert torch.equal(state, torch.random.get_rng_state())


# ---------------------------------------------------------------- training
@pytest.mark.parametrize("task", [lab.Task(n, 16, 6) for n in lab.TASKS], ids=lambda t: t.name)
def test_a_few_steps_lower_the_loss_on_every_task(task):
    recs = run(task=task, steps=25, batch=32, lr=1e-2, eval_every=0)
    assert recs[0].step == 0 and recs[-1].step == 25
    assert recs[-1].eval_loss < recs[0].eval_loss - 0.15, (recs[0].eval_loss, recs[-1].eval_loss)


def test_one_seed_one_run():
    a, b = run(steps=6, probe_every=3), run(steps=6, probe_every=3)
    assert [r.loss for r in a] == [r.loss for r in b]
    assert [r.accuracy for r in a if not math.isnan(r.accuracy)] == [
        r.accuracy for r in b if not math.isnan(r.accuracy)
    ]
    assert all((r.maps is None) == (s.maps is None) for r, s in zip(a, b, strict=True))
    assert all((r.maps == s.maps).all() for r, s in zip(a, b, strict=True) if r.maps is not None)
    assert [r.loss for r in run(steps=6, seed=1)] != [r.loss for r in a]
    assert a[-1].checkpoint is not None and all(r.checkpoint is None for r in a[:-1])
    assert [r.step for r in a if r.maps is not None] == [0, 3, 6]


def test_unscaled_attention_trains_slower_at_dk_256():
    """d_k 256 (d_model 64, one head to keep CI short; the preset's 4 heads show the same), the copy task: the loss
    after 20 steps. Measured 3.75 scaled against 4.14 unscaled with both the AVX2 and the default kernels."""
    spec = lab.LabSpec(n_heads=1, n_kv_heads=1, head_dim=256)
    losses = {}
    for scaled in (True, False):
        recs = list(
            lab.train(
                dataclasses.replace(spec, scaled=scaled),
                lab.Task("copy", 64, 16),
                run=lab.RunSpec(20, 32, 3e-3, 0, eval_every=0),
            )
        )
        losses[scaled] = recs[-1].loss
    assert losses[False] > losses[True] + 0.2, losses


# ---------------------------------------------------------------- conversion
def test_conversion_keeps_everything_but_the_pooled_kv():
    task = lab.Task("copy", 16, 4)
    ckpt = run(task=task, steps=3)[-1].checkpoint
    mha = lab.load(ckpt)
    same = lab.convert(ckpt, 4, "mean")
    ids = next(lab.batches(task, 2, 5))[0]
    torch.testing.assert_close(same(ids)[0], mha(ids)[0], rtol=1e-5, atol=1e-6)  # n_kv = n_heads: the same model
    gqa = lab.convert(ckpt, 2, "first", seed=ckpt.seed)
    ref = mha_to_gqa(mha.blocks[0].attn, 2, "first")
    torch.testing.assert_close(gqa.blocks[0].attn.k_proj.weight, ref.k_proj.weight, rtol=0, atol=0)
    torch.testing.assert_close(gqa.blocks[0].mlp[0].weight, mha.blocks[0].mlp[0].weight, rtol=0, atol=0)


# ---------------------------------------------------------------- roles and budgets
def test_head_roles_use_the_models_page_definitions():
    task = lab.Task("induction", 16, 8)
    model = lab.load(run(task=task, steps=2)[-1].checkpoint)
    df = lab.head_roles(model, task, seed=0)
    n = df.attrs["seq_len"]
    x = torch.randint(1, 16, (lab.ROLE_SEQS, n), generator=torch.Generator().manual_seed(0))
    w = model(torch.cat([x, x], 1))[1][0]
    ref = role_scores(w, n, 0, causal=True)
    assert df.previous_token.tolist() == pytest.approx(ref["previous_token"].tolist(), rel=1e-5, abs=1e-6)
    assert df.induction.tolist() == pytest.approx(ref["induction"].tolist(), rel=1e-5, abs=1e-6)
    roles = df.role.tolist()
    assert all(r == "" or df.loc[i, r] >= lab.ROLE_THRESHOLD for i, r in enumerate(roles))


def test_runs_over_budget_are_refused_before_training(monkeypatch):
    with pytest.raises(ConfigError) as err:
        next(lab.train(lab.LabSpec(), "induction", steps=5000, batch=256))
    assert err.value.key == "lab_time" and err.value.field == "steps"
    monkeypatch.setenv("ATTN_MAX_BYTES", str(2**20))
    with pytest.raises(ConfigError) as err:
        next(lab.train(lab.LabSpec(), "induction", steps=1, batch=256))
    assert err.value.key == "budget"


def test_right_after_conversion_the_preset_orders_mean_first_random():
    """The MHA → GQA preset's model (induction, vocabulary 16, n = 8, 100 steps at lr 0.01, seed 0) converted to one
    KV head: held-out loss mean 2.58 < first 2.74 < random 2.95 with the AVX2 kernels, 2.55 < 2.84 < 3.05 with the
    default ones. Not a law: on the copy task, or trained to a loss near 0, keeping the first head started lower
    (measured while building the lab), so this checks the preset the page shows, with its seed."""
    task = lab.Task("induction", 16, 8)
    ckpt = run(spec=lab.LabSpec(), task=task, steps=100, batch=32, lr=1e-2, eval_every=0)[-1].checkpoint
    start = {
        m: next(lab.convert_and_uptrain(ckpt, 1, m, 1, run=lab.RunSpec(batch=32, lr=1e-2))).eval_loss
        for m in lab.METHODS
    }
    assert start["mean"] + 0.05 < start["first"] < start["random"] - 0.05, start
