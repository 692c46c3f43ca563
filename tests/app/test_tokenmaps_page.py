"""AppTest: token-centred maps on the heatmaps page. A click on a grid panel (the chart's selection state,
sent as the browser sends it) opens that head in the zoom; bad selections change nothing; a query token
followed through a KV group outlines its row and draws the line view, whose widths equal the grid's weights.

A chart's selection has no AppTest setter: :func:`select` adds the chart's widget state (the JSON the
browser sends) to the other widgets' states and runs the script once, as a click does.
"""

from __future__ import annotations

import json

import numpy as np

from attn_core import figures
from tests.app.test_heatmaps_page import PAGE, grid_z
from tests.conftest import no_exception
from tests.util import chart_specs


def select(at, key: str, points: list) -> None:
    """Run ``at`` as after a click that selected ``points`` in the chart ``key``."""
    chart = next(c for c in at.get("plotly_chart") if c.key == key)
    states = at._tree.get_widget_states()
    state = states.widgets.add()
    state.id = chart.proto.id
    state.string_value = json.dumps(
        {"selection": {"points": points, "point_indices": [0] * len(points), "box": [], "lasso": []}}
    )
    at._run(states)


def spec_of(at, key: str) -> dict:
    return next(json.loads(c.proto.spec) for c in at.get("plotly_chart") if c.key == key)


def test_click_on_a_panel_opens_its_head_in_the_zoom(app_test):
    at = app_test(PAGE)
    bad = [
        [],
        [{"customdata": []}],
        [{"customdata": [8, 0.1]}],
        [{"customdata": ["3"]}],
        [{"customdata": [-2]}],
        [{"x": "cat (1)", "y": "The (0)"}],
    ]
    for points in bad:  # empty, malformed or out of range: the grid stays, nothing raised
        select(at, "grid", points)
        no_exception(at)
        assert at.session_state["view"] == "grid" and len(grid_z(at)) == 8
    select(at, "grid", [{"curve_number": 13, "point_number": 7, "x": "sat (2)", "y": "on (3)", "customdata": [5, 0.1]}])
    no_exception(at)
    assert at.session_state["view"] == "zoom" and at.session_state["head"] == 5
    assert at.query_params["view"] == "zoom" and at.query_params["head"] == "5"
    assert "Head 5 · KV 1" in chart_specs(at)[0]["layout"]["title"]["text"]
    at.segmented_control(key="view").set_value("steps").run()  # the step-by-step view reads the same head
    assert "Q · head 5" in chart_specs(at)[0]["layout"]["title"]["text"]


def test_follow_a_token_outlines_its_row_and_draws_its_lines(app_test):
    at = app_test(PAGE, query={"mask": "causal"}, session={"focus_token": 2, "focus_group": 1})
    no_exception(at)
    grid = spec_of(at, "grid")
    got = [s for s in grid["layout"]["shapes"] if s.get("name") == "focus"]
    frames = [s for s in grid["layout"]["shapes"] if s["layer"] == "above" and s.get("name") != "focus"]
    # across panels 4..7 (KV group 1), on their third row (query 2): a white band and a black line each
    want = {(f["x0"], f["x1"], f["y0"] + 2, f["y0"] + 3) for f in frames[4:8]}
    assert {(s["x0"], s["x1"], s["y0"], s["y1"]) for s in got} == want and len(got) == 8
    lines = spec_of(at, "focus_lines")
    z = grid_z(at)
    for i, head in enumerate(range(4, 8)):
        mine = [s for s in lines["layout"]["shapes"] if s["xref"] == ("x" if i == 0 else f"x{i + 1}")]
        assert [s["y1"] for s in mine] == [0, 1, 2]  # causal: keys up to the query
        np.testing.assert_allclose([s["line"]["width"] / figures.LINE_MAX_PX for s in mine], z[head, 2, :3], rtol=1e-5)
    text = " ".join(m.value for m in at.markdown)
    assert "Where “sat” (2) attends most in KV group 1" in text and "differ by up to" in text
    # a click on a query of the line view follows that token; a click on a key or nonsense does not
    select(at, "focus_lines", [{"customdata": [4, 7, "it (7)", "k", "0.1"]}])
    assert at.session_state["focus_token"] == 2
    select(at, "focus_lines", [{"customdata": [4, 7, "it (7)", "q"]}])
    no_exception(at)
    assert at.session_state["focus_token"] == 7
    got = [s for s in spec_of(at, "grid")["layout"]["shapes"] if s.get("name") == "focus"]
    assert {(s["y0"], s["y1"]) for s in got} == {(f["y0"] + 7, f["y0"] + 8) for f in frames[4:8]}  # query 7's row
    # a shorter text drops a token that no longer exists instead of failing
    at.text_area(key="text").set_value("a b c").run()
    no_exception(at)
    assert at.session_state["focus_token"] == -1 and not [c for c in at.get("plotly_chart") if c.key == "focus_lines"]


