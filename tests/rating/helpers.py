"""Shared helpers for the rating tests."""

import numpy as np
from scipy.linalg import expm

from app.rating import Game, omega


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
