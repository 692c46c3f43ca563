"""Attention as convolution: heads with the quadratic relative-position encoding, and K² of them as a K×K conv.

Cordonnier, Loukas & Jaggi, "On the Relationship between Self-Attention and Convolutional Layers", ICLR 2020
(arXiv 1911.03584), §3. A head with relative encoding ``r_δ = (‖δ‖², δ₁, δ₂)`` of the offset ``δ = key − query``
and ``v = −α (1, −2Δ₁, −2Δ₂)`` (content terms zero: ``W_qry = W_key = 0``) scores

    v · r_δ = −α (‖δ‖² − 2 Δ·δ) = −α (‖δ − Δ‖² − ‖Δ‖²)

so its softmax over the keys is a Gaussian window ∝ exp(−α‖δ − Δ‖²) centred on the shift Δ; as α grows it
becomes one-hot at ``δ = Δ`` (Lemma 2). Lemma 1: K² heads whose weights are one-hot at the K² shifts of a K×K
grid, each with a value projection holding one tap ``W[:, :, a, b]`` (``D_in → D_out``), summed by the output
projection (``W_O`` = the heads' outputs added), compute any K×K convolution; Theorem 1: N_h heads express a
√N_h × √N_h kernel. In 1-D, ``r_δ = (δ², δ)`` and ``v = −α (1, −2Δ)`` give a K-tap convolution with K heads.
(Course note 003's 2-D line "= α‖δ‖²" is a typo: the score is −α‖δ − Δ‖² + const.)

Padding: a convolution pads with zeros; attention only has the keys that exist. ``padding="zeros"`` models the
convolution's padding as keys: the K//2 rings of pixels around the image exist as keys whose values are 0, so
as α grows the layer tends exactly to ``conv2d(image, kernel, padding=K // 2)``. ``padding="existing"`` softmaxes
over the image's own pixels only ("same" attention): a head whose shift points outside the image then peaks on
the nearest pixel inside, so the limit is ``conv2d`` with replicate padding, and differs from the zero-padded
convolution on the border.

Two ways to compute the same layer (:func:`conv_as_attention`, ``method``):

- ``full``: every head's ``[N, N_k]`` weights from the scores and a softmax over all key pixels, head by head
  and in blocks of query rows (a 64×64 image with zero padding has 4096 × 4624 weights a head, 151 MB in
  float64; 25 heads at once would be 3.8 GB);
- ``separable``: the score splits into a row part and a column part, ``−α(δ₁ − Δ₁)² − α(δ₂ − Δ₂)²``, and the
  key pixels form a rectangle, so a head's softmax is the outer product of two 1-D softmaxes (rows ``[H, H_k]``,
  columns ``[W, W_k]``) and its output ``A X Bᵀ`` per channel: the same weights, no approximation.

Everything runs in float64 (α up to the thousands: the scores are shifted by their row maximum before exp).
"""

from __future__ import annotations

import io
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from attn_core.attention.sources import TensorLayer
from attn_core.runtime.config import ConfigError, check_int, unknown_option

PADDINGS = ("zeros", "existing")
METHODS = ("separable", "full")
PATTERNS = ("checker", "glyph", "gradient")
KERNELS = ("blur", "sobel", "sharpen", "shift", "custom")
MAX_K = 7  # 49 heads at most on the page
MAX_SIDE = 64  # images are resized to at most this many pixels a side
MAX_UPLOAD_BYTES = 2 * 1024 * 1024
IMAGE_FORMATS = ("PNG", "JPEG")
CHUNK_ELEMENTS = 1 << 22  # float64 weights per block of query rows in the full computation (32 MiB)
DTYPE = torch.float64


# ---------------------------------------------------------------- checks
def check_alpha(alpha: object) -> float:
    """α as a float, or :class:`ConfigError` unless it is a finite number > 0."""
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not math.isfinite(alpha) or alpha <= 0:
        raise ConfigError(
            f"alpha must be a number above 0 (e.g. 1), got {alpha!r}", "alpha", "conv_alpha", value=repr(alpha)
        )
    return float(alpha)


