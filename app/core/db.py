"""Engines and sessions.

SQLite: WAL (readers never wait for the writer), a busy timeout, and
``BEGIN IMMEDIATE`` for write transactions so that two games are never
applied from the same stale vectors (SQLite ignores ``SELECT … FOR UPDATE``).
Reads use a second engine with ordinary deferred transactions.

PostgreSQL: one engine; writers lock the participants' rows in id order.  Through a pooler in transaction mode
(``?pgbouncer=true``) nothing outlives a transaction: no prepared statements, time limits set per transaction.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import psycopg
from sqlalchemy import Engine, create_engine, event, text
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import DBAPIError, OperationalError
from sqlalchemy.orm import Session, sessionmaker

from app.core.config import Settings

log = logging.getLogger("melo")

T = TypeVar("T")
#: PostgreSQL's deadlock_detected and serialization_failure: the transaction may simply be run again.
RETRYABLE = {"40P01", "40001"}
#: SQLite page cache per connection (KiB), allocated only as used: large writes
#: (bulk imports) that outgrow it spill to the WAL mid-transaction and slow down.
SQLITE_CACHE_KIB = 256 * 1024
#: The same for each reading connection: their reads are point reads, the rows changed since a version, or a
#: whole ladder read once (which the operating system's file cache serves as well), and a large cache in each
#: of several connections only holds a worker's memory.
SQLITE_READ_CACHE_KIB = 16 * 1024


def ensure_sqlite_dir(url: str) -> None:
    """Create the directory of a SQLite database file (the default lives under ./data/)."""
    if url.startswith("sqlite"):
        database = make_url(url).database
        if database and database != ":memory:":
            Path(database).parent.mkdir(parents=True, exist_ok=True)


def _sqlite_engine(url: str, immediate: bool, synchronous: str = "NORMAL", cache_kib: int = SQLITE_CACHE_KIB) -> Engine:
    ensure_sqlite_dir(url)
    engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30})

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection, _record) -> None:
        # Let SQLAlchemy, not pysqlite, decide when transactions begin.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA busy_timeout=30000")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute(f"PRAGMA synchronous={synchronous}")
        cursor.execute(f"PRAGMA cache_size=-{cache_kib}")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn) -> None:
        conn.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")

    return engine


class FairLock:
    """A lock handed to its waiters in the order they asked: SQLite's writers in one process (the group
    commit's and any other write, a refit's apply, a void) take turns.  A plain lock is taken again by the thread
    that just released it: the group commit, always with a group waiting, kept a refit's apply out for over 30 s."""

    def __init__(self) -> None:
        self._mutex = threading.Lock()
        self._waiters: deque[threading.Lock] = deque()
        self._held = False

    def __enter__(self) -> None:
        with self._mutex:
            if not self._held:
                self._held = True
                return
            turn = threading.Lock()
            turn.acquire()
            self._waiters.append(turn)
        try:
            turn.acquire()  # released by the holder before us: the lock is ours
        except BaseException:  # interrupted while waiting: leave the queue, or pass on a turn handed over meanwhile
            with self._mutex:
                if turn in self._waiters:
                    self._waiters.remove(turn)
                else:
                    self._hand_over()
            raise

    def __exit__(self, *exc: object) -> None:
        with self._mutex:
            self._hand_over()

    def _hand_over(self) -> None:
        if self._waiters:
            self._waiters.popleft().release()  # held still: handed over
        else:
            self._held = False


