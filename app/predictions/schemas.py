from __future__ import annotations

from pydantic import BaseModel, Field

from app.schemas import PlayerKey, SeatAdvantage, StrictModel


class PairPrediction(BaseModel):
    a: str
    b: str
    probability: float = Field(description="P(a beats b).")
    advantage_logits: float = Field(description="a_ab = c_aᵀ Ω c_b (+ seat advantage).")
    advantage_elo: float = Field(description="The advantage in Elo points.")


class MatchSide(SeatAdvantage):
    players: list[PlayerKey] = Field(min_length=1, max_length=32)


class MatchIn(StrictModel):
    sides: list[MatchSide] = Field(min_length=2, max_length=64)

    model_config = StrictModel.model_config | {
        "json_schema_extra": {"examples": [{"sides": [{"players": ["ann", "cy"]}, {"players": ["bob", "dee"]}]}]}
    }


class MatchPrediction(BaseModel):
    matrix: list[list[float]] = Field(description="matrix[a][b] = P(side a beats side b).")
    expected_scores: list[float] = Field(description="Expected rank-share score of each side (SPEC §4).")
