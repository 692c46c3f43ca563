"""ui.live_state / ui.live_run / ui.live_buttons: the generic loop of a live run (the decode now; sweeps,
training and generation later), driven by a small script under AppTest."""

from streamlit.testing.v1 import AppTest

from tests.conftest import no_exception
from ui.compute import LiveRun


def script():
    import streamlit as st

    import ui
    from attn_core.runtime.config import ConfigError

    n, fail, every = st.session_state.get("n", 3), st.session_state.get("fail"), st.session_state.get("every", 0.0)

    def steps():
        for i in range(n):
            if fail is not None and i == fail:
                raise ConfigError("too big", "n", "budget", need="2 B", budget="1 B", reduce="n")
            yield i * 10

    run = ui.live_state("demo", n)
    if ui.live_buttons("demo", "kvcache.run", "kvcache.stop"):
        frames, bars = [], []

        def progress(r):
            bars.append(len(r.steps))
            return len(r.steps) / n, f"{len(r.steps)} of {n}"

        run = ui.live_run("demo", n, steps, lambda r: frames.append(list(r.steps)), progress=progress, every_s=every)
        st.session_state["frames"], st.session_state["bars"] = frames, bars
    st.session_state["seen"] = (run.status, list(run.steps), run.stale, type(run.error).__name__)


def app(**session) -> AppTest:
    at = AppTest.from_function(script, default_timeout=600)
    for k, v in session.items():
        at.session_state[k] = v
    return at.run()


def test_a_run_keeps_every_step_draws_frames_and_shows_progress():
    at = app()
    no_exception(at)
    assert at.session_state["seen"] == ("idle", [], False, "NoneType")
    assert at.button(key="demo_stop").disabled  # Stop is live only during a run
    at.button(key="demo_run").click().run()
    assert at.session_state["seen"] == ("done", [0, 10, 20], False, "NoneType")
    assert at.session_state["frames"] == [[0], [0, 10], [0, 10, 20]]  # every_s = 0: a frame after each step
    assert at.session_state["bars"] == [0, 1, 2, 3]  # before the first step, then after each
    at.run()  # a later rerun keeps the results
    assert at.session_state["seen"] == ("done", [0, 10, 20], False, "NoneType")


def test_frames_are_throttled_but_the_first_is_drawn_at_once():
    at = app(n=5, every=3600.0)
    at.button(key="demo_run").click().run()
    assert at.session_state["frames"] == [[0]] and at.session_state["seen"][1] == [0, 10, 20, 30, 40]


def test_an_error_ends_the_run_and_keeps_the_steps_made():
    at = app(n=5, fail=2)
    at.button(key="demo_run").click().run()
    no_exception(at)
    assert at.session_state["seen"] == ("error", [0, 10], False, "ConfigError")


def test_other_parameters_make_the_results_stale():
    at = app()
    at.button(key="demo_run").click().run()
    at.session_state["n"] = 4
    at.run()
    assert at.session_state["seen"] == ("done", [0, 10, 20], True, "NoneType")  # the run's own results, stale


def test_a_run_cut_short_by_a_rerun_reads_stopped():
    at = app(demo=LiveRun(params=3, steps=[0, 10], status="running"))
    no_exception(at)
    assert at.session_state["seen"] == ("stopped", [0, 10], False, "NoneType")


# ---------------------------------------------------------------- one server's live runs take turns
def test_run_slots_serve_in_arrival_order_and_count_who_is_ahead():
    import threading

    from ui.compute import RunSlots

    slots = RunSlots(1)
    a, b, c = slots.join(), slots.join(), slots.join()
    assert not slots.start(b, 0)  # a joined first: b waits even though the slot is free
    assert slots.start(a, 0) and slots.ahead(b) == 1 and slots.ahead(c) == 2  # a computes; b, then c
    assert not slots.start(b, 0.05)  # the one slot is taken
    slots.leave(b)  # b's page reran (Stop): it leaves the queue
    assert slots.ahead(c) == 1
    got = []
    waiter = threading.Thread(target=lambda: got.append(slots.start(c, 10)))
    waiter.start()
    slots.done()  # a ends: c, waiting in its own thread, starts
    waiter.join(5)
    assert got == [True] and slots.ahead(slots.join()) == 1
    two = RunSlots(2)
    x, y = two.join(), two.join()
    assert two.start(x, 0) and two.start(y, 0)  # two at a time


def test_live_slots_follow_the_cores_or_the_setting(monkeypatch):
    import os

    import torch

    from ui.compute import live_slots

    monkeypatch.setenv("ATTN_LIVE_RUNS", "3")
    assert live_slots() == 3
    cores = len(os.sched_getaffinity(0))
    assert live_slots("cuda") == 3  # the setting also for a GPU
    for bad in ("0", "x", ""):
        monkeypatch.setenv("ATTN_LIVE_RUNS", bad)
        assert live_slots() == max(2, cores // torch.get_num_threads())
        # a GPU measures one run at a time: its memory counters and synchronize are the whole device's
        assert live_slots("cuda") == live_slots("cuda:1") == 1


def waiting_script():
    import threading

    import streamlit as st

    from ui.compute import RunSlots, _wait_turn

    slots = RunSlots(1)
    first = slots.join()
    slots.start(first, 0)  # another session's run holds the one slot for a second
    threading.Timer(1.2, slots.done).start()
    said = []

    class Bar:
        def info(self, text, icon=None):
            said.append(text)

    st.session_state["waited"] = _wait_turn(slots, Bar())
    st.session_state["said"] = said


def test_a_waiting_run_says_how_many_are_ahead_in_the_user_s_language():
    for lang, want in (
        ("en", "Waiting for the server: 1 run ahead of yours (it computes 1 run at a time)"),
        ("zh", "正在等待服务器：你前面还有 1 个运行（服务器一次计算 1 个运行）"),
    ):
        at = AppTest.from_function(waiting_script, default_timeout=60)
        at.session_state["lang"] = lang
        at.run()
        no_exception(at)
        assert at.session_state["waited"] >= 1.0
        said = at.session_state["said"]
        assert len(said) >= 2 and all(want in s for s in said), said  # updated while it waits
        assert ("waited 1 s" if lang == "en" else "已等待 1 秒") in said[-1]


def test_a_run_waits_for_the_slot_another_session_holds_then_runs_to_the_end():
    import threading

    from ui.compute import slots_for
    from ui.core import device

    slots = slots_for(device())  # the server's own slots, shared with the script's run
    held = [slots.join() for _ in range(slots.size)]
    for ticket in held:
        assert slots.start(ticket, 0)
    at = app()
    for _ in held:
        threading.Timer(1.0, slots.done).start()
    at.button(key="demo_run").click().run()
    no_exception(at)
    run = at.session_state["demo"]
    assert run.status == "done" and run.steps == [0, 10, 20] and run.waited_s >= 0.8
    at.button(key="demo_run").click().run()  # the slot was given back: the next run starts at once
    assert at.session_state["demo"].waited_s < 0.5
    probe = slots.join()
    assert slots.ahead(probe) == 0  # nothing left running or queued
    slots.leave(probe)
