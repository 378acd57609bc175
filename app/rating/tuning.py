"""The online rule's learning rate chosen from a ladder's own history (mathematics §3).

One rate cannot suit an eight-team league and a game of 100,000 players: the
log says which predicts best.  Each candidate rate is replayed over the whole
log from the initial vectors, so every game is predicted only from the games
before it (prequential scoring, as the ratings were served), and the rates are
compared by their mean log loss per game.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from app.rating.games import GameLog
from app.rating.model import Array
from app.rating.refit import term_losses
from app.rating.replay import replay_history
from app.rating.seats import Seats
from app.rating.update import LearningRate

#: Multiples of the current η, and decays τ (None: a constant η), whose every combination is tried.
ETA_FACTORS = (0.25, 0.5, 1.0, 2.0, 4.0)
TAUS = (None, 1.0, 3.0, 10.0, 30.0)


@dataclass(frozen=True)
class RateChoice:
    """The rate chosen, and per candidate its mean prequential log loss per game and the standard error of its
    difference to the current rate's (over games)."""

    rate: LearningRate
    rows: list[dict]


def prequential_losses(C0: ArrayLike, log: GameLog, rate: LearningRate, seats: Seats | None = None) -> Array:
    """Each game's log loss, its outcome predicted from the games before it only: the rule replayed from ``C0``
    at ``rate`` (its pair terms' losses, weighted as the fit weighs them)."""
    every = np.arange(len(log.pair_a))
    term = term_losses(replay_history(C0, log, rate, seats=seats).pair_p, log, every) * log.pair_weight
    return np.add.reduceat(term, log.pair_ptr[:-1]) if len(term) else np.zeros(0)


def choose_rate(
    C0: ArrayLike,
    log: GameLog,
    current: LearningRate,
    seats: Seats | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> RateChoice:
    """The rate among :data:`ETA_FACTORS` × :data:`TAUS` around ``current`` whose replay predicted the log best,
    if it beat ``current`` by more than one standard error of the difference (over games); else ``current``.

    The guard keeps a small ladder, whose log cannot tell the rates apart, on
    its setting: a rate is changed only when the log shows the change pays.
    Costs one replay of the log per candidate (25), each linear in the games.
    """
    candidates = [current] + [
        LearningRate(current.eta * f, tau)
        for f in ETA_FACTORS
        for tau in TAUS
        if (current.eta * f, tau) != (current.eta, current.tau)
    ]
    losses = []
    for n, rate in enumerate(candidates):
        losses.append(prequential_losses(C0, log, rate, None if seats is None else seats.copy()))
        if progress is not None:
            progress(n + 1, len(candidates))
    losses_array = np.array(losses)
    means = losses_array.mean(axis=1)
    n_games = losses_array.shape[1]
    diff = losses_array - losses_array[0]
    errors = diff.std(axis=1, ddof=1) / np.sqrt(n_games) if n_games > 1 else np.zeros(len(candidates))
    best = int(np.argmin(means))
    chosen = candidates[best] if means[0] - means[best] > errors[best] else current
    rows = [
        {"eta": rate.eta, "tau": rate.tau, "log_loss": float(m), "standard_error": float(e)}
        for rate, m, e in zip(candidates, means, errors, strict=True)
    ]
    return RateChoice(chosen, rows)
