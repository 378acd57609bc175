"""``GET /v1/ladders/{slug}/leaderboard`` answered without FastAPI's routing, dependency and validation
machinery: the fast path of a busy ladder's readers (a standings page polled while games stream in).

This layer answers only the plain case: an anonymous read (no ``Authorization``) without ``If-None-Match``, with
no parameters but ``limit``, ``by`` and ``inactive``, each valid, of a public ladder this process knows, when the
route would answer it from the table this worker ranked last (:func:`app.http.player_table.ranked_board`) whose
page is rendered already.  After the same one-statement read of the ladder's version and privacy, the answer is
the route's, byte for byte.  Anything else goes on to the route, which answers it as documented: so the OpenAPI
document, the problems and the checks stay the route's alone.  It sits inside the edge middleware, so the request
still gets its deadline, headers, metrics and log line.
"""

from __future__ import annotations

import re

from fastapi import Response
from fastapi.routing import APIRoute
from starlette.datastructures import QueryParams
from starlette.types import Scope

from app import storage
from app.http import player_table
from app.http.deps import MAX_PAGE
from app.http.fast_path import FastPath
from app.players import leaderboard as leaderboards
from app.players.router import leaderboard, router

PATH = re.compile(r"/v1/ladders/([^/]+)/leaderboard")
ROUTE = next(route for route in router.routes if isinstance(route, APIRoute) and route.endpoint is leaderboard)
ORDERS = {"hodge", "field", "disc", "conservative"}
FLAGS = {"true": True, "false": False}
LIMIT = re.compile(r"[1-9][0-9]{0,5}")
#: Request headers that take a read off this path: a key (the route checks it), or a conditional read.
TAKEN_OFF = {b"authorization", b"if-none-match"}


class FastBoards(FastPath):
    path, route = PATH, ROUTE

    async def answer(self, scope: Scope, slug: str, body: bytes) -> Response | None:
        if any(name in TAKEN_OFF for name, _ in scope["headers"]):
            return None
        params = QueryParams(scope["query_string"]).multi_items()
        given = dict(params)
        if len(given) != len(params) or not given.keys() <= {"limit", "by", "inactive"}:
            return None
        limit, by, inactive = given.get("limit", "50"), given.get("by", "hodge"), given.get("inactive", "false")
        if LIMIT.fullmatch(limit) is None or int(limit) > MAX_PAGE or by not in ORDERS or inactive not in FLAGS:
            return None
        state = scope["app"].state
        if state.replicas:  # the route reads from the replicas
            return None
        ladder = storage.ladders.from_cache(state.db.read_engine, slug)
        now = None if ladder is None else await storage.ladders.version_and_privacy(state.db.fetch, ladder.id)
        if ladder is None or now is None or now[1]:
            return None
        table = player_table.ranked_board(state.db, ladder.id, now[0], now[2])
        page = None if table is None else leaderboards.rendered_page(table, by, int(limit), None, FLAGS[inactive])
        if table is None or page is None:
            return None
        return Response(page, media_type="application/json", headers={"ETag": f'"{table.version}"'})
