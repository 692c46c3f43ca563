"""Attention Explorer: entry point. Run with ``streamlit run app.py``."""

import streamlit as st

import ui

HOME = "heatmaps"  # the default page: Streamlit serves it at "/", and ui.route_home_alias opens "/heatmaps" too

st.set_page_config(
    page_title="Attention Explorer",
    page_icon="🔍",
    layout="wide",
    # presentation mode starts with the sidebar folded away
    initial_sidebar_state="collapsed" if st.query_params.get("present") in ("1", "true") else "auto",
)

ui.route_home_alias(HOME)
pages = [
    st.Page("pages/heatmaps.py", title=ui.t("nav.heatmaps"), icon=":material/grid_on:", url_path=HOME, default=True),
    st.Page("pages/saturation.py", title=ui.t("nav.saturation"), icon=":material/show_chart:", url_path="saturation"),
    st.Page("pages/kv_sharing.py", title=ui.t("nav.kv_sharing"), icon=":material/call_split:", url_path="kv_sharing"),
    st.Page("pages/kv_cache.py", title=ui.t("nav.kv_cache"), icon=":material/memory:", url_path="kv_cache"),
]
# Which page this run draws is settled first, so that a rerun the sidebar asks for stays on it.
page = st.navigation(pages)
ui.sidebar()
ui.apply_presentation()
try:
    page.run()
finally:
    ui.share_link(page.url_path, HOME)  # also when a page stopped early on bad input
