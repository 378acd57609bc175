"""Migrations on a database that already holds ladders and games: existing rows get the new columns right."""

from __future__ import annotations

import itertools
import subprocess
import sys
import time

import numpy as np
import pytest
import sqlalchemy as sa
from alembic import command
from alembic.config import Config
from alembic.script import ScriptDirectory
from fastapi.testclient import TestClient

from app.core import migrate
from app.core.config import Settings
from app.core.migrate import MIGRATIONS
from app.main import create_app
from devtools.server import ADMIN_KEY
from tests.conftest import bearer, make_ladder

_names = itertools.count()


@pytest.fixture(params=["sqlite", "postgresql"])
def fresh_url(request, tmp_path) -> str:
    if request.param == "sqlite":
        return Settings(database_url=f"sqlite:///{tmp_path / 'old.db'}").sqlalchemy_url
    server = request.getfixturevalue("postgres")
    name = f"migrations_{next(_names)}"
    return Settings(database_url=server.create_database(name)).sqlalchemy_url


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


def test_processes_starting_together_migrate_a_fresh_database_once(fresh_url):
    # Workers or replicas starting at once each run the migrations; the lock makes one do it and the others wait.
    script = f"from app.core.migrate import upgrade; upgrade({fresh_url!r})"
    procs = [subprocess.Popen([sys.executable, "-c", script], stderr=subprocess.PIPE) for _ in range(6)]
    errors = [proc.communicate(timeout=120)[1].decode() for proc in procs]
    assert [proc.returncode for proc in procs] == [0] * 6, errors
    engine = sa.create_engine(fresh_url)
    with engine.connect() as conn:
        version = conn.execute(sa.text("SELECT version_num FROM alembic_version")).scalars().all()
        tables = sa.inspect(conn).get_table_names()
    engine.dispose()
    head = ScriptDirectory.from_config(_config(fresh_url)).get_current_head()
    assert head == migrate.head()  # read from the files without Alembic (a worker at the head never imports it)
    assert version == [head] and not [t for t in tables if t.startswith("_alembic_tmp")]


def _config(url: str) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return config


def test_sqlite_finds_a_games_players_by_key_and_pages_players_in_id_order_without_a_scan(tmp_path):
    """The plans of the statements a game commit and an export page run on a migrated SQLite database: by the
    key index, and through the index of players in id order, never a walk over every player of the ladder."""
    from app.core.migrate import upgrade
    from app.storage.players import lock_by_keys

    url = Settings(database_url=f"sqlite:///{tmp_path / 'plans.db'}").sqlalchemy_url
    upgrade(url)
    with sa.create_engine(url).connect() as connection:

        def plan(sql: str, parameters: tuple = ()) -> str:
            rows = connection.exec_driver_sql("EXPLAIN QUERY PLAN " + sql, parameters)
            return " | ".join(row[3] for row in rows)

        by_key = plan(lock_by_keys("sqlite", 2).removesuffix(" FOR UPDATE"), (1, "a", "b"))
        assert "sqlite_autoindex_players_1 (ladder_id=? AND key=?)" in by_key, by_key
        page = plan("SELECT id, key FROM players WHERE ladder_id = 1 AND id > 5 ORDER BY id LIMIT 10")
        assert "ix_players_ladder_id_id (ladder_id=? AND id>?)" in page and "TEMP B-TREE" not in page, page


