from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Annotated, Literal

import anyio.to_thread
from fastapi import APIRouter, Query, Request, Response
from fastapi.responses import JSONResponse
from pydantic import BeforeValidator

from app.core.db import Database
from app.core.errors import LADDER_ACCESS, InvalidInput, problems
from app.core.ladder import LadderRow
from app.core.schemas import EARLIEST, LATEST, MAX_ID, Page, PlayerKey, a_date
from app.domain.access import ladder_for, ladder_for_read, readable
from app.http import offload, player_table, replica_routing
from app.http.deps import CallerDep, DatabaseDep, Limit, MinVersion
from app.players import changes, matchmaking, moment_feed, profile, rivals
from app.players import leaderboard as leaderboards
from app.players.schemas import (
    HeadToHeadItem,
    HistoryItem,
    LeaderboardPage,
    MergeIn,
    MomentsPage,
    OpponentItem,
    PlayerCreate,
    PlayerOut,
    PlayerPatch,
)
from app.storage.read_model import Table

router = APIRouter(prefix="/v1/ladders/{slug}", tags=["players"], responses=LADDER_ACCESS)

NOT_MODIFIED: dict[int | str, dict] = {304: {"description": "Not modified: `If-None-Match` names this version"}}
AS_OF = (
    "The standings as they stood after the longest start of the log whose games were all played before this time "
    "(ISO 8601; without a zone, UTC): the ratings, records and standard errors a replay of today's log gives at "
    "that point, by that day's clock (a refit applied since, or a change of the learning rate, changes the past "
    "too; names, flags and settings are today's). Players created by then who had not played yet are listed at "
    "their initial ratings. Before the first game: no player who came with the games; after the newest game: today's "
    "table. Read from the log, one such read at a time per server process."
)
AsOf = Annotated[datetime | None, BeforeValidator(a_date), Query(description=AS_OF)]


def _utc(moment: datetime | None) -> datetime | None:
    """``as_of`` in UTC (without a zone: UTC), held within the dates games may have: any earlier is before every
    game, any later after every game."""
    if moment is None:
        return None
    wall = moment.replace(tzinfo=None)
    if wall < EARLIEST.replace(tzinfo=None) - timedelta(days=1):
        return EARLIEST
    if wall > LATEST.replace(tzinfo=None) + timedelta(days=1):
        return LATEST
    return min(max(moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC), EARLIEST), LATEST)


@router.post("/players", status_code=201, response_model=PlayerOut, responses=problems(401, 403, 404, 409, 422))
def create_player(slug: str, data: PlayerCreate, db: DatabaseDep, caller: CallerDep) -> JSONResponse:
    """Add a player, optionally with an explicit initial vector (ladder write key)."""
    with db.writing() as session:
        ladder = ladder_for(session, slug, caller, "write")
        changes.create_player(session, ladder, data)
    return JSONResponse(_profile(db, ladder, data.key), status_code=201)


@router.patch("/players/{key}", response_model=PlayerOut, responses=problems(401, 403, 404, 409, 422))
def change_player(slug: str, key: str, patch: PlayerPatch, db: DatabaseDep, caller: CallerDep) -> JSONResponse:
    """Rename a player, make them inactive (off the default leaderboard) or active again (a write key), or change
    their key (an admin key): every game of theirs names the new key, and the old one stays an alias that leads
    to them. 409 if another player has the new key or it is an alias of another player."""
    need = "admin" if "key" in patch.model_fields_set else "write"
    with db.writing() as session:
        ladder = ladder_for(session, slug, caller, need)
        key = changes.change_player(session, ladder, key, patch)
    return JSONResponse(_profile(db, ladder, key))


@router.post("/players/{key}/merge", response_model=PlayerOut, responses=problems(401, 403, 404, 409, 422))
def merge_player(slug: str, key: str, data: MergeIn, db: DatabaseDep, caller: CallerDep) -> JSONResponse:
    """Merge `key` into `into` (an admin key): every game of `key` becomes a game of `into`, `key` is gone, and the
    ratings are replayed exactly as if those games had been posted with `into`. 409 names a game both played."""

    def work(session) -> dict:
        return changes.merge_players(session, ladder_for(session, slug, caller, "admin"), key, data.into)

    return JSONResponse(db.write(work))


