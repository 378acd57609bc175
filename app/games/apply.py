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

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

import numpy as np
from sqlalchemy.orm import Session

from app import rating, storage
from app.core.ladder import LadderRow
from app.domain.access import Caller
from app.games.answers import elo_points, game_body, members_shown
from app.games.intake import Post
from app.games.rules import check_post
from app.games.schemas import GameIn, all_given, match_wins

Progress = Callable[[str, int, int], None] | None


def import_games(
    session: Session,
    ladder: LadderRow,
    games: Sequence[GameIn],
    progress: Progress = None,
    voided: Voided | None = None,
) -> list[int]:
    """Apply ``games`` in order, all or nothing, without building responses (``melo import``); their ids.

    ``progress(stage, done, total)`` reports the replay and the writes.  With
    ``voided`` (restoring an export), the games are stored voided: in the log
    as an audit trail, with the history they would have had at their place,
    counting nowhere.
    """
    if not games:
        return []
    post = Post(ladder.slug, Caller(None), list(games), None, "", batch=True)
    check_post(session, ladder, post, set())
    games = post.games
    keys = [k for g in games for side in g.sides for k in side.players]
    locked = storage.players.lock(session, ladder.id, 2 * ladder.k, keys, initial_vectors(ladder), post.names)
    applied = apply_games(session, ladder, locked, games, progress, count=voided is None)
    _keep_posted_changes(applied.new, games)
    write(session, [applied], progress)
    ids = applied.ids
    if voided is not None:
        for game_id in ids:
            storage.games.void(session, ladder.id, game_id, voided.by, voided.reason, voided.at)
    # One event for the lot, not one per game: listeners read the ladder anew.
    change = storage.ladders.Change(
        locked.inserted, applied.counted, applied.field, [("ladder", {"imported": len(ids)})]
    )
    storage.ladders.bump(session, [ladder.id], changes={ladder.id: change})
    return ids


def _keep_posted_changes(new: storage.games.NewGames, games: list[GameIn]) -> None:
    """The rating changes an export's games name (``elo_changes``: as their posts answered them; null, or a game
    naming none, where the original kept none) rather than those this import would show: a restored ladder shows
    each game as the original did.  Games of a plain import (which have no such field) keep this import's.  A
    game's members come side by side, each side's players as it lists them."""
    if new.elo_change is None:
        return
    ptr = np.searchsorted(new.member_game, np.arange(len(games) + 1))
    for g, game in enumerate(games):
        if hasattr(game, "elo_changes"):
            named = game.elo_changes or [[None] * len(side.players) for side in game.sides]
            new.elo_change[ptr[g] : ptr[g + 1]] = [np.nan if c is None else c for side in named for c in side]


@dataclass(frozen=True)
class Voided:
    """When a game was voided, by which key (its id), and why."""

    at: datetime
    by: str | None
    reason: str | None


@dataclass
class Applied:
    """A ladder's games as applied: their ids and numbers, the rows to :func:`write` and what the ladder's row
    takes (:func:`app.storage.ladders.bump`), and their answers."""

    ids: list[int]
    seqs: list[int]
    games: list[GameIn]
    #: The ladder's field after the games: the sum of its players' vectors and their number.
    field: tuple[np.ndarray, int]
    #: The rows to write (:func:`write`): the games with their history, and the player rows if the games count,
    #: with the ladder version the commit makes.
    new: storage.games.NewGames
    version: int
    written: storage.players.Written | None
    #: What the games add to the ladder's counts, if they count: games, their comparisons (pairs of sides), drawn
    #: two-sided games, their room for a draw.
    counted: tuple[int, int, int, float] | None
    #: The players this transaction created for the games.
    created: int
    answers: _Answers
    #: The ladder's place among the ladders replayed with it.
    place: int

    def responses(self) -> list[dict]:
        """The API body of every game: the shape :func:`game_body` gives a stored game."""
        return self.answers.bodies(self.place, self.seqs)


def _scores(game: GameIn) -> list[float] | None:
    """Each side's score: as posted, or a match's games won; None if the game has none."""
    if game.match is not None:
        return [float(won) for won in match_wins(game.match)]
    scores = all_given([side.score for side in game.sides])
    return None if scores is None else [float(score) for score in scores]


def _ranks(game: GameIn, scores: list[float] | None) -> list[float]:
    ranks = all_given([side.rank for side in game.sides])
    if ranks is not None:
        return [float(rank) for rank in ranks]
    assert scores is not None  # a game without ranks has scores, or a match: its games won (GameIn._consistent)
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
    (rated,) = replay(session, [(ladder, locked, games)], progress)
    taken = rated.taken if rated.taken is not None else storage.ladders.take_seqs(session, ladder, len(games))
    return finish(session, rated, {ladder.id: taken}, count)[0]


