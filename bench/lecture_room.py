"""The lecture mode of the hall (``bench/hall.py --lecture``, not a timed test): a class following a lecturer.

    .venv/bin/python bench/hall.py --lecture [--students 100] [--workers 2] [--minutes 6] [--move-every 20]
                                             [--question-every 120] [--kill-at 190 | --no-kill] [--store sqlite|redis]
                                             [--url http://127.0.0.1:8501 --pids ...] [--json lecture.json]

It starts ``python -m serve`` (``--workers`` Streamlit workers behind nginx; with ``--store redis`` a redis-server of
its own too) unless ``--url`` names one, makes a room for a deck whose every slide asks a question (the shipped "GQA
and the KV cache", a number or a multiple-choice question added to each slide) and runs:

- a lecturer, one protocol-level tab with the lecturer link, that presses Next (then Previous at the end of the
  deck) every ``--move-every`` seconds and every ``--question-every`` seconds asks the current slide's question
  instead, waits ``--answer-window`` seconds and reveals it;
- ``--students`` students, each a browser as Streamlit's frontend and the room's watch (``ui/assets/room_watch.js``)
  make it: it loads the page once (its cookies: nginx's sticky one and the app's ``attn_browser``), opens its
  websocket with them, long-polls ``/_attn/room/<code>/wait`` and, when the room changes, asks for a run. A student
  answers an asked question after 2 to 25 s (at most the answer window less 10 s; number questions: its own number; choices: by its index);
- ``--kill-at`` seconds in (default: in the middle of the second question), SIGKILL of one worker: its students'
  websockets close, and they reconnect through nginx (to the other worker) on their next run, as the frontend does.

Measured (the README's table): ``follow`` the seconds from the lecturer's press to a student's run showing that
slide (or the question, or the reveal) finished, p50/p95/max over every student and event; ``answer`` the seconds
from a student's Answer press to the reply saying it is recorded; errors (exceptions, error boxes, timeouts, HTTP
errors); answers lost (told "recorded" but not in the store at the reveal); cross-talk (a run showing a slide the
lecturer was not on, or another browser's answer as the student's own); reconnects; the server's CPU.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import random
import re
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from websockets.exceptions import ConnectionClosed, InvalidHandshake  # noqa: E402

try:
    from bench.hall import HallError, ProcWatch, Reply, Tab, pct
except ImportError:  # run as a script: its folder comes first on the path
    from hall import HallError, ProcWatch, Reply, Tab, pct  # type: ignore[no-redef]

SLIDE = re.compile(r"Slide (\d+) of (\d+)")
RECORDED = re.compile(r"Your answer is recorded: (.+?)\. The class")
CHOICE = re.compile(r"^([A-H])\. ")
WAIT_PATH = "/_attn/room/{code}/wait"
LETTERS = "ABCDEFGH"


# ---------------------------------------------------------------- the deck: a question on every slide
def lecture_deck():
    """The shipped "GQA and the KV cache" with a question on every slide: even slides a number (each student
    answers its own number), odd slides a choice of three."""
    from attn_core import decks

    base = decks.shipped()["gqa_and_the_kv_cache"]
    slides = []
    for i, s in enumerate(base.slides):
        if s.question is None:
            if i % 2:
                q = decks.Question(
                    "choice",
                    (("en", f"Which layout caches the least? ({i + 1})"), ("zh", f"哪种布局缓存最少？（{i + 1}）")),
                    tuple((("en", n), ("zh", n)) for n in ("MHA", "GQA", "MQA")),
                    3.0,
                )
            else:
                q = decks.Question(
                    "number",
                    (("en", f"Your number, please ({i + 1})"), ("zh", f"请写下你的数（{i + 1}）")),
                    answer=0.0,
                    tolerance=1e15,
                )
            s = dataclasses.replace(s, question=q)
        slides.append(s)
    return dataclasses.replace(base, slides=tuple(slides))


# ---------------------------------------------------------------- HTTP: the page (cookies) and the long poll
async def http_get(
    base: str, path: str, cookies: dict[str, str], timeout: float, body: bytes | None = None
) -> tuple[int, dict, bytes]:
    """One GET (a POST with ``body``) through ``base`` (``http://host:port``): (status, headers with every
    Set-Cookie, body)."""
    host, port = base.split("//", 1)[1].rsplit(":", 1)
    reader, writer = await asyncio.wait_for(asyncio.open_connection(host, int(port)), timeout)
    try:
        cookie = "; ".join(f"{k}={v}" for k, v in cookies.items())
        method = "GET" if body is None else f"POST {path} HTTP/1.1\r\nContent-Length: {len(body)}"
        head = f"{method} {path} HTTP/1.1" if body is None else method
        head += f"\r\nHost: {host}:{port}\r\nConnection: close\r\n"
        writer.write((head + (f"Cookie: {cookie}\r\n" if cookie else "") + "\r\n").encode() + (body or b""))
        await writer.drain()
        raw = await asyncio.wait_for(reader.read(), timeout)
    finally:
        writer.close()
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers: dict = {"set-cookie": []}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        if name.lower() == "set-cookie":
            headers["set-cookie"].append(value.strip())
        else:
            headers[name.lower()] = value.strip()
    if headers.get("transfer-encoding") == "chunked":
        body = _unchunk(body)
    return status, headers, body


def _unchunk(body: bytes) -> bytes:
    out, rest = b"", body
    while rest:
        size, _, rest = rest.partition(b"\r\n")
        n = int(size.split(b";")[0] or b"0", 16)
        if n == 0:
            break
        out, rest = out + rest[:n], rest[n + 2 :]
    return out


def take_cookies(headers: dict, jar: dict[str, str]) -> None:
    for line in headers.get("set-cookie", []):
        name, _, rest = line.partition("=")
        jar[name.strip()] = rest.split(";", 1)[0]


# ---------------------------------------------------------------- what everyone measured
@dataclass
class LectureTally:
    follow: list[float] = field(default_factory=list)
    answer: list[float] = field(default_factory=list)
    exceptions: int = 0
    error_boxes: int = 0
    http_errors: int = 0
    timeouts: int = 0
    crosstalk: int = 0
    reconnects: int = 0
    answered: int = 0
    recorded: dict[int, dict[int, float]] = field(default_factory=dict)  # slide -> student -> value told
    lost: int = 0
    not_shown: int = 0  # events a student's page never showed (the lecture ended first)
    notes: list[str] = field(default_factory=list)

    def note(self, text: str) -> None:
        if len(self.notes) < 30:
            self.notes.append(text)


@dataclass
class Event:
    """A lecturer action: ``kind`` next/prev/ask/reveal, sent at ``t`` (monotonic), the slide it leaves shown."""

    kind: str
    t: float
    slide: int


class Lecture:
    """The room, the lecturer's events so far and what the students measured."""

    def __init__(self, url: str, code: str, n_slides: int, timeout: float, answer_window: float = 40.0):
        self.url, self.code, self.n_slides, self.timeout = url, code, n_slides, timeout
        self.answer_window = answer_window
        self.events: list[Event] = []
        self.tally = LectureTally()
        self.done = asyncio.Event()
        self.slide = 0
        self.open_question: int | None = None
        self.cpu0 = self.t0 = 0.0

    def expected(self) -> tuple[int, float]:
        """The slide the lecturer shows now (1-based) and when the last event was sent."""
        last = self.events[-1] if self.events else Event("start", time.monotonic(), 0)
        return last.slide + 1, last.t


