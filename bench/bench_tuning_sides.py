"""The rate choice of a ladder on the variance rule over games of teams and free-for-alls, its candidates replayed
side by side as copies of the log against the same candidates replayed one after the other (the baseline, what the
choice did before; both measured in this run).

    python -m bench.bench_tuning_sides [--quick]

On the real logs of bench/quality_field.py whose games have more than two sides: the team tournament (2 to 5
sides, teams of 1 to 5) and Formula 1's races (6 to 26 drivers), each cut where a ladder posted its games at one a
second first ran a rate choice on them (``--quick``: their first 1,000 games).  The ladder is a new one (the
variance rule at the defaults, k = 2), and the choice is
:func:`app.rating.tuning.choose_rate` as its auto refit runs it.  Both ways give every candidate the same losses,
bit for bit (tests/rating/test_variance_tuning.py), so the same choice.  Prints a table and writes
bench/results/bench_tuning_sides.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import numpy as np

from app.ladders.schemas import DEFAULT_CYCLES, DEFAULT_NOISE, DEFAULT_VARIANCE_ETA, RULE_LIMITS
from app.rating import ELO_PER_LOGIT, initial_vectors, variance_tuning
from app.rating.prequential import prequential_losses
from app.rating.tuning import choose_rate
from app.rating.variance import VarianceRule
from bench.quality_field import streams

RESULTS = Path(__file__).parent / "results"
#: Where each log is cut: the games a ladder on the defaults had when it chose its rate at 4,412 of the team
#: tournament's games and 332 of Formula 1's races (bench/quality_live.py's refits).
CUTS = {"team tournament": 4_412, "formula one": 332}


def _one_by_one(C1, log, rules, times, progress):
    """The baseline: each candidate replayed alone."""
    return np.array([prequential_losses(C1, log, rule, times=times) for rule in rules])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="the first 1,000 games of each log")
    args = parser.parse_args()
    every = streams(quick=True)
    rule = VarianceRule.from_eta(DEFAULT_VARIANCE_ETA, (DEFAULT_NOISE / ELO_PER_LOGIT) ** 2, 0.0, DEFAULT_CYCLES)
    side_by_side = variance_tuning._general_losses_many
    rows = []
    for name, cut in CUTS.items():
        log, m, _ = every[name]
        part = log.take(np.arange(min(cut, 1_000) if args.quick else cut))
        C0 = initial_vectors([f"p{n}" for n in range(m)], 2, 1, 0.05, [0.0, 1.0, 0.0, 0.0])
        seconds, chosen = {}, {}
        for way, losses in (("side by side", side_by_side), ("one by one", _one_by_one)):
            variance_tuning._general_losses_many = losses
            try:
                start = time.perf_counter()
                choice = choose_rate(C0, part, rule, limits=RULE_LIMITS)
                seconds[way] = time.perf_counter() - start
            finally:
                variance_tuning._general_losses_many = side_by_side
            chosen[way] = choice.rows[choice.index]
        assert chosen["side by side"] == chosen["one by one"]  # the same losses, so the same choice
        row = {"log": name, "games": part.n_games, "pairs": len(part.pair_a), "candidates": len(choice.rows)}
        row |= {f"{way} s": round(s, 3) for way, s in seconds.items()}
        row["speed-up"] = round(seconds["one by one"] / seconds["side by side"], 2)
        rows.append(row)
    print("| log | games | pairs | candidates | side by side (s) | one by one (s) | speed-up |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['log']} | {r['games']:,} | {r['pairs']:,} | {r['candidates']} | {r['side by side s']:.2f} "
            f"| {r['one by one s']:.2f} | {r['speed-up']:.1f}x |"
        )
    RESULTS.mkdir(exist_ok=True)
    machine = {"cpus": os.cpu_count(), "python": platform.python_version(), "quick": args.quick}
    (RESULTS / "bench_tuning_sides.json").write_text(json.dumps({"machine": machine, "rows": rows}, indent=2) + "\n")


if __name__ == "__main__":
    main()
