"""How long a 10-slide deck takes to become its three files (PDF, PowerPoint, one offline HTML file).

A benchmark, not a test: a wall-clock measurement, which a busy or shared machine stretches. The target is under
60 s on two cores with the renderer warm (kaleido's Chromium starts once per process: its start is timed apart).
The deck is the 8 slides of "Attention from scratch" and the first 2 of "GQA and the KV cache".

    .venv/bin/python bench/deck_files.py [--lang en] [--out DIR]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from attn_core import decks  # noqa: E402
from attn_core.export import deck as D  # noqa: E402
from attn_core.export.deck_files import deck_files  # noqa: E402
from attn_core.render import render_image  # noqa: E402

TARGET_S = 60.0


def ten_slides() -> decks.Deck:
    shipped = decks.shipped()
    slides = shipped["attention_from_scratch"].slides + shipped["gqa_and_the_kv_cache"].slides[:2]
    return decks.Deck((("en", "Ten slides"), ("zh", "十张幻灯片")), slides)


def warm_up() -> float:
    """Start the renderer (one tiny render); the seconds it took."""
    import plotly.graph_objects as go

    start = time.perf_counter()
    render_image(go.Figure(), "png", 64, 36, 1.0)
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lang", default="en", choices=["en", "zh"])
    ap.add_argument("--out", default=None, help="also write the files into this folder")
    args = ap.parse_args(argv)
    deck = ten_slides()
    print(f"renderer start: {warm_up():.1f} s")
    start = time.perf_counter()
    made = D.draw(deck, D.Options(lang=args.lang))
    drawn = time.perf_counter()
    times, files = {}, {}
    for fmt in D.FORMATS:  # each on its own clock; the PowerPoint file reuses no PDF render
        t0 = time.perf_counter()
        files |= deck_files(made, [fmt])
        times[fmt] = time.perf_counter() - t0
    total = time.perf_counter() - start
    print(f"slides drawn (view models): {drawn - start:.1f} s")
    for fmt in D.FORMATS:
        print(f"{fmt}: {times[fmt]:.1f} s, {len(files[fmt]) / 1e6:.2f} MB")
    print(f"{len(deck.slides)} slides to {', '.join(D.FORMATS)}: {total:.1f} s (target < {TARGET_S:.0f} s)")
    if made.left_out:
        print("left out:", *[s.left_out for s in made.left_out], sep="\n  ")
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        for fmt, data in files.items():
            (out / f"ten_slides_{args.lang}.{fmt}").write_bytes(data)
    return 0


if __name__ == "__main__":
    sys.exit(main())
