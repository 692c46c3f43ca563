"""attn_core.kv.convert: MHA -> GQA conversion, the conversion study and the two KV mapping conventions."""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from attn_core.attention.gqa import GroupedQueryAttention, kv_group_of, repeat_kv
from attn_core.attention.maps import compute_attention_maps, init_layer
from attn_core.attention.sources import SeededLayer
from attn_core.attention.tokens import embed, tokenize
from attn_core.figures import pool_max
from attn_core.kv import convert
from attn_core.kv.convert import (
    METHODS,
    MhaSpec,
    build_source,
    check_sim_size,
    conversion_errors,
    conversion_on_tokens,
    conversion_study,
    conversion_study_rows,
    correlated_mha,
    expand_kv,
    kv_head_for,
    kv_map,
    mapping_mismatch,
    mapping_mismatch_rows,
    mapping_on_source,
    mean_kl,
    mha_to_gqa,
    pair_from_mismatch,
    pair_maps_rows,
    pair_on_source,
    study_rows,
    weights_with_mapping,
)
from attn_core.runtime.config import AttentionConfig, ConfigError, divisors

TOKS = tokenize("the cat sat on the mat because it was tired")


def mha(d_model=48, h=6, d=8, bias=False, seed=0):
    return init_layer(GroupedQueryAttention(d_model, h, h, head_dim=d, bias=bias), seed)


def x_of(d_model=48, seed=0):
    return embed(TOKS, d_model, seed)[None]  # (1, T, d_model)


@pytest.mark.parametrize("method", ["mean", "first"])
@pytest.mark.parametrize("bias", [False, True])
def test_conversion_to_n_heads_reproduces_the_layer_exactly(method, bias):
    m = mha(bias=bias)
    if bias:
        with torch.no_grad():
            for p in (m.q_proj.bias, m.k_proj.bias, m.v_proj.bias, m.o_proj.bias):
                p.normal_()
    g = mha_to_gqa(m, m.n_heads, method)
    assert g is not m and g.n_kv_heads == m.n_heads
    for (name, a), (_, b) in zip(m.state_dict().items(), g.state_dict().items(), strict=True):
        assert torch.equal(a, b), name
    x = x_of()
    with torch.no_grad():
        assert torch.equal(m(x, causal=True).output, g(x, causal=True).output)


def test_mean_pools_each_contiguous_group_and_copies_q_and_o():
    m = mha(h=6, d=4, d_model=24)
    g = mha_to_gqa(m, 2, "mean")
    wk, wv = m.k_proj.weight, m.v_proj.weight  # (6*4, 24)
    for kv in range(2):
        members = [h for h in range(6) if kv_group_of(h, 6, 2) == kv]  # heads 0-2, 3-5
        expect_k = sum(wk[h * 4 : (h + 1) * 4] for h in members) / len(members)
        expect_v = sum(wv[h * 4 : (h + 1) * 4] for h in members) / len(members)
        torch.testing.assert_close(g.k_proj.weight[kv * 4 : (kv + 1) * 4], expect_k)
        torch.testing.assert_close(g.v_proj.weight[kv * 4 : (kv + 1) * 4], expect_v)
    assert torch.equal(g.q_proj.weight, m.q_proj.weight) and torch.equal(g.o_proj.weight, m.o_proj.weight)
    first = mha_to_gqa(m, 2, "first")
    assert torch.equal(first.k_proj.weight[4:8], wk[12:16])  # KV head 1 <- query head 3
    # a new module: changing it leaves the source alone
    with torch.no_grad():
        g.q_proj.weight.zero_()
    assert m.q_proj.weight.abs().sum() > 0


