"""attn_core.saturation.sweep: the saturation sweep against independent recomputation, its kept scores, one d_k's
scores and largest weights, and what the gradients show."""

import math

import numpy as np
import pytest
import torch

from attn_core.runtime.config import SMALL_NORM, ConfigError
from attn_core.saturation import examples, measures, sampling, sweep
from attn_core.saturation.sampling import SamplingSpec as S


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
    assert not np.any(np.abs(x - SMALL_NORM) < max(atol, 1e-4 * SMALL_NORM))
    assert getattr(df_row, f"{name}_small") == pytest.approx(np.mean(x < SMALL_NORM), abs=1e-12), name


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
        jac = measures.softmax_jacobian(p)  # (R, T, T)
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
    df = sweep.saturation_sweep(S(t, n, seed), d_values, tau)
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
    g = sampling.downstream_weights(S(t, n, seed))  # (N, T, T)
    check_against_recomputation(df, lambda d: sampling.sample_qk(S(t, n, seed), d), g, t, tau)


@pytest.mark.parametrize("distribution", sampling.DISTRIBUTIONS)
def test_first_sequences_mode_matches_independent_recomputation(small_bounds, distribution):
    t, n, seed, tau = 4, 50, 2, 1.3  # 200 rows; 40 measured: the first 10 sequences, in blocks of 3
    spec = S(t, n, seed, distribution)
    plan = spec.plan
    assert (plan.sequences, plan.queries, plan.block) == (10, 4, 3) and not plan.complete
    df = sweep.saturation_sweep(spec, (2, 32), tau)
    assert (df["measured_rows"] == 40).all() and (df["total_rows"] == 200).all()
    # what the sweep measured is the first 10 sequences of the whole sample, with the whole sample's G
    q_all, k_all = sampling.sample_qk(spec, 32)
    q, k, g = sampling.measured_rows(spec, 32)
    assert torch.equal(q, q_all[:10]) and torch.equal(k, k_all[:10])
    assert torch.equal(g, sampling.downstream_weights(spec)[:10])
    check_against_recomputation(df, lambda d: sampling.measured_rows(spec, d)[:2], g, t, tau)


@pytest.mark.parametrize("distribution", sampling.DISTRIBUTIONS)
def test_spaced_queries_mode_matches_independent_recomputation(small_bounds, distribution):
    t, n, seed, tau = 100, 3, 5, 1.0  # 200 // 100 = 2 rows... fewer than one sequence: queries 0 and 50
    spec = S(t, n, seed, distribution)
    plan = spec.plan
    assert (plan.sequences, plan.queries) == (1, 2) and plan.positions().tolist() == [0, 50]
    df = sweep.saturation_sweep(spec, (1, 16, 512), tau)
    assert (df["measured_rows"] == 2).all() and (df["total_rows"] == 300).all()
    q_all, k_all = sampling.sample_qk(spec, 16)
    q, k, g = sampling.measured_rows(spec, 16)
    assert torch.equal(q, q_all[:1, [0, 50]]) and torch.equal(k, k_all[:1]) and g.shape == (1, 2, t)
    check_against_recomputation(df, lambda d: sampling.measured_rows(spec, d)[:2], g, t, tau)
    sample = sweep.score_sample(spec, 16)
    assert (sample.n_rows, sample.total_rows, sample.n_scores) == (2, 300, 200) and not sample.complete
    s = (q.double() @ k.double().transpose(-2, -1)).numpy()
    assert sample.raw_var == pytest.approx(np.var(s), rel=1e-6)
    assert sample.raw_var == pytest.approx(df[(df["d_k"] == 16) & ~df["scaled"]]["score_var"].item(), rel=1e-9)


def test_chunks_do_not_change_the_numbers(monkeypatch):
    whole = sweep.saturation_sweep(S(24, 40, 1), (4, 64))
    monkeypatch.setattr(sampling, "CHUNK_SCORES", 1000)  # one sequence (24 rows) per chunk instead of all 40
    chunked = sweep.saturation_sweep(S(24, 40, 1), (4, 64))
    cols = [c for c in whole.columns if c != "scaled"]
    np.testing.assert_allclose(chunked[cols].to_numpy(float), whole[cols].to_numpy(float), rtol=1e-6)