# ---------------------------------------------------------------- a student
class Student:
    def __init__(self, lecture: Lecture, i: int):
        self.lec, self.i = lecture, i
        self.cookies: dict[str, str] = {}
        self.tab: Tab | None = None
        self.version = -1
        self.seen_events = 0  # lecturer events this student's page has shown
        self.answered: set[int] = set()
        self.lock = asyncio.Lock()  # one run at a time on the websocket (the watch's and the Answer press's)

    def number(self) -> float:
        return float(1000 + self.i)

    async def start(self) -> None:
        status, headers, _ = await http_get(self.lec.url, f"/?room={self.lec.code}", {}, self.lec.timeout)
        take_cookies(headers, self.cookies)
        if status != 200 or "attn_browser" not in self.cookies:
            self.lec.tally.http_errors += 1
            self.lec.tally.note(f"student {self.i}: page {status}, cookies {sorted(self.cookies)}")
        await self.connect()
        await self.run()

    async def connect(self) -> None:
        cookie = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        query = {"room": self.lec.code}
        if self.tab is not None:  # a reconnect: the frontend keeps its page, address and widget states
            old = self.tab
            self.tab = Tab(self.lec.url, old.page_path, old.query, headers={"Cookie": cookie})
            self.tab.widgets, self.tab.elements, self.tab.fragments = old.widgets, old.elements, old.fragments
            self.tab.page_hash = old.page_hash
        else:
            self.tab = Tab(self.lec.url, "", query, headers={"Cookie": cookie})
        await asyncio.wait_for(self.tab.open(), self.lec.timeout)

    async def run(self) -> Reply:
        """One run of the page (a full run, as the watch's trigger asks for); reconnects if the worker went."""
        async with self.lock:
            return await self._run()

    async def _run(self) -> Reply:
        for attempt in range(4):
            try:
                if self.tab.ws.state.name != "OPEN":
                    raise ConnectionClosed(None, None)
                self.tab.fragment = ""
                reply = await asyncio.wait_for(self.tab.rerun(), self.lec.timeout)
                self.check(reply)
                return reply
            except (ConnectionClosed, InvalidHandshake, OSError):
                self.lec.tally.reconnects += 1
                await asyncio.sleep(0.3 * (attempt + 1))
                try:
                    await self.connect()
                except (ConnectionClosed, InvalidHandshake, OSError, TimeoutError):
                    continue
        raise ConnectionError(f"student {self.i} could not reconnect")

    def check(self, reply: Reply) -> None:
        t = self.lec.tally
        t.exceptions += len(reply.exceptions)
        t.error_boxes += len([e for e in reply.errors if "already" not in e])
        if reply.exceptions or reply.errors:
            t.note(f"student {self.i}: {(reply.exceptions + reply.errors)[:2]}")
        text = "\n".join(reply.texts)
        mine = RECORDED.search(text)
        if mine and not self.mine_in(mine.group(1)):
            t.crosstalk += 1
            t.note(f"student {self.i}: a recorded answer {mine.group(1)!r} that is not its own")

    def mine_in(self, shown: str) -> bool:
        value = shown_value(shown)
        return value == (float(self.i % 3 + 1) if CHOICE.match(shown) else self.number())

    async def follow(self) -> None:
        """The watch: long polls; on a change, a run; then compare what the run shows with the lecturer."""
        lec = self.lec
        while not lec.done.is_set():
            try:
                path = WAIT_PATH.format(code=lec.code) + f"?v={self.version}"
                status, headers, body = await http_get(lec.url, path, self.cookies, 45)
            except (OSError, TimeoutError):
                await asyncio.sleep(0.5)
                continue
            if status == 410:
                return
            if status != 200:
                lec.tally.http_errors += 1
                lec.tally.note(f"student {self.i}: wait {status}")
                await asyncio.sleep(1)
                continue
            got = json.loads(body)
            if got["v"] == self.version:
                continue
            self.version = got["v"]
            n_events = len(lec.events)
            reply = await self.run()
            self.judge(reply, n_events)

    def judge(self, reply: Reply, n_events: int) -> None:
        """The run after a change shows the slide of the lecturer's last event known when the change came, or of an
        event sent since; each event it shows for the first time gets its follow latency."""
        lec, t = self.lec, self.lec.tally
        now = time.monotonic()
        shown = SLIDE.search("\n".join(reply.texts))
        if shown is None:
            t.error_boxes += 1
            t.note(f"student {self.i}: a run without its slide number")
            return
        at = int(shown.group(1))
        candidates = {e.slide + 1 for e in lec.events[max(0, n_events - 1) :]} or {1}
        if at not in candidates:
            t.crosstalk += 1
            t.note(f"student {self.i}: shows slide {at}, the lecturer was on {sorted(candidates)}")
            return
        for e in lec.events[self.seen_events : n_events]:
            t.follow.append(now - e.t)
        self.seen_events = max(self.seen_events, n_events)
        q = lec.open_question
        if q is not None and q + 1 == at and q not in self.answered and self.has_form(q):
            self.answered.add(q)
            asyncio.get_running_loop().create_task(self.answer(q))

    def has_form(self, slide: int) -> bool:
        return bool(
            self.tab.element(f"room_number_{slide}", "number_input") or self.tab.element(f"room_pick_{slide}", "radio")
        )

    async def answer(self, slide: int) -> None:
        """After 2 to 25 s, the student's answer and Answer, one run of the question's fragment; if its worker went,
        the page again on the other worker and, unless it says the answer is recorded, the answer again."""
        await asyncio.sleep(random.uniform(2, max(3.0, min(25.0, self.lec.answer_window - 10))))
        if self.lec.open_question != slide:
            return
        async with self.lock:
            for _ in range(3):
                try:
                    reply, t0, value = await self._press_answer(slide)
                except (ConnectionClosed, InvalidHandshake, OSError):
                    self.lec.tally.reconnects += 1
                    await self.connect()
                    reply = await self._run()  # the page again, on the other worker: its form, or "recorded"
                    if self._told(reply, slide, None):
                        return
                    continue
                except Exception as exc:  # noqa: BLE001 - no form to answer in: said, not fatal
                    self.lec.tally.note(f"student {self.i}: answer {type(exc).__name__}: {exc}"[:200])
                    return
                self.check(reply)
                if not self._told(reply, slide, t0, value):
                    self.lec.tally.note(f"student {self.i}: the answer was not recorded: {reply.texts[-2:]!r}"[:240])
                return

    async def _press_answer(self, slide: int) -> tuple[Reply, float, float]:
        radio = self.tab.element(f"room_pick_{slide}", "radio")
        if radio is not None:
            value = float(self.i % 3 + 1)
            self.tab.pick(f"room_pick_{slide}", list(radio.options)[int(value) - 1])
        else:
            value = self.number()
            self.tab.type_number(f"room_number_{slide}", value)
        self.tab.press("room_answer")
        t0 = time.monotonic()
        return await asyncio.wait_for(self.tab.rerun(), self.lec.timeout), t0, value

    def _told(self, reply: Reply, slide: int, t0: float | None, value: float | None = None) -> bool:
        """Whether ``reply`` tells the student its answer is recorded (counted, with its latency from ``t0``)."""
        text = "\n".join(reply.texts)
        recorded = RECORDED.search(text)
        if recorded is None and "answered this question already" not in text:
            return False
        t = self.lec.tally
        if recorded is not None:
            value = shown_value(recorded.group(1))
            if t0 is not None:
                t.answer.append(time.monotonic() - t0)
        t.answered += 1
        if value is not None:
            t.recorded.setdefault(slide, {})[self.i] = value
        return True


