"""Offline refit (mathematics §9): gradient, recovery of a known A, restarts, held-out evaluation, choice of k."""

import json
from pathlib import Path

import numpy as np
import pytest
from scipy.special import expit

from app.rating import Game, GameLog, LearningRate, omega
from app.rating.elo import fit_elo, pair_counts
from app.rating.errors import RatingInputError
from app.rating.intransitivity import canonical
from app.rating.model import omega_apply, rowdot
from app.rating.refit.fit import fit
from app.rating.refit.guard import guard
from app.rating.refit.likelihood import log_likelihood, log_likelihood_gradient, pair_logits
from app.rating.refit.metrics import Metrics, evaluate, evaluate_elo
from app.rating.refit.pipeline import RefitOptions, refit
from app.rating.refit.prior import L2, penalty_weights
from app.rating.refit.selection import FOLDS, simplest_over_folds
from app.rating.refit.split import fold_terms, matchups, split_games

DATA = Path(__file__).parent.parent / "data"


def sampled_games(C_true, n_games, rng, pairs=None):
    m = len(C_true)
    if pairs is None:
        i = rng.integers(0, m, n_games)
        j = (i + rng.integers(1, m, n_games)) % m
    else:
        pick = rng.integers(0, len(pairs), n_games)
        i, j = pairs[pick, 0], pairs[pick, 1]
    p = expit(rowdot(C_true[i], omega_apply(C_true[j])))
    return GameLog.from_pairs(i, j, (rng.random(n_games) < p).astype(float))


def test_gradient_matches_finite_differences_with_teams_multiplayer_and_advantages():
    rng = np.random.default_rng(0)
    games = [
        Game(((0, 1), (2,), (3, 4)), (2, 1, 2), (0.3, 0.0, -0.2)),
        Game(((2,), (0,)), (1, 1)),
        Game(((4,), (1,), (3,), (2,)), (4, 1, 2, 3)),
    ]
    log = GameLog.from_games(games)
    C = rng.normal(size=(5, 4))
    for l2 in (0.1, penalty_weights(2, 0.1)):  # one λ, and the Elo disc's own prior
        grad = log_likelihood_gradient(C, log, l2=l2)
        numeric = np.zeros_like(C)
        h = 1e-6
        for idx in np.ndindex(C.shape):
            up, down = C.copy(), C.copy()
            up[idx] += h
            down[idx] -= h
            numeric[idx] = (log_likelihood(up, log, l2=l2) - log_likelihood(down, log, l2=l2)) / (2 * h)
        np.testing.assert_allclose(grad, numeric, atol=1e-6)


def test_the_prior_is_centred_on_the_elo_manifold_and_holds_the_first_disc_to_it():
    C = np.array([[0.5, 1.0, 0.2, -0.1], [-0.5, 1.0, 0.0, 0.3]])
    log = GameLog.from_games([])
    # No games: ℓ is the prior alone, -Σ λ_d (c_d - μ_d)² with μ = (0, 1, 0, 0).
    assert log_likelihood(C, log, l2=2.0) == pytest.approx(-2.0 * (0.25 + 0.04 + 0.01 + 0.25 + 0.09))
    weights = penalty_weights(2, 2.0)
    np.testing.assert_array_equal(weights, [0.25, 32.0, 2.0, 2.0])
    assert log_likelihood(C, log, l2=weights) == pytest.approx(-(0.25 * 0.5 + 2.0 * (0.04 + 0.01 + 0.09)))
    assert penalty_weights(1, 2.0) == 2.0  # one disc stays free to be cyclic


@pytest.mark.parametrize("k", [1, 2])
def test_recovers_a_known_low_rank_advantage_matrix(k):
    rng = np.random.default_rng(10 + k)
    C_true = rng.normal(size=(60, 2 * k))
    log = sampled_games(C_true, 40_000, rng)
    report = refit(log, 60, k, RefitOptions(restarts=3, holdout=0.2, seed=1))
    _, test = split_games(log, 0.2, 1)
    truth = evaluate(C_true, log, test)
    # Within 0.025 nats of the truth on matchups never seen in training (0.018 for k = 2: 4 numbers per player
    # from ~22 games per pair).
    assert report.heldout["refit"]["log_loss"] - truth.log_loss < 0.025
    assert report.restart_max_abs_dp < 0.02
    assert report.heldout["refit"]["log_loss"] < report.heldout["elo"]["log_loss"]
    # Two independent fits of all the games give the same canonical coordinates.
    a = fit(log, 60, k, seed=5, polish=True).C
    b = fit(log, 60, k, seed=6, polish=True).C
    np.testing.assert_allclose(canonical(a).D, canonical(b).D, atol=1e-6)


