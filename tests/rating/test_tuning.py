import numpy as np
import pytest
from scipy.special import expit

from app.ladders.schemas import RULE_LIMITS, LadderCreate
from app.rating import ELO_PER_LOGIT, GameLog, LearningRate, RatingInputError, tuning
from app.rating.prequential import prequential_losses, prequential_losses_many
from app.rating.seats import Seats
from app.rating.tuning import choose_rate
from app.rating.variance import VarianceRule

from .helpers import DEFAULT, elo_stream, start


def test_each_game_is_scored_from_the_games_before_it():
    # Equal players: the first game is a coin flip, ln 2 whoever wins; the second is predicted after the first.
    C0 = np.tile([0.0, 1.0], (2, 1))
    log = GameLog.from_pairs(np.array([0, 0]), np.array([1, 1]), np.array([1.0, 1.0]))
    losses = prequential_losses(C0, log, LearningRate(0.5))
    assert losses[0] == pytest.approx(np.log(2))
    assert 0 < losses[1] < np.log(2)  # player 0 won the first: favoured now, and won again


def test_a_drifting_field_gets_a_constant_rate_and_a_steady_one_a_shrinking_rate():
    drifting = elo_stream(20, 8_000, 0.02, seed=1)
    choice = choose_rate(start(20), drifting, DEFAULT)
    rows = {(row["eta"], row["tau"]): row for row in choice.rows}
    best = min(choice.rows, key=lambda row: row["log_loss"])
    assert (choice.rate.eta, choice.rate.tau) == (best["eta"], best["tau"])  # the best, by more than its noise
    assert choice.rate.tau is None  # strengths that keep moving need a rate that does not shrink
    current = rows[(DEFAULT.eta, DEFAULT.tau)]
    # Over the latest half, by more than the bar for 24 challengers (2.48 standard errors).
    assert current["log_loss"] - best["log_loss"] > 2.5 * best["standard_error"] and best["scored_games"] == 4_000

    # Fixed strengths: a rate that shrinks as players settle, better than any constant one.
    steady = choose_rate(start(20), elo_stream(20, 8_000, 0.0, seed=1), DEFAULT)
    assert steady.rate.tau is not None
    chosen = next(row for row in steady.rows if (row["eta"], row["tau"]) == (steady.rate.eta, steady.rate.tau))
    assert min(row["log_loss"] for row in steady.rows if row["tau"] is None) > chosen["log_loss"]


def test_a_small_ladder_keeps_its_rate():
    # 30 games cannot tell the rates apart: whatever predicted them best did so by less than the noise.
    log = elo_stream(6, 30, 0.0, seed=2)
    choice = choose_rate(start(6), log, DEFAULT)
    assert choice.rate == DEFAULT
    assert len(choice.rows) == 25 and choice.rows[0]["standard_error"] == 0.0
    # Two games are scored on the second alone: no standard error to beat, and no evidence either.
    for seed in range(5):
        assert choose_rate(start(2), elo_stream(2, 2, 0.0, seed=seed), DEFAULT, rules=True).rate == DEFAULT


def test_rates_replayed_together_score_each_game_as_a_replay_of_each_alone():
    log = elo_stream(30, 3_000, 0.01, seed=3)
    rates = [LearningRate(0.1), LearningRate(0.7, 3.0), LearningRate(2.8, 30.0)]
    together = prequential_losses_many(start(30), log, rates)
    for rate, row in zip(rates, together, strict=True):
        np.testing.assert_array_equal(row, prequential_losses(start(30), log, rate))


def test_with_seats_too_the_rates_together_score_each_game_as_a_replay_of_each_alone():
    # White wins more, a seat learned game by game; some games are played with no seat, some with a handicap.
    rng = np.random.default_rng(4)
    m, n = 40, 3_000
    r = rng.normal(0, 1, m)
    i = rng.integers(0, m, n)
    j = (i + rng.integers(1, m, n)) % m
    seated = rng.random(n) < 0.8
    outcome = (rng.random(n) < expit(r[i] - r[j] + 0.4 * seated)).astype(float)
    advantage = np.where(rng.random(n) < 0.3, 0.2, 0.0)  # a handicap on some games, with or without a seat
    log = GameLog.from_pairs(i, j, outcome, advantage, seats=(np.where(seated, 0, -1), np.where(seated, 1, -1)))
    rates = [LearningRate(eta, tau) for eta in (0.2, 2.8) for tau in (None, 10.0)]
    together = prequential_losses_many(start(m), log, rates, Seats.fresh(2))
    for rate, row in zip(rates, together, strict=True):
        np.testing.assert_array_equal(row, prequential_losses(start(m), log, rate, Seats.fresh(2)))


def test_seats_the_log_names_must_be_given():
    log = GameLog.from_pairs(np.array([0, 1]), np.array([1, 0]), np.array([1.0, 0.0]), seats=(0, 1))
    with pytest.raises(RatingInputError):
        prequential_losses_many(start(2), log, [DEFAULT], Seats.fresh(1))


