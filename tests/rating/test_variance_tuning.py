"""The variance rule's candidates replayed side by side, and chosen by a ladder's log (mathematics §3b, §3)."""

import numpy as np
import pytest

from app.rating import GameLog, LearningRate, initial_vectors, variance_tuning
from app.rating.prequential import prequential_losses
from app.rating.seats import Seats
from app.rating.tuning import (
    CYCLES,
    SHRINKING_BACK_ETA,
    SHRINKING_BACK_TAUS,
    STEPS_BACK,
    choose_rate,
)
from app.rating.variance import VarianceRule
from app.rating.variance_tuning import variance_losses_many
from devtools.streams import career_stream

from .helpers import DEFAULT, elo_stream, random_games, start

RULES = [VarianceRule(0.5, 0.001), VarianceRule(0.2, 0.01, 0.4), VarianceRule(1.0, 1e-4, 2.0)]


def test_rules_replayed_together_score_each_game_as_a_replay_of_each_alone():
    log = elo_stream(30, 2_000, 0.01, seed=3)
    when = np.sort(np.random.default_rng(0).uniform(0, 4, log.n_games))
    together = variance_losses_many(start(30), log, RULES, times=(when, None))
    for row, rule in zip(together, RULES, strict=True):
        np.testing.assert_array_equal(row, prequential_losses(start(30), log, rule, times=(when, None)))


def test_with_seats_and_with_teams_too():
    rng = np.random.default_rng(4)
    i = rng.integers(0, 12, 600)
    j = (i + rng.integers(1, 12, 600)) % 12
    seated = GameLog.from_pairs(i, j, rng.random(600) < 0.6, seats=(np.zeros(600, int), np.ones(600, int)))
    seats = Seats.fresh(2)
    together = variance_losses_many(start(12), seated, RULES[:1] * 2, seats)
    alone = prequential_losses(start(12), seated, RULES[0], seats.copy())
    np.testing.assert_array_equal(together[0], alone)
    np.testing.assert_array_equal(together[1], alone)
    teams = GameLog.from_games(random_games(rng, 12, 300, "teams_and_multiplayer", advantages=True))
    together = variance_losses_many(start(12), teams, [RULES[0], VarianceRule(0.2, 0.01)])
    np.testing.assert_array_equal(together[1], prequential_losses(start(12), teams, VarianceRule(0.2, 0.01)))


def test_teams_and_free_for_alls_replayed_as_copies_score_each_game_as_a_replay_of_each_alone():
    """Rules replayed side by side over a dated log of teams and free-for-alls (k = 2), each rule with its own
    start, noise, drift and cyclic share, some in a turn of their own (variance_tuning.STACKED_ROWS): each row is
    that rule's own replay, bit for bit."""
    rng = np.random.default_rng(8)
    log = GameLog.from_games(random_games(rng, 20, 400, "teams_and_multiplayer", advantages=True))
    when = np.sort(rng.uniform(0, 3, log.n_games))
    C0 = initial_vectors([f"p{x}" for x in range(20)], 2, 0, 0.05, [0, 1, 0, 0])
    rules = [*RULES, VarianceRule(4.0, 3e-3, 0.3, cycles=0.5), VarianceRule(0.25, 0.1, 0.0, cycles=0.8)]
    together = variance_losses_many(C0, log, rules, times=(when, None))
    for row, rule in zip(together, rules, strict=True):
        np.testing.assert_array_equal(row, prequential_losses(C0, log, rule, times=(when, None)))
    rows = len(log.pair_a) + len(log.member_player)
    with pytest.MonkeyPatch.context() as patch:  # two rules a turn: three turns
        patch.setattr(variance_tuning, "STACKED_ROWS", 2 * rows)
        np.testing.assert_array_equal(variance_losses_many(C0, log, rules, times=(when, None)), together)


def test_a_changing_field_chooses_the_variance_rule_and_never_a_frozen_one():
    # Strengths that wander and cohorts of improving newcomers (devtools.streams.career_stream), from the ladder
    # default's start near the Elo manifold: the variance rule, whose noise never lets a step freeze, predicts the
    # log better than every shrinking or constant step.
    log, m, when = career_stream(games=8_000)
    elo = initial_vectors([f"p{x}" for x in range(m)], 2, 0, 0.05, [0.0, 1.0, 0.0, 0.0])  # the ladder default
    choice = choose_rate(elo, log, DEFAULT, times=(when, None), drifts=(0.2, 0.5), rules=True)
    assert isinstance(choice.rate, VarianceRule) and choice.rate.noise > 0
    best_steps = min(row["log_loss"] for row in choice.rows if row["rule"] == "steps")
    assert choice.rows[choice.index]["log_loss"] < best_steps
    assert (
        choice.rows[0]["log_loss"] - choice.rows[choice.index]["log_loss"] > choice.rows[choice.index]["standard_error"]
    )
    # A ladder on the variance rule chooses around its own start and noise, every candidate's noise > 0, and may go
    # back to a step, a constant one only: no candidate can freeze a player.
    again = choose_rate(elo, log, VarianceRule(0.5, 1e-4), rules=True)
    variance = [row for row in again.rows if row["rule"] == "variance"]
    assert all(row["noise"] > 0 for row in variance) and len(variance) >= 15 + len(CYCLES) - 1
    assert all(row["tau"] is None for row in again.rows if row["rule"] == "steps")
    assert isinstance(again.rate, VarianceRule) and again.rate.noise > 1e-4


