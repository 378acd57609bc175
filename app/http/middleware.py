"""ASGI middleware: what every request gets at the edge (a deadline, security headers, metrics, a log line),
and body limits."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections import deque
from collections.abc import Callable
from datetime import UTC, datetime

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.core import deadline, errors
from app.core.metrics import LATENCY, REQUESTS
from app.http import handlers


class BodyLimit:
    """Refuse request bodies above ``limit`` bytes with a 413 problem, before they are parsed."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app, self.limit = app, limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        length = dict(scope["headers"]).get(b"content-length")
        if length is not None and length.isdigit() and int(length) > self.limit:
            await self._reject(scope, receive, send)
            return
        seen, refused = 0, False

        async def limited() -> Message:
            # A body without a length (chunked) is counted as it arrives: past the limit, the 413 is sent here and
            # the app sees a disconnect, so it stops reading and whatever it answers is dropped.
            nonlocal seen, refused
            message = await receive()
            seen += len(message.get("body", b""))
            if seen > self.limit and not refused:
                refused = True
                await self._reject(scope, receive, send)
            return {"type": "http.disconnect"} if refused else message

        async def unless_refused(message: Message) -> None:
            if not refused:
                await send(message)

        await self.app(scope, limited, unless_refused)

    async def _reject(self, scope: Scope, receive: Receive, send: Send) -> None:
        problem = errors.PayloadTooLarge(f"Request bodies are limited to {self.limit} bytes (MELO_MAX_BODY_BYTES).")
        await handlers.problem_response(problem)(scope, receive, send)


