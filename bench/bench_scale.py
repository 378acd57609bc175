"""Game posts as ladders, workers and cores are added: one ladder against the same posts spread over 16.

    python -m bench.bench_scale [--db sqlite postgresql] [--workers 1 2 ...] [--seconds 5] [--connections 128]

For each database and each number of uvicorn workers W (default: 1, 2, 4, …
up to the cores present), in one run on loopback, with wrk in another process:

* the trivial ``async def`` endpoint (``bench/trivial.py``) served the same way: the framework's limit;
* ``POST …/games`` to one ladder of 10,000 players (k = 1, auto refit off);
* the same posts spread evenly over 16 ladders of 2,000 players each;
* at W = 1, the one ladder posted to by 16 connections (against the trivial endpoint at 16), and the 16 ladders
  by 64 and by 256 connections (the slowest post, and p99).

PostgreSQL runs with fsync and synchronous commit on.  Prints a table and
writes bench/results/bench_scale.json.  Targets (issue 58): posts over 16
ladders >= 0.9 x posts to one ladder, two workers >= one; one ladder at 16
connections >= 0.20 of the trivial endpoint with p99 < 50 ms; 64 and 256
connections on one worker: no post over 1 s, p99 < 100 ms.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import tempfile
from pathlib import Path

import psycopg

from bench.bench_api import Server, seed_ladder, wrk
from devtools.postgres import PostgresServer

RESULTS = Path(__file__).parent / "results"
LADDERS, ONE_PLAYERS, EACH_PLAYERS = 16, 10_000, 2_000


def seed(url: str) -> dict[str, dict[str, str]]:
    """One ladder of 10,000 players and 16 of 2,000; wrk's environment for posting to each set."""
    one = seed_ladder(url, ONE_PLAYERS, auto_refit=False, slug="one")
    keys = [seed_ladder(url, EACH_PLAYERS, auto_refit=False, slug=f"many{n}") for n in range(LADDERS)]
    return {
        "one": {"MELO_WRITE_KEY": one, "MELO_PLAYERS": str(ONE_PLAYERS), "MELO_LADDER": "one"},
        "many": {
            "MELO_LADDERS": str(LADDERS),
            "MELO_WRITE_KEYS": ",".join(keys),
            "MELO_PLAYERS": str(EACH_PLAYERS),
            "MELO_LADDER": "many",
        },
    }


def measure(url: str, workers: int, seconds: int, connections: int, env: dict[str, dict[str, str]]) -> dict:
    rows = {}
    trivial = Server("sqlite://", workers, app="bench.trivial:app", ready="/")
    try:
        wrk(trivial.base, "/", "plain", connections, 2, {})
        rows["trivial"] = wrk(trivial.base, "/", "plain", connections, seconds, {})
        if workers == 1:
            rows["trivial, 16 conn"] = wrk(trivial.base, "/", "plain", 16, seconds, {})
    finally:
        trivial.stop()
    server = Server(url, workers)
    try:
        wrk(server.base, "/", "games", connections, 2, env["many"])  # warm-up: every worker has read every ladder
        rows["one ladder"] = wrk(server.base, "/", "games", connections, seconds, env["one"])
        rows["16 ladders"] = wrk(server.base, "/", "games", connections, seconds, env["many"])
        if workers == 1:
            rows["one ladder, 16 conn"] = wrk(server.base, "/", "games", 16, seconds, env["one"])
            for c in (64, 256):
                rows[f"16 ladders, {c} conn"] = wrk(server.base, "/", "games", c, seconds, env["many"])
    finally:
        server.stop()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", nargs="+", choices=["sqlite", "postgresql"], default=["sqlite", "postgresql"])
    cores = os.cpu_count() or 1
    default_workers = [w for w in (1, 2, 4, 8, 16, 32) if w <= cores] or [1]
    parser.add_argument("--workers", type=int, nargs="+", default=default_workers)
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--connections", type=int, default=128)
    args = parser.parse_args()
    if shutil.which("wrk") is None:
        raise SystemExit("wrk is not installed: apt-get install wrk (make bench does)")
    results = []
    for db in args.db:
        if db == "sqlite":
            with tempfile.TemporaryDirectory() as tmp:
                url = f"sqlite:///{tmp}/bench.db"
                env = seed(url)
                for w in args.workers:
                    results.append(
                        {"db": db, "workers": w, "rows": measure(url, w, args.seconds, args.connections, env)}
                    )
            continue
        pg = PostgresServer(fsync=True)
        pg.start()
        try:
            with psycopg.connect(pg.url(), autocommit=True) as conn:
                conn.execute("CREATE DATABASE bench_scale")
            url = pg.url("bench_scale")
            env = seed(url)
            for w in args.workers:
                results.append({"db": db, "workers": w, "rows": measure(url, w, args.seconds, args.connections, env)})
        finally:
            pg.stop()

    print(f"\n{cores} cores, wrk -t1 with {args.connections} connections, {args.seconds} s a figure, one run\n")
    print("| db | W | trivial | POST, one ladder | POST, 16 ladders | 16 ÷ one | one ÷ trivial | p99 one / 16 ms |")
    print("|---|---|---|---|---|---|---|---|")
    for res in results:
        r = res["rows"]
        triv, one, many = (r[name]["rps"] for name in ("trivial", "one ladder", "16 ladders"))
        res["ratios"] = {"many_vs_one": many / one, "one_vs_trivial": one / triv, "many_vs_trivial": many / triv}
        print(
            f"| {res['db']} | {res['workers']} | {triv:,.0f} | {one:,.0f} | {many:,.0f} | {many / one:.2f} "
            f"| {one / triv:.3f} | {r['one ladder']['p99_ms']:.0f} / {r['16 ladders']['p99_ms']:.0f} |"
        )
    print("\n| db | posts (W=1) | connections | posts/s | ÷ trivial | p99 ms | slowest ms | errors |")
    print("|---|---|---|---|---|---|---|---|")
    for res in results:
        rows = res["rows"]
        for name, r in rows.items():
            if name.endswith("conn") and not name.startswith("trivial"):
                posts, conn = name.split(", ")
                # Against the trivial endpoint at as many connections where it was measured (16), else at the run's.
                trivial = rows.get(f"trivial, {conn}", rows["trivial"])["rps"]
                print(
                    f"| {res['db']} | {posts} | {conn.split()[0]} | {r['rps']:,.0f} | {r['rps'] / trivial:.3f} "
                    f"| {r['p99_ms']:.0f} | {r['max_us'] / 1000:.0f} | {r['non_2xx'] + r['socket_errors']} |"
                )
    RESULTS.mkdir(exist_ok=True)
    out = {
        "machine": {"cpus": cores, "python": platform.python_version(), "platform": platform.platform()},
        "args": vars(args),
        "results": results,
    }
    (RESULTS / "bench_scale.json").write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
