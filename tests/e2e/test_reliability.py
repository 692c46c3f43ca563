"""A lecture hall in a browser: concurrent sessions, untrusted text, disconnects, offline, first visitor."""

from __future__ import annotations

import re

import numpy as np
import pytest

from attn_core.attention.maps import compute_attention_maps
from attn_core.attention.tokens import tokenize
from attn_core.runtime.config import AttentionConfig
from tests.e2e.conftest import PageWatch, start_server
from tests.e2e.test_pages import assert_clean
from tests.util import arr

pytestmark = pytest.mark.e2e
TEXT = "The cat sat on the mat because it was tired ."


def grid_z(page) -> np.ndarray:
    z = page.evaluate("() => document.querySelector('.st-key-grid .js-plotly-plot').data[0].z")
    return arr(z)


def expected_head0(seed: int, n_heads: int, head_dim: int) -> np.ndarray:
    cfg = AttentionConfig(n_heads=n_heads, n_kv_heads=1, head_dim=head_dim, seed=seed)
    return compute_attention_maps(cfg, tokenize(TEXT)).weights[0]


def test_concurrent_sessions_see_only_their_own_numbers(browser, server):
    # 4 browsers at once (tests/bench/test_hall.py runs 10 protocol-level students; 100 are bench/hall.py's)
    sessions = []
    try:
        for i in range(4):
            ctx = browser.new_context(viewport={"width": 1280, "height": 900})
            w = PageWatch(ctx.new_page(), server)
            w.page.set_default_timeout(120_000)
            sessions.append((ctx, w, dict(seed=100 + i, n_heads=1 + i, head_dim=4 + i)))
        for _, w, p in sessions:  # all load at once: navigate without waiting
            w.page.goto(
                f"{server}/?seed={p['seed']}&n_heads={p['n_heads']}&n_kv_heads=1&head_dim={p['head_dim']}",
                wait_until="commit",
            )
        for _, w, _p in sessions:
            w.page.wait_for_selector(".st-key-grid .js-plotly-plot .main-svg", timeout=120_000)
            w.wait_idle(120_000)
        # every session moves its d_k slider at the same time
        for _, w, _p in sessions:
            w.page.locator(".st-key-head_dim input[type='range']").first.focus()
        for _, w, p in sessions:
            w.page.keyboard.press("ArrowRight")
            p["head_dim"] += 1
        for _, w, p in sessions:
            w.page.wait_for_function(
                "d => document.body.innerText.includes('d_k = ' + d + ' ·')", arg=p["head_dim"], timeout=120_000
            )
            w.wait_idle(120_000)
        for _, w, p in sessions:
            z = grid_z(w.page)
            want = expected_head0(p["seed"], p["n_heads"], p["head_dim"])
            np.testing.assert_allclose(z[: want.shape[0], : want.shape[1]], want, atol=1e-6)
            assert_clean(w)
    finally:
        for ctx, _, _ in sessions:
            ctx.close()


HOSTILE = (
    "<script>alert('xss')</script><img src=x onerror=alert(2)> **bold** [link](javascript:alert(3)) "
    "$x^2$ 注意力机制 😀👨‍👩‍👧 مرحبا بالعالم "
)


def test_untrusted_text_is_shown_literally(watch):
    watch.open("")
    box = watch.page.locator(".st-key-text textarea")
    box.fill(HOSTILE)
    box.press("Control+Enter")
    watch.wait_idle()
    watch.page.wait_for_timeout(500)
    labels = watch.page.evaluate(
        "() => { const d = document.querySelector('.st-key-grid .js-plotly-plot').data[0];"
        " return JSON.stringify([d.x, d.y]); }"
    )
    # literal tokens in the axis and hover labels, nothing executed or rendered as markup
    for label in ("< (0)", "script (1)", "img (", "注 (", "👨‍👩‍👧 (", "مرحبا ("):
        assert label in labels, label
    assert watch.page.locator("img[src='x']").count() == 0
    assert_clean(watch)
    watch.shot("heatmaps-untrusted-text")


def test_long_text_from_a_link_is_cut_with_notice(watch):
    long_text = "word " * 2000  # 10,000 characters
    watch.open("?text=" + long_text.replace(" ", "+"))
    body = watch.page.inner_text("body")
    assert "10,000 characters" in body and "2,000" in body
    assert re.search(r"only the first 256 are used", body)
    assert_clean(watch)


def test_server_survives_a_client_leaving_mid_computation(browser, server):
    ctx = browser.new_context()
    page = ctx.new_page()
    page.goto(f"{server}/?source=synthetic&seq_len=512&n_heads=64&n_kv_heads=8&head_dim=256", wait_until="commit")
    page.wait_for_timeout(1500)  # the script is running the 64-head, 512-token layer
    ctx.close()
    ctx2 = browser.new_context()
    w = PageWatch(ctx2.new_page(), server)
    w.open("")
    assert w.page.get_by_test_id("stPlotlyChart").count() >= 1
    assert_clean(w)
    ctx2.close()


def test_first_visitor_of_a_fresh_server_deep_link(browser):
    """A fresh server's first visitor opening a deep link gets the page inside app.py's navigation and sidebar:
    the page scripts are in app_pages/, so Streamlit's legacy routing by a pages/ folder, which before a server's
    first st.navigation call ran the page script alone, stays off (ui.streamlit_compat.LEGACY_PAGES_DIR)."""
    proc, url = start_server()
    try:
        ctx = browser.new_context(viewport={"width": 1280, "height": 900})
        w = PageWatch(ctx.new_page(), url)
        w.open("saturation?head_dim=256")
        sidebar = w.page.get_by_test_id("stSidebar").inner_text()
        assert "Seed" in sidebar  # app.py's sidebar, not the bare page script
        assert "d_k = 256" in w.page.inner_text("body")
        assert "Page not found" not in w.page.inner_text("body")
        ctx.close()
    finally:
        proc.terminate()
        proc.wait(10)
