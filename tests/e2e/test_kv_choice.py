"""In a real browser: n_kv_heads follows the learner's choice when n_heads moves, also with quick key presses."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.e2e

# What the page computed with: the KV-sharing summary ("n_heads = 8 query heads, n_kv_heads = 2 KV heads") or
# the heatmap grid's title ("8 query heads, 2 KV groups").
USED = """() => {
  const md = Array.from(document.querySelectorAll('[data-testid="stMarkdown"]')).map(e => e.innerText)
      .find(t => t.includes('per token per layer'));
  if (md) { const m = md.match(/n_heads = (\\d+) query heads?, n_kv_heads = (\\d+) KV head/); return m && [+m[1], +m[2]]; }
  const title = document.querySelector('.js-plotly-plot .gtitle');
  const m = title && title.textContent.match(/(\\d+) query heads?, (\\d+) KV groups?/);
  return m && [+m[1], +m[2]];
}"""


def slider_value(watch, key: str) -> int:
    text = watch.page.locator(f".st-key-{key} [data-testid='stSliderThumbValue']").inner_text()
    return int(text.split(" ")[0])


# The heatmaps page only: KV sharing draws the same two sliders with the same ui.control rule, and AppTest checks
# the rule on both pages (tests/app/test_kv_sharing_page.py::test_changing_n_heads_keeps_the_learners_kv_choice).
@pytest.mark.parametrize("path", [""], ids=["heatmaps"])
def test_quick_presses_on_n_heads_keep_the_group_size(watch, path):
    # 2 KV heads for 8 query heads (groups of 4). Two or three presses in a row cut reruns short; the KV
    # control's value that then arrives can be stale (it was taken as the learner's choice and gave MQA).
    watch.open(path)
    for key, presses, (heads, kv) in [
        ("ArrowRight", 1, (9, 3)),
        ("ArrowRight", 1, (10, 5)),
        ("ArrowLeft", 2, (8, 2)),
        ("ArrowRight", 3, (11, 11)),
        ("ArrowLeft", 3, (8, 2)),
        ("ArrowRight", 2, (10, 5)),
        ("ArrowLeft", 2, (8, 2)),
    ]:
        watch.press_slider("n_heads", presses, key)
        # the last rerun may start after the page looked idle: wait until the page computed with the slider's n_heads
        watch.page.wait_for_function(f"() => {{ const u = ({USED})(); return u && u[0] === {heads}; }}")
        watch.wait_idle()
        used = watch.page.evaluate(USED)
        assert (slider_value(watch, "n_heads"), slider_value(watch, "n_kv_heads"), used) == (heads, kv, [heads, kv])
    watch.shot(f"kv-choice-{path or 'heatmaps'}")
