"""The online rule's learning rate chosen from a ladder's own history (mathematics §3).

One rate cannot suit an eight-team league and a game of 100,000 players: the
log says which predicts best.  Each candidate rate is replayed over the whole
log from the initial vectors, so every game is predicted only from the games
before it (prequential scoring, as the ratings were served: :mod:`app.rating.prequential`),
and the rates are compared by their mean log loss per game (reported per comparison, a pair
of sides: what a free-for-all's held-out report gives too).  This module is the choice: which
candidates are tried, in which rounds, and the guard a change must pass.
"""

from __future__ import annotations

import functools
import math
import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

import numpy as np
from numpy.typing import ArrayLike

from app.rating.game_log import GameLog
from app.rating.model import Array
from app.rating.prequential import prequential_losses_many
from app.rating.replay import Times
from app.rating.seats import Seats, prior_precision
from app.rating.update import LearningRate
from app.rating.variance import MANIFOLD_NORM, VarianceRule
from app.rating.variance_tuning import variance_losses_many

#: Multiples of the current η, and decays τ (None: a constant η), whose every combination is tried.
ETA_FACTORS = (0.25, 0.5, 1.0, 2.0, 4.0)
TAUS = (None, 1.0, 3.0, 10.0, 30.0)


#: A rule changes only where its log scores it on at least this many games: the standard error of a handful is no
#: evidence, however many pairs they hold (a free-for-all's first choice comes after four races of 25 drivers,
#: 1,200 comparisons, two of them scored; Formula 1 then went to a step that cost 0.01 nats).
MIN_SCORED_GAMES = 20

#: Standard deviations (logits) of the seats' prior a choice tries, where the log names seats.
SEAT_PRIOR_SDS = (0.25, 0.5, 1.0, 2.0)


#: The variance rule's candidates (mathematics §3b): a newcomer's variance (logits²) and the noise per game
#: (logits²) whose every combination is tried, where a choice tries the variance rule.
VARIANCE_STARTS = (0.25, 1.0, 4.0, 7.0)
NOISES = (1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 0.1)
#: The cyclic discs' shares of a step (φ, mathematics §3b) tried with the best newcomer's variance and noise.
CYCLES = (0.0, 0.25, 0.5, 0.8)
#: Around a ladder's own variance rule: these multiples of its start and of its noise.
START_FACTORS = (0.5, 1.0, 2.0)
NOISE_FACTORS = (0.1, 0.3, 1.0, 3.0, 10.0)
#: The constant steps η a ladder on the variance rule may go back to: around a new ladder's 0.7.
STEPS_BACK = (0.175, 0.35, 0.7, 1.4, 2.8)
#: And, where its steps follow time away (a drift: a regular's experience then levels off, so the step never
#: freezes), the shrinking steps it may go back to: a new ladder's η (0.7) at each of these τ (its own: 3), the
#: rule a ladder chosen onto the variance rule by its first games most likely came from.
SHRINKING_BACK_ETA, SHRINKING_BACK_TAUS = 0.7, (1.0, 3.0, 10.0)

Rule = LearningRate | VarianceRule
_R = TypeVar("_R", bound=Rule)  # a list of one kind of rule stays of that kind through Limits.allowed


@dataclass(frozen=True)
class Limits:
    """The largest rule a choice may try: η (the variance rule's newcomer at η = √2 u₀), the noise (logits²) and the
    drift (logits a year).  A ladder's are the settings its API takes, so that a chosen rule can always be set
    again as the ladder runs, and its export restored."""

    eta: float = math.inf
    noise: float = math.inf
    drift: float = math.inf

    def allowed(self, rules: list[_R]) -> list[_R]:
        """The ``rules`` within these limits."""
        slack = 1 + 1e-9  # a multiple of a setting at its bound, computed in logits, may come out a hair above it

        def within(rule: Rule) -> bool:
            if rule.drift > self.drift * slack:
                return False
            if isinstance(rule, VarianceRule):
                return rule.start * MANIFOLD_NORM <= self.eta * slack and rule.noise <= self.noise * slack
            return rule.eta <= self.eta * slack

        return [rule for rule in rules if within(rule)]


