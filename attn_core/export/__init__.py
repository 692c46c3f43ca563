"""Command-line export of the app's figures for slide decks, no UI needed.

    python -m attn_core.export --page heatmaps --n-heads 8 --n-kv-heads 2 --d-k 16 \\
        --text "The cat sat on the mat" --mask causal --format png,svg,csv --out slides/
    python -m attn_core.export --page kv_sharing --n-heads 8 --n-kv-heads 2 --view diagram,costs --format svg,csv
    python -m attn_core.export --page kv_cache --model llama-3-8b --seq-len 8192 --stack-weights --decode \\
        --dec-steps 64 --format png,csv

A lecture deck becomes a PDF, a PowerPoint file and one offline HTML file with ``--deck``
(:mod:`attn_core.export.deck`)::

    python -m attn_core.export --deck gqa_and_the_kv_cache --format pdf,pptx,html --lang zh --out decks/

Every page of :data:`attn_core.views.PAGES` is a ``--page``; its options are the
fields of its ``Params`` (``python -m attn_core.export --page kv_cache --help``),
with the page's defaults, and its figures come from the page's own view model,
so a slide matches what the page shows for the same parameters and seed.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Mapping
from pathlib import Path

from attn_core import figures
from attn_core.decks import SECTION_PREFIX, STEP_KEYS, VIEWER_KEYS
from attn_core.figures.slides import PRESET_NAMES
from attn_core.render import ALL_FORMATS, IMAGE_FORMATS, RenderError, export_bytes
from attn_core.runtime.config import ConfigError, unknown_option
from attn_core.views import PAGES, PageSpec, page
from attn_core.views.base import cli_flag, controls, defaults, export_stem, url_text

TYPES = {"int": int, "pow2": int, "kv_heads": int, "seed": int, "float": float, "choice": str, "text": str}


def _common(p: argparse.ArgumentParser, spec: PageSpec | None) -> None:
    p.add_argument("--page", default="heatmaps", help=f"one of: {', '.join(s.name for s in PAGES)}")
    if spec is not None and spec.view_names:
        p.add_argument("--view", default=None, help=f"comma-separated or all: {', '.join(spec.view_names)}")
    p.add_argument("--format", default="png", help=f"comma-separated: {', '.join(ALL_FORMATS)}")
    p.add_argument("--out", default="export", help="output folder (created if missing)")
    p.add_argument("--lang", default="en", choices=["en", "zh"])
    p.add_argument("--present", action="store_true", help="large fonts and high-contrast colours")
    p.add_argument(
        "--size",
        default="screen",
        choices=list(PRESET_NAMES),
        help="image size: screen (as on the page), slide (1920x1080), half (960x1080), paper (a column)",
    )
    p.add_argument("--device", default="cpu", help="cpu, cuda or auto")


def parser(spec: PageSpec | None = None) -> argparse.ArgumentParser:
    """The options of ``spec``'s page: one per field of its ``Params`` (its defaults), plus the common ones."""
    spec = spec or PAGES[0]
    p = argparse.ArgumentParser(prog="python -m attn_core.export", description=__doc__.split("\n\n")[0])
    _common(p, spec)
    values = defaults(spec.params)
    for name, ctl in controls(spec.params).items():
        if name == spec.view_field:
            continue  # the command line picks views with --view
        default = values[name]
        flag = cli_flag(name, ctl, default)
        if ctl.kind == "bool":
            action = "store_false" if default else "store_true"
            p.add_argument(flag, dest=name, action=action, default=default, help=ctl.cli_help or None)
        else:
            p.add_argument(flag, dest=name, type=TYPES[ctl.kind], default=default, help=ctl.cli_help or None)
    return p


def params_from(spec: PageSpec, argv: list[str]) -> tuple[object, argparse.Namespace]:
    """The page's ``Params`` for a command line, and the parsed options."""
    args = parser(spec).parse_args(argv)
    values = {name: getattr(args, name) for name in controls(spec.params) if name != spec.view_field}
    given = {a.split("=", 1)[0] for a in argv if a.startswith("--")}
    for name, ctl in controls(spec.params).items():
        if cli_flag(name, ctl, defaults(spec.params)[name]) in given:
            for other, value in ctl.implies:
                if cli_flag(other, controls(spec.params)[other], defaults(spec.params)[other]) not in given:
                    values[other] = value
    return spec.params(**values), args


