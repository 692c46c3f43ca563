"""Plotly figure builders: numpy arrays and result dataclasses in, figures out (no torch, no computation).

One module per topic plus the common ground:

- :mod:`.base`: :class:`Style` (fonts, colour scales), colours, :func:`apply_fonts`, :func:`base_layout`;
- :mod:`.labels`: tick plans that label every token a lecturer points at, for the width a chart is drawn at;
- :mod:`.gridplan`: a head grid's panels a row for a page, and the panels a slide holds (the rest paged);
- :mod:`.heatmaps`: the grid of heads, one matrix, row entropy;
- :mod:`.tokenmaps`: the grid's click layer, a query row's outline, the line view of one token;
- :mod:`.kv`, :mod:`.memory`, :mod:`.saturation`: the KV-sharing, KV-cache and saturation figures.

The names of :mod:`.base`, :mod:`.labels`, :mod:`.heatmaps` and :mod:`.tokenmaps` are importable from here
(``figures.Style``, ``figures.heatmap_grid``).
"""

from attn_core.figures.base import *  # noqa: F403
from attn_core.figures.base import __all__ as _base_all
from attn_core.figures.heatmaps import *  # noqa: F403
from attn_core.figures.heatmaps import __all__ as _heatmaps_all
from attn_core.figures.labels import *  # noqa: F403
from attn_core.figures.labels import __all__ as _labels_all
from attn_core.figures.tokenmaps import *  # noqa: F403
from attn_core.figures.tokenmaps import __all__ as _tokenmaps_all

__all__ = [*_base_all, *_labels_all, *_heatmaps_all, *_tokenmaps_all]