@router.delete("/players/{key}", response_model=PlayerOut, responses=problems(401, 403, 404))
def erase_player(slug: str, key: str, db: DatabaseDep, caller: CallerDep) -> JSONResponse:
    """Erase a person (an admin key): the name is removed and the key replaced by an opaque pseudonym everywhere;
    the games and everyone's ratings stay. Answers the player under the pseudonym."""
    with db.writing() as session:
        ladder = ladder_for(session, slug, caller, "admin")
        pseudonym = changes.erase_player(session, ladder, key)
    return JSONResponse(_profile(db, ladder, pseudonym))


def _profile(db: Database, ladder: LadderRow, key: str) -> dict:
    """A player's profile just after a change committed: this worker's copy catches up with the rows changed, and
    the ladder's aliases are read as they are now."""
    with db.reading() as session:
        return profile.get_player(session, ladder_for_read(session, ladder.slug, fresh=True), key)


@router.get("/players/{key}", response_model=PlayerOut, responses=problems(404, 422, 429, 503) | NOT_MODIFIED)
async def get_player(
    slug: str,
    key: str,
    db: DatabaseDep,
    caller: CallerDep,
    request: Request,
    as_of: AsOf = None,
    min_version: MinVersion = None,
) -> Response:
    """A player's vector, strength, record and provisional flag, at the ladder version it names; with `as_of`,
    as they stood then (a 404 if they had not played, nor been created, by then)."""

    async def answer(db: Database, _: LadderRow | None) -> Response:
        def read() -> dict:  # the access checked in the read's own transaction
            with db.snapshot() if as_of is not None else db.reading() as session:
                return profile.get_player(session, readable(session, slug, caller), key, _utc(as_of))

        out = await (offload.past(request, read) if as_of is not None else anyio.to_thread.run_sync(read))
        etag, unchanged = replica_routing.not_modified(request, out["ladder_version"])
        return unchanged or JSONResponse(out, headers={"ETag": etag})

    return await replica_routing.lag_tolerant(request, db, slug, caller, min_version, answer, ladder_needed=False)


@router.get("/players/{key}/history", response_model=Page[HistoryItem], responses=problems(404, 422))
def history(
    slug: str, key: str, db: DatabaseDep, caller: CallerDep, limit: Limit = 50, cursor: str | None = None
) -> JSONResponse:
    """The player's games, newest first: vectors and expected scores before and after each. A page holds `limit`
    games, or fewer where they would hold more than 5,000 players in all (one game at least)."""
    with db.reading() as session:
        return JSONResponse(profile.history(session, readable(session, slug, caller), key, limit, cursor))


@router.get("/players/{key}/opponents", response_model=Page[OpponentItem], responses=problems(404, 422, 429, 503))
async def opponents(
    slug: str,
    key: str,
    db: DatabaseDep,
    caller: CallerDep,
    request: Request,
    limit: Annotated[int, Query(ge=1, le=100)] = 10,
    cursor: Annotated[
        int | None,
        Query(ge=1, le=matchmaking.MAX_OPPONENTS - 1, description="`next_cursor` of the previous page."),
    ] = None,
    purpose: Literal["balanced", "comparable", "next"] = "balanced",
) -> JSONResponse:
    """Who to play next. `purpose=balanced`: the players against whom the win probability is closest to 1/2.
    `purpose=comparable`: for a player whose results do not yet pin their rating down (provisional), the
    opponents whose games would best do so: the identifiability check finds a direction in which every result so
    far lets the rating drift, and a game helps when its likely result pushes back along it (ranked by `gain`).
    A player who is comparable already gets the balanced list. `purpose=next` (the web page's): the games that
    would tell the most now: an even game counts most (for a provisional player any result counts towards being
    ranked, so evenness counts half), an opponent whose own rating is provisional counts half, and one met in
    the player's last 10 games counts less for each such game.

    Every suggestion says what is at stake: `if_win` and `if_lose`, the Elo points a singles game between the two
    played now would give or take (exactly what posting it would show as the player's `elo_change`), how often
    and when the two last played together, and a `reason` in words. The list is ranked anew for each page, and
    ends after the best `MAX_OPPONENTS` (1,000)."""

    def work() -> dict:
        with db.reading() as session:
            return matchmaking.opponents_page(
                session, readable(session, slug, caller), key, limit, cursor or 0, purpose
            )

    return JSONResponse(await offload.compute(request, work))


