"""The reads of request handlers: a ladder, its player table, some players' vectors, and the expensive reports.

The hot reads are one statement through :meth:`app.core.db.Database.fetch` when
this process's caches are current; a player table whose ladder version has
moved catches up with one more (the rows changed since), and the thread pool
does the rare full read (a ladder seen for the first time, a merge).  CPU-bound
work runs in bounded threads (:func:`compute`).  Ladder-wide reports (audit, identifiability, the
canonical form) are computed once per ladder version, one at a time per
process in a thread of their own, or for a large ladder in a child process (:func:`report`).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from datetime import datetime
from functools import partial
from typing import NamedTuple, TypeVar

import anyio.to_thread
import numpy as np
import psycopg
from pydantic import BaseModel
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session
from starlette.requests import Request
from starlette.responses import Response

from app import storage
from app.core import jobs
from app.core.db import Database
from app.core.errors import InvalidInput, NotFound, Problem, Unauthorized, Unavailable
from app.core.jobs import Progress
from app.core.metrics import LAG_TOLERANT
from app.core.schemas import ReportPending
from app.core.security import hash_key
from app.domain.access import Caller, check, check_seats, ladder_for_read
from app.storage.ladders import LadderRow
from app.storage.read_model import Table

T = TypeVar("T")
log = logging.getLogger("melo")


class Vectors(NamedTuple):
    """Players' rows as the prediction paths read them (:func:`vectors`)."""

    version: int
    C: np.ndarray
    known: list[bool]
    #: The ladder's fitted draw share ν (:func:`app.rating.draw_share`; None: it has seen no draw).
    draw_share: float | None


#: Reports kept per process (the most recent).
MAX_REPORTS = 256


async def ladder(db: Database, slug: str, caller: Caller) -> LadderRow:
    """The ladder if the caller may read it (404, 401, 403 otherwise), with its version as of now.

    Its settings come from this process's cache once read; its version and
    whether it is private are read anew (one indexed statement), so a ladder
    made private is private at once in every worker.
    """
    return (await readable_until(db, slug, caller))[0]


async def readable_until(db: Database, slug: str, caller: Caller) -> tuple[LadderRow, datetime | None]:
    """:func:`ladder`, and when the caller's access lapses by itself: the expiry of the key a private ladder
    needs (None: not by itself)."""

    def load() -> LadderRow:
        with db.reading() as session:
            return ladder_for_read(session, slug, fresh=True)

    found = storage.ladders.from_cache(db.read_engine, slug)
    if found is None:
        found = await anyio.to_thread.run_sync(load)
    now = await storage.ladders.version_and_privacy(db.fetch, found.id)
    if now is None:  # deleted since this process read it, and perhaps created anew under the same slug
        storage.ladders.forget(db.read_engine, slug)
        found = await anyio.to_thread.run_sync(load)
        now = await storage.ladders.version_and_privacy(db.fetch, found.id)
    if now is None:
        raise NotFound(f"There is no ladder {slug!r}.")
    if now[2] > found.reset_version:  # a change this process's copy cannot follow (a merge, a new learning rate)
        found = await anyio.to_thread.run_sync(load)
    version, private, reset_version = now
    expires = None
    if private and not caller.server_admin:
        if not caller.bearer:
            raise Unauthorized("This ladder is private: reading it needs `Authorization: Bearer <key>`.")
        key = await storage.keys.find_now(db.fetch, found.id, hash_key(caller.bearer))
        key_id, expires = check(key, "read"), key[3] if key else None
        if storage.keys.due_for_use(db.read_engine, key_id):
            await anyio.to_thread.run_sync(_used, db.primary or db, found.id, key_id)
    return replace(found, version=version, private=private, reset_version=reset_version), expires


#: What a read may fail with on a replica (stopped, cut off, or its query cancelled by the replay): the primary
#: then answers.
REPLICA_ERRORS = (DBAPIError, psycopg.Error)
#: Which replica a read tries first: each in turn.
_turn = itertools.count()


