"""attn_core.saturation.stats: softmax statistics, the Jacobian, the saturation sweep, float16 numerics, memory guard."""

import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from attn_core.figures import pool_max
from attn_core.runtime import guard
from attn_core.runtime.config import ConfigError
from attn_core.saturation import stats

ROOT = Path(__file__).resolve().parents[2]


# ---------------------------------------------------------------- row statistics by hand
def test_entropy_and_max_weight_by_hand():
    p = torch.tensor([[0.5, 0.25, 0.25], [1.0, 0.0, 0.0], [1 / 3, 1 / 3, 1 / 3]])
    raw = stats.row_entropy(p, normalized=False)
    # H = -(0.5 ln 0.5 + 2 · 0.25 ln 0.25) = 1.5 ln 2; a one-hot row has H = 0; uniform over 3 has ln 3
    # float32 logs against exact values: float32 tolerances (the vectorised log differs between CPU kernels)
    np.testing.assert_allclose(raw.numpy(), [1.5 * math.log(2), 0.0, math.log(3)], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(
        stats.row_entropy(p).numpy(), [1.5 * math.log(2) / math.log(3), 0.0, 1.0], rtol=1e-5, atol=1e-6
    )
    np.testing.assert_allclose(stats.max_weight(p).numpy(), [0.5, 1.0, 1 / 3], rtol=1e-7)


def test_entropy_counts_only_unmasked_keys():
    p = torch.tensor([[0.5, 0.5, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0]])
    mask = torch.tensor([[True, True, False, False], [True, False, False, False]])
    # two allowed keys with equal weight: H / log 2 = 1; one allowed key: 0 by definition
    np.testing.assert_allclose(stats.row_entropy(p, mask=mask).numpy(), [1.0, 0.0], rtol=1e-5, atol=1e-6)
    # without the mask the same row counts four keys: ln 2 / ln 4 = 0.5
    assert stats.row_entropy(p)[0].item() == pytest.approx(0.5, abs=1e-7)


def test_saturated_fraction_by_hand():
    rows = torch.tensor(
        [[0.995, 0.005, 0.0], [0.5, 0.3, 0.2], [0.9999, 0.0001, 0.0], [0.98, 0.01, 0.01]], dtype=torch.float64
    )
    assert stats.saturated_fraction(rows) == 0.5  # rows 0 and 2 exceed 0.99
    assert stats.saturated_fraction(rows, threshold=0.9) == 0.75


# ---------------------------------------------------------------- Jacobian against torch
def test_softmax_jacobian_matches_autograd():
    z = torch.randn(7, dtype=torch.float64, generator=torch.Generator().manual_seed(0)) * 3
    expected = torch.autograd.functional.jacobian(lambda x: torch.softmax(x, -1), z)  # (7, 7)
    ours = stats.softmax_jacobian(torch.softmax(z, -1))
    torch.testing.assert_close(ours, expected, rtol=1e-10, atol=1e-12)


def test_softmax_jacobian_batched_matches_autograd_per_row():
    z = torch.randn(2, 3, 5, dtype=torch.float64, generator=torch.Generator().manual_seed(1)) * 4
    ours = stats.softmax_jacobian(torch.softmax(z, -1))
    assert ours.shape == (2, 3, 5, 5)
    for b in range(2):
        for r in range(3):
            ref = torch.autograd.functional.jacobian(lambda x: torch.softmax(x, -1), z[b, r])
            torch.testing.assert_close(ours[b, r], ref, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(ours.sum(-1), torch.zeros(2, 3, 5, dtype=torch.float64))  # rows sum to 0


def test_jacobian_norm_is_frobenius_of_the_jacobian():
    z = torch.randn(4, 6, 9, generator=torch.Generator().manual_seed(2)) * torch.tensor([0.1, 1, 5, 30])[:, None, None]
    p = torch.softmax(z.double(), -1)
    expected = torch.linalg.matrix_norm(stats.softmax_jacobian(p))  # (4, 6)
    torch.testing.assert_close(stats.jacobian_norm(p).double(), expected, rtol=1e-5, atol=1e-6)
    # uniform over T: J = I/T - 11ᵀ/T², ‖J‖²_F = (T - 1)/T²
    t = 16
    assert stats.jacobian_norm(torch.full((t,), 1 / t)).item() == pytest.approx(math.sqrt(t - 1) / t, rel=1e-6)
    # one-hot: every entry is 0
    assert stats.jacobian_norm(torch.tensor([1.0, 0.0, 0.0])).item() == 0.0


# ---------------------------------------------------------------- the sweep
def check_norm(df_row, name: str, norms: torch.Tensor, atol: float = 1e-7) -> None:
    """The sweep's mean, median and share below SMALL_NORM of one per-row norm, against ``norms`` [R] (float64).

    The sweep's softmax and autograd run in float32: near saturation about ``atol`` of a norm is rounding
    (softmax's backward p (g - p·g) cancels), and a row within that of the threshold could fall on either
    side of it (none does here: checked below).
    """
    x = norms.numpy()
    assert getattr(df_row, name) == pytest.approx(x.mean(), rel=1e-4, abs=atol), name
    assert getattr(df_row, f"{name}_median") == pytest.approx(np.median(x), rel=1e-4, abs=atol), name
    assert not np.any(np.abs(x - stats.SMALL_NORM) < max(atol, 1e-4 * stats.SMALL_NORM))
    assert getattr(df_row, f"{name}_small") == pytest.approx(np.mean(x < stats.SMALL_NORM), abs=1e-12), name


def check_against_recomputation(df, q_of, g, t: int, tau: float) -> None:
    """Every column of the sweep ``df`` against plain torch: scores, softmax, the explicit Jacobian [R, T, T],
    ∂L/∂z = J G and ∂L/∂q = (c / τ) Σ_j (∂L/∂z_j) k_j by the formula, in float64 (the sweep: autograd in float32)."""
    g = g.double().reshape(-1, t)  # (R, T)
    for row in df.itertuples():
        q, k = q_of(row.d_k)  # (S, queries, d_k), (S, T, d_k)
        s = (q.double() @ k.double().transpose(-2, -1)).reshape(-1, t)  # (R, T) every measured row
        c = 1 / math.sqrt(row.d_k) if row.scaled else 1.0
        z = s * c / tau
        p = torch.softmax(z, -1)
        jac = stats.softmax_jacobian(p)  # (R, T, T)
        grad_by_jacobian = (jac @ g[..., None])[..., 0]  # J is symmetric, so Jᵀ G = J G
        grad_q = (c / tau) * (grad_by_jacobian.reshape(q.shape[0], q.shape[1], t) @ k.double())  # (S, queries, d_k)
        check_norm(row, "grad_norm", grad_by_jacobian.norm(dim=-1))
        # ∂L/∂q sums ∂L/∂z_j k_j: its float32 rounding is that of ∂L/∂z (~1e-7) times (c / τ) ‖k‖
        atol_q = 1e-7 * (c / tau) * k.double().norm(dim=-1).max().item()
        check_norm(row, "grad_q_norm", grad_q.norm(dim=-1).reshape(-1), atol_q)
        check_norm(row, "jacobian_norm", torch.linalg.matrix_norm(jac))
        assert row.score_var == pytest.approx(np.var((s * c).numpy()), rel=1e-4)
        assert row.max_weight == pytest.approx(p.max(-1).values.mean().item(), rel=1e-5)
        ent = -torch.special.xlogy(p, p).sum(-1) / math.log(t)
        assert row.entropy == pytest.approx(ent.mean().item(), rel=1e-4, abs=1e-7)
        assert row.saturated_frac == pytest.approx((p.max(-1).values > 0.99).double().mean().item())
        zf = z.float()
        naive = torch.exp(zf.half()) / torch.exp(zf.half()).sum(-1, keepdim=True)
        naive_bad = ~torch.isfinite(naive.float()).all(-1) | (
            (naive.float().nan_to_num(0, 0, 0).sum(-1) - 1).abs() > 1e-2
        )
        assert row.fp16_naive_fail == pytest.approx(naive_bad.double().mean().item())
        assert row.measured_rows == s.shape[0]


def test_sweep_columns_match_independent_recomputation():
    d_values, t, n, seed, tau = (4, 64), 6, 32, 3, 0.7
    df = stats.saturation_sweep(d_values, t, n, seed, "cpu", "normal", tau)
    assert list(df.columns[:15]) == [
        "d_k",
        "scaled",
        "score_var",
        "max_weight",
        "entropy",
        "saturated_frac",
        "jacobian_norm",
        "grad_norm",
        "grad_q_norm",
        "jacobian_norm_median",
        "grad_norm_median",
        "grad_q_norm_median",
        "jacobian_norm_small",
        "grad_norm_small",
        "grad_q_norm_small",
    ]
    assert len(df) == 4 and df["d_k"].tolist() == [4, 4, 64, 64] and df["scaled"].tolist() == [False, True] * 2
    assert (df["measured_rows"] == n * t).all() and (df["total_rows"] == n * t).all()
    g = stats.downstream_weights(t, n, seed)  # (N, T, T)
    check_against_recomputation(df, lambda d: stats.sample_qk(d, t, n, seed), g, t, tau)


def test_row_plan_by_hand():
    plan = stats.row_plan(16, 256)  # the page's defaults: every row
    assert (plan.sequences, plan.queries, plan.rows, plan.total_rows, plan.complete) == (256, 16, 4096, 4096, True)
    plan = stats.row_plan(16, 16384)  # 262,144 rows: the first 4096 sequences (65,536 rows)
    assert (plan.sequences, plan.queries, plan.rows, plan.total_rows) == (4096, 16, 65536, 262144)
    assert plan.block == 256 and [b for b, _, _ in plan.blocks()] == list(range(16))
    plan = stats.row_plan(1000, 64)  # 8,388,608 // 1000 = 8388 rows: the first 8 sequences, 8,000 rows
    assert (plan.sequences, plan.queries, plan.rows, plan.scores) == (8, 1000, 8000, 8_000_000)
    assert list(plan.blocks()) == [(0, 4, 4), (1, 4, 4)]  # blocks of 4096 // 1000 = 4 sequences
    plan = stats.row_plan(8192, 256)  # 2,097,152 rows: every 8th query of the first sequence
    assert (plan.sequences, plan.queries, plan.rows, plan.total_rows) == (1, 1024, 1024, 2_097_152)
    assert plan.positions().tolist() == list(range(0, 8192, 8)) and not plan.complete
    assert plan.rows * 8192 == stats.MAX_MEASURED_SCORES
    for t, n in ((5000, 16), (8192, 16384), (3000, 300), (2, 10**6), (16, 16384), (1500, 64), (40, 7)):
        plan = stats.row_plan(t, n)
        assert plan.rows <= stats.MAX_MEASURED_ROWS and plan.scores <= stats.MAX_MEASURED_SCORES
        assert plan.chunk_scores() <= stats.CHUNK_SCORES
        chunks = [c for _, _, used in plan.blocks() for c in plan.chunks(used)]
        assert sum((i1 - i0) * (r1 - r0) for i0, i1, r0, r1 in chunks) == plan.rows  # each row once
        assert plan.chunk_scores() == max((i1 - i0) * (r1 - r0) for i0, i1, r0, r1 in chunks) * t


@pytest.fixture
def small_bounds(monkeypatch):
    """Bounds small enough that tiny samples use every path: several blocks, chunks, a subset of rows."""
    monkeypatch.setattr(stats, "BLOCK_ROWS", 12)
    monkeypatch.setattr(stats, "MAX_MEASURED_ROWS", 40)
    monkeypatch.setattr(stats, "MAX_MEASURED_SCORES", 200)
    monkeypatch.setattr(stats, "CHUNK_SCORES", 30)


@pytest.mark.parametrize("distribution", stats.DISTRIBUTIONS)
def test_first_sequences_mode_matches_independent_recomputation(small_bounds, distribution):
    t, n, seed, tau = 4, 50, 2, 1.3  # 200 rows; 40 measured: the first 10 sequences, in blocks of 3
    plan = stats.row_plan(t, n)
    assert (plan.sequences, plan.queries, plan.block) == (10, 4, 3) and not plan.complete
    df = stats.saturation_sweep((2, 32), t, n, seed, "cpu", distribution, tau)
    assert (df["measured_rows"] == 40).all() and (df["total_rows"] == 200).all()
    # what the sweep measured is the first 10 sequences of the whole sample, with the whole sample's G
    q_all, k_all = stats.sample_qk(32, t, n, seed, distribution)
    q, k, g = stats.measured_rows(32, t, n, seed, distribution)
    assert torch.equal(q, q_all[:10]) and torch.equal(k, k_all[:10])
    assert torch.equal(g, stats.downstream_weights(t, n, seed)[:10])
    check_against_recomputation(df, lambda d: stats.measured_rows(d, t, n, seed, distribution)[:2], g, t, tau)


@pytest.mark.parametrize("distribution", stats.DISTRIBUTIONS)
def test_spaced_queries_mode_matches_independent_recomputation(small_bounds, distribution):
    t, n, seed, tau = 100, 3, 5, 1.0  # 200 // 100 = 2 rows... fewer than one sequence: queries 0 and 50
    plan = stats.row_plan(t, n)
    assert (plan.sequences, plan.queries) == (1, 2) and plan.positions().tolist() == [0, 50]
    df = stats.saturation_sweep((1, 16, 512), t, n, seed, "cpu", distribution, tau)
    assert (df["measured_rows"] == 2).all() and (df["total_rows"] == 300).all()
    q_all, k_all = stats.sample_qk(16, t, n, seed, distribution)
    q, k, g = stats.measured_rows(16, t, n, seed, distribution)
    assert torch.equal(q, q_all[:1, [0, 50]]) and torch.equal(k, k_all[:1]) and g.shape == (1, 2, t)
    check_against_recomputation(df, lambda d: stats.measured_rows(d, t, n, seed, distribution)[:2], g, t, tau)
    sample = stats.score_sample(16, t, n, seed, "cpu", distribution)
    assert (sample.n_rows, sample.total_rows, sample.n_scores) == (2, 300, 200) and not sample.complete
    s = (q.double() @ k.double().transpose(-2, -1)).numpy()
    assert sample.raw_var == pytest.approx(np.var(s), rel=1e-6)
    assert sample.raw_var == pytest.approx(df[(df["d_k"] == 16) & ~df["scaled"]]["score_var"].item(), rel=1e-9)


def test_chunks_do_not_change_the_numbers(monkeypatch):
    whole = stats.saturation_sweep((4, 64), 24, 40, 1)
    monkeypatch.setattr(stats, "CHUNK_SCORES", 1000)  # one sequence (24 rows) per chunk instead of all 40
    chunked = stats.saturation_sweep((4, 64), 24, 40, 1)
    cols = [c for c in whole.columns if c != "scaled"]
    np.testing.assert_allclose(chunked[cols].to_numpy(float), whole[cols].to_numpy(float), rtol=1e-6)


@pytest.mark.parametrize("cached", [False, True])
def test_batches_of_pairs_do_not_change_the_numbers(monkeypatch, cached):
    """(d_k, scaling) pairs go through softmax together, up to CHUNK_SCORES scores: batches of one pair, of three
    (a d_k's two scalings split between batches) and of all of them give the same sweep."""
    d_values, t, n = (4, 64, 256), 6, 32  # 1,152 scores per d_k: the whole plan is one chunk
    runs = []
    for limit in (1152, 3 * 1152, 2**20):  # 1, 3 and 6 pairs a batch
        monkeypatch.setattr(stats, "CHUNK_SCORES", limit)
        scores = stats.sweep_scores(d_values, t, n, 5) if cached else None
        runs.append(stats.saturation_sweep(d_values, t, n, 5, temperature=0.7, scores=scores))
    cols = [c for c in runs[0].columns if c != "scaled"]
    for other in runs[1:]:
        np.testing.assert_allclose(other[cols].to_numpy(float), runs[0][cols].to_numpy(float), rtol=1e-12, atol=0)


# the keys' two bases (Rᵀ where T ≤ d_k, else K) in different shares
@pytest.mark.parametrize("t, n", [(6, 32), (24, 40), (1000, 3)])
def test_the_kept_scores_give_the_same_sweep_at_every_temperature(t, n):
    d_values = (4, 64) if t != 1000 else (16,)
    scores = stats.sweep_scores(d_values, t, n, 3)
    assert scores.nbytes == stats.sweep_scores_bytes(d_values, t, n) > 0
    for tau in (0.3, 1.0, 2.5):
        direct = stats.saturation_sweep(d_values, t, n, 3, temperature=tau)
        kept = stats.saturation_sweep(d_values, t, n, 3, temperature=tau, scores=scores)
        # the same per-row float32 numbers; the kept path measures every d_k at once, so only the order of the
        # float64 sums over the rows may differ
        assert list(kept.columns) == list(direct.columns)
        assert (kept["d_k"].tolist(), kept["scaled"].tolist()) == (direct["d_k"].tolist(), direct["scaled"].tolist())
        cols = [c for c in direct.columns if c != "scaled"]
        np.testing.assert_allclose(kept[cols].to_numpy(float), direct[cols].to_numpy(float), rtol=1e-12, atol=0)
    with pytest.raises(ValueError, match="drawn for"):  # scores of another draw are never mixed in
        stats.saturation_sweep(d_values, t, n, 4, scores=scores)


def test_the_scores_are_kept_only_within_their_budget(monkeypatch):
    need = stats.sweep_scores_bytes(stats.SWEEP_D_K, 16, 256)
    # by hand: 256 sequences × 16 rows × 16 keys float32, and per d_k the keys (d_k < 16) or Rᵀ [16, 16], float32
    by_hand = sum(4 * 256 * 16 * 16 + 256 * 16 * 4 * min(d, 16) for d in stats.SWEEP_D_K)
    assert need == by_hand == stats.sweep_scores(stats.SWEEP_D_K, 16, 256).nbytes
    monkeypatch.setattr(stats, "SCORE_CACHE_BYTES", need - 1)
    assert stats.sweep_scores(stats.SWEEP_D_K, 16, 256) is None
    with pytest.raises(ConfigError):  # a bad argument is still refused with its message
        stats.sweep_scores(stats.SWEEP_D_K, 0, 256)


@pytest.mark.parametrize("t, n", [(6, 32), (1000, 3)])
def test_scores_without_the_keys_basis_are_the_same_scores_and_refused_by_the_sweep(t, n):
    """``with_basis=False`` keeps the raw scores alone (the page's current d_k: histograms and largest weights, no
    gradient): the same float32 scores, chunk for chunk, its bytes counted without the bases, the weights measured
    from it the sweep's own, and the sweep, which needs the keys' basis for ∂L/∂q, refuses it."""
    d_values = (4, 64) if t != 1000 else (16,)
    full, bare = stats.sweep_scores(d_values, t, n, 3), stats.sweep_scores(d_values, t, n, 3, with_basis=False)
    assert bare.spec == full.spec and (bare.with_basis, full.with_basis) == (False, True)
    for part_full, part_bare in zip(full.chunks, bare.chunks, strict=True):
        for (b, r, s, basis), (b2, r2, s2, none) in zip(part_full, part_bare, strict=True):
            assert (b, r) == (b2, r2) and np.array_equal(s, s2) and basis is not None and none is None
    # by hand: float32 scores [n, r, T] per chunk, nothing else
    scores_only = sum(s.nbytes for part in full.chunks for _, _, s, _ in part)
    assert bare.nbytes == stats.sweep_scores_bytes(d_values, t, n, with_basis=False) == scores_only < full.nbytes
    d = d_values[-1]
    one = stats.sweep_scores((d,), t, n, 3, with_basis=False)
    assert stats.weight_summary(d, t, n, 3, temperature=0.6, scores=one) == stats.weight_summary(
        d, t, n, 3, temperature=0.6
    )
    with pytest.raises(ValueError, match="basis"):
        stats.saturation_sweep(d_values, t, n, 3, scores=bare)


@pytest.mark.parametrize("t, d", [(16, 16), (16, 1024), (8, 9)])
def test_the_key_basis_gives_the_norm_of_the_product_with_the_keys(t, d):
    gen = torch.Generator().manual_seed(t * d)
    k = torch.randn(64, t, d, generator=gen)
    k[0, -1] = k[0, 0] + 1e-4 * k[0, -1]  # two nearly equal keys: K Kᵀ nearly singular (its square is worse)
    g = torch.randn(3, 64, 5, t, generator=gen)
    g = g - g.mean(-1, keepdim=True)  # like ∂L/∂z, every row sums to 0
    basis = stats._key_basis(k)
    assert basis.shape == (64, t, min(t, d)) and basis.dtype == torch.float32
    expected = (g.double() @ k.double()).norm(dim=-1)  # ‖Kᵀg‖ in float64
    torch.testing.assert_close(stats._grad_q_norm(g, basis).double(), expected, rtol=1e-5, atol=1e-6)


def test_keys_that_are_linearly_dependent_are_factorised_by_qr():
    """K Kᵀ of a sequence with a zero key has a zero pivot: Cholesky fails there and QR gives Rᵀ instead (the
    other sequences keep their Cholesky factor)."""
    gen = torch.Generator().manual_seed(7)
    k = torch.randn(8, 6, 32, generator=gen)
    k[2, 3] = 0.0  # a zero key: K Kᵀ is singular
    k[5, 4] = 2.0 * k[5, 1]  # a key twice another
    kd = k.double()
    assert torch.linalg.cholesky_ex(kd @ kd.transpose(-2, -1)).info[2] != 0  # the fallback is taken
    g = torch.randn(8, 3, 6, generator=gen, dtype=torch.float64)
    basis = stats._key_basis(k)
    assert torch.isfinite(basis).all()
    torch.testing.assert_close(
        stats._grad_q_norm(g.float(), basis).double(), (g @ kd).norm(dim=-1), rtol=1e-5, atol=1e-5
    )


def test_score_variance_matches_theory_at_20000_samples():
    df = stats.saturation_sweep((1, 16, 128), seq_len=2, n_samples=20_000, seed=0)  # 80,000 scores per d_k
    for row in df.itertuples():
        target = 1.0 if row.scaled else float(row.d_k)
        assert abs(row.score_var / target - 1) < 0.05, (row.d_k, row.scaled, row.score_var)


def test_unscaled_d_k_512_saturates_and_scaled_does_not():
    df = stats.saturation_sweep((512,), seq_len=16, n_samples=256, seed=0).set_index("scaled")
    assert df.loc[False, "max_weight"] > 0.9
    assert df.loc[True, "max_weight"] < 0.35
    assert df.loc[False, "saturated_frac"] > 0.5 and df.loc[True, "saturated_frac"] == 0.0
    assert df.loc[False, "entropy"] < 0.1 < 0.8 < df.loc[True, "entropy"]


def test_gradient_falls_unscaled_and_stays_flat_scaled():
    df = stats.saturation_sweep(stats.SWEEP_D_K, seq_len=16, n_samples=256, seed=0)
    unscaled = df[~df["scaled"]].set_index("d_k")
    scaled = df[df["scaled"]].set_index("d_k")
    for col in ("grad_norm", "jacobian_norm"):
        tail = unscaled.loc[16:, col].to_numpy()
        assert np.all(np.diff(tail) < 0), (col, tail)  # strictly falling from d_k = 16 on
        assert unscaled.loc[1024, col] < 0.3 * unscaled.loc[16, col]
        flat = scaled[col].to_numpy()
        assert flat.max() / flat.min() < 1.15, (col, flat)
    # at d_k = 1 scaling changes nothing
    assert unscaled.loc[1, "grad_norm"] == scaled.loc[1, "grad_norm"]


def test_query_gradient_is_autograd_through_q_k_and_the_scaling():
    """∂L/∂q by autograd through the page's own computation (float64 here) equals the formula
    (c / τ) Σ_j (∂L/∂z_j) k_j, and for the same ∂L/∂z it is √d_k times larger unscaled."""
    q, k, g = stats.measured_rows(64, 8, 4, seed=1)  # (4, 8, 64), (4, 8, 64), (4, 8, 8)
    q, k, g = q.double().requires_grad_(True), k.double(), g.double()
    tau = 0.5
    for c in (1.0, 1 / 8):
        z = (q @ k.transpose(-2, -1)) * (c / tau)
        grad_z, grad_q = torch.autograd.grad(torch.softmax(z, -1), (z, q), grad_outputs=g)
        torch.testing.assert_close(grad_q, (c / tau) * grad_z @ k, rtol=1e-12, atol=1e-14)
        jac = stats.softmax_jacobian(torch.softmax(z.detach(), -1))
        torch.testing.assert_close(grad_z, (jac @ g[..., None])[..., 0], rtol=1e-10, atol=1e-14)
    df = stats.saturation_sweep((64,), 8, 4, 1, "cpu", "normal", tau).set_index("scaled")
    z_u = (q.detach() @ k.transpose(-2, -1)) / tau
    grad_z_u = torch.autograd.functional.vjp(lambda x: torch.softmax(x, -1), z_u, g)[1]
    assert df.loc[False, "grad_q_norm"] == pytest.approx((grad_z_u @ k / tau).norm(dim=-1).mean().item(), rel=1e-4)


def test_saturation_makes_the_query_gradient_vanish_for_most_rows_while_its_mean_grows():
    """Issue 12: at T = 16, d_k = 512 (the page's sample) unscaled, the median ‖∂L/∂q‖ collapses and many rows
    fall below 1e-3, while the mean is larger than scaled: the gradient is concentrated in a few rows."""
    df = stats.saturation_sweep((512,), seq_len=16, n_samples=256, seed=0).set_index("scaled")
    u, s = df.loc[False], df.loc[True]
    assert u["grad_q_norm_median"] < 0.05 * s["grad_q_norm_median"]
    assert u["grad_q_norm_small"] > 0.3 and s["grad_q_norm_small"] == 0.0
    assert u["grad_q_norm"] > 3 * s["grad_q_norm"]  # the mean alone says the opposite
    assert u["grad_norm_median"] < 0.01 * s["grad_norm_median"] and u["grad_norm_small"] > 0.3
    findings = stats.gradient_findings({flag: df.loc[flag].to_dict() for flag in (False, True)})
    assert (findings.median_q, findings.mean_q, findings.vanished, findings.concentrated) == (
        "lower",
        "higher",
        True,
        True,
    )


def test_long_sequences_reverse_the_comparison_at_d_k_64():
    """At T = 1024, d_k = 64 the unscaled rows get more gradient at every statistic: spread weights over
    1024 keys have a small Jacobian (evenly spread: √1023/1024 ≈ 0.031), and the findings say so."""
    df = stats.saturation_sweep((64,), seq_len=1024, n_samples=8, seed=0).set_index("scaled")
    u, s = df.loc[False], df.loc[True]
    for col in ("jacobian_norm", "grad_norm", "grad_norm_median", "grad_q_norm", "grad_q_norm_median"):
        assert u[col] > 2 * s[col], col
    assert s["jacobian_norm"] == pytest.approx(math.sqrt(1023) / 1024, rel=0.7)
    findings = stats.gradient_findings({flag: df.loc[flag].to_dict() for flag in (False, True)})
    assert (findings.median_q, findings.mean_z, findings.mean_j, findings.vanished) == (
        "higher",
        "higher",
        "higher",
        False,
    )


def test_gradient_findings_by_hand():
    base = {f"{n}{x}": 0.1 for n in stats.ROW_NORMS for x in ("", "_median")} | {
        f"{n}_small": 0.0 for n in stats.ROW_NORMS
    }
    same = stats.gradient_findings({False: base, True: dict(base)})
    assert same.identical and not same.vanished and not same.concentrated and same.median_q == "similar"
    u = base | {"grad_q_norm": 1.0, "grad_q_norm_median": 0.0, "grad_q_norm_small": 0.5, "grad_norm": 0.105}
    f = stats.gradient_findings({False: u, True: base})
    assert not f.identical and f.vanished and f.concentrated and f.skew_q == (math.inf, 1.0)
    assert (f.mean_q, f.median_q, f.mean_z) == ("higher", "lower", "similar")  # 0.105 / 0.1 is within 10 %
    # a share below 1e-3 of 10 % counts only when it is at least twice the scaled one
    f = stats.gradient_findings({False: u | {"grad_q_norm_small": 0.1}, True: base | {"grad_q_norm_small": 0.06}})
    assert not f.vanished
    assert stats.compare(0.0, 0.0) == "similar" and stats.compare(0.0, 1e-9) == "lower"


def test_projected_distribution_has_unit_variance_entries_and_saturates():
    # Mean square, not variance: the positions add a nearly constant vector, so one layer's W_Q, W_K
    # shift each entry by a fixed amount; averaged over layers (seeds) the entries have unit mean square.
    squares = []
    for seed in range(4):
        q, k = stats.sample_qk(64, 16, 256, seed=seed, distribution="projected")
        assert q.shape == k.shape == (256, 16, 64)
        squares.append([(q**2).mean().item(), (k**2).mean().item()])
    np.testing.assert_allclose(np.mean(squares, axis=0), [1.0, 1.0], rtol=0.05)
    df = stats.saturation_sweep((1024,), 16, 128, 0, "cpu", "projected").set_index("scaled")
    assert df.loc[False, "max_weight"] > 0.9 and df.loc[True, "max_weight"] < 0.35


def test_sampling_is_seeded_and_score_sample_agrees_with_the_sweep():
    a, _ = stats.sample_qk(8, 4, 10, seed=5)
    b, _ = stats.sample_qk(8, 4, 10, seed=5)
    c, _ = stats.sample_qk(8, 4, 10, seed=6)
    assert torch.equal(a, b) and not torch.equal(a, c)
    sample = stats.score_sample(32, seq_len=8, n_samples=64, seed=2, bins=40)
    df = stats.saturation_sweep((32,), 8, 64, 2).set_index("scaled")
    assert sample.raw_var == pytest.approx(df.loc[False, "score_var"], rel=1e-6)
    assert sample.scaled_var == pytest.approx(df.loc[True, "score_var"], rel=1e-6)
    assert sample.n_scores == 64 * 8 * 8 and sample.complete and sample.n_rows == sample.total_rows == 64 * 8
    q, k = stats.sample_qk(32, 8, 64, seed=2)
    example = stats.example_scores(32, 8, 64, seed=2)  # the first sequence, shown by the maps and the row
    assert example.shape == (8, 8) and example.dtype == np.float32
    np.testing.assert_allclose(example, (q[0] @ k[0].T).numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(stats.example_scores(32, 8, 64, seed=2, rows=[5])[0], example[5], atol=1e-5)
    # the histograms are numpy's over every score, raw and scaled
    flat = (q @ k.transpose(-2, -1)).reshape(-1).numpy()
    lim = np.abs(flat).max()
    density, edges = np.histogram(flat, bins=40, range=(-lim, lim), density=True)
    np.testing.assert_allclose(sample.raw_density, density, rtol=1e-5)
    np.testing.assert_allclose(sample.raw_edges, edges, rtol=1e-6)
    c = 1 / math.sqrt(32)
    density, edges = np.histogram(flat * c, bins=40, range=(-lim * c, lim * c), density=True)
    np.testing.assert_allclose(sample.scaled_density, density, rtol=1e-5)
    np.testing.assert_allclose(sample.scaled_edges, edges, rtol=1e-6)
    # densities integrate to 1 over the bins
    assert float(np.sum(sample.raw_density * np.diff(sample.raw_edges))) == pytest.approx(1.0, rel=1e-4)
    assert float(np.sum(sample.scaled_density * np.diff(sample.scaled_edges))) == pytest.approx(1.0, rel=1e-4)


def test_row_softmax_against_torch():
    raw = np.array([3.0, -1.0, 12.0, 0.5], dtype=np.float32)
    row = stats.row_softmax(raw, scale=0.25, temperature=2.0)
    expected = torch.softmax(torch.tensor(raw, dtype=torch.float64) * 0.125, -1)
    np.testing.assert_allclose(row.p, expected.numpy(), rtol=1e-6)
    np.testing.assert_allclose(row.z, raw * 0.125, rtol=1e-6)
    jac = torch.autograd.functional.jacobian(
        lambda x: torch.softmax(x, -1), torch.tensor(raw, dtype=torch.float64) * 0.125
    )
    assert row.keys.tolist() == [0, 1, 2, 3]
    np.testing.assert_allclose(row.jacobian, jac.numpy(), atol=1e-7)
    assert row.jacobian_norm == pytest.approx(float(torch.linalg.matrix_norm(jac)), rel=1e-6)
    assert row.max_weight == pytest.approx(float(expected.max()), rel=1e-6)


@pytest.mark.parametrize("spread", [1.0, 4.0, 12.0])
def test_long_row_keeps_the_top_keys_and_the_whole_norm(spread):
    raw = np.random.default_rng(3).normal(size=300).astype(np.float32) * spread
    row = stats.row_softmax(raw, 1.0, max_keys=32)
    p = torch.softmax(torch.tensor(raw, dtype=torch.float64), -1)
    keep = np.sort(np.argsort(-p.numpy())[:32])
    assert row.keys.tolist() == keep.tolist() and row.jacobian.shape == (32, 32)
    full = torch.autograd.functional.jacobian(lambda x: torch.softmax(x, -1), torch.tensor(raw, dtype=torch.float64))
    np.testing.assert_allclose(row.jacobian, full.numpy()[np.ix_(keep, keep)], atol=1e-7)
    # the norm is that of the whole 300×300 Jacobian, not of the 32 keys shown
    assert row.jacobian_norm == pytest.approx(float(torch.linalg.matrix_norm(full)), rel=1e-6)
    assert row.entropy == pytest.approx(float(-(p * torch.log(p)).sum() / math.log(300)), rel=1e-6)


def test_saturated_row_norm_has_no_cancellation():
    # p = (1 - 2e, e, e) with e ≈ e^-40: by hand, J = [[2e, -e, -e], [-e, e, -e²], [-e, -e², e]] to first order,
    # ‖J‖²_F = p0²((2e)² + 2e²) + 2e²((1 - e)² + p0² + e²) ≈ 10 e². The explicit diag(p) - ppᵀ in float64
    # loses J00 = p0(1 - p0) entirely (p0 rounds to 1) and would say 6 e².
    row = stats.row_softmax(np.array([40.0, 0.0, 0.0]), 1.0)
    e = math.exp(-40) / (1 + 2 * math.exp(-40))
    p0 = 1 - 2 * e
    by_hand = math.sqrt(p0**2 * ((2 * e) ** 2 + 2 * e**2) + 2 * e**2 * ((1 - e) ** 2 + p0**2 + e**2))
    assert by_hand == pytest.approx(math.sqrt(10) * e, rel=1e-12, abs=0)
    assert row.jacobian_norm == pytest.approx(by_hand, rel=1e-9, abs=0)
    # the same in a batch, and in float32 (1 - 2e rounds to 1 there; the other weights keep their digits)
    p64 = torch.tensor([[p0, e, e]], dtype=torch.float64)
    assert stats.jacobian_norm(p64)[0].item() == pytest.approx(by_hand, rel=1e-9, abs=0)
    f32 = stats.jacobian_norm(p64.float())
    assert f32.dtype == torch.float32 and f32[0].item() == pytest.approx(by_hand, rel=1e-5, abs=0)


@pytest.mark.parametrize("t", [8, 64, 200])
def test_example_maps_are_the_pooled_softmax_of_the_first_sequence(monkeypatch, t):
    monkeypatch.setattr(stats, "CHUNK_SCORES", 1000)  # many chunks of query rows
    maps = stats.example_maps(16, t, 32, seed=1, temperature=0.5)
    raw = stats.example_scores(16, t, 32, seed=1)  # [T, T], the first sequence
    for got, mean_max, factor in (
        (maps.unscaled, maps.mean_max_unscaled, 2.0),
        (maps.scaled, maps.mean_max_scaled, 2.0 / math.sqrt(16)),
    ):
        w = stats.softmax_weights(raw, factor)  # (T, T)
        pooled, f = pool_max(w[None], 64)
        assert f == maps.factor == (1 if t <= 64 else 4) and got.shape == pooled[0].shape
        np.testing.assert_allclose(got, pooled[0], atol=1e-5)
        assert mean_max == pytest.approx(float(w.max(-1).mean()), rel=1e-5)
    if t <= 64:
        np.testing.assert_allclose(maps.raw, raw, atol=1e-5)
    else:
        assert maps.raw is None


def test_the_kept_first_sequence_gives_the_same_maps_and_scores_without_drawing(monkeypatch):
    qk = stats.first_sequence(64, 16, 256, seed=3, distribution="projected")
    assert [a.shape for a in qk] == [(16, 64), (16, 64)] and qk[0].dtype == np.float32
    drawn = stats.example_maps(64, 16, 256, 3, "projected", 0.7), stats.example_scores(64, 16, 256, 3, "projected")
    monkeypatch.setattr(stats, "_draw_block", None)  # nothing may be drawn from here on
    kept = stats.sequence_maps(*qk, 0.7), stats.example_scores(64, 16, 256, 3, "projected", qk=qk)
    np.testing.assert_array_equal(kept[0].scaled, drawn[0].scaled)
    np.testing.assert_array_equal(kept[0].unscaled, drawn[0].unscaled)
    np.testing.assert_array_equal(kept[1], drawn[1])
    with pytest.raises(ValueError, match="first sequence"):  # another d_k's q and k are refused
        stats.example_scores(32, 16, 256, 3, "projected", qk=qk)
    with pytest.raises(ValueError, match="d_k"):
        stats.sequence_maps(qk[0], qk[1][:, :8])
    assert kept[0].d_k == 64 and kept[0].seq_len == 16 and kept[0].temperature == 0.7
    monkeypatch.setattr(stats, "FIRST_SEQUENCE_BYTES", 2 * 4 * 16 * 64 - 1)
    assert stats.first_sequence(64, 16, 256, seed=3) is None  # too large to keep: the views draw it


@pytest.mark.parametrize("distribution", stats.DISTRIBUTIONS)
@pytest.mark.parametrize("t, n", [(16, 256), (100, 3), (4, 50)])  # one block; spaced query rows; several blocks
def test_the_first_sequence_kept_with_the_scores_is_the_one_drawn_alone(small_bounds, monkeypatch, distribution, t, n):
    """The page draws the current d_k's sample once (``with_first``): its first sequence's q and k are the ones
    :func:`first_sequence` draws alone, to the bit, every query position included where the sweep measures a
    few (t = 100), and reading them draws nothing. Scores of other arguments are refused; a first sequence over
    its budget is not kept, and one d_k's is all ``with_first`` keeps."""
    d = 32
    alone = stats.first_sequence(d, t, n, 4, distribution)
    scores = stats.sweep_scores((d,), t, n, 4, "cpu", distribution, with_basis=False, with_first=True)
    assert scores.first[0].shape == scores.first[1].shape == (t, d) and scores.first[0].dtype == np.float32
    assert scores.nbytes == stats.sweep_scores_bytes((d,), t, n, with_basis=False) + 2 * 4 * t * d
    with monkeypatch.context() as m:
        m.setattr(stats, "_draw_block", None)  # nothing may be drawn from here on
        kept = stats.first_sequence(d, t, n, 4, distribution, scores)
    assert all(np.array_equal(a, b) for a, b in zip(kept, alone, strict=True))
    with pytest.raises(ValueError, match="drawn for"):
        stats.first_sequence(d, t, n, 5, distribution, scores)
    assert stats.sweep_scores((d,), t, n, 4, "cpu", distribution).first is None  # not asked for
    monkeypatch.setattr(stats, "FIRST_SEQUENCE_BYTES", 2 * 4 * t * d - 1)
    assert stats.sweep_scores((d,), t, n, 4, "cpu", distribution, with_first=True).first is None
    with pytest.raises(ValueError, match="one d_k"):
        stats.sweep_scores((2, d), t, n, 4, with_first=True)


def test_largest_settings_stay_within_the_budget_in_a_fresh_process():
    """The page's heaviest computations at 8192 keys and 16384 samples, d_k = 1024: peak RSS growth < 1 GiB."""
    code = """
import torch
from attn_core.saturation import stats
def peak():  # VmHWM, this process's own high-water mark: ru_maxrss keeps the parent's (pytest's) across exec
    return int(next(ln for ln in open("/proc/self/status") if ln.startswith("VmHWM:")).split()[1]) * 1024
torch.zeros(1)
base = peak()
stats.score_sample(1024, 8192, 16384, distribution="projected")
stats.example_maps(1024, 8192, 16384, distribution="projected")
stats.saturation_sweep((1024,), 8192, 16384, distribution="projected")
print(peak() - base)
"""
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    grown = int(out.stdout.strip().splitlines()[-1])
    assert grown < 2**30, f"peak memory grew by {grown / 2**20:.0f} MiB"
    assert stats.estimate_bytes(1024, 8192, 16384, "projected") < 2**30


# ---------------------------------------------------------------- float16 numerics
def test_float16_overflow_threshold_by_hand():
    # float16's largest value is 65504 and ln 65504 = 11.0898: exp(11.0) fits, exp(11.2) does not
    assert stats.FLOAT16_MAX == 65504.0
    naive = stats.naive_softmax_fp16(torch.tensor([11.0, 0.0]))
    assert torch.isfinite(naive).all()
    naive = stats.naive_softmax_fp16(torch.tensor([11.2, 0.0]))
    assert torch.isnan(naive[0]) and naive[1] == 0  # inf/inf and 1/inf
    stable = stats.stable_softmax_fp16(torch.tensor([11.2, 0.0]))
    torch.testing.assert_close(stable.float(), torch.softmax(torch.tensor([11.2, 0.0]), -1), atol=1e-3, rtol=1e-3)
    assert stats.invalid_rows(naive).item() and not stats.invalid_rows(stable).item()


def test_float16_demo_row():
    demo = stats.float16_demo(np.array([20.0, 1.0, -3.0, 15.0]))
    assert np.isinf(demo.exp_naive[0]) and np.isinf(demo.exp_naive[3]) and np.isinf(demo.sum_naive)
    assert np.isnan(demo.naive[0]) and demo.naive[1] == 0.0
    assert not demo.naive_ok and demo.stable_ok
    np.testing.assert_allclose(demo.stable, demo.reference, atol=2e-3)
    np.testing.assert_allclose(
        demo.reference, torch.softmax(torch.tensor([20.0, 1.0, -3.0, 15.0], dtype=torch.float64), -1).numpy(), rtol=1e-6
    )
    ok = stats.float16_demo(np.array([1.0, 2.0, 3.0]))
    assert ok.naive_ok and np.allclose(ok.naive, ok.reference, atol=2e-3)


@pytest.mark.parametrize("t", [1, 2, 16, 1000, 8192])
def test_float16_failures_run_only_on_risky_rows_and_count_as_running_every_row(t):
    gen = torch.Generator().manual_seed(t)
    centres = torch.tensor(
        [-7e4, -1e4, -40.0, -17.0, -9.0, -8.2, -7.9, 0.0, 5.0, 8.0, 9.5, 10.5, 11.0, 11.2, 20.0, 6.5e4, 7e4]
    )
    spreads = torch.tensor([0.0, 0.3, 3.0, 30.0])
    # every (centre, spread) pair is one row: its largest score sits near the centre, the others below it
    rows = centres.repeat_interleave(4)[:, None] - spreads.repeat(17)[:, None] * torch.rand(68, t, generator=gen)
    rows[::5, 0] = rows[::5].amax(-1)  # ties at the top
    z = torch.stack([rows, rows.flip(0), rows * 0.5])  # (3 pairs, 68 rows, t)
    z[1, 3, -1], z[2, 7, 0] = float("nan"), float("inf")
    naive, stable = stats.fp16_failures(z)
    full = [stats.invalid_rows(f(z)).sum(-1).double() for f in (stats.naive_softmax_fp16, stats.stable_softmax_fp16)]
    torch.testing.assert_close(naive, full[0], rtol=0, atol=0)
    torch.testing.assert_close(stable, full[1], rtol=0, atol=0)
    assert 0 < full[0].min() and full[0].max() < 68 and 0 < full[1].min()  # both kinds of row are there


def test_float16_failures_in_the_sweep():
    df = stats.saturation_sweep((1, 64, 1024), seq_len=16, n_samples=128, seed=0)
    assert (df["fp16_stable_fail"] == 0).all()
    assert (df[df["scaled"]]["fp16_naive_fail"] == 0).all()
    unscaled = df[~df["scaled"]].set_index("d_k")["fp16_naive_fail"]
    assert unscaled[1] == 0 and unscaled[1024] > 0.95 and unscaled[64] > 0.3


# ---------------------------------------------------------------- validation and the memory budget
def test_estimate_bytes_by_hand(monkeypatch):
    monkeypatch.delenv("ATTN_MAX_BYTES", raising=False)
    # one block (all 256 sequences of 16 rows: 4096 ≤ BLOCK_ROWS) of q and k, G and the kept scores,
    # one block of G as drawn, and one chunk of all 256·16·16 scores at 16 float32 slots each
    # (issue 12: plus the 3 per-row norms unscaled and scaled, and ∂L/∂q of one chunk's 4096 rows)
    scores, rows = 256 * 16 * 16, 256 * 16
    assert stats.estimate_bytes(64, 16, 256) == 4 * (
        2 * 256 * 16 * 64 + 2 * scores + scores + 6 * rows + 16 * scores + rows * 64
    )
    # more pairs at once only within the budget: 16 chunks' pairs under 1 GiB (2^20 scores), 1 when nothing is left
    plan = stats.row_plan(16, 256)
    assert stats._pairs_per_batch(plan, 64, "normal") == 16
    monkeypatch.setenv("ATTN_MAX_BYTES", str(stats.estimate_bytes(64, 16, 256) + 4 * 16 * scores))
    assert stats._pairs_per_batch(plan, 64, "normal") == 2
    monkeypatch.setenv("ATTN_MAX_BYTES", str(stats.estimate_bytes(64, 16, 256)))
    assert stats._pairs_per_batch(plan, 64, "normal") == 1
    proj = stats.estimate_bytes(64, 16, 256, "projected") - stats.estimate_bytes(64, 16, 256)
    assert proj == 4 * (2 * 256 * 16 * 512 + 6 * 16 * 512 + 2 * 512 * 64)
    q, k = stats.sample_qk(64, 16, 256)
    assert stats.estimate_bytes(64, 16, 256) > q.nbytes + k.nbytes
    # 8192 keys: one sequence of q and k, 1024 of its queries, their G and scores, one chunk of 2^20 scores
    rows = stats.MAX_MEASURED_SCORES // 8192
    assert stats.estimate_bytes(1024, 8192, 16384) == 4 * (
        2 * 8192 * 1024 + rows * 1024 + 3 * rows * 8192 + 6 * rows + 16 * 2**20 + 128 * 1024
    )


def test_estimate_stops_growing_with_samples_and_fits_the_budget_at_every_page_setting():
    assert stats.estimate_bytes(1024, 16, 16384) == stats.estimate_bytes(1024, 16, 10**9)
    for t in (2, 16, 100, 256, 1000, 2896, 4096, 8192):
        for n in (16, 256, 16384):
            for dist in stats.DISTRIBUTIONS:
                assert stats.estimate_bytes(1024, t, n, dist) < 2**30, (t, n, dist)


def test_memory_budget_refuses_before_allocating(monkeypatch):
    monkeypatch.delenv("ATTN_MAX_BYTES", raising=False)
    assert guard.max_bytes() == 2**30
    # 16 MiB: the sweep up to d_k = 1024 needs 32 MiB of q and k for 256 sequences of 16 tokens
    monkeypatch.setenv("ATTN_MAX_BYTES", str(16 * 2**20))
    with pytest.raises(ConfigError) as err:
        stats.saturation_sweep(stats.SWEEP_D_K, 16, 256)
    assert err.value.field == "samples"
    msg = str(err.value)
    assert "16.0 MiB" in msg and "ATTN_MAX_BYTES" in msg and "at most" in msg
    fits = int(msg.split("at most ")[1].split(" ")[0])
    assert stats.estimate_bytes(1024, 16, fits) <= 16 * 2**20 < stats.estimate_bytes(1024, 16, fits + 1)
    stats.saturation_sweep(stats.SWEEP_D_K, 16, fits)  # the advice works
    monkeypatch.setenv("ATTN_MAX_BYTES", str(2**20))
    with pytest.raises(ConfigError, match="1.00 MiB"):
        stats.score_sample(1024, 16, 256)
    with pytest.raises(ConfigError, match="smaller d_k"):  # even one sequence of 8192 keys is too much
        stats.score_sample(1024, 8192, 16)
    stats.score_sample(4, 16, 16)  # 4·(2·256·4 + 3·4096 + 16·4096) bytes fits in 1 MiB
    monkeypatch.setenv("ATTN_MAX_BYTES", "lots")
    with pytest.raises(ConfigError, match="ATTN_MAX_BYTES"):
        guard.max_bytes()


def test_format_bytes_binary_units():
    assert guard.format_bytes(512) == "512 B"
    assert guard.format_bytes(1536) == "1.50 KiB"
    assert guard.format_bytes(2**30) == "1.00 GiB"
    assert guard.format_bytes(3 * 2**20) == "3.00 MiB"


@pytest.mark.parametrize(
    "kwargs,field",
    [
        ({"d_k_values": (0,)}, "d_k"),
        ({"d_k_values": (2048,)}, "d_k"),
        ({"d_k_values": ()}, "d_k"),
        ({"seq_len": 0}, "seq_len"),
        ({"n_samples": 0}, "samples"),
        ({"distribution": "uniform"}, "distribution"),
        ({"temperature": 0.0}, "temperature"),
        ({"temperature": float("nan")}, "temperature"),
        ({"seed": -1}, "seed"),
    ],
)
def test_bad_arguments_raise_config_error(kwargs, field):
    args = {"d_k_values": (4,), "seq_len": 4, "n_samples": 4, **kwargs}
    with pytest.raises(ConfigError) as err:
        stats.saturation_sweep(**args)
    assert err.value.field == field


def test_score_sample_rejects_d_k_zero():
    with pytest.raises(ConfigError, match="d_k"):
        stats.score_sample(0)


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_sweep_on_cuda_matches_cpu():
    cpu = stats.saturation_sweep((4, 256), 16, 64, 0, "cpu")
    gpu = stats.saturation_sweep((4, 256), 16, 64, 0, "cuda")
    np.testing.assert_allclose(
        gpu.drop(columns=["scaled"]).to_numpy(float), cpu.drop(columns=["scaled"]).to_numpy(float), rtol=1e-3, atol=1e-4
    )


# ---------------------------------------------------------------- issue 13: the constants the figures name, one sweep row
def test_the_constants_the_figures_name_are_the_engines():
    """SATURATION_THRESHOLD, SMALL_NORM and FLOAT16_MAX live in attn_core.runtime.config, free of torch, for the figures'
    titles; they must be the numbers the engine measures with."""
    from attn_core.runtime import config

    assert stats.FLOAT16_MAX == float(torch.finfo(torch.float16).max) == config.FLOAT16_MAX
    assert (stats.SATURATION_THRESHOLD, stats.SMALL_NORM) == (config.SATURATION_THRESHOLD, config.SMALL_NORM)
    w = torch.tensor([[0.995, 0.005], [0.985, 0.015]])  # saturated by 0.99, not saturated
    assert stats.saturated_fraction(w) == 0.5


def test_sweep_at_picks_both_rows_of_one_d_k():
    sweep = stats.saturation_sweep((1, 4, 16), seq_len=8, n_samples=16, seed=0)
    at = stats.sweep_at(sweep, 4)
    for flag in (False, True):
        row = sweep[(sweep["d_k"] == 4) & (sweep["scaled"] == flag)].iloc[0]
        assert at[flag] == {c: float(row[c]) for c in sweep.columns if c not in ("d_k", "scaled")}
    assert at[False]["score_var"] != at[True]["score_var"]  # 4 times apart: unscaled and scaled differ
    assert stats.sweep_at(sweep, 64) is None
