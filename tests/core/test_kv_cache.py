"""The preallocated KV cache and the live decode (attn_core.kv.cache), against torch and kv_cache_bytes."""

import pytest
import torch

import attn_core.kv.cache as kvc
from attn_core.attention.gqa import repeat_kv
from attn_core.attention.tokens import sinusoidal_positions
from attn_core.kv.cache import (
    DecodeConfig,
    KVCache,
    TinyDecoder,
    check_decode_budget,
    decode_need,
    generate_cached,
    generate_recompute,
    make_prompt,
    run_decode,
    time_prefill_vs_decode,
)
from attn_core.kv.memory import kv_cache_bytes
from attn_core.runtime.config import ConfigError

GQA = DecodeConfig(n_heads=8, n_kv_heads=2, head_dim=16, n_layers=2, d_model=64, vocab=128, dtype="fp32", seed=3)


# ---------------------------------------------------------------- KVCache
@pytest.mark.parametrize("dtype", ["fp32", "fp16", "bf16"])
def test_cache_appends_in_place_and_counts_bytes(dtype):
    torch.manual_seed(0)
    cache = KVCache(batch=2, n_kv_heads=3, max_seq_len=10, head_dim=4, dtype=dtype)
    tdt = kvc.TORCH_DTYPES[dtype]
    assert cache.k.shape == cache.v.shape == (2, 3, 10, 4) and cache.k.dtype == tdt
    assert cache.nbytes_allocated == kv_cache_bytes(1, 3, 4, 10, batch=2, dtype=dtype)
    assert cache.nbytes_used == 0
    chunks_k, chunks_v = [], []
    for t in (4, 1, 1, 3):
        k, v = torch.randn(2, 3, t, 4), torch.randn(2, 3, t, 4)
        chunks_k.append(k)
        chunks_v.append(v)
        k_all, v_all = cache.append(k, v)
        # the returned views are the buffers themselves, no copy
        assert k_all.data_ptr() == cache.k.data_ptr() and v_all.data_ptr() == cache.v.data_ptr()
        assert torch.equal(k_all, torch.cat(chunks_k, dim=2).to(tdt))
        assert torch.equal(v_all, torch.cat(chunks_v, dim=2).to(tdt))
        assert cache.nbytes_used == kv_cache_bytes(1, 3, 4, cache.length, batch=2, dtype=dtype)
    assert cache.length == 9
    cache.reset()
    assert cache.length == 0 and cache.nbytes_used == 0
    assert cache.nbytes_allocated == kv_cache_bytes(1, 3, 4, 10, batch=2, dtype=dtype)


def test_cache_refuses_overflow_and_wrong_shapes():
    cache = KVCache(1, 2, 4, 8)
    cache.append(torch.zeros(1, 2, 3, 8), torch.zeros(1, 2, 3, 8))
    with pytest.raises(ConfigError, match="holds 4 positions; appending 2 to 3 would need 5"):
        cache.append(torch.zeros(1, 2, 2, 8), torch.zeros(1, 2, 2, 8))
    with pytest.raises(ConfigError, match=r"\[B, H_kv, T, D\] = \[1, 2, T, 8\]"):
        cache.append(torch.zeros(1, 4, 1, 8), torch.zeros(1, 4, 1, 8))  # n_heads copies into an n_kv_heads cache
    with pytest.raises(ConfigError, match="k has 1 positions but v has 2"):
        cache.append(torch.zeros(1, 2, 1, 8), torch.zeros(1, 2, 2, 8))
    with pytest.raises(ConfigError, match="cache dtype 'int8' is not supported"):
        KVCache(1, 2, 4, 8, dtype="int8")
    with pytest.raises(ConfigError, match="max_seq_len"):
        KVCache(1, 2, 0, 8)


# ---------------------------------------------------------------- the model against the GQA layer
def reference_logits(model: TinyDecoder, tokens: torch.Tensor) -> torch.Tensor:
    """The same network through GroupedQueryAttention.forward (causal), the project's reference layer."""
    x = model.embed(tokens) + sinusoidal_positions(tokens.shape[1], model.cfg.d_model)
    for blk in model.blocks:
        x = x + blk.attn(blk.norm1(x), causal=True).output
        x = x + blk.mlp(blk.norm2(x))
    return model.unembed(model.norm_f(x))


def test_no_cache_path_equals_the_gqa_layer():
    model = TinyDecoder(GQA)
    tokens = make_prompt(GQA, 12)
    with torch.no_grad():
        torch.testing.assert_close(model(tokens), reference_logits(model, tokens), rtol=1e-5, atol=1e-5)


