"""GET …/predict's fast path (app.predictions.fast_path) answers its plain case exactly as the route does, and leaves
every other case to the route."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from app.domain.access import ladder_for_read
from app.main import create_app
from app.predictions.fast_path import FastPredictions
from tests.api.helpers import game, route_refuses, without
from tests.conftest import admin, bearer, make_ladder

L = "/v1/ladders/test"
#: Requests the fast path answers.
PLAIN = [
    "?a=ann&b=bob",
    "?b=bob&a=ann",
    "?a=bob&b=ann",
    "?a=ann&b=ann",
    "?a=ANN&b=Bob",  # keys matched case-insensitively
    "?a=bobby&b=cy",  # an alias after a merge
    "?a=d%C3%A9d%C3%A9&b=cy",
]
#: Requests it leaves to the route (which answers each as documented).
OTHERS = [
    "?a=ann&b=nobody",
    "?a=ann",
    "?a=ann&b=bob&a_seat=home",
    "?a=ann&b=bob&extra=1",  # a 422
    "?a=ann&a=bob&b=cy",
    "?a=ann&b=",
    "?a=ann&b=has%20%20two%20spaces",
    "?a=ann&b=a%00b",
    "?a=" + "x" * 129 + "&b=ann",
    "?a=ann&b=ANN ",
]


@pytest.fixture
def clients(client, settings) -> Iterator[tuple[TestClient, TestClient, TestClient]]:
    """The app (fast path and route), the route alone, and the fast path alone, over one database."""
    with (
        TestClient(without(create_app(settings), FastPredictions)) as route_only,
        TestClient(route_refuses(create_app(settings))) as fast_only,
    ):
        yield client, route_only, fast_only


def _known(client: TestClient) -> None:
    """The ladder read by the process of ``client``, as its first read of it would."""
    with client.app.state.db.reading() as session:
        ladder_for_read(session, "test", fresh=True)


def _seed(client) -> dict[str, str]:
    h = bearer(make_ladder(client, k=2))
    games = [game("ann", "bob"), game("bob", "cy"), game("cy", "ann"), game("bobby", "ann"), game("dédé", "cy")]
    assert client.post(f"{L}/games/batch", json={"games": games}, headers=h).status_code == 201
    assert client.post(f"{L}/players/bobby/merge", json={"into": "bob"}, headers=h).status_code == 200
    return h


def _same(one, other) -> None:
    assert (one.status_code, one.content) == (other.status_code, other.content)
    drop = {"date"}
    assert {k: v for k, v in one.headers.items() if k not in drop} == {
        k: v for k, v in other.headers.items() if k not in drop
    }


def test_the_hot_path_answers_as_the_route_does(clients):
    app, route_only, fast_only = clients
    _seed(app)
    for c in (app, route_only, fast_only):  # each process reads the ladder once
        _known(c)
    for query in PLAIN:
        answer = app.get(f"{L}/predict{query}")
        assert answer.status_code == 200, (query, answer.text)
        _same(answer, route_only.get(f"{L}/predict{query}"))
        _same(answer, fast_only.get(f"{L}/predict{query}"))  # answered without the route
    for query in OTHERS:
        answer = app.get(f"{L}/predict{query}")
        _same(answer, route_only.get(f"{L}/predict{query}"))
        assert fast_only.get(f"{L}/predict{query}").status_code in (422, 503)  # left to the route


def test_a_private_or_deleted_ladder_is_left_to_the_route(clients):
    app, route_only, fast_only = clients
    _seed(app)
    plain = f"{L}/predict?a=ann&b=bob"
    assert fast_only.get(plain).status_code == 503  # a ladder this process has not read yet
    _known(fast_only)
    assert fast_only.get(plain).status_code == 200
    assert app.patch(L, json={"private": True}, headers=admin()).status_code == 200
    assert fast_only.get(plain).status_code == 503
    assert app.get(plain).status_code == 401
    _same(app.get(plain, headers=admin()), route_only.get(plain, headers=admin()))
    assert app.request("DELETE", L, json={"slug": "test"}, headers=admin()).status_code == 200
    assert fast_only.get(plain).status_code == 503
    _same(app.get(plain), route_only.get(plain))
    assert app.get(plain).status_code == 404


def test_a_game_is_seen_by_the_next_hot_prediction(clients):
    app, route_only, fast_only = clients
    h = _seed(app)
    _known(fast_only)
    plain = f"{L}/predict?a=ann&b=cy"
    before = fast_only.get(plain).json()
    assert app.post(f"{L}/games", json=game("ann", "cy"), headers=h).status_code == 201
    after = fast_only.get(plain)
    assert after.json()["ladder_version"] > before["ladder_version"]
    assert after.json()["probability"] > before["probability"]
    _same(after, route_only.get(plain))
