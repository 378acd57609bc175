"""Where a game is applied: lock the participants, call app.rating, write the rows.

One path serves a group of posted requests, a batch and a bulk import: the
games become one :class:`~app.rating.GameLog`, :func:`~app.rating.replay_history`
applies them (exactly the per-game rule, batched where games share no player)
and :mod:`app.storage` writes each table with one multi-row insert.

Exactly-once: an ``Idempotency-Key`` header (or the game's ``external_id``) is
recorded with the response in the same transaction as the game; a retry finds
it and gets the stored response.  The check is repeated after the
participants are locked, so concurrent identical requests apply once.

No lost updates: on PostgreSQL the participants' rows are locked
``ORDER BY id … FOR UPDATE`` (one order, no deadlocks); on SQLite the write
transaction is ``BEGIN IMMEDIATE``.  Game ids (the log order) are allocated
after the locks are taken, so games sharing a player are numbered in the order
they were applied; disjoint games commute.  A replay below the log's end (a
void, a merge, an applied refit) locks every player row and then the ladder's
row before it reads anything, so a game commit, even one between players new to
the ladder, never falls between what it reads and what it writes.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

import numpy as np
from sqlalchemy.orm import Session

from app import rating, storage
from app.core.errors import Conflict, InvalidInput, NotFound, Problem
from app.core.schemas import Page, iso
from app.domain.access import Caller, authorize, check_seats, ladder_for_read
from app.domain.player_keys import players_named
from app.domain.replays import replay_from, replay_log
from app.games.schemas import BatchIn, GameIn
from app.storage.ladders import LadderRow

Progress = Callable[[str, int, int], None] | None


def request_hash(body: GameIn | BatchIn) -> str:
    """A digest of the validated request: the same game sent again, however its JSON is spaced, hashes the same."""
    return hashlib.sha256(body.model_dump_json().encode()).hexdigest()


@dataclass
class Post:
    """One posted request: a game, or a batch applied all or nothing."""

    slug: str
    caller: Caller
    games: list[GameIn]
    idempotency_key: str | None
    digest: str
    batch: bool
    #: A new player's name: the key as the post spelled it, where case folding changed it.
    names: dict[str, str] = field(default_factory=dict)

    @property
    def record_key(self) -> str | None:
        """The key its response is recorded under: the Idempotency-Key, else a single game's external_id."""
        if self.idempotency_key is None and not self.batch and self.games[0].external_id is not None:
            return EXTERNAL + self.games[0].external_id
        return self.idempotency_key

    def field(self, index: int, rest: str) -> str:
        return f"games[{index}].{rest}" if self.batch else rest


@dataclass
class Group:
    """What a group of posts came to: one outcome per post, and the games applied per ladder."""

    outcomes: list[dict | Problem]
    applied: dict[int, int] = field(default_factory=dict)
    #: Per ladder: the version this group's commit makes, and the player rows it wrote.
    versions: dict[int, int] = field(default_factory=dict)
    written: dict[int, storage.players.Written] = field(default_factory=dict)
    #: Per ladder: each game applied, by number, as its post is answered (what the event stream sends).
    shown: dict[int, dict[int, dict]] = field(default_factory=dict)
    #: The ladder of each post applied (by its place in ``outcomes``).
    ladder_of: dict[int, int] = field(default_factory=dict)

    def answered(self) -> list[dict | Problem]:
        """The outcomes, each post applied by this commit as :class:`Committed`, naming the version it made."""
        out = list(self.outcomes)
        for n, ladder_id in self.ladder_of.items():
            out[n] = Committed(out[n], self.versions[ladder_id])
        return out


class Committed(dict):
    """A post's answer as its commit made it; ``ladder_version``: the ladder version that commit made (a read
    naming it as ``min_version`` sees the game, wherever it is served)."""

    def __init__(self, body: dict, ladder_version: int) -> None:
        super().__init__(body)
        self.ladder_version = ladder_version


