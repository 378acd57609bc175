"""Analysis of the advantage matrix A = C Ω Cᵀ (mathematics §12; [Intransitivity] §7, [Limitations] §3).

* Hodge decomposition A = T + cyclic, T_ij = s_i - s_j with s the Hodge strength
  (mathematics §8); the norms come from G = CᵀC (2k × 2k) without forming A.
* The intransitivity measure of [Intransitivity] eq. 8, read as in mathematics §12:
  I = (1 + ‖cyclic‖_F) / (1 + ‖T‖_F): 1 for A = 0, below 1 when the transitive
  part dominates, above 1 when cycles do.
* The canonical disc form D ([Limitations]'s disc decomposition): D Ω Dᵀ = A, the same
  D for every C related by a symplectic map, one 2-D disc game per block.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy.sparse import coo_matrix

from app.rating.elo import PairCounts
from app.rating.model import Array, as_vectors, omega
from app.rating.strength import hodge_strength

#: A block whose mean point is shorter than this fraction of its longest point counts as centred (cyclic disc).
CENTRED = 1e-6


@dataclass(frozen=True)
class Hodge:
    """Frobenius norms of A and of its transitive and cyclic parts, and I (mathematics §12)."""

    norm: float
    transitive_norm: float
    cyclic_norm: float
    #: False when the least-squares fit of an empirical transitive part stopped at its iteration bound.
    converged: bool = True

    @property
    def intransitivity(self) -> float:
        return (1.0 + self.cyclic_norm) / (1.0 + self.transitive_norm)


def hodge_norms(C: ArrayLike) -> Hodge:
    """‖A‖² = tr(Ω G Ωᵀ G), ‖T‖² = 2m Σ s_i² - 2(Σ s_i)², ‖cyclic‖² = ‖A‖² - ‖T‖²: O(mk²)."""
    C = as_vectors(C, "C")
    m = len(C)
    if m == 0:
        return Hodge(0.0, 0.0, 0.0)
    W = omega(C.shape[1] // 2)
    G = C.T @ C
    total = float(np.trace(W @ G @ W.T @ G))
    s = hodge_strength(C)
    transitive = 2.0 * m * float(np.sum(s * s)) - 2.0 * float(np.sum(s)) ** 2
    return Hodge(np.sqrt(max(total, 0.0)), np.sqrt(max(transitive, 0.0)), np.sqrt(max(total - transitive, 0.0)))


def hodge_norms_of_matrix(A: ArrayLike) -> Hodge:
    """The same for an explicit skew-symmetric matrix (e.g. logit P), O(m²)."""
    A = np.asarray(A, dtype=np.float64)
    s = A.mean(axis=1)
    T = s[:, None] - s[None, :]
    return Hodge(float(np.linalg.norm(A)), float(np.linalg.norm(T)), float(np.linalg.norm(A - T)))


#: Iterations of the least-squares fit of the empirical transitive part: each costs O(pairs), and a ladder whose
#: players meet only near neighbours (a long path of strengths) converges slowly; the bound keeps the report
#: of a million-player ladder within seconds, and the report says when it was reached.
LSQR_ITERATIONS = 1000


def empirical_hodge(i: ArrayLike, j: ArrayLike, wins_i: ArrayLike, games: ArrayLike, n_players: int) -> Hodge | None:
    """Hodge norms of the empirical logit win-rate matrix on the observed pairs (mathematics §12).

    ``wins_i[t]`` of ``games[t]`` between ``i[t]`` < ``j[t]`` (draws count half).
    Rates are smoothed by half a win each way (finite logits).  On a partial
    graph the transitive part is the least-squares fit A_ij ≈ s_i - s_j over the
    observed pairs (combinatorial Hodge theory); the norms count each pair both
    ways, as for a full matrix.  None when fewer than 3 pairs are observed.  The fit is iterative, to
    :data:`LSQR_ITERATIONS` at most (``converged`` False then).
    """
    i, j = np.asarray(i, dtype=np.int64), np.asarray(j, dtype=np.int64)
    if len(i) < 3:
        return None
    wins_i, games = np.asarray(wins_i, dtype=np.float64), np.asarray(games, dtype=np.float64)
    a = np.log((wins_i + 0.5) / (games - wins_i + 0.5))
    rows = np.arange(len(i))
    D = coo_matrix(
        (np.concatenate([np.ones(len(i)), -np.ones(len(i))]), (np.concatenate([rows, rows]), np.concatenate([i, j]))),
        shape=(len(i), n_players),
    ).tocsr()
    # imported on first use: a serving worker rarely needs it (memory)
    from scipy.sparse.linalg import lsqr

    s, stop = lsqr(D, a, atol=1e-10, btol=1e-10, iter_lim=LSQR_ITERATIONS)[:2]
    t = s[i] - s[j]
    norm, transitive_norm, cyclic_norm = (float(np.sqrt(2 * np.sum(x * x))) for x in (a, t, a - t))
    return Hodge(norm, transitive_norm, cyclic_norm, converged=stop != 7)  # 7: the iteration bound


def empirical_hodge_of(counts: PairCounts) -> tuple[Hodge | None, int]:
    """:func:`empirical_hodge` from win counts (:func:`app.rating.elo.pair_counts`), and the pairs observed."""
    m = counts.n_players
    lo, hi = np.minimum(counts.winner, counts.loser), np.maximum(counts.winner, counts.loser)
    pairs, inverse = np.unique(lo * m + hi, return_inverse=True)
    games = np.bincount(inverse, weights=counts.wins)
    wins_lo = np.bincount(inverse, weights=counts.wins * (counts.winner == lo))
    return empirical_hodge(pairs // m, pairs % m, wins_lo, games, m), len(pairs)


@dataclass(frozen=True)
class Block:
    """One disc game of the canonical form (mathematics §12, [Limitations] Theorem 2)."""

    sigma: float
    share: float
    transitive: bool


@dataclass(frozen=True)
class Canonical:
    """Canonical coordinates D (m × 2k; block l is columns 2l, 2l+1 = (u, v)) and the blocks, largest first."""

    D: Array
    blocks: list[Block]

    def disc_strength(self) -> Array:
        """ũ_i = u_i / v_i of the dominant block, when it is transitive ([Limitations] §3.2)."""
        if not self.blocks or not self.blocks[0].transitive:
            raise ValueError("the dominant disc is cyclic: there is no ordering of the players")
        return self.D[:, 0] / self.D[:, 1]


def canonical(C: ArrayLike) -> Canonical:
    """The canonical disc form of C (mathematics §12).

    C = QR, M = R Ω Rᵀ, real Schur M = U T Uᵀ, D = QU; each 2-column block is
    scaled by sqrt(σ_l) (columns swapped when T's entry is negative), rotated so
    that its mean point lies on the +v axis, and blocks are ordered by σ_l.
    Deviation from mathematics §12: a centred block (cyclic disc) puts its longest point
    on +v, and a transitive block whose mean direction leaves a point at v ≤ 0
    is turned to the bisector of its points' angular span instead, so that every
    v_i > 0 and the strengths u_i / v_i are defined.  Both rules depend on the
    points only, so D is still the same for symplectically related C.
    """
    C = as_vectors(C, "C")
    m, dim = C.shape
    if m < dim:  # fewer players than coordinates: pad with zero rows, drop them after
        C = np.vstack([C, np.zeros((dim - m, dim))])
    # imported on first use: a serving worker rarely needs it (memory)
    from scipy.linalg import qr, schur

    Q, R = qr(C, mode="economic")
    M = R @ omega(dim // 2) @ R.T
    T, U = schur((M - M.T) / 2, output="real")
    D = (Q @ U)[:m]
    total = float(np.sum(T * T))
    blocks, columns = [], []
    for lo in range(0, dim, 2):
        t = T[lo, lo + 1]
        u, v = D[:, lo], D[:, lo + 1]
        if t < 0:
            u, v, t = v, u, -t
        pts = np.sqrt(t) * np.column_stack([u, v])
        pts = _rotate(pts)
        blocks.append(Block(float(t), 2 * t * t / total if total > 0 else 0.0, _transitive(pts)))
        columns.append(pts)
    order = sorted(range(len(blocks)), key=lambda b: -blocks[b].sigma)
    return Canonical(np.hstack([columns[b] for b in order]), [blocks[b] for b in order])


def _rotate(pts: Array) -> Array:
    norms = np.hypot(pts[:, 0], pts[:, 1])
    if norms.max(initial=0.0) == 0.0:
        return pts
    mean = pts.mean(axis=0)
    target = mean if np.hypot(*mean) > CENTRED * norms.max() else pts[np.argmax(norms)]
    out = _turn(pts, target)
    if _transitive(pts) and np.any(out[:, 1] <= 0):
        out = _turn(pts, _span_bisector(pts))
    return out


def _turn(pts: Array, direction: Array) -> Array:
    """Rotate (a symplectic map of the plane) so that ``direction`` points along +v."""
    angle = np.arctan2(direction[0], direction[1])  # from +v towards +u
    c, s = np.cos(angle), np.sin(angle)
    return np.column_stack([c * pts[:, 0] - s * pts[:, 1], s * pts[:, 0] + c * pts[:, 1]])


def _angles(pts: Array) -> Array:
    keep = np.hypot(pts[:, 0], pts[:, 1]) > 0
    return np.sort(np.arctan2(pts[keep, 1], pts[keep, 0]))


def _transitive(pts: Array) -> bool:
    """All nonzero points in one open half-plane through the origin: an angular gap above π."""
    a = _angles(pts)
    if len(a) == 0:
        return False
    gaps = np.diff(np.concatenate([a, [a[0] + 2 * np.pi]]))
    return bool(gaps.max() > np.pi + 1e-12)


def _span_bisector(pts: Array) -> Array:
    a = _angles(pts)
    gaps = np.diff(np.concatenate([a, [a[0] + 2 * np.pi]]))
    g = int(np.argmax(gaps))
    start, width = a[(g + 1) % len(a)], 2 * np.pi - gaps[g]
    mid = start + width / 2
    return np.array([np.cos(mid), np.sin(mid)])