def shown_value(shown: str) -> float:
    """An answer as a page shows it ("C. MQA", "1003 MiB") as the number stored."""
    choice = CHOICE.match(shown)
    return float(LETTERS.index(choice.group(1)) + 1) if choice else float(shown.split()[0].replace(",", ""))


# ---------------------------------------------------------------- the lecturer
@dataclass
class Plan:
    minutes: float = 6.0
    move_every: float = 20.0
    question_every: float = 120.0
    answer_window: float = 40.0
    first_question: float = 60.0


def schedule(plan: Plan) -> list[tuple[float, str]]:
    """(seconds from the start, "move" | "ask" | "reveal"): a move every ``move_every`` s; every ``question_every``
    s from ``first_question`` on, a question instead, revealed ``answer_window`` s later (no moves meanwhile)."""
    out, t, end = [], plan.move_every, plan.minutes * 60
    asks = {plan.first_question + k * plan.question_every for k in range(100)}
    quiet_until = -1.0
    while t < end:
        ask = next((a for a in asks if abs(a - t) < 1e-6), None)
        if ask is not None:
            out += [(t, "ask"), (t + plan.answer_window, "reveal")]
            quiet_until = t + plan.answer_window
        elif t > quiet_until:
            out.append((t, "move"))
        t += plan.move_every
    return sorted(out)


