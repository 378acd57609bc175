"""Types shared by the request and response models."""

from __future__ import annotations

from typing import Annotated, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

Slug = Annotated[str, StringConstraints(pattern=r"^[a-z0-9][a-z0-9_-]{0,63}$")]
PlayerKey = Annotated[str, StringConstraints(min_length=1, max_length=128, pattern=r"^[^\s/]+(?: [^\s/]+)*$")]
Vector = Annotated[list[float], Field(min_length=2, max_length=64)]


class StrictModel(BaseModel):
    """Rejects unknown fields and NaN/Infinity (which Python's JSON parser would accept)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


T = TypeVar("T")


class Page(BaseModel, Generic[T]):
    items: list[T]
    next_cursor: str | None = Field(None, description="Pass as `cursor` to get the next page; null on the last page.")
