"""Types shared by the request and response models."""

from __future__ import annotations

from typing import Annotated, Generic, Self, TypeVar

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, model_validator

from app.rating import advantage_from_probability

Slug = Annotated[str, StringConstraints(pattern=r"^[a-z0-9][a-z0-9_-]{0,63}$")]
PlayerKey = Annotated[str, StringConstraints(min_length=1, max_length=128, pattern=r"^[^\s/]+(?: [^\s/]+)*$")]
Vector = Annotated[list[float], Field(min_length=2, max_length=64)]
#: The largest id or cursor the databases store (a signed 64-bit integer); larger ones are a 422, not a 500.
MAX_ID = 2**63 - 1


class StrictModel(BaseModel):
    """Rejects unknown fields and NaN/Infinity (which Python's JSON parser would accept)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


T = TypeVar("T")


class SeatAdvantage(StrictModel):
    """A side's seat advantage, in logits or as a win probability against an equal opponent (SPEC §5)."""

    advantage: float | None = Field(None, ge=-50, le=50, description="Seat advantage in logits (SPEC §5).")
    win_probability: float | None = Field(
        None, gt=0, lt=1, description="Seat advantage as P(this seat beats an equal opponent)."
    )

    @model_validator(mode="after")
    def _one_advantage(self) -> Self:
        if self.advantage is not None and self.win_probability is not None:
            raise ValueError("give either advantage or win_probability, not both")
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
