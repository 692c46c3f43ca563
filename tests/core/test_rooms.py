"""Live lecture rooms without a page (rooms/): codes and keys, what a lecturer and a student may do, the limits,
and the store they share, on SQLite (a file in a temporary directory) and on a real redis-server; two processes
answering at once lose nothing, a process killed while answering loses no committed answer, and the store empties
after the idle time."""

from __future__ import annotations

import ast
import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from attn_core import decks
from attn_core.i18n import translate
from attn_core.runtime.config import ConfigError
from rooms import codes
from rooms.redis_store import RedisStore
from rooms.service import LIMITS, MAX_ANSWERS, Position, Refused, Rooms
from rooms.settings import SettingError, Settings
from rooms.store import SQLiteStore

ROOT = Path(__file__).resolve().parents[2]
GQA = decks.shipped()["gqa_and_the_kv_cache"]
HEADS = decks.shipped()["what_trained_heads_do"]
NUMBER_SLIDE = 3  # GQA's "how many MiB" question
CHOICE_SLIDE = 0  # the heads deck's "which is an induction head"
LECTURER, STUDENT = "lecturer-browser-token-0001", "student-browser-token-00001"


class Clock:
    def __init__(self, t: float = 1_900_000_000.0):
        self.t = t

    def __call__(self) -> float:
        return self.t


def make_store(kind: str, tmp_path: Path, redis_url: str | None, idle_s: int = 3600):
    if kind == "sqlite":
        return SQLiteStore(tmp_path / "rooms.sqlite3", idle_s)
    store = RedisStore(redis_url, idle_s, prefix=f"t{time.monotonic_ns()}:")  # a prefix of its own per test
    return store


@pytest.fixture(params=["sqlite", "redis"])
def kind(request):
    return request.param


@pytest.fixture
def svc(kind, tmp_path, request):
    url = request.getfixturevalue("redis_url") if kind == "redis" else None
    store = make_store(kind, tmp_path, url)
    clock = Clock()
    service = Rooms(store, Settings(data_dir=tmp_path, max_rooms=5), clock)
    yield service
    store.close()


def student(i: int) -> str:
    return f"student-browser-{i:08d}-xxxxxx"


# ---------------------------------------------------------------- codes and keys
def test_codes_have_no_look_alikes_enough_entropy_and_read_back_however_typed():
    assert not set("01ILO") & set(codes.ALPHABET) and len(set(codes.ALPHABET)) == 31
    assert codes.CODE_LEN * math.log2(len(codes.ALPHABET)) > 39  # ~8.5e11 codes
    made = {codes.new_code() for _ in range(2000)}
    assert len(made) == 2000 and all(codes.read_code(c) == c for c in made)
    assert codes.read_code(" abcd-2345 ") == "ABCD2345" and codes.display_code("ABCD2345") == "ABCD-2345"
    for bad in ("ABCD-234", "ABCD-23456", "ABCD-2340", "ABCD-234I", "", None, 12345678, "A" * 100):
        assert codes.read_code(bad) is None, bad


def test_a_key_is_128_random_bits_stored_as_a_digest_and_compared_whole():
    key = codes.new_key()
    assert len(key) == 22 and codes.key_shape(key) and len({codes.new_key() for _ in range(100)}) == 100
    stored = codes.digest(key)
    assert stored != key and len(stored) == 64
    assert codes.key_matches(key, stored)
    assert not codes.key_matches(key[:-1] + ("A" if key[-1] != "A" else "B"), stored)
    assert not codes.key_shape("short") and not codes.key_shape(key + "x") and not codes.key_shape(None)


