"""Reads on a streaming replica: the leaderboard while games stream in, with and without ``MELO_READ_DATABASE_URL``.

    python -m bench.bench_replica [--players 10000] [--seconds 10]

A PostgreSQL primary (durable commits) and a hot standby of it made by
``pg_basebackup -R``, both on this machine; a ladder of ``--players`` players
(k = 1, two games each, no auto refit); one uvicorn worker on loopback and wrk
in other processes (``make bench`` installs it).  Twice, first over the primary
alone, then with the replica named in ``MELO_READ_DATABASE_URL``: posts alone
(16 connections), then posts with first leaderboard pages (4 connections) at
the same time.  The primary's statements are counted by ``pg_stat_statements``:
those of the leaderboard's read path (the ladder's version, the players changed
since a version, a whole ladder) and every SELECT.  The issue's targets: with
the replica, the primary's read-path statements per second drop by at least
90%, and posts keep at least 80% of their throughput without it.  The baseline,
``bench/trivial.py`` (an ``async def`` that touches nothing) served the same
way, is measured in the same run.  Prints a table and writes
bench/results/bench_replica.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import time
from pathlib import Path

import httpx
import psycopg

from bench.bench_api import Server, seed_ladder, trivial_baseline, wrk
from bench.bench_mixed import together
from devtools.postgres import PostgresServer
from devtools.replica import standby

RESULTS = Path(__file__).parent / "results"
TARGETS = {"primary_reads_drop": 0.90, "posts_kept": 0.80}
#: The statements of a leaderboard read (app.storage.ladders.version_and_privacy, app.storage.read_model.CHANGED and
#: EVERYONE), as pg_stat_statements normalises them.
READ_PATH = ("SELECT version, private, reset_version FROM ladders%", "%changed_version, experience FROM players%")


def statements(url: str) -> dict[str, int]:
    """Calls so far on the primary: the leaderboard's read path, and every SELECT."""
    with psycopg.connect(url, autocommit=True) as conn:
        read_path = conn.execute(
            "SELECT coalesce(sum(calls), 0) FROM pg_stat_statements WHERE query LIKE %s OR query LIKE %s", READ_PATH
        ).fetchone()[0]
        selects = conn.execute(
            "SELECT coalesce(sum(calls), 0) FROM pg_stat_statements WHERE query ILIKE 'select%%'"
        ).fetchone()[0]
    return {"read_path": int(read_path), "selects": int(selects)}


def measure(url: str, replica: str | None, seconds: int, env: dict[str, str]) -> dict:
    os.environ.pop("MELO_READ_DATABASE_URL", None)
    if replica is not None:
        os.environ["MELO_READ_DATABASE_URL"] = replica
    server = Server(url, 1)
    try:
        path = "/v1/ladders/bench/leaderboard?limit=50"
        wrk(server.base, path, "plain", 4, 1, env)  # warm-up: the worker has read the ladder once
        alone = wrk(server.base, "/", "games", 16, seconds, env)
        before, start = statements(url), time.perf_counter()
        posts, reads = together(server.base, "leaderboard", seconds, env)
        after, window = statements(url), time.perf_counter() - start
        audit = httpx.get(server.base + "/v1/ladders/bench/audit", timeout=600).json()
    finally:
        server.stop()
        os.environ.pop("MELO_READ_DATABASE_URL", None)
    per_second = {name: (after[name] - before[name]) / window for name in after}
    return {
        "posts alone": alone,
        "posts with reads": posts,
        "reads with posts": reads,
        "primary": per_second,
        "audit_consistent": bool(audit["consistent"]),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--players", type=int, default=10_000)
    parser.add_argument("--seconds", type=int, default=10)
    args = parser.parse_args()
    if shutil.which("wrk") is None:
        raise SystemExit("wrk is not installed: apt-get install wrk (make bench does)")
    primary = PostgresServer(fsync=True)
    primary.start()
    with (primary.dir / "data" / "postgresql.conf").open("a") as conf:
        conf.write("shared_preload_libraries = 'pg_stat_statements'\n")
    primary.crash()
    primary.restart()
    replica = None
    try:
        with psycopg.connect(primary.url(), autocommit=True) as conn:
            conn.execute("CREATE DATABASE bench")
        url = primary.url("bench")
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION pg_stat_statements")
        key = seed_ladder(url, args.players, auto_refit=False)
        replica = standby(primary)
        trivial = trivial_baseline(1, args.seconds)
        env = {"MELO_WRITE_KEY": key, "MELO_PLAYERS": str(args.players), "MELO_LADDER": "bench"}
        runs = {
            "primary alone": measure(url, None, args.seconds, env),
            "with a replica": measure(url, replica.url("bench"), args.seconds, env),
        }
    finally:
        primary.stop()
        if replica is not None:
            replica.stop()

    alone, replicated = runs["primary alone"], runs["with a replica"]
    drop = 1 - replicated["primary"]["read_path"] / max(alone["primary"]["read_path"], 1e-9)
    kept = replicated["posts with reads"]["rps"] / alone["posts with reads"]["rps"]
    print(
        f"\none uvicorn worker, {args.players:,} players, k = 1, wrk -t1, {args.seconds} s per row; posts 16 "
        f"connections, leaderboard pages 4; trivial async endpoint {trivial['rps']:,.0f} req/s\n"
    )
    print(
        "| setup | posts alone /s | posts with reads /s | reads with posts /s | reads p99 ms "
        "| primary read-path statements /s | primary SELECTs /s |"
    )
    print("|---|---|---|---|---|---|---|")
    for name, r in runs.items():
        print(
            f"| {name} | {r['posts alone']['rps']:,.0f} | {r['posts with reads']['rps']:,.0f} "
            f"| {r['reads with posts']['rps']:,.0f} | {r['reads with posts']['p99_ms']:.1f} "
            f"| {r['primary']['read_path']:,.0f} | {r['primary']['selects']:,.0f} |"
        )
    print(
        f"\nthe primary's read-path statements dropped by {drop:.1%} (target ≥ 90%); posts under reads kept "
        f"{kept:.2f} of their throughput without the replica (target ≥ 0.80)"
    )
    print(f"audit consistent: {all(r['audit_consistent'] for r in runs.values())}")
    RESULTS.mkdir(exist_ok=True)
    out = {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
        "players": args.players,
        "seconds": args.seconds,
        "trivial_rps": trivial["rps"],
        "runs": runs,
        "primary_reads_drop": drop,
        "posts_kept": kept,
        "targets": {
            "primary_reads_drop": drop >= TARGETS["primary_reads_drop"],
            "posts_kept": kept >= TARGETS["posts_kept"],
        },
    }
    (RESULTS / "bench_replica.json").write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
