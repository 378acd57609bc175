"""The ladders' request and response models.  A ladder's settings are declared once, in
:data:`app.core.ladder_settings.SETTINGS`: ``LadderCreate``, ``LadderPatch`` and ``LadderOut`` name each setting's type
(which mypy reads) and take its bounds and descriptions from there (:func:`_create`, :func:`_patch`, :func:`_out`);
``LadderCreate`` gives its default."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any, Literal, Self

from pydantic import BaseModel, Field, StrictBool, field_validator, model_validator
from pydantic_core import PydanticUndefined

from app.core.ladder_settings import MAX_DRIFT_ELO, MAX_ETA, MAX_NOISE_ELO, SETTINGS
from app.core.schemas import Integer, Moment, Name, Number, NumberChoice, SeatName, Slug, StrictModel, Vector
from app.rating import ELO_PER_LOGIT
from app.rating.tuning import Limits

RateRule = Literal["steps", "variance"]
SeasonEvery = Literal["month", "quarter"]

# Chosen by bench/quality.py on the first half of nine streams and confirmed on the second halves
# (docs/api.md, "Ladder defaults, and why").
DEFAULT_K = 2
#: η of a new ladder under each online rule: the shrinking step's, and the variance rule's (a newcomer's variance
#: u₀ = η / √2, about 1 logit²: the spread of a field's strengths).
DEFAULT_ETA = 0.7
DEFAULT_VARIANCE_ETA = 1.4
DEFAULT_ETA_TAU = 3.0
DEFAULT_INIT_SCALE = 0.05
DEFAULT_INIT_V0 = 1.0
#: The seats' prior of a new ladder (logits): home and first-move advantages are rarely beyond 0.5 logit, and
#: this predicted each seated stream of bench/quality.py better than 1 did (its seats table).
DEFAULT_SEAT_PRIOR = 0.5
DEFAULT_AUTO_REFIT = True
# The largest drift two football seasons leave room for (docs/api.md, "Time away").
DEFAULT_DRIFT = 100.0
#: The online rule of a new ladder: the variance rule, ahead of Elo with its rate tuned on every real stream of
#: bench/quality_defaults.py before any tuning of its own (docs/api.md, "Ladder defaults, and why"); a ladder's own
#: rate choice may move it (to the cyclic discs' larger share where the results show cycles, or to the step).
DEFAULT_RATE_RULE: RateRule = "variance"
#: The variance rule's process noise per comparison (Elo points, one standard deviation): the best of
#: bench/quality_defaults.py's on the real streams taken together.
DEFAULT_NOISE = 10.0
#: The variance rule's share of a step for the cyclic discs (φ): a quarter, between a straight ladder's best (0)
#: and a cyclic one's (0.5-0.8) on the quality streams, until the rate choice picks the ladder's own.
DEFAULT_CYCLES = 0.25
#: The bounds of the ladder's rule (app.core.ladder_settings) in the rule's units: no rate choice goes past them.
RULE_LIMITS = Limits(MAX_ETA, (MAX_NOISE_ELO / ELO_PER_LOGIT) ** 2, MAX_DRIFT_ELO / ELO_PER_LOGIT)

#: ``LadderCreate``'s texts that quote the defaults (app.core.ladder_settings has the settings' other texts).
ETA = (
    f"Learning rate η of the normalised update (mathematics §3): where the ladder starts; its auto refits may choose "
    f"another from its log unless `auto_rate` is false. Under the variance rule a newcomer's variance is η / √2 "
    f"(§3b). Omitted: {DEFAULT_VARIANCE_ETA} under the variance rule, {DEFAULT_ETA} under the steps rule."
)
INIT_OFFSET = (
    f"Mean of initial vectors (2k numbers). Default (0, {DEFAULT_INIT_V0}, 0, …): players start near the Elo "
    "manifold c = (r, 1), so a new ladder behaves like Elo until its results show cycles (mathematics §2)."
)


def _create(name: str, default: Any = PydanticUndefined, **more: Any) -> Any:
    """``LadderCreate``'s field of the setting ``name``: ``default`` (none: required), its bounds and its text, and
    ``more`` of ``Field``'s arguments."""
    setting = SETTINGS[name]
    return Field(default, **({"description": setting.on_create or setting.description} | setting.bounds() | more))


