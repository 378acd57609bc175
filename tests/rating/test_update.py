import numpy as np
import pytest

from app.rating import (
    Game,
    GameLog,
    RatingInputError,
    advantage_from_probability,
    apply_game,
    initial_vectors,
    predict_match,
    probability_matrix,
    rank_share,
    ranks_from_scores,
    replay,
    results,
    unnormalised_update,
)

from .helpers import two_player

C_SEED = np.array([[3.0, 0.0], [1.0, 2.0], [-1.0, -1.0]])
P_RPS = np.array([[0.5, 0.2, 0.8], [0.8, 0.5, 0.2], [0.2, 0.8, 0.5]])


def test_seed000_section8_worked_example_player2_beats_player3():
    result = apply_game(C_SEED, two_player(1, 2, 1.0), eta=0.1)
    np.testing.assert_allclose(result.after, [[0.98983, 2.01017], [-1.02033, -0.98983]], atol=1e-5)
    np.testing.assert_array_equal(result.before, C_SEED[1:])
    np.testing.assert_allclose(result.expected, [0.73105858, 0.26894142], atol=1e-8)
    np.testing.assert_array_equal(result.actual, [1.0, 0.0])


def test_seed000_eq4_eq5_by_hand():
    rng = np.random.default_rng(3)
    ci, cj = rng.normal(size=4), rng.normal(size=4)
    W = np.kron(np.eye(2), [[0, 1], [-1, 0]])
    p = 1 / (1 + np.exp(-(ci @ W @ cj)))
    delta = 0.3 * (0.5 - p) / np.sqrt(ci @ ci + cj @ cj)
    result = apply_game(np.stack([ci, cj]), two_player(0, 1, 0.5), eta=0.3)
    np.testing.assert_allclose(result.after, [ci + delta * W @ cj, cj - delta * W @ ci], atol=1e-14)


@pytest.mark.parametrize("seed", range(5))
def test_seed000_section8_simulation_recovers_rock_paper_scissors(seed):
    rng = np.random.default_rng(seed)
    n = 4000
    i = rng.integers(0, 3, n)
    j = (i + rng.integers(1, 3, n)) % 3
    wins = (rng.random(n) < P_RPS[i, j]).astype(float)
    C = replay(C_SEED, GameLog.from_pairs(i, j, wins), eta=0.1)
    assert np.linalg.norm(probability_matrix(C) - P_RPS) < 0.2


def test_seed000_section3_feedback_loop_shrinks_only_the_unnormalised_rule():
    rng = np.random.default_rng(0)
    y_wins = rng.random(2000) < 0.6
    start = np.array([[0.1, 0.0], [0.0, 0.1]])
    raw, norm = start.copy(), start.copy()
    for win in y_wins:
        s = 1.0 if win else 0.0
        raw[0], raw[1] = unnormalised_update(raw[0], raw[1], s, eta=0.9)
        norm = apply_game(norm, two_player(0, 1, s), eta=0.9).after
    start_len = np.linalg.norm(start, axis=1)
    assert np.all(np.linalg.norm(raw, axis=1) < start_len / 10)
    assert np.all(np.linalg.norm(norm, axis=1) >= start_len)


def _random_games(rng, m, n):
    i = rng.integers(0, m, n)
    j = (i + rng.integers(1, m, n)) % m
    return GameLog.from_pairs(i, j, rng.choice([0.0, 0.5, 1.0], n))


def test_seed000_theorem1_equal_initial_vectors_stay_rank_two():
    rng = np.random.default_rng(11)
    same = np.tile(rng.normal(size=4), (12, 1))  # k = 2, every player identical
    C = replay(same, _random_games(rng, 12, 1000), eta=0.1)
    assert np.linalg.matrix_rank(C, tol=1e-8) <= 2
    seeded = initial_vectors([f"p{i}" for i in range(12)], k=2, seed=0, scale=0.5)
    C = replay(seeded, _random_games(rng, 12, 1000), eta=0.1)
    assert np.linalg.matrix_rank(C, tol=1e-8) == 4


