from __future__ import annotations

import asyncio
import json
from typing import Annotated, Any

from fastapi import APIRouter, Body, Header, Path, Request
from fastapi.responses import JSONResponse, Response
from pydantic import AfterValidator
from starlette.datastructures import State

from app.core import deadline
from app.core.errors import LADDER_ACCESS, InvalidInput, problems
from app.core.schemas import MAX_ID, Page, printable
from app.domain.access import Caller, ladder_and_key, readable
from app.domain.rerating import SWITCH_SHARE, prepared_void, switch
from app.games import listing, voiding
from app.games.intake import Post, Replayed, request_hash
from app.games.posts import Committed
from app.games.schemas import BatchIn, BatchOut, GameIn, GameOut, VoidIn
from app.http.deps import CallerDep, DatabaseDep, IdCursor, Limit, SettingsDep

#: A game in a URL: its number within the ladder (the `id` of its answers).
GameNumber = Annotated[int, Path(ge=1, le=MAX_ID, description="The game's number within the ladder (its `id`).")]

router = APIRouter(prefix="/v1/ladders/{slug}/games", tags=["games"], responses=LADDER_ACCESS)

#: What a fresh post's answer says beside its body.
POSTED: dict[int | str, dict[str, Any]] = {
    201: {
        "headers": {
            "Ladder-Version": {
                "description": "The ladder version the post's commit made: a read naming it (`min_version`) sees "
                "the game, wherever it is served. Absent from a replayed answer (`Idempotent-Replayed: true`).",
                "schema": {"type": "integer"},
            }
        }
    }
}


def _ascii(value: str) -> str:
    """A header's value as ASCII: HTTP carries a header's bytes, which the server reads as Latin-1, so any other
    character would arrive garbled (and count as two or three)."""
    if not value.isascii():
        raise ValueError("must be printable ASCII characters (a header carries bytes, not text)")
    return value


IdempotencyKey = Annotated[
    Annotated[str, AfterValidator(_ascii), AfterValidator(printable)] | None,
    Header(
        min_length=1,
        max_length=200,
        description="Any unique string per logical request (1-200 printable ASCII characters, one header): a retry "
        "with the same key and body is applied once and gets the first response; the same key with another body "
        "is a 409.",
    ),
]


def _one_key(request: Request, key: str | None) -> str | None:
    """The request's Idempotency-Key; 422 if it sent more than one (which would the retry be?)."""
    if key is not None and len(request.headers.getlist("idempotency-key")) > 1:
        message = "send one Idempotency-Key header, not several"
        raise InvalidInput(f"Idempotency-Key: {message}", errors=[{"field": "Idempotency-Key", "message": message}])
    return key


@router.post("", status_code=201, response_model=GameOut, responses=problems(401, 403, 404, 409, 413, 422) | POSTED)
async def post_game(
    slug: str, game: GameIn, caller: CallerDep, request: Request, idempotency_key: IdempotencyKey = None
) -> Response:
    """Record a game and apply the normalised mElo update to its participants (mathematics §3-§6).

    Posts that arrive together are applied in one transaction (group commit); each gets its own response or
    error, and is answered only once its game is committed.
    """
    return await post_one(request.app.state, slug, caller, game, _one_key(request, idempotency_key))


async def post_one(state: State, slug: str, caller: Caller, game: GameIn, key: str | None) -> Response:
    """One game posted, as the route and its fast path (:mod:`app.games.fast_path`) post it: its answer once its
    group has committed; raises its problem."""
    post = Post(slug, caller, [game], key, request_hash(game), batch=False)
    return _answer(await state.committer.submit(post))


@router.post(
    "/batch", status_code=201, response_model=BatchOut, responses=problems(401, 403, 404, 409, 413, 422) | POSTED
)
async def post_batch(
    slug: str,
    batch: BatchIn,
    settings: SettingsDep,
    caller: CallerDep,
    request: Request,
    idempotency_key: IdempotencyKey = None,
) -> Response:
    """Record games in order in one transaction: all are applied, or none (errors name `games[i]`). A batch holds
    at most `MELO_MAX_BATCH_GAMES` games (1,000) and `MELO_MAX_BATCH_PLAYERS` player appearances (20,000), so no
    batch holds up the other posts for long."""
    if len(batch.games) > settings.max_batch_games:
        raise InvalidInput(
            f"games: at most {settings.max_batch_games} games per batch",
            errors=[{"field": "games", "message": f"at most {settings.max_batch_games} games"}],
        )
    appearances = sum(len(side.players) for game in batch.games for side in game.sides)
    if appearances > settings.max_batch_players:
        limit = settings.max_batch_players
        raise InvalidInput(
            f"games: at most {limit:,} player appearances per batch ({appearances:,} here); split it",
            errors=[{"field": "games", "message": f"at most {limit} player appearances in all games together"}],
        )
    post = Post(slug, caller, batch.games, _one_key(request, idempotency_key), request_hash(batch), batch=True)
    answer = await request.app.state.committer.submit(post)
    if set(answer) != {"games"}:
        return _answer(answer)
    # A game at a time, the event loop free between them: a batch of large free-for-alls answers megabytes, whose
    # rendering in one call would hold every other request (/healthz waited 0.5 s behind three of them).
    games = []
    for game in answer["games"]:
        games.append(_json(game))
        await asyncio.sleep(0)
    return _answer(answer, b'{"games":[' + b",".join(games) + b"]}")


