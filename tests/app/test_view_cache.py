"""Charts built once per server: the same view state for the next session costs no figure building.

``ui.view`` caches a view model's figure builder, serialised with the session's fonts;
``ui.SerialisedFigure`` hands that spec to ``st.plotly_chart`` as it is. What reaches the
browser must be the JSON the uncached figure gives, and the same bytes on every run.
"""

from __future__ import annotations

import copy
import importlib
import json

import plotly.io as pio
import plotly.tools as ptools

import ui
from attn_core import figures
from attn_core.views import heatmaps as hm
from tests.conftest import no_exception
from tests.util import chart_specs, decoded


def _wire(fig) -> str:
    """What Streamlit's ``st.plotly_chart`` puts in its message for ``fig``."""
    return pio.to_json(ptools.return_figure_from_figure_or_data(fig, True), validate=False)


def _no_nulls(obj):
    if isinstance(obj, dict):
        return {k: _no_nulls(v) for k, v in obj.items() if v is not None}
    if isinstance(obj, list):
        return [_no_nulls(v) for v in obj]
    return obj


def test_serialised_figure_sends_the_same_json_as_the_figure():
    p = hm.Params(n_heads=4, n_kv_heads=2)
    pm = hm.grid_maps(p.layer(), p.pool, device="cpu")
    for style in (figures.Style(), figures.Style(present=True, lang="zh")):
        fresh = hm.grid_view(pm, style, p.fit)
        drawn = ui.drawn(hm.grid_view(pm, style, p.fit), style)
        before = copy.deepcopy(drawn.spec)
        expected = json.loads(_wire(figures.apply_fonts(fresh.figure, style)))
        wire = _wire(ui.SerialisedFigure(drawn.spec))
        assert decoded(json.loads(wire)) == decoded(expected)  # the same JSON, arrays as lists (a small chart)
        # the shared spec is not consumed, and every run sends the same bytes (Streamlit's element id hashes them)
        assert _wire(ui.SerialisedFigure(drawn.spec)) == wire
        assert drawn.spec == before
        # the export path rebuilds a real figure with the same content (plotly drops properties set to None)
        assert decoded(json.loads(pio.to_json(ui.SerialisedFigure(drawn.spec).figure()))) == decoded(
            _no_nulls(expected)
        )


def test_second_session_reuses_the_chart_and_another_language_builds_its_own(app_test, monkeypatch):
    calls = []
    original = hm.grid_view

    def counting(*args, **kwargs):
        calls.append(args[1])  # the style
        return original(*args, **kwargs)

    monkeypatch.setattr(hm, "grid_view", counting)
    query = {"seed": "7301", "n_heads": "4", "n_kv_heads": "2"}
    first = app_test(page="app_pages/heatmaps.py", query=query)
    no_exception(first)
    built = len(calls)
    assert built == 1
    second = app_test(page="app_pages/heatmaps.py", query=query)
    no_exception(second)
    assert len(calls) == built, "the same view state was built again for another session"
    assert chart_specs(second) == chart_specs(first)
    third = app_test(page="app_pages/heatmaps.py", query={**query, "lang": "zh"})
    no_exception(third)
    assert len(calls) == built + 1 and calls[-1].lang == "zh"
    assert chart_specs(third) != chart_specs(first)


def test_the_view_store_drops_the_least_recently_used_charts_by_size():
    compute = importlib.import_module("ui.compute")
    store = compute.ViewStore(limit=100)
    for key in "abcd":
        store.put(key, key.upper(), 30)  # 120 bytes asked: "a" goes
    assert store.get("a") is None and len(store) == 3 and store.used == 90
    assert store.get("b") == "B"  # "b" used: "c" is now the oldest
    store.put("e", "E", 40)
    assert store.get("c") is None and [store.get(k) for k in "bde"] == ["B", "D", "E"] and store.used == 100
    store.put("b", "other", 10)  # the first one stored stays
    assert store.get("b") == "B" and store.used == 100
    store.put("huge", "H", 101)  # larger than the whole store: not kept, nothing dropped
    assert store.get("huge") is None and len(store) == 3


def test_a_chart_is_counted_by_its_json_and_its_numbers():
    compute = importlib.import_module("ui.compute")
    p = hm.Params(n_heads=4, n_kv_heads=2)
    built = ui.drawn(
        hm.grid_view(hm.grid_maps(p.layer(), p.pool, device="cpu"), figures.Style(), p.fit), figures.Style()
    )
    size = compute.view_bytes(built)
    spec_bytes = len(json.dumps(built.spec, separators=(",", ":"), ensure_ascii=False).encode())
    source = built.source  # a DataFrame, or a function that makes one when it is exported (nothing held yet)
    held = int(source.memory_usage(index=True).sum()) if hasattr(source, "memory_usage") else 0
    assert 3 * spec_bytes * 0.9 < size - held < 3 * spec_bytes * 1.1
    assert compute.view_bytes([built, built]) == 2 * size


def test_a_themed_spec_reaches_streamlit_only_as_a_serialised_figure():
    """The spec with Streamlit's chart theme written in holds colours plotly.js draws and plotly.py's validator
    refuses (the colour bar's outline): handed to ``st.plotly_chart`` as a dict it raises, so a phone's one-head
    copy (a keyed chart that is not a live chart) goes out as a ``SerialisedFigure``, its JSON as it is."""
    import pytest

    from ui.chart_theme import browser_spec

    p = hm.Params(n_heads=4, n_kv_heads=2)
    pm = hm.grid_maps(p.layer(), p.pool, device="cpu")
    style = figures.Style()
    spec = ui.drawn(hm.grid_view(pm, style, p.fit), style).spec
    for dark in (False, True):
        themed = browser_spec(spec, dark)
        with pytest.raises(Exception, match="outlinecolor"):
            _wire(themed)
        assert decoded(json.loads(_wire(ui.SerialisedFigure(themed)))) == decoded(json.loads(json.dumps(themed)))
