"""Games and their encoding as flat index arrays (mathematics §4, §5, §6).

A game has N ≥ 2 sides; a side is one player or an ad-hoc team, finishes with
a rank (1 = best, equal ranks tie) and may carry a seat advantage in logits.
For the update and the likelihood a game is its N(N-1)/2 pairs of sides
([Expanding], "Simple Multiplayer Elo" generalised in mathematics §4).

:class:`GameLog` stores any number of games as flat NumPy arrays (members,
sides, pairs), so that the update kernel, replay and the refit work on
whole batches without Python loops.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from app.rating.errors import RatingInputError
from app.rating.model import Array

IntArray = NDArray[np.int64]


def ranks_from_scores(scores: ArrayLike) -> Array:
    """Competition ranks from scores (higher score = better; equal scores tie).

    ``[10, 7, 10, 3]`` gives ``[1, 3, 1, 4]``.
    """
    s = _finite_1d(scores, "scores")
    return 1.0 + (s[None, :] > s[:, None]).sum(axis=1).astype(np.float64)


def pair_outcomes(ranks: ArrayLike) -> tuple[IntArray, IntArray, Array]:
    """The pairs (a, b), a < b, of an N-side game and S_ab (mathematics §4).

    S_ab = 1 if side a finished ahead of b (lower rank), 0.5 on a tie, else 0.
    """
    r = _finite_1d(ranks, "ranks")
    a, b = np.triu_indices(len(r), k=1)
    outcome = np.where(r[a] < r[b], 1.0, np.where(r[a] == r[b], 0.5, 0.0))
    return a.astype(np.int64), b.astype(np.int64), outcome


def rank_share(ranks: ArrayLike) -> Array:
    """Each side's actual score A_a = Σ_b S_ab / (N(N-1)/2) (mathematics §4, [Expanding]).

    Without ties the side at position q of N gets 2(N-q)/(N(N-1)); tied sides
    split their summed shares evenly.  The scores sum to 1.
    """
    a, b, outcome = pair_outcomes(ranks)
    n = len(np.atleast_1d(ranks))
    return side_shares(a, b, outcome, n)


def results(actual: ArrayLike, n_sides: ArrayLike) -> IntArray:
    """Each side's result as a record counts it: 1 (won), 0 (drew) or -1 (lost), as its rank-share score
    (:func:`rank_share`) is above, at or below the average share 1/N.  Two sides: the winner's 1 and the loser's
    0 are a win and a loss, a draw's 1/2 a draw; in a free-for-all the top half wins."""
    return np.sign(np.asarray(actual, dtype=np.float64) - 1.0 / np.asarray(n_sides, dtype=np.float64)).astype(np.int64)


def record(actual: ArrayLike, n_sides: ArrayLike) -> IntArray:
    """Each membership's contribution to a player's record (games, wins, draws, losses, comparisons): a game; a
    win, draw or loss as :func:`results` counts it; and N - 1 pairwise comparisons."""
    result = results(actual, n_sides)
    games = np.ones(len(result))
    return np.stack([games, result > 0, result == 0, result < 0, np.asarray(n_sides) - 1]).T.astype(np.int64)


def side_shares(a: IntArray, b: IntArray, s_ab: Array, n_sides: int) -> Array:
    """Σ_b S_ab / (number of pairs) for each side, from pair values S_ab (S_ba = 1 - S_ab)."""
    pairs = n_sides * (n_sides - 1) / 2
    total = np.bincount(a, weights=s_ab, minlength=n_sides) + np.bincount(b, weights=1.0 - s_ab, minlength=n_sides)
    return total / pairs


def _finite_1d(values: ArrayLike, field: str) -> Array:
    try:
        arr = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise RatingInputError(field, "must be numbers") from exc
    if arr.ndim != 1:
        raise RatingInputError(field, "must be a flat list of numbers")
    if not np.all(np.isfinite(arr)):
        raise RatingInputError(field, "must be finite (no NaN or infinity)")
    return arr


