"""Run the Alembic migrations programmatically (`melo migrate`, and on start for SQLite)."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config

from app.db import ensure_sqlite_dir

MIGRATIONS = Path(__file__).resolve().parent.parent / "migrations"


def upgrade(sqlalchemy_url: str) -> None:
    ensure_sqlite_dir(sqlalchemy_url)
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.set_main_option("sqlalchemy.url", sqlalchemy_url.replace("%", "%%"))
    command.upgrade(config, "head")
