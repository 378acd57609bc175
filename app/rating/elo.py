"""The Elo baseline: the Bradley-Terry maximum-likelihood ratings by [Stable Elo]'s stable iteration (mathematics §11).

With e the Elo ratings in logits and w_ij the (fractional) wins of i over j, [Stable Elo] iterates

    e_i ← e_i + ln Σ_j w_ij σ(e_j - e_i) - ln Σ_j w_ji σ(e_i - e_j)

(the MM / Zermelo iteration of Hunter (2004) in log space, so that no p_i = e^{e_i}
under- or overflows), on sparse pair counts in O(pairs) per step.

[Stable Elo]'s fix "w_ii = 1/2" only keeps the iteration defined: a self-pair adds the
same 1/4 to both sums and leaves the fixed point, and so the ratings of players
who won (or lost) every game, infinite.  As mathematics §11 allows, the prior here is
``prior`` virtual games, drawn, against a fixed average player of rating 0: every
player gets ``prior``/2 of a win and of a loss against it.  That is the penalised
likelihood

    ℓ(e) = Σ_ij w_ij ln σ(e_i - e_j) + (prior/2) Σ_i [ln σ(e_i) + ln σ(-e_i)],

which is strictly concave with a finite maximum for any data, and the iteration
above, with the virtual player among the j, climbs it monotonically; after each
step the common shift is set to its best value (the data only see differences).  The
fitted ratings are returned as they maximise ℓ (their mean is near, not exactly, 0).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

import numpy as np
from numpy.typing import ArrayLike
from scipy import sparse
from scipy.special import expit, log_expit

from app.rating.errors import RatingInputError
from app.rating.game_log import GameLog, IntArray
from app.rating.model import Array


@dataclass(frozen=True)
class PairCounts:
    """Aggregated results: ``wins[t]`` (fractional) of ``winner[t]`` over ``loser[t]``, each ordered pair once."""

    winner: IntArray
    loser: IntArray
    wins: Array
    n_players: int


def pair_counts(log: GameLog, n_players: int, pairs: IntArray | None = None) -> PairCounts:
    """Win counts between players from every pair term of a log, or the ``pairs`` selected (mathematics §4, §11).

    A pair of sides (a, b) with outcome S and weight 1/(N-1) gives S/(N-1) of a
    win to a over b and (1-S)/(N-1) to b over a (a draw is half a win each).  A
    team's share is split evenly over the member pairs: the scalar model has no
    exact team term, so this is the usual approximation for the baseline.
    Seat advantages are not part of the baseline.
    """
    pairs = np.arange(len(log.pair_a)) if pairs is None else np.asarray(pairs, dtype=np.int64)
    singles = log.single_players()
    if singles is not None:
        a, b = singles[0][pairs], singles[1][pairs]
        code, wins = _wins(a, b, log.pair_weight[pairs], log.pair_outcome[pairs], n_players)
        return PairCounts(code // n_players, code % n_players, wins, n_players)
    # Member pairs a chunk at a time, each summed into a sparse win matrix before the next is built: memory
    # grows with the distinct pairs of players, not with the member pairs (two million in a game of 64 × 32).
    total = sparse.csr_matrix((n_players, n_players))
    for term, a, b in log.member_pairs(pairs):
        weight = log.pair_weight[term] / (log.side_size[log.pair_a[term]] * log.side_size[log.pair_b[term]])
        outcome = log.pair_outcome[term]
        wins = np.concatenate([weight * outcome, weight * (1.0 - outcome)])
        total = total + sparse.csr_matrix((wins, (np.concatenate([a, b]), np.concatenate([b, a]))), total.shape)
    total.eliminate_zeros()
    total.sort_indices()
    won = total.tocoo()
    return PairCounts(won.row.astype(np.int64), won.col.astype(np.int64), won.data, n_players)


def _wins(a: IntArray, b: IntArray, weight: Array, outcome: Array, n_players: int) -> tuple[IntArray, Array]:
    """Summed wins per ordered pair (winner · n_players + loser) of results a vs b with outcomes from a's side."""
    winner, loser = np.concatenate([a, b]).astype(np.int64), np.concatenate([b, a]).astype(np.int64)
    wins = np.concatenate([weight * outcome, weight * (1.0 - outcome)])
    keep = wins > 0
    code, inverse = np.unique(winner[keep] * n_players + loser[keep], return_inverse=True)
    # a weighted bincount is float64 (NumPy's stub says intp)
    return code, cast(Array, np.bincount(inverse, weights=wins[keep], minlength=len(code)))


@dataclass(frozen=True)
class EloFit:
    """Ratings in logits (P(i beats j) = σ(e_i - e_j)), the penalised log-likelihood, iterations used."""

    ratings: Array
    log_likelihood: float
    iterations: int
    converged: bool


def penalised_log_likelihood(counts: PairCounts, e: ArrayLike, prior: float = 1.0) -> float:
    """ℓ(e) of the module docstring."""
    e = np.asarray(e, dtype=np.float64)
    data = float(np.dot(counts.wins, log_expit(e[counts.winner] - e[counts.loser])))
    return data + 0.5 * prior * float(np.sum(log_expit(e) + log_expit(-e)))


def fit_elo(counts: PairCounts, prior: float = 1.0, tol: float = 1e-12, max_iter: int = 1000) -> EloFit:
    """Maximise ℓ(e) with [Stable Elo]'s log-space iteration; stop when ℓ changes by less than ``tol``."""
    if prior <= 0:
        raise RatingInputError("prior", "must be > 0 (it keeps unbeaten players finite)")
    m, i, j, w = counts.n_players, counts.winner, counts.loser, counts.wins
    e = np.zeros(m)
    last = penalised_log_likelihood(counts, e, prior)
    for step in range(1, max_iter + 1):
        # Σ_j w_ij σ(e_j - e_i): i's wins weighted by how surprising they were; the virtual player adds prior/2.
        gain = np.bincount(i, weights=w * expit(e[j] - e[i]), minlength=m) + 0.5 * prior * expit(-e)
        loss = np.bincount(j, weights=w * expit(e[j] - e[i]), minlength=m) + 0.5 * prior * expit(e)
        e = _best_shift(e + np.log(gain) - np.log(loss))
        current = penalised_log_likelihood(counts, e, prior)
        if abs(current - last) < tol:
            return EloFit(e, current, step, True)
        last = current
    return EloFit(e, last, max_iter, False)


def _best_shift(e: Array) -> Array:
    """e + c with the c that maximises ℓ(e + c): only the prior depends on a common shift.

    The data fix rating differences only, so without this the iteration crawls
    along the nearly flat shift direction ([Stable Elo] subtracts the mean for the
    same reason; with a prior the best shift is not exactly the mean).  Newton
    on Σ_i tanh((e_i + c)/2) = 0, which is monotone in c.
    """
    c = -float(np.mean(e))
    for _ in range(20):
        t = np.tanh((e + c) / 2)
        step = float(np.sum(t)) / float(np.sum(0.5 * (1 - t * t)))
        c -= step
        if abs(step) < 1e-15:
            break
    return e + c