def page_state(spec: PageSpec, params: object, args: argparse.Namespace) -> tuple[dict, dict[str, str]]:
    """The page's parameters (every field) and its state as the page's link would hold it (every field off its
    default as URL text, presentation mode, the language): what :func:`~attn_core.views.base.export_stem` names files by."""
    values = {f.name: getattr(params, f.name) for f in dataclasses.fields(params)}
    base = defaults(spec.params)
    state = {k: url_text(v) for k, v in values.items() if k in base and v != base[k]}
    if args.present:
        state["present"] = "true"
    if args.lang != "en":
        state["lang"] = args.lang
    return values, state


def link_value(kind: str, name: str, text: str) -> object:
    """A link parameter's text as the value of a control of ``kind`` (what the page's widget reads from the link)."""
    try:
        if kind in ("int", "pow2", "kv_heads", "seed"):
            return int(float(text))
        if kind == "float":
            return float(text)
    except ValueError as exc:
        raise ConfigError(f"{name} = {text!r} is not a number", name, "link_value", name=name, value=text) from exc
    if kind == "bool":
        return text.lower() in ("1", "true", "yes", "on")
    return text


def params_from_link(spec: PageSpec, link: Mapping[str, str]) -> tuple[object, dict[str, int]]:
    """The page's ``Params`` for the state a link holds, as the page opened from that link has them: every control
    the link names takes its value, every other one its default. Also the link's steppers (``slide``, ``kv_token``:
    the 1-based step of a slide mode's Previous/Next). Names that are neither, but every page may hold (presentation
    mode, a section's open state), are left to the viewer; any other name is a :class:`ConfigError`."""
    ctls = controls(spec.params)
    values = defaults(spec.params)
    steps: dict[str, int] = {}
    for name, text in link.items():
        if name in STEP_KEYS:
            steps[name] = int(link_value("int", name, text))
        elif name in ctls:
            values[name] = link_value(ctls[name].kind, name, text)
        elif name not in VIEWER_KEYS and not name.startswith(SECTION_PREFIX):
            raise ConfigError(
                f"the page {spec.name} has no control {name!r}", name, "link_param", page=spec.name, name=name
            )
    return spec.params(**values), steps


def run(argv: list[str] | None = None) -> list[Path]:
    """Parse ``argv``, build the page's figures and write them; returns the written paths."""
    argv = list(sys.argv[1:] if argv is None else argv)
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--page", default=PAGES[0].name)
    spec = page(pre.parse_known_args(argv)[0].page)
    params, args = params_from(spec, argv)
    formats = [f.strip().lower() for f in args.format.split(",") if f.strip()]
    bad = [f for f in formats if f not in ALL_FORMATS]
    if bad or not formats:
        raise unknown_option("format", ", ".join(bad) or "(none)", ALL_FORMATS)
    if args.device == "auto":
        from attn_core.runtime.device import pick_device

        args.device = str(pick_device())
    style = figures.Style(present=args.present, lang=args.lang)
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    values, state = page_state(spec, params, args)
    written = []
    for view in spec.views(params, style, getattr(args, "view", None), args.device):
        figures.apply_fonts(view.figure, style)
        stem = export_stem(spec.name, view.name, values, state, args.lang)
        for fmt in formats:
            path = out_dir / (
                f"{stem}.{fmt}" if args.size == "screen" or fmt not in IMAGE_FORMATS else f"{stem}_{args.size}.{fmt}"
            )
            path.write_bytes(export_bytes(view.figure, fmt, view.data, args.size, style))
            written.append(path)
    return written


def main(argv: list[str] | None = None) -> int:
    try:
        for path in run(argv):
            print(path)
    except (ConfigError, RenderError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0
