"""What a ladder's moments are computed from: a range of its log with each game's members, each player's last
results up to a game, their first win, the games of a week, and the members of the latest games (to undo them
from the player table)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

import numpy as np
from sqlalchemy import select
from sqlalchemy.orm import Session

from app import rating
from app.storage import codec
from app.storage.sql import driver_fetchall
from app.storage.tables import Game, Ladder, Participant, Player

#: Players (or games) one statement reads at most.
PER_STATEMENT = 200


@dataclass
class Member:
    player_id: int
    key: str
    name: str | None
    side: int
    actual: float
    expected: float
    before: np.ndarray
    after: np.ndarray


@dataclass
class LogGame:
    id: int
    seq: int
    played_at: datetime
    voided: bool
    members: list[Member] = field(default_factory=list)


def games(session: Session, ladder_id: int, first: int, last: int, dim: int) -> list[LogGame]:
    """The ladder's games numbered ``first`` to ``last``, voided ones too, in log order, with their members."""
    query = select(Game.id, Game.seq, Game.played_at, Game.voided_at).where(
        Game.ladder_id == ladder_id, Game.seq >= first, Game.seq <= last
    )
    rows = session.execute(query.order_by(Game.id))
    found = [LogGame(i, s, p, v is not None) for i, s, p, v in rows if s is not None]  # (seq >= first: not NULL)
    by_id = {g.id: g for g in found}
    counted = [g.id for g in found if not g.voided]
    for lo in range(0, len(counted), PER_STATEMENT):
        chunk = counted[lo : lo + PER_STATEMENT]
        members = (
            select(
                Participant.game_id,
                Participant.player_id,
                Player.key,
                Player.name,
                Participant.side,
                Participant.actual_score,
                Participant.expected_score,
                Participant.before,
                Participant.after,
            )
            .join(Player, Player.id == Participant.player_id)
            .where(Participant.ladder_id == ladder_id, Participant.game_id.in_(chunk))
            .order_by(Participant.game_id, Participant.side, Player.key)
        )
        for game_id, player_id, key, name, side, actual, expected, before, after in session.execute(members):
            vectors = codec.unpack_rows([before, after], dim)
            member = Member(player_id, key, name, side, actual, expected, vectors[0], vectors[1])
            by_id[game_id].members.append(member)
    return found


def next_counted(session: Session, ladder_id: int, game_id: int) -> datetime | None:
    """When the first game that counts after game ``game_id`` in the log was played (None: none yet)."""
    query = select(Game.played_at).where(Game.ladder_id == ladder_id, Game.voided_at.is_(None), Game.id > game_id)
    return session.scalar(query.order_by(Game.id).limit(1))


#: One player's results up to a game, newest first: (game id, rank-share score); the games are joined (for their
#: void) only where the ladder has voided games.  Ordered as the (player_id, game_id) index is, so
#: that PostgreSQL walks that index, never the games' ids newest first (as it would before its statistics know
#: how many games each player has).
_HISTORY = (
    "SELECT * FROM (SELECT pa.player_id, pa.game_id, pa.actual_score "
    "FROM participants pa{join} WHERE pa.player_id = ? AND pa.ladder_id = ? AND pa.game_id <= ?{counted} "
    "ORDER BY pa.player_id DESC, pa.game_id DESC LIMIT ?) AS r"
)
#: The same for many players in one statement, on PostgreSQL.
_LATERAL = (
    "SELECT r.* FROM unnest(?::bigint[], ?::bigint[], ?::bigint[]) AS w(player_id, upto, n) CROSS JOIN LATERAL "
    "(SELECT pa.player_id, pa.game_id, pa.actual_score "
    "FROM participants pa{join} WHERE pa.player_id = w.player_id AND pa.ladder_id = ? AND pa.game_id <= w.upto"
    "{counted} ORDER BY pa.player_id DESC, pa.game_id DESC LIMIT w.n) AS r"
)
_COUNTED = (" JOIN games g ON g.id = pa.game_id AND g.ladder_id = pa.ladder_id", " AND g.voided_at IS NULL")
#: Each game's number of sides, once per game (asked per result, a game of 2,048 players was read 2,048 times over).
_SIDES = "SELECT game_id, max(side) + 1 FROM participants WHERE ladder_id = ? AND game_id IN ({}) GROUP BY game_id"


def histories(
    session: Session, ladder_id: int, wanted: list[tuple[int, int, int]]
) -> dict[int, list[tuple[int, float, int]]]:
    """For each (player id, game id, n) of ``wanted``: the player's last ``n`` games that count up to that game,
    newest first, as (game id, rank-share score, number of sides); one indexed look per player."""
    connection = session.connection()
    counts = session.execute(select(Ladder.games_count, Ladder.last_seq).where(Ladder.id == ladder_id)).first()
    join, counted = _COUNTED if counts is None or counts[0] != counts[1] else ("", "")
    if session.get_bind().dialect.name == "postgresql":  # one plan for every player, not one per player
        players, upto, n = ([w[i] for w in wanted] for i in range(3))
        sql = _LATERAL.format(join=join, counted=counted)
        rows = driver_fetchall(connection, sql, (players, upto, n, ladder_id))
    else:
        part, rows = _HISTORY.format(join=join, counted=counted), []
        for lo in range(0, len(wanted), PER_STATEMENT):
            chunk = wanted[lo : lo + PER_STATEMENT]
            params = tuple(v for player_id, upto, n in chunk for v in (player_id, ladder_id, upto, n))
            rows += driver_fetchall(connection, " UNION ALL ".join([part] * len(chunk)), params)
    sides = _sides(connection, ladder_id, {row[1] for row in rows})
    found: dict[int, list[tuple[int, float, int]]] = {player_id: [] for player_id, _, _ in wanted}
    for player_id, game_id, actual in rows:
        found[player_id].append((game_id, actual, sides[game_id]))
    for results in found.values():
        results.sort(reverse=True)
    return found


