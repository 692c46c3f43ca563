"""The shipped Gemma 3 270M: its shape, sliding-window attention against transformers' eager weights, what
transformers' DynamicCache keeps for a sliding layer, its load time and its card.

The first load on a machine joins the GGUF's chunks and dequantises it (minutes); the tests then read the
converted copy from the model cache.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from attn_core.pretrained import card, models, texts
from attn_core.pretrained import store as model_store

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
ATOL = 1e-4  # captured (SDPA) against eager attention, float32, 18 layers deep
SHORT = "The cat sat on the mat. The cat sat on the"
LOCAL = tuple(i for i in range(18) if i % 6 != 5)


@pytest.fixture(scope="module")
def eager(gemma3):
    import transformers as tf

    return tf.AutoModelForCausalLM.from_pretrained(
        gemma3.path, attn_implementation="eager", dtype=torch.float32, local_files_only=True
    ).eval()


def eager_weights(eager, ids):
    with torch.inference_mode():
        return [a[0].numpy() for a in eager(torch.tensor([list(ids)]), output_attentions=True).attentions]


def test_gemma3_shape(gemma3):
    m = gemma3
    assert (m.arch, m.n_layers, m.n_heads, m.n_kv_heads, m.head_dim, m.hidden_size) == (
        "gemma3_text",
        18,
        4,
        1,
        256,
        640,
    )
    assert (m.causal, m.max_positions, m.quantization, m.n_params) == (True, 32768, "Q4_K_M", 268_098_176)
    assert m.local_layers == LOCAL and {m.window(i) for i in LOCAL} == {512}
    assert m.layer_windows[5] is m.layer_windows[11] is m.layer_windows[17] is None
    assert (m.preset.sliding_window, m.preset.global_every, m.preset.attention) == (512, 6, "MQA")
    assert m.tokenize("Hello world") == ["<bos>", "Hello", " world"]


@pytest.mark.parametrize("n_tokens", [0, 700])
def test_captured_weights_equal_eager_output_attentions(gemma3, eager, n_tokens):
    """A short text, and 700 tokens of the English evaluation text: past the window of 512 on the local layers."""
    ids = gemma3.encode(SHORT)[0] if n_tokens == 0 else texts.eval_ids(gemma3, "en", n_tokens)
    att = models.model_attention(gemma3, "", ids=ids, with_weights=True)
    ref = eager_weights(eager, att.ids)
    t = len(att.ids)
    i, j = np.indices((t, t))
    for layer in range(18):
        np.testing.assert_allclose(att.weights[layer], ref[layer], rtol=0, atol=ATOL)
        if layer in LOCAL:
            assert np.all(att.weights[layer][:, j <= i - 512] == 0.0)  # never past the window
    if t > 512:
        beyond = j <= i - 512
        assert min(att.weights[g][:, beyond].sum() for g in (5, 11, 17)) > 1.0  # the global layers do read back


def test_what_dynamic_cache_keeps_for_a_sliding_layer(gemma3):
    """transformers' DynamicCache (Gemma 3 config) keeps window - 1 = 511 positions on a local layer, all on a global one."""
    import transformers as tf

    ids = texts.eval_ids(gemma3, "en", 600)
    cache = tf.DynamicCache(config=gemma3.module.config)
    with torch.inference_mode():
        out = gemma3.module(input_ids=torch.tensor([ids]), past_key_values=cache, use_cache=True)
        token = int(out.logits[0, -1].argmax())
        gemma3.module(input_ids=torch.tensor([[token]]), past_key_values=cache, use_cache=True)
    kept = [layer.keys.shape[-2] for layer in cache.layers]
    assert kept == [601 if i % 6 == 5 else 511 for i in range(18)]
    assert cache.get_seq_length() == 601
    steps = list(models.generate(gemma3, "", 2, prompt_ids=ids, rows=True))
    for s in steps:
        assert s.cache_bytes == s.formula_bytes == 2 * (3 * (s.seq_len) + 15 * 511) * 256 * 4
        assert s.attention.shape == (18, 4, s.seq_len)
        assert np.all(s.attention[list(LOCAL), :, : s.seq_len - 512] == 0.0)


def test_a_later_load_reads_the_converted_copy_and_never_the_gguf(gemma3):
    """In a fresh process, with the converted copy in the cache (the fixture made it): the load reads the float32
    folder and neither reads the GGUF file's metadata nor builds anything again (the first load dequantises for
    minutes).
    Its wall and CPU time are printed; ``bench/`` measures speed."""
    code = (
        "import time, attn_core.pretrained.models as m\n"
        "def boom(*a, **k): raise AssertionError('the GGUF file was read again')\n"
        "publish = m.model_store.publish\n"
        "m._gguf_facts = boom; m.model_store.publish = lambda final, build: publish(final, boom); m._hf()\n"
        "t, c = time.perf_counter(), time.process_time(); got = m.load_model('gemma3-270m', 'cpu')\n"
        "print(got.n_layers, time.perf_counter() - t, time.process_time() - c)"
    )
    res = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    layers, wall, cpu = res.stdout.split()[-3:]
    print(f"gemma3-270m load: {float(wall):.1f} s wall, {float(cpu):.1f} s CPU")
    assert int(layers) == gemma3.n_layers


def test_cards_of_the_shipped_gguf_files_match_the_loaded_models(gemma3, smollm2):
    for m in (gemma3, smollm2):
        path = model_store.shipped_file(model_store.SHIPPED[m.name])
        c = card.card_from_gguf(path)
        assert (c.n_layers, c.n_heads, c.n_kv_heads, c.head_dim, c.hidden_size) == (
            m.n_layers,
            m.n_heads,
            m.n_kv_heads,
            m.head_dim,
            m.hidden_size,
        )
        assert c.n_params == m.n_params and c.layer_windows == m.layer_windows and c.max_positions == m.max_positions
