"""ui.plotly_live in chromium: a chart stays on the page between runs and plotly updates it in place.

What a person sees is the same chart with the new numbers; what the browser does is redraw only what
changed (the point of the component): the same plotly element, its axes kept, a few DOM nodes added.
"""

from __future__ import annotations

import itertools

import pytest

pytestmark = pytest.mark.e2e

#: count the DOM nodes added under each chart from now on, and tag each chart's plotly element
OBSERVE = """() => { window.__adds = {};
  for (const gd of document.querySelectorAll('.js-plotly-plot')) {
    const box = gd.closest('[data-testid="stElementContainer"]');
    const key = [...box.classList].find(c => c.startsWith('st-key-')).slice(7);
    gd.__tag = key; window.__adds[key] = 0;
    new MutationObserver(ms => { for (const m of ms) window.__adds[key] += m.addedNodes.length; })
      .observe(gd, {childList: true, subtree: true});
  } }"""

CHART = """(key) => { const gd = document.querySelector('.st-key-' + key + ' .js-plotly-plot');
  return {tag: gd.__tag || null, title: gd._fullLayout.title.text, width: gd._fullLayout.width,
          box: gd.closest('.stPlotlyChart').getBoundingClientRect().width,
          annotations: (gd.layout.annotations || []).map(a => a.text), ticks: gd.querySelectorAll('.xtick').length,
          buttons: [...gd.querySelectorAll('.modebar-btn')].map(b => b.getAttribute('data-title'))}; }"""


#: what plotly drew (its calcdata) against what it was given: a stale draw keeps the old numbers
DRAWN = """(key) => { const gd = document.querySelector('.st-key-' + key + ' .js-plotly-plot');
  return {given: gd.data[0].z, drawn: gd.calcdata[0][0].z}; }"""


def test_a_slider_move_updates_each_chart_in_place(watch):
    watch.open("saturation")
    watch.open_sections("3", "4", "5", "6")  # the sections against d_k, sent while open
    watch.page.evaluate(OBSERVE)
    before = {k: watch.page.evaluate(CHART, k) for k in ("sat_maps", "sat_grads", "sat_row")}
    old = watch.page.evaluate(DRAWN, "sat_maps")
    watch.press_slider("temperature")  # τ 1 -> 1.1
    for key, was in before.items():
        now = watch.page.evaluate(CHART, key)
        assert now["tag"] == key, f"{key}: a new plotly element replaced the chart"
        assert now["ticks"] == was["ticks"] > 0
        assert now["width"] == was["width"] == pytest.approx(now["box"], abs=1)
    maps = watch.page.evaluate(CHART, "sat_maps")
    assert "τ = 1.1" in maps["annotations"][0] and maps["annotations"] != before["sat_maps"]["annotations"]
    assert "τ = 1.1" in watch.page.evaluate(CHART, "sat_grads")["title"]
    # the new weights are the ones drawn (plotly compares arrays only for a new datarevision)
    new = watch.page.evaluate(DRAWN, "sat_maps")
    assert new["drawn"] == new["given"] and new["drawn"] != old["drawn"]
    assert watch.page.evaluate("() => window.__adds")["sat_dist"] == 0  # τ leaves the histograms: not redrawn
    assert watch.page.get_by_test_id("stPlotlyChart").count() == 6
    assert not watch.exceptions() and not watch.real_console_errors() and not watch.page_errors


def test_a_live_chart_follows_its_column_and_keeps_the_toolbar(watch):
    watch.open("saturation")
    watch.open_sections("3")  # sent while open
    chart = watch.page.evaluate(CHART, "sat_curves")
    assert "Full screen" in chart["buttons"] and "Download plot" in chart["buttons"], chart["buttons"]
    watch.page.set_viewport_size({"width": 900, "height": 1000})
    watch.page.wait_for_timeout(800)
    narrow = watch.page.evaluate(CHART, "sat_curves")
    assert narrow["width"] < chart["width"] and narrow["width"] == pytest.approx(narrow["box"], abs=1)
    assert not watch.page_errors


def test_a_chart_hidden_when_its_figure_comes_is_drawn_when_it_shows_at_its_width(watch):
    """A chart whose box is not laid out (0 px across, a hidden part of the page) waits for it: drawn at the least
    size, plotly's automargin (long tick labels) left a plot of negative height and it threw ("Something went wrong
    with axis scaling", once in the audit under load)."""
    watch.open("saturation")
    watch.open_sections("3")  # sent while open
    hide = "(on) => { document.querySelector('.st-key-sat_maps').style.display = on ? 'none' : ''; }"
    title = "() => document.querySelector('.st-key-sat_maps .js-plotly-plot')._fullLayout.annotations[0].text"
    before = watch.page.evaluate(title)
    watch.page.evaluate(hide, True)
    watch.press_slider("temperature")  # τ 1 -> 1.1
    assert watch.page.evaluate(title) == before  # not drawn while hidden
    watch.page.evaluate(hide, False)
    watch.page.wait_for_function(f"() => ({title})().includes('τ = 1.1')")
    watch.wait_idle()
    chart = watch.page.evaluate(CHART, "sat_maps")
    assert chart["width"] == pytest.approx(chart["box"], abs=1) and chart["box"] > 300
    assert not watch.real_console_errors() and not watch.page_errors


