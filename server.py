"""The server: ``streamlit run server.py`` serves the app (``app.py``) with the engine loaded at start.

A plain ``streamlit run app.py`` imports torch, pandas, plotly and the engine during the first visitor's
first script run (about two thirds of a cold start on the project's 2-core machine). Here Streamlit's
ASGI app (``st.App``) imports them in its lifespan, before the server answers its health check, so the
first student of a lecture does not wait for them. ``app.py`` stays the entry point of every page;
AppTest and ``streamlit run app.py`` still work without this file.

It also mounts the live lecture rooms' HTTP side (:mod:`rooms.web`): the long poll a student's page waits on for the
lecturer's next slide, and the browser cookie that lets a browser answer each question once.
"""

from contextlib import asynccontextmanager

import streamlit as st

import rooms.web


@asynccontextmanager
async def preload(_app):
    """Import what every page's first run needs (not the pretrained models: the models page loads those)."""
    import pandas  # noqa: F401
    import plotly.graph_objects  # noqa: F401
    import plotly.io  # noqa: F401
    import torch  # noqa: F401

    import attn_core.views  # noqa: F401 - the view models, figures and engine modules they import
    import ui  # noqa: F401

    ui.freeze_heap()
    yield None


app = st.App("app.py", lifespan=preload, routes=rooms.web.routes(), middleware=rooms.web.middleware())
