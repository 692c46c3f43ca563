"""attn_core.conv.attention against hand arithmetic, torch's conv2d and the paper's statements (Cordonnier,
Loukas & Jaggi, ICLR 2020: Lemma 1, Lemma 2, Theorem 1). Small images: the core tests run twice in CI."""

from __future__ import annotations

import io

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from attn_core.attention.longmaps import pooled_attention
from attn_core.conv import attention as ca
from attn_core.runtime.config import ConfigError


def rand(*shape, seed=0):
    return torch.rand(*shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def randn(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def test_1d_scores_are_the_encodings_dot_product_and_the_shifted_parabola():
    s = ca.scores_1d(9, 2, 0.7)
    q, k = 3, 7
    d = k - q
    assert s[q, k].item() == pytest.approx(-0.7 * (d * d - 2 * 2 * d))  # v · r_δ by hand
    assert s[q, k].item() == pytest.approx(-0.7 * ((d - 2) ** 2 - 4))  # −α((δ − Δ)² − Δ²)


@pytest.mark.parametrize("shift", [-2, 0, 3])
def test_1d_rows_are_softmax_distributions_peaking_at_query_plus_shift(shift):
    w = ca.quadratic_weights_1d(20, shift, 1.3)
    np.testing.assert_allclose(w.sum(-1).numpy(), 1.0, rtol=0, atol=1e-12)
    assert (w >= 0).all()
    for q in range(4, 16):
        assert int(w[q].argmax()) == q + shift


@pytest.mark.parametrize("alpha,shift", [(0.02, 3), (0.05, -4), (0.1, 0)])
def test_1d_window_mean_and_variance_match_the_shift_and_one_over_two_alpha(alpha, shift):
    n, q = 241, 120  # the window (σ = 1/√(2α) ≤ 5) far from both ends
    w = ca.quadratic_weights_1d(n, shift, alpha)[q].numpy()
    pos = np.arange(n) - q
    mean = (w * pos).sum()
    var = (w * (pos - mean) ** 2).sum()
    assert mean == pytest.approx(shift, abs=1e-9)
    assert var == pytest.approx(1 / (2 * alpha), rel=1e-6)  # a discrete Gaussian this wide: its variance


def test_2d_scores_match_the_papers_encoding_vector_by_vector():
    qr, qc, kr, kc = (torch.tensor([v], dtype=torch.float64) for v in (2.0, 3.0, 4.0, 1.0))
    s = ca.scores_2d(qr, qc, kr, kc, (1, -1), 0.5)
    delta = np.array([2.0, -2.0])  # key − query
    r = np.array([delta @ delta, delta[0], delta[1]])
    v = -0.5 * np.array([1, -2 * 1, -2 * -1])
    assert s.item() == pytest.approx(v @ r)
    assert s.item() == pytest.approx(-0.5 * (np.sum((delta - [1, -1]) ** 2) - 2))


@pytest.mark.parametrize("padding", ca.PADDINGS)
def test_every_heads_row_of_an_interior_pixel_peaks_at_query_plus_shift(padding):
    h, w, k = 9, 10, 5
    shifts = ca.shift_grid(k)
    weights = ca.quadratic_weights_2d(h, w, shifts, 0.8, padding=padding)  # (25, 90, N_k)
    kr, kc = ca.key_grid(h, w, padding, k // 2)
    np.testing.assert_allclose(weights.sum(-1).numpy(), 1.0, rtol=0, atol=1e-12)
    assert (weights >= 0).all()
    for hd, (d1, d2) in enumerate(shifts):
        for qr, qc in ((4, 4), (3, 6), (6, 5)):  # interior: q + Δ inside the image
            top = int(weights[hd, qr * w + qc].argmax())
            assert (kr[top].item(), kc[top].item()) == (qr + d1, qc + d2)


def test_zero_padding_keys_and_a_queries_subset():
    kr, kc = ca.key_grid(3, 4, "zeros", 2)
    assert len(kr) == (3 + 4) * (4 + 4) and kr.min() == -2 and kc.max() == 5
    all_rows = ca.quadratic_weights_2d(5, 6, [(0, 1)], 2.0)
    some = ca.quadratic_weights_2d(5, 6, [(0, 1)], 2.0, queries=torch.tensor([7, 20]))
    np.testing.assert_array_equal(some[0].numpy(), all_rows[0, [7, 20]].numpy())  # same code, same rows


@pytest.mark.parametrize("k,c_in,c_out", [(3, 2, 3), (5, 3, 2)])
def test_conv_as_attention_matches_conv2d_at_large_alpha(k, c_in, c_out):
    x, w = rand(c_in, 9, 11, seed=k), randn(c_out, c_in, k, k, seed=k + 1)
    ref = F.conv2d(x[None], w, padding=k // 2)[0]
    out = ca.conv_as_attention(x, w, 40.0)
    assert out.shape == (c_out, 9, 11)
    np.testing.assert_allclose(out.numpy(), ref.numpy(), rtol=0, atol=1e-3)
    assert float((out - ref).abs().max()) < 1e-9  # float64: exp(−40) of leak


@pytest.mark.parametrize("k", [3, 5])
def test_error_against_conv2d_falls_monotonically_as_alpha_grows(k):
    x, w = rand(3, 8, 8, seed=10 + k), randn(2, 3, k, k, seed=20 + k)
    sweep = ca.alpha_sweep(x, w, [0.25, 0.5, 1, 2, 4, 8, 16, 32])
    assert np.all(np.diff(sweep.max_diff) < 0), sweep.max_diff
    assert sweep.max_diff[0] > 0.1 and sweep.max_diff[-1] < 1e-9
    assert sweep.below_at == sweep.alphas[np.argmax(sweep.max_diff < 1e-3)]


def test_full_and_separable_computations_are_the_same_layer():
    x, w = rand(2, 6, 7, seed=3), randn(3, 2, 3, 3, seed=4)
    for padding in ca.PADDINGS:
        a = ca.conv_as_attention(x, w, 0.6, padding=padding, method="separable")
        b = ca.conv_as_attention(x, w, 0.6, padding=padding, method="full")
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12, atol=1e-12)


def test_attention_over_existing_keys_tends_to_replicate_padding_not_zeros():
    x, w = rand(1, 7, 7, seed=5), randn(1, 1, 3, 3, seed=6)
    out = ca.conv_as_attention(x, w, 40.0, padding="existing")
    replicate = F.conv2d(F.pad(x[None], (1, 1, 1, 1), mode="replicate"), w)[0]
    np.testing.assert_allclose(out.numpy(), replicate.numpy(), rtol=0, atol=1e-9)
    zeros = F.conv2d(x[None], w, padding=1)[0]
    assert float((out - zeros)[:, 1:-1, 1:-1].abs().max()) < 1e-9  # the interior agrees,
    assert float((out - zeros).abs().max()) > 1e-2  # the border does not


def test_the_heads_as_an_attention_source_give_the_same_weights():
    h, w, k, alpha = 5, 6, 3, 1.5
    src = ca.attention_source(h, w, k, alpha)
    assert (src.n_heads, src.n_kv_heads, len(src.tokens_q), len(src.keys)) == (9, 9, 30, 7 * 8)
    pm = pooled_attention(src, max_side=4096)
    ref = ca.quadratic_weights_2d(h, w, ca.shift_grid(k), alpha, padding="zeros").numpy()
    np.testing.assert_allclose(pm.weights, ref, rtol=1e-5, atol=1e-6)  # float32 source, float64 reference
    assert src.tokens_q[7] == "(1,1)" and src.keys[0] == "(-1,-1)"


def test_bad_values_are_refused_with_the_fix():
    for bad in (0, -1.0, float("nan"), float("inf"), "1"):
        with pytest.raises(ConfigError) as e:
            ca.check_alpha(bad)
        assert e.value.key == "conv_alpha"
    with pytest.raises(ConfigError, match="must be odd: use 3 or 5") as e:
        ca.check_kernel_size(4, 9, 9)
    assert e.value.key == "conv_k_even"
    with pytest.raises(ConfigError, match="K ≤ 4") as e:
        ca.conv_as_attention(rand(1, 4, 6), randn(1, 1, 5, 5), 1.0)
    assert e.value.key == "conv_k_large"


def test_typed_kernels_and_presets():
    np.testing.assert_array_equal(ca.parse_kernel("1 2 1; 2, 4, 2\n1 2 1"), [[1, 2, 1], [2, 4, 2], [1, 2, 1]])
    for text, key in (
        ("1 2; 3 4", "conv_k_even"),
        ("1 2 3; 4 5", "conv_kernel_square"),
        ("a b c", "conv_kernel_numbers"),
        ("", "conv_kernel_square"),
        ("1 nan 1; 1 1 1; 1 1 1", "conv_kernel_numbers"),
        (";".join(["1 " * 9] * 9), "conv_k_max"),
    ):
        with pytest.raises(ConfigError) as e:
            ca.parse_kernel(text)
        assert e.value.key == key, text
    assert ca.kernel_preset("blur", 5).sum() == pytest.approx(1.0)
    assert ca.kernel_preset("sharpen", 3).sum() == pytest.approx(1.0)
    x = rand(1, 6, 6)
    shifted = ca.reference_conv(x, ca.per_channel(ca.kernel_preset("shift", 3), 1))
    np.testing.assert_array_equal(shifted[0, :, :-1].numpy(), x[0, :, 1:].numpy())  # output at x = input at x + 1
    sobel = ca.reference_conv(
        torch.arange(36.0, dtype=torch.float64).view(1, 6, 6), ca.per_channel(ca.kernel_preset("sobel", 5), 1)
    )
    assert sobel[0, 2, 2].item() == pytest.approx(8.0)  # a ramp of slope 1 along columns: (1 + 2 + 1) · 2
    w = ca.per_channel(np.ones((3, 3)), 3)
    assert w.shape == (3, 3, 3, 3) and w[0, 1].sum() == 0 and w[2, 2].sum() == 9


def png(size=(20, 10), mode="RGB", fmt="PNG", **kw) -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.new(mode, size, **kw).save(buf, format=fmt)
    return buf.getvalue()


def test_images_are_read_resized_and_refused_with_a_reason():
    from PIL import Image

    grey = ca.load_image(png((100, 50), "L", color=128))
    assert grey.shape == (1, 32, 64) and grey.dtype == np.float32 and grey.max() == pytest.approx(128 / 255)
    rgb = ca.load_image(png((8, 6), "RGB", fmt="JPEG", color=(200, 10, 10)))
    assert rgb.shape == (3, 6, 8)
    with pytest.raises(ConfigError) as e:
        ca.load_image(b"hello, I am a text file\n")
    assert e.value.key == "conv_image_unreadable"
    with pytest.raises(ConfigError) as e:
        ca.load_image(b"\0" * (ca.MAX_UPLOAD_BYTES + 1))
    assert e.value.key == "conv_image_large"
    with pytest.raises(ConfigError) as e:
        ca.load_image(png(fmt="GIF", mode="L"))
    assert e.value.key == "conv_image_format"
    buf = io.BytesIO()
    frames = [Image.new("RGB", (8, 8), c) for c in ("red", "blue")]
    frames[0].save(buf, format="PNG", save_all=True, append_images=frames[1:])
    with pytest.raises(ConfigError) as e:
        ca.load_image(buf.getvalue())
    assert e.value.key == "conv_image_animated"


def test_patterns_are_grey_images_in_0_1():
    for name in ca.PATTERNS:
        img = ca.pattern(name, 16)
        assert img.shape == (1, 16, 16) and img.min() >= 0 and img.max() <= 1 and img.std() > 0.1
