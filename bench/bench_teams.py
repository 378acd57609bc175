"""How long fair teams take to find, against scoring one match, measured in the same run.

    python -m bench.bench_teams [--repeat 20]

Random players (k = 2) split by :func:`app.rating.teams.fair_split`: every
split scored up to 12 players, a local search beyond.  The baseline is one
call of :func:`app.rating.predict_match` for a two-team match, the cost of
scoring a single split the ordinary way.  Target: 10 players into two teams in
under 50 ms.  Prints a table and writes bench/results/bench_teams.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import numpy as np

from app.rating import Game, predict_match
from app.rating.teams import count_splits, fair_split, team_sizes

RESULTS = Path(__file__).parent / "results"
CASES = [(4, 2), (10, 2), (12, 2), (12, 3), (12, 4), (16, 2), (24, 4)]
TARGET_MS = 50.0


def best_of(repeat: int, work) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    C = rng.normal(size=(24, 4))
    game = Game(((0, 1, 2, 3, 4), (5, 6, 7, 8, 9)), (1, 2))
    baseline = best_of(args.repeat * 10, lambda: predict_match(C[:10], game))
    rows = []
    for n, teams in CASES:
        sizes = team_sizes(n, teams)
        seconds = best_of(args.repeat, lambda n=n, teams=teams: fair_split(C[:n], teams))
        split = fair_split(C[:n], teams)
        rows.append({"players": n, "teams": teams, "splits": count_splits(sizes), "exact": split.exact,
                     "ms": seconds * 1000, "vs_one_match": seconds / baseline, "quality": split.quality})  # fmt: skip
    print(f"\nbaseline: one predict_match of two teams of five: {baseline * 1e6:.0f} µs\n")
    print("| players | teams | splits | search | ms | × one match | match quality |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        search = "every split" if r["exact"] else "local search"
        print(f"| {r['players']} | {r['teams']} | {r['splits']:,} | {search} | {r['ms']:.2f} | "
              f"{r['vs_one_match']:,.0f} | {r['quality']:.4f} |")  # fmt: skip
    ten = next(r for r in rows if r["players"] == 10 and r["teams"] == 2)
    print(f"\n10 players into two teams: {ten['ms']:.2f} ms (target < {TARGET_MS:g} ms)")
    RESULTS.mkdir(exist_ok=True)
    out = {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
        "baseline_predict_match_seconds": baseline,
        "target_ms_10_players": TARGET_MS,
        "reached": ten["ms"] < TARGET_MS,
        "rows": rows,
    }
    (RESULTS / "bench_teams.json").write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
