from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import BaseModel, Field, StrictBool

from app.core.schemas import ELO_CHANGE, Name, Page, PlayerKey, StrictModel, Vector


class PlayerCreate(StrictModel):
    key: PlayerKey
    name: Name | None = None
    vector: Vector | None = Field(
        None,
        description="Explicit initial vector (2k numbers), e.g. migrated ratings; default: seeded draw "
        "(mathematics §2).",
    )

    model_config = StrictModel.model_config | {"json_schema_extra": {"examples": [{"key": "ann", "name": "Ann"}]}}


StrengthSE = Annotated[
    float,
    Field(
        description="Standard error of the strength, in Elo points: how far the results so far leave it uncertain "
        "(mathematics §8). Large for newcomers, shrinking with every game, and growing again with time away."
    ),
]
Conservative = Annotated[
    float,
    Field(
        description="Elo-equivalent strength minus two standard errors: a strength the results support with about "
        "97.5% confidence. The default order of the front-end."
    ),
]
Moved = Annotated[
    float | None,
    Field(
        description="Elo points others' games moved the player by since their own last game: a strength is measured "
        "against the whole field, so it moves when others play, while the player's own rating stands still. Not "
        "what their last game did (that is `last_game_change`). null when unknown (no game yet, or replayed since)."
    ),
]
LastGameChange = Annotated[
    float | None,
    Field(
        description="Elo points the player's own last game gave or took (its `elo_change` in their history: as "
        "its post answered). null before their first game."
    ),
]
InactiveReason = Annotated[
    str | None,
    Field(
        description="Why the player is off the default leaderboard, in words: a write key set them inactive, or they "
        'have not played for longer than the ladder\'s `inactive_after_days` ("last played 94 days ago: …"; their '
        "next game brings them back). null: listed."
    ),
]
LadderClock = Annotated[
    datetime | None,
    Field(
        description="The ladder's clock: the newest `played_at` of its games (null before any). Standard errors grow "
        "with the time from a player's last game to it, and `inactive_after_days` counts by it, so the same games "
        "always give the same answer."
    ),
]
ResultsToRank = Annotated[
    int,
    Field(
        description="How many more results against others the player needs before the leaderboard ranks them "
        "(3 in all, whatever the results: a two-sided game is one result, a free-for-all one per other side); 0 "
        "once they have them. A player with none left may still be provisional: see `provisional`.",
        ge=0,
    ),
]
ProvisionalReason = Annotated[
    str | None,
    Field(
        description="Why the player is provisional, in words; for an established player whose place rests on the "
        "Elo scale alone (their cyclic coordinates are not pinned down yet), that; null when every coordinate is "
        "placed."
    ),
]


class PlayerOut(BaseModel):
    ladder_version: int | None = Field(
        None,
        description="The ladder version the profile was read at (on `GET` also its `ETag`; `If-None-Match` gets "
        "a 304 while it holds); a change's answer is read just after it committed.",
    )
    key: str
    aliases: list[str] = Field(
        description="Other keys that lead to this player: those of players merged into them, and keys they had "
        "before a change. Games, predictions and profile reads that name an alias reach this player."
    )
    name: str | None
    vector: list[float]
    strength: float = Field(description="Hodge strength in logits (mathematics §8).")
    rank: int | None = Field(
        None,
        description="Their place on the default leaderboard (`GET …/leaderboard`: by Hodge strength, active players) "
        "at this ladder version, as its `rank` says; null when they are not on it (set inactive, or away longer than "
        "the ladder's `inactive_after_days`).",
    )
    elo: float = Field(description="Elo-equivalent points: 1500 + 400·strength/ln 10.")
    strength_se: StrengthSE
    conservative: Conservative
    change_since_last_game: Moved = None
    last_game_change: LastGameChange = None
    games: int
    wins: int
    draws: int
    losses: int
    provisional: bool = Field(
        description="Not yet placed against the others: fewer than 3 results against others, whatever k, or "
        "outside the connected field of the latest applied refit (never both won and lost, or drawn, against it; "
        "mathematics §10). A refit that is not applied changes nothing here."
    )
    provisional_reason: ProvisionalReason = None
    results_to_rank: ResultsToRank = 0
    last_played_at: datetime | None
    created_at: datetime
    active: bool = Field(
        description="false: a write key set the player inactive, leaving them off the default leaderboard."
    )
    inactive_reason: InactiveReason = None
    ladder_clock: LadderClock = None


