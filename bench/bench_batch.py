"""How long the largest batch a client may send holds the writer, against small games in the same run.

    python -m bench.bench_batch

A batch is one transaction that every other post waits for, so the API bounds
it by games (``MELO_MAX_BATCH_GAMES``) and by player appearances
(``MELO_MAX_BATCH_PLAYERS``, 20,000).  This applies, through the service and
into SQLite, the heaviest batch those limits allow (nine games of 64 sides of
32 players: 18,432 appearances, every pair of sides a pair term), and as the
baseline the same number of appearances as two-player games.  Prints a table
and writes bench/results/bench_batch.json.
"""

from __future__ import annotations

import json
import os
import platform
import tempfile
import time
from pathlib import Path

from app.core.config import Settings
from app.core.db import Database
from app.core.migrate import upgrade
from app.domain.access import Caller
from app.games.intake import Post
from app.games.posts import apply_posts
from app.games.schemas import GameIn
from app.ladders.schemas import LadderCreate
from app.ladders.service import create_ladder

RESULTS = Path(__file__).parent / "results"


def timed(db: Database, games: list[GameIn]) -> float:
    post = Post("bench", Caller(None, server_admin=True), games, None, "bench", batch=True)
    start = time.perf_counter()
    db.write(lambda session: apply_posts(session, [post]))
    return time.perf_counter() - start


def main() -> None:
    settings = Settings()
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{tmp}/batch.db"
        upgrade(url)
        db = Database.from_settings(Settings(database_url=url))
        with db.writing() as session:
            create_ladder(session, LadderCreate(slug="bench", k=2, auto_refit=False))
        big = [
            GameIn.model_validate(
                {"sides": [{"players": [f"g{g}s{s}p{p}" for p in range(32)], "rank": s + 1} for s in range(64)]}
            )
            for g in range(9)
        ]
        small = [
            GameIn.model_validate(
                {"sides": [{"players": [f"a{n % 500}"], "rank": 1}, {"players": [f"b{n % 500}"], "rank": 2}]}
            )
            for n in range(9 * 2048 // 2)
        ]
        rows = {
            "9 games of 64 sides × 32 players (18,432 appearances)": timed(db, big),
            "9,216 two-player games (18,432 appearances)": timed(db, small),
        }
        db.dispose()
    print(
        f"\nlimits: {settings.max_batch_games:,} games, {settings.max_batch_players:,} player appearances per batch\n"
    )
    print("| batch | seconds the writer is held |")
    print("|---|---|")
    for label, seconds in rows.items():
        print(f"| {label} | {seconds:.2f} |")
    RESULTS.mkdir(exist_ok=True)
    out = {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
        "rows": rows,
    }
    (RESULTS / "bench_batch.json").write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
