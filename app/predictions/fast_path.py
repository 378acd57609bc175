"""``GET /v1/ladders/{slug}/predict?a=…&b=…`` answered without FastAPI's routing, dependency and validation
machinery: matchmaking's fast path.

This layer answers only the plain case: exactly the parameters ``a`` and ``b``, each a valid key, on a public
ladder this process knows whose players both exist.  The answer is the route's, byte for byte (the same reads,
the same service function, the same response class).  Anything else (a seat, a malformed or unknown key, a
private, new or deleted ladder) goes on to the route, which answers it as documented: so the OpenAPI document,
the problems and the checks stay the route's alone.  It sits inside the edge middleware, so the request still
gets its deadline, headers, metrics and log line.
"""

from __future__ import annotations

import re

from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute
from pydantic import TypeAdapter, ValidationError
from starlette.datastructures import QueryParams
from starlette.types import Scope

from app.core.schemas import PlayerKey
from app.http import prediction_inputs
from app.http.fast_path import FastPath
from app.predictions import service
from app.predictions.router import predict_pair, router

PATH = re.compile(r"/v1/ladders/([^/]+)/predict")
ROUTE = next(route for route in router.routes if isinstance(route, APIRoute) and route.endpoint is predict_pair)
KEY = TypeAdapter(PlayerKey)


class FastPredictions(FastPath):
    path, route = PATH, ROUTE

    async def answer(self, scope: Scope, slug: str, body: bytes) -> JSONResponse | None:
        params = QueryParams(scope["query_string"]).multi_items()
        if len(params) != 2 or {name for name, _ in params} != {"a", "b"}:
            return None
        try:
            a, b = (KEY.validate_python(value) for _, value in sorted(params))
        except ValidationError:
            return None
        found = await prediction_inputs.public_vectors(scope["app"].state.db, slug, [a, b])
        if found is None:
            return None
        return JSONResponse(service.pair(a, b, *found))
