"""Replaying the log after it changed below its end (an applied refit, a voided game, merged players),
shared by the features.

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

import functools
import itertools
import secrets
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TypeVar

import numpy as np
from sqlalchemy.orm import Session

from app import rating, storage
from app.core import jobs
from app.core.db import Database
from app.core.errors import Unavailable
from app.core.ladder import LadderRow
from app.rating.seats import Seats
from app.storage.log import LadderLog, Tail
from app.storage.refits import Checkpoint

T = TypeVar("T")


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
    of their experience (:mod:`app.rating.season_pull`; under the variance rule, of what their variance knows of
    them), after game ``boundary`` (the log's end: the ratings stored
    are those after it), and checkpoint the vectors there: a replay from the checkpoint starts from them, and a
    void before it, which sets it aside, pulls them again (:func:`replay_log`)."""
    state = "variance" if ladder.variance_rule else "experience"
    ids, C0, C, known = storage.players.initial_and_current(session, ladder.id, 2 * ladder.k, state)
    C = rating.pull_back(C, C0, pull)
    seats = storage.ladder_state.seat_state(session, ladder)
    held = None if seats is None else storage.ladder_state.seats_to_json(seats)
    packed = storage.codec.pack_ids(ids), storage.codec.pack(C)
    if ladder.variance_rule:
        rule = ladder.learning_rate()
        assert isinstance(rule, rating.VarianceRule)
        variance = rating.pull_variance(known, rule.start, pull)
        storage.refits.insert_checkpoint(
            session, ladder.id, boundary, *packed, refit_id=None, seat_state=held, variances=variance
        )
        storage.players.save_vectors(session, ladder.id, ids, C, variance=variance)
    else:
        storage.refits.insert_checkpoint(session, ladder.id, boundary, *packed, refit_id=None, seat_state=held)
        storage.players.save_vectors(session, ladder.id, ids, C, rating.pull_experience(known, pull))
    storage.ladder_state.recount_field(session, ladder)


@dataclass
class Prepared:
    """The log replayed from a checkpoint not applied yet (:func:`prepare`), or from the latest one at a rate not
    set yet (:func:`prepare_rate`), up to a recent game (``last_game_id``), in read snapshots outside the writer's
    locks (and :func:`catch_up`), for :func:`replay_prepared` to finish."""

    #: The refit's checkpoint it replays from (not stored yet); None: the latest stored one (``base``).
    checkpoint: Checkpoint | None
    #: The replayed parts of the log, in order: the log after the checkpoint, then the games each catch-up read.
    parts: list[tuple[LadderLog | Tail, rating.History]]
    #: Every player the parts name (id order), with their vectors, experience and latest game times after them.
    player_ids: np.ndarray
    C: np.ndarray
    experience: np.ndarray
    latest: np.ndarray | None
    seats: Seats | None
    last_game_id: int
    #: What the replay depended on beyond the games: a change of one (a merge, k, the learning rate, the seats,
    #: how keys match) makes it stale.
    marks: tuple
    #: The games up to ``last_game_id`` (all, and those that count): a late commit or a void below it changes them.
    games: tuple[int, int]
    ladder_id: int
    #: The game the replay starts after (-1: the log's first).
    after_game_id: int
    #: The ladder's columns a new rate sets (:func:`prepare_rate`): the replay is at that rate, not the ladder's.
    settings: dict = field(default_factory=dict)
    #: The id of the stored checkpoint it replays from (0: none), which must still be the latest when it is written.
    base: int | None = None
    #: A catch-up found the log changed below ``last_game_id`` (a void, a late commit), or another replay's history
    #: written ahead (``Ladder.history_rewrite``) in what it read: the apply replays the log.
    stale: bool = False
    #: This replay's history written ahead (:func:`write_ahead`): its name in ``Ladder.history_rewrite``, and the
    #: parts written whole.
    rewrite: str | None = None
    written: int = 0
    #: A void's replay (:func:`prepare_void`): the keys of the players it reaches (``player_ids``'), the seats it
    #: reaches, and the game it leaves out; None for a replay of every player.
    keys: list[str] | None = None
    reached_seats: tuple[str, ...] = ()
    left_out: int = -1

    def add(self, part: LadderLog | Tail, history: rating.History) -> None:
        """A replayed part after the others: its players' states replace theirs."""
        self.parts.append((part, history))
        ids = np.union1d(self.player_ids, part.player_ids)
        if self.keys is not None:
            key_of = dict(zip(self.player_ids.tolist(), self.keys, strict=True))
            key_of.update(zip(part.player_ids.tolist(), part.keys, strict=True))
            self.keys = [key_of[i] for i in ids.tolist()]
            assert isinstance(part, Tail)
            self.reached_seats = tuple(dict.fromkeys((*self.reached_seats, *part.reached_seats)))
        old, new = np.searchsorted(ids, self.player_ids), np.searchsorted(ids, part.player_ids)
        self.player_ids = ids
        self.C = _placed(len(ids), (old, self.C), (new, history.C))
        assert history.experience is not None  # a replay's state after the log
        self.experience = _placed(len(ids), (old, self.experience), (new, history.experience))
        if self.latest is not None:  # the steps follow time away (a setting in the marks: every part or none)
            assert history.latest is not None
            self.latest = _placed(len(ids), (old, self.latest), (new, history.latest))
        self.seats = history.seats


