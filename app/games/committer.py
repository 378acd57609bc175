"""Group commit: the game posts that arrive together are applied in one write transaction by one writer.

Requests queue in the event loop, one queue (lane) per ladder; a writer takes
every ladder's waiting posts (up to :data:`MAX_GAMES` games), but those of
ladders another writer is committing, and applies them in one transaction
(:func:`app.games.posts.apply_posts`) in a writer thread, then answers each
with its own response or its own problem.  A request on an idle server is taken
at once, without waiting for company; under load the requests that queue while
a group commits form the next group, and a writer waits at most :data:`LINGER`
for the clients just answered to send their next posts, so the commit cost is
shared by every ladder posted to: a group costs a fixed number of statements
and one sync to disk whatever its games and ladders.  A ladder's groups commit
one after another, in order.  A response is sent only after its group commits.

SQLite has one writer for the whole database; PostgreSQL has ``MELO_WRITERS``
per worker process, committing groups of different ladders side by side.  There
a group of several ladders' posts does not wait long for a lock another transaction holds (an
administrator's change of a ladder, a void deep in its log): after
:data:`LOCK_WAIT` it is rolled back, and each of its ladders is next committed
alone, so only the ladder that is held waits.

If the group's transaction fails as a whole (an error no single request's
checks foresaw, say a unique-key race with another worker), it is rolled back
and the requests are retried one transaction each, so one bad request cannot
fail the others.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from sqlalchemy import text
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from app import storage
from app.core.db import Database
from app.core.errors import LadderChanged
from app.core.metrics import GAMES, GROUPS
from app.core.postgresql import LOCK_NOT_AVAILABLE, sqlstate
from app.games.intake import Post
from app.games.posts import Group, apply_posts

logger = logging.getLogger("melo")
#: Most games applied in one transaction (a batch request larger than this forms a group of its own).
MAX_GAMES = 500
#: How often (seconds) the writer deletes expired idempotency records.
EXPIRY_EVERY = 600.0
#: Under load, how long a writer may wait for the next group to fill up (seconds).
LINGER = 0.002
#: PostgreSQL: how long a group waits for a row lock another transaction holds before its ladders go alone.
LOCK_WAIT = "200ms"


@dataclass(eq=False)
class Lane:
    """One ladder's posts waiting, in order."""

    posts: deque[tuple[Post, asyncio.Future]] = field(default_factory=deque)
    #: The next group takes this ladder alone, waiting as long as its locks take (a group of several waited too
    #: long for one).
    alone: bool = False