def check_kernel_size(k: int, height: int, width: int) -> int:
    """K odd (the grid of shifts has a centre), at least 1 and at most the image's shorter side."""
    k = check_int("K", k, 1)
    if k % 2 == 0:
        raise ConfigError(
            f"the kernel size K ({k}) must be odd: use {k - 1} or {k + 1}", "k", "conv_k_even", k=k, lo=k - 1, hi=k + 1
        )
    if k > min(height, width):
        raise ConfigError(
            f"the kernel size K ({k}) is larger than the image ({height}×{width}): use K ≤ "
            f"{min(height, width)} or a larger image",
            "k",
            "conv_k_large",
            k=k,
            h=height,
            w=width,
            m=min(height, width),
        )
    return k


def _check_padding(padding: str) -> None:
    if padding not in PADDINGS:
        raise unknown_option("padding", padding, PADDINGS)


# ---------------------------------------------------------------- shifts and scores
def shift_grid(k: int) -> list[tuple[int, int]]:
    """The K² shifts Δ = (a − K//2, b − K//2) of the taps (a, b) of a K×K kernel, row-major: head h ↔ tap h."""
    r = k // 2
    return [(a - r, b - r) for a in range(k) for b in range(k)]


def scores_1d(length: int, shift: int, alpha: float) -> torch.Tensor:
    """Scores ``[N, N]`` of the 1-D head: ``v · r_δ`` with ``r_δ = (δ², δ)``, ``v = −α(1, −2Δ)``, δ = key − query."""
    length, alpha = check_int("seq_len", length, 1), check_alpha(alpha)
    pos = torch.arange(length, dtype=DTYPE)
    delta = pos[None, :] - pos[:, None]  # (N_q, N_k): key − query
    r = torch.stack([delta**2, delta], dim=-1)  # (N_q, N_k, 2)
    v = -alpha * torch.tensor([1.0, -2.0 * shift], dtype=DTYPE)
    return r @ v


def quadratic_weights_1d(length: int, shift: int, alpha: float) -> torch.Tensor:
    """Weights ``[N, N]`` (float64) of the 1-D head of shift Δ: softmax over all N positions of :func:`scores_1d`."""
    return torch.softmax(scores_1d(length, shift, alpha), dim=-1)