@dataclass(frozen=True)
class Game:
    """One game: sides of player indices, their ranks, optional seat advantages.

    Parameters
    ----------
    sides : for each side, the indices of its players (an ad-hoc team if more
        than one, mathematics §6).  A player may appear only once in a game.
    ranks : finishing rank of each side, 1 = best, equal ranks tie.  Use
        :meth:`from_scores` for scores (higher = better).
    advantages : seat advantage of each side in logits (mathematics §5), or None.
    seats : each side's learned seat (an index into the ladder's seats) or None, or None for no seats
        (mathematics §5).  A seat may be taken by one side of a game only.
    """

    sides: tuple[tuple[int, ...], ...]
    ranks: tuple[float, ...]
    advantages: tuple[float, ...] | None = None
    seats: tuple[int | None, ...] | None = None

    def __post_init__(self) -> None:
        sides = tuple(tuple(int(p) for p in side) for side in self.sides)
        if len(sides) < 2:
            raise RatingInputError("sides", f"a game needs at least 2 sides, got {len(sides)}")
        seen: set[int] = set()
        for index, side in enumerate(sides):
            if not side:
                raise RatingInputError(f"sides[{index}]", "a side needs at least one player")
            for player in side:
                if player < 0:
                    raise RatingInputError(f"sides[{index}]", f"player index {player} is negative")
                if player in seen:
                    raise RatingInputError(f"sides[{index}]", f"player {player} appears more than once in the game")
                seen.add(player)
        ranks = _finite_1d(self.ranks, "ranks")
        if len(ranks) != len(sides):
            raise RatingInputError("ranks", f"expected {len(sides)} ranks, got {len(ranks)}")
        advantages = None
        if self.advantages is not None:
            adv = _finite_1d(self.advantages, "advantages")
            if len(adv) != len(sides):
                raise RatingInputError("advantages", f"expected {len(sides)} advantages, got {len(adv)}")
            advantages = tuple(float(x) for x in adv)
        seats = None
        if self.seats is not None:
            if len(self.seats) != len(sides):
                raise RatingInputError("seats", f"expected {len(sides)} seats, got {len(self.seats)}")
            seats = tuple(None if x is None else int(x) for x in self.seats)
            taken = [x for x in seats if x is not None]
            if any(x < 0 for x in taken):
                raise RatingInputError("seats", "seat indices must be >= 0")
            if len(set(taken)) != len(taken):
                raise RatingInputError("seats", "a seat can be taken by one side of a game only")
            seats = seats if taken else None
        object.__setattr__(self, "sides", sides)
        object.__setattr__(self, "ranks", tuple(float(r) for r in ranks))
        object.__setattr__(self, "advantages", advantages)
        object.__setattr__(self, "seats", seats)

    @classmethod
    def from_scores(
        cls, sides: Sequence[Sequence[int]], scores: ArrayLike, advantages: ArrayLike | None = None
    ) -> Game:
        """A game whose sides have scores (higher = better) instead of ranks."""
        adv = None if advantages is None else tuple(np.asarray(advantages, dtype=float))
        return cls(tuple(tuple(s) for s in sides), tuple(ranks_from_scores(scores)), adv)

    @property
    def players(self) -> tuple[int, ...]:
        return tuple(p for side in self.sides for p in side)


