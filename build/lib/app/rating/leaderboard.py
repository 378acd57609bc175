"""Leaderboard invariants and matchmaking (mathematics §7, §8).

Rating vectors are unique only up to a symplectic map ([Guide] §5), so only
functions of the advantage matrix A = C Ω Cᵀ may be ranked or shown.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import expit

from app.rating.errors import RatingInputError
from app.rating.model import ELO_PER_LOGIT, Array, as_vectors, omega_apply, rowdot

#: Elo-equivalent points of a player with Hodge strength 0.
ELO_BASE = 1500.0


def hodge_strength(C: ArrayLike) -> Array:
    """s_i = (1/m) Σ_j a_ij = c_iᵀ Ω c̄ for every player, in O(mk) (mathematics §8, [Intransitivity]).

    The gradient (transitive) part of the Hodge decomposition of A: the
    least-squares Elo rating that best explains A.
    """
    C = as_vectors(C, "C")
    if len(C) == 0:
        return np.zeros(0)
    return rowdot(C, omega_apply(C.mean(axis=0))[None, :])


def hodge_strength_against(c: ArrayLike, field_mean: ArrayLike) -> Array:
    """s = cᵀ Ω c̄ for a vector (or rows of vectors) c against a field of mean vector c̄ (mathematics §8).

    For the field's own members this is :func:`hodge_strength`; for a past rating
    it says how strong that rating would be against today's field.
    """
    return rowdot(as_vectors(c, "c"), omega_apply(as_vectors(field_mean, "field_mean")))


def elo_equivalent(strength: ArrayLike) -> Array:
    """Display a strength in logits as Elo-equivalent points: 1500 + 400·s/ln 10."""
    return ELO_BASE + np.asarray(strength, dtype=np.float64) * ELO_PER_LOGIT


def field_score(C: ArrayLike, max_exact: int = 4000, sample: int = 2000, seed: int = 0) -> Array:
    """f_i = mean over j ≠ i of σ(a_ij): expected score against the field (mathematics §8).

    Exact (O(m²k), computed in row blocks) for m ≤ ``max_exact``; beyond, the
    mean over a seeded random reference sample of ``sample`` players.
    """
    C = as_vectors(C, "C")
    m = len(C)
    if m < 2:
        return np.full(m, 0.5)
    rng = np.random.default_rng(seed)
    ref = np.arange(m) if m <= max_exact else np.sort(rng.choice(m, size=sample, replace=False))
    oref = omega_apply(C[ref])
    total = np.empty(m)
    block = max(1, 2_000_000 // len(ref))
    for lo in range(0, m, block):
        total[lo : lo + block] = expit(C[lo : lo + block] @ oref.T).sum(axis=1)
    # Each player in the reference set contributed σ(a_ii) = σ(0) = 1/2 against themself.
    in_ref = np.zeros(m, dtype=bool)
    in_ref[ref] = True
    total -= 0.5 * in_ref
    return total / (len(ref) - in_ref)


def balanced_opponents(C: ArrayLike, i: int, limit: int = 10, candidates: ArrayLike | None = None) -> Array:
    """Indices of the players j ≠ i with P(i beats j) closest to 1/2 (mathematics §7).

    Minimises |c_iᵀ Ω c_j| in one O(mk) vectorised scan; ``candidates`` (index
    array) restricts the search, e.g. to active players.  Closest first.
    """
    C = as_vectors(C, "C")
    if not 0 <= i < len(C):
        raise RatingInputError("player", f"index {i} is outside the rating matrix")
    if limit < 1:
        raise RatingInputError("limit", "must be >= 1")
    pool = np.arange(len(C)) if candidates is None else np.asarray(candidates, dtype=np.int64)
    pool = pool[pool != i]
    if len(pool) == 0:
        return pool
    gap = np.abs(C[pool] @ omega_apply(C[i]))
    limit = min(limit, len(pool))
    top = np.argpartition(gap, limit - 1)[:limit]
    return pool[top[np.lexsort((pool[top], gap[top]))]]
