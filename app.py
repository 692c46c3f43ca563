"""Attention Explorer: entry point. Run with ``streamlit run app.py``."""

import streamlit as st

import ui

st.set_page_config(page_title="Attention Explorer", page_icon="🔍", layout="wide")

ui.sidebar()
pages = [
    st.Page("pages/heatmaps.py", title=ui.t("nav.heatmaps"), icon=":material/grid_on:", url_path="heatmaps",
            default=True),
    st.Page("pages/saturation.py", title=ui.t("nav.saturation"), icon=":material/show_chart:", url_path="saturation"),
    st.Page("pages/kv_sharing.py", title=ui.t("nav.kv_sharing"), icon=":material/call_split:", url_path="kv_sharing"),
    st.Page("pages/kv_cache.py", title=ui.t("nav.kv_cache"), icon=":material/memory:", url_path="kv_cache"),
]
st.navigation(pages).run()
