"""Challenges between two players (``challenges``): their rows, and each as the API shows it.

A challenge is unresolved while it is ``open`` or ``accepted`` and its
``expires_at`` has not passed; past it, it reads as ``expired`` at once, and
the ladder's next challenge write marks it so (:func:`expire_due`), with its
event.  Writers take the ladder's row first (:func:`app.storage.ladders.lock`),
then a challenge's: the order a game commit that settles a challenge takes them
in (players, ladder, challenge), so the two never deadlock.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy import and_, func, or_, select, update
from sqlalchemy.orm import Session, aliased

from app.storage.tables import Challenge, Player

#: Every status a challenge may have; an unresolved one is open or accepted.
STATUSES = ("open", "accepted", "declined", "withdrawn", "played", "expired")
UNRESOLVED = ("open", "accepted")
#: Why a merge withdrew a challenge: another stands between the same two players, or its two players became one.
DUPLICATE, SAME_PLAYER = "duplicate", "same_player"

_FROM, _TO = aliased(Player), aliased(Player)
_COLUMNS = (
    Challenge.number,
    _FROM.key,
    _FROM.name,
    _TO.key,
    _TO.name,
    Challenge.message,
    Challenge.status,
    Challenge.created_at,
    Challenge.expires_at,
    Challenge.answered_at,
    Challenge.game,
    Challenge.reason,
    Challenge.from_player_id,
    Challenge.to_player_id,
)


@dataclass(frozen=True)
class Row:
    """A challenge as stored, with its players' keys and names now."""

    number: int
    from_key: str
    from_name: str | None
    to_key: str
    to_name: str | None
    message: str | None
    status: str
    created_at: datetime
    expires_at: datetime
    answered_at: datetime | None
    game: int | None
    reason: str | None
    from_id: int
    to_id: int

    def status_at(self, now: datetime) -> str:
        """Its status at ``now``: an unresolved challenge past its time is expired."""
        return "expired" if self.status in UNRESOLVED and self.expires_at <= now else self.status

    def shown(self, now: datetime) -> dict:
        """The challenge as the API shows it (``ChallengeOut``), as JSON-ready values."""
        return {
            "id": self.number,
            "from": self.from_key,
            "from_name": self.from_name,
            "to": self.to_key,
            "to_name": self.to_name,
            "message": self.message,
            "status": self.status_at(now),
            "reason": self.reason,
            "created_at": iso(self.created_at),
            "expires_at": iso(self.expires_at),
            "answered_at": iso(self.answered_at),
            "game": self.game,
        }


def iso(moment: datetime | None) -> str | None:
    """A time as the API writes it: ISO 8601 in UTC with a ``Z``."""
    return None if moment is None else moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def _select(ladder_id: int):
    """The ladder's challenges with their players (a challenge whose player row is gone is not shown)."""
    return (
        select(*_COLUMNS)
        .join(_FROM, and_(_FROM.ladder_id == Challenge.ladder_id, _FROM.id == Challenge.from_player_id))
        .join(_TO, and_(_TO.ladder_id == Challenge.ladder_id, _TO.id == Challenge.to_player_id))
        .where(Challenge.ladder_id == ladder_id)
    )


def players(session: Session, ladder_id: int, keys: Iterable[str]) -> dict[str, tuple[int, bool]]:
    """(id, active) of each of ``keys`` that is a player of the ladder, by key."""
    query = select(Player.key, Player.id, Player.active).where(Player.ladder_id == ladder_id, Player.key.in_(keys))
    return {key: (player_id, active) for key, player_id, active in session.execute(query)}


def get(session: Session, ladder_id: int, number: int, lock: bool = False) -> Row | None:
    """The ladder's challenge ``number``, or None; with ``lock``, its row locked until the commit (PostgreSQL)."""
    if lock and session.get_bind().dialect.name == "postgresql":
        mine = (Challenge.ladder_id == ladder_id, Challenge.number == number)
        session.execute(select(Challenge.number).where(*mine).with_for_update())
    found = session.execute(_select(ladder_id).where(Challenge.number == number)).first()
    return None if found is None else Row(*found)


def numbered(session: Session, ladder_id: int, numbers: list[int], now: datetime) -> dict[int, dict]:
    """The ladder's challenges ``numbers`` as the API shows them, by number (numbers none has are left out)."""
    query = _select(ladder_id).where(Challenge.number.in_(numbers))
    return {row.number: row.shown(now) for row in (Row(*found) for found in session.execute(query))}


def page(
    session: Session,
    ladder_id: int,
    statuses: list[str],
    player_id: int | None,
    before: int | None,
    limit: int,
    now: datetime,
) -> list[Row]:
    """Up to ``limit`` of the ladder's challenges, newest first, numbered below ``before``: those whose status at
    ``now`` is one of ``statuses`` (all if empty), of the player ``player_id`` if given."""
    query = _select(ladder_id)
    if statuses:
        query = query.where(or_(*(_status_is(status, now) for status in statuses)))
    if player_id is not None:
        query = query.where(or_(Challenge.from_player_id == player_id, Challenge.to_player_id == player_id))
    if before is not None:
        query = query.where(Challenge.number < before)
    return [Row(*found) for found in session.execute(query.order_by(Challenge.number.desc()).limit(limit))]


