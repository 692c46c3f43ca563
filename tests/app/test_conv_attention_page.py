"""AppTest: the "Attention as convolution" page, every view. The charts carry the engine's numbers (softmax rows
of the quadratic encoding, the layer's output against torch's conv2d), the sentences conclude from them, and bad
uploads and kernels are refused with a message while the built-in image stays."""

from __future__ import annotations

import io

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from attn_core.conv import attention as ca
from attn_core.views import conv_attention as cv
from tests.conftest import no_exception
from tests.util import arr, chart_specs

PAGE = "app_pages/conv_attention.py"


def texts(at) -> str:
    return "\n".join(e.value for e in [*at.markdown, *at.caption, *at.warning, *at.info, *at.error, *at.success])


def heatmaps(spec: dict) -> list[np.ndarray]:
    return [arr(d["z"]) for d in spec["data"] if d["type"] == "heatmap"]


def test_line_view_draws_the_softmax_rows_and_measures_the_window(app_test):
    at = app_test(PAGE, query={"seq_len": "30", "query": "14", "shift": "-2", "alpha": "0.5", "k": "5"})
    no_exception(at)
    score, window, heads = chart_specs(at)
    np.testing.assert_allclose(
        arr(window["data"][0]["y"]), ca.quadratic_weights_1d(30, -2, 0.5)[14].numpy(), rtol=1e-12, atol=1e-15
    )
    np.testing.assert_allclose(arr(score["data"][0]["y"]), -0.5 * ((np.arange(30) - 14 + 2) ** 2 - 4), rtol=1e-12)
    assert [d["name"] for d in heads["data"]] == ["Δ = -2", "Δ = -1", "Δ = +0", "Δ = +1", "Δ = +2"]
    for i, s in enumerate(range(-2, 3)):
        assert int(np.argmax(arr(heads["data"][i]["y"]))) == 14 + s
    assert "variance **1**" in at.info[0].value and "1/(2α) = 1" in at.info[0].value  # σ² = 1/(2·0.5)
    at = app_test(PAGE, query={"seq_len": "10", "query": "9", "shift": "3", "alpha": "0.05"})
    assert "cut off by the ends" in at.warning[0].value  # the window cannot sit past the end


