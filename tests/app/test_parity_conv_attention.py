"""Page = command line, for the "Attention as convolution" page: the same Params give the same charts on screen
and in a file (``python -m attn_core.export --page conv_attention``), for every view."""

from __future__ import annotations

import json

import pytest

from tests.conftest import no_exception
from tests.util import assert_same_charts, cli_specs

CASES = [
    ({}, []),
    (
        {"seq_len": "20", "query": "3", "shift": "-2", "alpha": "0.3", "k": "5"},
        ["--seq-len", "20", "--query", "3", "--shift", "-2", "--alpha", "0.3", "--k", "5"],
    ),
    (
        {
            "view": "image",
            "pattern": "checker",
            "image_size": "10",
            "kernel": "sobel",
            "q_row": "2",
            "q_col": "7",
            "padding": "existing",
        },
        [
            "--view",
            "image",
            "--pattern",
            "checker",
            "--image-size",
            "10",
            "--kernel",
            "sobel",
            "--q-row",
            "2",
            "--q-col",
            "7",
            "--padding",
            "existing",
        ],
    ),
    (
        {"view": "sweep", "kernel": "custom", "kernel_text": "0 1 0; 1 -4 1; 0 1 0", "image_size": "9"},
        ["--view", "sweep", "--kernel", "custom", "--kernel-text", "0 1 0; 1 -4 1; 0 1 0", "--image-size", "9"],
    ),
    ({"view": "analogy", "k": "7"}, ["--view", "analogy", "--k", "7"]),
    ({"seq_len": "9", "view": "line"}, ["--seq-len", "9"]),  # the query's default clamped alike
    ({"view": "image", "image_size": "8"}, ["--view", "image", "--image-size", "8"]),
]


@pytest.mark.parametrize("query,argv", CASES, ids=[",".join(q) or "defaults" for q, _ in CASES])
def test_the_page_and_the_command_line_draw_the_same_charts(app_test, query, argv):
    at = app_test("app_pages/conv_attention.py", query=query)
    no_exception(at)
    shown_all = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    cli = cli_specs("conv_attention", argv)
    # the page draws the 2-D view's heads' maps first, above the input: compare by title
    shown_all.sort(key=lambda s: s["layout"]["title"]["text"])
    cli.sort(key=lambda s: s["layout"]["title"]["text"])
    assert_same_charts(shown_all, cli, ("z", "y"))
