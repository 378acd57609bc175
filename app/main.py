"""The ASGI application: ``app.main:app``."""

from __future__ import annotations

import asyncio
import gc
import logging
import signal
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from datetime import timedelta

import anyio.to_thread
import fastapi.routing
from fastapi import Depends, FastAPI
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from fastapi.routing import APIRoute

from app.analysis import auto, refit_jobs
from app.analysis.router import router as analysis_router
from app.backups.router import router as backups_router
from app.challenges.router import router as challenges_router
from app.core import errors, jobs
from app.core.config import Settings, get_settings
from app.core.db import Database
from app.core.metrics import exposition
from app.core.migrate import schema_problem, upgrade
from app.core.replicas import replicas_of
from app.core.security import weakness
from app.events.hub import Hub
from app.events.router import router as events_router
from app.games.committer import GroupCommitter
from app.games.fast_path import FastGames
from app.games.posts import Group
from app.games.router import router as games_router
from app.http import handlers, offload
from app.http.deps import known_query
from app.http.middleware import BodyLimit, RequestGuard
from app.ladders.router import router as ladders_router
from app.players.fast_path import FastBoards
from app.players.router import router as players_router
from app.predictions.fast_path import FastPredictions
from app.predictions.router import router as predictions_router
from app.predictions.router import teams_router
from app.seasons import auto as auto_seasons
from app.seasons.router import router as seasons_router
from app.web.router import docs_assets, static
from app.web.router import router as web_router
from app.webhooks.dispatcher import Dispatcher
from app.webhooks.router import router as webhooks_router

DESCRIPTION = """
Rates players with the **multi-dimensional Elo (mElo)** system: every player has a vector of 2k numbers and
P(i beats j) = σ(c_iᵀ Ω c_j), which can express rock-paper-scissors cycles.

* Writes need `Authorization: Bearer <key>`. The server admin key (`MELO_ADMIN_KEY`) creates ladders and may do
  everything. Each ladder has keys with roles: `write` keys post players and games and void games, `admin` keys
  also manage keys and settings; the key returned when a ladder is created is its first admin key. Reads are
  public unless the ladder is private.
* Game posts that arrive together are applied in one transaction (group commit), each answered on its own.
* `POST .../games` accepts an `Idempotency-Key` header (or the game's `external_id`): a retried game counts once.
* Every error is an RFC 9457 `application/problem+json` body whose `errors` list names the offending fields.
"""


#: The modules whose functions the job runner's children run: imported once, in its fork server.
JOB_MODULES = ["app.analysis.refit_jobs", "app.analysis.reports", "app.http.report_jobs"]


def _on_stop(loop: asyncio.AbstractEventLoop, close: Callable[[], None]) -> None:
    """Run ``close`` on the event loop as soon as the server is told to stop (SIGINT, SIGTERM), then the
    server's own handler.  The server waits for open responses before the app's shutdown, and an event stream
    stays open until it is closed."""
    if threading.current_thread() is not threading.main_thread():
        return
    for number in (signal.SIGINT, signal.SIGTERM):
        previous = signal.getsignal(number)
        if not callable(previous):
            continue

        def stop(signum, frame, previous=previous) -> None:
            loop.call_soon_threadsafe(close)
            previous(signum, frame)

        signal.signal(number, stop)


def _tune_garbage_collector() -> None:
    """Fewer, cheaper cyclic collections: each pauses every request in flight.

    What the app holds from start-up (modules, routes, schemas) never becomes
    garbage, so it is moved out of the collector's way, and the youngest
    generation is collected every 50,000 allocations instead of the default 700: with the
    defaults, full collections over the cached player tables dominate the tail
    latency of ``POST /games``.
    """
    gc.collect()
    gc.freeze()
    gc.set_threshold(50_000, 50, 100)


def _prime_endpoints(app: FastAPI) -> None:
    """Read each endpoint's source location now, at start-up.

    FastAPI (0.16x) looks up where each endpoint is defined, for its error
    messages, on the endpoint's first request: it reads and tokenizes the
    source file on the event loop, so a fresh worker's first burst of
    requests would stall every request in flight.
    """
    extract = getattr(fastapi.routing, "_extract_endpoint_context", None)
    if extract is not None:
        for route in app.routes:
            if isinstance(route, fastapi.routing.APIRoute):
                extract(route.dependant.call)


