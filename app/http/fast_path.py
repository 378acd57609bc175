"""The shape of a fast path: an ASGI layer that answers the plain case of one route before FastAPI's routing,
dependency and validation machinery, and hands every other request on (the route answers it as documented).  It
sits inside the edge middleware, so its answers still get their deadline, headers, metrics and log line, and an
error it raises is answered by the app's own handlers, as the route's would be.  :mod:`app.predictions.fast_path`,
:mod:`app.players.fast_path` and :mod:`app.games.fast_path` are the three."""

from __future__ import annotations

import re

from fastapi.routing import APIRoute
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send


class FastPath:
    #: The route's method, its path (its ladder's slug the first group), and the route (for the metrics, as routing
    #: would).
    method: str = "GET"
    path: re.Pattern[str]
    route: APIRoute

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == self.method:
            path = scope["path"].removeprefix(scope.get("root_path", ""))
            if (match := self.path.fullmatch(path)) is not None:
                body: bytes | None = b""
                if self.method != "GET":
                    body, receive = await _body(receive)
                answer = None if body is None else await self._answer(scope, match[1], body)
                if answer is not None:
                    scope["route"] = self.route
                    await answer(scope, receive, send)
                    return
        await self.app(scope, receive, send)

    async def _answer(self, scope: Scope, slug: str, body: bytes) -> Response | None:
        try:
            return await self.answer(scope, slug, body)
        except Exception as exc:  # answered as the route's error would be, by the app's handler of its kind
            handlers = scope["app"].exception_handlers
            for kind in type(exc).__mro__:
                if kind is Exception:  # a bug: the outermost layer logs it and answers 500, as for a route
                    raise
                if kind in handlers:
                    return await handlers[kind](Request(scope), exc)
            raise

    async def answer(self, scope: Scope, slug: str, body: bytes) -> Response | None:
        """The route's answer to the plain case, or None: the route answers.  ``body`` is the request's (empty for
        a ``GET``)."""
        raise NotImplementedError


async def _body(receive: Receive) -> tuple[bytes | None, Receive]:
    """The request's whole body (None if the client went away first), and a ``receive`` that hands the route the
    same messages again, then what comes after them."""
    messages: list[Message] = []
    while True:
        message = await receive()
        messages.append(message)
        if message["type"] != "http.request" or not message.get("more_body", False):
            break
    complete = messages[-1]["type"] == "http.request"
    body = b"".join(m.get("body", b"") for m in messages) if complete else None
    pending = iter(messages)

    async def replay() -> Message:
        return next(pending, None) or await receive()

    return body, replay
