"""What the office front-end shows of each game: a player's result, partners and Elo change in their history,
and each player's form on the leaderboard."""

from __future__ import annotations

import pytest

from tests.api.helpers import change_of
from tests.conftest import bearer, make_ladder


def _post(client, key: str, *sides: tuple[list[str], int]) -> dict:
    body = {"sides": [{"players": players, "rank": rank} for players, rank in sides]}
    r = client.post("/v1/ladders/test/games", json=body, headers=bearer(key))
    assert r.status_code == 201, r.text
    return r.json()


def test_history_names_partners_and_the_result_and_elo_change_of_each_game(client):
    key = make_ladder(client)
    singles = _post(client, key, (["ann"], 1), (["bob"], 2))
    doubles = _post(client, key, (["ann", "cy"], 2), (["bob", "dee"], 1))
    draw3 = _post(client, key, (["ann"], 1), (["bob"], 1))
    last4 = _post(client, key, (["ann"], 1), (["bob"], 2), (["cy"], 3), (["dee"], 4))
    items = client.get("/v1/ladders/test/players/ann/history").json()["items"]
    assert [(i["game_id"], i["result"], i["partners"], i["opponents"]) for i in items] == [
        (4, "win", [], ["bob", "cy", "dee"]),
        (3, "draw", [], ["bob"]),
        (2, "loss", ["cy"], ["bob", "dee"]),
        (1, "win", [], ["bob"]),
    ]
    # The change a game made is the one its post showed; the last game's, after minus before (nothing has moved
    # the field since).
    assert [item["elo_change"] for item in items] == [
        change_of(game, "ann") for game in (last4, draw3, doubles, singles)
    ]
    assert items[0]["elo_change"] == pytest.approx(items[0]["elo_after"] - items[0]["elo_before"])
    assert items[0]["elo_change"] > 0 and items[2]["elo_change"] < 0
    last = client.get("/v1/ladders/test/games/4").json()
    ann = next(p for side in last["sides"] for p in side["players"] if p["key"] == "ann")
    assert items[0]["elo_change"] == pytest.approx(ann["elo_change"])
    assert singles["id"] == 1 and doubles["id"] == 2
    # Second of four is above the average share 1/4: a win, as the counters count it.
    bob = [item["result"] for item in client.get("/v1/ladders/test/players/bob/history").json()["items"]]
    assert bob == ["win", "draw", "win", "loss"]
    profile = client.get("/v1/ladders/test/players/bob").json()
    assert (profile["wins"], profile["draws"], profile["losses"]) == (2, 1, 1)


def test_the_leaderboard_shows_each_players_last_five_results_newest_first(client):
    key = make_ladder(client)
    for winner, loser in [("ann", "bob"), ("bob", "ann"), ("ann", "bob"), ("ann", "cy")] + [("cy", "ann")] * 3:
        _post(client, key, ([winner], 1), ([loser], 2))
    _post(client, key, (["ann"], 1), (["bob"], 1))
    assert client.delete("/v1/ladders/test/games/7", headers=bearer(key)).status_code == 200  # counts nowhere
    plain = client.get("/v1/ladders/test/leaderboard").json()["items"]
    assert all("form" not in item for item in plain)  # only when asked for
    board = client.get("/v1/ladders/test/leaderboard", params={"form": "true", "limit": 2}).json()
    more = client.get("/v1/ladders/test/leaderboard", params={"form": "true", "cursor": board["next_cursor"]}).json()
    form = {item["key"]: item["form"] for item in board["items"] + more["items"]}
    assert form == {"ann": ["D", "L", "L", "W", "W"], "bob": ["D", "L", "W", "L"], "cy": ["W", "W", "L"]}
    # Cached with the page, and a new game shows at once.
    assert client.get("/v1/ladders/test/leaderboard", params={"form": "true", "limit": 2}).json() == board
    _post(client, key, (["dee"], 1), (["cy"], 2))
    again = client.get("/v1/ladders/test/leaderboard", params={"form": "true", "limit": 10}).json()["items"]
    assert {item["key"]: item["form"] for item in again}["cy"] == ["L", "W", "W", "L"]