def seated_stream(m: int, n: int, advantage: float, seed: int) -> GameLog:
    """``n`` games between ``m`` players of fixed Elo strengths, the first side in seat 0 (``advantage`` logits
    ahead) and the second in seat 1."""
    rng = np.random.default_rng(seed)
    r = rng.normal(0, 1, m)
    i = rng.integers(0, m, n)
    j = (i + rng.integers(1, m, n)) % m
    outcome = (rng.random(n) < expit(r[i] - r[j] + advantage)).astype(float)
    return GameLog.from_pairs(i, j, outcome, seats=(0, 1))


def test_each_rate_may_start_its_seats_from_its_own_prior():
    log = seated_stream(30, 2_000, 0.5, seed=5)
    rates = [LearningRate(0.7, 3.0), LearningRate(0.7, 3.0), LearningRate(1.4, None)]
    priors = [Seats.fresh(2, 16.0), Seats.fresh(2, 0.25), Seats.fresh(2, 1.0)]
    together = prequential_losses_many(start(30), log, rates, priors)
    for rate, prior, row in zip(rates, priors, together, strict=True):
        np.testing.assert_array_equal(row, prequential_losses(start(30), log, rate, prior))
    assert not np.array_equal(together[0], together[1])  # the prior changed the forecasts


def test_the_seats_prior_is_chosen_with_the_rate():
    # White wins far more than a prior of 0.25 logit expects: the log asks for a wider one.
    log = seated_stream(30, 1_500, 3.5, seed=6)
    choice = choose_rate(start(30), log, DEFAULT, Seats.fresh(2, 16.0), seat_sds=(0.25, 0.5, 1.0, 2.0))
    assert choice.seat_prior in (1.0, 2.0)
    chosen, against = choice.rows[choice.index], choice.rows[choice.against]
    assert choice.rows[0]["seat_prior"] == 0.25 and chosen["seat_prior"] == choice.seat_prior
    # The rates are scored on the log's latest half; the priors, which matter in a seat's first games, on all of
    # it, against the rate chosen with the ladder's prior.
    assert choice.rows[0]["scored_games"] == 750 and chosen["scored_games"] == against["scored_games"] == 1_500
    assert against["seat_prior"] == 0.25 and (against["eta"], against["tau"]) == (chosen["eta"], chosen["tau"])
    assert against["log_loss"] - chosen["log_loss"] > 1.7 * chosen["standard_error"]  # the bar for 3 priors
    assert len(choice.rows) == 25 + 4  # the rates, then every prior at the rate chosen

    # Without seats there is no prior to choose.
    plain = choose_rate(start(30), elo_stream(30, 300, 0.0, seed=6), DEFAULT, seat_sds=(0.25, 2.0))
    assert plain.seat_prior is None and "seat_prior" not in plain.rows[0]


def test_a_ladder_on_the_variance_rule_chooses_its_seats_prior_too():
    log = seated_stream(30, 1_500, 3.5, seed=6)
    rule = VarianceRule.from_eta(0.7, 0.001)
    choice = choose_rate(start(30), log, rule, Seats.fresh(2, 16.0), seat_sds=(0.25, 0.5, 1.0, 2.0))
    assert choice.seat_prior in (1.0, 2.0), choice.rows
    assert {row["seat_prior"] for row in choice.rows} == {0.25, 0.5, 1.0, 2.0}


def test_the_best_of_many_challengers_must_beat_the_rate_by_more_than_the_best_of_one():
    # Picked among many, the best looks better than it is by luck alone: 1.5 standard errors ahead changes the
    # rate when it was the only challenger, or one of 24 that predict alike, not when it was the best of 24 that
    # differ from one another (the bar is then 2.4, near Bonferroni's 2.48).
    log = elo_stream(6, 100, 0.0, seed=2)
    rng = np.random.default_rng(3)
    one, alike, unlike = rng.normal(size=(1, 500)), np.tile(rng.normal(size=500), (24, 1)), rng.normal(size=(24, 500))
    for differences, changed in ((one, True), (alike, True), (unlike, False)):
        candidates = [DEFAULT] + [LearningRate(0.1 * (n + 1), None) for n in range(len(differences))]
        means, errors = np.full(len(candidates), 0.60), np.full(len(candidates), 0.01)
        means[1], errors[0] = 0.60 - 1.5 * 0.01, 0.0
        scores = tuning.Scores(means, errors, np.vstack([np.zeros(500), differences]))
        choice = tuning._chosen(start(6), log, candidates, scores, None, None, ())
        assert (choice.rate != DEFAULT) == changed and choice.index == (1 if changed else 0)
    bars = [
        tuning._bar(tuning.Scores(np.zeros(25), np.ones(25), np.vstack([np.zeros(500), d]))) for d in (alike, unlike)
    ]
    assert bars[0] == pytest.approx(1.0, abs=0.03) and bars[1] == pytest.approx(2.4, abs=0.1)


