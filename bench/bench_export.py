"""Export and restore throughput and peak memory on SQLite, against baselines measured in the same run.

    python -m bench.bench_export [--games 100000 1000000] [--players 10000]

For each size, imports that many random two-player games over ``--players``
players into a fresh SQLite ladder (``melo import``, the baseline for the
restore), then times, each as its own process:

* ``melo export`` to a file, and ``GET /v1/ladders/{slug}/export`` streamed
  from a uvicorn server over real HTTP (the server's peak memory is read from
  /proc before and after);
* the read floor: the same rows (``SELECT … FROM games``) fetched with plain
  ``sqlite3``, no JSON: no export can beat it;
* ``melo import`` of the export into a new ladder, checked bit for bit.

Peak memory is each process's maximum resident set, which includes SQLite's
page cache (capped per connection); the Python heap peak of an in-process
export is measured too: flat across sizes means bounded.  Prints a table and writes bench/results/bench_export.json.
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
import tracemalloc
from pathlib import Path

import httpx

from bench.bench_api import Server
from bench.bench_import import write_games

ROOT = Path(__file__).resolve().parent.parent

RESULTS = Path(__file__).parent / "results"
MELO = [sys.executable, "-m", "app.cli"]


def run(args: list[str], env: dict) -> tuple[float, float]:
    """Seconds and peak resident MB of one process."""
    start = time.perf_counter()
    process = subprocess.Popen(args, env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - start
    if status != 0:
        raise SystemExit(f"{' '.join(args)} failed: {process.stderr.read().decode()}")
    return seconds, usage.ru_maxrss / 1024


def python_heap_mb(url: str) -> float:
    """Peak Python heap (tracemalloc) of an in-process export to nowhere: SQLite's page cache, which the process's
    resident peak includes and which is capped per connection (app.core.db.SQLITE_CACHE_KIB), is not in it."""
    from app.backups.service import export_lines
    from app.core.config import Settings
    from app.core.db import Database
    from app.domain.access import ladder_for_read

    db = Database.from_settings(Settings(database_url=url))
    tracemalloc.start()
    with db.snapshot() as session:
        for _ in export_lines(session, ladder_for_read(session, "bench", fresh=True)):
            pass
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    db.dispose()
    return peak / 1e6


def read_floor(db: Path) -> float:
    start = time.perf_counter()
    with sqlite3.connect(db) as conn:
        cursor = conn.execute("SELECT id, seq, external_id, played_at, payload, voided_at FROM games ORDER BY id")
        while cursor.fetchmany(5000):
            pass
    return time.perf_counter() - start


def http_export(url: str, out: Path) -> tuple[float, float, float]:
    """Seconds of a streamed GET …/export, and the server's peak resident MB before and after it."""
    server = Server(url)
    try:
        before = peak_mb(server.proc.pid)
        start = time.perf_counter()
        with out.open("wb") as f, httpx.stream("GET", server.base + "/v1/ladders/bench/export", timeout=600) as r:
            for chunk in r.iter_raw():
                f.write(chunk)
        return time.perf_counter() - start, before, peak_mb(server.proc.pid)
    finally:
        server.stop()


def peak_mb(pid: int) -> float:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(next(line for line in status.splitlines() if line.startswith("VmHWM")).split()[1]) / 1024


def one_size(games: int, players: int, tmp: Path) -> dict:
    db = tmp / f"export-{games}.db"
    env = os.environ | {"MELO_DATABASE_URL": f"sqlite:///{db}"}
    source = tmp / "games.jsonl"
    write_games(source, games, players)
    subprocess.run([*MELO, "create-ladder", "bench", "--k", "1", "--no-auto-refit"], env=env, cwd=ROOT, check=True,
                   stdout=subprocess.DEVNULL)  # fmt: skip
    imported = run([*MELO, "import", "bench", str(source)], env)
    exported = run([*MELO, "export", "bench", "-o", str(tmp / "cli.ndjson")], env)
    http = http_export(env["MELO_DATABASE_URL"], tmp / "http.ndjson")
    floor = read_floor(db)
    heap = python_heap_mb(env["MELO_DATABASE_URL"])
    restored = run([*MELO, "import", "copy", str(tmp / "cli.ndjson")], env)
    same_file = (tmp / "cli.ndjson").read_bytes() == (tmp / "http.ndjson").read_bytes()
    with sqlite3.connect(db) as conn:
        vectors = conn.execute(
            "SELECT count(*) FROM players a JOIN players b ON a.key = b.key AND a.ladder_id < b.ladder_id "
            "WHERE a.vector = b.vector"
        ).fetchone()[0]
    size_mb = (tmp / "cli.ndjson").stat().st_size / 1e6
    for path in (db, source, tmp / "cli.ndjson", tmp / "http.ndjson"):
        path.unlink()
    return {
        "games": games,
        "export_mb": size_mb,
        "melo import (baseline)": {"seconds": imported[0], "peak_mb": imported[1]},
        "melo export": {"seconds": exported[0], "peak_mb": exported[1]},
        "GET …/export": {"seconds": http[0], "server_peak_mb_before": http[1], "server_peak_mb_after": http[2]},
        "read floor (sqlite3)": {"seconds": floor},
        "melo import of the export": {"seconds": restored[0], "peak_mb": restored[1]},
        "http_equals_cli": same_file,
        "export_python_heap_peak_mb": heap,
        "players_bit_for_bit": vectors,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--players", type=int, default=10_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as name:
        results = [one_size(games, args.players, Path(name)) for games in args.games]
    print("\n| games | step | seconds | games/s | peak MB |")
    print("|---|---|---|---|---|")
    for r in results:
        for step in ("read floor (sqlite3)", "melo export", "GET …/export", "melo import (baseline)",
                     "melo import of the export"):  # fmt: skip
            m = r[step]
            peak = m.get("peak_mb", m.get("server_peak_mb_after"))
            shown = f"{peak:,.0f}" if peak is not None else ""
            print(f"| {r['games']:,} | {step} | {m['seconds']:.1f} | {r['games'] / m['seconds']:,.0f} | {shown} |")
    for r in results:
        print(f"\n{r['games']:,} games: export {r['export_mb']:,.0f} MB; HTTP and CLI exports identical: "
              f"{r['http_equals_cli']}; restored players equal bit for bit: {r['players_bit_for_bit']:,}; "
              f"server peak {r['GET …/export']['server_peak_mb_before']:,.0f} MB before the export; Python heap "
              f"peak of an export {r['export_python_heap_peak_mb']:,.1f} MB")  # fmt: skip
    RESULTS.mkdir(exist_ok=True)
    out = {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
        "players": args.players,
        "results": results,
    }
    (RESULTS / "bench_export.json").write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
