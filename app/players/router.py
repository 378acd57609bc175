from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Query

from app.deps import DatabaseDep
from app.errors import problems
from app.ladders.service import get_ladder
from app.players import service
from app.players.schemas import HistoryItem, LeaderboardItem, OpponentItem, PlayerCreate, PlayerOut
from app.schemas import Page
from app.security import BearerKey, require

router = APIRouter(prefix="/v1/ladders/{slug}", tags=["players"])

Limit = Annotated[int, Query(ge=1, le=500, description="Page size.")]


@router.post("/players", status_code=201, response_model=PlayerOut, responses=problems(401, 403, 404, 409, 422))
def create_player(slug: str, data: PlayerCreate, db: DatabaseDep, key: BearerKey) -> PlayerOut:
    """Add a player, optionally with an explicit initial vector (ladder write key)."""
    with db.writing() as session:
        ladder = get_ladder(session, slug)
        require(key, ladder.write_key_hash, "write key of this ladder")
        return service.create_player(session, ladder, data)


@router.get("/players/{key}", response_model=PlayerOut, responses=problems(404))
def get_player(slug: str, key: str, db: DatabaseDep) -> PlayerOut:
    """A player's vector, strength, record and provisional flag."""
    with db.reading() as session:
        ladder = get_ladder(session, slug)
        return service.player_out(session, ladder, service.get_player(session, ladder, key))


@router.get("/players/{key}/history", response_model=Page[HistoryItem], responses=problems(404, 422))
def history(slug: str, key: str, db: DatabaseDep, limit: Limit = 50, cursor: str | None = None) -> Page[HistoryItem]:
    """The player's games, newest first: vectors and expected scores before and after each."""
    with db.reading() as session:
        return service.history(session, get_ladder(session, slug), key, limit, cursor)


@router.get("/players/{key}/opponents", response_model=list[OpponentItem], responses=problems(404))
def opponents(
    slug: str, key: str, db: DatabaseDep, limit: Annotated[int, Query(ge=1, le=100)] = 10
) -> list[OpponentItem]:
    """Balanced opponents: the players against whom the win probability is closest to 1/2 (SPEC §7)."""
    with db.reading() as session:
        return service.opponents(session, get_ladder(session, slug), key, limit)


@router.get("/leaderboard", response_model=Page[LeaderboardItem], responses=problems(404, 409, 422))
def leaderboard(
    slug: str,
    db: DatabaseDep,
    by: Literal["hodge", "field", "disc"] = "hodge",
    limit: Limit = 50,
    cursor: str | None = None,
) -> Page[LeaderboardItem]:
    """Players ranked by Hodge strength (default), expected score against the field, or disc strength (SPEC §8).

    `by=disc` ranks by u/v in the dominant disc of the canonical form (seed 004) and answers 409 when that disc
    is cyclic (no ordering exists).
    """
    with db.reading() as session:
        return service.leaderboard(session, get_ladder(session, slug), by, limit, cursor)
