"""PostgreSQL's engine: pooled connections with time limits, set per transaction through a pooler in transaction
mode (``?pgbouncer=true``), where nothing outlives a transaction; and the errors after which a transaction may
simply run again."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Engine, create_engine, event

from app.core.config import Settings

#: PostgreSQL's deadlock_detected and serialization_failure: the transaction may simply be run again.
RETRYABLE = {"40P01", "40001"}
#: PostgreSQL's code for a lock not granted within ``lock_timeout``.
LOCK_NOT_AVAILABLE = "55P03"


def sqlstate(exc: BaseException) -> str | None:
    """The SQLSTATE of a database error, raised through SQLAlchemy or straight from the driver (the hot
    statements go past SQLAlchemy: :mod:`app.storage.sql`); None for anything else."""
    return getattr(getattr(exc, "orig", exc), "sqlstate", None)


def postgresql_engine(url: str, pooled: bool, settings: Settings) -> Engine:
    """The engine of the database at ``url`` (``pooled``: through a pooler in transaction mode)."""
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

    return engine
