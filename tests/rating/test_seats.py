"""Learned seat advantages (mathematics §5): the Newton step by hand, exact replay, recovery on a synthetic ladder."""

import numpy as np
import pytest
from scipy.special import expit

from app.rating import Game, GameLog, LearningRate, RatingInputError, replay, replay_history
from app.rating.replay import dependency_levels
from app.rating.seats import SEAT_PRIOR_PRECISION, Seats, seat_shift, seat_step


def test_one_game_by_hand():
    # Home (seat 0) beats away (seat 1) with p = 0.6: each seat's information grows by 2·0.24 (both sides seated),
    # and each advantage moves by (1 - 0.6) / I, in opposite directions.
    seats = Seats.fresh(2)
    seat_step(seats, np.array([0]), np.array([1]), np.array([1.0]), np.array([1.0]), np.array([0.6]))
    info = SEAT_PRIOR_PRECISION + 2 * 0.24
    np.testing.assert_allclose(seats.information, [info, info])
    np.testing.assert_allclose(seats.advantage, [0.4 / info, -0.4 / info])
    np.testing.assert_allclose(
        seat_shift(seats.advantage, np.array([0, 1, -1]), np.array([1, -1, 0])), [0.8 / info, -0.4 / info, -0.4 / info]
    )
    # Against a side without a seat, the information counts once.
    alone = Seats.fresh(1)
    seat_step(alone, np.array([-1]), np.array([0]), np.array([1.0]), np.array([1.0]), np.array([0.6]))
    assert alone.information[0] == SEAT_PRIOR_PRECISION + 0.24
    assert alone.advantage[0] == pytest.approx(-0.4 / (SEAT_PRIOR_PRECISION + 0.24))


def test_the_seat_shifts_the_first_prediction():
    C = np.array([[0.3, 1.0], [-0.2, 1.0]])
    log = GameLog.from_pairs([0], [1], [1.0], advantage=[0.25], seats=([0], [1]))
    start = Seats.of([0.1, -0.05], [3.0, 2.0])
    history = replay_history(C, log, 0.1, seats=start)
    assert history.pair_p[0] == pytest.approx(expit(0.3 * 1.0 - 1.0 * -0.2 + 0.25 + 0.1 - (-0.05)))
    np.testing.assert_array_equal(history.seat_before, [[0.1, 3.0], [-0.05, 2.0]])
    np.testing.assert_array_equal(start.advantage, [0.1, -0.05])  # the state given is not modified


def test_batched_replay_with_seats_is_exactly_game_by_game():
    rng = np.random.default_rng(0)
    m, g = 30, 400
    i = rng.integers(0, m, g)
    j = (i + rng.integers(1, m, g)) % m
    seat_i = rng.choice([-1, 0, 2], g)
    seat_j = np.where(seat_i == 0, 1, rng.choice([-1, 1], g))
    log = GameLog.from_pairs(i, j, rng.choice([0.0, 0.5, 1.0], g), seats=(seat_i, seat_j))
    C0 = rng.normal(size=(m, 4))
    rate = LearningRate(0.5, 3.0)
    batched = replay_history(C0, log, rate, seats=Seats.fresh(3))
    C, seats, games = C0.copy(), Seats.fresh(3), np.zeros(m)
    for n in range(g):
        one = replay_history(C, log.take([n]), rate, games0=games, seats=seats)
        C, seats = one.C, one.seats
        games[[i[n], j[n]]] += 1
    np.testing.assert_array_equal(batched.C, C)
    np.testing.assert_array_equal(batched.seats.advantage, seats.advantage)
    np.testing.assert_array_equal(batched.seats.information, seats.information)
    np.testing.assert_array_equal(replay(C0, log, rate, seats=Seats.fresh(3)), C)


def test_teams_and_multiplayer_games_take_seats_too():
    games = [
        Game(((0, 1), (2,), (3,)), (1, 2, 3), seats=(0, None, 1)),
        Game(((2,), (0,)), (1, 2), seats=(1, 0)),
        Game(((1,), (3, 2)), (2, 1)),
    ]
    C0 = np.random.default_rng(1).normal(size=(4, 2))
    batched = replay_history(C0, games, 0.3)
    C, seats = C0.copy(), Seats.fresh(2)
    for game in games:
        one = replay_history(C, [game], 0.3, seats=seats)
        C, seats = one.C, one.seats
    np.testing.assert_array_equal(batched.C, C)
    np.testing.assert_array_equal(batched.seats.advantage, seats.advantage)
    assert np.isnan(batched.seat_before[1]).all()  # the second side of the first game has no seat


def test_games_naming_a_seat_depend_on_each_other():
    log = GameLog.from_pairs([0, 2, 4], [1, 3, 5], [1.0, 1.0, 1.0], seats=([0, -1, 0], [-1, -1, -1]))
    np.testing.assert_array_equal(dependency_levels(log, 6), [1, 1, 2])


def test_a_seat_taken_twice_in_a_game_is_refused():
    with pytest.raises(RatingInputError, match="seats"):
        Game(((0,), (1,)), (1, 2), seats=(0, 0))
    with pytest.raises(RatingInputError, match="seats"):
        GameLog.from_pairs([0], [1], [1.0], seats=([1], [1]))


def test_a_home_advantage_is_recovered():
    """Games with a known home advantage of 0.5 logits: the learned h_home - h_away finds it."""
    rng = np.random.default_rng(2)
    m, g = 40, 20_000
    r = rng.normal(size=m)
    i = rng.integers(0, m, g)
    j = (i + rng.integers(1, m, g)) % m
    won = (rng.random(g) < expit(r[i] - r[j] + 0.5)).astype(float)
    log = GameLog.from_pairs(i, j, won, seats=(0, 1))
    C0 = np.column_stack([np.zeros(m), np.ones(m)]) + rng.normal(scale=0.05, size=(m, 2))
    seats = replay_history(C0, log, LearningRate(0.7, 3.0)).seats
    assert seats.advantage[0] - seats.advantage[1] == pytest.approx(0.5, abs=0.06)
    assert seats.standard_error[0] < 0.02  # 20,000 games of about 0.2 information each, counted twice
