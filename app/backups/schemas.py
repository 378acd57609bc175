"""The lines of a ladder export (NDJSON): a header, then players, then games in log order with checkpoints, then the
closed seasons."""

from __future__ import annotations

from typing import Annotated, Literal, Self

from pydantic import Field, StrictBool, model_validator

from app.core.schemas import (
    MAX_ID,
    Component,
    Integer,
    Moment,
    Name,
    Number,
    NumberChoice,
    PlayerKey,
    Reason,
    StrictModel,
    Vector,
)
from app.games.schemas import GameIn
from app.ladders.schemas import LadderCreate
from app.seasons.schemas import SeasonName

#: The export format's version, in the header line.
FORMAT = 1


class ExportedLadder(LadderCreate):
    seed: Integer = Field(ge=0, lt=2**63, description="Seed of the seeded initial vectors.")
    private: StrictBool = False
    #: Exports from before the setting came from ladders that matched keys exactly.
    case_insensitive_keys: StrictBool = False
    #: ... and whose steps counted games ...
    drift_steps: StrictBool = False
    #: ... and whose seats' prior was 1 logit ...
    seat_prior: Number = Field(1.0, ge=0.01, le=10)
    #: ... and that were rated by the shrinking step (mathematics §3): old exports restore with the rule they had.
    rate_rule: Literal["steps", "variance"] = "steps"
    #: A rate choice before 2026-11-28 could set η above 10 (up to 4 times the ladder's, again at each choice): such
    #: a ladder restores with its η.
    eta: Number = Field(ge=0)


class Header(StrictModel):
    """The first line: ``{"melo_export": 1, "ladder": {…settings and seed…}}``."""

    melo_export: Annotated[Literal[1], NumberChoice]
    ladder: ExportedLadder
    players: Integer | None = Field(None, ge=0, le=MAX_ID)
    games: Integer | None = Field(None, ge=0, le=MAX_ID, description="Games in the log, voided ones too.")


class ExportedPlayer(StrictModel):
    key: PlayerKey
    aliases: list[PlayerKey] = Field([], max_length=10_000, description="Other keys that lead to the player.")
    name: Name | None = None
    active: StrictBool = True
    initial: Vector | None = Field(None, description="The player's explicit initial vector; default: the seeded one.")
    created_at: Moment | None = None


class VoidMark(StrictModel):
    at: Moment
    by: str | None = Field(None, max_length=64)
    reason: Reason | None = None


#: A rating change as a game's post answered it (Elo points), or null where none is kept.
PostedChange = Annotated[Number, Field(ge=-1e9, le=1e9)] | None


class ExportedGame(GameIn):
    seq: Integer | None = Field(None, ge=1, le=MAX_ID, description="Its number in the ladder: 1, 2, 3, … in log order.")
    voided: VoidMark | None = None
    elo_changes: list[list[PostedChange]] | None = Field(
        None,
        description="Each player's `elo_change` as the game's post answered it, side by side as `sides` lists the "
        "players (null: none kept, shown against today's field). Absent from exports before it was kept.",
    )

    @model_validator(mode="after")
    def _changes_fit_the_sides(self) -> Self:
        if self.elo_changes is not None and [len(side) for side in self.elo_changes] != [
            len(side.players) for side in self.sides
        ]:
            raise ValueError("elo_changes must list one change per player of each side, as sides does")
        return self


class ExportedSeats(StrictModel):
    advantage: list[Component] = Field(description="Each seat's advantage in logits, in the ladder's seat order.")
    information: list[Annotated[Number, Field(gt=0, le=1e12)]] = Field(description="Each seat's information.")


class ExportedCheckpoint(StrictModel):
    after_seq: Integer = Field(ge=0, le=MAX_ID, description="The seq of the game it follows (0: before the first).")
    vectors: dict[PlayerKey, Vector]
    seats: ExportedSeats | None = Field(None, description="The learned seats the refit set, for a ladder with seats.")
    pulls: list[Annotated[Number, Field(gt=0.0, le=1.0)]] = Field(
        [],
        max_length=1000,
        description="The pulls of the seasons that closed here, in order: the vectors are the pulled ones, and the "
        "players' experience keeps the part 1 - pull of each.",
    )
    variances: dict[PlayerKey, Annotated[Number, Field(gt=0)]] | None = Field(
        None,
        description="Under the variance rule, the variances (logits²) the checkpoint kept for its players "
        "(mathematics §3b); a player it holds without one starts there afresh. null: none kept.",
    )


Count = Annotated[Integer, Field(ge=0, lt=2**31)]


class ExportedStanding(StrictModel):
    rank: Integer = Field(ge=1, lt=2**31)
    key: PlayerKey
    name: Name | None = None
    elo: Number
    strength_se: Number = Field(ge=0)
    conservative: Number
    provisional: StrictBool
    games: Count
    wins: Count
    draws: Count
    losses: Count


class ExportedSeason(StrictModel):
    name: SeasonName
    closed_at: Moment
    after_seq: Integer = Field(ge=0, le=MAX_ID, description="The seq of the season's last game (0: before the first).")
    first_seq: Integer | None = Field(None, ge=1, le=MAX_ID, description="The seq of its first game (null: none).")
    games: Count
    changed_at: Moment | None = None
    pull: Number = Field(0.0, ge=0.0, le=1.0, description="How far the ratings were pulled back when it closed.")
    standings: list[ExportedStanding] = Field(max_length=10_000_000, description="As archived, by rank.")


class PlayerLine(StrictModel):
    player: ExportedPlayer


class GameLine(StrictModel):
    game: ExportedGame


class CheckpointLine(StrictModel):
    checkpoint: ExportedCheckpoint


class SeasonLine(StrictModel):
    season: ExportedSeason


LINES: dict[str, type[StrictModel]] = {
    "player": PlayerLine,
    "game": GameLine,
    "checkpoint": CheckpointLine,
    "season": SeasonLine,
}
