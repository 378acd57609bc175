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
splits, keeping the best.  A swap changes two teams' means only, so every swap
of a step is scored at once in O(swaps · teams · 2k) (:func:`_swap_scores`);
the search stops when its :class:`Budget` of scored splits or seconds is spent
and returns the best split found so far.
"""

from __future__ import annotations

import itertools
import math
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import expit

from app.rating.errors import RatingInputError
from app.rating.model import as_vectors, omega_apply
from app.rating.strength import hodge_strength

Array = np.ndarray

#: Up to this many players, and this many possible splits (every split into equal teams of 12 players is
#: fewer), every split is scored; otherwise the split is searched.
EXACT_PLAYERS = 12
EXACT_SPLITS = 20_000
#: Random starts of the local search (besides the snake draft).
RESTARTS = 16


@dataclass(frozen=True)
class Budget:
    """How much a local search may do: split scores and seconds, whichever runs out first."""

    evaluations: int = 500_000
    seconds: float = 1.0


class _Spending:
    def __init__(self, budget: Budget) -> None:
        self.left, self.until = budget.evaluations, time.perf_counter() + budget.seconds

    def spend(self, evaluations: int) -> None:
        self.left -= evaluations

    @property
    def exhausted(self) -> bool:
        return self.left <= 0 or time.perf_counter() >= self.until


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


def fair_split(
    C: ArrayLike, n_teams: int = 2, sizes: Sequence[int] | None = None, seed: int = 0, budget: Budget = Budget()
) -> Split:
    """The split of the players (rows of ``C``) into teams of ``sizes`` whose match is closest to even.

    Beyond exact enumeration the local search spends at most ``budget`` and
    returns the best split found (``exact`` is then false).
    """
    C = as_vectors(C, "C")
    sizes = team_sizes(len(C), n_teams, sizes)
    if len(C) <= EXACT_PLAYERS and count_splits(sizes) <= EXACT_SPLITS:
        candidates = np.array(list(splits(sizes)), dtype=np.int64)  # (S, n): each player's team
        best = _best(C, candidates, len(sizes))
        exact = True
    else:
        best = _search(C, sizes, np.random.default_rng(seed), _Spending(budget))
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


def _search(C: Array, sizes: list[int], rng: np.random.Generator, spending: _Spending) -> Array:
    """Local search from a snake draft by strength and from random splits (players beyond exact enumeration),
    while the budget lasts."""
    n, t = len(C), len(sizes)
    order = np.argsort(-hodge_strength(C), kind="stable")
    draft = np.empty(n, dtype=np.int64)
    snake = []
    for r in range(max(sizes)):
        row = [team for team in range(t) if sizes[team] > r]
        snake += row if r % 2 == 0 else row[::-1]
    draft[order] = snake
    best, best_quality = draft, -np.inf
    for start in range(RESTARTS + 1):
        if start and spending.exhausted:
            break
        assign, q = _improve(C, draft.copy() if start == 0 else rng.permutation(draft), t, spending)
        if q > best_quality:
            best, best_quality = assign, q
    return best


def _improve(C: Array, assign: Array, t: int, spending: _Spending) -> tuple[Array, float]:
    """Best single swaps of two players in different teams, while one makes the match more even and the budget
    lasts."""
    i, j = np.triu_indices(len(assign), k=1)
    while True:
        movable = assign[i] != assign[j]
        a, b = i[movable], j[movable]
        current, scores = _swap_scores(C, assign, t, a, b)
        spending.spend(len(a) + 1)
        n = int(np.argmax(scores)) if len(a) else 0
        if not len(a) or scores[n] <= current + 1e-12:
            return assign, current
        assign = assign.copy()
        assign[a[n]], assign[b[n]] = assign[b[n]], assign[a[n]]
        if spending.exhausted:
            return assign, float(scores[n])


def _swap_scores(C: Array, assign: Array, t: int, a: Array, b: Array) -> tuple[float, Array]:
    """The quality of split ``assign`` and of each split made from it by swapping players ``a[s]`` and ``b[s]``
    (in different teams).

    A swap moves only the means of the two teams A and B involved, so only the
    results against them change: row sums of the probability matrix are
    updated with P(x beats A') = 1 - P(A' beats x) (Ω is antisymmetric).
    """
    size = np.bincount(assign, minlength=t).astype(np.float64)
    M = np.zeros((t, C.shape[1]))
    np.add.at(M, assign, C)
    M /= size[:, None]
    OM = omega_apply(M)
    P = expit(M @ OM.T)
    P[np.arange(t), np.arange(t)] = 0.5
    rows = P.sum(axis=1)
    pairs = t * (t - 1) / 2
    current = float(quality((rows - 0.5) / pairs))
    A, B = assign[a], assign[b]
    delta = C[b] - C[a]
    A_mean = M[A] + delta / size[A, None]
    B_mean = M[B] - delta / size[B, None]
    PA, PB = expit(A_mean @ OM.T), expit(B_mean @ OM.T)  # against the unchanged teams' means
    p_AB = expit(np.einsum("sd,sd->s", A_mean, omega_apply(B_mean)))
    s = np.arange(len(a))
    new_rows = rows[None, :] - P[:, A].T - P[:, B].T + (1.0 - PA) + (1.0 - PB)
    new_rows[s, A] = 0.5 + PA.sum(axis=1) - PA[s, A] - PA[s, B] + p_AB
    new_rows[s, B] = 0.5 + PB.sum(axis=1) - PB[s, A] - PB[s, B] + 1.0 - p_AB
    return current, quality((new_rows - 0.5) / pairs)
