from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request, Response
from sqlalchemy.orm import Session

from app.core import deadline
from app.core.errors import Forbidden, Unauthorized, problems
from app.core.schemas import Page
from app.domain.access import ladder_for, readable
from app.domain.rerating import SWITCH_SHARE, prepared_replay, switch
from app.http import report_jobs
from app.http.deps import CallerDep, DatabaseDep, IdCursor, IdPath, Limit
from app.ladders import service
from app.ladders.schemas import (
    AuditOut,
    KeyCreate,
    KeyCreated,
    KeyOut,
    LadderCreate,
    LadderCreated,
    LadderDelete,
    LadderDeleted,
    LadderOut,
    LadderPatch,
)

router = APIRouter(prefix="/v1/ladders", tags=["ladders"])


@router.post("", status_code=201, response_model=LadderCreated, responses=problems(401, 403, 409, 422))
def create_ladder(data: LadderCreate, db: DatabaseDep, caller: CallerDep) -> LadderCreated:
    """Create a ladder (server admin key). The response carries the ladder's first admin key, shown only once."""
    if not caller.bearer:
        raise Unauthorized("Creating ladders needs `Authorization: Bearer <MELO_ADMIN_KEY>`.")
    if not caller.server_admin:
        raise Forbidden("Creating ladders needs the server admin key (MELO_ADMIN_KEY).")
    with db.writing() as session:
        return service.create_ladder(session, data)


@router.get("", response_model=Page[LadderOut], responses=problems(422))
def list_ladders(
    db: DatabaseDep,
    caller: CallerDep,
    limit: Limit = 100,
    cursor: Annotated[str | None, Query(max_length=400, description="`next_cursor` of the previous page.")] = None,
) -> Page[LadderOut]:
    """The public ladders, by slug (with the server admin key, the private ones too), a page at a time."""
    with db.reading() as session:
        return service.list_ladders(session, caller, limit, cursor)


@router.get("/{slug}", response_model=LadderOut, responses=problems(401, 403, 404))
def get_ladder(slug: str, db: DatabaseDep, caller: CallerDep) -> LadderOut:
    """A ladder's configuration and size."""
    with db.reading() as session:
        return service.ladder_out(session, readable(session, slug, caller))


@router.delete("/{slug}", response_model=LadderDeleted, responses=problems(401, 403, 404, 422))
def delete_ladder(slug: str, confirm: LadderDelete, db: DatabaseDep, caller: CallerDep) -> LadderDeleted:
    """Delete the ladder and everything in it (players, games, keys, refits), in one transaction (an admin key of
    the ladder). The body repeats the slug to confirm. There is no undo: keep a copy first with `GET …/export`
    (or `melo export`), which `melo import` restores."""
    return db.write(lambda session: service.delete_ladder(session, ladder_for(session, slug, caller, "admin"), confirm))


@router.patch("/{slug}", response_model=LadderOut, responses=problems(401, 403, 404, 422, 503))
def change_ladder(slug: str, patch: LadderPatch, db: DatabaseDep, caller: CallerDep, request: Request) -> LadderOut:
    """Change the ladder's settings (an admin key of the ladder): its name, `auto_create_players`, `auto_refit`,
    `private`, the kinds of games it plays (`play`), and those above that replay its log."""
    with db.reading() as session:
        ladder = ladder_for(session, slug, caller, "admin")
        settings = service.replay_settings(ladder, patch)
    # A new learning rate replays the log: holding no lock, before the write, which only writes it (and replays
    # the games committed meanwhile), so posts wait for the writes, not the replay.
    # Written ahead with rests that shrink so as to end before the last fifth of the request's time (the switch's).
    until = deadline.leaving(request.scope, SWITCH_SHARE)
    prepared = None if settings is None else prepared_replay(db, ladder.id, None, settings, until)

    def work(session: Session) -> LadderOut:
        return service.change_settings(session, ladder_for(session, slug, caller, "admin"), patch, prepared)

    return switch(db, prepared, work)


@router.get("/{slug}/audit", response_model=AuditOut, responses=problems(401, 403, 404, 429, 503))
async def audit(slug: str, db: DatabaseDep, caller: CallerDep, request: Request) -> Response:
    """Replay the event log from the latest checkpoint (or the initial vectors) and compare with the stored ratings.
    Computed once per ladder version."""
    return await report_jobs.report(db, request, slug, caller, "audit", lambda s, ladder, _: service.audit(s, ladder))


@router.post("/{slug}/keys", status_code=201, response_model=KeyCreated, responses=problems(401, 403, 404, 422))
def create_key(slug: str, data: KeyCreate, db: DatabaseDep, caller: CallerDep) -> KeyCreated:
    """A new key for the ladder (an admin key of the ladder): role `read`, `write` or `admin`, and optionally when
    it expires; the key itself is shown only in this response."""
    with db.writing() as session:
        return service.create_key(session, ladder_for(session, slug, caller, "admin"), data)


@router.get("/{slug}/keys", response_model=Page[KeyOut], responses=problems(401, 403, 404, 422))
def list_keys(
    slug: str,
    db: DatabaseDep,
    caller: CallerDep,
    limit: Limit = 100,
    cursor: IdCursor = None,
) -> Page[KeyOut]:
    """The ladder's keys in the order they were made, without their secrets, with when each was last used (an
    admin key of the ladder)."""
    with db.reading() as session:
        return service.list_keys(session, ladder_for(session, slug, caller, "admin"), limit, cursor)


@router.delete("/{slug}/keys/{key_id}", response_model=KeyOut, responses=problems(401, 403, 404, 409, 422))
def revoke_key(slug: str, key_id: IdPath, db: DatabaseDep, caller: CallerDep) -> KeyOut:
    """Revoke a key at once: its next request gets 403 (an admin key of the ladder). Revoking again changes nothing.
    The ladder's last working admin key cannot be revoked (409): create another admin key first."""
    with db.writing() as session:
        return service.revoke_key(session, ladder_for(session, slug, caller, "admin"), key_id)
