"""Leaderboard invariants and matchmaking (mathematics §7, §8).

Rating vectors are unique only up to a symplectic map ([Guide] §5), so only
functions of the advantage matrix A = C Ω Cᵀ may be ranked or shown.
"""

from __future__ import annotations

import functools

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.special import expit

from app.rating.errors import RatingInputError
from app.rating.model import ELO_PER_LOGIT, Array, as_vectors, omega_apply, rowdot
from app.rating.refit.prior import ELO_R_L2
from app.rating.update import LearningRate

#: Elo-equivalent points of a player with Hodge strength 0.
ELO_BASE = 1500.0
#: Precision (1/variance, logits⁻²) of a strength before any result: the refit's prior on the Elo coordinate r,
#: a standard deviation of √2 logits (246 Elo points).
STRENGTH_PRIOR_PRECISION = 2.0 * ELO_R_L2


def field_mean(C: ArrayLike) -> Array:
    """c̄, the mean rating vector of the field, as one matrix-vector product (a column-wise ``mean`` of a tall,
    narrow array is much slower); zeros for an empty field."""
    C = as_vectors(C, "C")
    return np.ones(len(C)) @ C / len(C) if len(C) else np.zeros(C.shape[1])


def hodge_strength(C: ArrayLike) -> Array:
    """s_i = (1/m) Σ_j a_ij = c_iᵀ Ω c̄ for every player, in O(mk) (mathematics §8, [Intransitivity]).

    The gradient (transitive) part of the Hodge decomposition of A: the
    least-squares Elo rating that best explains A.
    """
    C = as_vectors(C, "C")
    if len(C) == 0:
        return np.zeros(0)
    return rowdot(C, omega_apply(field_mean(C))[None, :])


def hodge_strength_against(c: ArrayLike, field_mean: ArrayLike) -> Array:
    """s = cᵀ Ω c̄ for a vector (or rows of vectors) c against a field of mean vector c̄ (mathematics §8).

    For the field's own members this is :func:`hodge_strength`; for a past rating
    it says how strong that rating would be against today's field.
    """
    return rowdot(as_vectors(c, "c"), omega_apply(as_vectors(field_mean, "field_mean")))


def elo_equivalent(strength: ArrayLike) -> Array:
    """Display a strength in logits as Elo-equivalent points: 1500 + 400·s/ln 10."""
    return ELO_BASE + np.asarray(strength, dtype=np.float64) * ELO_PER_LOGIT


def conservative(strength: ArrayLike, se: ArrayLike) -> Array:
    """The conservative strength in Elo-equivalent points: the strength minus two standard errors (logits)."""
    return elo_equivalent(np.asarray(strength, dtype=np.float64) - 2.0 * np.asarray(se, dtype=np.float64))


def field_score(C: ArrayLike, max_exact: int = 4000, sample: int = 2000, seed: int = 0) -> Array:
    """f_i = mean over j ≠ i of σ(a_ij): expected score against the field (mathematics §8).

    Exact (O(m²k), computed in row blocks) for m ≤ ``max_exact``; beyond, the
    mean over a seeded random reference sample of ``sample`` players.
    """
    return _field_mean(C, lambda rows, ref: expit(_advantages(rows, ref)), max_exact, sample, seed)


def field_information(
    C: ArrayLike, max_exact: int = 4000, sample: int = 2000, seed: int = 0, rows: ArrayLike | None = None
) -> Array:
    """w_i = mean over j ≠ i of σ(a_ij)(1 - σ(a_ij)): what one game against a typical member of the field tells
    about player i's strength (the Fisher information of a logistic result, mathematics §8), sampled like
    :func:`field_score`; for the players ``rows`` only if given."""

    def information(players: Array, ref: Array) -> Array:
        p = expit(_advantages(players, ref))
        return p - p * p

    return _field_mean(C, information, max_exact, sample, seed, rows)


def field_gain(
    C: ArrayLike,
    max_exact: int = 4000,
    sample: int = 2000,
    seed: int = 0,
    rows: ArrayLike | None = None,
    mean: ArrayLike | None = None,
) -> Array:
    """g_i = mean over j ≠ i of |c_j · c̄| / √(|c_i|² + |c_j|²): how far one unit of surprise (S - p) moves i's
    Hodge strength per unit of η in a game against a typical member of the field (mathematics §3, §8).  With the
    field's mean c̄ given (``mean``), only the rows and the reference sample are read: a page's cost, not the
    field's."""
    if mean is None:
        C = as_vectors(C, "C")
        mean = field_mean(C)
    mean = as_vectors(mean, "mean")

    def gain(players: Array, ref: Array) -> Array:
        norms = np.sum(players * players, axis=1)[:, None] + np.sum(ref * ref, axis=1)[None, :]
        return np.abs(ref @ mean)[None, :] / np.sqrt(np.maximum(norms, 1e-300))

    return _field_mean(C, gain, max_exact, sample, seed, rows)