async def lag_tolerant(
    request: Request,
    db: Database,
    slug: str,
    caller: Caller,
    min_version: int | None,
    work: Callable[[Database, LadderRow | None], Awaitable[Response]],
    ladder_needed: bool = True,
) -> Response:
    """``work(database, ladder)`` for a whole-ladder read that tolerates a short lag: for a public ladder, on a
    streaming replica (``MELO_READ_DATABASE_URL``, each in turn) that keeps up (:class:`app.core.db.Replica`) and has
    reached the ladder version the client names (``min_version``, or an ETag of ``If-None-Match``), waiting up to
    ``MELO_READ_WAIT`` for it; on the primary otherwise, and if the replica fails or answers a problem (a player
    made since it replayed, say).  So an answer is never older than the version its client names, and a private
    ladder, its keys and their revocation are read on the primary alone.  Without ``ladder_needed``, a read on the
    primary is given no ladder (``work`` checks the access itself): no statement is spent on it."""
    replicas = request.app.state.replicas
    if replicas and await _public(db, slug):
        wanted = max(min_version or 0, _named_version(request))
        wait = request.app.state.settings.read_wait
        first = next(_turn) % len(replicas)
        for replica in replicas[first:] + replicas[:first]:
            if not replica.usable():
                continue
            try:
                found = await _reached(replica.db, slug, caller, wanted, wait)
                if found is not None and not found.private:
                    answer = await work(replica.db, found)
                    LAG_TOLERANT.labels("replica").inc()
                    return answer
            except Unavailable:  # this worker is busy: the primary would wait as long
                raise
            except Problem:
                break
            except REPLICA_ERRORS as exc:
                log.warning("a read failed on a replica, the primary answers: %r", exc)
                replica.failed()
    answer = await work(db, await ladder(db, slug, caller) if ladder_needed else None)
    LAG_TOLERANT.labels("primary").inc()
    return answer


#: How long the primary's word that a ladder is public stands (seconds): a ladder made private leaves the
#: replicas within it.
PUBLIC_FOR = 1.0


async def _public(db: Database, slug: str) -> bool:
    """Whether the ladder is public, as the primary said within :data:`PUBLIC_FOR` seconds (asked again after
    that, for half a second at most: while it cannot answer, its last word stands).  False for a ladder this
    process has not read yet (the primary reads it first)."""
    found = storage.ladders.from_cache(db.read_engine, slug)
    if found is None:
        return False
    said = storage.cache.of(db.read_engine, "public")
    held, now = said.get(found.id), time.monotonic()
    if held is None or now - held[1] >= PUBLIC_FOR:
        if len(said) >= 10_000:
            said.clear()
        try:
            state = await storage.ladders.version_and_privacy(partial(db.fetch, within=PUBLIC_FOR / 2), found.id)
        except REPLICA_ERRORS:  # its last word stands, until it is asked again
            held = said[found.id] = (held is not None and held[0], now)
            return held[0]
        held = said[found.id] = (state is not None and not state[1], now)
    return held[0]


async def _reached(db: Database, slug: str, caller: Caller, wanted: int, wait: float) -> LadderRow | None:
    """The ladder as read on ``db`` once its version reaches ``wanted`` (None if it does not within ``wait``
    seconds; asked again after 5, 10, 20, … ms)."""
    deadline, pause = time.monotonic() + wait, 0.005
    found = await ladder(db, slug, caller)
    while found.version < wanted:
        if time.monotonic() + pause > deadline:
            return None
        await asyncio.sleep(pause)
        pause *= 2
        try:  # a replica whose connections are all taken is not waited for past the deadline either
            async with asyncio.timeout(max(0.0, deadline - time.monotonic())):
                found = await ladder(db, slug, caller)
        except TimeoutError:
            return None
    return found


def _named_version(request: Request) -> int:
    """The newest ladder version the ETags of ``If-None-Match`` name (0: none)."""
    named = 0
    for tag in request.headers.get("if-none-match", "").split(","):
        tag = tag.strip().removeprefix("W/").strip('"')
        if tag.isascii() and tag.isdigit() and len(tag) < 19:
            named = max(named, int(tag))
    return named


