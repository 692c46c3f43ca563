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

from .i18n import translate

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


def apply_fonts(fig: go.Figure, style: Style) -> go.Figure:
    """Set every axis, legend and colour-bar font explicitly (in place; returns ``fig``).

    Streamlit's chart theme replaces plotly's inherited font sizes with its own
    small ones, so the sizes of :class:`Style` (20 px and more in presentation
    mode) must be set on each axis to reach the screen, the export and the CLI.
    """
    size, title = style.font, style.font + 2
    axes = [k for k in fig.layout.to_plotly_json() if k.startswith(("xaxis", "yaxis"))] or ["xaxis", "yaxis"]
    for name in axes:
        fig.layout[name].update(tickfont=dict(size=size), title=dict(font=dict(size=title)))
    fig.update_layout(legend=dict(font=dict(size=size)), hoverlabel=dict(font=dict(size=max(12, size - 2))))
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


def _tick_positions(n: int, labels: list[str], factor: int, max_labels: int) -> tuple[list[int], list[str]]:
    step = max(1, int(np.ceil(n / max_labels)))
    idx = list(range(0, n, step))
    if factor == 1:
        return idx, [labels[i] for i in idx]
    return idx, [f"{i * factor}–{min((i + 1) * factor, len(labels)) - 1}" for i in idx]


