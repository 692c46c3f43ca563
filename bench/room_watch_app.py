"""The other way a student's page could learn of the lecturer's move (bench/room_watch_cost.py compares it): a
fragment that Streamlit's frontend reruns every half second, reading the room's version from the store."""

import os

import streamlit as st

from rooms.service import current

CODE = os.environ.get("ROOM_CODE", "")


@st.fragment(run_every=0.5)
def watch() -> None:
    v = current().versions(CODE)
    st.caption(f"v{v.pos if v else '-'}")


st.title("room watch by polling")
watch()
