"""Standings as of a date on a large ladder: what ``?as_of=`` costs beside today's table.

    python -m bench.bench_as_of [--games 1000000] [--players 100000] [--db sqlite postgresql]

For each database: a fresh ladder (k = 1, auto refit off) of ``--games`` two-player games among ``--players``
players through the bulk import, one every minute of played time, then one uvicorn worker on loopback:

* today's first leaderboard page (the baseline: the worker's copy of the ladder, ranked once), then again
  (cached);
* ``leaderboard?as_of=`` at 10%, 50% and 90% of the log and after its newest game; ``players/{key}?as_of=`` at
  40% (a date no table was built for): seconds each (every past table is built from the log: its cost grows
  with the games before the date);
* ``/healthz`` probed every 100 ms throughout: the slowest answer (the past tables are built off the event loop).

Prints a table and writes bench/results/bench_as_of.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time
from datetime import UTC, datetime, timedelta
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
from bench.bench_api import Server
from bench.bench_million import Probe
from devtools.postgres import PostgresServer

RESULTS = Path(__file__).parent / "results"
CHUNK = 200_000
START = datetime(2025, 1, 1, tzinfo=UTC)


def seed(url: str, games: int, players: int) -> float:
    """The ``bench`` ladder: ``games`` games, one a minute from START; the games imported per second."""
    upgrade(Settings(database_url=url).sqlalchemy_url)
    db = Database.from_settings(Settings(database_url=url))
    with db.writing() as session:
        create_ladder(session, LadderCreate(slug="bench", k=1, auto_refit=False))
    rng = np.random.default_rng(0)
    i = rng.integers(0, players, games)
    j = (i + rng.integers(1, players, games)) % players
    seconds = 0.0
    for lo in range(0, games, CHUNK):
        batch = [
            GameIn.model_validate(
                {
                    "sides": [{"players": [f"p{a}"], "rank": 1}, {"players": [f"p{b}"], "rank": 2}],
                    "played_at": (START + timedelta(minutes=lo + n)).isoformat(),
                }
            )
            for n, (a, b) in enumerate(zip(i[lo : lo + CHUNK].tolist(), j[lo : lo + CHUNK].tolist(), strict=True))
        ]
        t = time.perf_counter()
        with db.writing() as session:
            import_games(session, ladder_for_read(session, "bench", fresh=True), batch)
        seconds += time.perf_counter() - t
    if db.dialect == "postgresql":
        with db.write_engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
            connection.exec_driver_sql("ANALYZE")
    db.dispose()
    return games / seconds


def timed(client: httpx.Client, path: str, **params) -> float:
    t = time.perf_counter()
    r = client.get(path, params=params)
    r.raise_for_status()
    return time.perf_counter() - t


def run(url: str, games: int, players: int) -> dict:
    rate = seed(url, games, players)
    server = Server(url)
    probe = Probe(server.base)
    probe.start()
    out: dict = {"games": games, "players": players, "import_games_per_s": rate}
    board = "/v1/ladders/bench/leaderboard"
    try:
        with httpx.Client(base_url=server.base, timeout=600) as client:
            probe.phase = "today"
            out["today_first_s"] = timed(client, board, by="conservative")
            out["today_cached_s"] = timed(client, board, by="conservative")
            for share in (0.1, 0.5, 0.9, 1.5):
                probe.phase = f"as_of {share:.0%}"
                moment = (START + timedelta(minutes=int(share * games))).isoformat()
                out[f"as_of_{share:.0%}_s"] = timed(client, board, by="conservative", as_of=moment)
            probe.phase = "profile as_of 40%"  # a date no table was built for: a pass over the log of its own
            moment = (START + timedelta(minutes=int(0.4 * games))).isoformat()
            out["profile_as_of_40%_s"] = timed(client, "/v1/ladders/bench/players/p1", as_of=moment)
    finally:
        probe.done.set()
        server.stop()
    out["healthz_max_ms"] = probe.worst
    out["healthz_max_ms_by_phase"] = probe.by_phase
    return out


def table(db: str, r: dict) -> str:
    rows = [("today's first page (baseline)", r["today_first_s"])]
    rows += [("today's page again (cached)", r["today_cached_s"])]
    rows += [(f"as_of at {share} of the log", r[f"as_of_{share}_s"]) for share in ("10%", "50%", "90%")]
    rows += [("as_of after the newest game", r["as_of_150%_s"]), ("profile as_of at 40%", r["profile_as_of_40%_s"])]
    lines = [f"\n{db}: {r['games']:,} games, {r['players']:,} players (healthz max {r['healthz_max_ms']:.0f} ms)\n"]
    lines += ["| request | seconds | × today's first page |", "|---|---|---|"]
    lines += [f"| {name} | {s:.2f} | {s / r['today_first_s']:.2f} |" for name, s in rows]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", nargs="+", choices=["sqlite", "postgresql"], default=["sqlite", "postgresql"])
    parser.add_argument("--games", type=int, default=1_000_000)
    parser.add_argument("--players", type=int, default=100_000)
    args = parser.parse_args()
    out = {"machine": {"cpus": os.cpu_count(), "python": platform.python_version()}, "results": {}}
    for db in args.db:
        pg = None
        if db == "postgresql":
            pg = PostgresServer(fsync=True)
            pg.start()
        try:
            with tempfile.TemporaryDirectory() as tmp:
                if pg is None:
                    url = f"sqlite:///{tmp}/bench.db"
                else:
                    url = pg.url("as_of")
                    with psycopg.connect(pg.url(), autocommit=True) as conn:
                        conn.execute("CREATE DATABASE as_of")
                out["results"][db] = run(url, args.games, args.players)
            print(table(db, out["results"][db]), flush=True)
        finally:
            if pg is not None:
                pg.stop()
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "bench_as_of.json").write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
