"""Engines and sessions: the :class:`Database` of one database (its SQLite engines and their pragmas here).

SQLite: WAL (readers never wait for the writer), a busy timeout, and
``BEGIN IMMEDIATE`` for write transactions so that two games are never
applied from the same stale vectors (SQLite ignores ``SELECT … FOR UPDATE``).
Reads use a second engine with ordinary deferred transactions.

PostgreSQL: one engine (:mod:`app.core.postgresql`); writers lock the participants' rows in id order.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from sqlalchemy import Engine, create_engine, event, text
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session, sessionmaker

from app.core.async_reads import AsyncReads
from app.core.config import Settings
from app.core.fair_lock import FairLock
from app.core.postgresql import RETRYABLE, postgresql_engine, sqlstate

T = TypeVar("T")
#: SQLite page cache per connection (KiB), allocated only as used: large writes
#: (bulk imports) that outgrow it spill to the WAL mid-transaction and slow down.
SQLITE_CACHE_KIB = 256 * 1024
#: The same for each reading connection: their reads are point reads, the rows changed since a version, or a
#: whole ladder read once (which the operating system's file cache serves as well), and a large cache in each
#: of several connections only holds a worker's memory (16 MiB each: 23 MB more at 100,000 players).
SQLITE_READ_CACHE_KIB = 2 * 1024


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


@dataclass
class Database:
    """The read and write session factories of one database."""

    read_engine: Engine
    write_engine: Engine
    dialect: str
    #: SQLite admits one writer; this process's writers queue here instead of in
    #: SQLite's busy handler, whose sleeps grow to 100 ms and stretch the tail latency.
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
        return cls.postgresql(url, settings.transaction_pooler, settings)

    @classmethod
    def postgresql(cls, url: str, pooled: bool, settings: Settings, bounded: bool = False) -> Database:
        """A PostgreSQL database at ``url`` (``pooled``: behind a transaction pooler; ``bounded``: its point reads
        give up after a bound, as a replica's do)."""
        engine = postgresql_engine(url, pooled, settings)
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
            except Exception as exc:  # through SQLAlchemy, or from the driver (a hot statement past it)
                if sqlstate(exc) not in RETRYABLE or attempt == attempts - 1:
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