def _used(db: Database, ladder_id: int, key_id: int) -> None:
    with db.writing() as session:
        storage.keys.used(session, ladder_id, key_id)


#: At most this many changed players are read on the event loop to catch a table up (a millisecond's work);
#: more (a refit applied to a large ladder rewrites every row) are read in a thread.
CHANGED_HERE = 1000


async def table(db: Database, ladder: LadderRow) -> Table:
    """The ladder's player table as of ``ladder.version`` or later: this process's copy if it is current, else
    brought up to date from the rows this worker's own commits wrote (:func:`app.storage.read_model.note_commit`), then
    by reading only the players changed since (or, after a merge, read anew).

    One request per ladder updates it; the others that need it meanwhile wait
    for that instead of repeating it.
    """
    engine = db.read_engine
    held = storage.read_model.held_table(engine, ladder.id)
    if held is not None and held.version >= ladder.version:
        return held
    async with storage.cache.of(engine, "loading").setdefault(ladder.id, asyncio.Lock()):
        # The commits this worker made since, applied from its notes (a copy of each column: in a thread).
        held = await anyio.to_thread.run_sync(storage.read_model.apply_notes, engine, ladder.id)
        if held is not None and held.version >= ladder.version:
            return held
        if held is not None and held.version >= ladder.reset_version:
            rows = await db.fetch(storage.read_model.CHANGED + " LIMIT ?", (ladder.id, held.version, CHANGED_HERE + 1))
            if len(rows) <= CHANGED_HERE:

                def catch_up() -> Table:
                    stamp = storage.codec.time_converter(engine.dialect)
                    changed = storage.read_model.from_rows(rows, ladder.version, 2 * ladder.k, stamp)
                    with db.reading() as session:  # who the latest applied refit found its results do not place
                        placement = storage.refits.placement(session, ladder.id)
                    fresh = held.caught_up(changed, changed.version, placement)
                    return storage.read_model.hold_newest(engine, ladder.id, fresh)

                return await anyio.to_thread.run_sync(catch_up)

        def load() -> Table:  # anew, or caught up by more rows than a read on the event loop may hold it for
            with db.reading() as session:
                return storage.read_model.current_table(session, ladder)

        return await anyio.to_thread.run_sync(load)


#: At most this many new players' initial vectors are drawn on the event loop (8 µs each); more, in the compute
#: thread.
NEW_HERE = 64


async def vectors(db: Database, ladder: LadderRow, keys: list[str], request: Request | None = None) -> Vectors:
    """The ladder version they were read at, the rows of ``keys`` (in that order), whether each names a
    player, and the ladder's draw share; a key that names none yet gets the initial vector the ladder would give
    them (more than ``NEW_HERE`` of them in the compute thread, given the ``request``).  Keys are matched as the
    ladder matches them (case-folded, through its aliases); two spellings of one player are a 422."""
    players = _players(ladder, keys)
    now, found = await storage.players.vectors(db.fetch, ladder.id, players, 2 * ladder.k)
    known = [p in found for p in players]
    if not all(known):
        new = [p for p in players if p not in found]
        if request is not None and len(new) > NEW_HERE:
            drawn = await compute(request, ladder.initial_vectors, new)
        else:
            drawn = ladder.initial_vectors(new)
        found |= dict(zip(new, drawn, strict=True))
    return Vectors(now[0] if now else 0, np.array([found[p] for p in players]), known, now[3] if now else None)


async def public_vectors(db: Database, slug: str, keys: list[str]) -> Vectors | None:
    """What :func:`vectors` answers, in one statement, if this process knows the ladder, it is
    public, none of its settings changed since, and every key names a player (the prediction path); else None,
    and :func:`ladder` then :func:`vectors` answer, as they check it."""
    found = storage.ladders.from_cache(db.read_engine, slug)
    if found is None:
        return None
    try:
        players = _players(found, keys)
    except InvalidInput:  # said after the ladder's access is checked
        return None
    now, rows = await storage.players.vectors(db.fetch, found.id, players, 2 * found.k)
    if now is None or now[1] or now[2] > found.reset_version or not all(p in rows for p in players):
        return None
    return Vectors(now[0], np.array([rows[p] for p in players]), [True] * len(keys), now[3])