# ---------------------------------------------------------------- a lecture, end to end on each store
def test_a_lecture_moves_asks_answers_once_and_reveals(svc):
    code, key = svc.start(GQA, LECTURER)
    view = svc.join(code.lower(), STUDENT)
    assert view.position == Position(0, "kv_sharing", None) and view.deck == GQA
    v0 = svc.versions(code).pos
    assert svc.move(code, key, NUMBER_SLIDE, "kv_sharing") > v0
    assert svc.view(code).position == Position(NUMBER_SLIDE, "kv_sharing", None)
    svc.move(code, key, NUMBER_SLIDE, "kv_sharing", {"kv_view": "maps", "n_kv_heads": "4"})
    assert svc.view(code).position.params == (("kv_view", "maps"), ("n_kv_heads", "4"))

    with pytest.raises(Refused) as err:
        svc.answer(code, student(1), NUMBER_SLIDE, "512")
    assert err.value.reason == "closed"  # not asked yet
    svc.ask(code, key, NUMBER_SLIDE)
    assert svc.view(code).state_of(NUMBER_SLIDE) == "open"
    answers_before = svc.versions(code).answers
    for i, value in enumerate(["512", 512.4, "600", "5.12e2", "-3"]):
        assert svc.answer(code, student(i), NUMBER_SLIDE, value) == float(value)
    assert svc.versions(code).answers == answers_before + 5
    with pytest.raises(Refused) as err:
        svc.answer(code, student(0), NUMBER_SLIDE, "513")
    assert err.value.reason == "again" and svc.mine(code, student(0), NUMBER_SLIDE) == 512.0

    assert svc.results(code, NUMBER_SLIDE) is None  # a student sees no answers before the reveal
    counted = svc.results(code, NUMBER_SLIDE, key)
    assert counted.n == 5 and counted.bars == () and counted.right is None  # the lecturer: how many, nothing else
    svc.reveal(code, key, NUMBER_SLIDE)
    with pytest.raises(Refused):
        svc.answer(code, student(9), NUMBER_SLIDE, "512")  # closed by the reveal
    res = svc.results(code, NUMBER_SLIDE)
    assert res.n == 5 and res.right == 3  # 512, 512.4 and 5.12e2 are within 1 MiB of 512
    assert dict(res.bars) == {-3.0: 1, 512.0: 2, 512.4: 1, 600.0: 1}
    csv = svc.results_csv(code, key).splitlines()
    assert csv[0] == "slide,question,kind,answer,count,right"
    assert "4," in csv[1] and any(line.endswith(",512,2,yes") for line in csv) and len(csv) == 5
    assert not any(s in "".join(csv) for s in (STUDENT, student(0), codes.digest(student(0))[:32]))
    svc.end(code, key)
    assert svc.view(code) is None and svc.versions(code) is None


def test_a_multiple_choice_question_counts_every_choice(svc):
    code, key = svc.start(HEADS, LECTURER)
    svc.ask(code, key, CHOICE_SLIDE)
    for i, pick in enumerate([3, 3, 1, 3]):
        svc.answer(code, student(i), CHOICE_SLIDE, pick)
    svc.reveal(code, key, CHOICE_SLIDE)
    res = svc.results(code, CHOICE_SLIDE)
    assert res.bars == ((1.0, 1), (2.0, 0), (3.0, 3)) and res.right == 3 and res.n == 4


def test_without_the_key_nobody_drives(svc):
    code, key = svc.start(GQA, LECTURER)
    before = svc.view(code)
    wrong = codes.new_key()
    for bad in (None, "", wrong, key[:-2], key + "==", 12345):
        for call in (
            lambda b: svc.move(code, b, 1, "kv_sharing"),
            lambda b: svc.ask(code, b, NUMBER_SLIDE),
            lambda b: svc.reveal(code, b, NUMBER_SLIDE),
            lambda b: svc.end(code, b),
            lambda b: svc.results_csv(code, b),
        ):
            with pytest.raises(Refused) as err:
                call(bad)
            assert err.value.reason == "not_lecturer"
    after = svc.view(code)
    assert (after.pos_v, after.position, dict(after.questions)) == (before.pos_v, before.position, {})
    assert svc.results(code, NUMBER_SLIDE, wrong) is None  # no count for a wrong key either


def test_every_input_is_checked_with_a_message(svc):
    code, key = svc.start(GQA, LECTURER)
    for bad, reason in (("ABCD-234", "code_shape"), ("ABCD-2345", "gone"), ("no such", "code_shape")):
        with pytest.raises(Refused) as err:
            svc.join(bad, STUDENT)
        assert err.value.reason == reason
    for at, page, params in ((9, "mla", None), (-1, "kv_sharing", None), (1, "mla", None), (1, "../x", {})):
        with pytest.raises(Refused) as err:
            svc.move(code, key, at, page, params)
        assert err.value.reason == "slide", (at, page)
    with pytest.raises(Refused) as err:
        svc.move(code, key, 1, "kv_sharing", {f"k{i}": "v" * 300 for i in range(30)})
    assert err.value.reason == "view_size"
    with pytest.raises(Refused) as err:
        svc.ask(code, key, 0)  # slide 1 asks nothing
    assert err.value.reason == "no_question"
    with pytest.raises(Refused) as err:
        svc.reveal(code, key, NUMBER_SLIDE)
    assert err.value.reason == "not_asked"
    svc.ask(code, key, NUMBER_SLIDE)
    for raw in ("five hundred", "inf", "nan", 1e16, None, True, [512]):
        with pytest.raises(ConfigError) as err:
            svc.answer(code, STUDENT, NUMBER_SLIDE, raw)
        assert err.value.key == "answer_number", raw
    choice_code, choice_key = svc.start(HEADS, LECTURER)
    svc.ask(choice_code, choice_key, CHOICE_SLIDE)
    for raw in (0, 4, "2.5", "B", None):
        with pytest.raises(ConfigError) as err:
            svc.answer(choice_code, STUDENT, CHOICE_SLIDE, raw)
        assert err.value.key == "answer_choice", raw
    assert svc.mine(code, STUDENT, NUMBER_SLIDE) is None  # nothing refused was stored


