"""The HTTP side of rooms, mounted by ``server.py`` on Streamlit's own server (``st.App(routes=, middleware=)``).

- ``GET /_attn/room/<code>/wait?v=<pos_v>[&a=<ans_v>&m=<members>]``: a long poll. It answers at once when the room's
  versions differ from those given, else when they change (within :data:`POLL_S`), else after :data:`WAIT_S` with
  the same ones; ``410`` when the room has ended, ``404`` for a malformed code, ``429`` past the rate limit. The
  answer is ``{"v": pos_v, "a": ans_v, "m": members}``: versions only, nothing a student may not see. A student's
  page waits on ``v`` (the lecturer's slide, view and questions) and asks for a run when it changes; the
  lecturer's page also on ``a`` and ``m`` (answers and browsers following). A student's wait (no ``a``) counts its
  browser as following the room for a minute. Each worker checks the store for every
  room someone waits on once per :data:`POLL_S` (one query for all), however many browsers wait.
- :class:`BrowserCookie`: a browser without a valid ``attn_browser`` cookie gets one (128 random bits, HttpOnly,
  SameSite=Lax) with its first page: the Streamlit session reads it (``st.context.cookies``) as the browser's token,
  so one browser answers a question once, across reloads and workers.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from http.cookies import SimpleCookie

from rooms import codes
from rooms.store import Versions

COOKIE = "attn_browser"
COOKIE_MAX_AGE_S = 24 * 3600
WAIT_S = 20.0  # a long poll is held at most this long (nginx's proxy_read_timeout is 60 s)
POLL_S = 0.05  # how often a worker reads the versions of the rooms its browsers wait on (one query for all)
SEEN_EVERY_S = 20.0  # a browser's presence is written at most this often per room
REQUESTS_PER_MIN = 120  # long polls one browser (or address without a cookie) may open a minute, per worker
PATH = "/_attn/room/{code}/wait"
LEAD_PATH = "/_attn/room/{code}/lead"
LEAD_COOKIE = (
    "attn_lead"  # the lecturer's browser: "<code>.<key>", HttpOnly, so a reload or a new worker keeps the lead
)


def token_of(cookie_header: str | None) -> str | None:
    """The browser token in a ``Cookie`` header, or None when there is none that looks like one."""
    if not cookie_header:
        return None
    try:
        jar = SimpleCookie()
        jar.load(cookie_header)
    except Exception:  # noqa: BLE001 - a malformed header is no token
        return None
    morsel = jar.get(COOKIE)
    return morsel.value if morsel is not None and codes.token_shape(morsel.value) else None


class BrowserCookie:
    """ASGI middleware: a page or a long poll requested without a browser token answers with a new one."""

    def __init__(self, app, max_age_s: int = COOKIE_MAX_AGE_S):
        self.app, self.max_age_s = app, max_age_s

    async def __call__(self, scope, receive, send):
        path = scope.get("path", "")
        if scope["type"] != "http" or path.startswith(("/_stcore/", "/static/", "/component/", "/media/")):
            return await self.app(scope, receive, send)
        headers = dict(scope.get("headers") or [])
        if token_of(headers.get(b"cookie", b"").decode("latin-1")) is not None:
            return await self.app(scope, receive, send)
        https = headers.get(b"x-forwarded-proto", b"").decode("latin-1") == "https" or scope.get("scheme") == "https"
        value = f"{COOKIE}={codes.new_token()}; Path=/; Max-Age={self.max_age_s}; HttpOnly; SameSite=Lax"
        cookie = (value + ("; Secure" if https else "")).encode("latin-1")

        async def send_with_cookie(message):
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), (b"set-cookie", cookie)]}
            await send(message)

        return await self.app(scope, receive, send_with_cookie)


class Watcher:
    """One per worker: the versions of the rooms its browsers wait on, read from the store every ``poll_s``."""

    def __init__(self, read: Callable[[list[str]], dict[str, Versions]], poll_s: float = POLL_S):
        self.read, self.poll_s = read, poll_s
        self.waiting: dict[str, list[tuple[asyncio.Future, Callable[[Versions | None], bool]]]] = {}
        self.task: asyncio.Task | None = None

    async def now(self, code: str) -> Versions | None:
        return (await asyncio.to_thread(self.read, [code])).get(code)

    async def wait(self, code: str, done: Callable[[Versions | None], bool], timeout: float) -> Versions | None:
        """The room's versions once ``done`` says so (or once the room is gone), else after ``timeout`` seconds."""
        fut = asyncio.get_running_loop().create_future()
        entry = (fut, done)
        self.waiting.setdefault(code, []).append(entry)
        if self.task is None or self.task.done():
            self.task = asyncio.create_task(self._run())
        try:
            return await asyncio.wait_for(fut, timeout)
        except TimeoutError:
            return await self.now(code)
        finally:
            left = self.waiting.get(code, [])
            if entry in left:
                left.remove(entry)
            if not left:
                self.waiting.pop(code, None)

    async def _run(self) -> None:
        while self.waiting:
            await asyncio.sleep(self.poll_s)
            codes_now = list(self.waiting)
            try:
                found = await asyncio.to_thread(self.read, codes_now)
            except Exception:  # noqa: BLE001 - a store hiccup: the waits go on (and time out at worst)
                continue
            for code in codes_now:
                versions = found.get(code)
                for fut, done in list(self.waiting.get(code, [])):
                    if not fut.done() and (versions is None or done(versions)):
                        fut.set_result(versions)


