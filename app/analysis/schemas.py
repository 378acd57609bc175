from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import BaseModel, Field, StrictBool

from app.core.schemas import Integer, Number, StrictModel
from app.rating.refit.prior import L2
from app.rating.refit.selection import FOLDS, L2_CHOICES


class RefitIn(StrictModel):
    """Options of a maximum-likelihood refit of the whole log (mathematics §9).

    Every option is strictly typed, as JSON writes it: a number is a JSON number (an integer is one too), an
    integer is a JSON integer (not 2.0, not "2", not true), a boolean is true or false (not 0 or 1).
    """

    l2: Number | None = Field(
        L2,
        ge=0,
        le=1000,
        description="L2 penalty λ of the prior N(μ, 1/(2λ)) on the vectors, centred on the Elo manifold "
        "μ = (0, 1, 0, …). With k ≥ 2 it applies to the cyclic discs, and the first disc keeps a weak prior on r "
        f"and a tight one on v = 1. null: choose among {', '.join(map(str, L2_CHOICES))} by held-out loss "
        f"(sparse ladders need a firmer prior; needs holdout > 0; when nothing could be held out, {L2:g}).",
    )
    restarts: Integer = Field(
        3, ge=1, le=20, description="Seeded random starts; the best is kept, their agreement reported."
    )
    holdout: Number = Field(
        0.2,
        ge=0,
        lt=0.9,
        description="Fraction of the matchups (pairs of lineups that met) whose games are held out for the report "
        "(0: none). When the draw holds out none or all of them (a ladder of one or a few matchups), nothing is held "
        "out: the report says so in `heldout_note`.",
    )
    select_k: list[Annotated[Integer, Field(ge=0, le=8)]] | None = Field(
        None,
        description="Choose k among these (0 = Elo, at most the ladder's k) by cross-validation over `folds` folds "
        "of whole matchups: the smallest k whose mean held-out log loss is within one standard error of the lowest "
        "(`result.k_selection` gives each k's mean, standard error and loss per fold). Two or more need holdout > 0; "
        "when nothing could be held out, the smallest.",
    )
    tune_rate: StrictBool = Field(
        False,
        description="Also choose the online rule's learning rate from the ladder's own log: each of 25 rates (η "
        "times 0.25-4, τ none or 1-30) is replayed over every game from the initial vectors, each game predicted "
        "from the games before it, and scored on the log's latest half (what a rate does once a ladder is under way "
        "predicts its next games); `result.rate` gives the rate that predicted best if it beat the ladder's by more "
        "than one standard error over those games for one challenger, more for more (about 2.2 for 60 to 90: the "
        "best of many looks better than it is by luck alone), else the ladder's own; each candidate's log loss, and "
        "whether it was applied. Applying the refit applies the rate too (the log replayed with it), unless the "
        "ladder's rate is pinned (`auto_rate` false) or was changed since. Auto refits choose it on ladders with "
        "`auto_rate`, and apply it even when the guard keeps their fit out.",
    )
    folds: Integer = Field(
        FOLDS,
        ge=2,
        le=10,
        description="Folds of the cross-validation that chooses k (`select_k`); fewer if the "
        "ladder has fewer matchups. Each costs one fit per k.",
    )
    eta: Number | None = Field(
        None, ge=0, le=10, description="η of the replayed online rule in the report (default: the ladder's)."
    )
    replay_k: Integer | None = Field(
        None, ge=1, le=8, description="k of the replayed online rule in the report (default: the ladder's)."
    )
    seed: Integer = Field(0, ge=0, lt=2**32, description="Seed of the split and of the starts.")
    auto: StrictBool = Field(
        False,
        description="Guarded, applied by the service (what a ladder's auto-refit posts): first fit all but the "
        "latest games and replay the online rule from that fit over them; only if that predicts them better than "
        "the online ratings did is the refit of the whole log applied as a checkpoint, otherwise it is rejected.",
    )

    model_config = StrictModel.model_config | {
        "json_schema_extra": {"examples": [{"restarts": 3, "holdout": 0.2}, {"select_k": [0, 1, 2], "eta": 0.05}]}
    }