class Lecturer:
    """The lecturer's browser: the lecturer link, the key handed to the server for its lead cookie (as the page's
    watch does), and a reconnect through nginx when its worker dies (the cookie keeps it the lecturer)."""

    def __init__(self, lec: Lecture, key: str):
        self.lec, self.key = lec, key
        self.cookies: dict[str, str] = {}
        self.tab: Tab | None = None

    async def start(self) -> None:
        lec = self.lec
        _, headers, _ = await http_get(lec.url, f"/?room={lec.code}&key={self.key}", {}, lec.timeout)
        take_cookies(headers, self.cookies)
        await self.connect({"room": lec.code, "key": self.key})
        await self.tab.rerun()
        status, headers, _ = await http_get(
            lec.url, f"/_attn/room/{lec.code}/lead", self.cookies, lec.timeout, self.key.encode()
        )
        take_cookies(headers, self.cookies)
        if status != 200 or "attn_lead" not in self.cookies:
            lec.tally.note(f"lecturer: lead {status}, cookies {sorted(self.cookies)}")

    async def connect(self, query: dict[str, str]) -> None:
        old = self.tab
        headers = {"Cookie": "; ".join(f"{k}={v}" for k, v in self.cookies.items())}
        self.tab = Tab(self.lec.url, old.page_path if old else "", old.query if old else query, headers=headers)
        if old is not None:
            self.tab.widgets, self.tab.elements, self.tab.fragments = old.widgets, old.elements, old.fragments
            self.tab.page_hash = old.page_hash
        await asyncio.wait_for(self.tab.open(), self.lec.timeout)

    async def reload(self) -> Reply:
        """The lecturer's page loaded again (a reload, or the frontend's reconnect): a new session through nginx,
        which the lead cookie makes the lecturer's again."""
        if self.tab is not None:
            await self.tab.close()
        self.tab = None
        await self.connect({"room": self.lec.code})
        reply = await asyncio.wait_for(self.tab.rerun(), self.lec.timeout)
        text = "\n".join(reply.texts)
        self.lec.tally.note(f"lecturer reloaded: leads {'you lead it' in text}")
        return reply

    async def press(self, button: str, slide: int) -> Reply:
        """Press ``button``; if the worker died meanwhile (or the page lacks the button), the page again and, unless
        it already shows slide ``slide`` (a move that reached the room before the worker died), the press again."""
        for _ in range(8):
            try:
                self.tab.press(button)
                return await asyncio.wait_for(self.tab.rerun(), self.lec.timeout)
            except (ConnectionClosed, InvalidHandshake, OSError, HallError, TimeoutError) as exc:
                self.lec.tally.reconnects += not isinstance(exc, HallError)
                await asyncio.sleep(1.0)
                try:
                    again = await self.reload()
                except (ConnectionClosed, InvalidHandshake, OSError, TimeoutError) as err:
                    self.lec.tally.note(f"lecturer: reload failed: {type(err).__name__}")
                    continue
                shown = SLIDE.search("\n".join(again.texts))
                if button.startswith("deck_") and shown and int(shown.group(1)) == slide + 1:
                    return again
        raise ConnectionError("the lecturer could not reconnect")


