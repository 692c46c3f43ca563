"""Helpers for reading figures back in tests."""

from __future__ import annotations

import base64
import json
from typing import Any

import numpy as np

from attn_core.views import PAGES

_DTYPES = {
    "f4": np.float32,
    "f8": np.float64,
    "i1": np.int8,
    "i2": np.int16,
    "i4": np.int32,
    "u1": np.uint8,
    "u2": np.uint16,
    "u4": np.uint32,
    "i8": np.int64,
}


def arr(value: Any) -> np.ndarray:
    """Decode a plotly JSON array (plain list or ``{"dtype", "bdata", "shape"}``) to numpy."""
    if isinstance(value, dict) and "bdata" in value:
        out = np.frombuffer(base64.b64decode(value["bdata"]), dtype=_DTYPES[value["dtype"]])
        if "shape" in value:
            shape = value["shape"]
            shape = [int(s) for s in shape.split(",")] if isinstance(shape, str) else shape
            out = out.reshape(shape)
        return out
    return np.array(value, dtype=float)


def decoded(node: Any) -> Any:
    """A plotly JSON node with every base64 typed array as the JSON list it holds, NaN as null (as JSON writes
    it): a spec sent with lists (a small figure, ``figures.base.PLAIN_ARRAYS_MAX``) and one with typed arrays
    compare number by number."""
    if isinstance(node, dict):
        if "bdata" in node:
            return json.loads(json.dumps(arr(node).tolist()).replace("NaN", "null"))
        return {k: decoded(v) for k, v in node.items()}
    if isinstance(node, list):
        return [decoded(v) for v in node]
    if isinstance(node, float) and node != node:
        return None
    return node


def chart_specs(at, phone: bool = True) -> list[dict]:
    """The plotly JSON of every chart an AppTest run drew; without ``phone``, less the one-head copies of head
    grids drawn for a phone (``ui.show_heads``, chart key ``<grid key>__one``)."""
    return [json.loads(c.proto.spec) for c in at.get("plotly_chart") if phone or not c.proto.id.endswith("__one")]


LAYER_ARGS = {"d_model", "mask_kind", "pad_len", "use_scaling", "temperature", "seed"}


def seeded(fn, n_heads, n_kv_heads, head_dim, tokens_q, tokens_k=None, **kw):
    """``fn`` (``pooled_attention`` or ``head_window``) on the seeded layer these arguments describe.

    The layer's own arguments (``mask_kind``, ``seed`` ...) make the :class:`SeededLayer`; the rest go to ``fn``.
    """
    from attn_core.attention.sources import SeededLayer

    layer_kw = {k: kw.pop(k) for k in list(kw) if k in LAYER_ARGS}
    keys = None if tokens_k is None else tuple(tokens_k)
    return fn(SeededLayer(n_heads, n_kv_heads, head_dim, tuple(tokens_q), keys, **layer_kw), **kw)


# Small settings that draw every view of each page through the exporter, which uses the same builders as the pages
# (attn_core.views): the colour-scale and contrast tests walk every chart the app can show.
PAGE_ARGS = {p.name: p.checks.cli for p in PAGES}


def cli_specs(page_name: str, argv: list[str]) -> list[dict]:
    """The plotly JSON of every chart the command line draws for ``--page page_name`` and ``argv``, fonts applied
    as the page's ``ui.show_figure`` and the exporter apply them: what the parity tests compare with the page."""
    import plotly.io as pio

    from attn_core import figures
    from attn_core.export import params_from
    from attn_core.runtime.device import pick_device
    from attn_core.views import page

    spec = page(page_name)
    params, args = params_from(spec, ["--page", page_name, *argv])
    style = figures.Style()
    out = []
    # on the device the page computes on (ATTN_DEVICE, as ui.device): a GPU's float32 differs from the CPU's
    for view in spec.views(params, style, getattr(args, "view", None), device=str(pick_device())):
        figures.apply_fonts(view.figure, style)
        out.append(json.loads(pio.to_json(view.figure, validate=False)))
    return out


