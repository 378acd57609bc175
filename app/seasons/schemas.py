from __future__ import annotations

import unicodedata
from datetime import datetime
from typing import Annotated

from pydantic import AfterValidator, BaseModel, Field, StringConstraints

from app.core.schemas import Number, Page, StrictModel, printable


def _not_only_dots(name: str) -> str:
    if not name.strip("."):
        raise ValueError('must not be only dots ("." and ".." name no page in a URL)')
    return name


def _composed(name: str) -> str:
    """The name in Unicode's composed form (NFC): "á" typed as one character or as "a" and an accent is one
    season, as it looks."""
    return unicodedata.normalize("NFC", name)


def _positive_zero(pull: float) -> float:
    return 0.0 if pull == 0 else pull  # -0.0 is 0.0: stored and shown without its sign


SeasonName = Annotated[
    str,
    AfterValidator(_composed),
    StringConstraints(min_length=1, max_length=100, pattern=r"^[^/\s](?:[^/]*[^/\s])?$"),
    AfterValidator(printable),
    AfterValidator(_not_only_dots),
    Field(
        description="The season's name, e.g. `2026 spring`: 1-100 printable characters, no `/`, no space at "
        "either end; unique in the ladder."
    ),
]


Pull = Annotated[
    Number,
    AfterValidator(_positive_zero),
    Field(
        ge=0.0,
        le=1.0,
        description="How far every player's rating is pulled back toward where they started on the ladder for the "
        "next season: 0 (the default) keeps the ratings as they are, 1 starts everyone afresh, 0.3 moves each "
        "rating vector 30% of the way back. What is known of each player shrinks by the same part, so their "
        "rating moves faster again in their next games, and the uncertainty shown grows.",
    ),
]


class SeasonCreate(StrictModel):
    name: SeasonName
    pull: Pull = 0.0

    model_config = StrictModel.model_config | {
        "json_schema_extra": {"examples": [{"name": "2026 spring"}, {"name": "2026 summer", "pull": 0.3}]}
    }


class PodiumPlace(BaseModel):
    rank: int = Field(description="1, 2 or 3: the place in the season's final standings.")
    key: str = Field(description="The player's key when the season closed.")
    name: str | None = Field(description="Their name then (null: none; the key names them).")


class SeasonOut(BaseModel):
    name: str
    champion: PodiumPlace | None = Field(
        description="The first of the season's final standings (null: nobody played in it)."
    )
    podium: list[PodiumPlace] = Field(description="The first three of its final standings (fewer if fewer played).")
    closed_at: datetime
    first_game: int | None = Field(description="The number of the season's first game in the ladder (null: none).")
    last_game: int | None = Field(
        description="The number of its last game: the boundary in the log; the next season counts the games after it."
    )
    games: int = Field(description="Games the season counted when it closed.")
    players: int = Field(description="Players in its standings: those who played in it.")
    pull: float = Field(description="How far the ratings were pulled back toward the start when it closed.")
    changed_after_closing: datetime | None = Field(
        description="When a game of the season was voided, or a player of it merged into another, after it closed "
        "(the first time): the ratings were replayed, but the standings stay as they were archived. null: none."
    )


class StandingItem(BaseModel):
    rank: int = Field(
        description="Place in the season's final standings: the conservative order, established "
        "players first, provisional ones below."
    )
    key: str = Field(description="The player's key when the season closed.")
    name: str | None
    elo: float = Field(description="Elo-equivalent strength when the season closed.")
    strength_se: float = Field(description="Its standard error then, in Elo points.")
    conservative: float = Field(description="Elo minus two standard errors then: the order of the standings.")
    provisional: bool
    games: int = Field(description="Games played in the season.")
    wins: int
    draws: int
    losses: int


class SeasonStandings(Page[StandingItem]):
    season: SeasonOut
