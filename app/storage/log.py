"""The event log read back for replays, audits and refits."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from sqlalchemy import and_, func, select
from sqlalchemy.orm import Session

from app import rating
from app.core.ladder import LadderRow
from app.rating.seats import Seats
from app.storage import codec, ladder_state, refits, seasons
from app.storage.players import MAX_KEYS_IN_QUERY
from app.storage.sql import driver_chunks, driver_fetchall, no_cyclic_gc, result_converter
from app.storage.state_before import SCAN_PLAYERS, experience_before, from_checkpoint, state_before
from app.storage.tables import Checkpoint, Game, Participant


def encode(payloads: Sequence[dict], index: dict[str, int], seat_index: dict[str, int] | None = None) -> rating.GameLog:
    """Stored game payloads (sides of player keys, ranks, advantages, seats) as a GameLog; ``index`` maps
    key → row, ``seat_index`` seat name → seat."""
    return encode_apart([(payloads, index)], [0], seat_index)


def encode_apart(
    parts: Sequence[tuple[Sequence[dict], dict[str, int]]],
    offsets: Sequence[int],
    seat_index: dict[str, int] | None = None,
) -> rating.GameLog:
    """:func:`encode` of several ladders' payloads, each with its ``index``, as one GameLog, end to end: ladder n's
    rows moved up by ``offsets[n]`` (its players' first row in one matrix of all of them)."""
    seat_index = seat_index or {}

    def seats(p: dict) -> list[int]:
        return [-1 if name is None else seat_index[name] for name in p.get("seats") or [None] * len(p["sides"])]

    everything = [p for payloads, _ in parts for p in payloads]
    seated = any(p.get("seats") for p in everything)
    if all(len(p["sides"]) == 2 and len(p["sides"][0]) == len(p["sides"][1]) == 1 for p in everything):
        # Two single players per game, the common case: encoded without a Python object per game.
        ends = [(payloads, index, at) for (payloads, index), at in zip(parts, offsets, strict=True)]
        i = np.array([index[p["sides"][0][0]] + at for payloads, index, at in ends for p in payloads], dtype=np.int64)
        j = np.array([index[p["sides"][1][0]] + at for payloads, index, at in ends for p in payloads], dtype=np.int64)
        ranks = np.array([p["ranks"] for p in everything], dtype=np.float64).reshape(-1, 2)
        outcome = np.where(ranks[:, 0] < ranks[:, 1], 1.0, np.where(ranks[:, 0] == ranks[:, 1], 0.5, 0.0))
        h = np.array([p["advantages"] or (0.0, 0.0) for p in everything], dtype=np.float64).reshape(-1, 2)
        taken = np.array([seats(p) for p in everything], dtype=np.int64).reshape(-1, 2) if seated else None
        pair_seats = None if taken is None else (taken[:, 0], taken[:, 1])
        return rating.GameLog.from_pairs(i, j, outcome, h[:, 0] - h[:, 1], seats=pair_seats)
    encoded = [
        rating.Game(
            tuple(tuple(index[k] + at for k in side) for side in p["sides"]),
            p["ranks"],
            p["advantages"],
            tuple(None if x < 0 else x for x in seats(p)) if p.get("seats") else None,
        )
        for (payloads, index), at in zip(parts, offsets, strict=True)
        for p in payloads
    ]
    return rating.GameLog.from_games(encoded)


@dataclass
class LadderLog:
    """A ladder's players (id order) and event log, ready for replay or a refit.

    ``start`` are the vectors the log replays from: the latest checkpoint's (for
    players it holds) and the initial vectors otherwise, or all initial vectors
    when read ``from_start``; ``start_games`` the games (the experience,
    :mod:`app.rating.experience`) each player had by then, or under the variance
    rule their variances (NaN: none yet, mathematics §3b); ``log`` holds the
    games after that point, in order (``game_ids``), played at ``times[0]``, with
    ``times[1]`` each player's latest game time before them (years, NaN: none);
    ``stored`` the current vectors.  Voided games are left out everywhere.
    """

    player_ids: np.ndarray
    keys: list[str]
    start: np.ndarray
    start_games: np.ndarray
    stored: np.ndarray
    log: rating.GameLog
    game_ids: np.ndarray
    after_game_id: int
    last_game_id: int
    games: int
    times: tuple[np.ndarray, np.ndarray]
    #: The learned seats the log replays from (the checkpoint's, or fresh) and as stored now; None without seats.
    start_seats: Seats | None = None
    stored_seats: Seats | None = None


#: Beyond every game id: a read up to it reads the whole log.
END = 2**62


def read(
    session: Session,
    ladder: LadderRow,
    from_start: bool = False,
    checkpoint: Checkpoint | None = None,
    upto: int = END,
) -> LadderLog:
    """Players and log from the latest checkpoint (or from the initial vectors, or from ``checkpoint``, one not
    stored yet), up to game ``upto``."""
    with no_cyclic_gc():
        return _read(session, ladder, from_start, checkpoint, upto)


def _read(session: Session, ladder: LadderRow, from_start: bool, checkpoint: Checkpoint | None, upto: int) -> LadderLog:
    rows = driver_fetchall(
        session.connection(),
        "SELECT id, key, initial, vector FROM players WHERE ladder_id = ? ORDER BY id",
        (ladder.id,),
    )
    dim = 2 * ladder.k
    ids = np.array([r[0] for r in rows], dtype=np.int64)
    keys = [r[1] for r in rows]
    start, after = codec.unpack_rows((r[2] for r in rows), dim), 0
    start_games, start_last = np.zeros(len(ids)), np.full(len(ids), np.nan)
    if checkpoint is None and not from_start:
        checkpoint = refits.latest_checkpoint(session, ladder.id)
    if ladder.variance_rule:  # the state is each player's variance (mathematics §3b; NaN: none yet)
        start_games[:] = np.nan
        if checkpoint is not None:
            after = from_checkpoint(start, ids, checkpoint, dim, start_games)
            if ladder.step_drift() > 0:
                start_last = experience_before(session, ladder, ids, np.full(len(ids), after + 1))[1]
    elif checkpoint is not None and (ladder.step_drift() > 0 or seasons.pulls(session, ladder.id)):
        after = from_checkpoint(start, ids, checkpoint, dim)
        start_games, start_last = experience_before(session, ladder, ids, np.full(len(ids), after + 1))
        if ladder.step_drift() == 0:
            start_last[:] = np.nan  # the steps ignore time
    elif checkpoint is not None:
        after = from_checkpoint(start, ids, checkpoint, dim)
        counts = session.execute(
            select(Participant.player_id, func.count())
            .join(Game, and_(Game.id == Participant.game_id, Game.ladder_id == Participant.ladder_id))
            .where(Game.ladder_id == ladder.id, Game.id <= after, Game.voided_at.is_(None))
            .group_by(Participant.player_id)
        ).all()
        for player_id, n in counts:
            start_games[np.searchsorted(ids, player_id)] = n
    counted = (Game.ladder_id == ladder.id, Game.voided_at.is_(None), Game.id <= upto)
    last, games = session.execute(select(func.max(Game.id), func.count()).select_from(Game).where(*counted)).one()
    index = {key: n for n, key in enumerate(keys)}
    stored = codec.unpack_rows((r[3] for r in rows), dim)
    found = _pair_log(session, ladder, after, upto, index)
    if found is None:
        query = select(Game.id, Game.payload, Game.played_at).where(*counted, Game.id > after).order_by(Game.id)
        logged = session.execute(query).all()
        log = encode([row[1] for row in logged], index, ladder.seat_index())
        played = np.array([codec.micros(row[2]) for row in logged], dtype=np.int64)
        found = np.array([row[0] for row in logged], dtype=np.int64), log, played
    game_ids, log, played = found
    start_seats = stored_seats = None
    if ladder.seats:
        held = None if checkpoint is None else checkpoint.seat_state
        start_seats = ladder_state.seats_from_json(held, ladder)
        stored_seats = ladder_state.seat_state(session, ladder)
    times = (codec.day_years(played), start_last)
    return LadderLog(
        ids, keys, start, start_games, stored, log, game_ids, after, last or 0, games, times, start_seats, stored_seats
    )


#: A stored payload of a two-player game between single players, as the app writes it (``json.dumps``) without
#: seats, with keys free of escapes: the groups are the two keys, the two ranks and the two advantages.  The
#: scores and a match's games that may follow are not read: the ratings read the ranks alone.
_KEY, _NUMBER = r'"([^"\\\n]*)"', r"(-?[0-9][0-9.eE+-]*)"
_KEPT = r'(?:, "scores": \[[-0-9.eE+, ]*\])?(?:, "match": \[[\[\]0-9, ]*\])?'
_PAIR = re.compile(
    rf'^(?:\{{"sides": \[\[{_KEY}\], \[{_KEY}\]\], "ranks": \[{_NUMBER}, {_NUMBER}\], '
    rf'"advantages": (?:null|\[{_NUMBER}, {_NUMBER}\]){_KEPT}\}}|(.*))$',
    re.MULTILINE,
)
#: Games read per chunk when the log is read as text.
CHUNK = 100_000


def _pair_log(
    session: Session, ladder: LadderRow, after: int, upto: int, index: dict[str, int]
) -> tuple[np.ndarray, rating.GameLog, np.ndarray] | None:
    """The counted games after ``after`` up to ``upto`` as (ids, GameLog, times played in µs) if every one is a
    two-player game between single players without seats, else None.

    Read as objects, a large log's payloads are millions of dictionaries (slow,
    and gigabytes); these are read as text a chunk at a time, and one regular
    expression per chunk takes their keys, ranks and advantages.  Any payload
    that does not match (teams, more sides, seats, keys with escapes) makes it
    give up, and the caller reads the payloads the general way.
    """
    if ladder.seats:
        return None
    sql = (
        "SELECT id, CAST(payload AS TEXT), played_at FROM games WHERE ladder_id = ? AND voided_at IS NULL AND id > ? "
        "AND id <= ? ORDER BY id"
    )
    stamp = codec.time_converter(session.get_bind().dialect)
    ids, i, j, outcome, advantage, played = [], [], [], [], [], []
    for rows in driver_chunks(session.connection(), sql, (ladder.id, after, upto), CHUNK):
        found = _PAIR.findall("\n".join(row[1] for row in rows))
        if len(found) != len(rows) or any(row[6] for row in found):
            return None
        a, b, r1, r2, h1, h2, _ = zip(*found, strict=True)
        ids.append(np.fromiter((row[0] for row in rows), np.int64, len(rows)))
        played.append(codec.micros_column([row[2] for row in rows], stamp))
        i.append(np.fromiter(map(index.__getitem__, a), np.int64, len(rows)))
        j.append(np.fromiter(map(index.__getitem__, b), np.int64, len(rows)))
        first, second = np.array(r1, dtype=np.float64), np.array(r2, dtype=np.float64)
        outcome.append(np.where(first < second, 1.0, np.where(first == second, 0.5, 0.0)))
        if any(h1):  # an ad-hoc team's advantage (most games have none: "null")
            h = np.array([h1, h2])
            h[h == ""] = "0"
            advantage.append(h.astype(np.float64)[0] - h.astype(np.float64)[1])
        else:
            advantage.append(np.zeros(len(rows)))
    if not ids:
        return np.zeros(0, np.int64), encode([], index), np.zeros(0, np.int64)
    log = rating.GameLog.from_pairs(
        np.concatenate(i), np.concatenate(j), np.concatenate(outcome), np.concatenate(advantage)
    )
    return np.concatenate(ids), log, np.concatenate(played)


@dataclass
class Tail:
    """The part of a ladder's log that a change at game ``first_game_id`` reaches, ready for replay.

    ``log`` holds, in order, the games from ``first_game_id`` on that share a
    player with the changed players, directly or through earlier such games;
    ``player_ids``/``keys`` are every player they reach, with ``start`` their
    vectors and ``start_games`` their games (experience) just before the first
    game of the tail they play (their earlier games are untouched by the
    change).  No other game or player can change.  Voided games are left out.
    ``times`` are as :class:`LadderLog`'s.
    """

    player_ids: np.ndarray
    keys: list[str]
    start: np.ndarray
    start_games: np.ndarray
    log: rating.GameLog
    game_ids: np.ndarray
    times: tuple[np.ndarray, np.ndarray]
    #: The learned seats just before the tail's first game naming each (None without seats).
    start_seats: Seats | None = None
    #: The seats the tail reaches (the others stay as the ladder has them), and the last game read, reached or not.
    reached_seats: tuple[str, ...] = ()
    read_to: int = -1


@dataclass
class Known:
    """Players a tail read on from a replay reached already (:func:`read_tail`), with their state after it: the
    sorted ids, their keys, vectors, experience (or variances) and latest game times (None: the steps ignore
    time)."""

    player_ids: np.ndarray
    keys: list[str]
    C: np.ndarray
    games: np.ndarray
    last: np.ndarray | None


def read_tail(
    session: Session,
    ladder: LadderRow,
    first_game_id: int,
    changed: Sequence[str],
    changed_seats: dict[str, list[float]] | None = None,
    left_out: int = -1,
    known: Known | None = None,
) -> Tail:
    """The games from ``first_game_id`` on that the players ``changed`` reach, and the reached players' state.

    ``changed_seats`` are seats changed too, with the state to start them from (a voided game's seats, from
    their state before it).  ``left_out`` counts as voided (a game whose void is prepared before it commits).
    ``known`` players are reached already, from the state given (a prepared tail read on from its last game);
    they are in the tail only if its games name them."""
    with no_cyclic_gc():
        return _read_tail(session, ladder, first_game_id, changed, changed_seats, left_out, known)


def _read_tail(
    session: Session,
    ladder: LadderRow,
    first_game_id: int,
    changed: Sequence[str],
    changed_seats: dict[str, list[float]] | None,
    left_out: int,
    known: Known | None,
) -> Tail:
    reached = dict.fromkeys(changed, first_game_id)  # key -> the first game of the tail it plays
    was_known = set() if known is None else set(known.keys)
    # A seat is shared state, reached like a player: from the first reached game naming it, every later game
    # naming it is reached too, and it starts from its state just before that game.
    seat_start: dict[str, list[float]] = dict(changed_seats or {})
    game_ids, payloads, played, read_to = [], [], [], -1
    for game_id, payload, seat_state, when in _games_from(session, ladder.id, first_game_id):
        read_to = game_id
        keys = [key for side in payload["sides"] for key in side]
        taken = [name for name in payload.get("seats") or [] if name is not None]
        hit = not reached.keys().isdisjoint(keys) or not was_known.isdisjoint(keys)
        if hit or not seat_start.keys().isdisjoint(taken):
            for key in keys:
                reached.setdefault(key, game_id)
            for name in taken:
                assert seat_state is not None  # a game that takes seats keeps their state (Game.seat_state)
                seat_start.setdefault(name, seat_state[name])
            game_ids.append(game_id)
            payloads.append(payload)
            played.append(when)
    rows = _players_by_id(session, ladder.id, reached)
    player_ids = np.array([row[0] for row in rows], dtype=np.int64)
    keys = [row[1] for row in rows]
    cutoffs = [reached[key] for key in keys]
    mine = np.zeros(len(player_ids), dtype=bool)  # reached already: their state after the replay that did
    if known is not None:
        at = np.searchsorted(known.player_ids, player_ids)
        mine = at < len(known.player_ids)
        mine[mine] = known.player_ids[at[mine]] == player_ids[mine]
    new = np.flatnonzero(~mine)  # from their stored state just before their first game of the tail
    found = state_before(
        session, ladder, player_ids[new], [rows[n][2] for n in new], [cutoffs[n] for n in new], left_out
    )
    start, start_games, start_last = (np.empty((len(player_ids), *part.shape[1:])) for part in found)
    start[new], start_games[new], start_last[new] = found
    if known is not None:
        start[mine], start_games[mine] = known.C[at[mine]], known.games[at[mine]]
        start_last[mine] = np.nan if known.last is None else known.last[at[mine]]
    log = encode(payloads, {key: n for n, key in enumerate(keys)}, ladder.seat_index())
    seats = None
    if ladder.seats:
        seats = ladder_state.seat_state(session, ladder)  # seats the tail does not reach stay as they are
        assert seats is not None  # (the ladder has seats)
        for name, (advantage, information) in seat_start.items():
            n = ladder.seat_index()[name]
            seats.advantage[n], seats.information[n] = advantage, information
    times = (codec.day_years(np.array(played, dtype=np.int64)), start_last)
    game_ids_read = np.array(game_ids, dtype=np.int64)
    reached_seats = tuple(seat_start)
    return Tail(player_ids, keys, start, start_games, log, game_ids_read, times, seats, reached_seats, read_to)


def read_since(
    session: Session,
    ladder: LadderRow,
    after_game_id: int,
    player_ids: np.ndarray,
    vectors: np.ndarray,
    games: np.ndarray,
    last: np.ndarray | None,
    seats: Seats | None,
) -> Tail:
    """The counted games after ``after_game_id`` (those committed since a replay read the log up to it) and
    the players they name, each starting from its row of ``vectors``/``games``/``last`` (of the sorted
    ``player_ids``; ``last`` None: the steps ignore time) or, a player new since, from its initial vector; the
    seats from ``seats``."""
    games_since = _games_from(session, ladder.id, after_game_id + 1)
    rows = [(game_id, payload, when) for game_id, payload, _, when in games_since]
    named = dict.fromkeys(key for row in rows for side in row[1]["sides"] for key in side)
    found = _players_by_id(session, ladder.id, named)
    ids = np.array([row[0] for row in found], dtype=np.int64)
    keys = [row[1] for row in found]
    start = codec.unpack_rows([row[2] for row in found], 2 * ladder.k)
    start_games, start_last = np.zeros(len(ids)), np.full(len(ids), np.nan)
    if ladder.variance_rule:
        start_games[:] = np.nan  # a player new since has no variance yet (mathematics §3b)
    at = np.searchsorted(player_ids, ids)
    known = at < len(player_ids)
    known[known] = player_ids[at[known]] == ids[known]
    start[known], start_games[known] = vectors[at[known]], games[at[known]]
    if last is not None:
        start_last[known] = last[at[known]]
    log = encode([row[1] for row in rows], {key: n for n, key in enumerate(keys)}, ladder.seat_index())
    game_ids = np.array([row[0] for row in rows], dtype=np.int64)
    times = (codec.day_years(np.array([row[2] for row in rows], dtype=np.int64)), start_last)
    return Tail(ids, keys, start, start_games, log, game_ids, times, None if seats is None else seats.copy())


def _games_from(session: Session, ladder_id: int, first_game_id: int) -> Iterator[tuple[int, dict, dict | None, int]]:
    """(id, payload, seat state, time played in µs) of the counted games from ``first_game_id`` on, in log order,
    read a chunk at a time through the driver: a million rows turned into objects by one call of SQLAlchemy's
    compiled result code would hold the interpreter (every other thread, ``/healthz`` too)."""
    connection = session.connection()
    payload = result_converter(Game.__table__.c.payload, connection.dialect)
    seat_state = result_converter(Game.__table__.c.seat_state, connection.dialect)
    stamp = codec.time_converter(connection.dialect)
    sql = (
        "SELECT id, payload, seat_state, played_at FROM games WHERE ladder_id = ? AND voided_at IS NULL AND id >= ? "
        "ORDER BY id"
    )
    for rows in driver_chunks(connection, sql, (ladder_id, first_game_id)):
        played = codec.micros_column([row[3] for row in rows], stamp).tolist()
        for (game_id, p, state, _), when in zip(rows, played, strict=True):
            yield game_id, payload(p), seat_state(state), when


def _players_by_id(session: Session, ladder_id: int, wanted: Mapping[str, object]) -> list[tuple]:
    """(id, key, initial) of the players ``wanted`` (by key), in id order.  Many (over
    :data:`~app.storage.state_before.SCAN_PLAYERS`) are read by one scan in id order, kept by key; a few by key,
    then sorted (no sort of a million keys or rows: one call that long would hold the interpreter)."""
    if len(wanted) > SCAN_PLAYERS:
        sql = "SELECT id, key, initial FROM players WHERE ladder_id = ? ORDER BY id"
        chunks = driver_chunks(session.connection(), sql, (ladder_id,))
        return [row for rows in chunks for row in rows if row[1] in wanted]
    keys, rows = list(wanted), []
    for lo in range(0, len(keys), MAX_KEYS_IN_QUERY):
        part = keys[lo : lo + MAX_KEYS_IN_QUERY]
        marks = ", ".join("?" * len(part))
        sql = f"SELECT id, key, initial FROM players WHERE ladder_id = ? AND key IN ({marks})"
        rows += driver_fetchall(session.connection(), sql, (ladder_id, *part))
    return sorted(rows)
