"""bench/trace_move.py reads a Chrome trace: the main thread's top-level tasks after the key press, and their kinds."""

from __future__ import annotations

import pytest

from bench.trace_move import Task, key_press_ts, main_thread, summary, tasks

MAIN, OTHER = (1, 10), (1, 11)


def ev(name, ts_ms, dur_ms, thread=MAIN, **data):
    return {
        "ph": "X",
        "name": name,
        "ts": ts_ms * 1000,
        "dur": dur_ms * 1000,
        "pid": thread[0],
        "tid": thread[1],
        "args": {"data": data} if data else {},
    }


def trace():
    names = [
        {"ph": "M", "name": "thread_name", "pid": 1, "tid": 10, "args": {"name": "CrRendererMain"}},
        {"ph": "M", "name": "thread_name", "pid": 1, "tid": 11, "args": {"name": "Compositor"}},
    ]
    return names + [
        ev("RunTask", 5, 3),
        ev("EventDispatch", 5.5, 1, type="mousemove"),  # before the key press: not listed
        ev("RunTask", 100, 2),
        ev("EventDispatch", 100.2, 1.5, type="keydown"),
        ev("RunTask", 110, 30),
        ev("FunctionCall", 111, 25, url="http://h/static/js/react-dom.abc.js"),
        ev("UpdateLayoutTree", 137, 2),
        ev("RunTask", 150, 1),  # shorter than the threshold
        ev("RunTask", 160, 50),
        ev("TimerFire", 160.1, 49),
        ev("RunMicrotasks", 161, 48),
        ev("Layout", 190, 3),
        ev("RunTask", 120, 90, thread=OTHER),  # another thread's task, overlapping: ignored
    ]


def test_only_the_main_threads_complete_events_in_time_order():
    events = main_thread(trace())
    assert all((e["pid"], e["tid"]) == MAIN for e in events)
    assert [e["ts"] for e in events] == sorted(e["ts"] for e in events)
    assert len(events) == 12


def test_tasks_start_at_the_key_press_and_get_their_kinds():
    events = main_thread(trace())
    t0 = key_press_ts(events)
    assert t0 == 100_200
    found = tasks(events, t0, min_ms=1.5)
    assert [(round(t.start, 1), t.ms, t.kind) for t in found] == [
        (9.8, 30, "React"),
        (59.8, 50, "timer or promise (a chart's draw)"),
    ]  # the key press's own task starts before it; the 1 ms task is under the threshold
    assert found[0].parts == [("FunctionCall(react-dom.abc.js)", 25), ("UpdateLayoutTree", 2)]
    assert [n for n, _ in found[1].parts] == ["TimerFire", "RunMicrotasks", "Layout"]
    assert summary(found) == "  busy 80 ms: timer or promise (a chart's draw) 50, React 30"


def test_no_key_press_is_none_and_an_unknown_task_is_other():
    events = main_thread(trace()[:2] + [ev("RunTask", 1, 5), ev("ParseHTML", 1.5, 4)])
    assert key_press_ts(events) is None
    assert tasks(events, 0) == [Task(1.0, 5.0, [("ParseHTML", 4.0)], "other")]


def test_a_slider_the_benchmark_does_not_move_is_refused_before_any_browser(capsys):
    from bench.trace_move import main

    with pytest.raises(SystemExit):
        main(["saturation", "--slider", "seq_len"])
    assert "no benchmark case saturation · seq_len" in capsys.readouterr().err
