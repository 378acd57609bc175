"""Where games are applied: lock the participants, call app.rating, write the rows.

One path serves a group of posted requests (:mod:`app.games.posts`), a batch
and a bulk import: the games become one :class:`~app.rating.GameLog`,
:func:`~app.rating.replay_history` applies them (exactly the per-game rule,
batched where games share no player) and :mod:`app.storage` writes each table
with one multi-row insert.

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

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

import numpy as np
from sqlalchemy.orm import Session

from app import rating, storage
from app.domain.access import Caller
from app.games.answers import game_body, shown_members
from app.games.intake import Post, check_external_ids, check_players_exist, check_post_seats, resolve_players
from app.games.schemas import GameIn, match_wins
from app.storage.ladders import LadderRow

Progress = Callable[[str, int, int], None] | None


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
    resolve_players(ladder, post)
    games = post.games
    check_external_ids(session, ladder, post, set())
    if not ladder.auto_create_players:
        check_players_exist(session, ladder, post)
    check_post_seats(ladder, post)
    keys = [k for g in games for side in g.sides for k in side.players]
    locked = storage.players.lock(session, ladder.id, 2 * ladder.k, keys, initial_vectors(ladder), post.names)
    applied = apply_games(session, ladder, locked, games, progress, count=voided is None)
    write(session, [applied], progress)
    ids = applied.ids
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
    #: The rows to write (:func:`write`): the games with their history, and the player rows if the games count,
    #: with the ladder version the commit makes.
    new: storage.games.NewGames
    version: int
    written: storage.players.Written | None = None

    def responses(self) -> list[dict]:
        """The API body of every game: the shape :func:`game_body` gives a stored game."""
        log, history = self.log, self.history
        members = shown_members(
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


def _scores(game: GameIn) -> list[float] | None:
    """Each side's score: as posted, or a match's games won; None if the game has none."""
    if game.match is not None:
        return [float(won) for won in match_wins(game.match)]
    if game.sides[0].score is not None:
        return [float(side.score) for side in game.sides]
    return None


def _ranks(game: GameIn, scores: list[float] | None) -> list[float]:
    if game.sides[0].rank is not None:
        return [float(side.rank) for side in game.sides]
    return rating.ranks_from_scores(scores).tolist()


def payloads(games: Sequence[GameIn]) -> list[dict]:
    """Each game's stored input (mathematics §13): sides of player keys, ranks, advantages in logits or None,
    the seats taken (only when a side takes one), the scores (only when the game has them) and a match's games
    (only for a match).  The ratings read the ranks alone: a score's margin does not move them."""
    out = []
    for game in games:
        advantages = [side.logits for side in game.sides]
        scores = _scores(game)
        payload = {
            "sides": [side.players for side in game.sides],
            "ranks": _ranks(game, scores),
            "advantages": advantages if any(a != 0.0 for a in advantages) else None,
        }
        if any(side.seat is not None for side in game.sides):
            payload["seats"] = [side.seat for side in game.sides]
        if scores is not None:
            payload["scores"] = scores
        if game.match is not None:
            payload["match"] = game.match
        out.append(payload)
    return out


def write(session: Session, applied: Sequence[Applied], progress: Progress = None) -> None:
    """Write what :func:`apply_games` made of each ladder's games, every ladder's rows together: the games and
    their history in one insert per table, the players' rows in one update."""
    storage.games.insert(session, [a.new for a in applied], _stage(progress, "games"), _stage(progress, "history"))
    storage.players.save(session, [(a.new.ladder_id, a.written, a.version) for a in applied if a.written])


def apply_games(
    session: Session,
    ladder: LadderRow,
    locked: storage.players.Locked,
    games: list[GameIn],
    progress: Progress,
    count: bool = True,
) -> Applied:
    """Apply the validated games to the locked rows (mathematics §3-§6): the game numbers, the ladder's counts,
    seats and field, and the rows to :func:`write` (the log, the history and, if they ``count``, the ratings)."""
    rated = replay(session, ladder, locked, games, progress)
    taken = rated.taken if rated.taken is not None else storage.ladders.take_seqs(session, ladder, len(games))
    return finish(session, rated, taken, count)


