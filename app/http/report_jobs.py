"""Ladder-wide reports (audit, identifiability, the canonical form): computed once per ladder version and kept,
one at a time per process in a thread of their own, or for a large ladder in a child process."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

from pydantic import BaseModel
from sqlalchemy.orm import Session
from starlette.requests import Request
from starlette.responses import Response

from app import storage
from app.core import jobs
from app.core.db import Database
from app.core.errors import NotFound, Problem, Unavailable
from app.core.jobs import Progress
from app.core.ladder import LadderRow
from app.core.schemas import ReportPending
from app.domain.access import Caller
from app.http import offload
from app.http.replica_routing import lag_tolerant
from app.storage import ladder_reads

#: Reports kept per process (the most recent).
MAX_REPORTS = 256


async def report(
    db: Database,
    request: Request,
    slug: str,
    caller: Caller,
    name: str,
    compute: Callable[[Session, LadderRow, Progress], BaseModel],
    background: bool = False,
) -> Response:
    """An expensive report of a whole ladder (``compute`` in one snapshot), computed once per ladder version.

    Computations run one at a time per process, each in a thread of their own
    (the app's ``reports`` limiter), so however many are asked for at once they
    never take the threads other requests need, and liveness never waits for
    them.  The report is rendered to JSON in that thread too: a large one would
    hold the event loop for tens of milliseconds.  With ``background``, a ladder
    of at least ``MELO_REPORT_JOB_GAMES`` games has it computed in a child
    process instead (:func:`_in_background`), on the primary.  Where replicas serve reads, the others are
    computed on one (:func:`app.http.replica_routing.lag_tolerant`).
    """

    async def answer(db: Database, found: LadderRow | None) -> Response:
        assert found is not None  # a ladder is needed
        return await _report(db, request, found, name, compute, background)

    return await lag_tolerant(request, db, slug, caller, None, answer)


async def _report(
    db: Database,
    request: Request,
    found: LadderRow,
    name: str,
    compute: Callable[[Session, LadderRow, Progress], BaseModel],
    background: bool,
) -> Response:
    reports = storage.cache.of(db.read_engine, "reports")
    held = reports.get((found.id, name))
    if held is not None and held[0] == found.version:
        return Response(held[1], media_type="application/json")
    if background:
        games = await ladder_reads.games_count(db.fetch, found.id)
        if games is not None and games >= request.app.state.settings.report_job_games:
            # A child's minutes-long read stays on the primary: a replica may cancel it to replay the primary.
            return await _in_background(db.primary or db, request, found, name, compute)

    def work() -> tuple[int, bytes]:
        kept = reports.get((found.id, name))  # a request that waited for the limiter may find it done
        if kept is not None and kept[0] >= found.version:
            return kept
        return in_snapshot(db, lambda _: None, found.id, compute)

    computed = await offload.past(request, work)
    _keep(reports, (found.id, name), computed)
    return Response(computed[1], media_type="application/json")


def in_snapshot(db: Database, progress: Progress, ladder_id: int, compute) -> tuple[int, bytes]:
    """``compute(session, ladder, progress)`` in one snapshot: (the ladder version it saw, its JSON)."""
    with db.snapshot() as session:
        found = storage.ladders.by_id(session, ladder_id)
        if found is None:
            raise NotFound("The ladder was deleted.")
        return found.version, compute(session, found, progress).model_dump_json().encode()


def _keep(reports: dict, key: tuple, held: tuple[int, bytes]) -> None:
    if len(reports) >= MAX_REPORTS and key not in reports:
        reports.clear()
    if key not in reports or reports[key][0] <= held[0]:
        reports[key] = held


#: A large ladder's report: how long a request waits for it before answering 202, the longest its child
#: process may run, and how long after a failure a new one may start.
REPORT_WAIT = 5.0
REPORT_SECONDS = 1800.0
RETRY_AFTER_FAILURE = 60.0
_background = ThreadPoolExecutor(max_workers=1, thread_name_prefix="melo-report")


@dataclass
class _Job:
    """A report being computed in a child process, at ladder ``version``."""

    version: int
    future: Future
    progress: float = 0.0
    finished_at: float = 0.0

    def failure(self) -> BaseException | None:
        if not self.future.done() or self.future.cancelled():
            return None
        return self.future.exception()


async def _in_background(db: Database, request: Request, found: LadderRow, name: str, compute) -> Response:
    """A large ladder's report, computed in a child process (the server's memory and interpreter stay free).

    The latest report computed is answered at once (its ``ladder_version`` says
    which), and if it is older than the ladder a newer one is started.  With
    none yet, the request waits up to :data:`REPORT_WAIT` seconds for it, then
    answers 202 with the computation's progress and ``Retry-After``.  A report
    that failed is a 503 naming why (out of memory, out of time), or the
    refusal it met (a 409, say), and is not tried again for
    :data:`RETRY_AFTER_FAILURE` seconds.
    """
    key = (found.id, name)
    reports = storage.cache.of(db.read_engine, "reports")
    running = storage.cache.of(db.read_engine, "report_jobs")
    job: _Job | None = running.get(key)
    failed = None if job is None else job.failure()
    resting = job is not None and failed is not None and time.monotonic() - job.finished_at < RETRY_AFTER_FAILURE
    if job is None or (job.future.done() and not resting and (job.version < found.version or failed is not None)):
        job = running[key] = _start(db, found, key, compute, reports)
    held = reports.get(key)
    if held is None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(asyncio.wrap_future(job.future)), REPORT_WAIT)
        held = reports.get(key)
    if held is not None:
        return Response(held[1], media_type="application/json")
    failed = job.failure()
    if isinstance(failed, Problem):
        raise failed
    if failed is not None:
        after = f"it is tried again when asked for after {RETRY_AFTER_FAILURE:g} s"
        raise Unavailable(f"This report could not be computed: {failed}; {after}.")
    status = "running" if job.progress > 0 else "queued"
    body = ReportPending(status=status, progress=job.progress, ladder_version=job.version)
    location = request.url.path + (f"?{request.url.query}" if request.url.query else "")
    headers = {"Retry-After": "2", "Location": location}
    return Response(body.model_dump_json(), status_code=202, media_type="application/json", headers=headers)


def _start(db: Database, found: LadderRow, key: tuple, compute, reports: dict) -> _Job:
    job = _Job(found.version, Future())
    url = db.child_url()

    def heard(fraction: float) -> None:
        job.progress = max(job.progress, min(1.0, fraction))

    def run() -> tuple[int, bytes]:
        heard(0.01)
        return jobs.run_in_child(url, in_snapshot, (found.id, compute), heard, REPORT_SECONDS)

    def finished(future: Future) -> None:
        job.finished_at = time.monotonic()
        if not future.cancelled() and future.exception() is None:
            _keep(reports, key, future.result())

    job.future = _background.submit(run)
    job.future.add_done_callback(finished)
    return job
