"""Experience: the games a player played, worn away by the drift while they were away (mathematics §3)."""

import numpy as np
import pytest

from app.rating import Game, GameLog, LearningRate, apply_game, experience_before, games_before, initial_vectors
from app.rating.replay import member_experience, replay_history
from app.rating.tuning import choose_rate
from devtools.streams import comeback_stream


def reference(player, time, n_players, drift, start=None, start_time=None):
    """The recursion written out one membership at a time, as the mathematics states it."""
    e = [0.0] * n_players if start is None else [float(x) for x in start]
    last = [None] * n_players if start_time is None else [None if np.isnan(t) else float(t) for t in start_time]
    out = []
    for p, t in zip(player, time, strict=True):
        x = e[p]
        if last[p] is not None and t > last[p]:
            x = x / (1.0 + x * (0.25 * drift * drift) * (t - last[p]))
        out.append(x)
        e[p] = x + 1.0
        last[p] = t if last[p] is None else max(last[p], t)
    return np.array(out), np.array(e)


def test_a_year_away_wears_experience_as_the_variance_grows():
    # Three games at times 0, 0 and 1 year, δ = 2 logits a year: ¼δ² = 1, so the third game's experience is
    # 2 / (1 + 2·1·1) = 2/3: the variance 1/(¼e) grew from 2 to 6 = 2 + δ²·1.
    before, after, last = experience_before([0, 0, 0], [0.0, 0.0, 1.0], 1, 2.0)
    assert before.tolist() == [0.0, 1.0, 2.0 / 3.0]
    assert after.tolist() == [2.0 / 3.0 + 1.0] and last.tolist() == [1.0]
    # A game dated before the latest one is no time away, and the latest time stays.
    before, _, last = experience_before([0, 0, 0], [1.0, 0.5, 1.0], 1, 2.0)
    assert before.tolist() == [0.0, 1.0, 2.0] and last.tolist() == [1.0]


def test_without_drift_experience_is_the_number_of_games():
    rng = np.random.default_rng(0)
    log = GameLog.from_pairs(rng.integers(0, 50, 2000), rng.integers(50, 100, 2000), rng.random(2000) < 0.5)
    times = (np.sort(rng.uniform(0, 3, 2000)), None)
    start = rng.integers(0, 5, 100).astype(float)
    before, after, _ = member_experience(log, 0.0, start, 100, times)
    assert np.array_equal(before, games_before(log, start, 100))
    assert np.array_equal(after, start + np.bincount(log.member_player, minlength=100))
    worn, _, _ = member_experience(log, 0.3, start, 100, times)
    assert np.all(worn <= before) and np.any(worn < before)


@pytest.mark.parametrize("players", [5, 300])  # one player at a time; and whole rounds of players at once
def test_experience_is_the_recursion_bit_for_bit_however_the_log_is_cut(players):
    rng = np.random.default_rng(players)
    n = 6000
    player = rng.integers(0, players, n)
    time = np.floor(rng.uniform(0, 2000, n)) / 365.25  # whole days, some shared, out of order
    expected, final = reference(player.tolist(), time.tolist(), players, 0.7)
    before, after, _ = experience_before(player, time, players, 0.7)
    assert np.array_equal(before, expected) and np.array_equal(after, final)
    first, e, last = experience_before(player[:2500], time[:2500], players, 0.7)
    second, e, _ = experience_before(player[2500:], time[2500:], players, 0.7, e, last)
    assert np.array_equal(np.concatenate([first, second]), before) and np.array_equal(e, after)


def test_a_replay_with_drift_is_the_games_applied_one_by_one():
    rng = np.random.default_rng(3)
    m, n = 12, 400
    i = rng.integers(0, m, n)
    j = (i + rng.integers(1, m, n)) % m
    outcome = (rng.random(n) < 0.5).astype(float)
    log = GameLog.from_pairs(i, j, outcome)
    when = np.cumsum(rng.exponential(0.05, n))
    rate = LearningRate(0.7, 3.0, 0.6)
    C0 = initial_vectors([f"p{x}" for x in range(m)], 2, 0, 0.1, None)
    history = replay_history(C0, log, rate, times=(when, None))
    played, _, _ = member_experience(log, rate.drift, None, m, (when, None))
    C = C0.copy()
    for g in range(n):
        game = Game(((int(i[g]),), (int(j[g]),)), (1, 2) if outcome[g] else (2, 1))
        result = apply_game(C, game, rate, played[2 * g : 2 * g + 2])
        C[result.players] = result.after
    assert np.array_equal(C, history.C)
    # Cut in two, the second part starting from the first's state, it is the same replay.
    half = replay_history(C0, log.take(np.arange(200)), rate, times=(when[:200], None))
    last = np.full(m, np.nan)
    np.fmax.at(last, log.member_player[:400], np.repeat(when[:200], 2))
    rest = replay_history(half.C, log.take(np.arange(200, n)), rate, games0=half.experience, times=(when[200:], last))
    assert np.array_equal(rest.C, history.C) and np.array_equal(rest.experience, history.experience)
    with pytest.raises(Exception, match="times"):
        replay_history(C0, log, rate)


def test_the_rate_choice_finds_a_drift_where_strengths_wander_and_none_where_they_stand_still():
    C0 = initial_vectors([f"p{x}" for x in range(60)], 1, 0, 0.1, None)
    current = LearningRate(0.7, 3.0, 0.0)
    log, when = comeback_stream(walk=1.0)
    choice = choose_rate(C0, log, current, times=(when, None), drifts=(0.3, 0.6, 1.2))
    assert choice.rate.drift > 0
    without = min(row["log_loss"] for row in choice.rows if row["drift"] == 0)
    assert min(row["log_loss"] for row in choice.rows) < without - 0.002
    log, when = comeback_stream(walk=0.0)
    assert choose_rate(C0, log, current, times=(when, None), drifts=(0.3, 0.6, 1.2)).rate.drift == 0