def cli_file(argv: list[str], view: str, ext: str) -> str:
    """The name the command line gives view ``view`` of ``argv`` in format ``ext``: page, view, shape, mask,
    language and the digest of the page state (:func:`attn_core.views.base.export_stem`, checked by hand in
    ``tests/core/test_export_names.py``)."""
    from attn_core.export import page_state, params_from
    from attn_core.views import page
    from attn_core.views.base import export_stem

    spec = page(argv[argv.index("--page") + 1])
    params, args = params_from(spec, argv)
    values, state = page_state(spec, params, args)
    return f"{export_stem(spec.name, view, values, state, args.lang)}.{ext}"


def assert_same_charts(shown_all: list[dict], cli: list[dict], keys: tuple[str, ...]) -> None:
    """The page's charts and the command line's are the same charts: titles, trace counts, and the numeric
    ``keys`` of every trace equal to the bit (the same code on the same input), a table's cells equal."""
    assert len(shown_all) == len(cli) > 0
    for shown, written in zip(shown_all, cli, strict=True):
        assert shown["layout"]["title"]["text"] == written["layout"]["title"]["text"]
        assert len(shown["data"]) == len(written["data"])
        for a, b in zip(shown["data"], written["data"], strict=True):
            for key in keys:
                if key in a and (isinstance(a[key], dict) or (a[key] and isinstance(a[key][0], (int, float)))):
                    np.testing.assert_array_equal(arr(a[key]), arr(b[key]))
            if a.get("type") == "table":
                assert a["cells"]["values"] == b["cells"]["values"]


def grid_panel(spec: dict, i: int) -> tuple[np.ndarray, list[str], list[str]]:
    """Panel ``i`` of a head-grid spec (one heatmap, the panels in it): its weights ``[R, C]``, one per token
    cell, and its row and column labels as drawn (zero-width suffixes removed), read from the cells inside
    panel ``i``'s frame (the ``i``-th rectangle above the heatmap). Checks that each token's block of
    ``sy × sy`` cells holds one value and that the frame holds exactly the panel's cells."""
    grid = spec["layout"]["meta"]["head_grid"]
    heat = next(t for t in spec["data"] if t["type"] == "heatmap")
    frame = [s for s in spec["layout"]["shapes"] if s["layer"] == "above" and s.get("name") != "focus"][i]
    x0, x1, y0, y1 = (int(round(frame[k] + 0.5)) for k in ("x0", "x1", "y0", "y1"))
    sx, sy = grid["sx"], grid["sy"]
    z = arr(heat["z"])[y0:y1, x0:x1]
    r, c = z.shape[0] // sy, z.shape[1] // sx
    assert (r, c) == (grid["rows"], grid["cols"]) and z.shape == (r * sy, c * sx)
    cells = z[::sy, ::sx]
    np.testing.assert_array_equal(z, np.repeat(np.repeat(cells, sy, axis=0), sx, axis=1))
    plain = (
        [s.replace("\u200b", "") for s in heat["y"][y0:y1:sy]],
        [s.replace("\u200b", "") for s in heat["x"][x0:x1:sx]],
    )
    return cells, plain[0], plain[1]


def grid_heads(spec: dict) -> np.ndarray:
    """Every panel of a head-grid spec, in order: ``[Hs, R, C]`` (NaN = masked), from :func:`grid_panel`."""
    return np.stack([grid_panel(spec, i)[0] for i in range(len(spec["layout"]["meta"]["head_grid"]["heads"]))])


def grid_labels(spec: dict) -> tuple[list[str], list[str]]:
    """A head grid's row (query) and column (key) labels, as every panel has them."""
    _, labels_q, labels_k = grid_panel(spec, 0)
    return labels_q, labels_k


# ---------------------------------------------------------------- contrast (WCAG 2)
def luminance(colour: tuple[float, ...]) -> float:
    lin = [(v / 255) / 12.92 if v <= 10.31 else ((v / 255 + 0.055) / 1.055) ** 2.4 for v in colour[:3]]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def over(colour: tuple[float, ...], under: tuple[float, ...]) -> tuple[float, ...]:
    """``colour`` (with its alpha) painted over the opaque ``under``."""
    a = colour[3]
    return (*(colour[i] * a + under[i] * (1 - a) for i in range(3)), 1.0)


def contrast(a: tuple[float, ...], b: tuple[float, ...]) -> float:
    hi, lo = sorted((luminance(a), luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)
