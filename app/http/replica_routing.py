"""Where a whole-ladder read that tolerates a short lag is answered: a streaming replica that has reached the
ladder version its client names, else the primary; and the ETag (the ladder version) such answers carry."""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections.abc import Awaitable, Callable
from functools import partial

import psycopg
from sqlalchemy.exc import DBAPIError
from starlette.requests import Request
from starlette.responses import Response

from app import storage
from app.core.db import Database
from app.core.errors import InvalidInput, Problem, Unavailable
from app.core.ladder import LadderRow
from app.core.metrics import LAG_TOLERANT
from app.domain.access import Caller
from app.http.ladder_access import ladder

log = logging.getLogger("melo")

#: What a read may fail with on a replica (stopped, cut off, or its query cancelled by the replay): the primary
#: then answers.
REPLICA_ERRORS = (DBAPIError, psycopg.Error)
#: Which replica a read tries first: each in turn.
_turn = itertools.count()


async def lag_tolerant(
    request: Request,
    db: Database,
    slug: str,
    caller: Caller,
    min_version: int | None,
    work: Callable[[Database, LadderRow | None], Awaitable[Response]],
    ladder_needed: bool = True,
) -> Response:
    """``work(database, ladder)`` for a whole-ladder read that tolerates a short lag: for a public ladder, on a
    streaming replica (``MELO_READ_DATABASE_URL``, each in turn) that keeps up (:class:`app.core.replicas.Replica`)
    and has reached the ladder version the client names (``min_version``, or an ETag of ``If-None-Match``), waiting
    up to ``MELO_READ_WAIT`` for it; on the primary otherwise, and if the replica fails or answers a problem (a
    player made since it replayed, say).  So an answer is never older than the version its client names, and a
    private ladder, its keys and their revocation are read on the primary alone; a ``min_version`` the primary
    has not reached either is a 422 (no answer is that new).  Without ``ladder_needed``, a read
    on the primary is given no ladder (``work`` checks the access itself): no statement is spent on it."""
    replicas = request.app.state.replicas
    if replicas and await _public(db, slug):
        wanted = max(min_version or 0, named_version(request))
        wait = request.app.state.settings.read_wait
        first = next(_turn) % len(replicas)
        for replica in replicas[first:] + replicas[:first]:
            if not replica.usable():
                continue
            try:
                found = await _reached(replica.db, slug, caller, wanted, wait)
                if found is not None and not found.private:
                    answer = await work(replica.db, found)
                    LAG_TOLERANT.labels("replica").inc()
                    return answer
            except Unavailable:  # this worker is busy: the primary would wait as long
                raise
            except Problem:
                break
            except REPLICA_ERRORS as exc:
                log.warning("a read failed on a replica, the primary answers: %r", exc)
                replica.failed()
    found = await ladder(db, slug, caller) if ladder_needed or min_version else None
    if found is not None and min_version is not None and found.version < min_version:
        message = f"is ahead of the ladder, which is at version {found.version}: name a version an answer gave"
        raise InvalidInput(f"min_version {message}", errors=[{"field": "min_version", "message": message}])
    answer = await work(db, found if ladder_needed else None)
    LAG_TOLERANT.labels("primary").inc()
    return answer


#: How long the primary's word that a ladder is public stands (seconds): a ladder made private leaves the
#: replicas within it.
PUBLIC_FOR = 1.0


async def _public(db: Database, slug: str) -> bool:
    """Whether the ladder is public, as the primary said within :data:`PUBLIC_FOR` seconds (asked again after
    that, for half a second at most: while it cannot answer, its last word stands).  False for a ladder this
    process has not read yet (the primary reads it first)."""
    found = storage.ladders.from_cache(db.read_engine, slug)
    if found is None:
        return False
    said = storage.cache.of(db.read_engine, "public")
    held, now = said.get(found.id), time.monotonic()
    if held is None or now - held[1] >= PUBLIC_FOR:
        if len(said) >= 10_000:
            said.clear()
        try:
            state = await storage.ladders.version_and_privacy(partial(db.fetch, within=PUBLIC_FOR / 2), found.id)
        except REPLICA_ERRORS:  # its last word stands, until it is asked again
            held = said[found.id] = (held is not None and held[0], now)
            return held[0]
        held = said[found.id] = (state is not None and not state[1], now)
    return held[0]


async def _reached(db: Database, slug: str, caller: Caller, wanted: int, wait: float) -> LadderRow | None:
    """The ladder as read on ``db`` once its version reaches ``wanted`` (None if it does not within ``wait``
    seconds; asked again after 5, 10, 20, … ms)."""
    deadline, pause = time.monotonic() + wait, 0.005
    found = await ladder(db, slug, caller)
    while found.version < wanted:
        if time.monotonic() + pause > deadline:
            return None
        await asyncio.sleep(pause)
        pause *= 2
        try:  # a replica whose connections are all taken is not waited for past the deadline either
            async with asyncio.timeout(max(0.0, deadline - time.monotonic())):
                found = await ladder(db, slug, caller)
        except TimeoutError:
            return None
    return found


def _named(request: Request) -> list[str]:
    """The entity tags ``If-None-Match`` names, compared weakly (RFC 9110 §13.1.2: ``W/"7"`` names ``"7"``)."""
    return [tag.strip().removeprefix("W/") for tag in request.headers.get("if-none-match", "").split(",")]


def named_version(request: Request) -> int:
    """The newest ladder version the ETags of ``If-None-Match`` name (0: none)."""
    versions = [tag.strip('"') for tag in _named(request)]
    return max((int(v) for v in versions if v.isascii() and v.isdigit() and len(v) < 19), default=0)


def not_modified(request: Request, version: int) -> tuple[str, Response | None]:
    """The ETag of an answer computed at ladder ``version``, and a 304 if ``If-None-Match`` names it (or is
    ``*``)."""
    etag = f'"{version}"'
    unchanged = any(tag in (etag, "*") for tag in _named(request))
    return etag, Response(status_code=304, headers={"ETag": etag}) if unchanged else None
