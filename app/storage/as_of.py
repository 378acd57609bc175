"""A ladder's players as they stood after an earlier game of its log: what ``as_of`` reads.

No replay is needed: every membership stores its player's vector after the
game, exactly as a replay of the log gives it (``/audit`` checks that), and
an applied refit's checkpoint holds the vectors it set.  So a player's vector
after game G is their vector after their last game in (checkpoint, G], else
that of the checkpoint the ratings went through last by G, else their initial
one; their record is counted over their games up to G.  The cost is one pass over the
memberships up to G, and a lookup of each player's last one.
"""

from __future__ import annotations

from datetime import datetime

import numpy as np
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from app import rating
from app.core.ladder import LadderRow
from app.storage import cache, codec, read_model, refits, seasons, state_before
from app.storage.codec import NO_TIME
from app.storage.read_model import Table
from app.storage.sql import driver_chunks, driver_fetchall
from app.storage.tables import Game, Refit

#: Past tables this process keeps (the most recently read).
MAX_PAST = 8


def last_game_before(session: Session, ladder_id: int, moment: datetime) -> int | None:
    """The id of the last game of the longest start of the log (the games that count) played before ``moment``:
    the game before the first one played at or after it; None if there is none.  A log in time order is cut
    after its last game played before ``moment``; a game posted late with an earlier date counts only once
    every game before it in the log was played before ``moment`` too."""
    counted = (Game.ladder_id == ladder_id, Game.voided_at.is_(None))
    first_after = session.scalar(select(func.min(Game.id)).where(*counted, Game.played_at >= moment))
    query = select(Game.id).where(*counted)
    if first_after is not None:
        query = query.where(Game.id < first_after)
    return session.scalar(query.order_by(Game.id.desc()).limit(1))


def last_game(session: Session, ladder_id: int) -> int | None:
    """The id of the newest game of the log that counts."""
    query = select(Game.id).where(Game.ladder_id == ladder_id, Game.voided_at.is_(None))
    return session.scalar(query.order_by(Game.id.desc()).limit(1))


def table_after(
    session: Session,
    ladder: LadderRow,
    now: Table,
    game_id: int | None,
    moment: datetime,
    as_of: str,
    newest: bool = False,
) -> Table:
    """The players as they stood after game ``game_id`` (None: before any game; ``newest``: the newest game, so
    as they stand now), at ``now``'s version: those who had played by then or were created before ``moment``,
    with names and flags as they are now.  Its leaderboard cursors name ``as_of``."""
    held = cache.of(session.get_bind(), "past tables")
    key = (ladder.id, now.version, game_id, moment)
    found = held.pop(key, None)
    if found is None:
        found = _today(now, moment) if newest else _table_after(session, ladder, now, game_id, moment)
        found.as_of = as_of
        while len(held) >= MAX_PAST:
            held.pop(next(iter(held)))  # the least recently read
    held[key] = found
    return found


def _today(now: Table, moment: datetime) -> Table:
    """``now`` without the players created after ``moment`` who have not played since."""
    rows = np.flatnonzero((now.counts[:, 0] > 0) | (now.created < codec.micros(moment)))
    columns = {name: getattr(now, name)[rows] for name in read_model.COLUMNS}
    return Table(version=now.version, placement=now.placement, **columns)


