"""Where a game is applied: lock the participants, call app.rating, write the rows.

One path serves a single game, a batch and a bulk import: the games are
encoded as a :class:`~app.rating.GameLog`, applied with
:func:`~app.rating.replay_history` (exactly the per-game rule, batched where
games share no player), and written with one multi-row insert per table.

Exactly-once: an ``Idempotency-Key`` header (or the game's ``external_id``) is
recorded with the response in the same transaction as the game; a retry finds
it and gets the stored response.  The check is repeated after the
participants are locked, so concurrent identical requests apply once.

No lost updates: on PostgreSQL the participants' rows are locked
``ORDER BY id … FOR UPDATE`` (one order, no deadlocks); on SQLite the write
transaction is ``BEGIN IMMEDIATE``.  Game ids (the log order) are allocated
after the locks are taken, so games sharing a player are numbered in the order
they were applied; disjoint games commute.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

import numpy as np
from sqlalchemy import func, select, text
from sqlalchemy.orm import Session

from app import rating
from app.db import bulk_insert, bulk_update, driver_fetchall, driver_sql
from app.errors import Conflict, InvalidInput, NotFound
from app.games.schemas import BatchIn, GameIn, GameOut
from app.models import Checkpoint, Game, IdempotencyKey, Ladder, Participant, Player, unpack
from app.schemas import Page

Progress = Callable[[str, int, int], None] | None


def request_hash(body: GameIn | BatchIn) -> str:
    canonical = json.dumps(body.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


def stored_response(session: Session, ladder: Ladder, key: str | None, digest: str) -> dict | None:
    """The response recorded for ``key``, or None; 409 if the key came with another body."""
    if key is None:
        return None
    row = session.get(IdempotencyKey, (ladder.id, key))
    if row is None:
        return None
    if row.request_hash != digest:
        raise Conflict(f"Idempotency key {key!r} was already used with a different request body.")
    return row.response


def post_games(
    session: Session, ladder: Ladder, games: list[GameIn], idempotency_key: str | None, digest: str, batch: bool
) -> dict:
    """Apply ``games`` in order inside the caller's transaction; return the response body."""
    if idempotency_key is None and not batch and games[0].external_id is not None:
        idempotency_key = "external_id:" + games[0].external_id
    if (found := stored_response(session, ladder, idempotency_key, digest)) is not None:
        return found
    prefix = "games" if batch else None
    locked = _lock_players(session, ladder, games, prefix)
    # A concurrent identical request may have committed while we waited for the locks.
    if (found := stored_response(session, ladder, idempotency_key, digest)) is not None:
        return found
    _check_external_ids(session, ladder, games, prefix)
    applied = _apply(session, ladder, locked, games, None)
    out = [applied.response(g) for g in range(len(games))]
    response = {"games": out} if batch else out[0]
    if idempotency_key is not None:
        session.add(
            IdempotencyKey(
                ladder_id=ladder.id, key=idempotency_key, request_hash=digest, status_code=201, response=response
            )
        )
    session.flush()
    return response


def import_games(session: Session, ladder: Ladder, games: list[GameIn], progress: Progress = None) -> int:
    """Apply ``games`` in order, all or nothing, without building responses (``melo import``).

    ``progress(stage, done, total)`` reports the replay and the writes.
    """
    if not games:
        return 0
    locked = _lock_players(session, ladder, games, "games")
    _check_external_ids(session, ladder, games, "games")
    _apply(session, ladder, locked, games, progress)
    return len(games)


def _field(prefix: str | None, index: int, rest: str) -> str:
    return f"{prefix}[{index}].{rest}" if prefix else rest


@dataclass
class Locked:
    """The participants' rows, locked, with their vectors as the rows of ``C``."""

    index: dict[str, int]
    ids: np.ndarray
    C: np.ndarray
    counts: np.ndarray  # games, wins, draws, losses, comparisons
    last_played: list[datetime | None]


#: Above this many players a request locks the ladder's whole player table (in id
#: order, as always) instead of listing the keys, which would exceed driver limits.
MAX_KEYS_IN_QUERY = 10_000

