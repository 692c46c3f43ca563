"""Each page's view model, and the one list of the app's pages (:data:`PAGES`).

``app.py`` (the navigation), the command line (:mod:`attn_core.export`), the
fuzz, language, chart-size and browser tests and the benchmark all read
:data:`PAGES`, so a page is added in one place. See ``docs/architecture.md``.
"""

from __future__ import annotations

from attn_core.views.base import Control, PageSpec, View, control, controls, defaults, matrix_frame  # noqa: F401

PAGES: tuple[PageSpec, ...] = (
    PageSpec("heatmaps", "nav.heatmaps", ":material/grid_on:", default=True),
    PageSpec("saturation", "nav.saturation", ":material/show_chart:"),
    PageSpec("kv_sharing", "nav.kv_sharing", ":material/call_split:"),
    PageSpec("kv_cache", "nav.kv_cache", ":material/memory:"),
    PageSpec("models", "nav.models", ":material/neurology:"),
    PageSpec("mla", "nav.mla", ":material/compress:"),
    PageSpec("complexity", "nav.complexity", ":material/speed:"),
    PageSpec("conv_attention", "nav.conv_attention", ":material/blur_on:"),
    PageSpec("lab", "nav.lab", ":material/model_training:"),
    PageSpec("surgery", "nav.surgery", ":material/healing:"),
)


def page(name: str) -> PageSpec:
    """The page called ``name`` (its file stem); :class:`~attn_core.runtime.config.ConfigError` if there is none."""
    from attn_core.runtime.config import unknown_option

    for p in PAGES:
        if p.name == name:
            return p
    raise unknown_option("page", name, [p.name for p in PAGES])
