"""How long voiding a game takes on a large ladder, against a bare replay of the same log in the same run.

    python -m bench.bench_void [--games 1000000] [--players 10000]

Imports ``--games`` random two-player games over ``--players`` players into a
fresh SQLite ladder (k = 1, the service's import path), then voids, through
the service, the latest game (an undo), a game 100 games before the end (few
later games to replay and rewrite) and the tenth game (nearly the whole log is
reached), each in its own write transaction, and checks ``/audit``'s replay
afterwards.  The baseline is
:func:`app.rating.replay` of the whole log in memory: the floor of any void
that replays it.  Prints a table and writes bench/results/bench_void.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sqlite3
import tempfile
import time
from pathlib import Path

from app import rating, storage
from app.core.config import Settings
from app.core.db import Database
from app.core.migrate import upgrade
from app.domain.access import ladder_for_read
from app.games.apply import import_games
from app.games.schemas import GameIn
from app.games.voiding import void_game
from app.ladders.schemas import LadderCreate
from app.ladders.service import audit, create_ladder
from bench.bench_import import write_games

RESULTS = Path(__file__).parent / "results"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", type=int, default=1_000_000)
    parser.add_argument("--players", type=int, default=10_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        url = f"sqlite:///{tmp / 'void.db'}"
        upgrade(Settings(database_url=url).sqlalchemy_url)
        db = Database.from_settings(Settings(database_url=url))
        write_games(tmp / "games.jsonl", args.games, args.players)
        games = [GameIn.model_validate_json(line) for line in (tmp / "games.jsonl").read_bytes().splitlines()]
        with db.writing() as session:
            create_ladder(session, LadderCreate(slug="bench", k=1, auto_refit=False))
        start = time.perf_counter()
        with db.writing() as session:
            import_games(session, ladder_for_read(session, "bench", fresh=True), games)
        imported = time.perf_counter() - start
        del games
        with sqlite3.connect(tmp / "void.db") as conn:  # the import's WAL, copied back now, not by the next write
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

        with db.reading() as session:
            ladder = ladder_for_read(session, "bench", fresh=True)
            state = storage.log.read(session, ladder)
        start = time.perf_counter()
        rating.replay(state.start, state.log, rating.LearningRate(ladder.eta, ladder.eta_tau), games0=state.start_games)
        replay = time.perf_counter() - start
        with db.reading() as session:  # the games' numbers in the ladder: what a void names
            ids = [storage.games.number_of(session, ladder.id, int(g)) for g in state.game_ids[[-1, -100, 9]]]
        del state

        rows = {"replay of the whole log in memory (floor)": (args.games, replay)}
        steps = (("void the latest game", 0, 0), ("void a game 100 before the end", 1, 99))
        for label, n, later in (*steps, ("void the 10th game", 2, args.games - 10)):
            start = time.perf_counter()
            db.write(lambda session, g=ids[n]: void_game(session, ladder, g, "bench", "bench"))
            rows[label] = (later, time.perf_counter() - start)
        with db.snapshot() as session:
            consistent = audit(session, ladder).consistent
        db.dispose()

    print(f"\n{args.games:,} two-player games over {args.players:,} players in SQLite (import took {imported:.1f} s)\n")
    print("| step | later games in the log | seconds | vs replay |")
    print("|---|---|---|---|")
    for label, (n, seconds) in rows.items():
        print(f"| {label} | {n:,} | {seconds:.2f} | {seconds / replay:.1f} |")
    print(f"\n/audit after the voids: consistent={consistent}")
    RESULTS.mkdir(exist_ok=True)
    out = {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
        "games": args.games,
        "players": args.players,
        "import_seconds": imported,
        "rows": {label: {"later_games": n, "seconds": s} for label, (n, s) in rows.items()},
        "audit_consistent": consistent,
    }
    (RESULTS / "bench_void.json").write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