def _patch(name: str) -> Any:
    """``LadderPatch``'s field of the setting ``name``: its bounds and its text; left out, null (unchanged)."""
    setting = SETTINGS[name]
    return Field(None, description=setting.on_patch or setting.description, **setting.bounds())


def _out(name: str, default: Any = PydanticUndefined) -> Any:
    """``LadderOut``'s field of the setting ``name``: its text, and no bounds (it shows the ladder as it is)."""
    return Field(default, description=SETTINGS[name].description)


SINGLES = "Games of two sides of one player each."
DOUBLES = "Games of two sides where a side has more than one player (doubles, or larger teams)."
FREE_FOR_ALL = "Games of more than two sides."
DRAWS = "Games where sides tie (equal ranks or equal scores)."
POINTS = (
    "11 or 21: a game is played to that many points, and a game's scores, where given, must be a score that ends "
    "one (the winner reaches it with a lead of 2; past 10-10 or 20-20, at a lead of 2: 12-10, 13-11). The web "
    "page then asks for the points. null: any score."
)
BEST_OF = (
    "1, 3 or 5: a match (`match`, its games' points) has at most this many games and ends when a side has won "
    "a majority of them; the page asks for each game's points. 1: single games (a match is one game)."
)
Points = Annotated[Literal[11, 21], NumberChoice]
BestOf = Annotated[Literal[1, 3, 5], NumberChoice]


class Play(StrictModel):
    """The kinds of games a ladder plays."""

    singles: StrictBool = Field(True, description=SINGLES)
    doubles: StrictBool = Field(True, description=DOUBLES)
    free_for_all: StrictBool = Field(True, description=FREE_FOR_ALL)
    draws: StrictBool = Field(True, description=DRAWS)
    points: Points | None = Field(None, description=POINTS)
    best_of: BestOf = Field(1, description=BEST_OF)

    model_config = StrictModel.model_config | {
        "json_schema_extra": {"examples": [{"free_for_all": False, "draws": False, "points": 11, "best_of": 3}]}
    }

    @model_validator(mode="after")
    def _some_kind(self) -> Self:
        if not (self.singles or self.doubles or self.free_for_all):
            raise ValueError("a ladder plays at least one of singles, doubles and free_for_all")
        return self


class PlayPatch(StrictModel):
    """The kinds of games to change; those left out stay as they are."""

    singles: StrictBool | None = Field(None, description=SINGLES)
    doubles: StrictBool | None = Field(None, description=DOUBLES)
    free_for_all: StrictBool | None = Field(None, description=FREE_FOR_ALL)
    draws: StrictBool | None = Field(None, description=DRAWS)
    points: Points | None = Field(None, description=POINTS + " Send null for any score.")
    best_of: BestOf | None = Field(None, description=BEST_OF)

    model_config = StrictModel.model_config | {"json_schema_extra": {"examples": [{"draws": False}]}}


class LadderCreate(StrictModel):
    slug: Slug = _create("slug")
    name: Name | None = _create("name", None)
    k: Integer = _create("k", DEFAULT_K)
    eta: Number | None = _create("eta", None, description=ETA)
    eta_tau: Number | None = _create("eta_tau", DEFAULT_ETA_TAU)
    init_scale: Number = _create("init_scale", DEFAULT_INIT_SCALE)
    init_offset: Vector | None = _create("init_offset", None, description=INIT_OFFSET)
    seed: Integer | None = _create("seed", None)
    auto_create_players: StrictBool = _create("auto_create_players", True)
    auto_refit: StrictBool = _create("auto_refit", DEFAULT_AUTO_REFIT)
    auto_rate: StrictBool = _create("auto_rate", True)
    drift: Number = _create("drift", DEFAULT_DRIFT)
    drift_steps: StrictBool = _create("drift_steps", True)
    seat_prior: Number = _create("seat_prior", DEFAULT_SEAT_PRIOR)
    rate_rule: RateRule = _create("rate_rule", DEFAULT_RATE_RULE)
    noise: Number = _create("noise", DEFAULT_NOISE)
    cycles: Number = _create("cycles", DEFAULT_CYCLES)
    inactive_after_days: Integer | None = _create("inactive_after_days", None)
    season_every: SeasonEvery | None = _create("season_every", None)
    season_pull: Number = _create("season_pull", 0.0)
    case_insensitive_keys: StrictBool = _create("case_insensitive_keys", True)
    seats: list[SeatName] | None = _create("seats", None, min_length=1, max_length=16)
    play: Play = _create("play", default_factory=Play)

    model_config = StrictModel.model_config | {
        "json_schema_extra": {
            "examples": [
                {"slug": "office-pingpong", "name": "Office ping-pong", "k": 1},
                {"slug": "league", "seats": ["home", "away"]},
                {"slug": "pong", "play": {"free_for_all": False, "draws": False, "points": 11, "best_of": 3}},
            ]
        }
    }

    @field_validator("seats")
    @classmethod
    def _distinct(cls, seats: list[str] | None) -> list[str] | None:
        if seats is not None and len(set(seats)) < len(seats):
            raise ValueError("each seat is named once")
        return seats


