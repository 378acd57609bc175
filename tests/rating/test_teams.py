"""Fair teams: every split enumerated once, the exact search against brute force, and the local search."""

from __future__ import annotations

import itertools
import math
import time

import numpy as np
import pytest

from app.rating import RatingInputError
from app.rating.teams import Budget, _swap_scores, count_splits, fair_split, match, quality, splits, team_sizes


def elo(ratings: list[float]) -> np.ndarray:
    """Players on the Elo manifold c = (r, 1): c_iᵀ Ω c_j = r_i - r_j."""
    return np.array([[r, 1.0] for r in ratings])


def canonical(assignment: tuple[int, ...], sizes: list[int]) -> frozenset:
    """A split as a set of (size, members) teams: equal-size teams are interchangeable."""
    return frozenset(
        (sizes[t], frozenset(p for p, team in enumerate(assignment) if team == t)) for t in range(len(sizes))
    )


@pytest.mark.parametrize("sizes", [[2, 2], [3, 3], [2, 2, 1], [3, 2, 2], [2, 2, 2], [1, 1, 1, 1], [4, 1], [3, 3, 2, 2]])
def test_every_split_once(sizes):
    found = list(splits(sizes))
    n = sum(sizes)
    # Brute force: every assignment of players to teams (permutations of the slots), as unordered splits.
    slots = [t for t, size in enumerate(sizes) for _ in range(size)]
    every = {canonical(p, sizes) for p in set(itertools.permutations(slots))}
    assert len(found) == len({canonical(a, sizes) for a in found}) == len(every) == count_splits(sizes)
    assert {canonical(a, sizes) for a in found} == every
    assert all(len(a) == n for a in found)


def test_a_match_of_two_teams_and_its_quality_by_hand():
    C = elo([4.0, 3.0, 2.0, 1.0])
    matrix, expected = match(C, [[0, 3], [1, 2]])  # means 2.5 and 2.5: even
    assert matrix[0, 1] == pytest.approx(0.5) and expected.tolist() == pytest.approx([0.5, 0.5])
    assert quality(expected) == pytest.approx(1.0)
    matrix, expected = match(C, [[0, 1], [2, 3]])  # 3.5 vs 1.5: P = σ(2)
    p = 1 / (1 + math.exp(-2.0))
    assert matrix[0, 1] == pytest.approx(p) and expected.tolist() == pytest.approx([p, 1 - p])
    assert quality(expected) == pytest.approx(1 - 2 * (p - 0.5))
    assert quality([0.75, 0.25]) == pytest.approx(0.5) and quality([1 / 3] * 3) == pytest.approx(1.0)
    assert quality([1.0, 0.0, 0.0]) == pytest.approx(0.0)
    found = fair_split(C)
    assert sorted(map(sorted, found.teams)) == [[0, 3], [1, 2]] and found.quality == pytest.approx(1.0)


@pytest.mark.parametrize(("n", "teams", "sizes", "k"), [(8, 2, None, 2), (7, 3, [3, 2, 2], 1), (9, 3, None, 2)])
def test_the_exact_search_finds_the_brute_force_optimum(n, teams, sizes, k):
    rng = np.random.default_rng(n)
    C = rng.normal(0, 1, (n, 2 * k))
    found = fair_split(C, teams, sizes)
    sizes = team_sizes(n, teams, sizes)
    slots = [t for t, size in enumerate(sizes) for _ in range(size)]
    best = max(
        float(quality(match(C, [[p for p in range(n) if perm[p] == t] for t in range(teams)])[1]))
        for perm in set(itertools.permutations(slots))
    )
    assert found.exact and found.quality == pytest.approx(best, abs=1e-12)
    assert sorted(p for team in found.teams for p in team) == list(range(n))
    assert sorted(map(len, found.teams)) == sorted(sizes)


def test_beyond_twelve_players_a_local_search_balances_the_teams():
    rng = np.random.default_rng(3)
    C = elo(rng.normal(0, 1.5, 20).tolist())
    found = fair_split(C, 2)
    assert not found.exact and sorted(map(len, found.teams)) == [10, 10]
    strongest_first = np.argsort(-C[:, 0])
    naive = match(C, [strongest_first[:10].tolist(), strongest_first[10:].tolist()])[1]
    assert found.quality > 0.99 > quality(naive)


def test_every_swap_of_a_step_is_scored_as_if_the_split_were_scored_whole():
    rng = np.random.default_rng(4)
    C = rng.normal(0, 1, (20, 4))
    assign = rng.permutation(np.arange(20) % 3)
    i, j = np.triu_indices(20, k=1)
    a, b = i[assign[i] != assign[j]], j[assign[i] != assign[j]]
    current, scores = _swap_scores(C, assign, 3, a, b)
    teams = lambda x: [np.flatnonzero(x == t).tolist() for t in range(3)]  # noqa: E731
    assert current == pytest.approx(float(quality(match(C, teams(assign))[1])), abs=1e-12)
    for s in range(0, len(a), 7):
        swapped = assign.copy()
        swapped[a[s]], swapped[b[s]] = assign[b[s]], assign[a[s]]
        assert scores[s] == pytest.approx(float(quality(match(C, teams(swapped))[1])), abs=1e-12)


@pytest.mark.serial  # the search within 0.5 s
@pytest.mark.parametrize("budget", [Budget(evaluations=5_000), Budget(seconds=0.05)])
def test_the_largest_search_stops_within_its_budget_with_the_best_split_found(budget):
    C = np.random.default_rng(5).normal(0, 1, (64, 4))
    start = time.perf_counter()
    found = fair_split(C, 32, budget=budget)
    assert time.perf_counter() - start < 0.5
    assert not found.exact and sorted(map(len, found.teams)) == [2] * 32
    assert sorted(p for team in found.teams for p in team) == list(range(64))
    assert found.quality == pytest.approx(float(quality(match(C, found.teams)[1])))
    assert found.quality > 0.9 and fair_split(C, 32).quality >= found.quality


def test_impossible_splits_are_refused():
    with pytest.raises(RatingInputError, match="teams"):
        team_sizes(3, 4)
    with pytest.raises(RatingInputError, match="sizes"):
        team_sizes(5, 2, [2, 2])
    with pytest.raises(RatingInputError, match="sizes"):
        team_sizes(4, 2, [4, 0])
    with pytest.raises(RatingInputError, match="players"):
        team_sizes(1, 2)
    assert team_sizes(7, 3) == [3, 2, 2]