def apply_posts(session: Session, posts: Sequence[Post]) -> Group:
    """Apply every valid post, in order, inside the caller's transaction.

    Each post is checked on its own (ladder, key, idempotency record,
    external ids, unknown players): a post that fails gets its own problem
    and changes nothing, and the others are applied.  Then each ladder's
    posts are applied together: one lock of all their participants, one
    replay, one insert per table.  An unexpected error raises, and the caller
    retries the posts one by one.
    """
    outcomes: list[dict | Problem | None] = [None] * len(posts)
    ladders: dict[str, LadderRow] = {}
    keys_checked: dict[tuple[int, Caller], str] = {}
    live: dict[int, list[int]] = {}
    claimed: dict[tuple[int, str], int] = {}
    same_as: dict[int, int] = {}
    external: dict[int, set[str]] = {}
    for n, post in enumerate(posts):
        try:
            if post.slug not in ladders:
                ladders[post.slug] = ladder_for_read(session, post.slug, fresh=True)
            ladder = ladders[post.slug]
            allowed = (ladder.id, post.caller)
            if allowed not in keys_checked:  # every post's own key, looked up once per group
                keys_checked[allowed] = authorize(session, ladder, post.caller, "write")
            key = post.record_key
            if key is not None:
                found = _stored(session, ladder, key, post.digest)
                if found is not None:
                    outcomes[n] = Replayed(found)
                    continue
                first = claimed.setdefault((ladder.id, key), n)
                if first != n:
                    if posts[first].digest != post.digest:
                        raise _reused(key)
                    same_as[n] = first
                    continue
            _resolve_players(ladder, post)
            seen = external.setdefault(ladder.id, set())
            _check_external_ids(session, ladder, post, seen)
            if not ladder.auto_create_players:
                _check_players_exist(session, ladder, post)
            _check_seats(ladder, post)
            seen.update(g.external_id for g in post.games if g.external_id is not None)
            live.setdefault(ladder.id, []).append(n)
        except Problem as exc:
            outcomes[n] = exc

    group = Group(outcomes)  # type: ignore[arg-type]
    by_id = {ladder.id: ladder for ladder in ladders.values()}
    # The ladders' games, and the responses recorded, are written together after the loop: one insert per table
    # whatever the number of ladders in the group.
    written: list[storage.games.NewGames] = []
    records: list[tuple[int, str, str, dict]] = []
    stamped = True
    for ladder_id in sorted(live):
        ladder = by_id[ladder_id]
        members = live[ladder_id]
        keys = [k for n in members for g in posts[n].games for side in g.sides for k in side.players]
        names = {key: name for n in reversed(members) for key, name in posts[n].names.items()}
        locked = storage.players.lock(session, ladder.id, 2 * ladder.k, keys, _initial(ladder), names)
        if len(locked.index) < len(set(keys)):
            raise Conflict("a player disappeared while the game was applied", field="sides")  # retried one by one
        # A concurrent identical request (another worker) may have committed while we waited for the locks.
        for n in list(members):
            key = posts[n].record_key
            if key is not None and (found := _stored(session, ladder, key, posts[n].digest)) is not None:
                outcomes[n] = Replayed(found)
                members.remove(n)
        games = [g for n in members for g in posts[n].games]
        if not games:
            stamped = stamped and not (locked.created or locked.raced)  # rows made for nothing but replays: unsaved
            continue
        applied = _apply(session, ladder, locked, games, None, pending=written)
        storage.events.add(session, ladder.id, "game", *({"game": seq} for seq in applied.seqs))
        bodies = applied.responses()
        group.shown[ladder.id] = dict(zip(applied.seqs, bodies, strict=True))
        start = 0
        for n in members:
            post = posts[n]
            out = bodies[start : start + len(post.games)]
            start += len(post.games)
            outcomes[n] = {"games": out} if post.batch else out[0]
            group.ladder_of[n] = ladder.id
            if post.record_key is not None:
                records.append((ladder.id, post.record_key, post.digest, outcomes[n]))
        group.applied[ladder.id] = len(games)
        if applied.written is not None:
            group.written[ladder.id] = applied.written
    if written:
        storage.games.insert(session, written)
    storage.games.remember(session, records, datetime.now(UTC))
    for n, first in same_as.items():
        outcomes[n] = outcomes[first] if isinstance(outcomes[first], Problem) else Replayed(outcomes[first])
    # The players' rows were written with their ladder's new version (storage.players.save): none left to stamp.
    group.versions = storage.ladders.bump(session, list(group.applied), stamped=stamped)
    return group


