"""The variance rule: a per-player variance with process noise that sets the size of every step (mathematics §3b).

Every player i carries a variance u_i (logits²) of their strength.  Before
each game it grows by the process noise q and by the drift δ (logits a year)
over the t years since the player's latest earlier game; the game's result then
shrinks it by the game's Fisher information, and sets the size of the player's
normalised mElo step (mathematics §3, [Guide] eqs. 4-5), a Kalman gain.  For a pair
of sides (a, b), with team variances U_a = Σ_{m∈a} u_m / |T_a|² and the pair's
weight w (1/(N-1)):

    u_m ← u_m + q + δ² t                      (before the game)
    I_ab = p_ab (1 - p_ab),   D_ab = 1 + I_ab (U_a + U_b)
    ΔC_m,d = (u_m / |T_a|) f_d Σ_b w (S_ab - p_ab) / (D_ab max(|C_b,d|², n_ab,d / √2)) · Ω C_b,d   (disc d)
    1/u_m ← 1/u_m + Σ_b w I_ab / (|T_a|² (1 + I_ab (U_a + U_b - u_m / |T_a|²)))

A unit step along disc d of Ω C_b moves the pair's logit by |C_b,d|², so disc
d moves the logit by its share f_d of the filter's step (to first order): the
first disc 1 - φ, the others φ / (k - 1) (φ: the rule's ``cycles``).  Near
zero vectors n/√2 takes over and bounds the step by the normalised rule's (§3,
with η = √2 u_m f_d).  The first disc is stepped in the coordinates (x/L, L y),
L = :data:`ELO_GAUGE`, which keep every prediction and on the Elo manifold
c = (θ, 1) move θ and hardly y.  For two
single players this is the scalar simplified Kalman filter of [Kalman]
(vSKF) in the logit, and Glicko's update with one game a rating period
[Glicko] up to its g(RD): the strength moves by u_a (S - p) / (1 + p(1-p)(u_a
+ u_b)) and 1/u_a gains p(1-p) / (1 + p(1-p) u_b).  √2 is the pair norm n at
the centre of the Elo manifold (two players at c = (0, 1), mathematics §1).  A team's variance is
its members' mean's, each member takes its share u_m / |T_a| of the side's
step, so a team of one is the individual and equal members each take the
whole side step (mathematics §6); its information, the share (1/|T_a|)² of the
pair's.  Seats shift p only (mathematics §5).

The variance never reaches 0 (q > 0 is added before every game, and the
information form above only divides by numbers ≥ 1), never grows without a
bound a finite log could reach, and a player who keeps winning keeps moving:
their variance levels off where q balances the information of their games,
near 2√q for even games, instead of shrinking to 0 as 1/n does.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import cast

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import expit

from app.rating.errors import RatingInputError
from app.rating.game_log import IntArray
from app.rating.model import Array, omega_apply, rowdot

#: The pair norm n = √(|c_a|² + |c_b|²) of two players at the centre of the Elo manifold, c = (0, 1): a newcomer's
#: variance is η/√2, and near zero vectors a step is at most the normalised rule's at η = √2 u.
MANIFOLD_NORM = math.sqrt(2.0)


#: The Elo disc is stepped in the coordinates (x / L, L y): a change of coordinates that keeps every prediction
#: (diag(1/L, L) keeps the disc's form cᵢᵀ Ω cⱼ) and on the Elo manifold c = (θ, 1) moves θ by the filter's step
#: and the second coordinate by a part O(θ / L⁴) of it (mathematics §3b).
ELO_GAUGE = 10.0


def disc_steps(ca: Array, cb: Array, oca: Array, ocb: Array, kick: Array, shares: Array) -> tuple[Array, Array]:
    """The displacements of sides a and b (before each member's share of them) for pairs of side vectors ``ca``,
    ``cb`` (rows, or a leading axis of rules), Ω of them ``oca``, ``ocb``, and each pair's ``kick`` w (S - p) / D:
    disc d moves the pair's logit by its share ``shares[..., d]`` of the kick (``shares``: one row, a row per rule
    of the leading axis, or a row per pair), through the Elo disc's coordinates
    of :data:`ELO_GAUGE` (to first order; near zero vectors by at most a normalised step's, mathematics §3b)."""
    gauge = np.ones(ca.shape[-1])
    gauge[0], gauge[1] = 1.0 / ELO_GAUGE, ELO_GAUGE
    ga, gb, oga, ogb = ca * gauge, cb * gauge, oca / gauge, ocb / gauge  # Ω (S c) = S⁻¹ Ω c for S = diag(1/L, L)
    da, db = np.empty_like(ca), np.empty_like(cb)
    for d in range(ca.shape[-1] // 2):
        cols = slice(2 * d, 2 * d + 2)
        na2, nb2 = rowdot(ga[..., cols], ga[..., cols]), rowdot(gb[..., cols], gb[..., cols])
        # A unit step along Ω C_b moves the disc's logit by |C_b|²: divided by it, by the kick.  Near zero vectors
        # n/√2 takes over.  Both 0 only if both sides' disc is exactly zero; then Ω C_b = 0 too.
        floor = np.sqrt(na2 + nb2) / MANIFOLD_NORM
        scale_a, scale_b = np.maximum(nb2, floor), np.maximum(na2, floor)
        share = shares[..., d]  # one for all, one per rule (a leading axis) or one per pair
        part = kick * (share[..., None] if 0 < np.ndim(share) < np.ndim(kick) else share)
        coef_a = np.divide(part, scale_a, out=np.zeros_like(part), where=scale_a > 0)
        coef_b = np.divide(part, scale_b, out=np.zeros_like(part), where=scale_b > 0)
        da[..., cols] = coef_a[..., None] * ogb[..., cols]
        db[..., cols] = -coef_b[..., None] * oga[..., cols]
    return da / gauge, db / gauge  # back: S⁻¹ Δ


@dataclass(frozen=True)
class VarianceRule:
    """A newcomer's variance ``start`` (logits², > 0), the process ``noise`` q added before every game for each
    other side the player meets (logits², > 0: a rule with none could freeze a player) and the ``drift`` δ (logits
    a year, ≥ 0) whose square every year away adds."""

    start: float
    noise: float
    drift: float = 0.0
    #: The share φ of each step the cyclic discs (the second disc on) take, the Elo disc the rest (k = 1: all).
    cycles: float = 0.0

    def __post_init__(self) -> None:
        for name, low in (("start", 0.0), ("noise", 0.0)):
            value = _number(getattr(self, name), name)
            if not value > low:
                raise RatingInputError(name, f"must be a finite number > 0, got {getattr(self, name)!r}")
            object.__setattr__(self, name, value)
        drift = _number(self.drift, "drift")
        if drift < 0:
            raise RatingInputError("drift", f"must be a finite number >= 0, got {self.drift!r}")
        object.__setattr__(self, "drift", drift)
        cycles = _number(self.cycles, "cycles")
        if not 0.0 <= cycles < 1.0:
            raise RatingInputError("cycles", f"must be a number >= 0 and < 1, got {self.cycles!r}")
        object.__setattr__(self, "cycles", cycles)

    def shares(self, k: int) -> Array:
        """Each disc's share of a step: 1 - φ for the Elo disc, φ / (k - 1) for each other (k = 1: all)."""
        if k == 1:
            return np.ones(1)
        return np.array([1.0 - self.cycles] + [self.cycles / (k - 1)] * (k - 1))

    @classmethod
    def from_eta(cls, eta: float, noise: float, drift: float = 0.0, cycles: float = 0.0) -> VarianceRule:
        """The rule whose newcomer steps with η against an equally new opponent before any information:
        u₀ = η / √2.  η must be > 0 (the step rule takes 0: ratings that stand still)."""
        if not _number(eta, "eta") > 0:
            raise RatingInputError(
                "eta", f"must be > 0 under the variance rule (a newcomer's variance is η/√2), got {eta!r}"
            )
        return cls(eta / MANIFOLD_NORM, noise, drift, cycles)

    def growth(self, away: ArrayLike, opponents: ArrayLike = 1.0) -> Array:
        """q (N - 1) + δ² t for each time away t (years; NaN, none, and negative count 0) before a game where the
        player meets ``opponents`` = N - 1 other sides (the noise is per comparison)."""
        t = np.asarray(away, dtype=np.float64)
        t = np.where(t > 0, t, 0.0)
        return self.noise * np.asarray(opponents, dtype=np.float64) + (self.drift * self.drift) * t


def _number(value: object, name: str) -> float:
    try:
        out = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError) as exc:
        raise RatingInputError(name, "must be a number") from exc
    if not math.isfinite(out):
        raise RatingInputError(name, f"must be finite, got {value!r}")
    return out


def time_away(
    member_player: IntArray, member_time: ArrayLike | None, n_players: int, start_time: ArrayLike | None = None
) -> tuple[Array, Array]:
    """Each membership's years since its player's latest earlier game (0 for a first game, a game dated before
    it, or no times), and every player's latest game time after the log (NaN: none).

    ``member_time`` are the memberships' game times in years, in log order (None: undated, all 0);
    ``start_time`` each player's latest game time before the log (NaN: none).  A player's latest time is the
    largest so far, so a game dated earlier than one already played does not move it back.
    """
    player = np.asarray(member_player, dtype=np.int64)
    last = np.full(n_players, np.nan) if start_time is None else np.array(start_time, dtype=np.float64)
    if member_time is None:
        return np.zeros(len(player)), last
    time = np.asarray(member_time, dtype=np.float64)
    order = np.argsort(player, kind="stable")  # each player's memberships together, in log order
    sp, st = player[order], time[order]
    first = np.r_[True, sp[1:] != sp[:-1]] if len(sp) else np.zeros(0, dtype=bool)
    # The latest time before each membership: the start's for a player's first, else the running max of theirs.
    group = np.cumsum(first) - 1
    running = _group_fmax_accumulate(st, group)
    prev = np.empty(len(st))
    prev[first] = last[sp[first]]
    later = ~first
    prev[later] = np.fmax(running[np.flatnonzero(later) - 1], last[sp[later]])
    away = np.zeros(len(player))
    gap = st - prev
    away[order] = np.where(gap > 0, gap, 0.0)  # NaN (no earlier game or no time) and negative: 0
    if len(sp):
        ends = np.flatnonzero(np.r_[first[1:], True])
        last[sp[ends]] = np.fmax(last[sp[ends]], running[ends])
    return away, last


def _group_fmax_accumulate(values: Array, group: IntArray) -> Array:
    """The running maximum (NaN ignored) of ``values`` within each run of equal ``group`` (sorted)."""
    out = values.copy()
    if not len(out):
        return out
    starts = np.flatnonzero(np.r_[True, group[1:] != group[:-1]])
    bounds = np.r_[starts, len(out)]
    for lo, hi in zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True):
        out[lo:hi] = np.fmax.accumulate(out[lo:hi])
    return out


