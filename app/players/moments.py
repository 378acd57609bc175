"""Moments: what a ladder's games are remembered for (a first win, an upset and the chance it had, a winning streak,
a new #1, the week's biggest rise), computed from the game log when they are read, never when a game is posted.

The same log gives the same moments.  They are kept few: at most one of each kind and :data:`MOST_PER_GAME` per
game (in the order of :data:`KINDS`), none for a voided game, and a game with a provisional player (fewer than
:data:`~app.rating.ranking.ELO_RESULTS` results against others before it) has only its first wins.  Each read
costs what its range of games costs, bounded: each player's last :data:`LONGEST_STREAK` games, a week's last
:data:`WEEK_GAMES` games, and a new #1 only among the log's latest :data:`LEADER_GAMES` games (the standings
after each are the player table's, those games undone one by one from the newest).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from itertools import accumulate

import numpy as np
from sqlalchemy.orm import Session

from app import rating, storage
from app.core import deadline
from app.core.ladder import LadderRow
from app.players.leaderboard import leading_rows
from app.players.records import field_prior, variances
from app.rating.ranking import ELO_RESULTS, leaderboard_order, provisional
from app.rating.strength import SE_SAMPLE, field_gain, field_information
from app.storage.moments import LogGame, Member

#: The kinds, in the order a game keeps them when it has more than :data:`MOST_PER_GAME`.
KINDS = ("new_leader", "movers", "upset", "first_win", "streak")
MOST_PER_GAME = 2
#: A winner whose chance before the game was below this made an upset.
UPSET_CHANCE = 0.30
#: Wins in a row that are told: 3, 5, then every 10th up to the longest streak looked for.
LONGEST_STREAK = 100
STREAKS = frozenset([3, 5, *range(10, LONGEST_STREAK + 1, 10)])
#: How far back each player's results are read first: far enough for the streaks up to 10.
SHORT_STREAKS = 10
#: A new #1 is told for the log's latest games only (the standings after each are rebuilt from today's).
LEADER_GAMES = 1000
#: Today's first players who, with the players of those games, may have been first after one of them.
LEADER_RIVALS = 10
#: Up to this many players, the field behind the standard errors is read anew after each game undone.
EXACT_FIELD = 300
#: A week's rise counts its last games only, and players with this many games in it.
WEEK_GAMES = 2000
MOVER_GAMES = 3


@dataclass(frozen=True)
class Moment:
    game: int
    kind: str
    players: list[str]
    text: str
    played_at: datetime
    chance: float | None = None
    wins: int | None = None
    rise: float | None = None
    week: str | None = None


def moments(session: Session, ladder: LadderRow, first: int, last: int, now: datetime | None = None) -> list[Moment]:
    """The moments of the ladder's games numbered ``first`` to ``last``, in log order, each game's in the order of
    :data:`KINDS`.  ``now`` (default: the time now) closes the week of the log's newest game once it has ended."""
    dim = 2 * ladder.k
    games = [g for g in storage.moments.games(session, ladder.id, first, last, dim) if not g.voided]
    if not games:
        return []
    history = _History(session, ladder.id, games)
    history.load([m.player_id for g in games for m in _winners(g)])  # streaks and first wins are the winners'
    leaders = _new_leaders(session, ladder, games)
    weeks = _week_ends(session, ladder.id, games, now or datetime.now(UTC))
    field = _field_mean(session, ladder)
    told: list[dict[str, Moment]] = []
    for game in deadline.steps(games, every=8):  # a game of 2,048 players costs its players: stop when asked
        made = {kind: moment for kind, moment in _of_game(game, history, leaders).items() if moment is not None}
        if game.id in weeks and (mover := _mover(session, ladder, game, weeks[game.id], field)) is not None:
            made["movers"] = mover  # about the week, not this game's players
        told.append(made)
    # Only a game with an upset, a streak or a new #1 needs to know whether its players were established.
    asked = [g for g, made in zip(games, told, strict=True) if made.keys() & {"upset", "streak", "new_leader"}]
    history.load([m.player_id for g in asked for m in g.members])
    found: list[Moment] = []
    for game, made in zip(games, told, strict=True):
        if made.keys() & {"upset", "streak", "new_leader"} and not all(
            history.comparisons_before(m.player_id, game.id) >= ELO_RESULTS for m in game.members
        ):
            made = {kind: moment for kind, moment in made.items() if kind in ("first_win", "movers")}
        found += [made[kind] for kind in KINDS if made.get(kind) is not None][:MOST_PER_GAME]
    return found


