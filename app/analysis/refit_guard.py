"""The auto refit's guard on a ladder (mathematics §9): the refit against the forecasts the ladder served on its
latest games."""

from __future__ import annotations

from app import rating
from app.analysis.schemas import RefitIn
from app.core.ladder import LadderRow
from app.rating.refit.guard import guard, guard_window
from app.storage.log import LadderLog


def guard_verdict(ladder: LadderRow, state: LadderLog, recent: LadderLog, params: RefitIn, progress) -> dict:
    """:func:`app.rating.refit.guard.guard` on the latest games of the log, under the ladder's rule (``ladder``'s:
    the rule a rate choice just gave it, which the ladder runs from the refit on), named in the verdict.

    The window (:func:`app.rating.refit.guard.guard_window`) never reaches back past
    the latest checkpoint, so the online forecasts it compares with
    are exactly those the ladder holds (replayed from that checkpoint under its rule, as
    ``/audit`` does).
    """
    n = state.log.n_games
    window = guard_window(n, recent.log.n_games)
    if not 0 < window < n:
        return {"better": False, "window_games": window, "reason": "no games to compare on"}
    rate = ladder.learning_rate()
    served = rating.replay_history(
        recent.start, recent.log, rate, games0=recent.start_games, seats=recent.start_seats, times=recent.times
    ).pair_p
    in_window = len(served) - (len(state.log.pair_a) - int(state.log.pair_ptr[n - window]))
    verdict = guard(
        state.log,
        state.start,  # from_start: the initial vectors
        window,
        served[in_window:],
        rate,
        ladder.k,
        params.select_k,
        params.l2,
        params.seed,
        progress,
        state.times,
        ladder.seat_precision(),
    )
    rule = {"rate_rule": ladder.rate_rule, "eta": ladder.eta, "eta_tau": ladder.eta_tau, "noise": ladder.noise}
    return vars(verdict) | {"rule": rule}
