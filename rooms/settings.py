"""The rooms' settings, read from the environment (:func:`rooms.service.current` builds the service from them).

- ``ATTN_STORE``: ``redis://host:port/db`` (or ``rediss://``) for Redis, shared by workers on several hosts; unset or
  ``sqlite`` for SQLite, one file ``rooms.sqlite3`` in the data directory, shared by the workers of one host;
- ``ATTN_DATA_DIR``: that directory (default ``var/`` in the repository, ignored by git);
- ``ATTN_ROOM_IDLE_S``: a room ends this many seconds after the lecturer's last action or a student's last answer
  (default 3 hours; 60 s to 7 days);
- ``ATTN_MAX_ROOMS``: rooms open at once in one store (default 200).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATA_DIR = ROOT / "var"
DEFAULT_IDLE_S = 3 * 3600
IDLE_RANGE_S = (60, 7 * 24 * 3600)
DEFAULT_MAX_ROOMS = 200
MAX_ROOMS_RANGE = (1, 10_000)


class SettingError(ValueError):
    """A rooms setting in the environment is not valid: the message names it and what it takes."""


def _int_setting(name: str, default: int, lo: int, hi: int) -> int:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError as exc:
        raise SettingError(f"{name}={raw!r} is not a whole number ({lo} to {hi})") from exc
    if not lo <= value <= hi:
        raise SettingError(f"{name}={value} is outside {lo} to {hi}")
    return value


@dataclass(frozen=True)
class Settings:
    """Where the store is and how long rooms live. ``store``: ``"sqlite"`` or a ``redis://`` URL."""

    store: str = "sqlite"
    data_dir: Path = DEFAULT_DATA_DIR
    idle_s: int = DEFAULT_IDLE_S
    max_rooms: int = DEFAULT_MAX_ROOMS

    @classmethod
    def from_env(cls) -> Settings:
        store = os.environ.get("ATTN_STORE", "").strip() or "sqlite"
        if store != "sqlite" and not store.startswith(("redis://", "rediss://", "unix://")):
            raise SettingError(f"ATTN_STORE={store!r}: use sqlite (the default) or a redis://host:port/db URL")
        data = os.environ.get("ATTN_DATA_DIR", "").strip()
        return cls(
            store=store,
            data_dir=Path(data).expanduser() if data else DEFAULT_DATA_DIR,
            idle_s=_int_setting("ATTN_ROOM_IDLE_S", DEFAULT_IDLE_S, *IDLE_RANGE_S),
            max_rooms=_int_setting("ATTN_MAX_ROOMS", DEFAULT_MAX_ROOMS, *MAX_ROOMS_RANGE),
        )

    def open_store(self):
        """A new store for these settings (SQLite creates its directory and file)."""
        if self.store == "sqlite":
            from rooms.store import SQLiteStore

            return SQLiteStore(self.data_dir / "rooms.sqlite3", self.idle_s)
        from rooms.redis_store import RedisStore

        return RedisStore(self.store, self.idle_s)
