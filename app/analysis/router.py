from __future__ import annotations

from functools import partial
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query, Request, Response

from app.analysis import refit_apply, refit_jobs, refit_views, reports
from app.analysis.schemas import (
    INTRANSITIVITY_SCALE,
    CanonicalOut,
    CheckpointOut,
    IdentifiabilityOut,
    IntransitivityOut,
    RefitIn,
    RefitOut,
)
from app.core import deadline
from app.core.cursors import decode_cursor, is_id
from app.core.errors import LADDER_ACCESS, problems
from app.core.schemas import Page, ReportPending
from app.domain.access import ladder_for, readable
from app.domain.rerating import SWITCH_SHARE, switch
from app.http import report_jobs
from app.http.deps import CallerDep, DatabaseDep, IdCursor, IdPath

router = APIRouter(prefix="/v1/ladders/{slug}", tags=["analysis"], responses=LADDER_ACCESS)


@router.post("/refits", status_code=202, response_model=RefitOut, responses=problems(401, 403, 404, 409, 422, 429))
def start_refit(slug: str, params: RefitIn, db: DatabaseDep, caller: CallerDep, response: Response) -> RefitOut:
    """Start a maximum-likelihood refit of the whole log in the background (mathematics §9); poll its `Location`.
    At most 2 refits per ladder and 8 per server are queued or running at once: 429 with `Retry-After` beyond."""
    with db.writing() as session:
        job = refit_jobs.start_refit(session, ladder_for(session, slug, caller, "write"), params)
        out = refit_views.refit_out(session, job)
    refit_jobs.submit(db, job.ladder_id, job.id)
    response.headers["Location"] = f"/v1/ladders/{slug}/refits/{job.id}"
    return out


@router.get("/refits", response_model=Page[RefitOut], responses=problems(404, 422))
def list_refits(
    slug: str,
    db: DatabaseDep,
    caller: CallerDep,
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
    cursor: IdCursor = None,
) -> Page[RefitOut]:
    """The ladder's refits, newest first: those posted, and those its auto-refit policy started (`params.auto`)."""
    with db.reading() as session:
        return refit_views.list_refits(session, readable(session, slug, caller), limit, cursor)


@router.get("/refits/{refit_id}", response_model=RefitOut, responses=problems(404))
def get_refit(slug: str, refit_id: IdPath, db: DatabaseDep, caller: CallerDep) -> RefitOut:
    """A refit's status, progress (0-1) and, when done, its report."""
    with db.reading() as session:
        return refit_views.refit_out(session, refit_views.get_refit(session, readable(session, slug, caller), refit_id))


@router.post("/refits/{refit_id}/apply", response_model=CheckpointOut, responses=problems(401, 403, 404, 409, 503))
def apply_refit(slug: str, refit_id: IdPath, db: DatabaseDep, caller: CallerDep, request: Request) -> CheckpointOut:
    """Replace the ratings by the refit's (a checkpoint); games posted since are replayed on top (mathematics §9)."""
    with db.reading() as session:
        ladder = ladder_for(session, slug, caller, "write")
        job = refit_views.get_refit(session, ladder, refit_id)
    until = deadline.leaving(request.scope, SWITCH_SHARE)  # the write-ahead's rests end before the switch's time
    prepared = refit_apply.prepare_apply(db, ladder, job, until)  # the replay, before the writer's locks are taken

    def work(session):
        ladder = ladder_for(session, slug, caller, "write")
        return refit_apply.apply_refit(session, ladder, refit_views.get_refit(session, ladder, refit_id), prepared)

    return switch(db, prepared, work)


#: A large ladder's report still being computed.
PENDING: dict[int | str, dict[str, Any]] = {
    202: {
        "model": ReportPending,
        "description": "Still being computed (a ladder of at least `MELO_REPORT_JOB_GAMES` games, the first time): "
        "poll the `Location` after `Retry-After` seconds.",
    }
}


@router.get("/identifiability", response_model=IdentifiabilityOut, responses=problems(404, 409, 429, 503) | PENDING)
async def identifiability(
    slug: str, db: DatabaseDep, caller: CallerDep, request: Request, ratings: Literal["current", "refit"] = "current"
) -> Response:
    """Can the results pin down the advantage matrix? Theorem 2, Algorithm 1 and the SCCs (mathematics §10).
    Computed once per ladder version; on a large ladder in the background (202 with progress until the first is
    ready, then the latest one computed, naming its `ladder_version`)."""
    compute = partial(reports.identifiability, ratings=ratings)
    return await report_jobs.report(db, request, slug, caller, f"identifiability:{ratings}", compute, background=True)


@router.get(
    "/intransitivity",
    response_model=IntransitivityOut,
    responses=problems(404, 429, 503) | PENDING,
    description=f"How cyclic the ladder is, as (1 + ‖cyclic‖) / (1 + ‖transitive‖): {INTRANSITIVITY_SCALE} "
    "(mathematics §12). Computed once per ladder version; on a large ladder in the background, like "
    "`…/identifiability`.",
)
async def intransitivity(slug: str, db: DatabaseDep, caller: CallerDep, request: Request) -> Response:
    return await report_jobs.report(
        db, request, slug, caller, "intransitivity", reports.intransitivity, background=True
    )


@router.get("/canonical", response_model=CanonicalOut, responses=problems(404, 422))
async def canonical(
    slug: str,
    db: DatabaseDep,
    caller: CallerDep,
    request: Request,
    limit: Annotated[int, Query(ge=1, le=1000, description="Players per page.")] = 500,
    cursor: str | None = None,
) -> Response:
    """Canonical disc coordinates of the players, a page at a time in the order they joined, and a summary of each
    disc (mathematics §12, [Limitations]). The form is computed once per ladder version; `next_cursor` leads to
    the next page (a page read at a later version may differ from a page read at an earlier one)."""
    after = 0 if cursor is None else decode_cursor(cursor, _valid_after)["after"]

    def compute(session, ladder, _):
        return reports.canonical(session, ladder, limit, after)

    return await report_jobs.report(db, request, slug, caller, f"canonical:{limit}:{after}", compute)


def _valid_after(value: object) -> bool:
    return isinstance(value, dict) and is_id(value.get("after"))