class MergeIn(StrictModel):
    into: PlayerKey = Field(description="The player who keeps every game of both.")

    model_config = StrictModel.model_config | {"json_schema_extra": {"examples": [{"into": "ann"}]}}


class PlayerPatch(StrictModel):
    """What a write key may change about a player; fields left out stay as they are."""

    name: Name | None = None
    active: StrictBool | None = Field(None, description="false: leave the default leaderboard, keep the ratings.")
    key: PlayerKey | None = Field(
        None,
        description="A new key (an admin key): the player's games name it from then on, and the old key stays an "
        "alias that leads to them. Case-folded in a ladder that matches keys case-insensitively.",
    )

    model_config = StrictModel.model_config | {
        "json_schema_extra": {"examples": [{"name": "Ann B."}, {"active": False}, {"key": "ann.b"}]}
    }


class LeaderboardItem(BaseModel):
    rank: int
    key: str
    name: str | None
    strength: float = Field(
        description="by=hodge: Hodge strength (logits); by=field: expected score vs the field; by=disc: u/v; "
        "by=conservative: the conservative strength (Elo points) (mathematics §8).",
    )
    elo: float = Field(description="Elo-equivalent of the Hodge strength.")
    strength_se: StrengthSE
    conservative: Conservative
    change_since_last_game: Moved = None
    last_game_change: float | None = Field(
        None,
        description="With `form=true`: Elo points the player's own last game gave or took (its `elo_change` in "
        "their history, as its post answered); null before their first game.",
    )
    games: int
    wins: int
    draws: int
    losses: int
    provisional: bool
    provisional_reason: ProvisionalReason = None
    results_to_rank: ResultsToRank = 0
    last_played_at: datetime | None
    active: bool
    inactive_reason: InactiveReason = None
    form: list[Literal["W", "D", "L"]] | None = Field(
        None,
        description="With `form=true`: the player's last results, newest first, at most 5: won, drew or lost as "
        "`wins`, `draws` and `losses` count them.",
    )


class LeaderboardPage(Page[LeaderboardItem]):
    prev_cursor: str | None = Field(
        None,
        description="Pass as `cursor` to get the page before this one (the `limit` rows just above its first); null "
        "when the page starts at rank 1.",
    )
    ladder_version: int = Field(
        description="The ladder version the page was computed at (also its `ETag`): every change to the ladder's "
        "players, games or ratings makes a new one."
    )
    ladder_clock: LadderClock = None


class HistoryItem(BaseModel):
    game_id: int = Field(description="The game's number within its ladder (its `id`: `…/games/{game_id}`).")
    seq: int = Field(description="The same number as `game_id` (the name earlier versions gave it).")
    played_at: datetime
    side: int
    opponents: list[str]
    partners: list[str] = Field(description="The player's teammates in this game (none in singles).")
    result: Literal["win", "draw", "loss"] = Field(
        description="The side's rank-share score above, at or below the average 1/N (a two-sided game: won, drew "
        "or lost), as the player's `wins`, `draws` and `losses` count it."
    )
    before: list[float]
    after: list[float]
    actual_score: float
    expected_score: float = Field(description="Expected rank-share score before the game (P(win) for 2 sides).")
    expected_after: float = Field(description="The same expectation recomputed with everyone's post-game vectors.")
    elo_before: float = Field(description="Elo-equivalent Hodge strength before the game, as `elo_after`.")
    elo_after: float = Field(
        description="Elo-equivalent Hodge strength after the game against today's field: c_afterᵀ Ω c̄ (mathematics §8)."
    )
    elo_change: float = Field(description=ELO_CHANGE)
    scores: list[float | None] | None = Field(
        None, description="Each side's score as posted, in side order (`side` is the player's); null if none was given."
    )
    match: list[list[int]] | None = Field(
        None, description="A match's games, each the two sides' points in side order (null for a single game)."
    )