class Replayed(dict):
    """The answer first given to a post whose idempotency key (or external id) was seen before: the game counted
    once, and this request applied nothing (``Idempotent-Replayed: true``)."""


def _stored(session: Session, ladder: LadderRow, key: str, digest: str) -> dict | None:
    """The response recorded for ``key``, or None; 409 if the key came with another body."""
    found = storage.games.stored_response(session, ladder.id, key)
    if found is None:
        return None
    if found[0] != digest:
        raise _reused(key)
    return found[1]


EXTERNAL = "external_id:"


def _reused(key: str) -> Conflict:
    if key.startswith(EXTERNAL):  # a single game's external_id, recorded as its idempotency key
        external_id = key[len(EXTERNAL) :]
        return Conflict(
            f"external_id: a game with external_id {external_id!r} exists already (with other content).",
            errors=[{"field": "external_id", "message": "taken by another game"}],
        )
    return Conflict(
        f"Idempotency key {key!r} was already used with a different request body.",
        errors=[{"field": "Idempotency-Key", "message": "already used with a different body"}],
    )


def _check_external_ids(session: Session, ladder: LadderRow, post: Post, seen: set[str]) -> None:
    ids = [g.external_id for g in post.games if g.external_id is not None]
    if not ids:
        return
    taken = storage.games.taken_external_ids(session, ladder.id, ids) | seen
    mine: set[str] = set()
    for n, game in enumerate(post.games):
        ext = game.external_id
        if ext is None:
            continue
        if ext in taken:
            name = post.field(n, "external_id")
            raise Conflict(f"{name}: a game with external_id {ext!r} exists already.", errors=[{"field": name}])
        if ext in mine:
            name = post.field(n, "external_id")
            raise Conflict(f"{name}: external_id {ext!r} appears twice in this batch.", errors=[{"field": name}])
        mine.add(ext)


def _resolve_players(ladder: LadderRow, post: Post) -> None:
    """Name each player of the post's games by the key the ladder knows them by: case-folded if it matches keys
    so, and through its aliases (:meth:`LadderRow.player_key`).  Two keys of one game that name one player are a
    422; a new player's spelling that folding changed becomes their name (``post.names``)."""
    if not ladder.case_insensitive_keys and not ladder.aliases:
        return
    games = []
    for g, game in enumerate(post.games):
        named = players_named(ladder, [key for side in game.sides for key in side.players])
        sides = []
        for s, side in enumerate(game.sides):
            players = []
            for m, key in enumerate(side.players):
                folded, player, first = next(named)
                if first != key:
                    name = post.field(g, f"sides[{s}].players[{m}]")
                    message = f"{key!r} and {first!r} are one player, {player!r}"
                    raise InvalidInput(f"{name}: {message}", errors=[{"field": name, "message": message}])
                if folded != key and player == folded:
                    post.names.setdefault(player, key)
                players.append(player)
            sides.append(side.model_copy(update={"players": players}))
        games.append(game.model_copy(update={"sides": sides}))
    post.games = games


def _check_players_exist(session: Session, ladder: LadderRow, post: Post) -> None:
    keys = sorted({k for g in post.games for side in g.sides for k in side.players})
    known = storage.players.existing(session, ladder.id, keys)
    for g, game in enumerate(post.games):
        for s, side in enumerate(game.sides):
            for n, key in enumerate(side.players):
                if key not in known:
                    name = post.field(g, f"sides[{s}].players[{n}]")
                    raise InvalidInput(
                        f"{name}: unknown player {key!r} (this ladder does not create players automatically)",
                        errors=[{"field": name, "message": f"unknown player {key!r}"}],
                    )


