"""The mElo model: Ω, advantages and win probabilities (mathematics §1, §5, §7).

A player's rating is a row vector ``c`` of length 2k.  Ω is block diagonal with
k blocks ``[[0, 1], [-1, 0]]`` ([Guide] §2), so for row vectors

    (Ω c)[2l] = c[2l+1],   (Ω c)[2l+1] = -c[2l],

and the advantage of i over j is ``a_ij = c_iᵀ Ω c_j`` ([Guide] eq. 1); the
win probability is ``σ(a_ij + h_i - h_j)`` with seat advantages h (mathematics §5).
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.special import expit, logit

from app.rating.errors import RatingInputError

#: Elo points per logit: a logit difference x is 400·x/ln 10 Elo points (mathematics §1).
ELO_PER_LOGIT = 400.0 / math.log(10.0)

sigmoid = expit

Array = NDArray[np.float64]


def check_k(k: int) -> int:
    """Return ``k`` if it is a valid number of discs (an integer ≥ 1)."""
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise RatingInputError("k", f"must be an integer >= 1, got {k!r}")
    return int(k)


def as_vectors(C: ArrayLike, field: str = "vectors") -> Array:
    """``C`` as a finite float64 array whose last axis has even length ≥ 2."""
    try:
        arr = np.asarray(C, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise RatingInputError(field, "must be numeric") from exc
    if arr.ndim == 0 or arr.shape[-1] < 2 or arr.shape[-1] % 2:
        raise RatingInputError(field, f"last axis must have even length 2k >= 2, got shape {arr.shape}")
    if not np.isfinite(arr).all():
        raise RatingInputError(field, "must be finite (no NaN or infinity)")
    return arr


def omega(k: int) -> Array:
    """The 2k × 2k matrix Ω of [Guide] §2: k blocks [[0, 1], [-1, 0]]."""
    k = check_k(k)
    return np.kron(np.eye(k), np.array([[0.0, 1.0], [-1.0, 0.0]]))


def omega_apply(C: Array) -> Array:
    """Ω c for every row c of ``C`` (exact: a permutation and sign flips)."""
    out = np.empty_like(C)
    out[..., 0::2] = C[..., 1::2]
    out[..., 1::2] = -C[..., 0::2]
    return out


def rowdot(X: Array, Y: Array) -> Array:
    """Row-wise dot product summed column by column in a fixed order.

    A fixed summation order makes the result bit-identical whether a row is
    processed alone or inside a large batch (needed for exact replay, mathematics §9).
    """
    out = X[..., 0] * Y[..., 0]
    for col in range(1, X.shape[-1]):
        out = out + X[..., col] * Y[..., col]
    return out


def advantage(ci: ArrayLike, cj: ArrayLike) -> Array:
    """a_ij = c_iᵀ Ω c_j for rows (or stacks of rows) ``ci`` and ``cj`` ([Guide] eq. 1)."""
    ci, cj = as_vectors(ci, "ci"), as_vectors(cj, "cj")
    return rowdot(ci, omega_apply(cj))


def win_probability(ci: ArrayLike, cj: ArrayLike, h_i: ArrayLike = 0.0, h_j: ArrayLike = 0.0) -> Array:
    """P(i beats j) = σ(c_iᵀ Ω c_j + h_i - h_j) (mathematics §1, §5)."""
    return expit(advantage(ci, cj) + np.asarray(h_i, dtype=float) - np.asarray(h_j, dtype=float))


def pair_advantage(C: ArrayLike, i: ArrayLike, j: ArrayLike) -> Array:
    """Advantages a_ij for index arrays ``i`` and ``j`` into the rating matrix ``C``."""
    C = as_vectors(C, "C")
    return rowdot(C[np.asarray(i)], omega_apply(C[np.asarray(j)]))


def pair_probability(C: ArrayLike, i: ArrayLike, j: ArrayLike) -> Array:
    """P(i beats j) for index arrays ``i`` and ``j`` into ``C``."""
    return expit(pair_advantage(C, i, j))


def advantage_matrix(C: ArrayLike) -> Array:
    """A = C Ω Cᵀ (m × m, skew-symmetric, rank ≤ 2k)."""
    C = as_vectors(C, "C")
    return C @ omega_apply(C).T


def probability_matrix(C: ArrayLike) -> Array:
    """P̂ = σ(C Ω Cᵀ), the matrix of win probabilities ([Guide] §8)."""
    return expit(advantage_matrix(C))


def advantage_from_probability(q: ArrayLike, field: str = "win_probability") -> Array:
    """Seat advantage h = logit(q) for a seat that beats an equal opponent with probability q (mathematics §5).

    q = 0.5 gives 0; q = 0.9 gives 2.197 logits (382 Elo points).  q must lie in
    the open interval (0, 1): 0 and 1 would be infinite advantages.
    """
    q = np.asarray(q, dtype=np.float64)
    if not np.all(np.isfinite(q)) or np.any(q <= 0.0) or np.any(q >= 1.0):
        raise RatingInputError(field, "must lie strictly between 0 and 1")
    return logit(q)


def logits_to_elo(x: ArrayLike) -> Array:
    """A logit difference in Elo points: 400·x/ln 10 (mathematics §1)."""
    return np.asarray(x, dtype=np.float64) * ELO_PER_LOGIT


def elo_to_logits(points: ArrayLike) -> Array:
    """Elo points as a logit difference (inverse of :func:`logits_to_elo`)."""
    return np.asarray(points, dtype=np.float64) / ELO_PER_LOGIT
