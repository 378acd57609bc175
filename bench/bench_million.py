"""A ladder of a million players beside one of ten thousand: what every request and job costs at that size.

    python -m bench.bench_million [--players 10000 1000000] [--db sqlite postgresql] [--seconds 5]

For each database and size: a fresh database, a ladder with the defaults
(k = 1, auto refit on) and two games per player through the bulk import (one
transaction per 200,000 games), then one uvicorn worker on loopback:

* the import's games/s; a freshly started worker's first leaderboard (s) and
  its resident memory after it;
* the first leaderboard page and predictions (wrk, 4 connections): p50;
* ``POST …/games`` (wrk, 16 connections) with the ladder defaults, then while
  a refit of the ladder runs: req/s and p99;
* the refit (``POST …/refits {}``): its time and the peak resident memory of
  its process, and how it ended;
* ``GET …/audit``, ``…/identifiability``, ``…/intransitivity``,
  ``…/canonical``: seconds each until the report (a large ladder's
  identifiability and intransitivity answer 202 while they are computed in a
  child process: polled every second), and how long the first answer took;
* the void of the first game, a merge of two players, an export: seconds each;
* kill -9 of the worker while a refit runs and four clients post games under
  Idempotency-Keys, a restart, the unanswered posts retried: every
  acknowledged game kept, each game counted once, the refit marked failed;
* ``/healthz`` probed every 100 ms throughout: the slowest answer.

Each figure at the large size is printed beside the small one's, from the
same run.  Writes bench/results/bench_million.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import tempfile
import threading
import time
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
from bench.bench_api import Server, wrk
from bench.bench_mixed import resident_mb
from devtools.postgres import PostgresServer

RESULTS = Path(__file__).parent / "results"
CHUNK = 200_000


def seed(url: str, players: int) -> tuple[str, float]:
    """The ``bench`` ladder with the defaults and two games per player; (write key, games imported per second)."""
    upgrade(Settings(database_url=url).sqlalchemy_url)
    db = Database.from_settings(Settings(database_url=url))
    with db.writing() as session:
        key = create_ladder(session, LadderCreate(slug="bench", k=1)).write_key
    rng = np.random.default_rng(0)
    i = np.tile(np.arange(players), 2)
    j = (i + rng.integers(1, players, len(i))) % players
    seconds = 0.0
    for lo in range(0, len(i), CHUNK):
        games = [
            GameIn.model_validate({"sides": [{"players": [f"p{a}"], "rank": 1}, {"players": [f"p{b}"], "rank": 2}]})
            for a, b in zip(i[lo : lo + CHUNK].tolist(), j[lo : lo + CHUNK].tolist(), strict=True)
        ]
        t = time.perf_counter()
        with db.writing() as session:
            import_games(session, ladder_for_read(session, "bench", fresh=True), games)
        seconds += time.perf_counter() - t
    if db.dialect == "postgresql":  # the planner's statistics, as autovacuum would gather them on a live server
        with db.write_engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
            connection.exec_driver_sql("ANALYZE")
    db.dispose()
    return key, len(i) / seconds


class Probe(threading.Thread):
    """GET /healthz every 100 ms; the slowest answer (ms), overall and during each phase (``phase``: what the
    bench is doing). While the worker is down (killed on purpose) there is no answer to time."""

    def __init__(self, base: str) -> None:
        super().__init__(daemon=True)
        self.base, self.worst, self.done = base, 0.0, threading.Event()
        self.phase, self.by_phase = "start", {}

    def run(self) -> None:
        with httpx.Client(timeout=30) as client:
            while not self.done.wait(0.1):
                t = time.perf_counter()
                try:
                    client.get(self.base + "/healthz")
                except httpx.TransportError:  # the worker killed on purpose, not started yet
                    continue
                ms = (time.perf_counter() - t) * 1e3
                self.worst = max(self.worst, ms)
                self.by_phase[self.phase] = max(self.by_phase.get(self.phase, 0.0), ms)


def children_peak_mb(pid: int, peak: float) -> float:
    """The largest peak resident memory (VmHWM) among the processes whose parent is ``pid``, or ``peak``."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) != pid:
                continue
            for line in (stat.parent / "status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    peak = max(peak, int(line.split()[1]) / 1024)
        except (OSError, ValueError, IndexError):
            continue
    return peak


def timed(client: httpx.Client, method: str, path: str, **kwargs) -> dict:
    t = time.perf_counter()
    r = client.request(method, path, **kwargs)
    return {"seconds": time.perf_counter() - t, "status": r.status_code}


def polled(client: httpx.Client, path: str) -> dict:
    """GET ``path`` until it is no longer 202 (a report computed in the background): the seconds until then,
    the final status, and how long the first answer took."""
    t = time.perf_counter()
    r = client.get(path)
    first = time.perf_counter() - t
    while r.status_code == 202:
        time.sleep(1)
        r = client.get(path)
    return {"seconds": time.perf_counter() - t, "status": r.status_code, "first_answer_s": first}


def refit_under_posts(server: Server, client: httpx.Client, env: dict, seconds: int) -> tuple[dict, dict]:
    """Start a refit, post games while it runs, wait for it: (the refit's figures, the posts')."""
    h = {"Authorization": f"Bearer {env['MELO_WRITE_KEY']}"}
    t = time.perf_counter()
    job = client.post("/v1/ladders/bench/refits", json={}, headers=h).json()
    peak, posts = 0.0, {}

    def post() -> None:
        posts.update(wrk(server.base, "/", "games", 16, seconds, env))

    poster = threading.Thread(target=post)
    poster.start()
    while True:
        peak = children_peak_mb(server.proc.pid, peak)
        state = client.get(f"/v1/ladders/bench/refits/{job['id']}").json()
        if state["status"] not in ("queued", "running"):
            break
        time.sleep(0.5)
    poster.join()
    refit = {"seconds": time.perf_counter() - t, "status": state["status"], "error": state["error"]}
    return refit | {"peak_mb": peak}, posts


def crash_under_refit_and_posts(server: Server, url: str, key: str, players: int, seconds: int) -> tuple[Server, dict]:
    """kill -9 the worker while a refit of the ladder runs and four clients post games, each under its own
    Idempotency-Key; start it again, post again every game whose answer never came (the same key): every
    acknowledged game is there, and each posted game counts once. (The new server, the figures.)"""
    h = {"Authorization": f"Bearer {key}"}
    with httpx.Client(base_url=server.base, timeout=30) as client:
        before = client.get("/v1/ladders/bench").json()["games"]
        job = client.post("/v1/ladders/bench/refits", json={}, headers=h).json()
    sent: list[tuple[str, dict]] = []
    acked: set[str] = set()
    stop = threading.Event()

    def poster(n: int) -> None:
        rng = np.random.default_rng(n)
        with httpx.Client(base_url=server.base, timeout=30) as client:
            while not stop.is_set():
                a, b = rng.choice(players, 2, replace=False).tolist()
                game, key_ = (
                    {"sides": [{"players": [f"p{a}"], "rank": 1}, {"players": [f"p{b}"], "rank": 2}]},
                    f"crash-{n}-{len(sent)}",
                )
                sent.append((key_, game))
                try:
                    if (
                        client.post(
                            "/v1/ladders/bench/games", json=game, headers=h | {"Idempotency-Key": key_}
                        ).status_code
                        == 201
                    ):
                        acked.add(key_)
                except httpx.TransportError:
                    return

    threads = [threading.Thread(target=poster, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    time.sleep(seconds)
    server.proc.kill()  # kill -9, the refit's process dies with it
    server.proc.wait()
    stop.set()
    for thread in threads:
        thread.join()
    t = time.perf_counter()
    server = Server(url)
    restart = time.perf_counter() - t
    with httpx.Client(base_url=server.base, timeout=60) as client:
        after_crash = client.get("/v1/ladders/bench").json()["games"]
        for key_, game in sent:  # the retries of games whose answer never came: applied once
            if key_ not in acked:
                client.post("/v1/ladders/bench/games", json=game, headers=h | {"Idempotency-Key": key_})
        after_retries = client.get("/v1/ladders/bench").json()["games"]
        refit = client.get(f"/v1/ladders/bench/refits/{job['id']}").json()
    return server, {
        "posted": len(sent),
        "acknowledged": len(acked),
        "acknowledged_kept": before + len(acked) <= after_crash,
        "games_after_retries_as_posted": after_retries == before + len(sent),
        "restart_s": restart,
        "refit_after": refit["status"],
    }


def run(url: str, players: int, seconds: int) -> dict:
    key, import_rate = seed(url, players)
    env = {"MELO_WRITE_KEY": key, "MELO_PLAYERS": str(players)}
    server = Server(url)
    probe = Probe(server.base)
    probe.start()
    out: dict = {"players": players, "games": 2 * players, "import_games_per_s": import_rate}
    try:
        with httpx.Client(base_url=server.base, timeout=600) as client:
            probe.phase = "first leaderboard"
            out["first_leaderboard_s"] = timed(client, "GET", "/v1/ladders/bench/leaderboard")["seconds"]
            out["resident_mb"] = resident_mb(server.proc.pid)
            probe.phase = "reads and posts"
            out["leaderboard"] = wrk(server.base, "/v1/ladders/bench/leaderboard?limit=50", "plain", 4, seconds, env)
            out["predict"] = wrk(server.base, "/", "predict", 4, seconds, env)
            out["posts"] = wrk(server.base, "/", "games", 16, seconds, env)
            probe.phase = "refit"
            out["refit"], out["posts_during_refit"] = refit_under_posts(server, client, env, seconds)
            for name in ("audit", "identifiability", "intransitivity", "canonical"):
                probe.phase = name
                out[name] = polled(client, f"/v1/ladders/bench/{name}")
            h = {"Authorization": f"Bearer {key}"}
            probe.phase = "void"
            out["void_first_game"] = timed(client, "DELETE", "/v1/ladders/bench/games/1", headers=h)
            probe.phase = "merge"
            out["merge"] = timed(client, "POST", "/v1/ladders/bench/players/p1/merge", json={"into": "p2"}, headers=h)
            probe.phase = "export"
            out["export"] = timed(client, "GET", "/v1/ladders/bench/export", headers=h)
            out["resident_mb_end"] = resident_mb(server.proc.pid)
        probe.phase = "kill -9"
        server, out["crash"] = crash_under_refit_and_posts(server, url, key, players, seconds)
        probe.base = server.base
        with httpx.Client(base_url=server.base, timeout=600) as client:
            out["audit_after"] = client.get("/v1/ladders/bench/audit").json()
    finally:
        probe.done.set()
        probe.join()
        server.stop()
    out["healthz_worst_ms"] = probe.worst
    out["healthz_worst_ms_by_phase"] = probe.by_phase
    return out


PHASES = (
    "first leaderboard",
    "reads and posts",
    "refit",
    "audit",
    "identifiability",
    "intransitivity",
    "canonical",
    "void",
    "merge",
    "export",
    "kill -9",
)
ROWS = [
    ("import (games/s)", lambda r: r["import_games_per_s"], "{:,.0f}"),
    ("fresh worker's first leaderboard (s)", lambda r: r["first_leaderboard_s"], "{:.2f}"),
    ("resident memory (MB)", lambda r: r["resident_mb"], "{:,.0f}"),
    ("leaderboard p50 (ms)", lambda r: r["leaderboard"]["p50_ms"], "{:.2f}"),
    ("predict p50 (ms)", lambda r: r["predict"]["p50_ms"], "{:.2f}"),
    ("POST /games (req/s)", lambda r: r["posts"]["rps"], "{:,.0f}"),
    ("POST /games p99 (ms)", lambda r: r["posts"]["p99_ms"], "{:.1f}"),
    ("POST /games during a refit (req/s)", lambda r: r["posts_during_refit"]["rps"], "{:,.0f}"),
    ("POST /games during a refit p99 (ms)", lambda r: r["posts_during_refit"]["p99_ms"], "{:.1f}"),
    ("refit (s)", lambda r: r["refit"]["seconds"], "{:.1f}"),
    ("refit peak memory (MB)", lambda r: r["refit"]["peak_mb"], "{:,.0f}"),
    ("refit ended", lambda r: r["refit"]["status"], "{}"),
    *[
        (
            f"GET …/{name}: report ready (s), first answer (s), status",
            lambda r, n=name: f"{r[n]['seconds']:.2f}, {r[n]['first_answer_s']:.2f}, {r[n]['status']}",
            "{}",
        )
        for name in ("audit", "identifiability", "intransitivity", "canonical")
    ],
    ("void of the first game (s)", lambda r: r["void_first_game"]["seconds"], "{:.2f}"),
    ("merge (s)", lambda r: r["merge"]["seconds"], "{:.2f}"),
    ("export (s)", lambda r: r["export"]["seconds"], "{:.2f}"),
    ("/healthz slowest (ms)", lambda r: r["healthz_worst_ms"], "{:.1f}"),
    (
        "/healthz slowest (ms) while: " + ", ".join(PHASES),
        lambda r: ", ".join(f"{r['healthz_worst_ms_by_phase'].get(p, 0):.0f}" for p in PHASES),
        "{}",
    ),
    (
        "kill -9 during a refit and posts: games posted, acknowledged; all acknowledged kept; each counted once "
        "after the retries; restart (s); the refit after",
        lambda r: (
            f"{r['crash']['posted']:,}, {r['crash']['acknowledged']:,}; {r['crash']['acknowledged_kept']}; "
            f"{r['crash']['games_after_retries_as_posted']}; {r['crash']['restart_s']:.1f}; {r['crash']['refit_after']}"
        ),
        "{}",
    ),
    ("audit consistent (after all of it)", lambda r: r["audit_after"]["consistent"], "{}"),
]


def table(db: str, results: list[dict]) -> str:
    head = "| " + " | ".join(["what", *(f"{r['players']:,} players" for r in results)]) + " |"
    lines = [f"\n{db}\n", head, "|" + "---|" * (len(results) + 1)]
    for name, value, form in ROWS:
        lines.append("| " + " | ".join([name, *(form.format(value(r)) for r in results)]) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", nargs="+", choices=["sqlite", "postgresql"], default=["sqlite"])
    parser.add_argument("--players", type=int, nargs="+", default=[10_000, 1_000_000])
    parser.add_argument("--seconds", type=int, default=5)
    args = parser.parse_args()
    if shutil.which("wrk") is None:
        sys.exit("wrk is needed: make bench installs it")
    out = {"machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()}}
    out["results"] = {}
    for db in args.db:
        results = []
        pg = None
        if db == "postgresql":
            pg = PostgresServer(fsync=True)
            pg.start()
        try:
            for players in args.players:
                with tempfile.TemporaryDirectory() as tmp:
                    if pg is None:
                        url = f"sqlite:///{tmp}/bench.db"
                    else:
                        url = pg.url(f"million_{players}")
                        with psycopg.connect(pg.url(), autocommit=True) as conn:
                            conn.execute(f"CREATE DATABASE million_{players}")
                    results.append(run(url, players, args.seconds))
                print(table(db, results), flush=True)
        finally:
            if pg is not None:
                pg.stop()
        out["results"][db] = results
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "bench_million.json").write_text(json.dumps(out, indent=2, default=str))


if __name__ == "__main__":
    main()
