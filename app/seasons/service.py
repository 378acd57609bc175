"""Seasons: closing one archives the ladder's standings as they stand, with each player's record in the season;
the boundary is the log's last game, so the next season counts the games after it."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy.orm import Session

from app import storage
from app.core.cursors import decode_cursor, encode_cursor, is_id
from app.core.errors import Conflict, NotFound
from app.core.ladder import LadderRow
from app.core.schemas import Page, iso, one_more
from app.domain.rerating import lock_ladder, pull_back, replay_log
from app.players.standings import standings
from app.seasons.schemas import PodiumPlace, SeasonCreate, SeasonOut, SeasonStandings, StandingItem
from app.storage.seasons import Season


def close_season(session: Session, ladder: LadderRow, data: SeasonCreate, until: datetime | None = None) -> SeasonOut:
    """Close the season that runs since the previous one closed (or since the first game): its final standings
    as they stand now, the players who played in it by conservative strength with their records in it; then the
    ratings pulled back by ``data.pull`` (:func:`app.domain.rerating.pull_back`).

    With ``until``, the season ends with the log's games played before then (the longest start of the log that
    were: :func:`app.storage.as_of.last_game_before`), its standings as they stood after them; a pull there, below
    the log's end, replays the games after it (:func:`app.domain.rerating.replay_log`)."""
    lock_ladder(session, ladder.id)  # no game commits while the season is read and archived
    if storage.seasons.named(session, ladder.id, data.name) is not None:
        raise Conflict(f"Ladder {ladder.slug!r} has a season {data.name!r} already.", field="name")
    previous = storage.seasons.latest(session, ladder.id)
    after = previous.after_game_id if previous is not None else 0
    end = max(storage.as_of.last_game(session, ladder.id) or 0, after)
    upto = end if until is None else max(storage.as_of.last_game_before(session, ladder.id, until) or 0, after)
    table = storage.read_model.current_table(session, ladder, cached=False)
    if upto < end:  # (only with `until`)
        assert until is not None
        table = storage.as_of.table_after(session, ladder, table, upto, until or datetime.now(UTC), iso(until))
    counts = storage.as_of.records(session, ladder.id, table.ids, after, upto)
    rows = standings(table, ladder, counts)
    games, first, last = storage.seasons.games_between(session, ladder.id, after, upto)
    values = {"name": data.name, "closed_at": datetime.now(UTC), "after_game_id": upto, "games": games}
    values |= {"first_seq": first, "after_seq": last or (previous.after_seq if previous else 0), "players": len(rows)}
    season = storage.seasons.add(session, ladder.id, values | {"pull": data.pull}, rows)
    if data.pull > 0 and upto == end:  # the next season starts from ratings pulled back toward the start
        pull_back(session, ladder, upto, data.pull)
    elif data.pull > 0:  # and so do the games after its end, posted before it closed
        replay_log(session, ladder)
    storage.events.add(session, ladder.id, "season", {"action": "closed", "name": data.name, "pull": data.pull})
    storage.ladders.bump(session, [ladder.id])
    return season_out(season, [PodiumPlace(rank=r[0], key=r[1], name=r[2]) for r in rows[:PODIUM]])


#: Places on a season's podium.
PODIUM = 3


def season_out(season: Season, podium: list[PodiumPlace]) -> SeasonOut:
    return SeasonOut(
        champion=podium[0] if podium else None,
        podium=podium,
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
    podiums = storage.seasons.podiums(session, ladder.id, [s.id for s in seasons[:limit]], PODIUM)
    shown = {season: [PodiumPlace(rank=r, key=k, name=n) for r, k, n in rows] for season, rows in podiums.items()}
    return Page[SeasonOut].of(
        seasons, limit, lambda s: season_out(s, shown.get(s.id, [])), lambda s: encode_cursor(s.id)
    )


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
    podium = storage.seasons.podiums(session, ladder.id, [season.id], PODIUM).get(season.id, [])
    shown = season_out(season, [PodiumPlace(rank=r, key=k, name=n) for r, k, n in podium])
    return SeasonStandings(items=page.items, next_cursor=page.next_cursor, season=shown)
