"""The view-model layer's common ground: a chart (:class:`View`), a page's parameters (:class:`Control`), a page (:class:`PageSpec`).

Each page has one module in :mod:`attn_core.views` holding its view model:

- a frozen ``Params`` dataclass whose fields are the page's controls. Each field
  is made with :func:`control` and so carries its default, its range or options
  and its help: the one source for the page's widgets (:func:`ui.control`), the
  command line (:mod:`attn_core.export`), the URL keys (the field names) and the
  fuzz tests' ranges;
- step functions (Params in, result dataclasses out, cacheable) that do the
  computing through the engine modules;
- ``views(params, style, which)``, built only from those steps and the figure
  builders of :mod:`attn_core.figures`: what the command line exports.

The page script calls the same steps and builders, in the same order, with its
widgets in between, so the page and the command line cannot drift apart.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from attn_core.attention.tokens import MAX_TEXT_CHARS, MAX_TEXT_TOKENS, synthetic_tokens, tokenize
from attn_core.runtime.config import MAX_SEQ_LEN

KINDS = ("int", "float", "pow2", "choice", "bool", "text", "kv_heads", "seed")
DEFAULT_TEXT = "The cat sat on the mat because it was tired ."  # the pages' example sentence


@dataclass(frozen=True)
class View:
    """One chart: a file-safe ``name``, the plotly ``figure`` and the numbers behind it.

    ``source`` is the DataFrame, or a function that builds it: tables of every
    cell of large maps take longer than the chart itself, so pages build them only
    when a CSV is asked for.
    """

    name: str
    figure: go.Figure
    source: pd.DataFrame | Callable[[], pd.DataFrame]

    @property
    def data(self) -> pd.DataFrame:
        return self.source() if callable(self.source) else self.source


@dataclass(frozen=True)
class Shown:
    """What a page shows on one slide of its slide mode (presentation mode): its ``views`` (charts) and the
    ``sentences`` it writes beside them for those settings (plain text with the page's ``**bold**``)."""

    views: list[View]
    sentences: list[str] = field(default_factory=list)


def step_at(steps: dict[str, int], key: str, n: int) -> int:
    """The 0-based step of a slide mode's stepper ``key`` (``steps`` holds the link's 1-based ones; the first step
    when the link names none), within ``0 .. n - 1``."""
    return min(max(int(steps.get(key, 1)) - 1, 0), max(n - 1, 0))


def matrix_frame(
    mat: np.ndarray, rows: list[str], cols: list[str], row_name: str, col_name: str, value_name: str
) -> pd.DataFrame:
    """Long-format table of a matrix ``[R, C]``: one row per cell with both labels and positions."""
    r, c = mat.shape
    return pd.DataFrame(
        {
            f"{row_name}_pos": np.repeat(np.arange(r), c),
            row_name: np.repeat(np.asarray(rows, dtype=object), c),
            f"{col_name}_pos": np.tile(np.arange(c), r),
            col_name: np.tile(np.asarray(cols, dtype=object), r),
            value_name: mat.reshape(-1).astype(np.float64),
        }
    )


@dataclass(frozen=True)
class Control:
    """How one ``Params`` field is set: on the page, in the URL and on the command line.

    ``kind``: ``int``, ``float`` (a slider from ``lo`` to ``hi`` by ``step``), ``pow2``
    (the powers of two from ``lo`` to ``hi``), ``choice`` (one of ``options``), ``bool``,
    ``text`` (at most ``hi`` characters), ``kv_heads`` (a divisor of the field
    ``n_heads``) or ``seed`` (the sidebar's global seed). ``help`` is the catalog key
    of the widget's help; ``cli`` the command-line flag (default ``--field-name``;
    for a bool that defaults to True, the flag that turns it off) and ``cli_help`` its
    English help. ``data`` marks a range that the page narrows from the data (a head
    index, a window start): the static range is the widest one. ``cli_only``: a
    command-line switch with no widget (what to export). ``implies``: fields that
    giving this flag on the command line also sets, e.g. ``--seq-len`` alone means
    synthetic tokens: ``(("source", "synthetic"),)``.
    """

    kind: str
    lo: float | None = None
    hi: float | None = None
    step: float | None = None
    options: tuple[str, ...] = ()
    help: str | None = None
    cli: str | None = None
    cli_help: str = ""
    data: bool = False
    cli_only: bool = False
    implies: tuple[tuple[str, Any], ...] = ()

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"control kind {self.kind!r} is not one of {KINDS}")


def control(default: Any, kind: str, **how: Any) -> Any:
    """A ``Params`` field with its :class:`Control` (``dataclasses.field`` with the control as metadata)."""
    return field(default=default, metadata={"control": Control(kind, **how)})


def controls(params: type | object) -> dict[str, Control]:
    """The :class:`Control` of every field of a ``Params`` class (or instance) that has one, in field order."""
    return {f.name: f.metadata["control"] for f in dataclasses.fields(params) if "control" in f.metadata}


