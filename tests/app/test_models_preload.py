"""The server's start: which shipped models it loads (``ATTN_PRELOAD_MODELS``), and a step computed there is what
a page's first visit gets from :func:`ui.compute` without computing it again (server.py)."""

from __future__ import annotations

import pytest

import ui
from attn_core.pretrained.store import SHIPPED
from tests.conftest import no_exception

CALLS: list[tuple] = []
SCRIPT = """
import streamlit as st
import ui
from tests.app.test_models_preload import counted
st.text(str(ui.compute(counted, 6, 7)))
"""


def counted(a: int, b: int, *, device: str = "cpu") -> int:
    CALLS.append((a, b, device))
    return a * b


@pytest.mark.parametrize(
    "value,keys",
    [(None, list(SHIPPED)), ("1", list(SHIPPED)), ("0", []), ("off", []), ("smollm2-135m", ["smollm2-135m"])],
)
def test_the_models_a_server_loads_at_its_start(monkeypatch, value, keys):
    if value is None:
        monkeypatch.delenv("ATTN_PRELOAD_MODELS", raising=False)
    else:
        monkeypatch.setenv("ATTN_PRELOAD_MODELS", value)
    assert ui.preload_keys() == keys
    assert ("gemma3-270m" in keys) == (value in (None, "1"))  # Gemma 3 270M is preloaded by default (docs/deploy.md)
    monkeypatch.setenv("ATTN_PRELOAD_MODELS", " minilm-l6 , smollm2-135m ")
    assert ui.preload_keys() == ["minilm-l6", "smollm2-135m"]


def test_a_step_warmed_at_the_start_is_what_the_first_visit_computes():
    from streamlit.testing.v1 import AppTest

    CALLS.clear()
    ui.warm(counted, 6, 7)  # outside any session, as server.py's lifespan runs it
    assert CALLS == [(6, 7, "cpu")]
    at = AppTest.from_string(SCRIPT, default_timeout=60).run()
    no_exception(at)
    assert at.text[0].value == "42" and CALLS == [(6, 7, "cpu")]  # the page's compute found it: no second call