_LOCK_COLUMNS = (
    Player.id,
    Player.key,
    Player.vector,
    Player.games,
    Player.wins,
    Player.draws,
    Player.losses,
    Player.comparisons,
    Player.last_played_at,
)


def _lock_players(session: Session, ladder: Ladder, games: list[GameIn], prefix: str | None) -> Locked:
    """Every participant's row, created if allowed, locked in id order (one order: no deadlocks)."""
    keys = sorted({key for game in games for side in game.sides for key in side.players})
    rows = _select_for_update(session, ladder, keys)
    if len(rows) < len(keys) and ladder.auto_create_players:
        found = {row.key for row in rows}
        _create(session, ladder, [k for k in keys if k not in found])
        rows = _select_for_update(session, ladder, keys)
    index = {row.key: n for n, row in enumerate(rows)}
    if len(index) < len(keys):
        for g, game in enumerate(games):
            for s, side in enumerate(game.sides):
                for n, key in enumerate(side.players):
                    if key not in index:
                        field = _field(prefix, g, f"sides[{s}].players[{n}]")
                        raise InvalidInput(
                            f"{field}: unknown player {key!r} (this ladder does not create players automatically)",
                            errors=[{"field": field, "message": f"unknown player {key!r}"}],
                        )
    dim = 2 * ladder.k
    return Locked(
        index=index,
        ids=np.array([row.id for row in rows], dtype=np.int64),
        C=np.frombuffer(b"".join(row.vector for row in rows), dtype="<f8").astype(np.float64).reshape(-1, dim),
        counts=np.array([tuple(row[3:8]) for row in rows], dtype=np.int64).reshape(-1, 5),
        last_played=[row.last_played_at for row in rows],
    )


def _select_for_update(session: Session, ladder: Ladder, keys: list[str]) -> list:
    query = select(*_LOCK_COLUMNS).where(Player.ladder_id == ladder.id)
    if len(keys) <= MAX_KEYS_IN_QUERY:
        return session.execute(query.where(Player.key.in_(keys)).order_by(Player.id).with_for_update()).all()
    wanted = set(keys)
    return [row for row in session.execute(query.order_by(Player.id).with_for_update()) if row.key in wanted]


def _create(session: Session, ladder: Ladder, missing: list[str]) -> None:
    """New players with their seeded initial vectors (SPEC §2); a concurrent creator's rows are kept."""
    C0 = rating.initial_vectors(missing, ladder.k, ladder.seed, ladder.init_scale, ladder.init_offset)
    blobs = _blobs(C0)
    n, zeros = len(missing), [0] * len(missing)
    columns = {"ladder_id": [ladder.id] * n, "key": missing, "initial": blobs, "vector": blobs}
    columns |= {c: zeros for c in ("games", "wins", "draws", "losses", "comparisons")}
    columns["created_at"] = [datetime.now(UTC)] * n
    bulk_insert(session.connection(), Player.__table__, columns, on_conflict_do_nothing="ladder_id, key")


def _check_external_ids(session: Session, ladder: Ladder, games: list[GameIn], prefix: str | None) -> None:
    ids = [g.external_id for g in games if g.external_id is not None]
    if not ids:
        return
    taken: set[str] = set()
    for lo in range(0, len(ids), MAX_KEYS_IN_QUERY):
        part = ids[lo : lo + MAX_KEYS_IN_QUERY]
        taken.update(
            session.scalars(select(Game.external_id).where(Game.ladder_id == ladder.id, Game.external_id.in_(part)))
        )
    seen: set[str] = set()
    for n, game in enumerate(games):
        ext = game.external_id
        if ext is not None and (ext in taken or ext in seen):
            field = _field(prefix, n, "external_id")
            raise Conflict(f"{field}: a game with external_id {ext!r} exists already.", errors=[{"field": field}])
        if ext is not None:
            seen.add(ext)


