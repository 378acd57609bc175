"""Running one refit job (mathematics §9): read the log, fit it, check the fit's identifiability, store the result
(and apply an auto refit that its guard passes).

A refit reads the log in one snapshot, fits outside any transaction (games
keep flowing) and writes its progress and result in short transactions.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from datetime import UTC, datetime

import numpy as np
from sqlalchemy.orm import Session

from app import rating, storage
from app.analysis.refit_apply import apply_refit, prepared_replay
from app.analysis.refit_guard import guard_verdict
from app.analysis.refit_rate import apply_rate_first, live_check, rate_choice, rate_settings
from app.analysis.reports import identifiability_summary
from app.analysis.schemas import RefitIn
from app.core import jobs
from app.core.db import Database
from app.core.errors import Conflict
from app.core.ladder import LadderRow
from app.domain.rerating import Prepared, switch
from app.rating.identifiability import Identifiability
from app.rating.identifiability import identifiability as identify
from app.rating.refit.metrics import evaluate
from app.rating.refit.pipeline import RefitOptions
from app.rating.refit.pipeline import refit as fit_log
from app.rating.refit.split import split_games
from app.storage.log import LadderLog

logger = logging.getLogger("melo")
#: Seconds between progress writes.
PROGRESS_EVERY = 0.5


@dataclasses.dataclass
class _Job:
    """A refit job as it starts: its ladder, parameters, the log it fits (read from the start, ``state``; an auto
    refit's also from the latest checkpoint, ``recent``) and the seasons' pulls by its last game."""

    ladder: LadderRow
    params: RefitIn
    state: LadderLog
    recent: LadderLog | None
    pulls: list[tuple[int, float]]


def run_refit(db: Database, ladder_id: int, refit_id: int, progress=None) -> None:
    """Fit the ladder's refit ``refit_id``, check identifiability of the fit, store the result (also used by
    ``melo refit``).

    An ``auto`` refit applies the rate it chose at once (:func:`app.analysis.refit_rate.apply_rate_first`), then
    is guarded (:func:`app.analysis.refit_guard.guard_verdict`) and applied when it passes.
    """
    job = _read(db, ladder_id, refit_id)
    ladder, params, state = job.ladder, job.params, job.state
    read = {"after_game_id": state.last_game_id}
    if params.auto:  # what the policy measures the next one from: the comparisons of the log this one read
        read |= {"log_games": state.log.n_games, "log_comparisons": int(state.log.pair_ptr[-1])}
    if not _advance(db, ladder_id, refit_id, "queued", status="running", **read):
        return  # cancelled while it was queued
    m = len(state.keys)
    fitted, played = _kept(state, job.pulls, m)
    if (error := _nothing_to_fit(state, played)) is not None:
        failed = {"status": "failed", "progress": 1.0, "error": error, "finished_at": datetime.now(UTC)}
        _advance(db, ladder_id, refit_id, "running", **failed)
        return
    part = _progress(db, ladder_id, refit_id, params, progress)
    rate = rate_choice(ladder, state, part("rate")) if params.tune_rate else None
    if rate is not None and rate["changed"]:  # as the ladder would run it: from its latest checkpoint
        with db.snapshot() as session:
            rate = live_check(session, ladder, rate, state.last_game_id)
    if params.auto and rate is not None and rate["changed"]:  # at once, not after the fit (apply_rate_first)
        rate = rate | {"applied": _apply_rate(db, ladder, refit_id, rate)}
        if rate["applied"]:  # the refit is then judged as the ladder will run it: the new rule, from its state now
            ladder = dataclasses.replace(ladder, **rate_settings(rate, ladder))
            with db.snapshot() as session:
                job.recent = storage.log.read(session, ladder, upto=state.last_game_id)
    verdict, select_k = None, params.select_k
    if params.auto:
        assert job.recent is not None  # read with the job for an auto refit
        verdict = guard_verdict(ladder, state, job.recent, params, part("guard"))
        if not verdict["better"]:
            summary = {"games": state.log.n_games, "players": m, "guard": verdict} | ({"rate": rate} if rate else {})
            # The rate has its own guard: applied all the same (above).
            rejected = {"status": "rejected", "progress": 1.0, "result": summary, "finished_at": datetime.now(UTC)}
            _advance(db, ladder_id, refit_id, "running", **rejected)
            return
        select_k = [verdict["k"]]
    finished = _fit(job, ladder, fitted, played, select_k, part("fit")) | {"finished_at": datetime.now(UTC)}
    finished["result"] |= ({"guard": verdict} if verdict else {}) | ({"rate": rate} if rate is not None else {})
    if params.auto:  # done and applied in one transaction: never seen done but not applied
        checkpoint = storage.refits.checkpoint_of(ladder.id, refit_id, state.last_game_id, finished)
        prepared = prepared_replay(db, ladder.id, checkpoint)  # replayed holding no lock; the apply writes it
        try:
            # Under the writers' locks: at their priority, not this child's (a starved holder stalls every post).
            jobs.at_server_priority(
                lambda: switch(
                    db, prepared, lambda session: _finish_and_apply(session, ladder, refit_id, finished, prepared)
                )
            )
            return
        except Conflict as exc:  # a late commit below the refit's last game: the next auto refit will retry
            logger.info("auto refit %s not applied: %s", refit_id, exc.detail)
    _advance(db, ladder_id, refit_id, "running", **finished)


def _read(db: Database, ladder_id: int, refit_id: int) -> _Job:
    """The job as it starts, read in one snapshot."""
    with db.snapshot() as session:
        job = storage.refits.get(session, ladder_id, refit_id)
        # The job that was queued, on its ladder: both go only when the ladder is deleted.
        assert job is not None
        ladder = storage.ladders.by_id(session, job.ladder_id)
        assert ladder is not None
        params = RefitIn.model_validate(job.params)
        # An auto refit's log ends where it did when the refit was due (``after_game_id``, set when it was queued).
        upto = job.after_game_id if params.auto and job.after_game_id is not None else storage.log.END
        state = storage.log.read(session, ladder, from_start=True, upto=upto)  # every game up to state.last_game_id
        if params.auto and (cut := due_part(state, job.log_comparisons)) is not None:
            upto = cut
            state = storage.log.read(session, ladder, from_start=True, upto=upto)
        recent = storage.log.read(session, ladder, upto=upto) if params.auto else None  # from the latest checkpoint
        # The seasons that closed by its last game (those after it are pulled again by the replay from it).
        pulls = [(b, p) for b, p in storage.seasons.pulls(session, ladder.id) if b <= state.last_game_id]
    return _Job(ladder, params, state, recent, pulls)


def _nothing_to_fit(state: LadderLog, played: np.ndarray) -> str | None:
    """Why a refit has nothing to fit, if it has not."""
    if state.log.n_games == 0 or len(state.keys) < 2:  # its games were voided while it was queued
        return "nothing to fit: the ladder has no games that count (voided since this refit was started)"
    if not played.any():
        return "nothing to fit: every game is from before a season that started everyone afresh (pull 1)"
    return None


def _progress(db: Database, ladder_id: int, refit_id: int, params: RefitIn, progress):
    """The progress bar in parts, each a reporter ``(done, total)`` by name: the rate's replays (if asked for), the
    guard's fit (an auto refit), the fit; written to the job at most every :data:`PROGRESS_EVERY` seconds."""
    parts = [name for name, wanted in (("rate", params.tune_rate), ("guard", params.auto), ("fit", True)) if wanted]
    last_write = [0.0]

    def report(done: int, total: int) -> None:
        if progress is not None:
            progress(done, total)
        now = time.monotonic()
        if now - last_write[0] >= PROGRESS_EVERY:
            last_write[0] = now
            _advance(db, ladder_id, refit_id, "running", progress=0.95 * done / total)

    def part(name: str):
        n = parts.index(name)
        return lambda done, total: report(n * total + done, len(parts) * total)

    return part


