"""The service's ladder defaults through the API at a live pace: prequential log loss of what every post answered.

    python bench/quality_live.py [--quick] [--only NAME ...] [--pace SECONDS] [--ladder JSON]

Each stream of bench/quality_field.py (its games of two sides: the team tournament's free-for-alls are left out) is
posted in order to a new ladder with the defaults (auto refits and the rate choice on; the football seasons with
their home seats) on a real server (``uvicorn``, SQLite, one worker), ``POST …/games/batch`` of 500 games, one call
every ``--pace`` seconds (1), with ``played_at`` where the stream is dated; ``--ladder`` adds settings to every new
ladder (``'{"auto_rate": false}'``: refits that keep the rule; ``'{"auto_refit": false}'``: none). Every game is
scored by the ``expected_score`` its post answered, before the game: what a user of the service saw. The auto refits
run in the background as they would for a user, and change the later answers when they apply; the next stream starts
once they have ended (their queue is shared).

Prints the log loss over the second half of each stream beside bench/quality_field.py's columns (Elo with its
rate chosen on the first half, the best of the field tuned in hindsight) where bench/results/quality_field.json
holds them, and writes bench/results/quality_live.json (with ``--ladder``, its rows join those of other settings in
quality_live_settings.json).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from quality import halves  # noqa: E402
from quality_field import streams  # noqa: E402

from app.rating import GameLog  # noqa: E402
from devtools.server import ADMIN_KEY, live_server  # noqa: E402

RESULTS = Path(__file__).parent / "results"
BATCH = 500
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def two_sided(log: GameLog) -> np.ndarray:
    """The games of two sides."""
    return np.flatnonzero(np.diff(log.side_ptr) == 2)


def games_json(log: GameLog, when: np.ndarray | None) -> list[dict]:
    """Each two-sided game as ``POST …/games`` takes it: players ``p<n>``, ranks from the outcome, the seats where
    the log has them, ``played_at`` from the game's time in years since 1970 where it is dated."""
    out = []
    for g in two_sided(log).tolist():
        s0, p = int(log.side_ptr[g]), int(log.pair_ptr[g])
        outcome = float(log.pair_outcome[p])
        ranks = (1, 1) if outcome == 0.5 else (1, 2) if outcome == 1.0 else (2, 1)
        sides = []
        for n in range(2):
            members = log.member_player[log.member_ptr[g] : log.member_ptr[g + 1]]
            mine = members[log.member_side[log.member_ptr[g] : log.member_ptr[g + 1]] == s0 + n]
            side = {"players": [f"p{i}" for i in mine.tolist()], "rank": ranks[n]}
            if log.side_seat is not None:
                side["seat"] = ("home", "away")[int(log.side_seat[s0 + n])]
            sides.append(side)
        game = {"sides": sides}
        if when is not None:
            game["played_at"] = (EPOCH + timedelta(days=float(when[g]) * 365.25)).isoformat()
        out.append(game)
    return out


def run(base: str, name: str, log: GameLog, when: np.ndarray | None, pace: float, settings: dict) -> dict:
    """Post the stream to a new default ladder; the log loss of the answers over the second half and all."""
    games = games_json(log, when)
    slug = "s-" + "".join(c if c.isalnum() else "-" for c in name.lower())
    body = {"slug": slug} | ({"seats": ["home", "away"]} if log.side_seat is not None else {}) | settings
    with httpx.Client(base_url=base, timeout=120) as http:
        made = http.post("/v1/ladders", json=body, headers={"Authorization": f"Bearer {ADMIN_KEY}"})
        made.raise_for_status()
        headers = {"Authorization": f"Bearer {made.json()['write_key']}"}
        expected, actual = [], []
        started = time.perf_counter()
        for lo in range(0, len(games), BATCH):
            tick = time.perf_counter()
            answer = http.post(
                f"/v1/ladders/{slug}/games/batch", json={"games": games[lo : lo + BATCH]}, headers=headers
            )
            answer.raise_for_status()
            for game in answer.json()["games"]:
                expected.append(game["sides"][0]["expected_score"])
                actual.append(game["sides"][0]["actual_score"])
            time.sleep(max(0.0, pace - (time.perf_counter() - tick)))
        ladder = http.get(f"/v1/ladders/{slug}").json()
        # The next stream's refits would queue behind this one's: let them end first (they change nothing scored).
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and any(
            job["status"] in ("queued", "running") for job in http.get(f"/v1/ladders/{slug}/refits").json()["items"]
        ):
            time.sleep(1)
        refits = http.get(f"/v1/ladders/{slug}/refits", params={"limit": 100}).json()["items"]
    p = np.clip(np.array(expected), 1e-12, 1 - 1e-12)
    s = np.array(actual)
    loss = -(s * np.log(p) + (1 - s) * np.log1p(-p))
    half = halves(GameLog.from_pairs(np.zeros(len(p), int), np.ones(len(p), int), s))[1]
    return {
        "stream": name,
        "games": len(p),
        "live, whole stream": float(loss.mean()),
        "live, second half": float(loss[half].mean()),
        "seconds": round(time.perf_counter() - started, 1),
        "rule at the end": {key: ladder.get(key) for key in ("rate_rule", "eta", "eta_tau", "noise", "cycles", "k")},
        "refits": [_refit(job) for job in reversed(refits)],
    }


