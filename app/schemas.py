"""Types shared by the request and response models."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Generic, Self, TypeVar

from pydantic import BaseModel, ConfigDict, Field, Strict, StringConstraints, model_validator

from app.rating import advantage_from_probability

Slug = Annotated[str, StringConstraints(pattern=r"^[a-z0-9][a-z0-9_-]{0,63}$")]
PlayerKey = Annotated[str, StringConstraints(min_length=1, max_length=128, pattern=r"^[^\s/]+(?: [^\s/]+)*$")]
Vector = Annotated[list[float], Field(min_length=2, max_length=64)]
#: A number in a request: JSON numbers only (no `true`, no `"1"`).
Number = Annotated[float, Strict()]
#: The largest seat advantage accepted, in logits (either way).
MAX_ADVANTAGE = 50.0
#: The largest id or cursor the databases store (a signed 64-bit integer); larger ones are a 422, not a 500.
MAX_ID = 2**63 - 1


def iso(moment: datetime | None) -> str | None:
    """A time as the API writes it: ISO 8601 in UTC with a ``Z``, as pydantic does."""
    return None if moment is None else moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


class StrictModel(BaseModel):
    """Rejects unknown fields and NaN/Infinity (which Python's JSON parser would accept)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


T = TypeVar("T")


class SeatAdvantage(StrictModel):
    """A side's seat advantage, in logits or as a win probability against an equal opponent (SPEC §5)."""

    advantage: Number | None = Field(
        None, ge=-MAX_ADVANTAGE, le=MAX_ADVANTAGE, description="Seat advantage in logits (SPEC §5), within ±50."
    )
    win_probability: Number | None = Field(
        None,
        gt=0,
        lt=1,
        description="Seat advantage as P(this seat beats an equal opponent); it must come to within ±50 logits.",
    )

    @model_validator(mode="after")
    def _one_advantage(self) -> Self:
        if self.advantage is not None and self.win_probability is not None:
            raise ValueError("give either advantage or win_probability, not both")
        if self.win_probability is not None and abs(self.logits) > MAX_ADVANTAGE:
            raise ValueError(f"win_probability is more than {MAX_ADVANTAGE:g} logits from even")
        return self

    @property
    def logits(self) -> float:
        """h in logits; 0 when neither is given."""
        if self.win_probability is not None:
            return float(advantage_from_probability(self.win_probability))
        return self.advantage or 0.0


class Page(BaseModel, Generic[T]):
    items: list[T]
    next_cursor: str | None = Field(None, description="Pass as `cursor` to get the next page; null on the last page.")