def _check_seats(ladder: LadderRow, post: Post) -> None:
    """Every seat a side takes is one the ladder names (422 naming the field otherwise)."""
    wanted = {
        post.field(g, f"sides[{s}].seat"): side.seat
        for g, game in enumerate(post.games)
        for s, side in enumerate(game.sides)
        if side.seat is not None
    }
    check_seats(ladder, wanted)


def _initial(ladder: LadderRow) -> Callable[[list[str]], np.ndarray] | None:
    """New players' seeded initial vectors (mathematics §2), if the ladder creates players."""
    if not ladder.auto_create_players:
        return None
    return ladder.initial_vectors


def import_games(
    session: Session, ladder: LadderRow, games: list[GameIn], progress: Progress = None, voided: Voided | None = None
) -> list[int]:
    """Apply ``games`` in order, all or nothing, without building responses (``melo import``); their ids.

    ``progress(stage, done, total)`` reports the replay and the writes.  With
    ``voided`` (restoring an export), the games are stored voided: in the log
    as an audit trail, with the history they would have had at their place,
    counting nowhere.
    """
    if not games:
        return []
    post = Post(ladder.slug, Caller(None), games, None, "", batch=True)
    _resolve_players(ladder, post)
    games = post.games
    _check_external_ids(session, ladder, post, set())
    if not ladder.auto_create_players:
        _check_players_exist(session, ladder, post)
    _check_seats(ladder, post)
    keys = [k for g in games for side in g.sides for k in side.players]
    locked = storage.players.lock(session, ladder.id, 2 * ladder.k, keys, _initial(ladder), post.names)
    ids = _apply(session, ladder, locked, games, progress, count=voided is None).ids
    if voided is not None:
        for game_id in ids:
            storage.games.void(session, ladder.id, game_id, voided.by, voided.reason, voided.at)
    # One event for the lot, not one per game: listeners read the ladder anew.
    storage.events.add(session, ladder.id, "ladder", {"imported": len(ids)})
    storage.ladders.bump(session, [ladder.id])
    return ids


@dataclass(frozen=True)
class Voided:
    """When a game was voided, by which key (its id), and why."""

    at: datetime
    by: str | None
    reason: str | None


@dataclass
class Applied:
    """The games as applied: ids, log, history, and what a response needs."""

    ids: list[int]
    seqs: list[int]
    games: list[GameIn]
    payloads: list[dict]
    played_at: list[datetime]
    keys: list[str]
    log: rating.GameLog
    history: rating.History
    now: datetime
    field: np.ndarray  # the field's mean vector after the games
    written: storage.players.Written | None = None  # the player rows, if the games count

    def responses(self) -> list[dict]:
        """The API body of every game: the shape :func:`game_body` gives a stored game."""
        log, history = self.log, self.history
        members = _members(
            [self.keys[p] for p in log.member_player.tolist()], history.before, history.after, self.field
        )
        member_side = log.member_side.tolist()
        actual, expected = history.actual.tolist(), history.expected.tolist()
        side_ptr, member_ptr = log.side_ptr.tolist(), log.member_ptr.tolist()
        out = []
        for g in range(log.n_games):
            players: dict[int, list[dict]] = {s: [] for s in range(side_ptr[g], side_ptr[g + 1])}
            for t in range(member_ptr[g], member_ptr[g + 1]):
                players[member_side[t]].append(members[t])
            sides = [(members, actual[s], expected[s]) for s, members in players.items()]
            game = self.games[g]
            payload = self.payloads[g]
            out.append(game_body(self.seqs[g], self.played_at[g], game.external_id, payload, sides))
        return out


def _members(keys: list[str], before: np.ndarray, after: np.ndarray, field: np.ndarray) -> list[dict]:
    """Each participant of a game as an answer shows them: their vectors before and after it, and the same as
    Elo-equivalent points, as the leaderboard shows a strength, against the field's mean vector ``field``."""
    elo_before = rating.elo_equivalent(rating.hodge_strength_against(before, field))
    elo_after = rating.elo_equivalent(rating.hodge_strength_against(after, field))
    columns = (keys, before.tolist(), after.tolist(), elo_before.tolist(), elo_after.tolist(), elo_after - elo_before)
    return [
        {"key": k, "before": b, "after": a, "elo_before": eb, "elo_after": ea, "elo_change": float(change)}
        for k, b, a, eb, ea, change in zip(*columns, strict=True)
    ]


