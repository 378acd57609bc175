"""Real databases for the API tests: a SQLite file and a throwaway PostgreSQL server on loopback."""

from __future__ import annotations

import itertools
import shutil
from collections.abc import Iterator
from contextlib import AbstractContextManager
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.cli.main import main
from app.core.config import Settings, get_settings
from app.core.migrate import upgrade
from app.main import create_app
from devtools.pgbouncer import PgBouncer
from devtools.pgbouncer import installed as pgbouncer_installed
from devtools.postgres import PostgresServer
from devtools.server import ADMIN_KEY, live_server

# The helper modules' asserts explain their failures as the test modules' do (pytest rewrites only those).
pytest.register_assert_rewrite("tests.helpers", "tests.api.helpers", "tests.rating.helpers")

_counter = itertools.count()


#: The longest test files, longest first: their tests' durations summed (`pytest --durations=0`), on the 2-core
#: machine.  `make test` hands whole files to its workers in the order collected (`--dist loadfile
#: --no-loadscope-reorder`): these go first, and the short files that come after keep both workers busy to the
#: end.  (pytest-xdist's own order, by number of tests, left a five-minute file of two tests to the last.)
SLOW_FILES = [
    "tests/test_failover.py",
    "tests/api/test_analysis.py",
    "tests/test_scale.py",
    "tests/test_scale_postgres.py",
    "tests/api/test_crash.py",
    "tests/api/test_concurrency.py",
    "tests/api/test_fuzz.py",
    "tests/api/test_refit_apply.py",
    "tests/rating/test_refit.py",
    "tests/api/test_seats.py",
    "tests/test_query_rules.py",
    "tests/api/test_void.py",
    "tests/api/test_audit_race.py",
    "tests/client/test_client.py",
    "tests/test_migrations.py",
    "tests/web/test_record.py",
    "tests/api/test_time_away.py",
    "tests/api/test_seasons.py",
    "tests/api/test_backup_edges.py",
    "tests/web/test_pages.py",
    "tests/api/test_group_commit.py",
    "tests/api/test_read_model.py",
    "tests/api/test_replica.py",
    "tests/test_cli.py",
    "tests/api/test_backups.py",
    "tests/api/test_edge_inputs.py",
    "tests/api/test_burst.py",
    "tests/web/test_admin.py",
]


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items) -> None:
    """The files of SLOW_FILES first, in its order; each file's tests keep their order."""
    rank = {path: n for n, path in enumerate(SLOW_FILES)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::")[0], len(rank)))


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    server = PostgresServer()
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def pgbouncer(postgres) -> Iterator[PgBouncer]:
    """PgBouncer in transaction mode in front of the test server (docs/operations.md)."""
    if not pgbouncer_installed():
        pytest.skip("PgBouncer is not installed: scripts/ensure-postgres.sh installs Debian's package (make test does)")
    pooler = PgBouncer(postgres)
    pooler.start()
    yield pooler
    pooler.stop()


@pytest.fixture(scope="session")
def migrated_sqlite(tmp_path_factory) -> Path:
    """A SQLite file migrated to the head once a session: each test's database is a copy (``fresh_database``).
    The migrations themselves are tested in test_migrations.py."""
    path = tmp_path_factory.mktemp("migrated") / "melo.db"
    upgrade(Settings(database_url=f"sqlite:///{path}").sqlalchemy_url)
    # Every connection closed, in the default rollback-journal mode: the file alone is the whole database.
    assert not [p.name for p in path.parent.glob("melo.db-*")], "the migrated SQLite file is still open"
    return path


@pytest.fixture(scope="session")
def migrated_postgres(postgres) -> str:
    """The name of a PostgreSQL database migrated to the head once a session, that each test's database is made
    from (``CREATE DATABASE … TEMPLATE``); no one connects to it after."""
    name = "melo_migrated"
    upgrade(Settings(database_url=postgres.create_database(name)).sqlalchemy_url)
    return name


def fresh_database(request, tmp_path, kind: str) -> str:
    """A fresh, migrated database: a SQLite file, a PostgreSQL database, or one reached through PgBouncer.  Each
    is a copy of a database that the migrations brought to the head in this session (running them for each test
    took most of a short test's time)."""
    if kind == "sqlite":
        path = tmp_path / "melo.db"
        shutil.copyfile(request.getfixturevalue("migrated_sqlite"), path)
        return f"sqlite:///{path}"
    server: PostgresServer = request.getfixturevalue("postgres")
    name = f"melo_test_{next(_counter)}"
    url = server.create_database(name, template=request.getfixturevalue("migrated_postgres"))
    # Dropped when the fixture that asked for it ends: the server's data stays small (a replica's base backup, the
    # final clean-up), and files deleted early are mostly never written out to the disk.
    request.addfinalizer(lambda: server.drop_database(name))
    return request.getfixturevalue("pgbouncer").url(name) if kind == "pgbouncer" else url


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request, tmp_path) -> str:
    """A fresh, migrated database of each kind (the modules that prove concurrency and crash safety add
    "pgbouncer")."""
    return fresh_database(request, tmp_path, request.param)


