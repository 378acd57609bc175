import numpy as np
import pytest
from scipy.special import expit

from app.rating import (
    LearningRate,
    advantage_matrix,
    balanced_opponents,
    elo_equivalent,
    field_information,
    field_prior,
    field_score,
    hodge_strength,
    hodge_strength_against,
    initial_vectors,
    probability_matrix,
    replay,
    strength_se,
)
from app.rating.game_log import GameLog
from app.rating.ranking import leaderboard_order, rows_ahead, rows_before
from app.rating.refit.pipeline import RefitOptions, refit
from app.rating.strength import STRENGTH_PRIOR_PRECISION, field_gain

from .helpers import random_symplectic


def test_hodge_strength_is_the_row_mean_of_A():
    C = np.random.default_rng(0).normal(size=(25, 4))
    np.testing.assert_allclose(hodge_strength(C), advantage_matrix(C).mean(axis=1), atol=1e-12)


def test_hodge_strength_recovers_elo_ratings_up_to_a_shift():
    r = np.array([1.0, -0.5, 0.25, 2.0])
    s = hodge_strength(np.stack([r, np.ones(4)], axis=1))
    np.testing.assert_allclose(s, r - r.mean(), atol=1e-12)
    assert elo_equivalent(0.0) == 1500.0
    assert elo_equivalent(np.log(10) / 400 * 100) == pytest.approx(1600.0)


def test_field_score_exact_and_sampled():
    C = np.random.default_rng(1).normal(size=(300, 2))
    P = probability_matrix(C)
    exact = (P.sum(axis=1) - 0.5) / 299
    np.testing.assert_allclose(field_score(C), exact, atol=1e-12)
    sampled = field_score(C, max_exact=100, sample=200, seed=3)
    assert np.abs(sampled - exact).max() < 0.08


def test_balanced_opponents_are_the_closest_to_even():
    C = np.random.default_rng(2).normal(size=(200, 4))
    gaps = np.abs(advantage_matrix(C)[17])
    gaps[17] = np.inf
    np.testing.assert_array_equal(balanced_opponents(C, 17, limit=5), np.argsort(gaps, kind="stable")[:5])
    pool = np.array([3, 17, 50, 99])
    assert set(balanced_opponents(C, 17, limit=10, candidates=pool)) == {3, 50, 99}


def test_invariants_do_not_change_under_a_random_symplectic_map():
    rng = np.random.default_rng(3)
    for k in (1, 2, 3):
        C = initial_vectors([str(i) for i in range(40)], k=k, seed=4, scale=1.0)
        i = rng.integers(0, 40, 500)
        j = (i + rng.integers(1, 40, 500)) % 40
        C = replay(C, GameLog.from_pairs(i, j, rng.choice([0.0, 1.0], 500)), eta=0.1)
        M = random_symplectic(k, rng)
        D = C @ M.T  # every c_i -> M c_i
        assert np.abs(D - C).max() > 0.1  # the vectors really moved
        np.testing.assert_allclose(probability_matrix(D), probability_matrix(C), atol=1e-9)
        np.testing.assert_allclose(hodge_strength(D), hodge_strength(C), atol=1e-9)
        np.testing.assert_array_equal(np.argsort(-hodge_strength(D)), np.argsort(-hodge_strength(C)))
        np.testing.assert_array_equal(np.argsort(-field_score(D)), np.argsort(-field_score(C)))


def test_strength_against_a_field_is_the_hodge_strength_for_its_members():
    C = np.random.default_rng(9).normal(size=(7, 4))
    np.testing.assert_allclose(hodge_strength_against(C, C.mean(axis=0)), hodge_strength(C), rtol=1e-12)
    assert hodge_strength_against(C[2], C.mean(axis=0)) == pytest.approx(hodge_strength(C)[2])


def test_strength_se_by_hand():
    # Elo ratings 0, 1, -1 as vectors (r, 1): a_ij = r_i - r_j.  Player 0 meets advantages -1 and +1, each
    # carrying σ(1)σ(-1) = 0.196612 of information per game.
    C = np.stack([[0.0, 1.0, -1.0], np.ones(3)], axis=1)
    w = 1 / (1 + np.e) * (1 - 1 / (1 + np.e))
    np.testing.assert_allclose(field_information(C)[0], w, rtol=1e-12)
    se = strength_se(C, [0, 10, 10])
    assert se[0] == pytest.approx(1 / np.sqrt(STRENGTH_PRIOR_PRECISION))  # no game: the prior's √2 logits
    assert se[1] == pytest.approx(1 / np.sqrt(STRENGTH_PRIOR_PRECISION + 10 * np.mean(field_information(C)[1])))
    assert strength_se(C, [100, 100, 100])[0] < se[1] < se[0]  # more games, less uncertainty
    # The online rule's wander: c̄ = (0, 1), so c_j · c̄ = 1 for everyone, and |c_0|² + |c_j|² = 1 + 2.
    np.testing.assert_allclose(field_gain(C)[0], 1 / np.sqrt(3), rtol=1e-12)
    kappa = 0.5 / np.sqrt(1 + 10 / 3) / np.sqrt(3)  # η(10) = 0.5 / √(1 + 10/τ) with τ = 3
    wandering = strength_se(C, [10, 10, 10], LearningRate(0.5, 3.0))[0]
    assert wandering == pytest.approx(np.sqrt(1 / (STRENGTH_PRIOR_PRECISION + 10 * w) + kappa / (2 - kappa * w)))
    # The field's mean given (a page's rows then cost the page): the same errors, to the bit.
    rows, mean = np.array([2, 0]), np.array([0.0, 1.0])
    assert np.array_equal(field_gain(C, rows=rows, mean=mean), field_gain(C)[rows])
    given = strength_se(C, [10, 10], LearningRate(0.5, 3.0), rows=rows, mean=mean)
    assert np.array_equal(given, strength_se(C, [10, 10], LearningRate(0.5, 3.0), rows=rows))
    # Time away: a drift of 0.3 logits a year adds 0.09 per year away to the variance, nothing for no time.
    away = strength_se(C, [10, 10, 10], idle_years=[0.0, 0.5, 4.0], drift=0.3)
    still = strength_se(C, [10, 10, 10])
    np.testing.assert_allclose(away**2 - still**2, [0.0, 0.045, 0.36], rtol=1e-12, atol=1e-15)
    assert np.array_equal(strength_se(C, [10, 10, 10], idle_years=[1.0, 1.0, 1.0], drift=0.0), still)


