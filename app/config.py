"""Settings read from the environment (MELO_* variables)."""

from __future__ import annotations

from functools import lru_cache

from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="MELO_", env_file=".env", extra="ignore")

    #: SQLAlchemy URL. SQLite (embedded, the default) or PostgreSQL (``postgresql://…``).
    database_url: str = "sqlite:///./data/melo.db"
    #: Bearer key that may create ladders. Unset: creating ladders is refused.
    admin_key: str | None = None
    #: Largest accepted request body in bytes (413 beyond).
    max_body_bytes: int = 1_000_000
    #: Most games in one batch request.
    max_batch_games: int = 1000
    #: Requests served at once per worker process (its thread pool).  More threads
    #: than this only queue for the interpreter lock and raise every request's latency.
    threads: int = 4
    #: Run migrations when the app starts (default for the embedded SQLite database).
    migrate_on_start: bool | None = None

    @property
    def sqlalchemy_url(self) -> str:
        """The URL with the psycopg 3 driver selected for PostgreSQL."""
        url = self.database_url
        for prefix in ("postgres://", "postgresql://"):
            if url.startswith(prefix):
                return "postgresql+psycopg://" + url[len(prefix) :]
        return url

    @property
    def is_sqlite(self) -> bool:
        return self.sqlalchemy_url.startswith("sqlite")

    @property
    def should_migrate_on_start(self) -> bool:
        return self.is_sqlite if self.migrate_on_start is None else self.migrate_on_start


@lru_cache
def get_settings() -> Settings:
    return Settings()
