"""Attention Explorer: entry point. Run with ``streamlit run app.py``."""

import streamlit as st

import ui

st.set_page_config(page_title="Attention Explorer", page_icon="🔍", layout="wide")

ui.sidebar()
pages = [
    st.Page("pages/heatmaps.py", title=ui.t("nav.heatmaps"), icon=":material/grid_on:", url_path="heatmaps",
            default=True),
]
st.navigation(pages).run()