def test_wrong_codes_and_keys_are_limited_per_browser(svc):
    code, key = svc.start(GQA, LECTURER)
    n_codes = LIMITS["code_browser"][0]
    for _ in range(n_codes):
        with pytest.raises(Refused):
            svc.join("ZZZZ-ZZZZ", "guesser-browser-token-0001")
    with pytest.raises(Refused) as err:
        svc.join(code, "guesser-browser-token-0001")  # even the right code, for the window's rest
    assert err.value.reason == "code_limit"
    assert svc.join(code, STUDENT).code == code  # another browser is not held back
    for _ in range(LIMITS["key_browser"][0]):
        with pytest.raises(Refused):
            svc.claim(code, codes.new_key(), "key-guesser-token-000001")
    with pytest.raises(Refused) as err:
        svc.claim(code, key, "key-guesser-token-000001")
    assert err.value.reason == "key_limit"
    assert svc.claim(code, key, LECTURER).code == code
    svc.clock.t += LIMITS["key_browser"][1] + 1
    assert svc.claim(code, key, "key-guesser-token-000001").code == code  # the window passed


def test_answers_rooms_and_browsers_are_bounded(svc, monkeypatch):
    made = [svc.start(GQA, f"lecturer-{i}-browser-token-x") for i in range(5)]
    with pytest.raises(Refused) as err:
        svc.start(GQA, "lecturer-6-browser-token-x")  # max_rooms=5 in this test's settings
    assert err.value.reason == "full"
    code, key = made[0]
    svc.ask(code, key, NUMBER_SLIDE)
    monkeypatch.setattr("rooms.service.MAX_ANSWERS", 3)
    for i in range(3):
        svc.answer(code, student(i), NUMBER_SLIDE, 512)
    with pytest.raises(Refused) as err:
        svc.answer(code, student(3), NUMBER_SLIDE, 512)
    assert err.value.reason == "full_answers" and svc.results(code, NUMBER_SLIDE, key).n == 3
    monkeypatch.setattr("rooms.service.MAX_MEMBERS", 4)
    for i in range(10):
        svc.seen(code, student(i))
    assert svc.versions(code).members == 4
    quick = "a-quick-clicking-browser-01"
    for _ in range(LIMITS["answer_browser"][0]):
        with pytest.raises(ConfigError):
            svc.answer(code, quick, NUMBER_SLIDE, "not a number")
    with pytest.raises(Refused) as err:
        svc.answer(code, quick, NUMBER_SLIDE, 512)
    assert err.value.reason == "answer_limit"


def test_one_browser_starts_few_rooms(svc):
    svc.settings = Settings(max_rooms=100)
    for _ in range(LIMITS["start_browser"][0]):
        svc.start(GQA, LECTURER)
    with pytest.raises(Refused) as err:
        svc.start(GQA, LECTURER)
    assert err.value.reason == "start_limit"
    svc.start(GQA, "another-lecturer-browser-1")


def test_a_room_expires_after_its_idle_time_and_the_store_empties(svc, kind):
    code, key = svc.start(GQA, LECTURER)
    svc.ask(code, key, NUMBER_SLIDE)
    for i in range(50):
        svc.answer(code, student(i), NUMBER_SLIDE, i)
        svc.seen(code, student(i))
    sizes = svc.store.sizes()
    assert sizes["rooms"] == 1 and sizes["answers"] == 50 and sizes["members"] == 50
    svc.clock.t += svc.store.idle_s - 5
    svc.move(code, key, 1, "kv_sharing")  # the lecturer's action keeps it
    svc.clock.t += svc.store.idle_s - 5
    assert svc.view(code) is not None
    svc.clock.t += 10
    assert svc.view(code) is None and svc.versions(code) is None  # gone for every reader at once
    with pytest.raises(Refused):
        svc.answer(code, student(99), NUMBER_SLIDE, 1)
    svc.clock.t += 3600  # every rate-limit window has passed too
    svc.store.sweep(svc.clock())
    sizes = svc.store.sizes()
    assert sizes["rooms"] == sizes["answers"] == sizes["members"] == sizes.get("questions", 0) == 0
    if kind == "sqlite":
        assert sizes["hits"] == 0
    else:  # Redis keeps time itself: a rate-limit window's counter expires with its window, not with this clock
        longest = max(window for _, window in LIMITS.values())
        ttls = [svc.store.r.ttl(k) for k in svc.store.r.scan_iter(match=f"{svc.store.prefix}*")]
        assert sizes["keys"] == sizes["hits"] and all(0 < t <= longest + 1 for t in ttls), ttls


