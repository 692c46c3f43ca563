"""Streamlit's chart theme written into each figure (ui.chart_theme) draws as the same theme given to plotly.js as a
template does: for every chart of every page at its defaults (the models page aside: its views need a loaded model),
in light and dark, plotly.js's full layout and full traces of the two agree.

Drawn in chromium with the plotly.js that plotly.py ships (the app serves it for exports), in a blank page.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import plotly
import pytest

from attn_core import figures
from attn_core.figures.margins import PINNED
from attn_core.views import PAGES
from ui import chart_theme as ct

pytestmark = pytest.mark.e2e

PLOTLY_JS = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"

#: plotly.js's full layout and traces after drawing (private keys, functions and long arrays left out)
FULL = """async (fig) => {
  const g = document.getElementById('g'); Plotly.purge(g);
  await Plotly.newPlot(g, fig.data, fig.layout, {displaylogo: false});
  const strip = (o, d) => {
    if (d > 5 || o === null || typeof o !== 'object') return o;
    if (Array.isArray(o)) return o.length > 32 ? 'array of ' + o.length : o.map(x => strip(x, d + 1));
    const r = {};
    for (const [k, v] of Object.entries(o)) {
      if (k[0] === '_' || typeof v === 'function' || ['uid', 'index', 'template', 'meta', 'datarevision'].includes(k)) continue;
      r[k] = strip(v, d + 1);
    }
    return r;
  };
  return {layout: strip(g._fullLayout, 0), data: g._fullData.map(t => strip(t, 0)), size: g._fullLayout._size};
}"""


Y_LABELS = re.compile(r"\.layout\.yaxis\d*\.ticklabeloverflow: ")


def differences(a, b, path: str = "") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        return [d for k in sorted(set(a) | set(b)) for d in differences(a.get(k), b.get(k), f"{path}.{k}")]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b, strict=True)) for d in differences(x, y, f"{path}[{i}]")]
    if isinstance(a, float) and isinstance(b, float) and abs(a - b) <= 1e-6 * max(1.0, abs(a)):
        return []  # an autorange computed twice
    return [] if a == b or (a != a and b != b) else [f"{path}: template {a!r:.60} / written in {b!r:.60}"]


@pytest.fixture(scope="module")
def page_specs() -> list[tuple[str, dict]]:
    """Every page's charts at its defaults, built once for both schemes (the lab's from 20 training steps of one seed:
    the same charts, without its experiment's hundreds of steps)."""
    style = figures.Style()
    out = []
    for spec in PAGES:
        if spec.name == "models":
            continue
        p = spec.params(lab_steps=20, lab_seeds=1) if spec.name == "lab" else spec.params()
        for view in spec.module.views(p, style):
            out.append((f"{spec.name}:{view.name}", figures.figure_spec(figures.apply_fonts(view.figure, style))))
    return out


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_written_theme_draws_as_the_template(browser, page_specs, scheme):
    theme = ct.themes()[scheme]
    page = browser.new_page(viewport={"width": 1440, "height": 1000})
    page.set_content('<html><body style="margin:0"><div id="g" style="width:980px"></div></body></html>')
    page.add_script_tag(path=str(PLOTLY_JS))
    found, pinned, overflow = {}, 0, []
    specs = page_specs
    assert len(specs) >= 20
    for name, spec in specs:
        # dark: near-black lines in the theme's text colour, greys and notes drawn for white mirrored (ct.inked,
        # ct.darkened), both ways
        dark = scheme == "dark"
        adapted = {**spec, "data": ct.inked(spec["data"], theme), "layout": ct.darkened(spec["layout"], theme)}
        templated = json.loads(json.dumps(adapted if dark else spec))
        templated["layout"]["template"] = theme
        if templated["layout"].get("title") is not None:
            title = templated["layout"]["title"]
            templated["layout"]["title"] = {**title, "text": f"<b>{title.get('text') or ''}</b>"}
        meta = spec["layout"].get("meta") or {}  # the theme written in, before any axes are pinned
        plain = {**spec, "layout": {**spec["layout"], "meta": {k: v for k, v in meta.items() if k != PINNED}}}
        a, b = page.evaluate(FULL, templated), page.evaluate(FULL, ct.browser_spec(plain, dark=dark))
        # y axes draw every label (ct.Y_OVERFLOW: no measuring); checked against the template's own value below
        found[name] = [d for d in differences(a, b) if not Y_LABELS.match(d)][:5]
        overflow += [d for d in differences(a, b) if Y_LABELS.match(d) and not d.endswith(f"{ct.Y_OVERFLOW!r}")]
        pinned += bool(meta.get(PINNED))
    page.close()
    assert not any(found.values()), {k: v for k, v in found.items() if v}
    assert overflow == []  # the only difference on y axes is plotly's default giving way to "allow"
    assert pinned >= 1  # the pinned axes (the grid's) compared as they are themed; pinning: test_pinned_axes.py