#: The field means behind a standard error are over at most this many players (a seeded sample beyond): an
#: error bar needs two digits, and the leaderboard recomputes it whenever the ladder changes.
SE_SAMPLE = 256


def strength_se(
    C: ArrayLike,
    games: ArrayLike,
    rate: LearningRate | None = None,
    rows: ArrayLike | None = None,
    idle_years: ArrayLike | None = None,
    drift: float = 0.0,
    field: tuple[float, float, float] | None = None,
    information: ArrayLike | None = None,
    gain: ArrayLike | None = None,
    variance: ArrayLike | None = None,
    mean: ArrayLike | None = None,
) -> Array:
    """Standard error of each player's Hodge strength in logits (mathematics §8); of the players ``rows`` only
    if given (``games`` are then theirs).  ``information`` and ``gain``, if given, are theirs as
    :func:`field_information` and :func:`field_gain` give them over at most :data:`SE_SAMPLE` players (computed
    once for errors read again at other numbers of games); ``mean``, the field's mean vector, if known (a page
    then costs its rows, not the field).

    Under the variance rule (mathematics §3b) each player's ``variance`` (of the ``rows`` if given) is what the
    results say and how far the rule wanders at once: it replaces the two parts below (the field's lag still
    adds, and time away).

    Two parts.  What the results say: a Laplace approximation, 1/(λ₀ + n_i w_i),
    with λ₀ the refit's prior precision on the Elo coordinate
    (:data:`STRENGTH_PRIOR_PRECISION`) and each of the n_i games adding the
    information w_i of a game against a typical member of today's field
    (:func:`field_information`, over at most :data:`SE_SAMPLE` players).  And,
    given the ladder's learning ``rate``, how far the online rule's rating
    wanders around that: its steps move the strength by κ_i (S - p), with
    κ_i = η(n_i) g_i (:func:`field_gain`), so it fluctuates with the stationary
    variance κ_i / (2 - κ_i w_i) of such a rule (κ_i w_i capped at 1, where a
    rule overshoots).  It assumes independent games,
    typical opponents, and that a team game tells as much about each member as
    a game alone would.

    And time away: a strength may wander while its player does not play, by
    ``drift`` logits (one standard deviation) a year, so ``idle_years`` since a
    player's last game add drift² · idle_years to the variance (a random walk,
    as Glicko's rating deviation grows between rating periods).

    And, given the ``field``'s prior (λ₀, τ, λ) from its players' records
    (:func:`field_prior`, computed once per field), the field itself sets the
    prior and the lag: λ₀ becomes 1 / the field's variance, the larger of the
    shown strengths' and of what the results imply, and the variance gains the
    square of how far the shown field is narrower than the results say, beyond
    its noise.  Early on the online rule and the refit both shrink the
    strengths towards the middle (the rule starts everyone there and its steps
    shrink; the refit's prior is wider than few games can overcome), and this
    is the error that shrinking makes.
    """
    n = np.asarray(games, dtype=np.float64)
    w = field_information(C, SE_SAMPLE, SE_SAMPLE, rows=rows) if information is None else np.asarray(information)
    prior, tau, lag = (STRENGTH_PRIOR_PRECISION, 0.0, 0.0) if field is None else field
    if variance is None:
        variance = _noise(C, n, w, rate, rows, prior, gain, mean)
    else:
        variance = np.array(variance, dtype=np.float64)
    if tau > 0 and lag > 0:
        variance += (tau * (1.0 - n * w / (lag + n * w))) ** 2  # b_i = n_i w_i / (λ + n_i w_i); 0 with λ = ∞
    if idle_years is not None and drift > 0:
        variance += drift * drift * np.maximum(np.asarray(idle_years, dtype=np.float64), 0.0)
    return np.sqrt(variance)


