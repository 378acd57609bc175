"""The event stream under load: 50 listeners while games are posted, against posts with nobody listening.

    python -m bench.bench_events [--listeners 50] [--rate 500] [--seconds 10] [--players 1000]

One uvicorn worker over SQLite and a ladder of ``--players`` players (k = 1,
two games each through the bulk import), on loopback; wrk posts two-player
games between random players in another process, and the listeners (each an
SSE connection to ``GET …/events``, as an open ladder page holds) read in a
third.  Rows:

* the baseline: ``bench/trivial.py`` (an ``async def`` that touches nothing) served the same way, 16 connections;
* posts as fast as 16 connections go, nobody listening; then the same with the listeners: the ratio is the
  issue's "POST throughput stays ≥ 90% of what it is with no pages open";
* posts paced at ``--rate`` games/s (wrk's per-connection delay) with the listeners: every listener must get
  every game committed while it listened exactly once, and each within 2 s of its commit (the game's
  ``played_at``, set by the server at its commit, to the moment its event is read).

Prints a table and writes bench/results/bench_events.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import platform
import re
import shutil
import tempfile
import time
from datetime import datetime
from pathlib import Path

import httpx
import numpy as np

from bench.bench_api import Server, seed_ladder, trivial_baseline, wrk

RESULTS = Path(__file__).parent / "results"
TARGETS = {"posts_kept": 0.90, "max_delay_s": 2.0}
GAME = re.compile(rb'event: game\ndata: \{"version":\d+,"game":\{"id":(\d+),"seq":\d+,"played_at":"([^"]+)"')


def listen(base: str, n: int, seconds: float, ready, out) -> None:
    """``n`` listeners for ``seconds``: each one's (game id, seconds from its commit to its arrival) pairs."""

    async def one(client: httpx.AsyncClient, seen: list) -> None:
        async with client.stream("GET", base + "/v1/ladders/bench/events") as response:
            buffer = b""
            async for chunk in response.aiter_bytes():
                now = time.time()
                buffer += chunk
                events, _, buffer = buffer.rpartition(b"\n\n")
                for match in GAME.finditer(events):
                    played = datetime.fromisoformat(match.group(2).decode().replace("Z", "+00:00")).timestamp()
                    seen.append((int(match.group(1)), now - played))

    async def main() -> list[list]:
        seen: list[list] = [[] for _ in range(n)]
        async with httpx.AsyncClient(timeout=httpx.Timeout(10, read=60)) as client:
            tasks = [asyncio.create_task(one(client, seen[i])) for i in range(n)]
            await asyncio.sleep(1.0)  # every listener connected and past its hello
            ready.set()
            await asyncio.sleep(seconds)
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        return seen

    seen = asyncio.run(main())
    out.put((seen, time.process_time()))


class Listeners:
    def __init__(self, base: str, n: int, seconds: float) -> None:
        context = multiprocessing.get_context("spawn")
        self.ready, self.out = context.Event(), context.Queue()
        self.proc = context.Process(target=listen, args=(base, n, seconds, self.ready, self.out))
        self.proc.start()
        if not self.ready.wait(30):
            raise RuntimeError("the listeners did not connect")

    def results(self) -> tuple[list[list], float]:
        """What each listener read, and the CPU seconds the listeners' process used (on the same machine)."""
        seen, cpu = self.out.get(timeout=120)
        self.proc.join(timeout=30)
        return seen, cpu


def cpu_seconds(pid: int) -> float:
    """User and system CPU time a process (all its threads) has used."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def games(base: str) -> int:
    return httpx.get(base + "/v1/ladders/bench").json()["games"]


def posts(server: Server, name: str, runs: dict, env: dict, seconds: int, connections: int = 16) -> None:
    """One wrk run of game posts into ``runs[name]``, with the server's CPU milliseconds per game."""
    before, cpu = games(server.base), cpu_seconds(server.proc.pid)
    runs[name] = wrk(server.base, "/", "games", connections, seconds, env)
    runs[name]["server_cpu_ms_per_game"] = 1000 * (cpu_seconds(server.proc.pid) - cpu) / (games(server.base) - before)


def delivery(seen: list[list], first: int, last: int) -> dict:
    """Whether each listener got each game of ``first..last`` once, and how long after its commit."""
    expected = set(range(first, last + 1))
    missing = duplicates = 0
    delays = []
    for events in seen:
        ids = [game_id for game_id, _ in events if first <= game_id <= last]
        duplicates += len(ids) - len(set(ids))
        missing += len(expected - set(ids))
        delays += [delay for game_id, delay in events if first <= game_id <= last]
    d = np.array(delays) if delays else np.array([np.nan])
    return {
        "games": len(expected),
        "events": len(delays),
        "missing": missing,
        "duplicates": duplicates,
        "delay_p50_s": float(np.percentile(d, 50)),
        "delay_p99_s": float(np.percentile(d, 99)),
        "delay_max_s": float(d.max()),
    }


