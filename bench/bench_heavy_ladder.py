"""One ladder's heavy reads beside another ladder's light traffic: does the light ladder notice?

    python -m bench.bench_heavy_ladder [--db sqlite postgresql] [--singles 30000] [--free-for-alls 400]

For each database: a fresh database, one uvicorn worker on loopback, a ladder where one player ("hub") played
``--singles`` singles and ``--free-for-alls`` free-for-alls of 64 sides of 32 players (devtools/hub.py), and a
small ladder of 10 players.  First each heavy read of the hub alone (its time); then all of them at once, 4
opponent searches (comparable, balanced, next), 4 head-to-head pages and 20 distinct moments pages, anonymous,
while a probe in another process asks in turn for ``/healthz``, the small ladder's opponents, its latest games
and posts a game to it: their latencies against the probe's alone, measured in the same run (the machine is
shared and noisy: ratios).  Prints a table and writes bench/results/bench_heavy_ladder.json.  Targets (issue
57): /healthz p95 < 100 ms, the other ladder's reads and posts p99 < 250 ms while the heavy reads run.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import platform
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import numpy as np

from app.core.migrate import upgrade
from devtools.hub import PROBES, hub_ladder, light_ladder, probe
from devtools.postgres import PostgresServer
from devtools.server import live_server

RESULTS = Path(__file__).parent / "results"
HEAVY = (
    ["/players/hub/opponents?purpose=comparable", "/players/hub/opponents", "/players/hub/opponents?purpose=next"]
    + ["/players/hub/opponents?purpose=comparable&cursor=10"]
    + [f"/players/hub/head-to-head?cursor={n}" for n in range(1, 5)]
    + [f"/moments?since={n}&limit=100" for n in range(20)]
)


def probed(base: str, key: str, seconds: float | None, heavy: list[str]) -> tuple[dict, list, list]:
    """The probe's latencies for ``seconds`` (nothing else running), or while ``heavy`` run at once."""
    done, measured = multiprocessing.Event(), multiprocessing.Queue()
    prober = multiprocessing.Process(target=probe, args=(base, key, done, measured))
    prober.start()
    answers: list = []
    if heavy:
        time.sleep(0.3)

        def get(path: str) -> tuple[int, float]:
            start = time.perf_counter()
            r = httpx.get(base + "/v1/ladders/hub" + path, timeout=120)
            return r.status_code, time.perf_counter() - start

        with ThreadPoolExecutor(len(heavy)) as pool:
            answers = list(pool.map(get, heavy))
    else:
        time.sleep(seconds or 5)
    done.set()
    times, statuses = measured.get(timeout=120)
    prober.join()
    return times, statuses, answers


def quantiles(times: dict[str, list[float]]) -> dict[str, dict[str, float]]:
    return {
        name: {"p50_ms": 1000 * float(np.quantile(t, 0.5)), "p95_ms": 1000 * float(np.quantile(t, 0.95)),
               "p99_ms": 1000 * float(np.quantile(t, 0.99)), "max_ms": 1000 * max(t), "n": len(t)}
        for name, t in times.items()
    }  # fmt: skip


def run(database: str, url: str, singles: int, free_for_alls: int) -> dict:
    upgrade(url)
    with live_server(url) as base:
        started = time.perf_counter()
        hub_ladder(base, "hub", singles, free_for_alls)
        built = time.perf_counter() - started
        key = light_ladder(base)
        alone = {}
        for path in dict.fromkeys(p.split("&cursor")[0].split("?cursor")[0] for p in HEAVY[:5] + HEAVY[8:9]):
            start = time.perf_counter()
            status = httpx.get(base + "/v1/ladders/hub" + path, timeout=120).status_code
            alone[path] = {"status": status, "seconds": time.perf_counter() - start}
        quiet, _, _ = probed(base, key, 5, [])
        loaded, statuses, answers = probed(base, key, None, HEAVY)
    return {
        "database": database,
        "built_seconds": built,
        "heavy_alone": alone,
        "probe_alone": quantiles(quiet),
        "probe_under_heavy": quantiles(loaded),
        "probe_statuses": sorted(set(statuses)),
        "heavy_answers": {str(s): sum(a[0] == s for a in answers) for s in sorted({a[0] for a in answers})},
        "heavy_slowest_seconds": max(a[1] for a in answers),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", nargs="+", choices=["sqlite", "postgresql"], default=["sqlite", "postgresql"])
    parser.add_argument("--singles", type=int, default=30_000)
    parser.add_argument("--free-for-alls", type=int, default=400)
    args = parser.parse_args()
    results = []
    for database in args.db:
        with tempfile.TemporaryDirectory() as tmp:
            if database == "sqlite":
                results.append(run(database, f"sqlite:///{tmp}/bench.db", args.singles, args.free_for_alls))
            else:
                server = PostgresServer()
                server.start()
                try:
                    results.append(run(database, server.create_database("bench"), args.singles, args.free_for_alls))
                finally:
                    server.stop()
    print(f"\nhub: {args.singles} singles, {args.free_for_alls} free-for-alls of 2,048 players; one worker")
    for r in results:
        print(f"\n{r['database']}: built in {r['built_seconds']:.0f} s")
        for path, alone in r["heavy_alone"].items():
            print(f"  alone {path:48} {alone['status']}  {alone['seconds']:6.2f} s")
        slowest = r["heavy_slowest_seconds"]
        print(f"  {len(HEAVY)} heavy reads at once: answers {r['heavy_answers']}, slowest {slowest:.1f} s")
        print(f"  {'probe':10} {'alone p95':>10} {'p99':>8} {'under heavy p95':>16} {'p99':>8} {'max':>8}")
        for name in PROBES:
            a, b = r["probe_alone"][name], r["probe_under_heavy"][name]
            print(f"  {name:10} {a['p95_ms']:8.0f}ms {a['p99_ms']:6.0f}ms {b['p95_ms']:14.0f}ms {b['p99_ms']:6.0f}ms "
                  f"{b['max_ms']:6.0f}ms")  # fmt: skip
        print(f"  probe statuses under heavy reads: {r['probe_statuses']}")
    RESULTS.mkdir(exist_ok=True)
    out = {"machine": platform.platform(), "cores": multiprocessing.cpu_count(), "runs": results}
    (RESULTS / "bench_heavy_ladder.json").write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
