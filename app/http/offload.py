"""A request's heavy work off the event loop, in the app's bounded threads: a 503 if none can start within the
request deadline."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import anyio.to_thread
from starlette.requests import Request

from app.core.errors import Unavailable

T = TypeVar("T")


async def compute(request: Request, work: Callable[..., T], *args: object) -> T:
    """CPU-bound work of a request (a search, a ranking), in the app's compute thread, never on the event loop.

    Its limiter bounds how many threads such work takes at once, so it never
    starves the other requests or liveness; a request that cannot start within
    the request deadline (``MELO_REQUEST_TIMEOUT``) gets a 503 instead of waiting on.
    """
    return await _limited(request, request.app.state.compute, work, *args)


async def past(request: Request, work: Callable[..., T], *args: object) -> T:
    """A read of a ladder as it stood at an earlier time (``as_of``): a pass over its log, in the reports'
    thread (one such read or report at a time per process, never on the event loop or in the threads other
    requests need); a 503 if it cannot start within the request deadline."""
    return await _limited(request, request.app.state.reports, work, *args)


async def _limited(request: Request, limiter: anyio.CapacityLimiter, work: Callable[..., T], *args: object) -> T:
    seconds = request.app.state.settings.request_timeout
    with anyio.move_on_after(seconds):
        return await anyio.to_thread.run_sync(lambda: work(*args), limiter=limiter)
    raise Unavailable(f"The server is busy with other heavy requests; none could start within {seconds:g} s.")
