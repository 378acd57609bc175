"""Peak memory of a refit of many-player team games, each stage in a process of its own.

    python -m bench.bench_refit_memory [--games 22]

Twenty-two free-for-all games of 64 teams of 32 players (2,048 players each,
drawn from 3,000): two million member pairs per game.  Measures the peak
resident memory and time of the refit's fit (with its Elo baseline) and of the
identifiability check, against a process that only builds the log (the
baseline).  Prints a table and writes bench/results/bench_refit_memory.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = Path(__file__).parent / "results"

STAGE = """
import json, resource, sys, time
sys.path.insert(0, {root!r})
import numpy as np
from app.rating import Game, GameLog
from app.rating.identifiability import identifiability
from app.rating.refit.pipeline import RefitOptions, refit
rng = np.random.default_rng(0)
games = []
for _ in range({games}):
    players = rng.choice(3000, 2048, replace=False)
    sides = tuple(tuple(int(p) for p in players[s * 32 : (s + 1) * 32]) for s in range(64))
    games.append(Game(sides, tuple(float(r) for r in rng.permutation(64) + 1)))
log = GameLog.from_games(games)
start = time.perf_counter()
if {stage!r} == "fit":
    refit(log, 3000, 2, RefitOptions(restarts=1, holdout=0))
elif {stage!r} == "identifiability":
    identifiability(np.random.default_rng(1).normal(size=(3000, 4)), log, 3000)
seconds, peak = time.perf_counter() - start, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({{"seconds": seconds, "peak_mb": peak}}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", type=int, default=22)
    args = parser.parse_args()
    rows = {}
    for stage in ("log only (baseline)", "fit", "identifiability"):
        code = STAGE.format(root=str(ROOT), games=args.games, stage=stage)
        out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
        rows[stage] = json.loads(out.strip().splitlines()[-1])
    print(f"\n{args.games} games of 64 teams of 32 players\n")
    print("| stage | seconds | peak MB |")
    print("|---|---|---|")
    for stage, r in rows.items():
        print(f"| {stage} | {r['seconds']:.1f} | {r['peak_mb']:,.0f} |")
    RESULTS.mkdir(exist_ok=True)
    out = {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
        "games": args.games,
        "rows": rows,
    }
    (RESULTS / "bench_refit_memory.json").write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
