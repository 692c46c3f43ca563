"""Capture Streamlit's chart theme into ``assets/chart_theme.json`` (what :mod:`ui.chart_theme` writes into figures).

    .venv/bin/python tools/capture_chart_theme.py

Serves ``tools/chart_theme_app.py`` (one chart drawn with ``theme="streamlit"``), opens it in Debian's chromium in
the light and the dark colour scheme, and keeps the template plotly.js received: Streamlit's Python template with
its colour placeholders filled in and its theme merged in. Run it after upgrading Streamlit, then run
``tests/e2e/test_chart_theme.py`` (the written theme must draw as the template does).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from harness import CHROMIUM_ARGS, chromium_path, start_server  # noqa: E402

#: the layout keys the app's figures use (others, such as ternary axes, stay out)
LAYOUT_KEYS = (
    "font",
    "title",
    "legend",
    "paper_bgcolor",
    "plot_bgcolor",
    "xaxis",
    "yaxis",
    "coloraxis",
    "colorscale",
    "colorway",
    "margin",
    "hoverlabel",
)
#: axis containers whose mere presence turns a feature on in plotly (minor ticks, range selector): left out
AXIS_LEFT_OUT = ("minor", "rangeselector", "rangeslider")
TRACE_TYPES = ("heatmap", "scatter", "table", "contour")


def main() -> None:
    import streamlit
    from playwright.sync_api import sync_playwright

    proc, url = start_server(script="tools/chart_theme_app.py")
    out = {
        "_source": "Streamlit's chart theme (st.plotly_chart theme='streamlit') as plotly.js received it in chromium, "
        "light and dark colour scheme; captured by tools/capture_chart_theme.py. Only the layout keys the app's "
        "figures use are kept.",
        "streamlit": streamlit.__version__,
    }
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS, headless=True)
            for scheme in ("light", "dark"):
                ctx = browser.new_context(viewport={"width": 1280, "height": 900}, color_scheme=scheme)
                page = ctx.new_page()
                page.goto(url + "/")
                page.wait_for_selector(".st-key-themed .js-plotly-plot .main-svg", timeout=60_000)
                page.wait_for_timeout(500)
                tpl = page.evaluate(
                    "() => JSON.parse(JSON.stringify(document.querySelector('.st-key-themed .js-plotly-plot')"
                    ".layout.template))"
                )
                layout = {k: tpl["layout"][k] for k in LAYOUT_KEYS if k in tpl["layout"]}
                for axis in ("xaxis", "yaxis"):
                    layout[axis] = {k: v for k, v in layout[axis].items() if k not in AXIS_LEFT_OUT}
                data = {k: tpl["data"][k] for k in TRACE_TYPES if k in tpl["data"]}
                out[scheme] = {"layout": layout, "data": data}
                ctx.close()
            browser.close()
    finally:
        proc.terminate()
        proc.wait(10)
    path = ROOT / "assets" / "chart_theme.json"
    path.write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {path}: Streamlit {out['streamlit']}, light and dark")


if __name__ == "__main__":
    main()
