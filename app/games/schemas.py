from __future__ import annotations

from datetime import datetime
from typing import Annotated

from pydantic import BaseModel, Field, ValidationInfo, field_validator

from app.core.schemas import (
    ELO_CHANGE,
    MAX_SCORE,
    ExternalId,
    Integer,
    Moment,
    Number,
    PlayerKey,
    Reason,
    SeatAdvantage,
    StrictModel,
    distinct_seats,
)

#: The most games a match has (a best of 5).
MAX_MATCH_GAMES = 5
#: One game of a match: each side's points, in side order.
MatchGame = Annotated[
    list[Annotated[Integer, Field(ge=0, le=9999)]],
    Field(min_length=2, max_length=2, description="Each side's points in this game, in side order."),
]


class SideIn(SeatAdvantage):
    players: list[PlayerKey] = Field(min_length=1, max_length=32, description="One player, or an ad-hoc team.")
    rank: Number | None = Field(
        None,
        ge=-MAX_SCORE,
        le=MAX_SCORE,
        description="Finishing rank, 1 = best; equal ranks tie. Any number from -1,000,000 to 1,000,000: only the "
        "order counts.",
    )
    score: Number | None = Field(
        None,
        ge=-MAX_SCORE,
        le=MAX_SCORE,
        description="Score, higher = better: instead of a rank, or with one if they agree (the higher score has "
        "the better rank, equal scores equal ranks); any number from -1,000,000 to 1,000,000, negative ones too "
        "(e.g. minus the strokes where fewer is better). Kept and shown with the game.",
    )


class GameIn(StrictModel):
    # Before `sides`, whose check reads it: with a match, the sides carry no rank or score.
    match: list[MatchGame] | None = Field(
        None,
        min_length=1,
        description="A match rated as one game: its games in order, each the two sides' points in side order, e.g. "
        "`[[11, 7], [9, 11], [11, 5]]`. Only for two sides, which then carry no `rank` or `score`: the side that "
        "won more games wins, and each side's `score` is its games won. At most the ladder's `best_of` games, "
        "ending when one side has won a majority of them; no game tied. The margin does not move the ratings.",
    )
    sides: list[SideIn] = Field(min_length=2, max_length=64)
    played_at: Moment | None = Field(
        None,
        description="When it was played (default: now), from 1900-01-01T00:00:00Z to 2200-01-01T00:00:00Z once in "
        "UTC; stored in UTC, a time without zone is taken as UTC. A number (or a string of digits) is also taken, "
        "as a Unix time since 1970-01-01T00:00:00Z: in seconds up to 2e10 in size, in milliseconds above.",
    )
    external_id: ExternalId | None = Field(
        None, description="Your id (up to 200 printable characters); also an idempotency key."
    )

    model_config = StrictModel.model_config | {
        "json_schema_extra": {
            "examples": [
                {"sides": [{"players": ["ann"], "rank": 1}, {"players": ["bob"], "rank": 2}]},
                {
                    "sides": [
                        {"players": ["ann", "cy"], "score": 21, "win_probability": 0.55},
                        {"players": ["bob", "dee"], "score": 17},
                    ],
                    "external_id": "match-8812",
                },
                {"sides": [{"players": ["ada"]}, {"players": ["bob"]}], "match": [[11, 7], [9, 11], [11, 5]]},
            ]
        }
    }

    @field_validator("match")
    @classmethod
    def _a_match(cls, match: list[list[int]] | None) -> list[list[int]] | None:
        if match is None:
            return None
        if len(match) > MAX_MATCH_GAMES:
            raise ValueError(f"a match has at most {MAX_MATCH_GAMES} games (a best of {MAX_MATCH_GAMES})")
        for n, (a, b) in enumerate(match):
            if a == b:
                raise ValueError(f"game {n + 1} is tied {a}-{b}: every game of a match has a winner")
        won = match_wins(match)
        if won[0] == won[1]:
            raise ValueError(f"the match is undecided at {won[0]}-{won[1]}: one side must win more games")
        return match

    @field_validator("sides")
    @classmethod
    def _consistent(cls, sides: list[SideIn], info: ValidationInfo) -> list[SideIn]:
        ranked = sum(side.rank is not None for side in sides)
        scored = sum(side.score is not None for side in sides)
        if info.data.get("match") is not None:
            if ranked or scored:
                raise ValueError("with a match, the sides carry no rank or score: the games won decide them")
            if len(sides) != 2:
                raise ValueError("only a game of two sides may carry a match")
        elif "match" in info.data:  # no match (a match that failed its own check is named by its own error)
            if ranked not in (0, len(sides)) or scored not in (0, len(sides)) or not ranked + scored:
                raise ValueError("every side needs a rank, or every side a score (or both, where they agree)")
            if ranked and scored:
                _agree(sides)
        keys = [key for side in sides for key in side.players]
        if len(set(keys)) < len(keys):
            seen: set[str] = set()
            for key in keys:  # the first key seen before
                if key in seen:
                    raise ValueError(f"player {key!r} appears more than once in the game")
                seen.add(key)
        distinct_seats(sides)
        return sides


