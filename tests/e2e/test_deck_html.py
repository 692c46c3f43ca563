"""A deck's offline HTML file in Chromium, opened from disk with every request off the disk refused: the keys a
clicker sends and the buttons move between slides, and every slide draws every chart."""

from __future__ import annotations

import pytest

from attn_core import decks
from attn_core.export import deck as D
from attn_core.export.deck_files import deck_files

pytestmark = pytest.mark.e2e

GQA = decks.shipped()["gqa_and_the_kv_cache"]
SCRATCH = decks.shipped()["attention_from_scratch"]
DECK = decks.Deck(GQA.title, (GQA.slides[0], GQA.slides[3], SCRATCH.slides[1]))  # 2 charts, a head grid, a step


@pytest.fixture(scope="module")
def deck_html(tmp_path_factory):
    made = D.draw(DECK, D.Options(lang="zh"), "gqa_and_the_kv_cache")
    path = tmp_path_factory.mktemp("deck") / "deck.html"
    path.write_bytes(deck_files(made, ["html"])["html"])
    return path, made


def drawn(page, k: int) -> list[int]:
    """How many ``.main-svg`` each chart of slide ``k`` has (0: not drawn)."""
    return page.evaluate(
        "k => [...document.querySelectorAll(`#slide-${k} .chart`)].map(c => c.querySelectorAll('.main-svg').length)", k
    )


def test_the_html_deck_pages_with_the_keys_and_draws_every_chart_offline(browser, deck_html):
    path, made = deck_html
    ctx = browser.new_context(viewport={"width": 1440, "height": 900})
    outside: list[str] = []

    def only_the_disk(route):
        if route.request.url.startswith(("file:", "data:", "blob:")):
            route.continue_()
        else:
            outside.append(route.request.url)
            route.abort()

    ctx.route("**/*", only_the_disk)
    page = ctx.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        page.goto(path.as_uri())
        assert page.evaluate("document.documentElement.lang") == "zh"
        assert page.inner_text("#deck-next") == "下一步"
        n = len(made.slides)
        for k, key in zip(range(1, n + 1), ("PageDown", "ArrowRight", "ArrowDown"), strict=True):
            page.wait_for_function(f"document.body.dataset.at === '{k}'")
            page.wait_for_function(
                "k => [...document.querySelectorAll(`#slide-${k} .chart`)].every(c => c.querySelector('.main-svg'))",
                arg=k,
            )
            counts = drawn(page, k)
            assert len(counts) == len(made.slides[k - 1].views) and all(counts), counts
            assert page.is_visible(f"#slide-{k} h1") and page.inner_text(f"#slide-{k} h1") == made.slides[k - 1].title
            assert [page.is_visible(f"#slide-{j} h1") for j in range(1, n + 1)] == [j == k for j in range(1, n + 1)]
            page.keyboard.press(key)
        page.wait_for_function(f"document.body.dataset.at === '{n}'")  # the last slide stays
        page.keyboard.press("PageUp")
        page.wait_for_function(f"document.body.dataset.at === '{n - 1}'")
        page.keyboard.press("ArrowLeft")
        page.wait_for_function(f"document.body.dataset.at === '{n - 2}'")
        page.click("#deck-next")
        page.wait_for_function(f"document.body.dataset.at === '{n - 1}'")
        assert page.is_disabled("#deck-prev") is False and page.is_disabled("#deck-next") is False
        assert not outside, outside
        assert not errors, errors
    finally:
        ctx.close()