def _of_game(game: LogGame, history: _History, leaders: dict[int, tuple[str, str]]) -> dict[str, Moment | None]:
    """The game's own moments, whatever its players' experience."""
    made = {"first_win": _first_wins(game, history), "upset": _upset(game), "streak": _streak(game, history)}
    if game.id in leaders:
        key, name = leaders[game.id]
        made["new_leader"] = Moment(game.seq, "new_leader", [key], f"{name} is the new #1", game.played_at)
    return made


def _shown(member: Member) -> str:
    return member.name or member.key


def _listed(names: list[str]) -> str:
    """ "Ada", "Ada and Bob", "Ada, Bob and Cy"."""
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _winning_side(game: LogGame) -> int | None:
    """The side with the highest score if it is the only one with it (a draw at the top has none)."""
    scores = {m.side: m.actual for m in game.members}
    best = max(scores.values())
    top = [side for side, score in scores.items() if score == best]
    return top[0] if len(top) == 1 and len(scores) > 1 else None


class _History:
    """Players' results up to the last of the games, read for the players asked for (:meth:`load`): far enough back
    for the streaks they may be on (:data:`SHORT_STREAKS` back, and :data:`LONGEST_STREAK` for those on a longer
    one), and their first win where those do not show it."""

    def __init__(self, session: Session, ladder_id: int, games: list[LogGame]) -> None:
        self.session, self.ladder_id, self.upto = session, ladder_id, games[-1].id
        self.in_range = Counter(m.player_id for g in games for m in g.members)
        self.results: dict[int, list[tuple[int, bool, int]]] = {}  # oldest first: (game id, won, comparisons)
        self.complete: dict[int, bool] = {}
        self.at: dict[int, dict[int, int]] = {}
        self.known_before: dict[int, list[int]] = {}  # results against others before each one read
        self.first_win: dict[int, int] = {}

    def load(self, players: list[int]) -> None:
        """Read the histories of the ``players`` not read yet."""
        new = sorted(set(players) - self.results.keys())
        if not new:
            return
        self._read({p: self.in_range[p] + SHORT_STREAKS + 1 for p in new})
        longer = {
            p: self.in_range[p] + LONGEST_STREAK + 1
            for p in new
            if not self.complete[p] and all(won for _, won, _ in self.results[p][: SHORT_STREAKS + 1])
        }
        if longer:  # on a streak longer than was read: read further back
            self._read(longer)
        for p in new:
            self.at[p] = {g: n for n, (g, _, _) in enumerate(self.results[p])}
            self.known_before[p] = [0, *accumulate(c for _, _, c in self.results[p])]
        unsure = [p for p in new if not self.complete[p] and not any(w for _, w, _ in self.results[p])]
        if unsure:
            self.first_win |= storage.moments.first_wins(self.session, self.ladder_id, unsure)

    def _read(self, wanted: dict[int, int]) -> None:
        rows = storage.moments.histories(self.session, self.ladder_id, [(p, self.upto, n) for p, n in wanted.items()])
        for p, found in rows.items():
            self.complete[p] = len(found) < wanted[p]
            self.results[p] = [(g, a * s > 1, s - 1) for g, a, s in reversed(found)]

    def comparisons_before(self, player_id: int, game_id: int) -> int:
        """Their results against others before the game (at least :data:`SHORT_STREAKS`, if more than were read)."""
        at = self.at[player_id][game_id]
        known = self.known_before[player_id][at]
        return known if self.complete[player_id] else max(known, at)

    def streak(self, player_id: int, game_id: int) -> int | None:
        """Wins in a row ending with this game (None: longer than the history read)."""
        results, at = self.results[player_id], self.at[player_id][game_id]
        n = 0
        while at - n >= 0 and results[at - n][1]:
            n += 1
        return None if at - n < 0 and not self.complete[player_id] else n

    def is_first_win(self, player_id: int, game_id: int) -> bool:
        results, at = self.results[player_id], self.at[player_id][game_id]
        if not results[at][1] or any(won for _, won, _ in results[:at]):
            return False
        return self.complete[player_id] or self.first_win.get(player_id) == game_id


def _winners(game: LogGame) -> list[Member]:
    """The members who won, as a record counts a win (a rank-share score above 1/N)."""
    sides = len({m.side for m in game.members})
    return [m for m in game.members if m.actual * sides > 1]


def _first_wins(game: LogGame, history: _History) -> Moment | None:
    first = [m for m in _winners(game) if history.is_first_win(m.player_id, game.id)]
    if not first:
        return None
    text = f"{_listed([_shown(m) for m in first])} won for the first time"
    return Moment(game.seq, "first_win", [m.key for m in first], text, game.played_at)


