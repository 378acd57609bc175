"""SQLite's writers in one process take turns (app.core.fair_lock.FairLock): a writer that asks while the group
commit keeps committing gets the lock next, not after the group commit has taken it again and again (a refit's
apply waited over 30 s behind it with a plain lock)."""

from __future__ import annotations

import threading
import time

from app.core.fair_lock import FairLock


def test_a_waiting_writer_goes_next_however_busy_the_holder():
    lock, stop = FairLock(), threading.Event()
    turns: list[str] = []

    def busy() -> None:  # the group commit: asks again as soon as it lets go
        while not stop.is_set():
            with lock:
                time.sleep(0.001)
                # Whether another writer is queued as it lets go (it then must go next); looked at before letting
                # go, as one that queues after the look may or may not come before the group's next turn.
                turns.append("group, a writer waiting" if lock._waiters else "group")

    holder = threading.Thread(target=busy)
    holder.start()
    time.sleep(0.05)
    for _ in range(20):  # the apply, again and again
        with lock:
            turns.append("apply")
        time.sleep(0.002)
    stop.set()
    holder.join()
    assert turns.count("apply") == 20 and "group" in turns[turns.index("apply") :]  # the holder kept asking
    handed = [turns[n + 1] for n, turn in enumerate(turns[:-1]) if turn == "group, a writer waiting"]
    assert handed and set(handed) == {"apply"}, turns  # a plain lock lets the group take it again and again


def test_turns_are_taken_in_the_order_asked():
    lock, order = FairLock(), []
    lock.__enter__()
    waiters = []
    for n in range(4):
        t = threading.Thread(target=lambda n=n: (lock.__enter__(), order.append(n), lock.__exit__()))
        t.start()
        waiters.append(t)
        while len(lock._waiters) < n + 1:  # queued before the next one asks
            time.sleep(0.001)
    lock.__exit__()
    for t in waiters:
        t.join()
    assert order == [0, 1, 2, 3]
    with lock:  # free again: taken at once
        assert not lock._waiters
