"""Page = command line, for the surgery page: the pooled model's quality chart and maps, and a model card, drawn
the same by the page and by ``python -m attn_core.export --page surgery``."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.conftest import no_exception
from tests.util import arr, cli_specs

PAGE = "app_pages/surgery.py"


@pytest.mark.parametrize(
    ("query", "argv"),
    [
        ({"sg_tokens": "128"}, ["--view", "kv_heads", "--sg-tokens", "128"]),
        (
            {"view": "card", "sg_card": "paste", "sg_card_len": "1024"},
            ["--view", "card", "--sg-card", "paste", "--sg-card-len", "1024"],
        ),
    ],
    ids=["kv_heads", "card"],
)
def test_the_page_and_the_command_line_draw_the_same_charts(app_test, query, argv):
    pytest.importorskip("transformers")
    at = app_test(PAGE, query=query)
    no_exception(at)
    shown_all = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    cli = cli_specs("surgery", argv)
    assert len(shown_all) == len(cli) == 2
    for shown, written in zip(shown_all, cli, strict=True):
        assert shown["layout"]["title"]["text"] == written["layout"]["title"]["text"]
        for a, b in zip(shown["data"], written["data"], strict=True):
            for axis in ("x", "y", "z"):
                if isinstance(a.get(axis), list) and a[axis] and isinstance(a[axis][0], str):
                    assert a[axis] == b[axis]  # category labels
                elif a.get(axis) is not None:
                    np.testing.assert_array_equal(arr(a[axis]), arr(b[axis]))
