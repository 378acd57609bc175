"""The chance of a draw between two sides, fitted on a ladder's own games.

The rating model gives each side an expected score p (mathematics §4): a win
counts 1, a draw 1/2.  Splitting p into a chance to win and a chance to draw
D must keep the expected score: P(win) = p - D/2 and P(loss) = 1 - p - D/2,
so D can be at most 2·min(p, 1 - p) (the *room* for a draw: 1 for an even
game, 0 for a certain one).  The model takes a fixed share ν of that room,

    P(draw) = ν · 2·min(p, 1 - p),

and fits ν on the ladder's two-sided games by moments: the draws seen over
the room the games' forecasts left for them, ν = draws / (room + 2), where the
2 stands for two even games without a draw, so that a first draw among few
games does not promise draws everywhere.  A ladder that has seen no draw
predicts none (``None``: the model is not fitted).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np

#: Even two-sided games without a draw that ν is shrunk by (a prior towards no draws).
PRIOR_ROOM = 2.0


def draw_room(p: np.ndarray | float) -> np.ndarray:
    """2·min(p, 1 - p): the largest chance of a draw that keeps the expected score p."""
    p = np.asarray(p, dtype=float)
    return 2.0 * np.minimum(p, 1.0 - p)


def draw_share(draws: int, room: float) -> float | None:
    """ν fitted on ``draws`` drawn two-sided games and the ``room`` summed over every two-sided game; None when
    no draw has been seen."""
    if draws <= 0:
        return None
    return float(min(1.0, draws / (max(room, 0.0) + PRIOR_ROOM)))


def draw_probability(p: np.ndarray | float, share: float | None) -> np.ndarray | None:
    """P(draw) = ν · 2·min(p, 1 - p) for a side whose expected score is p (None without a fitted ν)."""
    return None if share is None else share * draw_room(p)


def outcome_probabilities(p: float, share: float | None) -> tuple[float, float, float] | None:
    """(P(win), P(draw), P(loss)) of a side whose expected score is p: P(win) = p - D/2, P(loss) = 1 - p - D/2, so
    that P(win) + P(draw)/2 is still p (None without a fitted ν)."""
    if share is None:
        return None
    draw = share * float(draw_room(p))
    return p - draw / 2, draw, 1.0 - p - draw / 2


def two_sided_draws(side_ptr: np.ndarray, actual: np.ndarray, expected: np.ndarray) -> tuple[int, float]:
    """(drawn games, their summed room) over the games of exactly two sides: games given by ``side_ptr`` (game g
    has sides ``side_ptr[g]`` to ``side_ptr[g + 1]``), each side's achieved and expected score."""
    return two_sided_draws_apart(side_ptr, actual, expected, [0, len(side_ptr) - 1])[0]


def two_sided_draws_apart(
    side_ptr: np.ndarray, actual: np.ndarray, expected: np.ndarray, at: Sequence[int]
) -> list[tuple[int, float]]:
    """:func:`two_sided_draws` of each run of games ``at[n]`` to ``at[n + 1]`` (several ladders' games, end to
    end), each room summed over its own games, in order, as alone."""
    two = np.diff(side_ptr) == 2
    first = side_ptr[:-1]
    drawn, room = two & (actual[first] == 0.5), draw_room(expected[first])
    return [
        (int(np.count_nonzero(drawn[lo:hi])), float(room[lo:hi][two[lo:hi]].sum())) for lo, hi in itertools.pairwise(at)
    ]
