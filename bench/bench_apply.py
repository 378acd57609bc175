"""Game posts while a refit is applied, or while an admin changes the ladder: does either stall the writer?

    python -m bench.bench_apply [--db sqlite postgresql] [--players 10000] [--games 100000] [--seconds 8]
                                [--eta 4.0]
    python -m bench.bench_apply --scenario admin [--db sqlite postgresql] [--players 300000] [--games 600000]
                                [--window 3] [--connections 16] [--baseline-windows 5] [--eta ETA]

For each database: a fresh ladder of ``--players`` players and ``--games``
two-player games (k = 1, seeded through the bulk import, auto refit off),
uvicorn with one worker on loopback.

``--scenario apply`` (the default; 10,000 players and 100,000 games): wrk
posting games with 64 connections:

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

``--scenario admin`` (issue 58; 300,000 players and 600,000 games, the import
a transaction per 200,000): games posted from ``--connections`` (16)
connections without a pause, by a load generator in a process of its own
(plain HTTP/1.1 on asyncio streams) that records every post's start, end and
answer, so that each ``--window`` (3 s) gets exact figures even for a post
that spans windows (a wrk run per window would drop the posts in flight at
its end, and could never see one slower than its window).  After a 2-second
warm-up, ``--baseline-windows`` (5) windows of posts alone are the baseline of
the run; then, one after another with ``--pause`` seconds (one window) after
each, the admin:

1. ``PATCH``es the ladder's ``eta`` to 0.35 (the log replayed at the new rate);
1b. voids the game in the middle of the seeded log (``POST …/games/{n}/void``: the games
   after it that its players reach are replayed);
2. runs a refit (``POST …/refits {}``, waited for) and applies it;
3. ``PATCH``es ``eta`` back to the value it had (the ladder's default, or
   ``--eta``);
4. the rate choice: ``PATCH``es ``auto_refit`` and ``auto_rate`` on (steps 1
   and 3 pinned the rate); the next auto refit chooses the rate from the log
   and applies it before its fit (mathematics §9), followed until the
   ladder's ``rate_choice`` appears (or the job ends without one, or
   ``--rate-timeout`` passes).  Whether the rate moved ``eta`` is reported:
   it moves only where the log asks for another (``--eta 4.0`` starts the
   ladder far from it).

then ``--after-windows`` (2) windows more, the auto refit's fit labelled while
it runs.  For every window: its start, posts/s (2xx answers that ended in it),
p50/p99/max latency of the posts that started in it (a post stalled by a step
counts where it began), non-2xx answers, timeouts (no answer within
``--bound`` seconds, 10) and other transport errors, and the admin steps it
overlaps; for every step its duration and status.  Targets (issue 58): every
window after the baseline keeps at least half the baseline's posts/s, every
window's p99 is under 250 ms, and no post times out or answers other than
2xx; ``/audit`` must be consistent when the posts stop and, once it ends,
after the auto refit.  Writes bench/results/bench_apply_admin.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import platform
import random
import sys
import tempfile
import threading
import time
from datetime import datetime
from pathlib import Path

import httpx
import numpy as np
import uvloop

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
#: Issue 58's targets for ``--scenario admin``: each window's posts/s against the baseline's, each window's p99.
ADMIN_TARGETS = {"posts_vs_baseline": 0.5, "p99_ms": 250.0}
#: The rate the admin sets in step 1 of ``--scenario admin``.
ADMIN_ETA = 0.35
#: Games imported a transaction at a time by :func:`seed`, as bench_million.py does (about 7.5 MB a 1,000 at once).
CHUNK = 200_000


def seed(url: str, players: int, games: int, eta: float | None = None) -> str:
    upgrade(Settings(database_url=url).sqlalchemy_url)
    db = Database.from_settings(Settings(database_url=url))
    rng = np.random.default_rng(0)
    strength = rng.normal(size=players)
    i = rng.integers(0, players, games)
    j = (i + rng.integers(1, players, games)) % players
    first_wins = rng.random(games) < 1 / (1 + np.exp(strength[j] - strength[i]))
    with db.writing() as session:
        rate = {} if eta is None else {"eta": eta}
        key = create_ladder(session, LadderCreate(slug="bench", k=1, auto_refit=False, **rate)).write_key
    wins = first_wins.astype(int).tolist()
    for lo in range(0, games, CHUNK):  # a transaction per chunk: one chunk's validated games in memory at once
        rows = [
            GameIn.model_validate(
                {"sides": [{"players": [f"p{a}"], "rank": 2 - w}, {"players": [f"p{b}"], "rank": 1 + w}]}
            )
            for a, b, w in zip(
                i[lo : lo + CHUNK].tolist(), j[lo : lo + CHUNK].tolist(), wins[lo : lo + CHUNK], strict=True
            )
        ]
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
        job = httpx.get(base + location, timeout=60).json()
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


def post_load(base: str, key: str, players: int, connections: int, bound: float, stop, out) -> None:
    """Post games between random players from ``connections`` connections, each without a pause, until ``stop``
    is set (run it in a process of its own); then put on ``out`` every post's (start, end, status), in monotonic
    seconds (one clock for every process of the machine), status 0 for a post unanswered within ``bound`` seconds,
    -1 for another transport error, and the first answer of each status other than 2xx (or the error).  The games
    are those of bench/api.lua's ``games`` mode.  Plain HTTP/1.1 on asyncio streams under uvloop: on two cores
    httpx's client held the posts to a third of wrk's posts/s and put 200 ms on their p99 of its own; this one
    costs about what wrk does."""
    uvloop.run(_post_load(base, key, players, connections, bound, stop, out))


async def _post_load(base: str, key: str, players: int, connections: int, bound: float, stop, out) -> None:
    host, port = base.removeprefix("http://").split(":")
    rng = random.Random(os.getpid())
    posts: list[tuple[float, float, int]] = []
    samples: dict[int, str] = {}
    head = f"POST /v1/ladders/bench/games HTTP/1.1\r\nHost: {host}:{port}\r\nAuthorization: Bearer {key}\r\n"

    async def poster() -> None:
        reader = writer = None
        while not stop.is_set():
            a = rng.randrange(players)
            b = (a + rng.randrange(1, players)) % players
            body = f'{{"sides":[{{"players":["p{a}"],"rank":1}},{{"players":["p{b}"],"rank":{rng.randint(1, 2)}}}]}}'
            request = f"{head}Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n{body}".encode()
            start = time.monotonic()
            try:
                async with asyncio.timeout(bound):
                    if writer is None:
                        reader, writer = await asyncio.open_connection(host, int(port))
                    writer.write(request)
                    status, keep, body = await _answer(reader)
            except TimeoutError:
                status, keep, body = 0, False, f"no answer within {bound:g} s"
            except (OSError, ValueError, asyncio.IncompleteReadError, asyncio.LimitOverrunError) as error:
                status, keep, body = -1, False, repr(error)
            posts.append((start, time.monotonic(), status))
            if not 200 <= status < 300:
                samples.setdefault(status, body[:500])
            if not keep and writer is not None:
                writer.close()
                reader = writer = None

    await asyncio.gather(*(poster() for _ in range(connections)))
    out.put((posts, samples))


async def _answer(reader: asyncio.StreamReader) -> tuple[int, bool, str]:
    """An HTTP/1.1 answer read to its end: its status, whether the connection stays open, and its body."""
    lines = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").lower().split("\r\n")
    fields = dict(line.split(":", 1) for line in lines[1:] if ":" in line)
    fields = {name: value.strip() for name, value in fields.items()}
    body = b""
    if fields.get("transfer-encoding") == "chunked":
        while size := int((await reader.readuntil(b"\r\n")).split(b";")[0], 16):
            body += (await reader.readexactly(size + 2))[:-2]
        await reader.readuntil(b"\r\n")
    else:
        body = await reader.readexactly(int(fields.get("content-length", 0)))
    return int(lines[0].split()[1]), fields.get("connection") != "close", body.decode("utf-8", "replace")


def windows_of(posts: np.ndarray, origin: float, count: int, width: float, steps: list[dict], baseline: int) -> list:
    """Each window's figures: posts/s of the 2xx answers that ended in it; the latencies, non-2xx answers, timeouts
    and transport errors of the posts that started in it (a post stalled by an admin step counts where it began);
    the admin steps it overlaps."""
    start, end, status = posts[:, 0] - origin, posts[:, 1] - origin, posts[:, 2]
    ok = (status >= 200) & (status < 300)
    out = []
    for n in range(count):
        lo, hi = n * width, (n + 1) * width
        began = (start >= lo) & (start < hi)
        ms = 1e3 * (end[began] - start[began])
        over = [s["step"] for s in steps if s["start_s"] < hi and s["start_s"] + s["seconds"] > lo]
        quantile = (lambda q, ms=ms: float(np.quantile(ms, q))) if len(ms) else (lambda q: None)
        out.append(
            {
                "start_s": lo,
                "posts_per_s": float(np.sum(ok & (end >= lo) & (end < hi))) / width,
                "posts_started": int(began.sum()),
                "p50_ms": quantile(0.5),
                "p99_ms": quantile(0.99),
                "max_ms": float(ms.max()) if len(ms) else None,
                "non_2xx": int(np.sum(began & ~ok & (status > 0))),
                "timeouts": int(np.sum(began & (status == 0))),
                "errors": int(np.sum(began & (status == -1))),
                "admin": " + ".join(over) or ("baseline" if n < baseline else "-"),
            }
        )
    return out


def admin_run(db: str, url: str, args: argparse.Namespace) -> dict:
    """Issue 58's admin steps while games are posted: see the module's docstring."""
    t = time.perf_counter()
    key = seed(url, args.players, args.games, args.eta)
    seeded = time.perf_counter() - t
    h = {"Authorization": f"Bearer {key}"}
    server = Server(url, 1)
    base = server.base + "/v1/ladders/bench"
    client = httpx.Client(timeout=max(600.0, args.rate_timeout), headers=h)
    earlier = client.get(base).json()["eta"]
    stop, out = multiprocessing.Event(), multiprocessing.Queue()
    load = multiprocessing.Process(
        target=post_load, args=(server.base, key, args.players, args.connections, args.bound, stop, out)
    )
    steps: list[dict] = []
    clock = time.time() - time.monotonic()  # a server's timestamp (UTC) to this machine's monotonic clock

    def step(name: str, method: str, path: str, **kwargs) -> httpx.Response:
        started = time.monotonic()
        answer = client.request(method, base + path, **kwargs)
        seconds = time.monotonic() - started
        steps.append({"step": name, "start_s": started - origin, "seconds": seconds, "status": answer.status_code})
        print(f"  {db}: {name}: {answer.status_code} in {seconds:.2f} s", flush=True)
        time.sleep(args.pause)
        return answer

    def at(stamp: str) -> float:
        return datetime.fromisoformat(stamp).timestamp() - clock - origin

    load.start()
    try:
        time.sleep(2)  # warm-up: not measured
        origin = time.monotonic()
        time.sleep(args.baseline_windows * args.window)
        step(f"(1) PATCH eta {ADMIN_ETA}", "PATCH", "", json={"eta": ADMIN_ETA})
        voided = step(f"(1b) void game {args.games // 2}", "POST", f"/games/{args.games // 2}/void")
        steps[-1]["voided"] = voided.is_success and voided.json()["voided_at"] is not None

        started = time.monotonic()
        answer = client.post(base + "/refits", json={})
        job = {"status": answer.text[:300]}
        if answer.status_code == 202:
            job = wait_for(server.base, answer.headers["location"], timeout=max(600.0, args.rate_timeout))
        refit = {"step": "(2) refit", "start_s": started - origin, "seconds": time.monotonic() - started}
        steps.append(refit | {"status": answer.status_code, "job": job["status"], "error": job.get("error")})
        print(f"  {db}: (2) refit: {answer.status_code}, {job['status']} in {refit['seconds']:.1f} s", flush=True)
        if job["status"] == "done":
            applied = step("(2) apply", "POST", f"/refits/{job['id']}/apply")
            steps[-1]["replayed_games"] = applied.json().get("replayed_games") if applied.is_success else None

        step(f"(3) PATCH eta {earlier:g}", "PATCH", "", json={"eta": earlier})

        before = {job["id"] for job in client.get(base + "/refits").json()["items"]}
        patched = time.monotonic()
        step(
            "(4) PATCH auto_refit, auto_rate",
            "PATCH",
            "",
            json={"auto_refit": True, "auto_rate": True},
        )
        auto, choice = None, None
        while time.monotonic() - patched < args.rate_timeout:
            jobs = client.get(base + "/refits").json()["items"]
            auto = next((j for j in jobs if j["id"] not in before and j["params"].get("auto")), None) or auto
            choice = client.get(base).json()["rate_choice"]
            if choice or (auto and auto["status"] not in ("queued", "running")):
                break
            time.sleep(0.25)
        rate = {"step": "(4) rate choice", "start_s": (at(auto["created_at"]) if auto else patched - origin)}
        ended = at(choice["applied_at"]) if choice else time.monotonic() - origin
        rate |= {
            "seconds": ended - rate["start_s"],
            "status": None,
            "job": auto and auto["status"],
            "rate_choice": choice,
            "eta_moved": bool(choice and choice["eta"] != choice["previous_eta"]),
        }
        steps.append(rate)
        moved = f"eta {choice['previous_eta']:g} -> {choice['eta']:g}" if choice else "no rate chosen"
        print(f"  {db}: (4) rate choice: {moved} ({ended - rate['start_s']:.1f} s after the job started)", flush=True)

        count = int((time.monotonic() - origin) // args.window) + 1 + args.after_windows
        time.sleep(max(0.0, origin + count * args.window - time.monotonic()))
        stop.set()
        posts, samples = out.get(timeout=args.bound + 120)
        posts = np.array(posts, dtype=float).reshape(-1, 3)
        load.join()
        audits = [client.get(base + "/audit").json() | {"when": "the posts stopped"}]
        games = client.get(base).json()["games"]
        if auto:  # the auto refit's fit, after its rate: the windows it overlapped, how it ended, the audit after
            location = f"/v1/ladders/bench/refits/{auto['id']}"
            auto = client.get(server.base + location).json()
            finished = at(auto["finished_at"]) if auto["finished_at"] else count * args.window
            fit = {"step": "(4) auto refit's fit", "start_s": ended, "seconds": max(0.0, finished - ended)}
            fields = ("id", "status", "created_at", "finished_at", "applied_at", "error")
            steps.append(fit | {"status": None, "job": auto["status"]} | {f"job_{k}": auto[k] for k in fields})
            if auto["status"] in ("queued", "running"):
                try:
                    auto = wait_for(server.base, location, timeout=args.rate_timeout)
                    steps[-1] |= {
                        "job": f"{steps[-1]['job']}, then {auto['status']}",
                        "job_applied_at": auto["applied_at"],
                    }
                    audits.append(client.get(base + "/audit").json() | {"when": f"the auto refit {auto['status']}"})
                except RuntimeError:
                    print(f"  {db}: the auto refit did not end within {args.rate_timeout:g} s", flush=True)
    finally:
        stop.set()
        load.join(args.bound + 120)
        if load.is_alive():
            load.terminate()
        client.close()
        server.stop()
    windows = windows_of(posts, origin, count, args.window, steps, args.baseline_windows)
    baseline = windows[: args.baseline_windows]
    base_rate = sum(w["posts_per_s"] for w in baseline) / len(baseline)
    under = windows[args.baseline_windows :]
    worst = min(under, key=lambda w: w["posts_per_s"])
    p99s = [w["p99_ms"] for w in windows if w["p99_ms"] is not None]
    failed = {name: sum(w[name] for w in windows) for name in ("non_2xx", "timeouts", "errors")}
    return {
        "db": db,
        "players": args.players,
        "games": args.games,
        "games_at_end": games,
        "seed_seconds": seeded,
        "eta_before": earlier,
        "baseline_posts_per_s": base_rate,
        "windows": windows,
        "steps": steps,
        "posts": {"sent": len(posts)} | failed | {"first_answers_not_2xx": samples},
        "worst_window": {
            "start_s": worst["start_s"],
            "ratio": worst["posts_per_s"] / base_rate,
            "admin": worst["admin"],
        },
        "worst_p99_ms": max(p99s) if p99s else None,
        "slowest_post_ms": max((w["max_ms"] or 0.0) for w in windows),
        "audits": audits,
        "audit_consistent": all(a["consistent"] for a in audits),
        "targets": {
            "posts_vs_baseline": worst["posts_per_s"] / base_rate >= ADMIN_TARGETS["posts_vs_baseline"],
            "p99_ms": bool(p99s) and max(p99s) < ADMIN_TARGETS["p99_ms"],
            "no_timeout_all_2xx": sum(failed.values()) == 0,
            "audit_consistent": all(a["consistent"] for a in audits),
            "rate_moved_eta": rate["eta_moved"],
        },
    }


def admin_report(results: list[dict], args: argparse.Namespace) -> None:
    for r in results:
        print(
            f"\n{r['db']}: {r['players']:,} players, {r['games']:,} games (seeded in {r['seed_seconds']:.0f} s); "
            f"POST /games from {args.connections} connections, one worker, {args.window:g}-s windows"
        )
        print("| start s | posts/s | vs baseline | p50 ms | p99 ms | max ms | non-2xx | timeouts | errors | admin |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        for w in r["windows"]:
            ms = " | ".join("-" if w[f] is None else f"{w[f]:.1f}" for f in ("p50_ms", "p99_ms", "max_ms"))
            print(
                f"| {w['start_s']:.0f} | {w['posts_per_s']:,.0f} | {w['posts_per_s'] / r['baseline_posts_per_s']:.2f} "
                f"| {ms} | {w['non_2xx']} | {w['timeouts']} | {w['errors']} | {w['admin']} |"
            )
        print("| step | start s | seconds | status | |")
        print("|---|---|---|---|---|")
        for s in r["steps"]:
            notes = [
                f"{k.replace('_', ' ')} {s[k]}" for k in ("job", "error", "replayed_games") if s.get(k) is not None
            ]
            if s.get("rate_choice"):
                notes.append(f"eta {s['rate_choice']['previous_eta']:g} -> {s['rate_choice']['eta']:g}")
            status = "" if s["status"] is None else s["status"]
            print(f"| {s['step']} | {s['start_s']:.1f} | {s['seconds']:.2f} | {status} | {'; '.join(notes)} |")
        worst, t = r["worst_window"], r["targets"]
        holds = {name: "holds" if ok else "MISSED" for name, ok in t.items()}
        print(
            f"{r['db']}: baseline {r['baseline_posts_per_s']:,.0f} posts/s; worst window {worst['ratio']:.2f} of it "
            f"(at {worst['start_s']:.0f} s, {worst['admin']}): "
            f"{holds['posts_vs_baseline']} (>= {ADMIN_TARGETS['posts_vs_baseline']})"
        )
        print(
            f"{r['db']}: worst p99 {r['worst_p99_ms']:.1f} ms: {holds['p99_ms']} (< {ADMIN_TARGETS['p99_ms']:g} ms); "
            f"slowest post {r['slowest_post_ms']:.0f} ms"
        )
        posts = r["posts"]
        print(
            f"{r['db']}: {posts['sent']:,} posts; non-2xx {posts['non_2xx']}, timeouts (> {args.bound:g} s) "
            f"{posts['timeouts']}, errors {posts['errors']}: {holds['no_timeout_all_2xx']}"
        )
        for status, body in posts["first_answers_not_2xx"].items():
            print(f"{r['db']}: the first post answered {status}: {body}")
        for a in r["audits"]:
            print(
                f"{r['db']}: audit when {a['when']}: consistent {a['consistent']} (counts {a['counts_consistent']}, "
                f"max |diff| {a['max_abs_diff']:.3g}, {a['replayed_games']:,} games replayed of {a['games']:,})"
            )
        print(f"{r['db']}: the rate choice moved eta: {t['rate_moved_eta']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scenario", choices=["apply", "admin"], default="apply", help="see the docstring")
    parser.add_argument("--db", nargs="+", choices=["sqlite", "postgresql"], default=["sqlite", "postgresql"])
    parser.add_argument("--players", type=int, help="default: 10,000 (apply), 300,000 (admin)")
    parser.add_argument("--games", type=int, help="default: 100,000 (apply), 600,000 (admin)")
    parser.add_argument("--seconds", type=int, default=8, help="apply: each window's seconds")
    parser.add_argument("--eta", type=float, help="the ladder's learning rate (default: the ladders' default)")
    admin = parser.add_argument_group("--scenario admin")
    admin.add_argument("--window", type=float, default=3.0, help="seconds a window")
    admin.add_argument("--connections", type=int, default=16)
    admin.add_argument("--baseline-windows", type=int, default=5, help="windows of posts alone, before the admin")
    admin.add_argument("--after-windows", type=int, default=2, help="windows after the rate choice")
    admin.add_argument("--pause", type=float, help="seconds between admin steps (default: one window)")
    admin.add_argument("--bound", type=float, default=10.0, help="seconds after which a post has timed out")
    admin.add_argument("--rate-timeout", type=float, default=1800.0, help="seconds to wait for the rate choice")
    args = parser.parse_args()
    big = args.scenario == "admin"
    args.players = args.players or (300_000 if big else 10_000)
    args.games = args.games or (600_000 if big else 100_000)
    args.pause = args.window if args.pause is None else args.pause
    results = []
    for db in args.db:
        if db == "sqlite":
            with tempfile.TemporaryDirectory() as tmp:
                url = f"sqlite:///{tmp}/bench.db"
                results.append(
                    admin_run(db, url, args) if big else run(db, url, args.players, args.games, args.seconds, args.eta)
                )
        else:
            pg = PostgresServer(fsync=True)
            pg.start()
            try:
                url = pg.create_database("bench")
                results.append(
                    admin_run(db, url, args) if big else run(db, url, args.players, args.games, args.seconds, args.eta)
                )
            finally:
                pg.stop()
    RESULTS.mkdir(exist_ok=True)
    if big:
        admin_report(results, args)
        out = {"machine": platform.platform(), "cpus": os.cpu_count(), "args": vars(args), "targets": ADMIN_TARGETS}
        (RESULTS / "bench_apply_admin.json").write_text(json.dumps(out | {"results": results}, indent=2, default=str))
        return
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
    out = {"machine": platform.platform(), "cpus": os.cpu_count(), "eta": args.eta, "results": results}
    name = "bench_apply.json" if args.eta is None else "bench_apply_new_rate.json"
    (RESULTS / name).write_text(json.dumps(out, indent=2, default=str))


if __name__ == "__main__":
    main()
