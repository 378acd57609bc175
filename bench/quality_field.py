"""The service's rules beside the field's raters: prequential log loss on the second half of every stream.

    python -m bench.quality_field [--quick] [--only NAME ...] [--service]

Per stream (bench/quality.py's, the dated football seasons with their home seats, ATP singles 2007-2016 (a real
stream of dated results without seats, bench/data/README.md), the Premier League 2010-11 to 2024-25 (dated, home
seats), Formula 1 races 1990-2025 (dated free-for-alls of up to 26 drivers), a stream whose strengths
wander for six years, and a career stream: wandering strengths and cohorts of newcomers who improve):

- the ladder defaults (the shrinking-step rule, k = 2), one exact replay, as the service rates it online
  (a replay equals the service's post path bit for bit; the auto refits are left out here);
- the service's rule with its parameters chosen on the first half by the service's own rate choice
  (app.rating.tuning.choose_rate with the variance rule tried, mathematics §3b), scored on the second half;
- plain Elo with its rate chosen on the first half;
- the field, each tuned in hindsight on the half it is scored on (optimistic): a simplified Kalman filter
  (vSKF, [Kalman]; written here and checked against the paper's equations in tests/rating/test_variance.py),
  Glicko-2 (package ``glicko2``, every game a rating period, its initial RD and volatility tuned), and Weng-Lin's
  Bradley-Terry and Thurstone-Mosteller models (package ``openskill``, β and τ tuned; Thurstone-Mosteller is the
  TrueSkill likelihood, and diverges on fields of twenty), and TrueSkill itself (package ``trueskill``, β and τ
  tuned: free-for-alls ranked as its factor graph ranks them).  Teams play as their members' mean, with their
  variances' mean over the team size (TrueSkill: its own sums).

Prints the table and writes bench/results/quality_field.json; ``--service`` computes the service's columns alone
and keeps the others from that file's last run (the field's raters do not change with the service's code);
``--coverage`` instead prints how often ±1.96
``strength_se`` holds the true strength under the variance rule (bench/results/quality_field_coverage.json).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np
from scipy.special import expit, ndtr

from app.ladders.schemas import (
    DEFAULT_DRIFT,
    DEFAULT_INIT_SCALE,
    DEFAULT_INIT_V0,
    DEFAULT_K,
    RULE_LIMITS,
)
from app.rating import (
    ELO_PER_LOGIT,
    GameLog,
    LearningRate,
    VarianceRule,
    field_prior,
    hodge_strength,
    replay_history,
    strength_se,
)
from app.rating.seats import Seats, prior_precision
from app.rating.tuning import choose_rate
from bench.quality import (
    ELO_RATES,
    GAMES_EACH,
    RATE,
    _games,
    all_streams,
    dated,
    formula_one,
    glicko2_rater,
    halves,
    log_loss,
    online_elo,
    start_vectors,
    synthetic,
    tennis,
    wandering,
)
from devtools.streams import career_stream

ROOT = Path(__file__).resolve().parent.parent

RESULTS = Path(__file__).parent / "results"
#: Drifts (logits a year) the first-half choice tries where a stream is dated: 50, 100 and 200 Elo points.
DRIFTS = tuple(d / ELO_PER_LOGIT for d in (50.0, 100.0, 200.0))
VSKF_STARTS = (0.1, 0.3, 1.0, 3.0)
VSKF_NOISES = (1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 0.1)
GLICKO_RDS = (100.0, 200.0, 350.0)
GLICKO_VOLS = (0.02, 0.06, 0.15)
OPENSKILL_BETAS = (25 / 12, 25 / 6, 25 / 3)
OPENSKILL_TAUS = (0.0, 25 / 300, 25 / 100, 25 / 30)


def vskf(log: GameLog, m: int, start: float, noise: float) -> np.ndarray:
    """The scalar simplified Kalman filter of [Kalman] in logits, every game one step: v ← v + ε; then
    θ_a += v_a (S - p) / (1 + p(1-p) V), v_a ← v_a (1 - v_a p(1-p) / (1 + p(1-p) V)) over each pair term (weight
    w), V the pair's summed side variances; a team's θ is its members' mean, its variance their mean / size."""
    theta, v = np.zeros(m), np.full(m, start)
    p_out = np.empty(len(log.pair_a))
    for members, member_side, pairs in _games(log):
        v[members] += noise
        sides = {}
        for s in set(member_side.tolist()):
            team = members[member_side == s]
            sides[s] = (theta[team].mean(), v[team].mean() / len(team), team)
        step = {s: 0.0 for s in sides}
        shrink = {s: 0.0 for s in sides}
        for q in pairs:
            a, b = int(log.pair_a[q]), int(log.pair_b[q])
            (ta, va, _), (tb, vb, _) = sides[a], sides[b]
            p = 1.0 / (1.0 + math.exp(tb - ta - log.pair_shift[q]))
            p_out[q] = p
            h, w = p * (1.0 - p), log.pair_weight[q]
            denominator = 1.0 + h * (va + vb)
            step[a] += w * (log.pair_outcome[q] - p) / denominator
            step[b] -= w * (log.pair_outcome[q] - p) / denominator
            shrink[a] += w * h / denominator
            shrink[b] += w * h / denominator
        for s, (_, _, team) in sides.items():
            theta[team] += v[team] / len(team) * step[s]
            v[team] *= 1.0 - v[team] / len(team) ** 2 * shrink[s]
    return p_out


