"""HTTP throughput and latency of a real server, measured with wrk from a separate process.

    python bench/bench_api.py [--db sqlite postgresql] [--players 10000] [--seconds 10] [--no-auto-refit]

For each database: a fresh database and a ladder of ``--players`` players
(k = 1, seeded with two games per player through the bulk import), one uvicorn
worker on loopback, then wrk (Debian package ``wrk``; ``make bench`` installs
it) runs, one after another:

* ``GET /healthz``, the trivial endpoint of the same app: the baseline;
* ``POST /games`` between random players with 16 connections;
* ``GET /leaderboard`` (first page over all players) and ``GET /predict`` for
  random pairs, with 1 connection (the latency of one request) and with 16.

Throughputs are compared as ratios to the baseline measured in the same run
(the machines are shared and noisy).  Afterwards ``/audit`` must find the
ratings consistent with the event log.  The ladder has the default auto refit,
so a refit may run in the background during the runs (it is listed);
``--no-auto-refit`` measures without.  Prints a table and writes
bench/results/bench_api.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import numpy as np
import psycopg

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from app.config import Settings  # noqa: E402
from app.db import Database  # noqa: E402
from app.games.schemas import GameIn  # noqa: E402
from app.games.service import import_games  # noqa: E402
from app.ladders.schemas import LadderCreate  # noqa: E402
from app.ladders.service import create_ladder, get_ladder  # noqa: E402
from app.migrate import upgrade  # noqa: E402
from tests.postgres import PostgresServer  # noqa: E402

RESULTS = Path(__file__).parent / "results"
LUA = Path(__file__).parent / "api.lua"
TARGETS = {"games_vs_trivial": 0.40, "games_p99_ms": 50.0, "leaderboard_p50_ms": 20.0, "predict_p50_ms": 5.0}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def seed_ladder(url: str, players: int, auto_refit: bool = True) -> str:
    """Migrate, create the ``bench`` ladder and give every player two games; return the write key."""
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
        key = create_ladder(session, LadderCreate(slug="bench", k=1, auto_refit=auto_refit)).write_key
    with db.writing() as session:
        import_games(session, get_ladder(session, "bench"), games)
    db.dispose()
    return key


class Server:
    """``uvicorn app.main:app`` in a subprocess on a free loopback port."""

    def __init__(self, url: str, workers: int = 1) -> None:
        self.port = free_port()
        env = os.environ | {"MELO_DATABASE_URL": url, "MELO_MIGRATE_ON_START": "false"}
        cmd = [sys.executable, "-m", "uvicorn", "app.main:app", "--port", str(self.port)]
        cmd += ["--workers", str(workers), "--log-level", "warning", "--no-access-log"]
        self.proc = subprocess.Popen(cmd, env=env, cwd=ROOT)
        self.base = f"http://127.0.0.1:{self.port}"
        deadline = time.time() + 60
        while time.time() < deadline:
            try:
                if httpx.get(self.base + "/healthz").status_code == 200:
                    return
            except httpx.TransportError:
                time.sleep(0.2)
        self.stop()
        raise RuntimeError("the server did not start")

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=30)


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


def run(db: str, url: str, players: int, seconds: int, auto_refit: bool) -> dict:
    t = time.perf_counter()
    key = seed_ladder(url, players, auto_refit)
    seeded = time.perf_counter() - t
    server = Server(url)
    env = {"MELO_WRITE_KEY": key, "MELO_PLAYERS": str(players), "MELO_LADDER": "bench"}
    try:
        wrk(server.base, "/healthz", "plain", 16, 2, env)  # warm-up
        runs = {
            "trivial (GET /healthz)": wrk(server.base, "/healthz", "plain", 16, seconds, env),
            "POST /games": wrk(server.base, "/", "games", 16, seconds, env),
        }
        board = "/v1/ladders/bench/leaderboard?limit=50"
        for c in (1, 16):
            runs[f"GET /leaderboard, {c} conn"] = wrk(server.base, board, "plain", c, seconds, env)
            runs[f"GET /predict, {c} conn"] = wrk(server.base, "/", "predict", c, seconds, env)
        audit = httpx.get(server.base + "/v1/ladders/bench/audit", timeout=600).json()
        refits = [job["status"] for job in httpx.get(server.base + "/v1/ladders/bench/refits").json()]
    finally:
        server.stop()
    trivial, games = runs["trivial (GET /healthz)"], runs["POST /games"]
    return {
        "db": db,
        "seed_seconds": seeded,
        "runs": runs,
        "games_vs_trivial": games["rps"] / trivial["rps"],
        "audit": audit,
        "auto_refits": refits,
        "targets": {
            "games_vs_trivial": games["rps"] / trivial["rps"] >= TARGETS["games_vs_trivial"],
            "games_p99_ms": games["p99_ms"] < TARGETS["games_p99_ms"],
            "leaderboard_p50_ms": runs["GET /leaderboard, 1 conn"]["p50_ms"] < TARGETS["leaderboard_p50_ms"],
            "predict_p50_ms": runs["GET /predict, 1 conn"]["p50_ms"] < TARGETS["predict_p50_ms"],
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", nargs="+", choices=["sqlite", "postgresql"], default=["sqlite", "postgresql"])
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
                results.append(run(db, f"sqlite:///{tmp}/bench.db", args.players, args.seconds, args.auto_refit))
        else:
            pg = PostgresServer()
            pg.start()
            try:
                with psycopg.connect(pg.url(), autocommit=True) as conn:
                    conn.execute("CREATE DATABASE bench")
                results.append(run(db, pg.url("bench"), args.players, args.seconds, args.auto_refit))
            finally:
                pg.stop()

    print(f"\n{args.players:,} players, k = 1, one uvicorn worker, wrk -t1, {args.seconds} s per row\n")
    print("| db | request | conn | req/s | vs trivial | p50 ms | p99 ms | non-2xx |")
    print("|---|---|---|---|---|---|---|---|")
    for res in results:
        base = res["runs"]["trivial (GET /healthz)"]["rps"]
        for name, r in res["runs"].items():
            print(
                f"| {res['db']} | {name} | {r['connections']} | {r['rps']:,.0f} | {r['rps'] / base:.2f} "
                f"| {r['p50_ms']:.1f} | {r['p99_ms']:.1f} | {r['non_2xx'] + r['socket_errors']} |"
            )
    print()
    for res in results:
        audit = res["audit"]
        print(f"{res['db']}: audit consistent={audit['consistent']} over {audit['games']:,} games")
        print(f"{res['db']}: auto refits started during the run: {res['auto_refits'] or 'none'}")
        print(f"{res['db']}: targets met {res['targets']}")
    RESULTS.mkdir(exist_ok=True)
    out = {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
        "players": args.players,
        "seconds": args.seconds,
        "auto_refit": args.auto_refit,
        "targets": TARGETS,
        "results": results,
    }
    (RESULTS / "bench_api.json").write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
