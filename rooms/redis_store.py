"""The rooms' store in Redis (``ATTN_STORE=redis://host:port/db``): for workers on several hosts.

Keys (``attn:`` by default; every key of a room expires ``idle_s`` after the room's last activity, refreshed at
each one, so Redis itself forgets an abandoned room)::

    attn:rooms                   sorted set: the open rooms' codes (by creation time), to bound their number
    attn:room:<code>             hash: key (SHA-256), deck, created, touched, pos_v, at, page, params, ans_v,
                                 q:<slide> = open | revealed
    attn:ans:<code>:<slide>      hash: SHA-256 of a browser token -> its answer
    attn:mem:<code>              sorted set: SHA-256 of a browser token -> when it last waited on the room
    attn:hit:<bucket>:<window>   counter of a rate-limit window, expiring with it

Each change is one Lua script, so two workers never interleave inside one (an answer is checked and written at once).
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from rooms.store import PRESENT_S, RoomRow, Store, Versions

_LIVE = """
local function live(key, now, idle)
  local t = tonumber(redis.call('HGET', key, 'touched'))
  return t ~= nil and t >= now - idle
end
local function touch(prefix, code, now, ttl)
  local rk = prefix .. 'room:' .. code
  redis.call('HSET', rk, 'touched', now)
  redis.call('PEXPIRE', rk, ttl)
  redis.call('PEXPIRE', prefix .. 'mem:' .. code, ttl)
  for _, f in ipairs(redis.call('HKEYS', rk)) do
    if string.sub(f, 1, 2) == 'q:' then redis.call('PEXPIRE', prefix .. 'ans:' .. code .. ':' .. string.sub(f, 3), ttl) end
  end
end
local function drop(prefix, code)
  local rk = prefix .. 'room:' .. code
  for _, f in ipairs(redis.call('HKEYS', rk)) do
    if string.sub(f, 1, 2) == 'q:' then redis.call('DEL', prefix .. 'ans:' .. code .. ':' .. string.sub(f, 3)) end
  end
  redis.call('DEL', rk, prefix .. 'mem:' .. code)
  redis.call('ZREM', prefix .. 'rooms', code)
end
local function prune(prefix, now, idle)
  local n = 0
  for _, c in ipairs(redis.call('ZRANGE', prefix .. 'rooms', 0, -1)) do
    if not live(prefix .. 'room:' .. c, now, idle) then drop(prefix, c); n = n + 1 end
  end
  return n
end
local prefix, now, idle, ttl = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
"""
# ARGV[5]: code, ARGV[6]: max rooms, ARGV[7..]: the room hash's fields and values
_CREATE = (
    _LIVE
    + """
prune(prefix, now, idle)
local rk = prefix .. 'room:' .. ARGV[5]
if redis.call('ZCARD', prefix .. 'rooms') >= tonumber(ARGV[6]) then return 'full' end
if redis.call('EXISTS', rk) == 1 then return 'taken' end
redis.call('HSET', rk, unpack(ARGV, 7))
redis.call('PEXPIRE', rk, ttl)
redis.call('ZADD', prefix .. 'rooms', now, ARGV[5])
redis.call('PEXPIRE', prefix .. 'rooms', ttl)
return 'created'
"""
)
# ARGV[5]: code, ARGV[6]: at, ARGV[7]: page, ARGV[8]: params, ARGV[9]: '1' when params are given
_MOVE = (
    _LIVE
    + """
local rk = prefix .. 'room:' .. ARGV[5]
if not live(rk, now, idle) then return false end
redis.call('HSET', rk, 'at', ARGV[6], 'page', ARGV[7])
if ARGV[9] == '1' then redis.call('HSET', rk, 'params', ARGV[8]) else redis.call('HDEL', rk, 'params') end
local v = redis.call('HINCRBY', rk, 'pos_v', 1)
touch(prefix, ARGV[5], now, ttl)
return v
"""
)
# ARGV[5]: code, ARGV[6]: slide, ARGV[7]: state
_QUESTION = (
    _LIVE
    + """
