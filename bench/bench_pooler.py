"""Throughput through PgBouncer in transaction mode against the same server reached directly (issue 25, part 1).

    python bench/bench_pooler.py [--workers 2] [--players 10000] [--seconds 10] [--rounds 2]

One PostgreSQL server (fsync on) and Debian's PgBouncer in front of it, set as
docs/scaling.md says.  For each route, direct and through the pooler (in
alternation, ``--rounds`` times, so both see the same noise), a fresh database
with the ``bench_api`` ladder, the service with ``--workers`` workers, and wrk:
the trivial endpoint (the framework's limit, the same in both), ``POST /games``,
``GET /predict`` and ``GET /leaderboard`` with 16 connections each.  Target:
through the pooler, each reaches at least 90% of its direct throughput.  Prints a
table and writes bench/results/bench_pooler.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
from pathlib import Path

import httpx
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.bench_api import Server, seed_ladder, trivial_baseline, wrk  # noqa: E402
from tests.pgbouncer import PgBouncer  # noqa: E402
from tests.postgres import PostgresServer  # noqa: E402

RESULTS = Path(__file__).parent / "results"
TARGET = 0.90
ROWS = {
    "POST /games": ("/", "games"),
    "GET /predict": ("/", "predict"),
    "GET /leaderboard": ("/v1/ladders/bench/leaderboard?limit=50", "plain"),
}


def measure(url: str, players: int, workers: int, seconds: int, key: str) -> dict[str, float]:
    server = Server(url, workers)
    env = {"MELO_WRITE_KEY": key, "MELO_PLAYERS": str(players), "MELO_LADDER": "bench"}
    try:
        wrk(server.base, "/healthz", "plain", 16, 2, env)  # warm-up
        out = {name: wrk(server.base, path, mode, 16, seconds, env)["rps"] for name, (path, mode) in ROWS.items()}
        out["audit consistent"] = httpx.get(server.base + "/v1/ladders/bench/audit", timeout=600).json()["consistent"]
        return out
    finally:
        server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--players", type=int, default=10_000)
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    if shutil.which("wrk") is None:
        raise SystemExit("wrk is not installed: apt-get install wrk (make bench does)")
    pg = PostgresServer(fsync=True)
    pg.start()
    pooler = PgBouncer(pg)
    pooler.start()
    runs: dict[str, list[dict]] = {"direct": [], "pgbouncer": []}
    try:
        trivial = trivial_baseline(args.workers, args.seconds)["rps"]
        for n in range(args.rounds):
            for route in runs:
                name = f"bench_{route}_{n}"
                key = seed_ladder(pg.create_database(name), args.players)
                url = pooler.url(name) if route == "pgbouncer" else pg.url(name)
                runs[route].append(measure(url, args.players, args.workers, args.seconds, key))
    finally:
        pooler.stop()
        pg.stop()
    mean = {route: {row: float(np.mean([r[row] for r in rs])) for row in ROWS} for route, rs in runs.items()}
    ratio = {row: mean["pgbouncer"][row] / mean["direct"][row] for row in ROWS}
    print(
        f"\n{args.players:,} players, {args.workers} workers, wrk -t1 -c16, {args.seconds} s per row, "
        f"mean of {args.rounds} rounds; the trivial endpoint: {trivial:,.0f} req/s\n"
    )
    print("| request | direct req/s | through PgBouncer req/s | ratio (target ≥ 0.90) |")
    print("|---|---|---|---|")
    for row in ROWS:
        print(f"| {row} | {mean['direct'][row]:,.0f} | {mean['pgbouncer'][row]:,.0f} | {ratio[row]:.2f} |")
    consistent = all(r["audit consistent"] for rs in runs.values() for r in rs)
    print(f"\naudit consistent after every run: {consistent}")
    RESULTS.mkdir(exist_ok=True)
    out = {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "args": vars(args),
        "trivial_rps": trivial,
        "runs": runs,
        "mean": mean,
        "ratio": ratio,
        "targets": {"within_90_percent": all(v >= TARGET for v in ratio.values()), "audit_consistent": consistent},
    }
    (RESULTS / "bench_pooler.json").write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
