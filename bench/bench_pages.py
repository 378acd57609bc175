"""How fast the front-end's pages first render on a large ladder in Chromium, against a static page.

    python -m bench.bench_pages [--players 1000] [--games 50000] [--runs 9]

Builds a SQLite ladder of ``--players`` players and ``--games`` games (four in five singles, the rest doubles,
winners drawn from hidden strengths, dates spread over a year) through the bulk import, serves it with uvicorn
on loopback, and loads in Debian's headless Chromium (Playwright), each run in a fresh browser context (an
empty cache, as a first visit):

* the baseline: ``/problems/not-found``, a static HTML page of the same server with no script: its first
  contentful paint is the floor of any page;
* the ladder page ``/ladders/bench``: navigation start to the ``melo:content`` mark, which the page sets when
  the standings and the latest results are in the DOM (it also reads the ladder, the leaderboard's first 100
  rows with their form and the latest 100 games);
* a profile ``/ladders/bench/players/{key}`` of the player with the most games: to the same mark, set when the
  rating, form, streaks, chart, head-to-head counts and recent games are in the DOM.

Each page also gets its first contentful paint.  The first run of each page is a warm-up, left out.  Prints a
table with medians and 90th percentiles, the bytes of the page's own JavaScript and CSS (the files under
app/web/static, as served, uncompressed) and writes bench/results/bench_pages.json.  The issue's targets: first
render at most 300 ms, JavaScript and CSS at most 150 KB.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import random
import statistics
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx

from app.core.config import Settings
from app.core.db import Database
from app.core.migrate import upgrade
from app.domain.access import ladder_for_read
from app.games.apply import import_games
from app.games.schemas import GameIn
from app.ladders.schemas import LadderCreate
from app.ladders.service import create_ladder
from bench.bench_api import Server
from devtools.browser import CHROMIUM, CHROMIUM_ARGS

ROOT = Path(__file__).resolve().parent.parent

RESULTS = Path(__file__).parent / "results"
STATIC = ROOT / "app" / "web" / "static"
TARGET_MS = 300
TARGET_BYTES = 150_000
DOUBLES_SHARE = 0.2


def games(players: int, count: int, seed: int = 0) -> list[GameIn]:
    rng = random.Random(seed)
    strength = [rng.gauss(0, 200) for _ in range(players)]
    start = datetime.now(UTC) - timedelta(days=365)
    step = timedelta(days=365) / count
    out = []
    for n in range(count):
        per_side = 2 if rng.random() < DOUBLES_SHARE else 1
        chosen = rng.sample(range(players), 2 * per_side)
        a, b = chosen[:per_side], chosen[per_side:]
        diff = (sum(strength[p] for p in a) - sum(strength[p] for p in b)) / per_side
        a_wins = rng.random() < 1 / (1 + math.pow(10, -diff / 400))
        sides = [
            {"players": [f"p{p:04d}" for p in a], "rank": 1 if a_wins else 2},
            {"players": [f"p{p:04d}" for p in b], "rank": 2 if a_wins else 1},
        ]
        out.append(GameIn.model_validate({"sides": sides, "played_at": start + n * step}))
    return out


def build(url: str, players: int, count: int) -> float:
    """The ladder, through the bulk import; the seconds it took."""
    upgrade(Settings(database_url=url).sqlalchemy_url)
    db = Database.from_settings(Settings(database_url=url))
    started = time.perf_counter()
    with db.writing() as session:
        create_ladder(session, LadderCreate(slug="bench", name="Bench ladder", auto_refit=False))
    with db.writing() as session:
        import_games(session, ladder_for_read(session, "bench", fresh=True), games(players, count))
    db.dispose()
    return time.perf_counter() - started


def timings(browser, url: str, content: str | None, runs: int) -> dict:
    """Navigation start to the page's `melo:content` mark (None: the first contentful paint) and to its first
    contentful paint, in ms, over `runs` fresh contexts after one warm-up."""
    marks, paints = [], []
    for run in range(runs + 1):
        context = browser.new_context(viewport={"width": 1366, "height": 900})
        page = context.new_page()
        page.goto(url)
        if content:
            page.wait_for_selector(content, state="attached", timeout=30_000)
        for _ in range(500):  # the paint entry arrives just after the frame it names
            entries = page.evaluate(
                """() => ({
                  mark: performance.getEntriesByName("melo:content")[0]?.startTime ?? null,
                  paint: performance.getEntriesByName("first-contentful-paint")[0]?.startTime ?? null,
                })"""
            )
            if entries["paint"] is not None and (entries["mark"] is not None or not content):
                break
            time.sleep(0.01)
        context.close()
        if run:
            marks.append(entries["mark"] if content else entries["paint"])
            paints.append(entries["paint"])
    return {"first_render_ms": summary(marks), "first_paint_ms": summary(paints), "runs": runs}


def summary(values: list[float]) -> dict:
    ordered = sorted(values)
    return {
        "median": statistics.median(ordered),
        "p90": ordered[min(len(ordered) - 1, math.ceil(0.9 * len(ordered)) - 1)],
        "all": [round(v, 1) for v in ordered],
    }


def own_bytes() -> dict[str, int]:
    return {path.name: path.stat().st_size for path in sorted(STATIC.iterdir()) if path.suffix in (".js", ".css")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--players", type=int, default=1000)
    parser.add_argument("--games", type=int, default=50_000)
    parser.add_argument("--runs", type=int, default=9)
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{tmp}/pages.db"
        seconds = build(url, args.players, args.games)
        print(f"built {args.players:,} players, {args.games:,} games in {seconds:.1f} s")
        server = Server(url)
        try:
            board = httpx.get(f"{server.base}/v1/ladders/bench/leaderboard?by=hodge&limit=500").json()["items"]
            busiest = max(board, key=lambda p: p["games"])
            pages = {
                "baseline: /problems/not-found (static, first paint)": ("/problems/not-found", None),
                "ladder page": ("/ladders/bench", "#board tbody tr[data-key]"),
                f"profile ({busiest['games']} games)": (f"/ladders/bench/players/{busiest['key']}", "#rating-chart"),
            }
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
                rows = {
                    label: timings(browser, server.base + path, wait, args.runs)
                    for label, (path, wait) in pages.items()
                }
                browser.close()
        finally:
            server.stop()
    sizes = own_bytes()
    total = sum(sizes.values())
    print(f"\n{args.players:,} players, {args.games:,} games; {args.runs} runs each, fresh contexts, desktop size\n")
    print("| page | first render median (ms) | p90 | first paint median (ms) |")
    print("|---|---|---|---|")
    for label, r in rows.items():
        fr, fp = r["first_render_ms"], r["first_paint_ms"]
        print(f"| {label} | {fr['median']:.0f} | {fr['p90']:.0f} | {fp['median']:.0f} |")
    print(f"\nthe page's own JavaScript and CSS: {total:,} bytes in {len(sizes)} files (target {TARGET_BYTES:,})")
    RESULTS.mkdir(exist_ok=True)
    out = {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
        "players": args.players,
        "games": args.games,
        "build_seconds": seconds,
        "pages": rows,
        "own_js_css_bytes": {"total": total, "files": sizes},
        "targets": {"first_render_ms": TARGET_MS, "js_css_bytes": TARGET_BYTES},
    }
    (RESULTS / "bench_pages.json").write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
