"""Win probabilities for a pair of players or a match of sides (SPEC §7), from the players' vectors."""

from __future__ import annotations

import numpy as np

from app import rating
from app.errors import InvalidInput
from app.predictions.schemas import MatchIn


def pair(a: str, b: str, C: np.ndarray) -> dict:
    """``PairPrediction``: P(a beats b) = σ(c_aᵀ Ω c_b) and the advantage, from the rows of a and b."""
    x = float(rating.advantage(C[0], C[1]))
    return {
        "a": a,
        "b": b,
        "probability": float(rating.win_probability(C[0], C[1])),
        "advantage_logits": x,
        "advantage_elo": float(rating.logits_to_elo(x)),
    }


def match_keys(data: MatchIn) -> list[str]:
    """The players of a match, side by side; 422 if one appears twice."""
    keys = [k for side in data.sides for k in side.players]
    if len(set(keys)) != len(keys):
        raise InvalidInput("a player appears more than once", errors=[{"field": "sides"}])
    return keys


def match(data: MatchIn, C: np.ndarray) -> dict:
    """``MatchPrediction``: the probability matrix and expected scores of N sides, from their players' rows."""
    index = iter(range(len(C)))
    advantages = tuple(s.logits for s in data.sides)
    game = rating.Game(
        tuple(tuple(next(index) for _ in s.players) for s in data.sides), (1,) * len(data.sides), advantages
    )
    matrix, expected = rating.predict_match(C, game)
    return {"matrix": matrix.tolist(), "expected_scores": expected.tolist()}
