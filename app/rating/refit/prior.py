"""The refit's prior (mathematics §9): centred on the Elo manifold c = (r, 1), with a penalty λ per coordinate.

The penalty is Σ_i Σ_d λ_d (c_id - μ_d)² with μ = (0, 1, 0, …, 0), the Elo
manifold of mathematics §1 (a ladder's default initial offset, mathematics
§2), so players are Elo-like until the results show cycles; with k ≥ 2 the
first disc is held near that manifold and the others carry the cycles
(:func:`penalty_weights`).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from app.rating.model import Array

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
