"""The lecture room in AppTest: export file names follow the view; the QR code of the link (issue 16)."""

from __future__ import annotations

import io

import pytest
import segno

import ui.frame
import ui.output
from tests.conftest import no_exception
from tests.util import cli_file

PAGE = "app_pages/heatmaps.py"
SHAPE = {"n_heads": "4", "n_kv_heads": "2", "head_dim": "8"}


def export_names(app_test, monkeypatch, query: dict[str, str]) -> list[str]:
    seen: list[str] = []
    real = ui.output.export_menu
    monkeypatch.setattr(
        ui.output, "export_menu", lambda fig, key, data, name: seen.append(name) or real(fig, key, data, name)
    )
    at = app_test(PAGE, query=query)
    no_exception(at)
    return seen


def test_exports_name_the_page_view_shape_mask_and_language(app_test, monkeypatch):
    plain = export_names(app_test, monkeypatch, SHAPE)
    causal = export_names(app_test, monkeypatch, {**SHAPE, "mask": "causal"})
    chinese = export_names(app_test, monkeypatch, {**SHAPE, "mask": "causal", "lang": "zh"})
    other_text = export_names(app_test, monkeypatch, {**SHAPE, "mask": "causal", "text": "a b c d"})
    assert plain[0].startswith("heatmaps_attention_weights_seeded-h4-kv2-dk8_none_en_")
    assert causal[0].startswith("heatmaps_attention_weights_seeded-h4-kv2-dk8_causal_en_")
    assert chinese[0].startswith("heatmaps_attention_weights_seeded-h4-kv2-dk8_causal_zh_")
    assert other_text[0].rsplit("_", 1)[0] == causal[0].rsplit("_", 1)[0] != plain[0].rsplit("_", 1)[0]
    assert len({plain[0], causal[0], chinese[0], other_text[0]}) == 4  # none overwrites another
    argv = [
        "--page",
        "heatmaps",
        "--n-heads",
        "4",
        "--n-kv-heads",
        "2",
        "--d-k",
        "8",
        "--mask",
        "causal",
        "--lang",
        "zh",
    ]
    assert f"{chinese[0]}.png" == cli_file(argv, "attention_weights", "png")  # the command line names it the same


@pytest.mark.parametrize(
    "url, local",
    [
        ("http://localhost:8501/x", True),
        ("http://127.0.0.1:8501/", True),
        ("http://10.0.0.5:8501/heatmaps?n_heads=8", False),
        ("https://attention.example.edu/kv_cache", False),
    ],
)
def test_a_link_to_this_computer_only_is_told_apart(url, local):
    assert ui.frame.local_only(url) is local


def test_the_qr_code_holds_the_link():
    zxingcpp = pytest.importorskip("zxingcpp")
    from PIL import Image

    url = "http://10.0.0.5:8501/heatmaps?n_heads=8&n_kv_heads=2&mask=causal&text=%E6%B3%A8%E6%84%8F%E5%8A%9B"
    svg = ui.frame.qr_svg.__wrapped__(url) if hasattr(ui.frame.qr_svg, "__wrapped__") else ui.frame.qr_svg(url)
    assert svg.startswith("<svg") and 'xmlns="http://www.w3.org/2000/svg"' in svg
    buf = io.BytesIO()  # the same code as a PNG (the test decodes pixels; the page shows the SVG)
    segno.make(url, error="m", micro=False).save(buf, kind="png", scale=8, border=4)
    assert [r.text for r in zxingcpp.read_barcodes(Image.open(io.BytesIO(buf.getvalue())))] == [url]
