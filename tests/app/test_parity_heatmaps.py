"""Page = command line, for the heatmaps page: the same Params give the same charts on screen and in a file.

The page and ``python -m attn_core.export --page heatmaps`` share the view model (attn_core.views.heatmaps),
so the chart data, titles and colour scales must agree, at the defaults and where the page makes
data-dependent choices (the fitted colour scale from 64 keys on, pooling at 1024 tokens, a causal step view).
"""

from __future__ import annotations

import numpy as np
import pytest

from attn_core.views import page
from tests.conftest import no_exception
from tests.util import arr, chart_specs, cli_specs

SPEC = page("heatmaps")

CASES = [
    ({}, []),
    ({"source": "synthetic", "seq_len": "1024"}, ["--seq-len", "1024"]),
    (
        {"source": "synthetic", "seq_len": "1024", "cscale": "fixed", "pool": "mean"},
        ["--seq-len", "1024", "--cscale", "fixed", "--pool", "mean"],
    ),
    (
        {"view": "steps", "mask": "causal", "n_heads": "4", "head": "3"},
        ["--view", "steps", "--mask", "causal", "--n-heads", "4", "--head", "3"],
    ),
    (
        {"view": "zoom", "source": "synthetic", "seq_len": "300", "zoom_size": "64", "q_start": "100", "k_start": "50"},
        ["--view", "zoom", "--seq-len", "300", "--zoom-size", "64", "--q-start", "100", "--k-start", "50"],
    ),
    ({"view": "entropy", "cross": "true"}, ["--view", "entropy", "--cross"]),
    ({"attn_from": "smollm2-135m", "model_layer": "17"}, ["--attn-from", "smollm2-135m", "--model-layer", "17"]),
    (
        {"attn_from": "minilm-l6", "view": "steps", "head": "11"},
        ["--attn-from", "minilm-l6", "--view", "steps", "--head", "11"],
    ),
]


@pytest.mark.parametrize("query,argv", CASES, ids=[",".join(q) or "defaults" for q, _ in CASES])
def test_the_page_and_the_command_line_draw_the_same_charts(app_test, query, argv):
    at = app_test(query=query)
    no_exception(at)
    page_specs = chart_specs(at, phone=False)  # the phone's one-head copy: tests/app/test_responsive.py
    cli = cli_specs("heatmaps", argv)
    assert len(page_specs) == len(cli) > 0
    for shown, written in zip(page_specs, cli, strict=True):
        assert shown["layout"]["title"]["text"] == written["layout"]["title"]["text"]
        assert shown["layout"].get("coloraxis", {}).get("cmax") == written["layout"].get("coloraxis", {}).get("cmax")
        assert len(shown["data"]) == len(written["data"])
        for a, b in zip(shown["data"], written["data"], strict=True):
            for key in ("z", "x", "y"):
                if key not in a:
                    continue
                numeric = isinstance(b[key], dict) or (b[key] and isinstance(b[key][0], (int, float)))
                if numeric:  # the same code on the same input: equal to the bit
                    np.testing.assert_array_equal(arr(a[key]), arr(b[key]))
                else:
                    assert a[key] == b[key]
