"""Through PgBouncer in transaction mode (``?pgbouncer=true``) the service keeps nothing on a server connection beyond
its transaction: its time limits are set in each transaction, and it prepares no statements."""

from __future__ import annotations

import pytest
from sqlalchemy import text
from sqlalchemy.exc import OperationalError

from app.config import Settings
from app.db import Database


def test_each_transaction_through_the_pooler_carries_the_time_limits(postgres, pgbouncer):
    postgres.create_database("pooled")
    settings = Settings(database_url=pgbouncer.url("pooled"), database_timeout=0.5)
    assert settings.transaction_pooler and "pgbouncer" not in settings.sqlalchemy_url
    db = Database.from_settings(settings)
    try:
        for _ in range(10):  # whichever server connection each transaction lands on
            with db.writing() as session:
                assert session.execute(text("SHOW statement_timeout")).scalar_one() == "500ms"
                assert session.execute(text("SHOW lock_timeout")).scalar_one() == "500ms"
        with pytest.raises(OperationalError, match="statement timeout"), db.writing() as session:
            session.execute(text("SELECT pg_sleep(3)"))
        assert db.child_url().endswith("?pgbouncer=true")
    finally:
        db.dispose()
    direct = Settings(database_url=postgres.url("pooled"))
    assert not direct.transaction_pooler and Database.from_settings(direct).child_url() == direct.sqlalchemy_url