@dataclass(frozen=True)
class RateChoice:
    """The rate chosen (and the seats' prior, a standard deviation in logits; None where the log names no seat),
    and per candidate (``rows``; the chosen one is ``rows[index]``, the current one ``rows[0]``) its mean
    prequential log loss per comparison (pair of sides) over the log's latest ``scored_games`` and the standard
    error of its difference to the current rate's (over those games, in the same units); a seats' prior's row,
    over the whole log and to the chosen rule's with the ladder's prior (``rows[against]``).  The rate is a
    :class:`~app.rating.variance.VarianceRule` where the variance rule was tried and won."""

    rate: Rule
    rows: list[dict]
    seat_prior: float | None = None
    index: int = 0
    #: The row the chosen one was compared with: the current rule's, or for a seats' prior, the rule's with the
    #: ladder's prior on the whole log.
    against: int = 0


#: The chance that luck alone changes a ladder's rule (:func:`_bar`): that of one challenger no better than the
#: current rule beating it by one standard error, 1 - Φ(1).
_LUCK = 0.15866
#: Normal draws the bar's percentile is read from, and games whose differences give the challengers' correlations.
_DRAWS, _SAMPLED = 20_000, 2_048


@dataclass(frozen=True)
class Scores:
    """Candidates' mean losses per game over the games they are scored on, the standard errors of their differences
    to the current rule's, and those differences at the same sampled games (how alike the candidates are)."""

    means: Array
    errors: Array
    sample: Array

    def __add__(self, other: Scores) -> Scores:
        return Scores(
            np.concatenate([self.means, other.means]),
            np.concatenate([self.errors, other.errors]),
            np.concatenate([self.sample, other.sample]),
        )


#: A second round, where drifts are tried: each drift at these multiples of the first round's best η, and every τ.
DRIFT_ETA_FACTORS = (0.5, 1.0, 2.0)
#: Candidates replayed side by side at a time in the second round (each keeps every game's loss until summed).
_CHUNK = 15


def choose_rate(
    C0: ArrayLike,
    log: GameLog,
    current: Rule,
    seats: Seats | None = None,
    progress: Callable[[int, int], None] | None = None,
    times: Times = None,
    drifts: tuple[float, ...] = (),
    seat_sds: tuple[float, ...] = (),
    rules: bool = False,
    limits: Limits = Limits(),
) -> RateChoice:
    """The rate among :data:`ETA_FACTORS` × :data:`TAUS` around ``current`` whose replay predicted the log best,
    if it beat ``current`` by more than one standard error of the difference (over games); else ``current``.

    With ``seats`` (their state before the log: no advantage, the ladder's prior) and ``seat_sds``, where the
    log names seats, a last round tries the seats' prior at each of those standard deviations (logits) with the
    best rate so far: the prior sets how fast a seat's advantage is learned from its first games.

    With ``drifts`` (logits a year) and the games' ``times`` (if time passes in them), a second round
    tries ``current``'s drift and each of ``drifts`` with :data:`DRIFT_ETA_FACTORS`
    × :data:`TAUS` around the first round's best η (a drift wears a player's experience while they are
    away, :mod:`app.rating.experience`, which raises every step: the best η and
    τ move with it).  The guard keeps a small ladder, whose log cannot tell the
    rates apart, on its setting: a rate is changed only when the log shows the
    change pays.  Candidates are replayed side by side
    (:func:`prequential_losses_many`).

    With ``rules`` (or where ``current`` is a :class:`~app.rating.variance.VarianceRule`) the variance rule
    (mathematics §3b) is tried too: its newcomer's variance and noise per game among :data:`VARIANCE_STARTS` ×
    :data:`NOISES` (around the current rule's, where it is one), at the current drift and, where time passes in
    the log, at each of ``drifts`` with the best of them; under the same guard.  Every candidate's noise is > 0:
    no choice can freeze a player.  No candidate goes past ``limits`` (the current rule stays a candidate).
    """
    if isinstance(current, VarianceRule):
        return _choose_variance(C0, log, current, seats, progress, times, drifts, seat_sds, limits)
    around = limits.allowed(
        [
            LearningRate(current.eta * f, tau, current.drift)
            for f in ETA_FACTORS
            for tau in TAUS
            if (current.eta * f, tau) != (current.eta, current.tau)
        ]
    )
    first_round = [current, *around]
    losses = prequential_losses_many(C0, log, first_round, seats, progress, times)
    candidates: list[Rule] = list(first_round)
    reference = losses[0]
    scores = _compare(losses, reference)
    if rules:
        grid = limits.allowed([VarianceRule(u, q, current.drift) for u in VARIANCE_STARTS for q in NOISES])
        if grid:
            variance, variance_scores = _variance_round(C0, log, grid, seats, times, drifts, reference, limits)
            candidates += variance
            scores += variance_scores
    if drifts and _time_passes(log, times):
        # The ladder's drift first: where the log cannot tell the drifts apart (games all on one day), it stays.
        steps = [n for n, rate in enumerate(candidates) if isinstance(rate, LearningRate)]
        first, tried = candidates[steps[int(np.argmin(scores.means[steps]))]], set(candidates)
        assert isinstance(first, LearningRate)  # steps index the candidates that are LearningRates
        more = limits.allowed(
            [
                rate
                for drift in dict.fromkeys((current.drift, *drifts))
                for f in DRIFT_ETA_FACTORS
                for tau in TAUS
                if (rate := LearningRate(first.eta * f, tau, drift)) not in tried
            ]
        )
        for lo in range(0, len(more), _CHUNK):
            part = more[lo : lo + _CHUNK]
            scores += _compare(prequential_losses_many(C0, log, part, seats, None, times), reference)
            candidates += part
    return _chosen(C0, log, candidates, scores, seats, times, seat_sds)


