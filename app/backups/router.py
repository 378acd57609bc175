from __future__ import annotations

from contextlib import ExitStack
from typing import Any

import anyio.to_thread
from fastapi import APIRouter
from fastapi.responses import StreamingResponse
from starlette.types import Receive, Scope, Send

from app.backups import service
from app.core.errors import problems
from app.domain.access import readable
from app.http.deps import CallerDep, DatabaseDep

router = APIRouter(prefix="/v1/ladders", tags=["ladders"])

NDJSON = "application/x-ndjson"


class Streamed(StreamingResponse):
    """A streamed answer that closes what it reads from (``stack``) however it ends: read to the end, or left by
    a client that went away before or while it was sent (whose stream is never finished, so a ``with`` in the
    stream alone would keep its database connection forever)."""

    def __init__(self, lines, stack: ExitStack, **options) -> None:
        super().__init__(lines, **options)
        self.lines, self.stack = lines, stack

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:  # no thread runs the stream any more: a cancelled read waits for the line it was reading
            await anyio.to_thread.run_sync(self._close)

    def _close(self) -> None:
        self.lines.close()
        self.stack.close()


EXPORTED: dict[int | str, dict[str, Any]] = {
    200: {"content": {NDJSON: {}}, "description": "The export, one JSON object per line."}
}


@router.get(
    "/{slug}/export",
    response_class=StreamingResponse,
    responses=EXPORTED | problems(401, 403, 404),
)
def export_ladder(slug: str, db: DatabaseDep, caller: CallerDep) -> StreamingResponse:
    """The whole ladder as NDJSON, streamed from one consistent snapshot: a header line
    `{"melo_export": 1, "ladder": {…settings and seed…}, "players": n, "games": m}`, then one
    `{"player": {key, name, active, created_at, initial?}}` per player (`initial` only when it is not the seeded
    vector), then one `{"game": {seq, played_at, sides, external_id?, voided?}}` per game in log order, voided games
    with their `voided` mark, and `{"checkpoint": {after_seq, vectors, pulls?}}` where an applied refit replaced the
    ratings or a season pulled them back (`pulls`: the seasons' pulls there), then one `{"season": {…}}` per closed
    season with its pull and archived standings. `melo import` restores it into a new ladder with every vector bit
    for bit. API keys are not exported."""
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
    return Streamed(lines(), stack, media_type=NDJSON, headers={"Content-Disposition": disposition})