def weng_lin(log: GameLog, m: int, model: str, beta: float, tau: float) -> np.ndarray:
    """Weng-Lin's Bradley-Terry or Thurstone-Mosteller model (package ``openskill``, full pairing), teams and
    ranks natively; forecasts from its own likelihood: σ((μ_a - μ_b)/c) or Φ((μ_a - μ_b)/c),
    c = √(σ_a² + σ_b² + 2β²), with a seat's advantage (logits) added on the logit's scale."""
    from openskill.models import BradleyTerryFull, ThurstoneMostellerFull

    rater = (BradleyTerryFull if model == "bt" else ThurstoneMostellerFull)(beta=beta, tau=tau)
    ratings = [rater.rating() for _ in range(m)]

    # A seat's advantage h is in logits; on the probit scale it is about h / 1.702.
    def link(x: float, h: float) -> float:
        return float(ndtr(x + h / 1.702))

    p_out = np.empty(len(log.pair_a))
    for members, member_side, pairs in _games(log):
        order = sorted(set(member_side.tolist()))
        teams = {s: [ratings[i] for i in members[member_side == s]] for s in order}
        moments = {s: (sum(r.mu for r in t), sum(r.sigma**2 for r in t)) for s, t in teams.items()}
        score = dict.fromkeys(order, 0.0)
        for q in pairs:
            a, b = int(log.pair_a[q]), int(log.pair_b[q])
            c = math.sqrt(moments[a][1] + moments[b][1] + 2 * beta * beta)
            x, h = (moments[a][0] - moments[b][0]) / c, log.pair_shift[q]
            p_out[q] = expit(x + h) if model == "bt" else link(x, h)
            score[a] += log.pair_outcome[q]
            score[b] += 1.0 - log.pair_outcome[q]
        new = rater.rate([teams[s] for s in order], ranks=[-score[s] for s in order])
        for s, team in zip(order, new, strict=True):
            for i, rating in zip(members[member_side == s], team, strict=True):
                ratings[i] = rating
    return p_out


