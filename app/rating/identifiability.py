"""Identifiability: can the data pin down the advantage matrix? (mathematics §10; [Guide] §7, [Intransitivity] §5)

* Directions of player i ([Guide] Theorem 2): for every pair term between i's
  side and a side b, +ΩC_b if i's side finished ahead, -ΩC_b if behind, both on
  a tie.  Moving c_i along a direction raises that term's likelihood.
* Comparable (Theorem 2): the cone of the directions is all of R^{2k}, i.e. the
  directions W span R^{2k} and Wλ = 0 for some λ with every λ_t ≥ 1 (one
  non-negative least-squares problem).  Otherwise there is a direction v with
  wᵀv ≥ 0 for every direction w (Farkas), along which the likelihood never
  falls: the witness reported for the player.
* Algorithm 1 (sufficient for a unique maximum-likelihood A): a clique of 2k+1
  players with results both ways between every two of them, grown by any
  player comparable to it.  The paper refits after every addition; here one set
  of vectors (a refit of the whole log, or the current ratings) is used
  throughout, the approximation mathematics §10 accepts.
* Necessary condition: every player comparable to all the others.
* Elo side ([Intransitivity]): the Bradley-Terry MLE is unique iff the directed "beat"
  graph is strongly connected; its strongly connected components are reported.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.sparse import coo_matrix, csr_matrix
from scipy.special import expit

from app.rating.game_log import GameLog
from app.rating.model import Array, omega_apply

#: Numerical rank tolerance of the directions, relative to their largest singular value.
RANK_TOL = 1e-9
#: A residual below this (relative to the directions' size) means the cone covers R^dim.
NNLS_TOL = 1e-9
#: Search effort for a (2k+1)-clique before giving up (the problem is NP-hard in general).
CLIQUE_STEPS = 200_000


@dataclass(frozen=True)
class Comparability:
    comparable: bool
    reason: str
    direction: Array | None = None
    #: The directions span R^dim (if not, -direction is an escape too).
    spans: bool = True


def comparable(W: ArrayLike, dim: int) -> Comparability:
    """Theorem 2 for the directions W (one per column, ``dim`` rows): does their cone cover R^dim?"""
    # imported on first use: a serving worker rarely needs it (memory)
    from scipy.linalg import null_space
    from scipy.optimize import nnls

    W = np.asarray(W, dtype=np.float64).reshape(dim, -1)
    t = W.shape[1]
    if t == 0:
        return Comparability(False, "no results against the comparison set", _unit(dim), False)
    s = np.linalg.svd(W, compute_uv=False)
    if s[0] == 0 or np.sum(s > RANK_TOL * s[0]) < dim:
        v = null_space(W.T, rcond=RANK_TOL)
        direction = v[:, 0] if v.shape[1] else _unit(dim)
        return Comparability(
            False, f"results span only {int(np.sum(s > RANK_TOL * s[0]))} of {dim} dimensions", direction, False
        )
    # Wλ = 0 with λ ≥ 1: write λ = 1 + μ, μ ≥ 0, and minimise |Wμ + W1| (non-negative least squares).
    # It is 0 exactly when the cone covers R^dim.  Otherwise the residual r = Wλ* is a Farkas witness:
    # the optimality conditions give Wᵀr ≥ 0, and Σ λ*_t w_tᵀr = |r|² > 0 with every λ*_t ≥ 1, so the
    # likelihood rises along r for ever.  One small NNLS, cheaper than the two linear programs of a direct test.
    pull = W.sum(axis=1)
    mu, residual = nnls(W, -pull)
    if residual <= NNLS_TOL * max(1.0, float(np.abs(W).sum())):
        return Comparability(True, "comparable")
    r = W @ mu + pull
    return Comparability(False, "every result pushes the rating the same way in some direction", r / np.linalg.norm(r))


def _unit(dim: int) -> Array:
    e = np.zeros(dim)
    e[0] = 1.0
    return e


@dataclass(frozen=True)
class Results:
    """A log's pair terms between single players: who met whom, with which outcome (from the first's view)."""

    first: NDArray[np.int32]
    second: NDArray[np.int32]
    outcome: NDArray[np.float32]

    @classmethod
    def of(cls, log: GameLog) -> Results:
        """Every distinct result of the log; a team's members each meet each member of the other side.

        Who beat whom and who drew with whom, each once however often it
        happened (a repeat adds no direction, mathematics §10), summed into
        sparse matrices a chunk of member pairs at a time: memory grows with the
        distinct pairs of players, not with the member pairs (two million in a
        game of 64 teams of 32).  Kept as 4-byte player indices and outcomes.
        """
        n = log.n_players_needed
        won = drew = csr_matrix((n, n), dtype=np.float32)
        for term, x, y in log.member_pairs():
            s = log.pair_outcome[term]
            win, loss, tie = s > 0.5, s < 0.5, s == 0.5
            won = won + _ones(np.concatenate([x[win], y[loss]]), np.concatenate([y[win], x[loss]]), n)
            drew = drew + _ones(np.minimum(x[tie], y[tie]), np.maximum(x[tie], y[tie]), n)
        won, drew = won.tocoo(), drew.tocoo()
        return cls(
            np.concatenate([won.row, drew.row]).astype(np.int32),
            np.concatenate([won.col, drew.col]).astype(np.int32),
            np.concatenate([np.ones(won.nnz, np.float32), np.full(drew.nnz, 0.5, np.float32)]),
        )

    @classmethod
    def of_player(cls, log: GameLog, player: int) -> Results:
        """The distinct results of one player: each member of every side that met the player's side, with the
        player's score against them (only the player's own rows are complete: :meth:`directions` of ``player``).

        Linear in the games' sizes: a game of 64 teams of 32 adds the 2,016 players
        the player met, where :meth:`of` walks its two million member pairs.
        """
        sides = np.unique(log.member_side[log.member_player == player])
        mine_a, mine_b = np.isin(log.pair_a, sides), np.isin(log.pair_b, sides)
        met = np.concatenate([log.pair_b[mine_a], log.pair_a[mine_b]])
        score = np.concatenate([log.pair_outcome[mine_a], 1.0 - log.pair_outcome[mine_b]])
        order = np.argsort(log.member_side, kind="stable")
        members = log.member_player[order]
        start = np.searchsorted(log.member_side[order], np.arange(len(log.side_size) + 1))
        size = (start[met + 1] - start[met]).astype(np.int64)
        offset = np.arange(int(size.sum())) - np.repeat(np.cumsum(size) - size, size)
        return cls.against(player, members[np.repeat(start[met], size) + offset], np.repeat(score, size))

    @classmethod
    def against(cls, player: int, opponent: ArrayLike, score: ArrayLike) -> Results:
        """The distinct results of ``player`` from each of their meetings: the opponent met and the player's score
        (1 won, ½ drew, 0 lost), as :meth:`of_player` gives them."""
        code = np.sign(np.asarray(score, dtype=np.float64) - 0.5).astype(np.int64) + 1  # 0 lost, 1 drew, 2 won
        distinct = np.unique(np.asarray(opponent, dtype=np.int64) * 3 + code)
        return cls(
            np.full(len(distinct), player, dtype=np.int32),
            (distinct // 3).astype(np.int32),
            ((distinct % 3) / 2).astype(np.float32),
        )

    @cached_property
    def _by_player(self) -> tuple[NDArray[np.intp], NDArray[np.int32], NDArray[np.float32]]:
        """Every result seen from each side, grouped by player: (start of each player's rows, opponent, score)."""
        me = np.concatenate([self.first, self.second])
        order = np.argsort(me, kind="stable")
        other = np.concatenate([self.second, self.first])[order]
        score = np.concatenate([self.outcome, 1 - self.outcome])[order]
        start = np.searchsorted(me[order], np.arange(int(me.max(initial=-1)) + 2))
        return start, other, score

    def directions(self, OC: Array, player: int, among: NDArray[np.bool_] | None = None) -> Array:
        """Player's directions (columns) against opponents in the boolean mask ``among`` (default: all).

        ``OC`` is Ω applied to every player's vector.  Only the player's own
        results are read, so the check of every player is linear in the log.
        """
        start, other, score = self._by_player
        if player + 1 >= len(start):
            return np.zeros((OC.shape[1], 0))
        rows = slice(start[player], start[player + 1])
        opponent, s = other[rows], score[rows]
        if among is not None:
            keep = among[opponent]
            opponent, s = opponent[keep], s[keep]
        o = OC[opponent]  # ΩC of each opponent, and my score against them
        return np.vstack([o[s > 0.5], -o[s < 0.5], o[s == 0.5], -o[s == 0.5]]).T


@dataclass
class Identifiability:
    unique: bool
    clique: list[int]
    comparable: list[int]
    #: Players outside ``comparable``: those failing the necessary condition, with a
    #: direction in which the data do not pin them down, then those Algorithm 1 missed.
    not_comparable: list[dict] = field(default_factory=list)
    components: list[list[int]] = field(default_factory=list)


def _ones(rows: NDArray[np.integer], cols: NDArray[np.integer], n: int) -> csr_matrix:
    return csr_matrix((np.ones(len(rows), np.float32), (rows, cols)), shape=(n, n))


def both_ways(results: Results, n_players: int) -> csr_matrix:
    """Sparse boolean m × m, symmetric: i and j each beat the other at least once, or drew (memory grows with
    the pairs that met, not with m²)."""
    s = results.outcome
    rows = np.concatenate([results.first[s >= 0.5], results.second[s <= 0.5]])
    cols = np.concatenate([results.second[s >= 0.5], results.first[s <= 0.5]])
    won = _ones(rows, cols, n_players)
    both = won.multiply(won.T).tocsr().astype(bool)
    both.eliminate_zeros()
    both.sort_indices()
    return both


def find_clique(adjacent: ArrayLike | csr_matrix, size: int, steps: int = CLIQUE_STEPS) -> list[int] | None:
    """A clique of ``size`` players in the (sparse or dense) boolean graph, by backtracking from the players of
    highest degree first, each step among the neighbours of the last one taken; None if there is none or the
    search runs out of ``steps``."""
    graph = csr_matrix(adjacent, dtype=bool)
    graph.eliminate_zeros()
    start, neighbours = graph.indptr, graph.indices
    degree = np.diff(start)
    order = np.argsort(-degree, kind="stable")
    order = order[degree[order] >= size - 1]
    place = np.full(len(degree), len(degree))
    place[order] = np.arange(len(order))
    budget = [steps]

    def later(v: int, among: set[int] | None) -> list[int]:
        """v's neighbours after it in the order (and in ``among``), in the order."""
        found = neighbours[start[v] : start[v + 1]]
        found = found[place[found] > place[v]]
        found = found[np.argsort(place[found], kind="stable")].tolist()
        return found if among is None else [u for u in found if u in among]

    def extend(clique: list[int], candidates: list[int]) -> list[int] | None:
        if len(clique) == size:
            return clique
        for n, v in enumerate(candidates):
            budget[0] -= 1
            if budget[0] < 0 or len(clique) + len(candidates) - n < size:
                return None
            found = extend([*clique, v], later(v, set(candidates[n + 1 :]) if clique else None))
            if found is not None:
                return found
        return None

    return extend([], order.tolist())


def strongly_connected(results: Results, n_players: int) -> list[list[int]]:
    """Strongly connected components of the directed "beat" graph (a draw is an edge both ways), largest first."""
    # imported on first use (memory), as above
    from scipy.sparse.csgraph import connected_components

    s = results.outcome
    src = np.concatenate([results.first[s >= 0.5], results.second[s <= 0.5]])
    dst = np.concatenate([results.second[s >= 0.5], results.first[s <= 0.5]])
    graph = coo_matrix((np.ones(len(src)), (src, dst)), shape=(n_players, n_players))
    _, labels = connected_components(graph, directed=True, connection="strong")
    groups: dict[int, list[int]] = {}
    for player, label in enumerate(labels.tolist()):
        groups.setdefault(label, []).append(player)
    return sorted(groups.values(), key=lambda g: (-len(g), g[0]))


def identifiability(C: ArrayLike, log: GameLog, n_players: int) -> Identifiability:
    """Algorithm 1, the necessary condition with witnesses, and the SCCs (mathematics §10)."""
    C = np.asarray(C, dtype=np.float64)
    dim = C.shape[1]
    results = Results.of(log)
    OC = omega_apply(C)
    clique = find_clique(both_ways(results, n_players), dim + 1) or []
    inside = _grow(results, OC, clique, n_players)
    failing = []
    for i in np.flatnonzero(~inside).tolist():  # a player comparable to part of the field is to all of it
        check = comparable(results.directions(OC, i), dim)  # a player never meets itself
        if not check.comparable:
            direction = None if check.direction is None else check.direction.tolist()
            failing.append({"player": i, "reason": check.reason, "direction": direction})
        else:
            reason = "comparable to the others, but not reachable from a clique by Algorithm 1"
            failing.append({"player": i, "reason": reason, "direction": None})
    return Identifiability(
        unique=bool(clique) and bool(inside.all()),
        clique=sorted(clique),
        comparable=np.flatnonzero(inside).tolist(),
        not_comparable=failing,
        components=strongly_connected(results, n_players),
    )


def _grow(results: Results, OC: Array, clique: list[int], n_players: int) -> NDArray[np.bool_]:
    """Algorithm 1's comparable set: the clique, grown by every player comparable to the set so far.

    Adding players only adds directions, so the set grown is the same in any
    order; a player is checked again only when one of their opponents has
    joined, and only if they have at least 2k + 1 directions into the set
    (fewer cannot cover R^{2k}): the work follows the results, not players².
    """
    dim = OC.shape[1]
    inside = np.zeros(n_players, dtype=bool)
    inside[clique] = True
    start, other, score = results._by_player
    weight = np.where(score == 0.5, 2, 1)  # a draw gives two directions

    def opponents(i: int) -> NDArray[np.int32]:
        return other[start[i] : start[i + 1]] if i + 1 < len(start) else other[:0]

    pending = deque(sorted({int(j) for i in clique for j in opponents(i)} - set(clique)))
    queued = np.zeros(n_players, dtype=bool)
    queued[list(pending)] = True
    while pending:
        i = pending.popleft()
        queued[i] = False
        if inside[i] or i + 1 >= len(start):
            continue
        rows = slice(start[i], start[i + 1])
        if weight[rows][inside[other[rows]]].sum() < dim + 1:
            continue
        if comparable(results.directions(OC, i, inside), dim).comparable:
            inside[i] = True
            fresh = np.unique(opponents(i))
            fresh = fresh[~inside[fresh] & ~queued[fresh]]
            queued[fresh] = True
            pending.extend(fresh.tolist())
    return inside


def comparing_opponents(
    C: ArrayLike, player: int, W: ArrayLike, limit: int = 10, among: ArrayLike | None = None
) -> tuple[NDArray[np.intp], Array] | None:
    """The opponents whose games would best make ``player`` comparable, and how much each would help.

    ``W`` are the player's directions (columns, :meth:`Results.directions`).  If
    their cone does not cover R^{2k}, the check returns a witness v with wᵀv ≥ 0
    for every direction w: the rating can run off along v.  A game against j
    adds the direction +Ωc_j if the player wins and -Ωc_j if they lose, so it
    closes that escape when the outcome's direction points against v.  Each
    opponent's gain is the |cosine| between v and Ωc_j times the probability of
    the closing outcome (when the directions do not even span R^{2k}, -v is an
    escape too and either outcome helps); the largest first.  None if the
    player is comparable already.  ``among`` (a boolean mask) limits the opponents, e.g. to active players.
    """
    C = np.asarray(C, dtype=np.float64)
    check = comparable(W, C.shape[1])
    if check.comparable:
        return None
    assert check.direction is not None  # a check that fails always carries its witness
    OC = omega_apply(C)
    lengths = np.linalg.norm(OC, axis=1)
    cosine = np.divide(OC @ check.direction, lengths, out=np.zeros(len(C)), where=lengths > 0)
    p_win = expit(OC @ C[player])  # P(player beats j) = σ(c_iᵀ Ω c_j)
    gain = np.abs(cosine) * (1.0 if not check.spans else np.where(cosine < 0, p_win, 1.0 - p_win))
    allowed = np.ones(len(C), dtype=bool) if among is None else np.asarray(among, dtype=bool).copy()
    allowed[player] = False
    gain[~allowed] = -np.inf
    order = np.lexsort((np.arange(len(C)), -gain))[: min(limit, int(allowed.sum()))]
    return order, gain[order]
