"""Exported files (PNG, SVG, PDF, CSV, HTML) and the command-line exporter."""

import io
import os
import re
import struct
import xml.etree.ElementTree as ET

import numpy as np
import pandas as pd
import pytest

from attn_core import export, render
from attn_core.attention.maps import compute_attention_maps
from attn_core.attention.tokens import tokenize
from attn_core.runtime.config import AttentionConfig


def need_chromium():
    if render.find_chromium() is None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("Debian's chromium is required under CI for image export")
        pytest.skip("image export needs Debian's chromium (apt-get install chromium fonts-noto-cjk)")


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])


def test_cli_writes_every_format_with_the_page_numbers(tmp_path):
    need_chromium()
    text = "注意力 is all you need"
    paths = export.run(
        [
            "--text",
            text,
            "--mask",
            "causal",
            "--n-heads",
            "4",
            "--n-kv-heads",
            "2",
            "--d-k",
            "8",
            "--format",
            "png,svg,pdf,csv,html",
            "--out",
            str(tmp_path),
            "--seed",
            "3",
        ]
    )
    by_ext = {p.suffix: p for p in paths}
    assert set(by_ext) == {".png", ".svg", ".pdf", ".csv", ".html"}
    w, h = png_size(by_ext[".png"].read_bytes())
    assert w >= 1600 and h > 300
    root = ET.fromstring(by_ext[".svg"].read_bytes())
    assert root.tag.endswith("svg")
    assert "注 (0)" in by_ext[".svg"].read_text(encoding="utf-8")  # CJK labels kept as text
    assert by_ext[".pdf"].read_bytes()[:5] == b"%PDF-"
    html = by_ext[".html"].read_text(encoding="utf-8")
    assert "Plotly.newPlot" in html and len(html) > 1_000_000  # plotly.js is embedded
    assert not re.search(r"<script[^>]*\bsrc=", html)  # nothing loaded from a CDN: works offline
    df = pd.read_csv(by_ext[".csv"], encoding="utf-8-sig")
    maps = compute_attention_maps(
        AttentionConfig(n_heads=4, n_kv_heads=2, head_dim=8, seed=3), tokenize(text), mask_kind="causal"
    )
    got = df.sort_values(["head", "query_pos", "key_pos"])["weight"].to_numpy().reshape(4, 7, 7)
    # the CLI's pooled (chunked) path against compute_attention_maps: two float32 computations whose rounding
    # depends on the CPU's kernels, so float32 tolerances (weights are in 0..1)
    np.testing.assert_allclose(got, maps.weights, rtol=1e-5, atol=1e-6)
    assert df.loc[0, "query"] == "注" and bool(df.loc[1, "masked"]) is True


def test_warm_renderer_is_reused(monkeypatch):
    """One kaleido renderer a process: after the first image no other is started (its speed is the benchmark's:
    a timed bound here would fail on a slow CI machine, not on slow code)."""
    need_chromium()
    import kaleido
    import plotly.graph_objects as go

    fig = go.Figure(go.Heatmap(z=[[0, 1], [1, 0]]))
    render.render_image(fig, "png")  # warm-up (starts Chromium once per process)
    assert kaleido._global_server.is_running()  # noqa: SLF001 - kaleido exposes no public query
    started = []
    real_start = kaleido.start_sync_server
    monkeypatch.setattr(kaleido, "start_sync_server", lambda *a, **k: started.append(1) or real_start(*a, **k))
    images = {fmt: render.render_image(fig, fmt) for fmt in ("png", "svg", "pdf")}
    assert started == []  # the warm renderer drew all three
    assert images["png"][:8] == b"\x89PNG\r\n\x1a\n" and images["pdf"][:5] == b"%PDF-"
    assert b"<svg" in images["svg"][:400]


def test_csv_has_bom_for_spreadsheets():
    data = render.data_csv(pd.DataFrame({"token": ["注"], "w": [0.5]}))
    assert data.startswith("\ufeff".encode()) and "注" in data.decode("utf-8-sig")
    assert pd.read_csv(io.BytesIO(data), encoding="utf-8-sig")["token"][0] == "注"


def test_missing_chromium_gives_a_clear_error(monkeypatch):
    import kaleido

    # as on a machine without Chromium: no warm renderer, nothing to start one with
    monkeypatch.setattr(kaleido._global_server, "is_running", lambda: False)
    monkeypatch.setattr(render, "find_chromium", lambda: None)
    import plotly.graph_objects as go

    with pytest.raises(render.RenderError, match="apt-get install chromium"):
        render.render_image(go.Figure(), "png")


def test_cli_rejects_bad_input(tmp_path, capsys):
    assert export.main(["--n-kv-heads", "3", "--out", str(tmp_path)]) == 2
    assert "valid n_kv_heads: 1, 2, 4, 8" in capsys.readouterr().err
    assert export.main(["--format", "gif", "--out", str(tmp_path)]) == 2
    assert "gif" in capsys.readouterr().err
    assert export.main(["--page", "nope", "--out", str(tmp_path)]) == 2
