"""`melo import` throughput into SQLite, end to end, against two baselines measured in the same run.

    python -m bench.bench_import [--games 1000000] [--players 10000] [--per-game 3000]

Writes ``--games`` random two-player games over ``--players`` players as the
API's JSON lines, then times, each in a fresh SQLite database:

* ``melo import`` as a subprocess: parse and validate every line, replay,
  write the log, the rating history and the players (all or nothing);
* the database floor: the same rows (1 game + 2 participant rows per game)
  inserted with plain ``sqlite3.executemany`` into the migrated schema, with
  no parsing, validation or rating: no import can beat it;
* the per-game path: the same games posted one transaction each through the
  service (what ``POST /games`` does behind HTTP), on the first ``--per-game``.

Prints a table and writes bench/results/bench_import.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sqlite3
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from app.core.config import Settings
from app.core.db import Database
from app.core.migrate import upgrade
from app.domain.access import Caller
from app.games.intake import Post
from app.games.posts import apply_posts
from app.games.schemas import GameIn

ROOT = Path(__file__).resolve().parent.parent

RESULTS = Path(__file__).parent / "results"
MELO = [sys.executable, "-m", "app.cli"]
TARGET_GAMES_PER_S = 40_000


def write_games(path: Path, games: int, players: int) -> list[tuple[int, int, int]]:
    rng = np.random.default_rng(0)
    i = rng.integers(0, players, games)
    j = (i + rng.integers(1, players, games)) % players
    outcome = rng.integers(0, 3, games)
    ranks = ((1, 2), (2, 1), (1, 1))
    with path.open("w") as f:
        for a, b, o in zip(i.tolist(), j.tolist(), outcome.tolist(), strict=True):
            ra, rb = ranks[o]
            f.write(f'{{"sides": [{{"players": ["p{a}"], "rank": {ra}}}, {{"players": ["p{b}"], "rank": {rb}}}]}}\n')
    return list(zip(i.tolist(), j.tolist(), outcome.tolist(), strict=True))


def fresh_database(tmp: Path, name: str) -> tuple[str, str]:
    """A new database with the ``bench`` ladder (k = 1); its URL and write key."""
    url = f"sqlite:///{tmp / name}"
    env = os.environ | {"MELO_DATABASE_URL": url}
    subprocess.run([*MELO, "migrate"], env=env, check=True, capture_output=True, cwd=ROOT)  # the CLI makes none
    cmd = [*MELO, "create-ladder", "bench", "--k", "1"]
    out = subprocess.run(cmd, env=env, check=True, capture_output=True, cwd=ROOT, text=True).stdout
    return url, json.loads(out)["write_key"]


def melo_import(tmp: Path, path: Path) -> float:
    url, _ = fresh_database(tmp, "import.db")
    start = time.perf_counter()
    env = os.environ | {"MELO_DATABASE_URL": url}
    cmd = [*MELO, "import", "bench", str(path), "--no-refit"]  # the import alone, not the auto refit it makes due
    subprocess.run(cmd, env=env, check=True, capture_output=True, cwd=ROOT)
    return time.perf_counter() - start


def database_floor(tmp: Path, games: list[tuple[int, int, int]], players: int) -> float:
    """The import's rows written with nothing but sqlite3.executemany (players created beforehand)."""
    url = f"sqlite:///{tmp / 'floor.db'}"
    upgrade(Settings(database_url=url).sqlalchemy_url)
    db = sqlite3.connect(tmp / "floor.db", isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    db.execute("PRAGMA cache_size=-262144")
    now = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")
    blob = np.zeros(2).tobytes()
    db.execute("INSERT INTO ladders (slug, k, eta, init_scale, seed, auto_create_players, write_key_hash, created_at) "
               "VALUES ('bench', 1, 0.1, 0.1, 0, 1, '', ?)", (now,))  # fmt: skip
    db.executemany(
        "INSERT INTO players (ladder_id, key, initial, vector, games, wins, draws, losses, comparisons, created_at) "
        "VALUES (1, ?, ?, ?, 0, 0, 0, 0, 0, ?)",
        [(f"p{n}", blob, blob, now) for n in range(players)],
    )
    start = time.perf_counter()
    db.execute("BEGIN IMMEDIATE")
    payload = '{"sides": [["p1"], ["p2"]], "ranks": [1.0, 2.0], "advantages": null}'
    db.executemany(
        "INSERT INTO games (id, seq, ladder_id, external_id, played_at, created_at, payload) "
        "VALUES (?, ?, 1, NULL, ?, ?, ?)",
        ((g + 1, g + 1, now, now, payload) for g in range(len(games))),
    )
    db.executemany(
        "INSERT INTO participants (game_id, player_id, ladder_id, side, before, after, actual_score, expected_score) "
        "VALUES (?, ?, 1, ?, ?, ?, ?, ?)",
        ((g + 1, p + 1, s, blob, blob, 0.5, 0.5) for g, (a, b, _) in enumerate(games) for s, p in enumerate((a, b))),
    )
    db.execute("COMMIT")
    seconds = time.perf_counter() - start
    db.close()
    return seconds


def per_game(tmp: Path, games: list[tuple[int, int, int]]) -> float:
    url, key = fresh_database(tmp, "per-game.db")
    db = Database.from_settings(Settings(database_url=url))
    ranks = ((1, 2), (2, 1), (1, 1))
    bodies = [
        GameIn.model_validate(
            {"sides": [{"players": [f"p{a}"], "rank": ranks[o][0]}, {"players": [f"p{b}"], "rank": ranks[o][1]}]}
        )
        for a, b, o in games
    ]
    start = time.perf_counter()
    for body in bodies:
        with db.writing() as session:
            apply_posts(session, [Post("bench", Caller(key), [body], None, "", batch=False)])
    seconds = time.perf_counter() - start
    db.dispose()
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", type=int, default=1_000_000)
    parser.add_argument("--players", type=int, default=10_000)
    parser.add_argument("--per-game", type=int, default=3_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        path = tmp / "games.jsonl"
        games = write_games(path, args.games, args.players)
        rows = {
            "melo import (end to end)": (args.games, melo_import(tmp, path)),
            "database floor (sqlite3.executemany)": (args.games, database_floor(tmp, games, args.players)),
            "per-game transactions (service)": (args.per_game, per_game(tmp, games[: args.per_game])),
        }
    rate = {name: n / s for name, (n, s) in rows.items()}
    base = rate["melo import (end to end)"]
    print(f"\n{args.games:,} two-player games over {args.players:,} players into SQLite\n")
    print("| path | games | seconds | games/s | vs melo import |")
    print("|---|---|---|---|---|")
    for name, (n, s) in rows.items():
        print(f"| {name} | {n:,} | {s:.1f} | {rate[name]:,.0f} | {rate[name] / base:.2f} |")
    reached = base >= TARGET_GAMES_PER_S
    print(f"\ntarget {TARGET_GAMES_PER_S:,} games/s end to end: {'reached' if reached else 'not reached'}")
    RESULTS.mkdir(exist_ok=True)
    out = {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
        "games": args.games,
        "players": args.players,
        "rows": {name: {"games": n, "seconds": s, "games_per_s": rate[name]} for name, (n, s) in rows.items()},
        "target_games_per_s": TARGET_GAMES_PER_S,
        "reached": reached,
    }
    (RESULTS / "bench_import.json").write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
