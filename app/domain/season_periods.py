"""The periods of seasons that close themselves (a ladder's ``season_every``): each calendar month or quarter in
UTC, its name ("2026-11", "2026-Q4"), and when the one running at a moment ends."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Literal, NamedTuple

Every = Literal["month", "quarter"]
#: Months a period of each kind spans.
MONTHS = {"month": 1, "quarter": 3}


class Period(NamedTuple):
    start: datetime
    end: datetime
    name: str


def _shifted(year: int, month: int, months: int) -> datetime:
    """The first instant (UTC) of the month ``months`` after ``month`` of ``year`` (months counted from 1)."""
    index = year * 12 + month - 1 + months
    return datetime(index // 12, index % 12 + 1, 1, tzinfo=UTC)


def period_at(every: str, moment: datetime) -> Period:
    """The period of kind ``every`` running at ``moment`` (in UTC): from its first instant to the first of the
    next."""
    moment = moment.astimezone(UTC)
    span = MONTHS[every]
    first = moment.month - (moment.month - 1) % span
    start = datetime(moment.year, first, 1, tzinfo=UTC)
    name = f"{moment.year}-{first:02d}" if span == 1 else f"{moment.year}-Q{(first - 1) // 3 + 1}"
    return Period(start, _shifted(moment.year, first, span), name)


def ended_since(every: str, due: datetime, now: datetime) -> list[Period]:
    """The periods of kind ``every`` that ended at ``due`` or later, up to ``now``, oldest first (``due`` is the
    end of the first of them): what a server that was away closes when it comes back."""
    found: list[Period] = []
    while due <= now:
        period = period_at(every, due - timedelta(microseconds=1))
        found.append(period)
        due = period_at(every, due).end
    return found
