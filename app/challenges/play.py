"""Recording the game that settles a challenge: posted as ``POST …/games`` posts it (group commit, idempotency),
and the challenge marked played in the game's own transaction.

The game's idempotency key is the challenge's (:func:`idempotency_key`), in
the server's own namespace, which no client's ``Idempotency-Key`` reaches: a
retried call with the same result is answered as the first, applying nothing;
another result for a challenge already played is a 409 naming its game.
"""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy.orm import Session

from app.challenges import service
from app.challenges.schemas import PlayIn
from app.core.errors import InvalidInput
from app.core.ladder import LadderRow
from app.domain.access import Caller, ladder_for
from app.games.intake import SERVER, Post, request_hash
from app.games.schemas import GameIn, SideIn
from app.storage import challenges, idempotency


def idempotency_key(number: int) -> str:
    """The key the game of challenge ``number`` is recorded under: one game per challenge, however often sent."""
    return f"{SERVER}challenge:{number}"


def prepare(session: Session, slug: str, number: int, data: PlayIn, caller: Caller) -> Post | None:
    """The game post that settles the challenge (a write key); None if this very result was recorded already (a
    retry: nothing to apply).  404 for no such challenge, 409 if it cannot be played, 422 for a winner or scores
    that are not the two players'."""
    ladder = ladder_for(session, slug, caller, "write")
    row = service.found(session, ladder, number)
    if row.status == "played" and _played_with(session, ladder, row, data):
        return None
    # Checked before the game is made: one that cannot be played may be between a merged player and themselves.
    service.check_status(row, datetime.now(UTC), ("open", "accepted"), "play")
    game = game_of(ladder, row, data)
    return Post(slug, caller, [game], idempotency_key(number), request_hash(game), batch=False, also=settle(number))


def _played_with(session: Session, ladder: LadderRow, row: challenges.Row, data: PlayIn) -> bool:
    """Whether the played challenge's game is the answer recorded for this very result: under its key, or under
    ``challenge:N``, the key older versions used, which a client's game may hold instead (so the answer found
    must be the challenge's game)."""
    digest = request_hash(game_of(ladder, row, data))
    for key in (idempotency_key(row.number), f"challenge:{row.number}"):
        found = idempotency.stored_response(session, ladder.id, key)
        if found is not None and found[0] == digest and found[1].get("id") == row.game:
            return True
    return False


def game_of(ladder: LadderRow, row: challenges.Row, data: PlayIn) -> GameIn:
    """The challenge's game as a post gives it: its two players, the winner first, ranked, or scored if scores
    are given."""
    players = {row.from_key: row.from_key, row.to_key: row.to_key}
    winner = _one_of(ladder, players, data.winner, "winner")
    loser = row.to_key if winner == row.from_key else row.from_key
    if data.scores is None:
        return GameIn(sides=[SideIn(players=[winner], rank=1), SideIn(players=[loser], rank=2)])
    scores = {_one_of(ladder, players, key, f"scores.{key}"): score for key, score in data.scores.items()}
    if len(scores) < 2:
        raise InvalidInput("scores: give each of the two players' scores once", field="scores")
    if scores[winner] <= scores[loser]:
        message = f"{winner!r} won, so their score must be the higher ({scores[winner]:g} to {scores[loser]:g})"
        raise InvalidInput(f"scores: {message}", errors=[{"field": "scores", "message": message}])
    return GameIn(sides=[SideIn(players=[winner], score=scores[winner]), SideIn(players=[loser], score=scores[loser])])


def _one_of(ladder: LadderRow, players: dict[str, str], key: str, field: str) -> str:
    """The challenge's player ``key`` names (folded, through aliases); 422 naming ``field`` if neither."""
    named = ladder.player_key(key)
    if named not in players:
        message = f"{key!r} is not one of the challenge's players ({' and '.join(repr(p) for p in players)})"
        raise InvalidInput(f"{field}: {message}", errors=[{"field": field, "message": message}])
    return named


def settle(number: int):
    """What the game's transaction does once the game is applied: mark challenge ``number`` played with it, if it
    is still open or accepted (a concurrent answer may have come first: then a 409, and no game)."""

    def mark_played(session: Session, ladder: LadderRow, game: dict) -> None:
        now = datetime.now(UTC)
        row = service.found(session, ladder, number, lock=True)
        service.check_status(row, now, ("open", "accepted"), "play")
        challenges.answer(session, ladder.id, number, "played", now, game=game["id"])
        service.note(session, ladder.id, "played", number)

    return mark_played