async def lecturer(lec: Lecture, key: str, plan: Plan, t_start: float) -> None:
    teacher = Lecturer(lec, key)
    await teacher.start()
    direction = 1
    for at, what in schedule(plan):
        await asyncio.sleep(max(0.0, t_start + at - time.monotonic()))
        if what == "move":
            if not 0 <= lec.slide + direction < lec.n_slides:
                direction = -direction
            button = "deck_next" if direction > 0 else "deck_prev"
            lec.slide += direction
        else:
            button = "room_ask" if what == "ask" else "room_reveal"
            lec.open_question = lec.slide if what == "ask" else None
        lec.events.append(Event(what, time.monotonic(), lec.slide))
        reply = await teacher.press(button, lec.slide)
        if reply.exceptions or reply.errors:
            lec.tally.note(f"lecturer: {(reply.exceptions + reply.errors)[:2]}")
            lec.tally.exceptions += len(reply.exceptions)
        if what == "reveal":
            check_answers(lec, lec.events[-2].slide)
    await asyncio.sleep(3)
    lec.done.set()


def check_answers(lec: Lecture, slide: int) -> None:
    """Every answer a student was told is recorded is in the store, with its value."""
    from rooms import current

    stored = [float(v) for v in current().store.answers(lec.code, slide)]
    told = lec.tally.recorded.get(slide, {})
    pool = list(stored)
    for value in told.values():
        if value in pool:
            pool.remove(value)
        else:
            lec.tally.lost += 1
    lec.tally.note(f"slide {slide + 1}: {len(told)} answers told recorded, {len(stored)} in the store")


