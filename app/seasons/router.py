from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query

from app.core.errors import LADDER_ACCESS, problems
from app.core.schemas import Page
from app.domain.access import ladder_for, readable
from app.http.deps import CallerDep, DatabaseDep, Limit
from app.seasons import service
from app.seasons.schemas import SeasonCreate, SeasonName, SeasonOut, SeasonStandings

router = APIRouter(prefix="/v1/ladders/{slug}/seasons", tags=["seasons"], responses=LADDER_ACCESS)

Cursor = Annotated[str | None, Query(max_length=400, description="`next_cursor` of the previous page.")]


@router.post("", status_code=201, response_model=SeasonOut, responses=problems(401, 403, 404, 409, 422))
def close_season(slug: str, data: SeasonCreate, db: DatabaseDep, caller: CallerDep) -> SeasonOut:
    """Close the current season (an admin key of the ladder): the standings as they stand now are archived under
    its name, each player who played in it with their record in it, in the conservative order of the leaderboard
    (established players first). The season runs from the previous one's end (or the first game) to the newest
    game; the next one starts after it. Ratings carry on as they are, unless `pull` asks to pull them back toward
    where each player started (1: everyone afresh); the standings archived are those before the pull. A name the
    ladder has used is a 409; a season without games is allowed, and empty. The boundary is part of the log: an
    export keeps it, with the standings and the pull, and a replay of the log (after a void or a merge of an
    earlier game) pulls the ratings again there."""
    return db.write(lambda session: service.close_season(session, ladder_for(session, slug, caller, "admin"), data))


@router.get("", response_model=Page[SeasonOut], responses=problems(404, 422))
def list_seasons(
    slug: str, db: DatabaseDep, caller: CallerDep, limit: Limit = 50, cursor: Cursor = None
) -> Page[SeasonOut]:
    """The ladder's closed seasons, the latest first."""
    with db.reading() as session:
        return service.list_seasons(session, readable(session, slug, caller), limit, cursor)


@router.get("/{name}", response_model=SeasonStandings, responses=problems(404, 422))
def season_standings(
    slug: str,
    name: Annotated[SeasonName, Path()],
    db: DatabaseDep,
    caller: CallerDep,
    limit: Limit = 50,
    cursor: Cursor = None,
) -> SeasonStandings:
    """A closed season's final standings as they were archived, a page at a time by rank, with each player's
    wins, draws and losses in that season. A game of the season voided (or a player merged) after it closed
    replays the ratings but leaves these as they were: `season.changed_after_closing` says when."""
    with db.reading() as session:
        return service.season_standings(session, readable(session, slug, caller), name, limit, cursor)