def trueskill_rater(log: GameLog, m: int, beta: float, tau: float) -> np.ndarray:
    """TrueSkill (package ``trueskill``: its factor graph, teams and finishing orders with ties natively, the draw
    probability the stream's share of tied pairs); forecasts Φ((μ_a - μ_b)/c), c² = Σσ² + (n_a + n_b)β² over the two
    sides' members, with a seat's advantage (logits) added on the probit's scale (about h / 1.702)."""
    import trueskill

    ties = float(np.mean(log.pair_outcome == 0.5))
    env = trueskill.TrueSkill(beta=beta, tau=tau, draw_probability=min(max(ties, 1e-3), 0.5), backend=None)
    ratings = [env.create_rating() for _ in range(m)]
    p_out = np.empty(len(log.pair_a))
    for members, member_side, pairs in _games(log):
        order = sorted(set(member_side.tolist()))
        teams = {s: members[member_side == s] for s in order}
        score = dict.fromkeys(order, 0.0)
        for q in pairs:
            a, b = int(log.pair_a[q]), int(log.pair_b[q])
            mu = sum(ratings[i].mu for i in teams[a]) - sum(ratings[i].mu for i in teams[b])
            spread = sum(ratings[i].sigma ** 2 for i in (*teams[a], *teams[b]))
            c = math.sqrt(spread + (len(teams[a]) + len(teams[b])) * beta * beta)
            p_out[q] = float(ndtr(mu / c + log.pair_shift[q] / 1.702))
            score[a] += log.pair_outcome[q]
            score[b] += 1.0 - log.pair_outcome[q]
        new = env.rate([[ratings[i] for i in teams[s]] for s in order], ranks=[-score[s] for s in order])
        for s, team in zip(order, new, strict=True):
            for i, rating in zip(teams[s], team, strict=True):
                ratings[i] = rating
    return p_out


#: Constant first-seat (home) advantages, logits, tuned with the field's raters and Elo where a stream has seats.
SEAT_OFFSETS = (0.0, 0.2, 0.4)


def seated(log: GameLog, h: float) -> GameLog:
    """A two-player log with seats as one with the constant advantage ``h`` for the first seat (seat 0)."""
    i, j = log.member_player[0::2], log.member_player[1::2]
    first = np.where(log.side_seat[0::2] == 0, h, 0.0) - np.where(log.side_seat[1::2] == 0, h, 0.0)
    return GameLog.from_pairs(i, j, log.pair_outcome, log.pair_shift + first)


def best(runs: dict, log: GameLog, part: slice) -> tuple[float, object]:
    """The lowest log loss on ``part`` over a rater's settings, and the setting."""
    losses = {key: log_loss(p, log, part) for key, p in runs.items()}
    losses = {key: loss for key, loss in losses.items() if math.isfinite(loss)} or losses  # a setting that diverged
    key = min(losses, key=losses.get)
    return losses[key], key


def streams(quick: bool) -> dict[str, tuple[GameLog, int, np.ndarray | None]]:
    """Every stream, with each game's time in years where it is dated (None: undated)."""
    out: dict[str, tuple[GameLog, int, np.ndarray | None]] = {}
    for name, (log, m, _) in all_streams().items():
        if name in ("premier league", "la liga"):
            continue
        if quick and log.n_games > 10_000:
            log = log.take(np.arange(10_000))
        out[name] = (log, m, None)
    out["premier league"] = dated("football_premier_league_2019.json")
    out["la liga"] = dated("football_la_liga_2019.json")
    log, m, when = wandering()
    out["wandering strengths"] = (log.take(np.arange(20_000)), m, when[:20_000]) if quick else (log, m, when)
    out["career"] = career_stream(games=10_000 if quick else 30_000)
    log, m, when = tennis()
    out["atp tour"] = (log.take(np.arange(20_000)), m, when[:20_000]) if quick else (log, m, when)
    out["premier league 2010-2025"] = dated("premier-league-2010-2025.json", ROOT / "bench" / "data")
    out["formula one"] = formula_one()
    return out


def service(log: GameLog, m: int, when: np.ndarray | None) -> dict:
    """The ladder defaults, and the rule the rate choice picks on the first half, each scored on the second."""
    first, second = halves(log)
    C0 = start_vectors(m, DEFAULT_K, DEFAULT_INIT_SCALE, DEFAULT_INIT_V0)
    seats = None if log.side_seat is None else Seats.fresh(log.n_seats_needed, prior_precision(0.5))
    times = None if when is None else (when, None)
    # A new ladder's steps follow its default drift where the games are dated (drift_steps).
    rate = RATE if when is None else LearningRate(RATE.eta, RATE.tau, DEFAULT_DRIFT / ELO_PER_LOGIT)
    defaults = replay_history(C0, log, rate, seats=None if seats is None else seats.copy(), times=times).pair_p
    head = log.take(np.arange(first.stop))
    head_times = None if when is None else (when[: first.stop], None)
    choice = choose_rate(
        C0, head, rate, seats, None, head_times, DRIFTS if when is not None else (), (), True, RULE_LIMITS
    )
    chosen = replay_history(C0, log, choice.rate, seats=None if seats is None else seats.copy(), times=times).pair_p
    return {
        "defaults": log_loss(defaults, log, second),
        "service, chosen on the first half": log_loss(chosen, log, second),
        "chosen rule": choice.rows[choice.index],
    }


