"""Command-line export of the app's figures for slide decks, no UI needed.

    python -m attn_core.export --page heatmaps --n-heads 8 --n-kv-heads 2 --d-k 16 \\
        --text "The cat sat on the mat" --mask causal --format png,svg,csv --out slides/
    python -m attn_core.export --page kv_sharing --n-heads 8 --n-kv-heads 2 --view diagram,costs --format svg,csv
    python -m attn_core.export --page kv_cache --model llama-3-8b --seq-len 8192 --stack-weights --decode \\
        --dec-steps 64 --format png,csv

The figures come from the same builders the pages use (:mod:`attn_core.views`),
so a slide matches what the page shows for the same parameters and seed.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from . import figures
from .config import ConfigError, check_int, unknown_option
from .render import ALL_FORMATS, RenderError, export_bytes
from .views import View


def _heatmap_views(args: argparse.Namespace, style: figures.Style) -> list[View]:
    from . import views
    from .longmaps import ZOOM_SIDE, head_window, pooled_attention
    from .tokens import synthetic_tokens, tokenize

    tokens_q = tokenize(args.text, 256) if args.text is not None else synthetic_tokens(args.seq_len)
    tokens_k = tokenize(args.cross_text, 256) if args.cross_text is not None else None
    layer = dict(
        d_model=None,
        mask_kind=args.mask,
        pad_len=args.pad_len,
        use_scaling=not args.no_scaling,
        temperature=args.temperature,
        seed=args.seed,
        device=args.device,
    )
    shape = (args.n_heads, args.n_kv_heads, args.d_k, tokens_q, tokens_k)
    view = args.view or "grid"
    wanted = set(view.split(",")) if view != "all" else {"grid", "zoom", "steps", "entropy"}
    head = 0 if args.head is None else args.head
    if wanted & {"zoom", "steps"} and not 0 <= head < args.n_heads:
        check_int("head", head, 0, args.n_heads - 1)
    out: list[View] = []
    if "grid" in wanted:
        side = figures.grid_side(args.n_heads)
        out.append(views.grid_view(pooled_attention(*shape, **layer, max_side=side, reduce=args.pool), style))
    if "zoom" in wanted:
        t_q, t_k = len(tokens_q), len(tokens_k or tokens_q)
        size = args.zoom_size or max(t_q, t_k)
        q0, k0 = min(args.q_start, max(0, t_q - size)), min(args.k_start, max(0, t_k - size))
        window = (q0, min(t_q, q0 + size), k0, min(t_k, k0 + size))
        pm = pooled_attention(*shape, **layer, max_side=ZOOM_SIDE, reduce=args.pool, heads=[head], window=window)
        out.append(views.grid_view(pm, style))
    if "steps" in wanted:
        hw = head_window(*shape, **layer, head=head, q_start=args.q_start, k_start=args.k_start)
        out.extend(views.step_views(hw, style))
    if "entropy" in wanted:
        pm = pooled_attention(*shape, **layer, max_side=8, entropy=True)
        out.append(views.entropy_view(pm.entropy, pm.tokens_q, args.n_heads, args.n_kv_heads, style))
    return out


def _saturation_views(args: argparse.Namespace, style: figures.Style) -> list[View]:
    from .fig_saturation import saturation_views

    seq_len = args.seq_len if args.text is None else max(2, len(args.text.split()))
    return saturation_views(
        d_k=args.d_k,
        seq_len=seq_len,
        n_samples=args.samples,
        seed=args.seed,
        distribution=args.dist,
        use_scaling=not args.no_scaling,
        temperature=args.temperature,
        row=args.row,
        style=style,
        device=args.device,
    )


def _kv_sharing_views(args: argparse.Namespace, style: figures.Style) -> list[View]:
    from .fig_kv import KV_VIEWS, kv_sharing_views
    from .tokens import tokenize

    wanted = KV_VIEWS if args.view in (None, "all") else [v.strip() for v in args.view.split(",") if v.strip()]
    return kv_sharing_views(
        n_heads=args.n_heads,
        n_kv_heads=args.n_kv_heads,
        head_dim=args.d_k,
        d_model=128 if args.d_model is None else args.d_model,
        tokens=tokenize(args.text, 256) if args.text is not None else None,
        seq_len=args.seq_len,
        seed=args.seed,
        dtype=args.dtype or "fp16",
        built_with=args.built_with,
        head=args.head,
        conv_source=args.conv_source,
        n_base=args.n_base,
        noise=args.noise,
        kv_first=args.kv_first,
        views=wanted,
        style=style,
        device=args.device,
    )


def _kv_cache_views(args: argparse.Namespace, style: figures.Style) -> list[View]:
    from .fig_memory import kv_cache_views

    return kv_cache_views(
        model=args.model,
        n_heads=args.n_heads,
        n_kv_heads=args.n_kv_heads,
        head_dim=args.d_k,
        n_layers=args.layers,
        dtype=args.dtype or "fp16",
        batch=args.batch,
        seq_len=args.seq_len,
        device_gib=args.device_gib,
        stack_weights=args.stack_weights,
        weights_dtype=args.weights_dtype,
        y_scale=args.y_scale,
        decode=args.decode,
        dec_layers=args.dec_layers,
        dec_steps=args.dec_steps,
        dec_prompt=args.dec_prompt,
        dec_batch=args.dec_batch,
        dec_dtype=args.dec_dtype,
        dec_wrong=args.dec_wrong,
        dec_recompute=not args.no_recompute,
        prefill_decode=args.prefill_decode,
        pd_tokens=args.pd_tokens,
        seed=args.seed,
        style=style,
        device=args.device,
    )


# page name -> builder of its views; pages register theirs here
PAGES: dict[str, Callable[[argparse.Namespace, figures.Style], list[View]]] = {
    "heatmaps": _heatmap_views,
    "saturation": _saturation_views,
    "kv_sharing": _kv_sharing_views,
    "kv_cache": _kv_cache_views,
}

# a page's own defaults for options shared with other pages (an option given on the command line wins)
PAGE_DEFAULTS: dict[str, dict[str, object]] = {
    "kv_cache": {"seq_len": 4096},
}


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m attn_core.export", description=__doc__.split("\n\n")[0])
    p.add_argument("--page", default="heatmaps", help=f"one of: {', '.join(PAGES)}")
    p.add_argument("--n-heads", type=int, default=8)
    p.add_argument("--n-kv-heads", type=int, default=2)
    p.add_argument("--d-k", type=int, default=16, help="head dimension d_k")
    p.add_argument(
        "--seq-len",
        type=int,
        default=16,
        help="synthetic tokens when no --text is given; "
        "kv_cache: the tokens S of the layouts table and the chart's marker (default 4096)",
    )
    p.add_argument("--text", default=None, help="input text; its tokens become the sequence")
    p.add_argument("--cross-text", default=None, help="key/value text for cross-attention")
    p.add_argument("--mask", default="none", choices=["none", "causal", "padding"])
    p.add_argument("--pad-len", type=int, default=None, help="real key length for --mask padding")
    p.add_argument("--no-scaling", action="store_true", help="do not divide the scores by sqrt(d_k)")
    p.add_argument("--temperature", type=float, default=1.0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--view",
        default=None,
        help="comma-separated or all; heatmaps: grid (default), zoom, steps, entropy; "
        "kv_sharing: diagram, maps, costs, mapping, convert (default: all)",
    )
    p.add_argument(
        "--head",
        type=int,
        default=None,
        help="heatmaps: the head of the zoom and step-by-step views (default 0); "
        "kv_sharing: the head whose maps the mapping view compares (default: the first that differs)",
    )
    p.add_argument("--pool", default="max", choices=["max", "mean"], help="heatmaps: what a pooled cell shows")
    p.add_argument("--zoom-size", type=int, default=None, help="heatmaps: zoom window, tokens a side (default all)")
    p.add_argument("--q-start", type=int, default=0, help="heatmaps: first query row of the zoom/steps window")
    p.add_argument("--k-start", type=int, default=0, help="heatmaps: first key of the zoom/steps window")
    p.add_argument("--samples", type=int, default=256, help="saturation: random sequences per d_k")
    p.add_argument("--dist", default="normal", choices=["normal", "projected"], help="saturation: q/k entries")
    p.add_argument("--row", type=int, default=0, help="saturation: the query row shown as bars")
    p.add_argument("--d-model", type=int, default=None, help="kv_sharing: model width d_model (default 128)")
    p.add_argument(
        "--dtype",
        default=None,
        help="kv_sharing: KV-cache element type of the costs view: "
        "fp32, fp16 (default) or int8; kv_cache: KV-cache element type: fp32, fp16 (default), bf16, "
        "fp8, int8 or int4",
    )
    p.add_argument(
        "--built-with",
        default="contiguous",
        choices=["contiguous", "interleaved"],
        help="kv_sharing: the mapping the checkpoint of the mapping view was trained with",
    )
    p.add_argument(
        "--conv-source",
        default="correlated",
        choices=["correlated", "random"],
        help="kv_sharing: the MHA layer the convert view converts",
    )
    p.add_argument(
        "--n-base",
        type=int,
        default=None,
        help="kv_sharing: base heads of a correlated source (default min(2, n_heads))",
    )
    p.add_argument("--noise", type=float, default=0.3, help="kv_sharing: noise of a correlated source's copies")
    p.add_argument(
        "--kv-first", type=int, default=0, help="kv_sharing: first KV group of the maps view when there are more than 8"
    )
    p.add_argument(
        "--model",
        default="llama-3-8b",
        help="kv_cache: a model preset id (assets/model_presets.json) "
        "or custom (then --n-heads, --n-kv-heads, --d-k and --layers)",
    )
    p.add_argument("--layers", type=int, default=12, help="kv_cache: layers of a custom model")
    p.add_argument("--batch", type=int, default=1, help="kv_cache: sequences in the batch")
    p.add_argument(
        "--device-gib",
        type=int,
        default=None,
        help="kv_cache: device memory in GiB (default: the GPU's own with --device cuda, else 80)",
    )
    p.add_argument("--stack-weights", action="store_true", help="kv_cache: put the preset's weights under the cache")
    p.add_argument("--weights-dtype", default="bf16", help="kv_cache: element type of the stacked weights")
    p.add_argument("--y-scale", default="log", choices=["log", "linear"], help="kv_cache: memory axis")
    p.add_argument(
        "--decode", action="store_true", help="kv_cache: run a complete live decode and add its memory and time charts"
    )
    p.add_argument("--dec-layers", type=int, default=2, help="kv_cache: layers of the decode model")
    p.add_argument("--dec-steps", type=int, default=128, help="kv_cache: tokens the decode generates")
    p.add_argument("--dec-prompt", type=int, default=16, help="kv_cache: prompt tokens of the decode")
    p.add_argument("--dec-batch", type=int, default=1, help="kv_cache: sequences decoded at once")
    p.add_argument("--dec-dtype", default="fp16", help="kv_cache: the decode's cache element type: fp32, fp16, bf16")
    p.add_argument("--dec-wrong", action="store_true", help="kv_cache: cache K and V after repeat_kv (the mistake)")
    p.add_argument(
        "--no-recompute",
        action="store_true",
        help="kv_cache: do not also decode without the cache (no recompute times)",
    )
    p.add_argument(
        "--prefill-decode", action="store_true", help="kv_cache: time prefill against decode with the decode model"
    )
    p.add_argument("--pd-tokens", type=int, default=64, help="kv_cache: tokens of prefill against decode")
    p.add_argument("--format", default="png", help=f"comma-separated: {', '.join(ALL_FORMATS)}")
    p.add_argument("--out", default="export", help="output folder (created if missing)")
    p.add_argument("--lang", default="en", choices=["en", "zh"])
    p.add_argument("--present", action="store_true", help="large fonts and high-contrast colours")
    p.add_argument("--device", default="cpu", help="cpu, cuda or auto")
    return p


def run(argv: list[str] | None = None) -> list[Path]:
    """Parse ``argv``, build the page's figures and write them; returns the written paths."""
    p = parser()
    args = p.parse_args(argv)
    if args.page in PAGE_DEFAULTS:
        p.set_defaults(**PAGE_DEFAULTS[args.page])
        args = p.parse_args(argv)
    if args.page not in PAGES:
        raise unknown_option("page", args.page, list(PAGES))
    formats = [f.strip().lower() for f in args.format.split(",") if f.strip()]
    bad = [f for f in formats if f not in ALL_FORMATS]
    if bad or not formats:
        raise unknown_option("format", ", ".join(bad) or "(none)", ALL_FORMATS)
    if args.device == "auto":
        from .device import pick_device

        args.device = str(pick_device())
    style = figures.Style(present=args.present, lang=args.lang)
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = (
        f"h{args.n_heads}_kv{args.n_kv_heads}_dk{args.d_k}_seed{args.seed}"
        if args.page == "heatmaps"
        else f"seed{args.seed}"
    )  # other pages' view names already carry their parameters
    written = []
    for view in PAGES[args.page](args, style):
        figures.apply_fonts(view.figure, style)
        for fmt in formats:
            path = out_dir / f"{view.name}_{stem}.{fmt}"
            path.write_bytes(export_bytes(view.figure, fmt, view.data))
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


if __name__ == "__main__":
    sys.exit(main())
