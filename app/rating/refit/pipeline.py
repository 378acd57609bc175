"""The whole refit (mathematics §9): hold out, choose k and λ, fit from several starts, refit on every game.

Maximised with L-BFGS (:mod:`app.rating.refit.fit`) from several seeded random
full-rank starts (mathematics §2); the vectors of two restarts differ by a
symplectic map, so restarts are compared on P, not on C.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike

from app.rating.elo import fit_elo, pair_counts
from app.rating.errors import RatingInputError
from app.rating.game_log import GameLog, IntArray
from app.rating.model import Array
from app.rating.refit.fit import Fit, Progress, fit
from app.rating.refit.likelihood import observed_pair_probability
from app.rating.refit.metrics import evaluate, evaluate_elo
from app.rating.refit.prior import L2, elo_vectors, penalty_weights
from app.rating.refit.seats import fit_seats, seat_information
from app.rating.refit.selection import FOLDS, L2_CHOICES, choose_k, choose_l2
from app.rating.refit.split import fold_terms, heldout_split
from app.rating.seats import SEAT_PRIOR_PRECISION, Seats


@dataclass(frozen=True)
class RefitOptions:
    """How :func:`refit` fits and chooses."""

    #: λ of the cyclic discs (:func:`app.rating.refit.prior.penalty_weights`); None: chosen among
    #: :data:`app.rating.refit.selection.L2_CHOICES` by held-out loss.
    l2: float | None = L2
    #: Random starts of the fit on the training games.
    restarts: int = 3
    #: Fraction of the matchups held out (:func:`app.rating.refit.split.split_games`); 0: none.
    holdout: float = 0.2
    #: Seed of the split, the folds and the random starts.
    seed: int = 0
    #: The k to choose among by cross-validation (0 = Elo); None: the ladder's k.
    select_k: Sequence[int] | None = None
    #: L-BFGS iterations of each fit at most.
    max_iter: int = 2000
    #: Folds of whole matchups over which k is chosen.
    folds: int = FOLDS
    #: Precision of the learned seats' prior.
    seat_precision: float = SEAT_PRIOR_PRECISION


@dataclass
class Report:
    """What a refit job returns (mathematics §9)."""

    k: int
    C: Array
    log_likelihood: float
    restarts: list[dict]
    restart_max_abs_dp: float
    heldout: dict[str, dict] = field(default_factory=dict)
    k_selection: list[dict] | None = None
    seconds: float = 0.0
    l2: float = L2
    l2_selection: list[dict] | None = None
    #: The learned seats fitted with the vectors (mathematics §5), for a log that names seats.
    seats: Seats | None = None
    #: Why nothing was held out (``heldout`` then empty), in words; None when held-out metrics were computed.
    heldout_note: str | None = None


def refit(
    log: GameLog,
    n_players: int,
    k: int,
    options: RefitOptions = RefitOptions(),
    *,
    current: ArrayLike | None = None,
    current_seats: Seats | None = None,
    progress: Progress = None,
) -> Report:
    """Fit on the training games from ``restarts`` starts, report held-out metrics, then refit on all games.

    The settings are those of ``options`` (:class:`RefitOptions`).
    Held-out log loss, Brier and accuracy are reported for the refit, the
    ``current`` (online) vectors if given (with ``current_seats``), and the Elo
    baseline (mathematics §11).
    When nothing can be held out (:func:`app.rating.refit.split.heldout_split`: a log of one matchup,
    or a few that the draw leaves on one side), every game is fitted, no
    held-out metrics are reported and ``heldout_note`` says why; k is then the
    smallest of ``select_k`` and λ the default :data:`app.rating.refit.prior.L2`, as nothing can
    choose them.
    With ``select_k``, k is chosen by cross-validation: the log's matchups are
    dealt into ``folds`` folds (:func:`app.rating.refit.split.fold_terms`; whole matchups, as pairs
    never played are what matchmaking predicts), each k there (0 = Elo) is
    fitted on every fold but one and scored on that one, and the smallest k
    whose mean held-out log loss is within one standard error of the lowest is
    used (:func:`app.rating.refit.selection.simplest_over_folds`).  That costs ``folds`` fits per k; one
    random split alone chose k = 1 where k = 2 was 16% closer to the true
    probabilities (bench/bench_select_k.py).  The vectors keep
    the 2k columns of ``k`` (k = 0 gives (r, 1), then small random discs, see
    :func:`_pad`).  ``l2`` is λ of the cyclic discs (:func:`app.rating.refit.prior.penalty_weights`);
    with ``l2=None`` it is chosen the same way among :data:`app.rating.refit.selection.L2_CHOICES` (k is
    chosen first, with :data:`app.rating.refit.prior.L2`).  ``progress(done, total)`` counts fits, in
    thousandths.
    """
    start = time.perf_counter()
    plan = _plan(log, options)
    train, test, note, candidates = plan.train, plan.test, plan.note, plan.candidates
    run = _Fits(log, n_players, options, plan.n_fits, progress, L2 if plan.l2 is None else plan.l2)
    heldout: dict[str, dict] = {}
    selection = None
    chosen = candidates[0] if candidates and test is None else k
    if test is not None:  # choosing
        elo = fit_elo(pair_counts(log, n_players, train))
        heldout["elo"] = vars(evaluate_elo(elo.ratings, log, test))
        if current is not None:
            online = None if current_seats is None else current_seats.advantage
            heldout["current"] = vars(evaluate(current, log, test, online))
        if len(candidates) > 1:
            assert plan.fold is not None  # dealt whenever choosing among several k
            chosen, selection = choose_k(log, n_players, candidates, plan.fold, options.seed, run)
        elif candidates:
            chosen = candidates[0]
    if chosen == 0:
        return _elo_report(log, n_players, k, options, heldout, selection, note, start, progress)
    l2_selection = None
    if plan.l2 is None:
        assert train is not None and test is not None  # without held-out terms l2 was set to the default
        run.penalty, l2_selection = choose_l2(log, chosen, train, test, options.seed, run)
    fits = [run(chosen, train, options.seed + r) for r in range(options.restarts)]
    best = max(fits, key=lambda f: f.log_likelihood)
    if test is not None:
        heldout["refit"] = vars(evaluate(best.C, log, test, best.seats))
    p_best = observed_pair_probability(best.C, log)
    agreement = max(float(np.max(np.abs(observed_pair_probability(f.C, log) - p_best), initial=0.0)) for f in fits)
    final = run(chosen, None, options.seed, C0=best.C)
    if progress is not None:
        progress(1000, 1000)
    rows = [{"log_likelihood": f.log_likelihood, "iterations": f.iterations, "converged": f.converged} for f in fits]
    C = final.C if chosen == k else _pad(final.C, k, options.seed)
    precision = options.seat_precision
    seats = None if final.seats is None else seat_information(final.C, log, final.seats, precision)
    seconds = time.perf_counter() - start
    return Report(
        chosen,
        C,
        final.log_likelihood,
        rows,
        agreement,
        heldout,
        selection,
        seconds,
        run.penalty,
        l2_selection,
        seats,
        heldout_note=note,
    )


@dataclass(frozen=True)
class _Plan:
    """What a refit holds out and chooses among: the training and held-out terms (``test`` None: nothing held
    out, ``note`` says why), the k to choose among, λ (None: to choose), the folds and how many fits it makes."""

    train: IntArray | None
    test: IntArray | None
    note: str | None
    candidates: list[int]
    l2: float | None
    fold: IntArray | None
    n_fits: int


def _plan(log: GameLog, options: RefitOptions) -> _Plan:
    """The refit's :class:`_Plan` under ``options``: with nothing to hold out, the simplest k offered and the
    default λ, as nothing can choose them."""
    l2, holdout, seed = options.l2, options.holdout, options.seed
    candidates = sorted(set(options.select_k)) if options.select_k else []
    if holdout == 0 and (len(candidates) > 1 or l2 is None):
        field = "select_k" if len(candidates) > 1 else "l2"
        raise RatingInputError(field, "choosing by held-out loss needs a holdout > 0")
    train, test, note = heldout_split(log, holdout, seed)
    if test is None:  # nothing to choose by: the simplest k offered, the default λ
        assert note is not None  # heldout_split says why whenever it holds nothing out
        choices = []
        if len(candidates) > 1:
            choices.append(f"k = {candidates[0]} (the smallest of select_k)")
        if l2 is None:
            choices.append(f"λ = {L2:g} (the default)")
        if choices:
            note += f" Chosen without held-out loss: {' and '.join(choices)}."
        return _Plan(train, test, note, candidates[:1], L2 if l2 is None else l2, None, options.restarts + 1)
    fold = fold_terms(log, options.folds, seed) if len(candidates) > 1 else None
    n_folds = 0 if fold is None else int(fold.max()) + 1
    n_fits = options.restarts + 1 + n_folds * sum(1 for kk in candidates if kk > 0)
    return _Plan(train, test, note, candidates, l2, fold, n_fits + (len(L2_CHOICES) if l2 is None else 0))


@dataclass
class _Fits:
    """Each fit of a refit, counted for its progress (``done`` of ``total``, reported in thousandths), at the
    cyclic discs' λ ``penalty`` unless a fit asks for another."""

    log: GameLog
    n_players: int
    options: RefitOptions
    total: int
    progress: Progress
    penalty: float
    done: int = 0

    def __call__(
        self, kk: int, pairs: IntArray | None, s: int, C0: Array | None = None, lam: float | None = None
    ) -> Fit:
        def each(it: int, total: int) -> None:
            if self.progress is not None:
                self.progress(int(1000 * (self.done + it / total) / self.total), 1000)

        weights = penalty_weights(kk, self.penalty if lam is None else lam)
        options = self.options
        result = fit(
            self.log,
            self.n_players,
            kk,
            weights,
            pairs,
            C0=C0,
            seed=s,
            max_iter=options.max_iter,
            progress=each,
            seat_precision=options.seat_precision,
        )
        self.done += 1
        return result


