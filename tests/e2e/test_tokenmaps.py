"""Token-centred maps in a real browser (one page load, 1280×720): pick a query token and its row is
outlined in every head of the KV group with the line view under the grid; a click on a query of the line
view follows that token; a click on a head's panel opens that head in the zoom (Streamlit's selection
events through the grid's transparent click layer)."""

from __future__ import annotations

import pytest

from tests.e2e.test_pages import assert_clean

pytestmark = pytest.mark.e2e

# the page coordinates of a point of a plotly chart: panel ``axes`` ("" or "6"), category/row positions
POINT = """([sel, axes, x, y]) => {
    const gd = document.querySelector(sel + ' .js-plotly-plot');
    const xa = gd._fullLayout['xaxis' + axes], ya = gd._fullLayout['yaxis' + axes];
    const box = gd.getBoundingClientRect();
    const px = x === null ? xa._length / 2 : xa.c2p(x), py = y === null ? ya._length / 2 : ya.c2p(y);
    return [box.left + xa._offset + px, box.top + ya._offset + py];
}"""

# the page coordinates of a cell of head grid panel ``i`` (query and key labels; None: the panel's middle): the
# panels are one heatmap, each inside its frame, a token's cell the middle of its columns and rows of cells
GRID_POINT = """([sel, i, q, k]) => {
    const gd = document.querySelector(sel + ' .js-plotly-plot');
    const xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis, heat = gd.data[0];
    const f = gd.layout.shapes.filter(s => s.layer === 'above' && s.name !== 'focus')[i];
    const at = (names, lo, hi, label) => {
        const hits = names.map((s, j) => j).filter(j => j > lo && j < hi && names[j].replace(/\u200b/g, '') === label);
        return hits[Math.floor(hits.length / 2)];
    };
    const cx = k === null ? (f.x0 + f.x1) / 2 : at(heat.x, f.x0, f.x1, k);
    const cy = q === null ? (f.y0 + f.y1) / 2 : at(heat.y, f.y0, f.y1, q);
    const box = gd.getBoundingClientRect();
    return [box.left + xa._offset + xa.c2p(cx), box.top + ya._offset + ya.c2p(cy)];
}"""

HOVER = "() => Array.from(document.querySelectorAll('.hoverlayer .hovertext')).map(e => e.textContent).join(' | ')"

# the focus outlines of the grid, each as [its panel, its first query row]: the panel whose frame holds it
FOCUS = """() => {
    const gd = document.querySelector('.st-key-grid .js-plotly-plot');
    const shapes = gd.layout.shapes || [], frames = shapes.filter(s => s.layer === 'above' && s.name !== 'focus');
    return shapes.filter(s => s.name === 'focus').map(s => {
        const i = frames.findIndex(f => f.x0 === s.x0 && f.x1 === s.x1 && f.y0 <= s.y0 && s.y1 <= f.y1);
        const rows = (frames[i].y1 - frames[i].y0) / 11;  // cells a query row (11 tokens)
        return [i, (s.y0 - frames[i].y0) / rows, (s.y1 - s.y0) / rows];
    });
}"""


def pick(watch, key: str, option: str) -> None:
    """Choose ``option`` in the selectbox ``key`` as a user does: open it, click the option."""
    box = watch.page.locator(f".st-key-{key} [role='combobox']")
    box.click()
    box.fill(option)  # typing filters the list (a React Aria combobox) and opens it
    watch.page.get_by_role("option", name=option, exact=True).click()
    watch.wait_idle()


def test_follow_a_token_and_click_a_panel(watch):
    page = watch.page
    page.set_viewport_size({"width": 1280, "height": 720})
    watch.open("")
    assert page.evaluate(FOCUS) == []
    pick(watch, "focus_token", "sat (2)")
    pick(watch, "focus_group", "KV group 1 (heads 4–7)")
    # heads 4..7 (panels 4..7): the row of query 2 outlined (white band and black line) in each
    outlined = page.evaluate(FOCUS)
    assert sorted(o[0] for o in outlined) == [4, 4, 5, 5, 6, 6, 7, 7]
    assert all(o[1:] == [2, 1] for o in outlined)
    lines = page.locator(".st-key-focus_lines .js-plotly-plot")
    assert lines.count() == 1
    assert "Where “sat” (2) attends most in KV group 1" in page.inner_text("body")
    # the address and the share link carry the followed token, so a link opens the same lines
    assert "focus_token=2" in page.url and "focus_group=1" in page.url
    link = page.locator(".attn-link code").inner_text()
    assert "focus_token=2" in link and "focus_group=1" in link
    # hover: a grid cell names head, KV group, query, key and weight (the click layer's points carry it)
    page.locator(".st-key-grid").scroll_into_view_if_needed()
    page.mouse.move(*page.evaluate(GRID_POINT, [".st-key-grid", 5, "on (3)", "sat (2)"]))
    page.wait_for_function(f"() => ({HOVER})().length > 0")
    hover = page.evaluate(HOVER)
    assert all(s in hover for s in ("head 5", "KV 1", "query on (3)", "key sat (2)", "weight 0.", "click: open")), hover
    lines.scroll_into_view_if_needed()
    page.mouse.move(*page.evaluate(POINT, [".st-key-focus_lines", "2", 1, 4]))  # head 5's key "the (4)"
    page.wait_for_function(f"() => ({HOVER})().includes('the (4)')")
    hover = page.evaluate(HOVER)
    assert all(s in hover for s in ("head 5", "KV 1", "query sat (2)", "key the (4)", "weight 0.")), hover
    watch.shot("tokenmaps-follow-sat")
    # a click on query "cat (1)" in the line view's first panel follows that token
    lines.scroll_into_view_if_needed()
    x, y = page.evaluate(POINT, [".st-key-focus_lines", "", 0, 1])
    page.mouse.click(x, y)
    watch.wait_idle()
    assert all(o[1:] == [1, 1] for o in page.evaluate(FOCUS))
    assert "Where “cat” (1) attends most in KV group 1" in page.inner_text("body")
    # a click in the middle of head 5's panel opens head 5 in the zoom
    page.locator(".st-key-grid").scroll_into_view_if_needed()
    x, y = page.evaluate(GRID_POINT, [".st-key-grid", 5, None, None])
    page.mouse.click(x, y)
    watch.wait_idle()
    assert "view=zoom" in page.url and "head=5" in page.url
    assert "Head 5 · KV 1" in page.inner_text("body")
    assert_clean(watch)
    watch.shot("tokenmaps-zoom-head5")
