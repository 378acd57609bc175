"""Closed seasons (``seasons``) and their archived standings (``season_standings``)."""

from __future__ import annotations

from bisect import bisect_left
from datetime import datetime

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from app.storage.sql import bulk_insert
from app.storage.tables import Game, Ladder, Season, SeasonStanding

#: The columns of a standings row, in the order :func:`add` takes them.
STANDING: tuple[str, ...] = ("rank", "key", "name", "elo", "strength_se", "conservative", "provisional", "games")
STANDING += ("wins", "draws", "losses")


def named(session: Session, ladder_id: int, name: str) -> Season | None:
    return session.scalar(select(Season).where(Season.ladder_id == ladder_id, Season.name == name))


def latest(session: Session, ladder_id: int) -> Season | None:
    """The season closed last (its boundary is where the next one starts)."""
    query = select(Season).where(Season.ladder_id == ladder_id).order_by(Season.after_game_id.desc(), Season.id.desc())
    return session.scalar(query.limit(1))


def add(session: Session, ladder_id: int, values: dict, standings: list[tuple]) -> Season:
    """A closed season (``values``: its columns) and its standings rows (tuples of :data:`STANDING`)."""
    season = Season(ladder_id=ladder_id, **values)
    session.add(season)
    session.flush()
    if standings:
        # Column by column in Python loops (one zip over a large season would hold the interpreter).
        columns: dict[str, list] = {name: [row[n] for row in standings] for n, name in enumerate(STANDING)}
        columns |= {"ladder_id": [ladder_id] * len(standings), "season_id": [season.id] * len(standings)}
        bulk_insert(session.connection(), SeasonStanding.__table__, columns)
    return season


def pulls(session: Session, ladder_id: int, after: int = -1) -> list[tuple[int, float]]:
    """(boundary game id, pull) of the ladder's seasons that pulled the ratings back, with a boundary after game
    ``after``, in log order."""
    query = select(Season.after_game_id, Season.pull).where(
        Season.ladder_id == ladder_id, Season.pull > 0, Season.after_game_id > after
    )
    return [(int(b), float(p)) for b, p in session.execute(query.order_by(Season.after_game_id, Season.id))]


def pulls_by_boundary(session: Session, ladder_id: int, after: int = -1) -> dict[int, list[float]]:
    """:func:`pulls`, by boundary (two seasons may close after the same game), in log order."""
    found: dict[int, list[float]] = {}
    for boundary, pull in pulls(session, ladder_id, after):
        found.setdefault(boundary, []).append(pull)
    return found


def page_of_seasons(session: Session, ladder_id: int, limit: int | None, before: int | None) -> list[Season]:
    """Up to ``limit`` seasons, the latest closed first, before the season id ``before``."""
    query = select(Season).where(Season.ladder_id == ladder_id)
    if before is not None:
        query = query.where(Season.id < before)
    return list(session.scalars(query.order_by(Season.id.desc()).limit(limit)))


def standings(session: Session, ladder_id: int, season_id: int, after_rank: int, limit: int | None) -> list[tuple]:
    """Up to ``limit`` standings rows of the ladder's season after rank ``after_rank``, as tuples of
    :data:`STANDING`."""
    columns = [getattr(SeasonStanding, name) for name in STANDING]
    which = (SeasonStanding.ladder_id == ladder_id, SeasonStanding.season_id == season_id)
    query = select(*columns).where(*which, SeasonStanding.rank > after_rank)
    return [tuple(row) for row in session.execute(query.order_by(SeasonStanding.rank).limit(limit))]