def test_pure_disc_game_is_learnt_where_elo_fails():
    # [Limitations] Example 2: A = 2(uvᵀ - vuᵀ), players on the unit circle; half of the pairs observed, 100 games each.
    rng = np.random.default_rng(3)
    m = 50
    theta = rng.uniform(0, 2 * np.pi, m)
    C_true = np.sqrt(2) * np.column_stack([np.cos(theta), np.sin(theta)])
    assert np.allclose(
        C_true @ omega(1) @ C_true.T,
        2 * (np.outer(np.cos(theta), np.sin(theta)) - np.outer(np.sin(theta), np.cos(theta))),
    )
    all_pairs = np.array([(a, b) for a in range(m) for b in range(a + 1, m)])
    observed = rng.random(len(all_pairs)) < 0.5
    seen, unseen = all_pairs[observed], all_pairs[~observed]
    i, j = np.repeat(seen[:, 0], 100), np.repeat(seen[:, 1], 100)
    p = expit(rowdot(C_true[i], omega_apply(C_true[j])))
    log = GameLog.from_pairs(i, j, (rng.random(len(i)) < p).astype(float))
    true_p = expit(rowdot(C_true[unseen[:, 0]], omega_apply(C_true[unseen[:, 1]])))

    C = max((fit(log, m, 1, seed=s) for s in range(3)), key=lambda f: f.log_likelihood).C
    refit_p = expit(rowdot(C[unseen[:, 0]], omega_apply(C[unseen[:, 1]])))
    elo = fit_elo(pair_counts(log, m)).ratings
    elo_p = expit(elo[unseen[:, 0]] - elo[unseen[:, 1]])
    assert np.mean((refit_p - true_p) ** 2) < 1e-3
    assert np.mean((elo_p - true_p) ** 2) > 0.05


def test_chess_data_choose_k_by_cross_validation():
    games = json.loads((DATA / "chess_engines.json").read_text())
    names = sorted({p for g in games for p in g[:2]})
    index = {n: x for x, n in enumerate(names)}
    score = {"1-0": 1.0, "0-1": 0.0, "1/2-1/2": 0.5}
    log = GameLog.from_pairs([index[w] for w, _, _ in games], [index[b] for _, b, _ in games],
                             [score[r] for _, _, r in games])  # fmt: skip
    current = np.random.default_rng(0).normal(scale=0.1, size=(len(names), 4))
    report = refit(
        log, len(names), 2, RefitOptions(restarts=2, holdout=0.2, seed=0, select_k=[0, 1, 2]), current=current
    )
    losses = {row["k"]: row["heldout_log_loss"] for row in report.k_selection}
    errors = {row["k"]: row["standard_error"] for row in report.k_selection}
    assert sorted(losses) == [0, 1, 2]
    best = min(losses.values())
    assert report.k == min(k for k in losses if losses[k] - best <= errors[k])  # the simplest within one SE
    assert report.C.shape == (len(names), 4)
    assert set(report.heldout) >= {"elo", "current"}
    # k = 0's loss on each fold is Elo fitted on the other folds and scored on that one.
    fold = fold_terms(log, FOLDS, 0)
    elo = []
    for f in range(FOLDS):
        ratings = fit_elo(pair_counts(log, len(names), np.flatnonzero(fold != f))).ratings
        elo.append(evaluate_elo(ratings, log, np.flatnonzero(fold == f)))
    assert report.k_selection[0]["fold_log_losses"] == pytest.approx([m.log_loss for m in elo])
    w = log.pair_weight
    assert losses[0] == pytest.approx(sum(m.log_loss * w[fold == f].sum() for f, m in enumerate(elo)) / w.sum())


