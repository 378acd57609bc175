"""Prequential rating quality: predict each game, then learn from it.

    python -m bench.quality

Streams, in time order: the computer-chess games, both football seasons and
the multiplayer team tournament of tests/data (teams and multiplayer games
count through their pair terms, weight 1/(N-1)), and synthetic streams drawn
from a known advantage matrix: a pure Elo game, a pure disc game ([Limitations]
Example 2) and Elo + disc mixtures with Elo shares 0.75 / 0.5 / 0.25.

Raters:
- the normalised rule with the Guide's defaults (k = 1, η = 0.1, N(0, 0.5²) starts);
- the same rule with one configuration (k, η, per-player rates shrinking with
  games, initial offset and scale) chosen on the first half of every stream:
  the one whose worst margin over tuned Elo (also tuned on the first halves)
  is smallest, where the disc and mixture streams must win by 0.03.  It is
  scored on the second halves, which the choice never saw;
- that configuration with the service's auto-refit policy (app.analysis.auto): a
  background refit (mathematics §9) every time the log has grown by 20% from 1,000
  games on, applied only when it would have predicted the latest games better
  than the online rule did;
- online Elo and the un-normalised mElo step of [Guide] eq. 2, each with its
  rate tuned on the half it is scored on (optimistic baselines);
- Glicko-2 and openskill's Plackett-Luce model with their usual defaults;
- the offline refit's held-out log loss with, for synthetic streams, the true model's.

Prints one table of prequential log loss (rows: streams, columns: raters),
writes bench/results/quality.json and a plot of cumulative log loss per stream.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import time
from pathlib import Path

import numpy as np
from scipy.optimize import minimize
from scipy.special import expit

from app.domain.refit_policy import FIRST_COMPARISONS, GROWTH
from app.ladders.schemas import (
    DEFAULT_ETA,
    DEFAULT_ETA_TAU,
    DEFAULT_INIT_SCALE,
    DEFAULT_INIT_V0,
    DEFAULT_K,
    DEFAULT_SEAT_PRIOR,
    RULE_LIMITS,
)
from app.rating import (
    ELO_PER_LOGIT,
    Game,
    GameLog,
    LearningRate,
    field_prior,
    hodge_strength,
    initial_vectors,
    replay_history,
    strength_se,
)
from app.rating.model import omega_apply, rowdot
from app.rating.refit.fit import fit
from app.rating.refit.guard import guard, guard_window
from app.rating.refit.metrics import evaluate
from app.rating.refit.pipeline import RefitOptions, refit
from app.rating.refit.prior import L2, penalty_weights
from app.rating.refit.split import split_games
from app.rating.seats import Seats, prior_precision
from app.rating.tuning import SEAT_PRIOR_SDS, choose_rate
from devtools.streams import comeback_stream

ROOT = Path(__file__).resolve().parent.parent

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


def football(name: str, folder: Path = DATA) -> tuple[GameLog, int]:
    matches = [m for m in json.loads((folder / name).read_text())["matches"] if "score" in m]
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


def log_loss(p: np.ndarray, log: GameLog, part: slice = slice(None)) -> float:
    """Mean log loss of the forecasts ``p`` over the pair terms of the games in ``part`` (weights 1/(N-1))."""
    lo, hi, _ = part.indices(log.n_games)
    q = slice(log.pair_ptr[lo], log.pair_ptr[hi])
    p = np.clip(p[q], 1e-12, 1 - 1e-12)
    s, w = log.pair_outcome[q], log.pair_weight[q]
    return float(-np.dot(w, s * np.log(p) + (1 - s) * np.log1p(-p)) / np.sum(w))


def loss_gap(p: np.ndarray, q: np.ndarray, log: GameLog, part: slice) -> tuple[float, float]:
    """log_loss(p) - log_loss(q) over ``part``, and its standard error over games (a ratio estimator: each
    game's weighted loss difference d_g against its weight W_g)."""
    lo, hi, _ = part.indices(log.n_games)
    terms = slice(log.pair_ptr[lo], log.pair_ptr[hi])
    s, w = log.pair_outcome[terms], log.pair_weight[terms]

    def losses(x: np.ndarray) -> np.ndarray:
        x = np.clip(x[terms], 1e-12, 1 - 1e-12)
        return -(s * np.log(x) + (1 - s) * np.log1p(-x))

    game = np.repeat(np.arange(hi - lo), np.diff(log.pair_ptr[lo : hi + 1]))
    d = np.bincount(game, weights=w * (losses(p) - losses(q)), minlength=hi - lo)
    W = np.bincount(game, weights=w, minlength=hi - lo)
    gap = float(d.sum() / W.sum())
    n = hi - lo
    return gap, float(np.sqrt(n / (n - 1) * np.sum((d - gap * W) ** 2)) / W.sum())


def halves(log: GameLog) -> tuple[slice, slice]:
    return slice(0, log.n_games // 2), slice(log.n_games // 2, None)


#: the Guide's defaults (the ladder defaults before this benchmark): k = 1, η = 0.1, zero-mean N(0, 0.5²) starts.
SEED_DEFAULT = {"k": 1, "eta": 0.1, "tau": None, "offset": 0.0, "scale": 0.5}


def start_vectors(m: int, k: int, scale: float, offset: float) -> np.ndarray:
    """Seeded initial vectors of m players with mean (0, v₀, 0, …) (mathematics §2)."""
    mean = np.zeros(2 * k)
    mean[1] = offset
    return initial_vectors([str(n) for n in range(m)], k, seed=0, scale=scale, offset=mean)


def melo(
    log: GameLog,
    m: int,
    k: int = 1,
    eta: float = 0.1,
    scale: float = 0.5,
    tau: float | None = None,
    offset: float = 0.0,
) -> np.ndarray:
    """Pre-game forecasts of the normalised rule (mathematics §3-§6) with its options: one exact replay.

    ``tau`` shrinks each player's η with games played (LearningRate); ``offset`` is v₀ of the
    initial mean (0, v₀, 0, …), which starts players near the Elo manifold c = (r, 1) (mathematics §2).
    """
    return replay_history(start_vectors(m, k, scale, offset), log, LearningRate(eta, tau)).pair_p


def with_refits(
    log: GameLog,
    m: int,
    k: int,
    eta: float,
    scale: float,
    tau: float | None,
    offset: float,
    snapshots: tuple[int, ...] = (),
    refits: bool = True,
):
    """The normalised rule plus the service's auto-refit policy; the forecasts, each refit's outcome, snapshots.

    The same policy and guard as ``app.analysis.auto`` and ``app.analysis.refit_guard.guard_verdict``:
    a refit is due at FIRST_COMPARISONS comparisons (pairs of sides) and whenever they have grown by GROWTH
    since the last one.  It is fitted (k chosen among 0..k, mathematics §9) on the games
    before the latest games of the log (``guard_window``: never reaching back past
    the last applied refit), and the online rule replayed from it over those games; only
    if that predicts them better than the online rule did is the refit of the
    whole log applied.  Players who have not played keep their initial vectors.
    ``snapshots``: after these many games, keep (vectors, games played) in the third result.
    ``refits=False``: the online rule alone.
    """
    C0 = start_vectors(m, k, scale, offset)
    rate = LearningRate(eta, tau)
    C, played = C0.copy(), np.zeros(m)
    p_out = np.empty(len(log.pair_a))
    outcomes: list[int | None] = []
    kept: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    def reaching(pairs: int) -> int:  # the games after which the log compares at least ``pairs`` pairs of sides
        return min(log.n_games, int(np.searchsorted(log.pair_ptr, pairs)))

    done, due, applied = 0, reaching(FIRST_COMPARISONS) if refits else log.n_games, 0
    while done < log.n_games:
        end = min(log.n_games, due, *(t for t in snapshots if t > done))
        part = log.take(np.arange(done, end))
        history = replay_history(C, part, rate, games0=played)
        p_out[log.pair_ptr[done] : log.pair_ptr[end]] = history.pair_p
        C, played = history.C, played + np.bincount(part.member_player, minlength=m)
        if end in snapshots:
            kept[end] = (C.copy(), played.copy())
        if end == due and end < log.n_games:
            seen = log.take(np.arange(end))
            window = guard_window(end, end - applied)
            served = p_out[log.pair_ptr[end - window] : log.pair_ptr[end]]
            verdict = guard(seen, C0, window, served, rate, k, list(range(k + 1)))
            if verdict.better:
                full = refit(seen, m, k, RefitOptions(select_k=[verdict.k], restarts=1))
                C[played > 0] = full.C[played > 0]
                applied = end
            outcomes.append(verdict.k if verdict.better else None)
            due = max(end + 1, reaching(max(FIRST_COMPARISONS, int(np.ceil((1 + GROWTH) * log.pair_ptr[end])))))
        done = end
    return p_out, outcomes, kept


def _games(log: GameLog):
    for g in range(log.n_games):
        members = log.member_player[log.member_ptr[g] : log.member_ptr[g + 1]]
        member_side = log.member_side[log.member_ptr[g] : log.member_ptr[g + 1]]
        pairs = range(log.pair_ptr[g], log.pair_ptr[g + 1])
        yield members, member_side, pairs


def online_elo(log: GameLog, m: int, rate: float) -> np.ndarray:
    """Elo in logits, teams as mean ratings, every member moved by the side's step ([Expanding]); with the
    log's explicit seat advantages (e.g. a home advantage) added to each pair's logit."""
    r = np.zeros(m)
    p_out = np.empty(len(log.pair_a))
    for members, member_side, pairs in _games(log):
        side_rating = {s: r[members[member_side == s]].mean() for s in set(member_side.tolist())}
        step = dict.fromkeys(side_rating, 0.0)
        for q in pairs:
            a, b = int(log.pair_a[q]), int(log.pair_b[q])
            p = 1.0 / (1.0 + np.exp(side_rating[b] - side_rating[a] - log.pair_shift[q]))
            p_out[q] = p
            d = rate * log.pair_weight[q] * (log.pair_outcome[q] - p)
            step[a] += d
            step[b] -= d
        for s, d in step.items():
            r[members[member_side == s]] += d
    return p_out


def unnormalised(log: GameLog, m: int, eta: float) -> np.ndarray:
    """[Guide] eq. 2 (k = 1) generalised like mathematics §4/§6, without the 1/n normalisation."""
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


def glicko2_rater(log: GameLog, m: int, rd: float = 350.0, vol: float = 0.06) -> np.ndarray:
    """Glicko-2 (package ``glicko2``; its defaults: 1500, RD 350, σ 0.06), every game one rating period.

    A side is its members' mean rating with the root-mean-square RD; each member is
    updated against the opposing sides with the pair outcomes (a member the package cannot update, every
    forecast against them 0 or 1 or past a float, keeps their rating).  P(a beats b) is
    1 / (1 + exp(-g(√(φ_a² + φ_b²)) (μ_a - μ_b))) on Glicko-2's scale, a pair's shift (logits) added.
    """
    import glicko2

    players = [glicko2.Player(rating=1500, rd=rd, vol=vol) for _ in range(m)]
    p_out = np.empty(len(log.pair_a))
    scale = 173.7178
    for members, member_side, pairs in _games(log):
        sides = {}
        for s in set(member_side.tolist()):
            team = [players[i] for i in members[member_side == s]]
            sides[s] = (np.mean([t.rating for t in team]), np.sqrt(np.mean([t.rd**2 for t in team])))
        against: dict[int, list] = {s: [] for s in sides}
        for q in pairs:
            a, b = int(log.pair_a[q]), int(log.pair_b[q])
            (ra, da), (rb, db) = sides[a], sides[b]
            phi = np.hypot(da, db) / scale
            g = 1.0 / np.sqrt(1.0 + 3.0 * phi**2 / np.pi**2)
            p_out[q] = 1.0 / (1.0 + np.exp(-g * ((ra - rb) / scale + log.pair_shift[q])))
            against[a].append((rb, db, log.pair_outcome[q]))
            against[b].append((ra, da, 1.0 - log.pair_outcome[q]))
        for s, games in against.items():
            r, d, o = (list(x) for x in zip(*games, strict=True))
            for i in members[member_side == s]:
                # Every forecast 0 or 1, or past a float (a free-for-all's far ends at a large RD): nothing the
                # package can weigh; the member keeps their rating.
                with contextlib.suppress(ArithmeticError):
                    players[i].update_player(r, d, o)
    return p_out


def openskill_rater(log: GameLog, m: int) -> np.ndarray:
    """openskill's Plackett-Luce model with its defaults: teams and finishing ranks natively."""
    from openskill.models import PlackettLuce

    model = PlackettLuce()
    ratings = [model.rating() for _ in range(m)]
    p_out = np.empty(len(log.pair_a))
    for members, member_side, pairs in _games(log):
        order = sorted(set(member_side.tolist()))
        teams = {s: [ratings[i] for i in members[member_side == s]] for s in order}
        score = dict.fromkeys(order, 0.0)
        for q in pairs:
            a, b = int(log.pair_a[q]), int(log.pair_b[q])
            p_out[q] = model.predict_win([teams[a], teams[b]])[0]
            score[a] += log.pair_outcome[q]
            score[b] += 1.0 - log.pair_outcome[q]
        ranks = [-score[s] for s in order]  # more pair wins = better finish; equal = tie
        new = model.rate([teams[s] for s in order], ranks=ranks)
        for s, team in zip(order, new, strict=True):
            for i, rating in zip(members[member_side == s], team, strict=True):
                ratings[i] = rating
    return p_out


ELO_RATES = [0.02, 0.05, 0.1, 0.2, 0.4, 0.8]
#: Larger η do worse (at 3 the vectors overflow): 0.5 and 1 lost to 0.3 on chess, the Premier
#: League, the team tournament, pure Elo and Elo 0.5 + disc.
UNNORMALISED_ETAS = [0.01, 0.03, 0.1, 0.3]


def tuned(forecasts: dict[float, np.ndarray], log: GameLog, part: slice) -> tuple[float, float]:
    """Best prequential log loss on ``part`` over a rater's rates (tuned on what it is scored on)."""
    losses = {x: log_loss(p, log, part) for x, p in forecasts.items()}
    best = min(losses, key=losses.get)
    return losses[best], best


def refit_heldout(log: GameLog, m: int, C_true: np.ndarray | None) -> tuple[float, float | None]:
    train, test = split_games(log, 0.2, seed=0)
    C = fit(log, m, 2, penalty_weights(2, L2), pairs=train, seed=1).C
    return evaluate(C, log, test).log_loss, None if C_true is None else evaluate(C_true, log, test).log_loss


GRID = [
    {"k": k, "eta": eta, "tau": tau, "offset": offset, "scale": scale}
    for k in (1, 2)
    for eta in (0.5, 0.7, 1.0)
    for tau in (3.0, 5.0, 10.0, 20.0)
    for offset in (1.0, 1.5)
    for scale in (0.05, 0.1)
]
#: Streams with cycles, where the defaults must beat tuned Elo by this much; elsewhere by 0.
CYCLIC = {"Elo 0.75 + disc", "Elo 0.5 + disc", "Elo 0.25 + disc", "pure disc"}
MARGIN = 0.03


def worst_margin(losses: dict[str, float], elo: dict[str, float]) -> float:
    """How far a rater misses the targets on its worst stream (≤ 0: all reached)."""
    return max(losses[s] - elo[s] + (MARGIN if s in CYCLIC else 0.0) for s in losses)


def all_streams() -> dict[str, tuple[GameLog, int, np.ndarray | None]]:
    return {
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


#: The service's ladder defaults (app.ladders.schemas), in this file's terms.
LADDER_DEFAULTS = {"k": DEFAULT_K, "eta": DEFAULT_ETA, "tau": DEFAULT_ETA_TAU, "scale": DEFAULT_INIT_SCALE}
LADDER_DEFAULTS["offset"] = DEFAULT_INIT_V0
RATE = LearningRate(DEFAULT_ETA, DEFAULT_ETA_TAU)
#: Coverage is read when the players have played this many games each, on average.
GAMES_EACH = (10, 30, 100)


def coverage(streams: dict) -> list[dict]:
    """How often the true strength lies within ±1.96 standard errors of the one shown (mathematics §8).

    On the synthetic streams, whose true vectors are known: the Hodge strength
    of the ladder defaults' vectors (with the auto-refit policy, as a ladder
    runs, and the online rule alone) against the true one, with
    ``strength_se`` from each player's games played, read when the players have
    played 10, 30 and 100 games each on average.  The target is 0.90-0.98.
    """
    rows = []
    for name, (log, m, C_true) in streams.items():
        if C_true is None:
            continue
        truth = hodge_strength(C_true)
        snapshots = tuple(n * m // 2 for n in GAMES_EACH)  # two players a game
        for rater, refits in (("defaults (auto refit)", True), ("defaults, online only", False)):
            start = time.perf_counter()
            _, _, kept = with_refits(log, m, **LADDER_DEFAULTS, snapshots=snapshots, refits=refits)
            row = {"stream": name, "rater": rater}
            for n, t in zip(GAMES_EACH, snapshots, strict=True):
                C, played = kept[t]
                error = hodge_strength(C) - truth
                # Each player's points (wins + ½ draws) in the first t games (two-player games: a pair per game).
                first, second, result = (
                    log.member_player[0 : 2 * t : 2],
                    log.member_player[1 : 2 * t : 2],
                    log.pair_outcome[:t],
                )
                score = np.bincount(first, result, minlength=m) + np.bincount(second, 1.0 - result, minlength=m)
                se = strength_se(C, played, RATE, field=field_prior(C, played, score, RATE))
                row[f"{n} games"] = float(np.mean(np.abs(error) <= 1.96 * se))
            rows.append(row)
            print(f"  coverage on {name}, {rater}: {time.perf_counter() - start:.1f} s", flush=True)
    print("\nfraction of players whose true strength lies within ±1.96 standard errors (target 0.90-0.98)\n")
    print("| stream | rater | " + " | ".join(f"{n} games each" for n in GAMES_EACH) + " |")
    print("|---|---|" + "---|" * len(GAMES_EACH))
    for row in rows:
        cells = " | ".join(f"{row[f'{n} games']:.2f}" for n in GAMES_EACH)
        print(f"| {row['stream']} | {row['rater']} | {cells} |")
    return rows


#: Streams whose first side has a seat of its own: white moves first, the home side plays at home.
SEATED = {"chess": ("white", "black"), "premier league": ("home", "away"), "la liga": ("home", "away")}
HOME_ADVANTAGES = [round(0.05 * n, 2) for n in range(17)]  # 0 to 0.8 logits
#: Standard deviations (logits) of the seats' prior tried in the seats table.
PRIOR_SDS = (0.25, 0.5, 1.0, 2.0, 4.0)


def seat_table(streams: dict) -> list[dict]:
    """Learned seats (mathematics §5) against Elo given the same information: a home/white advantage.

    The defaults with the first side's and second side's seats learned online,
    against online Elo with its rate and a fixed advantage of the first side
    both tuned on the half it is scored on (optimistic), and both without seats.
    Prequential log loss on the second halves.
    """
    rows = []
    for name, (first, second_seat) in SEATED.items():
        log, m, _ = streams[name]
        i, j = log.member_player[0::2], log.member_player[1::2]
        seated = GameLog.from_pairs(i, j, log.pair_outcome, seats=(0, 1))
        scored = halves(log)[1]
        C0 = start_vectors(m, DEFAULT_K, DEFAULT_INIT_SCALE, DEFAULT_INIT_V0)
        history = replay_history(C0, seated, RATE, seats=Seats.fresh(2, prior_precision(DEFAULT_SEAT_PRIOR)))
        elo_home, rate, advantage = min(
            (log_loss(online_elo(GameLog.from_pairs(i, j, log.pair_outcome, h), m, r), log, scored), r, h)
            for r in ELO_RATES
            for h in HOME_ADVANTAGES
        )
        row = {
            "stream": name,
            "seats": [first, second_seat],
            "defaults": log_loss(melo(log, m, **LADDER_DEFAULTS), log, scored),
            "defaults + seats": log_loss(history.pair_p, log, scored),
            "learned advantage (logits)": float(history.seats.advantage[0] - history.seats.advantage[1]),
            "Elo, tuned": tuned({r: online_elo(log, m, r) for r in ELO_RATES}, log, scored)[0],
            "Elo + advantage, tuned": elo_home,
            "Elo rate, advantage": [rate, advantage],
            "seat prior sd": {},
        }
        for sd in PRIOR_SDS:
            p = replay_history(C0, seated, RATE, seats=Seats.fresh(2, prior_precision(sd)))
            row["seat prior sd"][sd] = {
                "first half": log_loss(p.pair_p, log, halves(log)[0]),
                "whole": log_loss(p.pair_p, log),
            }
        rows.append(row)
    print("\nprequential log loss on the second halves, with the first side's seat learned (lower is better);")
    print("Elo's rate and advantage tuned on that half itself (optimistic)\n")
    print("| stream | defaults | defaults + seats | learned h₁ - h₂ | Elo, tuned | Elo + advantage, tuned | target |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        reached = "reached" if r["defaults + seats"] <= r["Elo + advantage, tuned"] else "not reached"
        print(
            f"| {r['stream']} | {r['defaults']:.4f} | {r['defaults + seats']:.4f} | "
            f"{r['learned advantage (logits)']:.3f} | {r['Elo, tuned']:.4f} | {r['Elo + advantage, tuned']:.4f} "
            f"(rate {r['Elo rate, advantage'][0]}, advantage {r['Elo rate, advantage'][1]}) | {reached} |"
        )
    print("\nthe seats' prior: prequential log loss over the first half / the whole stream with each seat's advantage")
    print(
        f"starting at 0 with this standard deviation (logits; a new ladder's is {DEFAULT_SEAT_PRIOR:g}, older ones' 1)"
    )
    print()
    print("| stream | " + " | ".join(f"sd {sd:g}" for sd in PRIOR_SDS) + " |")
    print("|---|" + "---|" * len(PRIOR_SDS))
    for r in rows:
        cells = (f"{v['first half']:.4f} / {v['whole']:.4f}" for v in r["seat prior sd"].values())
        print(f"| {r['stream']} | " + " | ".join(cells) + " |")
    return rows


def rate_table(streams: dict) -> list[dict]:
    """The learning rate chosen from a ladder's own log (app.rating.tuning, as its auto refits choose it): chosen
    on the first half of each stream, replayed over the whole stream, scored on the second half.

    The ladder defaults against the same with the chosen rate, with the first side's seat learned where the
    stream has one (white, home), and online Elo with its rate and the first side's advantage tuned on the
    half it is scored on (optimistic).  Targets: the chosen rate beats that Elo on chess and both football
    seasons, and stays 0.03 ahead of tuned Elo on the cyclic streams.
    """
    rows = []
    for name, (log, m, _) in streams.items():
        start = time.perf_counter()
        first, second = halves(log)
        seated = None
        if name in SEATED:
            i, j = log.member_player[0::2], log.member_player[1::2]
            seated = GameLog.from_pairs(i, j, log.pair_outcome, seats=(0, 1))
        games = seated if seated is not None else log
        seats = Seats.fresh(2, prior_precision(DEFAULT_SEAT_PRIOR)) if seated is not None else None
        C0 = start_vectors(m, DEFAULT_K, DEFAULT_INIT_SCALE, DEFAULT_INIT_V0)
        choice = choose_rate(
            C0, games.take(np.arange(first.stop)), RATE, seats, seat_sds=SEAT_PRIOR_SDS, limits=RULE_LIMITS
        )
        chosen = choice.rate
        defaults = replay_history(C0, games, RATE, seats=seats).pair_p
        chosen_seats = None if seats is None else Seats.fresh(2, prior_precision(choice.seat_prior))
        tuned_rate = replay_history(C0, games, chosen, seats=chosen_seats).pair_p
        i, j = log.member_player[0::2], log.member_player[1::2]
        advantages = HOME_ADVANTAGES if seated is not None else [0.0]
        elos = {
            (r, h): online_elo(GameLog.from_pairs(i, j, log.pair_outcome, h), m, r) if h else online_elo(log, m, r)
            for r in ELO_RATES
            for h in advantages
        }
        hindsight = min(elos, key=lambda c: log_loss(elos[c], log, second))
        fair = min(elos, key=lambda c: log_loss(elos[c], log, first))
        gap, gap_error = loss_gap(tuned_rate, elos[hindsight], log, second)
        rows.append(
            {
                "stream": name,
                "seats": seated is not None,
                "defaults": log_loss(defaults, log, second),
                "chosen rate": log_loss(tuned_rate, log, second),
                "rate": {"eta": chosen.eta, "eta_tau": chosen.tau, "seat_prior": choice.seat_prior},
                "Elo, tuned": log_loss(elos[hindsight], log, second),
                "Elo, tuned on the first half": log_loss(elos[fair], log, second),
                "gap to tuned Elo": gap,
                "gap standard error": gap_error,
            }
        )
        print(f"  rate on {name}: {time.perf_counter() - start:.1f} s", flush=True)
    print("\nprequential log loss on the second halves, the rate chosen on the first (lower is better); seats where")
    print("the stream has them; Elo's rate (and first-side advantage) tuned on the half it is scored on (optimistic)\n")
    print(
        "| stream | seats | defaults | chosen rate (η, τ) | Elo, tuned | gap ± se | Elo, tuned on the first half "
        "| target |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        margin = 0.0 if r["stream"] in ("chess", "premier league", "la liga", "team tournament", "pure Elo") else 0.03
        r["target"] = "reached" if r["chosen rate"] <= r["Elo, tuned"] - margin else "not reached"
        prior = "" if r["rate"]["seat_prior"] is None else f", seats {r['rate']['seat_prior']:g}"
        rate = f"({r['rate']['eta']:g}, {r['rate']['eta_tau']}{prior})"
        print(
            f"| {r['stream']} | {'yes' if r['seats'] else 'no'} | {r['defaults']:.4f} | {r['chosen rate']:.4f} "
            f"{rate} | {r['Elo, tuned']:.4f} | {r['gap to tuned Elo']:+.4f} ± {r['gap standard error']:.4f} | "
            f"{r['Elo, tuned on the first half']:.4f} | {r['target']} |"
        )
    return rows


def _bradley_terry(a: np.ndarray, b: np.ndarray, s: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray]:
    """Strengths (logits, mean 0) with a home advantage, fitted by maximum likelihood (a draw scores 1/2), and
    their variances from the Hessian, about the field's mean."""
    l2 = 1e-3  # a whisper of a prior: pins the mean, moves nothing else

    def loss(x: np.ndarray) -> tuple[float, np.ndarray]:
        p = expit(x[a] - x[b] + x[m])
        g = p - s
        grad = np.bincount(a, g, m + 1) - np.bincount(b, g, m + 1) + 2 * l2 * np.append(x[:m], 0.0)
        grad[m] = g.sum()
        return float(-np.sum(s * np.log(p) + (1 - s) * np.log1p(-p)) + l2 * x[:m] @ x[:m]), grad

    x = minimize(loss, np.zeros(m + 1), jac=True, method="L-BFGS-B").x
    p = expit(x[a] - x[b] + x[m])
    w = p * (1 - p)
    H = 2 * l2 * np.eye(m)
    np.add.at(H, (a, a), w)
    np.add.at(H, (b, b), w)
    np.add.at(H, (a, b), -w)
    np.add.at(H, (b, a), -w)
    centre = np.eye(m) - 1.0 / m
    return x[:m] - x[:m].mean(), np.diag(centre @ np.linalg.inv(H) @ centre)


def drift_table() -> list[dict]:
    """How far strengths wander with time, on the dated streams (the football seasons): each season's first and
    second halves fitted apart; the spread of the teams' changes beyond what the two fits' own errors explain,
    per year between the halves' mean dates, is the drift's variance; with the upper end of one standard error of
    that spread (a variance of n teams has a relative error of √(2/(n-1)))."""
    rows = []
    for name in ("football_premier_league_2019.json", "football_la_liga_2019.json"):
        matches = sorted(
            (m for m in json.loads((DATA / name).read_text())["matches"] if "score" in m), key=lambda m: m["date"]
        )
        teams = sorted({m["team1"] for m in matches} | {m["team2"] for m in matches})
        index = {t: n for n, t in enumerate(teams)}
        fits, days = [], []
        for part in (matches[: len(matches) // 2], matches[len(matches) // 2 :]):
            a = np.array([index[m["team1"]] for m in part])
            b = np.array([index[m["team2"]] for m in part])
            goals = np.array([m["score"]["ft"] for m in part])
            s = np.where(goals[:, 0] > goals[:, 1], 1.0, np.where(goals[:, 0] < goals[:, 1], 0.0, 0.5))
            fits.append(_bradley_terry(a, b, s, len(teams)))
            days.append(np.mean([np.datetime64(m["date"]).astype("datetime64[D]").astype(int) for m in part]))
        (r1, v1), (r2, v2) = fits
        years = (days[1] - days[0]) / 365.25
        change, noise = float(np.var(r2 - r1, ddof=1)), float(np.mean(v1 + v2))
        upper = change * (1 + np.sqrt(2 / (len(teams) - 1)))
        elo = 400 / np.log(10)
        rows.append(
            {
                "stream": name.removeprefix("football_").removesuffix(".json"),
                "years between halves": years,
                "variance of the change": change,
                "explained by the fits": noise,
                "drift (Elo/year)": float(np.sqrt(max(change - noise, 0.0) / years) * elo),
                "upper, one se (Elo/year)": float(np.sqrt(max(upper - noise, 0.0) / years) * elo),
            }
        )
    print("\nhow far strengths wander in a year: each season's halves fitted apart (logits², then Elo points)\n")
    print("| stream | years apart | variance of the change | the fits' errors | drift | upper (one se) |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['stream']} | {r['years between halves']:.2f} | {r['variance of the change']:.3f} | "
            f"{r['explained by the fits']:.3f} | {r['drift (Elo/year)']:.0f} | "
            f"{r['upper, one se (Elo/year)']:.0f} |"
        )
    return rows


def dated(name: str, folder: Path = DATA) -> tuple[GameLog, int, np.ndarray]:
    """Football seasons with home seats, and each game's day in years (as the service counts time away)."""
    matches = sorted(
        (m for m in json.loads((folder / name).read_text())["matches"] if "score" in m), key=lambda m: m["date"]
    )
    log, m = football(name, folder)
    i, j = log.member_player[0::2], log.member_player[1::2]
    days = np.array([np.datetime64(x["date"], "D").astype(np.int64) for x in matches])
    return GameLog.from_pairs(i, j, log.pair_outcome, seats=(0, 1)), m, days / 365.25


def tennis(name: str = "atp-tour-2007-2016.json") -> tuple[GameLog, int, np.ndarray]:
    """A real stream of dated results without seats (bench/data/README.md: ATP singles 2007-2016, CC BY 4.0), and
    each match's day in years; matches of one day keep the file's order (a tournament's rounds in order)."""
    matches = json.loads((ROOT / "bench" / "data" / name).read_text())["matches"]
    log, m = indexed([([[x["winner"]], [x["loser"]]], [1, 2]) for x in matches])
    days = np.array([np.datetime64(x["date"], "D").astype(np.int64) for x in matches])
    return log, m, days / 365.25


def formula_one(name: str = "f1-races-1990-2025.json") -> tuple[GameLog, int, np.ndarray]:
    """A real free-for-all stream (bench/data/README.md: Formula 1 races 1990-2025, CC BY 4.0): each race one game
    of its drivers, one side each, ranked by finish (ties where the file groups drivers), and its day in years."""
    races = json.loads((ROOT / "bench" / "data" / name).read_text())["races"]
    games = []
    for race in races:
        ranks = [n + 1 for n, group in enumerate(race["finish"]) for _ in group]
        games.append(([[driver] for group in race["finish"] for driver in group], ranks))
    log, m = indexed(games)
    days = np.array([np.datetime64(race["date"], "D").astype(np.int64) for race in races])
    return log, m, days / 365.25


def wandering(players: int = 200) -> tuple[GameLog, int, np.ndarray]:
    """Games every other day among ``players`` over six years, whose strengths take a random walk of 1 logit a
    year; each year a third of them take the year off (the stream of tests/rating/test_experience.py)."""
    log, when = comeback_stream(players)
    return log, players, when


#: Drifts (Elo points a year) the steps table's rate choice tries: half, once and twice the service's default.
STEP_DRIFTS = (50.0, 100.0, 200.0)


def steps_table() -> list[dict]:
    """Steps that follow time away (app.rating.experience) against steps that count games, prequential log loss
    over whole streams: at the ladder defaults (drift 100 Elo points a year, and 0), and with the rate the
    service's rate choice picks from the whole stream with and without the drift (hindsight, alike for both)."""
    chess_log, chess_m = chess()
    ci, cj = chess_log.member_player[0::2], chess_log.member_player[1::2]
    tour_log, tour_m = tournament()
    streams = {
        "chess (undated)": (GameLog.from_pairs(ci, cj, chess_log.pair_outcome, seats=(0, 1)), chess_m, None),
        "premier league": dated("football_premier_league_2019.json"),
        "la liga": dated("football_la_liga_2019.json"),
        "team tournament (undated)": (tour_log, tour_m, None),
        "synthetic, strengths wander": wandering(),
    }
    rows = []
    for name, (log, m, when) in streams.items():
        times = (np.zeros(log.n_games) if when is None else when, None)
        C0 = start_vectors(m, DEFAULT_K, DEFAULT_INIT_SCALE, DEFAULT_INIT_V0)

        def loss(rate: LearningRate, C0=C0, log=log, times=times) -> float:
            return log_loss(replay_history(C0, log, rate, times=times).pair_p, log)

        drifts = tuple(d / ELO_PER_LOGIT for d in STEP_DRIFTS)
        counting = choose_rate(C0, log, RATE, times=times)
        following = choose_rate(C0, log, RATE, times=times, drifts=drifts)
        rows.append(
            {
                "stream": name,
                "games": log.n_games,
                "defaults, steps count games": loss(RATE),
                "defaults, steps follow 100 Elo/year": loss(LearningRate(RATE.eta, RATE.tau, 100 / ELO_PER_LOGIT)),
                "rate chosen, no drift": loss(counting.rate),
                "rate and drift chosen": loss(following.rate),
                "drift chosen (Elo/year)": following.rate.drift * ELO_PER_LOGIT,
            }
        )
    columns = list(rows[0])[2:]
    print("\nprequential log loss over whole streams (lower is better): steps that count games, and steps that")
    print("follow time away; the rates chosen on the whole stream by the service's rate choice (hindsight)\n")
    print("| stream | games | " + " | ".join(columns) + " |")
    print("|---|---|" + "---|" * len(columns))
    for r in rows:
        cells = " | ".join(f"{r[c]:.0f}" if c.startswith("drift") else f"{r[c]:.4f}" for c in columns)
        print(f"| {r['stream']} | {r['games']:,} | {cells} |")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", choices=["coverage", "seats", "rate", "drift", "steps"], help="run one table only")
    args = parser.parse_args()
    RESULTS.mkdir(exist_ok=True)
    machine = {"cpus": os.cpu_count(), "python": platform.python_version()}
    if args.only in (None, "steps"):
        steps = steps_table()
        (RESULTS / "quality_steps.json").write_text(json.dumps({"machine": machine, "rows": steps}, indent=2) + "\n")
    if args.only == "steps":
        return
    streams = all_streams()
    if args.only in (None, "drift"):
        drift = drift_table()
        (RESULTS / "quality_drift.json").write_text(json.dumps({"machine": machine, "rows": drift}, indent=2) + "\n")
    if args.only in (None, "seats"):
        seats = seat_table(streams)
        (RESULTS / "quality_seats.json").write_text(json.dumps({"machine": machine, "rows": seats}, indent=2) + "\n")
    if args.only in (None, "rate"):
        rates = rate_table(streams)
        (RESULTS / "quality_rate.json").write_text(json.dumps({"machine": machine, "rows": rates}, indent=2) + "\n")
    if args.only in (None, "coverage"):
        covered = coverage({name: s for name, s in streams.items() if s[2] is not None})
        out = {"machine": machine, "rows": covered}
        (RESULTS / "quality_coverage.json").write_text(json.dumps(out, indent=2) + "\n")
    if args.only:
        return
    # 1. One shared configuration of the rule, chosen on the first half of every stream only:
    #    the smallest worst margin over Elo tuned on that first half too.
    first: dict[str, dict[int, float]] = {}
    forecasts: dict[str, dict[int, np.ndarray]] = {}
    elo_runs: dict[str, dict[float, np.ndarray]] = {}
    for name, (log, m, _) in streams.items():
        start = time.perf_counter()
        forecasts[name] = {n: melo(log, m, **cfg) for n, cfg in enumerate(GRID)}
        first[name] = {n: log_loss(p, log, halves(log)[0]) for n, p in forecasts[name].items()}
        elo_runs[name] = {rate: online_elo(log, m, rate) for rate in ELO_RATES}
        print(f"  grid on {name}: {time.perf_counter() - start:.1f} s", flush=True)
    elo_first = {name: tuned(elo_runs[name], streams[name][0], halves(streams[name][0])[0])[0] for name in streams}
    worst = {n: worst_margin({s: first[s][n] for s in streams}, elo_first) for n in range(len(GRID))}
    chosen = GRID[min(worst, key=worst.get)]
    print(f"\nchosen on the first halves: {chosen} (worst margin there {min(worst.values()):+.4f})", flush=True)

    # 2. Everything scored on the second halves, which the choice never saw.
    rows = []
    curves: dict[str, dict[str, np.ndarray]] = {}
    for name, (log, m, C_true) in streams.items():
        start = time.perf_counter()
        second = halves(log)[1]
        elo, elo_rate = tuned(elo_runs[name], log, second)
        unnorm, unnorm_eta = tuned({eta: unnormalised(log, m, eta) for eta in UNNORMALISED_ETAS}, log, second)
        refit_loss, true_loss = refit_heldout(log, m, C_true)
        auto, refits, _ = with_refits(log, m, **chosen)
        seed_defaults = melo(log, m, **SEED_DEFAULT)
        glicko, openskill = glicko2_rater(log, m), openskill_rater(log, m)
        curves[name] = {
            "Guide defaults": seed_defaults,
            "defaults": forecasts[name][GRID.index(chosen)],
            "defaults + auto-refit": auto,
            "Elo, tuned": elo_runs[name][elo_rate],
            "Glicko-2": glicko,
            "openskill": openskill,
        }
        rows.append(
            {
                "stream": name,
                "games": log.n_games,
                "players": m,
                "Guide defaults": log_loss(seed_defaults, log, second),
                "chosen": log_loss(forecasts[name][GRID.index(chosen)], log, second),
                "chosen + auto-refit": log_loss(auto, log, second),
                "refits applied (k)": refits,
                "Elo, tuned": elo,
                "Elo rate": elo_rate,
                "un-normalised, tuned": unnorm,
                "un-normalised eta": unnorm_eta,
                "Glicko-2": log_loss(glicko, log, second),
                "openskill": log_loss(openskill, log, second),
                "refit k=2, held-out": refit_loss,
                "true model, held-out": true_loss,
            }
        )
        print(f"  raters on {name}: {time.perf_counter() - start:.1f} s", flush=True)
    columns = [
        "Guide defaults",
        "chosen",
        "chosen + auto-refit",
        "Elo, tuned",
        "un-normalised, tuned",
        "Glicko-2",
        "openskill",
    ]
    print("\nprequential log loss on the second half of each stream (lower is better);")
    print("Elo and the un-normalised rule tuned on that half itself (optimistic); refit and true model: 20% held out\n")
    print("| stream | games | " + " | ".join(columns) + " | refit k=2 | true model |")
    print("|---|---|" + "---|" * (len(columns) + 2))
    for r in rows:
        true = "" if r["true model, held-out"] is None else f"{r['true model, held-out']:.4f}"
        cells = " | ".join(f"{r[c]:.4f}" for c in columns)
        print(f"| {r['stream']} | {r['games']:,} | {cells} | {r['refit k=2, held-out']:.4f} | {true} |")
    elo = {r["stream"]: r["Elo, tuned"] for r in rows}
    targets = {}
    for rater in ("chosen", "chosen + auto-refit"):
        missed = {
            r["stream"]: r[rater] - elo[r["stream"]] for r in rows if worst_margin({r["stream"]: r[rater]}, elo) > 0
        }
        targets[rater] = missed
        print(
            f"\n{rater}: targets missed on "
            + (", ".join(f"{s} ({d:+.4f} vs Elo)" for s, d in missed.items()) or "none")
        )
    out = {
        "machine": machine,
        "grid": GRID,
        "chosen": chosen,
        "rows": rows,
        "targets_missed": targets,
    }
    (RESULTS / "quality.json").write_text(json.dumps(out, indent=2) + "\n")
    plot(streams, curves, RESULTS / "quality.png")


def plot(streams: dict, curves: dict[str, dict[str, np.ndarray]], path: Path) -> None:
    """Cumulative mean log loss over the games of each stream, one panel per stream."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(3, 3, figsize=(15, 11), sharex=False)
    for ax, (name, raters) in zip(axes.ravel(), curves.items(), strict=True):
        log = streams[name][0]
        game_of_pair = np.repeat(np.arange(log.n_games), np.diff(log.pair_ptr))
        for rater, p in raters.items():
            p = np.clip(p, 1e-12, 1 - 1e-12)
            s, w = log.pair_outcome, log.pair_weight
            loss = -w * (s * np.log(p) + (1 - s) * np.log1p(-p))
            per_game = np.bincount(game_of_pair, weights=loss, minlength=log.n_games)
            weight = np.bincount(game_of_pair, weights=w, minlength=log.n_games)
            ax.plot(np.arange(1, log.n_games + 1), np.cumsum(per_game) / np.cumsum(weight), label=rater, lw=1.2)
        ax.set_title(name)
        ax.set_xlabel("games")
        ax.set_ylabel("cumulative log loss")
        ax.set_ylim(0.3, 0.8)
    axes[0, 0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


if __name__ == "__main__":
    main()
