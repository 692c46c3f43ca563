"""Lecture features in a real browser: downloads in every format, Chinese, presentation mode, share link."""

from __future__ import annotations

import io
import re
import struct
import xml.etree.ElementTree as ET

import pandas as pd
import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from tests.e2e.conftest import SHOTS
from tests.e2e.test_pages import assert_clean

pytestmark = pytest.mark.e2e


def open_menu(watch, chart_key: str, item) -> None:
    """Open the chart's export menu until ``item`` shows. Opening and closing the popover each rerun the page
    (its contents are sent only while it is open), and a format clicked while such a rerun is under way can be
    replaced before it downloads: every step waits for the app to be idle first."""
    page = watch.page
    for _ in range(4):
        watch.wait_idle()
        if item.is_visible():
            return
        page.locator(f".st-key-{chart_key}__export button").first.click()
        try:
            item.wait_for(state="visible", timeout=10_000)
        except PlaywrightTimeout:
            continue
    watch.wait_idle()
    item.wait_for(state="visible")


def download(watch, chart_key: str, fmt: str, size: str | None = None) -> bytes:
    page = watch.page
    button = page.locator(f".st-key-{chart_key}__{fmt} button").first
    open_menu(watch, chart_key, button)
    if size:  # an image size preset (its label), picked in the popover before the format
        page.locator(f".st-key-{chart_key}__preset button", has_text=size).first.click()
        open_menu(watch, chart_key, button)
    for attempt in range(3):
        try:
            with page.expect_download(timeout=60_000) as info:
                button.click()
            break
        except PlaywrightTimeout:  # clicked while a rerun replaced the button: open the menu and click again
            if attempt == 2:
                raise
            open_menu(watch, chart_key, button)
    path = info.value.path()
    watch.downloaded = info.value.suggested_filename
    page.keyboard.press("Escape")
    watch.wait_idle()
    with open(path, "rb") as fh:
        return fh.read()


def test_downloads_are_valid_files_of_the_right_content(watch):
    watch.open("?text=注意力+is+all+you+need&n_heads=4&n_kv_heads=2&head_dim=8")
    png = download(watch, "grid", "png")
    assert re.fullmatch(r"heatmaps_attention_weights_seeded-h4-kv2-dk8_none_en_[0-9a-f]{6}\.png", watch.downloaded)
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and struct.unpack(">I", png[16:20])[0] >= 1600
    svg = download(watch, "grid", "svg")
    assert ET.fromstring(svg).tag.endswith("svg") and "注 (0)".encode() in svg
    pdf = download(watch, "grid", "pdf")
    slide = download(watch, "grid", "png", size="16:9 slide")
    assert struct.unpack(">II", slide[16:24]) == (1920, 1080) and watch.downloaded.endswith("_slide.png")
    assert pdf[:5] == b"%PDF-"
    csv = download(watch, "grid", "csv")
    df = pd.read_csv(io.BytesIO(csv), encoding="utf-8-sig")
    assert list(df.columns[:4]) == ["head", "kv_group", "query_pos", "query"]
    assert len(df) == 4 * 7 * 7 and df["query"].iloc[0] == "注"
    html = download(watch, "grid", "html").decode("utf-8")
    assert "Plotly.newPlot" in html and not re.search(r"<script[^>]*\bsrc=", html)
    assert_clean(watch)


def test_chinese_ui(watch):
    watch.open("?lang=zh")
    body = watch.page.inner_text("body")
    assert "注意力热力图" in body and "查询头数" in body and "计算设备" in body
    assert_clean(watch)
    watch.shot("heatmaps-zh")
    watch.open("saturation?lang=zh")
    assert_clean(watch)
    watch.shot("saturation-zh")


def test_presentation_mode(watch):
    watch.open("?present=1&view=steps")
    assert watch.page.get_by_test_id("stSidebar").get_attribute("data-collapsed") == "true"
    assert watch.page.locator(".st-key-n_heads").is_hidden()  # controls folded into the compact bar
    size = watch.page.evaluate(
        "() => parseFloat(getComputedStyle(document.querySelector('.js-plotly-plot .xtitle')).fontSize)"
    )
    assert size >= 20
    watch.shot("heatmaps-present-step1")
    watch.page.keyboard.press("PageDown")
    watch.wait_idle()
    watch.page.keyboard.press("PageDown")
    watch.wait_idle()
    assert "Step 3 of 8" in watch.page.inner_text("body")
    assert "slide=3" in watch.page.url
    watch.shot("heatmaps-present-step3")
    assert_clean(watch)


