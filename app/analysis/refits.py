"""The refit lifecycle (mathematics §9): queue a job, fit in a child process, report, apply as a checkpoint.

A refit reads the log in one snapshot, fits outside any transaction (games
keep flowing) and writes its progress and result in short transactions.
Applying it is a checkpoint: the refit's vectors replace the ratings as of the
last game it saw, and the games posted since are replayed on top with the
online rule, so ``/audit`` (which replays from the latest checkpoint) stays
exact.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import threading
import time
from datetime import UTC, datetime, timedelta

import numpy as np
from sqlalchemy.orm import Session

from app import rating, storage
from app.analysis.reports import identifiability_summary
from app.analysis.schemas import CheckpointOut, RefitIn, RefitOut
from app.core import jobs
from app.core.db import Database
from app.core.errors import Conflict, InvalidInput, NotFound, TooManyRequests
from app.core.metrics import REFITS
from app.core.schemas import Page, one_more
from app.domain.replays import Prepared, catch_up, prepare, replay_log, replay_prepared, write_history
from app.rating.identifiability import Identifiability
from app.rating.identifiability import identifiability as identify
from app.rating.refit import evaluate, guard, guard_window, split_games
from app.rating.refit import refit as fit_log
from app.rating.tuning import SEAT_PRIOR_SDS, choose_rate
from app.storage.ladders import LadderRow
from app.storage.log import LadderLog
from app.storage.tables import Checkpoint, Refit

logger = logging.getLogger("melo")
#: Seconds between progress writes.
PROGRESS_EVERY = 0.5
#: A queued or running refit silent for this long was lost with its process (a restart): it shows as failed.
STALE = timedelta(minutes=10)
#: A queued job waits for the jobs before it; one still queued after this long lost its server before it ran.
STALE_QUEUED = timedelta(hours=2)
#: Refits queued or running at once, per ladder and per server (all worker processes): 429 beyond.
MAX_ACTIVE_PER_LADDER = 2
MAX_ACTIVE = 8
#: Seconds between a running job's looks at whether it was cancelled.
CANCEL_CHECK = 1.0


def start_refit(session: Session, ladder: LadderRow, params: RefitIn, log_games: int | None = None) -> Refit:
    """Record a queued refit; the caller commits, then :func:`submit` runs it."""
    if params.select_k and max(params.select_k) > ladder.k:
        raise InvalidInput(
            f"select_k: at most the ladder's k = {ladder.k}",
            errors=[{"field": "select_k", "message": f"values must be <= {ladder.k}"}],
        )
    if params.holdout == 0 and (len(set(params.select_k or [])) > 1 or params.l2 is None):
        message = "must be > 0 to choose by held-out loss (select_k of two or more values, or l2 null)"
        raise InvalidInput(f"holdout: {message}", errors=[{"field": "holdout", "message": message}])
    if storage.ladders.sizes(session, ladder.id)[1] == 0:
        voided = storage.ladders.counted_sizes(session, ladder.id, voided=True)[1]
        why = f" (its {voided} game{'s are' if voided > 1 else ' is'} voided)" if voided else ""
        raise Conflict(f"Ladder {ladder.slug!r} has no games to fit yet{why}.", field="slug")
    now = datetime.now(UTC)
    since = (now - STALE_QUEUED, now - STALE)
    if not params.auto:  # one refit of a ladder at a time: the one asked for replaces an auto refit
        storage.refits.cancel_auto(session, ladder.id, "a refit of the ladder was asked for; it runs instead")
    if storage.refits.active(session, ladder.id, *since) >= MAX_ACTIVE_PER_LADDER:
        raise TooManyRequests(
            f"Ladder {ladder.slug!r} has {MAX_ACTIVE_PER_LADDER} refits queued or running; wait for one to finish."
        )
    if storage.refits.active(session, None, *since) >= MAX_ACTIVE:
        raise TooManyRequests(f"The server has {MAX_ACTIVE} refits queued or running; wait for one to finish.")
    return storage.refits.insert(session, ladder.id, params.model_dump(mode="json"), jobs.owner(), log_games)


def recover(db: Database) -> list[int]:
    """At a server's start: the jobs whose server process stopped on this host (a restart, a crash) are taken
    over: a queued one is queued here (its id returned), a running one is marked failed (it died with its
    server; running it again could kill this one the same way)."""
    me, resumed = jobs.owner(), []
    with db.writing() as session:
        for ladder_id, refit_id, status, owner in storage.refits.unfinished(session):
            if not jobs.owner_gone(owner):
                continue
            if status == "queued" and storage.refits.take_over(session, ladder_id, refit_id, owner, me):
                resumed.append((ladder_id, refit_id))
            elif status == "running":
                why = "its server process stopped while it ran; start a new refit"
                values = {"status": "failed", "error": why, "owner": me, "finished_at": datetime.now(UTC)}
                storage.refits.update(session, ladder_id, refit_id, values)
    for ladder_id, refit_id in resumed:
        submit(db, ladder_id, refit_id)
    if resumed:
        logger.info("resumed refits %s queued by a server that stopped", [refit_id for _, refit_id in resumed])
    return [refit_id for _, refit_id in resumed]


def submit(db: Database, ladder_id: int, refit_id: int) -> None:
    """Queue the ladder's refit; it runs in a child process (:mod:`app.core.jobs`)."""
    jobs.submit(db, ladder_id, refit_id, _run_job, fail, _count)


