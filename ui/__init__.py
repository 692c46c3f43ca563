"""Shared Streamlit code: what pages and ``app.py`` call as ``ui.<name>``.

Pages import this package and do layout only (``import ui``; ``ui.control(...)``). Nothing here keeps state at
module level: per-user state lives in ``st.session_state`` and the URL, and cached functions return CPU numpy
results (``st.cache_data`` copies them for every caller).

- :mod:`ui.core`: the session's language, style, device and seed; URL helpers;
- :mod:`ui.widgets`: the controls (:func:`control` builds one from a page's ``Params`` field);
- :mod:`ui.compute`: :func:`compute`, the cached-computation helper, :func:`view`, and :func:`live_run`;
- :mod:`ui.charts`: the chart transport (a serialised chart, Streamlit's theme written in, the live element);
- :mod:`ui.output`: page helpers around charts (export menu, phone copies, steps), errors, explanations;
- :mod:`ui.chart_theme`: Streamlit's chart theme written into each figure (charts are sent with ``theme=None``);
- :mod:`ui.plotly_live`: the chart element a browser gets, updated in place by ``Plotly.react`` on the next run;
- :mod:`ui.frame`: deep links, the sidebar, presentation mode, the share link and its QR code;
- :mod:`ui.tokenmaps`: the head grid with its click layer and one query token followed through a KV group;
- :mod:`ui.responsive`: phones and small laptops (the responsive CSS, titles and boxes for phones);
- :mod:`ui.streamlit_compat`: every use of Streamlit's private internals, each with a contract test;
- ``ui/assets/``: the stylesheets and scripts sent to the browser, read once per process (:func:`ui.core.asset`);
- :mod:`ui.decks`: lecture decks (the slide bar and clicker, the deck panel), used by app.py;
- :mod:`ui.rooms`: live lecture rooms (students follow the lecturer's slide and answer its question), used by app.py.
"""

from . import decks, rooms
from .charts import SerialisedFigure, drawn
from .compute import (
    LiveRun,
    compute,
    digest,
    freeze_heap,
    live_buttons,
    live_run,
    live_state,
    live_status,
    model,
    preload_keys,
    preload_model,
    shared,
    view,
    warm,
)
from .core import count, device, linked, present, seed, style, t
from .frame import (
    apply_presentation,
    draw_page,
    link_box,
    route_home_alias,
    share_link,
    sidebar,
    stop,
    view_url,
)
from .output import (
    help_expander,
    help_text,
    lazy_expander,
    live_charts,
    notices,
    random_weights_note,
    run_safely,
    show_error,
    show_figure,
    show_heads,
    show_steps,
    show_view,
    show_views,
    table,
)
from .responsive import apply_responsive, on_phone
from .tokenmaps import grid_page, head_grid, open_zoom
from .widgets import (
    control,
    controls_box,
    drawer,
    file_input,
    int_slider,
    map_options,
    note_cut,
    pow2_slider,
    section_box,
    slide_controls,
    slide_sections,
    title,
    token_input,
)

__all__ = [
    "LiveRun",
    "SerialisedFigure",
    "apply_presentation",
    "apply_responsive",
    "on_phone",
    "compute",
    "control",
    "controls_box",
    "count",
    "decks",
    "device",
    "digest",
    "draw_page",
    "drawer",
    "file_input",
    "drawn",
    "freeze_heap",
    "grid_page",
    "head_grid",
    "help_expander",
    "help_text",
    "int_slider",
    "lazy_expander",
    "link_box",
    "linked",
    "live_buttons",
    "live_charts",
    "live_run",
    "live_state",
    "live_status",
    "map_options",
    "model",
    "note_cut",
    "notices",
    "open_zoom",
    "pow2_slider",
    "preload_keys",
    "preload_model",
    "present",
    "random_weights_note",
    "rooms",
    "route_home_alias",
    "run_safely",
    "section_box",
    "seed",
    "share_link",
    "shared",
    "show_error",
    "show_figure",
    "show_heads",
    "show_steps",
    "show_view",
    "show_views",
    "sidebar",
    "slide_controls",
    "slide_sections",
    "stop",
    "style",
    "t",
    "table",
    "title",
    "token_input",
    "view",
    "view_url",
    "warm",
]