@pytest.mark.parametrize("n_kv", [1, 2, 3])
def test_identical_kv_heads_in_each_group_make_mean_and_first_exact(n_kv):
    m = mha(h=6)
    n_rep, d = 6 // n_kv, m.head_dim
    with torch.no_grad():
        for lin in (m.k_proj, m.v_proj):
            w = lin.weight.view(6, d, -1)
            for h in range(6):
                w[h] = w[(h // n_rep) * n_rep]  # every head a copy of its group's first
    x = x_of()
    with torch.no_grad():
        ref = m(x)
        for method in ("mean", "first"):
            out = mha_to_gqa(m, n_kv, method)(x)
            torch.testing.assert_close(out.output, ref.output, atol=1e-6, rtol=1e-5)
            torch.testing.assert_close(out.weights, ref.weights, atol=1e-6, rtol=1e-5)
        rel, kl = conversion_errors(m, mha_to_gqa(m, n_kv, "random", seed=1), x)
    assert rel > 0.2 and kl > 0.01


def test_random_heads_are_seeded_and_keep_the_scale():
    m = mha(h=8, d=16, d_model=128)
    a, b, c = (mha_to_gqa(m, 2, "random", seed=s) for s in (0, 0, 1))
    assert torch.equal(a.k_proj.weight, b.k_proj.weight) and not torch.equal(a.k_proj.weight, c.k_proj.weight)

    def rms(w):
        return float(w.detach().pow(2).mean().sqrt())

    assert rms(a.k_proj.weight) == pytest.approx(rms(m.k_proj.weight), rel=0.1)
    assert torch.equal(a.q_proj.weight, m.q_proj.weight)


@pytest.mark.parametrize(
    "call,match",
    [
        (lambda m: mha_to_gqa(m, 4), "divisible"),
        (lambda m: mha_to_gqa(m, 2, "median"), "method"),
        (lambda m: mha_to_gqa(m, 12), "n_kv_heads"),
        (lambda m: mha_to_gqa(mha_to_gqa(m, 2), 1), "must be MHA"),
        (lambda m: mha_to_gqa("not a layer", 2), "GroupedQueryAttention"),
    ],
)
def test_bad_conversions_raise_config_errors(call, match):
    with pytest.raises(ConfigError, match=match):
        call(mha())


def test_mean_kl_matches_torch_kl_div():
    g = torch.Generator().manual_seed(0)
    s1, s2 = torch.randn(3, 5, 7, generator=g), torch.randn(3, 5, 7, generator=g)
    p_log, q_log = torch.log_softmax(s1, -1), torch.log_softmax(s2, -1)
    ref = F.kl_div(q_log, p_log, log_target=True, reduction="none").sum(-1).mean()
    assert mean_kl(p_log, q_log) == pytest.approx(float(ref), rel=1e-5)
    assert mean_kl(p_log, p_log) == 0.0
    # causal rows: masked keys (-inf in both) add nothing
    mask = torch.ones(5, 7, dtype=torch.bool).tril()
    lp = torch.log_softmax(s1.masked_fill(~mask, float("-inf")), -1)
    lq = torch.log_softmax(s2.masked_fill(~mask, float("-inf")), -1)
    assert math.isfinite(mean_kl(lp, lq)) and mean_kl(lp, lq) > 0


def test_conversion_errors_by_hand():
    m, x = mha(), x_of()
    g = mha_to_gqa(m, 2, "first")
    rel, kl = conversion_errors(m, g, x)
    with torch.no_grad():
        a, b = m(x), g(x)
    expect_rel = float(torch.sqrt(((b.output - a.output) ** 2).sum() / (a.output**2).sum()))
    assert rel == pytest.approx(expect_rel, rel=1e-5)
    p = a.weights.double()
    expect_kl = float((p * (p.log() - b.weights.double().log())).sum(-1).mean())
    assert kl == pytest.approx(expect_kl, rel=1e-3)


def test_study_covers_every_divisor_and_is_exact_at_mha():
    m, x = mha(h=6), x_of()
    s = conversion_study(m, x)
    assert s.n_kv == (1, 2, 3, 6) == tuple(divisors(6))
    for method in METHODS:
        assert s.rel_l2[method].shape == (4,) and np.all(np.isfinite(s.kl[method]))
    assert s.rel_l2["mean"][-1] == 0 and s.rel_l2["first"][-1] == 0 and s.kl["mean"][-1] == 0
    assert s.rel_l2["random"][-1] > 0.5
    rel, kl = conversion_errors(m, mha_to_gqa(m, 2, "first"), x)
    assert s.rel_l2["first"][1] == pytest.approx(rel) and s.kl["first"][1] == pytest.approx(kl)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_correlated_heads_order_mean_first_random(seed):
    """Heads that are noisy copies of 2 base heads: whenever each group holds copies of one base, mean < first < random."""
    h, d, d_model = 8, 16, 128
    m = correlated_mha(d_model, h, d, n_base=2, noise=0.3, seed=seed)
    s = conversion_study(m, embed(TOKS, d_model, seed)[None], seed=seed)
    for i, kv in enumerate(s.n_kv):
        if kv % 2 or kv == h:
            continue
        for metric in (s.rel_l2, s.kl):
            assert metric["mean"][i] < metric["first"][i] < metric["random"][i], (kv, metric)


def test_correlated_heads_are_copies_of_their_base():
    m = correlated_mha(32, 4, 8, n_base=2, noise=0.0, seed=3)
    for lin in (m.q_proj, m.k_proj, m.v_proj):
        w = lin.weight.view(4, 8, 32)
        assert torch.equal(w[0], w[1]) and torch.equal(w[2], w[3]) and not torch.equal(w[0], w[2])
        assert float(w.detach().var()) == pytest.approx(1 / 32, rel=0.3)
    noisy = correlated_mha(32, 4, 8, n_base=2, noise=0.5, seed=3)
    assert not torch.equal(noisy.k_proj.weight.view(4, 8, 32)[0], noisy.k_proj.weight.view(4, 8, 32)[1])
    with pytest.raises(ConfigError, match="noise"):
        correlated_mha(32, 4, 8, n_base=2, noise=-1)
    with pytest.raises(ConfigError, match="n_base"):
        correlated_mha(32, 4, 8, n_base=5, noise=0.1)
    with pytest.raises(ConfigError, match="source"):
        build_source("trained", 32, 4, 8)


# ---------------------------------------------------------------- mapping conventions
@pytest.mark.parametrize("h,kv", [(8, 2), (12, 3), (12, 4), (6, 6), (6, 1), (64, 8)])
def test_mappings_agree_with_kv_group_of_and_modulo(h, kv):
    assert kv_map(h, kv, "contiguous") == [kv_group_of(i, h, kv) for i in range(h)]
    assert kv_map(h, kv, "interleaved") == [i % kv for i in range(h)]
    assert all(kv_head_for(i, h, kv) == kv_group_of(i, h, kv) for i in range(h))
    # MHA and MQA: both conventions coincide; GQA: they differ
    same = kv_map(h, kv, "contiguous") == kv_map(h, kv, "interleaved")
    assert same == (kv in (1, h))


def test_expand_kv_matches_torch_repeat_functions():
    x = torch.randn(2, 3, 5, 4)
    c = expand_kv(x, 4, "contiguous")
    i = expand_kv(x, 4, "interleaved")
    assert torch.equal(c, torch.repeat_interleave(x, 4, dim=1)) and torch.equal(c, repeat_kv(x, 4))
    assert torch.equal(i, x.repeat(1, 4, 1, 1))
    for h in range(12):
        assert torch.equal(c[:, h], x[:, kv_head_for(h, 12, 3, "contiguous")])
        assert torch.equal(i[:, h], x[:, h % 3])
    with pytest.raises(ConfigError, match="mapping"):
        expand_kv(x, 2, "shuffled")


def test_contiguous_weights_reproduce_the_layer_and_interleaved_match_by_hand():
    cfg = AttentionConfig(n_heads=8, n_kv_heads=2, head_dim=16)
    m = compute_attention_maps(cfg, TOKS, mask_kind="causal")
    w_c = weights_with_mapping(m.q, m.k, m.scale, m.mask, "contiguous")
    np.testing.assert_allclose(w_c, m.weights, atol=1e-6)
    w_i = weights_with_mapping(m.q, m.k, m.scale, m.mask, "interleaved")
    for h in range(8):
        s = torch.from_numpy(m.q[h] @ m.k[h % 2].T * m.scale).masked_fill(~torch.from_numpy(m.mask), float("-inf"))
        np.testing.assert_allclose(w_i[h], torch.softmax(s, -1).numpy(), atol=1e-6)


@pytest.mark.parametrize("built_with", ["contiguous", "interleaved"])
def test_mapping_mismatch_changes_exactly_the_heads_that_read_another_kv_head(built_with):
    m = compute_attention_maps(AttentionConfig(n_heads=8, n_kv_heads=2, head_dim=16), TOKS)
    mm = mapping_mismatch(m.q, m.k, m.scale, m.mask, built_with)
    assert mm.run_with != built_with
    assert mm.built == tuple(kv_map(8, 2, built_with)) and mm.run == tuple(kv_map(8, 2, mm.run_with))
    for h in range(8):
        if mm.built[h] == mm.run[h]:
            assert mm.kl[h] == 0 and np.array_equal(mm.weights_built[h], mm.weights_run[h])
        else:
            assert mm.kl[h] > 1e-3 and not np.allclose(mm.weights_built[h], mm.weights_run[h])
    if built_with == "contiguous":
        np.testing.assert_allclose(mm.weights_built, m.weights, atol=1e-6)
    assert sum(a != b for a, b in zip(mm.built, mm.run, strict=True)) == 4  # heads 1, 3, 4, 6


def test_simulation_size_guard():
    check_sim_size(4096, 32, 128)  # exactly 2**24
    with pytest.raises(ConfigError, match="d_model × n_heads × head_dim"):
        check_sim_size(4096, 64, 128)


# ---------------------------------------------------------------- long sequences: by chunks of rows, on some rows
LONG = [f"w{i % 9}" for i in range(40)]


def test_study_rows_are_all_rows_or_an_even_subset():
    assert study_rows(8, 100, 100, cells=8 * 100 * 100) == range(100)
    rows = study_rows(64, 8192, 8192, cells=2**24)
    assert rows == range(0, 8192, 256) and len(rows) == 32
    assert len(study_rows(64, 8192, 8192, cells=1)) == 1  # at least one row


@pytest.mark.parametrize("built_with", ["contiguous", "interleaved"])
def test_mapping_by_chunks_equals_the_full_computation(built_with):
    m = compute_attention_maps(AttentionConfig(n_heads=8, n_kv_heads=2, head_dim=16), LONG)
    full = mapping_mismatch(m.q, m.k, m.scale, m.mask, built_with)
    rows = mapping_mismatch_rows(m.q, m.k, m.scale, built_with, chunk_cells=500)  # many small chunks
    np.testing.assert_allclose(rows.kl, full.kl, rtol=1e-6, atol=1e-9)  # float32 scores
    assert rows.built == full.built and rows.run == full.run and not rows.full and not rows.subset
    # on every 3rd row: the mean over exactly those rows (each row's KL depends on its query and all keys)
    some = mapping_mismatch_rows(m.q, m.k, m.scale, built_with, rows=range(0, 40, 3))
    by_hand = mapping_mismatch(m.q[:, ::3], m.k, m.scale, m.mask[::3], built_with)
    np.testing.assert_allclose(some.kl, by_hand.kl, rtol=1e-6, atol=1e-9)
    assert some.subset and (some.kl_rows, some.t_q, some.row_step) == (14, 40, 3)


@pytest.mark.parametrize("side", [64, 7])
def test_pair_maps_by_chunks_are_the_pooled_exact_maps(side):
    m = compute_attention_maps(AttentionConfig(n_heads=8, n_kv_heads=2, head_dim=16), LONG)
    mm = mapping_mismatch(m.q, m.k, m.scale, m.mask, "contiguous")
    for h in (1, 3):
        exact = pair_from_mismatch(mm, h)
        assert exact.max_diff == pytest.approx(float(np.max(np.abs(mm.weights_built[h] - mm.weights_run[h]))))
        wb, wr, f, diff = pair_maps_rows(m.q[h], m.k[mm.built[h]], m.k[mm.run[h]], m.scale, side, chunk_cells=3000)
        pooled, f_exact = pool_max(np.stack([exact.weights_built, exact.weights_run]), side)
        assert f == f_exact == (1 if side == 64 else 6)
        np.testing.assert_allclose(wb, pooled[0], atol=1e-6)
        np.testing.assert_allclose(wr, pooled[1], atol=1e-6)
        assert diff == pytest.approx(exact.max_diff, abs=1e-6)


def test_conversion_by_chunks_equals_the_full_study_and_on_rows_the_rows_by_hand():
    m, x = correlated_mha(48, 6, 8, n_base=2, noise=0.3), embed(LONG, 48, 0)[None]
    full = conversion_study(m, x)
    chunked = conversion_study_rows(m, x, chunk_cells=1000)
    assert chunked.n_kv == full.n_kv and not chunked.subset and full.n_rows == full.t_q == 40
    for method in METHODS:
        np.testing.assert_allclose(chunked.rel_l2[method], full.rel_l2[method], rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(chunked.kl[method], full.kl[method], rtol=1e-4, atol=1e-6)
    rows = range(1, 40, 5)
    some = conversion_study_rows(m, x, rows, chunk_cells=1000)
    assert some.subset and (some.n_rows, some.t_q, some.row_step) == (8, 40, 5)
    with torch.no_grad():
        ref = m(x)
        for i, kv in enumerate(some.n_kv):
            for method in METHODS:
                out = mha_to_gqa(m, kv, method)(x)
                a, b = ref.output[0, list(rows)], out.output[0, list(rows)]
                rel = float(torch.linalg.vector_norm(b - a) / torch.linalg.vector_norm(a))
                kl = mean_kl(
                    torch.log_softmax(ref.scores[:, :, list(rows)], -1),
                    torch.log_softmax(out.scores[:, :, list(rows)], -1),
                )
                assert some.rel_l2[method][i] == pytest.approx(rel, rel=1e-5, abs=1e-6)
                assert some.kl[method][i] == pytest.approx(kl, rel=1e-4, abs=1e-6)


def test_long_paths_of_the_page_studies(monkeypatch):
    # Shrink the thresholds so 40 tokens take the long paths: the results are those of the rows they name.
    monkeypatch.setattr(convert, "EXACT_CELLS", 100)
    monkeypatch.setattr(convert, "STUDY_CELLS", 8 * 40 * 10)
    monkeypatch.setattr(convert, "CONV_CELLS", 8 * 40 * 5)
    mm = mapping_on_source(SeededLayer(8, 2, 16, tuple(LONG), d_model=128, seed=1))
    assert not mm.full and mm.subset and (mm.kl_rows, mm.row_step) == (10, 4)
    m = compute_attention_maps(AttentionConfig(n_heads=8, n_kv_heads=2, head_dim=16, d_model=128, seed=1), LONG)
    by_hand = mapping_mismatch(m.q[:, ::4], m.k, m.scale, m.mask[::4], "contiguous")
    np.testing.assert_allclose(mm.kl, by_hand.kl, rtol=1e-4, atol=1e-7)
    pair = pair_on_source(SeededLayer(8, 2, 16, tuple(LONG), d_model=128, seed=1), head=1)
    full = mapping_mismatch(m.q, m.k, m.scale, m.mask, "contiguous")
    np.testing.assert_allclose(pair.weights_built, full.weights_built[1], atol=1e-6)
    np.testing.assert_allclose(pair.weights_run, full.weights_run[1], atol=1e-6)
    assert (pair.kv_built, pair.kv_run, pair.factor) == (0, 1, 1)
    study = conversion_on_tokens(MhaSpec("correlated", 128, 8, 16, 2, 0.3, seed=1), LONG)
    assert study.subset and (study.n_rows, study.row_step) == (5, 8)
    src = build_source("correlated", 128, 8, 16, seed=1, n_base=2, noise=0.3)
    expect = conversion_study_rows(src, embed(LONG, 128, 1)[None], range(0, 40, 8), seed=1)
    for method in METHODS:
        np.testing.assert_allclose(study.rel_l2[method], expect.rel_l2[method], rtol=1e-6)


# ---------------------------------------------------------------- issue 12: rankings, mapping counts, groups, KL sign
def test_rank_methods_orders_and_ties_as_shown():
    # the case: random source, n_kv = 1: first (1.347) worse than random (1.255)
    assert convert.rank_methods({"mean": 0.919, "first": 1.347, "random": 1.255}, 3) == [
        ("mean",),
        ("random",),
        ("first",),
    ]
    # equal to the shown precision: tied (mean and first both give back identical heads), -0.0 ties with 0.0
    assert convert.rank_methods({"mean": -0.0, "first": 4e-9, "random": 1.3}, 3) == [("mean", "first"), ("random",)]
    assert convert.rank_methods({"mean": 0.1231, "first": 0.1234, "random": 1.0}, 3) == [("mean", "first"), ("random",)]
    assert convert.rank_methods({"mean": 0.1231, "first": 0.1234, "random": 1.0}, 4) == [
        ("mean",),
        ("first",),
        ("random",),
    ]
    assert convert.rank_methods({"mean": float("nan"), "first": 1.0, "random": 0.5}, 3) == [("random",), ("first",)]


def test_paper_order_is_mean_first_random_strictly():
    # Ainslie et al. 2023 (arXiv 2305.13245): mean pooling > first head > random initialisation, after uptraining
    assert convert.PAPER_ORDER == ("mean", "first", "random")
    assert convert.is_paper_order([("mean",), ("first",), ("random",)])
    assert not convert.is_paper_order([("mean",), ("random",), ("first",)])
    assert not convert.is_paper_order([("mean", "first"), ("random",)])


@pytest.mark.parametrize(
    "h,kv,expected",
    [
        (8, 2, [1, 3, 4, 6]),  # exactly half with 2 KV heads: h // 4 = 0,0,0,0,1,1,1,1 against h % 2 = 0,1,0,1,...
        (8, 4, [1, 2, 3, 4, 5, 6]),  # h // 2 = 0,0,1,1,2,2,3,3 against h % 4 = 0,1,2,3,0,1,2,3
        (9, 3, [1, 2, 3, 5, 6, 7]),
        (8, 8, []),
        (8, 1, []),
    ],
)
def test_mismatched_heads_by_hand(h, kv, expected):
    assert convert.mismatched_heads(h, kv) == expected
    by_def = [q for q in range(h) if kv_head_for(q, h, kv, "contiguous") != kv_head_for(q, h, kv, "interleaved")]
    assert by_def == expected


@pytest.mark.parametrize(
    "h,kv,n_base,mixed",
    [
        (8, 1, 2, 1),  # heads 0-3 copy base 0, 4-7 base 1: the one MQA group holds both
        (8, 2, 2, 0),
        (8, 4, 2, 0),
        (8, 8, 2, 0),
        (12, 6, 4, 2),  # bases h // 3 = 0,0,0,1,1,1,2,2,2,3,3,3; pairs [0,1] and [4,5] straddle a base
        (12, 3, 4, 3),  # groups of 4: bases [0,0,0,1] [1,1,2,2] [2,3,3,3], all mixed
    ],
)
def test_mixed_groups_by_hand(h, kv, n_base, mixed):
    assert convert.base_heads(h, n_base) == [q * n_base // h for q in range(h)]
    assert convert.mixed_groups(h, kv, n_base) == mixed


def test_correlated_mha_copies_the_base_heads_of_base_heads():
    layer = correlated_mha(16, 6, 4, n_base=2, noise=0.0, seed=3)
    w = layer.k_proj.weight.detach().reshape(6, 4, 16)
    for h, b in enumerate(convert.base_heads(6, 2)):  # heads 0-2 copy base 0, 3-5 base 1
        assert torch.equal(w[h], w[3 * b])


def test_kl_is_never_negative_where_the_conversion_is_exact():
    # noise 0 and one base head: mean and first give back every head exactly, so their KL is 0 up to float
    # rounding, which used to come out as -0.0 (printed "-0.0000" on the page) for mean pooling at n_kv = 1
    study = conversion_on_tokens(MhaSpec("correlated", 128, 8, 16, n_base=1, noise=0.0, seed=0), TOKS)
    for m in ("mean", "first"):
        for value in map(float, study.kl[m]):
            assert 0.0 <= value < 1e-6
            assert f"{value:.4f}" == "0.0000"
