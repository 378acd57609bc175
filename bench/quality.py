"""Prequential rating quality: predict each game, then learn from it (issue 6, first version).

    python bench/quality.py

Streams, in time order: the computer-chess games, both football seasons and
the multiplayer team tournament of tests/data (teams and multiplayer games
count through their pair terms, weight 1/(N-1)), and synthetic streams drawn
from a known advantage matrix: a pure Elo game, a pure disc game (seed 004
Example 2) and Elo + disc mixtures with Elo shares 0.75 / 0.5 / 0.25.

Raters: the ladder defaults (k = 1, η = 0.1, init_scale 0.5), the same rule at
k = 2, online Elo with its learning rate tuned on the stream (optimistic), the
un-normalised mElo step of seed 000 eq. 2 (k = 1, η tuned), and the offline
refit's held-out log loss with, for synthetic streams, the true model's.
Glicko-2 and TrueSkill/openskill are not in this first version.

Prints one table of prequential log loss (rows: streams, columns: raters) and
writes bench/results/quality.json.
"""

from __future__ import annotations

import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np
from scipy.special import expit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from app.rating import Game, GameLog, initial_vectors, replay_history  # noqa: E402
from app.rating.model import omega_apply, rowdot  # noqa: E402
from app.rating.refit import evaluate, fit, split_games  # noqa: E402

DATA = ROOT / "tests" / "data"
RESULTS = Path(__file__).parent / "results"
CHESS = {"1-0": (1, 2), "0-1": (2, 1), "1/2-1/2": (1, 1)}


def indexed(games: list[tuple[list[list[str]], list[float]]]) -> tuple[GameLog, int]:
    index: dict[str, int] = {}
    encoded = []
    for sides, ranks in games:
        ids = tuple(tuple(index.setdefault(p, len(index)) for p in side) for side in sides)
        encoded.append(Game(ids, tuple(ranks)))
    return GameLog.from_games(encoded), len(index)


def chess() -> tuple[GameLog, int]:
    data = json.loads((DATA / "chess_engines.json").read_text())
    return indexed([([[w], [b]], CHESS[r]) for w, b, r in data])


def football(name: str) -> tuple[GameLog, int]:
    matches = [m for m in json.loads((DATA / name).read_text())["matches"] if "score" in m]
    matches.sort(key=lambda m: m["date"])
    games = []
    for m in matches:
        g1, g2 = m["score"]["ft"]
        games.append(([[m["team1"]], [m["team2"]]], (1, 2) if g1 > g2 else (2, 1) if g1 < g2 else (1, 1)))
    return indexed(games)


def tournament() -> tuple[GameLog, int]:
    data = json.loads((DATA / "multiplayer_team_tournament.json").read_text())["interactions"]
    games = []
    for g in data:
        scores = np.array(g["outcomes"], dtype=float)
        ranks = 1 + (scores[None, :] > scores[:, None]).sum(axis=1)
        games.append((g["players"], ranks.tolist()))
    return indexed(games)


def synthetic(
    elo_share: float, players: int = 300, games: int = 30_000, seed: int = 0
) -> tuple[GameLog, int, np.ndarray]:
    """Games from a_ij = w_e (r_i - r_j) + w_d · 2(u_i v_j - v_i u_j) as k = 2 vectors (exact)."""
    rng = np.random.default_rng(seed)
    r = rng.normal(scale=1.0, size=players)
    theta = rng.uniform(0, 2 * np.pi, players)
    radius = rng.uniform(0.5, 1.5, players)
    u, v = radius * np.cos(theta), radius * np.sin(theta)
    we, wd = 2.0 * elo_share, 2.0 * (1 - elo_share)
    # Block 1: (√we r, √we) gives we (r_i - r_j); block 2: √(2 wd) (u, v) gives 2 wd (u_i v_j - v_i u_j).
    C = np.column_stack([np.sqrt(we) * r, np.sqrt(we) * np.ones(players), np.sqrt(2 * wd) * u, np.sqrt(2 * wd) * v])
    i = rng.integers(0, players, games)
    j = (i + rng.integers(1, players, games)) % players
    p = expit(rowdot(C[i], omega_apply(C[j])))
    return GameLog.from_pairs(i, j, (rng.random(games) < p).astype(float)), players, C


def log_loss(p: np.ndarray, log: GameLog) -> float:
    p = np.clip(p, 1e-12, 1 - 1e-12)
    s, w = log.pair_outcome, log.pair_weight
    return float(-np.dot(w, s * np.log(p) + (1 - s) * np.log1p(-p)) / np.sum(w))


def melo(log: GameLog, m: int, k: int = 1, eta: float = 0.1, scale: float = 0.5) -> np.ndarray:
    """Pre-game forecasts of the normalised rule (SPEC §3-§6): one replay, exact."""
    C0 = initial_vectors([str(n) for n in range(m)], k, seed=0, scale=scale)
    return replay_history(C0, log, eta).pair_p


def _games(log: GameLog):
    for g in range(log.n_games):
        members = log.member_player[log.member_ptr[g] : log.member_ptr[g + 1]]
        member_side = log.member_side[log.member_ptr[g] : log.member_ptr[g + 1]]
        pairs = range(log.pair_ptr[g], log.pair_ptr[g + 1])
        yield members, member_side, pairs