def _upset(game: LogGame) -> Moment | None:
    """A two-sided game won by the side whose chance before it (its expected score) was below
    :data:`UPSET_CHANCE`."""
    winner = _winning_side(game)
    if winner is None or len({m.side for m in game.members}) != 2:
        return None
    won = [m for m in game.members if m.side == winner]
    lost = [m for m in game.members if m.side != winner]
    chance = won[0].expected
    if chance >= UPSET_CHANCE:
        return None
    percent = max(1, int(100 * chance))  # below 30%: never shown as 30%
    text = f"{_listed([_shown(m) for m in won])} beat {_listed([_shown(m) for m in lost])} with a {percent}% chance"
    return Moment(game.seq, "upset", [m.key for m in won], text, game.played_at, chance=chance)


def _streak(game: LogGame, history: _History) -> Moment | None:
    """The winners whose wins in a row reach one of :data:`STREAKS` with this game (the longest such)."""
    streaks = [(m, history.streak(m.player_id, game.id)) for m in _winners(game)]
    reached = [(m, n) for m, n in streaks if n is not None and n in STREAKS]
    if not reached:
        return None
    wins = max(n for _, n in reached)
    who = [m for m, n in reached if n == wins]
    text = f"{_listed([_shown(m) for m in who])} won {wins} in a row"
    return Moment(game.seq, "streak", [m.key for m in who], text, game.played_at, wins=wins)


def _field_mean(session: Session, ladder: LadderRow) -> np.ndarray:
    total, count = storage.ladder_state.field_sum(session, ladder)
    return total / max(count, 1)


def _iso_week(moment: datetime) -> tuple[int, int]:
    year, week, _ = moment.astimezone(UTC).isocalendar()
    return year, week


def _week_ends(session: Session, ladder_id: int, games: list[LogGame], now: datetime) -> dict[int, datetime]:
    """The games that close their week (UTC, Monday to Sunday), with the week's start: the next game that counts
    was played in a later week, or (the log's newest game) its week is over at ``now``."""
    ends: dict[int, datetime] = {}
    following = [g.played_at for g in games[1:]] + [storage.moments.next_counted(session, ladder_id, games[-1].id)]
    for game, after in zip(games, following, strict=True):
        day = game.played_at.astimezone(UTC)
        start = datetime(day.year, day.month, day.day, tzinfo=UTC) - timedelta(days=day.weekday())
        later = _iso_week(after) > _iso_week(day) if after is not None else now >= start + timedelta(days=7)
        if later:
            ends[game.id] = start
    return ends


def _mover(session: Session, ladder: LadderRow, game: LogGame, start: datetime, field: np.ndarray) -> Moment | None:
    """The week's biggest rise (Elo points, the sum of each game's change as the results show it: as posted, or
    against today's field where a replay rewrote the game) among the players with :data:`MOVER_GAMES` games in it."""
    members = storage.moments.week_members(
        session, ladder.id, game.id, start, start + timedelta(days=7), WEEK_GAMES, 2 * ladder.k
    )
    if not members:
        return None
    moved = rating.hodge_strength_against(np.array([m[2] for m in members]), field) * rating.ELO_PER_LOGIT
    change: dict[str, float] = {}
    games: Counter[str] = Counter()
    names: dict[str, str] = {}
    for (key, name, _, posted), now in zip(members, moved.tolist(), strict=True):
        change[key] = change.get(key, 0.0) + (now if posted is None else posted)
        games[key] += 1
        names[key] = name or key
    players = sorted(p for p in change if games[p] >= MOVER_GAMES)
    if not players:
        return None
    rises = np.array([change[p] for p in players])
    best = int(np.argmax(rises))  # the first of equal rises: by key
    if rises[best] < 1:
        return None
    key, name = players[best], names[players[best]]
    year, week = _iso_week(start)
    points = round(float(rises[best]))
    text = f"{name} rose {points} points in week {week}, more than anyone"
    return Moment(game.seq, "movers", [key], text, game.played_at, rise=float(rises[best]), week=f"{year}-W{week:02d}")


