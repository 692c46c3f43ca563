"""Page = command line, for the MLA page: the same Params give the same charts on screen and in a file
(``python -m attn_core.export --page mla``), for every view that needs no Start button."""

from __future__ import annotations

import pytest

from attn_core.views import page
from tests.conftest import no_exception
from tests.util import assert_same_charts, chart_specs, cli_specs

SPEC = page("mla")
CASES = [
    ({}, []),
    ({"mode": "rope_on_latent"}, ["--mode", "rope_on_latent"]),
    (
        {"view": "agree", "seq_len": "7", "head": "5", "mode": "naive"},
        ["--view", "agree", "--seq-len", "7", "--head", "5", "--mode", "naive"],
    ),
    (
        {"view": "cache", "preset": "deepseek-v2", "n_kv_heads": "16", "dtype": "fp8"},
        ["--view", "cache", "--preset", "deepseek-v2", "--n-kv-heads", "16", "--dtype", "fp8"],
    ),
    (
        {"view": "cost", "preset": "custom", "n_heads": "4", "cache_len": "1024"},
        ["--view", "cost", "--preset", "custom", "--n-heads", "4", "--cache-len", "1024"],
    ),
]


@pytest.mark.parametrize("query,argv", CASES, ids=[",".join(q) or "defaults" for q, _ in CASES])
def test_the_page_and_the_command_line_draw_the_same_charts(app_test, query, argv):
    at = app_test("app_pages/mla.py", query=query)
    no_exception(at)
    shown_all = chart_specs(at, phone=False)  # the phone's one-head copy: tests/app/test_responsive.py
    cli = cli_specs("mla", argv)
    assert_same_charts(shown_all, cli, ("z", "y"))