local rk = prefix .. 'room:' .. ARGV[5]
if not live(rk, now, idle) then return false end
redis.call('HSET', rk, 'q:' .. ARGV[6], ARGV[7])
local v = redis.call('HINCRBY', rk, 'pos_v', 1)
touch(prefix, ARGV[5], now, ttl)
return v
"""
)
# ARGV[5]: code, ARGV[6]: slide, ARGV[7]: token, ARGV[8]: value, ARGV[9]: max answers
_ANSWER = (
    _LIVE
    + """
local rk = prefix .. 'room:' .. ARGV[5]
local ak = prefix .. 'ans:' .. ARGV[5] .. ':' .. ARGV[6]
if not live(rk, now, idle) then return 'gone' end
if redis.call('HGET', rk, 'q:' .. ARGV[6]) ~= 'open' then return 'closed' end
if redis.call('HEXISTS', ak, ARGV[7]) == 1 then return 'again' end
if redis.call('HLEN', ak) >= tonumber(ARGV[9]) then return 'full' end
redis.call('HSET', ak, ARGV[7], ARGV[8])
redis.call('HINCRBY', rk, 'ans_v', 1)
touch(prefix, ARGV[5], now, ttl)
return 'recorded'
"""
)
# ARGV[5]: code, ARGV[6]: token, ARGV[7]: max members, ARGV[8]: present seconds
_SEEN = (
    _LIVE
    + """
local rk = prefix .. 'room:' .. ARGV[5]
local mk = prefix .. 'mem:' .. ARGV[5]
if not live(rk, now, idle) then return 0 end
redis.call('ZREMRANGEBYSCORE', mk, '-inf', '(' .. (now - tonumber(ARGV[8])))
if redis.call('ZSCORE', mk, ARGV[6]) or redis.call('ZCARD', mk) < tonumber(ARGV[7]) then
  redis.call('ZADD', mk, now, ARGV[6])
end
local left = redis.call('PTTL', rk)
if left > 0 then redis.call('PEXPIRE', mk, left) end
return 1
"""
)
# ARGV[5]: code ('' to sweep every expired room)
_END = (
    _LIVE
    + """
if ARGV[5] ~= '' then
  local existed = redis.call('EXISTS', prefix .. 'room:' .. ARGV[5])
  drop(prefix, ARGV[5])
  return existed
