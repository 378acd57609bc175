"""SQLite's writers in one process take turns (app.core.fair_lock.FairLock): a writer that asks while the group
commit keeps committing gets the lock next, not after the group commit has taken it again and again (a refit's
apply waited over 30 s behind it with a plain lock)."""

from __future__ import annotations

import threading
import time

from app.core.fair_lock import FairLock


def test_a_waiting_writer_goes_next_however_busy_the_holder():
    lock, stop = FairLock(), threading.Event()
    out_of_turn, turns = [], []

    def busy() -> None:  # the group commit: asks again as soon as it lets go
        while not stop.is_set():
            with lock:
                out_of_turn.append(bool(lock._waiters))  # taken while another writer was queued for it
                turns.append("group")
                time.sleep(0.001)

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
    assert not any(out_of_turn)


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
