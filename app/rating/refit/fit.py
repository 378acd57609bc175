"""One maximum-likelihood fit of the vectors (mathematics §9): ℓ of :mod:`app.rating.refit.likelihood` maximised
with L-BFGS (scipy) from a given or seeded random full-rank start (mathematics §2), the learned seats with them."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from app.rating.errors import RatingInputError
from app.rating.game_log import GameLog, IntArray
from app.rating.model import Array
from app.rating.refit.likelihood import objective, selected_pairs
from app.rating.refit.prior import L2, elo_manifold
from app.rating.seats import SEAT_PRIOR_PRECISION

Progress = Callable[[int, int], None] | None


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
    l2: float | Array = L2,
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
    per coordinate: :func:`app.rating.refit.prior.penalty_weights`) and μ the Elo manifold's
    (0, 1, 0, …); the random start is drawn around μ.

    Stops when ℓ improves by less than ``tol`` relative to its size over a step
    (L-BFGS-B's ``ftol``), or when every gradient entry is below ``tol`` times the
    games per player.  ``polish`` then takes Newton-CG steps (Hessian-vector
    products by central differences of the exact gradient) to the optimum at
    close to machine precision, where L-BFGS's line search gives up earlier.
    """
    if k < 1:
        raise RatingInputError("k", "must be >= 1 (k = 0 is the Elo baseline, fit_elo)")
    pairs = selected_pairs(log, pairs)
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
            value, grad = objective(C, log, pairs, l2, True)
            calls[0] += 1
            return value, grad.ravel()
        value, (grad, seat_grad) = objective(C, log, pairs, l2, True, flat[size:], seat_precision)
        calls[0] += 1
        return value, np.concatenate([grad.ravel(), seat_grad])

    def callback(_: Array) -> None:
        if progress is not None:
            progress(min(calls[0], max_iter), max_iter)

    # imported on first use: a serving worker rarely needs it (memory)
    from scipy.optimize import minimize

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