def test_seed002_rank_share_scores():
    np.testing.assert_allclose(rank_share([1, 2, 3]), [2 / 3, 1 / 3, 0], atol=1e-12)
    np.testing.assert_allclose(
        rank_share([1, 1, 3, 3, 3, 6, 7]), [0.262, 0.262, 0.143, 0.143, 0.143, 0.048, 0], atol=5e-4
    )
    np.testing.assert_array_equal(ranks_from_scores([10, 7, 10, 3]), [1, 3, 1, 4])


def test_actual_and_expected_scores_each_sum_to_one():
    rng = np.random.default_rng(5)
    C = rng.normal(size=(9, 4))
    game = Game(((0, 1), (2,), (3, 4, 5), (6,), (7, 8)), (2, 1, 2, 4, 5), (0.2, 0.0, -0.4, 1.0, 0.0))
    result = apply_game(C, game, eta=0.2)
    assert result.actual.sum() == pytest.approx(1.0)
    assert result.expected.sum() == pytest.approx(1.0)
    np.testing.assert_allclose(result.probability + result.probability.T, 1.0)


def test_team_of_one_is_the_individual():
    rng = np.random.default_rng(6)
    C = rng.normal(size=(2, 6))
    solo = apply_game(C, Game(((0,), (1,)), (1, 2)), eta=0.1)
    # The same players as teams (of one) inside a bigger matrix with other rows around them.
    big = np.vstack([rng.normal(size=(3, 6)), C])
    team = apply_game(big, Game(((3,), (4,)), (1, 2)), eta=0.1)
    np.testing.assert_array_equal(solo.after, team.after)


def test_team_members_all_receive_the_side_step_and_team_mean_moves_by_it():
    rng = np.random.default_rng(7)
    C = rng.normal(size=(4, 2))
    result = apply_game(C, Game(((0, 1), (2, 3)), (1, 2)), eta=0.1)
    moves = result.after - result.before
    np.testing.assert_allclose(moves[0], moves[1])
    np.testing.assert_allclose(moves[2], moves[3])
    # Equal to a 2-player game between the team means.
    means = np.stack([C[:2].mean(axis=0), C[2:].mean(axis=0)])
    pair = apply_game(means, Game(((0,), (1,)), (1, 2)), eta=0.1)
    np.testing.assert_allclose(moves[[0, 2]], pair.after - pair.before, atol=1e-15)


def test_two_side_multiplayer_game_equals_two_player_rule():
    C = np.array([[0.4, -1.0], [1.5, 0.3]])
    by_ranks = apply_game(C, Game(((0,), (1,)), (3, 7)), eta=0.1)
    by_scores = apply_game(C, Game.from_scores(((0,), (1,)), (21, 15)), eta=0.1)
    np.testing.assert_array_equal(by_ranks.after, apply_game(C, two_player(0, 1, 1.0), eta=0.1).after)
    np.testing.assert_array_equal(by_scores.after, by_ranks.after)


def test_multiplayer_step_is_the_mean_of_its_pair_steps():
    # mathematics §4: ΔC_a = Σ_b η (S_ab - p_ab) / (n_ab (N-1)) Ω C_b, all from pre-game vectors.
    rng = np.random.default_rng(8)
    C = rng.normal(size=(3, 2))
    result = apply_game(C, Game(((0,), (1,), (2,)), (1, 2, 3)), eta=0.1)
    expected = np.zeros_like(C)
    for a, b in [(0, 1), (0, 2), (1, 2)]:
        d = apply_game(C, two_player(a, b, 1.0), eta=0.1)
        expected[[a, b]] += (d.after - d.before) / 2
    np.testing.assert_allclose(result.after - result.before, expected, atol=1e-15)


def test_seat_advantage():
    C = np.array([[0.4, -1.0], [1.5, 0.3]])
    plain = apply_game(C, two_player(0, 1, 1.0), eta=0.1)
    half = apply_game(C, Game(((0,), (1,)), (1, 2), (advantage_from_probability(0.5), 0.0)), eta=0.1)
    np.testing.assert_array_equal(plain.after, half.after)
    h = float(advantage_from_probability(0.9))
    seated = apply_game(C, Game(((0,), (1,)), (1, 2), (h, 0.0)), eta=0.1)
    a01 = C[0] @ np.array([[0, 1], [-1, 0]]) @ C[1]
    assert seated.expected[0] == pytest.approx(1 / (1 + np.exp(-(a01 + h))))
    # The advantage changes p, hence the step size, but not the direction.
    d_plain, d_seat = plain.after[0] - C[0], seated.after[0] - C[0]
    assert d_plain[0] * d_seat[1] - d_plain[1] * d_seat[0] == pytest.approx(0.0, abs=1e-15)
    assert np.linalg.norm(d_seat) < np.linalg.norm(d_plain)