def _noise(
    C: ArrayLike,
    n: Array,
    w: Array,
    rate: LearningRate | None,
    rows: ArrayLike | None,
    prior: float,
    gain: ArrayLike | None = None,
    mean: ArrayLike | None = None,
) -> Array:
    """The variance of a strength around what the results say: 1/(λ₀ + n w) for a prior precision λ₀ = ``prior``,
    and the online rule's wander (``gain``: :func:`field_gain` of the rows, if known; else with the field's mean
    ``mean`` if known)."""
    variance = 1.0 / (prior + n * w)
    if rate is not None:
        g = field_gain(C, SE_SAMPLE, SE_SAMPLE, rows=rows, mean=mean) if gain is None else np.asarray(gain)
        kappa = rate.at(n) * g
        # κw ≥ 1 (huge vectors, where the rule overshoots) would make the formula blow up: cap it there.
        variance += kappa / (2.0 - np.minimum(kappa * w, 1.0))
    return variance


#: Gauss-Hermite nodes and weights (probabilists') for the means over a normal field in :func:`results_spread`.
_NODES, _WEIGHTS = np.polynomial.hermite_e.hermegauss(40)
_WEIGHTS = _WEIGHTS / _WEIGHTS.sum()
#: The largest spread (sd, logits) :func:`results_spread` reports: scores cannot tell wider fields apart.
MAX_SPREAD = 10.0


def _score_variance(tau: Array) -> Array:
    """var of E_j σ(s_i - s_j) over a field of strengths N(0, τ²), with the probit approximation
    E_j σ(s - s_j) ≈ σ(s / √(1 + π τ² / 8)), for each τ of an array."""
    tau = np.asarray(tau, dtype=np.float64)[:, None]
    f = expit(tau * _NODES[None, :] / np.sqrt(1.0 + np.pi * tau * tau / 8.0))
    return ((f - 0.5) ** 2) @ _WEIGHTS


_TAUS = np.linspace(0.0, MAX_SPREAD, 2001)
_SCORE_VARIANCES = _score_variance(_TAUS)


def _spread(excess: float) -> float:
    """The τ whose field has this variance of expected scores (0 for none)."""
    return float(np.interp(excess, _SCORE_VARIANCES, _TAUS)) if excess > 0 else 0.0


#: The upper bound of :func:`results_spread` is this many standard errors above the estimate.
BOUND_ERRORS = 2.0


def results_spread(
    played: ArrayLike, score: ArrayLike, sample: int = SE_SAMPLE, seed: int = 0
) -> tuple[float, float] | None:
    """τ, the standard deviation (logits) of the true strengths that the players' results imply, and an upper
    bound on it; None with fewer than two players who have played.

    The method of moments: the variance of the players' fractions of points,
    less what chance alone adds to it (at most ¼ / n for n games, so τ is if
    anything low), is the variance of their expected scores against the field,
    which for a field of strengths N(0, τ²) is a known increasing function of τ
    (:func:`_score_variance`).  The bound adds two standard errors of the
    sample variance (√(2 / (m - 1)) of it, for m players: :data:`BOUND_ERRORS`).  Over the players
    who have played among the seeded sample of ``sample`` (all of them up to
    that many), as :func:`field_information` samples them.
    """
    played = np.asarray(played, dtype=np.float64)
    score = np.asarray(score, dtype=np.float64)
    ref = _reference(len(played), sample, sample, seed)
    ref = ref[played[ref] > 0]
    if len(ref) < 2:
        return None
    n = played[ref]
    fraction = score[ref] / n
    mean = float(np.mean(fraction))
    spread = float(np.var(fraction))
    excess = spread - mean * (1.0 - mean) * float(np.mean(1.0 / n))
    return _spread(excess), _spread(excess + BOUND_ERRORS * spread * np.sqrt(2.0 / (len(ref) - 1)))


#: Below this many players with games, a field's records say too little of its spread: the refit's prior stands.
MIN_FIELD = 50


