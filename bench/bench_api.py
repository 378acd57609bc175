"""HTTP throughput and latency of a real server, measured with wrk from a separate process.

    python -m bench.bench_api [--db sqlite postgresql] [--workers 1 2] [--players 10000] [--seconds 10]
                              [--no-auto-refit]

For each database and each number of workers (``--workers`` applies to
PostgreSQL; SQLite is measured with one worker, see bench/README.md): a fresh
database and a ladder of ``--players`` players (k = 1, seeded with two games
per player through the bulk import), uvicorn on loopback, then wrk (Debian
package ``wrk``; ``make bench`` installs it) runs, one after another:

* the baseline: ``bench/trivial.py``, a FastAPI app whose only endpoint is an
  ``async def`` that touches nothing, served by the same uvicorn command;
* the app's own ``GET /healthz``;
* ``POST /games`` between random players with 16 and 64 connections;
* ``GET /predict`` for random pairs and ``GET /leaderboard`` (first page over
  all players), each with 1 connection (the latency of one request) and 16.

Throughputs are compared as ratios to the baseline measured in the same run
(the machines are shared and noisy).  Afterwards ``/audit`` must find the
ratings consistent with the event log.  The ladder has the default auto
refit, so a refit may run in the background (it is listed);
``--no-auto-refit`` measures without.  Prints a table and writes
bench/results/bench_api.json (bench_api_no_auto_refit.json).
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
import psycopg

from app.core.config import Settings
from app.core.db import Database
from app.core.migrate import upgrade
from app.domain.access import ladder_for_read
from app.games.apply import import_games
from app.games.schemas import GameIn
from app.ladders.schemas import LadderCreate
from app.ladders.service import create_ladder
from devtools import server
from devtools.postgres import PostgresServer

RESULTS = Path(__file__).parent / "results"
LUA = Path(__file__).parent / "api.lua"
#: The speed issue's targets: throughputs as fractions of the trivial endpoint, latencies in ms.
TARGETS = {
    "games_vs_trivial": 0.20,
    "games_p99_ms": 50.0,
    "games_64_p99_ms": 200.0,
    "predict_vs_trivial": 0.50,
    "predict_p50_ms": 1.0,
    "leaderboard_vs_trivial": 0.30,
    "leaderboard_p50_ms": 3.0,
}


def seed_ladder(url: str, players: int, auto_refit: bool = True, slug: str = "bench") -> str:
    """Migrate, create the ladder ``slug`` and give every player two games; return the write key."""
    upgrade(Settings(database_url=url).sqlalchemy_url)
    db = Database.from_settings(Settings(database_url=url))
    rng = np.random.default_rng(0)
    i = np.tile(np.arange(players), 2)
    j = (i + rng.integers(1, players, len(i))) % players
    games = [
        GameIn.model_validate({"sides": [{"players": [f"p{a}"], "rank": 1}, {"players": [f"p{b}"], "rank": 2}]})
        for a, b in zip(i.tolist(), j.tolist(), strict=True)
    ]
    with db.writing() as session:
        key = create_ladder(session, LadderCreate(slug=slug, k=1, auto_refit=auto_refit)).write_key
    with db.writing() as session:
        import_games(session, ladder_for_read(session, slug, fresh=True), games)
    if db.dialect == "postgresql":  # the planner's statistics, as autovacuum would gather them on a live server
        with db.write_engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
            connection.exec_driver_sql("ANALYZE")
    db.dispose()
    return key


class Server(server.Server):
    """The service (or ``app``) as the benchmarks serve it: no access log, migrated beforehand."""

    def __init__(self, url: str, workers: int = 1, app: str = "app.main:app", ready: str = "/healthz") -> None:
        env = {"MELO_MIGRATE_ON_START": "false"}
        super().__init__(url, workers, env, app=app, ready=ready, access_log=False, seconds=60)


def wrk(base: str, path: str, mode: str, connections: int, seconds: int, env: dict[str, str]) -> dict:
    cmd = ["wrk", "-t1", f"-c{connections}", f"-d{seconds}s", "--timeout", "10s", "-s", str(LUA), base + path]
    out = subprocess.run(cmd, env=os.environ | env | {"MELO_BENCH_MODE": mode}, capture_output=True, text=True)
    line = next((x for x in out.stdout.splitlines() if x.startswith("RESULT ")), None)
    if line is None:
        raise RuntimeError(f"wrk printed no result:\n{out.stdout}\n{out.stderr}")
    r = json.loads(line[len("RESULT ") :])
    r["rps"] = r["requests"] / (r["duration_us"] / 1e6)
    r |= {"connections": connections, "p50_ms": r["p50_us"] / 1e3, "p99_ms": r["p99_us"] / 1e3}
    return r


def trivial_baseline(workers: int, seconds: int) -> dict:
    """wrk against bench/trivial.py, served the same way as the app."""
    server = Server("sqlite://", workers, app="bench.trivial:app", ready="/")
    try:
        wrk(server.base, "/", "plain", 16, 2, {})  # warm-up
        return wrk(server.base, "/", "plain", 16, seconds, {})
    finally:
        server.stop()


def run(db: str, url: str, players: int, seconds: int, auto_refit: bool, workers: int) -> dict:
    t = time.perf_counter()
    key = seed_ladder(url, players, auto_refit)
    seeded = time.perf_counter() - t
    runs = {"trivial async endpoint, 16 conn": trivial_baseline(workers, seconds)}
    server = Server(url, workers)
    env = {"MELO_WRITE_KEY": key, "MELO_PLAYERS": str(players), "MELO_LADDER": "bench"}
    try:
        wrk(server.base, "/healthz", "plain", 16, 2, env)  # warm-up
        runs["GET /healthz, 16 conn"] = wrk(server.base, "/healthz", "plain", 16, seconds, env)
        for c in (16, 64):
            runs[f"POST /games, {c} conn"] = wrk(server.base, "/", "games", c, seconds, env)
        board = "/v1/ladders/bench/leaderboard?limit=50"
        for c in (1, 16):
            runs[f"GET /predict, {c} conn"] = wrk(server.base, "/", "predict", c, seconds, env)
            runs[f"GET /leaderboard, {c} conn"] = wrk(server.base, board, "plain", c, seconds, env)
        audit = httpx.get(server.base + "/v1/ladders/bench/audit", timeout=600).json()
        refits = [job["status"] for job in httpx.get(server.base + "/v1/ladders/bench/refits").json()["items"]]
    finally:
        server.stop()
    base = runs["trivial async endpoint, 16 conn"]["rps"]
    ratio = {name: r["rps"] / base for name, r in runs.items()}
    failed = sum(r["non_2xx"] + r["socket_errors"] for r in runs.values())
    return {
        "db": db,
        "workers": workers,
        "seed_seconds": seeded,
        "runs": runs,
        "vs_trivial": ratio,
        "audit": audit,
        "auto_refits": refits,
        "targets": {
            "games_vs_trivial": ratio["POST /games, 16 conn"] >= TARGETS["games_vs_trivial"],
            "games_p99_ms": runs["POST /games, 16 conn"]["p99_ms"] < TARGETS["games_p99_ms"],
            "games_64_p99_ms": runs["POST /games, 64 conn"]["p99_ms"] < TARGETS["games_64_p99_ms"],
            "predict_vs_trivial": ratio["GET /predict, 16 conn"] >= TARGETS["predict_vs_trivial"],
            "predict_p50_ms": runs["GET /predict, 1 conn"]["p50_ms"] < TARGETS["predict_p50_ms"],
            "leaderboard_vs_trivial": ratio["GET /leaderboard, 16 conn"] >= TARGETS["leaderboard_vs_trivial"],
            "leaderboard_p50_ms": runs["GET /leaderboard, 1 conn"]["p50_ms"] < TARGETS["leaderboard_p50_ms"],
            "audit_consistent": bool(audit["consistent"]),
            "no_errors": failed == 0,
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", nargs="+", choices=["sqlite", "postgresql"], default=["sqlite", "postgresql"])
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2], help="worker counts on PostgreSQL")
    parser.add_argument("--players", type=int, default=10_000)
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--no-auto-refit", dest="auto_refit", action="store_false", help="a ladder that never refits")
    args = parser.parse_args()
    if shutil.which("wrk") is None:
        raise SystemExit("wrk is not installed: apt-get install wrk (make bench does)")

    results = []
    for db in args.db:
        if db == "sqlite":
            with tempfile.TemporaryDirectory() as tmp:
                results.append(run(db, f"sqlite:///{tmp}/bench.db", args.players, args.seconds, args.auto_refit, 1))
            continue
        pg = PostgresServer(fsync=True)
        pg.start()
        try:
            for workers in args.workers:
                name = f"bench_{workers}"
                with psycopg.connect(pg.url(), autocommit=True) as conn:
                    conn.execute(f"CREATE DATABASE {name}")
                results.append(run(db, pg.url(name), args.players, args.seconds, args.auto_refit, workers))
        finally:
            pg.stop()

    print(f"\n{args.players:,} players, k = 1, uvicorn on loopback, wrk -t1, {args.seconds} s per row\n")
    print("| db | workers | request | req/s | vs trivial | p50 ms | p99 ms | non-2xx |")
    print("|---|---|---|---|---|---|---|---|")
    for res in results:
        for name, r in res["runs"].items():
            print(
                f"| {res['db']} | {res['workers']} | {name} | {r['rps']:,.0f} | {res['vs_trivial'][name]:.2f} "
                f"| {r['p50_ms']:.2f} | {r['p99_ms']:.1f} | {r['non_2xx'] + r['socket_errors']} |"
            )
    print()
    for res in results:
        audit, who = res["audit"], f"{res['db']}, {res['workers']} worker(s)"
        print(f"{who}: audit consistent={audit['consistent']} over {audit['games']:,} games")
        print(f"{who}: auto refits started during the run: {res['auto_refits'] or 'none'}")
        missed = [name for name, ok in res["targets"].items() if not ok]
        print(f"{who}: targets missed: {', '.join(missed) or 'none'}")
    RESULTS.mkdir(exist_ok=True)
    out = {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
        "players": args.players,
        "seconds": args.seconds,
        "auto_refit": args.auto_refit,
        "targets": TARGETS,
        "results": results,
    }
    name = "bench_api.json" if args.auto_refit else "bench_api_no_auto_refit.json"
    (RESULTS / name).write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
