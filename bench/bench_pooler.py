"""Throughput through PgBouncer in transaction mode against the same server reached directly, and of two hosts
behind HAProxy against each alone (issue 25, parts 1 and 4).

    python -m bench.bench_pooler [--workers 2] [--players 10000] [--seconds 10] [--rounds 2]

One PostgreSQL server (fsync on) and Debian's PgBouncer in front of it, set as
docs/operations.md says.  For each route, direct and through the pooler (in
alternation, ``--rounds`` times, so both see the same noise), a fresh database
with the ``bench_api`` ladder (no auto refit: the serving path alone), the service with ``--workers`` workers, and wrk:
the trivial endpoint (the framework's limit, the same in both), ``POST /games``,
``GET /predict`` and ``GET /leaderboard`` with 16 connections each.  Target:
through the pooler, each reaches at least 90% of its direct throughput.

Then two hosts (one worker each, through the pooler, on one database), each
measured alone, then both behind HAProxy (the configuration of
tests/test_many_hosts.py): target, the pair reaches 90% of the sum of each alone.
All of it shares this machine's cores, so the pair cannot add up here: the
figure says what the balancer costs, not what a second machine adds.  Prints
tables and writes bench/results/bench_pooler.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import httpx
import numpy as np

from bench.bench_api import Server, seed_ladder, trivial_baseline, wrk
from devtools.haproxy import HAPROXY
from devtools.pgbouncer import PgBouncer
from devtools.postgres import PostgresServer
from devtools.server import free_port

RESULTS = Path(__file__).parent / "results"
TARGET = 0.90
ROWS = {
    "POST /games": ("/", "games"),
    "GET /predict": ("/", "predict"),
    "GET /leaderboard": ("/v1/ladders/bench/leaderboard?limit=50", "plain"),
}


def rates(base: str, players: int, seconds: int, key: str) -> dict:
    env = {"MELO_WRITE_KEY": key, "MELO_PLAYERS": str(players), "MELO_LADDER": "bench"}
    wrk(base, "/healthz", "plain", 16, 2, env)  # warm-up
    out: dict = {name: wrk(base, path, mode, 16, seconds, env)["rps"] for name, (path, mode) in ROWS.items()}
    out["audit consistent"] = httpx.get(base + "/v1/ladders/bench/audit", timeout=600).json()["consistent"]
    return out


def measure(url: str, players: int, workers: int, seconds: int, key: str) -> dict:
    server = Server(url, workers)
    try:
        return rates(server.base, players, seconds, key)
    finally:
        server.stop()


def hosts(url: str, players: int, seconds: int, key: str) -> dict[str, dict]:
    """Two one-worker hosts over ``url``: each alone, then both behind HAProxy."""
    a, b = Server(url, 1), Server(url, 1)
    folder = Path(tempfile.mkdtemp(prefix="melo-haproxy-"))
    port = free_port()
    (folder / "haproxy.cfg").write_text(HAPROXY.format(port=port, a=a.port, b=b.port))
    haproxy = shutil.which("haproxy") or "/usr/sbin/haproxy"
    balancer = subprocess.Popen([haproxy, "-db", "-f", str(folder / "haproxy.cfg")], stderr=subprocess.DEVNULL)
    try:
        time.sleep(1.0)
        return {
            "host a alone": rates(a.base, players, seconds, key),
            "host b alone": rates(b.base, players, seconds, key),
            "both behind HAProxy": rates(f"http://127.0.0.1:{port}", players, seconds, key),
        }
    finally:
        balancer.terminate()
        balancer.wait(10)
        a.stop()
        b.stop()
        shutil.rmtree(folder, ignore_errors=True)


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
    balanced: dict[str, dict] = {}
    try:
        trivial = trivial_baseline(args.workers, args.seconds)["rps"]
        for n in range(args.rounds):
            for route in runs:
                name = f"bench_{route}_{n}"
                key = seed_ladder(pg.create_database(name), args.players, auto_refit=False)
                url = pooler.url(name) if route == "pgbouncer" else pg.url(name)
                runs[route].append(measure(url, args.players, args.workers, args.seconds, key))
        if shutil.which("haproxy") or Path("/usr/sbin/haproxy").exists():
            key = seed_ladder(pg.create_database("bench_hosts"), args.players, auto_refit=False)
            balanced = hosts(pooler.url("bench_hosts"), args.players, args.seconds, key)
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
    summed = {}
    if balanced:
        print("\ntwo one-worker hosts through the pooler, each alone and both behind HAProxy (one machine's cores)\n")
        print("| request | host a alone | host b alone | both behind HAProxy | vs the sum (target ≥ 0.90) |")
        print("|---|---|---|---|---|")
        for row in ROWS:
            alone = balanced["host a alone"][row] + balanced["host b alone"][row]
            summed[row] = balanced["both behind HAProxy"][row] / alone
            print(
                f"| {row} | {balanced['host a alone'][row]:,.0f} | {balanced['host b alone'][row]:,.0f} | "
                f"{balanced['both behind HAProxy'][row]:,.0f} | {summed[row]:.2f} |"
            )
    consistent = all(r["audit consistent"] for rs in [*runs.values(), balanced.values()] for r in rs)
    print(f"\naudit consistent after every run: {consistent}")
    RESULTS.mkdir(exist_ok=True)
    out = {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "args": vars(args),
        "trivial_rps": trivial,
        "runs": runs,
        "mean": mean,
        "ratio": ratio,
        "hosts": balanced,
        "hosts_vs_sum": summed,
        "targets": {
            "pooler_within_90_percent": all(v >= TARGET for v in ratio.values()),
            "hosts_within_90_percent_of_sum": bool(summed) and all(v >= TARGET for v in summed.values()),
            "audit_consistent": consistent,
        },
    }
    (RESULTS / "bench_pooler.json").write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
