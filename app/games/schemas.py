from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field, field_validator

from app.core.schemas import ExternalId, Moment, Number, PlayerKey, Reason, SeatAdvantage, StrictModel, distinct_seats


class SideIn(SeatAdvantage):
    players: list[PlayerKey] = Field(min_length=1, max_length=32, description="One player, or an ad-hoc team.")
    rank: Number | None = Field(None, description="Finishing rank, 1 = best; equal ranks tie.")
    score: Number | None = Field(None, description="Score, higher = better (instead of rank).")


class GameIn(StrictModel):
    sides: list[SideIn] = Field(min_length=2, max_length=64)
    played_at: Moment | None = Field(
        None,
        description="When it was played (default: now), from 1900-01-01T00:00:00Z to 2200-01-01T00:00:00Z once in "
        "UTC; stored in UTC, a time without zone is taken as UTC.",
    )
    external_id: ExternalId | None = Field(
        None, description="Your id (up to 200 printable characters); also an idempotency key."
    )

    model_config = StrictModel.model_config | {
        "json_schema_extra": {
            "examples": [
                {"sides": [{"players": ["ann"], "rank": 1}, {"players": ["bob"], "rank": 2}]},
                {
                    "sides": [
                        {"players": ["ann", "cy"], "score": 21, "win_probability": 0.55},
                        {"players": ["bob", "dee"], "score": 17},
                    ],
                    "external_id": "match-8812",
                },
            ]
        }
    }

    @field_validator("sides")
    @classmethod
    def _consistent(cls, sides: list[SideIn]) -> list[SideIn]:
        ranked = sum(side.rank is not None for side in sides)
        scored = sum(side.score is not None for side in sides)
        if ranked + scored > len(sides) and any(side.rank is not None and side.score is not None for side in sides):
            raise ValueError("a side has both rank and score")
        if ranked != len(sides) and scored != len(sides):
            raise ValueError("every side needs a rank, or every side a score (not mixed)")
        keys = [key for side in sides for key in side.players]
        if len(set(keys)) < len(keys):
            seen: set[str] = set()
            twice = next(key for key in keys if key in seen or seen.add(key))
            raise ValueError(f"player {twice!r} appears more than once in the game")
        distinct_seats(sides)
        return sides


class BatchIn(StrictModel):
    games: list[GameIn] = Field(min_length=1)

    model_config = StrictModel.model_config | {
        "json_schema_extra": {
            "examples": [
                {
                    "games": [
                        {"sides": [{"players": ["ann"], "rank": 1}, {"players": ["bob"], "rank": 2}]},
                        {"sides": [{"players": ["bob"], "rank": 1}, {"players": ["cy"], "rank": 1}]},
                    ]
                }
            ]
        }
    }


class PlayerChange(BaseModel):
    key: str
    before: list[float] = Field(description="The player's rating vector before the game.")
    after: list[float] = Field(description="The player's rating vector after the game.")
    elo_before: float = Field(
        description="The player's strength before the game in Elo-equivalent points, as the leaderboard shows it: "
        "against the field's mean vector as of this answer (just after the game, for the answer to its post)."
    )
    elo_after: float = Field(description="The same after the game.")
    elo_change: float = Field(description="elo_after - elo_before: what the game did to the player's rating.")


class SideOut(BaseModel):
    players: list[PlayerChange]
    rank: float
    actual_score: float = Field(description="Rank-share score achieved (mathematics §4); sums to 1 over sides.")
    expected_score: float = Field(description="Rank-share score expected before the game.")
    seat: str | None = Field(None, description="The learned seat the side took, if any (mathematics §5).")


class GameOut(BaseModel):
    id: int = Field(
        description="The game's number within its ladder: 1, 2, 3, … in log order, as URLs (`…/games/{id}`), "
        "exports and the web page name it."
    )
    seq: int = Field(description="The same number as `id` (the name earlier versions gave it).")
    played_at: datetime
    external_id: str | None
    sides: list[SideOut]
    voided_at: datetime | None = Field(None, description="When the game was voided: it counts nowhere since.")
    voided_by: str | None = Field(None, description="The id of the key that voided it.")
    reason: str | None = Field(None, description="Why it was voided, as given.")


class VoidIn(StrictModel):
    reason: Reason | None = Field(None, description="Why, for the audit trail (e.g. `wrong winner`).")

    model_config = StrictModel.model_config | {"json_schema_extra": {"examples": [{"reason": "wrong winner"}]}}


class BatchOut(BaseModel):
    games: list[GameOut]