@pytest.mark.parametrize("cached", [False, True])
def test_batches_of_pairs_do_not_change_the_numbers(monkeypatch, cached):
    """(d_k, scaling) pairs go through softmax together, up to CHUNK_SCORES scores: batches of one pair, of three
    (a d_k's two scalings split between batches) and of all of them give the same sweep."""
    d_values, t, n = (4, 64, 256), 6, 32  # 1,152 scores per d_k: the whole plan is one chunk
    runs = []
    for limit in (1152, 3 * 1152, 2**20):  # 1, 3 and 6 pairs a batch
        monkeypatch.setattr(sampling, "CHUNK_SCORES", limit)
        scores = sweep.sweep_scores(S(t, n, 5), d_values) if cached else None
        runs.append(sweep.saturation_sweep(S(t, n, 5), d_values, 0.7, scores=scores))
    cols = [c for c in runs[0].columns if c != "scaled"]
    for other in runs[1:]:
        np.testing.assert_allclose(other[cols].to_numpy(float), runs[0][cols].to_numpy(float), rtol=1e-12, atol=0)


# the keys' two bases (Rᵀ where T ≤ d_k, else K) in different shares
@pytest.mark.parametrize("t, n", [(6, 32), (24, 40), (1000, 3)])
def test_the_kept_scores_give_the_same_sweep_at_every_temperature(t, n):
    d_values = (4, 64) if t != 1000 else (16,)
    scores = sweep.sweep_scores(S(t, n, 3), d_values)
    assert scores.nbytes == sampling.sweep_scores_bytes(S(t, n, 3), d_values) > 0
    for tau in (0.3, 1.0, 2.5):
        direct = sweep.saturation_sweep(S(t, n, 3), d_values, tau)
        kept = sweep.saturation_sweep(S(t, n, 3), d_values, tau, scores=scores)
        # the same per-row float32 numbers; the kept path measures every d_k at once, so only the order of the
        # float64 sums over the rows may differ
        assert list(kept.columns) == list(direct.columns)
        assert (kept["d_k"].tolist(), kept["scaled"].tolist()) == (direct["d_k"].tolist(), direct["scaled"].tolist())
        cols = [c for c in direct.columns if c != "scaled"]
        np.testing.assert_allclose(kept[cols].to_numpy(float), direct[cols].to_numpy(float), rtol=1e-12, atol=0)
    with pytest.raises(ValueError, match="drawn for"):  # scores of another draw are never mixed in
        sweep.saturation_sweep(S(t, n, 4), d_values, scores=scores)


def test_the_scores_are_kept_only_within_their_budget(monkeypatch):
    need = sampling.sweep_scores_bytes(S(16, 256), sweep.SWEEP_D_K)
    # by hand: 256 sequences × 16 rows × 16 keys float32, and per d_k the keys (d_k < 16) or Rᵀ [16, 16], float32
    by_hand = sum(4 * 256 * 16 * 16 + 256 * 16 * 4 * min(d, 16) for d in sweep.SWEEP_D_K)
    assert need == by_hand == sweep.sweep_scores(S(16, 256)).nbytes
    monkeypatch.setattr(sweep, "SCORE_CACHE_BYTES", need - 1)
    assert sweep.sweep_scores(S(16, 256)) is None
    with pytest.raises(ConfigError):  # a bad argument is still refused with its message
        sweep.sweep_scores(S(0, 256))


