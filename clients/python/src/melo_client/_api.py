"""Each operation of the service as a :class:`~melo_client._calls.Call`: its path, parameters and body, whether it
may be sent twice, and the type of its answer. :mod:`melo_client.client` and :mod:`melo_client.aio` send them."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar
from urllib.parse import quote

import httpx

from melo_client._calls import Call, SideLike, game_of, games_of, idempotent, json_of, side_json
from melo_client.models import (
    Checkpoint,
    Game,
    Ladder,
    LadderCreated,
    LeaderboardEntry,
    MatchPrediction,
    Opponent,
    PairPrediction,
    Player,
    PostedGames,
    Refit,
    Teams,
    build,
)

T = TypeVar("T")


@dataclass(frozen=True)
class Page(Generic[T]):
    items: list[T]
    next_cursor: str | None


def _page(cls: type[T]) -> Any:
    def read(response: httpx.Response) -> Page[T]:
        body = response.json()
        return Page([build(cls, item) for item in body["items"]], body.get("next_cursor"))

    return read


def ladder_path(slug: str, *rest: str | int) -> str:
    return "/".join(["/v1/ladders", quote(slug, safe=""), *(quote(str(part), safe="") for part in rest)])


def create_ladder(slug: str, settings: dict[str, Any]) -> Call[LadderCreated]:
    return Call("POST", "/v1/ladders", json_of(LadderCreated), body={"slug": slug, **settings}, safe=False)


def get_ladder(slug: str) -> Call[Ladder]:
    return Call("GET", ladder_path(slug), json_of(Ladder))


def ladders_page(limit: int, cursor: str | None) -> Call[Page[Ladder]]:
    return Call("GET", "/v1/ladders", _page(Ladder), params={"limit": limit, "cursor": cursor})


def post_game(slug: str, body: dict[str, Any]) -> Call[Game]:
    return idempotent(Call("POST", ladder_path(slug, "games"), game_of, body=body))


def post_games(slug: str, games: list[dict[str, Any]]) -> Call[PostedGames]:
    return idempotent(Call("POST", ladder_path(slug, "games", "batch"), games_of, body={"games": games}))


def get_game(slug: str, number: int) -> Call[Game]:
    return Call("GET", ladder_path(slug, "games", number), game_of)


def games_page(slug: str, limit: int, cursor: str | None) -> Call[Page[Game]]:
    return Call("GET", ladder_path(slug, "games"), _page(Game), params={"limit": limit, "cursor": cursor})


def void_game(slug: str, number: int, reason: str | None) -> Call[Game]:
    """Voiding a voided game changes nothing: safe to send again."""
    body = {"reason": reason} if reason is not None else None
    return Call("POST", ladder_path(slug, "games", number, "void"), game_of, body=body)


def events(slug: str, last: int | None) -> Call[None]:
    """The stream's request, resuming after event ``last`` (sent by :meth:`Melo.events`, read line by line)."""
    headers = {"Accept": "text/event-stream"} | ({"Last-Event-ID": str(last)} if last is not None else {})
    return Call("GET", ladder_path(slug, "events"), lambda response: None, headers=headers)


def predict(slug: str, a: str, b: str, a_seat: str | None, b_seat: str | None) -> Call[PairPrediction]:
    params = {"a": a, "b": b, "a_seat": a_seat, "b_seat": b_seat}
    return Call("GET", ladder_path(slug, "predict"), json_of(PairPrediction), params=params)


def predict_match(slug: str, sides: Iterable[SideLike | str | Sequence[str]]) -> Call[MatchPrediction]:
    body = {"sides": [_match_side(side) for side in sides]}
    return Call("POST", ladder_path(slug, "predict"), json_of(MatchPrediction), body=body)


def _match_side(side: SideLike | str | Sequence[str]) -> dict[str, Any]:
    if isinstance(side, str):
        return {"players": [side]}
    if isinstance(side, Sequence) and not isinstance(side, dict):
        return {"players": list(side)}
    body = side_json(side)
    body.pop("rank", None), body.pop("score", None)
    return body


def teams(slug: str, players: Sequence[str], n: int, sizes: Sequence[int] | None) -> Call[Teams]:
    body: dict[str, Any] = {"players": list(players), "teams": n}
    if sizes is not None:
        body["sizes"] = list(sizes)
    return Call("POST", ladder_path(slug, "teams"), json_of(Teams), body=body)


def opponents(slug: str, player: str, limit: int, purpose: str | None) -> Call[list[Opponent]]:
    def read(response: httpx.Response) -> list[Opponent]:
        return [build(Opponent, item) for item in response.json()["items"]]

    params = {"limit": limit, "purpose": purpose}
    return Call("GET", ladder_path(slug, "players", player, "opponents"), read, params=params)


def leaderboard_page(
    slug: str, by: str | None, inactive: bool | None, limit: int, cursor: str | None, min_version: int | None = None
) -> Call[Page[LeaderboardEntry]]:
    params = {"by": by, "inactive": inactive, "limit": limit, "cursor": cursor, "min_version": min_version}
    return Call("GET", ladder_path(slug, "leaderboard"), _page(LeaderboardEntry), params=params)


def around(
    slug: str, player: str, by: str | None, inactive: bool | None, limit: int, min_version: int | None
) -> Call[list[LeaderboardEntry]]:
    def read(response: httpx.Response) -> list[LeaderboardEntry]:
        return [build(LeaderboardEntry, item) for item in response.json()["items"]]

    params = {"around": player, "by": by, "inactive": inactive, "limit": limit, "min_version": min_version}
    return Call("GET", ladder_path(slug, "leaderboard"), read, params=params)


def get_player(slug: str, key: str, min_version: int | None = None) -> Call[Player]:
    return Call("GET", ladder_path(slug, "players", key), json_of(Player), params={"min_version": min_version})


def create_player(slug: str, key: str, name: str | None) -> Call[Player]:
    body = {"key": key} | ({"name": name} if name is not None else {})
    return Call("POST", ladder_path(slug, "players"), json_of(Player), body=body, safe=False)


def change_player(slug: str, key: str, changes: dict[str, Any]) -> Call[Player]:
    return Call("PATCH", ladder_path(slug, "players", key), json_of(Player), body=changes, safe=False)


def merge_player(slug: str, key: str, into: str) -> Call[Player]:
    body = {"into": into}
    return Call("POST", ladder_path(slug, "players", key, "merge"), json_of(Player), body=body, safe=False)


def start_refit(slug: str, params: dict[str, Any]) -> Call[Refit]:
    return Call("POST", ladder_path(slug, "refits"), json_of(Refit), body=params, safe=False)


def get_refit(slug: str, refit_id: int) -> Call[Refit]:
    return Call("GET", ladder_path(slug, "refits", refit_id), json_of(Refit))


def apply_refit(slug: str, refit_id: int) -> Call[Checkpoint]:
    return Call("POST", ladder_path(slug, "refits", refit_id, "apply"), json_of(Checkpoint), safe=False)


#: A refit in one of these states is over.
FINISHED = frozenset({"done", "rejected", "failed", "cancelled"})