def _new_leaders(session: Session, ladder: LadderRow, games: list[LogGame]) -> dict[int, tuple[str, str]]:
    """The games among the log's latest :data:`LEADER_GAMES` after which the first of the standings was another
    established player than before: (key, name shown) of the new #1, by game id.

    The standings after each game are today's player table with the games after it undone, one by one from the
    newest (each member's vector before it, their record and experience without it), in the leaderboard's
    conservative order, time away aside (a #1 changes with games, not while nobody plays).  Only the players of
    those games and today's first :data:`LEADER_RIVALS` can be first then: the others' ratings stood still."""
    oldest = storage.moments.window_start(session, ladder.id, LEADER_GAMES)
    wanted = {g.id for g in games if g.id >= oldest}
    if not wanted:
        return {}
    table = storage.read_model.current_table(session, ladder)
    undone = _Undone(storage.moments.members_since(session, ladder.id, min(wanted)), table.ids, 2 * ladder.k)
    rivals = np.union1d(undone.rows, leading_rows(table, ladder, LEADER_RIVALS))
    if not len(rivals):
        return {}
    C, counts, experience = table.C.copy(), table.counts.copy(), table.experience.copy()
    total = C.sum(axis=0)
    drift, rate = ladder.drift / rating.ELO_PER_LOGIT, ladder.learning_rate()
    # Under the variance rule the errors are the players' variances (today's: a game undone leaves them).
    variance = variances(table, rate) if isinstance(rate, rating.VarianceRule) else None
    steps = None if isinstance(rate, rating.VarianceRule) else rate
    # A small field is read anew after each game; a large one's is today's, and its players' errors change with
    # their experience only (each game moves it little).
    exact = len(C) <= EXACT_FIELD

    def field() -> tuple[np.ndarray, np.ndarray, tuple[float, float, float]]:
        points = counts[:, 1] + 0.5 * counts[:, 2]
        prior = rating.field_prior(C, counts[:, 0], points, steps, variance=variance)
        rows = rivals
        return (
            field_information(C, SE_SAMPLE, SE_SAMPLE, rows=rows),
            field_gain(C, SE_SAMPLE, SE_SAMPLE, rows=rows),
            prior,
        )

    if exact:
        information, gain, prior = field()
    else:  # today's field, as the leaderboard reads it
        information = field_information(C, SE_SAMPLE, SE_SAMPLE, rows=rivals)
        gain = field_gain(C, SE_SAMPLE, SE_SAMPLE, rows=rivals)
        prior = field_prior(table, ladder)

    def se(at: np.ndarray) -> np.ndarray:
        rows, idle = rivals[at], np.zeros(len(at))
        mine = None if variance is None else variance[rows]
        return rating.strength_se(
            C, experience[rows], steps, rows, idle, drift, prior, information[at], gain[at], variance=mine
        )

    errors = se(np.arange(len(rivals)))
    key_rank = table.key_rank()[rivals]
    outside = table.placement.is_outside(table.ids[rivals])

    inactive = ~table.active[rivals]

    def first() -> int | None:
        strength = rating.hodge_strength_against(C[rivals], total / len(C))
        group = provisional(counts[rivals, 4], outside) + 2 * inactive  # neither may be the #1
        top = leaderboard_order(rating.conservative(strength, errors), group, key_rank)[0]
        return None if group[top] else int(rivals[top])

    after: dict[int, int | None] = {}
    new: dict[int, tuple[str, str]] = {}
    order = undone.games
    mine_all = np.searchsorted(rivals, undone.rows)  # each member's place among the rivals (all of them are)
    for n, game_id in enumerate(order.tolist()):
        if game_id in wanted and game_id not in after:
            after[game_id] = first()
        part = slice(undone.starts[n], undone.starts[n + 1])
        at, before = undone.rows[part], undone.before[part]
        total += (before - C[at]).sum(axis=0)
        C[at] = before
        counts[at] -= undone.record[part]
        experience[at] = np.maximum(experience[at] - 1, 0)
        if exact:
            information, gain, prior = field()
            errors = se(np.arange(len(rivals)))
        else:
            mine = mine_all[part]
            errors[mine] = se(mine)
        if game_id in wanted:
            then = first()  # the standings after the game that counts before it
            row = after[game_id]
            if row is not None and row != then:
                new[game_id] = (str(table.keys[row]), str(table.names[row] or table.keys[row]))
            if n + 1 < len(order):
                after[int(order[n + 1])] = then
    return new


class _Undone:
    """The members of the games to undo, newest game first, as arrays: each member's row of the table, vector
    before the game and record of it; ``starts[n]`` is where the ``n``-th game's members start."""

    def __init__(self, members: list[tuple], ids: np.ndarray, dim: int) -> None:
        game = np.array([m[0] for m in members], dtype=np.int64)
        side = np.array([m[2] for m in members], dtype=np.int64)
        self.rows = np.searchsorted(ids, np.array([m[1] for m in members], dtype=np.int64))
        self.before = storage.codec.unpack_rows([m[4] for m in members], dim)
        cut = np.flatnonzero(np.diff(game)) + 1 if len(game) else np.zeros(0, dtype=np.int64)
        self.starts = np.concatenate([[0], cut, [len(game)]]).astype(np.int64)
        self.games = game[self.starts[:-1]]
        sides = np.maximum.reduceat(side, self.starts[:-1]) + 1 if len(game) else side
        self.record = rating.record(np.array([m[3] for m in members]), np.repeat(sides, np.diff(self.starts)))