def test_the_decoder_attends_through_the_gqa_layer_s_own_code(monkeypatch):
    """Each block runs GroupedQueryAttention.attend (scaled_dot_product_attention, what the other pages explain)
    on all the cache holds (its preallocated buffers, growing by one position a step), in float32."""
    from attn_core.attention.gqa import GroupedQueryAttention

    seen = []
    real = GroupedQueryAttention.attend

    def spy(self, q, k, v, mask=None, **kw):
        seen.append((tuple(q.shape), tuple(k.shape), k.dtype, kw.get("causal"), k.clone()))
        return real(self, q, k, v, mask, **kw)

    monkeypatch.setattr(GroupedQueryAttention, "attend", spy)
    cfg = DecodeConfig(**{**GQA.__dict__, "dtype": "fp16"})
    model = TinyDecoder(cfg)
    caches = model.new_caches(6)
    with torch.no_grad():
        model(make_prompt(cfg, 5), caches)  # the prefill: causal over its 5 positions
        model(make_prompt(cfg, 1), caches)  # one new token attends to all 6
    f32 = torch.float32
    shapes = [s[:4] for s in seen]
    assert shapes == [((1, 8, 5, 16), (1, 2, 5, 16), f32, True)] * 2 + [((1, 8, 1, 16), (1, 2, 6, 16), f32, False)] * 2
    for layer, (*_, keys) in enumerate(seen[2:]):  # the keys attended to are the cache's, fp16 values
        assert torch.equal(keys, caches[layer].views()[0].float())


def test_one_position_code_and_one_device_sync():
    from attn_core.attention import tokens
    from attn_core.runtime import device

    assert kvc.sinusoidal_positions is tokens.sinusoidal_positions and kvc.sync is device.sync


def test_cached_logits_equal_full_recompute_at_every_step():
    model = TinyDecoder(GQA)
    tokens = make_prompt(GQA, 10)
    caches = model.new_caches(10)
    with torch.no_grad():
        full = model(tokens)  # (B, 10, V)
        step = [model(tokens[:, :4], caches)]  # prefill of 4
        for i in range(4, 10):
            step.append(model(tokens[:, i : i + 1], caches))
    torch.testing.assert_close(torch.cat(step, dim=1), full, rtol=1e-5, atol=1e-5)
    # the cache holds exactly the layer's K projection of the normed input, n_kv_heads heads
    with torch.no_grad():
        x = model.embed(tokens) + sinusoidal_positions(10, GQA.d_model)
        k = model.blocks[0].attn.k_proj(model.blocks[0].norm1(x)).view(1, 10, 2, 16).transpose(1, 2)
    torch.testing.assert_close(caches[0].views()[0], k, rtol=1e-5, atol=1e-6)


def test_seeded_model_is_deterministic_and_leaves_the_global_rng_alone():
    torch.manual_seed(123)
    before = torch.rand(1)
    torch.manual_seed(123)
    a = TinyDecoder(GQA)
    after = torch.rand(1)
    b = TinyDecoder(GQA)
    assert torch.equal(before, after)
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters(), strict=True))
    c = TinyDecoder(DecodeConfig(**{**GQA.__dict__, "seed": 4}))
    assert not torch.equal(a.embed.weight, c.embed.weight)
    assert GQA.n_params() == sum(p.numel() for p in a.parameters())


# ---------------------------------------------------------------- generation
@pytest.mark.parametrize("dtype", ["fp32", "fp16", "bf16"])
def test_live_decode_measured_bytes_equal_the_formula_and_tokens_match(dtype):
    cfg = DecodeConfig(**{**GQA.__dict__, "dtype": dtype, "batch": 2})
    steps = list(run_decode(cfg, prompt_len=5, n_new=12))
    assert [s.step for s in steps] == list(range(1, 13))
    assert [s.seq_len for s in steps] == list(range(5, 17))  # prefill of 5, then one token per step
    for s in steps:
        expected = kv_cache_bytes(2, 2, 16, s.seq_len, batch=2, dtype=dtype)
        assert s.cache_bytes == s.formula_bytes == s.correct_bytes == expected
        assert s.allocated_bytes == kv_cache_bytes(2, 2, 16, 5 + 12 - 1, batch=2, dtype=dtype)
        assert s.cuda_bytes is None  # on the CPU
        assert s.time_cached_s > 0 and s.time_recompute_s > 0
    assert [s.token for s in steps] == [s.token_recompute for s in steps]


