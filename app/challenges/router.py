from __future__ import annotations

from datetime import timedelta
from typing import Annotated

import anyio.to_thread
from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import JSONResponse

from app.challenges import play, service
from app.challenges.schemas import ChallengeIn, ChallengeOut, PlayIn, Status
from app.core.errors import LADDER_ACCESS, Conflict, problems
from app.core.schemas import MAX_ID, Page, PlayerKey
from app.domain.access import ladder_for, readable
from app.games.intake import Post
from app.games.posts import Committed
from app.http.deps import CallerDep, DatabaseDep, IdCursor, Limit, SettingsDep

router = APIRouter(prefix="/v1/ladders/{slug}/challenges", tags=["challenges"], responses=LADDER_ACCESS)

#: A challenge in a URL: its number within the ladder (its `id`).
Number = Annotated[int, Path(ge=1, le=MAX_ID, description="The challenge's number within the ladder (its `id`).")]


@router.post("", status_code=201, response_model=ChallengeOut, responses=problems(401, 403, 404, 409, 422))
def create_challenge(
    slug: str, data: ChallengeIn, db: DatabaseDep, caller: CallerDep, settings: SettingsDep
) -> JSONResponse:
    """Challenge a player (a write key): `from` challenges `to`, optionally with a `message`. Both must be players
    of the ladder already, active, and two different players; two players have at most one open (or accepted)
    challenge between them at a time (409 naming it). It stays open for `MELO_CHALLENGE_DAYS` (7 days), then
    expires. A `challenge` event (`created`) goes to the ladder's event stream."""
    lasts = timedelta(days=settings.challenge_days)
    body = db.write(lambda session: service.create(session, ladder_for(session, slug, caller, "write"), data, lasts))
    return JSONResponse(body, status_code=201)


@router.get("", response_model=Page[ChallengeOut], responses=problems(404, 422))
def list_challenges(
    slug: str,
    db: DatabaseDep,
    caller: CallerDep,
    status: Annotated[
        list[Status] | None,
        Query(description="Only challenges in this status now; repeat it for several: `?status=open&status=accepted`."),
    ] = None,
    player: Annotated[
        PlayerKey | None, Query(description="Only the challenges this player made or received (a key, or an alias).")
    ] = None,
    limit: Limit = 50,
    cursor: IdCursor = None,
) -> Page[dict]:
    """The ladder's challenges, newest first, as the ladder's other lists are read (a private ladder needs a key).
    A challenge past its `expires_at` that was not played, declined or withdrawn shows as `expired`."""
    with db.reading() as session:
        return service.list_challenges(session, readable(session, slug, caller), status or [], player, limit, cursor)


@router.get("/{challenge_id}", response_model=ChallengeOut, responses=problems(404, 422))
def get_challenge(slug: str, challenge_id: Number, db: DatabaseDep, caller: CallerDep) -> dict:
    """One challenge, by its number within the ladder."""
    with db.reading() as session:
        return service.shown(session, readable(session, slug, caller), challenge_id)


def _answer(slug: str, number: int, db, caller, how: str) -> dict:
    return db.write(lambda session: service.answer(session, ladder_for(session, slug, caller, "write"), number, how))


@router.post("/{challenge_id}/accept", response_model=ChallengeOut, responses=problems(401, 403, 404, 409, 422))
def accept_challenge(slug: str, challenge_id: Number, db: DatabaseDep, caller: CallerDep) -> dict:
    """Accept an open challenge (a write key): it stays unresolved until its game is recorded, it is withdrawn, or
    it expires. 409 if it is not open."""
    return _answer(slug, challenge_id, db, caller, "accept")


@router.post("/{challenge_id}/decline", response_model=ChallengeOut, responses=problems(401, 403, 404, 409, 422))
def decline_challenge(slug: str, challenge_id: Number, db: DatabaseDep, caller: CallerDep) -> dict:
    """Decline an open challenge (a write key). 409 if it is not open."""
    return _answer(slug, challenge_id, db, caller, "decline")


@router.delete("/{challenge_id}", response_model=ChallengeOut, responses=problems(401, 403, 404, 409, 422))
def withdraw_challenge(slug: str, challenge_id: Number, db: DatabaseDep, caller: CallerDep) -> dict:
    """Withdraw an open or accepted challenge (a write key): it stays listed as `withdrawn`. 409 otherwise."""
    return _answer(slug, challenge_id, db, caller, "withdraw")


@router.post(
    "/{challenge_id}/game", status_code=201, response_model=ChallengeOut, responses=problems(401, 403, 404, 409, 422)
)
async def play_challenge(
    slug: str, challenge_id: Number, data: PlayIn, db: DatabaseDep, caller: CallerDep, request: Request
) -> JSONResponse:
    """Record the game that settles an open or accepted challenge (a write key), in one call: `winner` is one of
    its two players, and `scores` optionally both their scores. The game is posted exactly as `POST …/games`
    posts it (its answer's `game` is its number), and the challenge is marked `played` in the same transaction.
    Sent again with the same result, it is answered as the first time (`Idempotent-Replayed: true`) and no second
    game is recorded; another result for a challenge already played is a 409 naming its game."""
    post = await anyio.to_thread.run_sync(_prepare, db, slug, challenge_id, data, caller)
    headers = {"Idempotent-Replayed": "true"}
    if post is not None:
        try:
            answered = await request.app.state.committer.submit(post)
        except Conflict as exc:
            if exc.extra.get("errors", [{}])[0].get("field") != "Idempotency-Key":
                raise
            # A concurrent call recorded another result first: say which game settled it.
            await anyio.to_thread.run_sync(_prepare, db, slug, challenge_id, data, caller)
            raise
        headers = {"Ladder-Version": str(answered.ladder_version)} if isinstance(answered, Committed) else headers
    body = await anyio.to_thread.run_sync(_read, db, slug, challenge_id, caller)
    return JSONResponse(body, status_code=201, headers=headers)


def _prepare(db, slug: str, number: int, data: PlayIn, caller) -> Post | None:
    with db.reading() as session:
        return play.prepare(session, slug, number, data, caller)


def _read(db, slug: str, number: int, caller) -> dict:
    with db.reading() as session:
        return service.shown(session, readable(session, slug, caller), number)
