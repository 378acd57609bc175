"""One ladder's heavy reads, anonymous and many at once, never hold up another ladder or liveness: the ladders take
turns at the compute threads, and one ladder holds at most all but one (the lanes themselves: tests/http)."""

from __future__ import annotations

import multiprocessing
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import numpy as np
import pytest

from devtools.hub import hub_ladder, light_ladder, probe

pytestmark = pytest.mark.serial  # latency bounds under a load the test makes itself

#: A hub of 3,000 singles and 30 free-for-alls of 2,048 players: its comparable opponents took 18 s in the one
#: compute thread every ladder shared, and every other ladder's opponents waited behind them.
HEAVY = (
    [f"/players/hub/opponents?purpose=comparable&limit=100&cursor={n}" for n in range(1, 5)]
    + [f"/players/hub/head-to-head?cursor={n}" for n in range(1, 5)]
    + [f"/moments?since={n}&limit=100" for n in range(20)]
)


def test_one_ladders_heavy_reads_leave_the_others_and_liveness_alone(server):
    hub_ladder(server, "hub", singles=3000, free_for_alls=30)
    key = light_ladder(server)
    done, measured = multiprocessing.Event(), multiprocessing.Queue()
    probing = multiprocessing.Process(target=probe, args=(server, key, done, measured))
    probing.start()

    def heavy(path: str) -> tuple[int, float]:
        start = time.perf_counter()
        r = httpx.get(server + "/v1/ladders/hub" + path, timeout=120)  # anonymous
        return r.status_code, time.perf_counter() - start

    started = time.perf_counter()
    with ThreadPoolExecutor(len(HEAVY)) as pool:
        answers = list(pool.map(heavy, HEAVY))
    elapsed = time.perf_counter() - started
    time.sleep(1.0)  # the probe goes on a little after: work the hub's clients left must not linger
    done.set()
    times, statuses = measured.get(timeout=60)
    probing.join()

    def p(name: str, q: float) -> float:
        return float(np.quantile(times[name], q)) * 1000

    print(
        f"\n{len(HEAVY)} heavy reads of one ladder in {elapsed:.1f} s, answers {sorted({a[0] for a in answers})}; "
        f"{len(times['healthz'])} probes: /healthz p95 {p('healthz', 0.95):.0f} ms; other ladder p99: "
        + ", ".join(f"{name} {p(name, 0.99):.0f} ms" for name in ("opponents", "games", "post"))
    )
    # The hub's own requests: answered, or a 503 for one that waited past its deadline behind the others.
    assert {a[0] for a in answers} <= {200, 503}, answers
    # How many answer in time follows the machine's speed (20 of 28 and more on CI's; 13 on a sandbox three times
    # slower that day, the others a 503 at their deadline, as designed): a third at least.
    assert sum(a[0] == 200 for a in answers) >= len(HEAVY) // 3
    assert all(s in (200, 201) for s in statuses), statuses
    # The targets are 100 ms (p95) for /healthz and 250 ms (p99) for the other ladder; the server, the clients
    # and the probe share two cores here, so the bounds below leave room while still catching a ladder that waits
    # behind another's work (before the ladders took turns, its opponents waited 18 s and more).
    assert p("healthz", 0.95) < 100
    assert max(p(name, 0.99) for name in ("opponents", "games", "post")) < 500
