"""What an office-ladder admin relies on: who is listed and suggested, what a change shows, a server that says
what is wrong with its key or its database."""

from __future__ import annotations

import itertools
import logging

import psycopg
import pytest
from fastapi.testclient import TestClient

from app.core.config import Settings
from app.core.migrate import head, upgrade
from app.main import create_app
from tests.api.helpers import game, wait
from tests.conftest import bearer, make_ladder

_names = itertools.count()


def listed(client) -> list[str]:
    return [row["key"] for row in client.get("/v1/ladders/test/leaderboard").json()["items"]]


def test_inactive_players_are_not_suggested_and_come_back_when_they_play(client):
    h = bearer(make_ladder(client, k=1))
    games = [game(a, b) for a, b in itertools.permutations(["ann", "bob", "cy", "dee"], 2)]
    assert client.post("/v1/ladders/test/games/batch", json={"games": games}, headers=h).status_code == 201
    assert client.patch("/v1/ladders/test/players/bob", json={"active": False}, headers=h).status_code == 200
    for purpose in ("balanced", "comparable"):
        suggested = client.get(f"/v1/ladders/test/players/ann/opponents?purpose={purpose}&limit=10").json()["items"]
        assert {row["key"] for row in suggested} == {"cy", "dee"}, purpose
    assert "bob" not in listed(client)
    assert client.post("/v1/ladders/test/games", json=game("bob", "ann"), headers=h).status_code == 201
    assert client.get("/v1/ladders/test/players/bob").json()["active"] is True  # playing makes them active again
    assert "bob" in listed(client)


def test_an_erased_player_leaves_the_leaderboard(client):
    h = bearer(make_ladder(client, k=1))
    client.post("/v1/ladders/test/games/batch", json={"games": [game("ann", "bob"), game("bob", "cy")]}, headers=h)
    pseudonym = client.delete("/v1/ladders/test/players/bob", headers=h).json()["key"]
    assert sorted(listed(client)) == ["ann", "cy"]
    everyone = client.get("/v1/ladders/test/leaderboard?inactive=true").json()["items"]
    assert pseudonym in {row["key"] for row in everyone}  # still part of the field, listed only among the inactive
    assert client.get("/v1/ladders/test/audit").json()["consistent"]


def test_a_change_that_rounds_to_nothing_is_zero(client):
    """Players who did not play since, in a field that did not move: no ±1e-14 of floating-point noise."""
    h = bearer(make_ladder(client, k=1, eta=0.0, rate_rule="steps"))
    client.post("/v1/ladders/test/games/batch", json={"games": [game("ann", "bob"), game("cy", "dee")]}, headers=h)
    for row in client.get("/v1/ladders/test/leaderboard").json()["items"]:
        assert row["change_since_last_game"] == 0.0 and str(row["change_since_last_game"]) == "0.0", row