def test_decode_with_cache_gives_the_same_tokens_as_without():
    model = TinyDecoder(GQA)
    prompt = make_prompt(GQA, 7)
    cached = [int(t[0]) for t, _, _ in generate_cached(model, prompt, 20)]
    plain = [int(t[0]) for t, _ in generate_recompute(model, prompt, 20)]
    assert cached == plain
    # and both are the greedy continuation of the reference network
    seq = prompt
    with torch.no_grad():
        for _ in range(20):
            nxt = reference_logits(model, seq)[:, -1].argmax(-1)
            seq = torch.cat([seq, nxt[:, None]], dim=1)
    assert seq[0, 7:].tolist() == cached
    assert not torch.is_inference_mode_enabled()  # nothing leaks out of the generators


def test_timing_repeats_rewrite_the_same_positions():
    model = TinyDecoder(GQA)
    prompt = make_prompt(GQA, 5)
    once, thrice = model.new_caches(10), model.new_caches(10)
    a = [int(t[0]) for t, _, _ in generate_cached(model, prompt, 6, once)]
    b = [int(t[0]) for t, _, _ in generate_cached(model, prompt, 6, thrice, repeats=3)]
    r = [int(t[0]) for t, _ in generate_recompute(model, prompt, 6, repeats=2)]
    assert a == b == r
    assert once[0].length == thrice[0].length == 10
    for c1, c3 in zip(once, thrice, strict=True):
        assert torch.equal(c1.k, c3.k) and torch.equal(c1.v, c3.v)
    with pytest.raises(ConfigError, match="repeats"):
        next(generate_cached(model, prompt, 2, repeats=0))


def test_caching_after_repeat_kv_is_n_rep_times_larger_with_the_same_tokens():
    wrong_cfg = DecodeConfig(**{**GQA.__dict__, "cache_after_repeat": True})
    right = list(run_decode(GQA, 4, 8, recompute=False))
    wrong = list(run_decode(wrong_cfg, 4, 8, recompute=False))
    assert [s.token for s in wrong] == [s.token for s in right]
    for r, w in zip(right, wrong, strict=True):
        assert w.correct_bytes == r.cache_bytes
        assert w.cache_bytes == w.formula_bytes == 4 * r.cache_bytes  # n_heads / n_kv_heads = 8 / 2
        assert w.cache_bytes == kv_cache_bytes(2, 8, 16, w.seq_len, dtype="fp32")
    # the wrong cache holds the repeated heads: KV head g appears at query heads 4g .. 4g+3
    model = TinyDecoder(wrong_cfg)
    caches = model.new_caches(4)
    good = TinyDecoder(GQA)
    good_caches = good.new_caches(4)
    with torch.no_grad():
        model(make_prompt(GQA, 4), caches)
        good(make_prompt(GQA, 4), good_caches)
    assert torch.equal(caches[0].views()[0], repeat_kv(good_caches[0].views()[0], 4))


def test_mqa_and_mha_decode_bytes():
    for h, kv in ((4, 4), (4, 1)):
        cfg = DecodeConfig(n_heads=h, n_kv_heads=kv, head_dim=8, n_layers=3, d_model=32, vocab=64, dtype="bf16")
        last = list(run_decode(cfg, 3, 5, recompute=False))[-1]
        assert last.cache_bytes == 2 * 3 * 1 * kv * last.seq_len * 8 * 2


def test_stopping_early_keeps_what_was_measured():
    gen = run_decode(GQA, 4, 50)
    first = [next(gen) for _ in range(3)]
    gen.close()
    assert [s.seq_len for s in first] == [4, 5, 6]
    assert not torch.is_inference_mode_enabled()


def test_both_paths_are_warmed_up_then_timed_alike_and_interleaved(monkeypatch):
    """Before anything is timed each path runs once at the prompt's length; then every step alternates them."""
    calls = []
    real = kvc._timed_step

    def spy(model, tokens, caches):
        calls.append(("cached" if caches is not None else "full", tokens.shape[1]))
        return real(model, tokens, caches)

    monkeypatch.setattr(kvc, "_timed_step", spy)
    steps = list(run_decode(GQA, 5, 3, repeats=2))
    warm, timed = calls[:5], calls[5:]
    # warm-up: the prefill of the whole prompt, two one-token cached steps, full passes of 5 and 6 tokens
    assert warm == [("cached", 5), ("cached", 1), ("cached", 1), ("full", 5), ("full", 6)]
    # measured: per step, cached and full in turn, each repeated; the full pass grows by one token a step
    assert timed == [
        *[("cached", 5), ("full", 5)] * 2,
        *[("cached", 1), ("full", 6)] * 2,
        *[("cached", 1), ("full", 7)] * 2,
    ]
    assert [s.token for s in steps] == [s.token_recompute for s in steps]
    calls.clear()
    list(run_decode(GQA, 5, 2, recompute=False))
    assert ("full", 5) not in calls  # without recompute nothing runs the full pass