@dataclass
class Rated:
    """A ladder's games replayed on its locked rows, before they are numbered (:func:`finish`)."""

    ladder: LadderRow
    locked: storage.players.Locked
    games: list[GameIn]
    stored: list[dict]
    log: rating.GameLog
    played_at: list[datetime]
    now: datetime
    history: rating.History
    #: The ladder's seats as the replay started from them, and the games' numbers, taken before the replay to read
    #: them under the ladder row's lock (None: no game takes a seat; the numbers are taken after the replay).
    seats: rating.Seats | None
    taken: storage.ladders.Taken | None


def replay(
    session: Session, ladder: LadderRow, locked: storage.players.Locked, games: list[GameIn], progress: Progress
) -> Rated:
    """The games replayed on the locked rows with the per-game rule (mathematics §3-§6), nothing written."""
    stored = payloads(games)
    log = storage.log.encode(stored, locked.index, ladder.seat_index())
    # Shared state (the seats, the field's vector sum) is read under the ladder row's lock, which take_seqs takes:
    # before the replay when it needs the seats, else after it (the lock is then held only for the writes).
    seats = taken = None
    if log.side_seat is not None:
        taken = storage.ladders.take_seqs(session, ladder, len(games))
        seats = storage.ladder_state.seat_state(session, ladder)
    now = datetime.now(UTC)
    played_at = [game.played_at or now for game in games]
    rate, times = ladder.learning_rate(), None
    if rate.drift > 0:  # the steps wear with time away: the games' days and each player's latest
        days, micros = storage.codec.day_years, storage.codec.micros
        times = (days([micros(t) for t in played_at]), days([micros(t) for t in locked.last_played]))
    state = locked.variance if ladder.variance_rule else locked.experience  # what the rule carries (§3, §3b)
    history = rating.replay_history(
        locked.C, log, rate, _stage(progress, "rating"), games0=state, seats=seats, times=times
    )
    return Rated(ladder, locked, games, stored, log, played_at, now, history, seats, taken)


def finish(session: Session, rated: Rated, taken: storage.ladders.Taken, count: bool = True) -> Applied:
    """The replayed games numbered (``taken``: :func:`app.storage.ladders.take_seqs`), with the ladder's counts,
    seats and field, and the rows to :func:`write`."""
    ladder, locked, games, stored, log = rated.ladder, rated.locked, rated.games, rated.stored, rated.log
    played_at, now, history, seats = rated.played_at, rated.now, rated.history, rated.seats
    seqs, kept, version, ids = taken
    created = locked.C[[locked.index[key] for key in locked.created]]  # at their initial vectors still
    field_sum, field_count = storage.ladder_state.field_sum(session, ladder, created, recount=locked.raced, kept=kept)
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
        variance_after=history.member_variance,
    )
    if count and seats is not None:
        storage.ladder_state.save_seat_state(session, ladder.id, history.seats)
    written = None
    if count:
        draws, room = rating.two_sided_draws(log.side_ptr, history.actual, history.expected)
        storage.ladders.count(session, ladder.id, games=len(games), draws=draws, draw_room=room)
        counts, last_played = _counters(locked, log.member_player, member_game, member_n_sides, actual, played_at)
        field_sum = field_sum + (history.C - locked.C).sum(axis=0)
        # Each player's strength just after this batch (their last game in it), against the field then.
        strength_then = rating.hodge_strength_against(history.C, field_sum / max(field_count, 1))
        if ladder.variance_rule:  # experience then counts games; the variance is the rule's state
            experience = locked.experience + np.bincount(log.member_player, minlength=len(locked.ids))
        else:
            experience = history.experience
        written = storage.players.Written(
            locked, history.C, counts, last_played, strength_then, experience, history.variance
        )
    storage.ladder_state.note_field(session, ladder.id, field_sum, field_count)
    field = field_sum / max(field_count, 1)
    # The players' rows are stamped with the version the ladders' bump gives out.
    keys = list(locked.index)
    return Applied(ids, seqs, games, stored, played_at, keys, log, history, now, field, new, version + 1, written)


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


def initial_vectors(ladder: LadderRow) -> Callable[[list[str]], np.ndarray] | None:
    """New players' seeded initial vectors (mathematics §2), if the ladder creates players."""
    if not ladder.auto_create_players:
        return None
    return ladder.initial_vectors
