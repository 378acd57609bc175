"""Names that stay put: keys matched case-insensitively, aliases after a merge or a key change, a new k."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest

from app import storage
from app.core.db import Database
from app.core.errors import LadderChanged
from tests.api.helpers import game
from tests.conftest import bearer, make_ladder

L = "/v1/ladders/test"


def post(client, h, *games) -> None:
    r = client.post(f"{L}/games/batch", json={"games": list(games)}, headers=h)
    assert r.status_code == 201, r.text


def profile(client, key: str) -> dict:
    r = client.get(f"{L}/players/{key}")
    assert r.status_code == 200, r.text
    return r.json()


def vectors(client) -> dict[str, list[float]]:
    items = client.get(f"{L}/leaderboard?limit=500&inactive=true").json()["items"]
    return {row["key"]: profile(client, row["key"])["vector"] for row in items}


def consistent(client) -> bool:
    return client.get(f"{L}/audit").json()["consistent"]


def test_a_player_a_game_creates_keeps_their_spelling_as_name_on_a_server_that_holds_the_ladder(client):
    """The page reads the ladder before it posts: the new player's row must reach this process's copy with its name."""
    h = bearer(make_ladder(client, k=1))
    post(client, h, game("Ann", "Bob"))
    assert client.get(f"{L}/leaderboard").status_code == 200  # this process now holds the ladder's players
    r = client.post(f"{L}/games", json=game("Kim", "Ann"), headers=h)
    assert r.status_code == 201, r.text
    assert profile(client, "kim")["name"] == "Kim"
    names = {row["key"]: row["name"] for row in client.get(f"{L}/leaderboard?inactive=true").json()["items"]}
    assert names == {"ann": "Ann", "bob": "Bob", "kim": "Kim"}


def test_a_new_ladder_matches_keys_case_insensitively(client):
    h = bearer(make_ladder(client, k=1))
    assert client.get(L).json()["case_insensitive_keys"] is True
    post(client, h, game("Ann", "bob"), game("ANN", "Bob"), game("ann", "cy"))
    assert profile(client, "aNN") | {"key": "ann", "name": "Ann", "games": 3} == profile(client, "aNN")
    assert client.get(f"{L}").json()["players"] == 3
    assert client.get(f"{L}/predict?a=ANN&b=BOB").json()["probability"] > 0.5
    # Two spellings of one player in one game: a 422 naming the second.
    r = client.post(f"{L}/games", json=game("Ann", "ann"), headers=h)
    assert r.status_code == 422 and r.json()["errors"][0]["field"] == "sides[1].players[0]", r.text
    r = client.post(f"{L}/predict", json={"sides": [{"players": ["cy"]}, {"players": ["CY"]}]})
    assert r.status_code == 422, r.text
    assert [item["opponents"] for item in client.get(f"{L}/players/Cy/history").json()["items"]] == [["ann"]]
    assert client.post(f"{L}/players", json={"key": "BOB"}, headers=h).status_code == 409
    assert client.post(f"{L}/players", json={"key": "Dee"}, headers=h).json()["key"] == "dee"


def test_an_exact_ladder_folds_its_keys_only_when_none_clash(client):
    h = bearer(make_ladder(client, k=1, case_insensitive_keys=False))
    post(client, h, game("Ann", "bob"), game("ann", "Bob"), game("Cy", "ann"))
    assert client.get(L).json()["players"] == 5
    r = client.patch(L, json={"case_insensitive_keys": True}, headers=h)
    assert r.status_code == 409, r.text
    assert "'Ann' and 'ann'" in r.json()["detail"] and "'Bob' and 'bob'" in r.json()["detail"]
    for source, into in (("Ann", "ann"), ("Bob", "bob")):
        r = client.post(f"{L}/players/{source}/merge", json={"into": into}, headers=h)
        assert r.status_code == 200 and r.json()["aliases"] == [source], r.text
    before = vectors(client)
    assert client.patch(L, json={"case_insensitive_keys": True}, headers=h).status_code == 200
    assert sorted(vectors(client)) == ["ann", "bob", "cy"]
    assert profile(client, "CY")["name"] == "Cy"  # the old spelling, as the name it did not have
    assert profile(client, "cy")["vector"] == before["Cy"]  # a key change moves no rating
    assert profile(client, "ann")["aliases"] == []  # the alias 'Ann' folded is the key itself: no longer needed
    assert consistent(client)


def test_a_merged_key_leads_to_the_survivor(client):
    h = bearer(make_ladder(client, k=1))
    post(client, h, game("bobby", "ann"), game("bob", "cy"))
    merged = client.post(f"{L}/players/bobby/merge", json={"into": "bob"}, headers=h).json()
    assert merged["aliases"] == ["bobby"] and merged["games"] == 2
    r = client.post(f"{L}/games", json=game("Bobby", "cy"), headers=h)  # the alias, in another spelling
    assert r.status_code == 201 and r.json()["sides"][0]["players"][0]["key"] == "bob", r.text
    assert client.get(L).json()["players"] == 3  # bobby did not come back
    assert profile(client, "bobby") | {"key": "bob", "games": 3} == profile(client, "bobby")
    assert client.get(f"{L}/predict?a=bobby&b=ann").status_code == 200
    r = client.post(f"{L}/players", json={"key": "bobby"}, headers=h)
    assert r.status_code == 409 and "alias" in r.json()["detail"], r.text
    # Merged on: the alias follows.
    assert client.post(f"{L}/players/bob/merge", json={"into": "cy"}, headers=h).status_code == 409  # played
    post(client, h, game("dee", "ann"))
    assert client.post(f"{L}/players/bob/merge", json={"into": "dee"}, headers=h).json()["aliases"] == [
        "bob",
        "bobby",
    ]
    assert profile(client, "bobby")["key"] == "dee" and consistent(client)


def test_a_key_change_keeps_the_old_key_as_an_alias(client):
    h = bearer(make_ladder(client, k=1))
    post(client, h, game("ann", "bob"), game("bob", "cy"), game("cy", "ann"))
    vector = profile(client, "ann")["vector"]
    r = client.patch(f"{L}/players/ann", json={"key": "Anna"}, headers=h)
    assert r.status_code == 200 and r.json()["key"] == "anna" and r.json()["aliases"] == ["ann"], r.text
    assert r.json()["vector"] == vector
    assert len(client.get(f"{L}/players/ann/history").json()["items"]) == 2
    players = [[p["key"] for s in g["sides"] for p in s["players"]] for g in client.get(f"{L}/games").json()["items"]]
    assert "ann" not in itertools.chain(*players) and "anna" in itertools.chain(*players)
    assert client.patch(f"{L}/players/anna", json={"key": "bob"}, headers=h).status_code == 409  # a player's key
    post(client, h, game("dee", "bob"))
    client.post(f"{L}/players/dee/merge", json={"into": "cy"}, headers=h)
    assert client.patch(f"{L}/players/anna", json={"key": "dee"}, headers=h).status_code == 409  # cy's alias
    back = client.patch(f"{L}/players/anna", json={"key": "ann"}, headers=h).json()  # its own alias: a swap
    assert back["key"] == "ann" and back["aliases"] == ["anna"]
    assert client.patch(f"{L}/players/ann", json={"key": None}, headers=h).status_code == 422
    assert consistent(client)


def test_a_write_key_cannot_change_a_key(client):
    created = client.post(f"{L}/keys", json={"name": "w", "role": "write"}, headers=bearer(make_ladder(client, k=1)))
    h = bearer(created.json()["key"])
    post(client, h, game("ann", "bob"))
    assert client.patch(f"{L}/players/ann", json={"key": "x"}, headers=h).status_code == 403
    assert client.patch(f"{L}/players/ann", json={"name": "Ann"}, headers=h).status_code == 200


def test_an_erased_players_aliases_are_forgotten(client):
    h = bearer(make_ladder(client, k=1))
    post(client, h, game("ann", "bob"))
    client.patch(f"{L}/players/ann", json={"key": "anna"}, headers=h)
    pseudonym = client.delete(f"{L}/players/ann", headers=h).json()["key"]  # by its alias
    assert profile(client, pseudonym)["aliases"] == []
    assert client.get(f"{L}/players/ann").status_code == 404 and client.get(f"{L}/players/anna").status_code == 404


def test_export_and_restore_keep_aliases_and_how_keys_match(client, cli, tmp_path, capsys):
    h = bearer(make_ladder(client, k=2, case_insensitive_keys=False))
    post(client, h, *[game(a, b) for a, b in itertools.permutations(["Ann", "bob", "cy"], 2)], game("dee", "bob"))
    assert client.post(f"{L}/players/dee/merge", json={"into": "cy"}, headers=h).status_code == 200
    assert client.patch(f"{L}/players/bob", json={"key": "Bob"}, headers=h).status_code == 200
    path = tmp_path / "test.ndjson"
    path.write_bytes(client.get(f"{L}/export").content)
    before = vectors(client)
    cli(["import", "copy", str(path)])
    assert json.loads(capsys.readouterr().out)["case_insensitive_keys"] is False
    copy = "/v1/ladders/copy"
    for key, vector in before.items():
        assert client.get(f"{copy}/players/{key}").json()["vector"] == vector, key
    assert client.get(f"{copy}/players/bob").json()["key"] == "Bob"
    assert client.get(f"{copy}/players/dee").json()["aliases"] == ["dee"]
    assert client.get(f"{copy}/players/Bob").json()["aliases"] == ["bob"]
    assert client.get(f"{copy}/players/ann").status_code == 404  # exact matching came along
    assert client.get(f"{copy}/audit").json()["consistent"]


def test_a_new_k_replays_the_log_exactly(client):
    """k = 1 -> 2 gives the ratings of a ladder that always had k = 2 (the seeded initial vectors of a k = 2 ladder
    begin with those of a k = 1 one), and back to 1 those it had; a voided game and an applied refit too."""
    rng = np.random.default_rng(3)
    names = [f"p{i}" for i in range(8)]
    games = [game(*rng.choice(names, size=2, replace=False).tolist()) for _ in range(60)]
    for slug, k in (("test", 1), ("twin", 2)):
        h = bearer(make_ladder(client, slug=slug, k=k, seed=7))
        r = client.post(f"/v1/ladders/{slug}/games/batch", json={"games": games}, headers=h)
        assert r.status_code == 201
        assert client.delete(f"/v1/ladders/{slug}/games/5", headers=h).status_code == 200
        if slug == "test":
            h_test = h
    before = vectors(client)
    r = client.patch(L, json={"k": 2}, headers=h_test)
    assert r.status_code == 200 and r.json()["k"] == 2 and len(r.json()["init_offset"]) == 4, r.text
    for key in names:
        assert profile(client, key)["vector"] == client.get(f"/v1/ladders/twin/players/{key}").json()["vector"]
    assert consistent(client)
    assert client.get(f"{L}/games/5").json()["voided_at"] is not None
    assert all(len(item["before"]) == 4 for item in client.get(f"{L}/players/p1/history?limit=100").json()["items"])
    assert client.patch(L, json={"k": 1}, headers=h_test).status_code == 200
    assert vectors(client) == before and consistent(client)
    assert client.patch(L, json={"k": 9}, headers=h_test).status_code == 422
    assert client.patch(L, json={"k": None}, headers=h_test).status_code == 422


def test_aliases_are_looked_up_a_chunk_of_keys_at_a_time(client, settings, monkeypatch):
    """A bulk import creating 100,000 players checks them all: in chunks, within the drivers' parameter limits."""
    h = bearer(make_ladder(client, k=1))
    post(client, h, game("bobby", "ann"), game("bob", "cy"))
    client.post(f"{L}/players/bobby/merge", json={"into": "bob"}, headers=h)
    monkeypatch.setattr(storage.aliases, "CHUNK", 2)
    db = Database.from_settings(settings)
    try:
        with db.reading() as session:
            ladder_id = storage.ladders.by_slug(session, "test").id
            assert storage.aliases.find(session, ladder_id, ["x", "y", "z", "bobby", "w"]) == {"bobby": "bob"}
    finally:
        db.dispose()