def game_body(
    seq: int,
    played_at: datetime,
    external_id: str | None,
    payload: dict,
    sides: list[tuple[list[dict], float, float]],
) -> dict:
    """A game as the API shows it (``GameOut``), as JSON-ready values; ``payload`` is its stored input.  Its id is
    its number within the ladder (``seq``); the global id stays inside."""
    seats = payload.get("seats") or [None] * len(sides)
    out = [
        {"players": players, "rank": rank, "actual_score": actual, "expected_score": expected, "seat": seat}
        for (players, actual, expected), rank, seat in zip(sides, payload["ranks"], seats, strict=True)
    ]
    return {
        "id": seq,
        "seq": seq,
        "played_at": iso(played_at),
        "external_id": external_id,
        "sides": out,
        "voided_at": None,
        "voided_by": None,
        "reason": None,
    }


def _ranks(game: GameIn) -> list[float]:
    if game.sides[0].rank is not None:
        return [float(side.rank) for side in game.sides]
    return rating.ranks_from_scores([side.score for side in game.sides]).tolist()


def payloads(games: Sequence[GameIn]) -> list[dict]:
    """Each game's stored input (mathematics §13): sides of player keys, ranks, advantages in logits or None,
    and the seats taken (only when a side takes one)."""
    out = []
    for game in games:
        advantages = [side.logits for side in game.sides]
        payload = {
            "sides": [side.players for side in game.sides],
            "ranks": _ranks(game),
            "advantages": advantages if any(a != 0.0 for a in advantages) else None,
        }
        if any(side.seat is not None for side in game.sides):
            payload["seats"] = [side.seat for side in game.sides]
        out.append(payload)
    return out


def _apply(
    session: Session,
    ladder: LadderRow,
    locked: storage.players.Locked,
    games: list[GameIn],
    progress: Progress,
    count: bool = True,
    pending: list[storage.games.NewGames] | None = None,
) -> Applied:
    """Apply the validated games to the locked rows (mathematics §3-§6) and write the log, history and (if they
    ``count``) ratings; the log and history are added to ``pending`` instead, if given, for the caller to write
    with other ladders' (:func:`app.storage.games.insert`)."""
    stored = payloads(games)
    log = storage.log.encode(stored, locked.index, ladder.seat_index())
    # Shared state (the seats, the field's vector sum) is read under the ladder row's lock, which take_seqs takes:
    # before the replay when it needs the seats, else after it (the lock is then held only for the writes).
    seats = taken = None
    if log.side_seat is not None:
        taken = storage.ladders.take_seqs(session, ladder, len(games))
        seats = storage.ladders.seat_state(session, ladder)
    now = datetime.now(UTC)
    played_at = [game.played_at or now for game in games]
    rate, times = ladder.learning_rate(), None
    if rate.drift > 0:  # the steps wear with time away: the games' days and each player's latest
        days, micros = storage.players.day_years, storage.players.micros
        times = (days([micros(t) for t in played_at]), days([micros(t) for t in locked.last_played]))
    history = rating.replay_history(
        locked.C, log, rate, _stage(progress, "rating"), games0=locked.experience, seats=seats, times=times
    )
    seqs, kept, version, ids = taken or storage.ladders.take_seqs(session, ladder, len(games))
    created = locked.C[[locked.index[key] for key in locked.created]]  # at their initial vectors still
    field_sum, field_count = storage.ladders.field_sum(session, ladder, created, recount=locked.raced, kept=kept)
    ids = ids or storage.games.allocate_ids(session, len(games))
    members_per_game = np.diff(log.member_ptr)
    member_game = np.repeat(np.arange(len(games)), members_per_game)
    member_n_sides = np.diff(log.side_ptr)[member_game]
    actual = history.actual[log.member_side]
    new = storage.games.NewGames(
        ids=ids,
        seqs=seqs,
        ladder_id=ladder.id,
        external_ids=[game.external_id for game in games],
        played_at=played_at,
        created_at=now,
        payloads=stored,
        member_game=member_game,
        member_player=locked.ids[log.member_player],
        member_side=log.member_side - np.repeat(log.side_ptr[:-1], members_per_game),
        before=history.before,
        after=history.after,
        actual=actual,
        expected=history.expected[log.member_side],
        seat_states=storage.games.seat_states(log, history, ladder.seats or []),
    )
    if pending is None:
        storage.games.insert(session, [new], _stage(progress, "games"), _stage(progress, "history"))
    else:
        pending.append(new)
    if count and seats is not None:
        storage.ladders.save_seat_state(session, ladder.id, history.seats)
    written = None
    if count:
        draws, room = rating.two_sided_draws(log.side_ptr, history.actual, history.expected)
        storage.ladders.count(session, ladder.id, games=len(games), draws=draws, draw_room=room)
        counts, last_played = _counters(locked, log.member_player, member_game, member_n_sides, actual, played_at)
        field_sum = field_sum + (history.C - locked.C).sum(axis=0)
        # Each player's strength just after this batch (their last game in it), against the field then.
        strength_then = rating.hodge_strength_against(history.C, field_sum / max(field_count, 1))
        written = storage.players.Written(locked, history.C, counts, last_played, strength_then, history.experience)
        storage.players.save(session, ladder.id, written, version + 1)  # the version bump gives out
    storage.ladders.note_field(session, ladder.id, field_sum, field_count)
    field = field_sum / max(field_count, 1)
    return Applied(ids, seqs, games, stored, played_at, list(locked.index), log, history, now, field, written)


