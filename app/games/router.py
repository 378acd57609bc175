from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, BackgroundTasks, Header, Query
from sqlalchemy.orm import Session

from app.analysis import auto
from app.db import Database
from app.deps import DatabaseDep, SettingsDep
from app.errors import InvalidInput, problems
from app.games import service
from app.games.schemas import BatchIn, BatchOut, GameIn, GameOut
from app.ladders.service import get_ladder
from app.schemas import Page
from app.security import BearerKey, require

router = APIRouter(prefix="/v1/ladders/{slug}/games", tags=["games"])

IdempotencyKey = Annotated[
    str | None,
    Header(
        max_length=200,
        description="Any unique string per logical request: a retry with the same key and body is applied once "
        "and gets the first response; the same key with another body is a 409.",
    ),
]


@router.post("", status_code=201, response_model=GameOut, responses=problems(401, 403, 404, 409, 413, 422))
def post_game(
    slug: str,
    game: GameIn,
    db: DatabaseDep,
    key: BearerKey,
    background: BackgroundTasks,
    idempotency_key: IdempotencyKey = None,
) -> dict:
    """Record a game and apply the normalised mElo update to its participants (SPEC §3-§6)."""
    return _record(db, background, slug, key, [game], idempotency_key, service.request_hash(game), batch=False)


@router.post("/batch", status_code=201, response_model=BatchOut, responses=problems(401, 403, 404, 409, 413, 422))
def post_batch(
    slug: str,
    batch: BatchIn,
    db: DatabaseDep,
    settings: SettingsDep,
    key: BearerKey,
    background: BackgroundTasks,
    idempotency_key: IdempotencyKey = None,
) -> dict:
    """Record games in order in one transaction: all are applied, or none (errors name `games[i]`)."""
    if len(batch.games) > settings.max_batch_games:
        raise InvalidInput(
            f"games: at most {settings.max_batch_games} games per batch",
            errors=[{"field": "games", "message": f"at most {settings.max_batch_games} games"}],
        )
    digest = service.request_hash(batch)
    return _record(db, background, slug, key, batch.games, idempotency_key, digest, batch=True)


def _record(
    db: Database,
    background: BackgroundTasks,
    slug: str,
    key: str,
    games: list[GameIn],
    idempotency_key: str | None,
    digest: str,
    batch: bool,
) -> dict:
    """Apply the games in one write transaction, then count them for the ladder's auto-refit policy."""
    ladder_id = []

    def work(session: Session) -> dict:
        ladder = get_ladder(session, slug)
        require(key, ladder.write_key_hash, "write key of this ladder")
        ladder_id.append(ladder.id)
        return service.post_games(session, ladder, games, idempotency_key, digest, batch=batch)

    out = db.write(work)
    background.add_task(auto.games_posted, db, ladder_id[-1], len(games))
    return out


@router.get("", response_model=Page[GameOut], responses=problems(404, 422))
def list_games(
    slug: str,
    db: DatabaseDep,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    cursor: Annotated[int | None, Query(description="`next_cursor` of the previous page.")] = None,
) -> Page[GameOut]:
    """The ladder's games, newest first."""
    with db.reading() as session:
        return service.list_games(session, get_ladder(session, slug), limit, cursor)


@router.get("/{game_id}", response_model=GameOut, responses=problems(404))
def get_game(slug: str, game_id: int, db: DatabaseDep) -> GameOut:
    """One game with every participant's vector before and after."""
    with db.reading() as session:
        return service.get_game(session, get_ladder(session, slug), game_id)