def _status_is(status: str, now: datetime):
    """The condition that a challenge's status at ``now`` is ``status`` (:meth:`Row.status_at`)."""
    if status in UNRESOLVED:
        return and_(Challenge.status == status, Challenge.expires_at > now)
    if status == "expired":
        unresolved = and_(Challenge.status.in_(UNRESOLVED), Challenge.expires_at <= now)
        return or_(Challenge.status == "expired", unresolved)
    return Challenge.status == status


def unresolved_between(session: Session, ladder_id: int, a: int, b: int, now: datetime) -> int | None:
    """The number of an unresolved challenge between the players ``a`` and ``b`` (either way), or None."""
    pair = or_(
        and_(Challenge.from_player_id == a, Challenge.to_player_id == b),
        and_(Challenge.from_player_id == b, Challenge.to_player_id == a),
    )
    query = select(Challenge.number).where(
        Challenge.ladder_id == ladder_id, Challenge.status.in_(UNRESOLVED), Challenge.expires_at > now, pair
    )
    return session.scalar(query.limit(1))


def add(
    session: Session, ladder_id: int, from_id: int, to_id: int, message: str | None, now: datetime, expires: datetime
) -> int:
    """A new open challenge, numbered after the ladder's last one (the caller holds the ladder's row); its number."""
    last = session.scalar(select(func.max(Challenge.number)).where(Challenge.ladder_id == ladder_id)) or 0
    values: dict[str, object] = {"ladder_id": ladder_id, "number": last + 1}
    values |= {"from_player_id": from_id, "to_player_id": to_id, "message": message, "status": "open"}
    values |= {"created_at": now, "expires_at": expires}
    session.execute(Challenge.__table__.insert().values(**values))
    return last + 1


def answer(session: Session, ladder_id: int, number: int, status: str, now: datetime, game: int | None = None) -> None:
    """Give the challenge its new ``status`` (and the number of the ``game`` that settled it)."""
    query = update(Challenge).where(Challenge.ladder_id == ladder_id, Challenge.number == number)
    session.execute(query.values(status=status, answered_at=now, game=game))


def expire_due(session: Session, ladder_id: int, now: datetime) -> list[int]:
    """Mark the ladder's unresolved challenges past their time expired; their numbers."""
    query = (
        update(Challenge)
        .where(Challenge.ladder_id == ladder_id, Challenge.status.in_(UNRESOLVED), Challenge.expires_at <= now)
        .values(status="expired", answered_at=Challenge.expires_at)
        .returning(Challenge.number)
    )
    return sorted(session.scalars(query))


def merge(session: Session, ladder_id: int, source_id: int, target_id: int, now: datetime) -> list[int]:
    """The player ``source_id`` became ``target_id`` (a merge): their challenges name ``target_id``, and the
    unresolved ones that may no longer stand are withdrawn, each with its reason: one between the two themselves
    (``same_player``), and all but one of those now between ``target_id`` and another player (``duplicate``: the
    accepted one stays, else the oldest).  The numbers withdrawn (the caller holds the ladder's row)."""
    for column in (Challenge.from_player_id, Challenge.to_player_id):
        query = update(Challenge).where(Challenge.ladder_id == ladder_id, column == source_id)
        session.execute(query.values({column.key: target_id}))
    mine = or_(Challenge.from_player_id == target_id, Challenge.to_player_id == target_id)
    unresolved = select(Challenge.number, Challenge.from_player_id, Challenge.to_player_id, Challenge.status).where(
        Challenge.ladder_id == ladder_id, Challenge.status.in_(UNRESOLVED), Challenge.expires_at > now, mine
    )
    withdrawn: dict[str, list[int]] = {SAME_PLAYER: [], DUPLICATE: []}
    kept: set[int] = set()
    # Accepted before open, then the oldest: the first seen with each other player stays.
    for row in sorted(session.execute(unresolved), key=lambda row: (row.status != "accepted", row.number)):
        other = row.to_player_id if row.from_player_id == target_id else row.from_player_id
        if other == target_id:
            withdrawn[SAME_PLAYER].append(row.number)
        elif other in kept:
            withdrawn[DUPLICATE].append(row.number)
        else:
            kept.add(other)
    for reason, numbers in withdrawn.items():
        if numbers:
            query = update(Challenge).where(Challenge.ladder_id == ladder_id, Challenge.number.in_(numbers))
            session.execute(query.values(status="withdrawn", answered_at=now, reason=reason))
    return sorted(withdrawn[SAME_PLAYER] + withdrawn[DUPLICATE])


def scrub(session: Session, ladder_id: int, player_id: int) -> None:
    """An erased person's challenges keep their pseudonym (by id) but lose their messages, which may name them."""
    mine = or_(Challenge.from_player_id == player_id, Challenge.to_player_id == player_id)
    session.execute(update(Challenge).where(Challenge.ladder_id == ladder_id, mine).values(message=None))
