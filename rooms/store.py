"""The store the workers share: rooms, the lecturer's position, questions, answers, rate limits, presence.

:class:`Store` is what :mod:`rooms.service` needs; :class:`SQLiteStore` keeps it in one SQLite file in WAL mode
(every worker of one host opens the same file; a write is one short ``BEGIN IMMEDIATE`` transaction, committed
before the student is told it is recorded, so a worker killed a moment later loses nothing), and
:class:`rooms.redis_store.RedisStore` in Redis (workers on several hosts). Times are Unix seconds passed in by the
caller (tests move a clock); a room whose last activity is older than ``idle_s`` is gone for every reader at once
and deleted by :meth:`Store.sweep`.

Schema (SQLite; Redis keeps the same fields, see :mod:`rooms.redis_store`)::

    rooms(code PK, key: SHA-256 of the lecturer key, deck: its JSON, created, touched,
          pos_v: version of what students follow, at: slide index, page, params: the lecturer's own view of the
          slide as link parameters (JSON) or NULL for the slide as the deck has it, ans_v: version of the answers)
    questions(code, slide, state: 'open' | 'revealed')
    answers(code, slide, token: SHA-256 of a browser token, value)      one row per browser and question
    members(code, token, seen)                                          a browser waiting on the room, last seen
    hits(bucket, win, n, until)                                         rate-limit windows
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

PRESENT_S = 60  # a browser that waited on a room in the last minute counts as following it


@dataclass(frozen=True)
class RoomRow:
    """One room as stored. ``questions``: slide index -> "open" or "revealed" (slides never asked are absent)."""

    code: str
    key_digest: str
    deck: str
    created: float
    touched: float
    pos_v: int
    at: int
    page: str
    params: str | None
    ans_v: int
    questions: dict[int, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Versions:
    """What a waiting page compares: ``pos`` changes with what students follow (slide, view, a question's state),
    ``answers`` with every answer, ``members`` the browsers waiting on the room in the last minute."""

    pos: int
    answers: int
    members: int


class Store:
    """The operations :mod:`rooms.service` uses. Every method is one atomic step against the shared store."""

    idle_s: int

    def create(self, room: RoomRow, max_rooms: int, now: float) -> str:
        """Add ``room``: "created", "full" (``max_rooms`` rooms are open) or "taken" (its code is)."""
        raise NotImplementedError

    def room(self, code: str, now: float) -> RoomRow | None:
        """The room, or None when there is none or it has been idle longer than ``idle_s``."""
        raise NotImplementedError

    def move(self, code: str, at: int, page: str, params: str | None, now: float) -> int | None:
        """Set the lecturer's position; the new ``pos_v``, or None when the room is gone."""
        raise NotImplementedError

    def set_question(self, code: str, slide: int, state: str, now: float) -> int | None:
        raise NotImplementedError

    def end(self, code: str) -> bool:
        """Delete the room with its questions, answers and members."""
        raise NotImplementedError

    def answer(self, code: str, slide: int, token: str, value: str, max_answers: int, now: float) -> str:
        """Record a browser's answer once: "recorded", "again" (this browser answered already), "closed" (the
        question is not open), "full" (``max_answers`` reached) or "gone" (no such room)."""
        raise NotImplementedError

    def answers(self, code: str, slide: int) -> list[str]:
        raise NotImplementedError

    def mine(self, code: str, slide: int, token: str) -> str | None:
        raise NotImplementedError

    def hit(self, bucket: str, limit: int, window_s: int, now: float, count: bool = True) -> bool:
        """Count one event in ``bucket``'s current window of ``window_s`` seconds; False past ``limit``. With
        ``count`` False, only whether one more would still be allowed."""
        raise NotImplementedError

    def seen(self, code: str, token: str, max_members: int, now: float) -> None:
        raise NotImplementedError

    def versions(self, codes: Iterable[str], now: float) -> dict[str, Versions]:
        """Each live room's versions (gone rooms are left out)."""
        raise NotImplementedError

    def sweep(self, now: float) -> int:
        """Delete what has expired; the number of rooms deleted."""
        raise NotImplementedError

    def sizes(self) -> dict[str, int]:
        """How much is stored (rows or keys by kind): the tests check it stays bounded and empties."""
        raise NotImplementedError

    def close(self) -> None:
        pass


SCHEMA = """
CREATE TABLE IF NOT EXISTS rooms (
    code TEXT PRIMARY KEY, key TEXT NOT NULL, deck TEXT NOT NULL, created REAL NOT NULL, touched REAL NOT NULL,
    pos_v INTEGER NOT NULL, at INTEGER NOT NULL, page TEXT NOT NULL, params TEXT, ans_v INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS questions (
    code TEXT NOT NULL, slide INTEGER NOT NULL, state TEXT NOT NULL, PRIMARY KEY (code, slide)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS answers (
    code TEXT NOT NULL, slide INTEGER NOT NULL, token TEXT NOT NULL, value TEXT NOT NULL,
    PRIMARY KEY (code, slide, token)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS members (
    code TEXT NOT NULL, token TEXT NOT NULL, seen REAL NOT NULL, PRIMARY KEY (code, token)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS hits (
    bucket TEXT PRIMARY KEY, win INTEGER NOT NULL, n INTEGER NOT NULL, until REAL NOT NULL
) WITHOUT ROWID;
"""
_ROOM_TABLES = ("questions", "answers", "members")


class SQLiteStore(Store):
    """The store in one SQLite file (WAL mode), shared by every worker process on this host.

    One connection per process, used under a lock (each call is a few short statements); ``busy_timeout`` lets a
    worker wait out another's write. ``synchronous=NORMAL`` in WAL mode loses no committed transaction when a
    process dies (only on a power cut). The file is created with ``auto_vacuum=INCREMENTAL``: :meth:`sweep` gives
    the pages of deleted rooms back to the file system, so the file shrinks with the rooms it holds.
    """

    def __init__(self, path: Path, idle_s: int = 3 * 3600):
        self.path, self.idle_s = Path(path), idle_s
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, timeout=10, isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA busy_timeout = 10000")
        self._db.execute("PRAGMA auto_vacuum = INCREMENTAL")  # only takes effect on a new file, before any table
        self._db.execute("PRAGMA journal_mode = WAL")
        self._db.execute("PRAGMA synchronous = NORMAL")
        with self._write() as db:
            for statement in SCHEMA.split(";"):
                if statement.strip():
                    db.execute(statement)

    # ------------------------------------------------------------ plumbing
    class _Tx:
        def __init__(self, store: SQLiteStore):
            self.store = store

        def __enter__(self) -> sqlite3.Connection:
            self.store._lock.acquire()
            try:
                self.store._db.execute("BEGIN IMMEDIATE")
            except BaseException:
                self.store._lock.release()
                raise
            return self.store._db

        def __exit__(self, kind, exc, tb) -> None:
            try:
                self.store._db.execute("ROLLBACK" if kind else "COMMIT")
            finally:
                self.store._lock.release()

    def _write(self) -> SQLiteStore._Tx:
        return SQLiteStore._Tx(self)

    def _read(self, sql: str, args: tuple = ()) -> list[tuple]:
        with self._lock:
            return self._db.execute(sql, args).fetchall()

    def _live(self, now: float) -> float:
        return now - self.idle_s

    # ------------------------------------------------------------ rooms
    def create(self, room: RoomRow, max_rooms: int, now: float) -> str:
        with self._write() as db:
            self._sweep(db, now)
            (n,) = db.execute("SELECT COUNT(*) FROM rooms").fetchone()
            if n >= max_rooms:
                return "full"
            if db.execute("SELECT 1 FROM rooms WHERE code = ?", (room.code,)).fetchone():
                return "taken"
            db.execute(
                "INSERT INTO rooms VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (room.code, room.key_digest, room.deck, now, now, room.pos_v, room.at, room.page, room.params, 0),
            )
        return "created"

    def room(self, code: str, now: float) -> RoomRow | None:
        with self._lock:
            row = self._db.execute(
                "SELECT code, key, deck, created, touched, pos_v, at, page, params, ans_v FROM rooms "
                "WHERE code = ? AND touched >= ?",
                (code, self._live(now)),
            ).fetchone()
            if row is None:
                return None
            qs = self._db.execute("SELECT slide, state FROM questions WHERE code = ?", (code,)).fetchall()
        return RoomRow(*row, questions=dict(qs))

    def move(self, code: str, at: int, page: str, params: str | None, now: float) -> int | None:
        with self._write() as db:
            got = db.execute(
                "UPDATE rooms SET at = ?, page = ?, params = ?, pos_v = pos_v + 1, touched = ? "
                "WHERE code = ? AND touched >= ? RETURNING pos_v",
                (at, page, params, now, code, self._live(now)),
            ).fetchone()
        return None if got is None else got[0]

    def set_question(self, code: str, slide: int, state: str, now: float) -> int | None:
        with self._write() as db:
            got = db.execute(
                "UPDATE rooms SET pos_v = pos_v + 1, touched = ? WHERE code = ? AND touched >= ? RETURNING pos_v",
                (now, code, self._live(now)),
            ).fetchone()
            if got is not None:
                db.execute("INSERT OR REPLACE INTO questions VALUES (?, ?, ?)", (code, slide, state))
        return None if got is None else got[0]

    def end(self, code: str) -> bool:
        with self._write() as db:
            gone = db.execute("DELETE FROM rooms WHERE code = ?", (code,)).rowcount
            for table in _ROOM_TABLES:
                db.execute(f"DELETE FROM {table} WHERE code = ?", (code,))  # noqa: S608 - a constant table name
        return bool(gone)

    # ------------------------------------------------------------ answers
    def answer(self, code: str, slide: int, token: str, value: str, max_answers: int, now: float) -> str:
        with self._write() as db:
            if not db.execute(
                "SELECT 1 FROM rooms WHERE code = ? AND touched >= ?", (code, self._live(now))
            ).fetchone():
                return "gone"
            state = db.execute("SELECT state FROM questions WHERE code = ? AND slide = ?", (code, slide)).fetchone()
            if state is None or state[0] != "open":
                return "closed"
            if db.execute(
                "SELECT 1 FROM answers WHERE code = ? AND slide = ? AND token = ?", (code, slide, token)
            ).fetchone():
                return "again"
            (n,) = db.execute("SELECT COUNT(*) FROM answers WHERE code = ? AND slide = ?", (code, slide)).fetchone()
            if n >= max_answers:
                return "full"
            db.execute("INSERT INTO answers VALUES (?, ?, ?, ?)", (code, slide, token, value))
            db.execute("UPDATE rooms SET ans_v = ans_v + 1, touched = ? WHERE code = ?", (now, code))
        return "recorded"

    def answers(self, code: str, slide: int) -> list[str]:
        return [v for (v,) in self._read("SELECT value FROM answers WHERE code = ? AND slide = ?", (code, slide))]

    def mine(self, code: str, slide: int, token: str) -> str | None:
        rows = self._read("SELECT value FROM answers WHERE code = ? AND slide = ? AND token = ?", (code, slide, token))
        return rows[0][0] if rows else None

    # ------------------------------------------------------------ limits and presence
    def hit(self, bucket: str, limit: int, window_s: int, now: float, count: bool = True) -> bool:
        win = int(now // window_s)
        if not count:
            rows = self._read("SELECT n FROM hits WHERE bucket = ? AND win = ?", (bucket, win))
            return not rows or rows[0][0] < limit
        with self._write() as db:
            (n,) = db.execute(
                "INSERT INTO hits VALUES (?, ?, 1, ?) ON CONFLICT (bucket) DO UPDATE SET "
                "n = CASE WHEN win = excluded.win THEN n + 1 ELSE 1 END, win = excluded.win, until = excluded.until "
                "RETURNING n",
                (bucket, win, (win + 1) * window_s),
            ).fetchone()
        return n <= limit

    def seen(self, code: str, token: str, max_members: int, now: float) -> None:
        with self._write() as db:
            if db.execute("SELECT 1 FROM members WHERE code = ? AND token = ?", (code, token)).fetchone():
                db.execute("UPDATE members SET seen = ? WHERE code = ? AND token = ?", (now, code, token))
                return
            (n,) = db.execute("SELECT COUNT(*) FROM members WHERE code = ?", (code,)).fetchone()
            if n < max_members:
                db.execute("INSERT INTO members VALUES (?, ?, ?)", (code, token, now))

    def versions(self, codes: Iterable[str], now: float) -> dict[str, Versions]:
        out = {}
        with self._lock:
            for code in codes:
                row = self._db.execute(
                    "SELECT pos_v, ans_v, (SELECT COUNT(*) FROM members WHERE code = ?1 AND seen >= ?3) "
                    "FROM rooms WHERE code = ?1 AND touched >= ?2",
                    (code, self._live(now), now - PRESENT_S),
                ).fetchone()
                if row is not None:
                    out[code] = Versions(*row)
        return out

    # ------------------------------------------------------------ expiry and bounds
    def _sweep(self, db: sqlite3.Connection, now: float) -> int:
        gone = db.execute("DELETE FROM rooms WHERE touched < ?", (self._live(now),)).rowcount
        for table in _ROOM_TABLES:
            db.execute(f"DELETE FROM {table} WHERE code NOT IN (SELECT code FROM rooms)")  # noqa: S608
        db.execute("DELETE FROM members WHERE seen < ?", (now - PRESENT_S,))
        db.execute("DELETE FROM hits WHERE until < ?", (now,))
        return gone

    def sweep(self, now: float) -> int:
        with self._write() as db:
            gone = self._sweep(db, now)
        with self._lock:
            # Python's execute() steps a pragma once (one page freed); a script runs it to the end
            self._db.executescript("PRAGMA incremental_vacuum;")
            self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return gone

    def sizes(self) -> dict[str, int]:
        out = {t: self._read(f"SELECT COUNT(*) FROM {t}")[0][0] for t in ("rooms", *_ROOM_TABLES, "hits")}  # noqa: S608
        out["bytes"] = sum(p.stat().st_size for p in self.path.parent.glob(self.path.name + "*") if p.is_file())
        return out

    def close(self) -> None:
        with self._lock:
            self._db.close()


def dumps(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
