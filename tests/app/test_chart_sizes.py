"""Light charts: every chart of every page serializes to under 2 MB at the largest settings.

The size is that of the JSON spec Streamlit sends to the browser for each plotly chart
(``el.proto.spec``): float32 arrays go as base64, hover text comes from templates.
"""

import pytest

from attn_core.views import PAGES
from tests.conftest import no_exception

MAX_CHART_BYTES = 2_000_000
LONG = {"source": "synthetic", "seq_len": "8192", "n_heads": "64", "n_kv_heads": "8"}

CASES = [
    ("app_pages/heatmaps.py", {**LONG, "mask": "causal"}),
    ("app_pages/heatmaps.py", {**LONG, "view": "zoom", "head": "63", "pool": "mean"}),
    ("app_pages/heatmaps.py", {**LONG, "view": "zoom", "zoom_size": "512", "q_start": "7680", "k_start": "7680"}),
    ("app_pages/heatmaps.py", {**LONG, "view": "steps", "head_dim": "256", "n_heads": "16", "n_kv_heads": "16"}),
    ("app_pages/heatmaps.py", {**LONG, "view": "entropy", "n_heads": "64", "n_kv_heads": "1"}),
    ("app_pages/kv_cache.py", {"model": "deepseek-v3", "seq_len": "1048576", "batch": "256", "stack_weights": "true"}),
    (
        "app_pages/kv_cache.py",
        {
            "model": "custom",
            "n_heads": "128",
            "n_kv_heads": "128",
            "head_dim": "256",
            "n_layers": "128",
            "seq_len": "1048576",
            "y_scale": "linear",
        },
    ),
    ("app_pages/conv_attention.py", {"view": "image", "image_size": "64", "k": "7", "alpha": "0.05"}),  # 49 heads' maps
]
# and every registered page as it opens, so a new page is measured as soon as it exists
CASES += [(p.script, {}) for p in PAGES]


@pytest.mark.parametrize("page,query", CASES, ids=[f"{p.split('/')[1][:-3]}-{i}" for i, (p, _) in enumerate(CASES)])
def test_every_chart_is_under_2_mb_at_the_largest_settings(app_test, page, query):
    at = app_test(page, query=query)
    no_exception(at)
    assert not at.error, [e.value for e in at.error]
    sizes = [len(el.proto.spec) for el in at.get("plotly_chart")]
    assert sizes, "no chart drawn"
    assert max(sizes) < MAX_CHART_BYTES, sizes
