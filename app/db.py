"""Engines and sessions.

SQLite: WAL (readers never wait for the writer), a busy timeout, and
``BEGIN IMMEDIATE`` for write transactions so that two games are never
applied from the same stale vectors (SQLite ignores ``SELECT … FOR UPDATE``).
Reads use a second engine with ordinary deferred transactions.

PostgreSQL: one engine; writers lock the participants' rows in id order.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session, sessionmaker

from app.config import Settings


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
