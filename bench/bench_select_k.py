"""Choosing k by cross-validation: the refit's choice against every fixed k, on synthetic matrices.

    python -m bench.bench_select_k [--players 40] [--games-per-pair 10] [--seeds 3] [--folds 10]

Each matrix is a known set of rating vectors; half of all pairs of players are
observed (``--games-per-pair`` games each, drawn from the true probabilities).
The error of a fit is the mean squared difference between its win
probabilities and the true ones over all pairs (those never played too).
Matrices, by the k that should win:

* ``elo + noise``: Elo ratings r ~ N(0, 1) and a small second disc (scale 0.15): k = 0;
* ``disc``: one cyclic disc, players on a circle (rock-paper-scissors at every scale): k = 1;
* ``mixed``: Elo ratings and a disc of comparable size: k = 2 (the Elo part is a disc too);
* ``two discs``: two cyclic discs of comparable size: k = 2;
* ``elo + two discs``: Elo ratings and two cyclic discs: k = 3.

For each, the refit chooses k among 0-3 (``select_k``) by cross-validation over
``--folds`` folds of whole matchups (the smallest k within one standard error of
the best mean held-out loss), and each fixed k is fitted on all observed games.
Target: the chosen k's error within 5% of the best fixed k's on every matrix.
Prints a table and writes bench/results/bench_select_k.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import numpy as np

from app.rating import Game, GameLog, pair_probability
from app.rating.elo import fit_elo, pair_counts
from app.rating.refit.pipeline import RefitOptions, refit
from app.rating.refit.selection import FOLDS

RESULTS = Path(__file__).parent / "results"
CHOICES = [0, 1, 2, 3]
TARGET = 1.05
MATRICES = ("elo + noise", "disc", "mixed", "two discs", "elo + two discs")


def matrix(kind: str, n: int, rng: np.random.Generator) -> np.ndarray:
    r = rng.normal(0, 1, n)
    theta = rng.uniform(0, 2 * np.pi, n)
    if kind == "elo + noise":
        return np.column_stack([r, np.ones(n), rng.normal(0, 0.15, (n, 2))])
    radius = 1.5
    disc = np.column_stack([radius * np.cos(theta), radius * np.sin(theta)])
    if kind == "disc":
        return disc
    if kind == "mixed":
        return np.column_stack([r, np.ones(n), disc])
    phi = rng.uniform(0, 2 * np.pi, n)
    second = np.column_stack([1.2 * np.cos(phi), 1.2 * np.sin(phi)])
    if kind == "two discs":
        return np.column_stack([disc, second])
    return np.column_stack([r, np.ones(n), disc, second])


def observe(C: np.ndarray, per_pair: int, rng: np.random.Generator) -> GameLog:
    """Games on a random half of all pairs."""
    i, j = np.triu_indices(len(C), k=1)
    seen = rng.random(len(i)) < 0.5
    games = []
    for a, b in zip(i[seen].tolist(), j[seen].tolist(), strict=True):
        wins = rng.random(per_pair) < pair_probability(C, np.array([a]), np.array([b]))[0]
        games += [Game(((a,), (b,)), (1, 2) if w else (2, 1)) for w in wins.tolist()]
    order = rng.permutation(len(games))
    return GameLog.from_games([games[g] for g in order])


def mse(C_hat: np.ndarray, C: np.ndarray) -> float:
    """Mean squared error of P over all pairs of players."""
    i, j = np.triu_indices(len(C), k=1)
    return float(np.mean((pair_probability(C_hat, i, j) - pair_probability(C, i, j)) ** 2))


def fixed(log: GameLog, n: int, k: int) -> np.ndarray:
    if k == 0:
        ratings = fit_elo(pair_counts(log, n)).ratings
        return np.column_stack([ratings, np.ones(n)])
    return refit(log, n, k, RefitOptions(holdout=0, restarts=1)).C


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--players", type=int, default=40)
    parser.add_argument("--games-per-pair", type=int, default=10)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--folds", type=int, default=FOLDS)
    args = parser.parse_args()
    rows = []
    for kind in MATRICES:
        for seed in range(args.seeds):
            start = time.perf_counter()
            rng = np.random.default_rng(seed)
            C = matrix(kind, args.players, rng)
            log = observe(C, args.games_per_pair, rng)
            errors = {k: mse(fixed(log, args.players, k), C) for k in CHOICES}
            report = refit(
                log, args.players, max(CHOICES), RefitOptions(select_k=CHOICES, restarts=1, folds=args.folds, seed=seed)
            )
            best = min(errors.values())
            rows.append({
                "matrix": kind,
                "seed": seed,
                "fixed_k_mse": errors,
                "best_fixed_k": min(errors, key=errors.get),
                "chosen_k": report.k,
                "chosen_mse": mse(report.C, C),
                "ratio": mse(report.C, C) / best,
                "k_selection": report.k_selection,
                "seconds": time.perf_counter() - start,
            })  # fmt: skip
    print(f"\n{args.players} players, half of all pairs observed ({args.games_per_pair} games each), {args.folds} "
          "folds; mean squared error of P over all pairs\n")  # fmt: skip
    heads = " | ".join(f"k = {k}" for k in CHOICES)
    print(f"| matrix | seed | {heads} | chosen | vs best | held-out loss per k (± se) | s |")
    print("|---|---|" + "---|" * len(CHOICES) + "---|---|---|---|")
    for r in rows:
        errs = " | ".join(f"{r['fixed_k_mse'][k]:.5f}" for k in CHOICES)
        cv = ", ".join(f"{c['heldout_log_loss']:.4f}±{c['standard_error']:.4f}" for c in r["k_selection"])
        print(f"| {r['matrix']} | {r['seed']} | {errs} | k = {r['chosen_k']}: {r['chosen_mse']:.5f} | "
              f"{r['ratio']:.3f} | {cv} | {r['seconds']:.1f} |")  # fmt: skip
    worst = max(r["ratio"] for r in rows)
    print(f"\nworst ratio to the best fixed k: {worst:.3f} (target ≤ {TARGET})")
    RESULTS.mkdir(exist_ok=True)
    out = {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
        "players": args.players,
        "games_per_pair": args.games_per_pair,
        "target_ratio": TARGET,
        "folds": args.folds,
        "worst_ratio": worst,
        "reached": worst <= TARGET,
        "rows": rows,
    }
    (RESULTS / "bench_select_k.json").write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
