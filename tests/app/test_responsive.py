"""AppTest: what the pages send for a phone (ui.responsive): a head grid's one-head copy and its head picker,
charts of panels side by side in a box that scrolls on a phone, long titles written out for a phone."""

from __future__ import annotations

import json

import numpy as np

from tests.conftest import no_exception
from tests.util import arr


def charts(at) -> dict[str, dict]:
    return {c.proto.id.rsplit("-", 1)[-1]: json.loads(c.proto.spec) for c in at.get("plotly_chart")}


def test_the_grid_comes_with_one_head_of_it_and_a_head_picker(app_test):
    at = app_test(query={"n_heads": "8", "n_kv_heads": "2"})
    no_exception(at)
    shown = charts(at)
    assert list(shown) == ["grid", "grid__one"]  # the grid first (exports, tests), then the phone's head
    grid, one = shown["grid"], shown["grid__one"]
    picker = at.segmented_control(key="grid__head")
    assert picker.options == [str(h) for h in range(8)] and picker.value == 0
    np.testing.assert_array_equal(arr(one["data"][0]["z"]), arr(grid["data"][0]["z"]))
    picker.set_value(5).run()
    no_exception(at)
    one = charts(at)["grid__one"]
    np.testing.assert_array_equal(arr(one["data"][0]["z"]), arr(grid["data"][5]["z"]))
    assert one["layout"]["annotations"][0]["text"] == "<b>head 5</b> · KV 1"
    titles = [m.value for m in at.markdown if "attn-phone-head" in m.value]
    assert titles and "Attention weights: 8 query heads, 2 KV groups" in titles[0]  # written out, it wraps
