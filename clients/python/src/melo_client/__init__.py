"""A Python client for the mElo rating service: ``from melo_client import Melo, AsyncMelo``."""

from melo_client._calls import Retry, game
from melo_client.aio import AsyncMelo
from melo_client.client import Melo
from melo_client.errors import (
    Conflict,
    FieldError,
    Forbidden,
    InvalidInput,
    MeloError,
    NotFound,
    Problem,
    TooManyRequests,
    Unauthorized,
    Unavailable,
)
from melo_client.models import (
    Checkpoint,
    Game,
    GameSide,
    Ladder,
    LadderCreated,
    LeaderboardEntry,
    MatchPrediction,
    Opponent,
    PairPrediction,
    Player,
    PlayerChange,
    Refit,
    Side,
    Teams,
)

__all__ = [
    "AsyncMelo",
    "Checkpoint",
    "Conflict",
    "FieldError",
    "Forbidden",
    "Game",
    "GameSide",
    "InvalidInput",
    "Ladder",
    "LadderCreated",
    "LeaderboardEntry",
    "MatchPrediction",
    "Melo",
    "MeloError",
    "NotFound",
    "Opponent",
    "PairPrediction",
    "Player",
    "PlayerChange",
    "Problem",
    "Refit",
    "Retry",
    "Side",
    "Teams",
    "TooManyRequests",
    "Unauthorized",
    "Unavailable",
    "game",
]
