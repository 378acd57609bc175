"""Keys with roles, revocation, ladder settings and private ladders."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

from tests.api.helpers import game
from tests.conftest import admin, bearer, make_ladder


def test_the_key_a_ladder_is_created_with_is_its_first_admin_key(client):
    first = make_ladder(client)
    keys = client.get("/v1/ladders/test/keys", headers=bearer(first)).json()["items"]
    assert [(k["name"], k["role"], k["revoked_at"]) for k in keys] == [("created with the ladder", "admin", None)]
    assert all("key" not in k and "key_hash" not in k for k in keys)  # no secrets, not even hashed
    assert client.post("/v1/ladders/test/games", json=game("a", "b"), headers=bearer(first)).status_code == 201


def test_write_keys_post_and_admin_keys_manage(client):
    first = make_ladder(client)
    r = client.post("/v1/ladders/test/keys", json={"name": "game server", "role": "write"}, headers=bearer(first))
    assert r.status_code == 201, r.text
    created = r.json()
    assert created["role"] == "write" and created["key"].startswith("mk_")
    writer = bearer(created["key"])
    assert client.post("/v1/ladders/test/games", json=game("a", "b"), headers=writer).status_code == 201
    assert client.post("/v1/ladders/test/players", json={"key": "c"}, headers=writer).status_code == 201
    for method, path, body in [
        ("POST", "/v1/ladders/test/keys", {"name": "x", "role": "write"}),
        ("GET", "/v1/ladders/test/keys", None),
        ("PATCH", "/v1/ladders/test", {"name": "Office"}),
        ("DELETE", f"/v1/ladders/test/keys/{created['id']}", None),
    ]:
        r = client.request(method, path, json=body, headers=writer)
        assert r.status_code == 403 and r.headers["content-type"] == "application/problem+json", (method, path)
        assert "admin" in r.json()["detail"]
    # The server admin key may do everything.
    assert (
        client.post("/v1/ladders/test/keys", json={"name": "ops", "role": "admin"}, headers=admin()).status_code == 201
    )
    assert client.post("/v1/ladders/test/games", json=game("b", "a"), headers=admin()).status_code == 201


def test_a_revoked_key_is_refused_at_once(client):
    first = make_ladder(client)
    created = client.post("/v1/ladders/test/keys", json={"name": "old", "role": "write"}, headers=bearer(first)).json()
    assert client.post("/v1/ladders/test/games", json=game("a", "b"), headers=bearer(created["key"])).status_code == 201
    revoked = client.delete(f"/v1/ladders/test/keys/{created['id']}", headers=bearer(first))
    assert revoked.status_code == 200 and revoked.json()["revoked_at"] is not None
    r = client.post("/v1/ladders/test/games", json=game("a", "b"), headers=bearer(created["key"]))
    assert r.status_code == 403 and "revoked" in r.json()["detail"]
    again = client.delete(f"/v1/ladders/test/keys/{created['id']}", headers=bearer(first))
    assert again.status_code == 200 and again.json() == revoked.json()  # revoking again changes nothing
    assert client.delete("/v1/ladders/test/keys/999", headers=bearer(first)).status_code == 404
    assert client.get("/v1/ladders/test").json()["games"] == 1


def test_the_last_working_admin_key_cannot_be_revoked(client):
    r = client.post("/v1/ladders", json={"slug": "test"}, headers=admin())
    assert r.json()["admin_key"] == r.json()["write_key"]  # one admin key, under both names
    first = bearer(r.json()["admin_key"])
    (own,) = client.get("/v1/ladders/test/keys", headers=first).json()["items"]
    refused = client.delete(f"/v1/ladders/test/keys/{own['id']}", headers=first)
    assert refused.status_code == 409 and "last working admin key" in refused.json()["detail"], refused.text
    assert refused.json()["errors"] == [{"field": "key_id", "message": "the ladder's last working admin key"}]
    assert client.delete(f"/v1/ladders/test/keys/{own['id']}", headers=admin()).status_code == 409  # nobody may
    soon = (datetime.now(UTC) + timedelta(seconds=2)).isoformat()
    expiring = client.post(
        "/v1/ladders/test/keys", json={"name": "temp", "role": "admin", "expires_at": soon}, headers=first
    )
    assert expiring.status_code == 201, expiring.text
    time.sleep(2.1)  # an expired admin key does not count as a working one
    assert client.delete(f"/v1/ladders/test/keys/{own['id']}", headers=first).status_code == 409
    second = client.post("/v1/ladders/test/keys", json={"name": "ops", "role": "admin"}, headers=first).json()
    assert client.delete(f"/v1/ladders/test/keys/{own['id']}", headers=first).status_code == 200
    assert client.get("/v1/ladders/test/keys", headers=bearer(second["key"])).status_code == 200
    assert client.delete(f"/v1/ladders/test/keys/{second['id']}", headers=bearer(second["key"])).status_code == 409


def test_read_keys_read_private_ladders_and_nothing_more(client):
    first = bearer(make_ladder(client))
    client.post("/v1/ladders/test/games", json=game("a", "b"), headers=first)
    client.patch("/v1/ladders/test", json={"private": True}, headers=first)
    reader = client.post("/v1/ladders/test/keys", json={"name": "dashboard", "role": "read"}, headers=first).json()
    assert reader["role"] == "read" and reader["expires_at"] is None and reader["last_used_at"] is None
    assert client.get("/v1/ladders/test/leaderboard", headers=bearer(reader["key"])).status_code == 200
    assert client.get("/v1/ladders/test/players/a", headers=bearer(reader["key"])).status_code == 200
    r = client.post("/v1/ladders/test/games", json=game("a", "b"), headers=bearer(reader["key"]))
    assert r.status_code == 403 and r.json()["detail"].startswith("This needs a write key of the ladder; key ")
    assert client.post("/v1/ladders/test/players", json={"key": "c"}, headers=bearer(reader["key"])).status_code == 403


def test_keys_expire_and_show_when_they_were_last_used(client):
    first = bearer(make_ladder(client))
    for when in ("2020-01-01T00:00:00Z", "soon"):
        r = client.post("/v1/ladders/test/keys", json={"name": "x", "role": "write", "expires_at": when}, headers=first)
        assert r.status_code == 422 and r.json()["errors"][0]["field"] == "expires_at", r.text
    soon = (datetime.now(UTC) + timedelta(seconds=2)).isoformat()
    writer = client.post(
        "/v1/ladders/test/keys", json={"name": "w", "role": "write", "expires_at": soon}, headers=first
    )
    writer = writer.json()
    assert client.post("/v1/ladders/test/games", json=game("a", "b"), headers=bearer(writer["key"])).status_code == 201
    listed = {k["id"]: k for k in client.get("/v1/ladders/test/keys", headers=first).json()["items"]}
    used = datetime.fromisoformat(listed[writer["id"]]["last_used_at"])
    assert abs((datetime.now(UTC) - used).total_seconds()) < 30  # the post, just now
    assert listed[writer["id"]]["expires_at"] is not None
    time.sleep(2.1)
    r = client.post("/v1/ladders/test/games", json=game("a", "b"), headers=bearer(writer["key"]))
    assert r.status_code == 403 and "expired" in r.json()["detail"], r.text
    client.patch("/v1/ladders/test", json={"private": True}, headers=first)
    assert client.get("/v1/ladders/test/leaderboard", headers=bearer(writer["key"])).status_code == 403
    assert client.get("/v1/ladders/test").status_code == 401


def test_keys_of_one_ladder_do_not_open_another(client):
    first = make_ladder(client)
    make_ladder(client, "other")
    assert client.post("/v1/ladders/other/games", json=game("a", "b"), headers=bearer(first)).status_code == 403
    assert client.get("/v1/ladders/other/keys", headers=bearer(first)).status_code == 403


def test_private_ladders_need_a_key_to_read(client):
    first = make_ladder(client)
    client.post("/v1/ladders/test/games", json=game("a", "b"), headers=bearer(first))
    writer = client.post("/v1/ladders/test/keys", json={"name": "w", "role": "write"}, headers=bearer(first)).json()
    r = client.patch("/v1/ladders/test", json={"private": True, "name": "Office"}, headers=bearer(first))
    assert r.status_code == 200 and r.json()["private"] is True and r.json()["name"] == "Office"
    reads = [
        "/v1/ladders/test",
        "/v1/ladders/test/leaderboard",
        "/v1/ladders/test/predict?a=a&b=b",
        "/v1/ladders/test/players/a",
        "/v1/ladders/test/players/a/history",
        "/v1/ladders/test/games",
        "/v1/ladders/test/audit",
        "/v1/ladders/test/canonical",
    ]
    for path in reads:
        assert client.get(path).status_code == 401, path
        assert client.get(path, headers=bearer("wrong")).status_code == 403, path
        assert client.get(path, headers=bearer(writer["key"])).status_code == 200, path
        assert client.get(path, headers=admin()).status_code == 200, path
    assert [ladder["slug"] for ladder in client.get("/v1/ladders").json()["items"]] == []
    assert [ladder["slug"] for ladder in client.get("/v1/ladders", headers=admin()).json()["items"]] == ["test"]
    client.delete(f"/v1/ladders/test/keys/{writer['id']}", headers=bearer(first))
    assert client.get("/v1/ladders/test/leaderboard", headers=bearer(writer["key"])).status_code == 403
    assert client.patch("/v1/ladders/test", json={"private": False}, headers=bearer(first)).status_code == 200
    assert client.get("/v1/ladders/test/leaderboard").status_code == 200


def test_settings_changes_take_effect_and_bad_ones_are_refused(client):
    first = make_ladder(client)
    h = bearer(first)
    assert client.patch("/v1/ladders/test", json={"auto_create_players": False}, headers=h).status_code == 200
    r = client.post("/v1/ladders/test/games", json=game("new", "other"), headers=h)
    assert r.status_code == 422 and r.json()["errors"][0]["field"] == "sides[0].players[0]"
    for body, field in [
        ({"private": None}, "private"),
        ({"private": "yes"}, "private"),
        ({"k": 9}, "k"),
        ({"case_insensitive_keys": None}, "case_insensitive_keys"),
        ({"name": "x" * 201}, "name"),
    ]:
        r = client.patch("/v1/ladders/test", json=body, headers=h)
        assert r.status_code == 422 and r.json()["errors"][0]["field"] == field, (body, r.text)
    for body in [{"name": "x", "role": "owner"}, {"name": "", "role": "write"}, {"role": "write"}]:
        assert client.post("/v1/ladders/test/keys", json=body, headers=h).status_code == 422, body
    assert client.get("/v1/ladders/test").json()["auto_create_players"] is False


def test_every_route_of_a_ladder_documents_the_401_and_403_it_answers(client):
    """Each operation under /v1/ladders/{slug}, called on a private ladder without a key and with a wrong one,
    answers a status its OpenAPI entry lists."""
    key = make_ladder(client)
    client.post("/v1/ladders/test/games", json=game("a", "b"), headers=bearer(key))
    assert client.patch("/v1/ladders/test", json={"private": True}, headers=bearer(key)).status_code == 200
    values = {"slug": "test", "key": "a", "game_id": "1", "refit_id": "1", "key_id": "1", "name": "winter"}
    values |= {"webhook_id": "1", "challenge_id": "1"}
    bodies = {
        "/predict": {"sides": [{"players": ["a"]}, {"players": ["b"]}]},
        "/teams": {"players": ["a", "b"]},
        "/games": game("a", "b"),
        "/games/batch": {"games": [game("a", "b")]},
        "/players": {"key": "c"},
        "/players/{key}": {"name": "Ann"},
        "/players/{key}/merge": {"into": "b"},
        "": {"name": "Office"},
        "/keys": {"name": "w", "role": "write"},
        "/seasons": {"name": "winter"},
        ("delete", ""): {"slug": "test"},
        "/webhooks": {"url": "https://93.184.216.34/hook", "events": ["game"]},
        ("put", "/slack"): {"signing_secret": "s" * 20},
        "/challenges": {"from": "a", "to": "b"},
        "/challenges/{challenge_id}/game": {"winner": "a"},
    }
    operations = [
        (method, path, op)
        for path, ops in client.get("/openapi.json").json()["paths"].items()
        if path.startswith("/v1/ladders/{slug}")
        for method, op in ops.items()
    ]
    assert len(operations) >= 25
    for method, path, op in operations:
        if (method, path) == ("post", "/v1/ladders/{slug}/slack"):  # Slack's signature, not a key (test_slack.py)
            continue
        url = path.format(**values) + ("?a=a&b=b" if path.endswith("/predict") and method == "get" else "")
        tail = path.removeprefix("/v1/ladders/{slug}")
        body = bodies.get((method, tail), bodies.get(tail, {}))
        for headers, status in (({}, "401"), (bearer("wrong"), "403")):
            r = client.request(method.upper(), url, headers=headers, json=None if method == "get" else body)
            assert r.status_code == int(status), (method, path, r.status_code, r.text)
            assert status in op["responses"], (method, path, sorted(op["responses"]))
