"""A lock handed to its waiters in the order they asked (SQLite's writers in one process)."""

from __future__ import annotations

import threading
from collections import deque


class FairLock:
    """A lock handed to its waiters in the order they asked: SQLite's writers in one process (the group
    commit's and any other write, a refit's apply, a void) take turns.  A plain lock is taken again by the thread
    that just released it: the group commit, always with a group waiting, would keep a refit's apply out."""

    def __init__(self) -> None:
        self._mutex = threading.Lock()
        self._waiters: deque[threading.Lock] = deque()
        self._held = False

    def __enter__(self) -> None:
        with self._mutex:
            if not self._held:
                self._held = True
                return
            turn = threading.Lock()
            turn.acquire()
            self._waiters.append(turn)
        try:
            turn.acquire()  # released by the holder before us: the lock is ours
        except BaseException:  # interrupted while waiting: leave the queue, or pass on a turn handed over meanwhile
            with self._mutex:
                if turn in self._waiters:
                    self._waiters.remove(turn)
                else:
                    self._hand_over()
            raise

    def __exit__(self, *exc: object) -> None:
        with self._mutex:
            self._hand_over()

    def _hand_over(self) -> None:
        if self._waiters:
            self._waiters.popleft().release()  # held still: handed over
        else:
            self._held = False
