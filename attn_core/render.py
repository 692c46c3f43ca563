"""Server-side image export of plotly figures (PNG, SVG, PDF) through kaleido and the system Chromium.

One warm kaleido renderer per process is started on first use and reused, so an
export after the first takes well under a second. kaleido's sync server is a
process-wide singleton whose request/response queues are not safe for
concurrent callers, so every render holds one lock (a Streamlit server runs each
browser session in its own thread).
"""

from __future__ import annotations

import io
import os
import shutil
import threading
from pathlib import Path

import pandas as pd
import plotly.graph_objects as go
import plotly.io as pio

from attn_core.figures.base import Style
from attn_core.figures.slides import EXPORT_PRESETS, PRESET_NAMES, fit_figure
from attn_core.runtime.config import unknown_option

IMAGE_FORMATS = ("png", "svg", "pdf")
ALL_FORMATS = IMAGE_FORMATS + ("csv", "html")
MIME = {
    "png": "image/png",
    "svg": "image/svg+xml",
    "pdf": "application/pdf",
    "csv": "text/csv",
    "html": "text/html",
}
PNG_WIDTH = 1600  # CSS pixels; PNGs are rendered at scale 1.5, so 2400 px wide
PNG_SCALE = 1.5
_LOCK = threading.Lock()  # guards kaleido's process-wide sync server (no per-user state)


class RenderError(RuntimeError):
    """An image could not be rendered; the message says what to install or change."""


def find_chromium() -> str | None:
    """The system Chromium kaleido should drive: ``$BROWSER_PATH``, ``chromium`` on the PATH, or None."""
    for cand in (
        os.environ.get("BROWSER_PATH"),
        shutil.which("chromium"),
        shutil.which("chromium-browser"),
        "/usr/bin/chromium",
    ):
        if cand and Path(cand).exists():
            return cand
    return None


def chromium_missing_message() -> str:
    return (
        "Image export needs Chromium, which is not installed on this server. "
        "Install Debian's packages: apt-get install chromium fonts-noto-cjk (CSV and HTML export still work)."
    )


def _ensure_server() -> None:
    import kaleido

    if kaleido._global_server.is_running():  # noqa: SLF001 - kaleido exposes no public query
        return
    path = find_chromium()
    if path is None:
        raise RenderError(chromium_missing_message())
    os.environ.setdefault("BROWSER_PATH", path)
    kaleido.start_sync_server(silence_warnings=True)


def export_figure(fig: go.Figure, fmt: str) -> go.Figure:
    """A copy of ``fig`` laid out for a slide: white background, explicit size, no UI revision state."""
    out = go.Figure(fig)
    out.update_layout(template="plotly_white", paper_bgcolor="white")
    if out.layout.plot_bgcolor in (None, "rgba(0,0,0,0)"):
        out.update_layout(plot_bgcolor="white")
    return out


def render_image(
    fig: go.Figure, fmt: str, width: int = PNG_WIDTH, height: int | None = None, scale: float = PNG_SCALE
) -> bytes:
    """Render ``fig`` as ``png``, ``svg`` or ``pdf`` bytes with the shared warm renderer.

    PNGs are ``width * scale`` pixels wide (2400 by default). Raises :class:`RenderError`
    with an installation hint when no Chromium exists or the render fails.
    """
    if fmt not in IMAGE_FORMATS:
        raise ValueError(f"format must be one of {', '.join(IMAGE_FORMATS)}, got {fmt!r}")
    import kaleido

    fig = export_figure(fig, fmt)
    h = int(height or fig.layout.height or 700)
    opts = {"format": fmt, "width": int(width), "height": h, "scale": scale if fmt == "png" else 1}
    with _LOCK:
        _ensure_server()
        try:
            data = kaleido.calc_fig_sync(fig, opts=opts)
        except Exception as exc:  # noqa: BLE001 - kaleido raises many kinds; the message is what matters
            raise RenderError(f"rendering the {fmt.upper()} failed: {exc}") from exc
    if isinstance(data, Exception):
        raise RenderError(f"rendering the {fmt.upper()} failed: {data}")
    return bytes(data)


def figure_html(fig: go.Figure) -> bytes:
    """A self-contained interactive HTML file (plotly.js embedded, works offline)."""
    return pio.to_html(fig, include_plotlyjs=True, full_html=True, config={"displaylogo": False}).encode("utf-8")


def data_csv(df: pd.DataFrame) -> bytes:
    """CSV bytes (UTF-8 with BOM, so spreadsheet programs read CJK token labels correctly)."""
    buf = io.StringIO()
    df.to_csv(buf, index=False)
    return ("\ufeff" + buf.getvalue()).encode("utf-8")


def still(fig: go.Figure) -> go.Figure:
    """An animated figure as an image shows it: its first state, without its frames, play buttons and slider
    (a picture cannot play them; copying 64 frames through plotly's validation cost seconds). Others as they are."""
    if not fig.frames:
        return fig
    layout = fig.layout.to_plotly_json()
    layout.pop("sliders", None)
    layout.pop("updatemenus", None)
    return go.Figure({"data": [t.to_plotly_json() for t in fig.data], "layout": layout}, _validate=False)


def export_bytes(
    fig: go.Figure, fmt: str, data: object = None, preset: str = "screen", style: Style | None = None
) -> bytes:
    """The bytes of one export format of a chart (``data``, a DataFrame or a function returning one, for ``csv``).

    Images are laid out for ``preset`` (:data:`~attn_core.figures.slides.EXPORT_PRESETS`: ``screen`` as drawn,
    ``slide`` 1920 × 1080, ``half`` 960 × 1080, ``paper`` a vector column), ``style`` the chart's language.
    """
    if fmt in IMAGE_FORMATS:
        if preset not in EXPORT_PRESETS:
            raise unknown_option("preset", preset, PRESET_NAMES)
        p = EXPORT_PRESETS[preset]
        fitted = fit_figure(still(fig), p, style or Style())
        return render_image(fitted, fmt, p.width, p.height or fitted.layout.height, p.scale)
    if fmt == "html":
        return figure_html(fig)
    if fmt == "csv":
        if data is None:
            raise ValueError("CSV export needs the chart's data")
        return data_csv(data() if callable(data) else data)
    raise ValueError(f"format must be one of {', '.join(ALL_FORMATS)}, got {fmt!r}")
