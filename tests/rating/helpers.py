"""Shared helpers for the rating tests."""

import numpy as np
from scipy.linalg import expm
from scipy.special import expit

from app.rating import Game, GameLog, LearningRate, initial_vectors, omega


def two_player(i: int, j: int, outcome: float) -> Game:
    """i meets j; outcome is S from i's side (1 win, 0.5 draw, 0 loss)."""
    ranks = {1.0: (1, 2), 0.5: (1, 1), 0.0: (2, 1)}[outcome]
    return Game(((i,), (j,)), ranks)


def random_symplectic(k: int, rng: np.random.Generator) -> np.ndarray:
    """M = expm(Ω S) with S symmetric: Mᵀ Ω M = Ω (a random element of Sp(2k))."""
    S = rng.normal(size=(2 * k, 2 * k))
    M = expm(omega(k) @ (S + S.T) / 2)
    assert np.allclose(M.T @ omega(k) @ M, omega(k), atol=1e-9)
    return M


def random_games(rng: np.random.Generator, m: int, n: int, kind: str, advantages: bool) -> list[Game]:
    """``n`` random games among ``m`` players: "two_player", or "teams_and_multiplayer" (2-4 sides of 1-2)."""
    games = []
    for _ in range(n):
        if kind == "two_player":
            a, b = rng.choice(m, 2, replace=False)
            sides, ranks = ((int(a),), (int(b),)), tuple(int(r) for r in rng.integers(1, 3, 2))
        else:
            n_sides = int(rng.integers(2, 5))
            sizes = rng.integers(1, 3, n_sides)
            players = rng.choice(m, size=int(sizes.sum()), replace=False)
            sides = tuple(tuple(int(p) for p in part) for part in np.split(players, np.cumsum(sizes)[:-1]))
            ranks = tuple(int(r) for r in rng.integers(1, n_sides + 1, n_sides))
        adv = tuple(rng.normal(scale=0.3, size=len(sides))) if advantages else None
        games.append(Game(sides, ranks, adv))
    return games


DEFAULT = LearningRate(0.7, 3.0)


def elo_stream(m: int, n: int, drift: float, seed: int) -> GameLog:
    """``n`` games between ``m`` players whose Elo strengths take a random walk of ``drift`` per game."""
    rng = np.random.default_rng(seed)
    r = rng.normal(0, 1, m)
    i = rng.integers(0, m, n)
    j = (i + rng.integers(1, m, n)) % m
    outcome = np.empty(n)
    for g in range(n):
        r += rng.normal(0, drift, m)
        outcome[g] = rng.random() < expit(r[i[g]] - r[j[g]])
    return GameLog.from_pairs(i, j, outcome)


def start(m: int) -> np.ndarray:
    return initial_vectors([f"p{x}" for x in range(m)], 1, 0, 0.1, None)
