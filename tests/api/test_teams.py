"""Fair teams and match quality through the API."""

from __future__ import annotations

import math

import pytest

from tests.conftest import bearer, make_ladder


def players_on_the_elo_manifold(client, ratings: dict[str, float]) -> str:
    """A k = 1 ladder whose players sit at c = (r, 1): P(i beats j) = σ(r_i - r_j)."""
    key = make_ladder(client, k=1)
    for name, r in ratings.items():
        body = {"key": name, "vector": [r, 1.0]}
        assert client.post("/v1/ladders/test/players", json=body, headers=bearer(key)).status_code == 201
    return key


def test_fair_teams_for_doubles_and_three_teams(client):
    players_on_the_elo_manifold(client, {"ann": 4.0, "bob": 3.0, "cy": 2.0, "dee": 1.0, "eve": 0.0, "fay": 2.5})
    r = client.post("/v1/ladders/test/teams", json={"players": ["ann", "bob", "cy", "dee"], "teams": 2})
    assert r.status_code == 200, r.text
    out = r.json()
    assert sorted(map(sorted, out["teams"])) == [["ann", "dee"], ["bob", "cy"]]
    assert out["win_probabilities"] == pytest.approx([0.5, 0.5]) and out["match_quality"] == pytest.approx(1.0)
    assert out["exact"] and out["matrix"][0][1] == pytest.approx(0.5)
    six = ["ann", "bob", "cy", "dee", "eve", "fay"]
    out = client.post("/v1/ladders/test/teams", json={"players": six, "teams": 3}).json()
    assert sorted(map(len, out["teams"])) == [2, 2, 2] and sum(out["expected_scores"]) == pytest.approx(1.0)
    out = client.post("/v1/ladders/test/teams", json={"players": six, "teams": 2, "sizes": [4, 2]}).json()
    assert sorted(map(len, out["teams"])) == [2, 4]
    # The chosen split is as even as the match endpoint says it is.
    sides = [{"players": team} for team in out["teams"]]
    check = client.post("/v1/ladders/test/predict", json={"sides": sides}).json()
    assert check["match_quality"] == pytest.approx(out["match_quality"])
    assert check["matrix"][0] == pytest.approx(out["matrix"][0]) and check["matrix"][1] == pytest.approx(
        out["matrix"][1]
    )


def test_match_quality_in_predictions(client):
    players_on_the_elo_manifold(client, {"ann": 1.0, "bob": 0.0})
    pair = client.get("/v1/ladders/test/predict?a=ann&b=bob").json()
    p = 1 / (1 + math.exp(-1.0))
    assert pair["probability"] == pytest.approx(p) and pair["match_quality"] == pytest.approx(1 - 2 * (p - 0.5))
    match = client.post("/v1/ladders/test/predict", json={"sides": [{"players": ["ann"]}, {"players": ["bob"]}]})
    assert match.json()["match_quality"] == pytest.approx(pair["match_quality"])


@pytest.mark.parametrize(
    ("body", "status", "field"),
    [
        ({"players": ["ann", "bob", "cy"], "teams": 4}, 422, "teams"),
        ({"players": ["ann", "bob", "cy"], "teams": 2, "sizes": [2, 2]}, 422, "sizes"),
        ({"players": ["ann", "bob", "cy"], "teams": 2, "sizes": [3, 0]}, 422, "sizes[1]"),
        ({"players": ["ann"], "teams": 2}, 422, "players"),
        ({"players": ["ann", "ann", "bob"], "teams": 2}, 422, "players"),
        ({"players": ["ann", "bob"], "teams": True}, 422, "teams"),
    ],
)
def test_impossible_splits_are_refused(client, body, status, field):
    players_on_the_elo_manifold(client, {"ann": 1.0, "bob": 0.0, "cy": 0.5})
    r = client.post("/v1/ladders/test/teams", json=body)
    assert r.status_code == status, r.text
    assert r.headers["content-type"].startswith("application/problem+json")
    if field is not None:
        assert field in [e["field"] for e in r.json()["errors"]]


def test_players_not_created_yet_are_split_from_their_initial_vectors(client):
    players_on_the_elo_manifold(client, {"ann": 1.0, "bob": 0.0, "cy": 0.5})
    r = client.post("/v1/ladders/test/teams", json={"players": ["ann", "zed", "bob", "newbie"], "teams": 2})
    assert r.status_code == 200, r.text
    assert sorted(p for team in r.json()["teams"] for p in team) == ["ann", "bob", "newbie", "zed"]
    assert client.post("/v1/ladders/nowhere/teams", json={"players": ["ann", "zed"]}).status_code == 404


def test_opponents_that_would_make_a_newcomer_comparable(client):
    key = players_on_the_elo_manifold(client, {"ann": 0.0, "bob": -1.0, "cy": 1.0, "dee": -1.0, "eve": 2.0})
    game = {"sides": [{"players": ["ann"], "rank": 1}, {"players": ["bob"], "rank": 2}]}
    assert client.post("/v1/ladders/test/games", json=game, headers=bearer(key)).status_code == 201
    r = client.get("/v1/ladders/test/players/ann/opponents?purpose=comparable&limit=3")
    assert r.status_code == 200, r.text
    items = r.json()["items"]
    assert len(items) == 3 and "ann" not in [i["key"] for i in items]
    assert all(i["gain"] is not None for i in items) and items[0]["gain"] >= items[-1]["gain"]
    assert items[0]["key"] in ("cy", "eve") and items[-1]["key"] != "cy"  # a new direction, not bob's again
    balanced = client.get("/v1/ladders/test/players/ann/opponents").json()["items"]
    assert all(i["gain"] is None for i in balanced)
    assert client.get("/v1/ladders/test/players/ann/opponents?purpose=best").status_code == 422