def test_no_choice_goes_past_the_settings_a_ladder_takes():
    # A ladder at η 8 (the API takes up to 10): 2 and 4 times it are not tried, so a choice can always be set
    # again by PATCH and restored from an export; so for the variance rule's newcomer and noise, and the drift.
    limits = RULE_LIMITS
    log = elo_stream(10, 400, 0.02, seed=4)
    choice = choose_rate(start(10), log, LearningRate(8.0, 3.0), rules=True, limits=limits)
    assert max(row["eta"] for row in choice.rows) <= limits.eta
    assert {row["eta"] for row in choice.rows if row["rule"] == "steps"} == {2.0, 4.0, 8.0}
    on_variance = VarianceRule(6.0, limits.noise / 2, limits.drift)
    times = (np.arange(400) / 100.0, None)  # four years
    choice = choose_rate(start(10), log, on_variance, times=times, drifts=(limits.drift * 2,), limits=limits)
    for row in choice.rows:
        assert row["eta"] <= limits.eta + 1e-9 and row["drift"] <= limits.drift * (1 + 1e-9)
        assert row["noise"] is None or row["noise"] <= limits.noise * (1 + 1e-9)
    # The bounds are the API's.
    bounds = {
        name: next(part["maximum"] for part in [field, *field.get("anyOf", [])] if "maximum" in part)
        for name, field in LadderCreate.model_json_schema()["properties"].items()
        if name in ("eta", "noise", "drift")  # eta may be null (the rule's default)
    }
    in_elo = {"eta": limits.eta, "noise": np.sqrt(limits.noise) * ELO_PER_LOGIT}
    assert bounds == pytest.approx(in_elo | {"drift": limits.drift * ELO_PER_LOGIT})


def test_a_free_for_alls_rate_report_is_per_comparison():
    """A game of N sides weighs its N(N - 1)/2 pairs 1/(N - 1) each: its loss is N/2 comparisons' worth.  The rate
    report divides each game's loss by that, so its figures are per comparison (a held-out report's scale); the
    choice, which compares rules on the same games, is the same as on losses per game."""
    from app.rating.game_log import Game

    rng = np.random.default_rng(4)
    games = []
    for n in rng.integers(3, 9, 120).tolist():
        players = rng.choice(30, size=n, replace=False)
        games.append(Game(tuple((int(p),) for p in players), tuple(rng.permutation(n) + 1)))
    log = GameLog.from_games(games)
    choice = choose_rate(start(30), log, DEFAULT)
    per_game = prequential_losses(start(30), log, DEFAULT)[60:]
    comparisons = np.add.reduceat(log.pair_weight, log.pair_ptr[:-1])[60:]
    np.testing.assert_allclose(comparisons, [len(g.sides) / 2 for g in games[60:]], rtol=1e-12)
    assert choice.rows[0]["log_loss"] == pytest.approx(per_game.mean() / comparisons.mean(), rel=1e-12)
    assert 0.3 < choice.rows[0]["log_loss"] < 1.0  # a pair's log loss, not a game's (about 0.69 × N/2)
    pairs = GameLog.from_pairs(*[np.array(x) for x in ([0, 1, 2, 0], [1, 2, 0, 2], [1.0, 0.0, 1.0, 0.5])])
    two = choose_rate(start(3), pairs, DEFAULT)
    assert two.rows[0]["log_loss"] == prequential_losses(start(3), pairs, DEFAULT)[2:].mean()  # a game is one


def test_a_ladder_on_the_variance_rule_reaches_a_rule_far_from_its_own_in_one_choice():
    """Fixed strengths want almost no noise: from a noise of 0.1 logits² (55 Elo points a game), 0.1 times it is
    as far as multiples of its own reach; the grid a step's choice tries goes the rest of the way at once."""
    log = elo_stream(20, 6_000, 0.0, seed=7)
    current = VarianceRule(1.0, 0.1)
    choice = choose_rate(start(20), log, current)
    assert isinstance(choice.rate, VarianceRule) and choice.rate.noise < 0.1 * current.noise, choice.rows
    tried = {(row["eta"], row["noise"]) for row in choice.rows if row["rule"] == "variance"}
    grid = {(u * np.sqrt(2), q) for u in tuning.VARIANCE_STARTS for q in tuning.NOISES}
    assert all(any(np.isclose(e, u) and np.isclose(n, q) for e, n in tried) for u, q in grid)


def test_a_rule_changes_only_on_a_log_scored_on_enough_games():
    """Five standard errors ahead, a challenger changes the rule on a log of 40 games (20 scored), not on one of 38
    (19 scored): a free-for-all's first choice, four races of many drivers, scores two."""
    candidates = [DEFAULT, LearningRate(1.4, None)]
    scores = tuning.Scores(np.array([0.60, 0.55]), np.array([0.0, 0.01]), np.zeros((2, 5)))
    for n_games, changed in ((38, False), (40, True)):
        log = elo_stream(6, n_games, 0.0, seed=2)
        choice = tuning._chosen(start(6), log, candidates, scores, None, None, ())
        assert (choice.rate != DEFAULT) == changed and choice.rows[0]["scored_games"] == n_games - n_games // 2
