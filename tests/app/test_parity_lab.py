"""Page = command line, for the training lab: with one seed on one machine the page's finished run and
``python -m attn_core.export --page lab`` draw the same curves."""

from __future__ import annotations

import json

import numpy as np

from tests.conftest import no_exception
from tests.util import arr, cli_specs


def test_the_page_and_the_command_line_draw_the_same_curves(app_test):
    at = app_test("app_pages/lab.py", query={"experiment": "kv_heads", "lab_steps": "5"})
    at.button(key="lab_run").click().run()
    no_exception(at)
    shown_all = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    cli = cli_specs("lab", ["--view", "kv_heads", "--lab-steps", "5"])
    assert len(shown_all) == len(cli) == 2
    for shown, written in zip(shown_all, cli, strict=True):
        assert shown["layout"]["title"]["text"] == written["layout"]["title"]["text"]
        for a, b in zip(shown["data"], written["data"], strict=True):
            np.testing.assert_array_equal(arr(a["y"]), arr(b["y"]))  # same code, same seed, same machine
