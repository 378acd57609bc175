"""The service's ladder defaults through the API at a live pace: prequential log loss of what every post answered.

    python -m bench.quality_live [--quick] [--only NAME ...] [--pace SECONDS | --settle] [--load]
                                 [--ladders JSON ...]

Each stream of bench/quality_field.py is posted in order to new ladders on a real server (``uvicorn``, SQLite, one
worker), ``POST …/games/batch`` of 500 comparisons (pairs of sides: 500 games of two sides, two Formula 1 races; at
least one game), with ``played_at`` where the stream is dated and the home seats where it
has them: once to a ladder with the defaults (auto refits and the rate choice on) and once with ``auto_rate: false``
(refits that keep the rule); ``--ladders`` names other settings, one JSON object each (``'{}'`` is the defaults).
Every ladder's initial vectors are drawn from one seed (:data:`SEED`, where its settings give none; a new ladder
draws its own): with seeds of their own, two ladders that ran the same rule and the same refits ended 0.0035 nats
apart on a cyclic stream (the cyclic discs start small and random), which would hide what a setting or the
server's load does.
The auto refits run in the background as they would for a user, and change the later answers when they apply.

The pace: one call every ``--pace`` seconds (1; 0 posts as fast as the server answers, so the rate choice barely
acts), or with ``--settle`` each call once the ladder's refits have ended (every refit and rate choice finishes
before the next games: the slowest a ladder is ever posted to).  ``--load`` runs a CPU-bound process beside it, to
check that a ladder's predictions do not follow how busy its server is.

Every game is scored by what its post answered, before the game (what a user of the service saw): a game of two
sides by the first side's ``expected_score``, a free-for-all by its ``matrix`` (the chance that each side finishes
above each other), each pair weighted 1/(N - 1) in a game of N sides, as bench/quality.py scores the field.  Prints
the log loss over the second half of each stream for each ladder, beside bench/quality_field.py's Elo with its rate
chosen on the first half, the best of the field tuned in hindsight and, for free-for-alls, TrueSkill tuned in
hindsight, where bench/results/quality_field.json holds them; writes
bench/results/quality_live.json, one run per pace (a run at another pace is kept).
"""

from __future__ import annotations

import argparse
import itertools
import json
import multiprocessing
import os
import platform
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import numpy as np

from app.rating import GameLog
from bench.quality import halves, log_loss
from bench.quality_field import streams
from devtools.server import ADMIN_KEY, live_server

RESULTS = Path(__file__).parent / "results"
#: A batch holds games up to this many comparisons (at least one game): the auto refits are scheduled by
#: comparisons, so a settled free-for-all stream meets as many of them as a stream of duels would.
BATCH = 500
#: The seed of every ladder's initial vectors, unless its settings give one.
SEED = 1
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
LADDERS = ({}, {"auto_rate": False})
MADE = itertools.count()
#: The field's columns printed beside the service's (bench/results/quality_field.json).
FIELD = ("Elo, rate chosen on the first half", "best of the field", "TrueSkill")


def games_json(log: GameLog, when: np.ndarray | None) -> list[dict]:
    """Each game as ``POST …/games`` takes it: players ``p<n>``, each side's rank (one plus the sides that finished
    above it), the seats where the log has them, ``played_at`` from the game's time in years since 1970."""
    out = []
    for g in range(log.n_games):
        s0, s1 = int(log.side_ptr[g]), int(log.side_ptr[g + 1])
        p0, p1 = int(log.pair_ptr[g]), int(log.pair_ptr[g + 1])
        above = np.zeros(s1 - s0, dtype=int)  # how many sides finished above each
        a, b, s = log.pair_a[p0:p1] - s0, log.pair_b[p0:p1] - s0, log.pair_outcome[p0:p1]
        np.add.at(above, b[s == 1.0], 1)
        np.add.at(above, a[s == 0.0], 1)
        members = log.member_player[log.member_ptr[g] : log.member_ptr[g + 1]]
        member_side = log.member_side[log.member_ptr[g] : log.member_ptr[g + 1]]
        sides = []
        for n in range(s1 - s0):
            side = {"players": [f"p{i}" for i in members[member_side == s0 + n].tolist()], "rank": int(above[n]) + 1}
            if log.side_seat is not None:
                side["seat"] = ("home", "away")[int(log.side_seat[s0 + n])]
            sides.append(side)
        game = {"sides": sides}
        if when is not None:
            game["played_at"] = (EPOCH + timedelta(days=float(when[g]) * 365.25)).isoformat()
        out.append(game)
    return out


