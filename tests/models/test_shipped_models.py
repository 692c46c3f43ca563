"""The two shipped pretrained models: their shapes, real attention, head roles and measured KV cache.

Each model is loaded once per session (tests/models/conftest.py); the GGUF conversion runs once per
cache folder (the first run on a machine takes about half a minute, later ones under a second).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from attn_core.pretrained import models
from tests.core.tiny_models import eager_reference

RTOL, ATOL = 1e-5, 1e-6
SENTENCE = "The cat sat on the mat. The cat sat on the"


def test_smollm2_shape(smollm2):
    m = smollm2
    assert (m.arch, m.n_layers, m.n_heads, m.n_kv_heads, m.head_dim) == ("llama", 30, 9, 3, 64)
    assert (m.hidden_size, m.max_positions, m.causal, m.quantization) == (576, 8192, True, "Q4_1")
    assert m.n_params == 134_515_008 and m.preset.attention == "GQA" and m.preset.n_kv_heads == 3
    assert [m.kv_head(h) for h in range(9)] == [0, 0, 0, 1, 1, 1, 2, 2, 2]
    assert m.tokenize("Hello world") == ["Hello", " world"]


def test_minilm_shape(minilm):
    m = minilm
    assert (m.arch, m.n_layers, m.n_heads, m.n_kv_heads, m.head_dim) == ("bert", 6, 12, 12, 32)
    assert (m.hidden_size, m.max_positions, m.causal, m.quantization) == (384, 512, False, None)
    assert m.preset.attention == "MHA"
    assert m.tokenize("Playing cats") == ["[CLS]", "playing", " cats", "[SEP]"]


@pytest.mark.parametrize("which", ["smollm2", "minilm"])
def test_recomputed_weights_equal_the_real_models_output_attentions(which, request):
    m = request.getfixturevalue(which)
    layers = [0, m.n_layers // 2, m.n_layers - 1]
    att = models.model_attention(m, SENTENCE, layers=layers, with_weights=True)
    ref = eager_reference(Path(m.path), "bert" if which == "minilm" else "llama")
    with torch.inference_mode():
        out = ref(torch.tensor([list(att.ids)]), output_attentions=True).attentions
    for j, layer in enumerate(layers):
        np.testing.assert_allclose(att.weights[j], out[layer][0].numpy(), rtol=RTOL, atol=ATOL)


def test_smollm2_has_previous_token_and_induction_heads(smollm2_scores):
    df = smollm2_scores
    assert len(df) == 30 * 9
    assert df["previous_token"].max() > 0.5
    best = df.loc[df["induction"].idxmax()]
    assert best["induction"] > 0.5
    assert best["induction"] > 5 * df["induction"].median()  # a few heads, not all of them
    # attention sinks: from layer 2 on, the typical layer sends a large share of its attention to position 0
    per_layer = df[df.layer >= 2].groupby("layer")["first_token"].mean()
    assert per_layer.median() > 0.3


def test_smollm2_generation_cache_is_measured_and_repeatable(smollm2):
    m = smollm2
    prompt = "The capital of France is"
    steps = list(models.generate(m, prompt, 16))
    again = [s.token_id for s in models.generate(m, prompt, 16, rows=False)]
    assert [s.token_id for s in steps] == again
    p = len(m.encode(prompt)[0])
    for s in steps:
        held = p + s.step - 1
        assert s.cache_bytes == s.formula_bytes == 2 * 30 * 1 * 3 * held * 64 * 4
        np.testing.assert_allclose(s.attention.sum(-1), 1.0, rtol=RTOL, atol=ATOL)
    assert "Paris" in steps[-1].text
    plain = [s.token_id for s in models.generate(m, prompt, 6, use_cache=False, rows=False)]
    assert plain == again[:6]


def test_minilm_attends_both_ways(minilm):
    att = models.model_attention(minilm, SENTENCE, with_weights=True)
    t = len(att.ids)
    later = np.triu(np.ones((t, t), dtype=bool), 1)
    ahead = att.weights[..., later].reshape(6, 12, -1).sum(-1) / t  # mean weight a row gives to later tokens
    assert ahead.mean() > 0.2 and (ahead > 0.05).mean() > 0.9
    np.testing.assert_allclose(att.weights.sum(-1), 1.0, rtol=RTOL, atol=ATOL)


def test_the_trained_heads_deck_states_smollm2s_own_numbers(smollm2):
    """Every number the deck "What trained heads do" states is what the models page computes (its roles view: 4
    random sequences of 50 tokens, each repeated, seed 0)."""
    from attn_core.views import models as mv

    df = mv.roles(smollm2, 0).set_index(["layer", "head"])
    assert round(df.loc[(16, 0), "previous_token"], 2) == 0.89
    assert df["previous_token"].idxmax() == (16, 0)
    assert round(df.loc[(18, 8), "first_token"], 3) == 0.999
    assert round(df.loc[(18, 6), "induction"], 2) == 0.87
    l17 = df.loc[17]
    assert [round(l17.loc[h, "induction"], 2) for h in (3, 4, 5)] == [0.77, 0.72, 0.61]
    assert set(l17.loc[[3, 4, 5], "kv_head"]) == {1} and set(l17["kv_head"]) == {0, 1, 2}
    assert l17.drop(index=[3, 4, 5])["induction"].max() < 0.05
    assert (smollm2.n_heads, smollm2.n_kv_heads, smollm2.n_layers) == (9, 3, 30)
