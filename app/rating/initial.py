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
from numpy.typing import ArrayLike, NDArray

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
    if not len(keys):
        return out
    bits = np.random.PCG64()
    draw = np.random.Generator(bits).standard_normal
    for row, (state, inc) in enumerate(_pcg64_states(int(seed), keys)):
        # what np.random.default_rng([seed, stable_hash(key)]) starts from, set without its SeedSequence
        bits.state = {"bit_generator": "PCG64", "state": {"state": state, "inc": inc}, "has_uint32": 0, "uinteger": 0}
        out[row] = draw(2 * k)
    return mu + scale * out


# NumPy's SeedSequence (numpy/random/bit_generator.pyx, stable since NumPy 1.17) and PCG64's seeding, computed
# for many keys at once: building a default_rng per key is mostly SeedSequence's per-call overhead, and a
# prediction may name 2,048 players who have no vector yet.  tests/rating/test_initial.py holds it to
# default_rng bit for bit.
_M32 = np.uint64(0xFFFFFFFF)
_INIT_A, _MULT_A, _INIT_B, _MULT_B = 0x43B0D7E5, 0x931E8875, 0x8B51F9DD, 0x58F38DED
_MIX_L, _MIX_R = np.uint64(0xCA01F9DD), np.uint64(2**32 - 0x4973F715)  # x·L − y·R as x·L + y·(2³² − R) mod 2³²
_POOL = 4
_PCG_MULT = (2549297995355413924 << 64) + 4865540595714422341
_M128 = (1 << 128) - 1


def _words(value: int) -> list[int]:
    """An integer as SeedSequence reads it: 32-bit words, least significant first; 0 is one word."""
    out = [value & 0xFFFFFFFF]
    while value := value >> 32:
        out.append(value & 0xFFFFFFFF)
    return out


def _pcg64_states(seed: int, keys: Sequence[str]) -> list[tuple[int, int]]:
    """PCG64's (state, increment) after seeding with SeedSequence([seed, stable_hash(key)]), for each key."""
    head = _words(seed)
    entropy = [head + _words(stable_hash(key)) for key in keys]
    out: list[tuple[int, int]] = [(0, 0)] * len(keys)
    for length in {len(e) for e in entropy}:  # the hashes below 2³² are one word shorter
        rows = [n for n, e in enumerate(entropy) if len(e) == length]
        words = _seed_words(np.array([entropy[n] for n in rows], dtype=np.uint64)).tolist()
        for n, (s_hi, s_lo, i_hi, i_lo) in zip(rows, words, strict=True):
            inc = ((((i_hi << 64) | i_lo) << 1) | 1) & _M128
            state = (inc + ((s_hi << 64) | s_lo)) & _M128  # pcg64_set_seed: from 0 a step (to inc), add, a step
            out[n] = (state * _PCG_MULT + inc) & _M128, inc
    return out


def _seed_words(entropy: NDArray[np.uint64]) -> NDArray[np.uint64]:
    """SeedSequence(entropy row).generate_state(4, uint64) for each row of 32-bit words (as uint64)."""
    const = _INIT_A

    def hashmix(value: NDArray[np.uint64]) -> NDArray[np.uint64]:
        nonlocal const
        value = value ^ np.uint64(const)
        const = const * _MULT_A & 0xFFFFFFFF
        value = value * np.uint64(const) & _M32
        return value ^ (value >> np.uint64(16))

    def mix(x: NDArray[np.uint64], y: NDArray[np.uint64]) -> NDArray[np.uint64]:
        value = (x * _MIX_L + y * _MIX_R) & _M32
        return value ^ (value >> np.uint64(16))

    n, length = entropy.shape
    zero = np.zeros(n, dtype=np.uint64)
    pool = [hashmix(entropy[:, i] if i < length else zero) for i in range(_POOL)]
    for src in range(_POOL):
        for dst in range(_POOL):
            if src != dst:
                pool[dst] = mix(pool[dst], hashmix(pool[src]))
    for src in range(_POOL, length):
        for dst in range(_POOL):
            pool[dst] = mix(pool[dst], hashmix(entropy[:, src]))
    const, state = _INIT_B, []
    for i in range(8):  # 8 words of 32 bits, paired into 4 of 64 (the low word first)
        value = pool[i % _POOL] ^ np.uint64(const)
        const = const * _MULT_B & 0xFFFFFFFF
        value = value * np.uint64(const) & _M32
        state.append(value ^ (value >> np.uint64(16)))
    return np.stack([state[2 * i] | (state[2 * i + 1] << np.uint64(32)) for i in range(4)], axis=1)
