"""Each ladder's changes as server-sent events: one reader of the change log per ladder and process, whatever
the number of listeners.

A :class:`Feed` follows a ladder's log (:mod:`app.storage.events`) while
someone listens: it reads the new events when this process commits games (a
poke) or every :data:`POLL` seconds (another worker's commits, a void, a
rename), renders them once as the API shows them, and keeps the latest
:data:`KEPT` for its listeners.  A listener is a coroutine, not a thread: it
sends what the feed has after its last id, catches up from the log when it
is further behind than that (a resume after an absence: pages shared by the
ladder's listeners, read one at a time per ladder, and never more than
:data:`CATCH_UP` events: further behind, ``reset``), then waits for the feed.
Ids grow in commit order within a ladder, so ``id > last`` is exactly what a
listener has not seen, however its connection came and went.

Access is checked again in the log's order: a revoked key or changed settings
are an event of the ladder's log, and a listener checks that it may still read
the ladder before it sends anything that came after one.  It also checks when
its key expires, and every :data:`KEEP_ALIVE` seconds whatever the traffic.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from asyncio import FIRST_COMPLETED
from bisect import bisect_right
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import anyio.to_thread

from app import storage
from app.core.db import Database
from app.events.shown import shown as event_data
from app.games import answers
from app.storage import challenges

logger = logging.getLogger("melo")

#: How often (seconds) a feed with listeners looks at its ladder's log when nothing pokes it.
POLL = 0.5
#: The least time (seconds) between two looks, however often commits poke: a burst of games is one read, and
#: one wake-up of each listener.  Every LISTENERS more listeners add a GAP, up to a second: waking hundreds of
#: listeners ten times a second would hold the event loop.
GAP, LISTENERS = 0.1, 100
#: A comment line this often (seconds) on a quiet stream: proxies keep the connection, and the listener knows the
#: server is there.  A stream checks this often too that its listener may still read the ladder, whatever the
#: traffic (besides the checks the log's order calls for).
KEEP_ALIVE = 15.0
#: Events a feed keeps for listeners a little behind, and events read from the log at a time.
KEPT = 2000
PAGE = 500
#: The most events a listener may catch up on from the log; further behind, it is sent ``reset`` (read the ladder
#: anew) and goes on from the latest event.  Catch-up pages are read one at a time per ladder and
#: :data:`CATCH_UP_READS` at a time per process, and shared by the listeners: the latest :data:`PAGES` read are
#: kept (30,000 events, some 20 MB).
CATCH_UP = 10_000
CATCH_UP_READS = 1
#: A catch-up page: short, so that its reading thread shares the interpreter with the event loop in short turns.
CATCH_UP_PAGE = 100
PAGES = 300
#: The most events a listener sends in one step (some 60 kB of games).
SEND = 100
#: Events after which a listener checks that it may still read the ladder before it sends anything more.
RECHECK = frozenset({"access", "ladder"})
#: What an EventSource waits before it reconnects (milliseconds), sent first on every stream.
RETRY = b"retry: 2000\n\n"
KEEP_ALIVE_LINE = b": keep-alive\n\n"


def frame(kind: str, data: dict, event_id: int | None = None) -> bytes:
    """One server-sent event: ``id`` (if any), ``event`` and one line of JSON ``data``."""
    head = f"id: {event_id}\n" if event_id is not None else ""
    return f"{head}event: {kind}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


@dataclass(frozen=True)
class Frame:
    id: int
    text: bytes  # empty: nothing to send (an event the stream does not show)
    recheck: bool = False  # access may have changed here: check before sending it or anything after


@dataclass(eq=False)
class Feed:
    """One ladder's latest events, rendered, for this process's listeners."""

    ladder_id: int
    #: Every event with an id above ``base`` and up to ``head`` is in ``frames`` (None: not read yet).
    base: int | None = None
    head: int = 0
    frames: list[Frame] = field(default_factory=list)
    ids: list[int] = field(default_factory=list)  # the frames' ids
    #: Done when the feed has new frames (then replaced): every listener waits on this one future.
    changed: asyncio.Future = field(default_factory=lambda: asyncio.get_running_loop().create_future())
    poked: asyncio.Event = field(default_factory=asyncio.Event)
    listeners: int = 0
    task: asyncio.Task | None = None
    #: Games this process committed, by number, as their posts were answered, until the feed reads their events.
    posted: dict[int, dict] = field(default_factory=dict)
    reading: asyncio.Semaphore = field(default_factory=lambda: asyncio.Semaphore(1))

    def after(self, last: int) -> list[Frame] | None:
        """The kept frames after id ``last``; None if ``last`` is older than what is kept."""
        if self.base is None or last < self.base:
            return None
        return self.frames[bisect_right(self.ids, last) :]

    def add(self, frames: list[Frame]) -> None:
        self.frames.extend(frames)
        self.ids.extend(f.id for f in frames)
        self.head = frames[-1].id
        if len(self.frames) > KEPT:
            self.base = self.ids[-KEPT - 1]
            del self.frames[:-KEPT], self.ids[:-KEPT]
        self.wake()

    def wake(self) -> None:
        if not self.changed.done():
            self.changed.set_result(None)
        self.changed = asyncio.get_running_loop().create_future()  # the next wait is for the next change


class Hub:
    """This process's feeds, and the count of its open streams."""

    def __init__(self, db: Database, max_streams: int) -> None:
        self.db, self.max_streams = db, max_streams
        self.feeds: dict[int, Feed] = {}
        self.streams = 0
        self.closing = False
        self.catching_up = asyncio.Semaphore(CATCH_UP_READS)
        #: Catch-up pages of the logs by (ladder, start: a multiple of CATCH_UP_PAGE), the latest read last.
        self.pages: dict[tuple[int, int], asyncio.Future[list[Frame]]] = {}
        self.loop = asyncio.get_running_loop()  # made by the app's startup, on its loop

    @property
    def full(self) -> bool:
        return self.streams >= self.max_streams

    def posted(self, shown: dict[int, dict[int, dict]]) -> None:
        """This process just committed these games (per ladder, by number, as their posts were answered): the
        ladders' feeds read now, and send these bodies instead of reading the games back.  From any thread (the
        writer's)."""
        if self.feeds and not self.loop.is_closed():
            self.loop.call_soon_threadsafe(self._posted, shown)

    def _posted(self, shown: dict[int, dict[int, dict]]) -> None:
        for ladder_id, bodies in shown.items():
            if (feed := self.feeds.get(ladder_id)) is not None:
                feed.posted.update(bodies)
                for number in list(feed.posted)[: max(0, len(feed.posted) - KEPT)]:  # a feed that cannot read
                    del feed.posted[number]
                feed.poked.set()

    def close(self) -> None:
        """End every stream (the server is stopping: it waits for open responses)."""
        self.closing = True
        for feed in self.feeds.values():
            feed.wake()
            feed.poked.set()

    async def stream(
        self,
        ladder_id: int,
        version: int,
        start: int | None,
        access: Callable[[], Awaitable[float | None]],
        receive: Callable[[], Awaitable[MutableMapping[str, Any]]],
    ) -> AsyncIterator[bytes]:
        """The stream of one listener: ``hello``, a ``reset`` if ``start`` is no longer kept or too far behind,
        then every event after ``start`` (or from now), with keep-alive comments.

        ``access()`` checks that the listener may still read the ladder: the seconds until that lapses by
        itself (a key's expiry; ``inf``: never), None if it may not.  It is asked again once the stream's start
        is read (a change committed since the request's own check lies below it).  The stream ends when the
        listener goes (``receive``: the request's ASGI channel, which says so at once, not at the next write),
        when ``access()`` says it may no longer read the ladder, or when the server stops."""
        self.streams += 1
        feed = self._join(ladder_id)
        gone = asyncio.ensure_future(_disconnected(receive))
        try:
            head, now = await self._latest(ladder_id)
            if (due := await _recheck(access)) is None:  # due: when access is checked again at the latest
                return
            last, reset = head, False
            if start is not None and start != head:
                reset = start > head or await self._too_far(ladder_id, start, head)
                last = head if reset else start
            # The version as of the stream's start, not the request's: a change committed after the listener's
            # reads and before the start (its answer's headers are out already) is in neither; hello says so.
            yield RETRY + frame("hello", {"version": max(version, now)}, last)
            if reset:
                yield frame("reset", {})
            while not self.closing:
                frames = feed.after(last)
                if frames is None:  # further behind than the feed keeps: from the log, or anew
                    if feed.head - last > CATCH_UP:
                        last, due = feed.head, 0.0  # a change of access may be among the events skipped
                        yield frame("reset", {}, last)
                        continue
                    try:
                        frames = await self._catch_up(feed, last)
                    except Exception:  # a database that is down: the listener reconnects and resumes
                        logger.warning("catching up on ladder %d's events failed", ladder_id, exc_info=True)
                        return
                if frames:
                    checking = frames[0].recheck or time.monotonic() >= due
                    if checking and (due := await _recheck(access)) is None:
                        return
                    # up to the next change of access, which is checked before it is sent, and SEND at a time: a
                    # hundred listeners catching up take turns with the other requests in short steps
                    cut = next((n for n, f in enumerate(frames[:SEND]) if n and f.recheck), min(len(frames), SEND))
                    if text := b"".join(f.text for f in frames[:cut]):
                        yield text
                    last = frames[cut - 1].id
                    continue
                wait = max(due - time.monotonic(), 0)
                done, _ = await asyncio.wait((feed.changed, gone), timeout=wait, return_when=FIRST_COMPLETED)
                if gone in done:
                    return
                if not done:
                    if (due := await _recheck(access)) is None:
                        return
                    yield KEEP_ALIVE_LINE
        finally:
            gone.cancel()
            self.streams -= 1
            self._leave(feed)

    async def _too_far(self, ladder_id: int, start: int, head: int) -> bool:
        """Whether a resume from ``start`` cannot be served: pruned, or more than CATCH_UP events behind."""
        if start > 0 and not await self.db.fetch(storage.events.KEPT, (ladder_id, start)):
            return True
        if head - start <= CATCH_UP:  # numbers grow by one an event: no count needed
            return False
        return int((await self.db.fetch(storage.events.BEHIND, (ladder_id, start, CATCH_UP + 1)))[0][0]) > CATCH_UP

    async def _catch_up(self, feed: Feed, last: int) -> list[Frame]:
        """The events after ``last`` from the page of the log that holds it, read once for every listener there
        (a full page stays kept for the next; the log's last page is read anew)."""
        at = (feed.ladder_id, last - last % CATCH_UP_PAGE)
        page = self.pages.get(at)
        if page is None:
            page = self.pages[at] = asyncio.ensure_future(self._read_page(feed, at[1]))
            while len(self.pages) > PAGES:
                del self.pages[next(iter(self.pages))]
        try:
            frames = await asyncio.shield(page)  # a listener that goes does not cancel the others' read
        finally:
            if self.pages.get(at) is page and page.done() and (page.exception() or len(page.result()) < CATCH_UP_PAGE):
                del self.pages[at]
        return frames[bisect_right([f.id for f in frames], last) :]

    def _drop_pages(self, ladder_id: int) -> None:
        for at in [at for at in self.pages if at[0] == ladder_id]:
            del self.pages[at]

    async def _read_page(self, feed: Feed, start: int) -> list[Frame]:
        async with feed.reading, self.catching_up:
            return await self._read(feed.ladder_id, start, limit=CATCH_UP_PAGE)

    def _join(self, ladder_id: int) -> Feed:
        feed = self.feeds.get(ladder_id)
        if feed is None:
            feed = self.feeds[ladder_id] = Feed(ladder_id)
        feed.listeners += 1
        if feed.task is None or feed.task.done():
            feed.task = asyncio.get_running_loop().create_task(self._follow(feed))
        return feed

    def _leave(self, feed: Feed) -> None:
        feed.listeners -= 1
        if feed.listeners == 0:
            feed.poked.set()  # its reader sees nobody listens, and stops
            if self.feeds.get(feed.ladder_id) is feed:
                del self.feeds[feed.ladder_id]
                # nobody here follows its log now (an erasure would go unseen): no page of it is kept
                self._drop_pages(feed.ladder_id)

    async def _follow(self, feed: Feed) -> None:
        """Read the ladder's new events while anyone listens: when poked, else every POLL seconds."""
        while feed.listeners and not self.closing:
            try:
                if feed.base is None:
                    feed.base = feed.head = (await self._latest(feed.ladder_id))[0]
                frames = await self._read(feed.ladder_id, feed.head, feed.posted)
            except Exception:  # a database that is down: the listeners wait, and the feed tries again
                logger.warning("reading ladder %d's events failed", feed.ladder_id, exc_info=True)
                frames = []
            if frames:
                feed.add(frames)
                if len(frames) == PAGE:
                    continue
            gap = min(GAP * (1 + feed.listeners // LISTENERS), 1.0)
            await asyncio.sleep(gap)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(feed.poked.wait(), max(POLL - gap, 0))
            feed.poked.clear()

    async def _latest(self, ladder_id: int) -> tuple[int, int]:
        """The ladder's latest event and its version then (0, 0: no such ladder)."""
        rows = await self.db.fetch(storage.events.LATEST, (ladder_id,))
        return (int(rows[0][0]), int(rows[0][1])) if rows else (0, 0)

    async def _read(
        self, ladder_id: int, after: int, posted: dict[int, dict] | None = None, limit: int = PAGE
    ) -> list[Frame]:
        """The events after id ``after`` (at most ``limit``), rendered: a game as ``posted`` has it (taken out),
        else read in a thread."""
        rows = await self.db.fetch(storage.events.SINCE, (ladder_id, after, limit))
        events = [(event_id, version, kind, storage.events.parse(data)) for event_id, version, kind, data in rows]
        shown, numbers = {}, []
        for _, _, kind, data in events:
            if kind == "game" and posted and data["game"] in posted:
                shown[data["game"]] = posted.pop(data["game"])
            elif kind in ("game", "void"):
                numbers.append(data["game"])
        if numbers:  # a void, or a game another worker committed: as it is now
            shown |= await anyio.to_thread.run_sync(self._games, ladder_id, numbers)
        challenged: dict[int, dict] = {}
        if asked := [data["id"] for _, _, kind, data in events if kind == "challenge"]:  # as they are now
            challenged = await anyio.to_thread.run_sync(self._challenges, ladder_id, asked)
        if any(kind == "player" and data.get("action") == "erased" for _, _, kind, data in events):
            self._drop_pages(ladder_id)  # kept pages name the erased player's keys
        frames = []
        for event_id, version, kind, stored in events:
            body = event_data(kind, version, stored, shown, challenged)
            if body is None:  # a key revoked (checked at), or a game of a ladder deleted meanwhile: read, not sent
                frames.append(Frame(event_id, b"", recheck=kind == "access"))
                continue
            frames.append(Frame(event_id, frame(kind, body, event_id), recheck=kind in RECHECK))
        return frames

    def _games(self, ladder_id: int, numbers: list[int]) -> dict[int, dict]:
        with self.db.reading() as session:
            return answers.bodies(session, ladder_id, numbers)

    def _challenges(self, ladder_id: int, numbers: list[int]) -> dict[int, dict]:
        with self.db.reading() as session:
            return challenges.numbered(session, ladder_id, numbers, datetime.now(UTC))


async def _recheck(access: Callable[[], Awaitable[float | None]]) -> float | None:
    """When (``time.monotonic()``) to check again that the listener may read the ladder: at its key's expiry or
    after KEEP_ALIVE seconds, whichever is first; None if it may not now."""
    lapse = await access()
    return None if lapse is None else time.monotonic() + min(KEEP_ALIVE, lapse)


async def _disconnected(receive: Callable[[], Awaitable[MutableMapping[str, Any]]]) -> None:
    """Return when the client has gone."""
    while (await receive())["type"] != "http.disconnect":
        pass