def _players(ladder: LadderRow, keys: list[str]) -> list[str]:
    """The players ``keys`` name, as the ladder matches keys (case-folded, through its aliases); a 422 if two
    spellings name one player."""
    if not ladder.case_insensitive_keys and not ladder.aliases:
        return keys
    players, first = [], {}
    for k in keys:
        p = ladder.player_key(k)
        if first.setdefault(p, k) != k:
            message = f"{first[p]!r} and {k!r} are one player, {p!r}"
            raise InvalidInput(message, errors=[{"field": "players", "message": message}])
        players.append(p)
    return players


async def seat_advantages(db: Database, ladder: LadderRow, wanted: dict[str, str]) -> dict[str, float]:
    """The learned advantage (logits) of each seat named in ``wanted`` (field -> seat); 422 naming the field of
    a seat the ladder does not have."""
    check_seats(ladder, wanted)
    if not wanted:
        return {}
    rows = await db.fetch("SELECT seat_state FROM ladders WHERE id = ?", (ladder.id,))
    state = rows[0][0] if rows else None
    state = json.loads(state) if isinstance(state, str | bytes) else state
    seats = storage.ladders.seats_from_json(state, ladder)
    return dict(zip(ladder.seats or [], seats.advantage.tolist(), strict=True))


async def compute(request: Request, work: Callable[..., T], *args: object) -> T:
    """CPU-bound work of a request (a search, a ranking), in the app's compute thread, never on the event loop.

    Its limiter bounds how many threads such work takes at once, so it never
    starves the other requests or liveness; a request that cannot start within
    the request deadline (``MELO_REQUEST_TIMEOUT``) gets a 503 instead of waiting on.
    """
    return await _limited(request, request.app.state.compute, work, *args)


async def past(request: Request, work: Callable[..., T], *args: object) -> T:
    """A read of a ladder as it stood at an earlier time (``as_of``): a pass over its log, in the reports'
    thread (one such read or report at a time per process, never on the event loop or in the threads other
    requests need); a 503 if it cannot start within the request deadline."""
    return await _limited(request, request.app.state.reports, work, *args)


async def _limited(request: Request, limiter: anyio.CapacityLimiter, work: Callable[..., T], *args: object) -> T:
    seconds = request.app.state.settings.request_timeout
    with anyio.move_on_after(seconds):
        return await anyio.to_thread.run_sync(lambda: work(*args), limiter=limiter)
    raise Unavailable(f"The server is busy with other heavy requests; none could start within {seconds:g} s.")


def not_modified(request: Request, version: int) -> tuple[str, Response | None]:
    """The ETag of an answer computed at ladder ``version``, and a 304 if ``If-None-Match`` names it."""
    etag = f'"{version}"'
    unchanged = request.headers.get("if-none-match") == etag
    return etag, Response(status_code=304, headers={"ETag": etag}) if unchanged else None


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
    computed on one (:func:`lag_tolerant`).
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
        rows = await db.fetch("SELECT games_count FROM ladders WHERE id = ?", (found.id,))
        if rows and rows[0][0] >= request.app.state.settings.report_job_games:
            # A child's minutes-long read stays on the primary: a replica may cancel it to replay the primary.
            return await _in_background(db.primary or db, request, found, name, compute)

    def work() -> tuple[int, bytes]:
        kept = reports.get((found.id, name))  # a request that waited for the limiter may find it done
        if kept is not None and kept[0] >= found.version:
            return kept
        return in_snapshot(db, lambda _: None, found.id, compute)

    held = await anyio.to_thread.run_sync(work, limiter=request.app.state.reports)
    _keep(reports, (found.id, name), held)
    return Response(held[1], media_type="application/json")


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
    resting = failed is not None and time.monotonic() - job.finished_at < RETRY_AFTER_FAILURE
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
