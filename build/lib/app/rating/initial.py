"""Seeded, reproducible initial rating vectors (mathematics §2, [Guide] §4 and §9).

Every player's vector is an independent draw from N(μ, s²·I_{2k}).  A
continuous distribution keeps C full rank with probability one ([Guide]
Theorem 1: equal initial vectors would pin C to rank ≤ 2 forever).  The draw is
a pure function of (ladder seed, player key), so any server, and the audit
replay, regenerate it exactly.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike

from app.rating.errors import RatingInputError
from app.rating.model import Array, check_k


def stable_hash(key: str) -> int:
    """A 64-bit hash of ``key`` that is the same in every process and version.

    Python's built-in ``hash`` of a string is salted per process, so it cannot
    seed reproducible draws.
    """
    digest = hashlib.blake2b(key.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "little")


def initial_vectors(
    keys: Sequence[str],
    k: int,
    seed: int,
    scale: float,
    offset: ArrayLike | None = None,
) -> Array:
    """Initial vectors for ``keys``: row i is ``offset + scale · z``, z ~ N(0, I_{2k}).

    ``z`` comes from ``numpy.random.default_rng([seed, stable_hash(key)])``.

    Parameters
    ----------
    keys : player keys (any strings).
    k : number of discs; vectors have length 2k.
    seed : the ladder's seed, an integer ≥ 0.
    scale : standard deviation s > 0 of every coordinate.
    offset : mean μ (length 2k), default 0.  For example (0, v₀, 0, …) starts
        players near the Elo manifold c = (r, 1) of mathematics §1.
    """
    k = check_k(k)
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise RatingInputError("seed", f"must be an integer >= 0, got {seed!r}")
    if not np.isfinite(scale) or scale <= 0:
        raise RatingInputError("init_scale", f"must be a finite number > 0, got {scale!r}")
    mu = np.zeros(2 * k) if offset is None else np.asarray(offset, dtype=np.float64)
    if mu.shape != (2 * k,) or not np.all(np.isfinite(mu)):
        raise RatingInputError("init_offset", f"must be {2 * k} finite numbers")
    out = np.empty((len(keys), 2 * k))
    for row, key in enumerate(keys):
        rng = np.random.default_rng([int(seed), stable_hash(key)])
        out[row] = mu + scale * rng.standard_normal(2 * k)
    return out