def _check_admin_key(settings: Settings) -> None:
    """A weak server admin key is refused in production and warned about otherwise."""
    why = None if settings.admin_key is None else weakness(settings.admin_key)
    if why is None:
        return
    make = "python -c 'import secrets; print(secrets.token_urlsafe(32))'"
    message = f"MELO_ADMIN_KEY is weak ({why}): set a long random one, made with `{make}`"
    if settings.env == "production":
        raise RuntimeError(message + " (MELO_ENV=production refuses to start with it).")
    logging.getLogger("melo").warning("%s.", message)


def _schema_problem(db: Database, at_start: bool) -> str | None:
    """Why the database's schema is not this server's (naming `melo migrate`), or None.  At start a database
    that cannot be reached is let be (readiness reports it); later it raises."""
    try:
        with db.read_engine.connect() as connection:
            return schema_problem(connection)
    except Exception:
        if not at_start:
            raise
        logging.getLogger("melo").exception("the database schema could not be checked at start")
        return None


#: Operation ids that are not the camelCase of the route's function name (which names most of them: post_game is
#: postGame): every id says what the call does, as a verb and what it acts on, for generated clients.
OPERATION_IDS = {
    "healthz": "getHealth",
    "readyz": "getReadiness",
    "metrics": "getMetrics",
    "leaderboard": "getLeaderboard",
    "history": "getPlayerHistory",
    "opponents": "suggestOpponents",
    "fair_teams": "makeFairTeams",
    "post_batch": "postGames",
    "void_game_by_post": "voidGameByPost",
    "audit": "getAudit",
    "identifiability": "getIdentifiability",
    "intransitivity": "getIntransitivity",
    "canonical": "getCanonical",
    "events": "streamLadderEvents",
}


def operation_id(route: APIRoute) -> str:
    """The route's operationId in the OpenAPI document (:data:`OPERATION_IDS`, else its name in camelCase)."""
    first, *rest = OPERATION_IDS.get(route.name, route.name).split("_")
    return first + "".join(word.capitalize() for word in rest)


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or get_settings()
    # The API docs are served from assets installed with the app (web.router), not from a CDN: they work offline.
    app = FastAPI(
        title="melo",
        version="0.1.0",
        description=DESCRIPTION,
        lifespan=_lifespan(settings),
        docs_url=None,
        redoc_url=None,
        # What any operation may answer: a malformed or oversized request, a wrong method, a database that is down.
        responses=errors.problems(400, 405, 408, 413, 422, 503),
        dependencies=[Depends(known_query)],  # an unknown query parameter is a 422, not silently ignored
        generate_unique_id_function=operation_id,
        # A path with a stray "/" is a 404, not a redirect built from the request's Host header.
        redirect_slashes=False,
        # FastAPI's own OpenTelemetry spans and metrics are off: the service's metrics are Prometheus's (/metrics),
        # and asking for a tracer provider on every request cost a game post some 2% of its worker.
        telemetry={"tracing": False, "metrics": False, "logs": False},
    )
    app.state.settings = settings
    app.state.replicas = []
    app.state.schema_checked = False
    handlers.install(app)
    # Hot routes first: routes are matched in order.
    for router in (
        predictions_router,
        teams_router,
        games_router,
        players_router,
        ladders_router,
        events_router,
        backups_router,
        seasons_router,
        challenges_router,
        analysis_router,
        webhooks_router,
        web_router,
    ):
        app.include_router(router)
    _health_routes(app)
    app.mount("/static", static, name="static")
    app.mount("/docs-assets", docs_assets, name="docs-assets")
    _middleware(app, settings)
    return app