@router.get("/players/{key}/head-to-head", response_model=Page[HeadToHeadItem], responses=problems(404, 422, 429, 503))
async def head_to_head(
    slug: str,
    key: str,
    db: DatabaseDep,
    caller: CallerDep,
    request: Request,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    cursor: Annotated[int | None, Query(ge=1, description="`next_cursor` of the previous page.")] = None,
) -> JSONResponse:
    """The player's record against and with everyone they have played, singles, doubles (against), partners
    (with) and free-for-alls apart, most games together first, from all their games that count (voided ones
    left out). Read from the log: one pass over the player's games."""

    def work() -> dict:
        with db.reading() as session:
            return rivals.head_to_head_page(session, readable(session, slug, caller), key, limit, cursor or 0)

    return JSONResponse(await offload.compute(request, work))


#: A page around a player of up to this many rows is rendered on the event loop once its order is known.
AROUND_HERE = 50


def _past_page(db: Database, ladder: LadderRow, as_of: datetime, render: Callable[[Table, LadderRow], bytes]) -> bytes:
    """A leaderboard page of the ladder as it stood at ``as_of`` (read in one snapshot)."""
    with db.snapshot() as session:
        table = profile.past_table(session, ladder, as_of)
    return render(table, ladder)


async def _with_form(
    request: Request, db: Database, ladder: LadderRow, table: Table, body: bytes, memo: tuple | None
) -> bytes:
    """The page with each player's form (read in the compute lanes: 500 players' last games are a heavy read),
    kept with the table for its first pages."""
    if memo is not None and memo in table.memo:
        return table.memo[memo]

    def read() -> bytes:
        with db.reading() as session:
            return leaderboards.with_form(session, ladder, table, body)

    shown = await offload.compute(request, read)
    if memo is not None:
        table.memo[memo] = shown
    return shown


