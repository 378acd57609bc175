"""A write that reaches a PostgreSQL server refusing writes (a primary demoted to a standby under the service's
connections during a failover, docs/scaling.md) is a 503 problem with Retry-After, not a 500."""

from __future__ import annotations

import psycopg
from fastapi.testclient import TestClient

from app.core.config import Settings
from app.main import create_app
from devtools.server import ADMIN_KEY
from tests.conftest import admin, fresh_database


def test_a_write_refused_as_read_only_is_a_503(request, tmp_path, postgres):
    url = fresh_database(request, tmp_path, "postgresql")
    name = url.rsplit("/", 1)[1]
    settings = Settings(database_url=url, admin_key=ADMIN_KEY, migrate_on_start=False)
    game = {"sides": [{"players": ["a"], "rank": 1}, {"players": ["b"], "rank": 2}]}
    with TestClient(create_app(settings)) as client:
        key = client.post("/v1/ladders", json={"slug": "ro"}, headers=admin()).json()["write_key"]
        headers = {"Authorization": f"Bearer {key}"}
        assert client.post("/v1/ladders/ro/games", json=game, headers=headers).status_code == 201
        with psycopg.connect(postgres.url(), autocommit=True) as conn:  # every new session of it is read-only
            conn.execute(f'ALTER DATABASE "{name}" SET default_transaction_read_only = on')
            conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s", (name,))
        for path, body in [("/v1/ladders/ro/games", game), ("/v1/ladders/ro/seasons", {"name": "s1"})]:
            r = client.post(path, json=body, headers=headers if path.endswith("games") else admin())
            assert r.status_code == 503, r.text
            assert r.headers["content-type"].startswith("application/problem+json") and r.headers["retry-after"]
        assert client.get("/v1/ladders/ro/leaderboard").status_code == 200  # reads go on
