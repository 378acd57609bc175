"""Offline refit and Elo baseline speed (mathematics §9, §11), against references measured in the same run.

    python -m bench.bench_refit [--quick]

1. Refit: games sampled from a known rank-2k advantage matrix (c_i ~ N(0, I)),
   100k and 1M games over 1k and 10k players, k = 1 and 2.  One L-BFGS fit on
   80% of the games; wall time, iterations, convergence, and held-out log loss
   next to the true model's (the floor) on the other 20%.
2. Elo baseline: [Stable Elo]'s iteration (``fit_elo``) on 1M Bradley-Terry games
   over 10k players against ``choix.ilsr_pairwise`` (a bench-only dependency) on
   the same games; time and the mean log-likelihood per game of both.

Prints tables and writes bench/results/bench_refit.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import numpy as np
from scipy.special import expit, log_expit

from app.rating import GameLog
from app.rating.elo import fit_elo, pair_counts
from app.rating.model import omega_apply, rowdot
from app.rating.refit.fit import fit
from app.rating.refit.metrics import evaluate
from app.rating.refit.split import split_games

RESULTS = Path(__file__).parent / "results"
TARGET_SECONDS = 60.0  # 1M games, 10k players, k = 2
TARGET_SPEEDUP = 5.0  # Elo baseline vs choix


def sampled(n_games: int, n_players: int, k: int, seed: int) -> tuple[np.ndarray, GameLog]:
    rng = np.random.default_rng(seed)
    C = rng.normal(size=(n_players, 2 * k))
    i = rng.integers(0, n_players, n_games)
    j = (i + rng.integers(1, n_players, n_games)) % n_players
    p = expit(rowdot(C[i], omega_apply(C[j])))
    return C, GameLog.from_pairs(i, j, (rng.random(n_games) < p).astype(float))


def refit_rows(configs: list[tuple[int, int, int]]) -> list[dict]:
    rows = []
    for n_games, n_players, k in configs:
        C_true, log = sampled(n_games, n_players, k, seed=n_games + n_players + k)
        train, test = split_games(log, 0.2, seed=0)
        result = fit(log, n_players, k, pairs=train, seed=1)
        row = {
            "games": n_games,
            "players": n_players,
            "k": k,
            "seconds": result.seconds,
            "iterations": result.iterations,
            "converged": result.converged,
            "heldout_log_loss": evaluate(result.C, log, test).log_loss,
            "true_model_log_loss": evaluate(C_true, log, test).log_loss,
        }
        print(f"  refit {n_games:,} games, {n_players:,} players, k={k}: {row['seconds']:.1f} s", flush=True)
        rows.append(row)
    return rows


def elo_row(n_games: int, n_players: int) -> dict:
    import choix

    rng = np.random.default_rng(7)
    strength = rng.normal(size=n_players)
    i = rng.integers(0, n_players, n_games)
    j = (i + rng.integers(1, n_players, n_games)) % n_players
    i_wins = rng.random(n_games) < expit(strength[i] - strength[j])
    winner, loser = np.where(i_wins, i, j), np.where(i_wins, j, i)

    def mean_ll(r: np.ndarray) -> float:
        return float(np.mean(log_expit(r[winner] - r[loser])))

    start = time.perf_counter()
    counts = pair_counts(GameLog.from_pairs(winner, loser, np.ones(n_games)), n_players)
    ours = fit_elo(counts, prior=1e-6, tol=1e-9)
    ours_seconds = time.perf_counter() - start

    data = list(zip(winner.tolist(), loser.tolist(), strict=True))
    start = time.perf_counter()
    theirs = choix.ilsr_pairwise(n_players, data, alpha=0.0, tol=1e-8, max_iter=1000)
    choix_seconds = time.perf_counter() - start
    return {
        "games": n_games,
        "players": n_players,
        "fit_elo_seconds": ours_seconds,
        "fit_elo_iterations": ours.iterations,
        "choix_seconds": choix_seconds,
        "speedup": choix_seconds / ours_seconds,
        "fit_elo_mean_ll": mean_ll(ours.ratings),
        "choix_mean_ll": mean_ll(theirs),
        "mean_ll_difference": abs(mean_ll(ours.ratings) - mean_ll(theirs)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="100k games only (a smoke run)")
    args = parser.parse_args()
    sizes = [100_000] if args.quick else [100_000, 1_000_000]
    configs = [(g, m, k) for g in sizes for m in (1_000, 10_000) for k in (1, 2)]
    rows = refit_rows(configs)
    elo = elo_row(sizes[-1], 10_000)

    print(f"\nrefit: one L-BFGS fit on 80% of the games, {os.cpu_count()} cores\n")
    print("| games | players | k | seconds | iterations | converged | held-out log loss | true model |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['games']:,} | {r['players']:,} | {r['k']} | {r['seconds']:.1f} | {r['iterations']} "
            f"| {r['converged']} | {r['heldout_log_loss']:.4f} | {r['true_model_log_loss']:.4f} |"
        )
    print(f"\nElo baseline, {elo['games']:,} games over {elo['players']:,} players\n")
    print("| method | seconds | mean log-likelihood per game |")
    print("|---|---|---|")
    print(f"| fit_elo ([Stable Elo]) | {elo['fit_elo_seconds']:.2f} | {elo['fit_elo_mean_ll']:.9f} |")
    print(f"| choix.ilsr_pairwise | {elo['choix_seconds']:.2f} | {elo['choix_mean_ll']:.9f} |")
    gap = elo["mean_ll_difference"]
    print(f"\nspeed-up {elo['speedup']:.1f}x (target {TARGET_SPEEDUP:.0f}x); |Δ mean ll| = {gap:.2e}")
    big = [r for r in rows if (r["games"], r["players"], r["k"]) == (1_000_000, 10_000, 2)]
    if big:
        reached = big[0]["converged"] and big[0]["seconds"] < TARGET_SECONDS
        print(f"1M games, 10k players, k = 2 converged in {big[0]['seconds']:.1f} s: target {TARGET_SECONDS:.0f} s "
              f"{'reached' if reached else 'not reached'}")  # fmt: skip
    RESULTS.mkdir(exist_ok=True)
    out = {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
        "refit": rows,
        "elo": elo,
    }
    (RESULTS / "bench_refit.json").write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
