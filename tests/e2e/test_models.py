"""The pretrained-models page in a real browser: SmolLM2's time per token against the context, with and without
the cache, and a run stopped; the first chart right after a fresh server's start; a slide of head roles; opening a
strong head; screenshots in both languages."""

from __future__ import annotations

import time

import pytest

from attn_core.i18n import translate
from harness import ROOT, start_server
from tests.e2e.conftest import RUNS_JS, PageWatch
from tests.e2e.test_pages import assert_clean
from tests.e2e.test_visual_audit import AUDIT_JS

pytestmark = pytest.mark.e2e

SPEED = """() => {
    const box = document.querySelector('.st-key-mdl_gen_speed .js-plotly-plot')
        || [...document.querySelectorAll('.js-plotly-plot')].find(e => e.layout && e.layout.uirevision === 'mdl_speed');
    if (!box || !box.data) return null;
    const n = x => !x ? 0 : (x.length !== undefined ? x.length : atob(x.bdata).length / 8);
    return box.data.map(t => n(t.x));
}"""


def test_generation_times_a_token_against_the_context_and_stops(watch):
    watch.open("models?view=generate&gen_context=64&gen_tokens=3", chart=False)
    assert "Press Generate" in watch.page.inner_text("body")
    t0 = time.perf_counter()
    watch.page.locator(".st-key-gen_run button").click()
    watch.page.wait_for_function(
        f"() => {{ const m = ({SPEED})(); return m && m[0] === 3 && m[1] === 3; }}", timeout=300_000
    )
    watch.wait_idle(300_000)
    print(f"timing run of 16, 32 and 64 tokens: {time.perf_counter() - t0:.1f} s in the browser")
    body = watch.page.inner_text("body")
    assert "equals the formula 2·L·H_kv·S·d·4 bytes at every length" in body and "66 positions" in body
    assert "After 64 tokens it wrote:" in body
    assert_clean(watch)
    watch.shot("models-generate")
    # a long run stopped after its first lengths keeps what it measured and says so
    watch.open("models?view=generate&gen_context=4096&gen_tokens=2", chart=False)
    watch.page.locator(".st-key-gen_run button").click()
    watch.page.wait_for_function(f"() => {{ const m = ({SPEED})(); return m && m[0] >= 1; }}", timeout=300_000)
    watch.page.locator(".st-key-gen_stop button").click()
    watch.wait_idle(300_000)
    body = watch.page.inner_text("body")
    assert "Stopped after" in body and "of 9 context lengths" in body
    assert 1 <= watch.page.evaluate(SPEED)[0] < 9


def test_a_fresh_server_computes_the_models_pages_first_view_before_it_answers(browser):
    """A fresh server loads the shipped models and computes the page's first view before it answers (server.py):
    a class opening /models as the lecture starts waits for neither. Its log says so before the health check
    answered; the first visit then draws the roles chart. (How long that takes is measured, not asserted: it is
    printed here and figures in the issue's notes.)"""
    proc, url = start_server(extra_env={"ATTN_PRELOAD_MODELS": "smollm2-135m"})
    try:
        log = (ROOT / "artifacts" / f"server-{url.rsplit(':', 1)[1]}.log").read_text(encoding="utf-8")
        assert "smollm2-135m loaded in" in log and "smollm2-135m: the models page's first view computed" in log, log
        ctx = browser.new_context(viewport={"width": 1280, "height": 720})
        page = ctx.new_page()
        page.add_init_script(RUNS_JS)
        t0 = time.perf_counter()
        page.goto(url + "/models")
        page.wait_for_selector(".st-key-mdl_roles .js-plotly-plot .main-svg", timeout=60_000)
        seconds = time.perf_counter() - t0
        ran = page.evaluate("() => window.__attnRuns.finished / 1000")
        print(f"first chart of /models {seconds:.1f} s after the health check (script done {ran:.1f} s)")
        ctx.close()
    finally:
        proc.terminate()
        proc.wait(30)


def test_a_slide_of_head_roles_numbers_every_layer_at_20_px(browser, server):
    ctx = browser.new_context(viewport={"width": 1024, "height": 768}, device_scale_factor=1)
    w = PageWatch(ctx.new_page(), server)
    try:
        w.open("models?present=1", timeout=300_000)
        ticks = w.page.evaluate(
            """() => [...document.querySelectorAll('.st-key-mdl_roles .xtick text')].map(t => {
                 const r = t.getBoundingClientRect();
                 return [t.textContent, r.left, r.right, parseFloat(getComputedStyle(t).fontSize)]; })"""
        )
        assert [t[0] for t in ticks] == [str(i) for i in range(30)]
        assert all(t[3] >= 20 for t in ticks)
        assert all(a[2] < b[1] for a, b in zip(ticks, ticks[1:], strict=False))  # side by side, none touching
        found = w.page.evaluate(AUDIT_JS, {"slide": True, "phone": False, "zh": False, "english": [], "minPx": 20})
        assert found == []
    finally:
        ctx.close()


