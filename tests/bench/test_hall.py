"""The lecture-hall load generator (bench/hall.py) against a real server: the protocol, cross-talk, a small hall.

Correctness only (every reply carries the student's own numbers, no errors), never speed: the machine may be
loaded. The server is started once for the module with harness.start_server; no browser is needed.
"""

from __future__ import annotations

import asyncio
import json
import subprocess

import numpy as np
import pytest

from attn_core.attention.maps import compute_attention_maps
from attn_core.attention.tokens import tokenize
from attn_core.runtime.config import AttentionConfig
from bench.hall import (
    HallError,
    HallSpec,
    Reply,
    Tab,
    Tally,
    burst_walks,
    check_loopback,
    judge,
    main,
    run_hall,
    slider_moves,
    widget_state,
)
from harness import start_server
from tests.util import arr

TEXT = "The cat sat on the mat because it was tired ."  # the heatmap page's default text
TIMEOUT = 180  # seconds for one reply on a loaded machine


@pytest.fixture(scope="module")
def served():
    proc, url = start_server()
    yield url, proc.pid
    proc.terminate()
    try:
        proc.wait(15)
    except subprocess.TimeoutExpired:
        proc.kill()


async def visit(url: str, path: str, query: dict[str, str], key: str, value) -> tuple[Tab, Reply, Reply, Reply]:
    """Open a page, move slider ``key`` to ``value``, then rerun unchanged: the three replies."""
    tab = Tab(url, path, query)
    await asyncio.wait_for(tab.open(), TIMEOUT)
    try:
        first = await asyncio.wait_for(tab.rerun(), TIMEOUT)
        tab.move(key, value)
        moved = await asyncio.wait_for(tab.rerun(), TIMEOUT)
        same = await asyncio.wait_for(tab.rerun(), TIMEOUT)
    finally:
        await tab.close()
    return tab, first, moved, same


def grid_head0(reply: Reply) -> np.ndarray:
    return arr(json.loads(reply.charts[0])["data"][0]["z"])


def test_a_move_reruns_the_page_with_the_new_value(served):
    """First paint arrives; moving d_k gives a run whose link and heat map are those of the new d_k; the
    widget states the tab sends back with an unchanged rerun reproduce that page (same link, same charts)."""
    url, _ = served
    tab, first, moved, same = asyncio.run(visit(url, "", {"seed": "5", "n_kv_heads": "1"}, "head_dim", 17))
    assert first.status == same.status == moved.status == "ok"
    assert not (first.exceptions or first.errors or moved.exceptions or moved.errors)
    assert judge(first, {"seed": "5", "head_dim": None}) == ("ok", "")
    assert judge(moved, {"seed": "5", "head_dim": "17"}) == ("ok", "")
    assert tab.query["head_dim"] == "17"  # the address the frontend writes for a bound slider
    # app.py runs the page as a fragment: the move reran it alone; the unchanged rerun asks for the whole app
    assert moved.fragment_run and not first.fragment_run and not same.fragment_run
    assert same.link == moved.link and same.charts == moved.charts and same.charts != first.charts
    for reply, d_k in ((first, 16), (moved, 17)):
        want = compute_attention_maps(AttentionConfig(n_heads=8, n_kv_heads=1, head_dim=d_k, seed=5), tokenize(TEXT))
        w = want.weights[0]
        np.testing.assert_allclose(grid_head0(reply)[: w.shape[0], : w.shape[1]], w, atol=1e-6)


def test_a_page_other_than_the_default_keeps_its_page_across_moves(served):
    """With st.navigation the page's own hash comes in the navigation message: a tab that sent the app's
    main hash instead reran the default page, and the link lost the moved value."""
    url, _ = served
    _, first, moved, same = asyncio.run(visit(url, "saturation", {"seed": "3"}, "temperature", 1.1))
    assert first.status == moved.status == same.status == "ok"
    for reply in (moved, same):
        assert "/saturation?" in reply.link
        assert judge(reply, {"seed": "3", "temperature": "1.1"}) == ("ok", "")


def test_a_planted_wrong_expectation_is_counted_as_cross_talk(served):
    url, pid = served
    spec = HallSpec(url=url, students=2, moves=1, think=0.1, ramp=0, timeout=TIMEOUT, plant_crosstalk=True)
    result = asyncio.run(run_hall(spec, [pid]))
    t = result.tally
    assert t["runs"] == 4 and t["crosstalk"] == 2  # student 0's first paint and its move; student 1 is clean
    assert all(n.startswith("student 0: link has seed=1, expected 2") for n in t["notes"]), t["notes"]
    assert t["exceptions"] == t["error_boxes"] == t["timeouts"] == t["disconnects"] == t["unverified"] == 0