def defaults(params: type) -> dict[str, Any]:
    """The default of every field of a ``Params`` class."""
    return {f.name: f.default for f in dataclasses.fields(params)}


def cli_flag(name: str, ctl: Control, default: Any) -> str:
    """The command-line flag of field ``name``: ``--n-heads``; ``--no-scaling`` for a bool that defaults to True."""
    if ctl.cli:
        return ctl.cli
    stem = name.replace("_", "-")
    return f"--no-{stem}" if ctl.kind == "bool" and default else f"--{stem}"


@dataclass(frozen=True)
class Scenario:
    """A benchmark scenario of a page (``bench/bench.py``, AppTest): the page opened at ``query``, then the
    control ``slider`` moved between ``move[0]`` and ``move[1]``; ``target_ms`` is the median rerun it should stay
    under."""

    name: str
    query: dict[str, str]
    slider: str
    move: tuple[Any, Any]
    target_ms: float = 100


#: URL states at the extremes of a seeded layer's shape (one head, MQA and MHA at the most heads, d_k 1 and the
#: largest, the shortest and longest sequence, each mask): the heatmaps and KV sharing pages' fuzz extremes
HEAD_SHAPES: tuple[dict[str, str], ...] = (
    {},
    {"n_heads": "1", "n_kv_heads": "1", "head_dim": "1", "source": "synthetic", "seq_len": "1"},
    {"n_heads": "64", "n_kv_heads": "1"},
    {"n_heads": "64", "n_kv_heads": "64"},
    {"head_dim": "256"},
    {"source": "synthetic", "seq_len": "8192"},
    {"mask": "causal", "source": "synthetic", "seq_len": "2"},
    {"mask": "padding", "source": "synthetic", "seq_len": "1"},
    {"n_heads": "64", "n_kv_heads": "64", "head_dim": "256", "source": "synthetic", "seq_len": "64"},
)


@dataclass(frozen=True)
class PageChecks:
    """What the tests and the benchmarks do with a page, kept with its view model (``CHECKS``), so that adding a
    page to :data:`attn_core.views.PAGES` adds it to the browser test, the fuzz, the colour checks, the
    benchmark and the simulated class.

    ``slider`` is a slider that redraws the chart ``chart`` on the view ``query`` opens (a URL query without
    ``?``; empty for the page's first view): the browser test presses it ``presses`` times, the browser benchmark
    and the class hall (``bench/hall.py``) move it; ``other_sliders`` are more (slider, chart) pairs the browser
    benchmark can time. ``scenarios`` are the AppTest benchmark's (the first at the defaults). ``cli``: the
    command-line arguments that draw every view small (colour scales, contrast). The fuzz crosses each value of
    the page's view control with each of ``extremes`` (URL states at the page's limits), tries ``sub_choices``
    (view -> control -> values) at the first extremes, and ``cases`` as they are; ``fuzz_sets`` random URL sets
    and ``widget_steps`` random widget moves (fewer where each run is slow)."""

    slider: str
    chart: str
    scenarios: tuple[Scenario, ...]
    cli: str
    query: str = ""
    presses: int = 2
    other_sliders: tuple[tuple[str, str], ...] = ()
    extremes: tuple[dict[str, str], ...] = ()
    sub_choices: dict[str, dict[str, tuple[str, ...]]] = field(default_factory=dict)
    cases: tuple[dict[str, str], ...] = ()
    fuzz_sets: int = 30
    widget_steps: int = 40

    @property
    def url_tail(self) -> str:
        """``?query`` of the slider's view, or "" when the page opens on it."""
        return f"?{self.query}" if self.query else ""


@dataclass(frozen=True)
class PageSpec:
    """One page of the app, listed once in :data:`attn_core.views.PAGES`.

    ``name`` is the page's file stem (``app_pages/<name>.py``), its URL path, its
    command-line name and the name of its view-model module ``attn_core.views.<name>``,
    which defines ``Params``, ``views(params, style, which=None, device="cpu")`` and,
    when the page picks one view at a time, ``VIEW_FIELD`` (the Params field that
    picks it) and ``VIEW_NAMES`` (the views the command line can export). The module is
    imported on first use, so listing the pages costs nothing.
    """

    name: str
    title_key: str
    icon: str
    default: bool = False

    @property
    def script(self) -> str:
        return f"app_pages/{self.name}.py"

    @property
    def module(self) -> ModuleType:
        return importlib.import_module(f"attn_core.views.{self.name}")

    @property
    def params(self) -> type:
        return self.module.Params

    @property
    def view_field(self) -> str | None:
        return getattr(self.module, "VIEW_FIELD", None)

    @property
    def view_names(self) -> tuple[str, ...]:
        return tuple(getattr(self.module, "VIEW_NAMES", ()))

    @property
    def checks(self) -> PageChecks:
        """What the tests and benchmarks do with the page (its view model's ``CHECKS``)."""
        return self.module.CHECKS

    def views(self, params: Any, style: Any, which: Any = None, device: str = "cpu") -> list[View]:
        """The page's charts for ``params`` (what the command line writes)."""
        return self.module.views(params, style, which, device)

    def slide(self, params: Any, style: Any, steps: dict[str, int] | None = None, device: str = "cpu") -> Shown:
        """What the page shows in slide mode for ``params`` and the link's steppers ``steps`` (``slide``: the
        section or step a slide shows, 1-based): the module's ``slide_shown`` where the page shows one section or
        step a slide, else the charts of its current view (:attr:`view_field`), without sentences."""
        hook = getattr(self.module, "slide_shown", None)
        if hook is not None:
            return hook(params, style, dict(steps or {}), device)
        current = getattr(params, self.view_field) if self.view_field else None
        return Shown(self.views(params, style, current if current in self.view_names else None, device))