#: Sent with every response: no MIME sniffing, no framing by other sites, no referrer leaking ladder addresses.
COMMON = [
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"same-origin"),
]
#: Pages may load only the app's own scripts, styles and data; the API docs need one inline script to start.
PAGE_POLICY = (
    b"default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; object-src 'none'; "
    b"base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
DOCS_POLICY = PAGE_POLICY.replace(b"script-src 'self'", b"script-src 'self' 'unsafe-inline'").replace(
    b"style-src 'self'", b"style-src 'self' 'unsafe-inline'"
)


class RequestGuard:
    """What every HTTP request gets, in one layer (each layer costs every request):

    * a turn: requests start at most ``per_step`` per iteration of the event loop, fewer while iterations run
      long, the rest waiting in order of arrival (:class:`StartPacer`); beyond ``queued`` waiting, a request gets a
      503 with ``Retry-After`` at once;
    * a deadline: a request that has not begun its answer after ``seconds`` gets a 503 problem with
      ``Retry-After`` (a 408, and the connection closed, if it is waiting for its body and has for half the
      deadline: a slow client).  A worker thread blocked on a database that stopped answering (a frozen server, a
      network partition) cannot be interrupted, and no client-side timeout of the drivers covers it, so the client
      is answered and whatever the request sends later is dropped.  Liveness and readiness never wait for it;
    * security headers on every response, and a Content-Security-Policy on HTML pages;
    * a bug's 500 problem is answered here, not by the server, which would close the client's connection;
    * metrics per route template (``/v1/ladders/{slug}/games``) and status, and one JSON line on the
      ``melo.access`` logger: time, method, route, path, status, milliseconds.  Headers (so keys) and bodies
      are never logged.
    """

    def __init__(self, app: ASGIApp, seconds: float, per_step: int = 16, queued: int = 4096) -> None:
        self.app, self.seconds = app, seconds
        self.deadlines = Deadlines(seconds)
        self.turns = StartPacer(per_step, queued)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        if scope["path"] == "/healthz" and scope["method"] == "GET":  # liveness, answered here: nothing to route
            await send(HEALTHY[0])
            await send(HEALTHY[1])
            _record("GET", "/healthz", scope["path"], 200, start)
            return
        exchange = _Exchange(scope, receive, send, self.seconds)
        timed = scope["path"] not in ("/healthz", "/readyz")
        if timed:
            self.deadlines.start(exchange.answer, exchange.expire)
            scope[deadline.SCOPE_KEY] = time.monotonic() + self.seconds  # where heavy work stops (offload)
        try:
            if timed and not self.turns.enter_now():
                if not await self.turns.wait():
                    await handlers.problem_response(BUSY, {"Retry-After": "1"})(scope, receive, exchange.answer)
                    return
                if exchange.late:  # answered 503 while it waited: the work would be thrown away
                    return
            await self.app(scope, exchange.receiving if exchange.body else receive, exchange.answer)
        except Exception:
            if exchange.late:
                logger.warning("a request answered at its deadline then failed", exc_info=True)
            elif exchange.started:  # a streamed answer broke off: nothing better can be said
                raise
            else:  # answered here, so the server keeps the client's connection open
                logger.exception("unhandled error")
                await handlers.problem_response(handlers.internal_error())(scope, receive, exchange.answer)
        finally:
            await exchange.late_answer_sent()
            if timed:
                self.deadlines.done(exchange.answer)
            route = getattr(scope.get("route"), "path", None) or "(unmatched)"
            _record(scope["method"], route, scope["path"], exchange.status, start)


class _Exchange:
    """One request as :class:`RequestGuard` sees it: its body as it is read, its answer as it is sent (with the
    security headers), and the answer its deadline sends instead if it has not begun one by then."""

    def __init__(self, scope: Scope, receive: Receive, send: Send, seconds: float) -> None:
        self.scope, self.receive, self.send, self.seconds = scope, receive, send, seconds
        self.policy = DOCS_POLICY if scope["path"] == "/docs" else PAGE_POLICY
        self.status, self.started, self.late = 500, False, False
        # A body declared and not read to its end; since when the request waits for the client to send more, and
        # how long it waited before.
        self.body, self.waited = _with_body(scope), 0.0
        self.waiting: float | None = None
        self.late_answer: list[asyncio.Task] = []

    async def receiving(self) -> Message:
        if not self.body:
            return await self.receive()
        self.waiting = began = time.perf_counter()
        try:
            message = await self.receive()
        finally:
            self.waited, self.waiting = self.waited + time.perf_counter() - began, None
        self.body = message["type"] == "http.request" and message.get("more_body", False)
        return message

    def slow_client(self) -> bool:
        """Waiting for the body now, and for half the deadline in all: the client is slow, not the server (a body
        read on a loop that is slow to turn waits too, but not for so long)."""
        return self.waiting is not None and self.waited + time.perf_counter() - self.waiting > self.seconds / 2

    async def answer(self, message: Message) -> None:
        if self.late:
            return
        if message["type"] == "http.response.start":
            self.started, self.status = True, message["status"]
            headers = list(message.get("headers", [])) + COMMON
            if any(k == b"content-type" and v.startswith(b"text/html") for k, v in headers):
                headers.append((b"content-security-policy", self.policy))
            message = {**message, "headers": headers}
        await self.send(message)

    def expire(self) -> None:
        """The deadline passed: a 408 (and the connection closed) for a slow client, else a 503, unless the answer
        has begun."""
        if self.started:
            return
        if self.slow_client():
            self.late, self.status = True, 408
            problem: errors.Problem = errors.RequestTimeout(
                f"The request's body did not arrive within {self.seconds:g} s."
            )
            response = handlers.problem_response(problem, {"Connection": "close"})
        else:
            self.late, self.status = True, 503
            problem = errors.Unavailable(f"The request took longer than {self.seconds:g} s; try again.")
            response = handlers.problem_response(problem, {"Retry-After": "5"})
        self.late_answer.append(_background(response(self.scope, self.receive, self.send)))

    async def late_answer_sent(self) -> None:
        """The deadline's answer sent before the request ends, or the server would answer a 500 first."""
        if self.late_answer:
            await asyncio.wait(self.late_answer)
            task = self.late_answer[0]
            if not task.cancelled() and task.exception() is not None:
                logger.warning("a request's deadline answer could not be sent", exc_info=task.exception())


def _with_body(scope: Scope) -> bool:
    """Whether the request declares a body (a length above 0, or chunks)."""
    for name, value in scope["headers"]:
        if name == b"content-length":
            return value.strip() not in (b"0", b"")
        if name == b"transfer-encoding":
            return True
    return False


BUSY = errors.Unavailable("The server has too many requests waiting; try again in a second.")


class StartPacer:
    """Requests start a few at a time: at most ``allowance`` in each iteration of the event loop, the others
    waiting in order of arrival (at most ``queued`` of them).

    Handlers share one event loop, and the loop reads its sockets (the liveness probe's among them) only
    between iterations.  A burst of 400 requests would otherwise all start in one iteration, and everything
    else would wait for their combined work.
    The allowance follows the loop: it halves when an iteration took longer than ``budget`` seconds (heavy
    requests: one or two start per iteration) and grows by one, up to ``most``, after each that did not
    (light requests start many at a time, with no waiting).  A request that waits for the database, a thread
    or a stream's next event holds up nobody.  Only starts are paced: what requests do after an await that
    returns for many of them at once still shares one iteration (their work on the loop is kept small).
    """

    def __init__(self, most: int, queued: int, budget: float = 0.005) -> None:  # budget in seconds
        self.most, self.queued, self.budget = most, queued, budget
        self.allowance = most
        self.started = 0  # in this iteration
        self.waiting: deque[asyncio.Future] = deque()
        self.stepping = False
        self.mark = 0.0  # when this iteration's step ran
        self.loop: asyncio.AbstractEventLoop | None = None

    def enter_now(self) -> bool:
        """Start now if this iteration has room and nobody waits."""
        if self.started >= self.allowance or self.waiting:
            return False
        self.started += 1
        self._next_step()
        return True

    async def wait(self) -> bool:
        """Wait for a later iteration (True), or False at once if the queue is full."""
        if len(self.waiting) >= self.queued:
            return False
        turn = asyncio.get_running_loop().create_future()
        self.waiting.append(turn)
        self._next_step()
        try:
            await turn
        except asyncio.CancelledError:
            with contextlib.suppress(ValueError):
                self.waiting.remove(turn)
            raise
        return True

    def _next_step(self) -> None:
        loop = asyncio.get_running_loop()
        if self.stepping and self.loop is not loop:  # a loop that ended with a step due (tests run several)
            self.stepping, self.started, self.waiting = False, 0, deque()
        if not self.stepping:
            self.stepping, self.mark, self.loop = True, time.perf_counter(), loop
            loop.call_soon(self._step)

    def _step(self) -> None:
        """At the next iteration: adjust the allowance to how long the last one took, start the first waiters,
        and come again while any are left."""
        now = time.perf_counter()
        heavy = now - self.mark > self.budget
        self.allowance = max(1, self.allowance // 2) if heavy else min(self.most, self.allowance + 1)
        self.stepping, self.started = False, 0
        while self.waiting and self.started < self.allowance:
            turn = self.waiting.popleft()
            if not turn.done():
                turn.set_result(None)
                self.started += 1
        if self.waiting:
            self._next_step()


class Deadlines:
    """Callbacks due ``seconds`` after they are started, unless done first, with one timer for them all.

    Every request has the same time limit, so their deadlines fall in the order they started: the timer is set
    at the earliest, and when it fires expires what is due and is set again at the next.  (A timer per request
    is costly on the hot path: the event loop keeps a cancelled timer in its heap until it is due.)
    """

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.pending: dict[object, tuple[float, Callable[[], None]]] = {}  # in the order started
        self.timer: asyncio.TimerHandle | None = None
        self.loop: asyncio.AbstractEventLoop | None = None

    def start(self, key: object, expire: Callable[[], None]) -> None:
        loop = asyncio.get_running_loop()
        self.pending[key] = (loop.time() + self.seconds, expire)
        if self.timer is None or self.loop is not loop:
            self.loop, self.timer = loop, loop.call_later(self.seconds, self._fire)

    def done(self, key: object) -> None:
        self.pending.pop(key, None)

    def _fire(self) -> None:
        self.timer = None
        loop = self.loop
        assert loop is not None  # set with the timer that fired
        now = loop.time()
        while self.pending:
            key, (deadline, expire) = next(iter(self.pending.items()))
            if deadline > now:
                self.timer = loop.call_at(deadline, self._fire)
                return
            del self.pending[key]
            expire()


def _record(method: str, route: str, path: str, status: int, start: float) -> None:
    """A request's metrics and access log line."""
    seconds = time.perf_counter() - start
    REQUESTS.labels(method, route, str(status)).inc()
    LATENCY.labels(method, route).observe(seconds)
    if access.isEnabledFor(logging.INFO):
        line = {"time": datetime.now(UTC).isoformat(), "method": method, "route": route, "path": path}
        access.info(json.dumps(line | {"status": status, "ms": round(seconds * 1000, 3)}))


#: ``GET /healthz``'s answer, the same bytes the route documented in the OpenAPI document would send.
_BODY = b'{"status":"ok"}'
HEALTHY = (
    {
        "type": "http.response.start",
        "status": 200,
        "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(_BODY)).encode()), *COMMON],
    },
    {"type": "http.response.body", "body": _BODY},
)


_pending: set[asyncio.Task] = set()


def _background(work) -> asyncio.Task:
    task = asyncio.ensure_future(work)
    _pending.add(task)  # held until done: the loop keeps only weak references to tasks
    task.add_done_callback(_pending.discard)
    return task


logger = logging.getLogger("melo")
access = logging.getLogger("melo.access")
