from __future__ import annotations

import logging
import math
from datetime import UTC, datetime
from typing import Annotated, Any

from fastapi import APIRouter, Header, Query, Request
from fastapi.responses import StreamingResponse

from app.core.errors import InvalidInput, Problem, Unavailable, problems
from app.core.schemas import MAX_ID
from app.events.hub import Hub
from app.http import ladder_access
from app.http.deps import CallerDep, DatabaseDep

router = APIRouter(prefix="/v1/ladders", tags=["ladders"])
logger = logging.getLogger("melo")

STREAM: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "`text/event-stream`, open until the client closes it. Each event has an `id` (whole "
        "numbers growing within the ladder), an `event` name and one line of JSON `data`:\n\n"
        "* `hello` first, `{version}`; its `id` is where the stream starts (resume from it; each ladder numbers its "
        "own events), and `version` the ladder's version there: a listener that read the ladder at an older version "
        "reads it again, since what changed in between comes before the stream's start;\n"
        "* `game`: `{version, game}`, the game as `POST …/games` answers it;\n"
        "* `void`: `{version, game}`, the voided game (`voided_at` set);\n"
        "* `player`: `{version, action, key}`, action `created`, `updated` (with `was`: the old key, if it "
        "changed), `merged` (with `into`) or `erased` (`key` is the pseudonym);\n"
        "* `refit`: `{version, refit}`, an applied refit: every rating changed;\n"
        "* `challenge`: `{version, action, challenge}`, action `created`, `accepted`, `declined`, `withdrawn`, "
        "`played` or `expired`; `challenge` as `GET …/challenges/{id}` shows it now;\n"
        "* `ladder`: `{version}`, its settings changed or games were imported in bulk (`imported`);\n"
        "* `reset`: `{}`, the resume point is no longer kept, or the listener is more than 10,000 events behind: "
        "read the ladder anew (the stream goes on from the latest event; a `reset` that comes later carries its "
        "`id`).\n\n"
        "`version` is the ladder version after the change (the `ETag` of the reads). A `: keep-alive` comment "
        "comes every 15 s on a quiet stream.",
        "content": {"text/event-stream": {"schema": {"type": "string"}}},
    }
}


@router.get("/{slug}/events", response_class=StreamingResponse, responses=STREAM | problems(401, 403, 404, 422, 503))
async def events(
    slug: str,
    request: Request,
    db: DatabaseDep,
    caller: CallerDep,
    after: Annotated[
        int | None, Query(ge=0, le=MAX_ID, description="Resume after this event id (0: every event still kept).")
    ] = None,
    last_event_id: Annotated[
        str | None,
        Header(
            alias="Last-Event-ID",
            description="Resume after this event id; an EventSource sends it when it reconnects (wins over `after`).",
        ),
    ] = None,
) -> StreamingResponse:
    """The ladder's changes as server-sent events, as they commit: games, voids, player changes, applied refits
    (a public ladder needs no key, a private one a key of the ladder).

    Without `after` or `Last-Event-ID` the stream starts now. Events are kept
    `MELO_EVENTS_TTL_HOURS` (a week); a listener that resumes from an older id,
    or more than 10,000 events back, gets `reset`. One connection per listener,
    no thread: a worker holds up to `MELO_MAX_STREAMS` streams (503 beyond).
    A stream ends as soon as its key may no longer read the ladder: before the
    first event committed after the key's revocation or the ladder's change to
    private, and when the key expires.
    """
    hub: Hub = request.app.state.hub
    start = after
    if last_event_id is not None:
        # ASCII digits only (str.isdigit() also takes "²", which int() refuses), and few (int() refuses 5,000)
        number = last_event_id.isascii() and last_event_id.isdigit() and len(last_event_id) <= 20
        if not number or int(last_event_id) > MAX_ID:
            message = "must be an event id (a whole number) from this stream"
            raise InvalidInput(f"Last-Event-ID: {message}", errors=[{"field": "Last-Event-ID", "message": message}])
        start = int(last_event_id)
    ladder = await ladder_access.ladder(db, slug, caller)
    if hub.full:
        raise Unavailable("This server holds as many event streams as it may; try again shortly.")

    async def access() -> float | None:  # a key revoked or expired, a ladder made private or deleted: None
        try:
            found, expires = await ladder_access.readable_until(db, slug, caller)
        except Problem:
            return None
        except Exception:  # a database that is down: the stream ends, and the listener reconnects and resumes
            logger.warning("checking an event stream's access failed", exc_info=True)
            return None
        return _seconds_left(expires) if found.id == ladder.id else None

    headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
    body = hub.stream(ladder.id, ladder.version, start, access, request.receive)
    return StreamingResponse(body, media_type="text/event-stream", headers=headers)


def _seconds_left(expires: datetime | None) -> float:
    """Seconds until a key that expires then stops working (``inf``: never)."""
    return math.inf if expires is None else (expires - datetime.now(UTC)).total_seconds()
