from __future__ import annotations

from datetime import UTC, datetime

from pydantic import BaseModel, Field, field_validator

from app.schemas import PlayerKey, SeatAdvantage, StrictModel


class SideIn(SeatAdvantage):
    players: list[PlayerKey] = Field(min_length=1, max_length=32, description="One player, or an ad-hoc team.")
    rank: float | None = Field(None, description="Finishing rank, 1 = best; equal ranks tie.")
    score: float | None = Field(None, description="Score, higher = better (instead of rank).")


class GameIn(StrictModel):
    sides: list[SideIn] = Field(min_length=2, max_length=64)
    played_at: datetime | None = Field(
        None, description="When it was played (default: now); stored in UTC, a time without zone is taken as UTC."
    )
    external_id: str | None = Field(None, min_length=1, max_length=200, description="Your id; also an idempotency key.")

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

    @field_validator("played_at")
    @classmethod
    def _utc(cls, value: datetime | None) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)

    @field_validator("sides")
    @classmethod
    def _consistent(cls, sides: list[SideIn]) -> list[SideIn]:
        has_rank = [s.rank is not None for s in sides]
        has_score = [s.score is not None for s in sides]
        if any(r and s for r, s in zip(has_rank, has_score, strict=True)):
            raise ValueError("a side has both rank and score")
        if not (all(has_rank) or all(has_score)):
            raise ValueError("every side needs a rank, or every side a score (not mixed)")
        seen: set[str] = set()
        for side in sides:
            for key in side.players:
                if key in seen:
                    raise ValueError(f"player {key!r} appears more than once in the game")
                seen.add(key)
        return sides


class BatchIn(StrictModel):
    games: list[GameIn] = Field(min_length=1)


class PlayerChange(BaseModel):
    key: str
    before: list[float]
    after: list[float]


class SideOut(BaseModel):
    players: list[PlayerChange]
    rank: float
    actual_score: float = Field(description="Rank-share score achieved (SPEC §4); sums to 1 over sides.")
    expected_score: float = Field(description="Rank-share score expected before the game.")


class GameOut(BaseModel):
    id: int
    seq: int = Field(description="Position in the ladder's event log (increasing; gaps possible).")
    played_at: datetime
    external_id: str | None
    sides: list[SideOut]


class BatchOut(BaseModel):
    games: list[GameOut]