def batches(log: GameLog) -> list[tuple[int, int]]:
    """The stream's games cut into runs of at most :data:`BATCH` comparisons (a game of more is a run alone)."""
    pairs = np.diff(log.pair_ptr)
    out, lo, held = [], 0, 0
    for g, n in enumerate(pairs.tolist()):
        if g > lo and held + n > BATCH:
            out.append((lo, g))
            lo, held = g, 0
        held += n
    return [*out, (lo, log.n_games)] if log.n_games > lo else out


def forecasts(log: GameLog, answers: list[dict]) -> np.ndarray:
    """The chance each pair term of the log was given by the answer of its game's post: the first side's
    ``expected_score`` in a game of two sides, ``matrix[a][b]`` in a free-for-all."""
    p = np.empty(len(log.pair_a))
    for g, answer in enumerate(answers):
        s0, p0, p1 = int(log.side_ptr[g]), int(log.pair_ptr[g]), int(log.pair_ptr[g + 1])
        if answer.get("matrix") is None:
            p[p0] = answer["sides"][0]["expected_score"]
        else:
            matrix = np.array(answer["matrix"])
            p[p0:p1] = matrix[log.pair_a[p0:p1] - s0, log.pair_b[p0:p1] - s0]
    return p


def run(http: httpx.Client, name: str, log: GameLog, when, pace: float | None, settings: dict) -> dict:
    """Post the stream to a new ladder with ``settings``; the log loss of the answers over the second half and all.
    ``pace`` None: each call once the ladder's refits have ended."""
    games = games_json(log, when)
    slug = f"s{next(MADE)}-" + "".join(c if c.isalnum() else "-" for c in name.lower())
    body = {"slug": slug[:48], "seed": SEED} | ({"seats": ["home", "away"]} if log.side_seat is not None else {})
    body |= settings
    made = http.post("/v1/ladders", json=body, headers={"Authorization": f"Bearer {ADMIN_KEY}"})
    made.raise_for_status()
    headers = {"Authorization": f"Bearer {made.json()['write_key']}"}
    answers: list[dict] = []
    started = time.perf_counter()
    for lo, hi in batches(log):
        tick = time.perf_counter()
        answer = http.post(f"/v1/ladders/{slug}/games/batch", json={"games": games[lo:hi]}, headers=headers)
        answer.raise_for_status()
        answers += answer.json()["games"]
        if pace is None:
            _settle(http, slug, 1800)
        else:
            time.sleep(max(0.0, pace - (time.perf_counter() - tick)))
    seconds = time.perf_counter() - started
    ladder = http.get(f"/v1/ladders/{slug}").json()
    _settle(http, slug, 300)  # the next ladder's refits would queue behind this one's (they change nothing scored)
    refits = http.get(f"/v1/ladders/{slug}/refits", params={"limit": 100}).json()["items"]
    p = forecasts(log, answers)
    return {
        "ladder": settings,
        "live, whole stream": log_loss(p, log),
        "live, second half": log_loss(p, log, halves(log)[1]),
        "seconds": round(seconds, 1),
        "rule at the end": {key: ladder.get(key) for key in ("rate_rule", "eta", "eta_tau", "noise", "cycles", "k")},
        "refits": [_refit(job) for job in reversed(refits)],
    }


