"""The choice of k and λ by held-out loss (mathematics §9): k by cross-validation over folds of whole matchups
with the one-standard-error rule, λ on the held-out split."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy.special import expit

from app.rating.elo import fit_elo, pair_counts
from app.rating.game_log import GameLog, IntArray
from app.rating.model import Array
from app.rating.refit.fit import Fit
from app.rating.refit.likelihood import pair_logits
from app.rating.refit.metrics import elo_probabilities, evaluate, term_losses
from app.rating.refit.split import matchups

#: The penalties tried when λ is chosen by held-out loss: sparse logs need a firmer prior.
L2_CHOICES = (0.5, 2.0, 8.0, 32.0)
#: Folds of whole matchups over which k is chosen (``select_k``).  With 5, each fit saw 80% of the matchups and
#: chose a k whose error in P was 63% above the best k's on one synthetic matrix of 15; with 10, none was more
#: than 0.1% above (bench/bench_select_k.py).
FOLDS = 10

#: A fit of the refit at (k, pair terms, seed), optionally with ``lam``: λ of the cyclic discs.
Run = Callable[..., Fit]


def simplest_over_folds(losses: dict[int, Array], log: GameLog, fold: IntArray) -> tuple[int, list[dict]]:
    """The smallest candidate whose cross-validated loss is within one standard error of the best one's.

    ``losses[c]`` is candidate ``c``'s log loss on every pair term, each
    predicted by the fit on the other folds (``fold``: each term's fold).  The
    difference to the best candidate is averaged per matchup (its games share
    one prediction, so they are not independent) and its standard error taken
    over the matchups, every one of which was held out once: a richer model
    must beat a simpler one by more than that noise (the one-standard-error
    rule, Hastie, Tibshirani and Friedman, *The Elements of Statistical
    Learning*, §7.10).  Taken over five folds instead, the spread between
    folds hid a difference of 69% in the error of P (bench/bench_select_k.py).  Returns
    the choice and, per candidate, its mean loss, that standard error and its
    loss on each fold.
    """
    w = log.pair_weight
    means = {c: float(np.dot(w, v) / w.sum()) for c, v in losses.items()}
    best = min(means, key=means.__getitem__)
    matchup = matchups(log)
    n = int(matchup.max(initial=-1)) + 1
    per_fold = np.bincount(fold, w)
    rows = []
    for c, v in sorted(losses.items()):
        per = np.bincount(matchup, weights=w * (v - losses[best]), minlength=n) / np.bincount(matchup, w, n)
        error = float(per.std(ddof=1) / np.sqrt(n)) if n > 1 else 0.0
        folds = (np.bincount(fold, w * v) / per_fold).tolist()
        rows.append({"k": c, "heldout_log_loss": means[c], "standard_error": error, "fold_log_losses": folds})
    chosen = min(row["k"] for row in rows if row["heldout_log_loss"] - means[best] <= row["standard_error"])
    return chosen, rows


def choose_k(
    log: GameLog, n_players: int, candidates: list[int], fold: IntArray, seed: int, run: Run
) -> tuple[int, list[dict]]:
    """k among ``candidates`` (0 = Elo) by cross-validation: each is fitted (by ``run``) on every fold but one
    and scored on that one, and :func:`simplest_over_folds` chooses."""
    out_of_fold = {kk: np.zeros(len(log.pair_a)) for kk in candidates}  # each term predicted without its fold
    for f in range(int(fold.max()) + 1):
        fit_on, score_on = np.flatnonzero(fold != f), np.flatnonzero(fold == f)
        ratings = fit_elo(pair_counts(log, n_players, fit_on)).ratings if 0 in candidates else None
        for kk in candidates:
            if kk == 0:
                assert ratings is not None  # fitted above, as 0 is among the candidates
                p = elo_probabilities(ratings, log, score_on)
            else:
                trial = run(kk, fit_on, seed)
                p = expit(pair_logits(trial.C, log, score_on, trial.seats))
            out_of_fold[kk][score_on] = term_losses(p, log, score_on)
    return simplest_over_folds(out_of_fold, log, fold)


def choose_l2(log: GameLog, k: int, train: IntArray, test: IntArray, seed: int, run: Run) -> tuple[float, list[dict]]:
    """λ of the cyclic discs among :data:`L2_CHOICES`: the lowest held-out log loss of a fit (by ``run``) at k on
    the ``train`` terms, scored on the ``test`` terms; with each one's loss."""

    def heldout_loss(lam: float) -> float:
        trial = run(k, train, seed, lam=lam)
        return evaluate(trial.C, log, test, trial.seats).log_loss

    l2_selection = [{"l2": lam, "heldout_log_loss": heldout_loss(lam)} for lam in L2_CHOICES]
    return min(l2_selection, key=lambda row: row["heldout_log_loss"])["l2"], l2_selection
