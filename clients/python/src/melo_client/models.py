"""What the service answers, as typed objects. Fields are named as in the API; fields a newer server adds are
ignored, so an older client keeps working."""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeVar, overload

T = TypeVar("T")


@dataclass(frozen=True)
class Side:
    """One side of a game or of a match to predict: a player or an ad-hoc team.

    For a game give ``rank`` (1 = best, equal ranks tie) or ``score`` (higher is better); ``seat`` names one of
    the ladder's seats (white, home); ``advantage`` (logits) or ``win_probability`` states a known edge."""

    players: list[str]
    rank: float | None = None
    score: float | None = None
    seat: str | None = None
    advantage: float | None = None
    win_probability: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {name: value for name, value in dataclasses.asdict(self).items() if value is not None}


@dataclass(frozen=True)
class PlayerChange:
    """What a game did to one player: vectors, and strength in Elo-equivalent points before and after."""

    key: str
    before: list[float]
    after: list[float]
    elo_before: float
    elo_after: float
    elo_change: float


@dataclass(frozen=True)
class GameSide:
    players: list[PlayerChange]
    rank: float
    actual_score: float
    expected_score: float
    seat: str | None = None


@dataclass(frozen=True)
class Game:
    """A recorded game. ``id`` is its number within the ladder; ``replayed`` is true when this answer is the
    stored one of an earlier post with the same idempotency key (the game counted once); ``ladder_version``, for
    the answer to a fresh post, is the ladder version its commit made (a read naming it as ``min_version`` sees
    the game, wherever the server reads); ``matrix``, in the answer to the post of a game of more than two sides,
    the chance before it that side a finishes above side b (``matrix[a][b]``)."""

    id: int
    played_at: datetime
    sides: list[GameSide]
    external_id: str | None = None
    voided_at: datetime | None = None
    voided_by: str | None = None
    reason: str | None = None
    replayed: bool = False
    ladder_version: int | None = None
    matrix: list[list[float]] | None = None

    @property
    def elo_changes(self) -> dict[str, float]:
        """Each player's rating change, by key."""
        return {p.key: p.elo_change for side in self.sides for p in side.players}


@dataclass(frozen=True)
class Seat:
    name: str
    advantage_elo: float | None = None
    advantage_elo_se: float | None = None


@dataclass(frozen=True)
class Ladder:
    slug: str
    name: str | None
    k: int
    eta: float
    eta_tau: float | None
    init_scale: float
    seed: int | None
    auto_create_players: bool
    auto_refit: bool
    private: bool
    case_insensitive_keys: bool
    created_at: datetime
    players: int
    games: int
    init_offset: list[float] | None = None
    auto_refit_note: str | None = None
    seats: list[Seat] | None = None


@dataclass(frozen=True)
class LadderCreated(Ladder):
    """A new ladder with its first keys: ``admin_key`` manages it, ``write_key`` posts games. Shown once."""

    admin_key: str = ""
    write_key: str = ""


@dataclass(frozen=True, kw_only=True)
class Standing:
    """A player's rating and record, as the leaderboard and the profile both show them (Elo-equivalent points)."""

    key: str
    name: str | None
    strength: float
    elo: float
    strength_se: float
    conservative: float
    games: int
    wins: int
    draws: int
    losses: int
    provisional: bool
    active: bool
    last_played_at: datetime | None = None
    change_since_last_game: float | None = None
    last_game_change: float | None = None
    provisional_reason: str | None = None


@dataclass(frozen=True, kw_only=True)
class Player(Standing):
    vector: list[float]
    created_at: datetime
    aliases: list[str] = field(default_factory=list)
    ladder_version: int | None = None
    #: Their place on the default leaderboard (by Hodge strength, active players); None when not on it.
    rank: int | None = None


@dataclass(frozen=True, kw_only=True)
class LeaderboardEntry(Standing):
    rank: int


@dataclass(frozen=True)
class PairPrediction:
    """P(a beats b), its advantage in logits and Elo points; ``a_known``/``b_known`` false for a key that names no
    player yet (it stands for a newcomer's initial vector)."""

    a: str
    b: str
    probability: float
    advantage_logits: float
    advantage_elo: float
    match_quality: float
    a_known: bool
    b_known: bool
    ladder_version: int
    expected_score: float | None = None
    #: Where the ladder has seen draws: P(draw), and the chances to win or lose outright (None before).
    draw_probability: float | None = None
    win_probability: float | None = None
    loss_probability: float | None = None


@dataclass(frozen=True)
class PlayerLabel:
    key: str
    known: bool


@dataclass(frozen=True)
class SideLabel:
    players: list[PlayerLabel]
    seat: str | None = None


@dataclass(frozen=True)
class MatchPrediction:
    """``matrix[a][b]`` = P(side a beats side b), with the sides in the order given (``sides`` says who)."""

    sides: list[SideLabel]
    matrix: list[list[float]]
    expected_scores: list[float]
    match_quality: float
    ladder_version: int
    draw_probability: float | None = None