@pytest.mark.parametrize("size", [(1280, 720), (1024, 768)])
def test_gemma_roles_slide_marks_its_global_layers_at_20_px_in_chinese(browser, server, size):
    """Gemma 3 270M's roles on a Chinese slide: 18 layers numbered, the global ones (5, 11, 17) with 全 under
    their number, every label at 20 px or more, none touching, and the audit finds nothing; the layer view's
    slide too (screenshots in artifacts/audit)."""
    from tests.e2e.test_visual_audit import SHOTS, english_words

    ctx = browser.new_context(viewport={"width": size[0], "height": size[1]}, device_scale_factor=1)
    w = PageWatch(ctx.new_page(), server)
    opts = {"slide": True, "phone": False, "zh": True, "english": english_words(), "minPx": 20}
    SHOTS.mkdir(parents=True, exist_ok=True)
    try:
        w.open("models?model=gemma3-270m&lang=zh&present=1", timeout=300_000)
        ticks = w.page.evaluate(
            """() => [...document.querySelectorAll('.st-key-mdl_roles .xtick text')].map(t => {
                 const r = t.getBoundingClientRect();
                 return [t.textContent, r.left, r.right, parseFloat(getComputedStyle(t).fontSize)]; })"""
        )
        assert [t[0] for t in ticks] == [f"{i}全" if i in (5, 11, 17) else str(i) for i in range(18)]
        assert all(t[3] >= 20 for t in ticks)
        assert all(a[2] < b[1] for a, b in zip(ticks, ticks[1:], strict=False))
        w.page.screenshot(path=str(SHOTS / f"gemma-models-roles-slide-{size[0]}x{size[1]}-zh.png"))
        assert w.page.evaluate(AUDIT_JS, opts) == []
        w.open("models?model=gemma3-270m&lang=zh&present=1&view=layer&layer=4", timeout=300_000)
        w.page.screenshot(path=str(SHOTS / f"gemma-models-layer-slide-{size[0]}x{size[1]}-zh.png"))
        assert w.page.evaluate(AUDIT_JS, opts) == []
    finally:
        ctx.close()


def test_roles_open_a_head_in_chinese(watch):
    watch.open("models?lang=zh")
    assert watch.page.get_by_role("heading", name="预训练模型：训练出的注意力").count() == 1
    link = watch.page.locator("a[href='https://huggingface.co/HuggingFaceTB/SmolLM2-135M-Instruct']")
    assert link.inner_text() == "huggingface.co/HuggingFaceTB/SmolLM2-135M-Instruct"  # the link ends with the address
    assert "小猫坐在垫子上" in watch.page.inner_text("body")  # a Chinese page reads the Chinese example
    watch.shot("models-roles-zh")
    watch.page.locator(".st-key-role_open button").click()
    watch.wait_idle(120_000)
    assert "view=head" in watch.page.url
    # the strongest induction head of SmolLM2 (head_scores, seed 0): layer 18, head 6
    assert "layer=18" in watch.page.url and "head=6" in watch.page.url
    assert "头 6 · KV 2" in watch.page.inner_text("body")
    assert watch.page.locator(".js-plotly-plot").count() == 1  # the head; its eight steps are sent while open
    watch.open_sections(translate("models.steps_header", "zh"))
    assert watch.page.locator(".js-plotly-plot").count() == 9
    assert_clean(watch)
    watch.shot("models-head-zh")


def test_heatmaps_page_draws_a_models_layer(watch):
    watch.open("?attn_from=smollm2-135m&model_layer=17")
    body = watch.page.inner_text("body")
    assert "Trained weights, not the seeded layer" in body and "seeded random numbers" not in body
    panels = watch.page.evaluate(
        "() => document.querySelector('.st-key-grid .js-plotly-plot').layout.annotations.filter(a => a.text.includes(' · KV ')).length"
    )
    assert panels == 9  # SmolLM2's 9 query heads, one panel title each
    assert_clean(watch)
    watch.shot("heatmaps-smollm2-layer17")


def test_heatmaps_slide_of_a_gemma_local_layer_shows_its_window_as_a_band(browser, server):
    """200 synthetic tokens (691 of Gemma's) on a Chinese slide: layer 4's panels grey (masked) where a key lies 512
    or more back (tests/app/test_heatmaps_models.py checks the values), layer 5's not; each slide passes the audit
    (screenshots in artifacts/audit); the page says which kind the layer is and names the Gemma Terms of Use."""
    from tests.e2e.test_visual_audit import SHOTS, english_words

    ctx = browser.new_context(viewport={"width": 1280, "height": 720}, device_scale_factor=1)
    w = PageWatch(ctx.new_page(), server)
    opts = {"slide": True, "phone": False, "zh": True, "english": english_words(), "minPx": 20}
    SHOTS.mkdir(parents=True, exist_ok=True)
    try:
        for layer in (4, 5):
            query = f"attn_from=gemma3-270m&source=synthetic&seq_len=200&model_layer={layer}&lang=zh&present=1"
            w.open(f"?{query}", timeout=300_000)
            w.page.screenshot(path=str(SHOTS / f"gemma-heatmaps-layer{layer}-slide-1280x720-zh.png"))
            assert w.page.evaluate(AUDIT_JS, opts) == []
            w.open(f"?{query.replace('&present=1', '')}", timeout=300_000)  # the page: its layer control's caption
            body = w.page.inner_text("body")
            assert f"第 {layer} 层是{'局部层' if layer == 4 else '全局层'}" in body and "Gemma 使用条款" in body
    finally:
        ctx.close()
