"""The "Attention as convolution" view model: kernels and images from the Params, sentences chosen from the
numbers, the command line's views."""

from __future__ import annotations

import numpy as np
import pytest

from attn_core.conv import attention as ca
from attn_core.figures import Style
from attn_core.runtime.config import ConfigError
from attn_core.views import conv_attention as cv

S = Style()


def test_kernels_come_from_the_preset_at_k_or_the_typed_numbers():
    assert cv.Params(kernel="blur", k=5).kernel2d.shape == (5, 5)
    np.testing.assert_array_equal(
        cv.Params(kernel="custom", kernel_text="1 2 3;4 5 6;7 8 9").kernel2d, np.arange(1, 10).reshape(3, 3)
    )
    with pytest.raises(ConfigError):
        cv.Params(kernel="custom", kernel_text="1 2; 3 4").kernel2d  # noqa: B018 - the property raises
    with pytest.raises(ConfigError) as e:
        cv.Params(kernel="wavelet")
    assert e.value.key == "unknown_option"


def test_line_sentences_follow_the_measured_window():
    gauss = cv.line_step(64, 32, 2, 0.05, 3)
    assert gauss.mean == pytest.approx(2, abs=1e-6) and gauss.var == pytest.approx(10, rel=1e-4)
    assert cv.line_sentence(gauss, S)[0] == "info" and "Gaussian window" in cv.line_sentence(gauss, S)[1]
    narrow = cv.line_step(24, 12, 1, 5.0, 3)
    assert narrow.var < 0.5 * (1 / 10)  # α = 5: nearly one-hot, far below 1/(2α) = 0.1
    assert "narrower than the continuous Gaussian" in cv.line_sentence(narrow, S)[1]
    cut = cv.line_step(12, 11, 2, 0.1, 3)
    assert cut.mean < 0 and cv.line_sentence(cut, S)[0] == "warning"
    both = cv.line_step(5, 2, 0, 0.05, 3)  # cut at both ends alike: the mean is right, the variance is not
    assert both.mean == pytest.approx(0, abs=1e-12) and both.var < 2 < 10
    assert "cut off by the ends" in cv.line_sentence(both, S)[1]


def test_image_and_sweep_sentences_follow_the_differences():
    img, blur = ca.pattern("gradient", 10), ca.kernel_preset("blur", 3)
    wide = cv.image_step(img, blur, 0.5, "zeros", 4, 4)
    assert wide.max_diff > cv.TOL and cv.image_sentence(wide, S)[0] == "info"
    sharp = cv.image_step(img, blur, 20.0, "zeros", 4, 4)
    assert sharp.max_diff < 1e-6 and cv.image_sentence(sharp, S)[0] == "success"
    border = cv.image_step(img, blur, 20.0, "existing", 4, 4)
    assert border.border_diff < 1e-6 < cv.TOL < border.max_diff and cv.image_sentence(border, S)[0] == "warning"
    assert border.maps.shape == (9, 10, 10) and wide.maps.shape == (9, 12, 12)  # keys: the image, with its ring
    sw = cv.sweep_step(img, blur, "zeros")
    assert cv.sweep_sentence(sw, "zeros", S)[0] == "success"
    never = ca.Sweep(sw.alphas, np.full(len(sw.alphas), 0.2), cv.TOL, None)
    assert "stays above 0.001 up to α = 100" in cv.sweep_sentence(never, "zeros", S)[1]


def test_the_command_line_draws_every_view_and_names_files_by_settings(tmp_path):
    names = [v.name for v in cv.views(cv.Params(image_size=8, seq_len=9, query=4), S, "all")]
    assert names[:3] == ["conv_score_s1_n9_q4_a1", "conv_window_s1_n9_q4_a1", "conv_heads3_n9_q4_a1"]
    assert "conv_sweep_zeros" in names and "conv_analogy_k3" in names and len(names) == 3 + 5 + 1 + 1
    assert cv.file_stem(cv.Params()) == "glyph16_blur_k3_a1_zeros"
    path = tmp_path / "text.png"
    path.write_text("not an image")
    with pytest.raises(ConfigError) as e:
        cv.views(cv.Params(view="image", image=str(path)), S)
    assert e.value.key == "conv_image_unreadable"


def test_large_maps_are_drawn_as_a_window_around_the_query_and_say_so():
    res = cv.image_step(ca.pattern("checker", 40), ca.kernel_preset("blur", 3), 10.0, "zeros", 3, 30)
    assert cv.map_window(res) == (0, 24, 18, 42)  # key rows −1..22 (the top edge), columns 17..40 (the right edge)
    fig = cv.image_views(res, 0, S)[1].figure
    maps = [d for d in fig.data if d.type == "heatmap"]
    assert len(maps) == 9 and np.asarray(maps[0].z).shape == (24, 24)
    for i, (d1, d2) in enumerate(ca.shift_grid(3)):
        z = np.asarray(maps[i].z)
        r, c = np.unravel_index(np.argmax(z), z.shape)
        assert (maps[i].y[r], maps[i].x[c]) == (3 + d1, 30 + d2)
    assert "key rows -1…22, columns 17…40 of the 42×42 key pixels" in fig.layout.title.text
    small = cv.image_step(ca.pattern("checker", 12), ca.kernel_preset("blur", 3), 10.0, "zeros", 3, 3)
    assert cv.window_note(small, S) == "" and cv.map_window(small) == (0, 14, 0, 14)


def test_the_padding_help_says_whether_the_two_paddings_agree_on_this_image():
    zh = Style(lang="zh")
    glyph = cv.Params()  # the default image: a glyph on a zero border, where replicate padding pads zeros too
    img = cv.image_of(glyph)
    assert np.abs(img[:, [0, -1], :]).max() == 0 and np.abs(img[:, :, [0, -1]]).max() == 0
    assert cv.padding_gap(img, glyph.kernel2d) == 0.0
    en = cv.padding_help(img, glyph.kernel2d, S)
    assert "different on the border" not in en and "agree" in en and "outermost pixels are all 0" in en
    assert "最外圈像素全为 0" in cv.padding_help(img, glyph.kernel2d, zh)
    grad = cv.Params(pattern="gradient")
    gimg = cv.image_of(grad)
    gap = cv.padding_gap(gimg, grad.kernel2d)
    ref = ca.reference_conv(gimg, ca.per_channel(grad.kernel2d, 1), "zeros")
    rep = ca.reference_conv(gimg, ca.per_channel(grad.kernel2d, 1), "existing")
    assert gap == pytest.approx(float((ref - rep).abs().max())) and gap > 0.1
    text = cv.padding_help(gimg, grad.kernel2d, S)
    assert f"differ by up to {gap:.2g}" in text and "outermost" not in text
    assert f"{gap:.2g}" in cv.padding_help(gimg, grad.kernel2d, zh)
