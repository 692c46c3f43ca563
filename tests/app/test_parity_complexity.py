"""Page = command line, for the cost page: the same Params give the same charts on screen and in a file
(``python -m attn_core.export --page complexity``), for every view that needs no Start or measurement."""

from __future__ import annotations

import json

import pytest

from tests.conftest import no_exception
from tests.util import assert_same_charts, cli_specs

CASES = [
    ({}, []),
    (
        {"seq_len": "512", "n_heads": "8", "n_kv_heads": "2", "head_dim": "32", "causal": "true"},
        ["--seq-len", "512", "--n-heads", "8", "--n-kv-heads", "2", "--head-dim", "32", "--causal"],
    ),
    (
        {"view": "formula", "d_model": "384", "n_heads": "6"},
        ["--view", "formula", "--d-model", "384", "--n-heads", "6", "--n-kv-heads", "6"],
    ),
]


@pytest.mark.parametrize("query,argv", CASES, ids=[",".join(q) or "defaults" for q, _ in CASES])
def test_the_page_and_the_command_line_draw_the_same_charts(app_test, query, argv):
    at = app_test("app_pages/complexity.py", query=query)
    no_exception(at)
    shown_all = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    cli = cli_specs("complexity", argv)
    assert_same_charts(shown_all, cli, ("x", "y"))
