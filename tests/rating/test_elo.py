"""The Elo baseline (mathematics §11, [Stable Elo]) on the shared computer-chess data."""

import json
from pathlib import Path

import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.special import expit

from app.rating import Game, GameLog
from app.rating.elo import fit_elo, pair_counts, penalised_log_likelihood

DATA = Path(__file__).parent.parent / "data"
SCORE = {"1-0": 1.0, "0-1": 0.0, "1/2-1/2": 0.5}


def chess_counts():
    games = json.loads((DATA / "chess_engines.json").read_text())
    names = sorted({p for g in games for p in g[:2]})
    index = {n: k for k, n in enumerate(names)}
    log = GameLog.from_pairs([index[w] for w, _, _ in games], [index[b] for _, b, _ in games],
                             [SCORE[r] for _, _, r in games])  # fmt: skip
    return pair_counts(log, len(names))


def test_agrees_with_an_independent_maximisation_in_few_iterations():
    counts = chess_counts()
    fit = fit_elo(counts)
    assert fit.converged and fit.iterations <= 50

    def negative(e):
        return -penalised_log_likelihood(counts, e)

    def gradient(e):
        g = counts.wins * expit(e[counts.loser] - e[counts.winner])
        out = np.bincount(counts.winner, weights=g, minlength=counts.n_players)
        out -= np.bincount(counts.loser, weights=g, minlength=counts.n_players)
        return -(out + 0.5 * (expit(-e) - expit(e)))

    ref = minimize(negative, np.zeros(counts.n_players), jac=gradient, method="L-BFGS-B",
                   options={"gtol": 1e-12, "ftol": 1e-16, "maxiter": 10_000})  # fmt: skip
    np.testing.assert_allclose(fit.ratings, ref.x, atol=1e-6)
    assert fit.log_likelihood == pytest.approx(-ref.fun, abs=1e-6)


def test_unbeaten_players_stay_finite_and_draws_count_half():
    log = GameLog.from_pairs([0, 0, 1, 1], [1, 2, 2, 2], [1.0, 1.0, 0.5, 1.0])
    counts = pair_counts(log, 3)
    got = {(int(a), int(b)): w for a, b, w in zip(counts.winner, counts.loser, counts.wins, strict=True)}
    assert got == {(0, 1): 1.0, (0, 2): 1.0, (1, 2): 1.5, (2, 1): 0.5}
    fit = fit_elo(counts)
    assert fit.converged and np.all(np.isfinite(fit.ratings))
    assert fit.ratings[0] > fit.ratings[1] > fit.ratings[2]


def test_team_results_are_shared_over_member_pairs():
    log = GameLog.from_games([Game(((0, 1), (2,)), (1, 2))])
    counts = pair_counts(log, 3)
    assert sorted(zip(counts.winner.tolist(), counts.loser.tolist(), counts.wins.tolist(), strict=True)) == [
        (0, 2, 0.5),
        (1, 2, 0.5),
    ]


def test_counts_of_a_subset_of_pair_terms_keep_only_those():
    log = GameLog.from_games([Game(((0, 1), (2,)), (1, 2)), Game(((2,), (0,)), (1, 2))])
    counts = pair_counts(log, 3, pairs=[1])
    assert list(zip(counts.winner.tolist(), counts.loser.tolist(), counts.wins.tolist(), strict=True)) == [(2, 0, 1.0)]


def test_team_pair_counts_split_each_share_over_the_member_pairs_in_chunks():
    rng = np.random.default_rng(5)
    games = []
    for _ in range(30):
        players = rng.permutation(12)[: int(rng.integers(4, 10))].tolist()
        cut = sorted(rng.choice(np.arange(1, len(players)), size=2, replace=False).tolist())
        sides = (tuple(players[: cut[0]]), tuple(players[cut[0] : cut[1]]), tuple(players[cut[1] :]))
        games.append(Game(sides, tuple(float(r) for r in rng.integers(1, 3, 3))))
    log = GameLog.from_games(games)
    # By hand: every member pair of every pair of sides, a share w / (|A| |B|) of the pair's result.
    expected: dict[tuple[int, int], float] = {}
    members = log.side_players()
    for sa, sb, w, s in zip(log.pair_a, log.pair_b, log.pair_weight, log.pair_outcome, strict=True):
        share = w / (len(members[sa]) * len(members[sb]))
        for x in members[sa]:
            for y in members[sb]:
                expected[(x, y)] = expected.get((x, y), 0.0) + share * s
                expected[(y, x)] = expected.get((y, x), 0.0) + share * (1 - s)
    counts = pair_counts(log, 12)
    found = dict(
        zip(zip(counts.winner.tolist(), counts.loser.tolist(), strict=True), counts.wins.tolist(), strict=True)
    )
    assert found == pytest.approx({pair: v for pair, v in expected.items() if v > 0})
    # The member pairs come out the same however small the chunks.
    whole = [np.concatenate(c) for c in zip(*log.member_pairs(), strict=True)]
    small = [np.concatenate(c) for c in zip(*log.member_pairs(chunk=3), strict=True)]
    assert all(np.array_equal(x, y) for x, y in zip(whole, small, strict=True)) and len(whole[0]) == sum(
        len(members[a]) * len(members[b]) for a, b in zip(log.pair_a, log.pair_b, strict=True)
    )
