"""[Guide] §7 (Theorem 2, Algorithm 1, Fig. 2) and the strongly connected components of [Intransitivity]."""

import numpy as np
import pytest
from scipy.optimize import linprog
from scipy.special import expit

from app.rating import Game, GameLog, omega
from app.rating.identifiability import (
    Results,
    both_ways,
    comparable,
    comparing_opponents,
    find_clique,
    identifiability,
)
from app.rating.model import omega_apply

C_SEED = np.array([[-1.0, 2.0], [0.0, 2.0], [1.0, 2.0]])  # [Guide] §7.2: P1, P2, P3
W = omega(1)


def p4_directions(wins_against, losses_against):
    """P4's directions (Theorem 2): +ΩC_j for each win over j, -ΩC_j for each loss."""
    cols = [W @ C_SEED[j] for j in wins_against] + [-(W @ C_SEED[j]) for j in losses_against]
    return np.array(cols).T


@pytest.mark.parametrize(
    ("wins", "losses", "expected"),
    [
        ([0, 2], [], False),  # scenario 1: beats P1 and P3
        ([0], [0], False),  # scenario 2: beats and loses to P1
        ([0, 1, 2], [], False),  # scenario 3: beats P1, P2, P3
        ([0, 1, 2], [1], True),  # scenario 4: ... and loses to P2
    ],
)
def test_seed000_section72_scenarios(wins, losses, expected):
    check = comparable(p4_directions(wins, losses), 2)
    assert check.comparable is expected
    if not expected:
        # The witness is a direction along which no result pulls P4 back.
        assert check.direction is not None
        assert np.all(p4_directions(wins, losses).T @ check.direction >= -1e-9)


def test_the_same_scenarios_from_a_game_log():
    # P4 is index 3; scenario 4 as games, with P1-P3 results both ways so they form the 3-clique.
    pairs = [(0, 1, 1.0), (1, 0, 1.0), (1, 2, 1.0), (2, 1, 1.0), (0, 2, 1.0), (2, 0, 1.0)]
    pairs += [(3, 0, 1.0), (3, 1, 1.0), (3, 2, 1.0), (1, 3, 1.0)]
    i, j, s = zip(*pairs, strict=True)
    C = np.vstack([C_SEED, [0.5, -0.5]])
    report = identifiability(C, GameLog.from_pairs(i, j, s), 4)
    assert report.clique == [0, 1, 2]
    assert report.comparable == [0, 1, 2, 3] and report.unique
    scenario1 = GameLog.from_pairs([*i[:6], 3, 3], [*j[:6], 0, 2], [1.0] * 8)
    report = identifiability(C, scenario1, 4)
    assert not report.unique and 3 not in report.comparable
    assert [row["player"] for row in report.not_comparable] == [3]


def test_seed000_fig2_cycle_is_not_identifiable():
    # A-B-D-C-A (0-1-3-2-0), each pair with results both ways; A never meets D, B never meets C.
    edges = [(0, 1), (1, 3), (3, 2), (2, 0)]
    i = [a for a, b in edges] + [b for a, b in edges]
    j = [b for a, b in edges] + [a for a, b in edges]
    log = GameLog.from_pairs(i, j, np.ones(len(i)))
    report = identifiability(np.random.default_rng(0).normal(size=(4, 2)), log, 4)
    assert report.clique == [] and not report.unique
    assert report.components == [[0, 1, 2, 3]]


def test_complete_round_robin_both_ways_is_identifiable():
    m = 6
    i, j = np.array([(a, b) for a in range(m) for b in range(m) if a != b]).T
    log = GameLog.from_pairs(i, j, np.ones(len(i)))  # everyone beat everyone once: results both ways
    C = np.random.default_rng(1).normal(size=(m, 2))
    report = identifiability(C, log, m)
    assert report.unique and report.comparable == list(range(m)) and report.not_comparable == []
    assert len(report.clique) == 3


def test_strongly_connected_components_and_clique_search():
    log = GameLog.from_pairs([0, 1, 2, 3], [1, 2, 0, 4], np.ones(4))  # 0>1>2>0 cycle, 3>4 apart
    report = identifiability(np.eye(5, 2), log, 5)
    assert report.components == [[0, 1, 2], [3], [4]]
    adjacent = both_ways(Results.of(log), 5)
    assert adjacent.nnz == 0
    full = ~np.eye(5, dtype=bool)
    assert sorted(find_clique(full, 4)) == [0, 1, 2, 3]
    assert find_clique(full, 6) is None


@pytest.mark.parametrize("dim", [2, 4])
def test_comparable_agrees_with_the_linear_program_and_its_witness_holds(dim):
    # Theorem 2 as a feasibility LP (Wλ = 0, λ ≥ 1), solved independently by scipy's HiGHS.
    rng = np.random.default_rng(dim)
    verdicts = []
    for _ in range(300):
        t = int(rng.integers(dim, 3 * dim))
        W = rng.normal(size=(dim, t))
        if rng.random() < 0.5:  # push every direction into a half-space: mostly not comparable
            W[0] = np.abs(W[0]) * rng.choice([1.0, 0.05])
        lp = linprog(np.zeros(t), A_eq=W, b_eq=-W.sum(axis=1), bounds=[(0, None)] * t, method="highs")
        check = comparable(W, dim)
        assert check.comparable == (lp.status == 0)
        if not check.comparable:
            assert np.all(W.T @ check.direction >= -1e-9) and np.sum(W.T @ check.direction) > 0
        verdicts.append(check.comparable)
    assert 30 < sum(verdicts) < 270  # both outcomes were exercised


