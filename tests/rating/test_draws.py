"""The draw model (app.rating.draws), by hand."""

import itertools

import numpy as np
import pytest

from app.rating import (
    draw_probability,
    draw_room,
    draw_share,
    outcome_probabilities,
    two_sided_draws,
    two_sided_draws_apart,
)


def test_the_room_for_a_draw_keeps_the_expected_score():
    assert draw_room(np.array([0.5, 0.2, 0.9, 0.0])) == pytest.approx([1.0, 0.4, 0.2, 0.0])
    p, share = 0.7, 0.5
    d = float(draw_probability(p, share))
    assert d == pytest.approx(0.3)  # 0.5 × 2 × 0.3
    win, loss = p - d / 2, 1 - p - d / 2
    assert win + d + loss == pytest.approx(1) and win + d / 2 == pytest.approx(p)  # the expected score is still p
    assert min(win, loss) >= 0
    assert outcome_probabilities(p, share) == pytest.approx((win, d, loss))
    assert outcome_probabilities(p, None) is None


def test_the_share_is_fitted_by_moments_shrunk_by_two_even_games():
    assert draw_share(0, 10.0) is None and draw_probability(0.5, None) is None
    assert draw_share(3, 4.0) == pytest.approx(0.5)  # 3 / (4 + 2)
    assert draw_share(10, 1.0) == 1.0  # at most the whole room


def test_two_sided_draws_counts_only_games_of_two_sides():
    # games: [A, B] drawn, [A, B, C] free-for-all, [A, B] decided
    side_ptr = np.array([0, 2, 5, 7])
    actual = np.array([0.5, 0.5, 0.5, 0.5, 0.0, 1.0, 0.0])
    expected = np.array([0.6, 0.4, 0.3, 0.3, 0.4, 0.25, 0.75])
    draws, room = two_sided_draws(side_ptr, actual, expected)
    assert draws == 1 and room == pytest.approx(0.8 + 0.5)


def test_two_sided_draws_of_runs_of_games_are_each_runs_alone():
    """Several ladders' games end to end: each run's draws and room are what its games alone give, bit for bit."""
    rng = np.random.default_rng(3)
    sizes = rng.integers(2, 4, 40)  # two or three sides a game
    side_ptr = np.concatenate([[0], np.cumsum(sizes)])
    actual = rng.choice([0.0, 0.5, 1.0], side_ptr[-1])
    expected = rng.uniform(0.05, 0.95, side_ptr[-1])
    at = [0, 7, 7, 25, 40]  # an empty run too
    runs = two_sided_draws_apart(side_ptr, actual, expected, at)
    for (lo, hi), run in zip(itertools.pairwise(at), runs, strict=True):
        sides = slice(side_ptr[lo], side_ptr[hi])
        alone = two_sided_draws(side_ptr[lo : hi + 1] - side_ptr[lo], actual[sides], expected[sides])
        assert run == alone
    assert sum(draws for draws, _ in runs) > 0
