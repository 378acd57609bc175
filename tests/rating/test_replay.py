import numpy as np
import pytest

from app.rating import (
    Game,
    GameLog,
    LearningRate,
    RatingInputError,
    VarianceRule,
    apply_game,
    dependency_levels,
    games_before,
    initial_vectors,
    replay,
    replay_history,
)

from .helpers import random_games, two_player


def _one_by_one(C0, games, eta):
    C = C0.copy()
    for game in games:
        result = apply_game(C, game, eta)
        C[result.players] = result.after
    return C


def test_replay_equals_one_by_one_bit_for_bit_two_player():
    rng = np.random.default_rng(0)
    m, n = 40, 3000
    i = rng.integers(0, m, n)
    j = (i + rng.integers(1, m, n)) % m
    s = rng.choice([0.0, 0.5, 1.0], n)
    h = rng.normal(scale=0.3, size=n)
    C0 = initial_vectors([str(p) for p in range(m)], k=2, seed=1, scale=0.5)
    ranks = {1.0: (1, 2), 0.5: (1, 1), 0.0: (2, 1)}
    games = [Game(((a,), (b,)), ranks[o], (x, 0.0)) for a, b, o, x in zip(i, j, s, h, strict=True)]
    expected = _one_by_one(C0, games, 0.1)
    np.testing.assert_array_equal(replay(C0, GameLog.from_pairs(i, j, s, h), 0.1), expected)
    np.testing.assert_array_equal(replay(C0, games, 0.1), expected)


def test_replay_equals_one_by_one_bit_for_bit_teams_and_multiplayer():
    rng = np.random.default_rng(1)
    m = 30
    games = []
    for _ in range(1500):
        n_sides = int(rng.integers(2, 6))
        sizes = rng.integers(1, 4, n_sides)
        players = rng.choice(m, size=int(sizes.sum()), replace=False)
        sides = tuple(tuple(int(p) for p in part) for part in np.split(players, np.cumsum(sizes)[:-1]))
        ranks = tuple(int(r) for r in rng.integers(1, n_sides + 1, n_sides))
        adv = tuple(rng.normal(scale=0.2, size=n_sides)) if rng.random() < 0.5 else None
        games.append(Game(sides, ranks, adv))
    C0 = initial_vectors([str(p) for p in range(m)], k=3, seed=2, scale=0.5)
    np.testing.assert_array_equal(replay(C0, games, 0.07), _one_by_one(C0, games, 0.07))


def test_dependency_levels_separate_games_sharing_a_player():
    log = GameLog.from_games([two_player(0, 1, 1), two_player(2, 3, 1), two_player(1, 2, 0), two_player(4, 5, 1)])
    np.testing.assert_array_equal(dependency_levels(log, 6), [1, 1, 2, 1])


