from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, Field, field_validator

from app.core.schemas import Integer, PlayerKey, SeatAdvantage, StrictModel, distinct_seats

#: The draw model, as the answers state it.
DRAW_MODEL = (
    "P(draw) = ν · 2·min(p, 1 - p), p the expected score: the share ν of the largest draw chance that keeps the "
    "expected score p, fitted on the ladder's two-sided games (draws seen / (Σ 2·min(p, 1 - p) over those games, "
    "as forecast when each was played, + 2))."
)
#: What a prediction's answer says of when it was computed.
LadderVersion = Annotated[int, Field(description="The ladder version the players' vectors were read at.")]


class PairPrediction(BaseModel):
    ladder_version: LadderVersion
    a: str
    b: str
    probability: float = Field(description="P(a beats b).")
    advantage_logits: float = Field(description="a_ab = c_aᵀ Ω c_b (+ seat advantage).")
    advantage_elo: float = Field(description="The advantage in Elo points.")
    match_quality: float = Field(description="How close to even: 1 - 2·|P - 1/2| (1 even, 0 a certain result).")
    a_known: bool = Field(
        description="Whether a is a player of the ladder yet; if not, the prediction uses the initial vector a "
        "would get with their first game."
    )
    b_known: bool = Field(description="The same for b.")
    expected_score: float = Field(
        description="a's expected score: a win counts 1, a draw 1/2 (the same number as `probability`: the model "
        "rates wins and draws alike through it)."
    )
    draw_probability: float | None = Field(
        description=DRAW_MODEL + " Null while the ladder has seen no draw (two-sided games only)."
    )
    win_probability: float | None = Field(
        description="P(a wins outright) = expected_score - draw_probability / 2 (null without draws)."
    )
    loss_probability: float | None = Field(
        description="P(b wins outright) = 1 - expected_score - draw_probability / 2."
    )


class MatchSide(SeatAdvantage):
    players: list[PlayerKey] = Field(min_length=1, max_length=32)


class MatchIn(StrictModel):
    sides: list[MatchSide] = Field(min_length=2, max_length=64)

    @field_validator("sides")
    @classmethod
    def _one_side_per_seat(cls, sides: list[MatchSide]) -> list[MatchSide]:
        distinct_seats(sides)
        return sides

    model_config = StrictModel.model_config | {
        "json_schema_extra": {"examples": [{"sides": [{"players": ["ann", "cy"]}, {"players": ["bob", "dee"]}]}]}
    }


class PlayerLabel(BaseModel):
    key: str = Field(description="The key as given.")
    known: bool = Field(
        description="Whether it names a player of the ladder yet; if not, the prediction uses the initial vector "
        "they would get with their first game."
    )


class SideLabel(BaseModel):
    players: list[PlayerLabel]
    seat: str | None = Field(None, description="The seat the side takes, if any.")


class MatchPrediction(BaseModel):
    ladder_version: LadderVersion
    sides: list[SideLabel] = Field(description="Who each row and column of the matrix is, in the order given.")
    matrix: list[list[float]] = Field(description="matrix[a][b] = P(side a beats side b).")
    expected_scores: list[float] = Field(description="Expected rank-share score of each side (mathematics §4).")
    match_quality: float = Field(
        description="How close to even: 1 - max |E_a - 1/N| / (1 - 1/N) over the N sides' expected scores E_a "
        "(1 even, 0 one side certain to beat all)."
    )
    draw_probability: float | None = Field(
        None, description="With two sides: " + DRAW_MODEL + " Null with more sides, or before the ladder's first draw."
    )


class TeamsIn(StrictModel):
    players: list[PlayerKey] = Field(min_length=2, max_length=64, description="Who plays, each once.")
    teams: Integer = Field(2, ge=2, le=64, description="How many teams.")
    sizes: list[Annotated[Integer, Field(ge=1, le=64)]] | None = Field(
        None, description="The size of each team (they must add up to the players); default: as equal as possible."
    )

    model_config = StrictModel.model_config | {
        "json_schema_extra": {"examples": [{"players": ["ann", "bob", "cy", "dee"], "teams": 2}]}
    }


class TeamsOut(BaseModel):
    ladder_version: LadderVersion
    teams: list[list[str]]
    win_probabilities: list[float] = Field(
        description="Each team's chance of beating another team drawn at random; with two teams, P(A beats B) and "
        "P(B beats A)."
    )
    expected_scores: list[float] = Field(description="Expected rank-share score of each team.")
    matrix: list[list[float]] = Field(description="matrix[a][b] = P(team a beats team b).")
    match_quality: float = Field(description="How close to even the match is, as in the predict answers.")
    exact: bool = Field(
        description="Every split was scored (up to 12 players); false: the best split a local search found."
    )