def test_folding_drops_aliases_that_become_keys_or_repeat_one(client, cli, tmp_path, capsys):
    h = bearer(make_ladder(client, k=1, case_insensitive_keys=False))
    post(client, h, game("Ann", "cy"), game("ann", "dee"), game("bob", "cy"), game("Bob", "dee"), game("BOB", "eve"))
    client.post(f"{L}/players/ann/merge", json={"into": "Ann"}, headers=h)  # as the 409 below would advise
    for source in ("Bob", "BOB"):  # two aliases of bob that fold into one
        assert client.post(f"{L}/players/{source}/merge", json={"into": "bob"}, headers=h).status_code == 200
    client.patch(f"{L}/players/bob", json={"key": "rob"}, headers=h)  # bob itself becomes an alias: Bob, BOB, bob
    assert client.patch(L, json={"case_insensitive_keys": True}, headers=h).status_code == 200
    assert profile(client, "ANN")["aliases"] == [] and profile(client, "BoB")["aliases"] == ["bob"]
    path = tmp_path / "test.ndjson"
    path.write_bytes(client.get(f"{L}/export").content)
    cli(["import", "copy", str(path)])  # the export restores: no alias repeats a key
    assert json.loads(capsys.readouterr().out)["players"] == 5
    assert consistent(client)