def _run_job(db: Database, ladder_id: int, refit_id: int) -> None:
    """:func:`run_refit` in a job's child process, which ends as soon as the job is cancelled."""
    watch = threading.Thread(target=_stop_if_cancelled, args=(db, ladder_id, refit_id), name="melo-cancel", daemon=True)
    watch.start()
    run_refit(db, ladder_id, refit_id)


def _stop_if_cancelled(db: Database, ladder_id: int, refit_id: int) -> None:
    while True:
        time.sleep(CANCEL_CHECK)
        with db.reading() as session:
            if storage.refits.status(session, ladder_id, refit_id) == "cancelled":
                logger.info("refit %s was cancelled; its process stops", refit_id)
                os._exit(0)


def _count(db: Database, ladder_id: int, refit_id: int) -> None:
    """The finished job's outcome in the metrics: done, rejected, failed, or applied (an auto refit)."""
    with db.reading() as session:
        job = storage.refits.get(session, ladder_id, refit_id)
    if job is not None:
        REFITS.labels("applied" if job.applied_at is not None else job.status).inc()


def fail(db: Database, ladder_id: int, refit_id: int, error: str) -> None:
    with db.writing() as session:
        job = storage.refits.get(session, ladder_id, refit_id)
        if job is not None and job.status in ("queued", "running"):
            now = datetime.now(UTC)
            values = {"status": "failed", "error": error[:2000], "finished_at": now}
            storage.refits.update(session, ladder_id, refit_id, values)


