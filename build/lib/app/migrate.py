"""Run the Alembic migrations programmatically (`melo migrate`, and on start for SQLite).

Several processes may start at once (the workers of one server, replicas of a
container): each takes a lock first, a file lock beside a SQLite database or a
PostgreSQL advisory lock, so the migrations run once and the others find the
schema up to date.
"""

from __future__ import annotations

import fcntl
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import create_engine, make_url, text

from app.db import ensure_sqlite_dir

MIGRATIONS = Path(__file__).resolve().parent.parent / "migrations"
#: The PostgreSQL advisory lock key of migrations (any constant the service uses for nothing else).
ADVISORY_KEY = 0x6D656C6F  # "melo"


def upgrade(sqlalchemy_url: str) -> None:
    ensure_sqlite_dir(sqlalchemy_url)
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.set_main_option("sqlalchemy.url", sqlalchemy_url.replace("%", "%%"))
    with _exclusive(sqlalchemy_url):
        command.upgrade(config, "head")


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
        with engine.connect() as conn:
            conn.execute(text("SELECT pg_advisory_lock(:key)"), {"key": ADVISORY_KEY})
            try:
                yield
            finally:
                conn.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": ADVISORY_KEY})
    finally:
        engine.dispose()