def test_share_link_reopens_the_same_view(watch, browser, server):
    watch.open("?n_heads=4&n_kv_heads=1&seed=9")
    watch.press_slider("head_dim", 2)
    link = watch.page.locator("[data-testid='stSidebar'] code").inner_text().strip()
    assert "head_dim=18" in link and "seed=9" in link
    # its copy button puts the same link on the clipboard (localhost is a secure context: the clipboard API)
    watch.page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    watch.open_sidebar()
    copy = watch.page.locator("[data-testid='stSidebar'] .attn-link button")
    copy.click()
    assert watch.page.evaluate("() => navigator.clipboard.readText()") == link
    assert copy.get_attribute("title") == "Copied"
    assert qr_text(watch) == link  # the QR code students scan holds the same link
    before = watch.chart_fingerprints()
    ctx = browser.new_context(viewport={"width": 1440, "height": 1000})
    from tests.e2e.conftest import PageWatch

    other = PageWatch(ctx.new_page(), server)
    other.page.goto(link)
    other.page.wait_for_selector(".js-plotly-plot .main-svg")
    other.wait_idle()
    assert other.chart_fingerprints() == before
    ctx.close()


def test_the_share_link_drops_a_control_the_page_no_longer_draws(watch):
    """A page's control reruns the page alone (app.py runs it as a fragment), and the link starts again from the
    sidebar's part each time: the synthetic sequence's length leaves the link when the input becomes text."""
    watch.open("?source=synthetic&seq_len=32&seed=4")
    sidebar_code = watch.page.locator("[data-testid='stSidebar'] code")
    assert "seq_len=32" in sidebar_code.inner_text() and "seed=4" in sidebar_code.inner_text()
    watch.page.locator(".st-key-source button", has_text="Text").first.click()
    watch.wait_idle()
    link = sidebar_code.inner_text()
    assert "seq_len" not in link and "source" not in link and "seed=4" in link, link
    watch.press_slider("head_dim", 1)  # and a slider's move after it writes the link again
    link = sidebar_code.inner_text()
    assert "head_dim=17" in link and "seq_len" not in link and "seed=4" in link, link


def qr_text(watch) -> str:
    """Open the sidebar's QR dialog, photograph the code as drawn and decode it (zxing-cpp)."""
    zxingcpp = pytest.importorskip("zxingcpp")
    from PIL import Image

    watch.page.get_by_role("button", name="QR code of this link").click()
    img = watch.page.locator("[role='dialog'] img").first
    img.wait_for(state="visible")
    body = watch.page.locator("[role='dialog']").inner_text()
    assert "this computer only" in body  # the test server listens on localhost: the page says students can't open it
    box, dialog = img.bounding_box(), watch.page.locator("[role='dialog']").bounding_box()
    centre = lambda b: b["x"] + b["width"] / 2  # noqa: E731
    assert abs(centre(box) - centre(dialog)) <= 4, (box, dialog)  # centred under the dialog's title
    shot = img.screenshot()
    (SHOTS / "qr-dialog.png").write_bytes(watch.page.screenshot())
    watch.page.keyboard.press("Escape")
    return [r.text for r in zxingcpp.read_barcodes(Image.open(io.BytesIO(shot)))][0]


LIVE_POINTS = """() => {
    const el = Array.from(document.querySelectorAll('[class*="st-key-kv_live_mem"] .js-plotly-plot')).pop();
    if (!el || !el.data) return 0;
    const sizes = {f8: 8, f4: 4, i4: 4, u4: 4, i2: 2, u2: 2, i1: 1, u1: 1, i8: 8};
    const count = x => !x ? 0 : (x.length !== undefined ? x.length : atob(x.bdata).length / (sizes[x.dtype] || 8));
    // the measured cache so far (its markers: before Run the formula's prediction already spans every step)
    return Math.max(0, ...el.data.filter(t => t.mode === 'markers').map(t => count(t.x)));
}"""


def test_live_decode_chart_grows_and_stop_leaves_page_usable(watch):
    # long enough (1024 steps of 8 layers at batch 4: tens of seconds here) that Stop always lands mid-run;
    # 400 steps of the default shape finished in about 2 s, before the click, once OpenMP stopped spinning
    watch.open("kv_cache?dec_steps=1024&dec_layers=8&dec_batch=4&dec_recompute=false")
    # before Run: the formula's prediction over all 1,024 steps, nothing measured
    predicted = LIVE_POINTS.replace("t.mode === 'markers'", "t.mode === 'lines'")
    watch.page.wait_for_function(f"() => ({predicted})() === 1024", timeout=60_000)
    assert watch.page.evaluate(LIVE_POINTS) == 0
    watch.page.locator(".st-key-kv_run button").click()
    watch.page.wait_for_function(f"() => ({LIVE_POINTS})() > 0", timeout=60_000)
    first = watch.page.evaluate(LIVE_POINTS)
    watch.page.wait_for_function(f"n => ({LIVE_POINTS})() > n", arg=first, timeout=60_000)
    second = watch.page.evaluate(LIVE_POINTS)
    assert second > first  # the chart grows while the loop runs
    watch.shot("kv_cache-live-decode")
    watch.page.locator(".st-key-kv_stop button").click()
    watch.wait_idle()
    body = watch.page.inner_text("body")
    assert "Stopped after" in body
    assert_clean(watch)
    watch.press_slider("batch", 1)  # still usable
    assert_clean(watch)