# ---------------------------------------------------------------- the run
@dataclass
class LectureSpec:
    url: str
    students: int = 100
    plan: Plan = field(default_factory=Plan)
    kill_at: float | None = None
    worker_pids: list[int] = field(default_factory=list)
    watch_pids: list[int] = field(default_factory=list)
    timeout: float = 60.0
    ramp: float = 10.0


async def run_lecture(spec: LectureSpec, notes: list | None = None) -> dict:
    from rooms import current

    deck = lecture_deck()
    code, key = current().start(deck, "bench-lecturer-browser-0001")
    lec = Lecture(spec.url, code, len(deck.slides), spec.timeout, spec.plan.answer_window)
    if notes is not None:
        lec.tally.notes = notes  # the caller keeps them, also when the lecture fails
    students = [Student(lec, i) for i in range(spec.students)]
    killed: list[str] = []
    watch = ProcWatch(spec.watch_pids)

    async def begin(s: Student, delay: float) -> None:
        await asyncio.sleep(delay)
        try:
            await s.start()
        except Exception as exc:  # noqa: BLE001 - a student who cannot start is counted and left out
            lec.tally.timeouts += 1
            lec.tally.note(f"student {s.i}: start {type(exc).__name__}: {exc}"[:200])
            return
        await s.follow()

    async def teach() -> None:
        await asyncio.sleep(spec.ramp + 5)  # every student in and settled
        lec.cpu0, lec.t0 = watch.cpu_seconds(), time.monotonic()
        if spec.kill_at is not None and spec.worker_pids:
            asyncio.get_running_loop().create_task(kill(spec.kill_at))
        await lecturer(lec, key, spec.plan, lec.t0)

    async def kill(at: float) -> None:
        await asyncio.sleep(at)
        os.kill(spec.worker_pids[0], signal.SIGKILL)
        killed.append(f"pid {spec.worker_pids[0]} at {at:.0f} s")

    await asyncio.gather(*(begin(s, spec.ramp * i / max(1, spec.students)) for i, s in enumerate(students)), teach())
    return {
        "code": code,
        "killed": killed,
        "tally": lec.tally,
        "cpu_s": watch.cpu_seconds() - lec.cpu0,
        "seconds": time.monotonic() - lec.t0,
        "events": len(lec.events),
        "never_shown": sum(len(lec.events) - s.seen_events for s in students),
    }


# ---------------------------------------------------------------- report
def summary(result: dict, spec: LectureSpec) -> dict:
    t: LectureTally = result["tally"]
    q = lambda xs, p: None if not xs else round(pct(xs, p), 3)  # noqa: E731
    return {
        "students": spec.students,
        "events": result["events"],
        "follow_p50": q(t.follow, 50),
        "follow_p95": q(t.follow, 95),
        "follow_max": q(t.follow, 100),
        "follow_n": len(t.follow),
        "answer_p50": q(t.answer, 50),
        "answer_p95": q(t.answer, 95),
        "answer_max": q(t.answer, 100),
        "answers": t.answered,
        "lost": t.lost,
        "crosstalk": t.crosstalk,
        "errors": t.exceptions + t.error_boxes + t.http_errors,
        "timeouts": t.timeouts,
        "reconnects": t.reconnects,
        "never_shown": result["never_shown"],
        "killed": result["killed"],
        "server_cpu_s": round(result["cpu_s"], 1),
        "seconds": round(result["seconds"], 1),
    }


def table(s: dict) -> str:
    head = "| students | events | follow p50 / p95 / max (s) | answer p50 / p95 / max (s) | answers | lost | cross-talk | errors | reconnects | worker killed | server CPU |"
    row = (
        f"| {s['students']} | {s['events']} | {s['follow_p50']} / {s['follow_p95']} / {s['follow_max']} "
        f"| {s['answer_p50']} / {s['answer_p95']} / {s['answer_max']} | {s['answers']} | {s['lost']} | {s['crosstalk']} "
        f"| {s['errors']} | {s['reconnects']} | {'; '.join(s['killed']) or '-'} | {s['server_cpu_s']} s in {s['seconds']} s |"
    )
    return "\n".join([head, "|" + "---|" * 11, row])


