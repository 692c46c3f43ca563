"""Benchmark of the pretrained models (attn_core.pretrained.models): loads, capture, head scores, generation, memory.

    .venv/bin/python bench/models.py                 # everything (about 2-3 minutes on 2 cores)
    .venv/bin/python bench/models.py --skip-cold     # reuse the user's model cache (no fresh conversion)

Cold and warm loads each run in a fresh process (imports not counted, reported apart): cold into an empty
cache folder (the GGUF dequantized and saved as safetensors, the zip extracted), warm from that folder.
Then, in this process, both models loaded: the forward pass with capture at 64, 512, 2048 and 8192 tokens,
the head scores, generation of 256 tokens with and without the cache, and the peak resident memory.
Prints a markdown table; times are the best of ``--repeats`` runs where timed more than once (the machine
is shared: slower runs time the neighbours); "peak RSS +" is the high-water mark of one case over the
resident size before it (Linux). The weights are memory-mapped from the cached safetensors: the first
forward pass reads them in (clean file pages, shared between server processes).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

MODELS = ("smollm2-135m", "minilm-l6")


def rss_mib() -> tuple[float, float]:
    """(current, peak) resident memory of this process in MiB, from /proc/self/status."""
    fields = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(("VmRSS:", "VmHWM:")):
            name, value = line.split(":", 1)
            fields[name] = int(value.split()[0]) / 1024
    return fields.get("VmRSS", 0.0), fields.get("VmHWM", 0.0)


def reset_peak() -> None:
    """Start a new high-water mark: VmHWM back to the current resident size (Linux's clear_refs 5)."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        pass


def phase_load(model: str) -> None:
    """One fresh process: import, then load ``model``; prints JSON."""
    t0 = time.perf_counter()
    from attn_core.pretrained import models

    models._hf()  # transformers imported and the capture registered
    t1 = time.perf_counter()
    m = models.load_model(model, device="cpu")
    t2 = time.perf_counter()
    print(
        json.dumps(
            {"import_s": t1 - t0, "load_s": t2 - t1, "rss_mib": rss_mib()[0], "peak_mib": rss_mib()[1], "path": m.path}
        )
    )


def run_load(model: str, cache: str) -> dict:
    env = {**os.environ, "ATTN_MODEL_CACHE": cache}
    out = subprocess.run(
        [sys.executable, __file__, "--phase-load", model], env=env, capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def text_of(m, n_tokens: int) -> str:
    """A text that the model reads as about ``n_tokens`` tokens (English prose, repeated)."""
    base = (
        "Attention lets every token look at the others. A head scores each earlier token, turns the scores "
        "into weights with a softmax, and mixes their values. The cat sat on the mat, and then it slept. "
    )
    text = base
    while len(m.encode(text)[0]) < n_tokens:
        text += base
    ids = m.encode(text)[0]
    return m.tokenizer.decode(ids[:n_tokens], skip_special_tokens=True)


def timed(fn, repeats: int) -> tuple[float, object]:
    """The best of ``repeats`` timings (on a shared machine the others measure the neighbours) and the result."""
    times, out = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return min(times), out


def bench_capture(models, m, repeats: int) -> list[str]:
    from attn_core.attention import longmaps

    rows = []
    for n in (64, 512, 2048, 8192):
        if n > m.max_positions:
            continue
        text = text_of(m, n)
        for layers, label in ((None, "all layers"), ([m.n_layers // 2], "one layer")):
            if n == 8192 and layers is None:
                continue
            reps = 1 if n >= 8192 else repeats
            reset_peak()
            before = rss_mib()[0]
            sec, att = timed(lambda text=text, layers=layers: models.model_attention(m, text, layers=layers), reps)
            grew = rss_mib()[1] - before
            weights = "with weights" if att.weights is not None else "q/k/v only"
            rows.append(
                f"| {m.name} capture | {len(att.ids)} tokens, {label}, {weights} | {sec * 1000:.0f} ms | "
                f"peak RSS +{max(0.0, grew):.0f} MiB |"
            )
        if n >= 2048:
            src = att.source(att.layers[0])
            sec, _ = timed(lambda src=src: longmaps.pooled_attention(src, max_side=256, entropy=True), 1)
            rows.append(
                f"| {m.name} pooled maps | {len(att.ids)} tokens, 1 layer × {m.n_heads} heads, 256² "
                f"+ entropy | {sec * 1000:.0f} ms | |"
            )
    return rows


def bench_generation(models, m, n_new: int) -> list[str]:
    rows = []
    prompt = "Attention lets every token look at the others. The cat"
    for use_cache in (True, False):
        for keep_rows in (True, False):
            list(models.generate(m, prompt, 4, use_cache=use_cache, rows=keep_rows))  # warm-up
            sec, steps = timed(
                lambda c=use_cache, r=keep_rows: list(models.generate(m, prompt, n_new, use_cache=c, rows=r)), 1
            )
            rate = len(steps) / sec
            what = ("with the cache" if use_cache else "without (recompute)") + (
                ", attention rows kept" if keep_rows else ", no rows"
            )
            last = steps[-1]
            cache = (
                f"cache {last.cache_bytes / 2**20:.1f} MiB = formula"
                if last.cache_bytes == last.formula_bytes
                else "cache ≠ formula"
            )
            rows.append(f"| {m.name} generate | {len(steps)} tokens {what} | {rate:.1f} tokens/s | {cache} |")
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--phase-load", help=argparse.SUPPRESS)
    ap.add_argument("--skip-cold", action="store_true", help="no cold loads into a fresh cache folder")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--new-tokens", type=int, default=256)
    ap.add_argument("--threads", type=int, default=0, help="torch threads (default: torch's choice)")
    ap.add_argument(
        "--skip", nargs="*", default=[], choices=["loads", "capture", "generate"], help="parts to leave out"
    )
    args = ap.parse_args()
    if args.phase_load:
        phase_load(args.phase_load)
        return 0
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)

    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, {os.cpu_count()} cores, CPU\n")
    print("| what | case | time | note |\n|---|---|---|---|")
    with tempfile.TemporaryDirectory(prefix="attn-models-") as fresh:
        from attn_core.pretrained.store import cache_root

        for name in MODELS if "loads" not in args.skip else ():
            for kind in ("cold", "warm"):
                if kind == "cold" and args.skip_cold:
                    continue
                r = run_load(name, fresh if not args.skip_cold else str(cache_root()))
                print(
                    f"| {name} load | {kind} (fresh process) | {r['load_s']:.2f} s | import {r['import_s']:.1f} s, "
                    f"RSS {r['rss_mib']:.0f} MiB, peak {r['peak_mib']:.0f} MiB |",
                    flush=True,
                )
    from attn_core.pretrained import models

    loaded = {name: models.load_model(name, device="cpu") for name in MODELS}
    cur, peak = rss_mib()
    print(f"| both loaded | this process | | RSS {cur:.0f} MiB, peak {peak:.0f} MiB |", flush=True)
    for m in loaded.values():
        models.model_attention(m, "The weights are read in by a first pass.")  # every mapped page of weights
    cur, peak = rss_mib()
    print(f"| both loaded, one pass each | this process | | RSS {cur:.0f} MiB, peak {peak:.0f} MiB |", flush=True)
    sm = loaded["smollm2-135m"]
    if "capture" not in args.skip:
        for m in loaded.values():
            for line in bench_capture(models, m, args.repeats):
                print(line, flush=True)
        sec, _ = timed(lambda: models.head_scores(sm), args.repeats)
        print(f"| {sm.name} head scores | 4 × 100 random tokens, 30 × 9 heads | {sec * 1000:.0f} ms | |", flush=True)
    if "generate" not in args.skip:
        for line in bench_generation(models, sm, args.new_tokens):
            print(line, flush=True)
    cur, peak = rss_mib()
    print(f"| end | this process | | RSS {cur:.0f} MiB, peak {peak:.0f} MiB (both models, all of the above) |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