def test_comparing_opponents_point_against_the_witness_direction():
    # k = 1. Player 0 has only beaten player 1: one direction, +Ωc_1 = (1, 1); the rating can drift along ±(1, -1).
    C = np.array([[0.0, 1.0], [-1.0, 1.0], [1.0, 1.0], [-1.0, 1.0], [2.0, 2.5]])
    W = omega_apply(C[[1, 1, 1]]).T
    order, gain = comparing_opponents(C, 0, W, limit=4)
    # Player 2 (Ωc = (1, -1)) opens the missing direction whichever way the game goes; player 4 nearly so;
    # player 3 sits where player 1 does and adds nothing.
    assert order.tolist() == [2, 4, 1, 3] and gain[0] == pytest.approx(1.0) and gain[-1] == pytest.approx(0.0)
    cosine = abs(omega_apply(C[[4]])[0] @ np.array([1.0, -1.0])) / np.sqrt(2) / np.linalg.norm(C[4])
    assert gain[1] == pytest.approx(cosine)
    # Directions that span R^2 but all lean one way: only the result that pushes back helps, weighted by its odds.
    W = omega_apply(C[[1, 2]]).T  # beat 1 and beat 2
    order, gain = comparing_opponents(C, 0, W, limit=4)
    v = (W[:, 0] + W[:, 1]) / np.linalg.norm(W[:, 0] + W[:, 1])  # the escape: further along both wins
    OC = omega_apply(C)
    expected = np.abs(OC @ v) / np.linalg.norm(OC, axis=1)
    p_win = expit(OC @ C[0])
    expected *= np.where(OC @ v < 0, p_win, 1 - p_win)
    expected[0] = -np.inf
    assert order[0] == int(np.argmax(expected)) and gain[0] == pytest.approx(expected.max(), rel=0.05)
    # Once the directions surround the origin, nothing is needed.
    assert comparing_opponents(C, 0, np.hstack([W, -W]), limit=4) is None


def dense_algorithm_1(C, log, n):
    """Algorithm 1 as first written: a dense both-ways matrix, and passes over every player until none joins."""
    results, OC, dim = Results.of(log), omega_apply(C), C.shape[1]
    won = np.zeros((n, n), dtype=bool)
    s = results.outcome
    won[results.first[s >= 0.5], results.second[s >= 0.5]] = True
    won[results.second[s <= 0.5], results.first[s <= 0.5]] = True
    adjacent = won & won.T

    def clique_search(clique, candidates):
        if len(clique) == dim + 1:
            return clique
        for n_, v in enumerate(candidates):
            if len(clique) + len(candidates) - n_ < dim + 1:
                return None
            found = clique_search([*clique, v], [u for u in candidates[n_ + 1 :] if adjacent[v, u]])
            if found is not None:
                return found
        return None

    degree = adjacent.sum(axis=1)
    order = [int(v) for v in np.argsort(-degree, kind="stable") if degree[v] >= dim]
    clique = clique_search([], order) or []
    inside = np.zeros(n, dtype=bool)
    inside[clique] = True
    grew = bool(clique)
    while grew:
        grew = False
        for i in np.flatnonzero(~inside):
            if comparable(results.directions(OC, int(i), inside), dim).comparable:
                inside[i] = grew = True
    return sorted(clique), np.flatnonzero(inside).tolist()


@pytest.mark.parametrize("seed", range(12))
def test_the_sparse_search_finds_what_the_dense_one_did(seed):
    """Random logs from sparse to dense, with draws: the same clique, the same comparable set, and every player
    outside it reported."""
    rng = np.random.default_rng(seed)
    n, k = int(rng.integers(6, 30)), int(rng.integers(1, 3))
    m = int(rng.integers(2 * n, 8 * n))
    core = rng.random(m) < 0.6  # a core that meets often, and others who play now and then
    first = np.where(core, rng.integers(0, n // 3, m), rng.integers(0, n, m))
    second = np.where(core, rng.integers(0, n // 3, m), rng.integers(0, n, m))
    keep = first != second
    scores = rng.choice([0.0, 0.5, 1.0], size=m, p=[0.45, 0.1, 0.45])
    log = GameLog.from_pairs(first[keep], second[keep], scores[keep])
    C = rng.normal(size=(n, 2 * k))
    clique, inside = dense_algorithm_1(C, log, n)
    report = identifiability(C, log, n)
    assert (report.clique, report.comparable) == (clique, inside)
    assert sorted(f["player"] for f in report.not_comparable) == sorted(set(range(n)) - set(inside))


@pytest.mark.parametrize("seed", range(6))
def test_one_players_results_are_those_the_whole_log_gives_that_player(seed):
    """Free-for-alls of teams, with ties: the directions of a player read from their own results alone are the
    columns the whole log's results give them (the opponents search reads only the player's; a game of 64 teams of
    32 is 2,016 opponents for them, two million member pairs for everyone)."""
    rng = np.random.default_rng(seed)
    n = 40
    games = []
    for _ in range(30):
        players = rng.permutation(n)[: int(rng.integers(2, 24))]
        cuts = np.sort(rng.choice(np.arange(1, len(players)), size=int(rng.integers(1, len(players))), replace=False))
        sides = tuple(tuple(int(p) for p in side) for side in np.split(players, cuts))
        games.append(Game(sides, tuple(float(r) for r in rng.integers(1, 4, len(sides)))))
    log = GameLog.from_games(games)
    OC = omega_apply(rng.normal(size=(n, 4)))
    whole = Results.of(log)
    for player in range(n):
        mine = Results.of_player(log, player).directions(OC, player)
        everyone = whole.directions(OC, player)
        assert mine.shape == everyone.shape
        assert sorted(map(tuple, np.round(mine.T, 12))) == sorted(map(tuple, np.round(everyone.T, 12)))
