"""Win probabilities for a pair of players or a match of sides (SPEC §7)."""

from __future__ import annotations

import numpy as np
from sqlalchemy.orm import Session

from app import rating, storage
from app.errors import InvalidInput, NotFound
from app.predictions.schemas import MatchIn
from app.storage.ladders import LadderRow


def _vectors(session: Session, ladder: LadderRow, keys: list[str]) -> np.ndarray:
    found = storage.players.vectors(session, ladder.id, keys, 2 * ladder.k)
    missing = [k for k in keys if k not in found]
    if missing:
        raise NotFound(f"Unknown player(s) {', '.join(map(repr, missing))} in ladder {ladder.slug!r}.")
    return np.array([found[k] for k in keys])


def pair(session: Session, ladder: LadderRow, a: str, b: str) -> dict:
    """``PairPrediction``: P(a beats b) and the advantage."""
    C = _vectors(session, ladder, [a, b])
    x = float(rating.advantage(C[0], C[1]))
    return {
        "a": a,
        "b": b,
        "probability": float(rating.win_probability(C[0], C[1])),
        "advantage_logits": x,
        "advantage_elo": float(rating.logits_to_elo(x)),
    }


def match(session: Session, ladder: LadderRow, data: MatchIn) -> dict:
    """``MatchPrediction``: the probability matrix and expected scores of N sides."""
    keys = [k for side in data.sides for k in side.players]
    if len(set(keys)) != len(keys):
        raise InvalidInput("a player appears more than once", errors=[{"field": "sides"}])
    C = _vectors(session, ladder, keys)
    index = iter(range(len(keys)))
    advantages = tuple(s.logits for s in data.sides)
    game = rating.Game(
        tuple(tuple(next(index) for _ in s.players) for s in data.sides), (1,) * len(data.sides), advantages
    )
    matrix, expected = rating.predict_match(C, game)
    return {"matrix": matrix.tolist(), "expected_scores": expected.tolist()}
