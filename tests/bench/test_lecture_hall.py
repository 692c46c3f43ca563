"""bench/lecture_hall.py: the halls it runs (issue 14's targets, and with --burst the class hall of quick presses)."""

from __future__ import annotations

import pytest

from bench.lecture_hall import TARGETS, hall_spec, parse_args, targets


def test_without_burst_the_halls_are_the_issues_three_targets():
    assert targets(None) == TARGETS
    assert [(t.label, t.students, t.think, t.moves, t.limit_s) for t in TARGETS] == [
        ("class", 100, 5.0, 5, 2.0),
        ("same link", 100, 1.0, 1, 5.0),
        ("20 busy", 20, 1.0, 5, 1.0),
    ]
    assert all(t.burst == 1 for t in TARGETS)


def test_burst_adds_the_class_hall_with_quick_presses_and_its_target():
    halls = targets(parse_args(["--burst", "3"]).burst)
    assert halls[:3] == TARGETS
    burst, cls = halls[3], TARGETS[0]
    assert (burst.students, burst.think, burst.moves, burst.ramp, burst.measure, burst.limit_s) == (
        cls.students,
        cls.think,
        cls.moves,
        cls.ramp,
        cls.measure,
        cls.limit_s,
    )
    assert burst.burst == 3 and burst.label == "class, bursts of 3" and not burst.same_link
    spec = hall_spec("http://127.0.0.1:1", "heatmaps", burst, quick=True, seed_base=7)
    assert (spec.burst, spec.students, spec.seed_base, spec.label) == (3, 10, 7, "class, bursts of 3")
    assert hall_spec("http://127.0.0.1:1", "heatmaps", cls, quick=False, seed_base=1).burst == 1


@pytest.mark.parametrize("bad", ["1", "11", "x"])
def test_a_burst_outside_2_to_10_is_refused(bad, capsys):
    with pytest.raises(SystemExit):
        parse_args(["--burst", bad])
    assert "--burst" in capsys.readouterr().err
