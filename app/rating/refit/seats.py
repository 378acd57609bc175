"""The learned seats of a refit (mathematics §5, §9): their advantages with the vectors held fixed, and their
information at the fit."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import expit

from app.rating.game_log import GameLog
from app.rating.model import Array
from app.rating.refit.likelihood import pair_logits
from app.rating.seats import SEAT_PRIOR_PRECISION, Seats, seat_sums


def _seat_sums(C: Array, log: GameLog, seats: Array) -> tuple[Array, Array]:
    """The seats' information and gain (:func:`app.rating.seats.seat_sums`) over every pair term of the log."""
    assert log.side_seat is not None  # seats are fitted only for a log that names them
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
