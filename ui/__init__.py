"""Shared Streamlit code: language, device, URL-bound controls, cached computations, figure display.

Pages import this package and do layout only (``import ui``; ``ui.int_slider(...)``). Nothing here
keeps state at module level: per-user state lives in ``st.session_state`` and the URL, and cached
functions return CPU numpy results (``st.cache_data`` copies them for every caller).

- :mod:`ui.core`: the session's language, style, device and seed; URL helpers;
- :mod:`ui.widgets`: the controls (:func:`control` builds one from a page's ``Params`` field);
- :mod:`ui.compute`: :func:`compute`, the one cached-computation helper, and :func:`live_run`;
- :mod:`ui.output`: figures with their export menu, errors, explanations;
- :mod:`ui.chart_theme`: Streamlit's chart theme written into each figure (charts are sent with ``theme=None``);
- :mod:`ui.plotly_live`: the chart element a browser gets, updated in place by ``Plotly.react`` on the next run;
- :mod:`ui.frame`: deep links, the sidebar, presentation mode, the share link and its QR code;
- :mod:`ui.tokenmaps`: the head grid with its click layer and one query token followed through a KV group;
- :mod:`ui.responsive`: phones and small laptops (the responsive CSS, head grids one head at a time);
- :mod:`ui.decks`: lecture decks (the slide bar and clicker, the deck panel), used by app.py.
"""

from . import decks  # noqa: E402,F401 - app.py's ui.decks
from .compute import *  # noqa: F403
from .core import *  # noqa: F403
from .frame import *  # noqa: F403
from .output import *  # noqa: F403
from .responsive import *  # noqa: F403
from .tokenmaps import *  # noqa: F403
from .widgets import *  # noqa: F403
