"""The shape of a fast path: an ASGI layer that answers the plain case of one ``GET`` route before FastAPI's
routing, dependency and validation machinery, and hands every other request on (the route answers it as
documented).  It sits inside the edge middleware, so its answers still get their deadline, headers, metrics and
log line.  :mod:`app.predictions.fast_path` and :mod:`app.players.fast_path` are the two."""

from __future__ import annotations

import re

from fastapi.routing import APIRoute
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send


class FastPath:
    #: The route's path, its ladder's slug the first group, and the route (for the metrics, as routing would).
    path: re.Pattern[str]
    route: APIRoute

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "GET":
            path = scope["path"].removeprefix(scope.get("root_path", ""))
            if (match := self.path.fullmatch(path)) is not None:
                answer = await self.answer(scope, match[1])
                if answer is not None:
                    scope["route"] = self.route
                    await answer(scope, receive, send)
                    return
        await self.app(scope, receive, send)

    async def answer(self, scope: Scope, slug: str) -> Response | None:
        """The route's answer to the plain case, or None: the route answers."""
        raise NotImplementedError