@dataclass
class Applied:
    """The games as applied: ids, log, history, and what a response needs."""

    ids: list[int]
    games: list[GameIn]
    payloads: list[dict]
    played_at: list[datetime]
    keys: list[str]
    log: rating.GameLog
    history: rating.History

    def response(self, g: int) -> dict:
        """The API body of game ``g`` (the same shape :func:`get_game` rebuilds from the rows)."""
        log, history = self.log, self.history
        sides = []
        for s in range(log.side_ptr[g], log.side_ptr[g + 1]):
            members = np.flatnonzero(log.member_side[log.member_ptr[g] : log.member_ptr[g + 1]] == s)
            members += log.member_ptr[g]
            sides.append(
                {
                    "players": [
                        {
                            "key": self.keys[log.member_player[t]],
                            "before": history.before[t].tolist(),
                            "after": history.after[t].tolist(),
                        }
                        for t in members
                    ],
                    "rank": self.payloads[g]["ranks"][len(sides)],
                    "actual_score": float(history.actual[s]),
                    "expected_score": float(history.expected[s]),
                }
            )
        external_id = self.games[g].external_id
        return GameOut(
            id=self.ids[g], seq=self.ids[g], played_at=self.played_at[g], external_id=external_id, sides=sides
        ).model_dump(mode="json")


def _ranks(game: GameIn) -> list[float]:
    if game.sides[0].rank is not None:
        return [float(side.rank) for side in game.sides]
    return rating.ranks_from_scores([side.score for side in game.sides]).tolist()


def _payloads(games: Sequence[GameIn]) -> list[dict]:
    """Each game's stored input (SPEC §13): sides of player keys, ranks, advantages in logits or None."""
    payloads = []
    for game in games:
        advantages = [side.logits for side in game.sides]
        payloads.append(
            {
                "sides": [side.players for side in game.sides],
                "ranks": _ranks(game),
                "advantages": advantages if any(a != 0.0 for a in advantages) else None,
            }
        )
    return payloads


def encode(payloads: Sequence[dict], index: dict[str, int]) -> rating.GameLog:
    """Stored games as a GameLog whose player indices come from ``index`` (key → row)."""
    if all(len(p["sides"]) == 2 and len(p["sides"][0]) == len(p["sides"][1]) == 1 for p in payloads):
        # Two single players per game, the common case: encoded without a Python object per game.
        i = np.array([index[p["sides"][0][0]] for p in payloads], dtype=np.int64)
        j = np.array([index[p["sides"][1][0]] for p in payloads], dtype=np.int64)
        ranks = np.array([p["ranks"] for p in payloads], dtype=np.float64).reshape(-1, 2)
        outcome = np.where(ranks[:, 0] < ranks[:, 1], 1.0, np.where(ranks[:, 0] == ranks[:, 1], 0.5, 0.0))
        h = np.array([p["advantages"] or (0.0, 0.0) for p in payloads], dtype=np.float64).reshape(-1, 2)
        return rating.GameLog.from_pairs(i, j, outcome, h[:, 0] - h[:, 1])
    encoded = [
        rating.Game(tuple(tuple(index[k] for k in side) for side in p["sides"]), p["ranks"], p["advantages"])
        for p in payloads
    ]
    return rating.GameLog.from_games(encoded)


def learning_rate(ladder: Ladder) -> rating.LearningRate:
    """The ladder's η, shrinking with each player's games when it has an ``eta_tau``."""
    return rating.LearningRate(ladder.eta, ladder.eta_tau)


@dataclass
class LadderLog:
    """A ladder's players (id order) and event log, ready for replay or a refit.

    ``start`` are the vectors the log replays from: the latest checkpoint's (for
    players it holds) and the initial vectors otherwise, or all initial vectors
    when read ``from_start``; ``start_games`` the games each player had played by
    then; ``log`` holds the games after that point, in order.
    """

    player_ids: np.ndarray
    keys: list[str]
    start: np.ndarray
    start_games: np.ndarray
    stored: np.ndarray
    log: rating.GameLog
    after_game_id: int
    last_game_id: int


