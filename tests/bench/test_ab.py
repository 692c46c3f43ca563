"""bench/ab.py picks the benchmark's own case for a page, and says which pages there are for a wrong name."""

from __future__ import annotations

import pytest

from bench.ab import case_of


def test_a_page_gets_the_benchmarks_slider_and_chart():
    case = case_of("kv_cache")
    assert (case.slider, case.chart, case.url_tail) == ("batch", "kv_memory", "/kv_cache")
    assert case_of("heatmaps").url_tail == "/"  # the default page, at the app's root
    assert case_of("mla").url_tail == "/mla?view=agree"


def test_an_unknown_page_names_the_pages():
    with pytest.raises(SystemExit, match="no page 'kvcache'.*'kv_cache'"):
        case_of("kvcache")
