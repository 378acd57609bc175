"""Learned seat advantages (mathematics §5): white, home, server, … each with an advantage learned from results.

A ladder may name its seats; a side of a game may take one.  Seat s has an
advantage h_s in logits that shifts every pair term its side is in, exactly as
an explicit advantage does: p_ab = σ(C_aᵀ Ω C_b + h_a - h_b).  Unlike a
player's vector, a seat is one number shared by every game that names it, so
it is learned like one: an online Newton (Kalman) step per game,

    I_s ← I_s + Σ w p(1 - p)        h_s ← h_s ± Σ w (S - p) / I_s

over the game's pair terms that involve side s (weight w = 1/(N-1), ± for the
first or second side of the pair).  I_s starts at the prior precision 1/σ₀²
(σ₀ the ladder's ``seat_prior``; :data:`SEAT_PRIOR_PRECISION` where none is
given) and counts twice when both sides of a pair take seats, because then
the correction of h_a - h_b is shared by two seats; h_s is then the
posterior mean of a normal approximation and 1/√I_s its standard error.
Games naming one seat depend on each other through it: replay orders them
like games sharing a player (:func:`app.rating.replay.dependency_levels`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

import numpy as np
from numpy.typing import ArrayLike

from app.rating.errors import RatingInputError
from app.rating.game_log import IntArray
from app.rating.model import Array

#: Precision of a seat's advantage before any game where none is given: a standard deviation of 1 logit (174 Elo
#: points), what ladders created before the setting keep.
SEAT_PRIOR_PRECISION = 1.0


def prior_precision(sd: float) -> float:
    """The precision 1/σ₀² of a seat's prior of standard deviation ``sd`` (logits, > 0)."""
    if not (np.isfinite(sd) and sd > 0):
        raise RatingInputError("seat_prior", f"must be a finite number > 0, got {sd!r}")
    return 1.0 / (sd * sd)


@dataclass(frozen=True)
class Seats:
    """Every seat's advantage (logits) and information (precision, the prior included)."""

    advantage: Array
    information: Array

    @classmethod
    def fresh(cls, n: int, precision: float = SEAT_PRIOR_PRECISION) -> Seats:
        """n seats before any game: no advantage, the prior's ``precision``."""
        return cls(np.zeros(n), np.full(n, float(precision)))

    @classmethod
    def of(cls, advantage: ArrayLike, information: ArrayLike) -> Seats:
        h = np.array(advantage, dtype=np.float64).reshape(-1)
        info = np.array(information, dtype=np.float64).reshape(-1)
        if len(h) != len(info) or not (np.all(np.isfinite(h)) and np.all(np.isfinite(info)) and np.all(info > 0)):
            raise RatingInputError("seats", "advantages and informations must be finite, informations > 0")
        return cls(h, info)

    def copy(self) -> Seats:
        return Seats(self.advantage.copy(), self.information.copy())

    @property
    def standard_error(self) -> Array:
        """1/√I_s: the standard error of each advantage, in logits."""
        return 1.0 / np.sqrt(self.information)


def seat_shift(advantage: Array, seat_a: IntArray, seat_b: IntArray) -> Array:
    """h_a - h_b of every pair term whose sides take seats ``seat_a``/``seat_b`` (-1: none, advantage 0)."""
    h = np.append(advantage, 0.0)  # index -1 reads the 0 at the end
    return h[seat_a] - h[seat_b]


def seat_sums(
    n: int, seat_a: IntArray, seat_b: IntArray, weight: Array, outcome: Array, p: Array
) -> tuple[Array, Array]:
    """Per seat, over pair terms whose sides take seats ``seat_a``/``seat_b`` (-1: none): the information
    Σ w p(1 - p) (counted twice when both sides take seats) and the gain Σ ± w (S - p) (+ for the first side)."""
    a, b = seat_a >= 0, seat_b >= 0
    info = weight * p * (1.0 - p) * np.where(a & b, 2.0, 1.0)
    gain = weight * (outcome - p)
    information = np.bincount(seat_a[a], weights=info[a], minlength=n) + np.bincount(
        seat_b[b], weights=info[b], minlength=n
    )
    gains = np.bincount(seat_a[a], weights=gain[a], minlength=n) - np.bincount(seat_b[b], weights=gain[b], minlength=n)
    return cast(Array, information), cast(Array, gains)  # weighted bincounts are float64 (NumPy's stub says intp)


def seat_step(seats: Seats, seat_a: IntArray, seat_b: IntArray, weight: Array, outcome: Array, p: Array) -> None:
    """Learn from pair terms (each seat on one side of one game at most), in place: the module's Newton step.

    ``p`` are the terms' pre-game probabilities (with the seats' shift).
    """
    information, gain = seat_sums(len(seats.advantage), seat_a, seat_b, weight, outcome, p)
    seats.information[:] += information
    seats.advantage[:] += gain / seats.information
