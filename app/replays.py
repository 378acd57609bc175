"""Replaying the log after it changed below its end (an applied refit, a voided game, merged players),
shared by the domains.

After a change at one game (a void, a merge), only what the change can reach
is replayed: the games from the changed one on that share a player with it,
directly or through earlier such games, each reached player starting from its
stored state just before its first such game (the vector after its previous
game, or the latest checkpoint that still holds).  Every other game and rating
is untouched by the change, so the result equals, bit for bit, a replay of the
whole log, and undoing the latest game costs a few rows, not the log.  Every
membership of a replayed game gets its new vectors and expected score, so the
history, ``/audit`` and the ratings agree again.

The caller holds :func:`app.storage.players.lock_all` (every player row, then
the ladder's row) from before it reads anything of the log: no game commits
between what a replay reads and what it writes, not even a game between players
new to the ladder, which waits for the ladder's row before it reads the seats.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from sqlalchemy.orm import Session

from app import rating, storage
from app.models import Checkpoint
from app.storage.ladders import LadderRow
from app.storage.log import LadderLog, Tail
from app.storage.sql import driver_fetchall


def replay_from(
    session: Session,
    ladder: LadderRow,
    first_game_id: int,
    changed: Sequence[str],
    changed_seats: dict[str, list[float]] | None = None,
) -> int:
    """Replay the games from ``first_game_id`` on that the players ``changed`` (and the seats ``changed_seats``,
    from the state given) reach, rewrite their history and the reached players' vectors and seats; the number of
    games replayed."""
    tail = storage.log.read_tail(session, ladder, first_game_id, changed, changed_seats)
    return _replay(session, ladder, tail)


def replay_log(session: Session, ladder: LadderRow) -> int:
    """Replay every game after the latest checkpoint (one just applied), rewrite their history and every
    player's vector; the number of games replayed.  A season that closed with a pull after that checkpoint
    (:func:`pull_back`) pulls the ratings again where it closed, and checkpoints them there."""
    replayed = 0
    latest = storage.refits.latest_checkpoint(session, ladder.id)
    pulls = storage.seasons.pulls_by_boundary(session, ladder.id, latest.after_game_id if latest else -1)
    for boundary, parts in pulls.items():
        part = storage.log.read(session, ladder, upto=boundary)
        _write(session, ladder, part, _history(ladder, part))
        for pull in parts:
            pull_back(session, ladder, boundary, pull)
        replayed += part.log.n_games
    return replayed + _replay(session, ladder, storage.log.read(session, ladder))


def pull_back(session: Session, ladder: LadderRow, boundary: int, pull: float) -> None:
    """Pull every player's stored vector the part ``pull`` back to their initial one, and keep the part 1 - pull
    of their experience (:mod:`app.rating.seasons`), after game ``boundary`` (the log's end: the ratings stored
    are those after it), and checkpoint the vectors there: a replay from the checkpoint starts from them, and a
    void before it, which sets it aside, pulls them again (:func:`replay_log`)."""
    sql = "SELECT id, initial, vector, experience FROM players WHERE ladder_id = ? ORDER BY id"
    rows = driver_fetchall(session.connection(), sql, (ladder.id,))
    dim = 2 * ladder.k
    ids = np.array([row[0] for row in rows], dtype=np.int64)
    C0 = storage.codec.unpack_rows((row[1] for row in rows), dim)
    C = rating.pull_back(storage.codec.unpack_rows((row[2] for row in rows), dim), C0, pull)
    experience = rating.pull_experience(np.array([row[3] for row in rows], dtype=np.float64), pull)
    seats = storage.ladders.seat_state(session, ladder)
    held = None if seats is None else storage.ladders.seats_to_json(seats)
    packed = storage.codec.pack_ids(ids), storage.codec.pack(C)
    storage.refits.insert_checkpoint(session, ladder.id, boundary, *packed, refit_id=None, seat_state=held)
    storage.players.save_vectors(session, ladder.id, ids, C, experience)
    storage.ladders.recount_field(session, ladder)


@dataclass
class Prepared:
    """The log replayed from a checkpoint not applied yet, up to its newest game (``part.last_game_id``), in a
    read snapshot outside the writer's locks (:func:`prepare`), for :func:`replay_prepared` to finish."""

    checkpoint: Checkpoint
    part: LadderLog
    history: rating.History
    #: What the replay depended on beyond the games: a change of one (a merge, k, the learning rate, the seats,
    #: how keys match) makes it stale.
    marks: tuple
    #: The games up to ``part.last_game_id`` (all, and those that count): a late commit or a void below it
    #: changes them.
    games: tuple[int, int]