def _apply_rate(db: Database, ladder: LadderRow, refit_id: int, rate: dict) -> bool:
    """An auto refit's changed rate applied at once (:func:`app.analysis.refit_rate.apply_rate_first`), the log
    replayed at it holding no lock: whether it was."""
    at_rate = prepared_replay(db, ladder.id, None, rate_settings(rate, ladder))
    return jobs.at_server_priority(
        lambda: switch(db, at_rate, lambda session: apply_rate_first(session, ladder.id, refit_id, rate, at_rate))
    )


def _fit(
    job: _Job, ladder: LadderRow, fitted: rating.GameLog, played: np.ndarray, select_k: list[int] | None, progress
) -> dict:
    """The fit of the log (the players who played in it), its held-out metrics and identifiability: the job's
    finished fields, less the time."""
    params, state = job.params, job.state
    options = RefitOptions(
        l2=params.l2,
        restarts=params.restarts,
        holdout=params.holdout,
        seed=params.seed,
        select_k=select_k,
        folds=params.folds,
        seat_precision=ladder.seat_precision(),
    )
    m = len(state.keys)
    result = fit_log(
        fitted, m, ladder.k, options, current=state.stored, current_seats=state.stored_seats, progress=progress
    )
    heldout = dict(result.heldout)
    if result.heldout_note is None:  # held-out games were drawn (the same split as the refit's)
        eta = ladder.eta if params.eta is None else params.eta
        replay_k = ladder.k if params.replay_k is None else params.replay_k
        heldout["replay"] = _replay_metrics(ladder, state, eta, replay_k, params) | {"eta": eta, "k": replay_k}
    # Identifiability of the model chosen: its 2k' coordinates (Elo: (r, 1)), not the padding.
    found = identify(result.C[:, : 2 * max(result.k, 1)], state.log, m)
    summary = {
        "k": result.k,
        "log_likelihood": result.log_likelihood,
        "heldout": heldout,
        "heldout_note": result.heldout_note,
        "restarts": result.restarts,
        "restart_max_abs_dp": result.restart_max_abs_dp,
        "k_selection": result.k_selection,
        "l2": result.l2,
        "l2_selection": result.l2_selection,
        "games": state.log.n_games,
        "players": m,
        "season_pulls": [[b, p] for b, p in job.pulls],
        "seconds": result.seconds,
        "identifiability": identifiability_summary(found, state.keys),
    }
    if seats := ladder.fresh_seats():  # seats the log never names keep the prior
        if result.seats is not None:
            n = len(result.seats.advantage)
            seats.advantage[:n], seats.information[:n] = result.seats.advantage, result.seats.information
        summary["seats"] = storage.ladder_state.seats_to_json(seats)
    # Players without a game (or only games a season's pull forgot) have nothing fitted, only the prior: they
    # keep their initial vectors.
    return {
        "status": "done",
        "progress": 1.0,
        "result": summary,
        "player_ids": storage.codec.pack_ids(state.player_ids[played]),
        "vectors": storage.codec.pack(result.C[played]),
        **placement_of(found, state.player_ids).packed(),
    }


