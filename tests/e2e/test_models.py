"""The pretrained-models page in a real browser: SmolLM2 generates, the text and the cache chart grow, the
measured cache equals the formula; opening a strong head; screenshots in both languages."""

from __future__ import annotations

import pytest

from attn_core.i18n import translate
from tests.e2e.test_pages import assert_clean

pytestmark = pytest.mark.e2e

MEASURED = """() => {
    const el = document.querySelector('.js-plotly-plot');
    const t = el && el.data && el.data.find(d => d.mode === 'markers');
    if (!t) return null;
    const sizes = {f8: 8, f4: 4, i4: 4, u4: 4, i2: 2, u2: 2, i1: 1, u1: 1, i8: 8};
    const count = x => !x ? 0 : (x.length !== undefined ? x.length : atob(x.bdata).length / (sizes[x.dtype] || 8));
    return [count(t.x), Array.from(t.customdata || [])];
}"""


def test_generation_writes_text_and_the_cache_chart_grows(watch):
    watch.open("models?view=generate&gen_tokens=10", chart=False)
    assert "Press Generate" in watch.page.inner_text("body")
    watch.page.locator(".st-key-gen_run button").click()
    watch.page.wait_for_function(f"() => {{ const m = ({MEASURED})(); return m && m[0] >= 10; }}", timeout=120_000)
    watch.wait_idle(120_000)
    body = watch.page.inner_text("body")
    assert "equals the formula at every one of the 10 steps" in body
    assert "tokens/s with the cache" in body
    assert_clean(watch)
    n, labels = watch.page.evaluate(MEASURED)
    assert n == 10 and all("B)" in s for s in labels)  # exact byte counts in the hover
    assert watch.page.locator(".js-plotly-plot").count() == 3  # cache, time, newest token's row
    watch.shot("models-generate")


def test_roles_open_a_head_in_chinese(watch):
    watch.open("models?lang=zh")
    assert watch.page.get_by_role("heading", name="预训练模型：训练出的注意力").count() == 1
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
