"""Streaming replicas of the primary, read while they keep up: each checked once a second."""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque

import psycopg
from sqlalchemy.exc import DBAPIError

from app.core.config import Settings
from app.core.db import Database
from app.core.metrics import REPLICA_READ

log = logging.getLogger("melo")


class Replica:
    """A streaming replica (a hot standby) of the primary, read while it keeps up.

    A task of its own asks, once a second, how far the primary has written its
    log (``pg_current_wal_lsn()``) and how far the replica has replayed it.  The
    replica is read while it has replayed what the primary had written
    ``max_lag`` seconds before: so a replica that is stalled, or cut off from
    the primary, stops being read within ``max_lag`` seconds, whatever it says of
    itself.  Requests only read the answer (:meth:`usable`).  A check that gets
    no answer within a second, or a read that fails on the replica, sends its
    readers to the primary until a check succeeds again.  While the primary
    cannot be asked, its last answer stands.
    """

    #: Seconds between two checks, and the longest a check may take.
    CHECK_EVERY = 1.0
    WRITTEN = "SELECT pg_current_wal_lsn()::text"
    REPLAYED = "SELECT coalesce(pg_last_wal_replay_lsn(), pg_current_wal_lsn())::text"

    def __init__(self, db: Database, max_lag: float, number: int = 1) -> None:
        self.db, self.max_lag = db, max_lag
        self.ok = False
        #: Whether it is read, as ``GET /metrics`` says (``melo_replica_read``).
        self._said = REPLICA_READ.labels(str(number))
        self._said.set(0)
        #: (when, where the primary's log was), the oldest first: back to ``max_lag`` seconds ago.
        self._written: deque[tuple[float, int]] = deque()
        self._watching: asyncio.Task | None = None

    def start(self) -> None:
        """Start the checks (in the running event loop); it is not read until one succeeds."""
        self._watching = asyncio.get_running_loop().create_task(self._watch())

    def usable(self) -> bool:
        """Whether reads may go to it now."""
        return self.ok

    def failed(self) -> None:
        """A read failed on it: its readers go to the primary until the next check succeeds."""
        self.ok = False
        self._said.set(0)

    async def _watch(self) -> None:
        while True:
            try:
                ok = await self._keeps_up()
            except Exception:  # whatever it was, the replica is not read until a check succeeds
                log.exception("checking a replica failed")
                ok = False
            if ok != self.ok:
                log.warning("replica %s", "read again: it keeps up" if ok else "not read: it does not keep up")
            self.ok = ok
            self._said.set(ok)
            await asyncio.sleep(self.CHECK_EVERY)

    async def _keeps_up(self) -> bool:
        now = time.monotonic()
        primary = self.db.primary or self.db
        try:
            self._written.append((now, _lsn((await primary.fetch(self.WRITTEN, (), self.CHECK_EVERY))[0][0])))
        except (DBAPIError, psycopg.Error) as exc:
            if self._written and self._written[-1][0] >= now - 2 * self.CHECK_EVERY:  # said once, not every second
                log.warning("the primary's log position is unknown: %r", exc)
        while len(self._written) > 1 and self._written[1][0] <= now - self.max_lag:
            self._written.popleft()
        try:
            replayed = _lsn((await self.db.fetch(self.REPLAYED, (), self.CHECK_EVERY))[0][0])
        except (DBAPIError, psycopg.Error) as exc:
            if self.ok:  # said once, when it stops being read
                log.warning("replica unavailable: %r", exc)
            return False
        # The newest position taken at least max_lag ago (the oldest kept, while none is that old yet).
        return not self._written or replayed >= self._written[0][1]

    async def close(self) -> None:
        if self._watching is not None:
            self._watching.cancel()
        await self.db.close()


def _lsn(text: str) -> int:
    """A PostgreSQL log position (``16/B374D848``) as a number."""
    high, low = text.split("/")
    return (int(high, 16) << 32) + int(low, 16)


def replicas_of(settings: Settings, primary: Database) -> list[Replica]:
    """The streaming replicas of ``MELO_READ_DATABASE_URL`` (PostgreSQL only) of the ``primary``."""
    if settings.replica_urls and settings.is_sqlite:
        raise RuntimeError("MELO_READ_DATABASE_URL names PostgreSQL replicas: the primary must be PostgreSQL too.")
    found = []
    for number, (url, pooled) in enumerate(settings.replica_urls, 1):
        replica = Database.postgresql(url, pooled, settings, bounded=True)
        replica.primary = primary
        found.append(Replica(replica, settings.read_max_lag, number))
    return found
