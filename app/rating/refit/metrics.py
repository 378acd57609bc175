"""Held-out quality of forecasts of pair terms (mathematics §9, §11): log loss, Brier score and accuracy, of mElo
vectors or of scalar Elo ratings."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import expit

from app.rating.errors import RatingInputError
from app.rating.game_log import GameLog, IntArray
from app.rating.model import Array
from app.rating.refit.likelihood import pair_logits, side_vectors


@dataclass(frozen=True)
class Metrics:
    """Held-out quality of predicted pair probabilities, each term weighted by w = 1/(N-1).

    ``accuracy`` is over the decided terms (not draws): None when every term is a draw.
    """

    log_loss: float
    brier: float
    accuracy: float | None
    pairs: int

    @classmethod
    def of(cls, p: Array, log: GameLog, pairs: IntArray) -> Metrics:
        """The metrics of the forecasts ``p`` of the selected pair terms (at least one)."""
        if len(pairs) == 0:
            raise RatingInputError("pairs", "no pair terms to evaluate on")
        s, w = log.pair_outcome[pairs], log.pair_weight[pairs]
        p = np.clip(p, 1e-15, 1 - 1e-15)
        total = float(np.sum(w))
        loss = float(np.dot(w, term_losses(p, log, pairs))) / total
        brier = float(np.dot(w, (p - s) ** 2)) / total
        decided = s != 0.5
        hits = (p[decided] > 0.5) == (s[decided] > 0.5)
        accuracy = float(np.dot(w[decided], hits)) / float(np.sum(w[decided])) if np.any(decided) else None
        return cls(loss, brier, accuracy, len(pairs))


def term_losses(p: Array, log: GameLog, pairs: IntArray) -> Array:
    """The log loss of each selected pair term, from its predicted probability ``p``."""
    s = log.pair_outcome[pairs]
    p = np.clip(p, 1e-15, 1 - 1e-15)
    return -(s * np.log(p) + (1 - s) * np.log1p(-p))


def elo_probabilities(ratings: ArrayLike, log: GameLog, pairs: IntArray) -> Array:
    """P of the selected pair terms from scalar Elo ratings (logits); teams use the mean rating."""
    r = np.asarray(ratings, dtype=np.float64)[:, None]
    side = side_vectors(r, log)[:, 0]
    return expit(side[log.pair_a[pairs]] - side[log.pair_b[pairs]] + log.pair_shift[pairs])


def evaluate(C: ArrayLike, log: GameLog, pairs: IntArray, seats: Array | None = None) -> Metrics:
    """Metrics of mElo vectors ``C`` (and the learned ``seats``' advantages) on the selected pair terms."""
    return Metrics.of(expit(pair_logits(C, log, pairs, seats)), log, pairs)


def evaluate_elo(ratings: ArrayLike, log: GameLog, pairs: IntArray) -> Metrics:
    """Metrics of scalar Elo ratings (logits) on the selected pair terms; teams use the mean rating."""
    return Metrics.of(elo_probabilities(ratings, log, pairs), log, pairs)