def test_a_followed_token_goes_into_the_link_and_a_link_opens_it(app_test):
    at = app_test(PAGE, session={"focus_token": 7, "focus_group": 1})
    no_exception(at)
    assert at.session_state["_link_params"]["focus_token"] == "7"
    assert at.session_state["_link_params"]["focus_group"] == "1"
    # the link's numbers, in a new session: the same token followed in the same KV group
    at = app_test(PAGE, query={"focus_token": "7", "focus_group": "1"})
    no_exception(at)
    assert (at.session_state["focus_token"], at.session_state["focus_group"]) == (7, 1)
    assert not at.warning and [c for c in at.get("plotly_chart") if c.key == "focus_lines"]
    assert any("Where “it” (7) attends most in KV group 1" in m.value for m in at.markdown)
    # none followed: nothing in the link, not even the group
    at.selectbox(key="focus_token").set_value(-1).run()
    assert "focus_token" not in at.session_state["_link_params"]
    assert "focus_group" not in at.session_state["_link_params"]


def test_a_bad_followed_token_in_a_link_says_so_and_follows_none(app_test):
    for raw, lang, want in (
        ("99", "en", "focus_token=99 is not valid (expected a whole number from 0 to 10); using none instead"),
        ("x", "zh", "focus_token=x 无效（应为 0 到 10 之间的整数），已改用 不跟随"),
    ):
        at = app_test(PAGE, query={"focus_token": raw, "lang": lang})
        no_exception(at)
        assert any(want in w.value for w in at.warning), [w.value for w in at.warning]
        assert at.session_state["focus_token"] == -1 and len(grid_z(at)) == 8  # the grid is still there
    at = app_test(PAGE, query={"focus_token": "3", "focus_group": "5"})  # 2 KV groups: 5 is none of them
    no_exception(at)
    assert any("focus_group=5 is not valid (expected a whole number from 0 to 1)" in w.value for w in at.warning)
    assert (at.session_state["focus_token"], at.session_state["focus_group"]) == (3, 0)


def test_long_maps_say_why_no_token_can_be_followed(app_test):
    at = app_test(PAGE, query={"source": "synthetic", "seq_len": "80"})
    no_exception(at)
    assert any(
        "Following one token works up to 64 tokens a side (this map has 80 queries and 80 keys)" in c.value
        for c in at.caption
    )
    assert not [s for s in at.selectbox if s.key == "focus_token"] and len(grid_z(at)) == 8


def test_follow_a_token_in_chinese(app_test):
    at = app_test(PAGE, query={"lang": "zh"}, session={"focus_token": 3})
    no_exception(at)
    assert at.selectbox(key="focus_token").label == "跟随一个查询词元"
    assert any("“垫” (3) 在 KV 组 0 中最关注" in m.value for m in at.markdown)  # the Chinese example sentence
    assert "查询 垫 (3) 关注哪里 · KV 组 0" in spec_of(at, "focus_lines")["layout"]["title"]["text"]


def test_a_models_layer_opens_a_head_and_follows_a_token(app_test):
    """The pretrained-models page's layer view shares the grid: SmolLM2's 9 heads in 3 KV groups."""
    from tests.models.conftest import _shipped

    _shipped("smollm2-135m")  # skips (or fails under CI) when the model packages are missing
    at = app_test(
        "app_pages/models.py", query={"view": "layer", "layer": "17"}, session={"focus_token": 4, "focus_group": 2}
    )
    no_exception(at)
    z = grid_z(at)
    lines = spec_of(at, "focus_lines")
    for i, head in enumerate((6, 7, 8)):  # KV group 2 of SmolLM2: query heads 6, 7, 8; causal: keys 0..4
        mine = [s for s in lines["layout"]["shapes"] if s["xref"] == ("x" if i == 0 else f"x{i + 1}")]
        np.testing.assert_allclose([s["line"]["width"] / figures.LINE_MAX_PX for s in mine], z[head, 4, :5], rtol=1e-5)
    select(at, "mdl_layer", [{"customdata": [7, 0.2]}])
    no_exception(at)
    assert (at.session_state["view"], at.session_state["layer"], at.session_state["head"]) == ("head", 17, 7)
    assert "Head 7 · KV 2" in chart_specs(at)[0]["layout"]["title"]["text"]