def key_grid(height: int, width: int, padding: str, pad: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Row and column of every key pixel, row-major (``[N_k]`` each): the image's, plus ``pad`` rings of zero pixels
    around it with ``padding="zeros"``."""
    _check_padding(padding)
    p = pad if padding == "zeros" else 0
    rows = torch.arange(-p, height + p, dtype=DTYPE)
    cols = torch.arange(-p, width + p, dtype=DTYPE)
    return rows.repeat_interleave(len(cols)), cols.repeat(len(rows))


def _query_grid(height: int, width: int, queries: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
    idx = torch.arange(height * width) if queries is None else queries
    return (idx // width).to(DTYPE), (idx % width).to(DTYPE)


def scores_2d(
    qr: torch.Tensor, qc: torch.Tensor, kr: torch.Tensor, kc: torch.Tensor, shift: tuple[int, int], alpha: float
) -> torch.Tensor:
    """Scores ``[N_q, N_k]``: ``v · r_δ`` with ``r_δ = (‖δ‖², δ₁, δ₂)`` and ``v = −α(1, −2Δ₁, −2Δ₂)``, written out."""
    d1 = kr[None, :] - qr[:, None]  # (N_q, N_k) key row − query row
    d2 = kc[None, :] - qc[:, None]
    return -alpha * (d1 * d1 + d2 * d2 - 2.0 * shift[0] * d1 - 2.0 * shift[1] * d2)


def quadratic_weights_2d(
    height: int,
    width: int,
    shifts: list[tuple[int, int]],
    alpha: float,
    *,
    queries: torch.Tensor | None = None,
    padding: str = "existing",
) -> torch.Tensor:
    """Weights ``[heads, N_q, N_k]`` (float64) of one head per shift, pixels row-major (N = height·width).

    Real attention: the scores of :func:`scores_2d` and a softmax over all key pixels (``padding="existing"``:
    the image's N pixels; ``"zeros"``: also the rings of zero pixels a K×K convolution pads with, K from the
    largest shift). ``queries``: the query pixels' indices (default all N); the keys are always all.
    """
    alpha = check_alpha(alpha)
    pad = max((max(abs(a), abs(b)) for a, b in shifts), default=0)
    kr, kc = key_grid(height, width, padding, pad)
    qr, qc = _query_grid(height, width, queries)
    return torch.stack([torch.softmax(scores_2d(qr, qc, kr, kc, s, alpha), dim=-1) for s in shifts])


# ---------------------------------------------------------------- the layer
@dataclass(frozen=True)
class ConvLayer:
    """The K² heads built from a kernel ``[C_out, C_in, K, K]``: shifts row-major over the taps, each head's value
    projection ``W_V^(h) = kernel[:, :, a, b]ᵀ`` ``[C_in, C_out]``; ``W_O`` adds the heads' outputs."""

    kernel: np.ndarray = field(repr=False)
    alpha: float
    padding: str = "zeros"

    @property
    def k(self) -> int:
        return int(self.kernel.shape[-1])

    @property
    def shifts(self) -> list[tuple[int, int]]:
        return shift_grid(self.k)

    def value_projection(self, head: int) -> torch.Tensor:
        a, b = divmod(head, self.k)
        return torch.as_tensor(self.kernel[:, :, a, b], dtype=DTYPE).T  # (C_in, C_out)


def _as_image(image: Any) -> torch.Tensor:
    x = torch.as_tensor(np.asarray(image), dtype=DTYPE)
    if x.dim() != 3:
        raise ValueError(f"image [C, H, W] expected, got shape {tuple(x.shape)}")
    return x


def _as_kernel(kernel: Any, c_in: int, height: int, width: int) -> np.ndarray:
    w = np.asarray(kernel, dtype=np.float64)
    if w.ndim != 4 or w.shape[1] != c_in or w.shape[2] != w.shape[3]:
        raise ValueError(f"kernel [C_out, {c_in}, K, K] expected, got shape {w.shape}")
    check_kernel_size(w.shape[-1], height, width)
    return w


def _padded(x: torch.Tensor, padding: str, pad: int) -> torch.Tensor:
    """The key pixels' values ``[C, H_k, W_k]``: the image, in ``pad`` rings of zeros with ``padding="zeros"``."""
    return F.pad(x, (pad, pad, pad, pad)) if padding == "zeros" else x


def _axis_weights(n: int, n_keys: int, offset: int, shift: int, alpha: float) -> torch.Tensor:
    """1-D softmax ``[n, n_keys]`` over key positions ``−offset ..`` of −α(key − query − Δ)² (one factor of a head)."""
    q = torch.arange(n, dtype=DTYPE)
    kpos = torch.arange(n_keys, dtype=DTYPE) - offset
    d = kpos[None, :] - q[:, None] - shift
    return torch.softmax(-alpha * d * d, dim=-1)


def head_outputs_separable(x: torch.Tensor, layer: ConvLayer) -> torch.Tensor:
    """Each head's attention output before its value projection ``[heads, C_in, H, W]``: ``A X Bᵀ`` per channel."""
    c, h, w = x.shape
    pad = layer.k // 2
    xk = _padded(x, layer.padding, pad)  # (C, H_k, W_k)
    off = pad if layer.padding == "zeros" else 0
    out = []
    for s1, s2 in layer.shifts:
        rows = _axis_weights(h, xk.shape[1], off, s1, layer.alpha)  # (H, H_k)
        cols = _axis_weights(w, xk.shape[2], off, s2, layer.alpha)  # (W, W_k)
        out.append(rows @ xk @ cols.T)  # (C, H, W)
    return torch.stack(out)


def head_outputs_full(x: torch.Tensor, layer: ConvLayer) -> torch.Tensor:
    """The same as :func:`head_outputs_separable`, from every head's full ``[N, N_k]`` softmax (in row blocks)."""
    c, h, w = x.shape
    pad = layer.k // 2
    kr, kc = key_grid(h, w, layer.padding, pad)
    values = _padded(x, layer.padding, pad).reshape(c, -1).T  # (N_k, C)
    n = h * w
    block = max(1, CHUNK_ELEMENTS // len(kr))
    out = torch.empty(len(layer.shifts), n, c, dtype=DTYPE)
    for i, s in enumerate(layer.shifts):
        for r0 in range(0, n, block):
            qr, qc = _query_grid(h, w, torch.arange(r0, min(n, r0 + block)))
            weights = torch.softmax(scores_2d(qr, qc, kr, kc, s, layer.alpha), dim=-1)  # (rows, N_k)
            out[i, r0 : r0 + len(qr)] = weights @ values
    return out.transpose(1, 2).reshape(len(layer.shifts), c, h, w)


@torch.no_grad()
def conv_as_attention(
    image: Any, kernel: Any, alpha: float, *, padding: str = "zeros", method: str = "separable"
) -> torch.Tensor:
    """The K² quadratic-encoding heads with the kernel's taps as value projections, summed: ``[C_out, H, W]``.

    ``image`` ``[C_in, H, W]``, ``kernel`` ``[C_out, C_in, K, K]`` (odd K, at most the image's side), α > 0.
    With ``padding="zeros"`` the result tends to ``conv2d(image[None], kernel, padding=K // 2)[0]`` as α grows.
    ``method``: ``separable`` or ``full`` (the same weights; see the module docstring). Float64.
    """
    x = _as_image(image)
    layer = ConvLayer(_as_kernel(kernel, x.shape[0], x.shape[1], x.shape[2]), check_alpha(alpha), padding)
    _check_padding(padding)
    if method not in METHODS:
        raise unknown_option("method", method, METHODS)
    heads = (head_outputs_separable if method == "separable" else head_outputs_full)(x, layer)  # (heads, C_in, H, W)
    out = torch.zeros(layer.kernel.shape[0], x.shape[1], x.shape[2], dtype=DTYPE)
    for i in range(len(layer.shifts)):
        out += torch.einsum("chw,co->ohw", heads[i], layer.value_projection(i))  # W_V per head, W_O sums them
    return out


@torch.no_grad()
def reference_conv(image: Any, kernel: Any, padding: str = "zeros") -> torch.Tensor:
    """``conv2d`` with ``K // 2`` padding (zeros, or replicate: the limit of ``padding="existing"``), float64."""
    x = _as_image(image)[None]
    w = torch.as_tensor(np.asarray(kernel), dtype=DTYPE)
    p = w.shape[-1] // 2
    if padding == "zeros":
        return F.conv2d(x, w, padding=p)[0]
    _check_padding(padding)
    return F.conv2d(F.pad(x, (p, p, p, p), mode="replicate"), w)[0]


@dataclass(frozen=True)
class Sweep:
    """The largest |attention − conv2d| at each α (ascending), and the first α where it is below ``tol``."""

    alphas: np.ndarray
    max_diff: np.ndarray
    tol: float
    below_at: float | None


def alpha_sweep(image: Any, kernel: Any, alphas: Any, *, padding: str = "zeros", tol: float = 1e-3) -> Sweep:
    """:func:`conv_as_attention` against ``conv2d`` with zero padding at each α of ``alphas``."""
    ref = reference_conv(image, kernel, "zeros")
    a = np.sort(np.asarray(alphas, dtype=np.float64))
    diffs = np.array(
        [float((conv_as_attention(image, kernel, float(x), padding=padding) - ref).abs().max()) for x in a]
    )
    below = np.nonzero(diffs < tol)[0]
    return Sweep(a, diffs, tol, float(a[below[0]]) if below.size else None)


# ---------------------------------------------------------------- the heads as an attention source
def pixel_label(row: int, col: int) -> str:
    return f"({row},{col})"


def attention_source(height: int, width: int, k: int, alpha: float, padding: str = "zeros") -> TensorLayer:
    """The K² heads as a :class:`TensorLayer` (the map views' seam): queries the image's pixels, keys the key pixels.

    ``q·k = −α‖p_k‖² + 2α p_q·p_k + 2α Δ·p_k``: the paper's score plus ``α(‖p_q‖² + 2Δ·p_q − ‖Δ‖²)``, a constant
    per query row, so the same softmax. q ``(α, 2α p_q1, 2α p_q2)``, k per head ``(2Δ·p_k − ‖p_k‖², p_k1, p_k2)``,
    positions centred on the image (smaller numbers in float32); values the key's position (row, column).
    """
    alpha, k = check_alpha(alpha), check_kernel_size(k, height, width)
    kr, kc = key_grid(height, width, padding, k // 2)
    qr, qc = _query_grid(height, width, None)
    cy, cx = (height - 1) / 2, (width - 1) / 2
    q1 = torch.stack([torch.full_like(qr, alpha), 2 * alpha * (qr - cy), 2 * alpha * (qc - cx)], -1)  # (N, 3)
    pr, pc = kr - cy, kc - cx
    keys = [torch.stack([2 * (a * pr + b * pc) - pr * pr - pc * pc, pr, pc], -1) for a, b in shift_grid(k)]
    n = k * k
    q = q1[None].expand(n, -1, -1).numpy()  # (heads, N, 3)
    kk = torch.stack(keys).numpy()  # (heads, N_k, 3)
    v = torch.stack([kr, kc], -1)[None].expand(n, -1, -1).numpy()  # (heads, N_k, 2)
    toks_q = tuple(pixel_label(int(r), int(c)) for r, c in zip(qr.tolist(), qc.tolist(), strict=True))
    toks_k = tuple(pixel_label(int(r), int(c)) for r, c in zip(kr.tolist(), kc.tolist(), strict=True))
    return TensorLayer(q, kk, v, 1.0, toks_q, toks_k, use_scaling=False)


# ---------------------------------------------------------------- images and kernels
def pattern(name: str, size: int) -> np.ndarray:
    """A built-in grey image ``[1, size, size]`` in 0..1: a checkerboard, a digit-like glyph (a 2), a photo-like
    gradient (soft light from the top left, a disc, a faint fixed texture)."""
    size = check_int("image_size", size, 3, MAX_SIDE)
    y, x = np.mgrid[0:size, 0:size] / max(size - 1, 1)
    if name == "checker":
        cell = max(1, size // 8)
        img = ((np.arange(size)[:, None] // cell + np.arange(size)[None, :] // cell) % 2).astype(np.float64)
    elif name == "glyph":
        img = _glyph(x, y, size)
    elif name == "gradient":
        light = 1 - 0.6 * np.hypot(x - 0.15, y - 0.1)
        disc = 0.35 * (np.hypot(x - 0.62, y - 0.6) < 0.22)
        texture = 0.05 * np.sin(23 * x + 7 * y) * np.sin(17 * y - 5 * x)
        img = np.clip(light + disc + texture, 0, 1)
    else:
        raise unknown_option("pattern", name, PATTERNS)
    return img[None].astype(np.float32)


def _glyph(x: np.ndarray, y: np.ndarray, size: int) -> np.ndarray:
    """A "2": an arc, a diagonal and a base stroke, each a band of width ~1/8 of the image."""
    w = max(0.07, 1.2 / size)
    arc = (np.abs(np.hypot(x - 0.5, y - 0.32) - 0.22) < w) & (y < 0.42)
    diag = (np.abs((x - 0.72) + 0.95 * (y - 0.42)) < w * 1.3) & (y >= 0.35) & (y <= 0.82)
    base = (np.abs(y - 0.8) < w) & (x > 0.22) & (x < 0.8)
    return (arc | diag | base).astype(np.float64)


def kernel_preset(name: str, k: int) -> np.ndarray:
    """A K×K kernel ``[K, K]``: a box ``blur``; ``sobel`` (horizontal gradient, 3×3 in the centre); ``sharpen``
    (2·identity − box); ``shift`` (one-hot on the tap right of centre: the output at x is the input at x + 1)."""
    out = np.zeros((k, k))
    c = k // 2
    if name == "blur":
        return np.full((k, k), 1.0 / (k * k))
    if name == "sobel":
        if k < 3:
            raise ConfigError("the Sobel kernel needs K ≥ 3", "k", "conv_sobel_k", k=k)
        out[c - 1 : c + 2, c - 1 : c + 2] = [[-1, 0, 1], [-2, 0, 2], [-1, 0, 1]]
        return out
    if name == "sharpen":
        out[c, c] = 2.0
        return out - 1.0 / (k * k)
    if name == "shift":
        out[c, min(c + 1, k - 1)] = 1.0
        return out
    raise unknown_option("kernel", name, KERNELS[:-1])


def parse_kernel(text: str) -> np.ndarray:
    """A typed kernel: rows separated by ``;`` or new lines, numbers by spaces or commas (``1 2 1; 2 4 2; 1 2 1``).

    :class:`ConfigError` (catalog key) unless it is a square of finite numbers with an odd side up to MAX_K.
    """
    rows = [r for r in (line.replace(",", " ").split() for line in str(text).replace(";", "\n").splitlines()) if r]
    try:
        values = [[float(v) for v in r] for r in rows]
    except ValueError:
        raise ConfigError(
            f"the kernel must be numbers (rows separated by ';'), got {text[:40]!r}",
            "kernel_text",
            "conv_kernel_numbers",
            text=str(text)[:40],
        ) from None
    if not rows or any(len(r) != len(rows) for r in values):
        raise ConfigError(
            "the kernel must be square: K rows of K numbers, e.g. 0 1 0; 1 -4 1; 0 1 0",
            "kernel_text",
            "conv_kernel_square",
        )
    mat = np.array(values, dtype=np.float64)
    if not np.all(np.isfinite(mat)):
        raise ConfigError(
            f"the kernel must be finite numbers, got {text[:40]!r}",
            "kernel_text",
            "conv_kernel_numbers",
            text=str(text)[:40],
        )
    k = mat.shape[0]
    if k % 2 == 0:
        raise ConfigError(
            f"the kernel size K ({k}) must be odd: use {k - 1} or {k + 1}",
            "kernel_text",
            "conv_k_even",
            k=k,
            lo=k - 1,
            hi=k + 1,
        )
    if k > MAX_K:
        raise ConfigError(
            f"the kernel has {k}×{k} taps; the page builds at most {MAX_K}×{MAX_K} heads",
            "kernel_text",
            "conv_k_max",
            k=k,
            m=MAX_K,
        )
    return mat


def per_channel(kernel2d: np.ndarray, channels: int) -> np.ndarray:
    """The same K×K kernel on every channel, without mixing: ``[C, C, K, K]`` with zero off-diagonal blocks."""
    k = kernel2d.shape[-1]
    w = np.zeros((channels, channels, k, k))
    for c in range(channels):
        w[c, c] = kernel2d
    return w


def load_image(data: bytes) -> np.ndarray:
    """A PNG or JPEG file's pixels ``[C, H, W]`` float32 in 0..1 (C = 1 grey or 3 RGB), at most MAX_SIDE a side.

    :class:`ConfigError` (catalog keys ``conv_image_*``) for more than 2 MiB, a file that is not an image, another
    format, or an animated image. Transparency is flattened onto white; palettes and 16-bit grey are converted.
    """
    from PIL import Image, UnidentifiedImageError

    if len(data) > MAX_UPLOAD_BYTES:
        raise ConfigError(
            f"the file has {len(data) / 2**20:.1f} MiB; images up to 2 MiB are taken",
            "image",
            "conv_image_large",
            mib=f"{len(data) / 2**20:.1f}",
        )
    try:
        img = Image.open(io.BytesIO(data))
        img.load()
    except (UnidentifiedImageError, OSError, ValueError, Image.DecompressionBombError):
        raise ConfigError("the file is not a PNG or JPEG image", "image", "conv_image_unreadable") from None
    if img.format not in IMAGE_FORMATS:
        raise ConfigError(
            f"{img.format} images are not taken: use a PNG or JPEG file",
            "image",
            "conv_image_format",
            fmt=str(img.format),
        )
    if getattr(img, "is_animated", False) or getattr(img, "n_frames", 1) > 1:
        raise ConfigError("animated images are not taken: use a still PNG or JPEG", "image", "conv_image_animated")
    return _pixels(img)


def _pixels(img: Any) -> np.ndarray:
    from PIL import Image

    if img.mode in ("RGBA", "LA", "PA") or (img.mode == "P" and "transparency" in img.info):
        rgba = img.convert("RGBA")
        back = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
        img = Image.alpha_composite(back, rgba).convert("RGB" if img.mode != "LA" else "L")
    grey = img.mode in ("L", "1", "I", "I;16", "F") or (
        img.mode == "RGB" and np.ptp(np.asarray(img, dtype=np.int16), axis=2).max(initial=0) == 0
    )
    if img.mode in ("I", "I;16", "F"):
        a = np.asarray(img, dtype=np.float64)
        img = Image.fromarray(np.uint8(255 * (a - a.min()) / max(np.ptp(a), 1e-12)))
    img = img.convert("L" if grey else "RGB")
    scale = min(1.0, MAX_SIDE / max(img.size))
    if scale < 1:
        img = img.resize((max(3, round(img.width * scale)), max(3, round(img.height * scale))), Image.Resampling.BOX)
    if min(img.size) < 3:
        raise ConfigError(
            f"the image is {img.width}×{img.height} pixels; at least 3×3 is needed",
            "image",
            "conv_image_small",
            w=img.width,
            h=img.height,
        )
    a = np.asarray(img, dtype=np.float32) / 255.0
    return a[None] if a.ndim == 2 else np.ascontiguousarray(a.transpose(2, 0, 1))