def tick_rgb(scheme: str) -> str:
    """The colour of y tick labels in ``scheme`` (Streamlit's chart theme, ui.chart_theme) as CSS computes it."""
    from tests.e2e.test_colours import rgb
    from ui import chart_theme as ct

    return "rgb({:.0f}, {:.0f}, {:.0f})".format(*rgb(ct.themes()[scheme]["layout"]["yaxis"]["tickfont"]["color"]))


ALL_TICKS = """(rgb) => { const t = [...document.querySelectorAll('.js-plotly-plot .ytick text')];
  return t.length > 0 && t.every((e) => getComputedStyle(e).fill === rgb); }"""


def test_charts_follow_a_scheme_switched_while_the_page_is_open(browser, server):
    """Streamlit does not rerun when the viewer's scheme changes; the charts, themed for the scheme of their run,
    ask for a run themselves: a page opened light whose system turns dark gets every chart's tick labels in the
    dark scheme's colour within seconds, without a control touched, and back again."""
    from tests.e2e.conftest import PageWatch

    light, dark = tick_rgb("light"), tick_rgb("dark")
    ctx = browser.new_context(viewport={"width": 1440, "height": 1000}, color_scheme="light")
    w = PageWatch(ctx.new_page(), server)
    w.open("")
    assert w.page.evaluate(ALL_TICKS, light)
    w.page.emulate_media(color_scheme="dark")
    w.page.wait_for_function(ALL_TICKS, arg=dark, timeout=15_000)
    w.page.emulate_media(color_scheme="light")
    w.page.wait_for_function(ALL_TICKS, arg=light, timeout=15_000)
    w.wait_idle()
    assert_clean(w)
    ctx.close()


def test_dark_theme_follows_the_system(browser, server):
    """Streamlit follows the browser's colour scheme; the charts follow Streamlit's theme."""
    from tests.e2e.conftest import PageWatch

    ctx = browser.new_context(viewport={"width": 1440, "height": 1000}, color_scheme="dark")
    w = PageWatch(ctx.new_page(), server)
    w.open("")
    bg = w.page.evaluate("() => getComputedStyle(document.querySelector('[data-testid=\"stApp\"]')).backgroundColor")
    channels = [int(c) for c in re.findall(r"\d+", bg)[:3]]
    assert sum(channels) < 200, bg  # a dark background
    tick = w.page.evaluate("() => getComputedStyle(document.querySelector('.js-plotly-plot .ytick text')).fill")
    assert sum(int(c) for c in re.findall(r"\d+", tick)[:3]) > 300, tick  # light text on it
    assert_clean(w)
    w.shot("heatmaps-dark")
    ctx.close()


def test_the_share_link_opens_the_sections_that_were_open(watch, browser, server):
    """A page's section (``ui.section_box``) open in the lecturer's browser is open for whoever opens the link: its
    state is in the address and in the share link, and leaves both when it is closed again."""
    from tests.e2e.conftest import PageWatch

    watch.open("saturation?seed=3")
    sidebar_code = watch.page.locator("[data-testid='stSidebar'] code")
    assert "x_sat" not in sidebar_code.inner_text()
    watch.open_sections("3")
    link = sidebar_code.inner_text().strip()
    assert "x_sat_curves=true" in link and "seed=3" in link, link
    assert "x_sat_curves=true" in watch.page.url  # the address too: a reload keeps the section open
    ctx = browser.new_context(viewport={"width": 1440, "height": 1000})
    other = PageWatch(ctx.new_page(), server)
    other.page.goto(link)
    other.page.wait_for_selector(".st-key-sat_curves .js-plotly-plot .main-svg", timeout=60_000)
    other.wait_idle()
    opened = other.page.locator("[data-testid='stExpander'] details[open] summary").all_inner_texts()
    assert any("3 · " in t for t in opened), opened
    assert not any("4 · " in t for t in opened), opened  # only the section that was open
    assert "x_sat_curves=true" in other.page.locator("[data-testid='stSidebar'] code").inner_text()
    ctx.close()
    watch.open_sections("3")  # closed again: out of the address and the link
    assert "x_sat_curves" not in sidebar_code.inner_text() and "x_sat_curves" not in watch.page.url
    assert_clean(watch)