def test_the_sqlite_file_shrinks_when_rooms_go(tmp_path):
    store = SQLiteStore(tmp_path / "rooms.sqlite3", 3600)
    clock = Clock()
    svc = Rooms(store, Settings(data_dir=tmp_path, max_rooms=50), clock)
    made = []
    for i in range(40):
        code, key = svc.start(GQA, f"many-rooms-browser-{i:06d}")
        made.append((code, key))
        clock.t += 11  # past the start limit's pace
    for code, key in made:
        svc.ask(code, key, NUMBER_SLIDE)
        for j in range(30):
            svc.answer(code, student(j), NUMBER_SLIDE, j)
        clock.t += 61  # the same 30 browsers answer in the next room a minute later (their answer limit)
    store.sweep(clock())
    full = store.sizes()["bytes"]
    clock.t += 7200
    assert store.sweep(clock()) == 40
    left = store.sizes()
    assert left["rooms"] == left["answers"] == left["questions"] == 0
    assert left["bytes"] < full / 4, (full, left["bytes"])  # incremental vacuum gave the pages back


def test_redis_forgets_an_abandoned_room_by_itself(redis_url):
    """No sweep: every key of a room carries the idle time as its expiry, refreshed by each action."""
    store = RedisStore(redis_url, idle_s=1, prefix=f"exp{time.monotonic_ns()}:")
    svc = Rooms(store, Settings(max_rooms=5))
    code, key = svc.start(GQA, LECTURER)
    svc.ask(code, key, NUMBER_SLIDE)
    svc.answer(code, STUDENT, NUMBER_SLIDE, 512)
    svc.seen(code, STUDENT)
    assert store.sizes()["keys"] >= 4
    deadline = time.time() + 10
    while (
        store.r.exists(f"{store.prefix}room:{code}", f"{store.prefix}ans:{code}:{NUMBER_SLIDE}")
        and time.time() < deadline
    ):
        time.sleep(0.2)
    left = [k for k in store.r.scan_iter(match=f"{store.prefix}*") if not k.startswith(f"{store.prefix}hit:")]
    assert left in ([], [f"{store.prefix}rooms"]), left
    time.sleep(1.2)
    assert [k for k in store.r.scan_iter(match=f"{store.prefix}*") if ":hit:" not in k] == []


# ---------------------------------------------------------------- several processes
def _store_where(store) -> str:
    return str(store.path) if isinstance(store, SQLiteStore) else f"{store.url}|{store.prefix}"


def test_two_processes_answering_at_once_lose_nothing(kind, tmp_path, request, monkeypatch):
    """This process and another answer 150 questions each at the same time, into the same room."""
    monkeypatch.setitem(LIMITS, "answer_room", (10_000, 10))
    url = request.getfixturevalue("redis_url") if kind == "redis" else None
    store = make_store(kind, tmp_path, url)
    svc = Rooms(store, Settings(data_dir=tmp_path, max_rooms=5))
    code, key = svc.start(GQA, LECTURER)
    svc.ask(code, key, NUMBER_SLIDE)
    script = ANSWERS.format(root=str(ROOT), kind=kind, where=_store_where(store), code=code, slide=NUMBER_SLIDE)
    other = subprocess.Popen([sys.executable, "-c", script + "\nrun(150, 300)\n"], stdout=subprocess.PIPE, text=True)
    assert other.stdout.readline().strip() == "ready"  # its imports done: from here both answer at once
    for i in range(150):
        svc.answer(code, student(i), NUMBER_SLIDE, i)
    other.wait(120)
    assert other.returncode == 0
    assert sorted(float(v) for v in store.answers(code, NUMBER_SLIDE)) == [float(i) for i in range(300)]
    assert svc.versions(code).answers == 300


