"""The ladder's player table this process keeps, brought up to the version a request needs: from this worker's
own commits, then the rows changed since (on the event loop when few), or read anew in a thread."""

from __future__ import annotations

import asyncio

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
        if held is not None and held.version >= ladder.reset_version:
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
