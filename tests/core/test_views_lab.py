"""The training lab's view model: the experiments' arms, the KV trade-off's bytes by hand, sentences chosen from
the numbers, the budget over a whole experiment; and its figures (mean and spread, head maps)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from attn_core.figures import Style
from attn_core.figures import lab as lfig
from attn_core.lab import training as lab
from attn_core.runtime.config import ConfigError
from attn_core.views import lab as lv

EN = Style()


def test_experiments_are_built_as_the_page_says():
    exp = lv.experiment(lv.Params())
    assert [a.code for a in exp.arms][:2] == ["dk16_scaled_s0", "dk16_scaled_s1"] and len(exp.arms) == 8
    assert {a.spec.head_dim for a in exp.arms} == {16, 256} and {a.run.steps for a in exp.arms} == {30}
    exp = lv.experiment(lv.Params(experiment="convert", lab_steps=200))
    assert [a.code for a in exp.arms] == ["mha", "mean", "first", "random", "scratch"]
    assert [a.run.steps for a in exp.arms] == [200, 10, 10, 10, 210]  # 5 % uptraining, scratch for all the steps
    assert [a.offset for a in exp.arms] == [0, 200, 200, 200, 0] and exp.arms[1].source == 0
    exp = lv.experiment(lv.Params(experiment="kv_heads", lab_seeds=2))
    assert [a.spec.n_kv_heads for a in exp.arms] == [4, 4, 2, 2, 1, 1]
    assert exp.total_steps == 6 * 60


def test_an_experiment_over_the_budget_as_a_whole_is_refused():
    p = lv.Params(experiment="custom", lab_steps=1000, lab_seeds=5, lab_d_model=256, lab_head_dim=64, lab_batch=128)
    with pytest.raises(ConfigError) as err:
        lv.experiment(p)
    assert err.value.key == "lab_time"


def fake(exp: lv.Experiment, losses: dict[str, list[float]], eval_losses: dict[str, list[float]] | None = None):
    points = []
    for i, a in enumerate(exp.arms):
        for step, loss in enumerate(losses[a.group]):
            ev = (eval_losses or {}).get(a.group, [math.nan] * len(losses[a.group]))[step]
            points.append(lv.Point(i, lab.Record(step, loss, ev, math.nan, 0.0)))
    return points


def test_kv_tradeoff_counts_cache_bytes_by_hand_and_steps_to_target():
    exp = lv.experiment(lv.Params(experiment="kv_heads", lab_steps=4))
    pts = fake(exp, {"kv4": [4, 3, 1.5, 1, 0.5], "kv2": [4, 3.5, 2.5, 1.9, 1], "kv1": [4, 4, 3, 3, 3]})
    kf = lv.kv_frame(lv.curve_frame(pts, exp), exp, 2)
    assert kf.bytes_per_token.tolist() == [2 * 2 * k * 16 * 2 for k in (4, 2, 1)]  # K and V, 2 layers, d_k 16, fp16
    assert kf.loss_at.tolist() == [1.5, 2.5, 3.0]
    assert kf.steps_to_target.tolist()[:2] == [2.0, 3.0] and math.isnan(kf.steps_to_target.iloc[2])
    (line,) = lv.summary(pts, exp, EN)
    assert (
        "At step 4 the model with 4 KV heads reached loss **0.50** (512 B" in line
        and "1 KV head **3.00** (128 B" in line
    )


def test_scaling_sentence_follows_the_numbers():
    exp = lv.experiment(lv.Params(lab_steps=20, lab_seeds=1))
    flat = [4.0] * 21
    pts = fake(
        exp,
        {
            "dk16_scaled": flat,
            "dk16_unscaled": flat,
            "dk256_scaled": [4.0] * 20 + [3.5],
            "dk256_unscaled": [4.0] * 20 + [3.9],
        },
    )
    lines = lv.summary(pts, exp, EN)
    assert "no clear difference" in lines[0] and "training started slower" in lines[1] and "**3.90**" in lines[1]


def test_scaling_sentence_says_when_the_unscaled_model_is_clearly_better():
    exp = lv.experiment(lv.Params(lab_steps=20, lab_seeds=1))
    flat = [4.0] * 21
    pts = fake(
        exp,
        {
            "dk16_scaled": flat,
            "dk16_unscaled": [4.0] * 20 + [3.5],  # unscaled 0.5 lower: clearly better, not "no clear difference"
            "dk256_scaled": flat,
            "dk256_unscaled": [4.0] * 20 + [3.95],  # within 0.1: no clear difference
        },
    )
    en, zh = lv.summary(pts, exp, EN), lv.summary(pts, exp, Style(lang="zh"))
    assert "no clear difference" not in en[0] and "the unscaled model trained faster" in en[0] and "**3.50**" in en[0]
    assert "没有明显差别" not in zh[0] and "不缩放的模型训练得更快" in zh[0]
    assert "no clear difference" in en[1] and "没有明显差别" in zh[1]


def test_conversion_sentences_compare_with_the_papers_order():
    exp = lv.experiment(lv.Params(experiment="convert", lab_steps=20))
    mha = [2.0] * 21
    ev = {"mean": [2.5, 2.0], "first": [2.4, 2.1], "random": [3.0, 2.9]}
    pts = fake(exp, {"mha": mha, "scratch": [3.0] * 22, **ev}, ev)
    start, after = lv.summary(pts, exp, EN)
    assert "first head's K/V 2.40 < mean-pooled K/V 2.50 < random K/V 3.00" in start
    assert "the GQA paper's order" in after
    ev["first"] = [2.4, 1.9]
    start, after = lv.summary(fake(exp, {"mha": mha, "scratch": [3.0] * 22, **ev}, ev), exp, EN)
    assert "measured another order" in after


def test_curves_show_the_mean_and_the_seed_spread():
    df = pd.DataFrame({"group": ["a"] * 4, "step": [0, 0, 1, 1], "loss": [4.0, 2.0, 3.0, 1.0]})
    fig = lfig.curves_figure(df, ["a"], ["A"], "loss", 1, "t", EN)
    band, line = fig.data
    assert band.fill == "toself" and list(band.y) == [4.0, 3.0, 1.0, 2.0]  # max forward, min back
    assert list(line.y) == [3.0, 2.0] and line.name == "A"


def test_head_maps_are_causal_and_labelled():
    maps = np.random.default_rng(0).random((2, 3, 5, 5)).astype(np.float32)
    labels = [[f"L{la} H{h}" for h in range(3)] for la in range(2)]
    fig = lfig.heads_figure(maps, list("abcde"), labels, "t", EN)
    assert len(fig.data) == 6
    z = np.array(fig.data[4].z, dtype=float)
    assert np.isnan(z[np.triu_indices(5, 1)]).all()
    np.testing.assert_array_equal(z[np.tril_indices(5)], maps[1, 1][np.tril_indices(5)])
    assert [a.text for a in fig.layout.annotations] == [t for row in labels for t in row]
