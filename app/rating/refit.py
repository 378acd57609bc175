"""Offline refit: maximum likelihood over the whole event log (mathematics §9; [Guide] §7).

mElo as low-rank skew-symmetric matrix completion.  Every pair of sides (a, b)
of every game is one term (mathematics §4, §6):

    x_ab = C_aᵀ Ω C_b + h_a - h_b,      C_a = mean of side a's member vectors
    ℓ(C) = Σ_pairs w [S ln σ(x_ab) + (1 - S) ln σ(-x_ab)] - Σ_i Σ_d λ_d (c_id - μ_d)²

with μ = (0, 1, 0, …, 0): the prior is centred on the Elo manifold
c = (r, 1) of mathematics §1 (a ladder's default initial offset, mathematics §2), so players
are Elo-like until the results show cycles; with k ≥ 2 the first disc is held
near that manifold and the others carry the cycles (:func:`penalty_weights`).
w = 1/(N-1) and fractional S allowed (draws, or probabilities: the binary
cross-entropy of [Limitations]).  ∂ℓ/∂x = w (S - σ(x)); ∂x/∂C_a = Ω C_b and
∂x/∂C_b = -Ω C_a; a member of side a gets 1/|T_a| of the side's gradient.
Gathers use index arrays, scatters ``np.bincount``: O(pairs · k) per
evaluation, no Python loop over games.  Maximised with L-BFGS (scipy) from
several seeded random full-rank starts (mathematics §2); the vectors of two restarts
differ by a symplectic map, so restarts are compared on P, not on C.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike
from scipy.optimize import minimize
from scipy.special import expit, log_expit

from app.rating.elo import fit_elo, pair_counts
from app.rating.errors import RatingInputError
from app.rating.games import GameLog, IntArray
from app.rating.model import Array, omega_apply, rowdot
from app.rating.replay import Times, member_experience, replay_history
from app.rating.seats import SEAT_PRIOR_PRECISION, Seats, seat_shift, seat_sums
from app.rating.update import LearningRate, side_means

Progress = Callable[[int, int], None] | None
#: Default λ of the cyclic discs, with the prior centred on the Elo manifold (:func:`elo_manifold`).
#: On the held-out 20% of bench/quality.py's streams at k = 2, λ = 2 beat 0.5 on football (0.647 and
#: 0.640 against 0.675 and 0.756), chess and pure Elo, and tied on the cyclic streams.  A prior
#: centred on 0 instead shrinks the Elo component (whose v = 1 is shared by every player) and,
#: from λ = 2 up, collapsed small logs to P = 1/2.
L2 = 2.0
#: With k ≥ 2 the first disc is the Elo disc (r, v): a weak prior on r (sd √2 logits) and a tight one
#: on v around 1 (sd 1/8), so that the cycles go to the other discs.  Against λ = 2 on every
#: coordinate it lowered held-out log loss on chess, the Premier League, the team tournament and
#: every synthetic stream but the pure disc (+0.0005), and raised it on La Liga (0.640 to 0.649);
#: the auto-refit policy gained most (Elo 0.75 + disc: 0.4590 to 0.4537).
ELO_R_L2, ELO_V_L2 = 0.25, 32.0
#: The penalties tried when λ is chosen by held-out loss: sparse logs need a firmer prior.
L2_CHOICES = (0.5, 2.0, 8.0, 32.0)
#: Folds of whole matchups over which k is chosen (``select_k``).  With 5, each fit saw 80% of the matchups and
#: chose a k whose error in P was 63% above the best k's on one synthetic matrix of 15; with 10, none was more
#: than 0.1% above (bench/bench_select_k.py).
FOLDS = 10


def _side_vectors(C: Array, log: GameLog) -> Array:
    return side_means(C, log.member_player, log.member_side, log.side_size)


def pair_logits(C: ArrayLike, log: GameLog, pairs: IntArray | None = None, seats: Array | None = None) -> Array:
    """x_ab for every pair term (or the ``pairs`` selected) of the log, with the learned ``seats``' advantages."""
    C = np.asarray(C, dtype=np.float64)
    side = _side_vectors(C, log)
    pairs = _select(log, pairs)
    a, b = log.pair_a[pairs], log.pair_b[pairs]
    return rowdot(side[a], omega_apply(side[b])) + _shift(log, pairs, seats)


