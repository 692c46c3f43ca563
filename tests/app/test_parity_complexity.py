"""Page = command line, for the cost page: the same Params give the same charts on screen and in a file
(``python -m attn_core.export --page complexity``), for every view that needs no Start or measurement."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.conftest import no_exception
from tests.util import arr, cli_specs

CASES = [
    ({}, []),
    ({"seq_len": "512", "n_heads": "8", "n_kv_heads": "2", "head_dim": "32", "causal": "true"},
     ["--seq-len", "512", "--n-heads", "8", "--n-kv-heads", "2", "--head-dim", "32", "--causal"]),
    ({"view": "formula", "d_model": "384", "n_heads": "6"},
     ["--view", "formula", "--d-model", "384", "--n-heads", "6", "--n-kv-heads", "6"]),
]  # fmt: skip


@pytest.mark.parametrize("query,argv", CASES, ids=[",".join(q) or "defaults" for q, _ in CASES])
def test_the_page_and_the_command_line_draw_the_same_charts(app_test, query, argv):
    at = app_test("pages/complexity.py", query=query)
    no_exception(at)
    shown_all = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    cli = cli_specs("complexity", argv)
    assert len(shown_all) == len(cli) > 0
    for shown, written in zip(shown_all, cli, strict=True):
        assert shown["layout"]["title"]["text"] == written["layout"]["title"]["text"]
        assert len(shown["data"]) == len(written["data"])
        for a, b in zip(shown["data"], written["data"], strict=True):
            for key in ("x", "y"):
                if key in a and (isinstance(a[key], dict) or (a[key] and isinstance(a[key][0], (int, float)))):
                    np.testing.assert_array_equal(arr(a[key]), arr(b[key]))  # same code, same input