def test_the_one_standard_error_rule_takes_the_error_over_matchups():
    # Three matchups of two games each, one per fold. k = 2 is best on average; k = 1 trails it by 0.0017 with a
    # standard error of 0.0033 over the matchups (differences 0.005, 0.005, -0.005): within one, so the simpler
    # k = 1. k = 0 trails by 0.042 everywhere.
    log = GameLog.from_pairs(np.array([0, 0, 1, 1, 2, 2]), np.array([1, 1, 2, 2, 0, 0]), np.ones(6))
    fold = np.array([0, 0, 1, 1, 2, 2])
    per_matchup = {0: [0.700, 0.720, 0.690], 1: [0.660, 0.690, 0.640], 2: [0.655, 0.685, 0.645]}
    chosen, rows = simplest_over_folds({k: np.repeat(v, 2) for k, v in per_matchup.items()}, log, fold)
    assert chosen == 1
    assert [row["k"] for row in rows] == [0, 1, 2]
    assert rows[1]["heldout_log_loss"] == pytest.approx(0.6633333)
    assert rows[1]["standard_error"] == pytest.approx(np.std([0.005, 0.005, -0.005], ddof=1) / np.sqrt(3))
    assert rows[2]["standard_error"] == 0.0 and rows[0]["fold_log_losses"] == pytest.approx(per_matchup[0])


def test_folds_keep_each_matchup_whole_and_are_dealt_evenly():
    rng = np.random.default_rng(1)
    pairs = rng.integers(0, 30, size=(3_000, 2))
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    log = GameLog.from_pairs(pairs[:, 0], pairs[:, 1], rng.random(len(pairs)) < 0.5)
    fold = fold_terms(log, 5, seed=7)
    matchup = matchups(log)
    assert all(len(set(fold[matchup == m].tolist())) == 1 for m in range(matchup.max() + 1))
    per_fold = np.bincount(np.unique(np.column_stack([matchup, fold]), axis=0)[:, 1])
    assert len(per_fold) == 5 and per_fold.max() - per_fold.min() <= 1
    assert not np.array_equal(fold, fold_terms(log, 5, seed=8))  # the seed deals them
    two = GameLog.from_pairs(np.array([0, 0, 1]), np.array([1, 1, 2]), np.ones(3))
    assert sorted(set(fold_terms(two, 5, 0).tolist())) == [0, 1]  # no more folds than matchups


def test_a_sparse_log_chooses_a_firmer_prior():
    # 8 games per player and 4 coordinates each: the default λ overfits, held-out loss picks a larger one.
    rng = np.random.default_rng(4)
    C_true = rng.normal(size=(500, 4))
    log = sampled_games(C_true, 5_000, rng)
    report = refit(log, 500, 2, RefitOptions(l2=None, restarts=1, holdout=0.2, seed=0))
    losses = {row["l2"]: row["heldout_log_loss"] for row in report.l2_selection}
    assert report.l2 == min(losses, key=losses.get) and report.l2 > 0.5
    assert report.heldout["refit"]["log_loss"] < losses[0.5]


def test_guard_compares_the_refit_continued_online_with_the_served_forecasts():
    rng = np.random.default_rng(3)
    C_true = 2.0 * rng.normal(size=(20, 2))  # a decisive k = 1 game, far from the Elo manifold
    log = sampled_games(C_true, 3_000, rng)
    start = np.tile([0.0, 1.0], (20, 1)) + rng.normal(scale=0.05, size=(20, 2))
    frozen = LearningRate(0.0)  # the refit's vectors predict the whole window
    window = slice(log.pair_ptr[2_400], None)
    # Coin-flip forecasts (log 2 per game) lose to a refit of 2,400 games.
    coin = guard(log, start, 600, np.full(600, 0.5), frozen, 1, [0, 1])
    assert coin.online_log_loss == pytest.approx(np.log(2)) and coin.better and coin.k == 1
    assert coin.refit_log_loss < 0.5
    # The true probabilities cannot be beaten.
    truth = guard(log, start, 600, expit(pair_logits(C_true, log))[window], frozen, 1, [0, 1])
    assert not truth.better and truth.online_log_loss < truth.refit_log_loss
    assert truth.refit_log_loss == pytest.approx(coin.refit_log_loss)
    with pytest.raises(RatingInputError):
        guard(log, start, 3_000, np.full(3_000, 0.5), frozen, 1)


