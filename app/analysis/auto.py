"""A ladder's auto-refit policy: a guarded background refit as the log grows (mathematics §9).

When a ladder with ``auto_refit`` has at least :data:`~app.domain.refit_policy.FIRST_COMPARISONS`
comparisons (pairs of sides: a two-sided game is one) and they have grown by
:data:`~app.domain.refit_policy.GROWTH` since the log the last auto refit read (more after failures in a row:
:func:`~app.domain.refit_policy.policy`), the service starts an ``auto`` refit (k
chosen among 0..k).  The job applies itself as a checkpoint only if it would
have predicted the latest games better than the online ratings did
(:func:`~app.analysis.refit_guard.guard_verdict`); the per-game update stays the normalised, distributed
rule.

Every worker process counts the comparisons of the games it posts per ladder and
looks at the database only every :data:`CHECK_EVERY` of them (a two-sided game is
one), in a thread of its own after the commit, so posting stays cheap.  Two
workers may rarely start a refit each; both are guarded, and applying one
after the other is still exact.
"""

from __future__ import annotations

import logging
import threading
from datetime import UTC, datetime

from sqlalchemy.orm import Session

from app import storage
from app.analysis import refit_jobs
from app.analysis.schemas import RefitIn
from app.core.db import Database
from app.core.errors import TooManyRequests
from app.core.ladder import LadderRow
from app.domain.refit_policy import due_point, policy

logger = logging.getLogger("melo")
CHECK_EVERY = 100

_posted: dict[int, int] = {}
_lock = threading.Lock()
_checks: set[threading.Thread] = set()


def games_posted(db: Database, compared: dict[int, int]) -> None:
    """Count the comparisons (pairs of sides) of the games just committed per ladder; every :data:`CHECK_EVERY`,
    check the policy in a thread."""
    for ladder_id, pairs in compared.items():
        with _lock:
            count = _posted.get(ladder_id, 0) + pairs
            _posted[ladder_id] = 0 if count >= CHECK_EVERY else count
        if count >= CHECK_EVERY:
            check = threading.Thread(target=_check, args=(db, ladder_id), name="melo-auto-refit", daemon=True)
            _checks.add(check)
            check.start()


def wait_for_checks(timeout: float = 30.0) -> None:
    """Wait until the policy checks started so far have finished (the tests use it)."""
    for check in list(_checks):
        check.join(timeout)


def _check(db: Database, ladder_id: int) -> None:
    try:
        start_if_due(db, ladder_id)
    except Exception:  # never fail a game post for the policy's sake
        logger.exception("auto refit check of ladder %s failed", ladder_id)
    finally:
        _checks.discard(threading.current_thread())


def start_if_due(db: Database, ladder_id: int) -> int | None:
    """Start an auto refit if the policy says so; return its id."""
    job_id = record_if_due(db, ladder_id)
    if job_id is not None:
        refit_jobs.submit(db, ladder_id, job_id)
    return job_id


def record_if_due(db: Database, ladder_id: int) -> int | None:
    """Record a queued auto refit if the policy says so, for the caller to run; its id.

    The policy is read in a read transaction: the write transaction that
    records a job (and, on SQLite, holds the writer's lock) happens only when
    one is due, and checks again.
    """
    with db.reading() as session:
        if _due(session, ladder_id) is None:
            return None
    with db.writing() as session:
        due = _due(session, ladder_id)
        if due is None:
            return None
        ladder, games, due_at = due
        params = RefitIn(select_k=list(range(ladder.k + 1)), restarts=1, auto=True, tune_rate=ladder.auto_rate)
        # The job reads the log as it is now and keeps the start of it that reached ``due_at`` comparisons
        # (``log_comparisons`` until it runs: :func:`app.analysis.refit_run.due_part`), so what it fits, chooses
        # and applies depends on the log alone, not on how busy the server was when the policy looked.
        upto = storage.as_of.last_game(session, ladder_id)
        try:
            job = refit_jobs.start_refit(session, ladder, params, log_games=games, log_comparisons=due_at, upto=upto)
            job_id = job.id
        except TooManyRequests:  # the queue is full: the policy asks again as the log grows
            return None
    return job_id


def _due(session: Session, ladder_id: int) -> tuple[LadderRow, int, int] | None:
    """(the ladder, its games, the comparisons at which the refit was due) if an auto refit is due, else None."""
    ladder = storage.ladders.by_id(session, ladder_id)
    if ladder is None or not ladder.auto_refit:
        return None
    _, games = storage.ladders.sizes(session, ladder_id)
    compared = storage.ladders.comparisons(session, ladder_id)
    last, _, next_at = policy(session, ladder_id)
    running = last if last is not None and last.status in ("queued", "running") else None
    if running is not None and datetime.now(UTC) - running.updated_at <= refit_jobs.STALE:
        return None
    return (ladder, games, due_point(next_at, compared)) if compared >= next_at else None
