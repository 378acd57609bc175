"""Engines and sessions.

SQLite: WAL (readers never wait for the writer), a busy timeout, and
``BEGIN IMMEDIATE`` for write transactions so that two games are never
applied from the same stale vectors (SQLite ignores ``SELECT … FOR UPDATE``).
Reads use a second engine with ordinary deferred transactions.

PostgreSQL: one engine; writers lock the participants' rows in id order.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import Connection, DateTime, Engine, LargeBinary, Table, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session, sessionmaker

from app.config import Settings
from app.models import UTCDateTime

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

    @classmethod
    def from_settings(cls, settings: Settings) -> Database:
        url = settings.sqlalchemy_url
        if settings.is_sqlite:
            return cls(_sqlite_engine(url, immediate=False), _sqlite_engine(url, immediate=True), "sqlite")
        engine = create_engine(url, pool_size=10, max_overflow=20, pool_pre_ping=True)
        return cls(engine, engine, "postgresql")

    @contextmanager
    def reading(self) -> Iterator[Session]:
        with sessionmaker(self.read_engine, expire_on_commit=False)() as session:
            yield session

    @contextmanager
    def writing(self) -> Iterator[Session]:
        """A write transaction, committed on success, rolled back on error."""
        with sessionmaker(self.write_engine, expire_on_commit=False)() as session, session.begin():
            yield session

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

    Each column's own bind processor converts its values (so they are stored
    exactly as the ORM stores them) but SQLAlchemy's per-row machinery, which
    cost more than the database itself in bulk imports, is skipped.  Values of
    timestamp columns are converted once per distinct value (an import often
    stamps every row the same).  ``on_conflict_do_nothing`` names the unique
    columns whose duplicates are skipped (SQLite and PostgreSQL share the syntax).
    ``progress(done, total)`` follows the rows written.
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
    marks = ", ".join(["?" if dialect.paramstyle == "qmark" else "%s"] * len(columns))
    sql = f"INSERT INTO {table.name} ({', '.join(columns)}) VALUES ({marks})"
    if on_conflict_do_nothing:
        sql += f" ON CONFLICT ({on_conflict_do_nothing}) DO NOTHING"
    rows = list(zip(*processed, strict=True))
    for lo in range(0, len(rows), BULK_ROWS):
        connection.exec_driver_sql(sql, rows[lo : lo + BULK_ROWS])
        if progress is not None:
            progress(min(lo + BULK_ROWS, len(rows)), len(rows))
