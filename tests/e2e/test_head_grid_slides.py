"""A head grid on a projector (slide mode) in chromium: as many panels as a slide labels at 20 px, the rest a
clicker's press away, for the seeded layer and for the shipped models' real layers (SmolLM2: 9 heads in 3 KV
groups; MiniLM: 12 MHA heads), at 1280×720 and 1024×768, with nothing the visual audit would call a defect.
"""

from __future__ import annotations

import re

import pytest

from tests.e2e.conftest import SHOTS, PageWatch
from tests.e2e.test_visual_audit import AUDIT_JS, CHARTS_DRAWN_JS, ENGLISH, MIN_SLIDE_PX

pytestmark = pytest.mark.e2e

SIZES = ((1280, 720), (1024, 768))
STEPPER = ".st-key-slide_nav_slide"


@pytest.fixture(scope="module")
def slides(browser, server):
    ctx = browser.new_context(viewport={"width": 1280, "height": 720}, device_scale_factor=1)
    w = PageWatch(ctx.new_page(), server)
    w.page.set_default_timeout(120_000)
    yield w
    ctx.close()


def settle(w: PageWatch) -> None:
    w.wait_idle(120_000)
    w.page.wait_for_function(CHARTS_DRAWN_JS, timeout=120_000)
    w.wait_idle(120_000)


def audited(w: PageWatch, zh: bool = False) -> list[str]:
    opts = {"slide": True, "phone": False, "zh": zh, "english": ENGLISH, "minPx": MIN_SLIDE_PX}
    return [f"{f['kind']} [{f['where']}] {f['detail']}" for f in w.page.evaluate(AUDIT_JS, opts)]


def panel_heads(w: PageWatch) -> list[int]:
    """The heads whose panels the grid draws (their titles: "head 3 · KV 1")."""
    titles = w.page.evaluate(
        "() => [...document.querySelectorAll('[data-testid=\"stMain\"] .js-plotly-plot .annotation-text')]"
        ".map(t => t.textContent)"
    )
    return [int(m.group(1)) for t in titles if (m := re.match(r"(?:head|头)\s*(\d+)", t))]


def label(w: PageWatch) -> str:
    return w.page.locator(f"{STEPPER} [data-testid='stProgress']").inner_text()


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_a_slide_of_the_grid_labels_every_token_and_pages_with_the_clicker(slides, size):
    w = slides
    w.page.set_viewport_size({"width": size[0], "height": size[1]})
    w.open("?present=1", chart=True)
    settle(w)
    assert "Heads 0–1 of 8 · KV group 0" in label(w)
    assert panel_heads(w) == [0, 1]
    assert not audited(w)
    ticks = w.page.evaluate(
        "() => [...document.querySelectorAll('.js-plotly-plot .xtick text, .js-plotly-plot .ytick text')]"
        ".map(t => [t.textContent, parseFloat(getComputedStyle(t).fontSize)])"
    )
    assert len(ticks) == 2 * 11 + 11 and min(px for _, px in ticks) >= 20  # every token, both panels' keys
    w.page.keyboard.press("PageDown")  # what a clicker sends
    settle(w)
    assert "Heads 2–3 of 8 · KV group 0" in label(w) and panel_heads(w) == [2, 3]
    for _ in range(2):
        w.page.keyboard.press("ArrowRight")
        settle(w)
    assert "Heads 6–7 of 8 · KV group 1" in label(w) and panel_heads(w) == [6, 7]
    assert not audited(w)
    assert w.page.evaluate("() => document.querySelector('[data-testid=\"stMain\"]').scrollTop") == 0
    w.page.screenshot(path=str(SHOTS / f"head_grid_slide_{size[0]}x{size[1]}.png"))


@pytest.mark.parametrize(
    "model,pages,first,lang",
    [
        # 11 tokens: two of a group's three heads a slide, then the third (a slide never shows two groups' parts)
        ("smollm2-135m", 6, "Heads 0–1 of 9 · KV group 0", "en"),
        ("minilm-l6", 4, "Heads 0–2 of 12 · KV groups 0–2", "en"),  # 13 tokens: every other label, 3 a slide
        ("smollm2-135m", 6, "头 0–1（共 9 个） · KV 组 0", "zh"),  # 19 byte tokens ("<E7> (0)"), every other one
    ],
)
@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_a_models_layer_on_slides(slides, model, pages, first, lang, size):
    """A real layer's heads on the heatmaps page, a slide at a time, every text at 20 px or more."""
    from tests.models.conftest import _shipped

    _shipped(model)
    w = slides
    w.page.set_viewport_size({"width": size[0], "height": size[1]})
    w.open(f"?present=1&attn_from={model}&lang={lang}", chart=True)
    settle(w)
    assert first in label(w)
    seen = []
    for i in range(pages):
        assert not audited(w, zh=lang == "zh"), (model, i)
        seen += panel_heads(w)
        if i < pages - 1:
            w.page.keyboard.press("PageDown")
            settle(w)
    n_heads = 9 if model.startswith("smollm2") else 12
    assert seen == list(range(n_heads))  # every head once, in order
    w.page.screenshot(path=str(SHOTS / f"head_grid_{model}_{lang}_{size[0]}x{size[1]}.png"))
