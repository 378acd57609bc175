"""Seasons: closing one archives the ladder's standings as they stand, with each player's record in the season;
the boundary is the log's last game, so the next season counts the games after it."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy.orm import Session

from app import storage
from app.core.cursors import decode_cursor, encode_cursor, is_id
from app.core.errors import Conflict, NotFound
from app.core.schemas import Page, one_more
from app.domain.rerating import pull_back
from app.players.standings import standings
from app.seasons.schemas import SeasonCreate, SeasonOut, SeasonStandings, StandingItem
from app.storage.ladders import LadderRow
from app.storage.tables import Season


def close_season(session: Session, ladder: LadderRow, data: SeasonCreate) -> SeasonOut:
    """Close the season that runs since the previous one closed (or since the first game): its final standings
    as they stand now, the players who played in it by conservative strength with their records in it; then the
    ratings pulled back by ``data.pull`` (:func:`app.domain.rerating.pull_back`)."""
    storage.players.lock_all(session, ladder.id)  # no game commits while the season is read and archived
    if storage.seasons.named(session, ladder.id, data.name) is not None:
        raise Conflict(f"Ladder {ladder.slug!r} has a season {data.name!r} already.", field="name")
    previous = storage.seasons.latest(session, ladder.id)
    after = previous.after_game_id if previous is not None else 0
    upto = max(storage.as_of.last_game(session, ladder.id) or 0, after)
    table = storage.read_model.current_table(session, ladder, cached=False)
    counts = storage.as_of.records(session, ladder.id, table.ids, after, upto)
    rows = standings(table, ladder, counts)
    games, first, last = storage.seasons.games_between(session, ladder.id, after, upto)
    values = {"name": data.name, "closed_at": datetime.now(UTC), "after_game_id": upto, "games": games}
    values |= {"first_seq": first, "after_seq": last or (previous.after_seq if previous else 0), "players": len(rows)}
    season = storage.seasons.add(session, ladder.id, values | {"pull": data.pull}, rows)
    if data.pull > 0:  # the next season starts from ratings pulled back toward where each player started
        pull_back(session, ladder, upto, data.pull)
    storage.events.add(session, ladder.id, "season", {"action": "closed", "name": data.name, "pull": data.pull})
    storage.ladders.bump(session, [ladder.id])
    return season_out(season)


def season_out(season: Season) -> SeasonOut:
    return SeasonOut(
        name=season.name,
        closed_at=season.closed_at,
        first_game=season.first_seq,
        last_game=season.after_seq if season.games else None,
        games=season.games,
        players=season.players,
        pull=season.pull,
        changed_after_closing=season.changed_at,
    )


def list_seasons(session: Session, ladder: LadderRow, limit: int, cursor: str | None) -> Page[SeasonOut]:
    """The ladder's closed seasons, the latest first."""
    before = decode_cursor(cursor, is_id) if cursor is not None else None
    seasons = storage.seasons.page_of_seasons(session, ladder.id, one_more(limit), before)
    return Page[SeasonOut].of(seasons, limit, season_out, lambda s: encode_cursor(s.id))


def season_standings(session: Session, ladder: LadderRow, name: str, limit: int, cursor: str | None) -> SeasonStandings:
    """A closed season's final standings, a page at a time by rank."""
    season = storage.seasons.named(session, ladder.id, name)
    if season is None:
        raise NotFound(f"Ladder {ladder.slug!r} has no season {name!r}.")
    after = decode_cursor(cursor, is_id) if cursor is not None else 0
    rows = storage.seasons.standings(session, ladder.id, season.id, after, one_more(limit))
    page = Page[StandingItem].of(
        rows,
        limit,
        lambda row: StandingItem(**dict(zip(storage.seasons.STANDING, row, strict=True))),
        lambda row: encode_cursor(row[0]),
    )
    return SeasonStandings(items=page.items, next_cursor=page.next_cursor, season=season_out(season))
