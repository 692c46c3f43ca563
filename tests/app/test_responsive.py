"""AppTest: what the pages send for a phone (ui.responsive): a head grid's one-head copy and its head picker,
charts of panels side by side in a box that scrolls on a phone, long titles written out for a phone."""

from __future__ import annotations

import json

import numpy as np

from tests.conftest import no_exception
from tests.util import arr, grid_panel


def charts(at) -> dict[str, dict]:
    return {c.proto.id.rsplit("-", 1)[-1]: json.loads(c.proto.spec) for c in at.get("plotly_chart")}


# Real User-Agent strings: (browser, whether it is a phone)
AGENTS = [
    (
        "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) "
        "Version/17.5 Mobile/15E148 Safari/604.1",
        True,
    ),
    (
        "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 "
        "Mobile Safari/537.36",
        True,
    ),
    ("Mozilla/5.0 (Android 14; Mobile; rv:132.0) Gecko/132.0 Firefox/132.0", True),
    # an iPad asks for desktop pages; an Android tablet says Android without Mobile: both have a wide screen
    (
        "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 "
        "Safari/605.1.15",
        False,
    ),
    (
        "Mozilla/5.0 (Linux; Android 14; SM-X910) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 "
        "Safari/537.36",
        False,
    ),
    (
        "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 "
        "Safari/537.36",
        False,
    ),
    (
        "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/131.0.0.0 Safari/537.36",
        False,
    ),
]


def test_only_a_phone_browser_is_told_apart_from_the_user_agent():
    from ui.responsive import is_phone

    assert [is_phone(agent) for agent, _ in AGENTS] == [phone for _, phone in AGENTS]


def test_the_stylesheet_uses_the_python_widths():
    """``ui/assets/responsive.css`` writes PHONE_MAX, PHONE_MAX + 1 and SCROLL_PX as numbers: they must agree with
    the Python constants (``phone_box`` sets a chart's own width only when it differs from SCROLL_PX)."""
    import re

    from ui.core import asset
    from ui.responsive import PHONE_MAX, SCROLL_PX

    css = re.sub(r"/\*.*?\*/", "", asset("responsive.css"), flags=re.S)  # the header comment names them too
    assert re.findall(r"@media \(max-width: (\d+)px\)", css) == [str(PHONE_MAX)]
    assert re.findall(r"@media \(min-width: (\d+)px\)", css) == [str(PHONE_MAX + 1)]
    assert re.findall(r"var\(--attn-chart-px, (\d+)px\)", css) == [str(SCROLL_PX)]


def test_the_grid_comes_with_one_head_of_it_and_a_head_picker(app_test):
    """AppTest sends no User-Agent: a browser we cannot tell gets both (the browser tests check a phone's and a
    desktop's)."""
    at = app_test(query={"n_heads": "8", "n_kv_heads": "2"})
    no_exception(at)
    shown = charts(at)
    assert list(shown) == ["grid", "grid__one"]  # the grid first (exports, tests), then the phone's head
    grid, one = shown["grid"], shown["grid__one"]
    picker = at.segmented_control(key="grid__head")
    assert picker.options == [str(h) for h in range(8)] and picker.value == 0
    np.testing.assert_array_equal(arr(one["data"][0]["z"]), grid_panel(grid, 0)[0])
    picker.set_value(5).run()
    no_exception(at)
    one = charts(at)["grid__one"]
    np.testing.assert_array_equal(arr(one["data"][0]["z"]), grid_panel(grid, 5)[0])
    assert one["layout"]["annotations"][0]["text"] == "<b>head 5</b> · KV 1"
    titles = [m.value for m in at.markdown if "attn-phone-head" in m.value]
    assert titles and "Attention weights: 8 query heads, 2 KV groups" in titles[0]  # written out, it wraps
