"""Reads while games stream in: each read alone and under 16 connections posting games, at two ladder sizes.

    python -m bench.bench_mixed [--db sqlite postgresql] [--players 10000 100000] [--seconds 10]

For each database and ladder size: a fresh database and a ladder of
``--players`` players (k = 1, two games each through the bulk import, no auto
refit so every run sees the same work), one uvicorn worker on loopback, and
wrk in other processes (``make bench`` installs it):

* posts alone: 16 connections POST two-player games between random players;
* the first leaderboard page alone (4 connections), then while 16 connections
  post games; the same for predictions of random pairs;
* the posts' throughput while readers run is compared with posts alone;
* the 21 rows of the leaderboard around a player (``?around=``), quiet (``--only-around``: that alone, for
  1,000,000 players);
* the baseline: ``bench/trivial.py`` (an ``async def`` that touches nothing) served the same way, 16 connections.

Each ratio is taken within one run (the machines are shared and noisy).  The
worker's resident memory is read from /proc after the runs, and ``/audit``
must find the ratings consistent with the event log.  Prints a table and
writes bench/results/bench_mixed.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import tempfile
import threading
import time
from pathlib import Path

import httpx
import psycopg

from bench.bench_api import Server, seed_ladder, trivial_baseline, wrk
from devtools.postgres import PostgresServer

RESULTS = Path(__file__).parent / "results"
#: The issue's targets: fractions of each request's throughput alone, the leaderboard's p99 under writes, the
#: board around a player with nothing else running (p50; the issue names it at 1,000,000 players).
TARGETS = {
    "leaderboard_kept": 0.50,
    "leaderboard_p99_ms": 50.0,
    "predict_kept": 0.70,
    "posts_kept": 0.80,
    "around_p50_ms": 10.0,
}
READS = {"leaderboard": ("/v1/ladders/bench/leaderboard?limit=50", "plain"), "predict": ("/", "predict")}


def resident_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def descendants(pid: int) -> list[int]:
    """The processes a process started, and theirs (its writer, the server that forks writers)."""
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        for child in (task / "children").read_text().split():
            found += [int(child), *descendants(int(child))]
    return found


def proportional_mb(pid: int) -> float:
    """The process's share of memory (PSS): pages it shares with others count once among them."""
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
        if line.startswith("Pss:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def together(base: str, read: str, seconds: int, env: dict[str, str]) -> tuple[dict, dict]:
    """Posts (16 connections) and one kind of read (4 connections) at the same time: (posts, reads)."""
    path, mode = READS[read]
    out: dict[str, dict] = {}

    def posting() -> None:
        out["posts"] = wrk(base, "/", "games", 16, seconds, env)

    writer = threading.Thread(target=posting)
    writer.start()
    time.sleep(0.5)  # the posts are flowing before the readers start, and go on after they stop
    out["reads"] = wrk(base, path, mode, 4, seconds - 1, env)
    writer.join()
    return out["posts"], out["reads"]


def around_path(players: int) -> str:
    """The 21 rows of the default leaderboard centred on the player in the middle of the seeded ones."""
    return f"/v1/ladders/bench/leaderboard?limit=21&around=p{players // 2}"


def run(db: str, url: str, players: int, seconds: int, only_around: bool = False) -> dict:
    t = time.perf_counter()
    key = seed_ladder(url, players, auto_refit=False)
    seeded = time.perf_counter() - t
    trivial = trivial_baseline(1, seconds)  # the framework's limit on this machine, in this run
    server = Server(url, 1)
    env = {"MELO_WRITE_KEY": key, "MELO_PLAYERS": str(players), "MELO_LADDER": "bench"}
    runs: dict[str, dict] = {}
    try:
        # Warm-up: the worker has read the ladder and ranked it once (a million players take seconds: waited for).
        httpx.get(server.base + around_path(players), timeout=300).raise_for_status()
        for path, mode in [*READS.values(), (around_path(players), "plain")]:
            wrk(server.base, path, mode, 4, 1, env)
        runs["around alone"] = wrk(server.base, around_path(players), "plain", 4, seconds, env)
        if only_around:  # and the worker's memory once it has served the board (the 1.5 GB at a million)
            memory = resident_mb(server.proc.pid)
            return {
                "db": db,
                "players": players,
                "seed_seconds": seeded,
                "runs": runs,
                "only_around": True,
                "resident_mb": memory,
            }
        runs["posts alone"] = wrk(server.base, "/", "games", 16, seconds, env)
        for read, (path, mode) in READS.items():
            runs[f"{read} alone"] = wrk(server.base, path, mode, 4, seconds, env)
            posts, reads = together(server.base, read, seconds, env)
            runs[f"{read} with posts"], runs[f"posts with {read}"] = reads, posts
        memory = resident_mb(server.proc.pid)
        # The worker's own processes (its writer, and the server it forks writers from) share most pages with each
        # other: their proportional shares add up to what they take together.
        together_mb = sum(proportional_mb(p) for p in [server.proc.pid, *descendants(server.proc.pid)])
        audit = httpx.get(server.base + "/v1/ladders/bench/audit", timeout=600).json()
    finally:
        server.stop()
    kept = {
        "leaderboard": runs["leaderboard with posts"]["rps"] / runs["leaderboard alone"]["rps"],
        "predict": runs["predict with posts"]["rps"] / runs["predict alone"]["rps"],
        "posts": min(runs[f"posts with {r}"]["rps"] for r in READS) / runs["posts alone"]["rps"],
    }
    failed = sum(r["non_2xx"] + r["socket_errors"] for r in runs.values())
    return {
        "db": db,
        "players": players,
        "seed_seconds": seeded,
        "runs": runs,
        "kept": kept,
        "trivial_rps": trivial["rps"],
        "vs_trivial": {name: r["rps"] / trivial["rps"] for name, r in runs.items()},
        "resident_mb": memory,
        "with_writer_pss_mb": together_mb,
        "audit": audit,
        "targets": {
            "leaderboard_kept": kept["leaderboard"] >= TARGETS["leaderboard_kept"],
            "leaderboard_p99_ms": runs["leaderboard with posts"]["p99_ms"] < TARGETS["leaderboard_p99_ms"],
            "predict_kept": kept["predict"] >= TARGETS["predict_kept"],
            "posts_kept": kept["posts"] >= TARGETS["posts_kept"],
            "around_p50_ms": runs["around alone"]["p50_ms"] < TARGETS["around_p50_ms"],
            "audit_consistent": bool(audit["consistent"]),
            "no_errors": failed == 0,
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", nargs="+", choices=["sqlite", "postgresql"], default=["sqlite", "postgresql"])
    parser.add_argument("--players", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument(
        "--only-around", action="store_true", help="only the board around a player, quiet (for 1,000,000 players)"
    )
    args = parser.parse_args()
    if shutil.which("wrk") is None:
        raise SystemExit("wrk is not installed: apt-get install wrk (make bench does)")

    results = []
    for db in args.db:
        if db == "sqlite":
            for players in args.players:
                with tempfile.TemporaryDirectory() as tmp:
                    results.append(run(db, f"sqlite:///{tmp}/bench.db", players, args.seconds, args.only_around))
            continue
        pg = PostgresServer(fsync=True)
        pg.start()
        try:
            for players in args.players:
                name = f"mixed_{players}"
                with psycopg.connect(pg.url(), autocommit=True) as conn:
                    conn.execute(f"CREATE DATABASE {name}")
                results.append(run(db, pg.url(name), players, args.seconds, args.only_around))
        finally:
            pg.stop()

    print(f"\none uvicorn worker, k = 1, wrk -t1, {args.seconds} s per row; reads 4 connections, posts 16\n")
    print("| db | players | request | req/s | vs trivial | p50 ms | p99 ms | kept under the other load |")
    print("|---|---|---|---|---|---|---|---|")
    for res in results:
        for name, r in res["runs"].items():
            what = name.split()[0]
            kept = f"{res['kept'][what]:.2f}" if " with " in name and name.startswith(what) else ""
            vs = f"{res['vs_trivial'][name]:.2f}" if "vs_trivial" in res else ""
            print(
                f"| {res['db']} | {res['players']:,} | {name} | {r['rps']:,.0f} | {vs} "
                f"| {r['p50_ms']:.2f} "
                f"| {r['p99_ms']:.1f} | {kept} |"
            )
    print()
    for res in (res for res in results if res.get("only_around")):
        print(f"{res['db']}, {res['players']:,} players: resident memory {res['resident_mb']:.0f} MB")
    for res in (res for res in results if not res.get("only_around")):
        who = f"{res['db']}, {res['players']:,} players"
        print(
            f"{who}: resident memory {res['resident_mb']:.0f} MB (with its writer's processes, proportional set "
            f"{res['with_writer_pss_mb']:.0f} MB); audit consistent={res['audit']['consistent']}"
        )
        missed = [name for name, ok in res["targets"].items() if not ok]
        print(f"{who}: targets missed: {', '.join(missed) or 'none'}")
    RESULTS.mkdir(exist_ok=True)
    out = {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
        "seconds": args.seconds,
        "targets": TARGETS,
        "results": results,
    }
    name = "bench_mixed_around.json" if args.only_around else "bench_mixed.json"
    (RESULTS / name).write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
