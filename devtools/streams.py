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


def career_stream(
    m: int = 150, cohorts: int = 4, cohort: int = 40, games: int = 20_000, seed: int = 0, walk: float = 0.4
) -> tuple[GameLog, int, np.ndarray]:
    """A field whose strengths change over ``games`` games in five years: every strength takes a random walk of
    ``walk`` logits a year, and each year from the first on a cohort of ``cohort`` newcomers joins, 1.5 logits
    below the field's middle, and improves by a logit a year for two years.  Games pair two players present,
    at random.  The log, the number of players, and each game's time in years."""
    rng = np.random.default_rng(seed)
    n = m + cohorts * cohort
    r = np.concatenate([rng.normal(0, 1, m), rng.normal(-1.5, 0.5, cohorts * cohort)])
    joined = np.concatenate([np.zeros(m), np.repeat(np.arange(1, cohorts + 1), cohort).astype(float)])
    when = np.sort(rng.uniform(0, cohorts + 1, games))
    i, j, s = np.empty(games, np.int64), np.empty(games, np.int64), np.empty(games)
    step = np.diff(np.concatenate(([0.0], when)))
    for g in range(games):
        here = joined <= when[g]
        r += rng.normal(0, walk * np.sqrt(step[g]), n)
        improving = here & (when[g] - joined < 2)
        r[improving] += step[g]
        a, b = rng.choice(np.flatnonzero(here), 2, replace=False)
        i[g], j[g], s[g] = a, b, rng.random() < expit(r[a] - r[b])
    return GameLog.from_pairs(i, j, s), n, when
