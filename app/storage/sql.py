"""Statements straight through the driver, for the hot and the bulk paths.

SQLAlchemy's per-row machinery (result objects, per-row type processing)
costs more than the database itself when a request or an import writes many
rows; these helpers keep each column's own bind processor (values are stored
exactly as the ORM would store them) and skip the rest.
"""

from __future__ import annotations

import functools
import gc
import itertools
import threading
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, cast

from sqlalchemy import (
    Column,
    ColumnElement,
    Connection,
    CursorResult,
    DateTime,
    Dialect,
    Float,
    Integer,
    LargeBinary,
    String,
    Table,
    UpdateBase,
    literal_column,
)
from sqlalchemy.engine.interfaces import DBAPIConnection
from sqlalchemy.orm import InstrumentedAttribute, Session
from sqlalchemy.types import TypeEngine

from app.storage.tables import UTCDateTime

if TYPE_CHECKING:
    import psycopg

#: Rows per ``executemany`` call of :func:`bulk_insert`.
BULK_ROWS = 50_000
#: Rows a whole-ladder rewrite (a replay's history, every player's vector) converts and writes at a time: each
#: conversion of a whole array (``tolist``, ``zip``, packing) is one call that holds the interpreter, and over
#: millions of memberships that would stall ``/healthz``.
REWRITE_ROWS = 10_000


def chunks(total: int, rows: int = REWRITE_ROWS) -> Iterator[slice]:
    """Slices of ``rows`` rows covering ``range(total)``."""
    for lo in range(0, total, rows):
        yield slice(lo, lo + rows)


def bulk_insert(
    connection: Connection,
    table: Table,
    columns: Mapping[str, Sequence[Any]],
    on_conflict_do_nothing: str = "",
    progress: Callable[[int, int], None] | None = None,
) -> int:
    """INSERT many rows given column by column: SQLite's ``executemany``, PostgreSQL's ``unnest`` of one array
    per column; how many rows were inserted.

    ``on_conflict_do_nothing`` names the unique columns whose duplicates are
    skipped (SQLite and PostgreSQL share the syntax).  ``progress(done, total)``
    follows the rows written.  See :func:`_driver_rows` for what is skipped.
    """
    head = f"INSERT INTO {table.name} ({', '.join(columns)}) "
    tail = f" ON CONFLICT ({on_conflict_do_nothing}) DO NOTHING" if on_conflict_do_nothing else ""
    if connection.dialect.name == "postgresql":
        values = _driver_columns(connection, table, columns)
        return _unnest(connection, table, list(columns), values, f"{head}SELECT * FROM {{rows}}{tail}", progress)
    sql = head + f"VALUES ({', '.join('?' * len(columns))})" + tail
    total = len(next(iter(columns.values())))
    if total <= BULK_ROWS:
        inserted = driver_sql(connection, sql, _driver_rows(connection, table, columns)).rowcount
        if progress is not None:
            progress(total, total)
        return inserted
    # A large insert: the rows of one chunk are made while SQLite writes the previous one (in a thread: it lets
    # go of the interpreter lock while it works), and the connection is used by one thread at a time.
    inserted = 0
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="melo-bulk") as writer:
        pending: Future[CursorResult[Any]] | None = None
        for lo in range(0, total, BULK_ROWS):
            rows = _driver_rows(
                connection, table, {name: values[lo : lo + BULK_ROWS] for name, values in columns.items()}
            )
            if pending is not None:
                inserted += pending.result().rowcount
                if progress is not None:
                    progress(lo, total)
            pending = writer.submit(driver_sql, connection, sql, rows)
        assert pending is not None  # total > BULK_ROWS: the loop submitted at least one chunk
        inserted += pending.result().rowcount
    if progress is not None:
        progress(total, total)
    return inserted