class OpponentItem(BaseModel):
    key: str = Field(description="The opponent's key.")
    name: str | None = Field(description="The opponent's name.")
    probability: float = Field(description="P(player beats this opponent).")
    gain: float | None = Field(
        None,
        description="purpose=comparable: how much a game against them would help pin the player down (0-1): the "
        "cosine between the direction the player's results leave open and the one this game's likely result adds, "
        "times that result's probability.",
    )
    if_win: float = Field(
        description="Elo points the player would gain by beating them in a singles game now: what posting that game "
        "would show as the player's `elo_change` (the ladder's own update, no seat or advantage)."
    )
    if_lose: float = Field(description="Elo points the player would gain by losing that game (negative: a loss).")
    games_together: int = Field(
        description="Games the two have played together so far, against each other or as partners (see "
        "`…/head-to-head` for the record of each kind)."
    )
    last_played: datetime | None = Field(description="When the two last played together; null: never.")
    reason: str = Field(
        description="Why this game is suggested, in words: what it does for the player's ranking or rating, whether "
        "the opponent's own rating is settled, and whether the two have played lately."
    )


class MeetingRecord(BaseModel):
    games: int = Field(description="Games of this kind the two played.")
    wins: int = Field(description="Of them, won by the player (against them, or with them as partner).")
    draws: int = Field(description="Of them, drawn.")
    losses: int = Field(description="Of them, lost by the player.")


class HeadToHeadItem(BaseModel):
    key: str = Field(description="The other player's key.")
    name: str | None = Field(description="The other player's name.")
    games: int = Field(description="Games the two played together, of every kind.")
    last_played: datetime = Field(description="When the two last played together.")
    singles: MeetingRecord = Field(description="Singles (two sides of one player each) against them.")
    doubles: MeetingRecord = Field(
        description="Team games of two sides (doubles) with them on the other side: the player's side's result."
    )
    partners: MeetingRecord = Field(description="Games with them on the player's own side: the side's result.")
    free_for_all: MeetingRecord = Field(
        description="Games of three sides or more with them on another side: won when the player finished ahead of "
        "them, drawn when level."
    )


class MomentOut(BaseModel):
    game: int = Field(description="The number of the game the moment belongs to (`GET …/games/{id}`).")
    kind: Literal["first_win", "upset", "streak", "new_leader", "movers"] = Field(
        description="`first_win`: a player's first win on the ladder; `upset`: a win whose chance before the game "
        "was below 30%; `streak`: 3, 5, 10, 20, … wins in a row; `new_leader`: a new #1 of the standings after the "
        "game; `movers`: the biggest rise of the week that game closed (Monday to Sunday, UTC)."
    )
    players: list[str] = Field(description="The keys of the players it is about (the winners, the new #1, …).")
    text: str = Field(description='One line to show as it is, e.g. "Bob beat Ada with a 22% chance".')
    played_at: datetime = Field(description="When its game was played.")
    chance: float | None = Field(None, description="`upset`: the winners' chance before the game (0-1).")
    wins: int | None = Field(None, description="`streak`: wins in a row.")
    rise: float | None = Field(
        None, description="`movers`: the rise in Elo points over the week, the sum of its games' `elo_change`."
    )
    week: str | None = Field(None, description="`movers`: the ISO week, e.g. `2026-W47`.")


class MomentsPage(BaseModel):
    items: list[MomentOut]
    next_cursor: str | None = Field(
        description="Pass as `cursor` for older moments; null once the log (or `since`) is reached. A page looks "
        "through at most 500 games, so it may hold fewer than `limit` moments and still have a cursor."
    )