def field_prior(
    C: ArrayLike,
    played: ArrayLike,
    score: ArrayLike,
    rate: LearningRate | None = None,
    sample: int = SE_SAMPLE,
    variance: ArrayLike | None = None,
) -> tuple[float, float, float]:
    """(λ₀, τ, λ): a strength's prior precision, the spread of the true strengths, and how strongly the shown
    strengths are shrunk towards the middle, all from the ladder's own field (mathematics §8).

    The prior is the field's spread: its variance the larger of the shown
    strengths' and of the upper bound of what the results imply
    (:func:`results_spread`).  τ is what the results imply.  The shown field,
    beyond its noise (:func:`_noise`), has a spread σ ≤ τ: each strength is
    shrunk by a mean factor b̄ = σ / τ, a bias of (1 - b) s.  As a shrinkage
    estimator with prior precision λ shrinks player i by b_i = n_i w_i / (λ + n_i w_i),
    λ is the one whose b_i average b̄ over the field; player i's bias is then
    of typical size τ λ / (λ + n_i w_i) (0 with λ = 0, where the shown field is
    as wide as the results say).  Over the same seeded sample of players as the
    field means.  With fewer than :data:`MIN_FIELD` players who have played, the
    refit's prior (:data:`STRENGTH_PRIOR_PRECISION`) and τ = 0.  Under the variance rule the shown
    strengths' noise is the players' ``variance`` (mathematics §3b).
    """
    C = as_vectors(C, "C")
    played = np.asarray(played, dtype=np.float64)
    if np.count_nonzero(played) < MIN_FIELD:
        return STRENGTH_PRIOR_PRECISION, 0.0, 0.0
    spread = results_spread(played, score, sample)
    if spread is None or len(C) < 2:
        return STRENGTH_PRIOR_PRECISION, 0.0, 0.0
    tau, bound = spread
    ref = _reference(len(C), sample, sample)
    shown = float(np.var(hodge_strength_against(C[ref], field_mean(C))))
    if max(bound * bound, shown) <= 0.0:
        return STRENGTH_PRIOR_PRECISION, 0.0, 0.0
    prior = 1.0 / max(bound * bound, shown)
    w = field_information(C, sample, sample, rows=ref)
    if variance is None:
        noise = float(np.mean(_noise(C, played[ref], w, rate, ref, prior)))
    else:
        noise = float(np.mean(np.asarray(variance, dtype=np.float64)[ref]))
    signal = np.sqrt(max(shown - noise, 0.0))
    if tau <= signal:
        return prior, tau, 0.0
    return prior, tau, _shrinkage(played[ref] * w, signal / tau)


def _shrinkage(nw: Array, mean: float) -> float:
    """The λ ≥ 0 with mean(nw / (λ + nw)) = ``mean`` (< 1), by bisection on log λ: a deterministic 60 steps."""
    if mean <= 0.0 or not np.any(nw > 0):
        return np.inf
    lo, hi = -30.0, 30.0
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if np.mean(nw / (np.exp(mid) + nw)) > mean else (lo, mid)
    return float(np.exp(0.5 * (lo + hi)))


@functools.lru_cache(maxsize=64)
def _reference(m: int, max_exact: int, sample: int, seed: int = 0) -> NDArray[np.intp]:
    """The players a field mean is over (:func:`_field_mean`): all of them up to ``max_exact``, else a seeded
    sample of ``sample`` (drawn once per field size: a page of a large field reads it at every request)."""
    ref = np.arange(m) if m <= max_exact else np.sort(np.random.default_rng(seed).choice(m, size=sample, replace=False))
    ref.flags.writeable = False
    return ref


def _advantages(players: Array, ref: Array) -> Array:
    """The block of advantages a_ij, players × ref, each summed in a fixed order: a player's value is the same
    bits whichever other players share its block (a page and a whole leaderboard agree exactly)."""
    return rowdot(players[:, None, :], omega_apply(ref)[None, :, :])


def _field_mean(C: ArrayLike, kernel, max_exact: int, sample: int, seed: int, rows: ArrayLike | None = None) -> Array:
    """Mean over j ≠ i of kernel(c_i, c_j) for every player i (or the ``rows`` given): exact up to ``max_exact``
    players, else over a seeded reference sample of ``sample``.  ``kernel(players, ref)`` gives the block of
    values of players × ref.  With fewer than two players, each player's own value (there is no field yet)."""
    # Only the rows asked for and the reference players are read (and checked): a page of a million players
    # costs its rows and the sample, not a pass over everyone.
    C = C if isinstance(C, np.ndarray) else as_vectors(C, "C")
    m = len(C)
    rows = np.arange(m) if rows is None else np.asarray(rows, dtype=np.int64)
    players = as_vectors(C[rows], "C")
    if m < 2:
        return _diagonal(players, kernel)
    ref = _reference(m, max_exact, sample, seed)
    field = as_vectors(C[ref], "C")
    total = np.empty(len(rows))
    block = max(1, 2_000_000 // len(ref))
    for lo in range(0, len(rows), block):
        total[lo : lo + block] = kernel(players[lo : lo + block], field).sum(axis=1)
    own = np.isin(rows, ref)
    total[own] -= _diagonal(players[own], kernel)  # a player in the reference set, taken out of their own mean
    return total / (len(ref) - own)


def _diagonal(C: Array, kernel, block: int = 1000) -> Array:
    """kernel(c_i, c_i) for every row, a block at a time."""
    parts = [kernel(C[lo : lo + block], C[lo : lo + block]).diagonal() for lo in range(0, len(C), block)]
    return np.concatenate(parts) if parts else np.zeros(0)


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