class LadderPatch(StrictModel):
    """Settings an admin key may change; those left out stay as they are."""

    name: Name | None = _patch("name")
    auto_create_players: StrictBool | None = _patch("auto_create_players")
    auto_refit: StrictBool | None = _patch("auto_refit")
    auto_rate: StrictBool | None = _patch("auto_rate")
    private: StrictBool | None = _patch("private")
    drift: Number | None = _patch("drift")
    drift_steps: StrictBool | None = _patch("drift_steps")
    seat_prior: Number | None = _patch("seat_prior")
    rate_rule: RateRule | None = _patch("rate_rule")
    noise: Number | None = _patch("noise")
    cycles: Number | None = _patch("cycles")
    inactive_after_days: Integer | None = _patch("inactive_after_days")
    season_every: SeasonEvery | None = _patch("season_every")
    season_pull: Number | None = _patch("season_pull")
    case_insensitive_keys: StrictBool | None = _patch("case_insensitive_keys")
    k: Integer | None = _patch("k")
    eta: Number | None = _patch("eta")
    eta_tau: Number | None = _patch("eta_tau")
    play: PlayPatch | None = _patch("play")

    model_config = StrictModel.model_config | {"json_schema_extra": {"examples": [{"private": True}, {"eta": 0.5}]}}


class LadderDelete(StrictModel):
    """The slug again, to confirm: a deleted ladder cannot be brought back except from an export."""

    slug: str = Field(description="The ladder's slug, repeated.")

    model_config = StrictModel.model_config | {"json_schema_extra": {"examples": [{"slug": "office"}]}}


class LadderDeleted(BaseModel):
    slug: str
    players: int = Field(description="Players deleted with it.")
    games: int = Field(description="Games deleted with it (voided ones too).")


Role = Literal["read", "write", "admin"]


class KeyCreate(StrictModel):
    name: Name = Field(description="Who or what uses it, e.g. `game-server-3`.")
    role: Role = Field(
        description="`read` reads a private ladder; `write` also posts players and games; `admin` also manages keys "
        "and settings."
    )
    expires_at: Moment | None = Field(
        None, description="From then on the key is refused (a time in the future); null: it does not expire."
    )

    model_config = StrictModel.model_config | {
        "json_schema_extra": {
            "examples": [
                {"name": "front desk", "role": "write"},
                {"name": "dashboard", "role": "read", "expires_at": "2027-06-30T00:00:00Z"},
            ]
        }
    }

    @field_validator("expires_at")
    @classmethod
    def _in_the_future(cls, value: datetime | None) -> datetime | None:
        if value is not None and value <= datetime.now(UTC):
            raise ValueError("must be in the future")
        return value


class KeyOut(BaseModel):
    id: int
    name: str
    role: Role
    created_at: datetime
    revoked_at: datetime | None
    last_used_at: datetime | None = Field(
        description="When a request last used it (recorded at most once a minute per server process); null: never."
    )
    expires_at: datetime | None = Field(description="When it stops working; null: never.")


class KeyCreated(KeyOut):
    key: str = Field(description="The bearer key. Shown only this once; the service keeps its hash.")


class SeatOut(BaseModel):
    name: str
    advantage_elo: float = Field(description="The learned advantage in Elo points (400/ln 10 per logit).")
    advantage_elo_se: float = Field(description="Its standard error in Elo points.")


