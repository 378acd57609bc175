"""``POST /v1/ladders/{slug}/games`` taken without FastAPI's routing, dependency and validation machinery: the game
servers' fast path (a post's own work is small; the machinery cost it more than the rest of the worker did).

This layer takes only the plain case: a JSON body that is a valid game, a bearer key, at most one valid
``Idempotency-Key`` and no query parameters.  It reads the body and the key as the route does, validates the game
with the route's model, posts it as the route does (:func:`~app.games.router.post_one`), and answers with the
route's answer, or its problem through the app's handlers.  Anything else (a malformed body, no key, two
idempotency keys, a parameter) goes on to the route, which answers it as documented: so the OpenAPI document and
the problems stay the route's alone.
"""

from __future__ import annotations

import json
import re

from fastapi.routing import APIRoute
from fastapi.security.utils import get_authorization_scheme_param
from starlette.datastructures import Headers
from starlette.responses import Response
from starlette.types import Scope

from app.domain.access import Caller
from app.games.router import post_game, post_one, router
from app.games.schemas import GameIn
from app.http.fast_path import FastPath

PATH = re.compile(r"/v1/ladders/([^/]+)/games")
ROUTE = next(route for route in router.routes if isinstance(route, APIRoute) and route.endpoint is post_game)
#: The media types whose bodies the route reads as JSON, and the fast path too.
JSON_TYPES = {"application/json", "application/json; charset=utf-8"}


class FastGames(FastPath):
    method, path, route = "POST", PATH, ROUTE

    async def answer(self, scope: Scope, slug: str, body: bytes) -> Response | None:
        headers = Headers(scope=scope)
        if scope["query_string"] or headers.get("content-type", "").lower() not in JSON_TYPES:
            return None
        scheme, bearer = get_authorization_scheme_param(headers.get("authorization"))
        keys = headers.getlist("idempotency-key")
        if scheme.lower() != "bearer" or not bearer or len(keys) > 1 or (keys and not _valid_key(keys[0])):
            return None
        try:
            game = GameIn.model_validate(json.loads(body))
        except Exception:  # not JSON, not a game, nested past the parser's depth: the route says why (422, 400)
            return None
        state = scope["app"].state
        return await post_one(state, slug, Caller.of(bearer, state.settings.admin_key), game, keys[0] if keys else None)


def _valid_key(key: str) -> bool:
    """Whether the route takes ``key`` as an Idempotency-Key (1-200 printable ASCII characters)."""
    return 1 <= len(key) <= 200 and key.isascii() and key.isprintable()
