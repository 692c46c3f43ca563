"""ui.live_state / ui.live_run / ui.live_buttons: the generic loop of a live run (the decode now; sweeps,
training and generation later), driven by a small script under AppTest."""

from streamlit.testing.v1 import AppTest

from tests.conftest import no_exception
from ui.compute import LiveRun


def script():
    import streamlit as st

    import ui
    from attn_core.config import ConfigError

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
