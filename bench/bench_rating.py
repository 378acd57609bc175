"""Replay throughput of the rating core against a plain one-game-at-a-time loop.

    python -m bench.bench_rating [--games 1000000] [--players 10000] [--baseline-games 20000]

Replays two-player games (random pairs, wins/draws/losses, a small seat
advantage) with :func:`app.rating.replay` at k = 1, 2, 3, and measures in the
same run a plain Python/NumPy loop of the same maths ([Guide] eqs. 4-5, one
game at a time) and the library's per-game :func:`app.rating.apply_game`, on a
prefix of the same games.  Prints a table and writes bench/results/bench_rating.json.
Throughput ratios are what to compare: the machines are shared and noisy.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import numpy as np

from app.rating import Game, GameLog, apply_game, initial_vectors, omega, replay

RESULTS = Path(__file__).parent / "results"


def plain_loop(C: np.ndarray, i, j, s, h, eta: float) -> np.ndarray:
    """[Guide] eqs. 4-5 written the obvious way: one game per iteration."""
    W = omega(C.shape[1] // 2)
    for a, b, out, adv in zip(i, j, s, h, strict=True):
        ci, cj = C[a], C[b]
        p = 1.0 / (1.0 + np.exp(-(ci @ W @ cj + adv)))
        delta = eta * (out - p) / np.sqrt(ci @ ci + cj @ cj)
        C[a], C[b] = ci + delta * (W @ cj), cj - delta * (W @ ci)
    return C


def apply_game_loop(C: np.ndarray, i, j, s, h, eta: float) -> np.ndarray:
    ranks = {1.0: (1, 2), 0.5: (1, 1), 0.0: (2, 1)}
    for a, b, out, adv in zip(i, j, s, h, strict=True):
        result = apply_game(C, Game(((int(a),), (int(b),)), ranks[out], (adv, 0.0)), eta)
        C[result.players] = result.after
    return C


def encode_and_replay(C0: np.ndarray, i, j, s, h, eta: float) -> np.ndarray:
    return replay(C0, GameLog.from_pairs(i, j, s, h), eta)


def timed(fn, *args) -> tuple[float, object]:
    start = time.perf_counter()
    out = fn(*args)
    return time.perf_counter() - start, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--games", type=int, default=1_000_000)
    parser.add_argument("--players", type=int, default=10_000)
    parser.add_argument("--baseline-games", type=int, default=20_000)
    parser.add_argument("--eta", type=float, default=0.1)
    args = parser.parse_args()

    rng = np.random.default_rng(0)
    n, m = args.games, args.players
    i = rng.integers(0, m, n)
    j = (i + rng.integers(1, m, n)) % m
    s = rng.choice([0.0, 0.5, 1.0], n, p=[0.4, 0.2, 0.4])
    h = np.full(n, 0.1)
    nb = min(args.baseline_games, n)
    keys = [f"p{p}" for p in range(m)]

    rows = []
    for k in (1, 2, 3):
        C0 = initial_vectors(keys, k=k, seed=0, scale=0.5)
        t_replay, C_fast = timed(encode_and_replay, C0, i, j, s, h, args.eta)
        t_plain, C_plain = timed(plain_loop, C0.copy(), i[:nb], j[:nb], s[:nb], h[:nb], args.eta)
        t_apply, _ = timed(apply_game_loop, C0.copy(), i[:nb], j[:nb], s[:nb], h[:nb], args.eta)
        check = encode_and_replay(C0, i[:nb], j[:nb], s[:nb], h[:nb], args.eta)
        rows.append(
            {
                "k": k,
                "games": n,
                "players": m,
                "replay_seconds": t_replay,
                "replay_games_per_s": n / t_replay,
                "plain_loop_games_per_s": nb / t_plain,
                "apply_game_loop_games_per_s": nb / t_apply,
                "speedup_vs_plain_loop": (n / t_replay) / (nb / t_plain),
                "max_abs_diff_vs_plain_loop": float(np.abs(check - C_plain).max()),
                "final_vectors_finite": bool(np.isfinite(C_fast).all()),
            }
        )

    header = f"{'k':>2} {'replay games/s':>15} {'plain loop/s':>13} {'apply_game/s':>13} {'speedup':>8} {'max|Δ|':>9}"
    print(f"{n:,} two-player games over {m:,} players; baselines on the first {nb:,} games")
    print(header)
    for r in rows:
        print(
            f"{r['k']:>2} {r['replay_games_per_s']:>15,.0f} {r['plain_loop_games_per_s']:>13,.0f}"
            f" {r['apply_game_loop_games_per_s']:>13,.0f} {r['speedup_vs_plain_loop']:>7.1f}x"
            f" {r['max_abs_diff_vs_plain_loop']:>9.1e}"
        )
    RESULTS.mkdir(exist_ok=True)
    meta = {"python": platform.python_version(), "numpy": np.__version__, "cpus": os.cpu_count()}
    (RESULTS / "bench_rating.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=2) + "\n")
    print(f"wrote {RESULTS / 'bench_rating.json'}")


if __name__ == "__main__":
    main()
