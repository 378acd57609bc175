from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Literal, Self

from pydantic import BaseModel, Field, StrictBool, field_validator, model_validator

from app.core.schemas import Integer, Moment, Name, Number, NumberChoice, SeatName, Slug, StrictModel, Vector
from app.rating import ELO_PER_LOGIT
from app.rating.tuning import Limits

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
MAX_INACTIVE_DAYS = 36_500
#: The online rule of a new ladder: the variance rule, ahead of Elo with its rate tuned on every real stream of
#: bench/quality_defaults.py before any tuning of its own (docs/api.md, "Ladder defaults, and why"); a ladder's own
#: rate choice may move it (to the cyclic discs' larger share where the results show cycles, or to the step).
DEFAULT_RATE_RULE: Literal["steps", "variance"] = "variance"
#: The variance rule's process noise per comparison (Elo points, one standard deviation): the best of
#: bench/quality_defaults.py's on the real streams taken together.
DEFAULT_NOISE = 10.0
#: The variance rule's share of a step for the cyclic discs (φ): a quarter, between a straight ladder's best (0)
#: and a cyclic one's (0.5-0.8) on the quality streams, until the rate choice picks the ladder's own.
DEFAULT_CYCLES = 0.25
#: The largest settings a ladder takes: η, and the noise and drift in Elo points.  No rate choice goes past them
#: (RULE_LIMITS, in the rule's units), so a ladder's rule can always be set again as it runs, and its export restored.
MAX_ETA, MAX_NOISE_ELO, MAX_DRIFT_ELO = 10.0, 500.0, 2000.0
RULE_LIMITS = Limits(MAX_ETA, (MAX_NOISE_ELO / ELO_PER_LOGIT) ** 2, MAX_DRIFT_ELO / ELO_PER_LOGIT)

DRIFT = (
    "How far a player's strength may wander in a year without games, in Elo points (one standard deviation): their "
    "`strength_se` grows with the time since their last game, as the square root of it, so a player who stopped "
    "playing sinks in the conservative order and climbs back with their next games. Time is the ladder's clock, the "
    "newest `played_at` of its games. 0: uncertainty ignores time."
)
DRIFT_STEPS = (
    "The online step follows what is known of each player, as Glicko's and a Kalman filter's do: it is taken at "
    "the player's experience, their games worn away by the drift while they were away, so it is large for a "
    "newcomer and again for a player back from a long absence, and small for a settled regular (with `eta_tau`; "
    "a constant η ignores it). With it, the drift is one of the values the auto refits choose (`auto_rate`). "
    "false: the step counts games and ignores time (ladders created before it existed)."
)
SEAT_PRIOR = (
    "How far a seat's advantage may be from 0 before its first game, in logits (one standard deviation of its "
    "prior; mathematics §5): small, and the first games move it little; large, and they move it a lot. With "
    "`auto_rate`, the auto refits choose it from the log, with the rate. Ladders created before the setting keep 1."
)
RATE_RULE = (
    "The online rule. `steps`: the normalised step at η, shrinking with each player's experience (`eta_tau`; "
    "mathematics §3). `variance`: every player carries a variance of their strength, which grows by the `noise` "
    "before each game and by the drift while they are away (with `drift_steps`), and shrinks by what each game "
    "tells; it sets the size of their step, as Glicko's and a Kalman filter's do, so a regular keeps moving and a "
    "newcomer moves fast (mathematics §3b; a newcomer starts at the variance η/√2, and `eta_tau` is not used). "
    "Changing it replays the log after the latest checkpoint with the new rule. With `auto_rate`, the auto refits "
    "also try the other rule and move the ladder to it when its log shows that it pays."
)
NOISE = (
    "The variance rule's process noise: how far a player's strength may wander with each game they play, in Elo "
    "points (one standard deviation; mathematics §3b). Larger: steps stay larger, and ratings follow a changing "
    "field faster but are noisier. Always > 0, so no player's rating ever freezes. With `auto_rate`, the auto "
    "refits choose it from the log."
)
CYCLES = (
    "Under the variance rule, the share of each step that goes to the cyclic discs (the second disc on; "
    "mathematics §3b), the rest going to the first disc, which holds the straight ranking: 0 rates like a "
    "straight ladder (the best where games follow a ranking), larger learns rock-paper-scissors cycles faster. "
    "From 0 to below 1; ignored with k = 1. With `auto_rate`, the auto refits choose it from the log."
)
INACTIVE_AFTER_DAYS = (
    "Players who have not played for this many days (by the ladder's clock, the newest `played_at` of its games) "
    "leave the default leaderboard and the suggested opponents until their next game; `inactive_reason` says why. "
    "null: only an admin's `active: false` takes a player off."
)