@dataclass(frozen=True)
class GameLog:
    """An ordered list of games as flat arrays (structure of arrays).

    Members, sides and pairs are stored in game order; ``*_ptr`` arrays give
    each game's slice (CSR style).  Side indices are global (0 … S-1).
    """

    member_player: IntArray  # (M,) player index of each membership
    member_side: IntArray  # (M,) side of each membership
    side_size: Array  # (S,) number of players in each side
    pair_a: IntArray  # (P,) first side of each pair
    pair_b: IntArray  # (P,) second side of each pair
    pair_outcome: Array  # (P,) S_ab from a's point of view
    pair_shift: Array  # (P,) h_a - h_b in logits
    pair_weight: Array  # (P,) 1/(N-1) of the pair's game
    member_ptr: IntArray  # (G+1,)
    side_ptr: IntArray  # (G+1,)
    pair_ptr: IntArray  # (G+1,)
    side_seat: IntArray | None = None  # (S,) the learned seat of each side, -1 for none; None: no seats at all

    @property
    def n_games(self) -> int:
        return len(self.member_ptr) - 1

    @property
    def n_players_needed(self) -> int:
        """One more than the largest player index (the minimum rating matrix size)."""
        return int(self.member_player.max()) + 1 if len(self.member_player) else 0

    def side_share(self, pair_values: Array) -> Array:
        """Σ_b v_ab / (N(N-1)/2) for every side of every game: rank-share scores (mathematics §4).

        ``pair_values`` are per pair from side a's point of view (v_ba = 1 - v_ab):
        the outcomes S_ab give the actual scores, the probabilities p_ab the expected ones.
        """
        n_sides = len(self.side_size)
        total = np.bincount(self.pair_a, weights=pair_values, minlength=n_sides) + np.bincount(
            self.pair_b, weights=1.0 - pair_values, minlength=n_sides
        )
        sides_per_game = np.diff(self.side_ptr)
        pairs = np.repeat(sides_per_game * (sides_per_game - 1) / 2, sides_per_game)
        return total / pairs

    def member_pairs(
        self, pairs: IntArray | None = None, chunk: int = 1 << 20
    ) -> Iterator[tuple[IntArray, IntArray, IntArray]]:
        """The member pairs of the pair terms ``pairs`` (default: all): a team's members each meet each member of
        the other side.  In chunks of about ``chunk`` rows, each (pair term, player of side a, player of side b),
        in pair-term order: a game of 64 teams of 32 players is two million member pairs, so they are never all
        built at once."""
        order = np.argsort(self.member_side, kind="stable")
        members = self.member_player[order]
        side_start = np.searchsorted(self.member_side[order], np.arange(len(self.side_size) + 1))
        size = np.diff(side_start)
        pairs = np.arange(len(self.pair_a)) if pairs is None else np.asarray(pairs, dtype=np.int64)
        a, b = self.pair_a[pairs], self.pair_b[pairs]
        per = size[a] * size[b]
        ends = np.cumsum(per)
        total = int(ends[-1]) if len(ends) else 0
        cuts = np.unique(np.concatenate([[0], np.searchsorted(ends, np.arange(chunk, total, chunk)), [len(per)]]))
        for lo, hi in zip(cuts[:-1].tolist(), cuts[1:].tolist(), strict=True):
            if hi <= lo:
                continue
            term = np.repeat(np.arange(lo, hi), per[lo:hi])
            k = np.arange(int(ends[lo] - per[lo]), int(ends[hi - 1])) - (ends[term] - per[term])
            across = size[b[term]]
            yield pairs[term], members[side_start[a[term]] + k // across], members[side_start[b[term]] + k % across]

    def side_players(self) -> list[list[int]]:
        """The players of every side, in member order."""
        members: list[list[int]] = [[] for _ in range(len(self.side_size))]
        for player, side in zip(self.member_player.tolist(), self.member_side.tolist(), strict=True):
            members[side].append(player)
        return members

    def single_players(self) -> tuple[IntArray, IntArray] | None:
        """The two players of every pair term when every side is one player, else None."""
        if len(self.side_size) != len(self.member_player) or not np.all(self.side_size == 1):
            return None
        player_of_side = np.empty(len(self.side_size), dtype=np.int64)
        player_of_side[self.member_side] = self.member_player
        return player_of_side[self.pair_a], player_of_side[self.pair_b]

    def take(self, games: ArrayLike) -> GameLog:
        """The log of the games at the given positions, in that order (e.g. a training split)."""
        games = np.asarray(games, dtype=np.int64)
        members, member_ptr = _ranges(self.member_ptr, games)
        sides, side_ptr = _ranges(self.side_ptr, games)
        pairs, pair_ptr = _ranges(self.pair_ptr, games)
        new_side = np.full(len(self.side_size), -1, dtype=np.int64)
        new_side[sides] = np.arange(len(sides))
        return GameLog(
            member_player=self.member_player[members],
            member_side=new_side[self.member_side[members]],
            side_size=self.side_size[sides],
            pair_a=new_side[self.pair_a[pairs]],
            pair_b=new_side[self.pair_b[pairs]],
            pair_outcome=self.pair_outcome[pairs],
            pair_shift=self.pair_shift[pairs],
            pair_weight=self.pair_weight[pairs],
            member_ptr=member_ptr,
            side_ptr=side_ptr,
            pair_ptr=pair_ptr,
            side_seat=None if self.side_seat is None else self.side_seat[sides],
        )

    @classmethod
    def concat(cls, logs: Sequence[GameLog], player_offsets: Sequence[int]) -> GameLog:
        """The logs one after another, log n's player indices moved up by ``player_offsets[n]`` (its players' first
        row in one rating matrix of all of them)."""
        sides = np.cumsum([0] + [len(log.side_size) for log in logs])
        members = np.cumsum([0] + [len(log.member_player) for log in logs])
        pairs = np.cumsum([0] + [len(log.pair_a) for log in logs])

        def ptr(name: str, bases: np.ndarray) -> IntArray:
            parts = [getattr(log, name)[:-1] + base for log, base in zip(logs, bases[:-1].tolist(), strict=True)]
            return np.concatenate([*parts, [bases[-1]]]).astype(np.int64)

        def cat(name: str, shift: Sequence[int] | None = None) -> np.ndarray:
            if shift is None:
                return np.concatenate([getattr(log, name) for log in logs])
            return np.concatenate([getattr(log, name) + s for log, s in zip(logs, shift, strict=True)])

        seated = any(log.side_seat is not None for log in logs)
        side_seat = None
        if seated:
            none = [np.full(len(log.side_size), -1, dtype=np.int64) for log in logs]
            side_seat = np.concatenate(
                [s if log.side_seat is None else log.side_seat for log, s in zip(logs, none, strict=True)]
            )
        side_base = sides[:-1].tolist()
        return cls(
            member_player=cat("member_player", player_offsets),
            member_side=cat("member_side", side_base),
            side_size=cat("side_size"),
            pair_a=cat("pair_a", side_base),
            pair_b=cat("pair_b", side_base),
            pair_outcome=cat("pair_outcome"),
            pair_shift=cat("pair_shift"),
            pair_weight=cat("pair_weight"),
            member_ptr=ptr("member_ptr", members),
            side_ptr=ptr("side_ptr", sides),
            pair_ptr=ptr("pair_ptr", pairs),
            side_seat=side_seat,
        )

    @property
    def n_seats_needed(self) -> int:
        """One more than the largest seat index (0 without seats)."""
        return 0 if self.side_seat is None or len(self.side_seat) == 0 else int(self.side_seat.max()) + 1

    @classmethod
    def from_games(cls, games: Sequence[Game]) -> GameLog:
        """Encode validated :class:`Game` objects."""
        members: list[int] = []
        member_side: list[int] = []
        side_size: list[float] = []
        pa: list[np.ndarray] = []
        pb: list[np.ndarray] = []
        po: list[np.ndarray] = []
        ph: list[np.ndarray] = []
        pw: list[np.ndarray] = []
        member_ptr, side_ptr, pair_ptr = [0], [0], [0]
        side_seat: list[int] = []
        for game in games:
            side_seat.extend(-1 if x is None else x for x in (game.seats or (None,) * len(game.sides)))
            base = len(side_size)
            for side in game.sides:
                members.extend(side)
                member_side.extend([len(side_size)] * len(side))
                side_size.append(float(len(side)))
            a, b, outcome = pair_outcomes(game.ranks)
            n = len(game.sides)
            pa.append(a + base)
            pb.append(b + base)
            po.append(outcome)
            h = np.zeros(n) if game.advantages is None else np.asarray(game.advantages)
            ph.append(h[a] - h[b])
            pw.append(np.full(len(a), 1.0 / (n - 1)))
            member_ptr.append(len(members))
            side_ptr.append(len(side_size))
            pair_ptr.append(pair_ptr[-1] + len(a))

        def cat(parts: list[np.ndarray], dtype: type) -> np.ndarray:
            return np.concatenate(parts).astype(dtype) if parts else np.zeros(0, dtype)

        return cls(
            member_player=np.asarray(members, dtype=np.int64),
            member_side=np.asarray(member_side, dtype=np.int64),
            side_size=np.asarray(side_size, dtype=np.float64),
            pair_a=cat(pa, np.int64),
            pair_b=cat(pb, np.int64),
            pair_outcome=cat(po, np.float64),
            pair_shift=cat(ph, np.float64),
            pair_weight=cat(pw, np.float64),
            member_ptr=np.asarray(member_ptr, dtype=np.int64),
            side_ptr=np.asarray(side_ptr, dtype=np.int64),
            pair_ptr=np.asarray(pair_ptr, dtype=np.int64),
            side_seat=np.asarray(side_seat, dtype=np.int64) if any(x >= 0 for x in side_seat) else None,
        )

    @classmethod
    def from_pairs(
        cls,
        i: ArrayLike,
        j: ArrayLike,
        outcome: ArrayLike,
        advantage: ArrayLike | None = None,
        seats: tuple[ArrayLike, ArrayLike] | None = None,
    ) -> GameLog:
        """Encode two-player games vectorised: i meets j, ``outcome`` is S from i's side (1, 0.5, 0).

        ``advantage`` is h_i - h_j in logits (e.g. white's first-move advantage);
        ``seats`` the learned seats of i and of j (-1 for none), e.g. (0, 1) for white and black.
        """
        i = np.asarray(i, dtype=np.int64)
        j = np.asarray(j, dtype=np.int64)
        s = _finite_1d(outcome, "outcome")
        g = len(i)
        if len(j) != g or len(s) != g:
            raise RatingInputError("games", "i, j and outcome must have the same length")
        if np.any(i == j):
            raise RatingInputError("games", "a player cannot play themself")
        if np.any((i < 0) | (j < 0)):
            raise RatingInputError("games", "player indices must be >= 0")
        if np.any((s != 0.0) & (s != 0.5) & (s != 1.0)):
            raise RatingInputError("outcome", "must be 1, 0.5 or 0")
        shift = np.zeros(g) if advantage is None else _finite_1d(np.broadcast_to(advantage, (g,)), "advantage")
        members = np.empty(2 * g, dtype=np.int64)
        members[0::2], members[1::2] = i, j
        ar = np.arange(g + 1, dtype=np.int64)
        side_seat = None
        if seats is not None:
            side_seat = np.empty(2 * g, dtype=np.int64)
            side_seat[0::2], side_seat[1::2] = np.broadcast_to(seats[0], (g,)), np.broadcast_to(seats[1], (g,))
            if np.any(side_seat < -1) or np.any((side_seat[0::2] == side_seat[1::2]) & (side_seat[0::2] >= 0)):
                raise RatingInputError("seats", "a seat is an index >= 0 (or -1), taken by one side of a game")
            side_seat = side_seat if np.any(side_seat >= 0) else None
        return cls(
            member_player=members,
            member_side=np.arange(2 * g, dtype=np.int64),
            side_size=np.ones(2 * g),
            pair_a=2 * ar[:-1],
            pair_b=2 * ar[:-1] + 1,
            pair_outcome=s.copy(),
            pair_shift=np.array(shift, dtype=np.float64),
            pair_weight=np.ones(g),
            member_ptr=2 * ar,
            side_ptr=2 * ar,
            pair_ptr=ar.copy(),
            side_seat=side_seat,
        )


def _ranges(ptr: IntArray, games: IntArray) -> tuple[IntArray, IntArray]:
    """The rows ptr[g]:ptr[g+1] of every game g, concatenated, and the new pointer array."""
    lengths = ptr[games + 1] - ptr[games]
    new_ptr = np.concatenate(([0], np.cumsum(lengths))).astype(np.int64)
    rows = np.repeat(ptr[games] - new_ptr[:-1], lengths) + np.arange(new_ptr[-1])
    return rows.astype(np.int64), new_ptr