def test_erasing_scrubs_responses_recorded_under_a_former_key(client):
    h = bearer(make_ladder(client, k=1))
    once = h | {"Idempotency-Key": "g1"}
    assert client.post(f"{L}/games", json=game("carol.smith", "bob"), headers=once).status_code == 201
    client.patch(f"{L}/players/carol.smith", json={"key": "carol"}, headers=h)
    client.delete(f"{L}/players/carol", headers=h)
    assert "carol" not in client.post(f"{L}/games", json=game("carol.smith", "bob"), headers=once).text


def test_a_write_that_read_the_ladder_before_a_change_of_k_is_retried(client, settings):
    """What a game commit racing a PATCH of k (PostgreSQL) runs into: vectors of another length, and a ladder
    whose k changed; both are a LadderChanged, which the writer retries with the ladder as it is."""
    h = bearer(make_ladder(client, k=1))
    post(client, h, game("ann", "bob"))
    db = Database.from_settings(settings)
    try:
        with db.reading() as session:
            stale = storage.ladders.by_slug(session, "test")
        assert client.patch(L, json={"k": 2}, headers=h).status_code == 200
        with db.writing() as session:
            with pytest.raises(LadderChanged):
                storage.players.lock(session, stale.id, 2 * stale.k, ["ann"], None)
            with pytest.raises(LadderChanged):
                storage.ladders.take_seqs(session, stale, 1)
            session.rollback()
    finally:
        db.dispose()
    post(client, h, game("ann", "bob"))
    assert len(profile(client, "ann")["vector"]) == 4 and consistent(client)
