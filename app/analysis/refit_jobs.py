"""The refit job queue (mathematics §9): start a job within the limits, run it in a child process that stops when
it is cancelled, record a failure, take over the jobs of a server that stopped."""

from __future__ import annotations

import logging
import os
import threading
import time
from datetime import UTC, datetime, timedelta

from sqlalchemy.orm import Session

from app import storage
from app.analysis.refit_run import run_refit
from app.analysis.schemas import RefitIn
from app.core import jobs
from app.core.db import Database
from app.core.errors import Conflict, InvalidInput, TooManyRequests
from app.core.ladder import LadderRow
from app.core.metrics import REFITS
from app.domain.rerating import end_abandoned
from app.storage.refits import Refit

logger = logging.getLogger("melo")
#: A queued or running refit silent for this long was lost with its process (a restart): it shows as failed.
STALE = timedelta(minutes=10)
#: A queued job waits for the jobs before it; one still queued after this long lost its server before it ran.
STALE_QUEUED = timedelta(hours=2)
#: Refits queued or running at once, per ladder and per server (all worker processes): 429 beyond.
MAX_ACTIVE_PER_LADDER = 2
MAX_ACTIVE = 8
#: Seconds between a running job's looks at whether it was cancelled.
CANCEL_CHECK = 1.0


def start_refit(
    session: Session,
    ladder: LadderRow,
    params: RefitIn,
    log_games: int | None = None,
    log_comparisons: int | None = None,
    upto: int | None = None,
) -> Refit:
    """Record a queued refit (an auto refit with the log's games and comparisons then: its schedule's measure, and
    its last game ``upto``, the log it fits however long it waits); the caller commits, then :func:`submit` runs
    it."""
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
    params_json = params.model_dump(mode="json")
    return storage.refits.insert(session, ladder.id, params_json, jobs.owner(), log_games, log_comparisons, upto)


def recover(db: Database) -> list[int]:
    """At a server's start: the jobs whose server process stopped on this host (a restart, a crash) are taken
    over: a queued one is queued here (its id returned), a running one is marked failed (it died with its
    server; running it again could kill this one the same way); and the history they left written ahead is the
    log's again (:func:`app.domain.rerating.end_abandoned`)."""
    end_abandoned(db)
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
    jobs.submit(db, ladder_id, refit_id, _run_job, fail, _finished)


def _run_job(db: Database, ladder_id: int, refit_id: int) -> None:
    """:func:`app.analysis.refit_run.run_refit` in a job's child process, which ends as soon as the job is cancelled."""
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


def _finished(db: Database, ladder_id: int, refit_id: int) -> None:
    """The job's process is gone: its outcome in the metrics (done, rejected, failed, or applied: an auto refit),
    and a replay's history it left written ahead (cancelled, or killed, before the switch) is the log's again."""
    end_abandoned(db)
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