def bulk_update(
    connection: Connection,
    table: Table,
    ladder_id: int | None,
    where: tuple[str | tuple[str, ...], Sequence[Any]],
    columns: Mapping[str, Sequence[Any]],
    kept: tuple[str, tuple[str, ...]] | None = None,
) -> None:
    """UPDATE row n of ``where = (key column(s), values)`` of the ladder ``ladder_id`` with value n of each of
    ``columns``; with ``kept = (column, compared)``, that column keeps its value in a row whose ``compared`` columns
    (some of ``columns``) get the values they had, and is set to NULL in the others.

    A composite key is given as a tuple of column names and a tuple of values per row.
    SQLite: one ``executemany``; PostgreSQL: ``UPDATE … FROM unnest(…)``, one statement per chunk.  Each
    statement also matches ``ladder_id = ?`` (one value, not a column of the rows): a database distributed by
    ladder sends it to the ladder's shard.  Rows of several ladders: ``ladder_id`` None, and ``ladder_id`` one of
    the key columns.
    """
    names, values = where
    if not len(values):
        return
    key_names: tuple[str, ...]
    key_columns: dict[str, Sequence[Any]]
    if isinstance(names, str):
        key_names, key_columns = (names,), {names: values}
    else:
        key_names = names
        key_columns = {name: [row[n] for row in values] for n, name in enumerate(names)}
    if connection.dialect.name == "postgresql":
        assignments = ", ".join(f"{name} = v.{name}" for name in columns)
        if kept is not None:  # (every SET expression reads the row as it was)
            same = " AND ".join(f"{table.name}.{name} = v.{name}" for name in kept[1])
            assignments = f"{kept[0]} = CASE WHEN {same} THEN {table.name}.{kept[0]} END, {assignments}"
        match = " AND ".join(f"{table.name}.{name} = v.{name}" for name in key_names)
        alias = ", ".join([*columns, *key_names])
        one = f" AND {table.name}.ladder_id = ?" if ladder_id is not None else ""
        statement = f"UPDATE {table.name} SET {assignments} FROM {{rows}} AS v({alias}) WHERE {match}{one}"
        values = _driver_columns(connection, table, {**columns, **key_columns})
        after = (ladder_id,) if ladder_id is not None else ()
        if len(values[0]) > COPY_ROWS:
            _copied(connection, table, [*columns, *key_names], values, statement, after)
        else:
            _unnest(connection, table, [*columns, *key_names], values, statement, None, after)
        return
    if ladder_id is not None:
        key_columns["ladder_id"] = [ladder_id] * len(values)
    rows = _driver_rows(connection, table, {**columns, **key_columns})
    assignments = ", ".join(f"{name} = ?" for name in columns)
    if kept is not None:  # (every SET expression reads the row as it was): the compared values come first
        at = [list(columns).index(name) for name in kept[1]]
        same = " AND ".join(f"{name} = ?" for name in kept[1])
        assignments = f"{kept[0]} = CASE WHEN {same} THEN {kept[0]} END, {assignments}"
        rows = [tuple(row[n] for n in at) + row for row in rows]
    match = " AND ".join(f"{name} = ?" for name in key_columns)
    driver_sql(connection, f"UPDATE {table.name} SET {assignments} WHERE {match}", rows)


def _unnest(
    connection: Connection,
    table: Table,
    names: list[str],
    values: list[Sequence],
    statement: str,
    progress: Callable[[int, int], None] | None,
    after: tuple = (),
) -> int:
    """Rows given as one array per column, ``unnest(?::type[], …)`` for ``{rows}`` in ``statement``: a chunk of
    :data:`BULK_ROWS` rows is one statement of one parameter per column (then the parameters ``after``, for the
    placeholders ``statement`` has after ``{rows}``).

    PostgreSQL runs each row of an ``executemany`` as a statement of its own
    (a round trip per row), and a multi-row ``VALUES`` list is a new statement
    text for every row count, parsed again by the driver and never prepared; this text depends only
    on the columns, so the driver prepares it once.  The casts keep each
    column's type (a column of NULLs too).
    """
    dialect = connection.dialect
    arrays = ", ".join(f"?::{table.c[name].type.compile(dialect=dialect)}[]" for name in names)
    sql = statement.format(rows=f"unnest({arrays})")
    total = len(values[0])
    changed = 0
    for lo in range(0, total, BULK_ROWS):
        chunk = tuple(list(column[lo : lo + BULK_ROWS]) for column in values)
        changed += driver_sql(connection, sql, (*chunk, *after)).rowcount
        if progress is not None:
            progress(min(lo + BULK_ROWS, total), total)
    return changed


#: PostgreSQL: a bulk update of more rows than this sends them by ``COPY`` (:func:`_copied`), not as arrays.
COPY_ROWS = 2_000
_scratch_names = itertools.count()


