import numpy as np
import pytest

from app.rating import (
    advantage_matrix,
    balanced_opponents,
    elo_equivalent,
    field_score,
    hodge_strength,
    hodge_strength_against,
    initial_vectors,
    probability_matrix,
    replay,
)
from app.rating.games import GameLog

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