@pytest.mark.parametrize("key", ["change-me-to-a-long-random-key", "short-key", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"])
def test_a_weak_admin_key_is_warned_about_and_refused_in_production(settings, key, caplog):
    with (
        caplog.at_level(logging.WARNING, logger="melo"),
        TestClient(create_app(settings.model_copy(update={"admin_key": key}))),
    ):
        pass
    assert any("MELO_ADMIN_KEY is weak" in r.getMessage() for r in caplog.records)
    production = settings.model_copy(update={"admin_key": key, "env": "production"})
    with pytest.raises(RuntimeError, match="MELO_ENV=production refuses to start"), TestClient(create_app(production)):
        pass
    strong = settings.model_copy(update={"admin_key": "k" + "Qx7_pL2vR9" * 3, "env": "production"})
    with TestClient(create_app(strong)) as client:
        assert client.get("/readyz").status_code == 200


def test_a_server_on_an_unmigrated_database_refuses_to_start_naming_melo_migrate(tmp_path, postgres):
    for url in (f"sqlite:///{tmp_path / 'empty.db'}", postgres.create_database(f"unmigrated_{next(_names)}")):
        settings = Settings(database_url=url, migrate_on_start=False)
        refused = r"without the service's tables.*run `melo migrate`"
        with pytest.raises(RuntimeError, match=refused), TestClient(create_app(settings)):
            pass
        upgrade(settings.sqlalchemy_url)
        with TestClient(create_app(settings)) as client:
            assert client.get("/readyz").json() == {"status": "ready"}


def test_readiness_reports_a_schema_to_migrate_when_the_database_was_down_at_start(postgres):
    """A database that did not exist when the server started: not ready (cannot be reached), then created empty
    (not ready: run `melo migrate`), then migrated (ready)."""
    name = f"later_{next(_names)}"
    settings = Settings(database_url=postgres.url(name), migrate_on_start=False, connect_timeout=2)
    with TestClient(create_app(settings)) as client:
        r = client.get("/readyz")
        assert r.status_code == 503 and "cannot be reached" in r.json()["detail"], r.text
        with psycopg.connect(postgres.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        r = client.get("/readyz")
        assert r.status_code == 503 and "run `melo migrate`" in r.json()["detail"] and head() in r.json()["detail"]
        upgrade(settings.sqlalchemy_url)
        assert client.get("/readyz").status_code == 200


def test_the_database_password_may_hold_any_character(postgres):
    """MELO_DATABASE_PASSWORD is encoded into the URL: `p@ss/word#1` is a password, not a host `ss`."""
    name = f"password_{next(_names)}"
    url = postgres.create_database(name)
    with psycopg.connect(postgres.url(), autocommit=True) as conn:
        conn.execute("CREATE ROLE odd LOGIN PASSWORD 'p@ss/word#1'")
    try:
        odd = url.replace("postgres@", "odd@")
        settings = Settings(database_url=odd, database_password="p@ss/word#1", migrate_on_start=False)
        assert "odd:p%40ss%2Fword%231@127.0.0.1" in settings.sqlalchemy_url
        with psycopg.connect(settings.sqlalchemy_url.replace("+psycopg", "")) as conn:
            assert conn.execute("SELECT current_user").fetchone() == ("odd",)
    finally:
        with psycopg.connect(postgres.url(), autocommit=True) as conn:
            conn.execute("DROP ROLE odd")


def test_a_games_id_is_its_number_within_its_ladder_everywhere(client):
    """Ids are numbers within each ladder (1, 2, 3, …), whatever other ladders do: in answers, URLs, histories,
    lists, refits, checkpoints and the audit."""
    office, other = bearer(make_ladder(client, "test", k=1)), bearer(make_ladder(client, "other", k=1))
    numbers = []
    for n in range(6):
        client.post("/v1/ladders/other/games", json=game("x", "y"), headers=other)  # global ids move on elsewhere
        posted = client.post(
            "/v1/ladders/test/games", json=game(*(("ann", "bob") if n % 2 else ("bob", "ann"))), headers=office
        )
        numbers.append(posted.json()["id"])
    assert numbers == [1, 2, 3, 4, 5, 6]
    assert client.get("/v1/ladders/test/games/4").json()["sides"][0]["players"][0]["key"] == "ann"
    assert [g["id"] for g in client.get("/v1/ladders/test/games?limit=4").json()["items"]] == [6, 5, 4, 3]
    page = client.get("/v1/ladders/test/games?limit=4").json()
    assert [
        g["id"] for g in client.get(f"/v1/ladders/test/games?limit=4&cursor={page['next_cursor']}").json()["items"]
    ] == [2, 1]
    voided = client.request("DELETE", "/v1/ladders/test/games/4", json={"reason": "wrong winner"}, headers=office)
    assert voided.status_code == 200 and voided.json()["id"] == 4 and voided.json()["voided_at"] is not None
    assert client.get("/v1/ladders/test/games/7").status_code == 404
    history = client.get("/v1/ladders/test/players/ann/history").json()["items"]
    assert [item["game_id"] for item in history] == [6, 5, 3, 2, 1]  # the voided one counts nowhere
    location = client.post("/v1/ladders/test/refits", json={"restarts": 1}, headers=office).headers["location"]
    state = wait(client, location)
    assert state["after_game"] == 6, state
    applied = client.post(f"{location}/apply", headers=office).json()
    assert applied["after_game"] == 6
    assert client.get("/v1/ladders/test/audit").json()["checkpoint_after_game"] == 6


def test_deleting_a_ladder_takes_everything_in_it_and_frees_its_slug(client, settings):
    office = bearer(make_ladder(client, k=1))
    client.post("/v1/ladders/test/games/batch", json={"games": [game("ann", "bob"), game("bob", "cy")]}, headers=office)
    writer = client.post("/v1/ladders/test/keys", json={"name": "w", "role": "write"}, headers=office).json()
    assert client.get("/v1/ladders/test/leaderboard").status_code == 200  # this process now remembers the ladder
    with TestClient(create_app(settings)) as other:  # another worker, which remembers the ladder too
        assert other.post("/v1/ladders/test/games", json=game("cy", "ann"), headers=office).status_code == 201
        assert client.request("DELETE", "/v1/ladders/test", headers=office).status_code == 422  # no confirmation
        wrong = client.request("DELETE", "/v1/ladders/test", json={"slug": "tset"}, headers=office)
        assert wrong.status_code == 422 and wrong.json()["errors"][0]["field"] == "slug", wrong.text
        by_writer = client.request("DELETE", "/v1/ladders/test", json={"slug": "test"}, headers=bearer(writer["key"]))
        assert by_writer.status_code == 403
        assert client.request("DELETE", "/v1/ladders/test", json={"slug": "test"}).status_code == 401
        deleted = client.request("DELETE", "/v1/ladders/test", json={"slug": "test"}, headers=office)
        assert deleted.status_code == 200 and deleted.json() == {"slug": "test", "players": 3, "games": 3}
        for path in ("/v1/ladders/test", "/v1/ladders/test/leaderboard", "/v1/ladders/test/players/ann"):
            assert client.get(path).status_code == 404, path
        assert client.post("/v1/ladders/test/games", json=game("ann", "bob"), headers=office).status_code == 404
        again = bearer(make_ladder(client, k=1))  # the slug is free: a new, empty ladder
        assert (
            client.get("/v1/ladders/test").json()["games"] == 0
            and client.get("/v1/ladders/test/leaderboard").json()["items"] == []
        )
        assert client.post("/v1/ladders/test/games", json=game("ann", "bob"), headers=office).status_code == 403
        assert client.post("/v1/ladders/test/games", json=game("ann", "bob"), headers=again).json()["id"] == 1
        # The other worker finds the new ladder by its slug, not the deleted one it remembered.
        assert other.post("/v1/ladders/test/games", json=game("bob", "ann"), headers=again).json()["id"] == 2
        assert other.post("/v1/ladders/test/games", json=game("bob", "ann"), headers=office).status_code == 403


def test_a_new_learning_rate_replays_the_log_exactly(client, settings):
    """PATCH eta and eta_tau: the ratings become those of a ladder that always had them, bit for bit (another
    worker's copy too), and /audit agrees."""
    games = [game(a, b) for a, b in itertools.permutations(["ann", "bob", "cy", "dee"], 2)] * 3
    office = bearer(make_ladder(client, "test", k=2, seed=7, eta=0.7, eta_tau=3.0))
    clean = bearer(make_ladder(client, "clean", k=2, seed=7, eta=0.2, eta_tau=None))
    for slug, h in (("test", office), ("clean", clean)):
        assert client.post(f"/v1/ladders/{slug}/games/batch", json={"games": games}, headers=h).status_code == 201
    with TestClient(create_app(settings)) as other:  # a second worker, with its own copy of the ladder
        assert other.get("/v1/ladders/test/leaderboard?by=conservative").status_code == 200
        bad = client.patch("/v1/ladders/test", json={"eta": -1}, headers=office)
        assert bad.status_code == 422 and bad.json()["errors"][0]["field"] == "eta"
        changed = client.patch("/v1/ladders/test", json={"eta": 0.2, "eta_tau": None}, headers=office)
        assert changed.status_code == 200 and (changed.json()["eta"], changed.json()["eta_tau"]) == (0.2, None)

        def board(c, slug):
            rows = c.get(f"/v1/ladders/{slug}/leaderboard?by=conservative").json()["items"]
            return [{k: row[k] for k in ("key", "elo", "strength_se", "conservative", "games")} for row in rows]

        assert board(client, "test") == board(client, "clean") == board(other, "test")
        for key in ("ann", "dee"):
            ours = client.get(f"/v1/ladders/test/players/{key}").json()["vector"]
            assert ours == client.get(f"/v1/ladders/clean/players/{key}").json()["vector"]
        for slug in ("test", "clean"):  # every game's vectors and expected scores, rewritten (not when it was played)
            items = client.get(f"/v1/ladders/{slug}/players/ann/history?limit=100").json()["items"]
            history = [{k: v for k, v in item.items() if k != "played_at"} for item in items]
            if slug == "test":
                ours = history
        assert ours == history
        audit = client.get("/v1/ladders/test/audit").json()
        assert audit["consistent"] and audit["replayed_games"] == len(games)