def run_refit(db: Database, ladder_id: int, refit_id: int, progress=None) -> None:
    """Fit the ladder's refit ``refit_id``, check identifiability of the fit, store the result (also used by
    ``melo refit``).

    An ``auto`` refit is guarded first (:func:`_guard`) and applied when it passes.
    """
    with db.snapshot() as session:
        job = storage.refits.get(session, ladder_id, refit_id)
        ladder = storage.ladders.by_id(session, job.ladder_id)
        params = RefitIn.model_validate(job.params)
        state = storage.log.read(session, ladder, from_start=True)  # every game up to state.last_game_id
        recent = storage.log.read(session, ladder) if params.auto else None  # from the latest checkpoint
        # The seasons that closed by its last game (those after it are pulled again by the replay from it).
        pulls = [(b, p) for b, p in storage.seasons.pulls(session, ladder.id) if b <= state.last_game_id]
    if not _advance(db, ladder_id, refit_id, "queued", status="running", after_game_id=state.last_game_id):
        return  # cancelled while it was queued
    last_write = [0.0]

    def report(done: int, total: int) -> None:
        if progress is not None:
            progress(done, total)
        now = time.monotonic()
        if now - last_write[0] >= PROGRESS_EVERY:
            last_write[0] = now
            _advance(db, ladder_id, refit_id, "running", progress=0.95 * done / total)

    m = len(state.keys)
    fitted, played = _kept(state, pulls, m)
    if state.log.n_games == 0 or m < 2:  # its games were voided while it was queued
        error = "nothing to fit: the ladder has no games that count (voided since this refit was started)"
        failed = {"status": "failed", "progress": 1.0, "error": error, "finished_at": datetime.now(UTC)}
        _advance(db, ladder_id, refit_id, "running", **failed)
        return
    if not played.any():
        error = "nothing to fit: every game is from before a season that started everyone afresh (pull 1)"
        failed = {"status": "failed", "progress": 1.0, "error": error, "finished_at": datetime.now(UTC)}
        _advance(db, ladder_id, refit_id, "running", **failed)
        return
    # The progress bar in parts: the rate's replays (if asked for), the guard's fit (an auto refit), the fit.
    parts = [name for name, wanted in (("rate", params.tune_rate), ("guard", params.auto), ("fit", True)) if wanted]

    def part(name: str):
        n = parts.index(name)
        return lambda done, total: report(n * total + done, len(parts) * total)

    rate = _rate(ladder, state, part("rate")) if params.tune_rate else None
    verdict, select_k = None, params.select_k
    if params.auto:
        verdict = _guard(ladder, state, recent, params, part("guard"))
        if not verdict["better"]:
            summary = {"games": state.log.n_games, "players": m, "guard": verdict} | ({"rate": rate} if rate else {})
            rejected = {"status": "rejected", "progress": 1.0, "result": summary, "finished_at": datetime.now(UTC)}
            if rate is not None and rate["changed"]:  # the rate has its own guard: applied all the same
                db.write(lambda session: _reject_and_apply_rate(session, ladder, refit_id, rejected))
            else:
                _advance(db, ladder_id, refit_id, "running", **rejected)
            return
        select_k = [verdict["k"]]

    result = fit_log(
        fitted,
        m,
        ladder.k,
        l2=params.l2,
        restarts=params.restarts,
        holdout=params.holdout,
        seed=params.seed,
        current=state.stored,
        select_k=select_k,
        progress=part("fit"),
        current_seats=state.stored_seats,
        folds=params.folds,
        seat_precision=ladder.seat_precision(),
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
        "season_pulls": [[b, p] for b, p in pulls],
        "seconds": result.seconds,
        "identifiability": identifiability_summary(found, state.keys),
    } | ({"guard": verdict} if verdict else {})
    if rate is not None:
        summary["rate"] = rate
    if seats := ladder.fresh_seats():  # seats the log never names keep the prior
        if result.seats is not None:
            n = len(result.seats.advantage)
            seats.advantage[:n], seats.information[:n] = result.seats.advantage, result.seats.information
        summary["seats"] = storage.ladders.seats_to_json(seats)
    # Players without a game (or only games a season's pull forgot) have nothing fitted, only the prior: they
    # keep their initial vectors.
    finished = {
        "status": "done",
        "progress": 1.0,
        "result": summary,
        "player_ids": storage.codec.pack_ids(state.player_ids[played]),
        "vectors": storage.codec.pack(result.C[played]),
        **placement_of(found, state.player_ids).packed(),
        "finished_at": datetime.now(UTC),
    }
    if params.auto:  # done and applied in one transaction: never seen done but not applied
        checkpoint = storage.refits.checkpoint_of(ladder.id, refit_id, state.last_game_id, finished)
        prepared = _prepared(db, ladder.id, checkpoint)  # replayed holding no lock; the apply writes it
        try:
            # Under the writers' locks: at their priority, not this child's (a starved holder stalls every post).
            jobs.at_server_priority(
                lambda: db.write(lambda session: _finish_and_apply(session, ladder, refit_id, finished, prepared))
            )
            return
        except Conflict as exc:  # a late commit below the refit's last game: the next auto refit will retry
            logger.info("auto refit %s not applied: %s", refit_id, exc.detail)
    _advance(db, ladder_id, refit_id, "running", **finished)


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
        apply_refit(session, ladder, storage.refits.get(session, ladder.id, refit_id), prepared)


