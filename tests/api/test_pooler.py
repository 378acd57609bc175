"""Through PgBouncer in transaction mode (``?pgbouncer=true``) the service keeps nothing on a server connection beyond
its transaction: its time limits are set in each transaction, and it prepares no statements."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest
from sqlalchemy import text
from sqlalchemy.exc import OperationalError

from app.core.config import Settings
from app.core.db import Database


def test_each_transaction_through_the_pooler_carries_the_time_limits(postgres, pgbouncer):
    postgres.create_database("pooled")
    settings = Settings(database_url=pgbouncer.url("pooled"), database_timeout=0.5)
    assert settings.transaction_pooler and "pgbouncer" not in settings.sqlalchemy_url
    db = Database.from_settings(settings)

    def limits(_: int) -> tuple[str, str, int]:
        with db.writing() as session:
            session.execute(text("SELECT pg_sleep(0.01)"))  # held a while: the transactions overlap
            found = session.execute(text("SHOW statement_timeout")).scalar_one()
            lock = session.execute(text("SHOW lock_timeout")).scalar_one()
            return found, lock, session.execute(text("SELECT count(*) FROM pg_prepared_statements")).scalar_one()

    try:
        # Many transactions at once, on whichever server connections the pooler lends them: each has the limits,
        # and none finds a statement prepared on its server connection (the same statements ran many times).
        with ThreadPoolExecutor(8) as pool:
            assert set(pool.map(limits, range(200))) == {("500ms", "500ms", 0)}
        with pytest.raises(OperationalError, match="statement timeout"), db.writing() as session:
            session.execute(text("SELECT pg_sleep(3)"))
        assert db.child_url().endswith("?pgbouncer=true")
    finally:
        db.dispose()
    direct = Settings(database_url=postgres.url("pooled"))
    plain = Database.from_settings(direct)
    assert not direct.transaction_pooler and plain.child_url() == direct.sqlalchemy_url
    plain.dispose()
