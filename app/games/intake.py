"""Intake of posted games: what a post is, its idempotency record, and the checks it passes before it is applied.

Exactly-once: an ``Idempotency-Key`` header (or the game's ``external_id``) is
recorded with the response in the same transaction as the game; a retry finds
it and gets the stored response.  The check is repeated after the
participants are locked, so concurrent identical requests apply once.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field

from sqlalchemy.orm import Session

from app import storage
from app.core.errors import Conflict, InvalidInput
from app.core.ladder import LadderRow
from app.domain.access import Caller, check_seats
from app.domain.player_keys import players_named
from app.games.schemas import BatchIn, GameIn


def request_hash(body: GameIn | BatchIn) -> str:
    """A digest of the validated request: the same game sent again, however its JSON is spaced, hashes the same.
    A game's ``match``, where it has none, is left out, as it was before games had one: a retry sent across an
    upgrade still finds its first answer."""
    exclude: set[str] | dict[str, dict[int, set[str]]] | None
    if isinstance(body, GameIn):
        exclude = {"match"} if body.match is None else None
    else:
        plain = {n: {"match"} for n, game in enumerate(body.games) if game.match is None}
        exclude = {"games": plain} if plain else None
    return hashlib.sha256(body.model_dump_json(exclude=exclude).encode()).hexdigest()


@dataclass
class Post:
    """One posted request: a game, or a batch applied all or nothing."""

    slug: str
    caller: Caller
    games: list[GameIn]
    idempotency_key: str | None
    digest: str
    batch: bool
    #: A new player's name: the key as the post spelled it, where case folding changed it.
    names: dict[str, str] = field(default_factory=dict)
    #: What else the post's transaction does once its one game is applied, given the game as answered (a challenge
    #: marked played with it); a problem it raises fails the post alone, which then changes nothing.
    also: Callable[[Session, LadderRow, dict], None] | None = None

    @property
    def external_id(self) -> str | None:
        """The external_id its response is recorded by: a single game's, when no Idempotency-Key is sent."""
        if self.idempotency_key is None and not self.batch:
            return self.games[0].external_id
        return None

    @property
    def record_key(self) -> str | None:
        """The key its response is recorded under: the Idempotency-Key, else a single game's external_id's."""
        return self.idempotency_key if self.external_id is None else external_key(self.external_id)

    def field(self, index: int, rest: str) -> str:
        return f"games[{index}].{rest}" if self.batch else rest


class Replayed(dict):
    """The answer first given to a post whose idempotency key (or external id) was seen before: the game counted
    once, and this request applied nothing (``Idempotent-Replayed: true``)."""


def recorded_answer(
    session: Session, ladder: LadderRow, key: str, digest: str, external_id: str | None = None
) -> dict | None:
    """The response recorded for ``key`` (made of ``external_id``, if given), or None; 409 if the key came with
    another body."""
    found = storage.idempotency.stored_response(session, ladder.id, key)
    if found is None and external_id is not None:
        # Older versions recorded an external_id under a key a client's Idempotency-Key could also hold (cut to the
        # column's 200 characters on PostgreSQL): only the answer of this very request, a game with this
        # external_id, is its answer.
        legacy = storage.idempotency.stored_response(session, ladder.id, ("external_id:" + external_id)[:200])
        if legacy is not None and legacy[0] == digest and legacy[1].get("external_id") == external_id:
            return legacy[1]
        return None
    if found is None:
        return None
    if found[0] != digest:
        raise key_reused(key, external_id)
    return found[1]


#: The start of the keys the server records games under for itself (a challenge's game, a game's external_id): a
#: character no Idempotency-Key header can hold (a header's bytes are read as Latin-1, and a key outside printable
#: ASCII is a 422), so no client's key can take one's place.
SERVER = "\u2192"


def external_key(external_id: str) -> str:
    """The key a game's response is recorded under by its external_id: in the server's namespace, and a digest of
    the id, which may be as long as the key column (200 characters)."""
    return SERVER + "external_id:" + hashlib.sha256(external_id.encode()).hexdigest()


def key_reused(key: str, external_id: str | None = None) -> Conflict:
    if external_id is not None:  # a single game's external_id, recorded as its idempotency key
        return Conflict(
            f"external_id: a game with external_id {external_id!r} exists already (with other content).",
            errors=[{"field": "external_id", "message": "taken by another game"}],
        )
    return Conflict(
        f"Idempotency key {key!r} was already used with a different request body.",
        errors=[{"field": "Idempotency-Key", "message": "already used with a different body"}],
    )


def check_external_ids(session: Session, ladder: LadderRow, post: Post, seen: set[str]) -> None:
    ids = [g.external_id for g in post.games if g.external_id is not None]
    if not ids:
        return
    taken = storage.games.taken_external_ids(session, ladder.id, ids) | seen
    mine: set[str] = set()
    for n, game in enumerate(post.games):
        ext = game.external_id
        if ext is None:
            continue
        if ext in taken:
            name = post.field(n, "external_id")
            raise Conflict(f"{name}: a game with external_id {ext!r} exists already.", errors=[{"field": name}])
        if ext in mine:
            name = post.field(n, "external_id")
            raise Conflict(f"{name}: external_id {ext!r} appears twice in this batch.", errors=[{"field": name}])
        mine.add(ext)


def resolve_players(ladder: LadderRow, post: Post) -> None:
    """Name each player of the post's games by the key the ladder knows them by: case-folded if it matches keys
    so, and through its aliases (:meth:`LadderRow.player_key`).  Two keys of one game that name one player are a
    422; a new player's spelling that folding changed becomes their name (``post.names``)."""
    if not ladder.case_insensitive_keys and not ladder.aliases:
        return
    games = []
    for g, game in enumerate(post.games):
        named = players_named(ladder, [key for side in game.sides for key in side.players])
        sides = []
        for s, side in enumerate(game.sides):
            players = []
            for m, key in enumerate(side.players):
                folded, player, first = next(named)
                if first != key:
                    name = post.field(g, f"sides[{s}].players[{m}]")
                    message = f"{key!r} and {first!r} are one player, {player!r}"
                    raise InvalidInput(f"{name}: {message}", errors=[{"field": name, "message": message}])
                if folded != key and player == folded:
                    post.names.setdefault(player, key)
                players.append(player)
            sides.append(side if players == side.players else side.model_copy(update={"players": players}))
        same = all(new is old for new, old in zip(sides, game.sides, strict=True))
        games.append(game if same else game.model_copy(update={"sides": sides}))
    post.games = games


def check_players_exist(session: Session, ladder: LadderRow, post: Post) -> None:
    keys = sorted({k for g in post.games for side in g.sides for k in side.players})
    known = storage.players.existing(session, ladder.id, keys)
    for g, game in enumerate(post.games):
        for s, side in enumerate(game.sides):
            for n, key in enumerate(side.players):
                if key not in known:
                    name = post.field(g, f"sides[{s}].players[{n}]")
                    raise InvalidInput(
                        f"{name}: unknown player {key!r} (this ladder does not create players automatically)",
                        errors=[{"field": name, "message": f"unknown player {key!r}"}],
                    )


def check_post_seats(ladder: LadderRow, post: Post) -> None:
    """Every seat a side takes is one the ladder names (422 naming the field otherwise)."""
    wanted = {
        post.field(g, f"sides[{s}].seat"): side.seat
        for g, game in enumerate(post.games)
        for s, side in enumerate(game.sides)
        if side.seat is not None
    }
    check_seats(ladder, wanted)
