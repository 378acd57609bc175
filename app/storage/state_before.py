"""Players' stored state just before a given game of theirs: where a replay from the middle of the log starts.

A replay from a game on (a void, a merge, the tail after a refit) starts each player it reaches from the vector
after their previous counted game (kept on the membership), else the latest checkpoint's, else their initial
one; with the experience and the latest game time the per-game step needs (:mod:`app.rating.experience`)."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
from sqlalchemy.orm import Session

from app.core.ladder import LadderRow
from app.rating.experience import experience_before_cutoffs
from app.storage import codec, refits, seasons
from app.storage.players import MAX_KEYS_IN_QUERY
from app.storage.sql import driver_chunks, driver_fetchall

#: More players than this are read by one scan of the ladder in id order (or of its games), fewer by key.
SCAN_PLAYERS = 10_000


def state_before(
    session: Session,
    ladder: LadderRow,
    player_ids: np.ndarray,
    initial: list[bytes],
    cutoffs: list[int],
    left_out: int = -1,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The vectors, games played (experience) and latest game times of ``player_ids`` (sorted) just before their
    game ``cutoffs``, as a replay of the log from the latest checkpoint gives them: the vector after a player's
    latest counted game since the checkpoint, else the checkpoint's, else the initial one.  Under the variance
    rule (mathematics §3b) the second array is their variances, kept the same way (NaN: none yet).  The game
    ``left_out`` counts as voided (one about to be: its replay is prepared before the void commits)."""
    dim = 2 * ladder.k
    start = codec.unpack_rows(initial, dim)
    games = np.zeros(len(player_ids))
    variance = np.full(len(player_ids), np.nan)
    checkpoint = refits.latest_checkpoint(session, ladder.id)
    after = 0 if checkpoint is None else from_checkpoint(start, player_ids, checkpoint, dim, variance)
    latest = (
        "WITH c(player_id, cutoff) AS (VALUES {}) "
        "SELECT player_id, game_id, n, after, variance_after FROM ("
        " SELECT p.player_id, p.game_id, p.after, p.variance_after, count(*) OVER (PARTITION BY p.player_id) AS n,"
        "  row_number() OVER (PARTITION BY p.player_id ORDER BY p.game_id DESC) AS r"
        " FROM c JOIN participants p ON p.player_id = c.player_id AND p.game_id < c.cutoff"
        " JOIN games g ON g.id = p.game_id AND g.ladder_id = p.ladder_id"
        " WHERE p.ladder_id = ? AND g.voided_at IS NULL AND g.id <> ?"
        ") AS t WHERE r = 1"
    )
    pairs = list(zip(player_ids.tolist(), cutoffs, strict=True))
    for lo in range(0, len(pairs), MAX_KEYS_IN_QUERY):
        part = pairs[lo : lo + MAX_KEYS_IN_QUERY]
        sql = latest.format(", ".join(["(?, ?)"] * len(part)))
        params = (*(v for pair in part for v in pair), ladder.id, left_out)
        for player_id, last_game, n, vector, kept in driver_fetchall(session.connection(), sql, params):
            row = np.searchsorted(player_ids, player_id)
            games[row] = n
            if last_game > after:
                start[row] = codec.unpack(vector)
                variance[row] = np.nan if kept is None else kept
    last = np.full(len(player_ids), np.nan)
    if ladder.variance_rule:
        if ladder.step_drift() > 0:  # the time away the next step adds: from their latest game's time
            last = experience_before(session, ladder, player_ids, np.array(cutoffs, dtype=np.int64), left_out)[1]
        return start, variance, last
    if ladder.step_drift() > 0:
        games, last = experience_before(session, ladder, player_ids, np.array(cutoffs, dtype=np.int64), left_out)
    elif seasons.pulls(session, ladder.id):
        games = experience_before(session, ladder, player_ids, np.array(cutoffs, dtype=np.int64), left_out)[0]
    return start, games, last