def online_elo(log: GameLog, m: int, rate: float) -> np.ndarray:
    """Elo in logits, teams as mean ratings, every member moved by the side's step (seed 002)."""
    r = np.zeros(m)
    p_out = np.empty(len(log.pair_a))
    for members, member_side, pairs in _games(log):
        side_rating = {s: r[members[member_side == s]].mean() for s in set(member_side.tolist())}
        step = dict.fromkeys(side_rating, 0.0)
        for q in pairs:
            a, b = int(log.pair_a[q]), int(log.pair_b[q])
            p = 1.0 / (1.0 + np.exp(side_rating[b] - side_rating[a]))
            p_out[q] = p
            d = rate * log.pair_weight[q] * (log.pair_outcome[q] - p)
            step[a] += d
            step[b] -= d
        for s, d in step.items():
            r[members[member_side == s]] += d
    return p_out


def unnormalised(log: GameLog, m: int, eta: float) -> np.ndarray:
    """Seed 000 eq. 2 (k = 1) generalised like SPEC §4/§6, without the 1/n normalisation."""
    C = initial_vectors([str(n) for n in range(m)], 1, seed=0, scale=0.5)
    p_out = np.empty(len(log.pair_a))
    for members, member_side, pairs in _games(log):
        sides = {s: C[members[member_side == s]].mean(axis=0) for s in set(member_side.tolist())}
        step = {s: np.zeros(2) for s in sides}
        for q in pairs:
            a, b = int(log.pair_a[q]), int(log.pair_b[q])
            p = expit(sides[a] @ omega_apply(sides[b]))
            p_out[q] = p
            d = eta * log.pair_weight[q] * (log.pair_outcome[q] - p)
            step[a] += d * omega_apply(sides[b])
            step[b] -= d * omega_apply(sides[a])
        for s, d in step.items():
            C[members[member_side == s]] += d
    return p_out


def tuned(rater, log: GameLog, m: int, grid: list[float]) -> tuple[float, float]:
    """Best prequential log loss over the grid (tuned on the stream itself: optimistic)."""
    losses = {x: log_loss(rater(log, m, x), log) for x in grid}
    best = min(losses, key=losses.get)
    return losses[best], best


def refit_heldout(log: GameLog, m: int, C_true: np.ndarray | None) -> tuple[float, float | None]:
    train, test = split_games(log, 0.2, seed=0)
    C = fit(log, m, 2, pairs=train, seed=1).C
    return evaluate(C, log, test).log_loss, None if C_true is None else evaluate(C_true, log, test).log_loss


def main() -> None:
    streams = {
        "chess": (*chess(), None),
        "premier league": (*football("football_premier_league_2019.json"), None),
        "la liga": (*football("football_la_liga_2019.json"), None),
        "team tournament": (*tournament(), None),
        "pure Elo": synthetic(1.0),
        "Elo 0.75 + disc": synthetic(0.75),
        "Elo 0.5 + disc": synthetic(0.5),
        "Elo 0.25 + disc": synthetic(0.25),
        "pure disc": synthetic(0.0),
    }
    rows = []
    for name, (log, m, C_true) in streams.items():
        start = time.perf_counter()
        elo, elo_rate = tuned(online_elo, log, m, [0.02, 0.05, 0.1, 0.2, 0.4, 0.8])
        unnorm, unnorm_eta = tuned(unnormalised, log, m, [0.01, 0.03, 0.1, 0.3])
        refit_loss, true_loss = refit_heldout(log, m, C_true)
        row = {
            "stream": name,
            "games": log.n_games,
            "players": m,
            "melo default (k=1, η=0.1)": log_loss(melo(log, m), log),
            "melo k=2": log_loss(melo(log, m, k=2), log),
            "Elo, tuned": elo,
            "Elo rate": elo_rate,
            "un-normalised mElo, tuned": unnorm,
            "un-normalised η": unnorm_eta,
            "refit k=2, held-out": refit_loss,
            "true model, held-out": true_loss,
        }
        rows.append(row)
        print(f"  {name}: {time.perf_counter() - start:.1f} s", flush=True)
    columns = ["melo default (k=1, η=0.1)", "melo k=2", "Elo, tuned", "un-normalised mElo, tuned"]
    print("\nprequential log loss (lower is better); refit and true model on a 20% held-out split\n")
    print("| stream | games | " + " | ".join(columns) + " | refit k=2 | true model |")
    print("|---|---|" + "---|" * (len(columns) + 2))
    for r in rows:
        true = "" if r["true model, held-out"] is None else f"{r['true model, held-out']:.4f}"
        cells = " | ".join(f"{r[c]:.4f}" for c in columns)
        print(f"| {r['stream']} | {r['games']:,} | {cells} | {r['refit k=2, held-out']:.4f} | {true} |")
    RESULTS.mkdir(exist_ok=True)
    out = {"machine": {"cpus": os.cpu_count(), "python": platform.python_version()}, "rows": rows}
    (RESULTS / "quality.json").write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
