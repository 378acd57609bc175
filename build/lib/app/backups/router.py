from __future__ import annotations

from contextlib import ExitStack

from fastapi import APIRouter
from fastapi.responses import StreamingResponse

from app.access import readable
from app.backups import service
from app.deps import CallerDep, DatabaseDep
from app.errors import problems

router = APIRouter(prefix="/v1/ladders", tags=["ladders"])

NDJSON = "application/x-ndjson"


@router.get(
    "/{slug}/export",
    response_class=StreamingResponse,
    responses={200: {"content": {NDJSON: {}}, "description": "The export, one JSON object per line."}}
    | problems(401, 403, 404),
)
def export_ladder(slug: str, db: DatabaseDep, caller: CallerDep) -> StreamingResponse:
    """The whole ladder as NDJSON, streamed from one consistent snapshot: a header line
    `{"melo_export": 1, "ladder": {…settings and seed…}, "players": n, "games": m}`, then one
    `{"player": {key, name, active, created_at, initial?}}` per player (`initial` only when it is not the seeded
    vector), then one `{"game": {seq, played_at, sides, external_id?, voided?}}` per game in log order, voided games
    with their `voided` mark, and `{"checkpoint": {after_seq, vectors}}` where an applied refit replaced the ratings.
    `melo import` restores it into a new ladder with every vector bit for bit. API keys are not exported."""
    stack = ExitStack()
    session = stack.enter_context(db.snapshot())
    try:
        ladder = readable(session, slug, caller)
    except BaseException:
        stack.close()
        raise

    def lines():
        with stack:
            yield from service.export_lines(session, ladder)

    disposition = f'attachment; filename="{ladder.slug}.ndjson"'
    return StreamingResponse(lines(), media_type=NDJSON, headers={"Content-Disposition": disposition})