def _sides(connection, ladder_id: int, games: set[int]) -> dict[int, int]:
    """Each of the ``games``' number of sides."""
    ordered = sorted(games)
    sides: dict[int, int] = {}
    for lo in range(0, len(ordered), PER_STATEMENT):
        chunk = ordered[lo : lo + PER_STATEMENT]
        sides.update(driver_fetchall(connection, _SIDES.format(", ".join("?" * len(chunk))), (ladder_id, *chunk)))
    return sides


#: A player's games that count with a rank-share score above 0, after a game, oldest first: their first win, a
#: score above 1/N, is among them (:func:`first_wins` asks each game's N once, not once per result).
_MAY_WIN = (
    "SELECT * FROM (SELECT pa.player_id, pa.game_id, pa.actual_score FROM participants pa "
    "JOIN games g ON g.id = pa.game_id AND g.ladder_id = pa.ladder_id "
    "WHERE pa.player_id = ? AND pa.ladder_id = ? AND pa.game_id > ? AND g.voided_at IS NULL AND pa.actual_score > 0 "
    "ORDER BY pa.player_id, pa.game_id LIMIT ?) AS r"
)
#: How many of those are read per player at first; four times as many each time after.
MAY_WIN = 16


def first_wins(session: Session, ladder_id: int, player_ids: list[int]) -> dict[int, int]:
    """Each player's first win, as a game id (players without one are left out): their games with a score above 0
    read oldest first, :data:`MAY_WIN` at a time at first, until one is a win, with each game's number of sides
    asked once (asked per result, a game of 2,048 players was read 2,048 times over)."""
    found: dict[int, int] = {}
    connection = session.connection()
    after, size = dict.fromkeys(player_ids, 0), MAY_WIN
    while after:
        pending, rows = list(after), []
        for lo in range(0, len(pending), PER_STATEMENT):
            chunk = pending[lo : lo + PER_STATEMENT]
            params = tuple(v for p in chunk for v in (p, ladder_id, after[p], size))
            rows += driver_fetchall(connection, " UNION ALL ".join([_MAY_WIN] * len(chunk)), params)
        sides = _sides(connection, ladder_id, {row[1] for row in rows})
        read: dict[int, int] = {}
        for player_id, game_id, actual in sorted(rows):
            read[player_id] = read.get(player_id, 0) + 1
            after[player_id] = game_id
            if player_id not in found and rating.results(actual, sides[game_id]) > 0:
                found[player_id] = game_id
        after = {p: last for p, last in after.items() if p not in found and read.get(p, 0) == size}
        size *= 4
    return found


def week_members(
    session: Session, ladder_id: int, upto: int, start: datetime, end: datetime, last_games: int, dim: int
) -> list[tuple[str, str | None, np.ndarray, float | None]]:
    """(key, name, after - before, the change as posted or None) of every member of the games that count played in
    [start, end) among the log's last ``last_games`` games that count up to game ``upto``."""
    recent = (
        select(Game.id, Game.played_at)
        .where(Game.ladder_id == ladder_id, Game.voided_at.is_(None), Game.id <= upto)
        .order_by(Game.id.desc())
        .limit(last_games)
        .subquery()
    )
    query = (
        select(Player.key, Player.name, Participant.before, Participant.after, Participant.elo_change)
        .join(recent, recent.c.id == Participant.game_id)
        .join(Player, Player.id == Participant.player_id)
        .where(Participant.ladder_id == ladder_id, recent.c.played_at >= start, recent.c.played_at < end)
    )
    rows = session.execute(query).all()
    if not rows:
        return []
    before = codec.unpack_rows([r[2] for r in rows], dim)
    after = codec.unpack_rows([r[3] for r in rows], dim)
    return [(r[0], r[1], after[n] - before[n], r[4]) for n, r in enumerate(rows)]


def window_start(session: Session, ladder_id: int, games: int) -> int:
    """The id of the oldest of the ladder's latest ``games`` games that count (0: it has fewer)."""
    query = select(Game.id).where(Game.ladder_id == ladder_id, Game.voided_at.is_(None))
    return session.scalar(query.order_by(Game.id.desc()).offset(games - 1).limit(1)) or 0


_SINCE = (
    "SELECT p.game_id, p.player_id, p.side, p.actual_score, p.before FROM participants p "
    "JOIN games g ON g.id = p.game_id AND g.ladder_id = p.ladder_id "
    "WHERE g.ladder_id = ? AND g.voided_at IS NULL AND g.id >= ? ORDER BY p.game_id DESC"
)


def members_since(session: Session, ladder_id: int, first: int) -> list[tuple[int, int, int, float, bytes]]:
    """(game id, player id, side, rank-share score, vector before) of the members of every game that counts from
    game ``first`` on, the newest game first."""
    return driver_fetchall(session.connection(), _SINCE, (ladder_id, first))


def last_number(session: Session, ladder_id: int) -> int:
    """The number of the ladder's latest game (0: none)."""
    return session.scalar(select(Ladder.last_seq).where(Ladder.id == ladder_id)) or 0