def _guard(ladder: LadderRow, state: LadderLog, recent: LadderLog, params: RefitIn, progress) -> dict:
    """:func:`app.rating.refit.guard` on the latest games of the log.

    The window (:func:`app.rating.refit.guard_window`) never reaches back past
    the latest checkpoint, so the online forecasts it compares with
    are exactly those the ladder served (replayed from that checkpoint, as
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
    return vars(verdict)


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
    rate = rating.LearningRate(eta, ladder.eta_tau)
    history = rating.replay_history(start, state.log.take(train_games), rate, seats=ladder.fresh_seats())
    seats = None if history.seats is None else history.seats.advantage
    return vars(evaluate(history.C, state.log, test, seats))


#: Multiples of the ladder's drift a rate choice also tries, where the steps follow it (a drift of 0 stays: time
#: was turned off).
DRIFT_FACTORS = (0.0, 0.5, 2.0)


def _rate(ladder: LadderRow, state: LadderLog, progress) -> dict:
    """The learning rate the ladder's log itself chooses (:func:`app.rating.tuning.choose_rate`), replayed from
    the players' initial vectors, each candidate's prequential log loss, and the rate it was compared with.
    Where the ladder's steps follow the drift, the drift is chosen too (Elo points a year in the answer)."""
    current = ladder.learning_rate()
    fresh = ladder.fresh_seats()
    drifts: tuple[float, ...] = ()
    if current.drift > 0:
        drifts = tuple(f * current.drift for f in DRIFT_FACTORS)
    sds = SEAT_PRIOR_SDS if fresh is not None else ()
    choice = choose_rate(state.start, state.log, current, fresh, progress, state.times, drifts, sds)
    rows = [row | {"drift": _elo_drift(ladder, current, row["drift"])} for row in choice.rows]
    for row in rows:  # the ladder's own prior as it was set, not as its precision gives it back
        if fresh is not None and row["seat_prior"] == rows[0]["seat_prior"]:
            row["seat_prior"] = ladder.seat_prior
    chosen = rows[choice.index]
    return {
        "eta": choice.rate.eta,
        "eta_tau": choice.rate.tau,
        "drift": chosen["drift"],
        "seat_prior": chosen.get("seat_prior"),
        "changed": choice.index != 0,
        "previous_eta": current.eta,
        "previous_eta_tau": current.tau,
        "previous_drift": ladder.drift,
        "previous_drift_steps": ladder.drift_steps,
        "previous_seat_prior": ladder.seat_prior if fresh is not None else None,
        "log_loss": chosen["log_loss"],
        "previous_log_loss": rows[0]["log_loss"],
        "standard_error": chosen["standard_error"],
        "games": state.log.n_games,
        "applied": False,
        "candidates": rows,
    }


def _elo_drift(ladder: LadderRow, current: rating.LearningRate, drift: float) -> float:
    """A rate's drift in logits a year as the ladder's setting (Elo points a year): the setting itself where it
    is the ladder's (or the steps ignore it)."""
    return ladder.drift if drift == current.drift else round(drift * rating.ELO_PER_LOGIT, 9)


def _reject_and_apply_rate(session: Session, ladder: LadderRow, refit_id: int, rejected: dict) -> None:
    """An auto refit whose fit the guard rejected, but whose rate choice stands: recorded, and the rate applied."""
    if not storage.refits.advance(session, ladder.id, refit_id, "running", rejected):  # cancelled meanwhile
        return
    storage.players.lock_all(session, ladder.id)
    fresh = storage.ladders.by_id(session, ladder.id)
    if fresh is not None and _set_rate(session, fresh, storage.refits.get(session, ladder.id, refit_id)):
        replay_log(session, storage.ladders.by_id(session, ladder.id))
        storage.ladders.bump(session, [ladder.id], reset=True)