def match_wins(match: list[list[int]]) -> list[int]:
    """The games each side of a match won."""
    return [sum(a > b for a, b in match), sum(b > a for a, b in match)]


def all_given(values: list[float | None]) -> list[float] | None:
    """The sides' ranks (or scores), in side order, where the first side gives one, else None: every side of a
    game without a match gives one, or none does (:meth:`GameIn._consistent`)."""
    if values[0] is None:
        return None
    given = [value for value in values if value is not None]
    assert len(given) == len(values), "a side without one where the first side has one"
    return given


def _agree(sides: list[SideIn]) -> None:
    """Every side's rank and score tell one order: the higher score the better rank, equal scores equal ranks
    (ValueError naming the first two sides that disagree)."""
    for i, x in enumerate(sides):
        for j in range(i + 1, len(sides)):
            y = sides[j]
            # Called only where every side has both (GameIn._consistent).
            assert x.score is not None and y.score is not None and x.rank is not None and y.rank is not None
            by_score = (x.score > y.score) - (x.score < y.score)
            by_rank = (x.rank < y.rank) - (x.rank > y.rank)
            if by_score != by_rank:
                scores, ranks = f"{x.score:g} and {y.score:g}", f"{x.rank:g} and {y.rank:g}"
                raise ValueError(f"sides[{i}] and sides[{j}]: their scores ({scores}) contradict their ranks ({ranks})")


class BatchIn(StrictModel):
    games: list[GameIn] = Field(min_length=1)

    model_config = StrictModel.model_config | {
        "json_schema_extra": {
            "examples": [
                {
                    "games": [
                        {"sides": [{"players": ["ann"], "rank": 1}, {"players": ["bob"], "rank": 2}]},
                        {"sides": [{"players": ["bob"], "rank": 1}, {"players": ["cy"], "rank": 1}]},
                    ]
                }
            ]
        }
    }


class PlayerChange(BaseModel):
    key: str
    before: list[float] = Field(description="The player's rating vector before the game.")
    after: list[float] = Field(description="The player's rating vector after the game.")
    elo_before: float = Field(
        description="The player's strength before the game in Elo-equivalent points, as the leaderboard shows it: "
        "against the field's mean vector as of this answer (just after the game, for the answer to its post)."
    )
    elo_after: float = Field(description="The same after the game.")
    elo_change: float = Field(description=ELO_CHANGE)


class SideOut(BaseModel):
    players: list[PlayerChange]
    rank: float
    score: float | None = Field(
        None, description="The side's score as posted (with a `match`: its games won); null when none was given."
    )
    actual_score: float = Field(description="Rank-share score achieved (mathematics §4); sums to 1 over sides.")
    expected_score: float = Field(description="Rank-share score expected before the game.")
    seat: str | None = Field(None, description="The learned seat the side took, if any (mathematics §5).")


class GameOut(BaseModel):
    id: int = Field(
        description="The game's number within its ladder: 1, 2, 3, … in log order, as URLs (`…/games/{id}`), "
        "exports and the web page name it."
    )
    seq: int = Field(description="The same number as `id` (the name earlier versions gave it).")
    played_at: datetime
    external_id: str | None
    sides: list[SideOut]
    match: list[list[int]] | None = Field(
        None, description="A match's games, each the sides' points in side order; null for a single game."
    )
    matrix: list[list[float]] | None = Field(
        None,
        description="A game of more than two sides, in the answer to its post: `matrix[a][b]` = P(side a finishes "
        "above side b) before the game (a tie counting half), in side order: the pair chances the game was rated "
        "against, what `POST …/predict` would have answered just before it. Null for two sides (side 0's "
        "`expected_score` is its chance) and when the game is read later.",
    )
    voided_at: datetime | None = Field(None, description="When the game was voided: it counts nowhere since.")
    voided_by: str | None = Field(None, description="The id of the key that voided it.")
    reason: str | None = Field(None, description="Why it was voided, as given.")


class VoidIn(StrictModel):
    reason: Reason | None = Field(None, description="Why, for the audit trail (e.g. `wrong winner`).")

    model_config = StrictModel.model_config | {"json_schema_extra": {"examples": [{"reason": "wrong winner"}]}}


class BatchOut(BaseModel):
    games: list[GameOut]