def test_refits_done_before_0021_get_their_unplaced_players_by_id(client, settings):
    """A refit applied, then a player merged into another: downgraded to 0020 (the columns dropped) and upgraded
    again, the refit's unplaced players are found anew from its result by their keys, and the leaderboard shows
    the same players provisional (the merged player's id is gone: it showed nowhere).  The ladder is on the
    shrinking step: below 0037 a ladder has no other rule, and the upgrade gives it that one."""
    h = bearer(make_ladder(client, k=1, rate_rule="steps"))
    duels = [("a", "b"), ("b", "a"), ("b", "c"), ("c", "b"), ("a", "c"), ("c", "a")]
    unbeaten = [(u, lo) for u in ("u1", "u2", "u3") for lo in ("a", "b", "c")]
    games = [{"sides": [{"players": [w], "rank": 1}, {"players": [lo], "rank": 2}]} for w, lo in duels + unbeaten]
    assert client.post("/v1/ladders/test/games/batch", json={"games": games}, headers=h).status_code == 201
    job = client.post("/v1/ladders/test/refits", json={"restarts": 1}, headers=h).json()
    while (job := client.get(f"/v1/ladders/test/refits/{job['id']}").json())["status"] in ("queued", "running"):
        time.sleep(0.1)
    assert client.post(f"/v1/ladders/test/refits/{job['id']}/apply", headers=h).status_code == 200
    assert client.post("/v1/ladders/test/players/u2/merge", json={"into": "u3"}, headers=h).status_code == 200
    engine = sa.create_engine(settings.sqlalchemy_url)
    columns = "SELECT not_comparable_ids, outside_field_ids FROM refits"
    with engine.connect() as conn:
        before = conn.execute(sa.text(columns)).one()
        ids = dict(conn.execute(sa.text("SELECT key, id FROM players")).all())
    assert len(before.outside_field_ids) == 3 * 8  # u1, u2, u3 (u2's row is gone since)
    shown = client.get("/v1/ladders/test/leaderboard").json()["items"]
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.set_main_option("sqlalchemy.url", settings.sqlalchemy_url.replace("%", "%%"))
    command.downgrade(config, "0020")
    command.upgrade(config, "head")
    with engine.connect() as conn:
        after = conn.execute(sa.text(columns)).one()
    engine.dispose()
    for name in ("not_comparable_ids", "outside_field_ids"):  # the same, but for the merged player's id
        kept = [n for n in np.frombuffer(getattr(before, name), "<i8") if n in ids.values()]
        assert np.frombuffer(getattr(after, name), "<i8").tolist() == kept
    assert np.frombuffer(after.outside_field_ids, "<i8").tolist() == sorted([ids["u1"], ids["u3"]])
    with TestClient(create_app(settings)) as fresh:  # a new process's first read
        assert fresh.get("/v1/ladders/test/leaderboard").json()["items"] == shown


def test_memberships_get_their_games_ladder_and_every_key_includes_it(client, settings):
    """Downgraded to 0028 (``participants.ladder_id`` dropped, the keys as they were) and upgraded again: each
    membership gets its game's ladder back, and the ladders read and write as before (on the shrinking step, the
    only rule below 0037)."""
    keys = {slug: bearer(make_ladder(client, slug, k=1, rate_rule="steps")) for slug in ("first", "second")}
    for n in range(3):
        for slug, h in keys.items():
            game = {"sides": [{"players": [f"{slug}{n}"], "rank": 1}, {"players": [f"{slug}{n + 1}"], "rank": 2}]}
            assert client.post(f"/v1/ladders/{slug}/games", json=game, headers=h).status_code == 201
    shown = {slug: client.get(f"/v1/ladders/{slug}/leaderboard").json()["items"] for slug in keys}
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.set_main_option("sqlalchemy.url", settings.sqlalchemy_url.replace("%", "%%"))
    command.downgrade(config, "0028")
    command.upgrade(config, "head")
    engine = sa.create_engine(settings.sqlalchemy_url)
    joined = "SELECT p.ladder_id, g.ladder_id FROM participants p JOIN games g ON g.id = p.game_id"
    with engine.connect() as conn:
        rows = conn.execute(sa.text(joined)).all()
    engine.dispose()
    assert len(rows) == 12 and all(mine == theirs for mine, theirs in rows)
    with TestClient(create_app(settings)) as fresh:
        for slug, h in keys.items():
            assert fresh.get(f"/v1/ladders/{slug}/leaderboard").json()["items"] == shown[slug]
            game = {"sides": [{"players": [f"{slug}0"], "rank": 1}, {"players": [f"{slug}3"], "rank": 2}]}
            assert fresh.post(f"/v1/ladders/{slug}/games", json=game, headers=h).status_code == 201
            assert fresh.post(f"/v1/ladders/{slug}/games/1/void", headers=h).status_code == 200
            assert fresh.get(f"/v1/ladders/{slug}/audit").json()["consistent"]
        gone = fresh.request("DELETE", "/v1/ladders/first", json={"slug": "first"}, headers=bearer(ADMIN_KEY))
        assert gone.status_code == 200, gone.text
        assert fresh.get("/v1/ladders/second/audit").json()["consistent"]