def prepare(session: Session, ladder_id: int, checkpoint: Checkpoint) -> Prepared | None:
    """Replay the log from ``checkpoint`` (not stored yet) in a read snapshot (``session``), holding no lock;
    None if the ladder is gone or its k is not the checkpoint's."""
    ladder = storage.ladders.by_id(session, ladder_id)
    held = len(storage.codec.unpack_ids(checkpoint.player_ids))
    if ladder is None or len(checkpoint.vectors) != 8 * 2 * ladder.k * held:
        return None
    part = storage.log.read(session, ladder, checkpoint=checkpoint)
    games = storage.games.log_counts(session, ladder.id, part.last_game_id)
    return Prepared(checkpoint, part, _history(ladder, part), _marks(ladder), games)


def replay_prepared(session: Session, ladder: LadderRow, prepared: Prepared) -> int | None:
    """Write a :func:`prepared <prepare>` replay under :func:`app.storage.players.lock_all`, with the games
    committed since replayed on top (a few: the writer is held for the writes, not for reading and replaying
    the log); the number of games replayed, or None if it is stale (the caller replays the log as it is).

    Replaying the log in two parts applies every game to the same vectors, games counts and seats as one
    replay does, so the ratings are the same bit for bit (``/audit`` checks it).
    """
    part, history = prepared.part, prepared.history
    if _marks(ladder) != prepared.marks or storage.games.log_counts(session, ladder.id, part.last_game_id) != (
        prepared.games
    ):
        return None
    if storage.seasons.pulls(session, ladder.id, prepared.checkpoint.after_game_id):
        return None  # a season closed since with a pull: the log is replayed through it
    since = storage.log.read_since(
        session,
        ladder,
        part.last_game_id,
        part.player_ids,
        history.C,
        history.experience,
        history.latest,
        history.seats,
    )
    _write(session, ladder, part, history)
    replayed = part.log.n_games
    if since.log.n_games:
        _write(session, ladder, since, _history(ladder, since))
        replayed += since.log.n_games
    storage.ladders.recount_field(session, ladder)
    return replayed


def _marks(ladder: LadderRow) -> tuple:
    rate = (ladder.eta, ladder.eta_tau, ladder.step_drift())
    return (ladder.reset_version, ladder.k, *rate, ladder.seats, ladder.case_insensitive_keys)


def _replay(session: Session, ladder: LadderRow, part: Tail | LadderLog) -> int:
    _write(session, ladder, part, _history(ladder, part))
    storage.ladders.recount_field(session, ladder)
    return part.log.n_games


def _history(ladder: LadderRow, part: Tail | LadderLog) -> rating.History:
    rate = ladder.learning_rate()
    return rating.replay_history(
        part.start, part.log, rate, games0=part.start_games, seats=part.start_seats, times=part.times
    )


def _write(session: Session, ladder: LadderRow, part: Tail | LadderLog, history: rating.History) -> None:
    """Store a replay: the vectors of its players, the seats, and its games' history."""
    storage.players.save_vectors(session, ladder.id, part.player_ids, history.C, history.experience)
    if part.start_seats is not None:
        storage.ladders.save_seat_state(session, ladder.id, history.seats)
        states = storage.games.seat_states(part.log, history, ladder.seats or [])
        storage.games.rewrite_seat_states(session, ladder.id, part.game_ids.tolist(), states)
    member_game = np.repeat(part.game_ids, np.diff(part.log.member_ptr))
    storage.games.rewrite_history(
        session,
        ladder.id,
        member_game,
        part.player_ids[part.log.member_player],
        history.before,
        history.after,
        history.actual[part.log.member_side],
        history.expected[part.log.member_side],
    )