@pytest.mark.parametrize("t, n", [(6, 32), (1000, 3)])
def test_scores_without_the_keys_basis_are_the_same_scores_and_refused_by_the_sweep(t, n):
    """``with_basis=False`` keeps the raw scores alone (the page's current d_k: histograms and largest weights, no
    gradient): the same float32 scores, chunk for chunk, its bytes counted without the bases, the weights measured
    from it the sweep's own, and the sweep, which needs the keys' basis for ∂L/∂q, refuses it."""
    d_values = (4, 64) if t != 1000 else (16,)
    full, bare = sweep.sweep_scores(S(t, n, 3), d_values), sweep.sweep_scores(S(t, n, 3), d_values, with_basis=False)
    assert (bare.d_k_values, bare.sampling) == (full.d_k_values, full.sampling) == (d_values, S(t, n, 3))
    assert (bare.with_basis, full.with_basis) == (False, True)
    for part_full, part_bare in zip(full.chunks, bare.chunks, strict=True):
        for (b, r, s, basis), (b2, r2, s2, none) in zip(part_full, part_bare, strict=True):
            assert (b, r) == (b2, r2) and np.array_equal(s, s2) and basis is not None and none is None
    # by hand: float32 scores [n, r, T] per chunk, nothing else
    scores_only = sum(s.nbytes for part in full.chunks for _, _, s, _ in part)
    assert (
        bare.nbytes == sampling.sweep_scores_bytes(S(t, n, 3), d_values, with_basis=False) == scores_only < full.nbytes
    )
    d = d_values[-1]
    one = sweep.sweep_scores(S(t, n, 3), (d,), with_basis=False)
    assert sweep.weight_summary(S(t, n, 3), d, 0.6, scores=one) == sweep.weight_summary(S(t, n, 3), d, 0.6)
    with pytest.raises(ValueError, match="basis"):
        sweep.saturation_sweep(S(t, n, 3), d_values, scores=bare)


@pytest.mark.parametrize("t, d", [(16, 16), (16, 1024), (8, 9)])
def test_the_key_basis_gives_the_norm_of_the_product_with_the_keys(t, d):
    gen = torch.Generator().manual_seed(t * d)
    k = torch.randn(64, t, d, generator=gen)
    k[0, -1] = k[0, 0] + 1e-4 * k[0, -1]  # two nearly equal keys: K Kᵀ nearly singular (its square is worse)
    g = torch.randn(3, 64, 5, t, generator=gen)
    g = g - g.mean(-1, keepdim=True)  # like ∂L/∂z, every row sums to 0
    basis = sweep._key_basis(k)
    assert basis.shape == (64, t, min(t, d)) and basis.dtype == torch.float32
    expected = (g.double() @ k.double()).norm(dim=-1)  # ‖Kᵀg‖ in float64
    torch.testing.assert_close(sweep._grad_q_norm(g, basis).double(), expected, rtol=1e-5, atol=1e-6)


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
    basis = sweep._key_basis(k)
    assert torch.isfinite(basis).all()
    torch.testing.assert_close(
        sweep._grad_q_norm(g.float(), basis).double(), (g @ kd).norm(dim=-1), rtol=1e-5, atol=1e-5
    )


def test_score_variance_matches_theory_at_20000_samples():
    df = sweep.saturation_sweep(S(2, 20_000, 0), (1, 16, 128))  # 80,000 scores per d_k
    for row in df.itertuples():
        target = 1.0 if row.scaled else float(row.d_k)
        assert abs(row.score_var / target - 1) < 0.05, (row.d_k, row.scaled, row.score_var)


def test_unscaled_d_k_512_saturates_and_scaled_does_not():
    df = sweep.saturation_sweep(S(16, 256, 0), (512,)).set_index("scaled")
    assert df.loc[False, "max_weight"] > 0.9
    assert df.loc[True, "max_weight"] < 0.35
    assert df.loc[False, "saturated_frac"] > 0.5 and df.loc[True, "saturated_frac"] == 0.0
    assert df.loc[False, "entropy"] < 0.1 < 0.8 < df.loc[True, "entropy"]


def test_gradient_falls_unscaled_and_stays_flat_scaled():
    df = sweep.saturation_sweep(S(16, 256, 0), sweep.SWEEP_D_K)
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
    q, k, g = sampling.measured_rows(S(8, 4, 1), 64)  # (4, 8, 64), (4, 8, 64), (4, 8, 8)
    q, k, g = q.double().requires_grad_(True), k.double(), g.double()
    tau = 0.5
    for c in (1.0, 1 / 8):
        z = (q @ k.transpose(-2, -1)) * (c / tau)
        grad_z, grad_q = torch.autograd.grad(torch.softmax(z, -1), (z, q), grad_outputs=g)
        torch.testing.assert_close(grad_q, (c / tau) * grad_z @ k, rtol=1e-12, atol=1e-14)
        jac = measures.softmax_jacobian(torch.softmax(z.detach(), -1))
        torch.testing.assert_close(grad_z, (jac @ g[..., None])[..., 0], rtol=1e-10, atol=1e-14)
    df = sweep.saturation_sweep(S(8, 4, 1), (64,), tau).set_index("scaled")
    z_u = (q.detach() @ k.transpose(-2, -1)) / tau
    grad_z_u = torch.autograd.functional.vjp(lambda x: torch.softmax(x, -1), z_u, g)[1]
    assert df.loc[False, "grad_q_norm"] == pytest.approx((grad_z_u @ k / tau).norm(dim=-1).mean().item(), rel=1e-4)