def _shift(log: GameLog, pairs: IntArray, seats: Array | None) -> Array:
    """Each selected pair term's advantage h_a - h_b: the explicit one plus the learned seats' (if given)."""
    if seats is None or log.side_seat is None:
        return log.pair_shift[pairs]
    a, b = log.side_seat[log.pair_a[pairs]], log.side_seat[log.pair_b[pairs]]
    return log.pair_shift[pairs] + seat_shift(np.asarray(seats, dtype=np.float64), a, b)


def log_likelihood(C: ArrayLike, log: GameLog, pairs: IntArray | None = None, l2: float | ArrayLike = 0.0) -> float:
    """ℓ(C) of the module docstring over the selected pair terms (all by default)."""
    C = np.asarray(C, dtype=np.float64)
    value, _ = _objective(C, log, _select(log, pairs), l2, False)
    return -value


def log_likelihood_gradient(
    C: ArrayLike, log: GameLog, pairs: IntArray | None = None, l2: float | ArrayLike = 0.0
) -> Array:
    """∂ℓ/∂C, the same shape as C."""
    _, grad = _objective(np.asarray(C, dtype=np.float64), log, _select(log, pairs), l2, True)
    return -grad


def _select(log: GameLog, pairs: IntArray | None) -> IntArray:
    return np.arange(len(log.pair_a)) if pairs is None else np.asarray(pairs, dtype=np.int64)