def _refit(job: dict) -> dict:
    """An auto refit, as the stream met it: the games it saw, how long it took, and the rule its rate choice
    applied (None where it kept the ladder's)."""
    rate = ((job.get("result") or {}).get("rate")) or {}
    took = None
    if job["finished_at"]:
        took = (datetime.fromisoformat(job["finished_at"]) - datetime.fromisoformat(job["created_at"])).total_seconds()
    changed = (
        {key: rate[key] for key in ("rate_rule", "eta", "noise", "drift") if key in rate}
        if rate.get("changed")
        else None
    )
    return {"after_game": job["after_game"], "status": job["status"], "seconds": took, "rule applied": changed}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="the streams as bench/quality_field.py --quick cuts them")
    parser.add_argument("--only", nargs="*", help="these streams only")
    parser.add_argument("--pace", type=float, default=1.0, help="seconds between batch posts (default 1)")
    parser.add_argument("--ladder", type=json.loads, default={}, help="settings of every new ladder (JSON object)")
    args = parser.parse_args()
    field = {}
    if (RESULTS / "quality_field.json").exists():
        field = {r["stream"]: r for r in json.loads((RESULTS / "quality_field.json").read_text())["rows"]}
    rows = []
    with tempfile.TemporaryDirectory() as folder, live_server(f"sqlite:///{folder}/live.db") as base:
        for name, (log, _, when) in streams(args.quick).items():
            if args.only and name not in args.only:
                continue
            row = run(base, name, log, when, args.pace, args.ladder)
            for column in ("Elo, rate chosen on the first half", "best of the field"):
                if name in field and two_sided(log).size == log.n_games:
                    row[column] = field[name][column]
            rows.append(row)
            print(f"  {name}: {row['seconds']:.0f} s, {row['rule at the end']}", flush=True)
    print("\nprequential log loss of the answers of the posts, a new ladder with the defaults at a live pace")
    print("(lower is better); beside it bench/quality_field.py's Elo chosen on the first half and best of the field\n")
    print("| stream | games | live, whole stream | live, second half | Elo, first half | best of the field |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        elo, best = r.get("Elo, rate chosen on the first half"), r.get("best of the field")
        cells = [f"{r['live, whole stream']:.4f}", f"{r['live, second half']:.4f}"]
        cells += ["" if x is None else f"{x:.4f}" for x in (elo, best)]
        print(f"| {r['stream']} | {r['games']:,} | " + " | ".join(cells) + " |")
    RESULTS.mkdir(exist_ok=True)
    machine = {"cpus": os.cpu_count(), "python": platform.python_version(), "quick": args.quick, "pace": args.pace}
    if args.ladder:  # beside the runs with other settings
        path = RESULTS / "quality_live_settings.json"
        kept = json.loads(path.read_text())["rows"] if path.exists() else []
        ran = {r["stream"] for r in rows}
        kept = [r for r in kept if r["ladder"] != args.ladder or r["stream"] not in ran]
        rows = kept + [r | {"ladder": args.ladder} for r in rows]
    path = RESULTS / ("quality_live_settings.json" if args.ladder else "quality_live.json")
    path.write_text(json.dumps({"machine": machine, "rows": rows}, indent=2) + "\n")


if __name__ == "__main__":
    main()