def test_replay_reports_progress_and_leaves_input_untouched():
    C0 = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    seen = []
    out = replay(C0, [two_player(0, 1, 1), two_player(1, 2, 1)], 0.1, progress=lambda d, t: seen.append((d, t)))
    assert seen == [(1, 2), (2, 2)]
    np.testing.assert_array_equal(C0, [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    assert not np.array_equal(out, C0)
    np.testing.assert_array_equal(replay(C0, [], 0.1), C0)


def test_replay_rejects_players_outside_the_matrix_and_self_play():
    with pytest.raises(RatingInputError):
        replay(np.eye(2), GameLog.from_pairs([0], [2], [1.0]), 0.1)
    with pytest.raises(RatingInputError):
        GameLog.from_pairs([1], [1], [1.0])
    with pytest.raises(RatingInputError):
        GameLog.from_pairs([0], [1], [0.3])


@pytest.mark.parametrize("kind", ["two_player", "teams_and_multiplayer"])
def test_replay_history_records_what_apply_game_does_game_by_game(kind):
    rng = np.random.default_rng(3)
    m = 25
    games = random_games(rng, m, 600, kind, advantages=True)
    C0 = initial_vectors([str(p) for p in range(m)], k=2, seed=4, scale=0.5)
    history = replay_history(C0, games, 0.1)

    C, t, s, q = C0.copy(), 0, 0, 0
    for game in games:
        result = apply_game(C, game, 0.1)
        n_members, n_sides = len(result.players), len(game.sides)
        a, b = np.triu_indices(n_sides, k=1)
        np.testing.assert_allclose(history.pair_p[q : q + len(a)], result.probability[a, b], rtol=1e-15)
        q += len(a)
        np.testing.assert_array_equal(history.before[t : t + n_members], result.before)
        np.testing.assert_array_equal(history.after[t : t + n_members], result.after)
        np.testing.assert_allclose(history.expected[s : s + n_sides], result.expected, rtol=1e-15)
        np.testing.assert_allclose(history.actual[s : s + n_sides], result.actual, rtol=1e-15)
        C[result.players] = result.after
        t, s = t + n_members, s + n_sides
    np.testing.assert_array_equal(history.C, C)
    np.testing.assert_array_equal(history.C, replay(C0, games, 0.1))


def test_a_log_keeps_the_games_it_is_asked_for():
    rng = np.random.default_rng(5)
    games = []
    for _ in range(40):
        n_sides = int(rng.integers(2, 5))
        players = rng.choice(12, size=2 * n_sides, replace=False)
        sides = tuple(
            (int(players[2 * s]),) if s % 2 else (int(players[2 * s]), int(players[2 * s + 1])) for s in range(n_sides)
        )
        games.append(Game(sides, tuple(int(r) for r in rng.integers(1, 4, n_sides)), tuple(rng.normal(size=n_sides))))
    log = GameLog.from_games(games)
    keep = [3, 0, 17, 39, 5]
    got, want = log.take(keep), GameLog.from_games([games[g] for g in keep])
    for name in GameLog.__dataclass_fields__:
        np.testing.assert_array_equal(getattr(got, name), getattr(want, name), err_msg=name)


@pytest.mark.parametrize("kind", ["two_player", "teams_and_multiplayer"])
def test_shrinking_learning_rates_replay_exactly_like_game_by_game(kind):
    rng = np.random.default_rng(6)
    m = 20
    games = random_games(rng, m, 500, kind, advantages=False)
    rate = LearningRate(1.0, tau=5.0)
    games0 = rng.integers(0, 30, m)
    C0 = initial_vectors([str(p) for p in range(m)], k=2, seed=4, scale=0.5)
    C, played = C0.copy(), games0.astype(float).copy()
    for game in games:
        result = apply_game(C, game, rate, games=played[list(game.players)])
        C[result.players] = result.after
        played[list(game.players)] += 1
    np.testing.assert_array_equal(replay(C0, games, rate, games0=games0), C)
    np.testing.assert_array_equal(replay_history(C0, games, rate, games0=games0).C, C)


def test_a_constant_learning_rate_is_the_plain_eta_and_newcomers_move_faster():
    C0 = initial_vectors([str(p) for p in range(6)], k=1, seed=2, scale=0.5)
    games = [two_player(0, 1, 1.0), two_player(2, 3, 0.0), two_player(1, 2, 0.5), two_player(4, 5, 1.0)]
    np.testing.assert_array_equal(replay(C0, games, LearningRate(0.1)), replay(C0, games, 0.1))
    fresh = apply_game(C0, two_player(0, 1, 1.0), LearningRate(1.0, tau=5.0), games=[0, 0])
    veteran = apply_game(C0, two_player(0, 1, 1.0), LearningRate(1.0, tau=5.0), games=[45, 0])
    step = lambda r: np.linalg.norm(r.after[0] - r.before[0])  # noqa: E731
    assert step(fresh) == pytest.approx(step(veteran) * np.sqrt(1 + 45 / 5))
    assert np.array_equal(fresh.after[1], veteran.after[1])  # the other side's step depends on its own games only
    log = GameLog.from_games(games)
    np.testing.assert_array_equal(games_before(log, [5, 0, 0, 0, 0, 0], 6), [5, 0, 0, 0, 1, 1, 0, 0])


def _ladder_parts(rng, kind, dated, variance):
    """Three ladders' players and games, each ladder's own: (vectors, log, games or variances before, times)."""
    parts = []
    for n, m in enumerate((9, 1, 12)):
        games = random_games(rng, max(m, 2), int(rng.integers(1, 40)), kind, advantages=True) if m > 1 else []
        C0 = initial_vectors([f"{n}-{p}" for p in range(max(m, 2))], k=2, seed=n, scale=0.5)
        log = GameLog.from_games(games) if games else GameLog.from_pairs([], [], [])
        state = rng.integers(0, 5, len(C0)).astype(float)
        if variance:
            state = np.where(rng.random(len(C0)) < 0.3, np.nan, 0.05)
        times = None
        if dated:
            latest = np.where(rng.random(len(C0)) < 0.5, np.nan, rng.uniform(0, 1, len(C0)))
            times = (np.sort(rng.uniform(1, 2, log.n_games)), latest)
        parts.append((C0, log, state, times))
    return parts


@pytest.mark.parametrize("kind", ["two_player", "teams_and_multiplayer"])
@pytest.mark.parametrize(
    "rate",
    [0.1, LearningRate(0.3, 20.0), LearningRate(0.3, 20.0, drift=0.5), VarianceRule(0.5, 0.01, 0.2)],
    ids=["constant", "shrinking", "drifting", "variance"],
)
def test_logs_of_players_apart_replay_end_to_end_bit_for_bit_as_each_alone(kind, rate):
    """Several ladders' games in one replay (a group commit's): laid end to end over one matrix of all their
    players, each game is applied exactly as in its own ladder's replay."""
    rng = np.random.default_rng(7)
    parts = _ladder_parts(rng, kind, getattr(rate, "drift", 0) > 0, isinstance(rate, VarianceRule))
    rows = np.cumsum([0] + [len(C0) for C0, _, _, _ in parts])
    members = np.cumsum([0] + [len(log.member_player) for _, log, _, _ in parts])
    sides = np.cumsum([0] + [len(log.side_size) for _, log, _, _ in parts])
    log = GameLog.concat([log for _, log, _, _ in parts], rows[:-1].tolist())
    times = None
    if parts[0][3] is not None:
        times = tuple(np.concatenate([p[3][n] for p in parts]) for n in (0, 1))
    C0, state = np.concatenate([p[0] for p in parts]), np.concatenate([p[2] for p in parts])
    together = replay_history(C0, log, rate, games0=state, times=times)
    for n, (C0, part_log, state, times) in enumerate(parts):
        alone = replay_history(C0, part_log, rate, games0=state, times=times)
        r, m, s = slice(rows[n], rows[n + 1]), slice(members[n], members[n + 1]), slice(sides[n], sides[n + 1])
        np.testing.assert_array_equal(together.C[r], alone.C)
        np.testing.assert_array_equal(together.before[m], alone.before)
        np.testing.assert_array_equal(together.after[m], alone.after)
        np.testing.assert_array_equal(together.expected[s], alone.expected)
        np.testing.assert_array_equal(together.actual[s], alone.actual)
        np.testing.assert_array_equal(together.experience[r], alone.experience)
        if alone.latest is not None:
            np.testing.assert_array_equal(together.latest[r], alone.latest)
        if alone.member_variance is not None:
            np.testing.assert_array_equal(together.member_variance[m], alone.member_variance)


def test_logs_laid_end_to_end_keep_each_games_players_and_sides():
    first = GameLog.from_games([two_player(0, 1, 1), Game(((0, 2), (1,), (3,)), (1, 2, 2))])
    second = GameLog.from_games([two_player(1, 0, 0.5)])
    log = GameLog.concat([first, second], [0, 4])
    assert log.n_games == 3
    assert log.member_player.tolist() == [0, 1, 0, 2, 1, 3, 5, 4]
    assert log.member_side.tolist() == [0, 1, 2, 2, 3, 4, 5, 6]
    assert log.side_ptr.tolist() == [0, 2, 5, 7] and log.member_ptr.tolist() == [0, 2, 6, 8]
    assert log.pair_a.tolist()[-1] == 5 and log.pair_b.tolist()[-1] == 6 and log.pair_outcome.tolist()[-1] == 0.5
    assert log.pair_ptr.tolist() == [0, 1, 4, 5]