def _objective(
    C: Array,
    log: GameLog,
    pairs: IntArray,
    l2: float | ArrayLike,
    gradient: bool,
    seats: Array | None = None,
    seat_precision: float = SEAT_PRIOR_PRECISION,
) -> tuple[float, Array | tuple[Array, Array] | None]:
    """-ℓ(C) and, if asked, its gradient; with ``seats`` (advantages of the learned seats) their terms too,
    the prior's ½ λ_seat h² included (λ_seat = ``seat_precision``), and the gradient is then the pair
    (∂/∂C, ∂/∂h)."""
    singles = log.single_players()
    if singles is not None:
        # Every side one player (the common case): pair terms index players directly, no side layer.
        a, b, side = singles[0][pairs], singles[1][pairs], C
    else:
        a, b, side = log.pair_a[pairs], log.pair_b[pairs], _side_vectors(C, log)
    ca, cb = side[a], side[b]
    ocb = omega_apply(cb)
    x = rowdot(ca, ocb) + _shift(log, pairs, seats)
    s, w = log.pair_outcome[pairs], log.pair_weight[pairs]
    log_p = log_expit(x)  # ln σ(x); ln σ(-x) = ln σ(x) - x
    D = C - elo_manifold(C.shape[1] // 2)
    value = -float(np.dot(w, log_p - (1.0 - s) * x)) + float(np.sum(l2 * D * D))
    if seats is not None:
        value += 0.5 * seat_precision * float(np.dot(seats, seats))
    if not gradient:
        return value, None
    r = w * (s - np.exp(log_p))  # ∂ℓ/∂x
    oca = omega_apply(ca)
    n_rows, dim = len(side), C.shape[1]
    side_grad = np.empty((n_rows, dim))
    for col in range(dim):
        side_grad[:, col] = np.bincount(a, weights=r * ocb[:, col], minlength=n_rows) - np.bincount(
            b, weights=r * oca[:, col], minlength=n_rows
        )
    if singles is not None:
        grad = -side_grad + 2.0 * l2 * D
    else:
        member_grad = side_grad[log.member_side] / log.side_size[log.member_side, None]
        grad = np.zeros_like(C)
        for col in range(dim):
            grad[:, col] = np.bincount(log.member_player, weights=member_grad[:, col], minlength=len(C))
        grad = -grad + 2.0 * l2 * D
    if seats is None:
        return value, grad
    seat_a, seat_b = log.side_seat[log.pair_a[pairs]], log.side_seat[log.pair_b[pairs]]
    n, on_a, on_b = len(seats), seat_a >= 0, seat_b >= 0
    seat_grad = np.bincount(seat_a[on_a], weights=r[on_a], minlength=n) - np.bincount(
        seat_b[on_b], weights=r[on_b], minlength=n
    )
    return value, (grad, -seat_grad + seat_precision * seats)


def _seat_sums(C: Array, log: GameLog, seats: Array) -> tuple[Array, Array]:
    """The seats' information and gain (:func:`app.rating.seats.seat_sums`) over every pair term of the log."""
    p = expit(pair_logits(C, log, None, seats))
    seat_a, seat_b = log.side_seat[log.pair_a], log.side_seat[log.pair_b]
    return seat_sums(len(seats), seat_a, seat_b, log.pair_weight, log.pair_outcome, p)


def seat_information(
    C: ArrayLike, log: GameLog, seats: ArrayLike, seat_precision: float = SEAT_PRIOR_PRECISION
) -> Seats:
    """The learned seats at ``seats`` (advantages) with their information there (mathematics §5): the prior's
    precision plus Σ w p(1 - p) over the pair terms naming each, counted as the online step counts it."""
    h = np.array(seats, dtype=np.float64)
    information, _ = _seat_sums(np.asarray(C, dtype=np.float64), log, h)
    return Seats(h, seat_precision + information)


def fit_seats(
    C: ArrayLike, log: GameLog, n_seats: int, iterations: int = 25, seat_precision: float = SEAT_PRIOR_PRECISION
) -> Array:
    """The seats' penalised maximum-likelihood advantages with the vectors ``C`` held fixed (Newton steps on
    the diagonal of the Hessian, which is exact for one seat per side)."""
    C = np.asarray(C, dtype=np.float64)
    h = np.zeros(n_seats)
    for _ in range(iterations):
        information, gain = _seat_sums(C, log, h)
        step = (gain - seat_precision * h) / (seat_precision + information)
        h += step
        if np.max(np.abs(step), initial=0.0) < 1e-10:
            break
    return h


@dataclass(frozen=True)
class Fit:
    """One maximum-likelihood fit: vectors (and the learned seats' advantages), ℓ on the training terms,
    optimiser report."""

    C: Array
    log_likelihood: float
    iterations: int
    converged: bool
    seconds: float
    seats: Array | None = None


def fit(
    log: GameLog,
    n_players: int,
    k: int,
    l2: float | ArrayLike = L2,
    pairs: IntArray | None = None,
    C0: ArrayLike | None = None,
    seed: int = 0,
    init_scale: float = 0.5,
    max_iter: int = 2000,
    tol: float = 1e-9,
    polish: bool = False,
    progress: Progress = None,
    seat_precision: float = SEAT_PRIOR_PRECISION,
) -> Fit:
    """Maximise ℓ over the selected pair terms with L-BFGS, from ``C0`` or a seeded random start (and the learned
    seats' advantages, under their prior of precision ``seat_precision``).

    The penalty is Σ_i Σ_d λ_d (c_id - μ_d)² with λ = ``l2`` (one number, or one
    per coordinate: :func:`penalty_weights`) and μ the Elo manifold's
    (0, 1, 0, …); the random start is drawn around μ.

    Stops when ℓ improves by less than ``tol`` relative to its size over a step
    (L-BFGS-B's ``ftol``), or when every gradient entry is below ``tol`` times the
    games per player.  ``polish`` then takes Newton-CG steps (Hessian-vector
    products by central differences of the exact gradient) to the optimum at
    close to machine precision, where L-BFGS's line search gives up earlier.
    """
    if k < 1:
        raise RatingInputError("k", "must be >= 1 (k = 0 is the Elo baseline, fit_elo)")
    pairs = _select(log, pairs)
    dim = 2 * k
    if C0 is None:
        C0 = elo_manifold(k) + np.random.default_rng(seed).normal(scale=init_scale, size=(n_players, dim))
    C0 = np.asarray(C0, dtype=np.float64)
    if C0.shape != (n_players, dim):
        raise RatingInputError("C0", f"must be ({n_players}, {dim})")
    calls = [0]
    gtol = tol * max(float(np.sum(log.pair_weight[pairs])) / n_players, 1.0)
    n_seats = log.n_seats_needed
    size = n_players * dim

    def fun(flat: Array) -> tuple[float, Array]:
        C = flat[:size].reshape(n_players, dim)
        if not n_seats:
            value, grad = _objective(C, log, pairs, l2, True)
            calls[0] += 1
            return value, grad.ravel()
        value, (grad, seat_grad) = _objective(C, log, pairs, l2, True, flat[size:], seat_precision)
        calls[0] += 1
        return value, np.concatenate([grad.ravel(), seat_grad])

    def callback(_: Array) -> None:
        if progress is not None:
            progress(min(calls[0], max_iter), max_iter)

    start = time.perf_counter()
    result = minimize(
        fun,
        np.concatenate([C0.ravel(), np.zeros(n_seats)]),
        jac=True,
        method="L-BFGS-B",
        callback=callback,
        options={"maxiter": max_iter, "gtol": gtol, "ftol": tol},
    )
    if polish:

        def hessp(x: Array, p: Array) -> Array:
            h = 1e-6 / max(float(np.linalg.norm(p)), 1e-300)
            return (fun(x + h * p)[1] - fun(x - h * p)[1]) / (2 * h)

        result = minimize(fun, result.x, jac=True, hessp=hessp, method="Newton-CG", options={"xtol": 1e-12})
    return Fit(
        C=result.x[:size].reshape(n_players, dim),
        log_likelihood=-float(result.fun),
        iterations=int(result.nit),
        converged=bool(result.success),
        seconds=time.perf_counter() - start,
        seats=result.x[size:].copy() if n_seats else None,
    )


@dataclass(frozen=True)
class Metrics:
    """Held-out quality of predicted pair probabilities, each term weighted by w = 1/(N-1).

    ``accuracy`` is over the decided terms (not draws): None when every term is a draw.
    """

    log_loss: float
    brier: float
    accuracy: float | None
    pairs: int

    @classmethod
    def of(cls, p: Array, log: GameLog, pairs: IntArray) -> Metrics:
        """The metrics of the forecasts ``p`` of the selected pair terms (at least one)."""
        if len(pairs) == 0:
            raise RatingInputError("pairs", "no pair terms to evaluate on")
        s, w = log.pair_outcome[pairs], log.pair_weight[pairs]
        p = np.clip(p, 1e-15, 1 - 1e-15)
        total = float(np.sum(w))
        loss = float(np.dot(w, term_losses(p, log, pairs))) / total
        brier = float(np.dot(w, (p - s) ** 2)) / total
        decided = s != 0.5
        hits = (p[decided] > 0.5) == (s[decided] > 0.5)
        accuracy = float(np.dot(w[decided], hits)) / float(np.sum(w[decided])) if np.any(decided) else None
        return cls(loss, brier, accuracy, len(pairs))


def term_losses(p: Array, log: GameLog, pairs: IntArray) -> Array:
    """The log loss of each selected pair term, from its predicted probability ``p``."""
    s = log.pair_outcome[pairs]
    p = np.clip(p, 1e-15, 1 - 1e-15)
    return -(s * np.log(p) + (1 - s) * np.log1p(-p))


def elo_probabilities(ratings: ArrayLike, log: GameLog, pairs: IntArray) -> Array:
    """P of the selected pair terms from scalar Elo ratings (logits); teams use the mean rating."""
    r = np.asarray(ratings, dtype=np.float64)[:, None]
    side = _side_vectors(r, log)[:, 0]
    return expit(side[log.pair_a[pairs]] - side[log.pair_b[pairs]] + log.pair_shift[pairs])


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
    best = min(means, key=means.get)
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


def fold_terms(log: GameLog, folds: int, seed: int) -> IntArray:
    """Each pair term's fold, 0 to ``folds`` - 1 (fewer if the log has fewer matchups): the log's matchups dealt
    at random into folds of as equal a number as can be, every meeting of a matchup in the same fold (as
    :func:`split_games` holds out)."""
    matchup = matchups(log)
    n = int(matchup.max(initial=-1)) + 1
    return (np.random.default_rng(seed).permutation(n) % min(folds, max(n, 1)))[matchup]


def evaluate(C: ArrayLike, log: GameLog, pairs: IntArray, seats: Array | None = None) -> Metrics:
    """Metrics of mElo vectors ``C`` (and the learned ``seats``' advantages) on the selected pair terms."""
    return Metrics.of(expit(pair_logits(C, log, pairs, seats)), log, pairs)


def evaluate_elo(ratings: ArrayLike, log: GameLog, pairs: IntArray) -> Metrics:
    """Metrics of scalar Elo ratings (logits) on the selected pair terms; teams use the mean rating."""
    return Metrics.of(elo_probabilities(ratings, log, pairs), log, pairs)


def split_games(log: GameLog, holdout: float, seed: int) -> tuple[IntArray, IntArray]:
    """Pair terms of a random ``holdout`` fraction of the matchups (test) and of the rest (train).

    A matchup is an unordered pair of lineups (the players of each side), and
    every meeting of one matchup falls on the same side of the split.  Held-out
    loss then measures predictions for pairs never seen together, which is what
    matchmaking asks.  Holding out random games instead leaves a rematch of
    nearly every test pair in training, and rewards a larger k for memorising
    pairs: chosen that way, k was the largest offered even where Elo predicts
    unseen pairs better (bench/bench_select_k.py).
    """
    if not 0.0 <= holdout < 1.0:
        raise RatingInputError("holdout", "must be in [0, 1)")
    matchup = matchups(log)
    test_matchup = np.random.default_rng(seed).random(int(matchup.max(initial=-1)) + 1) < holdout
    test = test_matchup[matchup]
    return np.flatnonzero(~test), np.flatnonzero(test)


def matchups(log: GameLog, pairs: IntArray | None = None) -> IntArray:
    """For each pair term (of ``pairs``, default all), the number 0, 1, 2, … of its matchup: an unordered pair of
    lineups, the same for every meeting of the same players on the same sides."""
    a, b = _lineups(log)
    if pairs is not None:
        a, b = a[pairs], b[pairs]
    _, matchup = np.unique(np.stack([np.minimum(a, b), np.maximum(a, b)]), axis=1, return_inverse=True)
    return matchup.reshape(-1)


def _lineups(log: GameLog) -> tuple[IntArray, IntArray]:
    """A number for the lineup of each pair term's two sides (equal numbers: the same players)."""
    singles = log.single_players()
    if singles is not None:
        return singles
    lineup = {}
    numbers = np.array(
        [lineup.setdefault(tuple(sorted(players)), len(lineup)) for players in log.side_players()], dtype=np.int64
    )
    return numbers[log.pair_a], numbers[log.pair_b]


def observed_pair_probability(C: ArrayLike, log: GameLog) -> Array:
    """P(a beats b) for every distinct pair of sides' players observed in the log, without advantages.

    Used to compare restarts: they should agree on P wherever the data speak (mathematics §9).
    """
    x = pair_logits(C, log) - log.pair_shift
    return expit(x)


@dataclass
class Report:
    """What a refit job returns (mathematics §9)."""

    k: int
    C: Array
    log_likelihood: float
    restarts: list[dict]
    restart_max_abs_dp: float
    heldout: dict[str, dict] = field(default_factory=dict)
    k_selection: list[dict] | None = None
    seconds: float = 0.0
    l2: float = L2
    l2_selection: list[dict] | None = None
    #: The learned seats fitted with the vectors (mathematics §5), for a log that names seats.
    seats: Seats | None = None
    #: Why nothing was held out (``heldout`` then empty), in words; None when held-out metrics were computed.
    heldout_note: str | None = None


def penalty_weights(k: int, l2: float) -> float | Array:
    """λ of every coordinate: ``l2`` on each with k = 1, else (ELO_R_L2, ELO_V_L2, l2, …, l2).

    One disc must stay free to be cyclic, so only with two or more is the first
    one held to the Elo manifold.
    """
    if k < 2:
        return l2
    return np.concatenate(([ELO_R_L2, ELO_V_L2], np.full(2 * k - 2, float(l2))))


def elo_manifold(k: int) -> Array:
    """(0, 1, 0, …, 0) in 2k coordinates: the point c = (r, 1) with r = 0, where the prior is centred."""
    mean = np.zeros(2 * k)
    mean[1] = 1.0
    return mean


def elo_vectors(ratings: ArrayLike, k: int) -> Array:
    """Elo ratings r as mElo vectors (r, 1, 0, …, 0): then c_iᵀ Ω c_j = r_i - r_j exactly (mathematics §1)."""
    r = np.asarray(ratings, dtype=np.float64)
    C = np.zeros((len(r), 2 * k))
    C[:, 0], C[:, 1] = r, 1.0
    return C


def heldout_split(log: GameLog, holdout: float, seed: int) -> tuple[IntArray, IntArray | None, str | None]:
    """(train, test, None) from :func:`split_games`, or (every pair term, None, why) when nothing can be held out.

    Nothing is held out with ``holdout`` 0, or when the split leaves either side
    without a pair term: a log of one matchup (every game between the same
    lineups) never splits, and in a log of a few matchups the random draw may
    hold out none or all of them.  The refit then fits every game and reports
    no held-out metrics, saying why.
    """
    every = np.arange(len(log.pair_a))
    if holdout == 0:
        return every, None, "Nothing held out: holdout is 0. Fitted on all games, no held-out metrics."
    train, test = split_games(log, holdout, seed)
    if len(train) and len(test):
        return train, test, None
    n = int(matchups(log).max(initial=-1)) + 1
    if n == 0:
        why = "the log has no games"
    elif n == 1:
        why = "the log has 1 matchup (pair of lineups that met), and a matchup's games are never split"
    else:
        drawn = "none" if len(test) == 0 else "all"
        why = (
            f"of the log's {n} matchups (pairs of lineups that met), the random {holdout:g} share drawn with seed "
            f"{seed} held out {drawn} (another seed may split them)"
        )
    return every, None, f"Nothing held out: {why}. Fitted on all games, no held-out metrics."


def refit(
    log: GameLog,
    n_players: int,
    k: int,
    l2: float | None = L2,
    restarts: int = 3,
    holdout: float = 0.2,
    seed: int = 0,
    current: ArrayLike | None = None,
    select_k: list[int] | None = None,
    max_iter: int = 2000,
    progress: Progress = None,
    current_seats: Seats | None = None,
    folds: int = FOLDS,
    seat_precision: float = SEAT_PRIOR_PRECISION,
) -> Report:
    """Fit on the training games from ``restarts`` starts, report held-out metrics, then refit on all games.

    Held-out log loss, Brier and accuracy are reported for the refit, the
    ``current`` (online) vectors if given, and the Elo baseline (mathematics §11).
    When nothing can be held out (:func:`heldout_split`: a log of one matchup,
    or a few that the draw leaves on one side), every game is fitted, no
    held-out metrics are reported and ``heldout_note`` says why; k is then the
    smallest of ``select_k`` and λ the default :data:`L2`, as nothing can
    choose them.
    With ``select_k``, k is chosen by cross-validation: the log's matchups are
    dealt into ``folds`` folds (:func:`fold_terms`; whole matchups, as pairs
    never played are what matchmaking predicts), each k there (0 = Elo) is
    fitted on every fold but one and scored on that one, and the smallest k
    whose mean held-out log loss is within one standard error of the lowest is
    used (:func:`simplest_over_folds`).  That costs ``folds`` fits per k; one
    random split alone chose k = 1 where k = 2 was 16% closer to the true
    probabilities (bench/bench_select_k.py).  The vectors keep
    the 2k columns of ``k`` (k = 0 gives (r, 1), then small random discs, see
    :func:`_pad`).  ``l2`` is λ of the cyclic discs (:func:`penalty_weights`);
    with ``l2=None`` it is chosen the same way among :data:`L2_CHOICES` (k is
    chosen first, with :data:`L2`).  ``progress(done, total)`` counts fits, in
    thousandths.
    """
    start = time.perf_counter()
    candidates = sorted(set(select_k)) if select_k else []
    if holdout == 0 and (len(candidates) > 1 or l2 is None):
        field = "select_k" if len(candidates) > 1 else "l2"
        raise RatingInputError(field, "choosing by held-out loss needs a holdout > 0")
    train, test, note = heldout_split(log, holdout, seed)
    if test is None:  # nothing to choose by: the simplest k offered, the default λ
        choices = []
        if len(candidates) > 1:
            choices.append(f"k = {candidates[0]} (the smallest of select_k)")
        if l2 is None:
            choices.append(f"λ = {L2:g} (the default)")
        if choices:
            note += f" Chosen without held-out loss: {' and '.join(choices)}."
        candidates, l2 = candidates[:1], L2 if l2 is None else l2
    choosing = test is not None
    fold = fold_terms(log, folds, seed) if choosing and len(candidates) > 1 else None
    n_fits = restarts + 1
    if choosing:
        n_folds = 0 if fold is None else int(fold.max()) + 1
        n_fits += n_folds * sum(1 for kk in candidates if kk > 0) + (len(L2_CHOICES) if l2 is None else 0)
    fits_done = [0]
    penalty = L2 if l2 is None else l2

    def run(kk: int, pairs: IntArray | None, s: int, C0: Array | None = None, lam: float | None = None) -> Fit:
        def each(it: int, total: int) -> None:
            if progress is not None:
                progress(int(1000 * (fits_done[0] + it / total) / n_fits), 1000)

        lam = penalty_weights(kk, penalty if lam is None else lam)
        options = {"C0": C0, "seed": s, "max_iter": max_iter, "progress": each, "seat_precision": seat_precision}
        result = fit(log, n_players, kk, lam, pairs, **options)
        fits_done[0] += 1
        return result

    heldout: dict[str, dict] = {}
    selection = None
    chosen = candidates[0] if candidates and not choosing else k
    if choosing:
        elo = fit_elo(pair_counts(log, n_players, train))
        heldout["elo"] = vars(evaluate_elo(elo.ratings, log, test))
        if current is not None:
            online = None if current_seats is None else current_seats.advantage
            heldout["current"] = vars(evaluate(current, log, test, online))
    if len(candidates) > 1 and choosing:
        out_of_fold = {kk: np.zeros(len(log.pair_a)) for kk in candidates}  # each term predicted without its fold
        for f in range(int(fold.max()) + 1):
            fit_on, score_on = np.flatnonzero(fold != f), np.flatnonzero(fold == f)
            ratings = fit_elo(pair_counts(log, n_players, fit_on)).ratings if 0 in candidates else None
            for kk in candidates:
                if kk == 0:
                    p = elo_probabilities(ratings, log, score_on)
                else:
                    trial = run(kk, fit_on, seed)
                    p = expit(pair_logits(trial.C, log, score_on, trial.seats))
                out_of_fold[kk][score_on] = term_losses(p, log, score_on)
        chosen, selection = simplest_over_folds(out_of_fold, log, fold)
    elif candidates and choosing:
        chosen = candidates[0]
    if chosen == 0:
        full = fit_elo(pair_counts(log, n_players))
        if progress is not None:
            progress(1000, 1000)
        C = _pad(elo_vectors(full.ratings, 1), k, seed)
        seats = None
        if log.side_seat is not None:
            h = fit_seats(C, log, log.n_seats_needed, seat_precision=seat_precision)
            seats = seat_information(C, log, h, seat_precision)
        seconds = time.perf_counter() - start
        return Report(0, C, full.log_likelihood, [], 0.0, heldout, selection, seconds, seats=seats, heldout_note=note)

    l2_selection = None
    if l2 is None:

        def heldout_loss(lam: float) -> float:
            trial = run(chosen, train, seed, lam=lam)
            return evaluate(trial.C, log, test, trial.seats).log_loss

        l2_selection = [{"l2": lam, "heldout_log_loss": heldout_loss(lam)} for lam in L2_CHOICES]
        penalty = min(l2_selection, key=lambda row: row["heldout_log_loss"])["l2"]
    fits = [run(chosen, train, seed + r) for r in range(restarts)]
    best = max(fits, key=lambda f: f.log_likelihood)
    if test is not None:
        heldout["refit"] = vars(evaluate(best.C, log, test, best.seats))
    p_best = observed_pair_probability(best.C, log)
    agreement = max(float(np.max(np.abs(observed_pair_probability(f.C, log) - p_best), initial=0.0)) for f in fits)
    final = run(chosen, None, seed, C0=best.C)
    if progress is not None:
        progress(1000, 1000)
    rows = [{"log_likelihood": f.log_likelihood, "iterations": f.iterations, "converged": f.converged} for f in fits]
    C = final.C if chosen == k else _pad(final.C, k, seed)
    seats = None if final.seats is None else seat_information(final.C, log, final.seats, seat_precision)
    seconds = time.perf_counter() - start
    return Report(
        chosen,
        C,
        final.log_likelihood,
        rows,
        agreement,
        heldout,
        selection,
        seconds,
        penalty,
        l2_selection,
        seats,
        heldout_note=note,
    )


#: Scale of the random start of the discs a smaller chosen k leaves empty.
PAD_SCALE = 1e-2


def _pad(C: Array, k: int, seed: int) -> Array:
    """Vectors of fewer discs as 2k columns.

    The extra discs get a small seeded random start rather than zeros: with
    every player's disc at zero the online rule could never grow it (Ω c has no
    component there; Theorem 1 of [Guide]), and the ladder would be stuck at
    the smaller k.  They change the advantages by O(PAD_SCALE²).
    """
    if C.shape[1] > 2 * k:
        raise RatingInputError("select_k", f"k = {C.shape[1] // 2} does not fit a ladder of k = {k}")
    out = np.random.default_rng(seed).normal(scale=PAD_SCALE, size=(len(C), 2 * k))
    out[:, : C.shape[1]] = C
    return out


#: Auto refits compare predictions on at most this fraction of the log, its latest games.
GUARD_WINDOW = 0.2


def guard_window(n_games: int, since_checkpoint: int) -> int:
    """Games :func:`guard` compares on: the latest GUARD_WINDOW of the log, none from before the last checkpoint."""
    return min(since_checkpoint, int(GUARD_WINDOW * n_games))


@dataclass(frozen=True)
class Guard:
    """The verdict of :func:`guard`: log losses of both forecasts of the window's pair terms."""

    better: bool
    k: int
    window_games: int
    refit_log_loss: float
    online_log_loss: float


def guard(
    log: GameLog,
    start: ArrayLike,
    window: int,
    online_p: ArrayLike,
    rate: LearningRate,
    k: int,
    select_k: list[int] | None = None,
    l2: float = L2,
    seed: int = 0,
    progress: Progress = None,
    times: Times = None,
    seat_precision: float = SEAT_PRIOR_PRECISION,
) -> Guard:
    """Would a refit have predicted the latest ``window`` games better than the online forecasts ``online_p``?

    The refit (k chosen among ``select_k``, one start) is fitted on the games
    before the window; the online rule then runs on from it through the window,
    predicting each game before it learns from it, as a ladder would have (a
    rate with a drift needs the games' ``times``, as :func:`replay` takes them).
    Players without a game before the window start from ``start`` (their
    initial vectors).  ``online_p`` are the window's pair-term forecasts the
    ladder served.  The auto-refit policy applies a refit only when it is better.
    """
    n = log.n_games
    if not 0 < window < n:
        raise RatingInputError("window", f"must be between 1 and {n - 1} games")
    before, after = log.take(np.arange(n - window)), log.take(np.arange(n - window, n))
    m = len(start)
    trial = refit(
        before, m, k, l2=l2, restarts=1, seed=seed, select_k=select_k, progress=progress, seat_precision=seat_precision
    )
    played = np.bincount(before.member_player, minlength=m)
    games0, later = played, None
    if times is not None:
        when = np.asarray(times[0], dtype=np.float64)
        _, games0, last = member_experience(before, rate.drift, None, m, (when[: n - window], times[1]))
        later = (when[n - window :], last)
    C = np.array(start, dtype=np.float64)
    C[played > 0] = trial.C[played > 0]
    seats = trial.seats
    if seats is not None and after.n_seats_needed > len(seats.advantage):  # a seat first named in the window
        fresh = Seats.fresh(after.n_seats_needed, seat_precision)
        fresh.advantage[: len(seats.advantage)], fresh.information[: len(seats.advantage)] = (
            seats.advantage,
            seats.information,
        )
        seats = fresh
    refit_p = replay_history(C, after, rate, games0=games0, seats=seats, times=later).pair_p
    terms = np.arange(len(after.pair_a))
    refit_loss = Metrics.of(refit_p, after, terms).log_loss
    online_loss = Metrics.of(np.asarray(online_p, dtype=np.float64), after, terms).log_loss
    return Guard(refit_loss < online_loss, trial.k, window, refit_loss, online_loss)
