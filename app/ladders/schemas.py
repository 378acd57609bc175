from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field

from app.schemas import Slug, StrictModel

DEFAULT_ETA = 0.1
DEFAULT_INIT_SCALE = 0.5


class LadderCreate(StrictModel):
    slug: Slug = Field(description="URL name of the ladder: lower-case letters, digits, `-`, `_`.")
    name: str | None = Field(None, max_length=200)
    k: int = Field(1, ge=1, le=8, description="Number of 2-D discs; rating vectors have 2k numbers (SPEC §1).")
    eta: float = Field(DEFAULT_ETA, ge=0, le=10, description="Learning rate η of the normalised update (SPEC §3).")
    init_scale: float = Field(DEFAULT_INIT_SCALE, gt=0, le=100, description="Std. dev. of initial vectors (SPEC §2).")
    init_offset: list[float] | None = Field(None, description="Mean of initial vectors (2k numbers), default 0.")
    seed: int | None = Field(None, ge=0, lt=2**63, description="Seed of initial vectors; random when omitted.")
    auto_create_players: bool = Field(True, description="Create unknown players when a game names them.")

    model_config = StrictModel.model_config | {
        "json_schema_extra": {"examples": [{"slug": "office-pingpong", "name": "Office ping-pong", "k": 1}]}
    }


class LadderOut(BaseModel):
    slug: str
    name: str | None
    k: int
    eta: float
    init_scale: float
    init_offset: list[float] | None
    seed: int
    auto_create_players: bool
    created_at: datetime
    players: int
    games: int


class LadderCreated(LadderOut):
    write_key: str = Field(description="Bearer key for posting games to this ladder. Shown only once.")


class AuditOut(BaseModel):
    consistent: bool = Field(description="Replaying the event log reproduces every stored vector exactly.")
    games: int
    players: int
    max_abs_diff: float
    replayed_games: int = Field(description="Games replayed: those after the latest checkpoint, or all.")
    checkpoint_after_game: int | None = Field(description="The checkpoint replayed from (an applied refit), if any.")