def step(i, seq_len, cached_ms, recompute_ms):
    return kvc.DecodeStep(i, seq_len, 0, 0, 0, 0, 0, 0, None, cached_ms / 1e3, recompute_ms / 1e3)


@pytest.mark.parametrize(
    ("cached", "recompute", "verdict"),
    [
        ([9.0, 1.0, 1.2, 1.1], [9.0, 3.0, 2.8, 3.3], "faster"),  # medians 1.1 against 3.0
        ([9.0, 2.0, 2.1, 1.9], [9.0, 2.1, 2.0, 2.2], "similar"),  # within 10 %
        ([9.0, 3.0, 2.9, 3.2], [9.0, 1.5, 1.6, 1.4], "slower"),  # the case: the cache slower at ~20 tokens
    ],
)
def test_decode_speed_compares_medians_after_the_prefill(cached, recompute, verdict):
    steps = [step(i + 1, 16 + i, c, r) for i, (c, r) in enumerate(zip(cached, recompute, strict=True))]
    speed = kvc.decode_speed(steps)
    assert speed.n == 3 and speed.max_context == 19  # step 1 (the prefill, the same work in both) is left out
    assert speed.cached_s == pytest.approx(sorted(cached[1:])[1] / 1e3)
    assert speed.recompute_s == pytest.approx(sorted(recompute[1:])[1] / 1e3)
    assert speed.verdict == verdict
    # one outlier does not decide the conclusion: a stall of 300 ms in one cached step leaves the median alone
    stalled = [steps[0], step(2, 17, 300.0, recompute[1]), *steps[2:]]
    assert kvc.decode_speed(stalled).cached_s == pytest.approx(sorted([300.0, *cached[2:]])[1] / 1e3)


def test_decode_speed_needs_recompute_times_and_a_step_after_the_prefill():
    assert kvc.decode_speed([step(1, 4, 1.0, 2.0)]) is None
    no_recompute = kvc.DecodeStep(2, 5, 0, None, 0, 0, 0, 0, None, 0.001, None)
    assert kvc.decode_speed([step(1, 4, 1.0, 2.0), no_recompute]) is None


def test_cache_shape_is_what_the_buffers_hold():
    wrong = DecodeConfig(**{**GQA.__dict__, "cache_after_repeat": True, "batch": 2})
    for cfg, heads in ((DecodeConfig(**{**GQA.__dict__, "batch": 2}), 2), (wrong, 8)):
        caches = TinyDecoder(cfg).new_caches(19)
        assert cfg.cache_shape(19) == tuple(caches[0].k.shape) == (2, heads, 19, 16)


# ---------------------------------------------------------------- memory budget
def test_budget_refuses_before_allocating(monkeypatch):
    def boom(*args, **kwargs):
        raise AssertionError("allocated despite the budget")

    monkeypatch.setattr(kvc, "TinyDecoder", boom)
    monkeypatch.setattr(kvc, "KVCache", boom)
    gen = run_decode(GQA, 16, 100, budget_bytes=10_000)
    with pytest.raises(ConfigError, match=r"needs about .* but only 9.77 KiB may be used on cpu") as info:
        next(gen)
    assert info.value.field == "budget"


def test_budget_need_counts_the_cache_exactly():
    need = decode_need(GQA, 16, 100)
    model = TinyDecoder(GQA)
    assert need.cache == sum(c.nbytes_allocated for c in model.new_caches(16 + 100 - 1))
    assert need.weights == 4 * sum(p.numel() for p in model.parameters())
    assert need.total == need.weights + need.cache + need.transient
    assert check_decode_budget(GQA, 16, 100, budget_bytes=need.total) == need
    with pytest.raises(ConfigError, match="lower the steps"):
        check_decode_budget(GQA, 16, 100, budget_bytes=need.total - 1)
    big = DecodeConfig(n_heads=128, n_kv_heads=128, head_dim=256, n_layers=8, batch=16)
    with pytest.raises(ConfigError):  # about 69 GiB of cache alone: refused on this machine
        check_decode_budget(big, 512, 2048, "cpu")


def test_the_project_memory_budget_applies(monkeypatch):
    need = decode_need(GQA, 16, 100)
    monkeypatch.setenv("ATTN_MAX_BYTES", str(need.total - 1))
    with pytest.raises(ConfigError, match=r"ATTN_MAX_BYTES"):
        check_decode_budget(GQA, 16, 100, "cpu")
    monkeypatch.setenv("ATTN_MAX_BYTES", str(need.total))
    assert check_decode_budget(GQA, 16, 100, "cpu") == need


