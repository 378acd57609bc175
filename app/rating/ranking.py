"""Leaderboard orders over arrays (mathematics §8, §10): the provisional flag, the (group, score, key) order, a
cursor's place in it, and the first page found without sorting everyone."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray

from app.rating.game_log import IntArray
from app.rating.model import Array
from app.rating.strength import STRENGTH_PRIOR_PRECISION, conservative

#: The fewest results against others that place a rating on the Elo scale, whatever the ladder's k.
ELO_RESULTS = 3


def provisional(comparisons: IntArray, outside: NDArray[np.bool_]) -> NDArray[np.bool_]:
    """Every player's flag: not yet placed against the others (mathematics §10).

    Parameters
    ----------
    comparisons : ndarray of int, shape (m,)
        Each player's results against others.
    outside : ndarray of bool, shape (m,)
        Whether each player is outside the connected field of the latest applied refit.

    Returns
    -------
    ndarray of bool, shape (m,)
        Fewer than :data:`ELO_RESULTS` results against others, or outside.
    """
    return (comparisons < ELO_RESULTS) | outside


def leaderboard_order(score: Array, group: Array, key_rank: Array) -> NDArray[np.intp]:
    """The leaderboard order: by group, then by score from the highest, then by key.

    Parameters
    ----------
    score : ndarray of float, shape (m,)
        Each row's score.
    group : ndarray of int or bool, shape (m,)
        Each row's group (0, or 1 for the provisional players listed below the others).
    key_rank : ndarray of int, shape (m,)
        Each row's place among the keys in sorted order.

    Returns
    -------
    ndarray of int, shape (m,)
        The positions 0..m-1 in that order.
    """
    return np.lexsort((key_rank, -score, group))


def rows_through(
    group: Array, score: Array, keys: NDArray[np.str_], last_group: int, last_score: float, last_key: str
) -> int:
    """How many rows of an order come at or before the row (``last_group``, ``last_score``, ``last_key``).

    Parameters
    ----------
    group, score, keys : ndarray, shape (m,)
        The group, score and key (str) of each row, in the leaderboard order (:func:`leaderboard_order`).
    last_group, last_score, last_key : int, float, str
        The row a page ended with (that row need not be in the order any more).

    Returns
    -------
    int
        Where the next page starts.
    """
    same = (group == last_group) & ((score > last_score) | ((score == last_score) & (keys <= last_key)))
    return int(np.count_nonzero((group < last_group) | same))


def rows_before(
    group: Array, score: Array, keys: NDArray[np.str_], first_group: int, first_score: float, first_key: str
) -> int:
    """How many rows of an order come before the row (``first_group``, ``first_score``, ``first_key``): where the
    page before one that started with it ends (:func:`rows_through`, that row left out)."""
    same = (group == first_group) & ((score > first_score) | ((score == first_score) & (keys < first_key)))
    return int(np.count_nonzero((group < first_group) | same))


def rows_ahead(group: Array, score: Array, key_rank: Array, row: int) -> int:
    """How many rows come before ``row`` in the leaderboard order (:func:`leaderboard_order`): its place, from 0.

    Parameters
    ----------
    group, score, key_rank : ndarray, shape (m,)
        The group, score and key rank of the rows listed, in any order; ``row`` indexes them.
    row : int
        The row whose place is wanted.

    Returns
    -------
    int
        The rows ahead of it, by one pass (no sort).
    """
    g, s, k = group[row], score[row], key_rank[row]
    return int(np.count_nonzero((group < g) | ((group == g) & ((score > s) | ((score == s) & (key_rank < k))))))


def top_rows(score: Array, rows: NDArray[np.intp], count: int) -> NDArray[np.intp]:
    """The ``rows`` whose scores are at or above the ``count``-th highest among them (ties included).

    Parameters
    ----------
    score : ndarray of float, shape (m,)
        Every player's score.
    rows : ndarray of int
        The players to choose from.
    count : int
        How many are wanted (at least 1).

    Returns
    -------
    ndarray of int
        Those of ``rows``, in their order, by one linear selection.
    """
    if len(rows) <= count:
        return rows
    values = score[rows]
    threshold = -np.partition(-values, count - 1)[count - 1]
    return rows[values >= threshold]


def first_rows(score: Array, group: Array, key_rank: Array, listed: NDArray[np.intp], limit: int) -> NDArray[np.intp]:
    """The first ``limit`` of the rows ``listed`` in the leaderboard order, without sorting them all.

    Parameters
    ----------
    score, group, key_rank : ndarray, shape (m,)
        Every player's score, group and key rank (:func:`leaderboard_order`); the selection is by score, so
        ``group`` is one for all the rows listed.
    listed : ndarray of int
        The players the order lists.
    limit : int
        The page size (at least 1).

    Returns
    -------
    ndarray of int
        The rows of the page, in order: those at or above the ``limit``-th score by one linear selection
        (:func:`top_rows`), then those few sorted.
    """
    rows = top_rows(score, listed, limit)
    return rows[leaderboard_order(score[rows], group[rows], key_rank[rows])][:limit]


def conservative_bound(strength: Array, experience: Array) -> Array:
    """An upper bound of every conservative strength: the standard error can be no smaller than with every game
    as informative as a game can be (σ(1 - σ) ≤ 1/4) and no wandering of the online rule.

    Parameters
    ----------
    strength : ndarray of float, shape (m,)
        Every player's Hodge strength (logits).
    experience : ndarray of float, shape (m,)
        Every player's experience (their games' weight).

    Returns
    -------
    ndarray of float, shape (m,)
        The bound, in Elo-equivalent points (:func:`app.rating.strength.conservative`).
    """
    floor = np.sqrt(1.0 / (STRENGTH_PRIOR_PRECISION + experience / 4.0))
    return conservative(strength, floor)


def top_by_bound(
    bound: Array, rows: NDArray[np.intp], count: int, exact: Callable[[NDArray[np.intp]], Array]
) -> tuple[NDArray[np.intp], Array]:
    """The ``rows`` at or above the ``count``-th highest exact score among them, with those scores, computing the
    exact scores of a few more rows than the answer needs.

    Parameters
    ----------
    bound : ndarray of float, shape (m,)
        An upper bound of every player's exact score (:func:`conservative_bound`).
    rows : ndarray of int
        The players to choose from.
    count : int
        How many are wanted; none if 0 or less.
    exact : callable
        ``exact(candidates)``: the exact scores of the players ``candidates``.

    Returns
    -------
    rows : ndarray of int
        The chosen rows (ties at the ``count``-th included), unordered.
    scores : ndarray of float
        Their exact scores.

    Notes
    -----
    The rows with the highest bounds are scored exactly, more of them each round, until the ``count``-th exact
    score is above every bound left out.
    """
    if count <= 0 or len(rows) == 0:
        return rows[:0], np.zeros(0)
    bound = bound[rows]
    take = min(len(rows), 2 * count + 64)
    while True:
        if take < len(rows):
            split = np.argpartition(-bound, take - 1)
            candidates, rest = rows[split[:take]], float(bound[split[take:]].max())
        else:
            candidates, rest = rows, -np.inf
        values = exact(candidates)
        threshold = -np.partition(-values, min(count, len(values)) - 1)[min(count, len(values)) - 1]
        if threshold > rest:  # everyone left out is below the threshold
            keep = values >= threshold
            return candidates[keep], values[keep]
        take = min(len(rows), 4 * take)


def first_rows_by_bound(
    bound: Array,
    group: Array,
    key_rank: Array,
    listed: NDArray[np.intp],
    limit: int,
    exact: Callable[[NDArray[np.intp]], Array],
) -> tuple[NDArray[np.intp], Array]:
    """The first ``limit`` of the rows ``listed`` in the leaderboard order, with their exact scores, scoring
    exactly only a few more rows than the page (:func:`top_by_bound`), group 0 first, then group 1.

    Parameters
    ----------
    bound : ndarray of float, shape (m,)
        An upper bound of every player's exact score.
    group, key_rank : ndarray, shape (m,)
        Every player's group (0 or 1) and key rank (:func:`leaderboard_order`).
    listed : ndarray of int
        The players the order lists.
    limit : int
        The page size (at least 1).
    exact : callable
        ``exact(candidates)``: the exact scores of the players ``candidates``.

    Returns
    -------
    rows : ndarray of int
        The rows of the page, in order.
    scores : ndarray of float
        Their exact scores.
    """
    rows: list[NDArray[np.intp]] = []
    values: list[Array] = []
    for g in (0, 1):  # the established players first, then the provisional ones
        members = listed[group[listed] == g]
        found, scores = top_by_bound(bound, members, limit - sum(map(len, rows)), exact)
        rows.append(found)
        values.append(scores)
    chosen, score = np.concatenate(rows), np.concatenate(values)
    order = leaderboard_order(score, group[chosen], key_rank[chosen])[:limit]
    return chosen[order], score[order]