def test_saturation_makes_the_query_gradient_vanish_for_most_rows_while_its_mean_grows():
    """Issue 12: at T = 16, d_k = 512 (the page's sample) unscaled, the median ‖∂L/∂q‖ collapses and many rows
    fall below 1e-3, while the mean is larger than scaled: the gradient is concentrated in a few rows."""
    df = sweep.saturation_sweep(S(16, 256, 0), (512,)).set_index("scaled")
    u, s = df.loc[False], df.loc[True]
    assert u["grad_q_norm_median"] < 0.05 * s["grad_q_norm_median"]
    assert u["grad_q_norm_small"] > 0.3 and s["grad_q_norm_small"] == 0.0
    assert u["grad_q_norm"] > 3 * s["grad_q_norm"]  # the mean alone says the opposite
    assert u["grad_norm_median"] < 0.01 * s["grad_norm_median"] and u["grad_norm_small"] > 0.3
    findings = sweep.gradient_findings({flag: df.loc[flag].to_dict() for flag in (False, True)})
    assert (findings.median_q, findings.mean_q, findings.vanished, findings.concentrated) == (
        "lower",
        "higher",
        True,
        True,
    )


def test_long_sequences_reverse_the_comparison_at_d_k_64():
    """At T = 1024, d_k = 64 the unscaled rows get more gradient at every statistic: spread weights over
    1024 keys have a small Jacobian (evenly spread: √1023/1024 ≈ 0.031), and the findings say so."""
    df = sweep.saturation_sweep(S(1024, 8, 0), (64,)).set_index("scaled")
    u, s = df.loc[False], df.loc[True]
    for col in ("jacobian_norm", "grad_norm", "grad_norm_median", "grad_q_norm", "grad_q_norm_median"):
        assert u[col] > 2 * s[col], col
    assert s["jacobian_norm"] == pytest.approx(math.sqrt(1023) / 1024, rel=0.7)
    findings = sweep.gradient_findings({flag: df.loc[flag].to_dict() for flag in (False, True)})
    assert (findings.median_q, findings.mean_z, findings.mean_j, findings.vanished) == (
        "higher",
        "higher",
        "higher",
        False,
    )


def test_gradient_findings_by_hand():
    base = {f"{n}{x}": 0.1 for n in measures.ROW_NORMS for x in ("", "_median")} | {
        f"{n}_small": 0.0 for n in measures.ROW_NORMS
    }
    same = sweep.gradient_findings({False: base, True: dict(base)})
    assert same.identical and not same.vanished and not same.concentrated and same.median_q == "similar"
    u = base | {"grad_q_norm": 1.0, "grad_q_norm_median": 0.0, "grad_q_norm_small": 0.5, "grad_norm": 0.105}
    f = sweep.gradient_findings({False: u, True: base})
    assert not f.identical and f.vanished and f.concentrated and f.skew_q == (math.inf, 1.0)
    assert (f.mean_q, f.median_q, f.mean_z) == ("higher", "lower", "similar")  # 0.105 / 0.1 is within 10 %
    # a share below 1e-3 of 10 % counts only when it is at least twice the scaled one
    f = sweep.gradient_findings({False: u | {"grad_q_norm_small": 0.1}, True: base | {"grad_q_norm_small": 0.06}})
    assert not f.vanished
    assert sweep.compare(0.0, 0.0) == "similar" and sweep.compare(0.0, 1e-9) == "lower"


