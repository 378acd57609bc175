"""The refit jobs as the API shows them: one, a page of them, and each with its status as it stands."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy.orm import Session

from app import storage
from app.analysis.refit_jobs import STALE, STALE_QUEUED
from app.analysis.schemas import RefitOut
from app.core.errors import NotFound
from app.core.ladder import LadderRow
from app.core.schemas import Page, one_more
from app.storage.refits import Refit


def get_refit(session: Session, ladder: LadderRow, refit_id: int) -> Refit:
    job = storage.refits.get(session, ladder.id, refit_id)
    if job is None:
        raise NotFound(f"There is no refit {refit_id} in ladder {ladder.slug!r}.")
    return job


def list_refits(session: Session, ladder: LadderRow, limit: int, cursor: int | None) -> Page[RefitOut]:
    rows = one_more(limit)
    assert rows is not None  # one more than a number of rows
    jobs = storage.refits.recent(session, ladder.id, rows, before=cursor)
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