def test_the_full_screen_button_fills_the_screen_and_gives_the_chart_back(watch):
    page = watch.page
    page.set_viewport_size({"width": 1280, "height": 720})
    watch.open("saturation")
    watch.open_sections("3")  # sent while open
    chart = page.locator(".st-key-sat_curves .js-plotly-plot")
    chart.scroll_into_view_if_needed()
    size = "() => { const f = document.querySelector('.st-key-sat_curves .js-plotly-plot')._fullLayout; return [f.width, f.height]; }"
    before = page.evaluate(size)
    button = page.locator(".st-key-sat_curves .modebar-btn[data-title='Full screen']")
    chart.hover()
    button.click()
    page.wait_for_function("() => document.fullscreenElement && document.fullscreenElement.matches('.stPlotlyChart')")
    page.wait_for_function(f"() => ({size})()[0] === 1280 && ({size})()[1] === 720")
    bg = page.evaluate("() => getComputedStyle(document.fullscreenElement).backgroundColor")
    assert bg == "rgb(255, 255, 255)"  # the app's background around the chart, not the browser's black
    chart.hover()
    button.click()
    page.wait_for_function("() => !document.fullscreenElement")
    page.wait_for_function(f"() => ({size})()[0] === {before[0]} && ({size})()[1] === {before[1]}")
    assert not watch.page_errors


def test_a_zoom_lasts_until_the_next_figure(watch):
    """A new figure starts from its own view, as a newly drawn chart did (plotly's own computed ranges are carried
    into the next figure, a range the user zoomed to is not)."""
    watch.open("saturation")
    watch.open_sections("3")  # sent while open
    view = """() => { const f = document.querySelector('.st-key-sat_curves .js-plotly-plot')._fullLayout;
      return [f.xaxis2.range, f.yaxis2.range]; }"""
    start = watch.page.evaluate(view)
    watch.page.evaluate(
        "() => Plotly.relayout(document.querySelector('.st-key-sat_curves .js-plotly-plot'),"
        " {'xaxis2.range': [0.5, 1.5], 'yaxis2.range': [0.2, 0.6]})"
    )
    assert watch.page.evaluate(view) == [[0.5, 1.5], [0.2, 0.6]]
    watch.press_slider("temperature")
    after = watch.page.evaluate(view)
    assert [x for r in after for x in r] == pytest.approx([x for r in start for x in r])


#: count animation frames, and note the frame of every live chart's draw from now on
FRAMES = """() => { window.__frame = 0; window.__draws = [];
  const tick = () => { window.__frame++; requestAnimationFrame(tick); }; requestAnimationFrame(tick);
  for (const gd of document.querySelectorAll('.stPlotlyChart .js-plotly-plot')) {
    const key = [...gd.closest('[data-testid="stElementContainer"]').classList].find(c => c.startsWith('st-key-'));
    gd.on('plotly_afterplot', () => window.__draws.push([key.slice(7), window.__frame]));
  } }"""


def test_charts_of_one_run_are_drawn_one_by_one_with_frames_between(watch):
    """A τ move changes five charts, each drawn in its own turn; once the draws since the last frame took over
    30 ms the browser presents a frame (two, as the benchmark's paint check needs) before the next draw starts,
    so the first chart shows while the others wait, instead of all of them after the last one is drawn."""
    watch.open("saturation")
    watch.open_sections("3", "4", "5", "6")  # the sections against d_k, sent while open
    watch.page.evaluate(FRAMES)
    watch.press_slider("temperature")
    draws = watch.page.evaluate("() => window.__draws")
    keys = [k for k, _ in draws]
    assert {"sat_maps", "sat_curves", "sat_grads", "sat_row", "sat_fp16"} <= set(keys), draws
    assert keys.index("sat_maps") < keys.index("sat_grads")  # in the page's order as the run sends them
    groups = sorted({f for _, f in draws})  # the frames the draws finished in
    assert len(groups) >= 3, draws  # not all five in one go
    # between two groups the browser presented two frames (the second tells that the first was shown)
    assert all(b - a >= 2 for a, b in itertools.pairwise(groups)), draws
    assert not watch.page.evaluate("() => document.documentElement.dataset.attnDrawing")


def test_charts_waiting_together_are_drawn_on_screen_first_and_not_all_in_one_go(watch):
    """A narrower window asks every chart for a new width at once: the charts in view are drawn first, and the
    browser presents frames between the draws (with one queue per chart they were all drawn in one task)."""
    page = watch.page
    watch.open("saturation")
    watch.open_sections("3", "4", "5", "6")  # the sections against d_k, sent while open
    page.locator(".st-key-sat_grads").scroll_into_view_if_needed()
    page.wait_for_timeout(500)
    in_view = page.evaluate(
        """() => [...document.querySelectorAll('.stPlotlyChart')].filter(b => {
             const r = b.getBoundingClientRect(); return r.bottom > 0 && r.top < innerHeight; })
           .map(b => [...b.closest('[data-testid="stElementContainer"]').classList]
                     .find(c => c.startsWith('st-key-')).slice(7))"""
    )
    page.evaluate(FRAMES)
    page.set_viewport_size({"width": 1100, "height": 1000})
    page.wait_for_timeout(300)
    page.wait_for_function("() => !document.documentElement.dataset.attnDrawing")
    draws = page.evaluate("() => window.__draws")
    keys = [k for k, _ in draws]
    assert len(set(keys)) == 6, draws  # every chart took its new width
    assert "sat_grads" in in_view and set(keys[: len(in_view)]) == set(in_view), (in_view, draws)
    assert len({f for _, f in draws}) >= 3, draws
