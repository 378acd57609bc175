"""Fair teams: split players into teams whose match is closest to even (mathematics §6, §7).

A team plays as the mean of its members' vectors (the ad-hoc team model of
[Expanding], generalised to mElo), so a split's match is predicted like any
other: P(team a beats team b) = σ(C̄_aᵀ Ω C̄_b), and each team's expected
rank-share score E_a.  A match is even when every E_a = 1/t; its *quality* is
1 - max_a |E_a - 1/t| / (1 - 1/t), 1 for an even match and 0 when one team is
certain to beat every other.  With two teams it is 1 - 2 |P(A beats B) - 1/2|.

Up to :data:`EXACT_PLAYERS` players every split is scored (at most 15,400 for
12 players into equal teams: four teams of three), all at once with numpy;
beyond, or for unequal sizes with more than :data:`EXACT_SPLITS` splits, a
seeded local search: a snake draft by Hodge strength, then the best swap of two
players between teams while one improves, from the draft and from random
splits, keeping the best.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import expit

from app.rating.errors import RatingInputError
from app.rating.leaderboard import hodge_strength
from app.rating.model import as_vectors, omega_apply

Array = np.ndarray

#: Up to this many players, and this many possible splits (every split into equal teams of 12 players is
#: fewer), every split is scored; otherwise the split is searched.
EXACT_PLAYERS = 12
EXACT_SPLITS = 20_000
#: Random starts of the local search (besides the snake draft).
RESTARTS = 16


@dataclass(frozen=True)
class Split:
    """Teams as lists of row indices, and their match: P[a, b] = P(team a beats team b), expected scores."""

    teams: list[list[int]]
    matrix: Array
    expected: Array
    quality: float
    exact: bool

    @property
    def win_probabilities(self) -> Array:
        """Each team's chance of beating another team drawn at random (with two teams, P(A beats B), P(B beats A))."""
        return (self.matrix.sum(axis=1) - 0.5) / (len(self.teams) - 1)