class _Limiter:
    """Requests per key and minute in this worker's memory (bounded: forgotten each minute)."""

    def __init__(self, per_min: int):
        self.per_min, self.minute, self.counts = per_min, -1, {}

    def allow(self, key: str) -> bool:
        minute = int(time.monotonic() // 60)
        if minute != self.minute:
            self.minute, self.counts = minute, {}
        self.counts[key] = self.counts.get(key, 0) + 1
        return self.counts[key] <= self.per_min


def _int(raw: str | None) -> int:
    try:
        return int(raw) if raw is not None and len(raw) < 20 else -1
    except ValueError:
        return -1


def routes(service: Callable[[], object] | None = None) -> list:
    """The Starlette routes to mount (``st.App(routes=...)``). ``service``: the :class:`rooms.service.Rooms` to use
    (default: :func:`rooms.service.current`, from the environment)."""
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    from rooms.service import current

    get = service or current
    watcher: dict[int, Watcher] = {}  # one per event loop
    limiter = _Limiter(REQUESTS_PER_MIN)
    seen_at: dict[tuple[str, str], float] = {}

    def reply(status: int, body: dict) -> JSONResponse:
        return JSONResponse(body, status_code=status, headers={"Cache-Control": "no-store"})

    async def wait(request):
        code = codes.read_code(request.path_params.get("code"))
        if code is None:
            return reply(404, {"error": "code"})
        token = token_of(request.headers.get("cookie"))
        who = token or (request.client.host if request.client else "?")
        if not limiter.allow(who):
            return JSONResponse({"error": "slow"}, status_code=429, headers={"Retry-After": "5"})
        svc = get()
        loop = id(asyncio.get_running_loop())
        w = watcher.setdefault(loop, Watcher(lambda cs: svc.store.versions(cs, svc.clock())))
        v, a, m = (_int(request.query_params.get(k)) for k in ("v", "a", "m"))

        def changed(x: Versions | None) -> bool:
            return x is None or x.pos != v or (a >= 0 and x.answers != a) or (m >= 0 and x.members != m)

        now = await w.now(code)
        if (
            now is not None
            and token is not None
            and a < 0
            and time.monotonic() - seen_at.get((code, token), -1e9) > SEEN_EVERY_S
        ):
            if len(seen_at) > 10_000:
                seen_at.clear()
            seen_at[(code, token)] = time.monotonic()
            await asyncio.to_thread(svc.seen, code, token)
        if not changed(now):
            now = await w.wait(code, changed, WAIT_S)
        if now is None:
            return reply(410, {"gone": True})
        return reply(200, {"v": now.pos, "a": now.answers, "m": now.members})

    async def lead(request):
        """The lecturer's page hands the room's key over (its watch does, once): a valid one comes back as an
        HttpOnly cookie, which the browser sends with its next websocket, so that a reload, or a reconnect to
        another worker after its own died, still leads the room (the address no longer holds the key)."""
        code = codes.read_code(request.path_params.get("code"))
        token = token_of(request.headers.get("cookie"))
        who = token or (request.client.host if request.client else "?")
        if code is None or not limiter.allow("lead:" + who):
            return reply(404 if code is None else 429, {"error": "code" if code is None else "slow"})
        try:
            key = (await request.body())[:64].decode("ascii").strip()
        except UnicodeDecodeError:
            key = ""
        svc = get()
        ok = codes.key_shape(key) and await asyncio.to_thread(svc.key_ok, code, key)
        if not ok:
            return reply(403, {"error": "key"})
        out = reply(200, {"lead": True})
        https = request.headers.get("x-forwarded-proto") == "https" or request.url.scheme == "https"
        out.set_cookie(
            LEAD_COOKIE,
            f"{code}.{key}",
            max_age=int(svc.settings.idle_s),
            path="/",
            httponly=True,
            samesite="strict",
            secure=https,
        )
        return out

    return [Route(PATH, wait, methods=["GET"]), Route(LEAD_PATH, lead, methods=["POST"])]


def lead_of(cookie_header: str | None, code: str) -> str | None:
    """The lecturer key the ``attn_lead`` cookie holds for room ``code``, or None."""
    if not cookie_header:
        return None
    try:
        jar = SimpleCookie()
        jar.load(cookie_header)
    except Exception:  # noqa: BLE001 - a malformed header holds no key
        return None
    morsel = jar.get(LEAD_COOKIE)
    if morsel is None or "." not in morsel.value:
        return None
    got, key = morsel.value.split(".", 1)
    return key if got == code and codes.key_shape(key) else None


def middleware() -> list:
    """The middleware to mount (``st.App(middleware=...)``): :class:`BrowserCookie`."""
    from starlette.middleware import Middleware

    return [Middleware(BrowserCookie)]