def _set_rate(session: Session, ladder: LadderRow, job: Refit) -> bool:
    """Give the ladder the learning rate the refit ``job`` chose, if it chose a new one, the ladder's rate is not
    pinned, and it is still the one the choice was compared with (the caller holds every player's lock, then
    replays the log and bumps the ladder with ``reset``); record it on the ladder and in the refit's report."""
    rate = (job.result or {}).get("rate")
    if not rate or not rate["changed"] or not ladder.auto_rate:
        return False
    previous = (rate["previous_eta"], rate["previous_eta_tau"], rate.get("previous_drift", ladder.drift))
    steps = rate.get("previous_drift_steps", ladder.drift_steps)
    prior = rate.get("previous_seat_prior") or ladder.seat_prior
    if (ladder.eta, ladder.eta_tau, ladder.drift, ladder.drift_steps, ladder.seat_prior) != (*previous, steps, prior):
        return False  # an admin set another rate since
    now = datetime.now(UTC)
    fields = ("eta", "eta_tau", "previous_eta", "previous_eta_tau", "log_loss", "previous_log_loss", "standard_error")
    choice = {name: rate[name] for name in (*fields, "games")} | {"refit": job.id, "applied_at": now.isoformat()}
    choice |= {"drift": rate.get("drift", ladder.drift), "previous_drift": previous[2]}
    values = {"eta": rate["eta"], "eta_tau": rate["eta_tau"], "drift": choice["drift"], "rate_choice": choice}
    if rate.get("seat_prior") is not None:
        choice |= {"seat_prior": rate["seat_prior"], "previous_seat_prior": prior}
        values["seat_prior"] = rate["seat_prior"]
    storage.ladders.change(session, ladder.id, values)
    storage.refits.update(session, job.ladder_id, job.id, {"result": job.result | {"rate": rate | {"applied": True}}})
    return True


def _advance(db: Database, ladder_id: int, refit_id: int, current: str, **values) -> bool:
    """Set fields of the ladder's job if its status is still ``current`` (not cancelled): whether it was."""
    with db.writing() as session:
        return storage.refits.advance(session, ladder_id, refit_id, current, values)


def get_refit(session: Session, ladder: LadderRow, refit_id: int) -> Refit:
    job = storage.refits.get(session, ladder.id, refit_id)
    if job is None:
        raise NotFound(f"There is no refit {refit_id} in ladder {ladder.slug!r}.")
    return job


def list_refits(session: Session, ladder: LadderRow, limit: int, cursor: int | None) -> Page[RefitOut]:
    jobs = storage.refits.recent(session, ladder.id, one_more(limit), before=cursor)
    return Page[RefitOut].of(jobs, limit, lambda job: refit_out(session, job), lambda job: str(job.id))