def test_image_view_maps_peak_at_query_plus_shift_and_the_output_is_conv2d(app_test):
    q = {
        "view": "image",
        "pattern": "gradient",
        "image_size": "12",
        "kernel": "sharpen",
        "alpha": "10",
        "q_row": "5",
        "q_col": "6",
    }
    at = app_test(PAGE, query=q)
    no_exception(at)
    maps, image, att, conv, diff = chart_specs(at)
    for i, (d1, d2) in enumerate(ca.shift_grid(3)):
        z = heatmaps(maps)[i]  # (14, 14): the image and its zero-padding ring
        assert np.unravel_index(np.argmax(z), z.shape) == (5 + d1 + 1, 6 + d2 + 1)
        assert z.sum() == pytest.approx(1.0, abs=1e-5)  # a softmax row
    x = torch.as_tensor(ca.pattern("gradient", 12), dtype=torch.float64)
    ref = F.conv2d(x[None], torch.as_tensor(ca.kernel_preset("sharpen", 3))[None, None], padding=1)[0, 0].numpy()
    np.testing.assert_allclose(heatmaps(conv)[0], ref, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(heatmaps(att)[0], ref, rtol=0, atol=1e-3)
    assert "The 9 heads match conv2d" in at.success[0].value
    assert "over all 196 key pixels (14×14" in texts(at)
    at = app_test(PAGE, query={**q, "padding": "existing"})
    assert "replicate padding" in at.warning[0].value  # the border differs, the interior agrees


def png(size, mode="L", colour=90) -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.new(mode, size, colour).save(buf, format="PNG")
    return buf.getvalue()


def test_uploads_are_used_or_refused_with_a_message_and_the_pattern_stays(app_test):
    at = app_test(PAGE, query={"view": "image"})
    pattern_input = heatmaps(chart_specs(at)[1])[0]
    at.file_uploader(key="conv_upload").upload("notes.txt", b"not an image at all\n", "text/plain").run()
    no_exception(at)
    assert "not a PNG or JPEG image" in at.error[0].value and "built-in image stays" in texts(at)
    np.testing.assert_array_equal(heatmaps(chart_specs(at)[1])[0], pattern_input)
    at.file_uploader(key="conv_upload").set_value(("big.png", b"\x89PNG" + b"\0" * (3 << 20), "image/png")).run()
    assert "3.0 MiB; images up to 2 MiB" in at.error[0].value
    at.file_uploader(key="conv_upload").set_value(("photo.png", png((100, 80), "RGB", (200, 100, 0)), "image/png"))
    at.run()
    no_exception(at)
    assert not at.error and "Using the uploaded image: 51×64 pixels, 3 channel(s)" in texts(at)
    assert heatmaps(chart_specs(at)[1])[0].shape == (51, 64)
    assert at.slider(key="channel").max == 2
    at.file_uploader(key="conv_upload").set_value(("tiny.png", png((3, 4)), "image/png"))
    at.slider(key="k").set_value(5).run()
    no_exception(at)
    assert "larger than the image (4×3): use K ≤ 3" in at.error[0].value and not chart_specs(at)


def test_upload_refusals_have_their_chinese_message():
    """(AppTest cannot rerun a page whose select boxes are in Chinese: its format_func reads the language outside
    the script run. The browser test uploads a text file on the Chinese page.)"""
    from attn_core.i18n import translate

    for data, key in ((b"hello", "conv_image_unreadable"), (b"\0" * (3 << 20), "conv_image_large")):
        with pytest.raises(ca.ConfigError) as e:
            ca.load_image(data)
        assert e.value.key == key
        text = translate(f"err.{key}", "zh", **e.value.params)
        assert "PNG" in text or "3.0 MiB" in text
        assert not any(
            c.isascii() and c.isalpha() for c in text.replace("PNG", "").replace("JPEG", "").replace("MiB", "")
        )


def test_typed_kernels_set_the_head_count_or_say_what_to_fix(app_test):
    at = app_test(PAGE, query={"view": "analogy", "kernel": "custom", "kernel_text": "1 0 0 0 1; " * 4 + "1 0 0 0 1"})
    no_exception(at)
    (table,) = chart_specs(at)
    cells = " ".join(" ".join(c) for c in table["data"][0]["cells"]["values"])
    assert "a 5×5 kernel needs 25 heads" in cells and "K = 5, 25 heads" in table["layout"]["title"]["text"]
    at = app_test(PAGE, query={"view": "image", "kernel": "custom", "kernel_text": "1 2; 3 4"})
    no_exception(at)
    assert "must be odd: use 1 or 3" in at.error[0].value and not chart_specs(at)


def test_sweep_view_falls_below_the_tolerance_and_marks_it(app_test):
    at = app_test(PAGE, query={"view": "sweep", "image_size": "10", "alpha": "2"})
    no_exception(at)
    (spec,) = chart_specs(at)
    sw = cv.sweep_step(ca.pattern("glyph", 10), ca.kernel_preset("blur", 3), "zeros")
    np.testing.assert_allclose(arr(spec["data"][0]["y"]), np.maximum(sw.max_diff, 1e-17), rtol=1e-12)
    assert f"from α = **{sw.below_at:.3g}** on" in at.success[0].value
    xs = [s["x0"] for s in spec["layout"]["shapes"] if s.get("yref") == "paper"]
    assert xs == [2.0, sw.below_at]  # the user's α and where it drops below 1e-3
    at = app_test(PAGE, query={"view": "sweep", "image_size": "10", "padding": "existing", "pattern": "gradient"})
    assert "does not fall below 0.001" in at.warning[0].value


@pytest.mark.parametrize("view", cv.PAGE_VIEWS)
def test_every_view_in_chinese(app_test, view):
    at = app_test(PAGE, query={"view": view, "lang": "zh"})
    no_exception(at)
    assert chart_specs(at) and at.title[0].value == "注意力即卷积"