class RefitOut(BaseModel):
    id: int
    status: Literal["queued", "running", "done", "rejected", "failed", "cancelled"] = Field(
        description="rejected: an auto refit that would not have predicted the latest games better (see result). "
        "cancelled: an auto refit replaced by a refit asked for on the same ladder (a ladder runs one at a time)."
    )
    progress: float = Field(description="0 to 1.")
    params: dict
    result: dict | None = Field(
        description="When done: k, log-likelihood, held-out log loss / Brier / accuracy of the refit, the current "
        "ratings, the Elo baseline and the replayed online rule (accuracy over decided games: null if every held-out "
        "game was a draw); restart agreement; identifiability of the fit (each list cut to its first 100 "
        "players or components, a component to 100 players: `counts` gives the full lengths, `truncated` says "
        "whether anything was cut, and `GET …/identifiability?ratings=refit` lists them all). `heldout_note`: null "
        "when held-out metrics were computed, else why nothing was held out (`heldout` is then empty and the fit "
        "used every game: holdout 0, or a ladder of one or a few matchups that the split could not divide)."
    )
    error: str | None
    after_game: int | None = Field(description="The refit saw the games up to this one (its number in the ladder).")
    created_at: datetime
    finished_at: datetime | None
    applied_at: datetime | None


class CheckpointOut(BaseModel):
    id: int
    refit: int
    after_game: int
    replayed_games: int = Field(description="Games posted after the refit's last game, replayed on its vectors.")


class NotComparable(BaseModel):
    key: str
    reason: str
    direction: list[float] | None = Field(description="A direction in which the data do not pin the vector down.")


#: How to read the intransitivity measure: the one sentence the API, the CLI, the web page and the docs all use.
INTRANSITIVITY_SCALE = (
    "below 1 the ranking (the transitive part) outweighs the cycles, above 1 the cycles (rock-paper-scissors) "
    "outweigh the ranking, and 1 means they weigh the same (as when every player is equal)"
)
REPORT_VERSION = (
    "The ladder version the report was computed at. On a ladder of at least `MELO_REPORT_JOB_GAMES` games the "
    "latest report computed is answered at once, and may be a few versions behind while a newer one is computed."
)


class IdentifiabilityOut(BaseModel):
    unique: bool = Field(description="Algorithm 1 ([Guide]) reached every player: the advantage matrix is unique.")
    comparable: list[str]
    not_comparable: list[NotComparable]
    clique: list[str] = Field(description="The 2k+1 players with results both ways that Algorithm 1 started from.")
    components: list[list[str]] = Field(
        description="Strongly connected components of the 'beat' graph ([Intransitivity])."
    )
    ladder_version: int | None = Field(None, description=REPORT_VERSION)


class IntransitivityOut(BaseModel):
    ladder_version: int = Field(description=REPORT_VERSION)
    measure: float = Field(description=f"(1 + ‖cyclic‖) / (1 + ‖transitive‖): {INTRANSITIVITY_SCALE}.")
    transitive_norm: float
    cyclic_norm: float
    empirical: dict | None = Field(
        description="The same from the observed win rates (null below 3 observed pairs): `measure`, "
        "`transitive_norm`, `cyclic_norm`, `pairs` observed, and `converged`: false when the least-squares fit of "
        "the transitive part stopped at its iteration bound (a very large ladder whose players meet only near "
        "neighbours), so its norms are approximate."
    )


class BlockOut(BaseModel):
    sigma: float
    share: float = Field(description="Share of ‖A‖² in this disc: 2σ²/‖A‖².")
    kind: Literal["transitive", "cyclic"]


class CanonicalPlayer(BaseModel):
    key: str
    coordinates: list[float] = Field(description="(u, v) of each disc, largest disc first.")
    strength: float | None = Field(description="u/v in the dominant disc when it is transitive ([Limitations]).")
    consistency: float | None = Field(description="v in the dominant disc when it is transitive.")


class CanonicalOut(BaseModel):
    blocks: list[BlockOut]
    players: list[CanonicalPlayer] = Field(description="A page of players, in the order they joined the ladder.")
    next_cursor: str | None = Field(description="Pass as `cursor` for the next page; null on the last.")
    ladder_version: int = Field(description="The ladder version the form was computed at.")
