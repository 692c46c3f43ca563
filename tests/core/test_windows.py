"""Sliding-window caches in the memory arithmetic (attn_core.kv.memory): hand arithmetic and the presets' patterns."""

from __future__ import annotations

import pytest

from attn_core.kv.memory import (
    ModelPreset,
    global_every_of,
    kv_cache_bytes,
    layer_windows,
    load_presets,
    mla_cache_bytes,
    windowed_cache_bytes,
)
from attn_core.runtime.config import ConfigError


def test_layer_patterns_of_mistral_gemma2_and_gemma3():
    assert layer_windows(4, None) == (None,) * 4
    assert layer_windows(4, 4096) == (4096,) * 4  # Mistral-7B-v0.1: every layer slides
    assert layer_windows(4, 4096, 2) == (4096, None, 4096, None)  # Gemma 2: sliding, full, sliding, full
    assert layer_windows(2, 16, 6) == (16, 16)  # fewer layers than the pattern: no global one
    g3 = layer_windows(18, 512, 6)  # Gemma 3 270M: layers 5, 11, 17 global
    assert [i for i, w in enumerate(g3) if w is None] == [5, 11, 17] and g3.count(512) == 15
    for windows in [(None,) * 3, (8,) * 3, (8, 8, None), g3, layer_windows(42, 4096, 2)]:
        window, every = global_every_of(windows)
        assert layer_windows(len(windows), window, every) == windows
    assert global_every_of((8, None, None)) == (None, None)  # no such pattern: counted as global
    assert global_every_of((8, 16)) == (None, None)


def test_windowed_bytes_by_hand():
    # Gemma 3 270M at 32,768 tokens, bf16: 3 global layers x 32,768 positions, 15 local x 512; K and V of 1 x 256
    s, per_position = 32768, 2 * 1 * 256 * 2
    assert windowed_cache_bytes(layer_windows(18, 512, 6), 1, 256, s, dtype="bf16") == (3 * s + 15 * 512) * per_position
    assert (3 * s + 15 * 512) * per_position == 108_527_616  # 103.5 MiB, against 576 MiB for a full cache
    assert kv_cache_bytes(18, 1, 256, s, dtype="bf16") == 18 * s * per_position == 603_979_776
    # Mistral-7B: 32 layers x 8 KV heads x 128, every layer at min(S, 4096)
    m = load_presets()["mistral-7b"]
    assert m.windowed_bytes(32768, 1, "fp16") == 32 * 4096 * 2 * 8 * 128 * 2 == 512 * 1024**2
    assert m.windowed_bytes(4096, 1, "fp16") == kv_cache_bytes(32, 8, 128, 4096) == m.windowed_bytes(4096)
    # Gemma-2-9B: 21 global layers at S, 21 local at 4096; 8 KV heads x 256, batch 2
    g2 = load_presets()["gemma-2-9b"]
    assert g2.windowed_bytes(8192, 2, "bf16") == (21 * 8192 + 21 * 4096) * 2 * 2 * 8 * 256 * 2
    # Gemma-3-27B: 62 layers (10 global), 16 KV heads x 128, window 1024
    g27 = load_presets()["gemma-3-27b"]
    assert g27.layer_windows.count(None) == 10
    assert g27.windowed_bytes(131072, 1, "bf16") == (10 * 131072 + 52 * 1024) * 2 * 16 * 128 * 2
    # below every window a windowed cache is the full cache; int4 rounds the element count up once
    assert windowed_cache_bytes((8, None, 8), 3, 5, 7, dtype="int4") == kv_cache_bytes(3, 3, 5, 7, dtype="int4")
    assert windowed_cache_bytes((2, None), 1, 1, 3, dtype="int4") == (2 * (2 + 3) * 4 + 7) // 8


def test_presets_without_windows_keep_the_full_cache_and_mla_its_latent():
    for p in load_presets().values():
        if p.is_mla:
            assert p.windowed_bytes(4096, 1, "bf16") == mla_cache_bytes(p.n_layers, 512, 64, 4096, 1, "bf16")
        elif p.sliding_window is None:
            full = kv_cache_bytes(p.n_layers, p.n_kv_heads, p.head_dim, 100_000, 3, "fp8")
            assert p.windowed_bytes(100_000, 3, "fp8") == full


def test_gemma_presets_match_their_configs():
    g = load_presets()
    small = g["gemma-3-270m"]
    assert (small.n_layers, small.n_heads, small.n_kv_heads, small.head_dim, small.sliding_window) == (
        18,
        4,
        1,
        256,
        512,
    )
    assert (small.global_every, small.attention, small.n_params) == (6, "MQA", 268_098_176)
    assert (g["gemma-2-9b"].sliding_window, g["gemma-2-9b"].global_every) == (4096, 2)
    assert (g["mistral-7b"].sliding_window, g["mistral-7b"].global_every) == (4096, None)


def test_bad_windows_are_refused():
    base = dict(load_presets()["gemma-2-9b"].__dict__)
    with pytest.raises(ConfigError) as err:
        ModelPreset(**{**base, "sliding_window": None, "global_every": 2}).validate()
    assert err.value.key == "kv_preset_invalid" and "global_every" in str(err.value)
    with pytest.raises(ConfigError):
        ModelPreset(**{**base, "global_every": 0}).validate()
    with pytest.raises(ConfigError):
        windowed_cache_bytes((0, None), 1, 8, 10)