@pytest.fixture
def settings(database_url) -> Settings:
    """The app's settings in tests: a leaderboard read sees every commit at once (``board_lag`` 0), as most tests
    read what they just wrote without naming its version; ``tests/api/test_board_lag.py`` tests the lag."""
    return Settings(
        database_url=database_url, admin_key=ADMIN_KEY, max_body_bytes=200_000, migrate_on_start=False, board_lag=0
    )


@pytest.fixture
def client(settings) -> Iterator[TestClient]:
    with TestClient(create_app(settings)) as c:
        yield c


def admin() -> dict[str, str]:
    return {"Authorization": f"Bearer {ADMIN_KEY}"}


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def make_ladder(client: TestClient, slug: str = "test", **config) -> str:
    """Create a ladder; return its write key.  Its initial vectors are seeded (``seed`` 1 unless given; a ladder
    created without one draws it at random), so that a test reads the same ratings on every run."""
    r = client.post("/v1/ladders", json={"slug": slug, "seed": 1, **config}, headers=admin())
    assert r.status_code == 201, r.text
    return r.json()["write_key"]


def serve(database_url: str) -> AbstractContextManager[str]:
    """A real server: two workers on PostgreSQL (they share it), one on SQLite (one writer)."""
    return live_server(database_url, workers=2 if database_url.startswith("postgres") else 1)


@pytest.fixture
def server(database_url) -> Iterator[str]:
    """A real server over a fresh database."""
    with serve(database_url) as base:
        yield base


def module_server(*kinds: str):
    """A ``server`` fixture shared by a module's tests, one server over a fresh database of each of ``kinds``: for
    tests that each make ladders of their own (slugs no other test uses) and read nothing outside them.  A server
    takes seconds to start (two workers on a busy machine: ten)."""

    @pytest.fixture(scope="module", params=kinds)
    def server(request, tmp_path_factory) -> Iterator[str]:
        with serve(fresh_database(request, tmp_path_factory.mktemp("db"), request.param)) as base:
            yield base

    return server


@pytest.fixture
def cli(settings, monkeypatch):
    """``melo …`` against the test's database."""
    monkeypatch.setenv("MELO_DATABASE_URL", settings.database_url)
    get_settings.cache_clear()
    yield main
    get_settings.cache_clear()


def elo_rounded(games: list[dict]) -> list[dict]:
    """Game answers with their players' Elo-equivalent points rounded to a millionth of a point: they are taken
    against the field's mean vector, kept as a running sum by one ladder and summed anew by another (a restore, a
    replay), which may differ in the last bits."""
    for game in games:
        for side in game["sides"]:
            for p in side["players"]:
                for name in ("elo_before", "elo_after", "elo_change"):
                    p[name] = round(p[name], 6)
    return games