def refit_out(session: Session, job: Refit) -> RefitOut:
    """The job as the API shows it: a running one whose process stopped (no progress for :data:`STALE`), or a
    queued one whose server stopped before it ran (:data:`STALE_QUEUED`), shows as failed."""
    status, error = job.status, job.error
    idle = datetime.now(UTC) - job.updated_at
    if status == "running" and idle > STALE:
        minutes = int(STALE.total_seconds() // 60)
        status, error = "failed", f"no progress for {minutes} minutes: its server process stopped; start a new refit"
    elif status == "queued" and idle > STALE_QUEUED:
        hours = int(STALE_QUEUED.total_seconds() // 3600)
        status, error = "failed", f"still queued after {hours} hours: its server stopped before it ran; start a new one"
    return RefitOut(
        id=job.id,
        status=status,
        progress=job.progress,
        params=job.params,
        result=job.result,
        error=error,
        after_game=storage.games.number_of(session, job.ladder_id, job.after_game_id),
        created_at=job.created_at,
        finished_at=job.finished_at,
        applied_at=job.applied_at,
    )


def prepare_apply(db: Database, ladder: LadderRow, job: Refit) -> Prepared | None:
    """The replay of the games after a finished refit's last game, from its vectors, computed in a read snapshot
    (no lock held) for :func:`apply_refit`; None if it is not finished (:func:`apply_refit` says so)."""
    if job.status != "done":
        return None
    finished = {"player_ids": job.player_ids, "vectors": job.vectors, "result": job.result}
    return _prepared(db, ladder.id, storage.refits.checkpoint_of(ladder.id, job.id, job.after_game_id, finished))


#: An apply's replay catches up with the games committed while it replayed, outside the writers' locks, until
#: this few are left for the apply to replay under them (or after CATCH_UP_ROUNDS rounds, on a ladder posted to
#: faster than it replays).
CAUGHT_UP, CATCH_UP_ROUNDS = 64, 8


def _prepared(db: Database, ladder_id: int, checkpoint: Checkpoint) -> Prepared | None:
    """The log replayed from ``checkpoint`` (not applied yet) up to a recent game, in read snapshots."""
    with db.snapshot() as session:
        prepared = prepare(session, ladder_id, checkpoint)
    for _ in range(CATCH_UP_ROUNDS):
        if prepared is None:
            break
        with db.snapshot() as session:
            if catch_up(session, prepared) <= CAUGHT_UP:
                break
    return prepared


def apply_refit(session: Session, ladder: LadderRow, job: Refit, prepared: Prepared | None = None) -> CheckpointOut:
    """Checkpoint the refit's vectors after its last game and replay the later games on top (mathematics §9); their
    history shows the replayed vectors.  A learning rate the refit chose (``tune_rate``) is applied with it, unless
    the ladder's rate is pinned or was changed since (:func:`_set_rate`).

    With ``prepared`` (:func:`prepare_apply`), the replay up to the newest game it saw is only written here,
    and the games committed since replayed on top: the writer's lock is held for writes, not for reading and
    replaying the log (a stale one is dropped and the log replayed here)."""
    if job.status != "done":
        raise Conflict(f"Refit {job.id} is {job.status}; only a finished refit can be applied.", field="refit_id")
    if prepared is not None and prepared.checkpoint.refit_id != job.id:
        prepared = None
    written = 0 if prepared is None else write_history(session, ladder, prepared)
    storage.players.lock_all(session, ladder.id)
    ladder = storage.ladders.by_id(session, ladder.id) or ladder  # its settings as they are under the lock
    if storage.refits.games_up_to(session, ladder.id, job.after_game_id) != job.result["games"]:
        raise Conflict(
            "The log changed below the refit's last game (a late commit or a void); run the refit again.",
            field="refit_id",
        )
    pulled = [[b, p] for b, p in storage.seasons.pulls(session, ladder.id) if b <= job.after_game_id]
    if pulled != job.result.get("season_pulls", []):
        raise Conflict(
            "A season closed with a pull since the refit read the log (it weighs the games by the pulls); run it "
            "again.",
            field="refit_id",
        )
    fitted = storage.codec.unpack_ids(job.player_ids)
    if not storage.players.all_exist(session, ladder.id, fitted):
        raise Conflict("Players the refit fitted were merged since; run the refit again.", field="refit_id")
    if len(job.vectors or b"") != 8 * 2 * ladder.k * len(fitted):
        raise Conflict(
            f"The refit fitted vectors of another k than the ladder's k = {ladder.k}; run it again.", field="refit_id"
        )
    new_rate = _set_rate(session, ladder, job)
    if new_rate:  # the games after the checkpoint are replayed at the new rate
        ladder = storage.ladders.by_id(session, ladder.id) or ladder
    checkpoint = storage.refits.add_checkpoint(session, ladder.id, job)
    replayed = None
    if prepared is not None:
        replayed = replay_prepared(session, ladder, prepared, written)  # stale after a new rate: None
    if replayed is None:
        replayed = replay_log(session, ladder)  # now from this checkpoint: the games after the refit
    storage.refits.update(session, ladder.id, job.id, {"applied_at": datetime.now(UTC)})
    storage.events.add(session, ladder.id, "refit", {"refit": job.id})
    storage.ladders.bump(session, [ladder.id], reset=new_rate)
    after_game = storage.games.number_of(session, ladder.id, job.after_game_id) or 0
    return CheckpointOut(id=checkpoint.id, refit=job.id, after_game=after_game, replayed_games=replayed)
