"""The cost of choosing a ladder's learning rate against the cost of its auto refit, on large synthetic logs.

    python -m bench.bench_tuning [--players 10000] [--games 100000 1000000] [--skip-seats]

For each log size, a log of two-player games between ``--players`` players of
fixed Elo strengths, with no seats and with a white/black seat on every game
(white wins more):

* the auto refit as a ladder runs it (:func:`app.rating.refit.pipeline.refit` with k
  chosen among 0 and 1 by cross-validation over matchups, one start);
* :func:`app.rating.tuning.choose_rate` as a ladder with ``drift_steps`` runs it: 25
  candidate rates at the default drift, replayed together over every game from the
  initial vectors, then 45 more at drifts 0, 50 and 200 Elo points a year (the games
  are spread over two years, a day at a time), and with seats 3 more at the other
  priors of the seats (app.rating.tuning.SEAT_PRIOR_SDS);
* one replay of one rate (the cost the 25 candidates would each have had when
  replayed one after the other).

Target (issue 24): choosing the rate costs at most 2x the refit.  Prints a table and writes
bench/results/bench_tuning.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import numpy as np
from scipy.special import expit

from app.ladders.schemas import DEFAULT_SEAT_PRIOR, RULE_LIMITS
from app.rating import ELO_PER_LOGIT, GameLog, LearningRate, Seats, initial_vectors, prior_precision
from app.rating.prequential import prequential_losses
from app.rating.refit.pipeline import RefitOptions, refit
from app.rating.tuning import SEAT_PRIOR_SDS, choose_rate

RESULTS = Path(__file__).parent / "results"
DEFAULT = LearningRate(0.7, 3.0, 100 / ELO_PER_LOGIT)
DRIFTS = tuple(d / ELO_PER_LOGIT for d in (0.0, 50.0, 200.0))
TARGET = 2.0


def stream(players: int, games: int, seats: bool) -> GameLog:
    rng = np.random.default_rng(games)
    r = rng.normal(0, 1, players)
    i = rng.integers(0, players, games)
    j = (i + rng.integers(1, players, games)) % players
    outcome = (rng.random(games) < expit(r[i] - r[j] + (0.3 if seats else 0.0))).astype(float)
    return GameLog.from_pairs(i, j, outcome, seats=(0, 1) if seats else None)


def timed(work) -> tuple[float, object]:
    start = time.perf_counter()
    out = work()
    return time.perf_counter() - start, out


def run(players: int, games: int, seats: bool) -> dict:
    log = stream(players, games, seats)
    C0 = initial_vectors([f"p{n}" for n in range(players)], 1, 0, 0.5, [0.0, 1.0])
    fresh = Seats.fresh(2, prior_precision(DEFAULT_SEAT_PRIOR)) if seats else None
    precision = prior_precision(DEFAULT_SEAT_PRIOR)
    refit_s, _ = timed(
        lambda: refit(
            log, players, 1, RefitOptions(restarts=1, select_k=[0, 1], seat_precision=precision), current_seats=fresh
        )
    )
    times = (np.floor(np.linspace(0, 730, games)) / 365.25, None)
    sds = SEAT_PRIOR_SDS if seats else ()
    choose_s, choice = timed(lambda: choose_rate(C0, log, DEFAULT, fresh, None, times, DRIFTS, sds, limits=RULE_LIMITS))
    one_s, _ = timed(lambda: prequential_losses(C0, log, DEFAULT, fresh, times))
    return {
        "players": players,
        "games": games,
        "seats": seats,
        "refit_s": refit_s,
        "choose_rate_s": choose_s,
        "one_replay_s": one_s,
        "candidates": len(choice.rows),
        "chosen": {
            "eta": choice.rate.eta,
            "tau": choice.rate.tau,
            "drift": choice.rate.drift * ELO_PER_LOGIT,
            "seat_prior": choice.seat_prior,
        },
        "choose_vs_refit": choose_s / refit_s,
        "one_by_one_estimate_s": one_s * len(choice.rows),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--players", type=int, default=10_000)
    parser.add_argument("--games", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--skip-seats", action="store_true", help="only logs without seats")
    args = parser.parse_args()
    rows = [
        run(args.players, g, seats) for g in args.games for seats in ([False] if args.skip_seats else [False, True])
    ]
    print(f"\n{'games':>10} {'seats':>6} {'refit s':>9} {'choose s':>9} {'ratio':>6} {'one by one s':>16}  chosen")
    for r in rows:
        print(
            f"{r['games']:>10,} {'yes' if r['seats'] else 'no':>6} {r['refit_s']:>9.1f} {r['choose_rate_s']:>9.1f}"
            f" {r['choose_vs_refit']:>6.2f} {r['one_by_one_estimate_s']:>16.1f}  {r['chosen']}"
        )
    result = {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "args": vars(args),
        "rows": rows,
        "targets": {"choose_within_2x_refit": all(r["choose_vs_refit"] <= TARGET for r in rows)},
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "bench_tuning.json").write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