@dataclass
class Database:
    """The read and write session factories of one database."""

    read_engine: Engine
    write_engine: Engine
    dialect: str
    #: SQLite admits one writer; this process's writers queue here instead of in
    #: SQLite's busy handler, whose sleeps grow to 100 ms and made p99 latency seconds.
    _write_lock: FairLock | None = None
    #: PostgreSQL: the asynchronous connections of :meth:`fetch`.
    async_reads: AsyncReads | None = None
    #: SQLite: the driver connection :meth:`fetch` keeps for the event loop (no pool checkout per read).
    _loop_connection: Any = None
    #: PostgreSQL through a pooler in transaction mode (``?pgbouncer=true``): no state beyond a transaction.
    transaction_pooler: bool = False
    #: A replica's primary: where what its readers write goes (a key's last use).
    primary: Database | None = None
    _read_sessions: sessionmaker = field(init=False)
    _write_sessions: sessionmaker = field(init=False)

    def __post_init__(self) -> None:
        self._read_sessions = sessionmaker(self.read_engine, expire_on_commit=False)
        self._write_sessions = sessionmaker(self.write_engine, expire_on_commit=False)

    @classmethod
    def from_settings(cls, settings: Settings) -> Database:
        url = settings.sqlalchemy_url
        if settings.is_sqlite:
            sync = settings.sqlite_synchronous
            read = _sqlite_engine(url, False, sync, SQLITE_READ_CACHE_KIB)
            write = _sqlite_engine(url, True, sync)
            return cls(read, write, "sqlite", FairLock())
        return cls._postgresql(url, settings.transaction_pooler, settings)

    @classmethod
    def replicas(cls, settings: Settings, primary: Database) -> list[Replica]:
        """The streaming replicas of ``MELO_READ_DATABASE_URL`` (PostgreSQL only) of the ``primary``."""
        if settings.replica_urls and settings.is_sqlite:
            raise RuntimeError("MELO_READ_DATABASE_URL names PostgreSQL replicas: the primary must be PostgreSQL too.")
        found = []
        for url, pooled in settings.replica_urls:
            replica = cls._postgresql(url, pooled, settings, bounded=True)
            replica.primary = primary
            found.append(Replica(replica, settings.read_max_lag))
        return found

    @classmethod
    def _postgresql(cls, url: str, pooled: bool, settings: Settings, bounded: bool = False) -> Database:
        timeout_ms = int(settings.database_timeout * 1000)
        connect_args: dict[str, Any] = {"connect_timeout": max(1, round(settings.connect_timeout))}
        if pooled:  # no prepared statements: the next transaction may run on another server connection
            connect_args["prepare_threshold"] = None
        else:
            connect_args["options"] = f"-c statement_timeout={timeout_ms} -c lock_timeout={timeout_ms}"
        engine = create_engine(
            url,
            pool_size=10,
            max_overflow=20,
            pool_pre_ping=True,
            pool_timeout=settings.connect_timeout,
            connect_args=connect_args,
        )
        if pooled:
            # A pooler passes no startup options on: the time limits are set in each transaction instead.
            limits = (
                f"SELECT set_config('statement_timeout', '{timeout_ms}', true), "
                f"set_config('lock_timeout', '{timeout_ms}', true)"
            )

            @event.listens_for(engine, "begin")
            def _limits(connection) -> None:
                connection.exec_driver_sql(limits)

        reads = AsyncReads(engine.url, pooled=pooled, bounded=bounded)
        return cls(engine, engine, "postgresql", async_reads=reads, transaction_pooler=pooled)

    def child_url(self) -> str:
        """The URL a child process opens this database with (``MELO_DATABASE_URL`` as it takes it)."""
        url = self.write_engine.url
        if self.transaction_pooler:
            url = url.update_query_dict({"pgbouncer": "true"})
        return url.render_as_string(hide_password=False)

    @contextmanager
    def reading(self) -> Iterator[Session]:
        with self._read_sessions() as session:
            yield session

    @contextmanager
    def snapshot(self) -> Iterator[Session]:
        """A read transaction whose statements all see one snapshot (REPEATABLE READ on PostgreSQL;
        SQLite's read transactions are snapshots already): for reads of several statements."""
        with self._read_sessions() as session:
            if self.dialect == "postgresql":
                session.connection(execution_options={"isolation_level": "REPEATABLE READ"})
            yield session

    @contextmanager
    def writing(self) -> Iterator[Session]:
        """A write transaction, committed on success, rolled back on error."""
        with (
            self._write_lock or nullcontext(),
            self._write_sessions() as session,
            session.begin(),
        ):
            session.info["writing"] = True  # it may record what it checked (a key's last use)
            yield session

    def write(self, work: Callable[[Session], T], attempts: int = 5) -> T:
        """``work(session)`` in a write transaction, retried when PostgreSQL aborts it as a deadlock victim.

        Locks are taken in one order, but a game that creates a player holds the
        new row before it locks the existing ones, so two such games can still
        deadlock; PostgreSQL then aborts one, which is rolled back and run again.
        """
        for attempt in range(attempts):
            try:
                with self.writing() as session:
                    return work(session)
            except OperationalError as exc:
                code = getattr(exc.orig, "sqlstate", None)
                if code not in RETRYABLE or attempt == attempts - 1:
                    raise
                time.sleep(0.005 * 2**attempt)
        raise AssertionError("unreachable")

    async def fetch(self, sql: str, parameters: tuple, within: float | None = None) -> list[tuple]:
        """The rows of one read statement (``?`` placeholders) for a request handler, without a thread; on
        PostgreSQL, given up after ``within`` seconds if given.

        On SQLite it runs right here on the event loop, through one driver
        connection kept for it (autocommit mode): a point read is microseconds
        of local work, readers never wait for the writer (WAL), and a hop to
        the thread pool (or a pool checkout) would cost more than the read.  On PostgreSQL it goes through a
        few asynchronous psycopg connections (:class:`AsyncReads`), so a slow
        or stopped server holds up only the requests that need it, never the
        event loop or the thread pool.
        """
        if self.async_reads is not None:
            return await self.async_reads.fetch(sql.replace("?", "%s"), parameters, within)
        connection = self._loop_connection
        if connection is None:
            connection = self._loop_connection = self.read_engine.raw_connection()
        try:
            cursor = connection.cursor()
            cursor.execute(sql, parameters)
            return cursor.fetchall()
        except Exception:  # the next read takes a connection afresh
            self._loop_connection = None
            connection.close()
            raise

    def ping(self) -> None:
        """One round trip to the database (readiness); raises if it cannot be reached."""
        with self.read_engine.connect() as connection:
            connection.execute(text("SELECT 1"))

    def dispose(self) -> None:
        if self._loop_connection is not None:
            self._loop_connection, connection = None, self._loop_connection
            connection.close()
        self.read_engine.dispose()
        self.write_engine.dispose()

    async def close(self) -> None:
        """Close the asynchronous connections too (the app's shutdown)."""
        if self.async_reads is not None:
            await self.async_reads.close()
        self.dispose()


