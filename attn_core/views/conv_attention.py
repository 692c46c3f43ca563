"""The "Attention as convolution" page's view model: quadratic-encoding heads in 1-D and 2-D, K² of them against
``conv2d``, the α sweep and the analogy (Cordonnier, Loukas & Jaggi, ICLR 2020; :mod:`attn_core.conv.attention`).

The page (``app_pages/conv_attention.py``) and the command line (``python -m attn_core.export --page conv_attention``)
run the same steps and figure builders; every sentence that concludes is chosen from the numbers it reports.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from attn_core import figures
from attn_core.conv import attention as eng
from attn_core.figures import conv_attention as cfig
from attn_core.views.base import (  # noqa: F401 - for the page
    PageChecks,
    Scenario,
    View,
    check_choices,
    control,
    matrix_frame,
    view_list,
    with_values,
)

VIEW_FIELD = "view"
PAGE_VIEWS = ("line", "image", "sweep", "analogy")
VIEW_NAMES = PAGE_VIEWS
TOL = 1e-3  # the "matches conv2d" threshold
SWEEP_ALPHAS = tuple(float(a) for a in np.logspace(-1, 2, 19))  # 0.1 .. 100, six points a decade
CHANNELS = ("R", "G", "B")
MAP_SIDE = 24  # key pixels a side of the heads' maps; larger key grids are drawn as a window around the query


@dataclass(frozen=True)
class Params:
    """Everything the page's controls set; the field names are the URL keys, the controls the widgets and flags."""

    view: str = control("line", "choice", options=PAGE_VIEWS)
    alpha: float = control(
        1.0,
        "float",
        lo=0.05,
        hi=10.0,
        step=0.05,
        help="help.conv_alpha",
        cli_help="α, the inverse width of every head's window (> 0)",
    )
    k: int = control(
        3,
        "int",
        lo=1,
        hi=eng.MAX_K,
        step=2,
        help="help.conv_k",
        cli_help="kernel size K (odd): K heads in 1-D, K² in 2-D",
    )
    seq_len: int = control(24, "int", lo=5, hi=64, help="help.conv_seq_len", cli_help="positions of the 1-D sequence")
    query: int = control(12, "int", lo=0, hi=63, data=True, help="help.conv_query", cli_help="the 1-D query position")
    shift: int = control(1, "int", lo=-3, hi=3, help="help.conv_shift", cli_help="the 1-D head's shift Δ")
    pattern: str = control(
        "glyph",
        "choice",
        options=eng.PATTERNS,
        help="help.conv_pattern",
        cli_help="built-in image: checker, glyph or gradient",
    )
    image_size: int = control(
        16, "int", lo=8, hi=eng.MAX_SIDE, help="help.conv_image_size", cli_help="pixels a side of the built-in image"
    )
    kernel: str = control(
        "blur",
        "choice",
        options=eng.KERNELS,
        help="help.conv_kernel",
        cli_help="blur, sobel, sharpen, shift or custom (--kernel-text)",
    )
    kernel_text: str = control(
        "0 1 0; 1 -4 1; 0 1 0",
        "text",
        hi=400,
        help="help.conv_kernel_text",
        cli_help="a typed kernel: rows separated by ';' (with --kernel custom)",
    )
    padding: str = control(
        "zeros",
        "choice",
        options=eng.PADDINGS,
        help="help.conv_padding",
        cli_help="zeros (padding pixels are keys of value 0) or existing (only the image's keys)",
    )
    q_row: int = control(
        8, "int", lo=0, hi=eng.MAX_SIDE - 1, data=True, help="help.conv_q_pixel", cli_help="the query pixel's row"
    )
    q_col: int = control(
        8, "int", lo=0, hi=eng.MAX_SIDE - 1, data=True, help="help.conv_q_pixel", cli_help="the query pixel's column"
    )
    channel: int = control(
        0, "int", lo=0, hi=2, data=True, help="help.conv_channel", cli_help="the colour channel drawn (RGB images)"
    )
    image: str = control("", "text", hi=4096, cli_only=True, cli_help="a PNG or JPEG file instead of the pattern")

    def __post_init__(self) -> None:
        check_choices(self)

    @property
    def kernel2d(self) -> np.ndarray:
        """The K×K kernel: the preset at ``k``, or the typed numbers (:class:`ConfigError` says what to fix)."""
        return eng.parse_kernel(self.kernel_text) if self.kernel == "custom" else eng.kernel_preset(self.kernel, self.k)

    @property
    def shifts_1d(self) -> list[int]:
        return list(range(-(self.k // 2), self.k // 2 + 1))


def image_of(p: Params, upload: bytes | None = None) -> np.ndarray:
    """The image ``[C, H, W]``: an upload's (or ``--image``'s) pixels, else the built-in pattern."""
    if upload is not None:
        return eng.load_image(upload)
    if p.image:
        return eng.load_image(Path(p.image).read_bytes())
    return eng.pattern(p.pattern, p.image_size)


def check_size(kernel2d: np.ndarray, image: np.ndarray) -> int:
    """K, or :class:`ConfigError` when the kernel is larger than the image (the message says what to change)."""
    return eng.check_kernel_size(kernel2d.shape[0], image.shape[1], image.shape[2])


def file_stem(p: Params) -> str:
    src = "image" if p.image else f"{p.pattern}{p.image_size}"
    return f"{src}_{p.kernel}_k{p.k}_a{p.alpha:g}_{p.padding}"


# ---------------------------------------------------------------- steps (cacheable: plain values in)
@dataclass(frozen=True)
class LineResult:
    """The 1-D head of ``shift`` at ``query``: key positions, its scores and weights ``[N]``, the K heads' weights
    ``[K, N]``, the window's measured mean offset and variance."""

    pos: np.ndarray
    scores: np.ndarray
    weights: np.ndarray
    heads: np.ndarray
    shifts: tuple[int, ...]
    query: int
    shift: int
    alpha: float
    mean: float
    var: float


def line_step(seq_len: int, query: int, shift: int, alpha: float, k: int, *, device: str = "cpu") -> LineResult:
    """Scores and softmax rows of the 1-D quadratic heads (real attention over all ``seq_len`` positions)."""
    q = min(max(0, query), seq_len - 1)
    shifts = tuple(range(-(k // 2), k // 2 + 1))
    w = eng.quadratic_weights_1d(seq_len, shift, alpha)[q].numpy()
    pos = np.arange(seq_len)
    mean = float((w * (pos - q)).sum())
    return LineResult(
        pos,
        eng.scores_1d(seq_len, shift, alpha)[q].numpy(),
        w,
        np.stack([eng.quadratic_weights_1d(seq_len, s, alpha)[q].numpy() for s in shifts]),
        shifts,
        q,
        shift,
        float(alpha),
        mean,
        float((w * (pos - q - mean) ** 2).sum()),
    )


@dataclass(frozen=True)
class ImageResult:
    """The K² heads on an image ``[C, H, W]``: the query pixel's row of every head over the key pixels
    ``maps`` ``[K², H_k, W_k]``, the layer's output and ``conv2d``'s (zero padding) ``[C, H, W]``."""

    image: np.ndarray
    maps: np.ndarray
    key_rows: np.ndarray
    key_cols: np.ndarray
    attention: np.ndarray
    conv: np.ndarray
    k: int
    alpha: float
    padding: str
    query: tuple[int, int]

    @property
    def max_diff(self) -> float:
        return float(np.abs(self.attention - self.conv).max())

    @property
    def border_diff(self) -> float:
        """The largest difference away from the K//2 border rows and columns (0 when the image is all border)."""
        p = self.k // 2
        inner = np.abs(self.attention - self.conv)[:, p : self.image.shape[1] - p, p : self.image.shape[2] - p]
        return float(inner.max()) if inner.size else 0.0


def image_step(
    image: np.ndarray, kernel2d: np.ndarray, alpha: float, padding: str, q_row: int, q_col: int, *, device: str = "cpu"
) -> ImageResult:
    """The K² heads' rows of the query pixel (full attention) and the layer against ``conv2d`` (zero padding)."""
    c, h, w = image.shape
    k = check_size(kernel2d, image)
    qr, qc = min(max(0, q_row), h - 1), min(max(0, q_col), w - 1)
    rows = eng.quadratic_weights_2d(
        h, w, eng.shift_grid(k), alpha, queries=torch.tensor([qr * w + qc]), padding=padding
    )[:, 0]  # (K², N_k)
    p = k // 2 if padding == "zeros" else 0
    hk, wk = h + 2 * p, w + 2 * p
    kernel = eng.per_channel(kernel2d, c)
    att = eng.conv_as_attention(image, kernel, alpha, padding=padding).numpy()
    ref = eng.reference_conv(image, kernel, "zeros").numpy()
    return ImageResult(
        image,
        rows.numpy().reshape(k * k, hk, wk).astype(np.float32),
        np.arange(-p, h + p),
        np.arange(-p, w + p),
        att,
        ref,
        k,
        float(alpha),
        padding,
        (qr, qc),
    )


def sweep_step(image: np.ndarray, kernel2d: np.ndarray, padding: str, *, device: str = "cpu") -> eng.Sweep:
    """The largest |attention − conv2d| at each α of :data:`SWEEP_ALPHAS`."""
    check_size(kernel2d, image)
    return eng.alpha_sweep(image, eng.per_channel(kernel2d, image.shape[0]), SWEEP_ALPHAS, padding=padding, tol=TOL)


# ---------------------------------------------------------------- the 1-D view
def line_views(res: LineResult, style: figures.Style) -> list[View]:
    tag = f"n{len(res.pos)}_q{res.query}_a{res.alpha:g}"
    frame = pd.DataFrame(
        {
            "key": res.pos,
            "score": res.scores,
            "weight": res.weights,
            **{f"weight_shift{s:+d}": w for s, w in zip(res.shifts, res.heads, strict=True)},
        }
    )
    return [
        View(
            f"conv_score_s{res.shift}_{tag}",
            cfig.score_figure(res.pos, res.scores, res.query, res.shift, res.alpha, style),
            frame,
        ),
        View(
            f"conv_window_s{res.shift}_{tag}",
            cfig.window_figure(res.pos, res.weights, res.query, res.shift, res.alpha, style),
            frame,
        ),
        View(
            f"conv_heads{len(res.shifts)}_{tag}",
            cfig.heads_1d_figure(res.pos, res.heads, res.shifts, res.query, res.alpha, style),
            frame,
        ),
    ]


def line_formula(res: LineResult) -> str:
    """The score with the user's numbers (LaTeX)."""
    a, s = f"{res.alpha:g}", res.shift
    return (
        rf"A_{{q,k}} = v \cdot r_\delta = -{a}\,(\delta^2 - 2\cdot({s})\,\delta) = -{a}\,\big((\delta - ({s}))^2 - {s * s}\big)"
        rf",\quad \delta = k - q"
    )


def line_sentence(res: LineResult, style: figures.Style) -> tuple[str, str]:
    """(kind, text): the window's measured mean and variance against Δ and 1/(2α), or that the ends cut it."""
    t, target = style.t, 1 / (2 * res.alpha)
    peak = float(res.weights[res.query + res.shift]) if 0 <= res.query + res.shift < len(res.pos) else 0.0
    kw = dict(
        s=res.shift, m=f"{res.mean:.3g}", v=f"{res.var:.3g}", t=f"{target:.3g}", p=f"{peak:.1%}", a=f"{res.alpha:g}"
    )
    centre, reach = res.query + res.shift, 3 * np.sqrt(target)  # the window's centre and ±3σ
    if centre - reach < 0 or centre + reach > len(res.pos) - 1:
        return "warning", t("conv.line_cut", **kw)
    close = abs(res.var - target) <= 0.05 * target
    return "info", t("conv.line_gauss" if close else "conv.line_narrow", **kw)


# ---------------------------------------------------------------- the 2-D view
def _channel(res: ImageResult, channel: int) -> int:
    return min(max(0, channel), res.image.shape[0] - 1)


def channel_name(res: ImageResult, channel: int, style: figures.Style) -> str:
    return style.t("conv.grey") if res.image.shape[0] == 1 else CHANNELS[_channel(res, channel)]


def map_window(res: ImageResult) -> tuple[int, int, int, int]:
    """The key pixels the maps draw, as index ranges of the key grid: all of them up to :data:`MAP_SIDE` a side,
    else a window of :data:`MAP_SIDE` around the query (a 70-pixel map shows a window of a few pixels as a dot)."""
    out = []
    for n, q in (
        (len(res.key_rows), res.query[0] - res.key_rows[0]),
        (len(res.key_cols), res.query[1] - res.key_cols[0]),
    ):
        start = min(max(0, int(q) - MAP_SIDE // 2), max(0, n - MAP_SIDE))
        out += [start, min(n, start + MAP_SIDE)]
    return out[0], out[1], out[2], out[3]


def window_note(res: ImageResult, style: figures.Style) -> str:
    """Said on the maps when they show a window: which keys, and the most weight of any head outside them."""
    r0, r1, c0, c1 = map_window(res)
    n_r, n_c = len(res.key_rows), len(res.key_cols)
    if (r0, r1, c0, c1) == (0, n_r, 0, n_c):
        return ""
    outside = max(0.0, 1 - float(res.maps[:, r0:r1, c0:c1].sum(axis=(1, 2)).min()))
    return style.t(
        "conv.maps_window",
        r0=int(res.key_rows[r0]),
        r1=int(res.key_rows[r1 - 1]),
        c0=int(res.key_cols[c0]),
        c1=int(res.key_cols[c1 - 1]),
        hk=n_r,
        wk=n_c,
        out=f"{outside:.1e}" if outside >= 1e-6 else "1e-6",
    )


def image_views(res: ImageResult, channel: int, style: figures.Style) -> list[View]:
    """The input, the K² heads' maps, the attention output, conv2d's output and their difference (one channel)."""
    t, c = style.t, _channel(res, channel)
    name = channel_name(res, channel, style)
    tag = f"k{res.k}_a{res.alpha:g}_{res.padding}_c{c}"
    labels_r = [str(i) for i in range(res.image.shape[1])]
    labels_c = [str(i) for i in range(res.image.shape[2])]
    lim = float(max(np.abs(res.attention[c]).max(), np.abs(res.conv[c]).max(), 1e-12))
    diff = res.attention[c] - res.conv[c]

    def frame(mat: np.ndarray, what: str) -> pd.DataFrame:
        return matrix_frame(mat, labels_r, labels_c, "row", "col", what)

    r0, r1, c0, c1 = map_window(res)
    maps = res.maps.reshape(res.k * res.k, -1)
    maps_frame = pd.DataFrame(
        {
            "head": np.repeat(np.arange(res.k * res.k), maps.shape[1]),
            "key_row": np.tile(np.repeat(res.key_rows, len(res.key_cols)), res.k * res.k),
            "key_col": np.tile(np.tile(res.key_cols, len(res.key_rows)), res.k * res.k),
            "weight": maps.reshape(-1).astype(np.float64),
        }
    )
    return [
        View(
            f"conv_input_c{c}",
            cfig.image_figure(res.image[c], t("conv.fig_input", ch=name), "grey", style=style),
            frame(res.image[c], "value"),
        ),
        View(
            f"conv_maps_{tag}_q{res.query[0]}-{res.query[1]}",
            cfig.head_maps_figure(
                res.maps[:, r0:r1, c0:c1],
                res.k,
                res.query,
                res.key_rows[r0:r1],
                res.key_cols[c0:c1],
                res.image.shape[1:],
                window_note(res, style),
                style,
            ),
            maps_frame,
        ),
        View(
            f"conv_attention_{tag}",
            cfig.image_figure(res.attention[c], t("conv.fig_att", n=res.k**2, ch=name), "signed", lim, style),
            frame(res.attention[c], "attention"),
        ),
        View(
            f"conv_conv2d_{tag}",
            cfig.image_figure(res.conv[c], t("conv.fig_conv", k=res.k, ch=name), "signed", lim, style),
            frame(res.conv[c], "conv2d"),
        ),
        View(
            f"conv_diff_{tag}",
            cfig.image_figure(diff, t("conv.fig_diff_map", d=f"{np.abs(diff).max():.2e}"), "signed", style=style),
            frame(diff, "difference"),
        ),
    ]


def image_sentence(res: ImageResult, style: figures.Style) -> tuple[str, str]:
    """(kind, text): whether the layer matches conv2d within :data:`TOL`, and where it differs when not."""
    t = style.t
    kw = dict(
        d=f"{res.max_diff:.2e}", tol=f"{TOL:g}", a=f"{res.alpha:g}", n=res.k**2, k=res.k, b=f"{res.border_diff:.2e}"
    )
    if res.max_diff < TOL:
        return "success", t("conv.image_match", **kw)
    if res.padding == "existing" and res.border_diff < TOL:
        return "warning", t("conv.image_border", **kw)
    return "info", t("conv.image_wide", **kw)


def image_note(res: ImageResult, style: figures.Style) -> str:
    """What is computed as full attention, with the sizes."""
    h, w = res.image.shape[1:]
    return style.t(
        f"conv.full_note_{res.padding}",
        n=h * w,
        nk=res.maps.shape[1] * res.maps.shape[2],
        h=h,
        w=w,
        hk=res.maps.shape[1],
        wk=res.maps.shape[2],
        heads=res.k**2,
    )


def padding_gap(image: np.ndarray, kernel2d: np.ndarray) -> float:
    """The largest |conv2d with zero padding − conv2d with replicate padding| over ``image``: how far apart the
    limits of the two padding settings are on this image (0 when they agree)."""
    kernel = eng.per_channel(kernel2d, image.shape[0])
    return float(
        (eng.reference_conv(image, kernel, "zeros") - eng.reference_conv(image, kernel, "existing")).abs().max()
    )


def padding_help(image: np.ndarray, kernel2d: np.ndarray, style: figures.Style) -> str:
    """The padding help, with whether the two settings' limits agree on this image and kernel (:func:`padding_gap`):
    when the image's outermost pixels are all 0, replicating them pads with zeros too."""
    gap = padding_gap(image, kernel2d)
    edge = np.concatenate([image[:, [0, -1], :].ravel(), image[:, :, [0, -1]].ravel()])
    if gap < TOL:
        key = "conv.padding_agree_edge" if not np.any(edge) else "conv.padding_agree"
    else:
        key = "conv.padding_differ"
    sep = "" if style.lang == "zh" else " "
    return style.t("conv.padding_help.body") + sep + style.t(key, d=f"{gap:.2g}", tol=f"{TOL:g}")


# ---------------------------------------------------------------- the α sweep
def sweep_view(sw: eng.Sweep, alpha: float, padding: str, style: figures.Style) -> View:
    data = pd.DataFrame({"alpha": sw.alphas, "max_abs_diff": sw.max_diff})
    return View(
        f"conv_sweep_{padding}", cfig.sweep_figure(sw.alphas, sw.max_diff, sw.tol, sw.below_at, alpha, style), data
    )


def sweep_sentence(sw: eng.Sweep, padding: str, style: figures.Style) -> tuple[str, str]:
    t = style.t
    kw = dict(
        tol=f"{sw.tol:g}",
        lo=f"{sw.alphas[0]:g}",
        hi=f"{sw.alphas[-1]:g}",
        d0=f"{sw.max_diff[0]:.2e}",
        d1=f"{sw.max_diff[-1]:.2e}",
    )
    if sw.below_at is not None:
        return "success", t("conv.sweep_below", a=f"{sw.below_at:.3g}", **kw)
    key = "conv.sweep_border" if padding == "existing" else "conv.sweep_never"
    return "warning", t(key, **kw)


# ---------------------------------------------------------------- the analogy
def analogy_rows(k: int, channels: int, style: figures.Style) -> tuple[list[str], list[list[str]]]:
    t = style.t
    header = [t("conv.col_attention"), t("conv.col_conv"), t("conv.col_here")]
    rows = [
        [
            t(f"conv.row_{name}_att"),
            t(f"conv.row_{name}_conv"),
            t(f"conv.row_{name}_here", k=k, n=k * k, r=k // 2, c=channels),
        ]
        for name in ("head", "concat", "wo", "alpha", "count", "global")
    ]
    return header, rows


ANALOGY_SLIDE_ROWS = 3  # rows of the analogy a slide shows: six rows of up to three lines of 21 px outgrow one


def analogy_view(k: int, channels: int, style: figures.Style, part: int | None = None) -> View:
    """The analogy's table; ``part`` i: its rows i·3 .. i·3 + 2 alone (a slide's share), None: all of them."""
    header, rows = analogy_rows(k, channels, style)
    if part is not None:
        rows = rows[part * ANALOGY_SLIDE_ROWS : (part + 1) * ANALOGY_SLIDE_ROWS]
    fig = cfig.analogy_figure(header, rows, style.t("conv.analogy_title", k=k, n=k * k), style)
    name = f"conv_analogy_k{k}" + ("" if part is None else f"_part{part + 1}")
    return View(name, fig, pd.DataFrame(rows, columns=header))


# ---------------------------------------------------------------- the command line's charts
def views(p: Params, style: figures.Style, which: str | Sequence[str] | None = None, device: str = "cpu") -> list[View]:
    """The charts of ``which`` views (default: the page's current view) for ``p``."""
    out: list[View] = []
    for name in view_list(which, VIEW_NAMES, [p.view]):
        if name == "line":
            out.extend(line_views(line_step(p.seq_len, p.query, p.shift, p.alpha, p.k), style))
        elif name == "analogy":
            out.append(analogy_view(p.kernel2d.shape[0], image_of(p).shape[0], style))
        elif name == "image":
            res = image_step(image_of(p), p.kernel2d, p.alpha, p.padding, p.q_row, p.q_col)
            out.extend(image_views(res, p.channel, style))
        else:
            out.append(sweep_view(sweep_step(image_of(p), p.kernel2d, p.padding), p.alpha, p.padding, style))
    return out


#: The convolution page in the browser test, the fuzz, the colour checks and the benchmarks (PageChecks).
CHECKS = PageChecks(
    slider="alpha",
    chart="conv_heads",
    presses=3,
    scenarios=(
        Scenario("defaults", {}, "alpha", (1.05, 1.0)),  # the 1-D head at another α
        Scenario("image", {"view": "image", "image_size": "64", "k": "5"}, "alpha", (2.05, 2.0), 1000),
        Scenario("largest", {"view": "image", "image_size": "64", "k": "7"}, "alpha", (2.05, 2.0), 1000),
    ),
    cli="--image-size 8 --seq-len 9 --query 4 --view all",
    extremes=(
        {},
        {"image_size": "64", "k": "7", "alpha": "0.05", "q_row": "63", "q_col": "0", "pattern": "gradient"},
        {
            "image_size": "8",
            "k": "1",
            "alpha": "10",
            "seq_len": "5",
            "query": "4",
            "shift": "-3",
            "padding": "existing",
        },
        {"kernel": "custom", "kernel_text": "1 2; 3 4"},
    ),
    fuzz_sets=25,
)
