"""The ladder's player table this process keeps, brought up to the version a request needs: from this worker's
own commits, then the rows changed since (on the event loop when few), or read anew in a thread."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import anyio.to_thread

from app import storage
from app.core.db import Database
from app.core.ladder import LadderRow
from app.storage import ladder_reads
from app.storage.read_model import Table

#: At most this many changed players are read on the event loop to catch a table up (a millisecond's work);
#: more (a refit applied to a large ladder rewrites every row) are read in a thread.
CHANGED_HERE = 1000


async def table(db: Database, ladder: LadderRow) -> Table:
    """The ladder's player table as of ``ladder.version`` or later: this process's copy if it is current, else
    brought up to date from the rows this worker's own commits wrote (:func:`app.storage.read_model.note_commit`), then
    by reading only the players changed since (or, after a merge, read anew).

    One request per ladder updates it; the others that need it meanwhile wait
    for that instead of repeating it.
    """
    engine = db.read_engine
    held = storage.read_model.held_table(engine, ladder.id)
    if held is not None and held.version >= ladder.version:
        return held
    async with storage.cache.of(engine, "loading").setdefault(ladder.id, asyncio.Lock()):
        # The commits this worker made since, applied from its notes (a copy of each column: in a thread).
        held = await anyio.to_thread.run_sync(storage.read_model.apply_notes, engine, ladder.id)
        if held is not None and held.version >= ladder.version:
            return held
        if held is not None and held.version >= max(ladder.reset_version, ladder.rewritten_version):
            rows = await ladder_reads.changed_players(db.fetch, ladder.id, held.version, CHANGED_HERE + 1)
            if len(rows) <= CHANGED_HERE:

                def catch_up() -> Table:
                    stamp = storage.codec.time_converter(engine.dialect)
                    changed = storage.read_model.from_rows(rows, ladder.version, 2 * ladder.k, stamp)
                    with db.reading() as session:  # who the latest applied refit found its results do not place
                        placement = storage.refits.placement(session, ladder.id)
                    fresh = held.caught_up(changed, changed.version, placement)
                    return storage.read_model.hold_newest(engine, ladder.id, fresh)

                return await anyio.to_thread.run_sync(catch_up)

        def load() -> Table:  # anew, or caught up by more rows than a read on the event loop may hold it for
            with db.reading() as session:
                return storage.read_model.current_table(session, ladder)

        return await anyio.to_thread.run_sync(load)


def ranked_board(db: Database, ladder_id: int, version: int, reset_version: int) -> Table | None:
    """The table :func:`board_table` answers a read that names no version from without ranking (the ladder being
    at ``version``, its settings at ``reset_version``); None if it would rank."""
    held = storage.cache.of(db.read_engine, "boards").get(ladder_id)
    return held.table if held is not None and held.answers(reset_version, version) else None


#: Tables a leaderboard walk goes on with: a cursor names the version of the page it came from, and a worker
#: keeps up to this many such tables per ladder for ``PIN_SECONDS`` after a cursor last named them.
PINS = 2
PIN_SECONDS = 30.0


@dataclass
class _Board:
    """The table a ladder's leaderboards were last ranked on, until when it may answer a read that names no newer
    version, the one before it, and the tables cursors walk on (version: (table, kept until))."""

    table: Table
    until: float
    previous: Table | None = None
    pins: dict[int, tuple[Table, float]] = field(default_factory=dict)
    ranking: bool = False  # a reader is ranking a newer one

    def answers(self, floor: int, version: int) -> bool:
        """Whether a read that names no version newer than ``floor`` (or the ladder's settings' version, if newer)
        is answered from this table, the ladder being at ``version``: if it is current, was ranked less than the
        lag ago, or a reader is ranking a newer one meanwhile."""
        if self.table.version < floor:
            return False
        return self.table.version >= version or self.ranking or time.monotonic() < self.until

    def walked(self, version: int) -> Table | None:
        """The table of ``version`` a cursor names, kept for the walk's next pages; None if this worker has it no
        more."""
        now = time.monotonic()
        self.pins = {v: pin for v, pin in self.pins.items() if pin[1] > now}
        found = self.pins.get(version, (None, 0.0))[0]
        for kept in (self.table, self.previous):
            if found is None and kept is not None and kept.version == version:
                found = kept
        if found is not None:
            self.pins.pop(version, None)
            self.pins[version] = (found, now + PIN_SECONDS)
            while len(self.pins) > PINS:
                self.pins.pop(next(iter(self.pins)))
        return found


async def board_table(
    db: Database,
    ladder: LadderRow,
    wanted: int,
    lag: float,
    rank: Callable[[Table], Awaitable[object]],
    walking: int | None = None,
) -> Table:
    """The table a leaderboard of the ladder is read from.  A cursor's next page (``walking``: the version it names)
    is read from the table its walk began on while this worker keeps it, so a walk shows each player once.  Else the
    one this worker last ranked, while it is at least version ``wanted`` (the client's ``min_version`` or ETag) and
    has the ladder's settings, if it is current, was ranked less than ``lag`` seconds ago, or a reader is ranking a
    newer one meanwhile; else the current table, once ``rank(table)`` has ranked it (the page its reader asked for).
    So while games stream in, a ladder's readers rank its players a few times a second, not once per commit, and
    every page is of one version, which it names."""
    boards = storage.cache.of(db.read_engine, "boards")
    held = boards.get(ladder.id)
    floor = max(wanted, ladder.reset_version)
    if held is not None and walking is not None and walking >= floor:
        walked = held.walked(walking)
        if walked is not None:
            return walked
    usable = held is not None and held.table.version >= floor
    if held is not None and usable:
        if held.answers(floor, ladder.version):
            return held.table
        held.ranking = True
    try:
        current = await table(db, ladder)
        await rank(current)
    finally:
        if held is not None and usable:
            held.ranking = False
    held = boards.pop(ladder.id, None)
    if held is None:
        held = _Board(current, 0.0)
    elif held.table.version < current.version:
        held.previous, held.table = held.table, current
    held.until = time.monotonic() + lag
    boards[ladder.id] = held
    while len(boards) > storage.read_model.MAX_TABLES:  # the least recently ranked go first
        boards.pop(next(iter(boards)))
    return current