def _json(value: object) -> bytes:
    """``value`` as :class:`JSONResponse` renders it."""
    return json.dumps(value, ensure_ascii=False, allow_nan=False, indent=None, separators=(",", ":")).encode()


def _answer(body: dict, rendered: bytes | None = None) -> Response:
    """201 with the body (or its JSON, ``rendered``); a replayed answer says so (``Idempotent-Replayed: true``), a
    fresh one names the ladder version its commit made (``Ladder-Version``)."""
    headers = {"Idempotent-Replayed": "true"} if isinstance(body, Replayed) else None
    if isinstance(body, Committed):
        headers = {"Ladder-Version": str(body.ladder_version)}
    if rendered is None:
        return JSONResponse(body, status_code=201, headers=headers)
    return Response(rendered, status_code=201, headers=headers, media_type="application/json")


@router.get("", response_model=Page[GameOut], responses=problems(404, 422))
def list_games(
    slug: str,
    db: DatabaseDep,
    caller: CallerDep,
    limit: Limit = 50,
    cursor: IdCursor = None,
) -> Response:
    """The ladder's games, newest first. A game's `id` is its number within the ladder: 1, 2, 3, … in log order.

    A page holds `limit` games, or fewer where they would hold more than 5,000 players in all (one game at least):
    follow `next_cursor` until it is null."""
    with db.reading() as session:
        page = listing.list_games(session, readable(session, slug, caller), limit, cursor)
    # Rendered here, in the request's thread: a page of 500 games is half a megabyte of JSON, which the event loop
    # would otherwise validate and render while every other request waits.
    rendered = Page[GameOut].model_validate({"items": page.items, "next_cursor": page.next_cursor}).model_dump_json()
    return Response(rendered, media_type="application/json")


@router.get("/{game_id}", response_model=GameOut, responses=problems(404))
def get_game(slug: str, game_id: GameNumber, db: DatabaseDep, caller: CallerDep) -> dict:
    """One game, by its number within the ladder (its `id`), with every participant's vector before and after."""
    with db.reading() as session:
        return listing.get_game(session, readable(session, slug, caller), game_id)


@router.delete("/{game_id}", response_model=GameOut, responses=problems(401, 403, 404, 422, 503))
def void_game(
    slug: str,
    game_id: GameNumber,
    db: DatabaseDep,
    caller: CallerDep,
    request: Request,
    void: Annotated[VoidIn | None, Body()] = None,
) -> dict:
    """Void a game, by its number within the ladder (a write key): it stays in the log, marked, and counts nowhere
    any more.

    The games after it are replayed exactly from the latest checkpoint before it, so the ratings become those of
    a ladder that never had it; checkpoints after it are superseded (a season closed since with a pull pulls the
    replayed ratings again where it closed). Voiding it again changes nothing.
    """

    with db.reading() as session:
        ladder_id = ladder_and_key(session, slug, caller, "write")[0].id
    # The games after it are replayed holding no lock, and written ahead; the void writes those committed since.
    prepared = prepared_void(db, ladder_id, game_id, deadline.leaving(request.scope, SWITCH_SHARE))

    def work(session) -> dict:
        ladder, key_id = ladder_and_key(session, slug, caller, "write")
        return voiding.void_game(session, ladder, game_id, key_id, void.reason if void else None, prepared)

    return switch(db, prepared, work)


@router.post(
    "/{game_id}/void", response_model=GameOut, responses=problems(401, 403, 404, 422, 503), summary="Void a game (POST)"
)
def void_game_by_post(
    slug: str,
    game_id: GameNumber,
    db: DatabaseDep,
    caller: CallerDep,
    request: Request,
    void: Annotated[VoidIn | None, Body()] = None,
) -> dict:
    """What `DELETE …/games/{id}` does, for clients that send no body with a DELETE: void the game (a write key),
    with an optional `reason`. Voiding it again changes nothing."""
    return void_game(slug, game_id, db, caller, request, void)