ANSWERS = """
import sys
sys.path.insert(0, {root!r})
from rooms.service import Rooms, LIMITS
from rooms.settings import Settings
from rooms.store import SQLiteStore
from rooms.redis_store import RedisStore
LIMITS["answer_room"] = (10_000, 10)
LIMITS["answer_browser"] = (10_000, 60)
kind, where, code = {kind!r}, {where!r}, {code!r}
store = SQLiteStore(where, 3600) if kind == "sqlite" else RedisStore(where.split("|")[0], 3600, where.split("|")[1])
svc = Rooms(store, Settings(max_rooms=5))
print("ready", flush=True)


def run(first, last):
    for i in range(first, last):
        svc.answer(code, "student-browser-%08d-xxxxxx" % i, {slide}, i)
        print(i, flush=True)  # the student is told only after the commit
"""


def test_a_process_killed_while_answering_loses_no_recorded_answer(kind, tmp_path, request):
    url = request.getfixturevalue("redis_url") if kind == "redis" else None
    store = make_store(kind, tmp_path, url)
    svc = Rooms(store, Settings(data_dir=tmp_path, max_rooms=5))
    code, key = svc.start(GQA, LECTURER)
    svc.ask(code, key, NUMBER_SLIDE)
    script = ANSWERS.format(root=str(ROOT), kind=kind, where=_store_where(store), code=code, slide=NUMBER_SLIDE)
    proc = subprocess.Popen([sys.executable, "-c", script + "\nrun(0, 100_000)\n"], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "ready"
    told = []
    for line in proc.stdout:
        told.append(int(line))
        if len(told) >= 200:
            os.kill(proc.pid, signal.SIGKILL)  # mid-question, between (or inside) two answers
            break
    proc.wait(30)
    told += [int(x) for x in proc.stdout.read().split()]
    stored = {int(float(v)) for v in store.answers(code, NUMBER_SLIDE)}
    assert set(told) <= stored, sorted(set(told) - stored)[:5]  # every answer a student was told of is there
    assert len(stored) - len(told) <= 1  # at most the one in flight, committed before its reply was sent


# ---------------------------------------------------------------- settings and messages
def test_settings_come_from_the_environment_and_are_checked(monkeypatch, tmp_path):
    monkeypatch.setenv("ATTN_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("ATTN_ROOM_IDLE_S", "600")
    monkeypatch.delenv("ATTN_STORE", raising=False)
    s = Settings.from_env()
    assert (s.store, s.data_dir, s.idle_s) == ("sqlite", tmp_path, 600)
    store = s.open_store()
    assert isinstance(store, SQLiteStore) and store.path == tmp_path / "rooms.sqlite3" and store.idle_s == 600
    assert store._db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    for name, value in (("ATTN_ROOM_IDLE_S", "5"), ("ATTN_ROOM_IDLE_S", "soon"), ("ATTN_STORE", "mysql://x")):
        monkeypatch.setenv(name, value)
        with pytest.raises(SettingError, match=name):
            Settings.from_env()
        monkeypatch.setenv("ATTN_ROOM_IDLE_S", "600")
        monkeypatch.delenv("ATTN_STORE", raising=False)


def test_every_refusal_has_a_catalog_message_in_both_languages():
    """Each ``Refused(message, key, ...)`` in rooms/ renders ``err.room_<key>`` in English and Chinese with its values."""
    found = 0
    for path in sorted((ROOT / "rooms").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "Refused":
                found += 1
                key = node.args[1].value
                params = {k.arg: 3 for k in node.keywords}
                for lang in ("en", "zh"):
                    text = translate(f"err.room_{key}", lang, **params)
                    assert text and not text.startswith("err.") and "{" not in text, (path.name, key, lang, text)
    assert found > 15
    assert json.loads(json.dumps(LIMITS)) and MAX_ANSWERS >= 100


def test_the_lead_cookie_holds_a_key_only_for_its_room(svc):
    """rooms/web.py's lead endpoint sets ``attn_lead=<code>.<key>`` for a valid key only; the app reads it back for
    that room only (a lecturer's reload, or its page on another worker after its own died)."""
    from rooms.web import LEAD_COOKIE, lead_of

    code, key = svc.start(GQA, LECTURER)
    assert svc.key_ok(code, key) and not svc.key_ok(code, codes.new_key()) and not svc.key_ok(code, "short")
    assert lead_of(f"{LEAD_COOKIE}={code}.{key}; other=1", code) == key
    assert lead_of(f"{LEAD_COOKIE}={code}.{key}", "ZZZZZZZZ") is None
    assert lead_of(f"{LEAD_COOKIE}={code}.short", code) is None and lead_of(None, code) is None