SEASON_EVERY = (
    "Close a season by itself at the end of every calendar `month` or `quarter` (UTC), named after it (`2026-11`, "
    "`2026-Q4`), with the games played in it; a period without games closes none. null (the default): only an "
    "admin closes a season."
)
SEASON_PULL = (
    "The pull each automatic close applies (as `pull` of `POST …/seasons`): 0 (the default) keeps the ratings as "
    "they are, 1 starts everyone afresh."
)


PLAY = (
    "The kinds of games the ladder plays; a posted game of another kind is refused (422) with the rule it breaks. "
    "Every kind is allowed unless turned off, as on ladders created before the setting. The web page's record form "
    "offers only these."
)
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
    slug: Slug = Field(description="URL name of the ladder: lower-case letters, digits, `-`, `_`.")
    name: Name | None = None
    k: Integer = Field(
        DEFAULT_K, ge=1, le=8, description="Number of 2-D discs; rating vectors have 2k numbers (mathematics §1)."
    )
    eta: Number | None = Field(
        None,
        ge=0,
        le=MAX_ETA,
        description=f"Learning rate η of the normalised update (mathematics §3): where the ladder starts; its auto "
        f"refits may choose another from its log unless `auto_rate` is false. Under the variance rule a newcomer's "
        f"variance is η / √2 (§3b). Omitted: {DEFAULT_VARIANCE_ETA} under the variance rule, {DEFAULT_ETA} under "
        f"the steps rule.",
    )
    eta_tau: Number | None = Field(
        DEFAULT_ETA_TAU,
        gt=0,
        le=1e6,
        description="A player's η after n games is η / sqrt(1 + n / eta_tau): newcomers move fast, regulars settle. "
        "null: η is constant ([Guide]).",
    )
    init_scale: Number = Field(
        DEFAULT_INIT_SCALE, gt=0, le=100, description="Std. dev. of initial vectors (mathematics §2)."
    )
    init_offset: Vector | None = Field(
        None,
        description=f"Mean of initial vectors (2k numbers). Default (0, {DEFAULT_INIT_V0}, 0, …): players start near "
        "the Elo manifold c = (r, 1), so a new ladder behaves like Elo until its results show cycles (mathematics §2).",
    )
    seed: Integer | None = Field(None, ge=0, lt=2**63, description="Seed of initial vectors; random when omitted.")
    auto_create_players: StrictBool = Field(True, description="Create unknown players when a game names them.")
    auto_refit: StrictBool = Field(
        DEFAULT_AUTO_REFIT,
        description="From 1,000 games on, refit the whole log in the background each time it has grown by 20%, and "
        "apply the refit as a checkpoint only if it would have predicted the latest games better than the online "
        "ratings did (GET …/refits shows each one).",
    )
    auto_rate: StrictBool = Field(
        True,
        description="Each auto refit also chooses the learning rate (η and τ, and the drift where `drift_steps` is "
        "on) from the ladder's own log: 25 rates are replayed over every game, each game predicted only from the "
        "games before it (then 0, half and twice the drift, at 15 rates each), and the variance rule's newcomer "
        "variance and `noise` (`rate_rule`, 28 pairs, then the best pair's `cycles`), and the one that predicted "
        "best is applied (the log replayed with it, exactly) if it beat the ladder's rate by more than one standard "
        "error over games. false: the rate stays as set (pinned).",
    )
    drift: Number = Field(DEFAULT_DRIFT, ge=0, le=MAX_DRIFT_ELO, description=DRIFT)
    drift_steps: StrictBool = Field(True, description=DRIFT_STEPS)
    seat_prior: Number = Field(DEFAULT_SEAT_PRIOR, ge=0.01, le=10, description=SEAT_PRIOR)
    rate_rule: Literal["steps", "variance"] = Field(DEFAULT_RATE_RULE, description=RATE_RULE)
    noise: Number = Field(DEFAULT_NOISE, gt=0, le=MAX_NOISE_ELO, description=NOISE)
    cycles: Number = Field(DEFAULT_CYCLES, ge=0, lt=1, description=CYCLES)
    inactive_after_days: Integer | None = Field(None, ge=1, le=MAX_INACTIVE_DAYS, description=INACTIVE_AFTER_DAYS)
    season_every: Literal["month", "quarter"] | None = Field(None, description=SEASON_EVERY)
    season_pull: Number = Field(0.0, ge=0.0, le=1.0, description=SEASON_PULL)
    case_insensitive_keys: StrictBool = Field(
        True,
        description='Match player keys case-insensitively: "Ann" and "ann" are one player. Keys are stored '
        "case-folded (Unicode case folding), and a new player's spelling, where folding changed it, becomes their "
        "name. false: keys match exactly, as ladders created before this setting do.",
    )
    seats: list[SeatName] | None = Field(
        None,
        min_length=1,
        max_length=16,
        description='Seats whose advantages the ladder learns from the results, e.g. ["white", "black"], '
        '["home", "away"], ["server", "receiver"]; a game\'s side takes one with `seat` (mathematics §5).',
    )
    play: Play = Field(default_factory=Play, description=PLAY)

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

    name: Name | None = None
    auto_create_players: StrictBool | None = None
    auto_refit: StrictBool | None = None
    auto_rate: StrictBool | None = Field(
        None,
        description="true: the auto refits choose the learning rate from the ladder's log; false: pin it. Setting "
        "`eta` or `eta_tau` pins it too, unless `auto_rate: true` is sent with them.",
    )
    private: StrictBool | None = Field(None, description="Reads need a key of the ladder too (any role).")
    drift: Number | None = Field(None, ge=0, le=MAX_DRIFT_ELO, description=DRIFT)
    drift_steps: StrictBool | None = Field(None, description=DRIFT_STEPS)
    seat_prior: Number | None = Field(
        None,
        ge=0.01,
        le=10,
        description=SEAT_PRIOR + " With seats, setting it pins the rate, as `eta` does, and replays the log.",
    )
    rate_rule: Literal["steps", "variance"] | None = Field(
        None, description=RATE_RULE + " Setting it pins the rate, as `eta` does."
    )
    noise: Number | None = Field(
        None,
        gt=0,
        le=MAX_NOISE_ELO,
        description=NOISE + " Under the variance rule, setting it pins the rate and replays the log.",
    )
    cycles: Number | None = Field(
        None,
        ge=0,
        lt=1,
        description=CYCLES + " Under the variance rule, setting it pins the rate and replays the log.",
    )
    inactive_after_days: Integer | None = Field(
        None, ge=1, le=MAX_INACTIVE_DAYS, description=INACTIVE_AFTER_DAYS + " Send null to turn it off."
    )
    season_every: Literal["month", "quarter"] | None = Field(
        None, description=SEASON_EVERY + " Send null to turn it off; the first close is at the end of this period."
    )
    season_pull: Number | None = Field(None, ge=0.0, le=1.0, description=SEASON_PULL)
    case_insensitive_keys: StrictBool | None = Field(
        None,
        description="true: match player keys case-insensitively from now on; every key (and alias) becomes its "
        "case-folded form in the players and the log, a player without a name keeping the old spelling as it. 409 "
        "naming them if two keys would become one. false: match exactly again (keys stay as they are).",
    )
    k: Integer | None = Field(
        None,
        ge=1,
        le=8,
        description="A new number of discs: every player's initial vector gets the new length (its first numbers "
        "kept, new ones seeded as a new player's are), checkpoints of earlier refits are set aside, and the whole "
        "log is replayed from the start, exactly; a voided game's recorded vectors are cut or padded with zeros.",
    )
    eta: Number | None = Field(
        None,
        ge=0,
        le=MAX_ETA,
        description="A new learning rate η: the log after the latest checkpoint is replayed with it, exactly, as a "
        "void's replay is, and `/audit` checks it.",
    )
    eta_tau: Number | None = Field(
        None,
        gt=0,
        le=1e6,
        description="A new τ (η shrinking with games played), replayed the same way; null: η becomes constant.",
    )
    play: PlayPatch | None = Field(
        None, description=PLAY + " Only the kinds given change; games recorded before stay as they are."
    )

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
    rate_rule: Literal["steps", "variance"] | None = Field(
        None, description="The online rule chosen with it (`rate_rule`); null: chosen before the rule could be."
    )
    previous_rate_rule: Literal["steps", "variance"] | None = Field(None, description="The rule it replaced.")
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
    slug: str
    name: str | None
    k: int
    eta: float
    eta_tau: float | None
    init_scale: float
    init_offset: list[float] | None
    seed: int
    auto_create_players: bool
    auto_refit: bool
    auto_rate: bool = Field(
        description="The auto refits choose the learning rate from the log (false: it is pinned as set)."
    )
    rate_choice: RateChoiceOut | None = Field(
        None, description="The latest learning rate a refit chose and applied; null: none has (the rate is as set)."
    )
    private: bool
    case_insensitive_keys: bool
    drift: float = Field(description=DRIFT)
    drift_steps: bool = Field(description=DRIFT_STEPS)
    seat_prior: float = Field(description=SEAT_PRIOR)
    rate_rule: Literal["steps", "variance"] = Field(description=RATE_RULE)
    noise: float = Field(description=NOISE)
    cycles: float = Field(description=CYCLES)
    inactive_after_days: int | None = Field(description=INACTIVE_AFTER_DAYS)
    season_every: Literal["month", "quarter"] | None = Field(description=SEASON_EVERY)
    season_pull: float = Field(description=SEASON_PULL)
    created_at: datetime
    players: int
    games: int
    auto_refit_note: str | None = Field(
        None,
        description="With `auto_refit`, when the latest auto refits failed: why, and at how many games the next "
        "starts (each failure in a row doubles the growth of the log it waits for).",
    )
    seats: list[SeatOut] | None = Field(
        None, description="The learned seats, as the results so far set them (mathematics §5); null without seats."
    )
    play: Play = Field(description=PLAY)


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
