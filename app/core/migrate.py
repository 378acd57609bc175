"""Run the Alembic migrations programmatically (`melo migrate`, and on start for SQLite).

Several processes may start at once (the workers of one server, replicas of a
container): each takes a lock first, a file lock beside a SQLite database or a
PostgreSQL advisory lock, so the migrations run once and the others find the
schema up to date.  A database already at the head is left be without importing
Alembic (some 11 MB a worker would hold for nothing).
"""

from __future__ import annotations

import ast
import fcntl
import functools
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import Connection, create_engine, make_url, text
from sqlalchemy.exc import ProgrammingError

from app.core.db import ensure_sqlite_dir

if TYPE_CHECKING:
    from alembic.config import Config

MIGRATIONS = Path(__file__).resolve().parents[2] / "migrations"
#: The PostgreSQL advisory lock key of migrations (any constant the service uses for nothing else).
ADVISORY_KEY = 0x6D656C6F  # "melo"


def _config(sqlalchemy_url: str | None = None) -> Config:
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    if sqlalchemy_url is not None:
        config.set_main_option("sqlalchemy.url", sqlalchemy_url.replace("%", "%%"))
    return config


def upgrade(sqlalchemy_url: str) -> None:
    ensure_sqlite_dir(sqlalchemy_url)
    if _at_head(sqlalchemy_url):
        return
    from alembic import command

    with _exclusive(sqlalchemy_url):
        command.upgrade(_config(sqlalchemy_url), "head")


@functools.cache
def head() -> str:
    """The migration this server's code needs: the one no other migration names as its ``down_revision``."""
    named: dict[str, set] = {"revision": set(), "down_revision": set()}
    for path in (MIGRATIONS / "versions").glob("*.py"):
        for node in ast.parse(path.read_text()).body:
            if not isinstance(node, ast.Assign | ast.AnnAssign) or node.value is None:
                continue
            target = node.target if isinstance(node, ast.AnnAssign) else node.targets[0]
            if isinstance(target, ast.Name) and target.id in named:
                value = ast.literal_eval(node.value)
                named[target.id].update(value if isinstance(value, tuple) else [value])  # a merge names several
    (found,) = named["revision"] - named["down_revision"]
    return str(found)


def _at_head(sqlalchemy_url: str) -> bool:
    """Whether the database is at :func:`head` already (False if it cannot be told: the migration says why)."""
    engine = create_engine(sqlalchemy_url)
    try:
        with engine.connect() as connection:
            return schema_problem(connection) is None
    except Exception:
        return False
    finally:
        engine.dispose()


def schema_problem(connection: Connection) -> str | None:
    """Why the database's schema is not the one this server needs, naming the fix; None if it is.  Raises if
    the database cannot be reached."""
    try:
        found = connection.execute(text("SELECT version_num FROM alembic_version")).scalars().all()
    except ProgrammingError:  # PostgreSQL: no such table
        connection.rollback()
        found = []
    except Exception as exc:  # SQLite: no such table (an OperationalError, as a database that is down)
        if "no such table" not in str(exc):
            raise
        found = []
    needed = head()
    if found == [needed]:
        return None
    where = f"at migration {found[0]}" if found else "without the service's tables"
    return f"The database is {where}; this server needs migration {needed}: run `melo migrate` first."


@contextmanager
def _exclusive(sqlalchemy_url: str) -> Iterator[None]:
    url = make_url(sqlalchemy_url)
    if url.get_backend_name() == "sqlite":
        if not url.database or url.database == ":memory:":
            yield
            return
        with open(f"{url.database}.migrate-lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            yield
        return
    engine = create_engine(url)
    try:
        # A transaction's lock, released with it: nothing outlives the transaction, even through a pooler.
        with engine.begin() as conn:
            conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": ADVISORY_KEY})
            yield
    finally:
        engine.dispose()