def test_sampling_is_seeded_and_score_sample_agrees_with_the_sweep():
    a, _ = sampling.sample_qk(S(4, 10, 5), 8)
    b, _ = sampling.sample_qk(S(4, 10, 5), 8)
    c, _ = sampling.sample_qk(S(4, 10, 6), 8)
    assert torch.equal(a, b) and not torch.equal(a, c)
    sample = sweep.score_sample(S(8, 64, 2), 32, bins=40)
    df = sweep.saturation_sweep(S(8, 64, 2), (32,)).set_index("scaled")
    assert sample.raw_var == pytest.approx(df.loc[False, "score_var"], rel=1e-6)
    assert sample.scaled_var == pytest.approx(df.loc[True, "score_var"], rel=1e-6)
    assert sample.n_scores == 64 * 8 * 8 and sample.complete and sample.n_rows == sample.total_rows == 64 * 8
    q, k = sampling.sample_qk(S(8, 64, 2), 32)
    example = examples.example_scores(S(8, 64, 2), 32)  # the first sequence, shown by the maps and the row
    assert example.shape == (8, 8) and example.dtype == np.float32
    np.testing.assert_allclose(example, (q[0] @ k[0].T).numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(examples.example_scores(S(8, 64, 2), 32, rows=[5])[0], example[5], atol=1e-5)
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


def test_float16_failures_in_the_sweep():
    df = sweep.saturation_sweep(S(16, 128, 0), (1, 64, 1024))
    assert (df["fp16_stable_fail"] == 0).all()
    assert (df[df["scaled"]]["fp16_naive_fail"] == 0).all()
    unscaled = df[~df["scaled"]].set_index("d_k")["fp16_naive_fail"]
    assert unscaled[1] == 0 and unscaled[1024] > 0.95 and unscaled[64] > 0.3


# ---------------------------------------------------------------- validation
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
    spec_args = {key: args.pop(key) for key in ("seq_len", "n_samples", "seed", "distribution") if key in args}
    with pytest.raises(ConfigError) as err:
        sweep.saturation_sweep(S(**spec_args), **args)
    assert err.value.field == field


def test_score_sample_rejects_d_k_zero():
    with pytest.raises(ConfigError, match="d_k"):
        sweep.score_sample(S(), 0)


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_sweep_on_cuda_matches_cpu():
    cpu = sweep.saturation_sweep(S(16, 64, 0), (4, 256), device="cpu")
    gpu = sweep.saturation_sweep(S(16, 64, 0), (4, 256), device="cuda")
    np.testing.assert_allclose(
        gpu.drop(columns=["scaled"]).to_numpy(float), cpu.drop(columns=["scaled"]).to_numpy(float), rtol=1e-3, atol=1e-4
    )


# ---------------------------------------------------------------- issue 13: the constants the figures name, one sweep row
def test_the_constants_the_figures_name_are_the_engines():
    """SATURATION_THRESHOLD, SMALL_NORM and FLOAT16_MAX live in attn_core.runtime.config, free of torch, for the figures'
    titles; they must be the numbers the engine measures with."""
    from attn_core.runtime import config

    assert measures.FLOAT16_MAX == float(torch.finfo(torch.float16).max) == config.FLOAT16_MAX
    assert measures.SATURATION_THRESHOLD == sweep.SATURATION_THRESHOLD == config.SATURATION_THRESHOLD
    assert sweep.SMALL_NORM == config.SMALL_NORM
    w = torch.tensor([[0.995, 0.005], [0.985, 0.015]])  # saturated by 0.99, not saturated
    assert measures.saturated_fraction(w) == 0.5


def test_sweep_at_picks_both_rows_of_one_d_k():
    swept = sweep.saturation_sweep(S(8, 16, 0), (1, 4, 16))
    at = sweep.sweep_at(swept, 4)
    for flag in (False, True):
        row = swept[(swept["d_k"] == 4) & (swept["scaled"] == flag)].iloc[0]
        assert at[flag] == {c: float(row[c]) for c in swept.columns if c not in ("d_k", "scaled")}
    assert at[False]["score_var"] != at[True]["score_var"]  # 4 times apart: unscaled and scaled differ
    assert sweep.sweep_at(swept, 64) is None
