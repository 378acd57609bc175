"""The hot reads of request handlers: a ladder, its player table, some players' vectors.

Each is one statement through :meth:`app.db.Database.fetch` when this
process's caches are current, and falls back to the thread pool for the rare
full read (a ladder seen for the first time, a player table whose ladder
version has moved).
"""

from __future__ import annotations

import asyncio

import anyio.to_thread
import numpy as np

from app import storage
from app.access import ladder_for_read
from app.db import Database
from app.errors import NotFound
from app.storage.ladders import LadderRow
from app.storage.players import Table


async def ladder(db: Database, slug: str) -> LadderRow:
    """The ladder (404 if there is none), from this process's cache once read."""
    found = storage.ladders.from_cache(db.read_engine, slug)
    if found is not None:
        return found

    def load() -> LadderRow:
        with db.reading() as session:
            return ladder_for_read(session, slug)

    return await anyio.to_thread.run_sync(load)


async def table(db: Database, ladder: LadderRow) -> Table:
    """The ladder's player table as of now: this process's copy if its version is current, else read anew.

    One request per ladder reads it anew; the others that need it meanwhile
    wait for that read instead of repeating it.
    """
    held = await storage.players.current_table(db.fetch, db.read_engine, ladder.id)
    if held is not None:
        return held
    async with storage.cache.of(db.read_engine, "loading").setdefault(ladder.id, asyncio.Lock()):
        held = await storage.players.current_table(db.fetch, db.read_engine, ladder.id)
        if held is not None:
            return held

        def load() -> Table:
            with db.reading() as session:
                return storage.players.table(session, ladder)

        return await anyio.to_thread.run_sync(load)


async def vectors(db: Database, ladder: LadderRow, keys: list[str]) -> np.ndarray:
    """The rows of ``keys`` (in that order); 404 naming the unknown players."""
    found = await storage.players.vectors(db.fetch, ladder.id, keys, 2 * ladder.k)
    missing = [k for k in keys if k not in found]
    if missing:
        raise NotFound(f"Unknown player(s) {', '.join(map(repr, missing))} in ladder {ladder.slug!r}.")
    return np.array([found[k] for k in keys])