def podiums(session: Session, ladder_id: int, season_ids: list[int], places: int) -> dict[int, list[tuple]]:
    """The first ``places`` rows (rank, key, name) of each of the ladder's seasons ``season_ids`` standings, by
    rank."""
    if not season_ids:
        return {}
    query = select(SeasonStanding.season_id, SeasonStanding.rank, SeasonStanding.key, SeasonStanding.name).where(
        SeasonStanding.ladder_id == ladder_id,
        SeasonStanding.season_id.in_(season_ids),
        SeasonStanding.rank <= places,
    )
    found: dict[int, list[tuple]] = {}
    for season_id, rank, key, name in session.execute(query.order_by(SeasonStanding.season_id, SeasonStanding.rank)):
        found.setdefault(season_id, []).append((rank, key, name))
    return found


def mark_changed(session: Session, ladder_id: int, game_ids: list[int], now: datetime) -> int:
    """Note, on each closed season of the ladder that counts one of the games ``game_ids`` (voided, or merged
    into another player), that a change reached its games after it closed: its standings stay as archived.
    How many seasons were reached."""
    rows = session.execute(
        select(Season.id, Season.after_game_id)
        .where(Season.ladder_id == ladder_id)
        .order_by(Season.after_game_id, Season.id)
    ).all()
    boundaries = [after for _, after in rows]
    reached = {rows[at][0] for at in {bisect_left(boundaries, game) for game in game_ids} if at < len(rows)}
    if not reached:
        return 0
    query = update(Season).where(Season.ladder_id == ladder_id, Season.id.in_(reached), Season.changed_at.is_(None))
    query = query.values(changed_at=now)
    session.execute(query)
    return len(reached)


def games_between(session: Session, ladder_id: int, after: int, upto: int) -> tuple[int, int | None, int | None]:
    """(games that count, the first one's and the last one's seq) in the log after game ``after`` up to ``upto``."""
    query = select(func.count(), func.min(Game.seq), func.max(Game.seq)).where(
        Game.ladder_id == ladder_id, Game.voided_at.is_(None), Game.id > after, Game.id <= upto
    )
    count, first, last = session.execute(query).one()
    return count, first, last


def game_of_seq(session: Session, ladder_id: int, seq: int) -> int:
    """The id of the ladder's game numbered ``seq`` (0 for 0: before the first game)."""
    if seq == 0:
        return 0
    return session.scalar(select(Game.id).where(Game.ladder_id == ladder_id, Game.seq == seq)) or 0


def scrub(session: Session, ladder_id: int, keys: list[str], pseudonym: str) -> None:
    """An erased player's rows in the archived standings: their key (or a former one) becomes the pseudonym, and
    their name goes."""
    query = update(SeasonStanding).where(SeasonStanding.ladder_id == ladder_id, SeasonStanding.key.in_(keys))
    session.execute(query.values(key=pseudonym, name=None))


def due_ladders(session: Session, now: datetime) -> list[int]:
    """The ids of the ladders whose next automatic close (``season_due``) has come by ``now``, in id order."""
    query = select(Ladder.id).where(
        Ladder.deleted_at.is_(None), Ladder.season_every.is_not(None), Ladder.season_due <= now
    )
    return list(session.scalars(query.order_by(Ladder.id)))


def schedule(session: Session, ladder_id: int) -> tuple[str | None, float, datetime | None] | None:
    """The ladder's (``season_every``, ``season_pull``, ``season_due``); None if it was deleted."""
    row = session.execute(
        select(Ladder.season_every, Ladder.season_pull, Ladder.season_due).where(
            Ladder.id == ladder_id, Ladder.deleted_at.is_(None)
        )
    ).first()
    return None if row is None else (row.season_every, row.season_pull, row.season_due)


def set_due(session: Session, ladder_id: int, due: datetime) -> None:
    """Move the ladder's next automatic close to ``due``."""
    session.execute(update(Ladder).where(Ladder.id == ladder_id).values(season_due=due))


def played_in(session: Session, ladder_id: int, start: datetime, end: datetime) -> bool:
    """Whether a game that counts was played in [start, end)."""
    query = select(Game.id).where(
        Game.ladder_id == ladder_id, Game.voided_at.is_(None), Game.played_at >= start, Game.played_at < end
    )
    return session.scalar(query.limit(1)) is not None