def heatmap_grid(
    weights: np.ndarray,
    tokens_q: list[str],
    tokens_k: list[str],
    n_kv_heads: int,
    mask: np.ndarray | None = None,
    style: Style = Style(),
    max_cells: int = 96,
    heads: list[int] | None = None,
) -> go.Figure:
    """Small multiples of per-head attention weights, grouped by KV head.

    weights ``[H, Tq, Tk]`` in [0, 1]; mask bool ``[Tq, Tk]`` (False = masked,
    drawn grey). All heads share one 0..1 colour scale; query rows run top to
    bottom, keys left to right. Each panel is framed in its KV group's colour.
    Maps larger than ``max_cells`` per side are block-max pooled, and the title
    says so.
    """
    h_all, t_q, t_k = weights.shape
    heads = list(range(h_all)) if heads is None else heads
    n_rep = h_all // n_kv_heads
    w = weights[heads].astype(np.float32)
    masked = None if mask is None else ~mask.astype(bool)
    if masked is not None and masked.any():
        w = np.where(masked[None], np.nan, w)
    w, f = pool_max(w, max_cells)
    m_pooled = None
    if masked is not None and masked.any():
        m_pooled, _ = pool_max(np.where(masked, np.nan, 1.0)[None], max_cells)
        m_pooled = np.isnan(m_pooled[0])
    n, r, c = w.shape
    ncols = grid_columns(h_all, n_kv_heads) if len(heads) == h_all else min(len(heads), 4)
    nrows = -(-n // ncols)
    gap = max(1, int(round(0.12 * max(r, c))))  # between panels of a row
    gap_y = max(2, int(round(0.3 * r)))  # between rows: room for the panel titles
    big = np.full((nrows * (r + gap_y) - gap_y, ncols * (c + gap) - gap), np.nan, dtype=np.float32)
    mask_layer = np.full_like(big, np.nan)
    labels_q = [f"{t} ({i})" for i, t in enumerate(tokens_q)]
    labels_k = [f"{t} ({i})" for i, t in enumerate(tokens_k)]
    text = None
    hover_ok = f == 1 and big.size <= MAX_HOVER_CELLS
    if hover_ok:
        text = np.full(big.shape, "", dtype=object)
    shapes, annotations = [], []
    for i, head in enumerate(heads):
        row, col = divmod(i, ncols)
        y0, x0 = row * (r + gap_y), col * (c + gap)
        big[y0 : y0 + r, x0 : x0 + c] = w[i]
        if m_pooled is not None:
            mask_layer[y0 : y0 + r, x0 : x0 + c] = np.where(m_pooled, 1.0, np.nan)
        group = head // n_rep
        if text is not None:
            qk = np.char.add(
                np.char.add(np.array(labels_q, dtype=str)[:, None], " → "),
                np.array(labels_k, dtype=str)[None, :],
            )
            text[y0 : y0 + r, x0 : x0 + c] = np.char.add(qk, f"<br>{style.t('fig.head')} {head} · KV {group}")
        color = group_color(group)
        shapes.append(
            dict(
                type="rect",
                x0=x0 - 0.5,
                x1=x0 + c - 0.5,
                y0=y0 - 0.5,
                y1=y0 + r - 0.5,
                line=dict(color=color, width=3 if not style.present else 4),
                layer="above",
            )
        )
        annotations.append(
            dict(
                x=x0 + (c - 1) / 2,
                y=y0 - 0.6,
                xref="x",
                yref="y",
                yanchor="bottom",
                showarrow=False,
                text=f"<b>{style.t('fig.head')} {head}</b> · KV {group}",
                font=dict(color=color, size=style.font),
            )
        )
    fig = go.Figure()
    fig.add_trace(
        go.Heatmap(
            z=big,
            coloraxis="coloraxis",
            hoverongaps=False,
            text=text,
            hovertemplate=(
                "%{text}<br>" + style.t("fig.weight") + " %{z:.4f}<extra></extra>"
                if text is not None
                else style.t("fig.weight") + " %{z:.4f}<extra></extra>"
            ),
            xgap=0,
            ygap=0,
            name="weights",
        )
    )
    if m_pooled is not None:
        fig.add_trace(
            go.Heatmap(
                z=mask_layer,
                colorscale=[[0, MASK_GREY], [1, MASK_GREY]],
                showscale=False,
                hoverongaps=False,
                hovertemplate=style.t("fig.masked") + "<extra></extra>",
                name="mask",
            )
        )
    # Roughly square cells at a typical wide-layout plot width of ~900 px; as many token labels as fit
    # without overlapping (one per label height of tile), the rest every k-th.
    cell_px = max(3.0, min(36.0, 900.0 / big.shape[1]))
    label_px = style.font + 4
    xt, xl = _tick_positions(c, labels_k, f, max(2, int(c * cell_px / label_px)))
    yt, yl = _tick_positions(r, labels_q, f, max(2, int(r * cell_px / label_px)))
    tickvals_x = [col * (c + gap) + j for col in range(ncols) for j in xt]
    tickvals_y = [row * (r + gap_y) + j for row in range(nrows) for j in yt]
    title = style.t("fig.grid_title", n=len(heads), kv=n_kv_heads)
    if f > 1:
        title += " · " + style.t("fig.pooled", r=r, c=c, tq=t_q, tk=t_k)
    label_room = 40 + 7 * max((len(s) for s in xl), default=4)  # rotated key labels under the panels
    height = int(min(3000, max(320, big.shape[0] * cell_px + label_room + (110 if style.present else 80))))
    fig.update_layout(
        title=dict(text=title, font=dict(size=style.title_font)),
        font=dict(size=style.font),
        coloraxis=dict(
            colorscale=style.weight_scale, cmin=0.0, cmax=1.0, colorbar=dict(title=dict(text=style.t("fig.weight")))
        ),
        shapes=shapes,
        annotations=annotations,
        height=height,
        margin=dict(l=10, r=10, t=70 if not style.present else 90, b=10),
        plot_bgcolor="rgba(0,0,0,0)",
        xaxis=dict(
            tickvals=tickvals_x,
            ticktext=xl * ncols,
            tickangle=-60,
            showgrid=False,
            zeroline=False,
            title=dict(text=style.t("fig.key")),
        ),
        yaxis=dict(
            tickvals=tickvals_y,
            ticktext=yl * nrows,
            autorange="reversed",
            showgrid=False,
            zeroline=False,
            title=dict(text=style.t("fig.query")),
        ),
        uirevision="grid",
    )
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

    ``kind`` ``weights`` uses the fixed 0..1 scale; ``scores`` and ``values`` a
    diverging scale centred at 0 whose symmetric range is stated in the colour
    bar. ``mask`` bool like ``mat`` (False = masked) greys cells out.
    """
    z = np.asarray(mat, dtype=np.float32)
    z = np.where(np.isfinite(z), z, np.nan)
    if mask is not None:
        z = np.where(mask, z, np.nan)
    rows_u = [f"{t} ({i})" for i, t in enumerate(row_labels)]
    cols_u = [str(cl) for cl in col_labels]
    hover = (
        f"{row_title or style.t('fig.query')} %{{y}}<br>{col_title or style.t('fig.key')} %{{x}}"
        "<br>%{z:.4g}<extra></extra>"
    )
    fig = go.Figure()
    if kind == "weights":
        trace = go.Heatmap(z=z, x=cols_u, y=rows_u, coloraxis="coloraxis", hoverongaps=False, hovertemplate=hover)
        caxis = dict(colorscale=style.weight_scale, cmin=0.0, cmax=1.0)
    else:
        finite = z[np.isfinite(z)]
        lim = float(np.max(np.abs(finite))) if finite.size else 1.0
        lim = lim if lim > 0 else 1.0
        trace = go.Heatmap(z=z, x=cols_u, y=rows_u, coloraxis="coloraxis", hoverongaps=False, hovertemplate=hover)
        caxis = dict(colorscale=DIVERGING_SCALE, cmin=-lim, cmax=lim, cmid=0.0)
    fig.add_trace(trace)
    if mask is not None and not np.all(mask):
        fig.add_trace(
            go.Heatmap(
                z=np.where(mask, np.nan, 1.0),
                x=cols_u,
                y=rows_u,
                showscale=False,
                colorscale=[[0, MASK_GREY], [1, MASK_GREY]],
                hoverongaps=False,
                hovertemplate=style.t("fig.masked") + "<extra></extra>",
            )
        )
    if z.shape[0] * z.shape[1] <= 144 and z.shape[1] <= 16:
        fig.data[0].update(texttemplate="%{z:.2f}", textfont=dict(size=max(9, style.font - 3)))
    fig.update_layout(
        title=dict(text=title, font=dict(size=style.font + 1)),
        font=dict(size=style.font),
        coloraxis=caxis,
        height=height or int(min(700, max(260, 22 * len(rows_u) + 140))),
        margin=dict(l=10, r=10, t=50, b=10),
        plot_bgcolor="rgba(0,0,0,0)",
        xaxis=dict(title=dict(text=col_title or style.t("fig.key")), tickangle=-60, type="category"),
        yaxis=dict(title=dict(text=row_title or style.t("fig.query")), autorange="reversed", type="category"),
    )
    return fig


def entropy_figure(entropy: np.ndarray, tokens_q: list[str], n_kv_heads: int, style: Style = Style()) -> go.Figure:
    """Normalised row entropy ``[H, Tq]`` as one line per head, coloured by KV group.

    1 = attention spread evenly over every allowed key, 0 = all on one key.
    """
    h, t = entropy.shape
    n_rep = h // n_kv_heads
    labels = [f"{tok} ({i})" for i, tok in enumerate(tokens_q)]
    fig = go.Figure()
    for head in range(h):
        group = head // n_rep
        fig.add_trace(
            go.Scatter(
                x=labels,
                y=entropy[head],
                mode="lines+markers",
                name=f"{style.t('fig.head')} {head} · KV {group}",
                line=dict(
                    color=group_color(group),
                    width=3 if style.present else 2,
                    dash=("solid", "dot", "dash", "dashdot")[(head % n_rep) % 4],
                ),
                hovertemplate=f"{style.t('fig.head')} {head}<br>%{{x}}<br>H/log n = %{{y:.3f}}<extra></extra>",
            )
        )
    fig.update_layout(
        title=dict(text=style.t("fig.entropy_title"), font=dict(size=style.title_font)),
        font=dict(size=style.font),
        yaxis=dict(title=dict(text=style.t("fig.entropy_axis")), range=[0, 1.05]),
        xaxis=dict(title=dict(text=style.t("fig.query")), tickangle=-60, type="category"),
        height=420,
        margin=dict(l=10, r=10, t=60, b=10),
        legend=dict(font=dict(size=max(10, style.font - 2))),
    )
    return fig
