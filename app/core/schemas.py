"""Types shared by the request and response models."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any, Generic, Literal, Self, TypeVar, overload

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    Strict,
    StringConstraints,
    model_validator,
)

from app.rating import advantage_from_probability


def printable(value: str) -> str:
    """``value`` if every character is printable: no control, format (bidi controls, zero-width), private-use,
    unassigned or separator characters other than the plain space.  They are invisible or garble what shows
    the text (PostgreSQL refuses NUL outright), so no identifier or name may hold them."""
    if not value.isprintable():
        bad = next(ch for ch in value if not ch.isprintable())
        raise ValueError(f"must be printable: U+{ord(bad):04X} is a control, format or invisible character")
    return value


SLUG = r"^[a-z0-9][a-z0-9_-]{0,63}$"
PLAYER_KEY = r"^[^\s/]+(?: [^\s/]+)*$"
#: What each pattern asks for, as a 422 says it.
PATTERNS = {
    SLUG: "must be 1-64 lowercase letters, digits, '-' or '_', starting with a letter or a digit (e.g. office-pong)",
    PLAYER_KEY: "must have no '/', no tab or line break, and single spaces only between words (e.g. ann or Ann Lee)",
}
Slug = Annotated[str, StringConstraints(pattern=SLUG)]
#: A player's key: printable, no ``/``, single spaces between words, 1-128 characters.
PlayerKey = Annotated[
    str,
    StringConstraints(min_length=1, max_length=128, pattern=PLAYER_KEY),
    AfterValidator(printable),
]
#: A name, reason or client-chosen id: printable text of at most ``n`` characters.
Name = Annotated[str, StringConstraints(min_length=1, max_length=200), AfterValidator(printable)]
SeatName = Annotated[str, StringConstraints(min_length=1, max_length=64), AfterValidator(printable)]
ExternalId = Annotated[str, StringConstraints(min_length=1, max_length=200), AfterValidator(printable)]
Reason = Annotated[str, StringConstraints(max_length=500), AfterValidator(printable)]
#: The largest vector component accepted (either way): real ratings are tens of logits at most.
MAX_COMPONENT = 1000.0
Component = Annotated[float, Strict(), Field(ge=-MAX_COMPONENT, le=MAX_COMPONENT)]
Vector = Annotated[list[Component], Field(min_length=2, max_length=16)]
#: A number in a request or an export line: a JSON number, an integer or not (never `true`, nor `"1"`). Every
#: number a request model reads is a Number, an Integer or a NumberChoice: pydantic's lax mode takes `true` for 1.
Number = Annotated[float, Strict()]
#: A whole number in a request or an export line: a JSON integer (never `true`, nor `2.0` or `"2"`).
Integer = Annotated[int, Strict()]


def not_a_boolean(value: Any) -> Any:
    """``value`` unless it is ``true`` or ``false``, which pydantic takes for 1 and 0 in a ``Literal[1, …]``, even
    in strict mode."""
    if isinstance(value, bool):
        raise ValueError(f"must be a number, not {str(value).lower()}")
    return value


#: What makes a choice among numbers refuse `true`: ``Annotated[Literal[1, 3, 5], NumberChoice]``.
NumberChoice = BeforeValidator(not_a_boolean)
#: The largest score a side may give, either way: points, goals, strokes; sides' scores lie in ±MAX_SCORE.
MAX_SCORE = 1_000_000
#: The largest seat advantage accepted, in logits (either way).
MAX_ADVANTAGE = 50.0
#: The largest id or cursor the databases store (a signed 64-bit integer); larger ones are a 422, not a 500.
MAX_ID = 2**63 - 1


#: The window a date given to the service must fall in, in UTC: later dates are typos, and they overflow time zones.
EARLIEST, LATEST = datetime(1900, 1, 1, tzinfo=UTC), datetime(2200, 1, 1, tzinfo=UTC)


def in_window(value: datetime) -> datetime:
    """``value`` in UTC (a time without a zone is taken as UTC) if it falls between :data:`EARLIEST` and
    :data:`LATEST` once in UTC, the rule for every date that enters the service (games, batches, import lines):
    whatever it accepts, an export holds and an import takes back."""
    wall = value.replace(tzinfo=None)
    # An offset is under a day: a wall time further out cannot come inside, and shifting it could overflow.
    if EARLIEST.replace(tzinfo=None) - timedelta(days=1) < wall < LATEST.replace(tzinfo=None) + timedelta(days=1):
        value = value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
        if EARLIEST <= value <= LATEST:
            return value
    raise ValueError(f"must be between {iso(EARLIEST)} and {iso(LATEST)} in UTC")


#: What a date given to the service starts with: pydantic would take a number, or a string of digits, as Unix time.
_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")


def a_date(value: Any) -> Any:
    """``value`` if it is a date in ISO 8601 (or already a ``datetime``): a number is refused, not read as a Unix
    time, which a client sending ``as_of=1735689600`` or ``-1`` by mistake would not see.  (Bodies' dates, JSON
    numbers among them, keep taking Unix times: clients send them so.)"""
    if isinstance(value, datetime) or (isinstance(value, str) and _DATE.match(value)):
        return value
    raise ValueError("must be a date and time in ISO 8601, e.g. 2026-03-01T12:00:00Z")


#: A date given to the service: checked in UTC against the window, returned in UTC.
Moment = Annotated[datetime, AfterValidator(in_window)]


@overload
def iso(moment: datetime) -> str: ...
@overload
def iso(moment: None) -> None: ...
def iso(moment: datetime | None) -> str | None:
    """A time as the API writes it: ISO 8601 in UTC with a ``Z``, as pydantic does."""
    return None if moment is None else moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


class StrictModel(BaseModel):
    """Rejects unknown fields and NaN/Infinity (which Python's JSON parser would accept)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


T = TypeVar("T")


class SeatAdvantage(StrictModel):
    """A side's seat advantage, in logits or as a win probability against an equal opponent, and its learned
    seat (mathematics §5)."""

    seat: SeatName | None = Field(
        None,
        description='One of the ladder\'s seats (e.g. "home", "white"), whose learned advantage is added to '
        "any advantage given here; one side per seat in a game.",
    )

    advantage: Number | None = Field(
        None, ge=-MAX_ADVANTAGE, le=MAX_ADVANTAGE, description="Seat advantage in logits (mathematics §5), within ±50."
    )
    win_probability: Number | None = Field(
        None,
        gt=0,
        lt=1,
        description="Seat advantage as P(this seat beats an equal opponent); it must come to within ±50 logits.",
    )

    @model_validator(mode="after")
    def _one_advantage(self) -> Self:
        if self.advantage is not None and self.win_probability is not None:
            raise ValueError("give either advantage or win_probability, not both")
        if self.win_probability is not None and abs(self.logits) > MAX_ADVANTAGE:
            raise ValueError(f"win_probability is more than {MAX_ADVANTAGE:g} logits from even")
        return self

    @property
    def logits(self) -> float:
        """h in logits; 0 when neither is given."""
        if self.win_probability is not None:
            return float(advantage_from_probability(self.win_probability))
        return self.advantage or 0.0


def distinct_seats(sides: Sequence[SeatAdvantage]) -> None:
    """One side per seat in a game or match (ValueError naming the seat taken twice)."""
    seats = [side.seat for side in sides if side.seat is not None]
    if len(set(seats)) < len(seats):
        twice = next(seat for n, seat in enumerate(seats) if seat in seats[:n])
        raise ValueError(f"seat {twice!r} is taken by more than one side")


class Page(BaseModel, Generic[T]):
    items: list[T]
    next_cursor: str | None = Field(
        None,
        description="Pass as `cursor` to get the next page; null on the last page. A leaderboard cursor holds the "
        "order (`by`, `inactive`) it was made for: with another it is a 422.",
    )

    @classmethod
    def of(cls, rows: list, limit: int | None, item: Callable[[Any], T], cursor: Callable[[Any], str]) -> Page[T]:
        """The page of ``rows`` read with one row more than ``limit`` (None: all of them), so the last page says
        so: no cursor to an empty page after a full one."""
        more = limit is not None and len(rows) > limit
        rows = rows[:limit]
        return cls(items=[item(row) for row in rows], next_cursor=cursor(rows[-1]) if more else None)


def one_more(limit: int | None) -> int | None:
    """How many rows to read for a page of ``limit`` (:meth:`Page.of`)."""
    return None if limit is None else limit + 1


class ReportPending(BaseModel):
    """A ladder-wide report still being computed (202): poll the same URL after `Retry-After` seconds."""

    status: Literal["queued", "running"]
    progress: float = Field(ge=0, le=1, description="How far the computation has got, 0-1.")
    ladder_version: int = Field(description="The ladder version the report is being computed at.")


#: What a game's ``elo_change`` is, wherever a game is shown (a post's answer, the games, a player's history).
ELO_CHANGE = (
    "What the game did to the player's rating, in Elo-equivalent points, as the game's post answered it (against the "
    "field just after the game), so that it does not drift as the field moves; where a later replay changed the "
    "game's vectors (a void before it, a merge, a new rate or `k`, a refit), and for games posted before it was "
    "kept: `elo_after - elo_before`."
)
