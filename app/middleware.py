"""ASGI middleware: request metrics and access log, deadlines, body limits and security headers."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from datetime import UTC, datetime

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app import errors, handlers
from app.metrics import LATENCY, REQUESTS


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

        async def limited() -> dict:
            # A body without a length (chunked) is counted as it arrives: past the limit, the 413 is sent here and
            # the app sees a disconnect, so it stops reading and whatever it answers is dropped.
            nonlocal seen, refused
            message = await receive()
            seen += len(message.get("body", b""))
            if seen > self.limit and not refused:
                refused = True
                await self._reject(scope, receive, send)
            return {"type": "http.disconnect"} if refused else message

        async def unless_refused(message: dict) -> None:
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


class SecurityHeaders:
    """Security headers on every response, and a Content-Security-Policy on HTML pages."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        policy = DOCS_POLICY if scope["path"] == "/docs" else PAGE_POLICY

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", [])) + COMMON
                if any(k == b"content-type" and v.startswith(b"text/html") for k, v in headers):
                    headers.append((b"content-security-policy", policy))
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, with_headers)


logger = logging.getLogger("melo")


class Deadline:
    """A request that has not started its answer after ``seconds`` gets a 503 problem.

    A worker thread blocked on a database that stopped answering (a frozen
    server, a network partition) cannot be interrupted, and no client-side
    timeout of the driver covers it.  The request's task is left to finish in
    the background (whatever it sends then is dropped) and the client gets
    a prompt 503 with ``Retry-After`` instead of hanging; liveness and
    readiness never reach the database, so they are not delayed.
    """

    def __init__(self, app: ASGIApp, seconds: float) -> None:
        self.app, self.seconds = app, seconds

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in ("/healthz", "/readyz"):
            await self.app(scope, receive, send)
            return
        started, late = False, False

        async def until_late(message: Message) -> None:
            nonlocal started
            if not late:
                started = True
                await send(message)

        task = asyncio.ensure_future(self.app(scope, receive, until_late))
        done, _ = await asyncio.wait({task}, timeout=self.seconds)
        if done or started:
            await task  # finished, or answering already (a long export stream): let it run
            return
        late = True
        task.add_done_callback(_log_late)
        problem = errors.Unavailable(f"The request took longer than {self.seconds:g} s; try again.")
        await handlers.problem_response(problem, {"Retry-After": "5"})(scope, receive, send)


def _log_late(task: asyncio.Future) -> None:
    if not task.cancelled() and task.exception() is not None:
        logger.warning("a request answered 503 (too slow) then failed: %r", task.exception())


access = logging.getLogger("melo.access")


class Observe:
    """Counts and times every HTTP request under its route template (``/v1/ladders/{slug}/games``), and logs it
    as one JSON object on the ``melo.access`` logger: method, route, path, status, milliseconds.  Headers (so
    keys) and bodies are never logged."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        status = 500

        async def seen(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, seen)
        finally:
            seconds = time.perf_counter() - start
            route = getattr(scope.get("route"), "path", None) or "(unmatched)"
            method = scope["method"]
            REQUESTS.labels(method, route, str(status)).inc()
            LATENCY.labels(method, route).observe(seconds)
            if access.isEnabledFor(logging.INFO):
                line = {"time": datetime.now(UTC).isoformat(), "method": method, "route": route, "path": scope["path"]}
                access.info(json.dumps(line | {"status": status, "ms": round(seconds * 1000, 3)}))
