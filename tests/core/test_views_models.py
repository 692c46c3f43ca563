"""The pretrained-models view model on tiny random models (no download): its inputs, its conclusions from
measured numbers (hand arithmetic), the random baseline of the score scale, generation in lockstep, its charts."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest
import torch

from tests.core.tiny_models import require, write_model

require("transformers")

from attn_core.figures import Style  # noqa: E402
from attn_core.figures.base import group_color  # noqa: E402
from attn_core.pretrained import models  # noqa: E402
from attn_core.runtime.config import ConfigError  # noqa: E402
from attn_core.views import heatmaps as hm  # noqa: E402
from attn_core.views import models as mv  # noqa: E402


@pytest.fixture(scope="module")
def llama(tmp_path_factory):
    """A Llama-style decoder: 2 layers, 4 query heads sharing 2 KV heads (GQA)."""
    return models.load_model(str(write_model("llama", tmp_path_factory.mktemp("tiny") / "llama")), device="cpu")


@pytest.fixture(scope="module")
def bert(tmp_path_factory):
    return models.load_model(str(write_model("bert", tmp_path_factory.mktemp("tiny") / "bert")), device="cpu")


def local(path: str, **kw) -> mv.Params:
    return mv.Params(model="local", model_path=path, **kw)


def test_local_path_and_its_absence():
    assert local(" /models/x ").model_key == "/models/x"
    with pytest.raises(ConfigError) as err:
        local("  ").model_key  # noqa: B018
    assert err.value.key == "model_path_empty"
    assert mv.Params().model_key == "smollm2-135m"


def test_repeated_input_is_the_same_random_tokens_twice(llama):
    inp = mv.model_input(llama, local(llama.path, example="repeated", repeat_len=7, seed=3))
    prefix, _ = models._frame(llama.tokenizer)
    body = inp.ids[len(prefix) :]
    assert inp.kind == "repeated" and len(body) == 14 and body[:7] == body[7:]
    assert inp.ids == mv.model_input(llama, local(llama.path, example="repeated", repeat_len=7, seed=3)).ids
    assert inp.ids != mv.model_input(llama, local(llama.path, example="repeated", repeat_len=7, seed=4)).ids
    with pytest.raises(ConfigError):
        mv.model_input(llama, local(llama.path, example="repeated", repeat_len=mv.max_repeat(llama) + 1))
    with pytest.raises(ConfigError):
        mv.model_input(llama, local(llama.path, example="own", text="   "))


def test_group_similarity_by_hand():
    # one layer, heads 0,1 read KV 0 and heads 2,3 read KV 1
    df = pd.DataFrame({"layer": [0] * 4, "head": [0, 1, 2, 3], "kv_head": [0, 0, 1, 1], "s": [0.9, 0.7, 0.1, 0.2]})
    within, between = mv.group_similarity(df, "s")
    assert within == pytest.approx((0.2 + 0.1) / 2)  # |0.9-0.7|, |0.1-0.2|
    assert between == pytest.approx((0.8 + 0.7 + 0.6 + 0.5) / 4)  # the four cross pairs
    mha = df.assign(kv_head=[0, 1, 2, 3])
    assert mv.group_similarity(mha, "s") is None


def test_gqa_note_is_chosen_from_the_measured_ratio(llama):
    layers = 12  # one layer of 4 heads has only 3 labellings: too few for any shuffle test to tell
    alike = pd.DataFrame(
        {
            "layer": [layer for layer in range(layers) for _ in range(4)],
            "head": [0, 1, 2, 3] * layers,
            "kv_head": [0, 0, 1, 1] * layers,
            "induction": [0.9, 0.8, 0.1, 0.1] + [0.5, 0.45, 0.2, 0.25] * (layers - 1),
        }
    )
    unlike = alike.assign(induction=[0.9, 0.1, 0.8, 0.2] + [0.5, 0.2, 0.45, 0.25] * (layers - 1))
    assert mv.gqa_note(llama, alike, "induction", Style()).startswith("**Heads sharing a KV head score alike")
    assert "differ more on induction" in mv.gqa_note(llama, unlike, "induction", Style())
    assert "layer 0 head 0 (0.90)" in mv.gqa_note(llama, alike, "induction", Style())
    one = alike[alike.layer == 0]
    assert "about as alike" in mv.gqa_note(llama, one, "induction", Style())


def test_strongest_entropy_is_the_lowest():
    df = pd.DataFrame(
        {
            "layer": [0, 0, 1],
            "head": [0, 1, 0],
            "kv_head": [0, 0, 0],
            "entropy": [0.5, 0.1, 0.9],
            "induction": [0.5, 0.1, 0.9],
        }
    )
    assert mv.strongest(df, "entropy", 1) == [(0, 1, 0.1)]
    assert mv.strongest(df, "induction", 1) == [(1, 0, 0.9)]


def test_scale_baseline_is_the_seeded_random_layer(llama):
    inp = mv.model_input(llama, local(llama.path))
    res = mv.scale(llama, inp, 0)
    assert list(res.table.layer) == [0, 1] and res.n_tokens == len(llama.tokenize(inp.text))
    rnd = res.random.iloc[0]
    # the random layer's q·k variance is about d_k; its scaled variance about 1 (N(0, 1/d) projections)
    assert 0.3 * llama.head_dim < rnd.score_var < 3 * llama.head_dim
    assert rnd.scaled_var == pytest.approx(rnd.score_var / llama.head_dim, rel=1e-6)
    summary = mv.scale_summary(res, Style())
    assert f"{res.table.scaled_var.max():.3g}" in summary and f"{rnd.scaled_var:.3g}" in summary


def test_generation_in_lockstep_keeps_only_the_last_rows(llama):
    inp = mv.model_input(llama, local(llama.path, example="own", text="the cat sat"))
    spec = mv.GenSpec(llama.name, inp, 5, True)
    pairs = list(mv.gen_steps(llama, spec))
    assert len(pairs) == 5
    assert [p.cached.token_id for p in pairs] == [p.recomputed.token_id for p in pairs]
    assert all(p.cached.attention is None for p in pairs[:-1]) and pairs[-1].cached.attention is not None
    assert all(p.cached.cache_bytes == p.cached.formula_bytes for p in pairs)
    kind, text = mv.gen_summary(pairs, spec, False, Style())
    assert kind == "success" and "equals the formula at every one of the 5 steps" in text
    assert list(mv.gen_frame(pairs).cache_bytes_measured) == [p.cached.cache_bytes for p in pairs]


def test_timing_run_reads_the_input_repeated_at_doubling_lengths(llama):
    p = local(llama.path, example="own", text="the cat sat", gen_context=64, gen_tokens=3)
    inp = mv.model_input(llama, p)
    spec = mv.speed_spec(llama, p, inp)
    assert (spec.context, spec.n_new) == (64, 3) and mv.speed_contexts(64) == [16, 32, 64]
    assert mv.speed_contexts(100) == [16, 32, 64, 100]
    prompt = mv.long_prompt(llama, inp, 64)
    once = llama.encode("the cat sat\n")[0]
    special = set(llama.tokenizer.all_special_ids)
    head = [i for i in once[:1] if i in special]
    body = [i for i in once if i not in special]
    assert len(prompt) == 64 and list(prompt) == (head + body * 64)[:64]  # the text again and again
    points = list(mv.speed_points(llama, spec))
    assert [pt.context for pt in points] == [16, 32, 64]
    per_position = 2 * llama.n_layers * llama.n_kv_heads * llama.head_dim * 4  # K and V, float32, by hand
    for pt in points:
        assert len(pt.cached_s) == 2 and pt.held == pt.context + 2 and len(pt.token_ids) == 3
        assert pt.cache_bytes == pt.formula_bytes == pt.held * per_position
        assert len(pt.recompute_s) == (3 if pt.context <= 64 else 1) and all(
            s > 0 for s in pt.recompute_s + pt.cached_s
        )
        # the first step reads every token again with nothing cached: what a generation without the cache does
        plain = models.generate(llama, "", 2, use_cache=False, rows=False, prompt_ids=prompt[: pt.context])
        assert [s.token_id for s in plain] == list(pt.token_ids[:2])
    views = mv.speed_views(points, spec, llama, Style())
    assert [v.name for v in views] == ["gen_speed", "gen_cache"]
    speed = views[0].figure.to_plotly_json()
    assert speed["layout"]["xaxis"]["type"] == "log" and speed["layout"]["yaxis"]["type"] == "log"
    assert list(speed["layout"]["xaxis"]["tickvals"]) == [16, 32, 64]  # the lengths planned, drawn or not
    recompute, cached = speed["data"]
    assert list(recompute["y"]) == pytest.approx([min(pt.recompute_s) * 1e3 for pt in points])
    assert list(cached["y"]) == pytest.approx([min(pt.cached_s) * 1e3 for pt in points])  # the fastest of each
    assert list(views[1].data.cache_bytes_measured) == [pt.cache_bytes for pt in points]
    frac, _ = mv.speed_progress(spec, points[:1], Style())
    assert frac == pytest.approx(16 / (16 + 32 + 64))  # a length's pass costs about its tokens


def speed_point(context: int, recompute_ms: float, cached_ms: float) -> mv.SpeedPoint:
    n = 2 * 30 * 3 * 64 * 4 * (context + 2)
    return mv.SpeedPoint(context, (recompute_ms / 1e3,), (cached_ms / 1e3,) * 2, context + 2, n, n, " the cat")


def test_timing_sentences_are_chosen_from_the_measured_times(llama):
    spec = mv.SpeedSpec("m", mv.ModelText("x"), 128, 3)
    weights = f"{4 * llama.n_params / 2**10:.3g} KiB"

    def said(points, stopped=False, style=Style()):
        return mv.speed_summary(points, spec, stopped, llama, style)

    # both about as long up to 32 tokens (reading the weights), then recomputing grows
    alike = [speed_point(16, 55, 50), speed_point(32, 70, 50), speed_point(64, 150, 50), speed_point(128, 1000, 50)]
    kind, text = said(alike)
    assert kind == "success" and "Up to 32 tokens of context, recomputing takes about as long" in text
    assert "(70 ms against 50 ms)" in text and weights in text
    assert "at 128 tokens it takes 1,000 ms a token, 20× the 50 ms with the cache" in text
    assert "equals the formula" in text and "130 positions" in text
    # 16 tokens for 1.7 times one token's time: the weights' reading still dominates
    few = [speed_point(16, 85, 50), speed_point(128, 1000, 50)]
    assert "recomputing all 16 takes 85 ms, only 1.7× the 50 ms of one new token" in said(few)[1]
    # 10 times at 16 tokens: more than 16 / 4, the tokens already cost more than the weights
    already = [speed_point(16, 500, 50), speed_point(128, 4000, 50)]
    assert "Already at 16 tokens of context, recomputing takes 10.0× as long" in said(already)[1]
    # no saving at any length timed: a longer context would show it
    flat = [speed_point(16, 50, 50), speed_point(32, 60, 50)]
    assert "a longer context shows what it saves" in said(flat)[1]
    slide = mv.speed_summary(alike, spec, False, llama, Style(present=True), short=True)[1]
    assert "about as long" in slide and "20×" in slide and "formula" not in slide  # a slide: the times alone
    kind, text = said(alike[:2], stopped=True)
    assert kind == "warning" and text.startswith("Stopped after 2 of 4 context lengths.")
    zh = said(alike, style=Style(lang="zh"))[1]
    assert "上下文不超过 32 个词元时" in zh and "20 倍" in zh and "**" not in zh


def test_speed_leaves_out_the_prompt_step():
    def step(s):
        return models.GenStep(1, 0, "a", "a", 3, 0, 0, s, None, False)

    pairs = [mv.GenPair(step(1.0), step(1.0)), mv.GenPair(step(0.1), step(0.4)), mv.GenPair(step(0.1), step(0.4))]
    cached, plain = mv.speed(pairs)
    assert cached == pytest.approx(10.0) and plain == pytest.approx(2.5)
    spec = mv.GenSpec("m", mv.ModelText("x"), 3, True)
    assert "4.00× as fast" in mv.gen_summary(pairs, spec, False, Style())[1]
    slow = [mv.GenPair(step(0.4), step(0.1))] * 3
    assert "cost little" in mv.gen_summary(slow, spec, False, Style())[1]
    assert mv.gen_summary(pairs[:2], spec, True, Style())[0] == "warning"


def test_markdown_of_generated_text_is_literal():
    assert mv.plain_markdown("**x** <b>") == "\\*\\*x\\*\\* \\<b\\>"


def test_views_for_every_name_and_the_encoders_refusal(llama, bert):
    style = Style()
    for name in mv.VIEW_NAMES:
        views = mv.views(local(llama.path, gen_tokens=2), style, name)
        assert views, name
    roles = mv.views(local(llama.path), style, "roles")[0]
    frames = roles.figure.layout.shapes
    assert [f.line.color for f in frames] == [group_color(g) for g in range(llama.n_kv_heads)]
    assert mv.views(local(bert.path), style, "roles")[0].figure.layout.shapes == ()  # MHA: no groups to frame
    with pytest.raises(ConfigError):
        mv.views(local(bert.path), style, "generate")


def test_step_sentences_say_what_the_model_does(llama, bert):
    for model, words in ((llama, "rotated by RoPE"), (bert, "positions were added")):
        p = local(model.path)
        inp = mv.model_input(model, p)
        att = mv.capture(model, inp, 0)
        hw = mv.step_window(att.source(0), 1, 0, 0)
        _, sentences = mv.step_texts(model, att, hw, Style())
        assert words in sentences[0]
        raw, scaled = hm.head_score_variance(att, 1, model.n_rep)
        q, k = torch.from_numpy(att.q[0, 1]).double(), torch.from_numpy(att.k[0, 1 // model.n_rep]).double()
        s = q @ k.T
        mask = torch.ones_like(s, dtype=torch.bool).tril() if model.causal else torch.ones_like(s, dtype=torch.bool)
        assert raw == pytest.approx(s[mask].var(unbiased=False).item(), rel=1e-9)
        assert f"Var(q·k) = {raw:.3g}" in sentences[4]
    assert dataclasses.is_dataclass(mv.GenPair)


def score_table(values, kv_of_head) -> pd.DataFrame:
    """A score table ``[layers, heads]`` with the KV head of each head."""
    layers, heads = values.shape
    return pd.DataFrame(
        {
            "layer": [layer for layer in range(layers) for _ in range(heads)],
            "head": list(range(heads)) * layers,
            "kv_head": list(kv_of_head) * layers,
            "s": values.reshape(-1),
        }
    )


KV9 = [0, 0, 0, 1, 1, 1, 2, 2, 2]  # SmolLM2's 9 query heads on 3 KV heads


def test_the_kv_group_permutation_test_on_scores_whose_answer_is_known():
    rng = np.random.default_rng(1)
    group_mean = rng.uniform(0, 1, size=(30, 3))
    grouped = score_table(np.repeat(group_mean, 3, axis=1) + rng.normal(0, 0.02, size=(30, 9)), KV9)
    res = models.kv_group_test(grouped, "s")
    assert res.shuffles >= 1000
    assert res.ratio < res.null_lo and res.p <= 0.002  # strongly grouped: no shuffle comes near
    noise = score_table(rng.uniform(0, 1, size=(30, 9)), KV9)
    rand = models.kv_group_test(noise, "s")
    assert rand.p > 0.2 and rand.null_lo < rand.ratio < rand.null_hi  # no grouping: inside the null range
    assert models.kv_group_test(noise, "s", seed=7).p == models.kv_group_test(noise, "s", seed=7).p
    assert (rand.within, rand.between) == pytest.approx(mv.group_similarity(noise, "s"))
    assert models.kv_group_test(noise.assign(kv_head=noise["head"]), "s") is None  # MHA: no groups


def test_the_gqa_verdict_comes_from_the_permutation_test(llama):
    rng = np.random.default_rng(2)
    base = rng.uniform(0, 1, size=(60, 4))  # 60 layers of the tiny model's 4 heads on 2 KV heads
    # every head of a group pulled 20 % towards its group's mean: a ratio near 0.77, outside the shuffles' range
    pulled = 0.8 * base + 0.2 * np.repeat(base.reshape(60, 2, 2).mean(axis=2), 2, axis=1)
    df = score_table(pulled, [0, 0, 1, 1]).rename(columns={"s": "previous_token"})
    res = models.kv_group_test(df, "previous_token")
    assert 0.75 < res.ratio < 1.0 and res.p < 0.05  # the fixed 0.75 cut said "about as alike"
    for style, alike in ((Style(), "score alike"), (Style(lang="zh"), "得分相近")):
        note = mv.gqa_note(llama, df, "previous_token", style)
        assert alike in note and f"{res.ratio:.2f}" in note and f"p = {res.p:.2g}" in note
        assert f"{res.null_lo:.2f}–{res.null_hi:.2f}" in note and "2,000" in note
    same = score_table(base, [0, 0, 1, 1]).rename(columns={"s": "previous_token"})
    assert models.kv_group_test(same, "previous_token").p > 0.05
    assert "about as alike" in mv.gqa_note(llama, same, "previous_token", Style())


def test_the_induction_score_is_cited_as_what_is_computed(llama):
    df = pd.DataFrame({"layer": [0], "head": [0], "kv_head": [0], "induction": [0.5]})
    for style, name in ((Style(), "prefix-matching score"), (Style(lang="zh"), "前缀匹配分数")):
        text = mv.roles_method(llama, df, style) + style.t("help.role_score")
        assert name in text and "TransformerLens" not in text


def test_recomputing_is_said_to_rerun_the_whole_model():
    def step(s):
        return models.GenStep(1, 0, "a", "a", 12, 0, 0, s, None, False)

    slow = [mv.GenPair(step(0.4), step(0.1))] * 3
    spec = mv.GenSpec("m", mv.ModelText("x"), 3, True)
    en = mv.gen_summary(slow, spec, False, Style())[1]
    zh = mv.gen_summary(slow, spec, False, Style(lang="zh"))[1]
    assert "few past tokens" not in en and "reruns the whole model over all 12 tokens" in en
    assert "reading the model's weights" in en
    assert "少量过去的词元" not in zh and "全部 12 个词元" in zh and "读取模型权重" in zh


def test_a_slide_shows_one_chart_as_the_page_does_in_slide_mode(llama):
    slide = Style(present=True)
    roles = mv.slide_shown(local(llama.path), slide, {})
    assert [v.name for v in roles.views] == ["head_roles_induction"] and len(roles.sentences) == 1
    head = mv.slide_shown(local(llama.path, view="head", head=1), slide, {})
    assert [v.name for v in head.views] == ["head1_q0-" + head.views[0].name.split("_q0-")[1]] and not head.sentences
    step = mv.slide_shown(local(llama.path, view="head", head=1), slide, {"slide": 3})  # the head's second step, K
    assert len(step.views) == 1 and "W_K" in step.sentences[0]
    scale = mv.slide_shown(local(llama.path, view="scale"), slide, {"slide": 2})
    assert [v.name for v in scale.views] == ["softmax_peak"]
    assert mv.slide_shown(local(llama.path, view="generate"), slide, {}).views == []
    # the head's map on a slide: every label at 20 px, the thinning said on its axis
    zoom = head.views[0].figure.to_plotly_json()["layout"]
    assert zoom["yaxis"]["tickfont"]["size"] == 20 and zoom["xaxis"]["tickfont"]["size"] == 20
