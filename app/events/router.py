from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Header, Query, Request
from fastapi.responses import StreamingResponse

from app import reads
from app.deps import CallerDep, DatabaseDep
from app.errors import InvalidInput, Problem, Unavailable, problems
from app.events.hub import Hub
from app.schemas import MAX_ID

router = APIRouter(prefix="/v1/ladders", tags=["ladders"])

STREAM = {
    200: {
        "description": "`text/event-stream`, open until the client closes it. Each event has an `id` (whole "
        "numbers growing within the ladder), an `event` name and one line of JSON `data`:\n\n"
        "* `hello` first, `{version}`; its `id` is where the stream starts (resume from it);\n"
        "* `game`: `{version, game}`, the game as `POST …/games` answers it;\n"
        "* `void`: `{version, game}`, the voided game (`voided_at` set);\n"
        "* `player`: `{version, action, key}`, action `created`, `updated` (with `was`: the old key, if it "
        "changed), `merged` (with `into`) or `erased` (`key` is the pseudonym);\n"
        "* `refit`: `{version, refit}`, an applied refit: every rating changed;\n"
        "* `ladder`: `{version}`, its settings changed or games were imported in bulk (`imported`);\n"
        "* `reset`: `{}`, the resume point is no longer kept: read the ladder anew.\n\n"
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
    `MELO_EVENTS_TTL_HOURS` (a week); a listener that resumes from an older id
    gets `reset`. One connection per listener, no thread: a worker holds up to
    `MELO_MAX_STREAMS` streams (503 beyond).
    """
    hub: Hub = request.app.state.hub
    start = after
    if last_event_id is not None:
        if not last_event_id.isdigit() or int(last_event_id) > MAX_ID:
            message = "must be an event id (a whole number) from this stream"
            raise InvalidInput(f"Last-Event-ID: {message}", errors=[{"field": "Last-Event-ID", "message": message}])
        start = int(last_event_id)
    ladder = await reads.ladder(db, slug, caller)
    if hub.full:
        raise Unavailable("This server holds as many event streams as it may; try again shortly.")

    async def allowed() -> bool:  # a key revoked or a ladder made private or deleted since ends the stream
        try:
            return (await reads.ladder(db, slug, caller)).id == ladder.id
        except Problem:
            return False

    headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
    body = hub.stream(ladder.id, ladder.version, start, allowed, request.receive)
    return StreamingResponse(body, media_type="text/event-stream", headers=headers)
