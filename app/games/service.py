"""Where a game is applied: load and lock the participants, call app.rating, write the rows.

Exactly-once: an ``Idempotency-Key`` header (or the game's ``external_id``) is
recorded with the response in the same transaction as the game; a retry finds
it and gets the stored response.  The check is repeated after the
participants are locked, so concurrent identical requests apply once.

No lost updates: on PostgreSQL the participants' rows are locked
``ORDER BY id … FOR UPDATE`` (one order, no deadlocks); on SQLite the write
transaction is ``BEGIN IMMEDIATE``.  Games with disjoint players commute, so
their relative order in the log does not matter.
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime

import numpy as np
from sqlalchemy import select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.orm import Session

from app import rating
from app.errors import Conflict, InvalidInput, NotFound
from app.games.schemas import BatchIn, GameIn, GameOut
from app.ladders.service import initial_vector
from app.models import Game, IdempotencyKey, Ladder, Participant, Player, pack, unpack
from app.schemas import Page


def request_hash(body: GameIn | BatchIn) -> str:
    canonical = json.dumps(body.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


def stored_response(session: Session, ladder: Ladder, key: str | None, digest: str) -> dict | None:
    """The response recorded for ``key``, or None; 409 if the key came with another body."""
    if key is None:
        return None
    row = session.get(IdempotencyKey, (ladder.id, key))
    if row is None:
        return None
    if row.request_hash != digest:
        raise Conflict(f"Idempotency key {key!r} was already used with a different request body.")
    return row.response


def post_games(
    session: Session, ladder: Ladder, games: list[GameIn], idempotency_key: str | None, digest: str, batch: bool
) -> dict:
    """Apply ``games`` in order inside the caller's transaction; return the response body."""
    if idempotency_key is None and not batch and games[0].external_id is not None:
        idempotency_key = "external_id:" + games[0].external_id
    if (found := stored_response(session, ladder, idempotency_key, digest)) is not None:
        return found
    players = _lock_players(session, ladder, games, prefix="games" if batch else None)
    # A concurrent identical request may have committed while we waited for the locks.
    if (found := stored_response(session, ladder, idempotency_key, digest)) is not None:
        return found
    _check_external_ids(session, ladder, games, batch)

    out = [_apply(session, ladder, players, game) for game in games]
    response = {"games": out} if batch else out[0]
    if idempotency_key is not None:
        session.add(
            IdempotencyKey(
                ladder_id=ladder.id, key=idempotency_key, request_hash=digest, status_code=201, response=response
            )
        )
    session.flush()
    return response


def _field(prefix: str | None, index: int, rest: str) -> str:
    return f"{prefix}[{index}].{rest}" if prefix else rest


def _lock_players(session: Session, ladder: Ladder, games: list[GameIn], prefix: str | None) -> dict[str, Player]:
    """Every participant's row, created if allowed, locked in id order."""
    keys = sorted({key for game in games for side in game.sides for key in side.players})
    if ladder.auto_create_players:
        existing = set(session.scalars(select(Player.key).where(Player.ladder_id == ladder.id, Player.key.in_(keys))))
        missing = [k for k in keys if k not in existing]
        if missing:
            insert = pg_insert if session.get_bind().dialect.name == "postgresql" else sqlite_insert
            rows = []
            for key in missing:
                blob = pack(initial_vector(ladder, key))
                rows.append(
                    {
                        "ladder_id": ladder.id,
                        "key": key,
                        "initial": blob,
                        "vector": blob,
                        "games": 0,
                        "wins": 0,
                        "draws": 0,
                        "losses": 0,
                        "comparisons": 0,
                        "created_at": datetime.now(UTC),
                    }
                )
            session.execute(insert(Player).values(rows).on_conflict_do_nothing(index_elements=["ladder_id", "key"]))
    locked = session.scalars(
        select(Player)
        .where(Player.ladder_id == ladder.id, Player.key.in_(keys))
        .order_by(Player.id)
        .with_for_update()
        .execution_options(populate_existing=True)
    ).all()
    players = {p.key: p for p in locked}
    for g, game in enumerate(games):
        for s, side in enumerate(game.sides):
            for n, key in enumerate(side.players):
                if key not in players:
                    field = _field(prefix, g, f"sides[{s}].players[{n}]")
                    raise InvalidInput(
                        f"{field}: unknown player {key!r} (this ladder does not create players automatically)",
                        errors=[{"field": field, "message": f"unknown player {key!r}"}],
                    )
    return players


