"""Bad input never vanishes without a word: a long paste is cut and said so, a link's unknown setting is named."""

from __future__ import annotations

import pytest

from attn_core.attention.tokens import MAX_TEXT_CHARS
from tests.conftest import no_exception
from tests.util import chart_specs, grid_labels

HEATMAPS, MODELS = "app_pages/heatmaps.py", "app_pages/models.py"


def notices(at) -> str:
    return "\n".join(e.value for e in [*at.warning, *at.info, *at.error])


@pytest.mark.parametrize("n", [2_500, 20_000])
def test_a_long_paste_is_cut_to_the_limit_and_said(app_test, n):
    at = app_test(HEATMAPS)
    at.text_area(key="text").input("tired cat " * (n // 10)).run()
    no_exception(at)
    assert len(at.text_area(key="text").value) == MAX_TEXT_CHARS
    text = notices(at)
    assert f"{n:,} characters" in text and f"first {MAX_TEXT_CHARS:,}" in text, text
    assert chart_specs(at)  # the map of what was kept, not nothing
    at.run()  # the notice was about that paste: the next run does not repeat it
    assert "characters" not in notices(at)


def test_a_text_with_emoji_just_under_the_limit_is_kept_whole(app_test):
    """The browser counts an emoji as two characters; the page counts characters as Python does."""
    text = "猫🐈" * ((MAX_TEXT_CHARS - 1) // 2) + "."
    assert len(text) == MAX_TEXT_CHARS - 1
    at = app_test(HEATMAPS)
    at.text_area(key="text").input(text).run()
    no_exception(at)
    assert at.text_area(key="text").value == text and "characters" not in notices(at)


def test_the_models_pages_own_text_is_cut_and_said_too(app_test):
    at = app_test(MODELS, query={"example": "own", "view": "scale"})
    at.text_area(key="text").input("x " * 10_000).run()
    no_exception(at)
    assert "20,000 characters" in notices(at)


@pytest.mark.parametrize("lang, words", [("en", "Did you mean head_dim?"), ("zh", "您是不是想用 head_dim？")])
def test_a_setting_the_page_does_not_have_is_named_with_what_was_meant(app_test, lang, words):
    at = app_test(HEATMAPS, query={"d_k": "64", "lang": lang})
    no_exception(at)
    assert "d_k=64" in notices(at) and words in notices(at)
    at = app_test(HEATMAPS, query={"n_head": "4"})
    assert "Did you mean n_heads?" in notices(at)
    at = app_test(HEATMAPS, query={"zzz": "1"})
    assert "This page's settings are" in notices(at) and "n_heads" in notices(at)


def test_the_apps_own_link_parameters_are_not_reported(app_test):
    at = app_test(HEATMAPS, query={"lang": "en", "seed": "3", "present": "false", "slide": "1"})
    assert "has no setting" not in notices(at)


def test_a_link_with_a_length_means_synthetic_tokens(app_test):
    at = app_test(HEATMAPS, query={"seq_len": "24"})
    no_exception(at)
    labels_q, _ = grid_labels(chart_specs(at)[0])
    assert len(labels_q) == 24
