import numpy as np
import pytest

from app.rating import (
    RatingInputError,
    advantage,
    advantage_from_probability,
    advantage_matrix,
    elo_to_logits,
    logits_to_elo,
    omega,
    pair_probability,
    probability_matrix,
    win_probability,
)
from app.rating.model import check_k

# [Guide] §8: c_1 = (3, 0), c_2 = (1, 2), c_3 = (-1, -1).
C_SEED = np.array([[3.0, 0.0], [1.0, 2.0], [-1.0, -1.0]])


@pytest.mark.parametrize("k", [1, 2, 3, 5])
def test_omega_is_skew_and_squares_to_minus_identity(k):
    W = omega(k)
    assert W.shape == (2 * k, 2 * k)
    np.testing.assert_array_equal(W.T, -W)
    np.testing.assert_array_equal(W @ W, -np.eye(2 * k))


def test_seed000_section8_initial_probability_matrix():
    np.testing.assert_array_equal(advantage_matrix(C_SEED), [[0, 6, -3], [-6, 0, 1], [3, -1, 0]])
    printed = [[0.5, 0.99752, 0.04742], [0.00247, 0.5, 0.73105], [0.95257, 0.26894, 0.5]]
    np.testing.assert_allclose(probability_matrix(C_SEED), printed, atol=1e-5)


def test_pair_and_matrix_forms_agree_with_explicit_omega():
    rng = np.random.default_rng(1)
    C = rng.normal(size=(7, 6))
    A = C @ omega(3) @ C.T
    np.testing.assert_allclose(advantage_matrix(C), A, atol=1e-12)
    i, j = np.array([0, 3, 6]), np.array([1, 2, 0])
    np.testing.assert_allclose(pair_probability(C, i, j), 1 / (1 + np.exp(-A[i, j])), atol=1e-12)
    np.testing.assert_allclose(advantage(C[2], C[5]), A[2, 5], atol=1e-12)


def test_elo_is_the_k1_special_case():
    # c_i = (r_i, 1) gives a_ij = r_i - r_j (mathematics §1).
    r = np.array([0.3, -1.2, 2.0])
    C = np.stack([r, np.ones(3)], axis=1)
    np.testing.assert_allclose(advantage_matrix(C), r[:, None] - r[None, :], atol=1e-12)


def test_seat_advantage_conversions():
    assert advantage_from_probability(0.5) == 0.0
    assert advantage_from_probability(0.9) == pytest.approx(2.1972246, abs=1e-6)
    assert logits_to_elo(advantage_from_probability(0.9)) == pytest.approx(382, abs=0.5)
    # [Expanding]'s table: 0.75 -> 191, 0.99 -> 798 Elo points.
    assert logits_to_elo(advantage_from_probability(0.75)) == pytest.approx(191, abs=0.5)
    assert logits_to_elo(advantage_from_probability(0.99)) == pytest.approx(798, abs=0.5)
    assert elo_to_logits(logits_to_elo(1.234)) == pytest.approx(1.234)


def test_win_probability_with_advantage_shifts_the_logit():
    ci, cj = C_SEED[1], C_SEED[2]
    assert win_probability(ci, cj, h_i=advantage_from_probability(0.5)) == win_probability(ci, cj)
    h = 0.7
    assert win_probability(ci, cj, h_i=h) == pytest.approx(1 / (1 + np.exp(-(1 + h))))


@pytest.mark.parametrize("q", [0.0, 1.0, -0.1, 1.5, float("nan")])
def test_win_probability_outside_open_interval_is_rejected(q):
    with pytest.raises(RatingInputError) as err:
        advantage_from_probability(q)
    assert err.value.field == "win_probability"


@pytest.mark.parametrize("k", [0, -1, 1.5, True, "2"])
def test_bad_k_is_rejected(k):
    with pytest.raises(RatingInputError):
        check_k(k)


def test_non_finite_vectors_are_rejected():
    with pytest.raises(RatingInputError):
        advantage_matrix([[1.0, np.nan], [0.0, 1.0]])
    with pytest.raises(RatingInputError):
        advantage_matrix([[1.0, 2.0, 3.0]])  # odd length: not 2k
