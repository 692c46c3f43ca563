"""ui.shared: a session keeps its own last result of each shared step, so a class of many seeds does not
recompute what the server's small cache (ui.compute.MAX_SHARED entries) had to drop."""

from __future__ import annotations

import numpy as np
from streamlit.testing.v1 import AppTest

CALLS: list[tuple] = []  # (seed, size) of every computation, across the scripts below


def sample(seed: int, size: int, *, device: str = "cpu") -> np.ndarray:
    CALLS.append((seed, size))
    return np.random.default_rng(seed).standard_normal(size).astype(np.float32)


def script(seed: int, size: int) -> None:
    import importlib

    import streamlit as st

    import ui
    from tests.app import test_shared_session as T

    server = importlib.import_module("ui.compute")._shared  # the module: ui.compute is also a function

    st.session_state["_page"] = st.session_state.get("page_name", "saturation")
    server.clear()  # the server's cache lost it (a hall of other seeds pushed it out)
    first = ui.shared(T.sample, seed, size)
    server.clear()
    again = ui.shared(T.sample, seed, size)
    st.session_state["same_object"] = first is again
    st.write(float(again.sum()))


def test_a_session_keeps_its_last_result_and_lets_it_go_with_the_page():
    CALLS.clear()
    at = AppTest.from_function(script, args=(3, 1000), default_timeout=60).run()
    assert not at.exception and at.session_state["same_object"]
    assert CALLS == [(3, 1000)]  # computed once, though the server's cache was cleared twice
    at.run()
    assert CALLS == [(3, 1000)]  # and not again on the next run
    at.session_state["page_name"] = "heatmaps"
    at.run()
    assert CALLS == [(3, 1000)] * 2  # another page: the session let it go


def test_a_result_larger_than_the_session_budget_is_not_kept(monkeypatch):
    import importlib

    monkeypatch.setattr(importlib.import_module("ui.compute"), "SESSION_SHARED_BYTES", 1000)
    CALLS.clear()
    at = AppTest.from_function(script, args=(5, 1000), default_timeout=60).run()  # 4,000 bytes
    assert not at.exception and not at.session_state["same_object"]
    assert CALLS == [(5, 1000)] * 2


def scaled(seed: int, *, device: str = "cpu", kept: np.ndarray | None = None) -> np.ndarray:
    CALLS.append((seed, "given" if kept is not None else "drawn"))
    return kept * 2 if kept is not None else np.random.default_rng(seed).standard_normal(4).astype(np.float32) * 2


def given_script(seed: int) -> None:
    import importlib

    import numpy as np
    import streamlit as st

    import ui
    from tests.app import test_shared_session as T

    importlib.import_module("ui.compute")._shared.clear()
    st.session_state["_page"] = "saturation"
    base = np.random.default_rng(seed).standard_normal(4).astype(np.float32)
    st.session_state["first"] = ui.shared(T.scaled, seed, given={"kept": base})
    # the same arguments with something else given: the key leaves ``given`` out, so the kept result comes back
    st.session_state["again"] = ui.shared(T.scaled, seed, given={"kept": base * 0})


def test_given_values_reach_the_step_and_stay_out_of_its_key():
    """``ui.shared(..., given=...)`` hands its keyword arguments to the step (the first sequence from the current
    d_k's scores) and leaves them out of the cache key, as ``ui.compute`` does: what ``args`` determine."""
    CALLS.clear()
    at = AppTest.from_function(given_script, args=(7,), default_timeout=60).run()
    assert not at.exception
    expected = np.random.default_rng(7).standard_normal(4).astype(np.float32) * 2
    np.testing.assert_array_equal(at.session_state["first"], expected)
    assert at.session_state["again"] is at.session_state["first"]
    assert CALLS == [(7, "given")]
