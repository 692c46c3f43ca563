"""attn_core.saturation.measures: per-row softmax statistics, the Jacobian and its norm, float16 numerics, one row."""

import math

import numpy as np
import pytest
import torch

from attn_core.saturation import measures


# ---------------------------------------------------------------- row statistics by hand
def test_entropy_and_max_weight_by_hand():
    p = torch.tensor([[0.5, 0.25, 0.25], [1.0, 0.0, 0.0], [1 / 3, 1 / 3, 1 / 3]])
    raw = measures.row_entropy(p, normalized=False)
    # H = -(0.5 ln 0.5 + 2 · 0.25 ln 0.25) = 1.5 ln 2; a one-hot row has H = 0; uniform over 3 has ln 3
    # float32 logs against exact values: float32 tolerances (the vectorised log differs between CPU kernels)
    np.testing.assert_allclose(raw.numpy(), [1.5 * math.log(2), 0.0, math.log(3)], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(
        measures.row_entropy(p).numpy(), [1.5 * math.log(2) / math.log(3), 0.0, 1.0], rtol=1e-5, atol=1e-6
    )
    np.testing.assert_allclose(measures.max_weight(p).numpy(), [0.5, 1.0, 1 / 3], rtol=1e-7)


def test_entropy_counts_only_unmasked_keys():
    p = torch.tensor([[0.5, 0.5, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0]])
    mask = torch.tensor([[True, True, False, False], [True, False, False, False]])
    # two allowed keys with equal weight: H / log 2 = 1; one allowed key: 0 by definition
    np.testing.assert_allclose(measures.row_entropy(p, mask=mask).numpy(), [1.0, 0.0], rtol=1e-5, atol=1e-6)
    # without the mask the same row counts four keys: ln 2 / ln 4 = 0.5
    assert measures.row_entropy(p)[0].item() == pytest.approx(0.5, abs=1e-7)


def test_saturated_fraction_by_hand():
    rows = torch.tensor(
        [[0.995, 0.005, 0.0], [0.5, 0.3, 0.2], [0.9999, 0.0001, 0.0], [0.98, 0.01, 0.01]], dtype=torch.float64
    )
    assert measures.saturated_fraction(rows) == 0.5  # rows 0 and 2 exceed 0.99
    assert measures.saturated_fraction(rows, threshold=0.9) == 0.75


# ---------------------------------------------------------------- Jacobian against torch
def test_softmax_jacobian_matches_autograd():
    z = torch.randn(7, dtype=torch.float64, generator=torch.Generator().manual_seed(0)) * 3
    expected = torch.autograd.functional.jacobian(lambda x: torch.softmax(x, -1), z)  # (7, 7)
    ours = measures.softmax_jacobian(torch.softmax(z, -1))
    torch.testing.assert_close(ours, expected, rtol=1e-10, atol=1e-12)


def test_softmax_jacobian_batched_matches_autograd_per_row():
    z = torch.randn(2, 3, 5, dtype=torch.float64, generator=torch.Generator().manual_seed(1)) * 4
    ours = measures.softmax_jacobian(torch.softmax(z, -1))
    assert ours.shape == (2, 3, 5, 5)
    for b in range(2):
        for r in range(3):
            ref = torch.autograd.functional.jacobian(lambda x: torch.softmax(x, -1), z[b, r])
            torch.testing.assert_close(ours[b, r], ref, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(ours.sum(-1), torch.zeros(2, 3, 5, dtype=torch.float64))  # rows sum to 0


def test_jacobian_norm_is_frobenius_of_the_jacobian():
    z = torch.randn(4, 6, 9, generator=torch.Generator().manual_seed(2)) * torch.tensor([0.1, 1, 5, 30])[:, None, None]
    p = torch.softmax(z.double(), -1)
    expected = torch.linalg.matrix_norm(measures.softmax_jacobian(p))  # (4, 6)
    torch.testing.assert_close(measures.jacobian_norm(p).double(), expected, rtol=1e-5, atol=1e-6)
    # uniform over T: J = I/T - 11ᵀ/T², ‖J‖²_F = (T - 1)/T²
    t = 16
    assert measures.jacobian_norm(torch.full((t,), 1 / t)).item() == pytest.approx(math.sqrt(t - 1) / t, rel=1e-6)
    # one-hot: every entry is 0
    assert measures.jacobian_norm(torch.tensor([1.0, 0.0, 0.0])).item() == 0.0


def test_row_softmax_against_torch():
    raw = np.array([3.0, -1.0, 12.0, 0.5], dtype=np.float32)
    row = measures.row_softmax(raw, scale=0.25, temperature=2.0)
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
    row = measures.row_softmax(raw, 1.0, max_keys=32)
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
    row = measures.row_softmax(np.array([40.0, 0.0, 0.0]), 1.0)
    e = math.exp(-40) / (1 + 2 * math.exp(-40))
    p0 = 1 - 2 * e
    by_hand = math.sqrt(p0**2 * ((2 * e) ** 2 + 2 * e**2) + 2 * e**2 * ((1 - e) ** 2 + p0**2 + e**2))
    assert by_hand == pytest.approx(math.sqrt(10) * e, rel=1e-12, abs=0)
    assert row.jacobian_norm == pytest.approx(by_hand, rel=1e-9, abs=0)
    # the same in a batch, and in float32 (1 - 2e rounds to 1 there; the other weights keep their digits)
    p64 = torch.tensor([[p0, e, e]], dtype=torch.float64)
    assert measures.jacobian_norm(p64)[0].item() == pytest.approx(by_hand, rel=1e-9, abs=0)
    f32 = measures.jacobian_norm(p64.float())
    assert f32.dtype == torch.float32 and f32[0].item() == pytest.approx(by_hand, rel=1e-5, abs=0)


# ---------------------------------------------------------------- float16 numerics
def test_float16_overflow_threshold_by_hand():
    # float16's largest value is 65504 and ln 65504 = 11.0898: exp(11.0) fits, exp(11.2) does not
    assert measures.FLOAT16_MAX == 65504.0
    naive = measures.naive_softmax_fp16(torch.tensor([11.0, 0.0]))
    assert torch.isfinite(naive).all()
    naive = measures.naive_softmax_fp16(torch.tensor([11.2, 0.0]))
    assert torch.isnan(naive[0]) and naive[1] == 0  # inf/inf and 1/inf
    stable = measures.stable_softmax_fp16(torch.tensor([11.2, 0.0]))
    torch.testing.assert_close(stable.float(), torch.softmax(torch.tensor([11.2, 0.0]), -1), atol=1e-3, rtol=1e-3)
    assert measures.invalid_rows(naive).item() and not measures.invalid_rows(stable).item()


def test_float16_demo_row():
    demo = measures.float16_demo(np.array([20.0, 1.0, -3.0, 15.0]))
    assert np.isinf(demo.exp_naive[0]) and np.isinf(demo.exp_naive[3]) and np.isinf(demo.sum_naive)
    assert np.isnan(demo.naive[0]) and demo.naive[1] == 0.0
    assert not demo.naive_ok and demo.stable_ok
    np.testing.assert_allclose(demo.stable, demo.reference, atol=2e-3)
    np.testing.assert_allclose(
        demo.reference, torch.softmax(torch.tensor([20.0, 1.0, -3.0, 15.0], dtype=torch.float64), -1).numpy(), rtol=1e-6
    )
    ok = measures.float16_demo(np.array([1.0, 2.0, 3.0]))
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
    naive, stable = measures.fp16_failures(z)
    full = [
        measures.invalid_rows(f(z)).sum(-1).double()
        for f in (measures.naive_softmax_fp16, measures.stable_softmax_fp16)
    ]
    torch.testing.assert_close(naive, full[0], rtol=0, atol=0)
    torch.testing.assert_close(stable, full[1], rtol=0, atol=0)
    assert 0 < full[0].min() and full[0].max() < 68 and 0 < full[1].min()  # both kinds of row are there