class Replica:
    """A streaming replica (a hot standby) of the primary, read while it keeps up.

    A task of its own asks, once a second, how far the primary has written its
    log (``pg_current_wal_lsn()``) and how far the replica has replayed it.  The
    replica is read while it has replayed what the primary had written
    ``max_lag`` seconds before: so a replica that is stalled, or cut off from
    the primary, stops being read within ``max_lag`` seconds, whatever it says of
    itself.  Requests only read the answer (:meth:`usable`).  A check that gets
    no answer within a second, or a read that fails on the replica, sends its
    readers to the primary until a check succeeds again.  While the primary
    cannot be asked, its last answer stands.
    """

    #: Seconds between two checks, and the longest a check may take.
    CHECK_EVERY = 1.0
    WRITTEN = "SELECT pg_current_wal_lsn()::text"
    REPLAYED = "SELECT coalesce(pg_last_wal_replay_lsn(), pg_current_wal_lsn())::text"

    def __init__(self, db: Database, max_lag: float) -> None:
        self.db, self.max_lag = db, max_lag
        self.ok = False
        #: (when, where the primary's log was), the oldest first: back to ``max_lag`` seconds ago.
        self._written: deque[tuple[float, int]] = deque()
        self._watching: asyncio.Task | None = None

    def start(self) -> None:
        """Start the checks (in the running event loop); it is not read until one succeeds."""
        self._watching = asyncio.get_running_loop().create_task(self._watch())

    def usable(self) -> bool:
        """Whether reads may go to it now."""
        return self.ok

    def failed(self) -> None:
        """A read failed on it: its readers go to the primary until the next check succeeds."""
        self.ok = False

    async def _watch(self) -> None:
        while True:
            try:
                ok = await self._keeps_up()
            except Exception:  # whatever it was, the replica is not read until a check succeeds
                log.exception("checking a replica failed")
                ok = False
            if ok != self.ok:
                log.warning("replica %s", "read again: it keeps up" if ok else "not read: it does not keep up")
            self.ok = ok
            await asyncio.sleep(self.CHECK_EVERY)

    async def _keeps_up(self) -> bool:
        now = time.monotonic()
        primary = self.db.primary or self.db
        try:
            self._written.append((now, _lsn((await primary.fetch(self.WRITTEN, (), self.CHECK_EVERY))[0][0])))
        except (DBAPIError, psycopg.Error) as exc:
            if self._written and self._written[-1][0] >= now - 2 * self.CHECK_EVERY:  # said once, not every second
                log.warning("the primary's log position is unknown: %r", exc)
        while len(self._written) > 1 and self._written[1][0] <= now - self.max_lag:
            self._written.popleft()
        try:
            replayed = _lsn((await self.db.fetch(self.REPLAYED, (), self.CHECK_EVERY))[0][0])
        except (DBAPIError, psycopg.Error) as exc:
            if self.ok:  # said once, when it stops being read
                log.warning("replica unavailable: %r", exc)
            return False
        # The newest position taken at least max_lag ago (the oldest kept, while none is that old yet).
        return not self._written or replayed >= self._written[0][1]

    async def close(self) -> None:
        if self._watching is not None:
            self._watching.cancel()
        await self.db.close()


