"""Win probabilities for a pair of players or a match of sides (SPEC §7)."""

from __future__ import annotations

import numpy as np
from sqlalchemy import select
from sqlalchemy.orm import Session

from app import rating
from app.errors import InvalidInput, NotFound
from app.models import Ladder, Player, unpack
from app.predictions.schemas import MatchIn, MatchPrediction, PairPrediction


def _vectors(session: Session, ladder: Ladder, keys: list[str]) -> np.ndarray:
    query = select(Player.key, Player.vector).where(Player.ladder_id == ladder.id, Player.key.in_(keys))
    rows = {row.key: row.vector for row in session.execute(query)}
    missing = [k for k in keys if k not in rows]
    if missing:
        raise NotFound(f"Unknown player(s) {', '.join(map(repr, missing))} in ladder {ladder.slug!r}.")
    return np.array([unpack(rows[k]) for k in keys])


def pair(session: Session, ladder: Ladder, a: str, b: str) -> PairPrediction:
    C = _vectors(session, ladder, [a, b])
    x = float(rating.advantage(C[0], C[1]))
    return PairPrediction(
        a=a,
        b=b,
        probability=float(rating.win_probability(C[0], C[1])),
        advantage_logits=x,
        advantage_elo=float(rating.logits_to_elo(x)),
    )


def match(session: Session, ladder: Ladder, data: MatchIn) -> MatchPrediction:
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
    return MatchPrediction(matrix=matrix.tolist(), expected_scores=expected.tolist())
