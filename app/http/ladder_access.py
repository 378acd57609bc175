"""The ladder a request reads, if its caller may read it: settings from this process's cache, its version and
privacy read anew."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

import anyio.to_thread

from app import storage
from app.core.db import Database
from app.core.errors import NotFound
from app.core.ladder import LadderRow
from app.domain.access import Caller, ladder_for_read, read_key


async def ladder(db: Database, slug: str, caller: Caller) -> LadderRow:
    """The ladder if the caller may read it (404, 401, 403 otherwise), with its version as of now.

    Its settings come from this process's cache once read; its version and
    whether it is private are read anew (one indexed statement), so a ladder
    made private is private at once in every worker.
    """
    return (await readable_until(db, slug, caller))[0]


async def readable_until(db: Database, slug: str, caller: Caller) -> tuple[LadderRow, datetime | None]:
    """:func:`ladder`, and when the caller's access lapses by itself: the expiry of the key a private ladder
    needs (None: not by itself)."""

    def load() -> LadderRow:
        with db.reading() as session:
            return ladder_for_read(session, slug, fresh=True)

    found = storage.ladders.from_cache(db.read_engine, slug)
    if found is None:
        found = await anyio.to_thread.run_sync(load)
    now = await storage.ladders.version_and_privacy(db.fetch, found.id)
    if now is None:  # deleted since this process read it, and perhaps created anew under the same slug
        storage.ladders.forget(db.read_engine, slug)
        found = await anyio.to_thread.run_sync(load)
        now = await storage.ladders.version_and_privacy(db.fetch, found.id)
    if now is None:
        raise NotFound(f"There is no ladder {slug!r}.")
    if now[2] > found.reset_version:  # a change this process's copy cannot follow (a merge, a new learning rate)
        found = await anyio.to_thread.run_sync(load)
    version, private, reset_version, rewritten_version = now
    expires = None
    allowed = await read_key(db.fetch, found.id, private, caller)
    if allowed is not None:
        key_id, expires = allowed
        if storage.keys.due_for_use(db.read_engine, key_id):
            await anyio.to_thread.run_sync(_used, db.primary or db, found.id, key_id)
    found = replace(
        found, version=version, private=private, reset_version=reset_version, rewritten_version=rewritten_version
    )
    return found, expires


def _used(db: Database, ladder_id: int, key_id: int) -> None:
    with db.writing() as session:
        storage.keys.used(session, ladder_id, key_id)