def team_sizes(n_players: int, n_teams: int, sizes: Sequence[int] | None = None) -> list[int]:
    """The sizes of the teams: as given (they must add up to the players), or as equal as possible."""
    if n_players < 2:
        raise RatingInputError("players", "at least two players are needed")
    if not 2 <= n_teams <= n_players:
        raise RatingInputError("teams", f"between 2 and the number of players ({n_players})")
    if sizes is None:
        return [n_players // n_teams + (t < n_players % n_teams) for t in range(n_teams)]
    sizes = [int(s) for s in sizes]
    if len(sizes) != n_teams or min(sizes) < 1 or sum(sizes) != n_players:
        raise RatingInputError("sizes", f"{n_teams} team sizes of at least 1 that add up to {n_players}")
    return sizes


def quality(expected: ArrayLike) -> Array:
    """How close to even a match is, from its expected scores (last axis): 1 even, 0 one team sure to win all."""
    E = np.asarray(expected, dtype=np.float64)
    t = E.shape[-1]
    return 1.0 - np.abs(E - 1.0 / t).max(axis=-1) / (1.0 - 1.0 / t)


def pair_quality(p: float) -> float:
    """:func:`quality` of a two-sided match where the first side wins with probability ``p``: 1 - 2|p - 1/2|."""
    return 1.0 - 2.0 * abs(p - 0.5)


def match(C: ArrayLike, teams: Sequence[Sequence[int]]) -> tuple[Array, Array]:
    """The probability matrix and expected scores of teams (lists of row indices of ``C``)."""
    C = as_vectors(C, "C")
    assign = np.full(len(C), -1, dtype=np.int64)  # rows in no team stay -1
    for t, members in enumerate(teams):
        assign[list(members)] = t
    matrix, expected = _score(C, _assignments_to_membership(assign[None], len(teams)))
    return matrix[0], expected[0]


def fair_split(C: ArrayLike, n_teams: int = 2, sizes: Sequence[int] | None = None, seed: int = 0) -> Split:
    """The split of the players (rows of ``C``) into teams of ``sizes`` whose match is closest to even."""
    C = as_vectors(C, "C")
    sizes = team_sizes(len(C), n_teams, sizes)
    if len(C) <= EXACT_PLAYERS and count_splits(sizes) <= EXACT_SPLITS:
        candidates = np.array(list(splits(sizes)), dtype=np.int64)  # (S, n): each player's team
        best = _best(C, candidates, len(sizes))
        exact = True
    else:
        best = _search(C, sizes, np.random.default_rng(seed))
        exact = False
    teams = [np.flatnonzero(best == t).tolist() for t in range(len(sizes))]
    matrix, expected = match(C, teams)
    return Split(teams, matrix, expected, float(quality(expected)), exact)


def splits(sizes: Sequence[int]) -> Iterator[tuple[int, ...]]:
    """Every assignment of ``sum(sizes)`` players to teams of these sizes (each player's team), each split once.

    Teams of equal size are interchangeable, so consecutive teams of equal size
    come in the order of their lowest-numbered member.
    """

    def place(free: tuple[int, ...], team: int, previous_lowest: int) -> Iterator[list[tuple[int, ...]]]:
        if team == len(sizes):
            yield []
            return
        same = team > 0 and sizes[team] == sizes[team - 1]
        for chosen in itertools.combinations(free, sizes[team]):
            if same and chosen[0] < previous_lowest:
                continue
            remaining = tuple(p for p in free if p not in chosen)
            for rest in place(remaining, team + 1, chosen[0]):
                yield [chosen, *rest]

    n = sum(sizes)
    for teams in place(tuple(range(n)), 0, -1):
        assignment = [0] * n
        for team, members in enumerate(teams):
            for p in members:
                assignment[p] = team
        yield tuple(assignment)


def count_splits(sizes: Sequence[int]) -> int:
    """How many splits :func:`splits` yields: n! / Π sizes! / Π (teams of equal size)!."""
    count = math.factorial(sum(sizes))
    for size in sizes:
        count //= math.factorial(size)
    for repeats in Counter(sizes).values():
        count //= math.factorial(repeats)
    return count


def _score(C: Array, M: Array) -> tuple[Array, Array]:
    """Probability matrices (S, t, t) and expected scores (S, t) of splits with membership weights M (S, t, n)."""
    means = M @ C  # (S, t, d)
    logits = np.einsum("std,sud->stu", means, omega_apply(means.reshape(-1, C.shape[1])).reshape(means.shape))
    P = expit(logits)
    t = M.shape[1]
    P[:, np.arange(t), np.arange(t)] = 0.5
    expected = (P.sum(axis=2) - 0.5) / (t * (t - 1) / 2)
    return P, expected


def _assignments_to_membership(assign: Array, n_teams: int) -> Array:
    onehot = (assign[:, None, :] == np.arange(n_teams)[None, :, None]).astype(np.float64)  # (S, t, n)
    return onehot / onehot.sum(axis=2, keepdims=True)


def _best(C: Array, candidates: Array, n_teams: int) -> Array:
    best, best_quality = candidates[0], -np.inf
    for lo in range(0, len(candidates), 4096):  # bounded memory for the largest enumerations
        part = candidates[lo : lo + 4096]
        _, expected = _score(C, _assignments_to_membership(part, n_teams))
        q = quality(expected)
        n = int(np.argmax(q))
        if q[n] > best_quality:
            best, best_quality = part[n], q[n]
    return best


def _search(C: Array, sizes: list[int], rng: np.random.Generator) -> Array:
    """Local search from a snake draft by strength and from random splits (players beyond exact enumeration)."""
    n, t = len(C), len(sizes)
    order = np.argsort(-hodge_strength(C), kind="stable")
    draft = np.empty(n, dtype=np.int64)
    snake = []
    for r in range(max(sizes)):
        row = [team for team in range(t) if sizes[team] > r]
        snake += row if r % 2 == 0 else row[::-1]
    draft[order] = snake
    starts = [draft] + [rng.permutation(draft) for _ in range(RESTARTS)]
    best, best_quality = draft, -np.inf
    for assign in starts:
        assign, q = _improve(C, assign.copy(), t)
        if q > best_quality:
            best, best_quality = assign, q
    return best


def _improve(C: Array, assign: Array, t: int) -> tuple[Array, float]:
    """Best single swaps of two players in different teams, while one makes the match more even."""
    _, expected = _score(C, _assignments_to_membership(assign[None], t))
    current = float(quality(expected)[0])
    i, j = np.triu_indices(len(assign), k=1)
    for _ in range(10 * len(assign)):
        movable = assign[i] != assign[j]
        a, b = i[movable], j[movable]
        swapped = np.repeat(assign[None], len(a), axis=0)
        rows = np.arange(len(a))
        swapped[rows, a], swapped[rows, b] = assign[b], assign[a]
        _, expected = _score(C, _assignments_to_membership(swapped, t))
        q = quality(expected)
        n = int(np.argmax(q))
        if q[n] <= current + 1e-12:
            break
        assign, current = swapped[n], float(q[n])
    return assign, current