def _copied(
    connection: Connection, table: Table, names: list[str], values: list[Sequence], statement: str, after: tuple
) -> None:
    """PostgreSQL: ``statement`` with ``{rows}`` read from a scratch table that the rows (one sequence per column
    of ``names``, typed as ``table``'s) are copied into: ``COPY`` sends rows in the server's own format, where
    arrays of parameters are parsed element by element (about a third of a rewrite of every player's rating)."""
    dialect = connection.dialect
    scratch = f"melo_rows_{next(_scratch_names)}"
    typed = ", ".join(f"{name} {table.c[name].type.compile(dialect=dialect)}" for name in names)
    driver_sql(connection, f"CREATE TEMPORARY TABLE {scratch} ({typed}) ON COMMIT DROP", ())
    cursor = cast("psycopg.Cursor[Any]", _dbapi_connection(connection).cursor())  # (only PostgreSQL copies)
    try:
        with cursor.copy(f"COPY {scratch} ({', '.join(names)}) FROM STDIN") as copy:
            for row in zip(*values, strict=True):
                copy.write_row(row)
    finally:
        cursor.close()
    driver_sql(connection, statement.format(rows=f"(SELECT {', '.join(names)} FROM {scratch})"), after)
    driver_sql(connection, f"DROP TABLE {scratch}", ())


def _driver_rows(connection: Connection, table: Table, columns: Mapping[str, Sequence[Any]]) -> list[tuple]:
    """The rows of :func:`_driver_columns`."""
    return list(zip(*_driver_columns(connection, table, columns), strict=True))


def _driver_columns(connection: Connection, table: Table, columns: Mapping[str, Sequence[Any]]) -> list[Sequence]:
    """Each column's values for the driver, converted by the column's own bind processor.

    Values are stored exactly as the ORM stores them, but SQLAlchemy's per-row
    machinery, which costs more than the database itself in bulk imports, is
    skipped.  Timestamps are converted once per distinct value (an import often
    stamps every row the same).
    """
    dialect = connection.dialect
    processed: list[Sequence] = []
    for name, values in columns.items():
        column_type = table.c[name].type
        process = _bind_processor(column_type, dialect)
        if process is None or isinstance(column_type, LargeBinary):  # both drivers take bytes as they are
            processed.append(values)
        elif isinstance(column_type, DateTime | UTCDateTime):
            memo = {value: process(value) for value in set(values)}
            processed.append([memo[value] for value in values])
        else:
            processed.append([process(value) for value in values])
    return processed


@functools.lru_cache(maxsize=1024)
def _bind_processor(column_type: TypeEngine, dialect: Dialect) -> Callable[[Any], Any] | None:
    """What the ORM does to a value of ``column_type`` it sends (made once per type: making it costs more than
    using it on a few rows)."""
    return column_type.dialect_impl(dialect).bind_processor(dialect)


def unindexed_on_sqlite(
    session: Session, column: InstrumentedAttribute[Any]
) -> InstrumentedAttribute[Any] | ColumnElement[Any]:
    """``column``, written ``+table.column`` on SQLite, whose planner then takes no index for a term on it.

    Without statistics SQLite's planner takes an index on ``ladder_id = ?`` (it expects 10 rows of a ladder) over
    the look-up of more than a few rows by id, and walks every row of the ladder: so a statement that looks rows up
    by id, and names their ladder too (a database distributed by ladder needs it), names it this way.
    """
    if session.get_bind().dialect.name != "sqlite":
        return column
    return literal_column(f"+{column.table.name}.{column.name}", column.type)


@functools.lru_cache(maxsize=1024)
def result_converter(column: Column, dialect: Dialect) -> Callable[[Any], Any]:
    """What the ORM does to a value of ``column`` read through the driver (e.g. text to an aware datetime).

    Numbers, strings and bytes come from both drivers as they are.
    """
    if isinstance(column.type, Float | Integer | String | LargeBinary):
        return _same
    process = column.type.dialect_impl(dialect).result_processor(dialect, None)
    return process or _same


def _same(value: Any) -> Any:
    return value


