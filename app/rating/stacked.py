"""The seats of rules replayed side by side (the rate choice's stacked replays): each rule's seats as a row of one
array, and one level's games learnt by every row at once, as :func:`app.rating.seats.seat_step` would for each.
Shared by the shrinking step's candidates (:mod:`app.rating.tuning`) and the variance rule's
(:mod:`app.rating.variance_tuning`)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from app.rating.errors import RatingInputError
from app.rating.game_log import GameLog, IntArray
from app.rating.model import Array
from app.rating.seats import Seats


def stacked_seats(
    log: GameLog, starts: Sequence[Seats | None], order: IntArray
) -> tuple[IntArray, IntArray, Array, Array]:
    """For a two-player log with seats replayed in ``order``: each game's two seats, and every rule's seats' start
    (``starts``; None: fresh) side by side, advantages and information with a last column for no seat."""
    assert log.side_seat is not None  # the callers stack seats only for a log that names them
    seats = [start if start is not None else Seats.fresh(log.n_seats_needed) for start in starts]
    if any(log.n_seats_needed > len(start.advantage) for start in seats):
        raise RatingInputError("games", f"seat index {log.n_seats_needed - 1} is outside the seats given")
    seat_i, seat_j = log.side_seat[0::2][order], log.side_seat[1::2][order]
    advantage = np.array([np.append(start.advantage, 0.0) for start in seats])  # [:, -1]: no seat
    information = np.array([np.append(start.information, 1.0) for start in seats])
    return seat_i, seat_j, advantage, information


def seats_learn(advantage: Array, information: Array, sa: IntArray, sb: IntArray, w: Array, s: Array, p: Array) -> None:
    """Every rate's seats (rows; the last column stands for no seat) learn from one level's games, in which each
    seat plays once at most: :func:`app.rating.seats.seat_step` for all rates at once."""
    both = np.where((sa >= 0) & (sb >= 0), 2.0, 1.0)
    info, gain = w * p * (1.0 - p) * both, w * (s - p)
    rows = np.arange(len(advantage))[:, None]
    np.add.at(information, (rows, sa), info)
    np.add.at(information, (rows, sb), info)
    step = np.zeros_like(advantage)
    np.add.at(step, (rows, sa), gain)
    np.add.at(step, (rows, sb), -gain)
    advantage[:, :-1] += step[:, :-1] / information[:, :-1]
    information[:, -1] = 1.0