async def _rows(connection: psycopg.AsyncConnection, sql: str, parameters: tuple) -> list[tuple]:
    cursor = await connection.execute(sql, parameters)
    return await cursor.fetchall()


async def _abandon(query: asyncio.Future) -> None:
    """Stop a statement at once.  Interrupted, psycopg asks the server to cancel it and waits up to 10 s for that
    (a server that stopped answering never does); interrupted again, it closes the connection there and then."""
    for _ in range(3):
        if query.done():
            break
        query.cancel()
        await asyncio.sleep(0.01)
    with contextlib.suppress(BaseException):
        await query


def _lsn(text: str) -> int:
    """A PostgreSQL log position (``16/B374D848``) as a number."""
    high, low = text.split("/")
    return (int(high, 16) << 32) + int(low, 16)


class AsyncReads:
    """A few autocommit psycopg connections for the point reads of request handlers on PostgreSQL.

    Opened as needed, up to ``size``; a connection that fails is dropped (the
    next read opens another).  Each statement has a time limit.
    """

    def __init__(
        self, url: URL, size: int = 4, timeout: float = 5.0, pooled: bool = False, bounded: bool = False
    ) -> None:
        self.conninfo = url.set(drivername="postgresql").render_as_string(hide_password=False)
        self.size, self.timeout, self.pooled = size, timeout, pooled
        #: Each statement bounded here too (a replica's: a server that stops answering sends its readers on).
        self.bounded = bounded or pooled
        self.idle: list[psycopg.AsyncConnection] = []
        self.opened = 0
        self.available: asyncio.Condition | None = None

    async def fetch(self, sql: str, parameters: tuple, within: float | None = None) -> list[tuple]:
        """The rows of one statement; ``within`` seconds at most, if given (a check that must not wait long)."""
        seconds = within if within is not None else self.timeout if self.bounded else None
        if seconds is None:  # the server's statement_timeout bounds it
            connection = await self._take()
            try:
                rows = await _rows(connection, sql, parameters)
            except BaseException:
                await self._drop(connection)
                raise
            await self._give_back(connection)
            return rows
        # Through a pooler no startup option sets a statement timeout, and a replica may stop answering: the time
        # limit is kept here instead, for the wait for a connection too (and the connection dropped), with the
        # pooler's query_timeout for the server's side.
        deadline = asyncio.get_running_loop().time() + seconds
        try:
            async with asyncio.timeout_at(deadline):
                connection = await self._take()
        except TimeoutError as exc:
            raise psycopg.errors.QueryCanceled(f"no connection within {seconds:g} s") from exc
        query = asyncio.ensure_future(_rows(connection, sql, parameters))
        try:
            async with asyncio.timeout_at(deadline):
                rows = await asyncio.shield(query)
        except TimeoutError as exc:
            await _abandon(query)
            await self._drop(connection)
            raise psycopg.errors.QueryCanceled(f"no answer within {seconds:g} s") from exc
        except BaseException:
            await _abandon(query)
            await self._drop(connection)
            raise
        await self._give_back(connection)
        return rows

    async def _take(self) -> psycopg.AsyncConnection:
        if self.available is None:
            self.available = asyncio.Condition()
        async with self.available:
            while not self.idle and self.opened >= self.size:
                await self.available.wait()
            if self.idle:
                return self.idle.pop()
            self.opened += 1
        # Through a pooler, no prepared statements and no startup options (its own query_timeout bounds them).
        limits = (
            {"prepare_threshold": None}
            if self.pooled
            else {"options": f"-c statement_timeout={int(self.timeout * 1000)}"}
        )
        try:
            return await psycopg.AsyncConnection.connect(
                self.conninfo, autocommit=True, connect_timeout=max(1, int(self.timeout)), **limits
            )
        except BaseException:
            await self._forget()
            raise

    async def _give_back(self, connection: psycopg.AsyncConnection) -> None:
        async with self.available:
            self.idle.append(connection)
            self.available.notify()

    async def _drop(self, connection: psycopg.AsyncConnection) -> None:
        await connection.close()
        await self._forget()

    async def _forget(self) -> None:
        async with self.available:
            self.opened -= 1
            self.available.notify()

    async def close(self) -> None:
        for connection in self.idle:
            await connection.close()
        self.idle.clear()
        self.opened = 0