def fetch_typed(session: Session, sql: str, parameters: tuple, columns: Sequence[Column]) -> list[tuple]:
    """Rows of ``sql`` (``?`` placeholders) through the driver, each value converted as the ORM would.

    ``columns`` are the table columns the statement selects, in order; a
    trailing `` FOR UPDATE`` is dropped on SQLite (whose writers hold the
    database lock already).
    """
    connection = session.connection()
    if connection.dialect.name == "sqlite" and sql.endswith(" FOR UPDATE"):
        sql = sql[: -len(" FOR UPDATE")]
    return typed(connection, driver_fetchall(connection, sql, parameters), columns)


def typed(connection: Connection, rows: Sequence[tuple], columns: Sequence[Column]) -> list[tuple]:
    """Rows read through the driver, each value converted as the ORM would (``columns``: the table columns of
    the values, in order)."""
    convert = [
        (n, f) for n, column in enumerate(columns) if (f := result_converter(column, connection.dialect)) is not _same
    ]
    if not convert:
        return list(rows)
    out = []
    for row in rows:
        values = list(row)
        for n, f in convert:  # only the values the ORM would change (most are numbers, text or bytes as they are)
            values[n] = f(values[n])
        out.append(tuple(values))
    return out


def rowcount(session: Session, statement: UpdateBase) -> int:
    """Execute an UPDATE or DELETE: how many rows it matched.

    Such a statement's result is a :class:`CursorResult`, which ``Session.execute``'s types do not say.
    """
    return cast(CursorResult[Any], session.execute(statement)).rowcount


def driver_sql(connection: Connection, sql: str, parameters: tuple | list[tuple]) -> CursorResult:
    """Run ``sql`` written with ``?`` placeholders straight through the driver (no per-row type processing).

    For the few hot statements whose SQLAlchemy overhead outweighs the database's work.
    """
    if connection.dialect.paramstyle != "qmark":
        sql = sql.replace("?", "%s")
    return connection.exec_driver_sql(sql, parameters)


def _dbapi_connection(connection: Connection) -> DBAPIConnection:
    """The driver's own connection under ``connection``."""
    dbapi = connection.connection.dbapi_connection
    assert dbapi is not None  # only a closed or invalidated connection has none, and ``connection`` is in use
    return dbapi


def driver_chunks(connection: Connection, sql: str, parameters: tuple, size: int = 10_000) -> Iterator[list[tuple]]:
    """:func:`driver_fetchall` a chunk of ``size`` rows at a time: a million rows fetched in one call would hold
    the interpreter; between chunks the other threads run."""
    if connection.dialect.paramstyle != "qmark":
        sql = sql.replace("?", "%s")
    cursor = _dbapi_connection(connection).cursor()
    try:
        cursor.execute(sql, parameters)
        while rows := cursor.fetchmany(size):
            yield cast(list[tuple], rows)  # (both drivers fetch lists of tuples)
    finally:
        cursor.close()


_paused = 0
_pause_lock = threading.Lock()


@contextmanager
def no_cyclic_gc() -> Iterator[None]:
    """Pause Python's cyclic garbage collector while millions of small objects (a log's payloads, rows) are alive.

    They hold no cycles, but each full collection rescans all of them while
    holding the interpreter, stalling every other thread (liveness too), longer
    as the heap grows.  Threads may overlap: the collector runs again when the
    last of them is done.
    """
    global _paused
    with _pause_lock:
        _paused += 1
        gc.disable()
    try:
        yield
    finally:
        with _pause_lock:
            _paused -= 1
            if _paused == 0:
                gc.enable()


def driver_fetchall(connection: Connection, sql: str, parameters: tuple) -> list[tuple]:
    """:func:`driver_sql` for a large read: plain tuples from the driver's cursor, no result objects per row."""
    if connection.dialect.paramstyle != "qmark":
        sql = sql.replace("?", "%s")
    cursor = _dbapi_connection(connection).cursor()
    try:
        cursor.execute(sql, parameters)
        return cast(list[tuple], cursor.fetchall())  # (both drivers fetch lists of tuples)
    finally:
        cursor.close()


#: ``await fetch(sql, parameters)``: the rows of one statement written with ``?`` placeholders, read the
#: fastest way the database allows (:meth:`app.core.db.Database.fetch`): the hot reads of request handlers.
Fetch = Callable[[str, tuple], Awaitable[list[tuple]]]