def test_a_small_hall_has_no_errors_and_no_cross_talk(served, tmp_path):
    url, pid = served
    out = tmp_path / "hall.json"
    argv = ["--url", url, "--pids", str(pid), "--students", "10", "--moves", "2", "--think", "0.2", "--ramp", "1"]
    assert main([*argv, "--timeout", str(TIMEOUT), "--json", str(out)]) == 0
    (result,) = json.loads(out.read_text())["halls"]
    t, s = result["tally"], result["summary"]
    assert len(t["first_paint"]) == 10 and len(t["updates"]) == 20 and t["runs"] == 30
    assert t["exceptions"] == t["error_boxes"] == t["crosstalk"] == t["unverified"] == 0
    assert t["timeouts"] == t["disconnects"] == 0 and not result["cut_short"]
    assert s["cpu_ms_per_run"] > 0 and result["hwm"] > 0  # the server's /proc was read


def test_a_hall_of_quick_presses_gets_every_last_press_drawn(served, tmp_path):
    """--burst: each move is three presses 60 ms apart without reading replies (a busy browser), back and forth over
    views the tab just saw. Every move ends with the run of its last press, and no reply refers to a message the tab
    dropped. (With Streamlit's message cache on, 6 of 10 such students broke in a run by hand; see .streamlit/config.toml.)"""
    url, pid = served
    out = tmp_path / "hall.json"
    argv = ["--url", url, "--pids", str(pid), "--students", "6", "--moves", "4", "--think", "0.2", "--ramp", "1"]
    assert main([*argv, "--burst", "3", "--timeout", str(TIMEOUT), "--json", str(out)]) == 0
    (result,) = json.loads(out.read_text())["halls"]
    t = result["tally"]
    assert len(t["first_paint"]) == 6 and len(t["updates"]) == 24 and 30 <= t["runs"] <= 6 + 6 * (4 + 3 * 3)
    assert t["broken"] == t["exceptions"] == t["error_boxes"] == t["crosstalk"] == t["unverified"] == 0
    assert t["timeouts"] == t["disconnects"] == 0 and not result["cut_short"]


def test_charts_that_differ_for_the_same_view_are_cross_talk():
    tally = Tally()
    link = "http://127.0.0.1:1/?seed=4&head_dim=17"
    tally.judge(0, Reply(status="ok", link=link, charts=['{"a": 1}']), {"seed": "4"})
    tally.judge(1, Reply(status="ok", link=link, charts=['{"a": 1}']), {"seed": "4"})
    assert tally.crosstalk == 0 and tally.shared_views == 1
    tally.judge(2, Reply(status="ok", link=link, charts=['{"a": 2}']), {"seed": "4"})
    assert tally.crosstalk == 1


def test_judge_reads_the_link_as_the_app_writes_it():
    def reply(query: str) -> Reply:
        return Reply(status="ok", link=f"http://127.0.0.1:1/kv_sharing?{query}")

    assert judge(reply("seed=3&temperature=1.1"), {"seed": "3", "temperature": "1.1"})[0] == "ok"
    assert judge(reply("seed=3&head_dim=17.0"), {"seed": "3", "head_dim": "17"})[0] == "ok"
    assert judge(reply("seed=3&n_kv_heads=2"), {"n_kv_heads": "2 · GQA"})[0] == "ok"  # a select slider's option
    assert judge(reply("seed=3"), {"seed": "4"})[0] == "crosstalk"
    assert judge(reply("seed=3"), {"seed": "3", "head_dim": "17"})[0] == "crosstalk"  # the move was lost
    assert judge(reply("seed=3&head_dim=17"), {"seed": "3", "head_dim": None})[0] == "crosstalk"
    assert judge(Reply(status="ok"), {"seed": "3"})[0] == "unverified"


def test_widget_states_are_what_the_frontend_sends():
    from ui.streamlit_compat import ButtonGroup, NumberInput, Slider

    s = Slider(id="a-head_dim", min=1, max=256, step=1, data_type=Slider.INT, type=Slider.SLIDER)
    s.default[:] = [16]
    assert list(widget_state("slider", s).double_array_value.data) == [16.0]
    assert slider_moves(s, 3, offset=0) == [17, 18, 19] and slider_moves(s, 1, offset=2) == [19]
    # quick presses: up, back down over what the browser just saw, up again; each move's end is its alone
    assert burst_walks(s, 4, 3) == [[17, 18, 19, 20], [19, 18, 17], [18, 19, 20], [19, 18, 17]]
    kv = Slider(id="a-n_kv_heads", min=0, max=3, step=1, type=Slider.SELECT_SLIDER)
    kv.options[:] = ["1 · MQA", "2 · GQA", "4 · GQA", "8 · MHA"]
    kv.default[:] = [1]
    assert list(widget_state("slider", kv).string_array_value.data) == ["2 · GQA"]
    assert slider_moves(kv, 3, offset=0) == ["4 · GQA", "8 · MHA", "1 · MQA"]  # up first, never the default
    kv.set_value, kv.raw_value[:] = True, ["8 · MHA"]
    assert list(widget_state("slider", kv).string_array_value.data) == ["8 · MHA"]
    seed = NumberInput(id="a-seed", data_type=NumberInput.INT, default=0, value=7, set_value=True)
    assert widget_state("number_input", seed).WhichOneof("value") == "int_value"
    assert widget_state("number_input", seed).int_value == 7
    mask = ButtonGroup(id="a-mask")
    mask.options.add(content="None")
    mask.options.add(content="Causal")
    mask.default[:] = [1]
    assert list(widget_state("button_group", mask).string_array_value.data) == ["Causal"]