def _counters(
    locked: storage.players.Locked,
    player: np.ndarray,
    member_game: np.ndarray,
    member_n_sides: np.ndarray,
    actual: np.ndarray,
    played_at: list[datetime],
) -> tuple[np.ndarray, list[datetime | None]]:
    """W/D/L counters and last-played times: a side above the average share 1/N won, at it drew, below it lost."""
    n = len(locked.ids)
    counts = locked.counts.copy()
    rows = rating.record(actual, member_n_sides)
    for column in range(rows.shape[1]):
        counts[:, column] += np.bincount(player, weights=rows[:, column], minlength=n).astype(np.int64)
    stamps = np.array([t.timestamp() for t in played_at])
    latest = np.full(n, -np.inf)
    np.maximum.at(latest, player, stamps[member_game])
    last_played = []
    for last, stamp in zip(locked.last_played, latest.tolist(), strict=True):
        new = datetime.fromtimestamp(stamp, UTC) if np.isfinite(stamp) else None
        last_played.append(new if last is None or (new is not None and new > last) else last)
    return counts, last_played


def _stage(progress: Progress, stage: str) -> Callable[[int, int], None] | None:
    return None if progress is None else lambda done, total: progress(stage, done, total)


def void_game(session: Session, ladder: LadderRow, number: int, by: str, reason: str | None) -> dict:
    """Void a game: it stays in the log as an audit trail and counts nowhere; the games after it are replayed.

    The later games its players reach are replayed exactly from their state
    before it, so the ratings equal those of a ladder that never received it,
    and ``/audit`` stays consistent.  Checkpoints that saw it are superseded;
    if there were any, the ratings came through one, and the whole log is
    replayed from the latest checkpoint left.  The game is read again once
    every player row and the ladder's row are locked (a merge, a void or an
    applied refit may have rewritten it meanwhile).
    Every membership of a replayed game gets its new vectors and expected
    score.  Voiding a voided game changes nothing.
    """
    record = storage.games.get(session, ladder.id, number)
    if record is None:
        raise NotFound(f"There is no game {number} in ladder {ladder.slug!r}.")
    if record.voided_at is not None:
        return stored_body(record, field_mean(session, ladder))
    storage.players.lock_all(session, ladder.id)
    # Read again under the locks: a merge, void or applied refit that held them meanwhile may have rewritten
    # the game (its members, its seats' state before it), or voided it.
    record = storage.games.get(session, ladder.id, number)
    if record.voided_at is not None:
        return stored_body(record, field_mean(session, ladder))
    game_id = record.id
    now = datetime.now(UTC)
    storage.games.void(session, ladder.id, game_id, by, reason, now)
    # Its share of what the draw model is fitted on comes off too (each side's scores, from its first member).
    sides = [next(m for m in record.members if m.side == s) for s in range(len(record.payload["sides"]))]
    actual, expected = (np.array([getattr(m, name) for m in sides]) for name in ("actual_score", "expected_score"))
    draws, room = rating.two_sided_draws(np.array([0, len(sides)]), actual, expected)
    storage.ladders.count(session, ladder.id, games=-1, draws=-draws, draw_room=-room)
    superseded = storage.refits.supersede_checkpoints(session, ladder.id, game_id)
    storage.seasons.mark_changed(session, ladder.id, [game_id], now)  # its season's archive stays as it was
    # Its record comes off its players' counters (it depends on the outcome only, not on the vectors).
    members = [m.player_id for m in record.members]
    shares = np.array([m.actual_score for m in record.members])
    record_of = rating.record(shares, np.full(len(shares), len(record.payload["sides"])))
    storage.players.uncount(session, ladder.id, members, record_of)
    storage.players.refresh_last_played(session, ladder.id, members)
    if superseded:  # players the tail does not reach hold that checkpoint's vectors: replay from the one before
        replay_log(session, ladder)
    else:
        replay_from(session, ladder, game_id + 1, [m.key for m in record.members], record.seat_state)
    storage.events.add(session, ladder.id, "void", {"game": number})
    storage.ladders.bump(session, [ladder.id])
    return stored_body(storage.games.get(session, ladder.id, number), field_mean(session, ladder))