class GroupCommitter:
    """The writers of one worker process; :meth:`submit` answers a post once its group has committed."""

    def __init__(
        self,
        db: Database,
        on_commit: Callable[[Group], None] | None = None,
        keep_responses: timedelta = timedelta(days=7),
        keep_events: timedelta = timedelta(days=7),
        writers: int = 1,
    ) -> None:
        self.db = db
        self.writers = writers if db.dialect == "postgresql" else 1
        #: The ladders with posts waiting or being committed, by slug, in the order they began to wait.
        self.lanes: dict[str, Lane] = {}
        self.busy: set[str] = set()
        self.tasks: list[asyncio.Task] = []
        self.wake: asyncio.Event | None = None
        #: The writers waiting for the next group to fill up: how many posts each waits for, and its wake-up.
        self.lingering: list[tuple[int, asyncio.Future]] = []
        self.executor = ThreadPoolExecutor(max_workers=self.writers, thread_name_prefix="melo-writer")
        self.on_commit = on_commit
        #: Idempotency records older than this are deleted by the writer, at most every EXPIRY_EVERY seconds.
        self.keep_responses = keep_responses
        #: Events older than this are deleted at the same time.
        self.keep_events = keep_events
        self.next_expiry = 0.0
        self.expiring = threading.Lock()
        #: How many groups of each size (requests) committed: the metrics and the tests read it.
        self.group_sizes: Counter[int] = Counter()
        self.counting = threading.Lock()

    async def submit(self, post: Post) -> dict:
        """The post's response body; raises its problem."""
        if self.wake is None:
            self.wake = asyncio.Event()
            self.tasks = [asyncio.get_running_loop().create_task(self._write()) for _ in range(self.writers)]
        future = asyncio.get_running_loop().create_future()
        self.lanes.setdefault(post.slug, Lane()).posts.append((post, future))
        self.wake.set()
        if self.lingering:
            waiting = self._waiting()
            for enough, filled in self.lingering:
                if waiting >= enough and not filled.done():
                    filled.set_result(None)
        return await future

    def _waiting(self) -> int:
        return sum(len(lane.posts) for slug, lane in self.lanes.items() if slug not in self.busy)

    def _take(self) -> tuple[list[tuple[Post, asyncio.Future]], list[str], bool]:
        """The next group, its ladders marked busy, and whether it is one ladder alone: a ladder that is to go
        alone, if one is waiting, else every idle ladder's waiting posts, first come first taken, up to
        MAX_GAMES games."""
        idle = [(slug, lane) for slug, lane in self.lanes.items() if slug not in self.busy and lane.posts]
        alone = next(((slug, lane) for slug, lane in idle if lane.alone), None)
        group: list[tuple[Post, asyncio.Future]] = []
        taken: list[str] = []
        games = 0
        for slug, lane in [alone] if alone is not None else idle:
            if group and games + len(lane.posts[0][0].games) > MAX_GAMES:
                continue
            while lane.posts and (not group or games + len(lane.posts[0][0].games) <= MAX_GAMES):
                item = lane.posts.popleft()
                group.append(item)
                games += len(item[0].games)
            taken.append(slug)
        self.busy.update(taken)
        return group, taken, alone is not None

    async def _write(self) -> None:
        loop = asyncio.get_running_loop()
        assert self.wake is not None
        last_size = 0
        while True:
            if not self._waiting():
                self.wake.clear()
                await self.wake.wait()
                continue
            # Under load (the last group had company), the clients it answered are sending their next posts:
            # waiting a moment for them makes one commit of the next group instead of one for its first post.
            if last_size > 1 and self._waiting() + 1 < last_size // 2:
                await self._linger(loop, last_size // 2 - 1)
            group, taken, alone = self._take()
            if not group:  # every ladder waiting is another writer's now
                self.wake.clear()
                await self.wake.wait()
                continue
            posts = [post for post, _ in group]
            last_size = len(posts)
            try:
                bounded = not alone and len(taken) > 1  # only a group of ladders can hold a ladder not held
                outcomes = await loop.run_in_executor(self.executor, self.commit, posts, bounded)
            except BaseException as exc:  # the loop must survive whatever happens to one group
                outcomes = [exc] * len(group)
            self._answer(group, taken, outcomes)
            self.busy.difference_update(taken)
            for slug in taken:
                if not self.lanes[slug].posts:
                    del self.lanes[slug]
            if self._waiting():
                self.wake.set()

    def _answer(
        self,
        group: list[tuple[Post, asyncio.Future]],
        taken: list[str],
        outcomes: Sequence[dict | BaseException] | None,
    ) -> None:
        """Each post of a committed group its answer or its problem; a group that waited too long for a lock
        (``outcomes`` None) back in front of its lanes, each ladder next alone."""
        if outcomes is None:
            for post, future in reversed(group):
                self.lanes[post.slug].posts.appendleft((post, future))
            for slug in taken:
                self.lanes[slug].alone = True
            return
        for slug in taken:
            self.lanes[slug].alone = False
        for (_, future), outcome in zip(group, outcomes, strict=True):
            if future.done():  # the client went away
                continue
            if isinstance(outcome, BaseException):
                future.set_exception(outcome)
            else:
                future.set_result(outcome)

    async def _linger(self, loop: asyncio.AbstractEventLoop, enough: int) -> None:
        """Wait until ``enough`` posts wait (:meth:`submit` wakes it) or :data:`LINGER` has passed."""
        filled = loop.create_future()
        entry = (enough, filled)

        def fill() -> None:
            if not filled.done():
                filled.set_result(None)

        timer = loop.call_later(LINGER, fill)
        self.lingering.append(entry)
        try:
            await filled
        finally:
            timer.cancel()
            self.lingering.remove(entry)

    def commit(self, posts: list[Post], bounded: bool = False) -> Sequence[dict | BaseException] | None:
        """Apply the posts in one transaction, or, if that fails, one transaction each.  ``bounded``: on
        PostgreSQL a lock held elsewhere is waited for at most :data:`LOCK_WAIT`, and None says it was not
        granted in time (nothing was applied)."""
        bounded = bounded and self.db.dialect == "postgresql"

        def apply(session: Session) -> Group:
            if bounded:
                session.execute(text(f"SET LOCAL lock_timeout = '{LOCK_WAIT}'"))
            return apply_posts(session, posts)

        try:
            group = self.db.write(apply)
        except Exception as exc:
            if bounded and sqlstate(exc) == LOCK_NOT_AVAILABLE:
                return None
            if len(posts) > 1:
                logger.info("a group of %d posts failed (%s); retrying them one by one", len(posts), exc)
                return [self.commit([post])[0] for post in posts]  # type: ignore[index]
            # A concurrent identical request committed first (it is found now), or the ladder's settings changed.
            if isinstance(exc, IntegrityError | LadderChanged):
                try:
                    group = self.db.write(lambda session: apply_posts(session, posts))
                except Exception as again:
                    return [again]
            else:
                return [exc]
        with self.counting:
            self.group_sizes[len(posts)] += 1
        GROUPS.observe(len(posts))
        GAMES.inc(sum(group.applied.values()))
        try:  # this process's copy of the players follows the commit without reading it back
            for ladder_id, version in group.versions.items():
                if ladder_id in group.written:
                    storage.read_model.note_commit(self.db.read_engine, ladder_id, version, group.written[ladder_id])
        except Exception:  # never fail a committed post for a copy's sake: readers catch up by reading
            logger.exception("following a commit in this process's copy failed")
        if time.monotonic() >= self.next_expiry and self.expiring.acquire(blocking=False):
            try:  # by one writer: the others go on committing
                self.expire_responses()
                self.expire_events()
            finally:
                self.expiring.release()
        if self.on_commit is not None and group.applied:
            try:
                self.on_commit(group)
            except Exception:  # never fail a committed post for a follower's sake
                logger.exception("after-commit hook failed")
        return group.answered()

    def expire_responses(self) -> int:
        """Delete the idempotency records past their time (in the writer's thread, between groups)."""
        self.next_expiry = time.monotonic() + EXPIRY_EVERY
        before = datetime.now(UTC) - self.keep_responses
        try:
            return self.db.write(lambda session: storage.idempotency.forget_responses(session, before))
        except Exception:  # never fail a committed post for the housekeeping's sake
            logger.exception("expiring idempotency records failed")
            return 0

    def expire_events(self) -> int:
        """Delete the ladders' events past their time, and the webhooks' deliveries done by then (as
        :meth:`expire_responses`)."""
        before = datetime.now(UTC) - self.keep_events

        def prune(session) -> int:
            storage.webhooks.prune_deliveries(session, before)
            return storage.events.prune(session, before)

        try:
            return self.db.write(prune)
        except Exception:
            logger.exception("expiring ladder events failed")
            return 0

    def close(self) -> None:
        for task in self.tasks:
            task.cancel()
        self.executor.shutdown(wait=True)