def test_events_written_before_0032_keep_their_ids_as_numbers_and_ladders_go_on_above_them(client, settings):
    """Event ids were one sequence for the server; 0032 numbers each ladder's events.  An event from before keeps
    its id, so a client's resume point stays exact, and every ladder's next number is above every id given out,
    pruned ones too.  Season names are composed (NFC), as they are taken now."""
    write_key = make_ladder(client, "a")
    make_ladder(client, "b")
    season = client.post("/v1/ladders/a/seasons", json={"name": "verano m\u00e1s"}, headers=bearer(write_key))
    assert season.status_code == 201, season.text
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.set_main_option("sqlalchemy.url", settings.sqlalchemy_url.replace("%", "%%"))
    command.downgrade(config, "0031")
    engine = sa.create_engine(settings.sqlalchemy_url)
    with engine.begin() as conn:  # events as the server wrote them before: ids from one sequence
        ladders = [conn.execute(sa.text("SELECT id FROM ladders WHERE slug = :s"), {"s": s}).scalar() for s in "ab"]
        for n, ladder_id in enumerate([ladders[0], ladders[1], ladders[0]]):
            insert = "INSERT INTO ladder_events (ladder_id, version, kind, data, created_at) VALUES "
            insert += "(:ladder, :n, 'ladder', '{}', CURRENT_TIMESTAMP)"
            conn.execute(sa.text(insert), {"ladder": ladder_id, "n": n})
        old = conn.execute(sa.text("SELECT ladder_id, id FROM ladder_events ORDER BY id")).all()
        conn.execute(sa.text("DELETE FROM ladder_events WHERE id = :id"), {"id": old[-1][1]})  # pruned
        decomposed = {"name": "verano ma\u0301s"}  # as a season could be named before
        conn.execute(sa.text("UPDATE seasons SET name = :name"), decomposed)
    command.upgrade(config, "head")
    with engine.connect() as conn:
        assert conn.execute(sa.text("SELECT ladder_id, number FROM ladder_events ORDER BY id")).all() == old[:-1]
        assert conn.execute(sa.text("SELECT name FROM seasons")).scalar_one() == "verano m\u00e1s"
        counters = conn.execute(sa.text("SELECT last_event FROM ladders WHERE id IN (:a, :b)"),
                                {"a": ladders[0], "b": ladders[1]}).scalars().all()  # fmt: skip
    engine.dispose()
    assert counters == [old[-1][1]] * 2
    with TestClient(create_app(settings)) as fresh:
        game = {"sides": [{"players": ["ann"], "rank": 1}, {"players": ["bob"], "rank": 2}]}
        posted = fresh.post("/v1/ladders/a/games", json=game, headers=bearer(write_key))
        assert posted.status_code == 201
    with engine.connect() as conn:
        newest = conn.execute(sa.text("SELECT max(number) FROM ladder_events WHERE ladder_id = :a"),
                              {"a": ladders[0]}).scalar()  # fmt: skip
    engine.dispose()
    assert newest > old[-1][1]


def test_a_worker_on_a_migrated_database_never_imports_alembic_or_the_fitting_code(tmp_path):
    """Memory: a worker whose database is at the head serves without Alembic (its templates and highlighter) and
    without SciPy's optimisation and dense linear algebra (refits and reports import them when they run)."""
    url = f"sqlite:///{tmp_path / 'lean.db'}"
    migrate.upgrade(Settings(database_url=url).sqlalchemy_url)
    script = (
        "import sys\n"
        "from fastapi.testclient import TestClient\n"
        "from app.main import create_app\n"
        "from app.core.config import Settings\n"
        f"with TestClient(create_app(Settings(database_url={url!r}, admin_key='a' * 32))) as client:\n"
        "    assert client.get('/readyz').status_code == 200\n"
        "    assert client.get('/v1/ladders').status_code in (200, 401)\n"
        "print(sorted(m for m in ('alembic', 'mako', 'scipy.optimize', 'scipy.linalg') if m in sys.modules))\n"
    )
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip().splitlines()[-1] == "[]"


def test_ladders_from_before_0040_get_their_comparisons_counted(client, settings):
    """Downgraded to 0039 (the counts dropped) and upgraded again: each ladder's comparisons are its games' pairs
    of sides (voided games left out), as the game commits keep them and /audit counts them."""
    h = bearer(make_ladder(client, k=1))
    sides = [{"players": [p], "rank": n} for n, p in enumerate("abcde", start=1)]  # 10 pairs
    games = [{"sides": sides}, {"sides": sides[:3]}, {"sides": sides[1:3]}, {"sides": sides[::-1]}]
    assert client.post("/v1/ladders/test/games/batch", json={"games": games}, headers=h).status_code == 201
    assert client.delete("/v1/ladders/test/games/4", headers=h).status_code == 200
    engine = sa.create_engine(settings.sqlalchemy_url)
    count = "SELECT comparisons_count FROM ladders WHERE slug = 'test'"
    with engine.connect() as conn:
        assert conn.execute(sa.text(count)).scalar() == 10 + 3 + 1
    command.downgrade(_config(settings.sqlalchemy_url), "0039")
    command.upgrade(_config(settings.sqlalchemy_url), "head")
    with engine.connect() as conn:
        assert conn.execute(sa.text(count)).scalar() == 10 + 3 + 1
    engine.dispose()
    with TestClient(create_app(settings)) as fresh:
        assert fresh.get("/v1/ladders/test/audit").json()["counts_consistent"] is True