def step_variance(
    C: Array,
    V: Array,
    member_player: IntArray,
    member_side: IntArray,
    side_size: Array,
    pair_a: IntArray,
    pair_b: IntArray,
    pair_outcome: Array,
    pair_shift: Array,
    pair_weight: Array,
    growth: Array,
    shares: Array,
) -> Array:
    """Apply games that share no player under the variance rule, in place on the rows of ``C`` and ``V``; return
    p_ab per pair.

    The arguments are :func:`app.rating.update.step_disjoint`'s, with ``V`` every player's variance and
    ``growth`` each membership's q + δ² t (:meth:`VarianceRule.growth`) and ``shares`` each disc's share of a
    step (:meth:`VarianceRule.shares`).  All terms use the pre-game vectors and
    the grown variances (a simultaneous update).
    """
    n_sides = len(side_size)
    u = V[member_player] + growth
    # Σ u_m over each side's members (a weighted bincount is float64; NumPy's stub says intp, hence the cast)
    total = cast(Array, np.bincount(member_side, weights=u, minlength=n_sides))
    size2 = side_size * side_size
    U = total / size2
    cm = C[member_player]
    side = np.empty((n_sides, C.shape[1]))
    for col in range(C.shape[1]):
        side[:, col] = np.bincount(member_side, weights=cm[:, col], minlength=n_sides)
    side /= side_size[:, None]
    ca, cb = side[pair_a], side[pair_b]
    oca, ocb = omega_apply(ca), omega_apply(cb)
    p = expit(rowdot(ca, ocb) + pair_shift)
    info = p * (1.0 - p)
    kick = pair_weight * (pair_outcome - p) / (1.0 + info * (U[pair_a] + U[pair_b]))
    da, db = disc_steps(ca, cb, oca, ocb, kick, shares)
    step = np.empty_like(side)
    for col in range(C.shape[1]):
        step[:, col] = np.bincount(pair_a, weights=da[:, col], minlength=n_sides) + np.bincount(
            pair_b, weights=db[:, col], minlength=n_sides
        )
    share = u / side_size[member_side]
    C[member_player] = cm + share[:, None] * step[member_side]
    V[member_player] = u / (
        1.0 + u * _information(u, member_side, side_size, total, pair_a, pair_b, U, info, pair_weight)
    )
    return p


