"""Surgery on the shipped models (attn_core.pretrained.surgery) with the shipped evaluation texts."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from attn_core.pretrained import models, texts
from attn_core.pretrained import surgery as sg
from attn_core.runtime.config import ConfigError

pytestmark = pytest.mark.slow


def logits(m, ids):
    with torch.inference_mode():
        return m.module(input_ids=torch.tensor([ids])).logits[0]


def test_smollm2_identities(smollm2):
    ids = texts.eval_ids(smollm2, "en", 256)
    base = logits(smollm2, ids)
    assert torch.equal(logits(sg.pool_kv_heads(smollm2, 3), ids), base)
    assert torch.equal(logits(sg.scale_scores(smollm2, 1), ids), base)
    assert torch.equal(logits(sg.evict_cache(smollm2, 256, 0), ids), base)
    with pytest.raises(ConfigError) as err:
        sg.pool_kv_heads(smollm2, 2)
    assert (
        err.value.key == "surgery_kv_divisor" and "must divide 3" in str(err.value) and "valid: 1, 3" in str(err.value)
    )


def test_gemma3_surgery(gemma3):
    """MQA already: pooling to its one KV head changes nothing; an eviction inside the local window of 512 bites on
    every layer, and the evaluation over 600 tokens stays finite."""
    ids = texts.eval_ids(gemma3, "en", 600)
    base = logits(gemma3, ids)
    assert torch.equal(logits(sg.pool_kv_heads(gemma3, 1), ids), base)
    assert torch.equal(logits(sg.scale_scores(gemma3, 1.0), ids), base)
    assert torch.equal(logits(sg.evict_cache(gemma3, 600, 0), ids), base)
    ref = sg.reference_of(gemma3, ids)
    e = sg.evaluate(sg.evict_cache(gemma3, 64, 4), ids, ref)
    own = sg.evaluate(gemma3, ids, ref)
    assert own.perplexity < e.perplexity < math.inf and 0.0 < e.kl < math.inf and own.top1 == 1.0
    assert e.kv_bytes == 18 * 68 * 2 * 256 * 4 < own.kv_bytes == (3 * 600 + 15 * 512) * 2 * 256 * 4


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_pooling_smollm2_to_one_kv_head_raises_perplexity_but_keeps_it_finite(smollm2, lang):
    ids = texts.eval_ids(smollm2, lang, 512)
    ref = sg.reference_of(smollm2, ids)
    own = sg.evaluate(smollm2, ids, ref)
    pooled = sg.evaluate(sg.pool_kv_heads(smollm2, 1, "mean"), ids, ref)
    assert own.kl == pytest.approx(0.0, abs=1e-6) and own.top1 == 1.0
    assert own.perplexity < pooled.perplexity < math.inf and math.isfinite(pooled.kl) and pooled.kl > 0.5
    assert pooled.kv_bytes_per_token * 3 == own.kv_bytes_per_token == 2 * 30 * 3 * 64 * 4
    if lang == "en":
        assert own.perplexity < 30  # 19th-century prose is easy for it


def test_the_lessons_in_numbers_on_smollm2(smollm2):
    """Dropping 1/√d_k and ablating a head cost something; a StreamingLLM window keeps most of the quality,
    and keeping the attention sinks beats the same window without them (Xiao et al. 2023)."""
    ids = texts.eval_ids(smollm2, "en", 1024)
    ref = sg.reference_of(smollm2, ids)
    ev = {
        "none": sg.evaluate(sg.scale_scores(smollm2, None), ids, ref),
        "ablate": sg.evaluate(sg.ablate_heads(smollm2, 0, [0]), ids, ref),
        "sinks": sg.evaluate(sg.evict_cache(smollm2, 256, 4), ids, ref),
        "window": sg.evaluate(sg.evict_cache(smollm2, 260, 0), ids, ref),
    }
    assert ev["none"].kl > 1.0 and 0.0 < ev["ablate"].kl < ev["none"].kl
    assert ev["sinks"].perplexity < ev["window"].perplexity and ev["sinks"].top1 > 0.5
    assert ev["sinks"].kv_bytes == ev["window"].kv_bytes == 2 * 30 * 3 * 260 * 64 * 4


def test_minilm_pools_to_every_divisor_of_twelve(minilm):
    ids = texts.eval_ids(minilm, "en", 512)
    ref = sg.reference_of(minilm, ids)
    got = {}
    for n in (12, 6, 4, 3, 2, 1):
        p = sg.pool_kv_heads(minilm, n)
        e = sg.evaluate(p, ids, ref)
        assert p.n_kv_heads == n and e.kv_bytes_per_token == 2 * 6 * n * 32 * 4
        att = models.model_attention(p, "", ids=ids[:64], with_weights=True)
        assert att.k.shape[1] == n and np.allclose(att.weights.sum(-1), 1.0, atol=1e-5)
        got[n] = e.cosine
    assert got[12] == pytest.approx(1.0) and all(0.0 < c < 1.0 for n, c in got.items() if n < 12)
    assert got[1] < got[6]