def _table_after(session: Session, ladder: LadderRow, now: Table, game_id: int | None, moment: datetime) -> Table:
    n, dim = len(now.ids), 2 * ladder.k
    # Every player's initial vector, placed by id (``now`` may hold players a snapshot read later does not).
    initial = driver_fetchall(session.connection(), "SELECT id, initial FROM players WHERE ladder_id = ?", (ladder.id,))
    at = np.searchsorted(now.ids, np.array([r[0] for r in initial], dtype=np.int64))
    mine = at < n
    mine[mine] = now.ids[at[mine]] == np.array([r[0] for r in initial], dtype=np.int64)[mine]
    C = np.zeros((n, dim))
    C[at[mine]] = codec.unpack_rows((r[1] for r, keep in zip(initial, mine.tolist(), strict=True) if keep), dim)
    counts = np.zeros((n, 5), dtype=np.int64)
    last_played = np.full(n, NO_TIME, dtype=np.int64)
    variance = np.full(n, np.nan)  # under the variance rule: after each player's last game by then (§3b)
    placement = refits.Placement()
    if game_id is not None:
        # The checkpoint the ratings went through last by then (one later in the log but applied before an
        # earlier one was replaced by it: the log was replayed from the one applied later).
        went_through = [c for c in refits.replayed_checkpoints(session, ladder.id) if c.after_game_id <= game_id]
        checkpoint = went_through[-1] if went_through else None
        since = 0
        if checkpoint is not None:
            since = state_before.from_checkpoint(C, now.ids, checkpoint, dim, variance)
            refitted = [c for c in went_through if c.refit_id is not None]  # not a season's pull
            if refitted:
                row = session.execute(
                    select(Refit.not_comparable_ids, Refit.outside_field_ids).where(
                        Refit.id == refitted[-1].refit_id, Refit.ladder_id == ladder.id
                    )
                ).first()
                if row is not None:
                    placement = refits.Placement(codec.unpack_ids(row[0] or b""), codec.unpack_ids(row[1] or b""))
        last = _records(session, ladder.id, now.ids, game_id, counts, last_played)
        _vectors_after(session, ladder.id, now.ids, np.where(last > since, last, 0), C, dim, variance)
    experience = counts[:, 0].astype(np.float64)
    if (
        game_id is not None
        and not ladder.variance_rule
        and (ladder.step_drift() > 0 or seasons.pulls(session, ladder.id))
    ):
        # worn by the breaks before then, and kept in part by the seasons that pulled the ratings back
        experience = state_before.experience_before(session, ladder, now.ids, np.full(n, game_id + 1, dtype=np.int64))[
            0
        ]
    keep = (counts[:, 0] > 0) | (now.created < codec.micros(moment))
    rows = np.flatnonzero(keep)
    return Table(
        version=now.version,
        ids=now.ids[rows],
        keys=now.keys[rows],
        names=now.names[rows],
        C=C[rows],
        counts=counts[rows],
        last_played=last_played[rows],
        created=now.created[rows],
        active=now.active[rows],
        strength_then=np.full(len(rows), np.nan),
        experience=experience[rows],
        variance=variance[rows],
        placement=placement,
    )


#: The counted games' memberships in a range of the log (with when each was played, on SQLite: its text times
#: convert at once), one pass over them; on PostgreSQL each player's latest time is the database's to find (its
#: times arrive as objects, each converted on its own).
_MEMBERSHIPS = (
    "SELECT p.player_id, p.game_id, p.side, p.actual_score{times} FROM participants p "
    "JOIN games g ON g.id = p.game_id AND g.ladder_id = p.ladder_id "
    "WHERE g.ladder_id = ? AND g.voided_at IS NULL AND g.id > ? AND g.id <= ?"
)
_LAST_PLAYED = (
    "SELECT p.player_id, MAX(g.played_at) FROM participants p "
    "JOIN games g ON g.id = p.game_id AND g.ladder_id = p.ladder_id "
    "WHERE g.ladder_id = ? AND g.voided_at IS NULL AND g.id > ? AND g.id <= ? GROUP BY p.player_id"
)
#: Memberships read per chunk; vectors looked up a chunk of games at a time.
CHUNK = 50_000
PAIRS = 500


def records(session: Session, ladder_id: int, ids: np.ndarray, after: int, upto: int) -> np.ndarray:
    """Each player's (``ids``, sorted) record (COUNTERS) over the games after game ``after`` up to ``upto``."""
    counts = np.zeros((len(ids), 5), dtype=np.int64)
    _records(session, ladder_id, ids, upto, counts, np.full(len(ids), NO_TIME, dtype=np.int64), after)
    return counts