def write_doc(s: dict, args: argparse.Namespace, argv: list[str] | None, load: str) -> None:
    """The table as docs/performance.md's ``lecture`` section."""
    try:
        from bench import perf_doc
    except ImportError:  # run as a script: "bench" is bench/bench.py
        import perf_doc  # type: ignore[no-redef]

    lines = table(s).splitlines()
    columns = [c.strip() for c in lines[0].strip("|").split("|")]
    row = [c.strip() for c in lines[2].strip("|").split("|")]
    info = perf_doc.machine_info()
    info["load"] = load
    note = (
        f"{args.workers} workers behind nginx, store {args.store}; the lecturer moves every {args.move_every:g} s "
        f"and asks every {args.question_every:g} s ({args.answer_window:g} s to answer) for {args.minutes:g} minutes"
    )
    cmd = "bench/hall.py --lecture " + " ".join(argv if argv is not None else sys.argv[1:])
    perf_doc.update({"lecture": perf_doc.Table(columns, [row], [note])}, info, cmd)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="bench/hall.py --lecture", description=__doc__.split("\n\n")[0])
    ap.add_argument("--students", type=int, default=100)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--minutes", type=float, default=6.0)
    ap.add_argument("--move-every", type=float, default=20.0)
    ap.add_argument("--question-every", type=float, default=120.0)
    ap.add_argument("--answer-window", type=float, default=40.0)
    ap.add_argument("--kill-at", type=float, default=None, help="seconds in (default: mid second question)")
    ap.add_argument("--no-kill", action="store_true")
    ap.add_argument("--store", choices=("sqlite", "redis"), default="sqlite")
    ap.add_argument("--url", help="a running make serve (with --pids of its workers, and its ATTN_* environment)")
    ap.add_argument("--pids", default="", help="the workers' pids (the first is killed)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", type=Path)
    ap.add_argument("--doc", action="store_true", help="write the table into docs/performance.md (section lecture)")
    args = ap.parse_args(argv)
    if not 1 <= args.students <= 500 or not 1 <= args.workers <= 16 or args.minutes <= 0:
        ap.error("--students 1..500, --workers 1..16, --minutes > 0")
    return args


def main(argv: list[str] | None = None) -> int:
    from harness import start_redis, start_serve

    args = parse_args(argv)
    random.seed(args.seed)
    plan = Plan(args.minutes, args.move_every, args.question_every, args.answer_window, args.question_every / 2)
    kill_at = None if args.no_kill else args.kill_at
    if kill_at is None and not args.no_kill:
        kill_at = plan.first_question + plan.question_every + plan.answer_window / 4
    work = ROOT / "artifacts" / f"lecture-{os.getpid()}"
    env = {"ATTN_DATA_DIR": str(work / "data"), "ATTN_STORE": ""}
    redis = proc = None
    try:
        if args.store == "redis":
            redis, env["ATTN_STORE"] = start_redis(work / "redis")
        os.environ.update(env)
        if args.url:
            url, pids = args.url.rstrip("/"), [int(p) for p in args.pids.split(",") if p]
            watch = pids
        else:
            proc, state, _ = start_serve(workers=args.workers, extra_env=env)
            url, pids, watch = state["url"].rstrip("/"), [w["pid"] for w in state["workers"]], [proc.pid]
        spec = LectureSpec(url, args.students, plan, kill_at, pids, watch)
        result = asyncio.run(run_lecture(spec, notes := []))
    finally:
        for n in locals().get("notes") or []:
            print("  " + n, file=sys.stderr)
        if proc is not None:
            proc.terminate()
            proc.wait(60)
        if redis is not None:
            redis.terminate()
    s = summary(result, spec)
    load = "/".join(f"{x:.1f}" for x in os.getloadavg())
    print(
        f"# {os.cpu_count()} CPU cores, load average {os.getloadavg()[0]:.1f}; {args.workers} workers behind nginx, "
        f"store {args.store}; {args.students} students; lecturer: a move every {plan.move_every:g} s, a question every "
        f"{plan.question_every:g} s ({plan.answer_window:g} s to answer), {plan.minutes:g} minutes"
    )
    print(table(s))
    if args.doc:
        write_doc(s, args, argv, load)
    if args.json:
        args.json.write_text(
            json.dumps({"summary": s, "follow": result["tally"].follow, "answer": result["tally"].answer}, indent=1)
        )
    ok = (
        s["lost"] == 0
        and s["crosstalk"] == 0
        and s["errors"] == 0
        and (s["follow_p95"] or 99) <= 1.0
        and (s["answer_p95"] or 99) <= 1.0
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