def test_a_small_ladder_keeps_its_rule():
    log = elo_stream(6, 30, 0.0, seed=2)
    assert choose_rate(start(6), log, DEFAULT, rules=True).rate == DEFAULT
    assert choose_rate(start(6), log, LearningRate(0.7, 3.0)).index == 0


def _field(share: float, m: int = 60, n: int = 6_000, seed: int = 5) -> tuple[GameLog, np.ndarray]:
    """Games of a field whose advantages are a ranking (share 1) or rock-paper-scissors cycles (share 0), with
    the ladder default's start near the Elo manifold (k = 2)."""
    rng = np.random.default_rng(seed)
    r, angle = rng.normal(size=m), rng.uniform(0, 2 * np.pi, m)
    a = 2 * share * (r[:, None] - r[None, :]) + 4 * (1 - share) * np.sin(angle[:, None] - angle[None, :])
    i = rng.integers(0, m, n)
    j = (i + rng.integers(1, m, n)) % m
    won = rng.random(n) < 1 / (1 + np.exp(-a[i, j]))
    return GameLog.from_pairs(i, j, won.astype(float)), initial_vectors(
        [f"p{x}" for x in range(m)], 2, 0, 0.05, [0, 1, 0, 0]
    )


def test_the_choice_gives_cycles_a_share_of_the_steps_only_where_the_field_goes_round():
    # A ranking: the straight ladder's rule (no share for the cyclic disc) predicts best; rock-paper-scissors: the
    # cyclic disc takes the larger share of every step.
    ranking, C0 = _field(1.0)
    straight = choose_rate(C0, ranking, VarianceRule(1.0, 1e-3, cycles=0.25), rules=True)
    assert isinstance(straight.rate, VarianceRule) and straight.rate.cycles == 0.0
    cyclic, C0 = _field(0.0)
    round_ = choose_rate(C0, cyclic, VarianceRule(1.0, 1e-3, cycles=0.0), rules=True)
    variance = [row for row in round_.rows if row["rule"] == "variance"]
    assert min(variance, key=lambda row: row["log_loss"])["cycles"] >= 0.5
    straight_best = min(row["log_loss"] for row in variance if row["cycles"] == 0.0)
    assert round_.rows[round_.index]["log_loss"] < straight_best - 0.05  # far better than a straight ladder's


def test_a_ladder_on_the_variance_rule_can_go_back_to_a_constant_step():
    # A variance rule that barely moves anyone (its start and noise tiny, every candidate around it too): the log
    # takes the ladder back to a constant step, which never freezes a player either.
    log = elo_stream(30, 3_000, 0.01, seed=3)
    frozen = VarianceRule(1e-3, 1e-8)
    back = choose_rate(start(30), log, frozen, rules=True)
    assert isinstance(back.rate, LearningRate) and back.rate.tau is None and back.rate.eta in STEPS_BACK
    assert back.rows[0]["log_loss"] - back.rows[back.index]["log_loss"] > back.rows[back.index]["standard_error"]


def test_a_ladder_on_the_variance_rule_can_go_back_to_a_new_ladders_shrinking_step():
    # A variance rule chosen for a young ladder's newcomers (a large start and noise) on a field that has settled
    # (steady strengths, played over three years, the steps following a drift): a step that shrinks with each
    # player's games, as a new ladder's does, predicts better than every rule around it and every constant step, and
    # the log takes the ladder back to it.  Without a drift it is not tried (a regular's step would freeze).
    log = elo_stream(30, 3_000, 0.0, seed=3)
    when = np.linspace(0.0, 3.0, log.n_games)
    back = choose_rate(start(30), log, VarianceRule(7.0, 0.1, 0.05), times=(when, None), rules=True)
    assert isinstance(back.rate, LearningRate) and back.rate.eta == SHRINKING_BACK_ETA
    assert back.rate.tau in SHRINKING_BACK_TAUS and back.rate.drift == 0.05
    assert back.rows[0]["log_loss"] - back.rows[back.index]["log_loss"] > 2 * back.rows[back.index]["standard_error"]
    still = choose_rate(start(30), log, VarianceRule(7.0, 0.1), rules=True)
    assert all(row["tau"] is None for row in still.rows if row["rule"] == "steps")