def _records(
    session: Session,
    ladder_id: int,
    ids: np.ndarray,
    game_id: int,
    counts: np.ndarray,
    last_played: np.ndarray,
    after: int = 0,
) -> np.ndarray:
    """Into ``counts`` (COUNTERS, as a game commit counts them: :func:`app.rating.record`) and ``last_played``:
    each player's record over the games after ``after`` up to ``game_id``; each player's last game (0: none)."""
    dialect = session.get_bind().dialect
    stamp, in_scan = codec.time_converter(dialect), dialect.name == "sqlite"
    sql, span = _MEMBERSHIPS.format(times=", g.played_at" if in_scan else ""), (ladder_id, after, game_id)
    player, game, side, actual, when = [], [], [], [], []
    for rows in driver_chunks(session.connection(), sql, span, CHUNK):
        # Column by column in Python loops, not zip(*rows): one C call over a chunk would hold the interpreter
        # (and every other thread, the event loop's among them).
        player.append(np.array([r[0] for r in rows], dtype=np.int64))
        game.append(np.array([r[1] for r in rows], dtype=np.int64))
        side.append(np.array([r[2] for r in rows], dtype=np.int64))
        actual.append(np.array([r[3] for r in rows], dtype=np.float64))
        if in_scan:
            when.append(codec.micros_column([r[4] for r in rows], stamp))
    last = np.zeros(len(ids), dtype=np.int64)
    if not player:
        return last
    games = np.concatenate(game)
    # Each game's number of sides, indexed by id from the first one read (a sort of every membership would hold
    # the interpreter too).
    lo = int(games.min())
    n_sides = np.zeros(int(games.max()) - lo + 1, dtype=np.int16)
    np.maximum.at(n_sides, games - lo, (np.concatenate(side) + 1).astype(np.int16))
    row = np.searchsorted(ids, np.concatenate(player))
    record = rating.record(np.concatenate(actual), n_sides[games - lo])
    for column in range(record.shape[1]):
        counts[:, column] = np.bincount(row, weights=record[:, column], minlength=len(ids)).astype(np.int64)
    if in_scan:
        np.maximum.at(last_played, row, np.concatenate(when))
    else:
        found = driver_fetchall(session.connection(), _LAST_PLAYED, span)
        at = np.searchsorted(ids, np.array([r[0] for r in found], dtype=np.int64))
        last_played[at] = codec.micros_column([r[1] for r in found], stamp)
    np.maximum.at(last, row, games)
    return last


def _vectors_after(
    session: Session,
    ladder_id: int,
    ids: np.ndarray,
    games: np.ndarray,
    C: np.ndarray,
    dim: int,
    variance: np.ndarray | None = None,
) -> None:
    """Into ``C``: the vector of each of the ladder's players ``ids[n]`` after their game ``games[n]`` (those with
    ``games`` > 0), read by game (the memberships' primary key) a chunk of games at a time; and into ``variance``,
    if given, their variance after it (mathematics §3b; NaN where none was kept)."""
    rows = np.flatnonzero(games > 0)
    connection = session.connection()
    for lo in range(0, len(rows), PAIRS):
        part = rows[lo : lo + PAIRS]
        wanted = np.unique(games[part])
        marks = ", ".join(["?"] * len(wanted))
        sql = (
            "SELECT game_id, player_id, after, variance_after FROM participants "
            f"WHERE ladder_id = ? AND game_id IN ({marks})"
        )
        found = driver_fetchall(connection, sql, (ladder_id, *(int(g) for g in wanted)))
        player = np.array([r[1] for r in found], dtype=np.int64)
        at = np.searchsorted(ids, player)
        mine = games[at] == np.array([r[0] for r in found], dtype=np.int64)  # that player's last game, not a partner's
        C[at[mine]] = codec.unpack_rows((r[2] for r, keep in zip(found, mine, strict=True) if keep), dim)
        if variance is not None:
            kept = [np.nan if r[3] is None else r[3] for r, keep in zip(found, mine, strict=True) if keep]
            variance[at[mine]] = np.array(kept, dtype=np.float64)
