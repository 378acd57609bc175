"""What the sync and async clients share: each request as a :class:`Call` (its retry rule and how to read its
answer), the retry policy, and the request bodies built from the methods' arguments."""

from __future__ import annotations

import json
import random
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Generic, TypeVar

import httpx

from melo_client.errors import Unavailable, error_for
from melo_client.models import Event, Game, PostedGames, Side, build

T = TypeVar("T")
#: A player, or an ad-hoc team of players.
Team = str | Sequence[str]
SideLike = Side | Mapping[str, Any]


@dataclass(frozen=True)
class Retry:
    """How failed requests are tried again.

    Reads, game posts (each under its own ``Idempotency-Key``, the same on every try, so a game counts once)
    and voids are retried on connection errors, timeouts, 429 and 503; other writes only when the connection
    could not be made (the request never left).  The wait doubles from ``backoff`` (with jitter) up to
    ``max_backoff``; a ``Retry-After`` header is honoured up to ``max_retry_after`` seconds.  No more than
    ``attempts`` tries are made, and none starts later than ``within`` seconds after the first failed (the last
    wait is cut to end then): by default a minute, longer than the service takes to come back when its database
    server fails over to a standby."""

    attempts: int = 100
    backoff: float = 0.25
    max_backoff: float = 5.0
    max_retry_after: float = 30.0
    within: float = 60.0

    def again(self, attempt: int, failing: float, response: httpx.Response | None) -> float | None:
        """Seconds to wait before the try after ``attempt`` (0: the first) of a call whose tries have failed for
        ``failing`` seconds, or None if there is to be none."""
        left = self.within - failing
        if attempt + 1 >= self.attempts or left <= 0:
            return None
        return min(self.wait(attempt, response), left)

    def wait(self, attempt: int, response: httpx.Response | None) -> float:
        if response is not None:
            try:
                seconds = float(response.headers["retry-after"])
                return min(seconds, self.max_retry_after)
            except (KeyError, ValueError):
                pass
        return min(self.backoff * 2.0**attempt, self.max_backoff) * (0.5 + random.random() / 2)


#: The server writes to a quiet event stream every 15 s: this long without a byte, the connection is dead.
STREAM_SILENCE = 45.0

#: Nothing was sent: any request may be tried again.
_NOT_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)


@dataclass
class Call(Generic[T]):
    """One request: ``safe`` when sending it twice does what sending it once does (reads, idempotent posts)."""

    method: str
    path: str
    read: Callable[[httpx.Response], T]
    params: dict[str, Any] | None = None
    body: Any = None
    safe: bool = True
    headers: dict[str, str] = field(default_factory=dict)

    def request(self) -> dict[str, Any]:
        params = {k: v for k, v in (self.params or {}).items() if v is not None}
        return {"params": params or None, "json": self.body, "headers": self.headers or None}

    def after_error(self, error: httpx.TransportError, attempt: int, retry: Retry, failed: float) -> float:
        """Seconds to wait before trying again (its first try failed at ``failed``, ``time.monotonic()``); raises
        :class:`Unavailable` when it should not be."""
        wait = retry.again(attempt, time.monotonic() - failed, None)
        if wait is not None and (self.safe or isinstance(error, _NOT_SENT)):
            return wait
        raise Unavailable(f"{self.method} {self.path}: {type(error).__name__}: {error}") from error

    def answer(self, response: httpx.Response, attempt: int, retry: Retry, failed: float) -> tuple[T | None, float]:
        """(the answer, 0) or (None, seconds to wait before trying again); raises the problem's exception."""
        status = response.status_code
        if status in (429, 503) and (self.safe or status == 429):
            wait = retry.again(attempt, time.monotonic() - failed, response)
            if wait is not None:
                return None, wait
        if status >= 400:
            raise error_for(response)
        return self.read(response), 0.0


class EventReader:
    """Server-sent events from the lines of a stream: :meth:`line` returns an :class:`Event` at the blank line
    that ends one (comments, such as the server's keep-alives, are skipped)."""

    def __init__(self) -> None:
        self.fields: dict[str, str] = {}

    def line(self, text: str) -> Event | None:
        if text:
            if not text.startswith(":"):
                name, _, value = text.partition(":")
                value = value.removeprefix(" ")
                if name == "data" and "data" in self.fields:  # a multi-line data field
                    value = self.fields["data"] + "\n" + value
                self.fields[name] = value
            return None
        fields, self.fields = self.fields, {}
        if "data" not in fields:
            return None
        number = fields.get("id", "")  # ASCII digits only: "²".isdigit() is true, and int() refuses it
        event_id = int(number) if number.isascii() and number.isdigit() else None
        return Event(event_id, fields.get("event", "message"), json.loads(fields["data"]))


def idempotent(call: Call[T]) -> Call[T]:
    """The call with an ``Idempotency-Key`` of its own: every try of it is the same post."""
    call.headers["Idempotency-Key"] = uuid.uuid4().hex
    return call


def json_of(cls: type[T]) -> Callable[[httpx.Response], T]:
    return lambda response: build(cls, response.json())


def game_of(response: httpx.Response) -> Game:
    return build(Game, response.json(), **_posted(response))


def games_of(response: httpx.Response) -> PostedGames:
    posted = _posted(response)
    return PostedGames([(game, posted) for game in response.json()["games"]])


def _posted(response: httpx.Response) -> dict[str, Any]:
    """What a post's answer says beside its body: whether it is a replay, and the ladder version it made."""
    version = response.headers.get("ladder-version")
    replayed = response.headers.get("idempotent-replayed") == "true"
    return {"replayed": replayed, "ladder_version": int(version) if version is not None else None}


def game(
    winner: Team | None = None,
    loser: Team | None = None,
    *,
    sides: Iterable[SideLike] | None = None,
    draw: bool = False,
    played_at: datetime | str | None = None,
    external_id: str | None = None,
) -> dict[str, Any]:
    """A game's JSON, as ``games.post`` sends it and ``games.post_many`` takes it: ``winner`` beat ``loser`` (a
    player or a team; ``draw`` for a tie), or ``sides`` for any form: ``game(winner="ann", loser="bob")``."""
    if sides is not None:
        if winner is not None or loser is not None or draw:
            raise ValueError("give sides, or winner and loser, not both")
        body: dict[str, Any] = {"sides": [side_json(side) for side in sides]}
    elif winner is not None and loser is not None:
        ranks = (1, 1) if draw else (1, 2)
        body = {"sides": [{"players": _team(winner), "rank": ranks[0]}, {"players": _team(loser), "rank": ranks[1]}]}
    else:
        raise ValueError("give winner and loser, or sides")
    if played_at is not None:
        body["played_at"] = played_at.isoformat() if isinstance(played_at, datetime) else played_at
    if external_id is not None:
        body["external_id"] = external_id
    return body


def side_json(side: SideLike) -> dict[str, Any]:
    return side.to_json() if isinstance(side, Side) else dict(side)


def _team(players: Team) -> list[str]:
    return [players] if isinstance(players, str) else list(players)


def batches(games: Sequence[dict[str, Any]], size: int, appearances: int) -> list[list[dict[str, Any]]]:
    """Games cut into batches of at most ``size`` games and ``appearances`` player appearances, in order."""
    out: list[list[dict[str, Any]]] = []
    batch: list[dict[str, Any]] = []
    count = 0
    for game in games:
        n = sum(len(side["players"]) for side in game["sides"])
        if batch and (len(batch) == size or count + n > appearances):
            out.append(batch)
            batch, count = [], 0
        batch.append(game)
        count += n
    if batch:
        out.append(batch)
    return out
