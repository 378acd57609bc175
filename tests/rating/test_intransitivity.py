"""Hodge decomposition, intransitivity and the canonical disc form (mathematics §12)."""

import numpy as np
import pytest
from scipy.special import logit

from app.rating import intransitivity, omega
from app.rating.intransitivity import canonical, empirical_hodge, hodge_norms, hodge_norms_of_matrix

from .helpers import random_symplectic

P_SEED000 = np.array([[0.5, 0.2, 0.8], [0.8, 0.5, 0.2], [0.2, 0.8, 0.5]])  # [Guide] §8, rock-paper-scissors


def test_intransitivity_reference_points():
    assert hodge_norms(np.zeros((5, 2))).intransitivity == 1.0
    assert hodge_norms_of_matrix(np.zeros((4, 4))).intransitivity == 1.0
    elo = np.column_stack([np.linspace(-2, 2, 9), np.ones(9)])  # c = (r, 1): a pure Elo game
    pure = hodge_norms(elo)
    assert pure.cyclic_norm == pytest.approx(0.0, abs=1e-6) and pure.intransitivity < 1
    rps = hodge_norms_of_matrix(logit(P_SEED000))
    assert rps.transitive_norm == pytest.approx(0.0, abs=1e-12) and rps.intransitivity > 1


@pytest.mark.parametrize("k", [1, 2, 3])
def test_hodge_norms_without_forming_a_match_the_matrix(k):
    C = np.random.default_rng(k).normal(size=(30, 2 * k))
    fast, full = hodge_norms(C), hodge_norms_of_matrix(C @ omega(k) @ C.T)
    assert (fast.norm, fast.transitive_norm, fast.cyclic_norm) == pytest.approx(
        (full.norm, full.transitive_norm, full.cyclic_norm), rel=1e-9
    )


@pytest.mark.parametrize("k", [1, 2, 3])
def test_canonical_form_reproduces_a_and_ignores_symplectic_maps(k):
    rng = np.random.default_rng(20 + k)
    C = rng.normal(size=(25, 2 * k))
    C[:, 1] += 1.5
    A = C @ omega(k) @ C.T
    form = canonical(C)
    np.testing.assert_allclose(form.D @ omega(k) @ form.D.T, A, atol=1e-9)
    moved = C @ random_symplectic(k, rng).T
    np.testing.assert_allclose(canonical(moved).D, form.D, atol=1e-6)
    assert hodge_norms(moved).intransitivity == pytest.approx(hodge_norms(C).intransitivity, rel=1e-9)
    sigmas = [b.sigma for b in form.blocks]
    assert sigmas == sorted(sigmas, reverse=True)
    assert sum(b.share for b in form.blocks) == pytest.approx(1.0)


def test_transitive_and_cyclic_discs():
    r = np.linspace(-1, 1, 7)
    transitive = canonical(np.column_stack([r, np.ones(7)]))  # Elo: one transitive disc
    assert transitive.blocks[0].transitive and np.all(transitive.D[:, 1] > 0)
    order = np.argsort(transitive.disc_strength())
    assert order.tolist() == list(range(7))  # disc strength orders players as their Elo does
    theta = 2 * np.pi * np.arange(6) / 6
    cyclic = canonical(np.column_stack([np.cos(theta), np.sin(theta)]))
    assert not cyclic.blocks[0].transitive
    with pytest.raises(ValueError, match="cyclic"):
        cyclic.disc_strength()


def test_empirical_intransitivity_from_win_rates():
    # Three players in a cycle, each winning 80 of 100 against the next: above 1; a clean order: below 1.
    cycle = empirical_hodge([0, 1, 0], [1, 2, 2], [80, 80, 20], [100, 100, 100], 3)
    order = empirical_hodge([0, 1, 0], [1, 2, 2], [80, 80, 95], [100, 100, 100], 3)
    assert cycle.intransitivity > 1 > order.intransitivity
    assert empirical_hodge([0], [1], [5], [10], 2) is None


def test_an_empirical_fit_stopped_at_its_iteration_bound_says_so(monkeypatch):
    """A path of 300 players, each meeting the next: the fit converges, unless its bound is five iterations."""
    i, j = np.arange(299), np.arange(1, 300)
    wins = np.random.default_rng(0).integers(0, 11, 299)
    full = empirical_hodge(i, j, wins, np.full(299, 10), 300)
    assert full.converged and full.cyclic_norm == pytest.approx(0, abs=1e-6)  # a tree has no cycles
    monkeypatch.setattr(intransitivity, "LSQR_ITERATIONS", 5)
    assert not empirical_hodge(i, j, wins, np.full(299, 10), 300).converged