@dataclass(eq=False)
class Rated:
    """Ladders' games replayed on their locked rows, before they are numbered (:func:`finish`): one ladder's, or
    several ladders' at one rate and k laid end to end (their players are apart: :func:`replay`)."""

    ladders: list[LadderRow]
    locked: list[storage.players.Locked]
    games: list[list[GameIn]]
    stored: list[list[dict]]
    played_at: list[list[datetime]]
    now: datetime
    #: Every ladder's games, end to end, over every ladder's players' rows, end to end: each ladder's first row
    #: and first game (one more at the end: the totals).
    log: rating.GameLog
    rows: np.ndarray
    at: np.ndarray
    history: rating.History
    #: One ladder whose games take seats: its seats as the replay started from them, and its games' numbers, taken
    #: before the replay to read them under the ladder row's lock (None: the numbers are taken after the replay).
    seats: rating.Seats | None = None
    taken: storage.ladders.Taken | None = None


def replay(
    session: Session,
    wanted: Sequence[tuple[LadderRow, storage.players.Locked, list[GameIn]]],
    progress: Progress = None,
) -> list[Rated]:
    """The games of each (ladder, its locked rows, its games) replayed with the per-game rule (mathematics
    §3-§6), nothing written.  Ladders at one rate and k are replayed together, in one replay whatever their
    number: their players are apart, so each game is applied exactly as in its own ladder's replay
    (:func:`app.rating.replay_history` batches games that share no player).  A ladder whose games take seats is
    replayed alone (the seats are its own shared state)."""
    together: dict[object, list[tuple[LadderRow, storage.players.Locked, list[GameIn], list[dict]]]] = {}
    for ladder, locked, games in wanted:
        stored = payloads(games)
        seated = any("seats" in p for p in stored)
        key = object() if seated else (ladder.learning_rate(), ladder.k)
        together.setdefault(key, []).append((ladder, locked, games, stored))
    return [_replay(session, same, progress) for same in together.values()]


def _replay(
    session: Session,
    same: list[tuple[LadderRow, storage.players.Locked, list[GameIn], list[dict]]],
    progress: Progress,
) -> Rated:
    ladders = [ladder for ladder, _, _, _ in same]
    locked = [lock for _, lock, _, _ in same]
    stored = [p for _, _, _, p in same]
    rows = np.cumsum([0] + [len(lock.ids) for lock in locked])
    log = storage.log.encode_apart(
        [(p, lock.index) for p, lock in zip(stored, locked, strict=True)], rows[:-1].tolist(), ladders[0].seat_index()
    )
    # Shared state (the seats, the field's vector sum) is read under the ladder row's lock, which take_seqs takes:
    # before the replay when it needs the seats, else after it (the lock is then held only for the writes).
    seats = taken = None
    if log.side_seat is not None:
        taken = storage.ladders.take_seqs(session, ladders[0], log.n_games)
        seats = storage.ladder_state.seat_state(session, ladders[0])
    now = datetime.now(UTC)
    played_at = [[game.played_at or now for game in games] for _, _, games, _ in same]
    rate, times = ladders[0].learning_rate(), None
    if rate.drift > 0:  # the steps wear with time away: the games' days and each player's latest
        days, micros = storage.codec.day_years, storage.codec.micros
        times = (
            days(np.array([micros(t) for ts in played_at for t in ts], dtype=np.int64)),
            days(np.array([micros(t) for lock in locked for t in lock.last_played], dtype=np.int64)),
        )
    # What the rule carries (§3, §3b): the experience, or under the variance rule the variance.
    state = _cat([lock.variance if ladders[0].variance_rule else lock.experience for lock in locked])
    C0 = _cat([lock.C for lock in locked])
    history = rating.replay_history(C0, log, rate, _stage(progress, "rating"), state, seats, times)
    at = np.cumsum([0] + [len(games) for _, _, games, _ in same])
    games = [games for _, _, games, _ in same]
    return Rated(ladders, locked, games, stored, played_at, now, log, rows, at, history, seats, taken)


def _cat(parts: list[np.ndarray]) -> np.ndarray:
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


