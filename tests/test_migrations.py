"""Migrations on a database that already holds ladders and games: existing rows get the new columns right."""

from __future__ import annotations

import psycopg
import pytest
import sqlalchemy as sa
from alembic import command
from alembic.config import Config

from app.config import Settings
from app.migrate import MIGRATIONS


@pytest.fixture(params=["sqlite", "postgresql"])
def fresh_url(request, tmp_path) -> str:
    if request.param == "sqlite":
        return Settings(database_url=f"sqlite:///{tmp_path / 'old.db'}").sqlalchemy_url
    server = request.getfixturevalue("postgres")
    with psycopg.connect(server.url(), autocommit=True) as conn:
        conn.execute('CREATE DATABASE "migrations"')
    return Settings(database_url=server.url("migrations")).sqlalchemy_url


def test_games_of_existing_ladders_are_numbered_and_their_keys_become_admin_keys(fresh_url):
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.set_main_option("sqlalchemy.url", fresh_url.replace("%", "%%"))
    command.upgrade(config, "0006")
    engine = sa.create_engine(fresh_url)
    with engine.begin() as conn:
        for slug in ("a", "b"):
            conn.execute(
                sa.text(
                    "INSERT INTO ladders (slug, k, eta, init_scale, seed, auto_create_players, auto_refit, "
                    "write_key_hash, created_at, version) VALUES (:slug, 1, 0.1, 0.1, 0, true, false, :hash, "
                    "CURRENT_TIMESTAMP, 0)"
                ),
                {"slug": slug, "hash": f"hash-{slug}"},
            )
        ladder = dict(conn.execute(sa.text("SELECT slug, id FROM ladders")).all())
        for n, slug in enumerate("ababa"):  # interleaved: global ids 1-5
            conn.execute(
                sa.text(
                    "INSERT INTO games (id, ladder_id, played_at, created_at, payload) "
                    "VALUES (:id, :ladder, CURRENT_TIMESTAMP, CURRENT_TIMESTAMP, '{}')"
                ),
                {"id": n + 1, "ladder": ladder[slug]},
            )
    command.upgrade(config, "head")
    with engine.connect() as conn:
        seqs = conn.execute(sa.text("SELECT id, seq FROM games ORDER BY id")).all()
        last = dict(conn.execute(sa.text("SELECT slug, last_seq FROM ladders")).all())
        keys = conn.execute(sa.text("SELECT ladder_id, role, key_hash FROM api_keys ORDER BY ladder_id")).all()
    engine.dispose()
    assert [tuple(row) for row in seqs] == [(1, 1), (2, 1), (3, 2), (4, 2), (5, 3)]
    assert last == {"a": 3, "b": 2}
    assert [tuple(row) for row in keys] == [(ladder["a"], "admin", "hash-a"), (ladder["b"], "admin", "hash-b")]
