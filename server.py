"""The server: ``streamlit run server.py`` serves the app (``app.py``) with the engine and the models loaded at start.

A plain ``streamlit run app.py`` imports torch, pandas, plotly and the engine during the first visitor's
first script run (about two thirds of a cold start on the project's 2-core machine). Here Streamlit's
ASGI app (``st.App``) imports them in its lifespan, before the server answers its health check, so the
first student of a lecture does not wait for them. ``app.py`` stays the entry point of every page;
AppTest and ``streamlit run app.py`` still work without this file.

The shipped pretrained models (:data:`attn_core.pretrained.store.SHIPPED`) load here too, into the same cache
the pages read (``ui.model``), with what the models page's first view computes (its head roles): a class that
opens the models page gets its first chart at once instead of waiting for a model to load and a 5 s
computation. The first start on a machine also converts each GGUF model to float32 once (half a minute for
SmolLM2 on two cores; later starts read the converted copy); the log says what loads and how long it took.
``ATTN_PRELOAD_MODELS=0`` leaves the models to their first visitor (a faster start, and no memory for models
nobody opens: 250–650 MiB for SmolLM2 and MiniLM in float32, and 0.7–0.9 GiB more for Gemma 3 270M, see
docs/deploy.md); ``ATTN_PRELOAD_MODELS=smollm2-135m,minilm-l6`` loads only the ones named (comma-separated keys).

It also mounts the live lecture rooms' HTTP side (:mod:`rooms.web`): the long poll a student's page waits on for the
lecturer's next slide, and the browser cookie that lets a browser answer each question once.
"""

import sys
import time
from contextlib import asynccontextmanager

import streamlit as st

import rooms.web


def say(text: str) -> None:
    """A line in the server's log (its standard error, where Streamlit writes its own)."""
    print(f"attention-explorer: {text}", file=sys.stderr, flush=True)


def copies(root) -> set:
    """The converted models' folders in ``root`` (not the locks and half-built folders beside them)."""
    return {p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")} if root.is_dir() else set()


def preload_models() -> None:
    """Load every model :func:`ui.preload_keys` names and compute its first view's steps (:func:`ui.warm`)."""
    import ui
    from attn_core.pretrained.store import cache_root
    from attn_core.runtime.config import ConfigError
    from attn_core.views import models as mv

    for key in ui.preload_keys():
        root = cache_root()
        before = copies(root)
        say(f"loading {key}")
        t0 = time.perf_counter()
        try:
            model = ui.preload_model(key)
        except (ConfigError, OSError) as exc:
            say(f"{key} not loaded: {exc}")
            continue
        made = sorted(copies(root) - before)
        made_note = f" (converted to float32 once, into {made[0]})" if made else ""
        say(f"{key} loaded in {time.perf_counter() - t0:.1f} s{made_note}")
        t0 = time.perf_counter()
        for step, args in mv.first_steps(model):
            ui.warm(step, *args)
        say(f"{key}: the models page's first view computed in {time.perf_counter() - t0:.1f} s")


@asynccontextmanager
async def preload(_app):
    """Import what every page's first run needs, and load the shipped models (:func:`preload_models`)."""
    import pandas  # noqa: F401
    import plotly.graph_objects  # noqa: F401
    import plotly.io  # noqa: F401
    import torch  # noqa: F401

    import attn_core.views  # noqa: F401 - the view models, figures and engine modules they import
    import ui  # noqa: F401

    preload_models()
    ui.freeze_heap()
    yield None


app = st.App("app.py", lifespan=preload, routes=rooms.web.routes(), middleware=rooms.web.middleware())