def test_held_out_matchups_choose_elo_where_elo_predicts_unseen_pairs_best():
    # Elo ratings with a faint cyclic disc; half of all pairs played ten times each.  A larger k fits the played
    # pairs better but predicts the unplayed ones worse: holding out whole matchups sees that (holding out random
    # games chose k = 1 here).
    rng = np.random.default_rng(0)
    n = 40
    C_true = np.column_stack([rng.normal(0, 1, n), np.ones(n), rng.normal(0, 0.15, (n, 2))])
    i, j = np.triu_indices(n, k=1)
    seen = rng.random(len(i)) < 0.5
    pairs = np.repeat(np.column_stack([i[seen], j[seen]]), 10, axis=0)
    log = sampled_games(C_true, len(pairs), rng, pairs=pairs[rng.permutation(len(pairs))])
    train, test = split_games(log, 0.2, 0)
    a, b = log.single_players()
    matchups = {(min(x, y), max(x, y)) for x, y in zip(a.tolist(), b.tolist(), strict=True)}
    held = {(min(x, y), max(x, y)) for x, y in zip(a[test].tolist(), b[test].tolist(), strict=True)}
    kept = {(min(x, y), max(x, y)) for x, y in zip(a[train].tolist(), b[train].tolist(), strict=True)}
    assert held and not held & kept and held | kept == matchups  # no matchup on both sides of the split
    assert 0.1 < len(test) / log.n_games < 0.3
    report = refit(log, n, 3, RefitOptions(restarts=1, select_k=[0, 1, 2, 3]))
    assert report.k == 0, report.k_selection


def test_cross_validation_finds_the_k_of_elo_plus_a_cyclic_disc():
    # Elo ratings and a disc of comparable size (k = 2), half of all pairs played ten times each: over ten folds
    # of whole matchups, k = 2 beats k = 0 and 1 by far more than the noise, and k = 3 adds nothing.
    rng = np.random.default_rng(0)
    n = 40
    theta = rng.uniform(0, 2 * np.pi, n)
    C_true = np.column_stack([rng.normal(0, 1, n), np.ones(n), 1.5 * np.cos(theta), 1.5 * np.sin(theta)])
    i, j = np.triu_indices(n, k=1)
    seen = rng.random(len(i)) < 0.5
    pairs = np.repeat(np.column_stack([i[seen], j[seen]]), 10, axis=0)
    log = sampled_games(C_true, len(pairs), rng, pairs=pairs[rng.permutation(len(pairs))])
    report = refit(log, n, 3, RefitOptions(restarts=1, select_k=[0, 1, 2, 3]))
    assert report.k == 2, report.k_selection
    rows = {row["k"]: row for row in report.k_selection}
    assert all(len(row["fold_log_losses"]) == FOLDS for row in rows.values())
    for simpler in (0, 1):
        assert rows[simpler]["heldout_log_loss"] - rows[2]["heldout_log_loss"] > 3 * rows[simpler]["standard_error"]


TINY = {  # (winners, losers, scores): logs too small for a held-out split, or barely big enough
    "one game": ([0], [1], [1.0]),
    "two games, one matchup": ([0, 1], [1, 0], [1.0, 0.0]),
    "two games, two matchups": ([0, 1], [1, 2], [1.0, 1.0]),
    "three games, one matchup": ([0, 0, 1], [1, 1, 0], [1.0, 0.5, 1.0]),
    "three games, a cycle": ([0, 1, 2], [1, 2, 0], [1.0, 1.0, 1.0]),
}


