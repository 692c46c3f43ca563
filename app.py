"""Attention Explorer: entry point. Run with ``streamlit run app.py``."""

import contextlib

import streamlit as st

import ui
from attn_core.views import PAGES

# the default page: Streamlit serves it at "/", and ui.route_home_alias opens "/<its name>" too
HOME = next(p.name for p in PAGES if p.default)

st.set_page_config(
    page_title="Attention Explorer",
    page_icon="🔍",
    layout="wide",
    # the sidebar (language, seed, slide mode, the share link, decks) starts folded: the page's charts and its
    # controls beside them get the screen's width
    initial_sidebar_state="collapsed",
)

ui.route_home_alias(HOME)
pages = [st.Page(p.script, title=ui.t(p.title_key), icon=p.icon, url_path=p.name, default=p.default) for p in PAGES]
# Which page this run draws is settled first, so that a rerun the sidebar asks for stays on it.
page = st.navigation(pages)
ui.rooms.open_from_url()  # ?room=CODE (a student) or ?room=CODE&key=... (the lecturer): a live lecture room
ui.rooms.sync()  # the room once a run: the lecturer's slide written to it, or a following student moved to it
ui.decks.open_from_url()  # ?deck=...: a lecture deck, opened at ?deck_at=
ui.decks.follow(page.url_path or HOME)  # Previous/Next of a deck: its slide's page and state, before any widget
ui.sidebar()
ui.apply_presentation()
ui.apply_responsive()  # phones and small laptops: controls wrap, grids show one head at a time
st.session_state["_page"] = page.url_path or HOME  # the running page's name: its exports' file names
ui.decks.bar()
ui.rooms.bar()  # the room's line: following or exploring, the slide's question, the watch for the next move
LINK = dict(st.session_state["_link_params"])  # the sidebar's and the deck's part of the share link


@st.fragment
def run_page() -> None:
    """The page and its share link, as a fragment: a control of the page reruns this alone, not the navigation,
    the sidebar and the CSS above (2-5 ms of the server's CPU and 10-35 ms of the browser's a move, measured with
    bench/hall.py and bench/bench.py). Widgets outside it (language, seed, presentation mode, the deck) rerun the whole app."""
    st.session_state["_link_params"] = dict(LINK)  # a control the page no longer draws leaves the link
    # normal mode: the page's grid on a wide screen (ui/assets/page.css); slide mode lays the page out itself
    with contextlib.nullcontext() if ui.present() else st.container(key="page_body"):
        ui.draw_page(page, page.url_path, HOME)  # the share link also when the page ended early (ui.stop)
    ui.rooms.after_page()  # the lecturer's own change of the view goes to the room; a student's is exploring


run_page()
with st.sidebar:  # outside the fragment: opening or closing a deck redraws the deck bar above the page
    ui.decks.panel(page.url_path or HOME, room=ui.rooms.panel)