def _check_external_ids(session: Session, ladder: Ladder, games: list[GameIn], batch: bool) -> None:
    ids = [g.external_id for g in games if g.external_id is not None]
    if not ids:
        return
    taken = set(session.scalars(select(Game.external_id).where(Game.ladder_id == ladder.id, Game.external_id.in_(ids))))
    seen: set[str] = set()
    for n, game in enumerate(games):
        ext = game.external_id
        if ext is not None and (ext in taken or ext in seen):
            field = f"games[{n}].external_id" if batch else "external_id"
            raise Conflict(f"{field}: a game with external_id {ext!r} exists already.", errors=[{"field": field}])
        if ext is not None:
            seen.add(ext)


def _apply(session: Session, ladder: Ladder, players: dict[str, Player], game: GameIn) -> dict:
    """Apply one validated game to the locked player rows (SPEC §3-§6) and record it."""
    sides = [side.players for side in game.sides]
    members = [players[key] for side in sides for key in side]
    C = np.array([unpack(p.vector) for p in members])
    index = iter(range(len(members)))
    if game.sides[0].rank is not None:
        ranks = [float(side.rank) for side in game.sides]
    else:
        ranks = rating.ranks_from_scores([side.score for side in game.sides]).tolist()
    advantages = [side.logits for side in game.sides]
    has_advantage = any(a != 0.0 for a in advantages)
    result = rating.apply_game(
        C,
        rating.Game(
            tuple(tuple(next(index) for _ in side) for side in sides),
            tuple(ranks),
            tuple(advantages) if has_advantage else None,
        ),
        ladder.eta,
    )
    played_at = game.played_at or datetime.now(UTC)
    row = Game(
        ladder_id=ladder.id,
        external_id=game.external_id,
        played_at=played_at,
        payload={"sides": sides, "ranks": ranks, "advantages": advantages if has_advantage else None},
        response={},
    )
    session.add(row)
    session.flush()  # allocates the id (the log position) while the participants are locked

    n_sides = len(sides)
    out_sides = [
        {
            "players": [],
            "rank": ranks[s],
            "actual_score": float(result.actual[s]),
            "expected_score": float(result.expected[s]),
        }
        for s in range(n_sides)
    ]
    for t, player in enumerate(members):
        s = int(result.member_side[t])
        before, after = result.before[t], result.after[t]
        player.vector = pack(after)
        player.games += 1
        par = 1.0 / n_sides  # above the average share is a win, at it a draw, below it a loss
        actual = result.actual[s]
        player.wins += int(actual > par)
        player.draws += int(actual == par)
        player.losses += int(actual < par)
        player.comparisons += n_sides - 1
        if player.last_played_at is None or _aware(player.last_played_at) < played_at:
            player.last_played_at = played_at
        session.add(
            Participant(
                game_id=row.id,
                player_id=player.id,
                side=s,
                before=pack(before),
                after=pack(after),
                actual_score=float(actual),
                expected_score=float(result.expected[s]),
            )
        )
        out_sides[s]["players"].append({"key": player.key, "before": before.tolist(), "after": after.tolist()})
    response = GameOut(
        id=row.id, seq=row.id, played_at=played_at, external_id=game.external_id, sides=out_sides
    ).model_dump(mode="json")
    row.response = response
    return response


def _aware(value: datetime) -> datetime:
    """SQLite returns naive datetimes; they are UTC."""
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def list_games(session: Session, ladder: Ladder, limit: int, cursor: int | None) -> Page[GameOut]:
    query = select(Game.response).where(Game.ladder_id == ladder.id)
    if cursor is not None:
        query = query.where(Game.id < cursor)
    rows = session.scalars(query.order_by(Game.id.desc()).limit(limit)).all()
    items = [GameOut.model_validate(r) for r in rows]
    return Page[GameOut](items=items, next_cursor=str(items[-1].id) if len(items) == limit else None)


def get_game(session: Session, ladder: Ladder, game_id: int) -> GameOut:
    response = session.scalar(select(Game.response).where(Game.ladder_id == ladder.id, Game.id == game_id))
    if response is None:
        raise NotFound(f"There is no game {game_id} in ladder {ladder.slug!r}.")
    return GameOut.model_validate(response)