@pytest.mark.parametrize("games", TINY.values(), ids=list(TINY))
def test_a_log_too_small_to_hold_out_is_fitted_on_every_game_and_says_why(games):
    log = GameLog.from_pairs(*(np.array(x) for x in games))
    m = log.n_players_needed
    current = np.tile([0.0, 1.0, 0.0, 0.0], (m, 1))
    fell_back = 0
    for seed in range(4):
        train, test = split_games(log, 0.2, seed)
        for options in ({}, {"select_k": [0, 1, 2]}, {"l2": None}, {"select_k": [1, 2], "l2": None}, {"l2": 8.0}):
            report = refit(log, m, 2, RefitOptions(restarts=2, seed=seed, **options), current=current)
            assert np.all(np.isfinite(report.C)) and np.isfinite(report.log_likelihood)
            assert report.C.shape == (m, 4) and np.isfinite(report.restart_max_abs_dp)
            if len(train) and len(test):  # a real split: held-out metrics, choices by held-out loss
                assert report.heldout_note is None and {"elo", "current"} <= set(report.heldout)
                assert all(np.isfinite(row["log_loss"]) for row in report.heldout.values())
                continue
            fell_back += 1
            # Nothing to hold out: no held-out metrics, nothing chosen by them, and the reason in words.
            assert report.heldout == {} and report.k_selection is None and report.l2_selection is None
            assert "matchup" in report.heldout_note and "all games" in report.heldout_note
            assert report.l2 == (options.get("l2") or L2)  # the λ given, or the default: none could be chosen
            assert report.k == min(options.get("select_k", [2]))  # the simplest k offered
    single_matchup = len({(min(a, b), max(a, b)) for a, b in zip(games[0], games[1], strict=True)}) == 1
    assert fell_back == 20 if single_matchup else 0 < fell_back < 20  # one matchup never splits


def test_holdout_zero_with_one_k_needs_no_choice_and_says_nothing_was_held_out():
    log = GameLog.from_pairs(np.array([0, 1, 2]), np.array([1, 2, 0]), np.ones(3))
    report = refit(log, 3, 2, RefitOptions(restarts=1, holdout=0.0, select_k=[1]))  # what an applied auto refit fits
    assert report.k == 1 and report.heldout == {} and "holdout is 0" in report.heldout_note
    with pytest.raises(RatingInputError):  # a real choice needs held-out games
        refit(log, 3, 2, RefitOptions(restarts=1, holdout=0.0, select_k=[0, 1]))


def test_metrics_of_no_terms_is_an_error_and_accuracy_of_draws_only_is_null():
    log = GameLog.from_pairs(np.array([0, 1]), np.array([1, 0]), np.array([0.5, 0.5]))
    with pytest.raises(RatingInputError):
        Metrics.of(np.array([]), log, np.array([], dtype=np.int64))
    draws = Metrics.of(np.array([0.6, 0.4]), log, np.arange(2))
    assert draws.accuracy is None and draws.pairs == 2 and np.isfinite(draws.log_loss)


def test_guard_on_a_tiny_log_compares_without_crashing():
    # Five games of one matchup before the window: the guard's refit cannot hold any out.
    log = GameLog.from_pairs(np.array([0, 1, 0, 0, 1, 0]), np.array([1, 0, 1, 1, 0, 1]), np.ones(6))
    start = np.tile([0.0, 1.0], (2, 1))
    for seed in range(3):
        verdict = guard(log, start, 1, np.full(1, 0.5), LearningRate(0.1), 1, [0, 1], seed=seed)
        assert np.isfinite(verdict.refit_log_loss) and verdict.online_log_loss == pytest.approx(np.log(2))


def test_the_penalty_is_chosen_on_predictions_with_the_learned_seats():
    # A strong home advantage: the held-out loss of each λ must count the seats the trial fit learned, as the
    # refit's own held-out metrics do.
    rng = np.random.default_rng(7)
    m, n = 16, 800
    r = rng.normal(size=m)
    home = rng.integers(0, m, n)
    away = (home + rng.integers(1, m, n)) % m
    won = rng.random(n) < expit(r[home] - r[away] + 1.5)
    log = GameLog.from_pairs(home, away, won.astype(float), seats=(np.zeros(n, int), np.ones(n, int)))
    report = refit(log, m, 1, RefitOptions(l2=None, restarts=1, seed=0))
    train, test = split_games(log, 0.2, 0)
    for row in report.l2_selection:
        trial = fit(log, m, 1, row["l2"], train, seed=0)
        assert trial.seats is not None and trial.seats[0] - trial.seats[1] > 1.0
        assert row["heldout_log_loss"] == pytest.approx(evaluate(trial.C, log, test, trial.seats).log_loss)