def due_part(state: LadderLog, due_at: int | None) -> int | None:
    """The last game of the shortest start of the log ``state`` with ``due_at`` comparisons (pairs of sides), where
    that is not the whole of it: what an auto refit due at ``due_at`` reads (:mod:`app.analysis.auto`).  The policy
    looks some games after that point, later when the server is busy or a refit was still running; from the
    log's own count the refits, their rate choices and so the ratings a ladder ends with do not depend on when it
    looked (a job queued before the policy recorded its due point reads what it had)."""
    compared = state.log.pair_ptr[1:]  # the comparisons up to each game
    if due_at is None or not len(compared) or compared[-1] <= due_at:
        return None
    return int(state.game_ids[int(np.searchsorted(compared, due_at))])


def _kept(state: LadderLog, pulls: list[tuple[int, float]], m: int) -> tuple[rating.GameLog, np.ndarray]:
    """The log with each game weighted by what the seasons' pulls kept of it (mathematics §8, "Seasons": a refit
    forgets the old seasons as the online ratings did), and which players have a game it keeps."""
    log = state.log
    weight = rating.kept_weights(state.game_ids, [b for b, _ in pulls], [p for _, p in pulls])
    if pulls:
        log = dataclasses.replace(log, pair_weight=log.pair_weight * np.repeat(weight, np.diff(log.pair_ptr)))
    kept = np.bincount(log.member_player, weights=np.repeat(weight, np.diff(log.member_ptr)), minlength=m)
    return log, kept > 0


def placement_of(found: Identifiability, player_ids: np.ndarray) -> storage.refits.Placement:
    """Who a fit's identifiability check does not place, by player id: the not comparable, and the players outside
    its largest strongly connected component."""
    not_comparable = [row["player"] for row in found.not_comparable]
    field = max(found.components, key=len) if found.components else []
    outside = [n for group in found.components if group is not field for n in group]
    return storage.refits.Placement.of(player_ids[not_comparable], player_ids[outside])


def _finish_and_apply(
    session: Session, ladder: LadderRow, refit_id: int, finished: dict, prepared: Prepared | None
) -> None:
    if storage.refits.advance(session, ladder.id, refit_id, "running", finished):  # not cancelled meanwhile
        job = storage.refits.get(session, ladder.id, refit_id)
        assert job is not None  # advanced just now, in this transaction
        apply_refit(session, ladder, job, prepared)


def _replay_metrics(ladder: LadderRow, state: LadderLog, eta: float, k: int, params: RefitIn) -> dict:
    """Held-out quality of the online rule (mathematics §3-§6, §9 "Replay") over the training games, with η and k.

    At the ladder's k it starts from the players' initial vectors as the
    ladder holds them (``state`` read from the start); at another k from seeded
    ones drawn at that k (the ladder's offset only applies at its own k).
    """
    train, test = split_games(state.log, params.holdout, params.seed)
    train_games = np.unique(np.searchsorted(state.log.pair_ptr, train, side="right") - 1)
    seeded = k != ladder.k
    start = rating.initial_vectors(state.keys, k, ladder.seed, ladder.init_scale) if seeded else state.start
    # The ladder's rule (under the variance rule, its variances: mathematics §3b), replayed without the games' times.
    rate = dataclasses.replace(ladder, eta=eta, drift=0.0).learning_rate()
    history = rating.replay_history(start, state.log.take(train_games), rate, seats=ladder.fresh_seats())
    seats = None if history.seats is None else history.seats.advantage
    return vars(evaluate(history.C, state.log, test, seats))


def _advance(db: Database, ladder_id: int, refit_id: int, current: str, **values) -> bool:
    """Set fields of the ladder's job if its status is still ``current`` (not cancelled): whether it was."""
    with db.writing() as session:
        return storage.refits.advance(session, ladder_id, refit_id, current, values)
