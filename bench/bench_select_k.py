"""Choosing k for matchups never played: the refit's choice against every fixed k, on synthetic matrices.

    python bench/bench_select_k.py [--players 40] [--games-per-pair 10] [--seeds 3]

Each matrix is a known set of rating vectors; half of all pairs of players are
observed (``--games-per-pair`` games each, drawn from the true probabilities),
and the other half, never played, are predicted.  The error is the root mean
square difference between predicted and true win probabilities on those
unobserved pairs.  Matrices:

* ``elo + noise``: Elo ratings r ~ N(0, 1) and a small second disc (scale
  0.15): k = 0 should win;
* ``disc``: a pure cyclic disc, players on a circle (rock-paper-scissors at
  every scale): k ≥ 1 should win;
* ``mixed``: Elo ratings and a disc of comparable size: k ≥ 1 should win.

For each, the refit chooses k among 0-3 (``select_k``, 20% held out; the
smallest k within one standard error of the best held-out loss) with the
service's split (whole matchups held out) and, as the baseline, with random
games held out (the previous split); each fixed k is fitted on all observed
games.  Target: the chosen k's error within 5% of the best fixed k on every
matrix.  Prints a table and writes bench/results/bench_select_k.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from app.rating import Game, GameLog, pair_probability  # noqa: E402
from app.rating import refit as refit_module  # noqa: E402
from app.rating.elo import fit_elo, pair_counts  # noqa: E402
from app.rating.refit import refit  # noqa: E402

RESULTS = Path(__file__).parent / "results"
CHOICES = [0, 1, 2, 3]
TARGET = 1.05


def matrix(kind: str, n: int, rng: np.random.Generator) -> np.ndarray:
    r = rng.normal(0, 1, n)
    theta = rng.uniform(0, 2 * np.pi, n)
    if kind == "elo + noise":
        return np.column_stack([r, np.ones(n), rng.normal(0, 0.15, (n, 2))])
    radius = 1.5
    disc = np.column_stack([radius * np.cos(theta), radius * np.sin(theta)])
    if kind == "disc":
        return disc
    return np.column_stack([r, np.ones(n), disc])


def observe(C: np.ndarray, per_pair: int, rng: np.random.Generator) -> tuple[GameLog, np.ndarray, np.ndarray]:
    """Games on a random half of all pairs; the unobserved pairs (i, j)."""
    i, j = np.triu_indices(len(C), k=1)
    seen = rng.random(len(i)) < 0.5
    games = []
    for a, b in zip(i[seen].tolist(), j[seen].tolist(), strict=True):
        wins = rng.random(per_pair) < pair_probability(C, np.array([a]), np.array([b]))[0]
        games += [Game(((a,), (b,)), (1, 2) if w else (2, 1)) for w in wins.tolist()]
    order = rng.permutation(len(games))
    return GameLog.from_games([games[g] for g in order]), i[~seen], j[~seen]


def rmse(C_hat: np.ndarray, C: np.ndarray, i: np.ndarray, j: np.ndarray) -> float:
    return float(np.sqrt(np.mean((pair_probability(C_hat, i, j) - pair_probability(C, i, j)) ** 2)))


def random_game_split(log: GameLog, holdout: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The previous rule: a random fraction of the games held out (their pairs mostly seen in training)."""
    test_game = np.random.default_rng(seed).random(log.n_games) < holdout
    pair_game = np.repeat(np.arange(log.n_games), np.diff(log.pair_ptr))
    return np.flatnonzero(~test_game[pair_game]), np.flatnonzero(test_game[pair_game])


def chosen(log: GameLog, n: int, split) -> tuple[int, np.ndarray]:
    service_split = refit_module.split_games
    refit_module.split_games = split
    try:
        report = refit(log, n, max(CHOICES), select_k=CHOICES, restarts=1)
    finally:
        refit_module.split_games = service_split
    return report.k, report.C


def fixed(log: GameLog, n: int, k: int) -> np.ndarray:
    if k == 0:
        ratings = fit_elo(pair_counts(log, n)).ratings
        return np.column_stack([ratings, np.ones(n)])
    return refit(log, n, k, holdout=0, restarts=1).C


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--players", type=int, default=40)
    parser.add_argument("--games-per-pair", type=int, default=10)
    parser.add_argument("--seeds", type=int, default=3)
    args = parser.parse_args()
    rows = []
    for kind in ("elo + noise", "disc", "mixed"):
        for seed in range(args.seeds):
            start = time.perf_counter()
            rng = np.random.default_rng(seed)
            C = matrix(kind, args.players, rng)
            log, i, j = observe(C, args.games_per_pair, rng)
            errors = {k: rmse(fixed(log, args.players, k), C, i, j) for k in CHOICES}
            k_pairs, C_pairs = chosen(log, args.players, refit_module.split_games)
            k_games, C_games = chosen(log, args.players, random_game_split)
            best = min(errors.values())
            rows.append({
                "matrix": kind,
                "seed": seed,
                "fixed_k_rmse": errors,
                "best_fixed_k": min(errors, key=errors.get),
                "chosen_k_pairs": k_pairs,
                "chosen_rmse_pairs": rmse(C_pairs, C, i, j),
                "ratio_pairs": rmse(C_pairs, C, i, j) / best,
                "chosen_k_games": k_games,
                "chosen_rmse_games": rmse(C_games, C, i, j),
                "ratio_games": rmse(C_games, C, i, j) / best,
                "seconds": time.perf_counter() - start,
            })  # fmt: skip
    print(f"\n{args.players} players, half of all pairs observed ({args.games_per_pair} games each); RMSE of P on "
          "the unobserved pairs\n")  # fmt: skip
    heads = " | ".join(f"k = {k}" for k in CHOICES)
    print(f"| matrix | seed | {heads} | chosen (matchups held out) | vs best | chosen (games held out) | vs best |")
    print("|---|---|" + "---|" * len(CHOICES) + "---|---|---|---|")
    for r in rows:
        errs = " | ".join(f"{r['fixed_k_rmse'][k]:.4f}" for k in CHOICES)
        print(f"| {r['matrix']} | {r['seed']} | {errs} | k = {r['chosen_k_pairs']}: {r['chosen_rmse_pairs']:.4f} | "
              f"{r['ratio_pairs']:.3f} | k = {r['chosen_k_games']}: {r['chosen_rmse_games']:.4f} | "
              f"{r['ratio_games']:.3f} |")  # fmt: skip
    worst = max(r["ratio_pairs"] for r in rows)
    print(f"\nworst ratio to the best fixed k: {worst:.3f} with matchups held out (target ≤ {TARGET}); "
          f"{max(r['ratio_games'] for r in rows):.3f} with games held out")  # fmt: skip
    RESULTS.mkdir(exist_ok=True)
    out = {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
        "players": args.players,
        "games_per_pair": args.games_per_pair,
        "target_ratio": TARGET,
        "worst_ratio_pairs": worst,
        "reached": worst <= TARGET,
        "rows": rows,
    }
    (RESULTS / "bench_select_k.json").write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
