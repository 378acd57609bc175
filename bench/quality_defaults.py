"""What a new ladder should start with: candidate defaults replayed on every real stream, before any tuning.

    python -m bench.quality_defaults [--quick]

Each candidate is a rule a new ladder could start with (the shrinking step η/√(1 + n/τ), or the variance rule of
mathematics §3b with a newcomer's variance from η and a noise per game), at each drift its steps could follow where
a stream is dated.  Each is replayed exactly as the service rates games online (k = 2, the initial vectors and seat
prior of a new ladder, no refits) over the real streams of bench/quality_field.py (chess, ATP singles, three
football leagues with home seats, Formula 1 races as free-for-alls); the table gives each one's log loss on each
stream's second half, its worst margin over Elo with its rate chosen on the first half (bench/results/
quality_field.json), and the mean over the streams.  The current defaults are the first row.  Writes
bench/results/quality_defaults.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import numpy as np

from app.ladders.schemas import (
    DEFAULT_CYCLES,
    DEFAULT_DRIFT,
    DEFAULT_ETA,
    DEFAULT_ETA_TAU,
    DEFAULT_INIT_SCALE,
    DEFAULT_INIT_V0,
    DEFAULT_K,
    DEFAULT_NOISE,
    DEFAULT_RATE_RULE,
    DEFAULT_SEAT_PRIOR,
    DEFAULT_VARIANCE_ETA,
)
from app.rating import ELO_PER_LOGIT, LearningRate, VarianceRule
from app.rating.prequential import prequential_losses_many
from app.rating.seats import Seats, prior_precision
from app.rating.variance_tuning import variance_losses_many
from bench.quality import halves, start_vectors
from bench.quality_field import streams

RESULTS = Path(__file__).parent / "results"
REAL = ("chess", "atp tour", "premier league", "la liga", "premier league 2010-2025", "formula one")


def defaults() -> dict:
    """A new ladder's rule (app.ladders.schemas), in this file's terms (Elo points)."""
    if DEFAULT_RATE_RULE == "steps":
        return {"rule": "steps", "eta": DEFAULT_ETA, "tau": DEFAULT_ETA_TAU, "drift": DEFAULT_DRIFT}
    return {
        "rule": "variance",
        "eta": DEFAULT_VARIANCE_ETA,
        "noise": DEFAULT_NOISE,
        "drift": DEFAULT_DRIFT,
        "cycles": DEFAULT_CYCLES,
    }


def candidates() -> list[dict]:
    """The current defaults first, then the shrinking step and the variance rule around them (Elo points)."""
    out = [defaults()]
    for eta in (0.5, 0.7, 1.0):
        for tau in (1.0, 3.0, 10.0):
            for drift in (0.0, 50.0, 100.0, 200.0):
                out.append({"rule": "steps", "eta": eta, "tau": tau, "drift": drift})
    for eta in (0.35, 0.7, 1.4):
        for noise in (3.0, 5.5, 10.0, 20.0):
            for drift in (0.0, 50.0, 100.0, 200.0):
                out.append({"rule": "variance", "eta": eta, "noise": noise, "drift": drift, "cycles": DEFAULT_CYCLES})
    return [c for n, c in enumerate(out) if c not in out[:n]]


def rule(candidate: dict, dated: bool) -> LearningRate | VarianceRule:
    """The candidate as the ladder's rule (its steps follow the drift only where the stream is dated)."""
    drift = candidate["drift"] / ELO_PER_LOGIT if dated else 0.0
    if candidate["rule"] == "steps":
        return LearningRate(candidate["eta"], candidate["tau"], drift)
    noise = (candidate["noise"] / ELO_PER_LOGIT) ** 2
    return VarianceRule.from_eta(candidate["eta"], noise, drift, candidate["cycles"])


def second_half_losses(log, m: int, when, rules: list) -> np.ndarray:
    """Each rule's log loss per comparison on the stream's second half, replayed from a new ladder's start."""
    C0 = start_vectors(m, DEFAULT_K, DEFAULT_INIT_SCALE, DEFAULT_INIT_V0)
    seats = None if log.side_seat is None else Seats.fresh(log.n_seats_needed, prior_precision(DEFAULT_SEAT_PRIOR))
    times = None if when is None else (when, None)
    steps = [n for n, r in enumerate(rules) if isinstance(r, LearningRate)]
    variance = [n for n, r in enumerate(rules) if isinstance(r, VarianceRule)]
    losses = np.empty((len(rules), log.n_games))  # each game's loss, weighted per pair, replayed side by side
    losses[steps] = prequential_losses_many(C0, log, [rules[n] for n in steps], seats, None, times)
    losses[variance] = variance_losses_many(C0, log, [rules[n] for n in variance], seats, times)
    second = halves(log)[1]
    weight = np.add.reduceat(log.pair_weight, log.pair_ptr[:-1])[second]
    return losses[:, second].sum(axis=1) / weight.sum()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="the streams as bench/quality_field.py --quick cuts them")
    args = parser.parse_args()
    field = {}
    if (RESULTS / "quality_field.json").exists():
        field = {r["stream"]: r for r in json.loads((RESULTS / "quality_field.json").read_text())["rows"]}
    table = candidates()
    every = streams(args.quick)
    losses = {}
    for name in REAL:
        log, m, when = every[name]
        started = time.perf_counter()
        losses[name] = second_half_losses(log, m, when, [rule(c, when is not None) for c in table]).tolist()
        print(f"  {name}: {len(table)} rules in {time.perf_counter() - started:.0f} s", flush=True)
    elo = {name: field[name]["Elo, rate chosen on the first half"] for name in REAL if name in field}
    rows = []
    for n, c in enumerate(table):
        row = {"candidate": c} | {name: losses[name][n] for name in REAL}
        row["mean"] = float(np.mean([row[name] for name in REAL]))
        if len(elo) == len(REAL):
            row["worst margin over Elo"] = max(row[name] - elo[name] for name in REAL)
        rows.append(row)
    ranked = sorted(rows[1:], key=lambda r: r.get("worst margin over Elo", r["mean"]))
    print("\nlog loss on each real stream's second half, a new ladder's rule replayed with no refit (lower is")
    print("better); worst margin: the largest loss over Elo with its rate chosen on the first half (negative: ahead")
    print("everywhere)\n")
    print("| rule | " + " | ".join(REAL) + " | mean | worst margin over Elo |")
    print("|---|" + "---|" * (len(REAL) + 2))
    for r in [dict(rows[0], now=True), *ranked[:12], {"elo": True}]:
        if r.get("elo"):
            print("| Elo, first half | " + " | ".join(f"{elo.get(s, float('nan')):.4f}" for s in REAL) + " | | |")
            continue
        c = r["candidate"]
        what = f"{c['rule']} η {c['eta']:g}"
        what += f" τ {c['tau']:g}" if c["rule"] == "steps" else f" noise {c['noise']:g}"
        what += f", drift {c['drift']:g}" + (" (the defaults now)" if r.get("now") else "")
        margin = r.get("worst margin over Elo")
        cells = " | ".join(f"{r[s]:.4f}" for s in REAL)
        print(f"| {what} | {cells} | {r['mean']:.4f} | {'' if margin is None else f'{margin:+.4f}'} |")
    RESULTS.mkdir(exist_ok=True)
    machine = {"cpus": os.cpu_count(), "python": platform.python_version(), "quick": args.quick}
    out = {"machine": machine, "defaults": table[0], "elo": elo, "rows": rows}
    (RESULTS / "quality_defaults.json").write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
