"""Synthetic rating streams with a known truth, for the tests and bench/quality.py."""

from __future__ import annotations

import numpy as np
from scipy.special import expit

from app.rating import GameLog


def comeback_stream(m: int = 60, walk: float = 1.0, seed: int = 0, years: int = 6) -> tuple[GameLog, np.ndarray]:
    """Games every other day among ``m`` players over ``years``, whose strengths take a random walk of ``walk``
    logits a year; each year a third of them take the year off (and come back the most changed)."""
    rng = np.random.default_rng(seed)
    r = rng.normal(0, 1, m)
    i, j, s, t = [], [], [], []
    for year in range(years):
        here = np.flatnonzero(rng.random(m) >= (1 / 3 if year else 0))
        for day in range(0, 365, 2):
            r += rng.normal(0, walk * np.sqrt(2 / 365.25), m)
            a = rng.choice(here, size=(len(here) // 2, 2), replace=False)
            i += a[:, 0].tolist()
            j += a[:, 1].tolist()
            s += (rng.random(len(a)) < expit(r[a[:, 0]] - r[a[:, 1]])).tolist()
            t += [year + day / 365.25] * len(a)
    return GameLog.from_pairs(np.array(i), np.array(j), np.array(s, dtype=float)), np.array(t)