def _elo_report(
    log: GameLog,
    n_players: int,
    k: int,
    options: RefitOptions,
    heldout: dict[str, dict],
    selection: list[dict] | None,
    note: str | None,
    start: float,
    progress: Progress,
) -> Report:
    """The report where k = 0 (Elo) was chosen: Elo fitted on every game, as (r, 1) padded to the ladder's k."""
    full = fit_elo(pair_counts(log, n_players))
    if progress is not None:
        progress(1000, 1000)
    C = _pad(elo_vectors(full.ratings, 1), k, options.seed)
    seats = None
    if log.side_seat is not None:
        h = fit_seats(C, log, log.n_seats_needed, seat_precision=options.seat_precision)
        seats = seat_information(C, log, h, options.seat_precision)
    seconds = time.perf_counter() - start
    return Report(0, C, full.log_likelihood, [], 0.0, heldout, selection, seconds, seats=seats, heldout_note=note)


#: Scale of the random start of the discs a smaller chosen k leaves empty.
PAD_SCALE = 1e-2


def _pad(C: Array, k: int, seed: int) -> Array:
    """Vectors of fewer discs as 2k columns.

    The extra discs get a small seeded random start rather than zeros: with
    every player's disc at zero the online rule could never grow it (Ω c has no
    component there; Theorem 1 of [Guide]), and the ladder would be stuck at
    the smaller k.  They change the advantages by O(PAD_SCALE²).
    """
    if C.shape[1] > 2 * k:
        raise RatingInputError("select_k", f"k = {C.shape[1] // 2} does not fit a ladder of k = {k}")
    out = np.random.default_rng(seed).normal(scale=PAD_SCALE, size=(len(C), 2 * k))
    out[:, : C.shape[1]] = C
    return out