def url_text(value: Any) -> str:
    """A control's value as its link writes it: ``true``/``false`` for a switch, else ``str(value)``."""
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


# Fields that name a page's shape in its export file names, and their prefixes.
SHAPE_FIELDS = (("model", ""), ("attn_from", ""), ("n_heads", "h"), ("n_kv_heads", "kv"), ("head_dim", "dk"))


def _file_safe(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-") or "x"


def export_stem(page: str, view: str, values: dict[str, Any], state: dict[str, str], lang: str) -> str:
    """The file stem of a chart's exports: ``<page>_<view>_<shape>_<mask>_<lang>_<digest>``.

    ``values`` are the page's parameters (defaults included): the shape is built from those of
    :data:`SHAPE_FIELDS` it has (``h8-kv2-dk16``, a model's name) and the mask from ``mask`` (each part
    only where the page has it). ``state`` is the page state as its link holds it (every control off its
    default, the text, the seed and presentation mode included, as :func:`url_text`): its digest, 6 hex
    digits, differs for any two different views, so their files never overwrite each other.
    """
    shape = "-".join(f"{prefix}{_file_safe(url_text(values[name]))}" for name, prefix in SHAPE_FIELDS if name in values)
    parts = [page, view, shape, str(values.get("mask", "")), lang]
    text = "&".join(f"{k}={v}" for k, v in sorted(state.items()))
    parts.append(hashlib.blake2b(text.encode("utf-8"), digest_size=3).hexdigest())
    return "_".join(_file_safe(p) for p in parts if p)


def with_values(params: Any, **changes: Any) -> Any:
    """``params`` with some fields replaced (``dataclasses.replace``), the only way a frozen Params changes."""
    return dataclasses.replace(params, **changes)


def view_list(which: str | Sequence[str] | None, names: Sequence[str], default: Sequence[str]) -> list[str]:
    """The view names a command line asked for: comma-separated or a list, ``all``, or None for ``default``."""
    from attn_core.runtime.config import unknown_option

    if which is None:
        return list(default)
    items = [w.strip() for w in which.split(",")] if isinstance(which, str) else [str(w) for w in which]
    items = [w for w in items if w]
    if items == ["all"]:
        return list(names)
    for w in items:
        if w not in names:
            raise unknown_option("view", w, names)
    return items


def check_choices(params: Any) -> None:
    """Raise :class:`~attn_core.runtime.config.ConfigError` for a ``choice`` field whose value is not one of its options.

    Call from a ``Params.__post_init__``; ``None`` stands for "follow the data" and is always allowed.
    """
    from attn_core.runtime.config import unknown_option

    for name, ctl in controls(params).items():
        value = getattr(params, name)
        if ctl.kind == "choice" and value is not None and value not in ctl.options:
            raise unknown_option(name, value, ctl.options)


@dataclass(frozen=True)
class TokenInput:
    """The input-sequence fields a page's ``Params`` inherits: a typed text or synthetic tokens.

    ``--text`` on the command line implies ``source=text``, ``--seq-len`` alone ``source=synthetic``.
    """

    source: str = control("text", "choice", options=("text", "synthetic"), cli_help="text or synthetic tokens")
    text: str = control(
        DEFAULT_TEXT,
        "text",
        hi=MAX_TEXT_CHARS,
        cli_help="input text; its tokens become the sequence",
        implies=(("source", "text"),),
    )
    seq_len: int = control(
        16,
        "int",
        lo=1,
        hi=MAX_SEQ_LEN,
        help="help.seq_len_long",
        cli_help="synthetic tokens (with --source synthetic, implied when no --text is given)",
        implies=(("source", "synthetic"),),
    )

    @property
    def input_tokens(self) -> tuple[str, ...]:
        """The tokens of ``text`` (at most :data:`~attn_core.attention.tokens.MAX_TEXT_TOKENS`) or ``seq_len`` synthetic ones."""
        if self.source == "text":
            return tuple(tokenize(self.text, MAX_TEXT_TOKENS))
        return tuple(synthetic_tokens(self.seq_len))