def _placed(n: int, *parts: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """Rows put at their places in an array of ``n`` rows, later parts over earlier ones."""
    first = parts[0][1]
    out = np.empty((n, *first.shape[1:]), dtype=first.dtype)
    for at, rows in parts:
        out[at] = rows
    return out


def prepare(session: Session, ladder_id: int, checkpoint: Checkpoint, settings: dict | None = None) -> Prepared | None:
    """Replay the log from ``checkpoint`` (not stored yet) in a read snapshot (``session``), holding no lock, at
    the ladder's rate or at the new rate its refit chose, the ladder's columns ``settings`` (not set yet); None if
    the ladder is gone or its k is not the checkpoint's."""
    ladder = storage.ladders.by_id(session, ladder_id)
    held = len(storage.codec.unpack_ids(checkpoint.player_ids))
    if ladder is None or len(checkpoint.vectors) != 8 * 2 * ladder.k * held:
        return None
    ladder = replace(ladder, **(settings or {}))
    variances = checkpoint_variances(session, ladder, checkpoint.player_ids, checkpoint.after_game_id)
    if variances is not None:
        checkpoint.variances = storage.codec.pack(variances)
    return _prepared(session, ladder, checkpoint, checkpoint.after_game_id, settings=settings or {})


def prepare_rate(session: Session, ladder_id: int, settings: dict) -> Prepared | None:
    """Replay the log from the latest checkpoint at a new rate, the ladder's columns ``settings`` (not set yet),
    in a read snapshot (``session``), holding no lock; None if the ladder is gone or a season closed with a pull
    since that checkpoint (the log's replay pulls the ratings there: :func:`replay_log`)."""
    ladder = storage.ladders.by_id(session, ladder_id)
    if ladder is None:
        return None
    latest = storage.refits.latest_checkpoint(session, ladder_id)
    after = -1 if latest is None else latest.after_game_id
    if storage.seasons.pulls(session, ladder_id, after):
        return None
    base = 0 if latest is None else latest.id
    return _prepared(session, replace(ladder, **settings), None, after, settings=settings, base=base)


def prepare_void(session: Session, ladder_id: int, number: int) -> Prepared | None:
    """The games after game ``number`` (not voided yet) that its players and seats reach, replayed as if it were
    voided, in a read snapshot (``session``), holding no lock, for the void to write (:func:`write_prepared`);
    None if the ladder or game is gone, the game is voided already, or a checkpoint saw it (the void then replays
    the log from the one before it: under the lock)."""
    ladder = storage.ladders.by_id(session, ladder_id)
    record = None if ladder is None else storage.games.get(session, ladder_id, number)
    if ladder is None or record is None or record.voided_at is not None:
        return None
    latest = storage.refits.latest_checkpoint(session, ladder_id)
    if latest is not None and latest.after_game_id >= record.id:
        return None
    members = [member.key for member in record.members]
    tail = storage.log.read_tail(session, ladder, record.id + 1, members, record.seat_state, left_out=record.id)
    h = _history(ladder, tail)
    assert h.experience is not None  # a replay's state after the log
    last = max(tail.read_to, record.id)
    first = (tail.player_ids, h.C, h.experience, h.latest, h.seats, last)
    counts = storage.games.log_counts(session, ladder_id, last)
    prepared = Prepared(None, [(tail, h)], *first, _marks(ladder), counts, ladder_id, record.id)
    prepared.base, prepared.keys, prepared.left_out = _latest_id(session, ladder_id), list(tail.keys), record.id
    prepared.reached_seats = tail.reached_seats
    prepared.stale = storage.ladders.history_rewrite(session, ladder_id) is not None
    return prepared


def _prepared(session: Session, ladder: LadderRow, checkpoint: Checkpoint | None, after: int, **more) -> Prepared:
    part = storage.log.read(session, ladder, checkpoint=checkpoint)
    games = storage.games.log_counts(session, ladder.id, part.last_game_id)
    h = _history(ladder, part)
    assert h.experience is not None  # a replay's state after the log
    first = (part.player_ids, h.C, h.experience, h.latest, h.seats, part.last_game_id)
    prepared = Prepared(checkpoint, [(part, h)], *first, _marks(ladder), games, ladder.id, after, **more)
    prepared.stale = storage.ladders.history_rewrite(session, ladder.id) is not None
    return prepared


def checkpoint_variances(
    session: Session, ladder: LadderRow, player_ids: bytes, after_game_id: int
) -> np.ndarray | None:
    """Under the variance rule (mathematics §3b), the variances that a refit's checkpoint after game
    ``after_game_id`` keeps for its players (``player_ids``, packed): each one's after their latest counted game
    by then, as a replay from the checkpoint before gives it (NaN: none yet, or the ladder was on the other rule
    then: that player starts afresh there).  None on the shrinking-step rule."""
    if not ladder.variance_rule:
        return None
    ids = storage.codec.unpack_ids(player_ids)
    order = np.argsort(ids, kind="stable")
    blank = [storage.codec.pack(np.zeros(2 * ladder.k))] * len(ids)
    cutoffs = [after_game_id + 1] * len(ids)
    variance = storage.state_before.state_before(session, ladder, ids[order], blank, cutoffs)[1]
    out = np.empty(len(ids))
    out[order] = variance
    return out


def catch_up(session: Session, prepared: Prepared) -> int:
    """Replay, in a read snapshot (``session``), the games committed after a prepared replay's last game, on top
    of it: the number of games it added (0: none since, or the replay is stale and left for the apply to find)."""
    ladder = _settings(storage.ladders.by_id(session, prepared.ladder_id), prepared)
    if ladder is None:
        return 0
    if not holds(session, ladder, prepared) or storage.ladders.history_rewrite(session, ladder.id) not in (
        None,
        prepared.rewrite,
    ):
        prepared.stale = True  # new settings, or a void or a late commit below it: nothing on top of it counts
        return 0
    since = _since(session, ladder, prepared)
    if since.log.n_games == 0:
        return 0
    prepared.add(since, _history(ladder, since))
    prepared.last_game_id = max(int(since.game_ids[-1]), since.read_to)
    prepared.games = storage.games.log_counts(session, ladder.id, prepared.last_game_id)
    return since.log.n_games


#: The memberships whose history one transaction of :func:`write_ahead` writes (on SQLite every other write waits
#: for it: some 50 ms), and the time it then leaves the writer to the others, as a share of the time it took (on
#: PostgreSQL, a quarter: the posts wait only for the ladder's row, taken by its last statement, and the rest
#: leaves them the server process's interpreter, which its threads share).
AHEAD_ROWS = 10_000
AHEAD_REST = {"sqlite": 1.0, "postgresql": 0.25}
#: The share of a request's remaining time (a ``PATCH``, a refit's apply, a void) left to its switch: the rests of
#: its write-ahead shrink so that it is written by then.
SWITCH_SHARE = 0.2


def write_ahead(db: Database, prepared: Prepared | None, until: float | None = None) -> None:
    """Write a prepared replay's history before the transaction that switches the ladder to it, in write
    transactions of their own of :data:`AHEAD_ROWS` memberships each, each followed by a rest that leaves the
    writers to the posts, so the switch holds the writers for the players' rows and the games committed since, not
    for the log's history (on SQLite every ladder's posts wait for a write; a million memberships take seconds).
    Called again after a catch-up (:func:`catch_up`), it writes the parts added since.  The rests shrink as
    ``until`` nears (on :func:`time.monotonic`'s clock: a request's deadline comes), so as to have written
    everything by then where the writes alone allow it (:func:`rest_after`).  A replay whose history is one such
    transaction's worth is left to the switch.

    The players' rows are not written ahead: the stored ratings are always those the log replays to.  The first
    transaction names the rewrite in ``Ladder.history_rewrite``: until the switch the stored history of those games
    is the new rate's (or the refit's, or the void's) while the ratings are not, and whoever locks the ladder's
    players meanwhile (a merge, another change: :func:`lock_ladder`) replays the log first, which ends this
    rewrite; it then stops, and its switch writes the history under the lock.  A switch that fails puts the log's
    history back (:func:`switch`).  A stale replay writes nothing ahead."""
    if prepared is None or prepared.stale:
        return
    rewrite = prepared.rewrite or f"{secrets.token_hex(6)}@{jobs.owner()}"
    steps: list[Callable[[Session, LadderRow], None] | int] = []  # the writes, and the parts written whole
    for n in range(prepared.written, len(prepared.parts)):
        part, history = prepared.parts[n]
        steps += [
            functools.partial(_write_history, part=part, history=history, games=g) for g in _runs(part, AHEAD_ROWS)
        ]
        steps.append(n + 1)
    left = sum(not isinstance(step, int) for step in steps)
    if prepared.rewrite is None and left <= 1:  # one transaction's worth: the switch writes it
        return
    for step in steps:
        if isinstance(step, int):
            prepared.written = step
            continue
        took = _ahead(db, prepared, rewrite, step)
        if took is None:
            return
        left -= 1
        time.sleep(rest_after(took, left, until, time.monotonic(), AHEAD_REST[db.dialect]))


def rest_after(took: float, left: int, until: float | None, now: float, share: float = 1.0) -> float:
    """The posts' turn after a write ahead that took ``took`` seconds, with ``left`` more to come: ``share`` of the
    write (:data:`AHEAD_REST`), or shorter so that the writes, each as long, end by ``until``; as long again if
    they cannot end by then even without rests (the request's answer is late anyway: the posts keep their turn)."""
    rest = took * share
    spare = None if until is None else until - now - left * took
    return rest if spare is None or spare < 0 else min(rest, spare / (left + 1))


def _ahead(db: Database, prepared: Prepared, rewrite: str, write: Callable[[Session, LadderRow], None]) -> float | None:
    """One transaction of :func:`write_ahead`: how long it took, or None if it did not write (another replay or
    rewrite came first)."""
    started = time.monotonic()
    run = functools.partial(_ahead_one, prepared=prepared, rewrite=rewrite, write=write)
    # In a refit's child: at the server's priority, as it holds the writers (a starved holder stalls them).
    if not jobs.at_server_priority(lambda: db.write(run)):
        return None
    prepared.rewrite = rewrite
    return time.monotonic() - started


def _ahead_one(session: Session, prepared: Prepared, rewrite: str, write: Callable[[Session, LadderRow], None]) -> bool:
    first = prepared.rewrite is None
    storage.players.lock_replays(session, prepared.ladder_id)  # PostgreSQL: after a replay under the lock, or before
    if storage.ladders.history_rewrite(session, prepared.ladder_id) != (None if first else rewrite):
        return False
    ladder = _settings(storage.ladders.by_id(session, prepared.ladder_id), prepared)
    if ladder is None or (first and not (holds(session, ladder, prepared) and _after_latest(session, prepared))):
        return False
    write(session, ladder)
    if first:
        storage.ladders.set_history_rewrite(session, ladder.id, rewrite)
    storage.ladders.bump(session, [ladder.id])  # the draws counted again from the forecasts written
    return True


def _write_players(session: Session, ladder: LadderRow, prepared: Prepared, ids: np.ndarray) -> None:
    """The rows of the players ``ids`` (sorted, among the prepared replay's) at its state, with the kept field
    sum moved as much."""
    at = np.searchsorted(prepared.player_ids, ids)
    old = storage.players.lock_vectors(session, ladder.id, ids, 2 * ladder.k)
    _save_state(session, ladder, ids, prepared.C[at], prepared.experience[at])
    storage.ladder_state.move_field(session, ladder.id, (prepared.C[at] - old).sum(axis=0))


def _after_latest(session: Session, prepared: Prepared) -> bool:
    """Whether the replay starts at or after the latest checkpoint (a refit's that is not older than the latest),
    so a replay of the log from there (:func:`lock_ladder`) writes every game it writes ahead."""
    latest = storage.refits.latest_checkpoint(session, prepared.ladder_id)
    return latest is None or prepared.after_game_id >= latest.after_game_id


def _runs(part: LadderLog | Tail, rows: int) -> list[slice]:
    """A part's games cut into runs of about ``rows`` memberships (a game never split)."""
    member_ptr = part.log.member_ptr
    cuts = np.searchsorted(member_ptr, np.arange(rows, member_ptr[-1], rows), side="right") - 1
    edges = np.unique(np.concatenate([[0], cuts, [len(member_ptr) - 1]])).tolist()
    return [slice(lo, hi) for lo, hi in itertools.pairwise(edges)]


def lock_ladder(session: Session, ladder_id: int, prepared: Prepared | None = None) -> None:
    """Lock every player of the ladder and its row (:func:`app.storage.players.lock_all`), with its history the
    log's: one written ahead by a replay (:func:`write_ahead`) other than ``prepared`` is replaced by the log's
    replayed at the ladder's settings (and that rewrite ends: its switch writes its history under the lock).  The
    caller writes the ladder's history (``prepared``'s, or the log's) before it commits."""
    storage.players.lock_all(session, ladder_id)
    rewrite = storage.ladders.history_rewrite(session, ladder_id)
    if prepared is not None and prepared.rewrite != rewrite:  # ended by another (or none written ahead)
        prepared.rewrite, prepared.written = None, 0
    if rewrite is None:
        return
    if prepared is None or prepared.rewrite != rewrite:
        ladder = storage.ladders.by_id(session, ladder_id)
        if ladder is not None:
            replay_log(session, ladder)
    storage.ladders.set_history_rewrite(session, ladder_id, None)
    storage.ladders.bump(session, [ladder_id])  # the replay's version (the caller may bump again: the next)


def switch(db: Database, prepared: Prepared | None, work: Callable[[Session], T]) -> T:
    """``work`` in a write transaction that switches the ladder to ``prepared`` (written ahead: :func:`write_ahead`;
    the work calls :func:`lock_ladder` with it).  Should it fail, or not switch after all (a job cancelled since),
    the history written ahead is replaced by the log's, under the lock."""
    try:
        return db.write(work)
    finally:
        if prepared is not None and prepared.rewrite is not None:
            with db.reading() as session:
                left = storage.ladders.history_rewrite(session, prepared.ladder_id) == prepared.rewrite
            if left:
                db.write(functools.partial(_end, ladder_id=prepared.ladder_id, rewrite=prepared.rewrite))


def _end(session: Session, ladder_id: int, rewrite: str | None) -> None:
    """The log's history again in place of ``rewrite``'s, if it is still the ladder's (:func:`lock_ladder`)."""
    if storage.ladders.history_rewrite(session, ladder_id) == rewrite:
        lock_ladder(session, ladder_id)


def end_abandoned(db: Database) -> list[int]:
    """The ladders whose history a server process that stopped on this host (a crash, a cancelled refit's child)
    left written ahead (:func:`write_ahead`) get the log's history back; their ids.  Run at a server's start and
    after each refit job's process ends; a rewrite left by another host's process ends at the ladder's next
    change (:func:`lock_ladder`)."""
    with db.reading() as session:
        left = storage.ladders.history_rewrites(session)
    ended = [(i, r) for i, r in left if jobs.owner_gone(r.partition("@")[2])]
    for ladder_id, rewrite in ended:
        db.write(functools.partial(_end, ladder_id=ladder_id, rewrite=rewrite))
    return [ladder_id for ladder_id, _ in ended]


def replay_prepared(session: Session, ladder: LadderRow, prepared: Prepared) -> int | None:
    """Write a :func:`prepared <prepare>` replay under :func:`app.storage.players.lock_all`, with the games
    committed since replayed on top (a few: the writer is held for the writes, not for reading and replaying
    the log); the number of games replayed, or None if it is stale (the caller replays the log as it is).
    The history of its first ``written`` parts is written already (:func:`write_ahead`, checked by
    :func:`lock_ladder`).

    Replaying the log in parts applies every game to the same vectors, games counts and seats as one
    replay does, so the ratings are the same bit for bit (``/audit`` checks it).
    """
    if prepared.stale or not holds(session, ladder, prepared):
        return None
    return write_prepared(session, ladder, prepared)


def write_prepared(session: Session, ladder: LadderRow, prepared: Prepared) -> int:
    """:func:`replay_prepared` once it is known to hold (a void checks that before it voids the game)."""
    since = _since(session, ladder, prepared)
    prepared = replace(prepared, parts=list(prepared.parts))  # as it was, if this transaction is run again
    if since.log.n_games:
        prepared.add(since, _history(ladder, since))
    for part, history in prepared.parts[prepared.written :]:
        _write_history(session, ladder, part, history)
    # Each player's vector once, as the last part left it (not once per part: a row written again is a new row).
    if prepared.keys is not None:  # a void's: the players it reaches, the kept field sum moved as much
        _write_players(session, ladder, prepared, prepared.player_ids)
    else:
        _save_state(session, ladder, prepared.player_ids, prepared.C, prepared.experience)
        # Its players are the ladder's as the replay read them and those named since (none leaves the ladder but by
        # a merge, which makes it stale): as many as the ladder has, they are all, and their sum is at hand.
        if len(prepared.player_ids) == storage.ladders.sizes(session, ladder.id)[0]:
            storage.ladder_state.save_field(session, ladder.id, prepared.C.sum(axis=0), len(prepared.player_ids))
        else:
            storage.ladder_state.recount_field(session, ladder)
    seats = prepared.seats
    if seats is not None and prepared.keys is not None:  # a void's: the seats it does not reach stay as they are
        seats, index = storage.ladder_state.seat_state(session, ladder), ladder.seat_index()
        assert seats is not None and prepared.seats is not None
        for name in prepared.reached_seats:
            seats.advantage[index[name]] = prepared.seats.advantage[index[name]]
            seats.information[index[name]] = prepared.seats.information[index[name]]
    storage.ladder_state.save_seat_state(session, ladder.id, seats)
    return sum(part.log.n_games for part, _ in prepared.parts)


def _settings(ladder: LadderRow | None, prepared: Prepared) -> LadderRow | None:
    """The ladder as a prepared replay rates its games: with the new rate it prepares (none set yet)."""
    return ladder if ladder is None or not prepared.settings else replace(ladder, **prepared.settings)


def _latest_id(session: Session, ladder_id: int) -> int:
    latest = storage.refits.latest_checkpoint(session, ladder_id)
    return 0 if latest is None else latest.id


def holds(session: Session, ladder: LadderRow, prepared: Prepared) -> bool:
    """Whether a prepared replay still holds: the same settings, the same games up to its last one (no void or
    late commit below it), no season closed with a pull after its start (the log is replayed through it), and,
    replaying from a stored checkpoint, that one still the latest (no refit applied or checkpoint voided since)."""
    counts = storage.games.log_counts(session, ladder.id, prepared.last_game_id)
    if _marks(ladder) != prepared.marks or counts != prepared.games:
        return False
    if storage.seasons.pulls(session, ladder.id, prepared.after_game_id):
        return False
    return prepared.base is None or prepared.base == _latest_id(session, ladder.id)


def _since(session: Session, ladder: LadderRow, prepared: Prepared) -> Tail:
    """The games committed after a prepared replay's last game (a void's: those its players or seats reach), with
    their players' state after it."""
    p = prepared
    if p.keys is None:
        return storage.log.read_since(
            session, ladder, p.last_game_id, p.player_ids, p.C, p.experience, p.latest, p.seats
        )
    assert p.seats is not None or not p.reached_seats
    index, learned = ladder.seat_index(), p.seats
    seats = (
        {}
        if learned is None
        else {name: [learned.advantage[index[name]], learned.information[index[name]]] for name in p.reached_seats}
    )
    known = storage.log.Known(p.player_ids, p.keys, p.C, p.experience, p.latest)
    return storage.log.read_tail(session, ladder, p.last_game_id + 1, [], seats, p.left_out, known)


def _marks(ladder: LadderRow) -> tuple:
    rate = (ladder.eta, ladder.eta_tau, ladder.step_drift(), ladder.rate_rule, ladder.noise, ladder.cycles)
    seats = (ladder.seats, ladder.seat_prior if ladder.seats else None)
    return (ladder.reset_version, ladder.k, *rate, *seats, ladder.case_insensitive_keys)


def _replay(session: Session, ladder: LadderRow, part: Tail | LadderLog) -> int:
    _write(session, ladder, part, _history(ladder, part))
    storage.ladder_state.recount_field(session, ladder)
    return part.log.n_games


def _history(ladder: LadderRow, part: Tail | LadderLog) -> rating.History:
    rate = ladder.learning_rate()
    return rating.replay_history(
        part.start, part.log, rate, games0=part.start_games, seats=part.start_seats, times=part.times
    )


def _write(session: Session, ladder: LadderRow, part: Tail | LadderLog, history: rating.History) -> None:
    """Store a replay: the vectors of its players, the seats, and its games' history."""
    assert history.experience is not None  # a replay's state after the log
    _save_state(session, ladder, part.player_ids, history.C, history.experience)
    if part.start_seats is not None:
        storage.ladder_state.save_seat_state(session, ladder.id, history.seats)
    _write_history(session, ladder, part, history)


def _write_history(
    session: Session, ladder: LadderRow, part: Tail | LadderLog, history: rating.History, games: slice = slice(None)
) -> None:
    """A replay's games' history (of its ``games``): each membership's vectors and scores, and each game's seats;
    and what the draw model is fitted on, counted again from the forecasts as rewritten (so a ladder and its
    restore predict the same draws)."""
    lo, hi, _ = games.indices(part.log.n_games)
    if hi <= lo:
        return
    log, game_ids = part.log, part.game_ids[lo:hi]
    old = storage.ladders.draw_counts(session, ladder.id, int(game_ids[0]), int(game_ids[-1]))
    new = rating.two_sided_draws_apart(log.side_ptr, history.actual, history.expected, [lo, hi])[0]
    if part.start_seats is not None:
        states = storage.games.seat_states(log, history, ladder.seats or [], games)
        storage.games.rewrite_seat_states(session, ladder.id, game_ids.tolist(), states)
    members = slice(int(log.member_ptr[lo]), int(log.member_ptr[hi]))
    sides = log.member_side[members]
    storage.games.rewrite_history(
        session,
        ladder.id,
        np.repeat(game_ids, np.diff(log.member_ptr[lo : hi + 1])),
        part.player_ids[log.member_player[members]],
        history.before[members],
        history.after[members],
        history.actual[sides],
        history.expected[sides],
        None if history.member_variance is None else history.member_variance[members],
    )
    # Last: a game commit waits for the ladder's row, which this takes (on PostgreSQL, not for the rows above).
    storage.ladders.add_counts(session, ladder.id, draws=new[0] - old[0], draw_room=new[1] - old[1])


def _save_state(session: Session, ladder: LadderRow, ids: np.ndarray, C: np.ndarray, state: np.ndarray) -> None:
    """The players' vectors after a replay, and the state the rule carries: their experience, or under the
    variance rule their variances (mathematics §3b)."""
    if ladder.variance_rule:
        storage.players.save_vectors(session, ladder.id, ids, C, variance=state)
    else:
        storage.players.save_vectors(session, ladder.id, ids, C, state)


#: A prepared replay catches up with the games committed while it replayed, outside the writers' locks, until
#: this few are left for the writer to replay under them (or after CATCH_UP_ROUNDS rounds, on a ladder posted to
#: faster than it replays).
CAUGHT_UP, CATCH_UP_ROUNDS = 64, 8


def prepared_replay(
    db: Database,
    ladder_id: int,
    checkpoint: Checkpoint | None,
    settings: dict | None = None,
    until: float | None = None,
) -> Prepared | None:
    """The log replayed from ``checkpoint`` (a refit's, not applied yet; else from the latest checkpoint), at the
    ladder's rate or at a new one, the ladder's columns ``settings`` (not set yet), up to a recent game, in read
    snapshots; and written ahead (:func:`ready`)."""
    after_rewrites(db, ladder_id, until)
    with db.snapshot() as session:
        if checkpoint is not None:
            prepared = prepare(session, ladder_id, checkpoint, settings)
        else:
            prepared = prepare_rate(session, ladder_id, settings or {})
    return ready(db, prepared, until)


def prepared_void(db: Database, ladder_id: int, number: int, until: float | None = None) -> Prepared | None:
    """What voiding game ``number`` replays (:func:`prepare_void`), in read snapshots, and written ahead
    (:func:`ready`)."""
    after_rewrites(db, ladder_id, until)
    with db.snapshot() as session:
        prepared = prepare_void(session, ladder_id, number)
    return ready(db, prepared, until)


#: How long a change waits at most, outside a request, for another change's write-ahead on its ladder to end.
REWRITE_WAIT = 120.0


def after_rewrites(db: Database, ladder_id: int, until: float | None) -> None:
    """Wait while another change's replay is written ahead on the ladder by a live process (``history_rewrite``),
    until ``until`` at most (or :data:`REWRITE_WAIT`): a replay prepared meanwhile would be stale at once, and the
    switch of either would replay the whole log under the ladder's locks to end the other's rewrite (on a big
    ladder, seconds of every post held, twice).  So a ladder's changes take turns.  A request (``until``, its
    deadline) that cannot have its turn in time is a 503 (retry later), holding nothing: ending the other's rewrite
    would hold the ladder's posts for that replay, while its answer is late already."""
    wait_until = time.monotonic() + REWRITE_WAIT if until is None else until
    while time.monotonic() < wait_until:
        with db.reading() as session:
            rewrite = storage.ladders.history_rewrite(session, ladder_id)
        if rewrite is None or jobs.owner_gone(rewrite.partition("@")[2]):
            return
        time.sleep(0.1)
    if until is not None:
        raise Unavailable(
            "Another change of this ladder (a new rate, a refit's apply or a void) is still being written, and this "
            "one takes its turn after it: retry in a minute."
        )


def ready(db: Database, prepared: Prepared | None, until: float | None) -> Prepared | None:
    """A prepared replay caught up with the games committed while it replayed, in read snapshots, and written
    ahead (:func:`write_ahead`), then caught up and written ahead again with the games committed meanwhile: the
    switch (:func:`switch`) writes those committed since, a few.  Also past ``until`` (a request's deadline
    coming): a write ahead that outlasted it would otherwise leave the switch every game posted meanwhile to replay
    under the ladder's locks (30,000 after 50 s at 600 posts a second: seconds of every post held)."""
    for _ in range(CATCH_UP_ROUNDS):
        if prepared is None:
            break
        with db.snapshot() as session:
            if catch_up(session, prepared) <= CAUGHT_UP:
                break
    write_ahead(db, prepared, until)
    for _ in range(CATCH_UP_ROUNDS):  # the games committed while it was written: written ahead too
        done = prepared is not None and prepared.rewrite is not None and prepared.written == len(prepared.parts)
        if not done:
            break
        assert prepared is not None
        with db.snapshot() as session:
            caught = catch_up(session, prepared)
        if caught:
            write_ahead(db, prepared, until)
        if caught <= CAUGHT_UP:
            break
    return prepared
