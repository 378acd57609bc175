"""A request's budget for heavy work done in a thread: long loops ask :func:`check` between steps, so work whose
client has gone, or whose deadline has passed, stops at the next step instead of holding its thread to the end.

A thread cannot be interrupted from outside; the work stops itself.  Work run
outside a request (a webhook's moments, the command line) has no budget, and
:func:`check` costs it nothing.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, MutableMapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, TypeVar

T = TypeVar("T")

#: Where the request guard (middleware) puts a request's deadline in its ASGI scope, on :func:`time.monotonic`'s
#: clock.
SCOPE_KEY = "melo.deadline"


class Stopped(Exception):
    """The work's request is over (its deadline passed, or its client left): what it was doing is thrown away."""


class Budget:
    """Until when a piece of work may run, and whether the request that wanted it has been abandoned."""

    def __init__(self, deadline: float) -> None:
        self.deadline = deadline
        self.abandoned = threading.Event()

    def abandon(self) -> None:
        """Stop the work at its next check (from any thread)."""
        self.abandoned.set()

    def over(self) -> bool:
        return self.abandoned.is_set() or time.monotonic() > self.deadline


_budget: ContextVar[Budget | None] = ContextVar("melo_budget", default=None)


def leaving(scope: MutableMapping[str, Any], share: float) -> float | None:
    """When work done first should stop so as to leave ``share`` of a request's remaining time (``scope``: its
    ASGI scope) to the work after it; None outside a request."""
    end = scope.get(SCOPE_KEY)
    if end is None:
        return None
    now = time.monotonic()
    return now + (end - now) * (1 - share)


def check() -> None:
    """Raise :class:`Stopped` if the current work's request is over; nothing if there is no budget."""
    budget = _budget.get()
    if budget is not None and budget.over():
        raise Stopped


def steps(items: list[T], every: int = 64) -> Iterator[T]:
    """``items``, with a :func:`check` every ``every`` of them: a long loop's way to stop in time."""
    for n, item in enumerate(items):
        if n % every == 0:
            check()
        yield item


@contextmanager
def within(budget: Budget) -> Iterator[None]:
    """Run the block under ``budget`` (in the thread that does the work)."""
    token = _budget.set(budget)
    try:
        yield
    finally:
        _budget.reset(token)


def run_within(budget: Budget, work: Callable[..., T], *args: object) -> T:
    with within(budget):
        check()  # it may have waited past its deadline for a thread
        return work(*args)
