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


def refit(  # noqa: C901, PLR0915 (issue 62: to split)
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
    l2, restarts, holdout, seed = options.l2, options.restarts, options.holdout, options.seed
    select_k, folds, max_iter = options.select_k, options.folds, options.max_iter
    seat_precision = options.seat_precision
    start = time.perf_counter()
    candidates = sorted(set(select_k)) if select_k else []
    if holdout == 0 and (len(candidates) > 1 or l2 is None):
        field = "select_k" if len(candidates) > 1 else "l2"
        raise RatingInputError(field, "choosing by held-out loss needs a holdout > 0")
    train, test, note = heldout_split(log, holdout, seed)
    if test is None:  # nothing to choose by: the simplest k offered, the default λ
        choices = []
        if len(candidates) > 1:
            choices.append(f"k = {candidates[0]} (the smallest of select_k)")
        if l2 is None:
            choices.append(f"λ = {L2:g} (the default)")
        if choices:
            note += f" Chosen without held-out loss: {' and '.join(choices)}."
        candidates, l2 = candidates[:1], L2 if l2 is None else l2
    choosing = test is not None
    fold = fold_terms(log, folds, seed) if choosing and len(candidates) > 1 else None
    n_fits = restarts + 1
    if choosing:
        n_folds = 0 if fold is None else int(fold.max()) + 1
        n_fits += n_folds * sum(1 for kk in candidates if kk > 0) + (len(L2_CHOICES) if l2 is None else 0)
    fits_done = [0]
    penalty = L2 if l2 is None else l2

    def run(kk: int, pairs: IntArray | None, s: int, C0: Array | None = None, lam: float | None = None) -> Fit:
        def each(it: int, total: int) -> None:
            if progress is not None:
                progress(int(1000 * (fits_done[0] + it / total) / n_fits), 1000)

        lam = penalty_weights(kk, penalty if lam is None else lam)
        settings = {"C0": C0, "seed": s, "max_iter": max_iter, "progress": each, "seat_precision": seat_precision}
        result = fit(log, n_players, kk, lam, pairs, **settings)
        fits_done[0] += 1
        return result

    heldout: dict[str, dict] = {}
    selection = None
    chosen = candidates[0] if candidates and not choosing else k
    if choosing:
        elo = fit_elo(pair_counts(log, n_players, train))
        heldout["elo"] = vars(evaluate_elo(elo.ratings, log, test))
        if current is not None:
            online = None if current_seats is None else current_seats.advantage
            heldout["current"] = vars(evaluate(current, log, test, online))
    if len(candidates) > 1 and choosing:
        chosen, selection = choose_k(log, n_players, candidates, fold, seed, run)
    elif candidates and choosing:
        chosen = candidates[0]
    if chosen == 0:
        full = fit_elo(pair_counts(log, n_players))
        if progress is not None:
            progress(1000, 1000)
        C = _pad(elo_vectors(full.ratings, 1), k, seed)
        seats = None
        if log.side_seat is not None:
            h = fit_seats(C, log, log.n_seats_needed, seat_precision=seat_precision)
            seats = seat_information(C, log, h, seat_precision)
        seconds = time.perf_counter() - start
        return Report(0, C, full.log_likelihood, [], 0.0, heldout, selection, seconds, seats=seats, heldout_note=note)

    l2_selection = None
    if l2 is None:
        penalty, l2_selection = choose_l2(log, chosen, train, test, seed, run)
    fits = [run(chosen, train, seed + r) for r in range(restarts)]
    best = max(fits, key=lambda f: f.log_likelihood)
    if test is not None:
        heldout["refit"] = vars(evaluate(best.C, log, test, best.seats))
    p_best = observed_pair_probability(best.C, log)
    agreement = max(float(np.max(np.abs(observed_pair_probability(f.C, log) - p_best), initial=0.0)) for f in fits)
    final = run(chosen, None, seed, C0=best.C)
    if progress is not None:
        progress(1000, 1000)
    rows = [{"log_likelihood": f.log_likelihood, "iterations": f.iterations, "converged": f.converged} for f in fits]
    C = final.C if chosen == k else _pad(final.C, k, seed)
    seats = None if final.seats is None else seat_information(final.C, log, final.seats, seat_precision)
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
        penalty,
        l2_selection,
        seats,
        heldout_note=note,
    )


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