def field_mean(session: Session, ladder: LadderRow) -> np.ndarray:
    """The mean vector of the ladder's players now (the kept sum: one row read)."""
    total, count = storage.ladders.field_sum(session, ladder)
    return total / max(count, 1)


def stored_body(record: storage.games.GameRecord, field: np.ndarray) -> dict:
    """A stored game as the API shows it (the same shape as the response to its post), its players' Elo-equivalent
    points against the field's mean vector ``field`` (today's)."""
    by_key = {m.key: m for m in record.members}
    sides = []
    for keys in record.payload["sides"]:
        parts = [by_key[key] for key in keys]
        before, after = np.array([p.before for p in parts]), np.array([p.after for p in parts])
        players = _members([p.key for p in parts], before, after, field)
        sides.append((players, parts[0].actual_score, parts[0].expected_score))
    body = game_body(record.seq, record.played_at, record.external_id, record.payload, sides)
    if record.voided_at is not None:
        body |= {"voided_at": iso(record.voided_at), "voided_by": record.voided_by, "reason": record.void_reason}
    return body


def bodies(session: Session, ladder_id: int, numbers: list[int]) -> dict[int, dict]:
    """The ladder's games ``numbers`` as the API shows them (:func:`stored_body`), by number; numbers no game has
    (a ladder deleted since) are left out."""
    records = storage.games.numbered(session, ladder_id, numbers)
    ladder = storage.ladders.by_id(session, ladder_id)
    if not records or ladder is None:
        return {}
    field = field_mean(session, ladder)
    return {record.seq: stored_body(record, field) for record in records}


def list_games(session: Session, ladder: LadderRow, limit: int, cursor: int | None) -> Page[dict]:
    records = storage.games.page(session, ladder.id, limit, cursor)
    field = field_mean(session, ladder) if records else None
    items = [stored_body(r, field) for r in records]
    return Page[dict](items=items, next_cursor=str(items[-1]["id"]) if len(items) == limit else None)


def get_game(session: Session, ladder: LadderRow, number: int) -> dict:
    record = storage.games.get(session, ladder.id, number)
    if record is None:
        raise NotFound(f"There is no game {number} in ladder {ladder.slug!r}.")
    return stored_body(record, field_mean(session, ladder))