def read_log(session: Session, ladder: Ladder, from_start: bool = False) -> LadderLog:
    rows = driver_fetchall(
        session.connection(),
        "SELECT id, key, initial, vector FROM players WHERE ladder_id = ? ORDER BY id",
        (ladder.id,),
    )
    dim = 2 * ladder.k
    ids = np.array([r[0] for r in rows], dtype=np.int64)
    keys = [r[1] for r in rows]

    def matrix(column: int) -> np.ndarray:
        return np.frombuffer(b"".join(r[column] for r in rows), dtype="<f8").astype(np.float64).reshape(-1, dim)

    start, after = matrix(2), 0
    start_games = np.zeros(len(ids))
    checkpoint = None if from_start else latest_checkpoint(session, ladder)
    if checkpoint is not None:
        held = np.frombuffer(checkpoint.player_ids, dtype="<i8")
        rows_of = np.searchsorted(ids, held)
        start[rows_of] = np.frombuffer(checkpoint.vectors, dtype="<f8").reshape(-1, dim)
        after = checkpoint.after_game_id
        counts = session.execute(
            select(Participant.player_id, func.count())
            .join(Game, Game.id == Participant.game_id)
            .where(Game.ladder_id == ladder.id, Game.id <= after)
            .group_by(Participant.player_id)
        ).all()
        for player_id, n in counts:
            start_games[np.searchsorted(ids, player_id)] = n
    payloads = session.scalars(
        select(Game.payload).where(Game.ladder_id == ladder.id, Game.id > after).order_by(Game.id)
    ).all()
    last = session.scalar(select(func.max(Game.id)).where(Game.ladder_id == ladder.id)) or 0
    index = {key: n for n, key in enumerate(keys)}
    return LadderLog(ids, keys, start, start_games, matrix(3), encode(payloads, index), after, last)


def latest_checkpoint(session: Session, ladder: Ladder) -> Checkpoint | None:
    return session.scalar(
        select(Checkpoint).where(Checkpoint.ladder_id == ladder.id).order_by(Checkpoint.id.desc()).limit(1)
    )


def _apply(session: Session, ladder: Ladder, locked: Locked, games: list[GameIn], progress: Progress) -> Applied:
    """Apply the validated games to the locked rows (SPEC §3-§6) and write the log, history and ratings."""
    payloads = _payloads(games)
    log = encode(payloads, locked.index)
    history = rating.replay_history(
        locked.C, log, learning_rate(ladder), _stage(progress, "rating"), games0=locked.counts[:, 0]
    )
    now = datetime.now(UTC)
    played_at = [game.played_at or now for game in games]
    ids = _allocate_ids(session, len(games))
    n_games = len(games)

    connection = session.connection()
    columns = {
        "id": ids,
        "ladder_id": [ladder.id] * n_games,
        "external_id": [game.external_id for game in games],
        "played_at": played_at,
        "created_at": [now] * n_games,
        "payload": payloads,
    }
    bulk_insert(connection, Game.__table__, columns, progress=_stage(progress, "games"))

    members_per_game = np.diff(log.member_ptr)
    member_game = np.repeat(np.arange(n_games), members_per_game)
    sides_per_game = np.diff(log.side_ptr)
    member_n_sides = sides_per_game[member_game]
    actual = history.actual[log.member_side]
    columns = {
        "game_id": np.asarray(ids)[member_game].tolist(),
        "player_id": locked.ids[log.member_player].tolist(),
        "side": (log.member_side - np.repeat(log.side_ptr[:-1], members_per_game)).tolist(),
        "before": _blobs(history.before),
        "after": _blobs(history.after),
        "actual_score": actual.tolist(),
        "expected_score": history.expected[log.member_side].tolist(),
    }
    bulk_insert(connection, Participant.__table__, columns, progress=_stage(progress, "history"))
    _update_players(session, locked, log, history.C, member_game, member_n_sides, actual, played_at)
    return Applied(ids, games, payloads, played_at, list(locked.index), log, history)


