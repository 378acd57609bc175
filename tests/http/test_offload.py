"""The compute lanes: ladders take turns, one ladder never holds every thread, a ladder's queue is bounded, and work
stops at its budget's end."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from app.core import deadline
from app.core.errors import TooManyRequests
from app.http.offload import WAITING, Lanes


def test_ladders_take_turns_and_one_never_holds_every_thread():
    async def scenario() -> list[str]:
        lanes, started = Lanes(2), []

        async def request(ladder: str) -> None:
            await lanes.acquire(ladder)
            started.append(ladder)
            await asyncio.sleep(0.01)
            lanes.release(ladder)

        tasks = [asyncio.create_task(request("a")) for _ in range(4)]
        await asyncio.sleep(0)  # a's four wait first, then b's and c's
        tasks += [asyncio.create_task(request(x)) for x in ("b", "b", "c")]
        await asyncio.sleep(0)
        assert lanes.running["a"] == 1  # of two threads, a holds one: the other is left for b
        await asyncio.gather(*tasks)
        return started

    started = asyncio.run(scenario())
    # a came first with four, then b with two and c with one: c starts before a's last two, not after them.
    assert started[:2] == ["a", "b"] and started.index("c") < 5
    assert sorted(started) == ["a"] * 4 + ["b"] * 2 + ["c"]


def test_a_ladder_with_too_many_requests_waiting_gets_429_others_do_not():
    async def scenario() -> None:
        lanes = Lanes(2)
        await lanes.acquire("a")  # running: a's share
        waiting = [asyncio.create_task(lanes.acquire("a")) for _ in range(WAITING)]
        await asyncio.sleep(0)
        with pytest.raises(TooManyRequests) as refused:
            await lanes.acquire("a")
        assert refused.value.retry_after == 1
        await asyncio.wait_for(lanes.acquire("b"), 1)  # another ladder starts at once
        for task in waiting:
            task.cancel()
        await asyncio.gather(*waiting, return_exceptions=True)
        assert "a" not in lanes.queues  # cancelled waiters leave no trace

    asyncio.run(scenario())


def test_a_waiter_cancelled_before_it_wakes_is_passed_over_and_no_thread_is_lost():
    """Waiters whose deadline passes are cancelled at once but leave their queue only when next run: a release in
    between passes over them (it granted one and failed, and the thread was never given back)."""

    async def scenario() -> None:
        lanes = Lanes(2)
        await lanes.acquire("a")
        await lanes.acquire("b")
        late = [asyncio.create_task(lanes.acquire(x)) for x in ("c", "c", "d")]
        await asyncio.sleep(0)
        for task in late:
            task.cancel()  # their futures are cancelled now; the tasks have not run yet
        lanes.release("a")  # before they run: nothing to grant
        lanes.release("b")
        await asyncio.gather(*late, return_exceptions=True)
        assert lanes.busy() == 0 and not lanes.queues
        await asyncio.wait_for(asyncio.gather(lanes.acquire("c"), lanes.acquire("e")), 1)  # both threads free

    asyncio.run(scenario())


def test_work_stops_at_its_next_check_once_its_budget_is_over():
    budget = deadline.Budget(time.monotonic() + 60)
    steps: list[int] = []

    def work() -> None:
        for n in range(10_000):
            deadline.check()
            steps.append(n)
            time.sleep(0.001)

    stopped: list[bool] = []

    def run() -> None:
        try:
            deadline.run_within(budget, work)
        except deadline.Stopped:
            stopped.append(True)

    thread = threading.Thread(target=run)
    thread.start()
    time.sleep(0.05)
    budget.abandon()  # the client hung up
    thread.join(timeout=5)
    assert stopped and not thread.is_alive() and 0 < len(steps) < 1000
    deadline.check()  # outside any budget: nothing to stop
    late = deadline.Budget(time.monotonic() - 1)
    with pytest.raises(deadline.Stopped):
        deadline.run_within(late, lambda: None)  # waited past its deadline for a thread: never starts
