"""Seconds per surgery setting on a shipped model over the English evaluation text (attn_core.pretrained.surgery).

A benchmark, not a test: wall and CPU seconds of each setting's copy plus :func:`evaluate` against a reference
computed once (the reference's own seconds printed apart), with the quality figures it returns.

    .venv/bin/python bench/surgery.py [--model smollm2-135m] [--tokens 2048] [--threads 2]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

from attn_core.pretrained import models, texts  # noqa: E402
from attn_core.pretrained import surgery as sg  # noqa: E402


def settings(m: models.LoadedModel) -> dict:
    """The settings timed: a label and a function of the model giving the edited copy."""
    out = {"original": lambda x: x}
    for n in [d for d in range(1, m.n_kv_heads) if m.n_kv_heads % d == 0]:
        out[f"pool {m.n_kv_heads}->{n} mean"] = lambda x, n=n: sg.pool_kv_heads(x, n, "mean")
    out |= {
        "scale none": lambda x: sg.scale_scores(x, None),
        "scale x2": lambda x: sg.scale_scores(x, 2.0),
        "ablate layer 0 head 0": lambda x: sg.ablate_heads(x, 0, [0]),
    }
    if m.causal:  # an encoder keeps no cache
        out["evict window 256 sinks 4"] = lambda x: sg.evict_cache(x, 256, 4)
        out["evict window 260 sinks 0"] = lambda x: sg.evict_cache(x, 260, 0)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--tokens", type=int, default=2048)
    ap.add_argument("--lang", default="en")
    ap.add_argument("--threads", type=int, default=torch.get_num_threads())
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    m = models.load_model(args.model, device="cpu")
    ids = texts.eval_ids(m, args.lang, args.tokens)
    t, c = time.perf_counter(), time.process_time()
    ref = sg.reference_of(m, ids)
    print(
        f"{m.name}, {len(ids)} tokens, {args.threads} threads; reference: "
        f"{time.perf_counter() - t:.2f} s wall, {time.process_time() - c:.2f} s CPU"
    )
    print(f"{'setting':28} {'wall s':>7} {'CPU s':>7} {'ppl':>10} {'KL':>8} {'top-1':>6} {'KV B/token':>11}")
    for label, make in settings(m).items():
        t, c = time.perf_counter(), time.process_time()
        e = sg.evaluate(make(m), ids, ref)
        wall, cpu = time.perf_counter() - t, time.process_time() - c
        ppl = f"{e.perplexity:10.2f}" if e.perplexity is not None else f"{'':>10}"
        kl = f"{e.kl:8.4f}" if e.kl is not None else f"cos {e.cosine:.4f}"
        top1 = f"{e.top1:6.3f}" if e.top1 is not None else ""
        print(f"{label:28} {wall:7.2f} {cpu:7.2f} {ppl} {kl} {top1:>6} {e.kv_bytes_per_token:11,}")


if __name__ == "__main__":
    main()