def _update_players(
    session: Session,
    locked: Locked,
    log: rating.GameLog,
    C: np.ndarray,
    member_game: np.ndarray,
    member_n_sides: np.ndarray,
    actual: np.ndarray,
    played_at: list[datetime],
) -> None:
    """New vectors and W/D/L counters: a side above the average share 1/N won, at it drew, below it lost."""
    n = len(locked.ids)
    par = 1.0 / member_n_sides
    player = log.member_player
    counts = locked.counts.copy()
    counts[:, 0] += np.bincount(player, minlength=n)
    counts[:, 1] += np.bincount(player, weights=actual > par, minlength=n).astype(np.int64)
    counts[:, 2] += np.bincount(player, weights=actual == par, minlength=n).astype(np.int64)
    counts[:, 3] += np.bincount(player, weights=actual < par, minlength=n).astype(np.int64)
    counts[:, 4] += np.bincount(player, weights=member_n_sides - 1, minlength=n).astype(np.int64)
    stamps = np.array([t.timestamp() for t in played_at])
    latest = np.full(n, -np.inf)
    np.maximum.at(latest, player, stamps[member_game])
    last_played = []
    for last, stamp in zip(locked.last_played, latest.tolist(), strict=True):
        new = datetime.fromtimestamp(stamp, UTC) if np.isfinite(stamp) else None
        last_played.append(new if last is None or (new is not None and new > last) else last)
    columns = {"vector": _blobs(C), "last_played_at": last_played}
    columns |= {
        name: counts[:, n].tolist() for n, name in enumerate(("games", "wins", "draws", "losses", "comparisons"))
    }
    bulk_update(session.connection(), Player.__table__, ("id", locked.ids.tolist()), columns)


def _allocate_ids(session: Session, n: int) -> list[int]:
    """``n`` increasing game ids, taken while the participants are locked (they order the log)."""
    if session.get_bind().dialect.name == "postgresql":
        return list(
            session.scalars(
                text("SELECT nextval(pg_get_serial_sequence('games', 'id')) FROM generate_series(1, :n) ORDER BY 1"),
                {"n": n},
            )
        )
    # SQLite: the write transaction (BEGIN IMMEDIATE) excludes every other writer.
    start = (driver_sql(session.connection(), "SELECT max(id) FROM games", ()).scalar() or 0) + 1
    return list(range(start, start + n))


def _stage(progress: Progress, stage: str) -> Callable[[int, int], None] | None:
    return None if progress is None else lambda done, total: progress(stage, done, total)


def _blobs(vectors: np.ndarray) -> list[bytes]:
    """Each row as exact float64 bytes (see :func:`app.models.pack`)."""
    raw = np.ascontiguousarray(vectors, dtype="<f8").tobytes()
    width = 8 * vectors.shape[1]
    return [raw[lo : lo + width] for lo in range(0, len(raw), width)]


def _game_out(game: Game, members: dict[str, Participant]) -> GameOut:
    """A game as the API shows it, from its log row and its participants' rows."""
    sides = []
    for keys, rank in zip(game.payload["sides"], game.payload["ranks"], strict=True):
        parts = [members[key] for key in keys]
        players = [
            {"key": k, "before": unpack(p.before), "after": unpack(p.after)} for k, p in zip(keys, parts, strict=True)
        ]
        sides.append(
            {
                "players": players,
                "rank": rank,
                "actual_score": parts[0].actual_score,
                "expected_score": parts[0].expected_score,
            }
        )
    return GameOut(id=game.id, seq=game.id, played_at=game.played_at, external_id=game.external_id, sides=sides)


def _games_out(session: Session, games: list[Game]) -> list[GameOut]:
    by_game: dict[int, dict[str, Participant]] = {g.id: {} for g in games}
    rows = session.execute(
        select(Participant, Player.key)
        .join(Player, Player.id == Participant.player_id)
        .where(Participant.game_id.in_(list(by_game)))
    ).all()
    for part, key in rows:
        by_game[part.game_id][key] = part
    return [_game_out(g, by_game[g.id]) for g in games]


def list_games(session: Session, ladder: Ladder, limit: int, cursor: int | None) -> Page[GameOut]:
    query = select(Game).where(Game.ladder_id == ladder.id)
    if cursor is not None:
        query = query.where(Game.id < cursor)
    games = list(session.scalars(query.order_by(Game.id.desc()).limit(limit)))
    items = _games_out(session, games)
    return Page[GameOut](items=items, next_cursor=str(items[-1].id) if len(items) == limit else None)


def get_game(session: Session, ladder: Ladder, game_id: int) -> GameOut:
    game = session.scalar(select(Game).where(Game.ladder_id == ladder.id, Game.id == game_id))
    if game is None:
        raise NotFound(f"There is no game {game_id} in ladder {ladder.slug!r}.")
    return _games_out(session, [game])[0]