def finish(
    session: Session, rated: Rated, taken: Mapping[int, storage.ladders.Taken], count: bool = True
) -> list[Applied]:
    """The replayed games numbered (``taken``, by ladder: :func:`app.storage.ladders.take_seqs`), with each
    ladder's counts, seats and field, and the rows to :func:`write`, one :class:`Applied` per ladder: worked out
    on the ladders' players' and games' rows as one array each, whatever the number of ladders."""
    log, history, rows, at, locked = rated.log, rated.history, rated.rows, rated.at, rated.locked
    n = len(rated.ladders)
    C0 = _cat([lock.C for lock in locked])
    members_per_game = np.diff(log.member_ptr)
    member_game = np.repeat(np.arange(at[-1]), members_per_game)
    member_side = log.member_side - np.repeat(log.side_ptr[:-1], members_per_game)
    actual, expected = history.actual[log.member_side], history.expected[log.member_side]
    player_ids = _cat([lock.ids for lock in locked])
    # Each ladder's field: its kept sum (with the players this transaction created), after the games if they count.
    fields = []
    for ladder, lock in zip(rated.ladders, locked, strict=True):
        created = lock.C[[lock.index[key] for key in lock.created]]  # at their initial vectors still
        kept = taken[ladder.id].kept
        fields.append(storage.ladder_state.field_sum(session, ladder, created, recount=lock.raced, kept=kept))
    if count:
        moved = np.add.reduceat(history.C - C0, rows[:-1], axis=0)
        fields = [(total + moved[i], number) for i, (total, number) in enumerate(fields)]
    field_of_row = np.repeat(np.array([total / max(number, 1) for total, number in fields]), np.diff(rows), axis=0)
    written: list[storage.players.Written | None] = [None] * n
    counted: list[tuple[int, int, int, float] | None] = [None] * n
    if count:
        last_played = [t for lock in locked for t in lock.last_played]
        counts, last_played = _counters(
            _cat([lock.counts for lock in locked]),
            last_played,
            log.member_player,
            member_game,
            np.diff(log.side_ptr)[member_game],
            actual,
            [t for ts in rated.played_at for t in ts],
        )
        # Each player's strength just after these games (their last game in them), against their field then.
        strength_then = rating.hodge_strength_against(history.C, field_of_row)
        # The variance rule's experience counts games (the variance is the rule's state); the other rule's is its.
        experience: np.ndarray
        if rated.ladders[0].variance_rule:
            experience = _cat([lock.experience for lock in locked]) + np.bincount(log.member_player, minlength=rows[-1])
        else:
            assert history.experience is not None  # replay_history always gives it
            experience = history.experience
        draws = rating.two_sided_draws_apart(log.side_ptr, history.actual, history.expected, at.tolist())
        for i, lock in enumerate(locked):
            r = slice(rows[i], rows[i + 1])
            written[i] = storage.players.Written(
                lock,
                history.C[r],
                counts[r],
                last_played[r],
                strength_then[r],
                experience[r],
                None if history.variance is None else history.variance[r],
            )
            compared = int(log.pair_ptr[at[i + 1]] - log.pair_ptr[at[i]])  # each game's pairs of sides
            counted[i] = (int(at[i + 1] - at[i]), compared, *draws[i])
        if rated.seats is not None:
            storage.ladder_state.save_seat_state(session, rated.ladders[0].id, history.seats)
    unnumbered = sum(
        len(games) for ladder, games in zip(rated.ladders, rated.games, strict=True) if taken[ladder.id].ids is None
    )
    new_ids = iter(storage.games.allocate_ids(session, unnumbered) if unnumbered else [])
    # Each member's strengths before and after in Elo points against their field just after the games, and the
    # change the answers show, kept with the game: what it shows wherever it is read again.
    elo = elo_points(history.before, history.after, field_of_row[log.member_player])
    elo_change = elo[1] - elo[0]
    answers = _Answers(rated, elo, elo_change)
    seat_states = storage.games.seat_states(log, history, rated.ladders[0].seats or [])
    out = []
    for i, ladder in enumerate(rated.ladders):
        seqs, _, version, ids = taken[ladder.id]
        games = rated.games[i]
        ids = ids or [next(new_ids) for _ in games]
        m = slice(log.member_ptr[at[i]], log.member_ptr[at[i + 1]])
        new = storage.games.NewGames(
            ids=ids,
            seqs=seqs,
            ladder_id=ladder.id,
            external_ids=[game.external_id for game in games],
            played_at=rated.played_at[i],
            created_at=rated.now,
            payloads=rated.stored[i],
            member_game=member_game[m] - at[i],
            member_player=player_ids[log.member_player[m]],
            member_side=member_side[m],
            before=history.before[m],
            after=history.after[m],
            actual=actual[m],
            expected=expected[m],
            seat_states=seat_states,
            variance_after=None if history.member_variance is None else history.member_variance[m],
            elo_change=elo_change[m],
        )
        inserted = locked[i].inserted
        out.append(Applied(ids, seqs, games, fields[i], new, version + 1, written[i], counted[i], inserted, answers, i))
    return out


