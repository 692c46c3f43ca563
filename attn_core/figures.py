"""Plotly figure builders shared by the pages, the exporter and the tests.

Every builder takes CPU numpy arrays and plain values and returns a
``plotly.graph_objects.Figure``. Weights use one fixed 0..1 sequential,
colour-blind-safe scale; signed scores use a diverging scale centred at 0.
Masked cells are NaN (transparent) over a grey hatch-free background layer, so
"masked" and "weight 0" never look alike.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import plotly.colors as pc
import plotly.graph_objects as go

from .i18n import count, translate

WEIGHT_SCALE = "Viridis"
# Inferno (black to pale yellow: the widest luminance range, readable on a projector) with its first stop
# moved from #000004 to #000000: Streamlit's chart theme uses #000001-#000020 as stand-in colours and repaints
# them with theme colours in the browser, which turned weight 0 pink.
WEIGHT_SCALE_CONTRAST = ["#000000", *pc.sequential.Inferno[1:]]
DIVERGING_SCALE = "RdBu_r"
MASK_GREY = "#b8b8b8"
# Okabe-Ito, colour-blind safe; one hue per KV group.
GROUP_COLORS = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#D55E00", "#56B4E9", "#F0E442", "#000000")
MAX_HOVER_CELLS = 60_000


@dataclass(frozen=True)
class Style:
    """Font sizes and scales: normal, or large and high-contrast for a projector."""

    present: bool = False
    lang: str = "en"

    @property
    def font(self) -> int:
        return 20 if self.present else 13

    @property
    def title_font(self) -> int:
        return 26 if self.present else 16

    @property
    def weight_scale(self) -> str:
        return WEIGHT_SCALE_CONTRAST if self.present else WEIGHT_SCALE

    def t(self, key: str, /, **kw: object) -> str:
        return translate(key, self.lang, **kw)

    def count(self, n: int, unit: str) -> str:
        """``n`` with its unit, singular or plural (:func:`attn_core.i18n.count`)."""
        return count(n, unit, self.lang)


FONTS_SET = "fonts_set"  # layout.meta key of a figure whose builder already set every font


def apply_fonts(fig: go.Figure, style: Style) -> go.Figure:
    """Set every axis, legend and colour-bar font explicitly (in place; returns ``fig``).

    Streamlit's chart theme replaces plotly's inherited font sizes with its own
    small ones, so the sizes of :class:`Style` (20 px and more in presentation
    mode) must be set on each axis to reach the screen, the export and the CLI.
    A figure whose ``layout.meta`` says its builder set them for this size is
    left as it is.
    """
    size, title = style.font, style.font + 2
    meta = fig.layout.meta
    if isinstance(meta, dict) and meta.get(FONTS_SET) == size:
        return fig
    axes = [k for k in fig.layout.to_plotly_json() if k.startswith(("xaxis", "yaxis"))] or ["xaxis", "yaxis"]
    fig.update_layout(
        {name: dict(tickfont=dict(size=size), title=dict(font=dict(size=title))) for name in axes},
        legend=dict(font=dict(size=size)),
        hoverlabel=dict(font=dict(size=max(12, size - 2))),
    )
    fig.update_coloraxes(colorbar=dict(tickfont=dict(size=size), title=dict(font=dict(size=size))))
    for trace in fig.data:
        if getattr(trace, "colorbar", None) is not None and getattr(trace, "showscale", None) is not False:
            trace.colorbar.update(tickfont=dict(size=size))
    return fig


def group_color(group: int) -> str:
    """The hue of KV group ``group``."""
    return GROUP_COLORS[group % len(GROUP_COLORS)]


def pool_max(x: np.ndarray, max_cells: int) -> tuple[np.ndarray, int]:
    """Block-max pool the last two dims so neither exceeds ``max_cells``.

    ``[..., R, C] -> [..., ceil(R/f), ceil(C/f)]`` with one factor ``f`` for both
    dims; NaN (masked) cells are ignored unless a whole block is NaN.
    """
    r, c = x.shape[-2:]
    f = int(np.ceil(max(r, c) / max_cells)) if max(r, c) > max_cells else 1
    if f == 1:
        return x, 1
    rp, cp = -(-r // f) * f, -(-c // f) * f
    pad = [(0, 0)] * (x.ndim - 2) + [(0, rp - r), (0, cp - c)]
    xp = np.pad(x.astype(np.float32), pad, constant_values=np.nan)
    xp = xp.reshape(*x.shape[:-2], rp // f, f, cp // f, f)
    with np.errstate(all="ignore"):
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            out = np.nanmax(xp, axis=(-3, -1))
    return out.astype(np.float32), f


def grid_columns(n_heads: int, n_kv_heads: int) -> int:
    """How many head panels per row so that each KV group stays together."""
    n_rep = n_heads // n_kv_heads
    target = min(n_heads, 4 if n_heads <= 16 else 8)
    if n_rep >= target:
        return target
    return n_rep * max(1, target // n_rep)


GRID_MAX_CELLS = 196_608  # float32 cells in one grid figure (~1 MB of base64): every chart stays under 2 MB
GRID_MAX_SIDE = 256  # cells per side of one pooled head


def grid_side(n_panels: int, max_cells: int = GRID_MAX_CELLS, max_side: int = GRID_MAX_SIDE) -> int:
    """Cells per side of each of ``n_panels`` pooled panels so the whole grid holds at most ``max_cells``."""
    return max(8, min(max_side, int(np.sqrt(max_cells / max(1, n_panels)))))


def block_labels(tokens: list[str] | tuple[str, ...], start: int, stop: int, factor: int) -> list[str]:
    """Axis labels of the cells covering positions ``start .. stop-1``: ``"cat (1)"``, or ``"0–31"`` for blocks."""
    if factor == 1:
        return [f"{tokens[i]} ({i})" for i in range(start, stop)]
    return [f"{a}–{min(a + factor, stop) - 1}" for a in range(start, stop, factor)]


def heatmap_grid(
    weights: np.ndarray,
    heads: list[int] | tuple[int, ...],
    n_heads: int,
    n_kv_heads: int,
    labels_q: list[str],
    labels_k: list[str],
    style: Style = Style(),
    *,
    title: str | None = None,
    value_label: str | None = None,
    panel_px: int | None = None,
    cmax: float = 1.0,
) -> go.Figure:
    """Small multiples of attention weights, one panel per head, framed in its KV group's colour.

    weights ``[Hs, R, C]`` in [0, 1] (NaN = masked, drawn grey by a rectangle
    under the panel); ``heads`` the head index of each panel; ``labels_q`` (R)
    and ``labels_k`` (C) unique labels of the rows and columns. Each panel is a
    float32 heatmap on its own axes (zoom and pan move all panels together);
    hover shows the head, its KV group, the query, the key and the value, from a
    hover template, not per-cell text. All panels share one colour scale from
    0 to ``cmax`` (1 unless the caller fits it to the data).
    """
    hs, r, c = weights.shape
    n_rep = n_heads // n_kv_heads
    ncols = grid_columns(n_heads, n_kv_heads) if hs == n_heads else min(hs, 4)
    nrows = -(-hs // ncols)
    value_label = value_label or style.t("fig.weight")
    head_word = style.t("fig.head")
    q_word, k_word = style.t("fig.query"), style.t("fig.key")
    if panel_px is None:  # square cells at a typical plot width of ~860 px (wide layout beside the sidebar)
        panel_px = int(max(80, min(420, (760 - 20 * (ncols - 1)) / ncols * r / max(c, 1))))
    title_px = 30 if style.present else 24
    plot_h = nrows * panel_px + (nrows - 1) * title_px
    xgap = 0.025 if ncols > 1 else 0.0
    width = (1.0 - xgap * (ncols - 1)) / ncols
    longest = max((len(s) for s in labels_k), default=4)
    label_room = int(min(160, 30 + 6.5 * longest)) if style.font < 20 else int(min(200, 40 + 10 * longest))

    def panel_title(head: int, group: int) -> str:  # eight panels a row leave no room for the word "head"
        return f"<b>{head_word} {head}</b> · KV {group}" if ncols < 8 else f"<b>{head}</b> · KV {group}"

    tick_font, axis_font = dict(size=style.font), dict(size=style.font + 2)
    z = np.ascontiguousarray(weights, dtype=np.float32)
    allowed_all = not np.isnan(z).any()
    data, layout = [], {}
    shapes, annotations = [], []
    for i, head in enumerate(heads):
        row, col = divmod(i, ncols)
        n = "" if i == 0 else str(i + 1)
        group = head // n_rep
        color = group_color(group)
        x0 = col * (width + xgap)
        top = 1.0 - row * (panel_px + title_px) / plot_h
        data.append(
            dict(
                type="heatmap",
                z=z[i],
                x=labels_k,
                y=labels_q,
                xaxis=f"x{n}",
                yaxis=f"y{n}",
                coloraxis="coloraxis",
                hoverongaps=False,
                hovertemplate=(
                    f"<b>{head_word} {head}</b> · KV {group}<br>{q_word} %{{y}}<br>{k_word} %{{x}}"
                    f"<br>{value_label} %{{z:.4f}}<extra></extra>"
                ),
                name=f"{head_word} {head}",
            )
        )
        layout[f"xaxis{n}"] = dict(
            domain=[x0, min(1.0, x0 + width)],
            anchor=f"y{n}",
            type="category",
            matches=None if i == 0 else "x",
            range=[-0.5, c - 0.5] if i == 0 else None,  # category i sits at i: the cells fill the panel
            showticklabels=row == nrows - 1 or i + ncols >= hs,
            tickangle=-60,
            showgrid=False,
            zeroline=False,
            tickfont=tick_font,
            title=dict(text=k_word if row == nrows - 1 and col == 0 else "", font=axis_font),
        )
        layout[f"yaxis{n}"] = dict(
            domain=[max(0.0, top - panel_px / plot_h), top],
            anchor=f"x{n}",
            type="category",
            matches=None if i == 0 else "y",
            range=[r - 0.5, -0.5] if i == 0 else None,  # first query row at the top
            showticklabels=col == 0,
            showgrid=False,
            zeroline=False,
            tickfont=tick_font,
            title=dict(text=q_word if col == 0 and row == 0 else "", font=axis_font),
        )
        panel = dict(type="rect", xref=f"x{n} domain", yref=f"y{n} domain", x0=0, x1=1, y0=0, y1=1)
        if not allowed_all:  # grey under the panel shows through the masked (NaN) cells
            shapes.append(dict(panel, fillcolor=MASK_GREY, line=dict(width=0), layer="below"))
        shapes.append(dict(panel, line=dict(color=color, width=4 if style.present else 3), layer="above"))
        annotations.append(
            dict(x=0.5, y=1.0, xref=f"x{n} domain", yref=f"y{n} domain", yanchor="bottom", showarrow=False,
                 text=panel_title(head, group), font=dict(color=color, size=style.font if ncols < 8 else style.font - 1))
        )  # fmt: skip
    top_margin = (100 if style.present else 80) + title_px + 16 * (title or "").count("<br>")
    layout.update(
        title=dict(
            text=title
            or style.t(
                "fig.grid_title", heads=style.count(hs, "query_head"), groups=style.count(n_kv_heads, "kv_group")
            ),
            font=dict(size=style.title_font),
        ),
        font=dict(size=style.font),
        coloraxis=dict(
            colorscale=style.weight_scale,
            cmin=0.0,
            cmax=cmax,
            colorbar=dict(title=dict(text=value_label, font=tick_font), tickfont=tick_font),
        ),
        shapes=shapes,
        annotations=annotations,
        height=int(top_margin + plot_h + label_room),
        margin=dict(l=10, r=10, t=top_margin, b=label_room),
        plot_bgcolor="rgba(0,0,0,0)",
        hoverlabel=dict(font=dict(size=max(12, style.font - 2))),
        uirevision="grid",
    )
    # Up to 128 axes: built from plain dicts without plotly's per-property validation, which would cost
    # ~0.1-0.2 s at 64 heads on every rerun (the shapes are fixed here and covered by the tests).
    fig = go.Figure(data=data, layout=layout, _validate=False)
    fig.layout.meta = {FONTS_SET: style.font}  # apply_fonts has nothing left to do
    return fig


def matrix_figure(
    mat: np.ndarray,
    row_labels: list[str],
    col_labels: list[str],
    title: str,
    kind: str = "weights",
    style: Style = Style(),
    mask: np.ndarray | None = None,
    row_title: str | None = None,
    col_title: str | None = None,
    height: int | None = None,
) -> go.Figure:
    """One matrix as a heatmap with its labels and exact hover values.

    ``row_labels`` and ``col_labels`` are used as they are and must be unique
    (category axes merge equal labels): give tokens with their positions, e.g.
    :func:`block_labels`. ``kind`` ``weights`` uses the fixed 0..1 scale;
    ``scores`` and ``values`` a diverging scale centred at 0 whose symmetric
    range is stated in the colour bar. ``mask`` bool like ``mat`` (False =
    masked) greys cells out.
    """
    z = np.asarray(mat, dtype=np.float32)
    z = np.where(np.isfinite(z), z, np.nan)
    if mask is not None:
        z = np.where(mask, z, np.nan)
    rows_u = [str(rl) for rl in row_labels]
    cols_u = [str(cl) for cl in col_labels]
    hover = (
        f"{row_title or style.t('fig.query')} %{{y}}<br>{col_title or style.t('fig.key')} %{{x}}"
        "<br>%{z:.4g}<extra></extra>"
    )
    if kind == "weights":
        caxis = dict(colorscale=style.weight_scale, cmin=0.0, cmax=1.0)
    else:
        finite = z[np.isfinite(z)]
        lim = float(np.max(np.abs(finite))) if finite.size else 1.0
        lim = lim if lim > 0 else 1.0
        caxis = dict(colorscale=DIVERGING_SCALE, cmin=-lim, cmax=lim, cmid=0.0)
    font, axis_font = dict(size=style.font), dict(size=style.font + 2)
    caxis["colorbar"] = dict(tickfont=font, title=dict(font=font))
    trace = dict(type="heatmap", z=z, x=cols_u, y=rows_u, coloraxis="coloraxis", hoverongaps=False,
                 hovertemplate=hover)  # fmt: skip
    if z.shape[0] * z.shape[1] <= 144 and z.shape[1] <= 16:
        trace.update(texttemplate="%{z:.2f}", textfont=dict(size=max(9, style.font - 3)))
    data = [trace]
    if mask is not None and not np.all(mask):
        data.append(
            dict(type="heatmap", z=np.where(mask, np.nan, 1.0).astype(np.float32), x=cols_u, y=rows_u,
                 showscale=False, colorscale=[[0, MASK_GREY], [1, MASK_GREY]], hoverongaps=False,
                 hovertemplate=style.t("fig.masked") + "<extra></extra>")
        )  # fmt: skip
    layout = dict(
        title=dict(text=title, font=dict(size=style.font + 1)),
        font=font,
        coloraxis=caxis,
        height=height or int(min(700, max(260, 22 * len(rows_u) + 140))),
        margin=dict(l=10, r=10, t=50, b=10),
        plot_bgcolor="rgba(0,0,0,0)",
        hoverlabel=dict(font=dict(size=max(12, style.font - 2))),
        legend=dict(font=font),
        xaxis=dict(title=dict(text=col_title or style.t("fig.key"), font=axis_font), tickangle=-60, type="category",
                   tickfont=font),
        yaxis=dict(title=dict(text=row_title or style.t("fig.query"), font=axis_font), autorange="reversed",
                   type="category", tickfont=font),
        meta={FONTS_SET: style.font},
    )  # fmt: skip
    # eight of these per step-by-step view: plain dicts, no per-property validation (see heatmap_grid)
    return go.Figure(data=data, layout=layout, _validate=False)


ENTROPY_MAX_POINTS = 512  # per head line; longer sequences are averaged over blocks of positions


def entropy_figure(
    entropy: np.ndarray,
    tokens_q: list[str] | tuple[str, ...],
    n_kv_heads: int,
    style: Style = Style(),
    n_heads: int | None = None,
    heads: list[int] | tuple[int, ...] | None = None,
) -> go.Figure:
    """Normalised row entropy ``[Hs, Tq]`` as one line per head, coloured by KV group.

    1 = attention spread evenly over every allowed key, 0 = all on one key. Up
    to :data:`ENTROPY_MAX_POINTS` queries the x axis names each token; longer
    sequences plot the mean of each block of positions against its first
    position, and the title says so.
    """
    hs, t = entropy.shape
    n_heads = hs if n_heads is None else n_heads
    heads = list(range(hs)) if heads is None else list(heads)
    n_rep = n_heads // n_kv_heads
    f = -(-t // ENTROPY_MAX_POINTS)
    if f == 1:
        x: list[str] | np.ndarray = [f"{tok} ({i})" for i, tok in enumerate(tokens_q)]
        y = entropy.astype(np.float32)
        ends = None
        x_hover = "%{x}"
    else:
        n_full = t // f
        blocks = [entropy[:, : n_full * f].reshape(hs, n_full, f).mean(-1)]
        if t % f:
            blocks.append(entropy[:, n_full * f :].mean(-1, keepdims=True))
        y = np.concatenate(blocks, axis=1).astype(np.float32)
        x = np.arange(0, t, f, dtype=np.float32)  # first position of each block
        ends = np.minimum(x + f, t) - 1
        x_hover = "%{x:.0f}–%{customdata:.0f}"
    fig = go.Figure()
    for i, head in enumerate(heads):
        group = head // n_rep
        fig.add_trace(
            go.Scatter(
                x=x,
                y=y[i],
                customdata=ends,
                mode="lines+markers" if y.shape[1] <= 64 else "lines",
                name=f"{style.t('fig.head')} {head} · KV {group}",
                line=dict(
                    color=group_color(group),
                    width=3 if style.present else 2,
                    dash=("solid", "dot", "dash", "dashdot")[(head % n_rep) % 4],
                ),
                hovertemplate=f"{style.t('fig.head')} {head}<br>{x_hover}<br>H/log n = %{{y:.3f}}<extra></extra>",
            )
        )
    title = style.t("fig.entropy_title")
    if f > 1:
        title += " · " + style.t("fig.entropy_pooled", f=f, t=t)
    fig.update_layout(
        title=dict(text=title, font=dict(size=style.title_font)),
        font=dict(size=style.font),
        yaxis=dict(title=dict(text=style.t("fig.entropy_axis")), range=[0, 1.05]),
        xaxis=dict(
            title=dict(text=style.t("fig.query") if f == 1 else style.t("fig.query_pos")),
            tickangle=-60 if f == 1 else 0,
            type="category" if f == 1 else "linear",
        ),
        height=420,
        margin=dict(l=10, r=10, t=60, b=10),
        legend=dict(font=dict(size=max(10, style.font - 2))),
    )
    return fig
