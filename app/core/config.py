"""Settings read from the environment (MELO_* variables)."""

from __future__ import annotations

from functools import lru_cache
from typing import Literal

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict
from sqlalchemy import make_url


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="MELO_", env_file=".env", extra="ignore")

    #: SQLAlchemy URL. SQLite (embedded, the default) or PostgreSQL (``postgresql://…``).
    database_url: str = "sqlite:///./data/melo.db"
    #: The database password, apart from the URL: any characters (``p@ss/word#1``), encoded into the URL here.
    database_password: str | None = None
    #: Bearer key that may create ladders. Unset: creating ladders is refused.  A weak one (a placeholder, shorter
    #: than 20 characters) gets a warning at start, and stops the server from starting in production.
    admin_key: str | None = None
    #: ``production`` refuses to start with a weak admin key; ``development`` (the default) warns.
    env: Literal["development", "production"] = "development"
    #: Largest accepted request body in bytes (413 beyond).
    max_body_bytes: int = 1_000_000
    #: Most games in one batch request, and most player appearances in all its games together: the writer
    #: applies a batch in one transaction, and every other post waits for it.
    max_batch_games: int = 1000
    max_batch_players: int = 20_000
    #: Requests served at once per worker process (its thread pool).  More threads
    #: than this only queue for the interpreter lock and raise every request's latency.
    threads: int = 4
    #: Threads for heavy reads per worker process (opponent searches, rankings, moments, fair teams), taken by the
    #: ladders in turn; one ladder holds at most all but one of them, so another ladder's always finds one.
    compute_threads: int = Field(2, ge=2, le=64)
    #: PostgreSQL: writer threads per worker process, each on a pooled connection, committing the ladders' groups of
    #: posts (one ladder a transaction) side by side, so posts to different ladders never wait for each other's
    #: locks.  SQLite has one writer (the database takes one write transaction at a time).
    writers: int = Field(4, ge=1, le=64)
    #: Run migrations when the app starts (default for the embedded SQLite database).
    migrate_on_start: bool | None = None
    #: SQLite's durability. NORMAL (default, with WAL): a commit survives a crash of the process, but the last
    #: commits before a power loss or an operating-system crash may be lost. FULL: they survive that too, at the
    #: cost of a disk sync per commit (group commit shares it between the games applied together).
    sqlite_synchronous: Literal["NORMAL", "FULL"] = "NORMAL"
    #: PostgreSQL: the longest a statement may run (seconds) before it is cancelled and the request gets a 503,
    #: and the longest to wait for a connection from the pool or to the server.
    database_timeout: float = Field(30.0, gt=0)
    #: How long a game post's response is kept for retries with the same Idempotency-Key or external_id (hours).
    #: Later, the same key with the same body is a new request (an external_id stays taken: a 409).
    idempotency_ttl_hours: float = Field(168.0, gt=0)
    #: How long each ladder's changes are kept for event-stream listeners to resume from (hours); a listener
    #: away for longer is told to read everything anew.
    events_ttl_hours: float = Field(168.0, gt=0)
    #: How long a challenge stays open (days) before it expires, unless it is played, declined or withdrawn first.
    challenge_days: float = Field(7.0, gt=0, le=365)
    #: Seconds between two checks for ladders whose season closes by itself (``season_every``); 0: never check.
    season_check_seconds: float = Field(60.0, ge=0)
    #: Event streams (``GET …/events``) open at once per worker process; more get a 503 with Retry-After.
    max_streams: int = Field(1000, ge=0)
    #: Requests started per iteration of a worker's event loop; the others wait their turn in order of arrival,
    #: so that a burst of hundreds never holds the loop (and the liveness probe) for the work of all of them.
    requests_per_step: int = Field(16, ge=1)
    #: Requests waiting for their turn per worker; beyond, a 503 with Retry-After at once.
    max_waiting_requests: int = Field(4096, ge=0)
    #: A request that has not begun its answer after this many seconds gets a 503 (a frozen database, say).
    request_timeout: float = Field(30.0, gt=0)
    #: A leaderboard read that names no version (``min_version``, ``If-None-Match``) may be answered from the players
    #: as this worker last ranked them, up to this many seconds ago (its ``ladder_version`` says which), so that
    #: while games stream in a ladder's readers rank it a few times a second, not once per commit; 0: always the
    #: newest version.
    board_lag: float = Field(0.25, ge=0, le=60)
    connect_timeout: float = Field(5.0, gt=0)
    #: Ladders with at least this many games have their identifiability and intransitivity reports computed in
    #: a child process: the request waits a few seconds, then answers 202 with the progress; once one is
    #: computed it is answered at once, naming its ladder version, while a newer one is computed.
    report_job_games: int = Field(100_000, ge=0)

    #: Outgoing webhooks may be sent over plain http and to loopback, private, link-local or multicast addresses
    #: (tests, an office network).  Off by default: https only, and only to addresses of the public internet.
    webhooks_allow_private: bool = False
    #: The longest one delivery attempt may take (seconds), the attempts before a delivery is marked failed, and
    #: the wait before the first retry (seconds), doubled before each next one.
    webhooks_timeout: float = Field(5.0, gt=0, le=60)
    webhooks_attempts: int = Field(5, ge=1, le=20)
    webhooks_retry_seconds: float = Field(10.0, ge=0, le=3600)
    #: How often (hours) a webhook that takes the ``digest`` event is sent the ladder's digest (a week).
    webhooks_digest_hours: float = Field(168.0, gt=0, le=24 * 366)

    #: PostgreSQL streaming replicas (hot standbys) for the reads of public ladders that tolerate a short lag:
    #: leaderboards, profiles and reports.  One URL, or several separated by commas.  Writes, and every other
    #: read, go to ``database_url`` (docs/operations.md).
    read_database_url: str | None = None
    #: A replica that has not replayed what the primary had written this many seconds ago is not read; the
    #: primary answers instead.
    read_max_lag: float = Field(5.0, gt=0)
    #: How long (seconds) a read that names a ladder version it has seen (``min_version``, ``If-None-Match``)
    #: waits for a replica to reach it before the primary answers.
    read_wait: float = Field(0.25, ge=0)

    @property
    def sqlalchemy_url(self) -> str:
        """The URL with the psycopg 3 driver selected for PostgreSQL (and without ``pgbouncer=…``)."""
        return _driver_url(self.database_url, self.database_password)

    @property
    def transaction_pooler(self) -> bool:
        """PostgreSQL is reached through a pooler in transaction mode: ``?pgbouncer=true`` in the URL (the name
        other PostgreSQL clients use for it).  Each transaction may then run on another server connection, so
        the service keeps no state on a connection beyond its transaction (docs/operations.md)."""
        return pooled(self.database_url)

    @property
    def replica_urls(self) -> list[tuple[str, bool]]:
        """Each replica of ``read_database_url``: (its URL as :attr:`sqlalchemy_url` gives the primary's, whether
        it is reached through a pooler in transaction mode).  ``database_password`` serves those without one."""
        urls = [u.strip() for u in (self.read_database_url or "").split(",") if u.strip()]
        return [(_driver_url(u, None if make_url(u).password else self.database_password), pooled(u)) for u in urls]

    @property
    def is_sqlite(self) -> bool:
        return self.sqlalchemy_url.startswith("sqlite")

    @property
    def should_migrate_on_start(self) -> bool:
        return self.is_sqlite if self.migrate_on_start is None else self.migrate_on_start


def _driver_url(url: str, password: str | None) -> str:
    for prefix in ("postgres://", "postgresql://"):
        if url.startswith(prefix):
            url = "postgresql+psycopg://" + url[len(prefix) :]
    parsed = make_url(url)
    if "pgbouncer" in parsed.query:
        url = parsed.difference_update_query(["pgbouncer"]).render_as_string(hide_password=False)
    if password is not None:
        url = make_url(url).set(password=password).render_as_string(hide_password=False)
    return url


def pooled(url: str) -> bool:
    """``?pgbouncer=true`` (or 1, yes, on) in a PostgreSQL URL."""
    return str(make_url(url).query.get("pgbouncer", "false")).lower() in ("true", "1", "yes", "on")


@lru_cache
def get_settings() -> Settings:
    return Settings()
