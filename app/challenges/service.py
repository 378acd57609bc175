"""Making, answering and listing challenges: every change in one transaction with its ``challenge`` event and the
ladder's version bump, after the ladder's challenges past their time are marked expired."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from sqlalchemy.orm import Session

from app import storage
from app.challenges.schemas import ChallengeIn
from app.core.errors import Conflict, InvalidInput, NotFound
from app.core.ladder import LadderRow
from app.core.schemas import Page
from app.storage import challenges

#: What each answer needs the challenge to be, and what it makes it.
ANSWERS = {
    "accept": (("open",), "accepted"),
    "decline": (("open",), "declined"),
    "withdraw": (("open", "accepted"), "withdrawn"),
}
#: The event action of each status a change gives.
ACTIONS = {"accepted": "accepted", "declined": "declined", "withdrawn": "withdrawn", "played": "played"}


def note(session: Session, ladder_id: int, action: str, *numbers: int) -> None:
    """The ladder's ``challenge`` events: one per challenge, for the event stream."""
    storage.events.add(session, ladder_id, "challenge", *({"action": action, "id": n} for n in numbers))


def expire(session: Session, ladder: LadderRow, now: datetime) -> None:
    """Mark the ladder's challenges past their time expired, each with its event (the caller holds the ladder)."""
    if gone := challenges.expire_due(session, ladder.id, now):
        note(session, ladder.id, "expired", *gone)


def player_ids(session: Session, ladder: LadderRow, data: ChallengeIn) -> tuple[int, int]:
    """The ids of the challenge's two players, named as game posts name them (case folding, aliases): 422 naming
    an unknown one or a challenge to oneself, 409 naming one made inactive."""
    keys = {"from": ladder.player_key(data.from_), "to": ladder.player_key(data.to)}
    if keys["from"] == keys["to"]:
        same = "" if data.from_ == data.to else f" ({data.from_!r} and {data.to!r} are one player)"
        raise InvalidInput(f"to: a player cannot challenge themselves{same}", field="to")
    found = challenges.players(session, ladder.id, keys.values())
    for name, key in keys.items():
        if key not in found:
            message = f"unknown player {key!r} (a challenge never creates a player: add them first)"
            raise InvalidInput(f"{name}: {message}", errors=[{"field": name, "message": message}])
        if not found[key][1]:
            message = f"{key!r} is inactive: make them active again to challenge them or to challenge for them"
            raise Conflict(f"{name}: {message}", errors=[{"field": name, "message": message}])
    return found[keys["from"]][0], found[keys["to"]][0]


def create(session: Session, ladder: LadderRow, data: ChallengeIn, lasts: timedelta) -> dict:
    """A new open challenge from ``data.from_`` to ``data.to``, expiring after ``lasts``; 409 if the two have an
    unresolved one already."""
    now = datetime.now(UTC)
    from_id, to_id = player_ids(session, ladder, data)
    storage.ladders.lock(session, ladder.id)  # numbers are given out one at a time; no duplicate slips in
    expire(session, ladder, now)
    if (number := challenges.unresolved_between(session, ladder.id, from_id, to_id, now)) is not None:
        message = f"these two players have an open challenge already: challenge {number}"
        raise Conflict(f"to: {message}", errors=[{"field": "to", "message": message}], challenge=number)
    number = challenges.add(session, ladder.id, from_id, to_id, data.message, now, now + lasts)
    note(session, ladder.id, "created", number)
    storage.ladders.bump(session, [ladder.id], stamped=True)
    return shown(session, ladder, number, now)


def answer(session: Session, ladder: LadderRow, number: int, how: str) -> dict:
    """Accept, decline or withdraw the challenge ``number`` (:data:`ANSWERS`): 409 if its status does not allow it."""
    now = datetime.now(UTC)
    storage.ladders.lock(session, ladder.id)
    row = found(session, ladder, number, lock=True)
    needs, becomes = ANSWERS[how]
    check_status(row, now, needs, how)
    expire(session, ladder, now)
    challenges.answer(session, ladder.id, number, becomes, now)
    note(session, ladder.id, ACTIONS[becomes], number)
    storage.ladders.bump(session, [ladder.id], stamped=True)
    return shown(session, ladder, number, now)


def found(session: Session, ladder: LadderRow, number: int, lock: bool = False) -> challenges.Row:
    row = challenges.get(session, ladder.id, number, lock=lock)
    if row is None:
        raise NotFound(f"There is no challenge {number} in ladder {ladder.slug!r}.")
    return row


def check_status(row: challenges.Row, now: datetime, needs: tuple[str, ...], what: str) -> None:
    """409 unless the challenge's status at ``now`` is one of ``needs``, saying what it is (and its game)."""
    status = row.status_at(now)
    if status in needs:
        return
    said = f"was played: game {row.game}" if status == "played" else f"is {status}"
    only = " or ".join(needs)
    message = f"challenge {row.number} {said}; only an {only} challenge can be {_done(what)}"
    raise Conflict(message, errors=[{"field": "id", "message": message}], challenge_status=status, game=row.game)


def _done(what: str) -> str:
    return {"accept": "accepted", "decline": "declined", "withdraw": "withdrawn", "play": "played"}[what]


def shown(session: Session, ladder: LadderRow, number: int, now: datetime | None = None) -> dict:
    """The challenge as the API shows it."""
    return found(session, ladder, number).shown(now or datetime.now(UTC))


def list_challenges(
    session: Session, ladder: LadderRow, statuses: Sequence[str], player: str | None, limit: int, cursor: int | None
) -> Page[dict]:
    """The ladder's challenges, newest first: those of ``statuses`` (all if none), of ``player`` if given."""
    player_id = None
    if player is not None:
        key = ladder.player_key(player)
        if (ids := challenges.players(session, ladder.id, [key])).get(key) is None:
            raise NotFound(f"There is no player {key!r} in ladder {ladder.slug!r}.")
        player_id = ids[key][0]
    now = datetime.now(UTC)
    rows = challenges.page(session, ladder.id, list(statuses), player_id, cursor, limit + 1, now)
    items = [row.shown(now) for row in rows[:limit]]
    return Page[dict](items=items, next_cursor=str(items[-1]["id"]) if len(rows) > limit else None)
