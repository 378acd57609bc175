"""Liveness under a hostile burst: ``/healthz`` probed while hundreds of anonymous requests arrive at once.

    python -m bench.bench_burst [--players 1000] [--burst 400] [--rounds 5]

One uvicorn worker on SQLite, a public ladder of ``--players`` players (k = 1,
two games each).  A probe process asks ``GET /healthz`` every 10 ms over one
keep-alive connection while another process opens ``--burst`` connections and
sends one request on each at the same instant, ``--rounds`` times:

* the baseline: the same burst at ``bench/trivial.py``'s ``async def``
  endpoint, probed at that endpoint, served the same way (the framework's limit);
* ``GET /predict`` for random pairs (anonymous, the hot path);
* ``POST /predict`` of the largest match the API takes (64 sides of 32 players
  not created yet), anonymous;
* a mix: half pair predictions, half leaderboards of 500 rows.

For each it reports the slowest and the 99th-percentile probe while the burst
was being answered, how long the burst took, and its statuses (a 503 is the
server shedding load it cannot start in time).  The service is measured as
served (requests start a few per loop iteration) and unpaced
(``MELO_REQUESTS_PER_STEP`` set to a million), with the throughput of
``GET /predict`` and ``POST /games`` at 16 connections (wrk) under each, against
the trivial endpoint's: pacing must not cost throughput.  Prints tables and
writes bench/results/bench_burst.json.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import platform
import random
import tempfile
import time
from collections import Counter
from pathlib import Path

from bench.bench_api import Server, seed_ladder, wrk
from devtools.burst import Probe, at_once, request

RESULTS = Path(__file__).parent / "results"
#: The target: no probe waits longer than this while a burst is answered.
TARGET_MS = 100.0
#: MELO_REQUESTS_PER_STEP for the comparison run: every request starts as soon as it arrives.
UNPACED = "1000000"


def predict_pair(players: int, rng: random.Random) -> bytes:
    a, b = rng.sample(range(players), 2)
    return request("GET", f"/v1/ladders/bench/predict?a=p{a}&b=p{b}")


def predict_match(_players: int, rng: random.Random) -> bytes:
    sides = [{"players": [f"new{rng.randrange(10**15)}" for _ in range(32)]} for _ in range(64)]
    return request("POST", "/v1/ladders/bench/predict", {"sides": sides})


def mixed(players: int, rng: random.Random) -> bytes:
    if rng.random() < 0.5:
        return predict_pair(players, rng)
    return request("GET", "/v1/ladders/bench/leaderboard?limit=500")


def trivial(_players: int, _rng: random.Random) -> bytes:
    return request("GET", "/")


def wrk_rps(server: Server, path: str, mode: str, env: dict[str, str]) -> dict:
    """wrk with 16 connections for 5 s, after 1 s of warm-up."""
    wrk(server.base, path, mode, 16, 1, env)
    return wrk(server.base, path, mode, 16, 5, env)


def measure(port: int, probe_path: str, make, players: int, burst: int, rounds: int) -> dict:
    rng = random.Random(0)
    windows, statuses, seconds = [], Counter(), []
    with Probe(port, probe_path) as probe:
        for _ in range(rounds):
            payloads = [make(players, rng) for _ in range(burst)]
            begin = time.time()
            got, took = at_once(port, payloads)
            windows.append((begin, time.time()))
            statuses += got
            seconds.append(took)
            time.sleep(0.5)
    during = probe.during(windows)
    return {
        "probes": len(during),
        "probe_max_ms": during[-1],
        "probe_p99_ms": during[int(0.99 * (len(during) - 1))],
        "probe_p50_ms": during[len(during) // 2],
        "burst_seconds_median": sorted(seconds)[len(seconds) // 2],
        "statuses": {str(k): v for k, v in sorted(statuses.items())},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--players", type=int, default=1000)
    parser.add_argument("--burst", type=int, default=400)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    runs = {}
    server = Server("sqlite://", 1, app="bench.trivial:app", ready="/")
    try:
        runs["baseline: trivial async endpoint"] = measure(server.port, "/", trivial, 0, args.burst, args.rounds)
        throughput = {"trivial async endpoint": wrk_rps(server, "/", "plain", {})}
    finally:
        server.stop()
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{tmp}/bench.db"
        key = seed_ladder(url, args.players, auto_refit=False)
        env = {"MELO_WRITE_KEY": key, "MELO_PLAYERS": str(args.players), "MELO_LADDER": "bench"}
        for label, per_step in (("", None), (" [unpaced]", UNPACED)):
            os.environ.pop("MELO_REQUESTS_PER_STEP", None)
            if per_step is not None:
                os.environ["MELO_REQUESTS_PER_STEP"] = per_step
            server = Server(url, 1)
            try:
                for name, make in (
                    ("GET /predict (pairs)", predict_pair),
                    ("POST /predict (64 sides x 32 new players)", predict_match),
                    ("pairs + 500-row leaderboards", mixed),
                ):
                    runs[name + label] = measure(server.port, "/healthz", make, args.players, args.burst, args.rounds)
                throughput["GET /predict" + label] = wrk_rps(server, "/", "predict", env)
                throughput["POST /games" + label] = wrk_rps(server, "/", "games", env)
            finally:
                server.stop()
        os.environ.pop("MELO_REQUESTS_PER_STEP", None)
    print(f"\n{args.burst} anonymous requests at once, {args.rounds} rounds; probe every 10 ms")
    print(f"{'burst':<52} {'probe max':>10} {'p99':>8} {'p50':>8} {'burst s':>8}  statuses")
    for name, r in runs.items():
        print(
            f"{name:<52} {r['probe_max_ms']:>10.1f} {r['probe_p99_ms']:>8.1f} {r['probe_p50_ms']:>8.1f}"
            f" {r['burst_seconds_median']:>8.2f}  {r['statuses']}"
        )
    print(f"\n{'throughput, 16 connections (wrk)':<52} {'req/s':>10} {'vs trivial':>10} {'p99 ms':>8}")
    for name, r in throughput.items():
        ratio = r["rps"] / throughput["trivial async endpoint"]["rps"]
        print(f"{name:<52} {r['rps']:>10.0f} {ratio:>10.2f} {r['p99_ms']:>8.1f}")
    worst = max(r["probe_max_ms"] for name, r in runs.items() if not name.startswith("baseline") and "[" not in name)
    result = {
        "machine": {"cpus": multiprocessing.cpu_count(), "python": platform.python_version()},
        "args": vars(args),
        "runs": runs,
        "throughput": throughput,
        "targets": {"probe_max_ms": worst < TARGET_MS},
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "bench_burst.json").write_text(json.dumps(result, indent=2) + "\n")
    print(f"\nslowest /healthz during a burst: {worst:.1f} ms (target < {TARGET_MS:g} ms)")


if __name__ == "__main__":
    main()
