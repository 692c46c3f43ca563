"""The hall's lecture mode (bench/hall.py --lecture, bench/lecture_room.py): its schedule and readings, and a small
lecture against a real server (three students follow, answer and see the reveal; nothing lost, no cross-talk).
Correctness only, never speed: the machine may be loaded."""

from __future__ import annotations

import asyncio
import subprocess

import pytest

from bench.lecture_room import LectureSpec, Plan, lecture_deck, run_lecture, schedule, shown_value, summary
from harness import start_server


def test_the_lecturer_moves_asks_and_reveals_on_schedule_and_never_moves_while_a_question_is_open():
    events = schedule(Plan(minutes=6, move_every=20, question_every=120, answer_window=40, first_question=60))
    asks = [t for t, what in events if what == "ask"]
    reveals = [t for t, what in events if what == "reveal"]
    assert asks == [60, 180, 300] and reveals == [100, 220, 340]
    for ask, reveal in zip(asks, reveals, strict=True):
        assert not [t for t, what in events if what == "move" and ask <= t <= reveal]
    moves = [t for t, what in events if what == "move"]
    assert moves[:3] == [20, 40, 120] and all(b - a >= 20 for a, b in zip(moves, moves[1:], strict=False))


def test_the_lecture_deck_asks_on_every_slide_and_answers_read_back():
    from attn_core import decks

    deck = lecture_deck()
    assert all(s.question is not None for s in deck.slides)
    assert decks.from_json(decks.to_json(deck)) == deck  # a valid deck, as a room stores it
    assert shown_value("C. MQA") == 3.0 and shown_value("1,003 MiB") == 1003.0 and shown_value("512") == 512.0


@pytest.fixture
def lecture_server(tmp_path, monkeypatch):
    env = {"ATTN_DATA_DIR": str(tmp_path), "ATTN_STORE": ""}
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    proc, url = start_server(env)
    yield url, proc.pid
    proc.terminate()
    try:
        proc.wait(15)
    except subprocess.TimeoutExpired:
        proc.kill()


def test_a_small_lecture_follows_answers_and_loses_nothing(lecture_server):
    url, pid = lecture_server
    plan = Plan(minutes=0.42, move_every=5, question_every=30, answer_window=8, first_question=15)
    spec = LectureSpec(url, students=3, plan=plan, watch_pids=[pid], timeout=120, ramp=1)
    result = asyncio.run(run_lecture(spec))
    s = summary(result, spec)
    assert s["crosstalk"] == 0 and s["lost"] == 0 and s["errors"] == 0 and s["timeouts"] == 0, result["tally"].notes
    assert s["answers"] == 3 and len(result["tally"].answer) == 3
    assert s["never_shown"] == 0 and s["follow_n"] == 3 * s["events"], result["tally"].notes
