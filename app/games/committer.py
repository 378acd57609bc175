"""Group commit: the game posts that arrive together are applied in one write transaction by one writer.

Requests queue in the event loop, in lanes; a lane takes every request waiting
in it (up to :data:`MAX_GAMES` games) and applies them in one transaction
(:func:`app.games.posts.apply_posts`) in a writer thread, then answers each
with its own response or its own problem.  A request on an idle server is taken
at once, without waiting for company; under load the requests that queue while
a group commits form the next group, and the lane waits at most :data:`LINGER`
for the clients just answered to send their next posts, so the commit cost is
shared.  A response is sent only after its group commits.

On SQLite (one writer for the whole database) one lane takes every ladder's
posts: a group of many ladders is one transaction and one sync to disk.  On
PostgreSQL each ladder has a lane of its own, and ``MELO_WRITERS`` threads per
worker process commit the lanes' groups side by side: a transaction holds one
ladder's rows, so posts to different ladders never wait for each other's locks
(in this process or another), while a ladder's groups commit one after another,
in order.  A lane with nothing to do for :data:`IDLE` seconds is dropped.

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
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from sqlalchemy.exc import IntegrityError

from app import storage
from app.core.db import Database
from app.core.errors import LadderChanged
from app.core.metrics import GAMES, GROUPS
from app.games.intake import Post
from app.games.posts import Group, apply_posts

logger = logging.getLogger("melo")
#: Most games applied in one transaction (a batch request larger than this forms a group of its own).
MAX_GAMES = 500
#: How often (seconds) the writer deletes expired idempotency records.
EXPIRY_EVERY = 600.0
#: Under load, how long the writer may wait for the next group to fill up (seconds), and how often it looks.
LINGER, LINGER_STEP = 0.002, 0.0005


#: Seconds a ladder's lane (PostgreSQL) waits for a post before it is dropped.
IDLE = 60.0


@dataclass(eq=False)
class Lane:
    """Posts queued for one writer at a time, in order: SQLite's one, or one ladder's on PostgreSQL."""

    queue: asyncio.Queue[tuple[Post, asyncio.Future]] = field(default_factory=asyncio.Queue)
    task: asyncio.Task | None = None


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
        #: SQLite: one lane for every ladder (key None); PostgreSQL: a lane per ladder, by slug.
        self.per_ladder = db.dialect == "postgresql"
        self.lanes: dict[str | None, Lane] = {}
        self.executor = ThreadPoolExecutor(
            max_workers=writers if self.per_ladder else 1, thread_name_prefix="melo-writer"
        )
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
        name = post.slug if self.per_ladder else None
        lane = self.lanes.get(name)
        if lane is None:
            lane = self.lanes[name] = Lane()
            lane.task = asyncio.get_running_loop().create_task(self._run(name, lane))
        future = asyncio.get_running_loop().create_future()
        lane.queue.put_nowait((post, future))
        return await future

    async def _run(self, name: str | None, lane: Lane) -> None:
        loop = asyncio.get_running_loop()
        queue, last_size = lane.queue, 0
        while True:
            try:
                first = await asyncio.wait_for(queue.get(), IDLE) if self.per_ladder else await queue.get()
            except TimeoutError:
                if queue.empty():  # nothing was put since: the lane goes (the next post makes a new one)
                    del self.lanes[name]
                    return
                continue
            group = [first]
            # Under load (the last group had company), the clients it answered are sending their next posts:
            # waiting a moment for them makes one commit of the next group instead of one for its first post.
            waited = 0.0
            while last_size > 1 and queue.qsize() + 1 < last_size // 2 and waited < LINGER:
                await asyncio.sleep(LINGER_STEP)
                waited += LINGER_STEP
            games = len(group[0][0].games)
            while not queue.empty() and games < MAX_GAMES:
                item = queue.get_nowait()
                group.append(item)
                games += len(item[0].games)
            posts = [post for post, _ in group]
            last_size = len(posts)
            try:
                outcomes = await loop.run_in_executor(self.executor, self.commit, posts)
            except BaseException as exc:  # the loop must survive whatever happens to one group
                outcomes = [exc] * len(group)
            for (_, future), outcome in zip(group, outcomes, strict=True):
                if future.done():  # the client went away
                    continue
                if isinstance(outcome, BaseException):
                    future.set_exception(outcome)
                else:
                    future.set_result(outcome)

    def commit(self, posts: list[Post]) -> list[dict | BaseException]:
        """Apply the posts in one transaction, or, if that fails, one transaction each."""
        try:
            group = self.db.write(lambda session: apply_posts(session, posts))
        except Exception as exc:
            if len(posts) > 1:
                logger.info("a group of %d posts failed (%s); retrying them one by one", len(posts), exc)
                return [self.commit([post])[0] for post in posts]
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
        for lane in self.lanes.values():
            if lane.task is not None:
                lane.task.cancel()
        self.executor.shutdown(wait=True)
