"""How the measured eager score stage (QKᵀ) grows with n: the fitted log-log slope over n = 256..2048.

A benchmark, not a test: the slope is a wall-clock measurement, which a busy or shared machine bends. Theory
says 2 (n² dot products of d_h each); one wide head makes the matmul, not the writing of n² scores, dominate.

    .venv/bin/python bench/complexity_slope.py [--repeats 9] [--threads 1]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

from attn_core.complexity import stages as cx  # noqa: E402

NS = (256, 362, 512, 724, 1024, 1448, 2048)


def score_slope(repeats: int = 9, threads: int = 1, sweeps: int = 2) -> cx.Slope:
    """The slope of the score stage's fastest time at each n over ``sweeps`` sweeps. One thread by default: beside
    other work a multi-threaded matmul waits for its preempted threads at each barrier, which slows the large n
    most and bends the slope; one thread's times all stretch alike."""
    shape = cx.LayerShape(128, 1, 1, 128)
    spec = cx.SweepSpec(NS, shape, paths=("eager",), repeats=repeats, warmup=1)
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        runs = [list(cx.measure_sweep(spec)) for _ in range(sweeps)]
    finally:
        torch.set_num_threads(before)
    fastest = [min(m.min_s["scores"] for m in at_n) for at_n in zip(*runs, strict=True)]
    return cx.fit_slope([m.n for m in runs[0]], fastest, n_min=256)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=9)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    fit = score_slope(args.repeats, args.threads)
    print(f"eager QKᵀ, n = {fit.n_lo}..{fit.n_hi} ({fit.points} points): slope {fit.slope:.2f} (theory 2)")


if __name__ == "__main__":
    main()