def _losses(C0, log: GameLog, rules: list[Rule], seats, progress, times: Times) -> Array:
    """:func:`prequential_losses_many` of a list of rules of one kind."""
    if rules and isinstance(rules[0], VarianceRule):
        return variance_losses_many(C0, log, rules, seats, times, progress)  # type: ignore[arg-type]
    return prequential_losses_many(C0, log, rules, seats, progress, times)  # type: ignore[arg-type]


def _variance_round(
    C0,
    log: GameLog,
    grid: list[VarianceRule],
    seats,
    times: Times,
    drifts: tuple[float, ...],
    reference: Array,
    limits: Limits,
) -> tuple[list[VarianceRule], Scores]:
    """The variance rules of ``grid`` and, where time passes in the log, the best of them at each of ``drifts``:
    the candidates and their scores against ``reference``."""
    scores = _compared(C0, log, list(grid), seats, times, reference)
    candidates = list(grid)
    best = grid[int(np.argmin(scores.means))]
    if np.shape(C0)[1] > 2:  # the cyclic discs' share of a step, where there are some
        more = limits.allowed([VarianceRule(best.start, best.noise, best.drift, f) for f in CYCLES if f != best.cycles])
        scores += _compared(C0, log, list(more), seats, times, reference)
        candidates += more
        best = candidates[int(np.argmin(scores.means))]
        if best.cycles != grid[0].cycles:  # the noise again at that share: discs that learn cycles move more
            more = limits.allowed(
                [VarianceRule(best.start, q, best.drift, best.cycles) for q in NOISES if q != best.noise]
            )
            scores += _compared(C0, log, list(more), seats, times, reference)
            candidates += more
            best = candidates[int(np.argmin(scores.means))]
    if drifts and _time_passes(log, times):
        more = limits.allowed(
            [VarianceRule(best.start, best.noise, d, best.cycles) for d in dict.fromkeys(drifts) if d != best.drift]
        )
        if more:
            scores += _compared(C0, log, list(more), seats, times, reference)
            candidates += more
    return candidates, scores


def _compared(C0, log: GameLog, rules: list[Rule], seats, times: Times, reference: Array) -> Scores:
    """:func:`_compare` of ``rules``' losses, replayed :data:`_CHUNK` at a time (each keeps every game's loss
    until summed: 28 rules over a million games would be 200 MB at once)."""
    parts = [
        _compare(_losses(C0, log, rules[lo : lo + _CHUNK], seats, None, times), reference)
        for lo in range(0, len(rules), _CHUNK)
    ]
    return functools.reduce(operator.add, parts)


