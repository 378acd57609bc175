"""Seasons that pull the ratings back toward the start (mathematics §8, "Seasons").

When a season closes with a pull p in [0, 1], every player's rating vector
moves the fraction p of the way back to the vector they started the ladder
with, and what is known of them (their experience, :mod:`app.rating.experience`)
keeps the fraction 1 - p:

    c ← c⁰ + (1 - p)(c - c⁰),    e ← (1 - p) e.

p = 0 changes nothing; p = 1 starts everyone afresh.  Their online steps are
then larger again (they follow experience), so the next season's results move
the ratings quickly.  A refit weighs each game by the part of it that the
pulls since kept, Π (1 - p) over the seasons that closed after it, so it
forgets the old seasons as the online ratings did.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from app.rating.errors import RatingInputError
from app.rating.model import Array, as_vectors


def _checked(pull: float) -> float:
    pull = float(pull)
    if not 0.0 <= pull <= 1.0:
        raise RatingInputError("pull", "must be between 0 and 1")
    return pull


def pull_back(C: ArrayLike, C0: ArrayLike, pull: float) -> Array:
    """c⁰ + (1 - p)(c - c⁰) for every row: the vectors pulled the fraction ``pull`` back to the initial ``C0``
    (exactly ``C0`` for p = 1, exactly ``C`` for p = 0)."""
    C, C0 = as_vectors(C, "C"), as_vectors(C0, "C0")
    if C.shape != C0.shape:
        raise RatingInputError("C0", f"expected the shape of C, {C.shape}, got {C0.shape}")
    return C0 + (1.0 - _checked(pull)) * (C - C0)


#: Experience after a pull is rounded to a multiple of 2⁻²⁰ games: whole games then add to it exactly, so a
#: replay that adds a batch of games at once and one that adds them one at a time agree to the last bit.
GRID = 2.0**-20


def pull_experience(experience: ArrayLike, pull: float) -> Array:
    """(1 - p) e: the experience a pull keeps (to the nearest multiple of :data:`GRID`)."""
    kept = np.asarray(experience, dtype=np.float64) * (1.0 - _checked(pull))
    return np.round(kept / GRID) * GRID


def pull_variance(variance: ArrayLike, start: float, pull: float) -> Array:
    """Under the variance rule (mathematics §3b): the variance that keeps the part 1 - p of what a player's
    variance knows of them beyond a newcomer's, 1/u' = (1 - p)/u + p/u₀ (u₀ = ``start``); NaN (none yet) stays."""
    u = np.asarray(variance, dtype=np.float64)
    p = _checked(pull)
    return 1.0 / ((1.0 - p) / u + p / start)


def kept_weights(game_ids: ArrayLike, boundaries: ArrayLike, pulls: ArrayLike) -> Array:
    """The weight Π (1 - p_b) of each game (by id) over the pulls of the seasons whose boundary (the last game
    they count, ``boundaries``) is at or after it: 1 for a game after every pull, 0 for one before a season
    that started everyone afresh."""
    game_ids = np.asarray(game_ids, dtype=np.int64)
    boundaries, pulls = np.asarray(boundaries, dtype=np.int64), np.asarray(pulls, dtype=np.float64)
    if boundaries.shape != pulls.shape:
        raise RatingInputError("pulls", "expected one pull per boundary")
    weights = np.ones(len(game_ids))
    for boundary, pull in zip(boundaries.tolist(), pulls.tolist(), strict=True):
        weights[game_ids <= boundary] *= 1.0 - _checked(pull)
    return weights