#: Variance rules (a newcomer's variance, noise per game, logits²) whose intervals the coverage table reads.
COVERAGE_RULES = ((0.5, 1e-3), (1.0, 3e-3), (0.25, 1e-2))


def coverage() -> list[dict]:
    """How often ±1.96 ``strength_se`` holds the true Hodge strength under the variance rule, on the synthetic
    streams of bench/quality.py, when the players have played 10, 30 and 100 games each (the target is
    0.90-0.98); the standard error from each player's variance with the field's lag (mathematics §3b, §8)."""
    rows = []
    for share in (1.0, 0.75, 0.5, 0.25, 0.0):
        log, m, C_true = synthetic(share)
        truth = hodge_strength(C_true)
        C0 = start_vectors(m, DEFAULT_K, DEFAULT_INIT_SCALE, DEFAULT_INIT_V0)
        for start, noise in COVERAGE_RULES:
            row = {"stream": f"Elo {share} + disc", "start": start, "noise": noise}
            for n in GAMES_EACH:
                t = n * m // 2
                h = replay_history(C0, log.take(np.arange(t)), VarianceRule(start, noise), record=False)
                played = np.bincount(log.member_player[: 2 * t], minlength=m)
                i, j, s = log.member_player[0 : 2 * t : 2], log.member_player[1 : 2 * t : 2], log.pair_outcome[:t]
                points = np.bincount(i, s, minlength=m) + np.bincount(j, 1.0 - s, minlength=m)
                field = field_prior(h.C, played, points, variance=h.variance)
                se = strength_se(h.C, played, field=field, variance=h.variance)
                row[f"{n} games"] = float(np.mean(np.abs(hodge_strength(h.C) - truth) <= 1.96 * se))
            rows.append(row)
    print("\nfraction of players whose true strength lies within ±1.96 standard errors, variance rule (target")
    print("0.90-0.98)\n")
    print("| stream | u₀, q | " + " | ".join(f"{n} games each" for n in GAMES_EACH) + " |")
    print("|---|---|" + "---|" * len(GAMES_EACH))
    for r in rows:
        cells = " | ".join(f"{r[f'{n} games']:.2f}" for n in GAMES_EACH)
        print(f"| {r['stream']} | {r['start']}, {r['noise']} | {cells} |")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="10,000 games of the long streams, fewer settings")
    parser.add_argument("--only", nargs="*", help="these streams only")
    parser.add_argument("--coverage", action="store_true", help="the coverage table only")
    parser.add_argument("--service", action="store_true", help="the service's columns only, the field's kept")
    args = parser.parse_args()
    path = RESULTS / "quality_field.json"
    earlier = {r["stream"]: r for r in json.loads(path.read_text())["rows"]} if path.exists() else {}
    if args.coverage:
        RESULTS.mkdir(exist_ok=True)
        out = {"machine": {"cpus": os.cpu_count(), "python": platform.python_version()}, "rows": coverage()}
        (RESULTS / "quality_field_coverage.json").write_text(json.dumps(out, indent=2) + "\n")
        return
    rows = []
    for name, (log, m, when) in streams(args.quick).items():
        if args.only and name not in args.only:
            continue
        started = time.perf_counter()
        first, second = halves(log)
        row = {"stream": name, "games": log.n_games, "players": m} | service(log, m, when)
        if args.service:
            if name not in earlier or earlier[name]["games"] != log.n_games:
                sys.exit(f"{name}: no earlier run of these games to keep the field's columns of (run it in full)")
            rows.append(earlier[name] | row)
            print(f"  {name}: {time.perf_counter() - started:.0f} s", flush=True)
            continue
        offsets = {h: seated(log, h) for h in SEAT_OFFSETS} if log.side_seat is not None else {0.0: log}
        elo = {(rate, h): online_elo(x, m, rate) for rate in ELO_RATES for h, x in offsets.items()}
        elo_rate = min(elo, key=lambda r: log_loss(elo[r], log, first))
        row["Elo, rate chosen on the first half"] = log_loss(elo[elo_rate], log, second)
        starts, noises = (VSKF_STARTS[1:3], VSKF_NOISES[1::2]) if args.quick else (VSKF_STARTS, VSKF_NOISES)
        field = {
            "vSKF": best(
                {(u, q, h): vskf(x, m, u, q) for u in starts for q in noises for h, x in offsets.items()}, log, second
            ),
            "Glicko-2": best(
                {
                    (r, v, h): glicko2_rater(x, m, r, v)
                    for r in GLICKO_RDS
                    for v in GLICKO_VOLS
                    for h, x in offsets.items()
                },
                log,
                second,
            ),
        }
        for model, label in (("bt", "Weng-Lin BT"), ("tm", "Weng-Lin TM")):
            runs = {
                (b, t, h): weng_lin(x, m, model, b, t)
                for b in OPENSKILL_BETAS
                for t in OPENSKILL_TAUS
                for h, x in offsets.items()
            }
            field[label] = best(runs, log, second)
        runs = {
            (b, t, h): trueskill_rater(x, m, b, t)
            for b in OPENSKILL_BETAS
            for t in OPENSKILL_TAUS[:3]
            for h, x in offsets.items()
        }
        field["TrueSkill"] = best(runs, log, second)
        for label, (loss, setting) in field.items():
            row[label] = loss
            row[f"{label} setting"] = setting
        row["best of the field"] = min(loss for loss, _ in field.values())
        rows.append(row)
        print(f"  {name}: {time.perf_counter() - started:.0f} s", flush=True)
    columns = [
        "defaults",
        "service, chosen on the first half",
        "Elo, rate chosen on the first half",
        "vSKF",
        "Glicko-2",
        "Weng-Lin BT",
        "Weng-Lin TM",
        "TrueSkill",
        "best of the field",
    ]
    print("\nprequential log loss on the second half of each stream (lower is better); the field tuned in hindsight")
    print("on that half, the service and Elo chosen on the first half\n")
    print("| stream | games | " + " | ".join(columns) + " | rule chosen |")
    print("|---|---|" + "---|" * (len(columns) + 1))
    for r in rows:
        rule = r["chosen rule"]
        what = f"{rule['rule']} η {rule['eta']:.3g}" + (
            f" noise {math.sqrt(rule['noise']) * ELO_PER_LOGIT:.3g} Elo cycles {rule['cycles']:g}"
            if rule["rule"] == "variance"
            else f" τ {rule['tau']}"
        )
        what += f", drift {rule['drift'] * ELO_PER_LOGIT:.0f} Elo/year" if rule["drift"] else ""
        cells = " | ".join("" if r.get(c) is None else f"{r[c]:.4f}" for c in columns)  # (an earlier run's rows)
        print(f"| {r['stream']} | {r['games']:,} | {cells} | {what} |")
    RESULTS.mkdir(exist_ok=True)
    machine = {"cpus": os.cpu_count(), "python": platform.python_version(), "quick": args.quick}
    kept = [{k: v for k, v in r.items() if k != "chosen rule"} | {"chosen rule": r["chosen rule"]} for r in rows]
    if args.only and earlier:  # the other streams' rows of an earlier run stay, in their order
        ran = {r["stream"]: r for r in kept}
        kept = [ran.pop(r["stream"], r) for r in earlier.values()] + list(ran.values())
    path.write_text(json.dumps({"machine": machine, "rows": kept}, indent=2, default=str) + "\n")


if __name__ == "__main__":
    main()