def _choose_variance(
    C0,
    log: GameLog,
    current: VarianceRule,
    seats,
    progress,
    times: Times,
    drifts: tuple[float, ...],
    seat_sds: tuple[float, ...],
    limits: Limits,
) -> RateChoice:
    """:func:`choose_rate` for a ladder on the variance rule: multiples of its start and noise and the grid of
    :data:`VARIANCE_STARTS` × :data:`NOISES`, then drifts, then the seats' prior (``seat_sds``), as on the other
    rule."""
    around = [
        VarianceRule(current.start * f, current.noise * g, current.drift, current.cycles)
        for f in START_FACTORS
        for g in NOISE_FACTORS
    ]
    # And the grid a ladder on a step tries, at this one's drift and share: a new ladder's rule can be far from what
    # its field needs (a static field of players all new at once wants a newcomer's variance several times the
    # default and almost no noise), which multiples of ½ to 2 would reach only over several choices.
    wide = [VarianceRule(u, q, current.drift, current.cycles) for u in VARIANCE_STARTS for q in NOISES]
    grid = [current, *limits.allowed([rule for rule in dict.fromkeys(around + wide) if rule != current])]
    reference = _losses(C0, log, [current], seats, progress, times)[0]
    variance, scores = _variance_round(C0, log, grid, seats, times, drifts, reference, limits)
    candidates: list[Rule] = list(variance)
    # The way back to a step, where the log now says it pays (a cyclic field's cycles show only once they have been
    # played; a rule chosen on a ladder's first games, many players new at once, can be outgrown): constant ones,
    # which never freeze a player either, and a new ladder's shrinking one.
    steps: list[Rule] = [LearningRate(eta, None, current.drift) for eta in STEPS_BACK]
    if current.drift > 0:  # where the steps follow time away, a shrinking one levels off: never frozen
        steps += [LearningRate(SHRINKING_BACK_ETA, tau, current.drift) for tau in SHRINKING_BACK_TAUS]
    scores += _compared(C0, log, steps, seats, times, reference)
    candidates += steps
    return _chosen(C0, log, candidates, scores, seats, times, seat_sds)


def _chosen(C0, log: GameLog, candidates: list[Rule], scores: Scores, seats, times, seat_sds) -> RateChoice:
    """The best candidate if it beats the current (the first) by more than :func:`_bar` standard errors; then,
    where the log names seats (``seat_sds``), the seats' prior with that rule, under the same bar; the rows of
    every candidate.

    Rules are compared on the log's latest half (:func:`_compare`): what a rule does once a ladder is under way
    predicts its next games, where a whole log would weigh its first games, every player new at once, as much
    as all the rest.  A seats' prior matters only in a seat's first games, so it is compared on the whole log,
    against the rule chosen with the ladder's prior (a row of its own: ``against`` points to it)."""
    means, errors = scores.means, scores.errors
    per = _comparisons_per_game(log, latest=True)
    rows = [
        _row(rate) | {"log_loss": float(m / per), "standard_error": float(e / per)}
        for rate, m, e in zip(candidates, means, errors, strict=True)
    ]
    best = int(np.argmin(means))
    scored = log.n_games - log.n_games // 2
    # (A standard error of 0 with a difference is one game's: no evidence; nor is one of a few games.)
    if scored < MIN_SCORED_GAMES or not (errors[best] > 0 and means[0] - means[best] > _bar(scores) * errors[best]):
        best = 0
    for row in rows:
        row["scored_games"] = scored
    current_sd = None if seats is None or log.side_seat is None else float(1.0 / np.sqrt(seats.information[0]))
    if current_sd is None:
        return RateChoice(candidates[best], rows, None, best)
    for row in rows:
        row["seat_prior"] = current_sd
    tried = [sd for sd in seat_sds if prior_precision(sd) != seats.information[0]]
    if not tried:
        return RateChoice(candidates[best], rows, current_sd, best)
    rate = candidates[best]
    starts = [seats] + [Seats.fresh(len(seats.advantage), prior_precision(sd)) for sd in tried]
    losses = _losses(C0, log, [rate] * len(starts), starts, None, times)
    priors = _compare(losses, losses[0], latest=False)
    m, e = priors.means, priors.errors
    whole = _comparisons_per_game(log, latest=False)
    for sd, mean, error in zip([current_sd, *tried], m, e, strict=True):
        losses_of = {"log_loss": float(mean / whole), "standard_error": float(error / whole)}
        rows.append(_row(rate) | losses_of | {"seat_prior": sd, "scored_games": log.n_games})
    against, prior = len(rows) - len(starts), int(np.argmin(m))
    if prior == 0 or log.n_games < MIN_SCORED_GAMES or not (e[prior] > 0 and m[0] - m[prior] > _bar(priors) * e[prior]):
        return RateChoice(rate, rows, current_sd, best)
    return RateChoice(rate, rows, tried[prior - 1], against + prior, against)


