"""The surgery page in a real browser: SmolLM2's KV heads pooled (the chart, the verdict, the maps before and after,
a head moved), a sweep stopped part way, and a model card from an uploaded GGUF header that keeps its card when
the next upload is cut short; screenshots in both languages."""

from __future__ import annotations

import numpy as np
import pytest

from tests.e2e.test_pages import assert_clean

pytestmark = pytest.mark.e2e

PANELS = """() => [...document.querySelectorAll('.st-key-sg_maps .js-plotly-plot')].map(
    gd => gd.layout.annotations.filter(a => a.text.startsWith('<b>')).map(a => a.text))"""


def test_pooling_smollm2_draws_the_cost_and_the_maps_before_and_after(watch):
    watch.open("surgery?sg_tokens=128", timeout=300_000)
    body = watch.page.inner_text("body")
    assert "Pooling SmolLM2-135M-Instruct's 3 KV heads into 1 KV head (MQA) by mean saves 67%" in body
    assert "breaks the model" in body and "KV cache for 128 tokens 5.62 MiB → 1.88 MiB (67% less)" in body
    assert watch.page.locator(".js-plotly-plot").count() == 2  # the quality by method, the maps
    assert watch.page.evaluate(PANELS) == [["<b>original</b>", "<b>1 KV head (MQA), mean</b>"]]
    assert_clean(watch)
    watch.shot("surgery-kv-heads")
    before = watch.chart_fingerprints()
    watch.press_slider("sg_head")
    assert watch.chart_fingerprints()[1] != before[1] and "Layer 17, head 4" in watch.page.inner_text("body")
    assert "sg_head=4" in watch.page.url


def test_a_sweep_stops_part_way_and_says_so_in_chinese(watch):
    watch.open("surgery?view=ablate&sg_tokens=256&sg_layer=9&lang=zh", chart=False, timeout=300_000)
    stop = watch.page.locator(".st-key-sg_stop button")
    if stop.count():  # measuring (not every setting cached by an earlier test): stop it after its first settings
        watch.page.wait_for_selector("[data-testid='stProgress']", timeout=120_000)
        stop.click()
        watch.wait_idle(300_000)
        body = watch.page.inner_text("body")
        assert "已停止：" in body and watch.page.locator(".st-key-sg_resume button").count() == 1
        watch.page.locator(".st-key-sg_resume button").click()
        watch.wait_idle(600_000)
    body = watch.page.inner_text("body")
    assert "逐个静音时，第 9 层代价最大的头" in body and "已停止" not in body
    assert_clean(watch)
    watch.shot("surgery-ablate-zh")


def small_gguf(path, cut: int | None = None):
    """A GGUF file of a tiny Gemma-3-like model (the gguf package's writer), whole or its first ``cut`` bytes."""
    gguf = pytest.importorskip("gguf")
    w = gguf.GGUFWriter(str(path), "gemma3")
    for add, v in (("add_block_count", 6), ("add_embedding_length", 64), ("add_head_count", 4)):
        getattr(w, add)(v)
    w.add_head_count_kv(1)
    w.add_context_length(4096)
    w.add_sliding_window(512)
    w.add_token_list([f"t{i}" for i in range(100)])
    w.add_tensor("token_embd.weight", np.zeros((100, 64), dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    if cut is not None:
        path.write_bytes(path.read_bytes()[:cut])
    return path


def test_an_uploaded_gguf_header_makes_a_card_and_a_cut_file_keeps_it(watch, tmp_path):
    watch.open("surgery?view=card&sg_card=upload", chart=False)
    assert "Choose a config.json or a .gguf file" in watch.page.inner_text("body")
    upload = watch.page.locator(".st-key-sg_upload input[type='file']")
    upload.set_input_files(str(small_gguf(tmp_path / "tiny.gguf")))
    watch.wait_idle()
    watch.page.wait_for_selector(".js-plotly-plot .main-svg")
    body = watch.page.inner_text("body")
    assert "tiny.gguf (gemma3, MQA): 4 query heads share 1 KV head" in body
    assert "5 of its 6 layers keep only the last 512 tokens" in body
    upload.set_input_files(str(small_gguf(tmp_path / "cut.gguf", cut=200)))
    watch.wait_idle()
    body = watch.page.inner_text("body")
    assert "cut.gguf is cut short: the file ends inside its header" in body
    assert "Still showing the last card read: tiny.gguf." in body and watch.page.locator(".js-plotly-plot").count() == 2
    watch.shot("surgery-card-upload")
