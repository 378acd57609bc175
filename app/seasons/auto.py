"""Seasons that close themselves: a ladder's ``season_every`` closes a season at the end of each calendar month or
quarter (UTC), named after it, through :func:`app.seasons.service.close_season`.

Every server process checks once at start and then every :data:`EVERY` seconds, in a thread of its own, for the
ladders whose ``season_due`` (the end of the period running when the last close or the setting happened) has
passed.  Each is closed in one write transaction that takes the ladder's players first and reads
``season_due`` again: a second worker that was waiting finds it moved on and does nothing.  A server that was
away for several periods closes each of them once, oldest first, with the games played in it (a period without
games closes none), and moves ``season_due`` to the end of the period running now.
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable
from datetime import UTC, datetime

from sqlalchemy.orm import Session

from app import storage
from app.core.db import Database
from app.domain.rerating import lock_ladder
from app.domain.season_periods import ended_since, period_at
from app.seasons.schemas import SeasonCreate, SeasonOut
from app.seasons.service import close_season

logger = logging.getLogger("melo")
#: Seconds between two checks.
EVERY = 60.0


def due_ladders(db: Database, now: datetime) -> list[int]:
    """The ids of the ladders whose next automatic close is due at ``now``."""
    with db.reading() as session:
        return storage.seasons.due_ladders(session, now)


def close_due(db: Database, now: datetime | None = None) -> list[SeasonOut]:
    """Close the seasons due at ``now`` (default: the time now) on every ladder; those closed, oldest first per
    ladder.  A ladder whose close fails is logged and left for the next check; the others go on."""
    now = now or datetime.now(UTC)
    closed: list[SeasonOut] = []
    for ladder_id in due_ladders(db, now):
        try:
            closed += db.write(functools.partial(close_ladder, ladder_id=ladder_id, now=now))
        except Exception:
            logger.exception("closing the seasons of ladder %s failed", ladder_id)
    return closed


def close_ladder(session: Session, ladder_id: int, now: datetime) -> list[SeasonOut]:
    """Close the periods of the ladder that have ended by ``now`` since its ``season_due`` (none if another
    worker did first), and move ``season_due`` on to the end of the period running at ``now``."""
    lock_ladder(session, ladder_id)  # as close_season does: a second worker waits here, then sees
    storage.ladders.lock(session, ladder_id)
    schedule = storage.seasons.schedule(session, ladder_id)
    if schedule is None:
        return []
    every, pull, due = schedule
    if every is None or due is None or due > now:
        return []
    closed = []
    for period in ended_since(every, due, now):
        if storage.seasons.named(session, ladder_id, period.name) is not None:
            continue  # an admin closed one of that name already
        if not storage.seasons.played_in(session, ladder_id, period.start, period.end):
            continue
        ladder = storage.ladders.by_id(session, ladder_id)
        assert ladder is not None  # locked above
        data = SeasonCreate(name=period.name, pull=pull)
        closed.append(close_season(session, ladder, data, until=period.end))
        logger.info("ladder %s: season %s closed by itself", ladder.slug, period.name)
    storage.seasons.set_due(session, ladder_id, period_at(every, now).end)
    return closed


def start(db: Database, every: float = EVERY) -> Callable[[], None]:
    """Check at once and then every ``every`` seconds, in a daemon thread; the function that stops it."""
    stopped = threading.Event()

    def run() -> None:
        while not stopped.is_set():
            try:
                close_due(db)
            except Exception:  # a database that is down: the next check tries again
                logger.exception("the automatic season check failed")
            stopped.wait(every)

    thread = threading.Thread(target=run, name="melo-seasons", daemon=True)
    thread.start()

    def stop() -> None:
        stopped.set()
        thread.join(timeout=5)

    return stop
