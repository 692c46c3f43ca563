"""bench/bench.py's browser table from made-up move times (no browser): the ratios it reports."""

from __future__ import annotations

import pytest

from bench.bench import TRIVIAL, Session, SliderCase, paired_ratio, slider_table

COLS = ("painted", "settled", "finished", "server", "server_cpu", "browser_task", "browser_layout", "redrawn")


def session(case: SliderCase, painted: list[float]) -> Session:
    s = Session(case, page=None, cdp=None, pid=0)
    for name in COLS:
        s.times[name] = list(painted) if name != "redrawn" else [1.0] * len(painted)
    return s


def test_the_paired_ratio_pairs_each_round_and_the_table_shows_both_ratios():
    page = SliderCase("heatmaps · head_dim", False, "", (), "head_dim", "grid")
    # the machine slows down in rounds 2-3: both cases take turns, so each round's ratio stays 2
    triv = session(TRIVIAL, [0.100, 0.300, 0.300, 0.100, 0.100])
    heat = session(page, [0.200, 0.600, 0.600, 0.200, 0.200])
    assert paired_ratio(heat, triv) == pytest.approx(2.0)
    triv2 = session(TRIVIAL, [0.100, 0.100, 0.300, 0.300, 0.300])
    heat2 = session(page, [0.250, 0.150, 0.300, 0.900, 0.600])  # per round 2.5, 1.5, 1, 3, 2
    assert paired_ratio(heat2, triv2) == pytest.approx(2.0)  # while the medians' ratio is 0.30 / 0.30 = 1
    header = slider_table([triv, heat])[1].split()
    assert header[header.index("painted") + 3] == "paired"
    for t, h, want in ((triv, heat, ["2.00x", "2.00x"]), (triv2, heat2, ["1.00x", "2.00x"])):
        row = next(line for line in slider_table([t, h]) if line.startswith("heatmaps · head_dim")).split()
        assert row[4:6] == want  # x trivial (the target's reading), then paired
        assert row[-3:] == ["<=", "2x", "ok"]
    with pytest.raises(ValueError):  # rounds that do not pair up are an error, not a silent truncation
        paired_ratio(session(page, [0.2, 0.2]), triv)
