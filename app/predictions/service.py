"""Win probabilities for a pair of players or a match of sides, and fair teams, from the players' vectors
(mathematics §7)."""

from __future__ import annotations

import numpy as np

from app import rating
from app.core.errors import InvalidInput
from app.predictions.schemas import MatchIn, TeamsIn
from app.rating import teams


def pair(
    a: str, b: str, version: int, C: np.ndarray, known: list[bool], draw_share: float | None, shift: float = 0.0
) -> dict:
    """``PairPrediction`` at ladder ``version``: P(a beats b) = σ(c_aᵀ Ω c_b + h_a - h_b) and the advantage, from
    the rows of a and b, whether each is a player yet, the ladder's ``draw_share`` and the seats' ``shift``
    h_a - h_b."""
    x = float(rating.advantage(C[0], C[1])) + shift
    p = float(rating.sigmoid(x))  # rating.win_probability(C[0], C[1], shift), without computing the advantage again
    return {
        "ladder_version": version,
        "a": a,
        "b": b,
        "probability": p,
        "advantage_logits": x,
        "advantage_elo": float(rating.logits_to_elo(x)),
        "match_quality": teams.pair_quality(p),
        "a_known": known[0],
        "b_known": known[1],
        "expected_score": p,
    } | dict(zip(OUTCOMES, rating.outcome_probabilities(p, draw_share) or (None,) * 3, strict=True))


#: A pair prediction's chances of each outcome for a (where the ladder has seen draws: :mod:`app.rating.draws`).
OUTCOMES = ("win_probability", "draw_probability", "loss_probability")


def match_keys(data: MatchIn) -> list[str]:
    """The players of a match, side by side; 422 if one appears twice."""
    keys = [k for side in data.sides for k in side.players]
    if len(set(keys)) != len(keys):
        raise InvalidInput("a player appears more than once", errors=[{"field": "sides"}])
    return keys


def match(
    data: MatchIn,
    C: np.ndarray,
    known: list[bool],
    draw_share: float | None = None,
    seats: dict[str, float] | None = None,
) -> dict:
    """``MatchPrediction``: the sides (who each row and column of the matrix is), the probability matrix and
    expected scores, from the players' rows, whether each is a player yet, the ladder's ``draw_share`` (two sides
    only) and the learned ``seats`` (name -> advantage in logits) the sides take."""
    index = iter(range(len(C)))
    seats = seats or {}
    advantages = tuple(s.logits + (seats[s.seat] if s.seat is not None else 0.0) for s in data.sides)
    game = rating.Game(
        tuple(tuple(next(index) for _ in s.players) for s in data.sides), (1,) * len(data.sides), advantages
    )
    matrix, expected = rating.predict_match(C, game)
    flags = iter(known)
    labels = [
        {"players": [{"key": key, "known": next(flags)} for key in side.players], "seat": side.seat}
        for side in data.sides
    ]
    draw = rating.draw_probability(expected[0], draw_share) if len(data.sides) == 2 else None
    return {
        "sides": labels,
        "matrix": matrix.tolist(),
        "expected_scores": expected.tolist(),
        "match_quality": float(teams.quality(expected)),
        "draw_probability": None if draw is None else float(draw),
    }


def team_keys(data: TeamsIn) -> list[str]:
    """The players to split; 422 if one appears twice."""
    if len(set(data.players)) != len(data.players):
        raise InvalidInput("players: a player appears more than once", errors=[{"field": "players"}])
    return data.players


def fair_teams(data: TeamsIn, C: np.ndarray) -> dict:
    """``TeamsOut``: the split of the players (rows of ``C``) whose match is closest to even."""
    split = teams.fair_split(C, data.teams, data.sizes)
    return {
        "teams": [[data.players[p] for p in team] for team in split.teams],
        "win_probabilities": split.win_probabilities.tolist(),
        "expected_scores": split.expected.tolist(),
        "matrix": split.matrix.tolist(),
        "match_quality": split.quality,
        "exact": split.exact,
    }