def run(players: int, listeners: int, rate: int, seconds: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{tmp}/bench.db"
        key = seed_ladder(url, players, auto_refit=False)
        runs = {"trivial async endpoint, 16 conn": trivial_baseline(1, seconds)}
        server = Server(url, 1)
        env = {"MELO_WRITE_KEY": key, "MELO_PLAYERS": str(players), "MELO_LADDER": "bench"}
        try:
            wrk(server.base, "/", "games", 16, 2, env)  # warm-up
            posts(server, "POST /games, 16 conn, nobody listening", runs, env, seconds)
            crowd = Listeners(server.base, listeners, seconds + 4)
            first = games(server.base) + 1
            posts(server, f"POST /games, 16 conn, {listeners} listening", runs, env, seconds)
            last = games(server.base)
            seen, listeners_cpu = crowd.results()
            flat_out = delivery(seen, first, last) | {"listeners_cpu_s": listeners_cpu}

            # Paced: each connection waits between its posts so that together they post about ``rate`` a second
            # (less the post's own latency, some 15 ms here).
            connections = 32
            paced = env | {"MELO_DELAY_MS": str(max(0, int(1000 * connections / rate) - 15))}
            crowd = Listeners(server.base, listeners, seconds + 4)
            first = games(server.base) + 1
            posts(server, f"POST /games paced at ~{rate}/s, {listeners} listening", runs, paced, seconds, connections)
            last = games(server.base)
            seen, listeners_cpu = crowd.results()
            steady = delivery(seen, first, last) | {"listeners_cpu_s": listeners_cpu}
            audit = httpx.get(server.base + "/v1/ladders/bench/audit", timeout=600).json()
        finally:
            server.stop()
    alone = runs["POST /games, 16 conn, nobody listening"]["rps"]
    kept = runs[f"POST /games, 16 conn, {listeners} listening"]["rps"] / alone
    base = runs["trivial async endpoint, 16 conn"]["rps"]
    return {
        "runs": runs,
        "vs_trivial": {name: r["rps"] / base for name, r in runs.items()},
        "posts_kept": kept,
        "delivery_flat_out": flat_out,
        "delivery_steady": steady,
        "audit_consistent": bool(audit["consistent"]),
        "targets": {
            "posts_kept": kept >= TARGETS["posts_kept"],
            "none_lost_or_twice": all(d["missing"] == 0 and d["duplicates"] == 0 for d in (flat_out, steady)),
            "max_delay_s": steady["delay_max_s"] <= TARGETS["max_delay_s"],
            "no_errors": sum(r["non_2xx"] + r["socket_errors"] for r in runs.values()) == 0,
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--listeners", type=int, default=50)
    parser.add_argument("--rate", type=int, default=500, help="games per second of the paced run")
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--players", type=int, default=1000)
    args = parser.parse_args()
    if shutil.which("wrk") is None:
        raise SystemExit("wrk is not installed: apt-get install wrk (make bench does)")
    res = run(args.players, args.listeners, args.rate, args.seconds)
    print(f"\n{args.players:,} players, SQLite, one worker, wrk -t1, {args.seconds} s per row\n")
    print("| request | req/s | vs trivial | p50 ms | p99 ms | non-2xx | server CPU ms/game |")
    print("|---|---|---|---|---|---|---|")
    for name, r in res["runs"].items():
        cpu = f"{r['server_cpu_ms_per_game']:.2f}" if "server_cpu_ms_per_game" in r else ""
        print(
            f"| {name} | {r['rps']:,.0f} | {res['vs_trivial'][name]:.2f} | {r['p50_ms']:.2f} | {r['p99_ms']:.1f} "
            f"| {r['non_2xx'] + r['socket_errors']} | {cpu} |"
        )
    print(f"\nposts with {args.listeners} listening / nobody listening: {res['posts_kept']:.2f}\n")
    print("| run | games | events read | missing | twice | delay p50 s | p99 s | max s | listeners' CPU s |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name in ("delivery_flat_out", "delivery_steady"):
        d = res[name]
        print(
            f"| {name.removeprefix('delivery_').replace('_', ' ')} | {d['games']:,} | {d['events']:,} | "
            f"{d['missing']} | {d['duplicates']} | {d['delay_p50_s']:.3f} | {d['delay_p99_s']:.3f} | "
            f"{d['delay_max_s']:.3f} | {d['listeners_cpu_s']:.1f} |"
        )
    print(f"\naudit consistent: {res['audit_consistent']}")
    missed = [name for name, ok in res["targets"].items() if not ok]
    print(f"targets missed: {', '.join(missed) or 'none'}")
    RESULTS.mkdir(exist_ok=True)
    out = {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
        "args": vars(args),
        **res,
    }
    (RESULTS / "bench_events.json").write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