def _lifespan(settings: Settings) -> Callable[[FastAPI], AbstractAsyncContextManager[None]]:
    """The server's start and stop: the database and its replicas, the event hub, the webhooks, the group
    committer, the worker threads' lanes, the jobs of a server that stopped on this host, the seasons' clock."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        _check_admin_key(settings)
        if settings.should_migrate_on_start:
            upgrade(settings.sqlalchemy_url)
        db = app.state.db = Database.from_settings(settings)
        app.state.replicas = replicas_of(settings, db)
        for replica in app.state.replicas:
            replica.start()
        if (problem := await anyio.to_thread.run_sync(_schema_problem, db, True)) is not None:
            db.dispose()
            raise RuntimeError(problem)
        hub = app.state.hub = Hub(db, settings.max_streams)
        webhooks = app.state.webhooks = Dispatcher(db, settings)

        def committed(group: Group) -> None:  # in the writer's thread
            hub.posted(group.shown)
            auto.games_posted(db, group.compared)
            webhooks.poke()

        app.state.committer = GroupCommitter(
            db,
            on_commit=committed,
            keep_responses=timedelta(hours=settings.idempotency_ttl_hours),
            keep_events=timedelta(hours=settings.events_ttl_hours),
            writers=settings.writers,
        )
        _on_stop(asyncio.get_running_loop(), hub.close)
        anyio.to_thread.current_default_thread_limiter().total_tokens = settings.threads
        app.state.ping = anyio.CapacityLimiter(1)
        # Reads of an earlier time and ladder-wide reports: two threads, one ladder's in one at a time; interactive
        # CPU work (fair-team searches, leaderboard orders, opponents, moments) in a few threads; the ladders take
        # turns at both (offload.Lanes).
        app.state.reports = offload.Lanes(2)
        app.state.compute = offload.Lanes(settings.compute_threads)
        _tune_garbage_collector()
        _prime_endpoints(app)
        jobs.preload(JOB_MODULES)
        webhooks.start()
        try:  # the jobs of a server that stopped on this host
            await anyio.to_thread.run_sync(refit_jobs.recover, db)
        except Exception:  # a database that is down now: the jobs wait for the next start
            logging.getLogger("melo").exception("taking over the refits of stopped servers failed")
        stop_seasons = auto_seasons.start(db, settings.season_check_seconds) if settings.season_check_seconds else None
        yield
        if stop_seasons is not None:
            await anyio.to_thread.run_sync(stop_seasons)
        hub.close()
        await anyio.to_thread.run_sync(webhooks.stop)  # attempts under way end within their timeout
        app.state.committer.close()
        jobs.stop()
        for replica in app.state.replicas:
            await replica.close()
        await db.close()

    return lifespan


def _health_routes(app: FastAPI) -> None:
    """Liveness, readiness and the metrics."""

    @app.get("/healthz", tags=["health"])
    async def healthz() -> dict[str, str]:
        """Liveness: the process answers. It touches nothing and never waits for the database or a thread."""
        return {"status": "ok"}

    @app.get("/readyz", tags=["health"], responses=errors.problems(503))
    async def readyz() -> JSONResponse:
        """Readiness: the database answers a query, and its schema is the one this server needs (503 problem+json
        saying which is not: a database that is down, or one to migrate with `melo migrate`)."""
        reason = "The database cannot be reached: it did not answer within 2 s."
        try:
            # Its own thread, abandoned after 2 s: a frozen database must not hold a request thread or this probe.
            with anyio.move_on_after(2):
                await anyio.to_thread.run_sync(app.state.db.ping, abandon_on_cancel=True, limiter=app.state.ping)
                if not app.state.schema_checked:
                    problem = await anyio.to_thread.run_sync(_schema_problem, app.state.db, False)
                    app.state.schema_checked = problem is None
                    reason = problem or reason
                if app.state.schema_checked:
                    return JSONResponse({"status": "ready"})
        except Exception as exc:
            reason = f"The database cannot be reached: {type(exc).__name__}."
        return handlers.problem_response(errors.Unavailable(reason), {"Retry-After": "1"})

    @app.get("/metrics", tags=["health"], response_class=PlainTextResponse)
    def metrics() -> Response:
        """Prometheus metrics: requests and latency per route and status, games applied, group-commit sizes,
        refits by outcome (every worker's, summed)."""
        body, media_type = exposition()
        return Response(body, media_type=media_type)


def _middleware(app: FastAPI, settings: Settings) -> None:
    """The layers every request crosses, the last added outermost: the request guard (time and queue), the
    body's limit, then the fast paths of the hot requests before routing."""
    app.add_middleware(FastPredictions)  # innermost: GET …/predict's plain case, before routing
    app.add_middleware(FastBoards)  # GET …/leaderboard's plain case, before routing
    app.add_middleware(FastGames)  # POST …/games's plain case, before routing
    app.add_middleware(BodyLimit, limit=settings.max_body_bytes)
    app.add_middleware(
        RequestGuard,
        seconds=settings.request_timeout,
        per_step=settings.requests_per_step,
        queued=settings.max_waiting_requests,
    )


app = create_app()
