"""attn_core.stats: softmax statistics, the Jacobian, the saturation sweep, float16 numerics, memory guard."""

import math

import numpy as np
import pytest
import torch

from attn_core import guard, stats
from attn_core.config import ConfigError


# ---------------------------------------------------------------- row statistics by hand
def test_entropy_and_max_weight_by_hand():
    p = torch.tensor([[0.5, 0.25, 0.25], [1.0, 0.0, 0.0], [1 / 3, 1 / 3, 1 / 3]])
    raw = stats.row_entropy(p, normalized=False)
    # H = -(0.5 ln 0.5 + 2 · 0.25 ln 0.25) = 1.5 ln 2; a one-hot row has H = 0; uniform over 3 has ln 3
    np.testing.assert_allclose(raw.numpy(), [1.5 * math.log(2), 0.0, math.log(3)], rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(
        stats.row_entropy(p).numpy(), [1.5 * math.log(2) / math.log(3), 0.0, 1.0], rtol=1e-6, atol=1e-7
    )
    np.testing.assert_allclose(stats.max_weight(p).numpy(), [0.5, 1.0, 1 / 3], rtol=1e-7)


def test_entropy_counts_only_unmasked_keys():
    p = torch.tensor([[0.5, 0.5, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0]])
    mask = torch.tensor([[True, True, False, False], [True, False, False, False]])
    # two allowed keys with equal weight: H / log 2 = 1; one allowed key: 0 by definition
    np.testing.assert_allclose(stats.row_entropy(p, mask=mask).numpy(), [1.0, 0.0], atol=1e-7)
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
    torch.testing.assert_close(stats.jacobian_norm(p).double(), expected, rtol=1e-5, atol=1e-7)
    # uniform over T: J = I/T - 11ᵀ/T², ‖J‖²_F = (T - 1)/T²
    t = 16
    assert stats.jacobian_norm(torch.full((t,), 1 / t)).item() == pytest.approx(math.sqrt(t - 1) / t, rel=1e-6)
    # one-hot: every entry is 0
    assert stats.jacobian_norm(torch.tensor([1.0, 0.0, 0.0])).item() == 0.0


# ---------------------------------------------------------------- the sweep
def test_sweep_columns_match_independent_recomputation():
    d_values, t, n, seed, tau = (4, 64), 6, 32, 3, 0.7
    df = stats.saturation_sweep(d_values, t, n, seed, "cpu", "normal", tau)
    assert list(df.columns[:8]) == [
        "d_k", "scaled", "score_var", "max_weight", "entropy", "saturated_frac", "jacobian_norm", "grad_norm"
    ]  # fmt: skip
    assert len(df) == 4 and df["d_k"].tolist() == [4, 4, 64, 64] and df["scaled"].tolist() == [False, True] * 2
    g = stats.downstream_weights(t, n, seed).double()  # (N, T, T)
    for row in df.itertuples():
        q, k = stats.sample_qk(row.d_k, t, n, seed)
        s = q.double() @ k.double().transpose(-2, -1)  # (N, T, T)
        c = 1 / math.sqrt(row.d_k) if row.scaled else 1.0
        z = s * c / tau
        p = torch.softmax(z, -1)
        jac = stats.softmax_jacobian(p)  # (N, T, T, T)
        grad_by_jacobian = (jac @ g[..., None])[..., 0]  # J is symmetric, so Jᵀ G = J G
        assert row.grad_norm == pytest.approx(grad_by_jacobian.norm(dim=-1).mean().item(), rel=1e-4)
        assert row.jacobian_norm == pytest.approx(torch.linalg.matrix_norm(jac).mean().item(), rel=1e-4)
        assert row.score_var == pytest.approx(np.var((s * c).numpy()), rel=1e-4)
        assert row.max_weight == pytest.approx(p.max(-1).values.mean().item(), rel=1e-5)
        ent = -(p * torch.log(p)).sum(-1) / math.log(t)
        assert row.entropy == pytest.approx(ent.mean().item(), rel=1e-4)
        assert row.saturated_frac == pytest.approx((p.max(-1).values > 0.99).double().mean().item())


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
    assert sample.n_scores == 64 * 8 * 8 and sample.example.shape == (8, 8) and sample.example.dtype == np.float32
    q, k = stats.sample_qk(32, 8, 64, seed=2)
    np.testing.assert_allclose(sample.example, (q[0] @ k[0].T).numpy(), rtol=1e-5, atol=1e-5)
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
    np.testing.assert_allclose(row.jacobian, jac.numpy(), atol=1e-7)
    assert row.jacobian_norm == pytest.approx(float(torch.linalg.matrix_norm(jac)), rel=1e-6)
    assert row.max_weight == pytest.approx(float(expected.max()), rel=1e-6)


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


def test_float16_failures_in_the_sweep():
    df = stats.saturation_sweep((1, 64, 1024), seq_len=16, n_samples=128, seed=0)
    assert (df["fp16_stable_fail"] == 0).all()
    assert (df[df["scaled"]]["fp16_naive_fail"] == 0).all()
    unscaled = df[~df["scaled"]].set_index("d_k")["fp16_naive_fail"]
    assert unscaled[1] == 0 and unscaled[1024] > 0.95 and unscaled[64] > 0.3


# ---------------------------------------------------------------- validation and the memory budget
def test_estimate_bytes_by_hand():
    # 4 bytes × (q and k: 2·256·16·64, twelve [256, 16, 16] tensors)
    assert stats.estimate_bytes(64, 16, 256) == 4 * (2 * 256 * 16 * 64 + 12 * 256 * 16 * 16)
    proj = stats.estimate_bytes(64, 16, 256, "projected") - stats.estimate_bytes(64, 16, 256)
    assert proj == 4 * (2 * 256 * 16 * 512 + 2 * 512 * 64)
    q, k = stats.sample_qk(64, 16, 256)
    assert stats.estimate_bytes(64, 16, 256) > q.nbytes + k.nbytes


def test_memory_budget_refuses_before_allocating(monkeypatch):
    monkeypatch.delenv("ATTN_MAX_BYTES", raising=False)
    assert guard.max_bytes() == 2**30
    # 10⁹ samples would need terabytes: refused at once, with the largest count that fits
    with pytest.raises(ConfigError) as err:
        stats.saturation_sweep(stats.SWEEP_D_K, 16, 10**9)
    assert err.value.field == "samples"
    msg = str(err.value)
    assert "1 GiB" in msg and "ATTN_MAX_BYTES" in msg and "at most" in msg
    fits = int(msg.split("at most ")[1].split(" ")[0])
    assert stats.estimate_bytes(1024, 16, fits) <= 2**30 < stats.estimate_bytes(1024, 16, fits + 1)
    monkeypatch.setenv("ATTN_MAX_BYTES", str(2**20))
    with pytest.raises(ConfigError, match="1 MiB"):
        stats.score_sample(1024, 16, 256)
    stats.score_sample(4, 16, 64)  # 4·(2·64·16·4 + 12·64·256) bytes fits in 1 MiB
    monkeypatch.setenv("ATTN_MAX_BYTES", "lots")
    with pytest.raises(ConfigError, match="ATTN_MAX_BYTES"):
        guard.max_bytes()


def test_format_bytes_binary_units():
    assert guard.format_bytes(512) == "512 B"
    assert guard.format_bytes(1536) == "1.5 KiB"
    assert guard.format_bytes(2**30) == "1 GiB"
    assert guard.format_bytes(3 * 2**20) == "3 MiB"


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


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_sweep_on_cuda_matches_cpu():
    cpu = stats.saturation_sweep((4, 256), 16, 64, 0, "cpu")
    gpu = stats.saturation_sweep((4, 256), 16, 64, 0, "cuda")
    np.testing.assert_allclose(gpu.drop(columns=["scaled"]).to_numpy(float), cpu.drop(columns=["scaled"]).to_numpy(float),
                               rtol=1e-3, atol=1e-4)  # fmt: skip