def test_only_participants_change_and_eta_zero_changes_nothing():
    rng = np.random.default_rng(9)
    C = rng.normal(size=(50, 4))
    log = GameLog.from_games([Game(((3, 7), (11,), (20,)), (2, 1, 3))])
    after = replay(C, log, eta=0.5)
    changed = np.flatnonzero(np.any(after != C, axis=1))
    np.testing.assert_array_equal(changed, [3, 7, 11, 20])
    np.testing.assert_array_equal(replay(C, log, eta=0.0), C)
    frozen = apply_game(C, Game(((3,), (4,)), (1, 2)), eta=0.0)
    np.testing.assert_array_equal(frozen.after, frozen.before)


def test_zero_vectors_do_not_divide_by_zero():
    result = apply_game(np.zeros((2, 2)), two_player(0, 1, 1.0), eta=0.1)
    np.testing.assert_array_equal(result.after, np.zeros((2, 2)))


def test_predict_match_matches_apply_game_expectations():
    rng = np.random.default_rng(10)
    C = rng.normal(size=(5, 2))
    game = Game(((0, 1), (2,), (3, 4)), (1, 1, 1), (0.3, 0.0, 0.0))
    matrix, expected = predict_match(C, game)
    result = apply_game(C, game, eta=0.1)
    np.testing.assert_allclose(matrix, result.probability)
    np.testing.assert_allclose(expected, result.expected)


@pytest.mark.parametrize(
    ("make", "field"),
    [
        (lambda: Game(((0,),), (1,)), "sides"),
        (lambda: Game(((0,), ()), (1, 2)), "sides[1]"),
        (lambda: Game(((0, 1), (1,)), (1, 2)), "sides[1]"),
        (lambda: Game(((0,), (1,)), (1,)), "ranks"),
        (lambda: Game(((0,), (1,)), (1, float("nan"))), "ranks"),
        (lambda: Game(((0,), (1,)), (1, 2), (0.0, float("inf"))), "advantages"),
        (lambda: Game(((0,), (-1,)), (1, 2)), "sides[1]"),
    ],
)
def test_invalid_games_are_rejected(make, field):
    with pytest.raises(RatingInputError) as err:
        make()
    assert err.value.field == field


@pytest.mark.parametrize("eta", [-0.1, float("nan"), float("inf"), "fast"])
def test_invalid_learning_rate_is_rejected(eta):
    with pytest.raises(RatingInputError) as err:
        apply_game(np.eye(2), two_player(0, 1, 1.0), eta=eta)
    assert err.value.field == "eta"


def test_non_finite_ratings_and_unknown_players_are_rejected():
    with pytest.raises(RatingInputError):
        apply_game(np.array([[np.inf, 0.0], [1.0, 1.0]]), two_player(0, 1, 1.0), eta=0.1)
    with pytest.raises(RatingInputError):
        apply_game(np.eye(2), two_player(0, 5, 1.0), eta=0.1)


def test_results_count_a_side_above_the_average_share_as_a_win():
    # Two sides: the winner's 1 and the loser's 0; a draw's 1/2 each.
    assert results([1.0, 0.0], 2).tolist() == [1, -1]
    assert results([0.5, 0.5], 2).tolist() == [0, 0]
    # Four sides ranked 1-4 share 6/12, 4/12, 2/12, 0 (seed 001's rank share): the top half is above 1/4.
    assert results(rank_share([1, 2, 3, 4]), 4).tolist() == [1, 1, -1, -1]
    # Three sides all tied get 1/3 each, exactly the average: a draw.
    assert results(rank_share([1, 1, 1]), 3).tolist() == [0, 0, 0]