class RateChoiceOut(BaseModel):
    """The learning rate a refit chose from the ladder's own log and applied, and what it was chosen on."""

    eta: float
    eta_tau: float | None
    previous_eta: float = Field(description="The rate it replaced.")
    previous_eta_tau: float | None
    drift: float | None = Field(None, description="The drift chosen with it (`drift_steps`); null: not chosen.")
    previous_drift: float | None = None
    seat_prior: float | None = Field(None, description="The seats' prior chosen with it; null: no seats.")
    previous_seat_prior: float | None = None
    rate_rule: RateRule | None = Field(
        None, description="The online rule chosen with it (`rate_rule`); null: chosen before the rule could be."
    )
    previous_rate_rule: RateRule | None = Field(None, description="The rule it replaced.")
    noise: float | None = Field(None, description="The variance rule's noise chosen with it (`noise`, Elo points).")
    previous_noise: float | None = Field(None, description="The noise it replaced.")
    cycles: float | None = Field(None, description="The variance rule's `cycles` chosen with it.")
    previous_cycles: float | None = Field(None, description="The `cycles` it replaced.")
    log_loss: float = Field(
        description="Mean prequential log loss per game at the chosen rate, over the log's latest `scored_games`."
    )
    previous_log_loss: float = Field(
        description="The same at the rate it replaced (for a seats' prior chosen, at the rule chosen with the "
        "ladder's prior)."
    )
    standard_error: float = Field(description="The standard error (over games) of the difference of the two.")
    games: int = Field(description="Games of the log the rates were replayed over.")
    scored_games: int | None = Field(
        None,
        description="Its latest games the losses are over: its latest half for a rule, all of it for a seats' prior; "
        "null: chosen before the latest half was scored alone.",
    )
    refit: int = Field(description="The refit that chose it (`GET …/refits/{id}` lists every candidate).")
    applied_at: datetime


class LadderOut(BaseModel):
    slug: str = _out("slug")
    name: str | None = _out("name")
    k: int = _out("k")
    eta: float = _out("eta")
    eta_tau: float | None = _out("eta_tau")
    init_scale: float = _out("init_scale")
    init_offset: list[float] | None = _out("init_offset")
    seed: int = _out("seed")
    auto_create_players: bool = _out("auto_create_players")
    auto_refit: bool = _out("auto_refit")
    auto_rate: bool = _out("auto_rate")
    rate_choice: RateChoiceOut | None = Field(
        None, description="The latest learning rate a refit chose and applied; null: none has (the rate is as set)."
    )
    private: bool = _out("private")
    case_insensitive_keys: bool = _out("case_insensitive_keys")
    drift: float = _out("drift")
    drift_steps: bool = _out("drift_steps")
    seat_prior: float = _out("seat_prior")
    rate_rule: RateRule = _out("rate_rule")
    noise: float = _out("noise")
    cycles: float = _out("cycles")
    inactive_after_days: int | None = _out("inactive_after_days")
    season_every: SeasonEvery | None = _out("season_every")
    season_pull: float = _out("season_pull")
    created_at: datetime
    players: int
    games: int
    auto_refit_note: str | None = Field(
        None,
        description="With `auto_refit`, when the latest auto refits failed: why, and at how many games the next "
        "starts (each failure in a row doubles the growth of the log it waits for).",
    )
    seats: list[SeatOut] | None = _out("seats", None)
    play: Play = _out("play")


class LadderCreated(LadderOut):
    admin_key: str = Field(
        description="The ladder's first admin key: it posts games and manages keys and settings. Shown only once."
    )
    write_key: str = Field(
        description="The same admin key as `admin_key`, under the name earlier versions gave it (kept so that "
        "existing clients keep working)."
    )


class AuditOut(BaseModel):
    consistent: bool = Field(
        description="Replaying the event log reproduces every stored vector exactly, and the counts of players "
        "and games the ladder keeps (`players`, `games` of the ladder) equal its rows."
    )
    counts_consistent: bool = Field(
        description="The ladder's kept counts of players, of games that count and of their comparisons (pairs of "
        "sides, which schedule the auto refits) equal a count of its rows."
    )
    games: int
    players: int
    max_abs_diff: float
    replayed_games: int = Field(description="Games replayed: those after the latest checkpoint, or all.")
    checkpoint_after_game: int | None = Field(
        description="The game (its number in the ladder) after which the checkpoint replayed from (an applied "
        "refit, or a season that pulled the ratings back) was taken, if any: the audit replays the games after it."
    )
