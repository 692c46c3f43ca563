"""Sliders whose range comes from the data: a range of one value is stated, never drawn (issue 12, section 3).

Streamlit refuses a slider with min = max (StreamlitInvalidMinMaxError), so ``ui.int_slider`` and
``ui.pow2_slider`` state the only value instead; these tests open every page at the settings that
leave a data-driven range with one value.
"""

from __future__ import annotations

import numpy as np
import pytest

from attn_core.attention.maps import compute_attention_maps
from attn_core.attention.tokens import tokenize
from attn_core.runtime.config import AttentionConfig
from tests.conftest import ROOT, no_exception
from tests.util import arr, chart_specs, grid_heads

PAGE = "app_pages/heatmaps.py"
TEXT = "The cat sat on the mat because it was tired ."


def slider_keys(at) -> set[str]:
    return {s.key for s in at.slider} | {s.key for s in at.select_slider}


def only_value_lines(at) -> list[str]:
    return [m.value for m in at.markdown if "the only possible value here" in m.value]


@pytest.mark.parametrize("view", ["zoom", "steps"])
def test_one_head_zoom_and_steps_state_the_head(app_test, view):
    at = app_test(PAGE, query={"n_heads": "1", "view": view})
    no_exception(at)
    assert not at.error
    assert "head" not in slider_keys(at)
    assert only_value_lines(at) == [
        "KV heads (n_kv_heads): **1 · MHA** (the only possible value here)",
        "Head: **0** (the only possible value here)",
    ]
    m = compute_attention_maps(AttentionConfig(n_heads=1, n_kv_heads=1, head_dim=16), tokenize(TEXT))
    z = arr(chart_specs(at)[0 if view == "zoom" else 6]["data"][0]["z"])
    np.testing.assert_allclose(z.reshape(m.weights[0].shape), m.weights[0], atol=1e-6)


def test_one_head_in_chinese(app_test):
    at = app_test(PAGE, query={"n_heads": "1", "view": "steps", "lang": "zh"})
    no_exception(at)
    assert "头：**0**（此处唯一可能的取值）" in [m.value for m in at.markdown]


def test_a_link_to_a_head_that_does_not_exist_gets_a_notice(app_test):
    at = app_test(PAGE, query={"n_heads": "1", "view": "zoom", "head": "3"})
    no_exception(at)
    assert any("head=3" in w.value for w in at.warning)
    assert "head" not in at.query_params


def test_going_down_to_one_head_from_a_later_head(app_test):
    at = app_test(PAGE, query={"view": "steps"})
    at.slider(key="head").set_value(5).run()
    at.slider(key="n_heads").set_value(1).run()
    no_exception(at)
    assert only_value_lines(at) and "head" not in slider_keys(at)
    at.slider(key="n_heads").set_value(4).run()
    no_exception(at)
    assert at.slider(key="head").value in range(4)


def test_padding_with_a_one_token_context_states_the_length(app_test):
    """Cross-attention to one token under a padding mask: the real length can only be 1 (it was a 1..2 slider)."""
    at = app_test(PAGE, query={"cross": "true", "cross_text": "chat", "mask": "padding", "n_heads": "2"})
    no_exception(at)
    assert "pad_len" not in slider_keys(at)
    assert "Real (unpadded) key length: **1** (the only possible value here)" in only_value_lines(at)
    z = grid_heads(chart_specs(at)[0])
    np.testing.assert_allclose(z, 1.0, atol=1e-6)  # one key: every weight is 1


@pytest.mark.parametrize(
    "query",
    [
        {"text": "cat", "view": "zoom", "n_heads": "1"},
        {"text": "cat", "view": "steps", "n_heads": "1", "mask": "padding"},
        {"source": "synthetic", "seq_len": "1", "view": "zoom", "n_heads": "1"},
        {"source": "synthetic", "seq_len": "1", "view": "steps", "n_heads": "1", "mask": "causal"},
        {"cross": "true", "cross_text": "x", "view": "zoom", "n_heads": "1", "mask": "padding"},
        {"cross": "true", "cross_text": "x", "view": "steps", "n_heads": "1"},
    ],
)
def test_heatmap_views_at_one_token_and_one_head(app_test, query):
    at = app_test(PAGE, query=query)
    no_exception(at)
    assert not at.error and chart_specs(at)


@pytest.mark.parametrize(
    "page,query",
    [
        ("app_pages/kv_sharing.py", {"n_heads": "1", "kv_view": view})
        for view in ("diagram", "maps", "costs", "mapping", "convert")
    ]
    + [
        ("app_pages/kv_sharing.py", {"n_heads": "1", "kv_view": "convert", "conv_source": "random"}),
        ("app_pages/kv_sharing.py", {"n_heads": "8", "n_kv_heads": "8", "kv_view": "maps"}),
        ("app_pages/saturation.py", {"seq_len": "2", "row": "5"}),
        ("app_pages/saturation.py", {"seq_len": "2", "head_dim": "1"}),
        ("app_pages/kv_cache.py", {"model": "custom", "n_heads": "1"}),
    ],
)
def test_other_pages_at_their_smallest_ranges(app_test, page, query):
    at = app_test(page, query=query)
    no_exception(at)


def test_int_slider_with_one_value_draws_no_slider():
    """ui.int_slider and ui.pow2_slider on their own: one possible value is stated, never a slider."""
    from streamlit.testing.v1 import AppTest

    def script(root: str):
        import sys

        sys.path.insert(0, root)
        import streamlit as st

        import ui

        st.session_state["values"] = (
            ui.int_slider("head", 0, 0, 0),
            ui.int_slider("pad_len", 3, 3, 1),
            ui.pow2_slider("zoom_size", 16, 16, 16),
            ui.int_slider("q_start", 0, 9, 0),
        )

    at = AppTest.from_function(script, args=(str(ROOT),), default_timeout=600).run()
    no_exception(at)
    assert at.session_state["values"] == (0, 3, 16, 0)
    assert [s.key for s in at.slider] == ["q_start"] and not at.select_slider
    assert len(at.markdown) == 3


def test_one_query_head_states_its_one_kv_head_and_the_choice_returns(app_test):
    """With one query head there is one KV head: said, not drawn as a slider; the GQA choice comes back at 8."""
    at = app_test("app_pages/heatmaps.py")
    assert at.select_slider(key="n_kv_heads").value == 2
    at.slider(key="n_heads").set_value(1).run()
    no_exception(at)
    with pytest.raises(KeyError):
        at.select_slider(key="n_kv_heads")
    assert any("**1 · MHA** (the only possible value here)" in m.value for m in at.markdown)
    at.slider(key="n_heads").set_value(8).run()
    no_exception(at)
    assert at.select_slider(key="n_kv_heads").value == 2