def experience_before(
    session: Session, ladder: LadderRow, player_ids: np.ndarray, cutoffs: np.ndarray, left_out: int = -1
) -> tuple[np.ndarray, np.ndarray]:
    """The experience (:mod:`app.rating.experience`) and latest game time (years, NaN: none) of ``player_ids``
    (sorted) just before their game ``cutoffs``: their counted games before it, in log order, worn by the
    ladder's drift, and kept the part 1 - p by each season that closed with a pull p before it
    (:mod:`app.rating.season_pull`).  Many players are read by one scan of the ladder's games up to the last cutoff;
    the rows are taken a chunk at a time, and :func:`app.rating.experience.experience_before_cutoffs` carries
    each chunk on from the state the one before left.  ``left_out`` counts as voided, as in :func:`state_before`."""
    # PostgreSQL gives each time as the microseconds of its whole second (the steps count days): a number, not a
    # datetime object to convert in Python.
    postgresql = session.get_bind().dialect.name == "postgresql"
    played = "FLOOR(EXTRACT(EPOCH FROM g.played_at))::bigint * 1000000" if postgresql else "g.played_at"
    base = (
        f"SELECT p.player_id, p.game_id, {played} FROM participants p "
        "{join} games g ON g.id = p.game_id AND g.ladder_id = p.ladder_id "
        "WHERE g.ladder_id = ? AND g.voided_at IS NULL AND g.id < ? AND g.id <> ?{} ORDER BY p.game_id"
    )
    top = int(cutoffs.max()) if len(cutoffs) else 0
    pulls = seasons.pulls(session, ladder.id)
    if len(player_ids) > SCAN_PLAYERS or pulls:  # the seasons' pulls are taken in one pass over the log
        reads = [(base.format("", join="JOIN"), (ladder.id, top, left_out))]
    else:
        # SQLite's CROSS JOIN keeps the listed players' participants the outer loop (through their index): left to
        # itself the planner probes every game for every player listed.
        join = "JOIN" if postgresql else "CROSS JOIN"
        reads = []
        for lo in range(0, len(player_ids), MAX_KEYS_IN_QUERY):
            part = player_ids[lo : lo + MAX_KEYS_IN_QUERY].tolist()
            listed = f" AND p.player_id IN ({', '.join('?' * len(part))})"
            reads.append((base.format(listed, join=join), (ladder.id, top, left_out, *part)))
    stamp = codec.time_converter(session.get_bind().dialect)

    def memberships() -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        for sql, parameters in reads:
            for rows in driver_chunks(session.connection(), sql, parameters, 100_000):
                player = np.fromiter((r[0] for r in rows), np.int64, len(rows))
                game = np.fromiter((r[1] for r in rows), np.int64, len(rows))
                if postgresql:
                    when = codec.day_years(np.fromiter((r[2] for r in rows), np.int64, len(rows)))
                else:
                    when = codec.day_years(codec.micros_column([r[2] for r in rows], stamp))
                yield player, game, when

    return experience_before_cutoffs(memberships(), player_ids, cutoffs, ladder.step_drift(), pulls)


def from_checkpoint(
    start: np.ndarray, player_ids: np.ndarray, checkpoint, dim: int, variance: np.ndarray | None = None
) -> int:
    """Put the checkpoint's vectors in the rows of ``start`` of the players (sorted ``player_ids``) it holds (and
    its variances in those of ``variance``, if given and it kept some); players it holds that are gone (merged
    away) are skipped.  The game it follows."""
    held = codec.unpack_ids(checkpoint.player_ids)
    vectors = codec.unpack_matrix(checkpoint.vectors, dim)
    mine = np.isin(held, player_ids)
    rows = np.searchsorted(player_ids, held[mine])
    start[rows] = vectors[mine]
    if variance is not None and getattr(checkpoint, "variances", None) is not None:
        variance[rows] = codec.unpack(checkpoint.variances)[mine]
    return checkpoint.after_game_id
