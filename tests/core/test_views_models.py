"""The pretrained-models view model on tiny random models (no download): its inputs, its conclusions from
measured numbers (hand arithmetic), the random baseline of the score scale, generation in lockstep, its charts."""

from __future__ import annotations

import dataclasses

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
    alike = pd.DataFrame(
        {"layer": [0] * 4, "head": [0, 1, 2, 3], "kv_head": [0, 0, 1, 1], "induction": [0.9, 0.8, 0.1, 0.1]}
    )
    unlike = alike.assign(induction=[0.9, 0.1, 0.8, 0.2])
    assert mv.gqa_note(llama, alike, "induction", Style()).startswith("**Heads sharing a KV head score alike")
    assert "differ more on induction" in mv.gqa_note(llama, unlike, "induction", Style())
    assert "layer 0 head 0 (0.90)" in mv.gqa_note(llama, alike, "induction", Style())


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
    views = mv.gen_views(pairs, spec, mv.prompt_tokens(llama, inp), (1, llama.n_kv_heads), Style())
    assert [v.name for v in views] == ["gen_cache", "gen_time", "gen_newest_row_layer1"]
    assert list(views[0].data.cache_bytes_measured) == [p.cached.cache_bytes for p in pairs]


def test_speed_leaves_out_the_prompt_step():
    def step(s):
        return models.GenStep(1, 0, "a", "a", 3, 0, 0, s, None, False)

    pairs = [mv.GenPair(step(1.0), step(1.0)), mv.GenPair(step(0.1), step(0.4)), mv.GenPair(step(0.1), step(0.4))]
    cached, plain = mv.speed(pairs)
    assert cached == pytest.approx(10.0) and plain == pytest.approx(2.5)
    spec = mv.GenSpec("m", mv.ModelText("x"), 3, True)
    assert "4.00× as fast" in mv.gen_summary(pairs, spec, False, Style())[1]
    slow = [mv.GenPair(step(0.4), step(0.1))] * 3
    assert "costs little" in mv.gen_summary(slow, spec, False, Style())[1]
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