def _information(
    u: Array,
    member_side: IntArray,
    side_size: Array,
    total: Array,
    pair_a: IntArray,
    pair_b: IntArray,
    U: Array,
    info: Array,
    weight: Array,
) -> Array:
    """Σ_b w I_ab / (|T_a|² (1 + I_ab (U_a - u_m/|T_a|² + U_b))) for every member m (of side a): what the game
    tells of m's strength, the uncertainty of everyone else in the pair discounting it (as Glicko's g(RD) and a
    Kalman filter's innovation variance do)."""
    n_sides = len(side_size)
    # Each pair term has two ends (its side, the other side); every member of an end's side takes its part.
    end_side = np.concatenate([pair_a, pair_b])
    end_other = np.concatenate([U[pair_b], U[pair_a]])
    end_info = np.concatenate([info, info])
    end_weight = np.concatenate([weight, weight])
    order = np.argsort(member_side, kind="stable")
    count = np.bincount(member_side, minlength=n_sides)
    first = np.concatenate(([0], np.cumsum(count)[:-1]))
    reps = count[end_side]
    at = np.repeat(first[end_side] - np.concatenate(([0], np.cumsum(reps)[:-1])), reps) + np.arange(int(reps.sum()))
    member = order[at]
    e = np.repeat(np.arange(len(end_side)), reps)
    size2 = side_size[end_side[e]] * side_size[end_side[e]]
    rest = np.maximum(total[end_side[e]] - u[member], 0.0) / size2  # the other members' part of U_a
    term = end_weight[e] * end_info[e] / (size2 * (1.0 + end_info[e] * (rest + end_other[e])))
    return cast(Array, np.bincount(member, weights=term, minlength=len(u)))  # float64 (weighted), as above
