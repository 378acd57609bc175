"""Engines and sessions.

SQLite: WAL (readers never wait for the writer), a busy timeout, and
``BEGIN IMMEDIATE`` for write transactions so that two games are never
applied from the same stale vectors (SQLite ignores ``SELECT … FOR UPDATE``).
Reads use a second engine with ordinary deferred transactions.

PostgreSQL: one engine; writers lock the participants' rows in id order.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from sqlalchemy import Connection, CursorResult, DateTime, Engine, LargeBinary, Table, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import Session, sessionmaker

from app.config import Settings
from app.models import UTCDateTime

T = TypeVar("T")
#: PostgreSQL's deadlock_detected and serialization_failure: the transaction may simply be run again.
RETRYABLE = {"40P01", "40001"}
#: Rows per ``executemany`` call of :func:`bulk_insert`.
BULK_ROWS = 50_000
#: SQLite page cache per connection (KiB), allocated only as used: large writes
#: (bulk imports) that outgrow it spill to the WAL mid-transaction and slow down.
SQLITE_CACHE_KIB = 256 * 1024


def ensure_sqlite_dir(url: str) -> None:
    """Create the directory of a SQLite database file (the default lives under ./data/)."""
    if url.startswith("sqlite"):
        database = make_url(url).database
        if database and database != ":memory:":
            Path(database).parent.mkdir(parents=True, exist_ok=True)


def _sqlite_engine(url: str, immediate: bool) -> Engine:
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
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute(f"PRAGMA cache_size=-{SQLITE_CACHE_KIB}")
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
    #: SQLite's busy handler, whose sleeps grow to 100 ms and made p99 latency seconds.
    _write_lock: threading.Lock | None = None

    @classmethod
    def from_settings(cls, settings: Settings) -> Database:
        url = settings.sqlalchemy_url
        if settings.is_sqlite:
            read, write = _sqlite_engine(url, immediate=False), _sqlite_engine(url, immediate=True)
            return cls(read, write, "sqlite", threading.Lock())
        engine = create_engine(url, pool_size=10, max_overflow=20, pool_pre_ping=True)
        return cls(engine, engine, "postgresql")

    @contextmanager
    def reading(self) -> Iterator[Session]:
        with sessionmaker(self.read_engine, expire_on_commit=False)() as session:
            yield session

    @contextmanager
    def writing(self) -> Iterator[Session]:
        """A write transaction, committed on success, rolled back on error."""
        with (
            self._write_lock or nullcontext(),
            sessionmaker(self.write_engine, expire_on_commit=False)() as session,
            session.begin(),
        ):
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

    def dispose(self) -> None:
        self.read_engine.dispose()
        self.write_engine.dispose()


def bulk_insert(
    connection: Connection,
    table: Table,
    columns: dict[str, Sequence],
    on_conflict_do_nothing: str = "",
    progress: Callable[[int, int], None] | None = None,
) -> None:
    """INSERT many rows given column by column, through the driver's ``executemany``.

    ``on_conflict_do_nothing`` names the unique columns whose duplicates are
    skipped (SQLite and PostgreSQL share the syntax).  ``progress(done, total)``
    follows the rows written.  See :func:`_driver_rows` for what is skipped.
    """
    sql = f"INSERT INTO {table.name} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})"
    if on_conflict_do_nothing:
        sql += f" ON CONFLICT ({on_conflict_do_nothing}) DO NOTHING"
    rows = _driver_rows(connection, table, columns)
    for lo in range(0, len(rows), BULK_ROWS):
        driver_sql(connection, sql, rows[lo : lo + BULK_ROWS])
        if progress is not None:
            progress(min(lo + BULK_ROWS, len(rows)), len(rows))


def bulk_update(
    connection: Connection, table: Table, where: tuple[str, Sequence], columns: dict[str, Sequence]
) -> None:
    """UPDATE row n of ``where = (column, values)`` with value n of each of ``columns``, in one ``executemany``."""
    key, keys = where
    assignments = ", ".join(f"{name} = ?" for name in columns)
    sql = f"UPDATE {table.name} SET {assignments} WHERE {key} = ?"
    driver_sql(connection, sql, _driver_rows(connection, table, {**columns, key: keys}))


def _driver_rows(connection: Connection, table: Table, columns: dict[str, Sequence]) -> list[tuple]:
    """Rows for the driver, each column converted by its own bind processor.

    Values are stored exactly as the ORM stores them, but SQLAlchemy's per-row
    machinery, which cost more than the database itself in bulk imports, is
    skipped.  Timestamps are converted once per distinct value (an import often
    stamps every row the same).
    """
    dialect = connection.dialect
    processed = []
    for name, values in columns.items():
        column_type = table.c[name].type
        process = column_type.dialect_impl(dialect).bind_processor(dialect)
        if process is None or isinstance(column_type, LargeBinary):  # both drivers take bytes as they are
            processed.append(values)
        elif isinstance(column_type, DateTime | UTCDateTime):
            memo = {value: process(value) for value in set(values)}
            processed.append([memo[value] for value in values])
        else:
            processed.append([process(value) for value in values])
    return list(zip(*processed, strict=True))


def driver_sql(connection: Connection, sql: str, parameters: tuple | list[tuple]) -> CursorResult:
    """Run ``sql`` written with ``?`` placeholders straight through the driver (no per-row type processing).

    For the few hot statements whose SQLAlchemy overhead outweighs the database's work.
    """
    if connection.dialect.paramstyle != "qmark":
        sql = sql.replace("?", "%s")
    return connection.exec_driver_sql(sql, parameters)


def driver_fetchall(connection: Connection, sql: str, parameters: tuple) -> list[tuple]:
    """:func:`driver_sql` for a large read: plain tuples from the driver's cursor, no result objects per row."""
    if connection.dialect.paramstyle != "qmark":
        sql = sql.replace("?", "%s")
    cursor = connection.connection.dbapi_connection.cursor()
    try:
        cursor.execute(sql, parameters)
        return cursor.fetchall()
    finally:
        cursor.close()
