"""Seasons that pull the ratings back toward the start (mathematics §8, "Seasons"), by hand."""

from __future__ import annotations

import numpy as np
import pytest

from app.rating import RatingInputError, kept_weights, pull_back, pull_experience


def test_a_pull_moves_each_vector_that_part_of_the_way_back_to_its_start():
    C = np.array([[1.0, -2.0], [0.5, 0.5]])
    C0 = np.array([[0.0, 1.0], [0.5, -0.5]])
    assert np.array_equal(pull_back(C, C0, 0.0), C)
    assert np.array_equal(pull_back(C, C0, 1.0), C0)
    assert np.allclose(pull_back(C, C0, 0.25), [[0.75, -1.25], [0.5, 0.25]])
    assert np.allclose(pull_experience([8.0, 0.0, 3.0], 0.25), [6.0, 0.0, 2.25])
    for bad in (-0.01, 1.01, float("nan")):
        with pytest.raises(RatingInputError):
            pull_back(C, C0, bad)
    with pytest.raises(RatingInputError):
        pull_back(C, C0[:1], 0.5)


def test_a_refit_weighs_each_game_by_what_the_later_pulls_kept():
    # Seasons ended after games 3 (pull 0.5) and 5 (pull 0.2): games 1-3 keep 0.5·0.8, 4-5 keep 0.8, 6 all.
    weights = kept_weights([1, 2, 3, 4, 5, 6], [3, 5], [0.5, 0.2])
    assert np.allclose(weights, [0.4, 0.4, 0.4, 0.8, 0.8, 1.0])
    assert np.array_equal(kept_weights([1, 2, 3], [2], [1.0]), [0.0, 0.0, 1.0])
    assert np.array_equal(kept_weights([1, 2], [], []), [1.0, 1.0])
    with pytest.raises(RatingInputError):
        kept_weights([1], [1, 2], [0.5])
