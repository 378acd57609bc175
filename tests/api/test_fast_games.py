"""POST …/games's fast path (app.games.fast_path) answers its plain case exactly as the route does, its problems
included, and leaves every other case to the route."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from app.games.fast_path import FastGames
from app.main import create_app
from tests.api.helpers import game, route_refuses, without
from tests.conftest import admin, bearer, fresh_database, make_ladder

L = "/v1/ladders/test"


@pytest.fixture
def apps(request, settings, tmp_path) -> Iterator[tuple[TestClient, TestClient]]:
    """The app (fast path and route) and the route alone, each over a fresh database of the same kind."""
    kind = "sqlite" if settings.database_url.startswith("sqlite") else "postgresql"
    (tmp_path / "route").mkdir()
    other = settings.model_copy(update={"database_url": fresh_database(request, tmp_path / "route", kind)})
    with TestClient(create_app(settings)) as fast, TestClient(without(create_app(other), FastGames)) as route:
        yield fast, route


def _same(one, other) -> None:
    mine, theirs = one.json(), other.json()
    if isinstance(mine, dict):  # the clock of each database's commit
        mine.pop("played_at", None), theirs.pop("played_at", None)
    assert (one.status_code, mine) == (other.status_code, theirs)
    drop = {"date", "content-length"}
    assert {k: v for k, v in one.headers.items() if k not in drop} == {
        k: v for k, v in other.headers.items() if k not in drop
    }


def test_posts_are_answered_as_the_route_answers_them(apps):
    fast, route = apps
    keys = [make_ladder(c) for c in (fast, route)]
    readers = [c.post(f"{L}/keys", json={"name": "board", "role": "read"}, headers=admin()).json()["key"] for c in apps]
    bodies = [
        json.dumps(game("ann", "bob")),
        json.dumps(game("bob", "cy") | {"external_id": "m-1"}),
        json.dumps(game("bob", "cy") | {"external_id": "m-1"}),  # a retry by its external id
        json.dumps({"sides": [{"players": ["cy"], "rank": 1}, {"players": ["ann"], "rank": 1}]}),  # a draw
        json.dumps({"sides": [{"players": ["ann"], "rank": 1}, {"players": ["ANN"], "rank": 2}]}),  # a 422
        json.dumps(game("ann", "nobody!")),  # an invalid key: the route's 422
        '{"sides": [',  # not JSON
        "[" * 5000 + "]" * 5000,  # nested past the parser's depth
        json.dumps(game("dan", "eve")) + "  ",
    ]
    for body in bodies:
        for headers in (
            {"Content-Type": "application/json"},
            {"Content-Type": "application/json", "Idempotency-Key": "k1"},
            {"Content-Type": "application/json; charset=utf-8", "Idempotency-Key": "k1"},  # 409: another body
            {"Content-Type": "text/plain"},
            {},
        ):
            answers = [
                c.post(f"{L}/games", content=body, headers=headers | bearer(key))
                for c, key in zip(apps, keys, strict=True)
            ]
            _same(*answers)
    # What the fast path raises is answered by the app's handlers, as the route's problems are.
    for path, who in (
        (f"{L}/games", lambda n: {}),  # no key: 401
        (f"{L}/games", lambda n: bearer("wrong")),  # 401
        (f"{L}/games", lambda n: bearer(readers[n])),  # a read key: 403
        ("/v1/ladders/none/games", lambda n: bearer(keys[n])),  # 404
        (f"{L}/games?x=1", lambda n: bearer(keys[n])),  # an unknown parameter: 422
    ):
        answers = [c.post(path, json=game("ann", "bob"), headers=who(n)) for n, c in enumerate(apps)]
        _same(*answers)
        assert answers[0].status_code in (401, 403, 404, 422), answers[0].text
        assert answers[0].headers["content-type"] == "application/problem+json"
    two_keys = [("Idempotency-Key", "a"), ("Idempotency-Key", "b"), ("Authorization", f"Bearer {keys[0]}")]
    answer = fast.post(f"{L}/games", json=game("ann", "bob"), headers=two_keys)
    assert answer.status_code == 422 and "Idempotency-Key" in answer.text
    assert fast.get(f"{L}/audit").json()["consistent"]


def test_the_plain_case_is_the_fast_paths_and_the_rest_the_routes(client, settings):
    key = bearer(make_ladder(client))
    with TestClient(route_refuses(create_app(settings))) as fast_only:
        plain = fast_only.post(f"{L}/games", json=game("ann", "bob"), headers=key | {"Idempotency-Key": "x" * 200})
        assert plain.status_code == 201, plain.text
        assert int(plain.headers["Ladder-Version"]) >= 1
        retried = fast_only.post(f"{L}/games", json=game("ann", "bob"), headers=key | {"Idempotency-Key": "x" * 200})
        assert retried.status_code == 201 and retried.headers["Idempotent-Replayed"] == "true"
        assert retried.json() == plain.json()
        assert fast_only.post("/v1/ladders/none/games", json=game("a", "b"), headers=key).status_code == 404
        for others in (
            {"content": "{", "headers": key | {"Content-Type": "application/json"}},
            {"json": game("ann", "bob")},  # no key
            {"json": game("ann", "bob"), "headers": {"Authorization": "Basic abc"}},
            {"json": game("ann", "bob"), "headers": key | {"Idempotency-Key": "x" * 201}},
            {"json": game("ann", "bob"), "headers": key | {"Idempotency-Key": "é".encode("latin-1")}},
            {"json": game("ann", "bob"), "headers": key, "params": {"limit": 1}},
            {"content": json.dumps(game("ann", "bob")), "headers": key | {"Content-Type": "text/plain"}},
            {"json": {"sides": []}, "headers": key},
        ):
            # Left to the route: it refuses it (503), or its body first (422).
            assert fast_only.post(f"{L}/games", **others).status_code in (422, 503), others
