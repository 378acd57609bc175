"""Moments on a large ladder: what a read of ``GET …/moments`` costs, computed from the log on read.

    python -m bench.bench_moments [--games 100000] [--players 1000] [--db sqlite postgresql]

For each database: a fresh ladder (k = 1, auto refit off) of ``--games`` two-player games among ``--players``
players of latent strengths (the stronger wins as a logistic model says), one every 10 minutes of played time,
through the bulk import; then, in this process, the moments feed's service (its SQL included) timed five times
each, the median in milliseconds:

* the newest 50 moments (what the ladder page reads), and 5 (its feed);
* the 50 moments after a game 20 games back (``since``: what a page reads when a game arrives);
* the next 50 (a page further back, from the first page's cursor);
* one player's newest 50 (``player=``: the page looks through up to 500 games).

Prints a table and writes bench/results/bench_moments.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

from app.core.config import Settings
from app.core.db import Database
from app.core.migrate import upgrade
from app.domain.access import ladder_for_read
from app.games.apply import import_games
from app.games.schemas import GameIn
from app.ladders.schemas import LadderCreate
from app.ladders.service import create_ladder
from app.players.moment_feed import feed

RESULTS = Path(__file__).parent / "results"
CHUNK = 50_000
START = datetime(2024, 1, 1, tzinfo=UTC)


def seed(db: Database, games: int, players: int) -> None:
    with db.writing() as session:
        create_ladder(session, LadderCreate(slug="bench", k=1, auto_refit=False, seed=1))
    rng = np.random.default_rng(0)
    strength = rng.normal(0, 1.5, players)
    i = rng.integers(0, players, games)
    j = (i + rng.integers(1, players, games)) % players
    a_wins = rng.random(games) < 1 / (1 + np.exp(strength[j] - strength[i]))
    for lo in range(0, games, CHUNK):
        batch = [
            GameIn.model_validate(
                {
                    "sides": [
                        {"players": [f"p{a}"], "rank": 1 if won else 2},
                        {"players": [f"p{b}"], "rank": 2 if won else 1},
                    ],
                    "played_at": (START + timedelta(minutes=10 * (lo + n))).isoformat(),
                }
            )
            for n, (a, b, won) in enumerate(zip(*(x[lo : lo + CHUNK].tolist() for x in (i, j, a_wins)), strict=True))
        ]
        with db.writing() as session:
            import_games(session, ladder_for_read(session, "bench", fresh=True), batch)
    if db.dialect == "postgresql":  # the statistics autovacuum would gather, before anything is timed
        with db.write_engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
            connection.exec_driver_sql("ANALYZE")


def timed(db: Database, **params) -> tuple[float, float, int]:
    """The median milliseconds of five reads (after one to warm the caches), wall-clock and of this process's CPU
    (the SQLite reads included; a busy machine stretches the first, less the second), and the moments read."""
    times, cpu = [], []
    for attempt in range(6):
        t, c = time.perf_counter(), time.process_time()
        with db.reading() as session:
            page = feed(session, ladder_for_read(session, "bench"), **params)
        if attempt:
            times.append(1000 * (time.perf_counter() - t))
            cpu.append(1000 * (time.process_time() - c))
    return statistics.median(times), statistics.median(cpu), len(page.items)


def run(url: str, games: int, players: int) -> dict:
    upgrade(Settings(database_url=url).sqlalchemy_url)
    db = Database.from_settings(Settings(database_url=url))
    t = time.perf_counter()
    seed(db, games, players)
    print(f"  seeded in {time.perf_counter() - t:.0f} s", flush=True)
    base = {"cursor": None, "since": None, "player": None}
    first = None
    with db.reading() as session:
        first = feed(session, ladder_for_read(session, "bench"), 50, None, None, None)
    rows = {
        "newest 50": timed(db, limit=50, **base),
        "newest 5": timed(db, limit=5, **base),
        "since 20 games back": timed(db, limit=50, **(base | {"since": games - 20})),
        "next 50 (cursor)": timed(db, limit=50, **(base | {"cursor": first.next_cursor})),
        "one player's 50": timed(db, limit=50, **(base | {"player": "p7"})),
    }
    db.dispose()
    return {name: {"ms": round(ms, 1), "cpu_ms": round(cpu, 1), "moments": n} for name, (ms, cpu, n) in rows.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=100_000)
    parser.add_argument("--players", type=int, default=1000)
    parser.add_argument("--db", nargs="+", default=["sqlite", "postgresql"])
    args = parser.parse_args()
    results: dict = {"games": args.games, "players": args.players, "machine": platform.processor() or "?"}
    with tempfile.TemporaryDirectory() as tmp:
        for kind in args.db:
            print(kind, flush=True)
            if kind == "sqlite":
                results[kind] = run(f"sqlite:///{tmp}/bench.db", args.games, args.players)
            else:
                from devtools.postgres import PostgresServer

                server = PostgresServer()
                server.start()
                try:
                    results[kind] = run(server.create_database("bench"), args.games, args.players)
                finally:
                    server.stop()
    print(f"{'read':24} " + " ".join(f"{kind + ' wall / cpu ms (moments)':>34}" for kind in args.db))
    for name in results[args.db[0]]:
        rows = [results[kind][name] for kind in args.db]
        cells = [f"{r['ms']:>7.1f} / {r['cpu_ms']:>6.1f} ({r['moments']:>3})" for r in rows]
        print(f"{name:24} " + " ".join(f"{c:>34}" for c in cells))
    results["load_average"] = os.getloadavg()
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "bench_moments.json").write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