@router.get(
    "/leaderboard",
    response_model=LeaderboardPage,
    responses=problems(404, 409, 422, 429, 503) | NOT_MODIFIED,
)
async def leaderboard(
    slug: str,
    db: DatabaseDep,
    caller: CallerDep,
    request: Request,
    by: Literal["hodge", "field", "disc", "conservative"] = "hodge",
    limit: Limit = 50,
    cursor: str | None = None,
    inactive: Annotated[
        bool,
        Query(
            description="Include inactive players too: those set inactive and those away longer than the ladder's "
            "`inactive_after_days`."
        ),
    ] = False,
    form: Annotated[
        bool,
        Query(
            description="Add each player's last results (`form`) and what their own last game did "
            "(`last_game_change`); not with `as_of`."
        ),
    ] = False,
    as_of: AsOf = None,
    min_version: MinVersion = None,
    around: Annotated[
        PlayerKey | None,
        Query(
            description="A player's key (or alias): the page is the `limit` rows centred on them (fewer at the ends), "
            "with `prev_cursor` and `next_cursor` to go on either way; a 404 if they are not on this leaderboard. "
            "Not with `cursor`.",
        ),
    ] = None,
) -> Response:
    """Players ranked by Hodge strength (default), expected score against the field, disc strength, or conservative
    strength (mathematics §8).

    `by=conservative` (the front-end's order) lists the established players first, by Elo-equivalent strength
    minus two standard errors, and the provisional players below them in their own group, ordered the same way:
    a newcomer with one lucky win does not sit above the regulars.

    The page names the ladder version it was computed at (`ladder_version`, and its `ETag`); `If-None-Match` with
    that ETag answers 304 while the ladder has not changed. While games stream in, a read that names no version
    may be answered from the players as the worker ranked them up to a quarter of a second before
    (`MELO_BOARD_LAG`), so a ladder's readers rank it a few times a second rather than once per game; every page
    is of one version, which it names, and `min_version` (or `If-None-Match`) is never answered older. Each page
    has `prev_cursor` and `next_cursor`; `around={key}` answers the page centred on that player.

    Time counts by the ladder's clock (`ladder_clock`, the newest `played_at` of its games): each standard error
    grows with the time since the player's last game (the ladder's `drift`), so a player who stopped playing sinks
    in the conservative order, and with `inactive_after_days` leaves the default listing, until their next game.

    `form=true` adds each player's last five results (`form`: `W`, `D`, `L`, newest first) and the Elo points their
    own last game gave or took (`last_game_change`, apart from `change_since_last_game`, how others' games moved
    them since), read from the log.

    `by=disc` ranks by u/v in the dominant disc of the canonical form ([Limitations]) and answers 409 when that disc
    is cyclic (no ordering exists).
    """
    if as_of is not None and form:
        raise InvalidInput("form: not with as_of (the form is the latest results)", field="form")
    if around is not None and cursor is not None:
        raise InvalidInput("around: not with cursor (a cursor continues a page; around starts one)", field="around")

    def render(table: Table, ladder: LadderRow) -> bytes:
        if around is not None:
            return leaderboards.around(table, ladder, by, limit, around, inactive)
        return leaderboards.leaderboard(table, ladder, by, limit, cursor, inactive)

    async def answer(db: Database, ladder: LadderRow | None) -> Response:
        assert ladder is not None  # a ladder is needed
        if as_of is not None:
            past = await offload.past(request, _past_page, db, ladder, _utc(as_of), render)
            return Response(past, media_type="application/json")
        bodies: dict[int, bytes] = {}

        async def rank(table: Table) -> None:  # ranking 10,000 players takes milliseconds: not on the event loop
            bodies[table.version] = await offload.compute(request, render, table, ladder)

        wanted = max(min_version or 0, replica_routing.named_version(request))
        lag = request.app.state.settings.board_lag
        walking = None if cursor is None else leaderboards.cursor_version(cursor)
        table = await player_table.board_table(db, ladder, wanted, lag, rank, walking)
        etag, unchanged = replica_routing.not_modified(request, table.version)
        if unchanged:
            return unchanged
        body: bytes | None = bodies.get(table.version) or (
            None if around else leaderboards.rendered_page(table, by, limit, cursor, inactive)
        )
        if body is None and around is not None and limit <= AROUND_HERE and leaderboards.ranked(table, by, inactive):
            body = render(table, ladder)  # the order is known: a few rows' work (under a millisecond)
        if body is None:
            body = await offload.compute(request, render, table, ladder)
        if form:
            memo = ("form", by, limit, inactive) if cursor is None and around is None else None
            body = await _with_form(request, db, ladder, table, body, memo)
        return Response(body, media_type="application/json", headers={"ETag": etag})

    return await replica_routing.lag_tolerant(request, db, slug, caller, min_version, answer)


@router.get("/moments", response_model=MomentsPage, responses=problems(404, 422, 429, 503))
async def list_moments(
    slug: str,
    db: DatabaseDep,
    caller: CallerDep,
    request: Request,
    limit: Annotated[int, Query(ge=1, le=100, description="Page size.")] = 20,
    cursor: Annotated[str | None, Query(max_length=400, description="`next_cursor` of the previous page.")] = None,
    since: Annotated[
        int | None, Query(ge=0, le=MAX_ID, description="Only the moments of the games numbered above this one.")
    ] = None,
    player: Annotated[
        str | None, Query(min_length=1, max_length=200, description="Only the moments naming this player (a key).")
    ] = None,
) -> MomentsPage:
    """What the ladder's games are remembered for, newest first: a player's first win (`first_win`), a win whose
    chance before the game was below 30% (`upset`, with `chance`), 3, 5, 10, 20, … wins in a row (`streak`), a new
    #1 of the standings (`new_leader`), and the biggest rise of each week (`movers`, on the game that closed the
    week, or on the latest game once its week is over). Computed from the log when read, the same log giving the
    same moments: at most one of each kind and two per game, none for voided games, and only `first_win` for a
    game with a provisional player (fewer than 3 results against others before it; `movers` is about the week). A
    new #1 is told for the latest 1,000 games of the log. `since` is what a page that saw game N asks for: the
    moments of the games after it."""

    def work() -> MomentsPage:
        with db.reading() as session:
            return moment_feed.page(session, readable(session, slug, caller), limit, cursor, since, player)

    return await offload.compute(request, work)