@dataclass(frozen=True)
class Teams:
    """The fairest split found: the teams, their chances and how close to even the match is."""

    teams: list[list[str]]
    win_probabilities: list[float]
    expected_scores: list[float]
    matrix: list[list[float]]
    match_quality: float
    exact: bool
    ladder_version: int


@dataclass(frozen=True)
class Opponent:
    """A suggested opponent: the chance to beat them, and what a singles game now would win (``if_win``) or lose
    (``if_lose``) in Elo-equivalent points, how often and when the two last played together, and why."""

    key: str
    name: str | None
    probability: float
    gain: float | None = None
    if_win: float | None = None
    if_lose: float | None = None
    games_together: int = 0
    last_played: datetime | None = None
    reason: str | None = None


@dataclass(frozen=True)
class Refit:
    """A background refit: ``status`` is queued, running, done, rejected, failed or cancelled."""

    id: int
    status: str
    progress: float
    params: dict[str, Any]
    created_at: datetime
    result: dict[str, Any] | None = None
    error: str | None = None
    after_game: int | None = None
    finished_at: datetime | None = None
    applied_at: datetime | None = None


@dataclass(frozen=True)
class Checkpoint:
    """An applied refit: its vectors as of game ``after_game``, with ``replayed_games`` replayed on top."""

    id: int
    refit: int | None
    after_game: int
    replayed_games: int


@dataclass(frozen=True)
class Event:
    """One change of a ladder from its event stream.  ``kind`` is ``hello`` (first on each connection),
    ``game``, ``void``, ``player``, ``refit``, ``ladder`` or ``reset`` (what was missed is no longer kept: read
    the ladder anew); ``data`` is the event's JSON, with the ladder ``version`` after the change; ``id`` is
    where the stream resumes after it."""

    id: int | None
    kind: str
    data: dict[str, Any]

    @property
    def version(self) -> int | None:
        version = self.data.get("version")
        return int(version) if version is not None else None

    @property
    def game(self) -> Game | None:
        """A ``game`` or ``void`` event's game, as ``games.post`` answers it."""
        return build(Game, self.data["game"]) if "game" in self.data else None


def build(cls: type[T], data: Mapping[str, Any], **extra: Any) -> T:
    """An answer's JSON object as ``cls``: nested objects, lists of them and timestamps converted; keys the class
    does not know are left out."""
    fields = _converters(cls)
    values = {name: _apply(fields[name], value) for name, value in data.items() if name in fields}
    return cls(**values, **extra)


Convert = Callable[[Any], Any]
_CONVERTERS: dict[type, dict[str, Convert | None]] = {}


def _converters(cls: type) -> dict[str, Convert | None]:
    """How to convert each field's JSON value (None: as it is), worked out once per class from its types."""
    if cls not in _CONVERTERS:
        hints = typing.get_type_hints(cls)
        _CONVERTERS[cls] = {f.name: _converter(hints[f.name]) for f in dataclasses.fields(cls)}
    return _CONVERTERS[cls]


def _apply(convert: Convert | None, value: Any) -> Any:
    return value if convert is None or value is None else convert(value)


def _converter(hint: Any) -> Convert | None:
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        return _converter(next(arg for arg in typing.get_args(hint) if arg is not type(None)))
    if origin is list:
        item = _converter(typing.get_args(hint)[0])
        return None if item is None else (lambda values: [_apply(item, v) for v in values])
    if hint is datetime:
        return lambda value: datetime.fromisoformat(value.replace("Z", "+00:00"))
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return lambda value: build(hint, value)
    return None


class PostedGames(Sequence[Game]):
    """The games :meth:`melo.games.post_many <melo_client.client.Games.post_many>` recorded, in order.

    Each is made a :class:`Game` when first read, so recording 10,000 games costs what the batch endpoint
    costs, and the answers are paid for only where they are looked at.
    """

    def __init__(self, answers: Sequence[tuple[dict[str, Any], dict[str, Any]]] = ()) -> None:
        self._answers = list(answers)  # each game's JSON, and what its batch's answer said beside it
        self._made: dict[int, Game] = {}

    def __len__(self) -> int:
        return len(self._answers)

    @overload
    def __getitem__(self, index: int) -> Game: ...

    @overload
    def __getitem__(self, index: slice) -> list[Game]: ...

    def __getitem__(self, index: int | slice) -> Game | list[Game]:
        if isinstance(index, slice):
            return [self[n] for n in range(*index.indices(len(self)))]
        n = range(len(self))[index]  # negative indices, and IndexError
        if n not in self._made:
            answer, posted = self._answers[n]
            self._made[n] = build(Game, answer, **posted)
        return self._made[n]

    def __iadd__(self, other: PostedGames) -> PostedGames:
        """Append another batch's games (those of ``other`` already made are kept)."""
        self._made.update({len(self._answers) + n: game for n, game in other._made.items()})
        self._answers += other._answers
        return self

    def __eq__(self, other: object) -> bool:
        """Equal to any sequence of the same games (a list of them too)."""
        if not isinstance(other, Sequence) or isinstance(other, str | bytes):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]  # mutable, as a list

    def __repr__(self) -> str:
        return f"PostedGames({len(self)} games)"