def test_out_of_memory_mid_run_becomes_a_message(monkeypatch):
    def oom(*args, **kwargs):
        yield from ()
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")

    monkeypatch.setattr(kvc, "_decode_steps", oom)
    with pytest.raises(ConfigError, match="ran out of memory during the live decode"):
        list(run_decode(GQA, 4, 4))


class _Held:
    """Stands in for a failed step's tensors on the device (a weak reference tells when they are freed)."""


@pytest.mark.parametrize("phase", ["decode", "prefill"])
def test_out_of_memory_leaves_nothing_of_the_failed_step_alive(monkeypatch, phase):
    """The message a page keeps (the live run's error, shown on every rerun) carries no chained out-of-memory
    error: its traceback held the failed frames, whose model and caches would have stayed on the GPU for as long
    as the session showed the message."""
    import weakref

    refs = []

    def oom_steps(*args, **kwargs):
        held = _Held()
        refs.append(weakref.ref(held))
        yield from ()
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")

    def oom_phases(*args, **kwargs):
        held = _Held()
        refs.append(weakref.ref(held))
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")

    monkeypatch.setattr(kvc, "_decode_steps", oom_steps)
    monkeypatch.setattr(kvc, "_time_phases", oom_phases)
    with pytest.raises(ConfigError, match="ran out of memory") as caught:
        list(run_decode(GQA, 4, 4)) if phase == "decode" else kvc.time_prefill_vs_decode(GQA, 8)
    err = caught.value
    assert err.key == "oom" and err.__cause__ is None and err.__context__ is None
    assert len(refs) == 1 and refs[0]() is None  # freed, though the error is still held here


def test_bad_decode_settings_are_config_errors():
    with pytest.raises(ConfigError, match="valid n_kv_heads: 1, 2, 4, 8"):
        TinyDecoder(DecodeConfig(n_heads=8, n_kv_heads=3))
    with pytest.raises(ConfigError, match="n_layers"):
        DecodeConfig(n_layers=0).validate()
    with pytest.raises(ConfigError, match="prompt_len"):
        next(run_decode(GQA, 0, 4))


# ---------------------------------------------------------------- prefill against decode
def test_prefill_and_decode_fill_the_same_cache():
    model = TinyDecoder(GQA)
    tokens = make_prompt(GQA, 9)
    a, b = model.new_caches(9), model.new_caches(9)
    with torch.no_grad():
        model(tokens, a)
        for i in range(9):
            model(tokens[:, i : i + 1], b)
    for ca, cb in zip(a, b, strict=True):
        torch.testing.assert_close(ca.views()[0], cb.views()[0], rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(ca.views()[1], cb.views()[1], rtol=1e-5, atol=1e-5)


def test_prefill_against_decode_timing():
    timing = time_prefill_vs_decode(GQA, 8, repeats=1)
    assert timing.n_tokens == 8 and timing.prefill_s > 0 and timing.decode_s > 0
    assert timing.decode_per_token_s == pytest.approx(timing.decode_s / 8)


# ---------------------------------------------------------------- CUDA
@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_cuda_memory_allocated_grows_by_exactly_the_cache_bytes():
    dev = torch.device("cuda")
    torch.cuda.synchronize()
    before = torch.cuda.memory_allocated(dev)
    # each buffer 1 x 2 x 64 x 16 x 2 B = 4 KiB, a multiple of the allocator's 512-byte rounding
    cache = KVCache(1, 2, 64, 16, "fp16", dev)
    assert torch.cuda.memory_allocated(dev) - before == cache.nbytes_allocated == kv_cache_bytes(1, 2, 16, 64)
    cache.append(torch.randn(1, 2, 5, 16, device=dev), torch.randn(1, 2, 5, 16, device=dev))
    assert cache.nbytes_used == kv_cache_bytes(1, 2, 16, 5)
    del cache
    # a live decode: prompt 5 + 12 new - 1 = 16 positions, fp32, 2 layers x 2 buffers of 2 x 16 x 16 x 4 = 2 KiB
    steps = list(run_decode(GQA, 5, 12, dev))
    for s in steps:
        assert s.cuda_bytes == s.allocated_bytes == kv_cache_bytes(2, 2, 16, 16, dtype="fp32")
        assert s.cache_bytes == s.formula_bytes
    assert [s.token for s in steps] == [s.token_recompute for s in steps]