def test_only_loopback_servers_unless_asked():
    for url in ("http://127.0.0.1:8501", "http://localhost:8501", "http://[::1]:8501"):
        check_loopback(url, allow_remote=False)
    for url in ("http://10.1.2.3:8501", "http://example.org", "ftp://127.0.0.1"):
        with pytest.raises(HallError):
            check_loopback(url, allow_remote=False)
    check_loopback("http://10.1.2.3:8501", allow_remote=True)
    assert main(["--url", "http://192.0.2.1:8501", "--students", "1"]) == 2  # refused before connecting


def test_phones_get_the_one_head_copies_and_a_mixed_hall_has_no_cross_talk(served):
    """A student whose browser says it is a phone gets the grid's one-head copy besides the grid (as a phone's
    browser does, ui.responsive.phone_copies); the same view on a phone and a desktop is not cross-talk."""
    from bench.hall import PHONE_UA, is_phone

    url, pid = served

    async def first_charts(agent):
        tab = Tab(url, "", {"seed": "7"}, agent)
        await asyncio.wait_for(tab.open(), TIMEOUT)
        try:
            return await asyncio.wait_for(tab.rerun(), TIMEOUT)
        finally:
            await tab.close()

    desktop, phone = asyncio.run(first_charts(None)), asyncio.run(first_charts(PHONE_UA))
    assert desktop.status == phone.status == "ok" and not (desktop.errors or phone.errors)
    assert len(phone.charts) == len(desktop.charts) + 1  # the head grid's one-head copy
    assert desktop.charts[0] in phone.charts  # and the same grid
    assert [is_phone(HallSpec(url=url, phones=0.25), i) for i in range(8)] == [False, False, False, True] * 2
    spec = HallSpec(url=url, students=4, moves=1, think=0.1, ramp=0, timeout=TIMEOUT, same_link=True, phones=0.5)
    t = asyncio.run(run_hall(spec, [pid])).tally
    assert t["runs"] == 8 and t["crosstalk"] == t["exceptions"] == t["error_boxes"] == t["unverified"] == 0
    assert t["shared_views"] >= 2  # the second phone's first paint compared with the first's, the desktops' likewise


def test_a_reply_never_refers_to_a_message_the_browser_dropped(served):
    """A rerun request lists the large messages the browser holds, and the browser drops those not used in the
    last two runs when a run ends. A run that ends after the browser sent its next request, but before the
    browser read that end, drops messages the request listed: a reply that refers to one of them instead of
    sending it breaks the browser's websocket ("Cached ForwardMsg MISS"; quick slider presses back and forth).
    The app turns Streamlit's message cache off (.streamlit/config.toml): the reply sends every chart."""
    url, _ = served

    async def race() -> tuple[Reply, Reply]:
        tab = Tab(url, "", {"seed": "5"})
        await asyncio.wait_for(tab.open(), TIMEOUT)
        try:
            first = await asyncio.wait_for(tab.rerun(), TIMEOUT)  # d_k 16
            for d_k in (17, 18):
                tab.move("head_dim", d_k)
                await tab.ask()
                ended = await asyncio.wait_for(tab.reply(finish=d_k == 17), TIMEOUT)
            tab.move("head_dim", 16)
            await tab.ask()  # lists what the tab held before the d_k 18 run ended: d_k 16's charts, two runs old
            tab.finish(ended)  # now the tab reads that end: those are two runs old no more, and dropped
            back = await asyncio.wait_for(tab.reply(), TIMEOUT)  # BrokenReply: a reference to a dropped message
        finally:
            await tab.close()
        return first, back

    first, back = asyncio.run(race())
    assert back.status == "ok" and not (back.exceptions or back.errors)
    assert judge(back, {"seed": "5", "head_dim": None}) == ("ok", "")  # the default d_k: not in the link
    assert back.charts == first.charts
