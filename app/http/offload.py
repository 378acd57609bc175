"""A request's heavy work off the event loop, in threads shared fairly by the ladders.

Heavy reads (opponent searches, rankings, moments, fair teams, reads of an
earlier time) run in a few threads of their own, never on the event loop or in
the threads the other requests need.  The ladders take turns at them: requests
wait in one queue per ladder, served round-robin, and one ladder holds at most
``slots - 1`` threads at once, so one is always left for the others.  A ladder
with too many requests waiting already gets a 429 at once.  The work runs under its request's budget
(:mod:`app.core.deadline`): when the deadline passes or the client hangs up, it
stops at its next step and gives its thread back.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter, OrderedDict, deque
from collections.abc import Callable
from typing import TypeVar

import anyio
import anyio.to_thread
from starlette.requests import Request

from app.core import deadline
from app.core.errors import TooManyRequests, Unavailable

T = TypeVar("T")

#: Requests one ladder may have waiting for a thread.  The other ladders' wait for none of them (each ladder's turn
#: comes round); the bound sheds at once what would wait past its deadline anyway.
WAITING = 128
#: How often (seconds) a running request looks whether its client is still there.
LISTEN = 0.25


class Lanes:
    """``slots`` threads for heavy work, taken by the ladders in turn (an asyncio object: the event loop's)."""

    def __init__(self, slots: int) -> None:
        self.slots = slots
        self.share = max(1, slots - 1)
        self.threads = anyio.CapacityLimiter(slots)
        self.running: Counter[str] = Counter()
        #: Each ladder's waiting requests, the ladders in the order of their next turn.
        self.queues: OrderedDict[str, deque[asyncio.Future]] = OrderedDict()

    def busy(self) -> int:
        return sum(self.running.values())

    async def acquire(self, ladder: str) -> None:
        """Wait for a thread for ``ladder``'s request; a 429 if too many of the ladder's requests wait already."""
        queue = self.queues.get(ladder, deque())
        if len(queue) >= WAITING:
            raise TooManyRequests(
                "Too many heavy requests for this ladder are waiting already; retry after `Retry-After` seconds.",
                retry_after=1,
            )
        turn = asyncio.get_running_loop().create_future()
        self.queues.setdefault(ladder, queue).append(turn)
        self._grant()
        try:
            await turn
        except BaseException:
            if turn.done() and not turn.cancelled():  # granted as it was cancelled: give the thread back
                self.release(ladder)
            else:
                self._forget(ladder, turn)
            raise

    def release(self, ladder: str) -> None:
        self.running[ladder] -= 1
        if self.running[ladder] <= 0:
            del self.running[ladder]
        self._grant()

    def _grant(self) -> None:
        """Start waiting requests while threads are free: the first ladder in turn that holds fewer than its share,
        which then goes to the back of the turn.  A waiter cancelled (its deadline passed) but not yet woken to
        leave its queue is passed over."""
        while self.busy() < self.slots:
            ladder = next((name for name in self.queues if self.running[name] < self.share), None)
            if ladder is None:
                return
            queue = self.queues.pop(ladder)
            turn = queue.popleft()
            if queue:
                self.queues[ladder] = queue  # at the back
            if turn.done():
                continue
            self.running[ladder] += 1
            turn.set_result(None)

    def _forget(self, ladder: str, turn: asyncio.Future) -> None:
        queue = self.queues.get(ladder)
        if queue is None or turn not in queue:
            return
        queue.remove(turn)
        if not queue:
            del self.queues[ladder]


async def compute(request: Request, work: Callable[..., T], *args: object) -> T:
    """CPU-bound work of a request (a search, a ranking), in the compute lanes, never on the event loop: a 429 if
    too many of its ladder's wait already, a 503 if it cannot finish within the request deadline."""
    return await _run(request, request.app.state.compute, work, *args)


async def past(request: Request, work: Callable[..., T], *args: object) -> T:
    """A read of a ladder as it stood at an earlier time (``as_of``) or a ladder-wide report: a pass over its log,
    in the reports' lane (one such read at a time per process, the ladders in turn)."""
    return await _run(request, request.app.state.reports, work, *args)


async def _run(request: Request, lanes: Lanes, work: Callable[..., T], *args: object) -> T:
    seconds = request.app.state.settings.request_timeout
    until = request.scope.get(deadline.SCOPE_KEY) or time.monotonic() + seconds
    budget = deadline.Budget(until)
    ladder = str(request.path_params.get("slug", ""))
    with anyio.move_on_after(max(0.0, until - time.monotonic())):
        await lanes.acquire(ladder)
        listening = asyncio.ensure_future(_listen(request, budget))
        try:
            return await anyio.to_thread.run_sync(deadline.run_within, budget, work, *args, limiter=lanes.threads)
        except deadline.Stopped:
            pass
        finally:
            listening.cancel()
            lanes.release(ladder)
    raise Unavailable(f"The server is busy with other heavy requests; this one could not finish within {seconds:g} s.")


async def _listen(request: Request, budget: deadline.Budget) -> None:
    """Abandon the work when its client hangs up."""
    while not budget.over():
        if await request.is_disconnected():
            budget.abandon()
            return
        await anyio.sleep(LISTEN)