class _Answers:
    """The answers of games replayed together, every member shown once for all of them when the first is asked
    for (an import asks for none)."""

    def __init__(self, rated: Rated, elo: tuple[np.ndarray, np.ndarray], change: np.ndarray) -> None:
        self.rated, self.elo, self.change = rated, elo, change
        self.shown: tuple[list[dict], list[int], list[float], list[float], list[int], list[int]] | None = None
        self.pairs: tuple[list[int], list[int], list[int], list[int]] | None = None

    def bodies(self, place: int, seqs: list[int]) -> list[dict]:
        """The API body of each game of the ladder at ``place`` (numbered ``seqs``)."""
        rated = self.rated
        if self.shown is None:
            log, history = rated.log, rated.history
            keys = [key for lock in rated.locked for key in lock.index]  # row order
            member_keys = [keys[p] for p in log.member_player.tolist()]
            members = members_shown(member_keys, history.before, history.after, self.elo, self.change.tolist())
            self.shown = (
                members,
                log.member_side.tolist(),
                history.actual.tolist(),
                history.expected.tolist(),
                log.side_ptr.tolist(),
                log.member_ptr.tolist(),
            )
        members, member_side, actual, expected, side_ptr, member_ptr = self.shown
        games, played_at, stored = rated.games[place], rated.played_at[place], rated.stored[place]
        out = []
        for n, g in enumerate(range(int(rated.at[place]), int(rated.at[place + 1]))):
            players: dict[int, list[dict]] = {s: [] for s in range(side_ptr[g], side_ptr[g + 1])}
            for t in range(member_ptr[g], member_ptr[g + 1]):
                players[member_side[t]].append(members[t])
            sides = [(shown, actual[s], expected[s]) for s, shown in players.items()]
            matrix = self._matrix(g) if len(sides) > 2 else None
            out.append(game_body(seqs[n], played_at[n], games[n].external_id, stored[n], sides, matrix))
        return out

    def _matrix(self, g: int) -> list[list[float]]:
        """Game ``g``'s P(side a finishes above side b) before it, as the update used them (what ``POST …/predict``
        would have answered just before it)."""
        if self.pairs is None:
            log = self.rated.log
            self.pairs = (log.side_ptr.tolist(), log.pair_ptr.tolist(), log.pair_a.tolist(), log.pair_b.tolist())
        side_ptr, pair_ptr, pair_a, pair_b = self.pairs
        first, n = side_ptr[g], side_ptr[g + 1] - side_ptr[g]
        matrix = [[0.5] * n for _ in range(n)]
        p = self.rated.history.pair_p[pair_ptr[g] : pair_ptr[g + 1]].tolist()
        for q, chance in zip(range(pair_ptr[g], pair_ptr[g + 1]), p, strict=True):
            a, b = pair_a[q] - first, pair_b[q] - first
            matrix[a][b], matrix[b][a] = chance, 1.0 - chance
        return matrix


def _counters(
    counts: np.ndarray,
    last_played: list[datetime | None],
    player: np.ndarray,
    member_game: np.ndarray,
    member_n_sides: np.ndarray,
    actual: np.ndarray,
    played_at: list[datetime],
) -> tuple[np.ndarray, list[datetime | None]]:
    """Players' W/D/L counters (``counts``, rows of COUNTERS) and last-played times after their games: a side
    above the average share 1/N won, at it drew, below it lost."""
    n = len(counts)
    counts = counts.copy()
    rows = rating.record(actual, member_n_sides)
    for column in range(rows.shape[1]):
        counts[:, column] += np.bincount(player, weights=rows[:, column], minlength=n).astype(np.int64)
    stamps = np.array([t.timestamp() for t in played_at])
    latest = np.full(n, -np.inf)
    np.maximum.at(latest, player, stamps[member_game])
    after = []
    for last, stamp in zip(last_played, latest.tolist(), strict=True):
        new = datetime.fromtimestamp(stamp, UTC) if np.isfinite(stamp) else None
        after.append(new if last is None or (new is not None and new > last) else last)
    return counts, after


def _stage(progress: Progress, stage: str) -> Callable[[int, int], None] | None:
    return None if progress is None else lambda done, total: progress(stage, done, total)


def initial_vectors(ladder: LadderRow) -> Callable[[list[str]], np.ndarray] | None:
    """New players' seeded initial vectors (mathematics §2), if the ladder creates players."""
    if not ladder.auto_create_players:
        return None
    return ladder.initial_vectors