def _settle(http: httpx.Client, slug: str, timeout: float) -> None:
    """Wait (up to ``timeout`` seconds) until none of the ladder's refits is queued or running."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and any(
        job["status"] in ("queued", "running") for job in http.get(f"/v1/ladders/{slug}/refits").json()["items"]
    ):
        time.sleep(0.5)


def _refit(job: dict) -> dict:
    """An auto refit, as the stream met it: the games it saw, how long it took, and the rule its rate choice
    applied (None where it kept the ladder's)."""
    rate = ((job.get("result") or {}).get("rate")) or {}
    took = None
    if job["finished_at"]:
        took = (datetime.fromisoformat(job["finished_at"]) - datetime.fromisoformat(job["created_at"])).total_seconds()
    changed = (
        {key: rate[key] for key in ("rate_rule", "eta", "noise", "drift") if key in rate}
        if rate.get("changed") and rate.get("applied")
        else None
    )
    return {"after_game": job["after_game"], "status": job["status"], "seconds": took, "rule applied": changed}


def _spin() -> None:  # pragma: no cover - the load beside the server
    while True:
        pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="the streams as bench/quality_field.py --quick cuts them")
    parser.add_argument("--only", nargs="*", help="these streams only")
    pace = parser.add_mutually_exclusive_group()
    pace.add_argument("--pace", type=float, default=1.0, help="seconds between batch posts (default 1; 0: at once)")
    pace.add_argument("--settle", action="store_true", help="each batch once the ladder's refits have ended")
    parser.add_argument("--load", action="store_true", help="a CPU-bound process beside the server")
    parser.add_argument("--ladders", nargs="*", type=json.loads, default=list(LADDERS), help="JSON settings each")
    args = parser.parse_args()
    label = ("settled" if args.settle else f"{args.pace:g} s a batch") + (", loaded" if args.load else "")
    field = {}
    if (RESULTS / "quality_field.json").exists():
        field = {r["stream"]: r for r in json.loads((RESULTS / "quality_field.json").read_text())["rows"]}
    load = multiprocessing.Process(target=_spin, daemon=True) if args.load else None
    if load is not None:
        load.start()
    rows = []
    try:
        with (
            tempfile.TemporaryDirectory() as folder,
            live_server(f"sqlite:///{folder}/live.db") as base,
            httpx.Client(base_url=base, timeout=120) as http,
        ):
            for name, (log, _, when) in streams(args.quick).items():
                if args.only and name not in args.only:
                    continue
                row = {"stream": name, "games": log.n_games, "sides": int(np.diff(log.side_ptr).max())}
                pace = None if args.settle else args.pace
                row["ladders"] = [run(http, name, log, when, pace, settings) for settings in args.ladders]
                row |= {column: field[name][column] for column in FIELD if column in field.get(name, {})}
                rows.append(row)
                cells = ", ".join(f"{r['live, second half']:.4f} in {r['seconds']:.0f} s" for r in row["ladders"])
                print(f"  {name}: {cells}", flush=True)
    finally:
        if load is not None:
            load.terminate()
    print(f"\nprequential log loss of what the posts answered, second half of each stream ({label}; lower is better)")
    print("beside bench/quality_field.py's Elo chosen on the first half and the field tuned in hindsight\n")
    names = [json.dumps(s) if s else "defaults" for s in args.ladders]
    print("| stream | games | " + " | ".join(names) + " | Elo, first half | best of the field | TrueSkill |")
    print("|---|---|" + "---|" * (len(names) + 3))
    for r in rows:
        cells = [f"{x['live, second half']:.4f}" for x in r["ladders"]]
        cells += ["" if r.get(c) is None else f"{r[c]:.4f}" for c in FIELD[:2]]
        cells.append(f"{r['TrueSkill']:.4f}" if r["sides"] > 2 and r.get("TrueSkill") is not None else "")
        print(f"| {r['stream']} | {r['games']:,} | " + " | ".join(cells) + " |")
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / "quality_live.json"
    runs = json.loads(path.read_text()).get("runs", []) if path.exists() else []
    machine = {"cpus": os.cpu_count(), "python": platform.python_version(), "quick": args.quick}
    here = {"pace": label, "machine": machine, "rows": rows}
    kept = [r for r in runs if r["pace"] != label]
    for r in runs:  # the other streams of an earlier run at this pace stay
        if r["pace"] == label and args.only:
            ran = {row["stream"] for row in rows}
            here["rows"] = [row for row in r["rows"] if row["stream"] not in ran] + rows
    path.write_text(json.dumps({"runs": [*kept, here]}, indent=2) + "\n")


if __name__ == "__main__":
    main()
