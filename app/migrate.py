"""Run the Alembic migrations programmatically (`melo migrate`, and on start for SQLite)."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config

MIGRATIONS = Path(__file__).resolve().parent.parent / "migrations"


def upgrade(sqlalchemy_url: str) -> None:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.set_main_option("sqlalchemy.url", sqlalchemy_url.replace("%", "%%"))
    command.upgrade(config, "head")
