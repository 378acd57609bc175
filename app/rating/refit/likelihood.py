"""The refit's penalised log-likelihood and its gradient (mathematics §4, §6, §9).

mElo as low-rank skew-symmetric matrix completion.  Every pair of sides (a, b)
of every game is one term (mathematics §4, §6):

    x_ab = C_aᵀ Ω C_b + h_a - h_b,      C_a = mean of side a's member vectors
    ℓ(C) = Σ_pairs w [S ln σ(x_ab) + (1 - S) ln σ(-x_ab)] - Σ_i Σ_d λ_d (c_id - μ_d)²

with μ = (0, 1, 0, …, 0), the prior centred on the Elo manifold
(:mod:`app.rating.refit.prior`).  w = 1/(N-1) and fractional S allowed (draws,
or probabilities: the binary cross-entropy of [Limitations]).
∂ℓ/∂x = w (S - σ(x)); ∂x/∂C_a = Ω C_b and ∂x/∂C_b = -Ω C_a; a member of side a
gets 1/|T_a| of the side's gradient.  Gathers use index arrays, scatters
``np.bincount``: O(pairs · k) per evaluation, no Python loop over games.
"""

from __future__ import annotations

from typing import Literal, overload

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import expit, log_expit

from app.rating.game_log import GameLog, IntArray
from app.rating.model import Array, omega_apply, rowdot
from app.rating.refit.prior import elo_manifold
from app.rating.seats import SEAT_PRIOR_PRECISION, seat_shift
from app.rating.update import side_means


def side_vectors(C: Array, log: GameLog) -> Array:
    """C_a of every side of the log: the mean of its members' vectors."""
    return side_means(C, log.member_player, log.member_side, log.side_size)


def selected_pairs(log: GameLog, pairs: IntArray | None) -> IntArray:
    """The pair terms ``pairs`` as an index array, every pair term of the log when None."""
    return np.arange(len(log.pair_a)) if pairs is None else np.asarray(pairs, dtype=np.int64)


def pair_logits(C: ArrayLike, log: GameLog, pairs: IntArray | None = None, seats: Array | None = None) -> Array:
    """x_ab for every pair term (or the ``pairs`` selected) of the log, with the learned ``seats``' advantages."""
    C = np.asarray(C, dtype=np.float64)
    side = side_vectors(C, log)
    pairs = selected_pairs(log, pairs)
    a, b = log.pair_a[pairs], log.pair_b[pairs]
    return rowdot(side[a], omega_apply(side[b])) + _shift(log, pairs, seats)


def _shift(log: GameLog, pairs: IntArray, seats: Array | None) -> Array:
    """Each selected pair term's advantage h_a - h_b: the explicit one plus the learned seats' (if given)."""
    if seats is None or log.side_seat is None:
        return log.pair_shift[pairs]
    a, b = log.side_seat[log.pair_a[pairs]], log.side_seat[log.pair_b[pairs]]
    return log.pair_shift[pairs] + seat_shift(np.asarray(seats, dtype=np.float64), a, b)


def observed_pair_probability(C: ArrayLike, log: GameLog) -> Array:
    """P(a beats b) for every distinct pair of sides' players observed in the log, without advantages.

    Used to compare restarts: they should agree on P wherever the data speak (mathematics §9).
    """
    x = pair_logits(C, log) - log.pair_shift
    return expit(x)


def log_likelihood(C: ArrayLike, log: GameLog, pairs: IntArray | None = None, l2: float | Array = 0.0) -> float:
    """ℓ(C) of the module docstring over the selected pair terms (all by default)."""
    C = np.asarray(C, dtype=np.float64)
    value, _ = objective(C, log, selected_pairs(log, pairs), l2, False)
    return -value


def log_likelihood_gradient(
    C: ArrayLike, log: GameLog, pairs: IntArray | None = None, l2: float | Array = 0.0
) -> Array:
    """∂ℓ/∂C, the same shape as C."""
    _, grad = objective(np.asarray(C, dtype=np.float64), log, selected_pairs(log, pairs), l2, True)
    return -grad


@overload
def objective(
    C: Array,
    log: GameLog,
    pairs: IntArray,
    l2: float | Array,
    gradient: Literal[False],
    seats: Array | None = None,
    seat_precision: float = SEAT_PRIOR_PRECISION,
) -> tuple[float, None]: ...
@overload
def objective(
    C: Array,
    log: GameLog,
    pairs: IntArray,
    l2: float | Array,
    gradient: Literal[True],
    seats: None = None,
    seat_precision: float = SEAT_PRIOR_PRECISION,
) -> tuple[float, Array]: ...
@overload
def objective(
    C: Array,
    log: GameLog,
    pairs: IntArray,
    l2: float | Array,
    gradient: Literal[True],
    seats: Array,
    seat_precision: float = SEAT_PRIOR_PRECISION,
) -> tuple[float, tuple[Array, Array]]: ...
def objective(
    C: Array,
    log: GameLog,
    pairs: IntArray,
    l2: float | Array,
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
        a, b, side = log.pair_a[pairs], log.pair_b[pairs], side_vectors(C, log)
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
    assert log.side_seat is not None  # seats are fitted only for a log that names them
    seat_a, seat_b = log.side_seat[log.pair_a[pairs]], log.side_seat[log.pair_b[pairs]]
    n, on_a, on_b = len(seats), seat_a >= 0, seat_b >= 0
    seat_grad = np.bincount(seat_a[on_a], weights=r[on_a], minlength=n) - np.bincount(
        seat_b[on_b], weights=r[on_b], minlength=n
    )
    return value, (grad, -seat_grad + seat_precision * seats)
