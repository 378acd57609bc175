"""Game posts while a refit is applied: does applying one stall the writer?

    python bench/bench_apply.py [--db sqlite postgresql] [--players 10000] [--games 100000] [--seconds 8]
                                [--eta 4.0]

For each database: a fresh ladder of ``--players`` players and ``--games``
two-player games (k = 1, seeded through the bulk import, auto refit off),
uvicorn with one worker on loopback, and wrk posting games with 64
connections:

* **alone**: the posts, nothing else running (the baseline of this run);
* **manual apply**: a refit of the ladder is run to the end first, then, in
  the middle of the posts' window, ``POST …/refits/{id}/apply`` (its replay of
  the games posted since the refit runs in the server);
* **auto refit**: the ladder's auto refit is turned on and the posts run long
  enough for it to start, fit in its child process and apply itself.
  With ``--eta`` far from what the log chooses (4.0), the auto refit first
  applies the learning rate it chose, at once (the log replayed at the new
  rate from the latest checkpoint: mathematics §9).

Each window's p99 and slowest post are printed beside the baseline's, with
the apply's own duration; ``/audit`` must be consistent at the end and every
answer 2xx.  Writes bench/results/bench_apply.json (with ``--eta``:
bench_apply_new_rate.json).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.core.config import Settings
from app.core.db import Database
from app.core.migrate import upgrade
from app.domain.access import ladder_for_read
from app.games.apply import import_games
from app.games.schemas import GameIn
from app.ladders.schemas import LadderCreate
from app.ladders.service import create_ladder
from bench.bench_api import RESULTS, Server, wrk
from devtools.postgres import PostgresServer

#: The read-model issue's target: POST p99 at 64 connections while an auto refit is applied.
TARGET_P99_MS = 100.0


def seed(url: str, players: int, games: int, eta: float | None = None) -> str:
    upgrade(Settings(database_url=url).sqlalchemy_url)
    db = Database.from_settings(Settings(database_url=url))
    rng = np.random.default_rng(0)
    strength = rng.normal(size=players)
    i = rng.integers(0, players, games)
    j = (i + rng.integers(1, players, games)) % players
    first_wins = rng.random(games) < 1 / (1 + np.exp(strength[j] - strength[i]))
    rows = [
        GameIn.model_validate(
            {"sides": [{"players": [f"p{a}"], "rank": 1 if w else 2}, {"players": [f"p{b}"], "rank": 2 if w else 1}]}
        )
        for a, b, w in zip(i.tolist(), j.tolist(), first_wins.tolist(), strict=True)
    ]
    with db.writing() as session:
        rate = {} if eta is None else {"eta": eta}
        key = create_ladder(session, LadderCreate(slug="bench", k=1, auto_refit=False, **rate)).write_key
    with db.writing() as session:
        import_games(session, ladder_for_read(session, "bench", fresh=True), rows)
    if db.dialect == "postgresql":
        with db.write_engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
            connection.exec_driver_sql("ANALYZE")
    db.dispose()
    return key


def wait_for(base: str, location: str, timeout: float = 600) -> dict:
    deadline = time.time() + timeout
    while time.time() < deadline:
        job = httpx.get(base + location).json()
        if job["status"] in ("done", "rejected", "failed"):
            return job
        time.sleep(0.2)
    raise RuntimeError(f"refit still {job['status']}")


def posts_while(base: str, env: dict, seconds: int, during) -> tuple[dict, dict]:
    """wrk posting games for ``seconds`` with ``during()`` called in another thread a third of the way in."""
    out: dict = {}

    def later() -> None:
        time.sleep(seconds / 3)
        out.update(during())

    side = threading.Thread(target=later)
    side.start()
    posts = wrk(base, "/", "games", 64, seconds, env)
    side.join()
    return posts, out


def run(db: str, url: str, players: int, games: int, seconds: int, eta: float | None) -> dict:
    t = time.perf_counter()
    key = seed(url, players, games, eta)
    seeded = time.perf_counter() - t
    h = {"Authorization": f"Bearer {key}"}
    env = {"MELO_WRITE_KEY": key, "MELO_PLAYERS": str(players), "MELO_LADDER": "bench"}
    server = Server(url, 1)
    base = server.base + "/v1/ladders/bench"
    try:
        wrk(server.base, "/", "games", 64, 2, env)  # warm-up
        alone = wrk(server.base, "/", "games", 64, seconds, env)

        started = httpx.post(base + "/refits", json={"select_k": [1]}, headers=h)
        location = started.headers["location"]
        fitted = wait_for(server.base, location)
        assert fitted["status"] == "done", fitted

        def apply() -> dict:
            t0 = time.perf_counter()
            answer = httpx.post(server.base + location + "/apply", headers=h, timeout=120)
            return {"status": answer.status_code, "seconds": time.perf_counter() - t0} | answer.json()

        manual, applied = posts_while(server.base, env, seconds, apply)

        assert httpx.patch(base, json={"auto_refit": True}, headers=h).status_code == 200
        long = max(4 * seconds, 30)
        auto, _ = posts_while(server.base, env, long, dict)
        automatic = [job for job in httpx.get(base + "/refits").json()["items"] if job["params"].get("auto")]
        audit = httpx.get(base + "/audit", timeout=600).json()
    finally:
        server.stop()
    runs = {"alone": alone, "manual apply": manual, "auto refit": auto}
    failed = sum(r["non_2xx"] + r["socket_errors"] for r in runs.values())
    return {
        "db": db,
        "players": players,
        "games": games,
        "seed_seconds": seeded,
        "runs": runs,
        "manual_apply": applied,
        "auto_refits": [
            {k: job[k] for k in ("id", "status", "applied_at", "created_at", "finished_at")}
            | {"rate_applied": bool(((job.get("result") or {}).get("rate") or {}).get("applied"))}
            for job in automatic
        ],
        "audit_consistent": bool(audit["consistent"]),
        "no_errors": failed == 0,
        "target_p99_ms": TARGET_P99_MS,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--db", nargs="+", choices=["sqlite", "postgresql"], default=["sqlite", "postgresql"])
    parser.add_argument("--players", type=int, default=10_000)
    parser.add_argument("--games", type=int, default=100_000)
    parser.add_argument("--seconds", type=int, default=8)
    parser.add_argument("--eta", type=float, help="the ladder's learning rate (default: the ladders' default)")
    args = parser.parse_args()
    results = []
    for db in args.db:
        if db == "sqlite":
            with tempfile.TemporaryDirectory() as tmp:
                results.append(run(db, f"sqlite:///{tmp}/bench.db", args.players, args.games, args.seconds, args.eta))
        else:
            pg = PostgresServer(fsync=True)
            pg.start()
            try:
                url = pg.create_database("bench")
                results.append(run(db, url, args.players, args.games, args.seconds, args.eta))
            finally:
                pg.stop()
    print(f"\nPOST /games, 64 connections, one worker; {args.players:,} players, {args.games:,} games")
    print("| db | window | req/s | p50 ms | p99 ms | slowest ms | apply |")
    print("|---|---|---|---|---|---|---|")
    for r in results:
        applied = r["manual_apply"]
        autos = ", ".join(
            f"{'new rate, ' if job['rate_applied'] else ''}{job['status']}{' + applied' if job['applied_at'] else ''}"
            for job in r["auto_refits"]
        )
        notes = {
            "alone": "",
            "manual apply": f"{applied['seconds']:.2f} s, {applied.get('replayed_games')} games replayed",
            "auto refit": autos or "none started",
        }
        for name, w in r["runs"].items():
            print(
                f"| {r['db']} | {name} | {w['rps']:,.0f} | {w['p50_ms']:.1f} | {w['p99_ms']:.1f} | "
                f"{w['max_us'] / 1e3:.0f} | {notes[name]} |"
            )
        print(f"| {r['db']} | audit consistent: {r['audit_consistent']}, all 2xx: {r['no_errors']} | | | | | |")
    RESULTS.mkdir(exist_ok=True)
    out = {"machine": platform.platform(), "cpus": os.cpu_count(), "eta": args.eta, "results": results}
    name = "bench_apply.json" if args.eta is None else "bench_apply_new_rate.json"
    (RESULTS / name).write_text(json.dumps(out, indent=2, default=str))


if __name__ == "__main__":
    main()