end
return prune(prefix, now, idle)
"""
)


class RedisStore(Store):
    """The store in Redis: ``url`` as redis-py reads it (``redis://host:port/db``, ``rediss://`` for TLS, a
    password in the URL); ``prefix`` starts every key (another app may share the database)."""

    def __init__(self, url: str, idle_s: int = 3 * 3600, prefix: str = "attn:"):
        import redis

        self.url, self.idle_s, self.prefix = url, idle_s, prefix
        self.r = redis.Redis.from_url(url, decode_responses=True, socket_timeout=10, health_check_interval=30)
        self._scripts = {
            name: self.r.register_script(text)
            for name, text in (
                ("create", _CREATE),
                ("move", _MOVE),
                ("question", _QUESTION),
                ("answer", _ANSWER),
                ("seen", _SEEN),
                ("end", _END),
            )
        }

    def _run(self, name: str, now: float, *args: object) -> object:
        ttl_ms = max(1, math.ceil(self.idle_s * 1000))
        return self._scripts[name](args=[self.prefix, repr(float(now)), self.idle_s, ttl_ms, *args])

    def _room_key(self, code: str) -> str:
        return f"{self.prefix}room:{code}"

    def create(self, room: RoomRow, max_rooms: int, now: float) -> str:
        fields = {
            "key": room.key_digest,
            "deck": room.deck,
            "created": repr(float(now)),
            "touched": repr(float(now)),
            "pos_v": room.pos_v,
            "at": room.at,
            "page": room.page,
            "ans_v": 0,
        }
        if room.params is not None:
            fields["params"] = room.params
        flat = [x for kv in fields.items() for x in kv]
        return str(self._run("create", now, room.code, max_rooms, *flat))

    def room(self, code: str, now: float) -> RoomRow | None:
        h = self.r.hgetall(self._room_key(code))
        if not h or float(h.get("touched", "-inf")) < now - self.idle_s:
            return None
        questions = {int(k[2:]): v for k, v in h.items() if k.startswith("q:")}
        return RoomRow(
            code,
            h["key"],
            h["deck"],
            float(h["created"]),
            float(h["touched"]),
            int(h["pos_v"]),
            int(h["at"]),
            h["page"],
            h.get("params"),
            int(h["ans_v"]),
            questions,
        )

    def move(self, code: str, at: int, page: str, params: str | None, now: float) -> int | None:
        got = self._run("move", now, code, at, page, params or "", "0" if params is None else "1")
        return None if got is None else int(got)

    def set_question(self, code: str, slide: int, state: str, now: float) -> int | None:
        got = self._run("question", now, code, slide, state)
        return None if got is None else int(got)

    def end(self, code: str) -> bool:
        return bool(self._run("end", 0.0, code))

    def answer(self, code: str, slide: int, token: str, value: str, max_answers: int, now: float) -> str:
        return str(self._run("answer", now, code, slide, token, value, max_answers))

    def answers(self, code: str, slide: int) -> list[str]:
        return list(self.r.hvals(f"{self.prefix}ans:{code}:{slide}"))

    def mine(self, code: str, slide: int, token: str) -> str | None:
        return self.r.hget(f"{self.prefix}ans:{code}:{slide}", token)

    def hit(self, bucket: str, limit: int, window_s: int, now: float, count: bool = True) -> bool:
        win = int(now // window_s)
        key = f"{self.prefix}hit:{bucket}:{win}"
        if not count:
            return int(self.r.get(key) or 0) < limit
        pipe = self.r.pipeline()
        pipe.incr(key)
        pipe.expire(key, window_s + 1, nx=True)
        n, _ = pipe.execute()
        return int(n) <= limit

    def seen(self, code: str, token: str, max_members: int, now: float) -> None:
        self._run("seen", now, code, token, max_members, PRESENT_S)

    def versions(self, codes: Iterable[str], now: float) -> dict[str, Versions]:
        codes = list(codes)
        if not codes:
            return {}
        pipe = self.r.pipeline(transaction=False)
        for code in codes:
            pipe.hmget(self._room_key(code), "touched", "pos_v", "ans_v")
            pipe.zcount(f"{self.prefix}mem:{code}", now - PRESENT_S, "+inf")
        got = pipe.execute()
        out = {}
        for i, code in enumerate(codes):
            (touched, pos_v, ans_v), members = got[2 * i], got[2 * i + 1]
            if touched is not None and float(touched) >= now - self.idle_s:
                out[code] = Versions(int(pos_v), int(ans_v), int(members))
        return out

    def sweep(self, now: float) -> int:
        return int(self._run("end", now, ""))

    def sizes(self) -> dict[str, int]:
        kinds = {"rooms": 0, "answers": 0, "members": 0, "hits": 0, "keys": 0}
        for key in self.r.scan_iter(match=f"{self.prefix}*", count=500):
            kinds["keys"] += 1
            kind = key[len(self.prefix) :].split(":", 1)[0]
            if kind == "room":
                kinds["rooms"] += 1
            elif kind == "ans":
                kinds["answers"] += self.r.hlen(key)
            elif kind == "mem":
                kinds["members"] += self.r.zcard(key)
            elif kind == "hit":
                kinds["hits"] += 1
        return kinds

    def close(self) -> None:
        self.r.close()