def _comparisons_per_game(log: GameLog, latest: bool) -> float:
    """The mean weight of a game's pair terms, summed, over the games a rule is scored on (the log's latest half,
    or all of it): a game's loss divided by it is a loss per comparison, as a held-out report gives it (a game of
    two sides weighs 1, one of N sides N/2: its N(N - 1)/2 pairs at 1/(N - 1) each).  The choice itself compares
    rules on the same games, where the scale changes nothing."""
    if log.n_games == 0:
        return 1.0
    weights = np.add.reduceat(log.pair_weight, log.pair_ptr[:-1])
    return float(weights[log.n_games // 2 :].mean() if latest else weights.mean())


def _bar(scores: Scores) -> float:
    """How many standard errors the best challenger (the candidates after the first, the current rule) must beat
    the current rule by: the 84th percentile of the largest of their differences in standard errors were none of
    them better, so that luck alone changes the rule no more often than one challenger beats it by one standard
    error by luck (16%).  One challenger: 1.  Many: more, as the best of many looks better than it is; as many
    as Bonferroni's bound asks of independent ones, fewer of alike ones (a maximum-t test, as White's reality
    check for data snooping: the differences taken as normal with the correlations of the sampled games')."""
    differences = scores.sample[1:]
    differences = differences[differences.std(axis=1) > 0]  # one replayed alike the current cannot be chosen
    if len(differences) < 2:
        return 1.0
    values, vectors = np.linalg.eigh(np.corrcoef(differences))
    root = vectors * np.sqrt(np.clip(values, 0.0, None))
    draws = np.random.default_rng(0).standard_normal((_DRAWS, len(differences))) @ root.T
    return float(np.quantile(draws.max(axis=1), 1.0 - _LUCK))


def _row(rate: Rule) -> dict:
    """A candidate's settings: its rule, η (a variance rule's newcomer's η, √2 u₀), τ, drift, noise and cycles."""
    if isinstance(rate, VarianceRule):
        return {"rule": "variance", "eta": rate.start * MANIFOLD_NORM, "tau": None, "drift": rate.drift} | {
            "noise": rate.noise,
            "cycles": rate.cycles,
        }
    return {"rule": "steps", "eta": rate.eta, "tau": rate.tau, "drift": rate.drift, "noise": None, "cycles": None}


def _time_passes(log: GameLog, times: Times) -> bool:
    """Whether some player plays again later in the log (``times``), so a drift would wear their experience: in a
    log played all at one time every drift gives the same steps, and trying them would tell nothing."""
    if times is None or log.n_games == 0:
        return False
    when = np.asarray(times[0], dtype=np.float64)
    before = np.asarray(times[1], dtype=np.float64) if times[1] is not None else np.array([np.nan])
    return bool(np.ptp(when) > 0 or np.any(when.max() > before))


def _compare(losses: Array, reference: Array, latest: bool = True) -> Scores:
    """Each row's mean loss per game over the log's latest half (``latest``, the default) or all of it, the
    standard error (over those games) of its difference to ``reference``, and those differences at up to
    :data:`_SAMPLED` of the games, evenly spaced (the same games for every call on one log)."""
    if latest:
        half = losses.shape[1] // 2
        losses, reference = losses[:, half:], reference[half:]
    n_games = losses.shape[1]
    sampled = np.linspace(0, n_games - 1, min(n_games, _SAMPLED)).astype(np.int64)
    sample = losses[:, sampled] - reference[sampled]
    if n_games < 2:
        return Scores(losses.mean(axis=1), np.zeros(len(losses)), sample)
    errors = (losses - reference).std(axis=1, ddof=1) / np.sqrt(n_games)
    return Scores(losses.mean(axis=1), errors, sample)