def test_field_means_from_a_sample_of_a_large_field():
    C = np.random.default_rng(1).normal(size=(300, 4))
    for mean in (field_score, field_information, field_gain):
        exact, sampled = mean(C), mean(C, max_exact=100, sample=150)
        assert np.max(np.abs(sampled - exact)) < 0.1 * np.max(np.abs(exact)), mean.__name__


def test_strength_se_covers_the_true_strengths_after_a_refit():
    """A synthetic Elo ladder refitted as the service's auto refit would: ±1.96 se covers the truth about 95%."""
    rng = np.random.default_rng(3)
    m, per_player = 150, 60
    r = rng.normal(scale=1.0, size=m)
    i = rng.integers(0, m, m * per_player // 2)
    j = (i + rng.integers(1, m, len(i))) % m
    won = (rng.random(len(i)) < expit(r[i] - r[j])).astype(float)
    log = GameLog.from_pairs(i, j, won)
    C = refit(log, m, 2, RefitOptions(restarts=1, holdout=0)).C
    games = np.bincount(log.member_player, minlength=m)
    error = hodge_strength(C) - (r - r.mean())
    covered = np.mean(np.abs(error) <= 1.96 * strength_se(C, games))
    assert 0.85 <= covered <= 0.995, covered


def test_the_fields_own_records_make_the_first_games_intervals_honest():
    """An Elo field twice as wide as the refit's prior, 10 games each through the online rule, which lags the
    strong and the weak: with the prior the players' records imply (and the lag it measures), ±1.96 se covers
    the truth as promised; with the fixed prior it misses about a third of the field."""
    rng = np.random.default_rng(0)
    m, games = 300, 1500  # 10 games each
    r = rng.normal(scale=1.0, size=m)
    truth = 2.0 * (r - r.mean())  # a_ij = 2 (r_i - r_j)
    i = rng.integers(0, m, games)
    j = (i + rng.integers(1, m, games)) % m
    won = (rng.random(games) < expit(2.0 * (r[i] - r[j]))).astype(float)
    log = GameLog.from_pairs(i, j, won)
    offset = np.array([0.0, 1.0, 0.0, 0.0])
    C0 = initial_vectors([str(n) for n in range(m)], 2, seed=0, scale=0.05, offset=offset)
    rate = LearningRate(0.7, 3.0)
    C = replay(C0, log, rate)
    played = np.bincount(log.member_player, minlength=m).astype(float)
    points = np.bincount(i, won, minlength=m) + np.bincount(j, 1.0 - won, minlength=m)
    error = np.abs(hodge_strength(C) - truth)
    field = field_prior(C, played, points, rate)
    assert 0.90 <= np.mean(error <= 1.96 * strength_se(C, played, rate, field=field)) <= 0.99
    assert np.mean(error <= 1.96 * strength_se(C, played, rate)) < 0.8
    # A small field's records say too little: the refit's prior stands.
    assert field_prior(C[:40], played[:40], points[:40], rate) == (STRENGTH_PRIOR_PRECISION, 0.0, 0.0)


def test_a_rows_place_and_the_page_before_a_row_by_counting_against_a_full_sort():
    """Ties in score broken by key, groups first: each row's place (no sort) is where the full order puts it, and
    the rows before a row's (group, score, key) are those the order lists above it."""
    rng = np.random.default_rng(3)
    score = rng.choice([-1.0, 0.0, 0.5, 2.0], size=60)  # many ties
    group = rng.integers(0, 2, size=60)
    keys = np.array([f"k{n:02d}" for n in rng.permutation(60)])
    key_rank = np.argsort(np.argsort(keys))
    order = leaderboard_order(score, group, key_rank)
    place = np.empty(60, dtype=np.int64)
    place[order] = np.arange(60)
    assert [rows_ahead(group, score, key_rank, row) for row in range(60)] == place.tolist()
    g, s, k = group[order], score[order], keys[order]
    for n in range(60):
        assert rows_before(g, s, k, int(g[n]), float(s[n]), str(k[n])) == n
