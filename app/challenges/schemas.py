from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, Field, StringConstraints, field_validator

from app.core.schemas import MAX_SCORE, Number, PlayerKey, StrictModel, printable

Status = Literal["open", "accepted", "declined", "withdrawn", "played", "expired"]
Reason = Literal["duplicate", "same_player"]
Message = Annotated[
    str,
    StringConstraints(strip_whitespace=True, min_length=1, max_length=200),
    AfterValidator(printable),
    Field(description='A word to go with it, e.g. "lunch?": up to 200 printable characters.'),
]
Score = Annotated[Number, Field(ge=0, le=MAX_SCORE)]


class ChallengeIn(StrictModel):
    from_: PlayerKey = Field(
        alias="from",
        description="The challenger's key (or an alias of theirs; case-folded where the ladder matches keys so). "
        "A challenge never creates a player.",
    )
    to: PlayerKey = Field(description="The key of the player challenged, taken as `from` is.")
    message: Message | None = None

    model_config = StrictModel.model_config | {
        "json_schema_extra": {
            "examples": [{"from": "ada", "to": "bob", "message": "lunch?"}, {"from": "cy", "to": "dee"}]
        }
    }


class PlayIn(StrictModel):
    winner: PlayerKey = Field(description="Who won: the key of one of the challenge's two players (or an alias).")
    scores: dict[PlayerKey, Score] | None = Field(
        None,
        description='Optionally, each player\'s score by key, e.g. `{"ada": 21, "bob": 15}`: both players, the '
        "winner's the higher, each from 0 to 1,000,000. They go to the game as its sides' `score`.",
    )

    model_config = StrictModel.model_config | {
        "json_schema_extra": {"examples": [{"winner": "ada"}, {"winner": "ada", "scores": {"ada": 21, "bob": 15}}]}
    }

    @field_validator("scores")
    @classmethod
    def _two(cls, scores: dict[str, float] | None) -> dict[str, float] | None:
        if scores is not None and len(scores) != 2:
            raise ValueError("give both players' scores, and no one else's")
        return scores


class ChallengeOut(BaseModel):
    id: int = Field(description="The challenge's number within its ladder: 1, 2, 3, … (`…/challenges/{id}`).")
    from_: str = Field(alias="from", description="The challenger's key now.")
    from_name: str | None = Field(description="The challenger's name (null: none; show the key).")
    to: str = Field(description="The key of the player challenged, now.")
    to_name: str | None = Field(description="Their name (null: none).")
    message: str | None = Field(description="What the challenger wrote with it (null: nothing).")
    status: Status = Field(
        description="`open` (waiting for an answer), `accepted`, `declined`, `withdrawn` (called off), `played` "
        "(its game is `game`) or `expired` (not played by `expires_at`). Only an open or accepted one can be played."
    )
    reason: Reason | None = Field(
        description="Why the server withdrew it, where it did (null otherwise): a player merge made it `duplicate` "
        "(another challenge between the same two players stays: the accepted one, else the oldest) or made its two "
        "players one (`same_player`)."
    )
    created_at: datetime = Field(description="When it was made.")
    expires_at: datetime = Field(description="When it expires if it has not been played, declined or withdrawn.")
    answered_at: datetime | None = Field(
        description="When it was accepted, declined, withdrawn, played or expired (the latest; null: still open)."
    )
    game: int | None = Field(description="The number of the game that settled it (`…/games/{game}`); null: none yet.")

    model_config = {"populate_by_name": True}
