"""The "Attention as convolution" page in a real browser: the 1-D head, the K² heads against conv2d (a typed
kernel, in Chinese), and the α sweep; screenshots in both languages. Three page loads."""

from __future__ import annotations

import pytest

from tests.e2e.test_pages import assert_clean

pytestmark = pytest.mark.e2e


def test_line_image_in_chinese_and_sweep(watch):
    watch.open("conv_attention")
    body = watch.page.inner_text("body")
    assert "variance 0.499" in body and "1/(2α) = 0.5" in body
    assert watch.page.locator(".js-plotly-plot").count() == 3
    assert_clean(watch)
    watch.shot("conv-line")
    watch.open("conv_attention?view=image&lang=zh&kernel=sobel&k=5&alpha=10&pattern=checker")
    assert watch.page.get_by_role("heading", name="注意力即卷积").count() == 1
    body = watch.page.inner_text("body")
    assert "25 个头与 conv2d 一致" in body and "补零" in body
    assert watch.page.locator(".js-plotly-plot").count() == 5
    assert_clean(watch)
    assert watch.pushed_margins() == [], "plotly had to widen margins: those charts were laid out twice"
    watch.shot("conv-image-zh")
    watch.page.locator(".st-key-conv_upload input[type='file']").set_input_files(
        files=[{"name": "notes.txt", "mimeType": "text/plain", "buffer": b"not an image"}]
    )
    watch.page.wait_for_function("() => document.body.innerText.includes('该文件不是 PNG 或 JPEG 图像')")
    watch.wait_idle()
    assert "继续使用内置图像" in watch.page.inner_text("body")
    assert watch.page.locator(".js-plotly-plot").count() == 5  # the built-in image stays
    watch.open("conv_attention?view=sweep&padding=existing&image_size=12&pattern=gradient")
    body = watch.page.inner_text("body")
    assert "does not fall below 0.001" in body
    assert_clean(watch)
    assert watch.pushed_margins() == []
    watch.shot("conv-sweep")


def test_the_image_upload_speaks_the_pages_language(watch):
    """Streamlit writes its uploader's button ("Upload") and the server's size limit ("200MB per file") in English:
    a Chinese page showed both (and the page takes 2 MiB, as its label says): the note is hidden, the button says
    上传."""
    watch.open("conv_attention?view=image&lang=zh")
    zone = ".st-key-conv_upload [data-testid='stFileUploaderDropzone']"
    drawn = watch.page.locator(zone).inner_text()
    assert "Upload" not in drawn and "200MB" not in drawn, drawn
    label = watch.page.evaluate(
        f"""() => getComputedStyle(document.querySelector("{zone} button [data-testid='stMarkdownContainer']"),
                                   '::after').content"""
    )
    assert label == '"上传"'
    assert "2 MiB" in watch.page.locator(".st-key-conv_upload").inner_text()  # the page's own limit, in its label
    assert_clean(watch)
