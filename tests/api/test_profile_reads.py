"""What a player's page reads: what is at stake against each suggested opponent (exactly what posting the game
then does), the head-to-head record with singles, doubles, partners and free-for-alls apart, and the change of
their own last game apart from how others' games moved them since."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from app import rating
from app.players.rivals import _side_result
from tests.api.helpers import change_of
from tests.conftest import bearer, make_ladder


def _post(client, key: str, *sides: list[str], ranks: list[int] | None = None, **extra) -> dict:
    ranks = ranks or list(range(1, len(sides) + 1))
    body = {"sides": [{"players": s, "rank": r} for s, r in zip(sides, ranks, strict=True)], **extra}
    answer = client.post("/v1/ladders/test/games", json=body, headers=bearer(key))
    assert answer.status_code == 201, answer.text
    return answer.json()


def test_the_stakes_of_a_suggested_game_are_what_posting_it_does(client):
    # A shrinking learning rate with a drift: the step depends on each player's experience and time away.
    key = make_ladder(client, k=1, eta=0.3, eta_tau=4.0, drift=150.0)
    start = datetime.now(UTC) - timedelta(days=40)
    for n, (w, loser) in enumerate([("a", "b"), ("c", "d"), ("b", "c"), ("a", "d"), ("d", "b"), ("c", "a")] * 2):
        _post(client, key, [w], [loser], played_at=(start + timedelta(days=3 * n)).isoformat())

    def suggestions() -> list[dict]:
        answer = client.get("/v1/ladders/test/players/a/opponents", params={"purpose": "next", "limit": 3})
        assert answer.status_code == 200, answer.text
        return answer.json()["items"]

    first = suggestions()
    assert {o["key"] for o in first} == {"b", "c", "d"}
    for o in first:
        assert o["if_win"] > 0 > o["if_lose"], o
        assert o["games_together"] == 2 and o["last_played"] is not None
        assert o["reason"].endswith(".") and "%" in o["reason"] and o["gain"] is None
    win = first[0]
    assert change_of(_post(client, key, ["a"], [win["key"]]), "a") == pytest.approx(win["if_win"], abs=1e-9)
    lose = suggestions()[1]
    assert change_of(_post(client, key, [lose["key"]], ["a"]), "a") == pytest.approx(lose["if_lose"], abs=1e-9)
    # Whom a has just played counts against them; the reason says so.
    again = {o["key"]: o for o in suggestions()}
    assert re.search(r"; you played them in [1-9] of your last 10 games\.$", again[lose["key"]]["reason"])

    # A newcomer: every result counts towards being ranked; the opponents with settled ratings come first.
    assert client.post("/v1/ladders/test/players", json={"key": "z"}, headers=bearer(key)).status_code == 201
    _post(client, key, ["z"], ["y"])  # y: a newcomer too
    items = client.get("/v1/ladders/test/players/z/opponents", params={"purpose": "next", "limit": 5}).json()["items"]
    assert [o["key"] for o in items][-1] == "y"  # provisional: counts half
    assert items[0]["reason"].startswith("Counts towards getting you ranked: 2 more games to go")
    assert items[0]["reason"].endswith("you have not played against them yet.")
    assert "their own rating is not settled yet" in items[-1]["reason"]
    # The default order and its fields stay as they were, with the stakes added.
    balanced = client.get("/v1/ladders/test/players/z/opponents").json()["items"]
    gaps = [abs(o["probability"] - 0.5) for o in balanced]
    assert gaps == sorted(gaps) and all("if_win" in o for o in balanced)


def test_head_to_head_keeps_singles_doubles_partners_and_free_for_alls_apart(client):
    key = make_ladder(client, k=1)
    _post(client, key, ["a"], ["b"])  # singles: a beats b
    _post(client, key, ["b"], ["a"], ranks=[1, 1])  # a singles draw
    _post(client, key, ["a", "c"], ["b", "d"])  # doubles against b, with c
    _post(client, key, ["c", "d"], ["a", "b"])  # partners with b: a loss
    _post(client, key, ["c"], ["a"], ["b"])  # free-for-all: a second, b third
    voided = _post(client, key, ["b"], ["a"])
    assert client.delete(f"/v1/ladders/test/games/{voided['id']}", headers=bearer(key)).status_code == 200
    answer = client.get("/v1/ladders/test/players/a/head-to-head")
    assert answer.status_code == 200, answer.text
    rows = {row["key"]: row for row in answer.json()["items"]}
    assert [row["key"] for row in answer.json()["items"]] == ["b", "c", "d"]  # most games together first

    def record(games: int, wins: int, draws: int, losses: int) -> dict:
        return {"games": games, "wins": wins, "draws": draws, "losses": losses}

    b = rows["b"]
    assert b["games"] == 5
    assert b["singles"] == record(2, 1, 1, 0)
    assert b["doubles"] == record(1, 1, 0, 0)
    assert b["partners"] == record(1, 0, 0, 1)
    assert b["free_for_all"] == record(1, 1, 0, 0)
    assert rows["c"]["partners"] == record(1, 1, 0, 0) and rows["c"]["doubles"] == record(1, 0, 0, 1)
    assert rows["c"]["free_for_all"] == record(1, 0, 0, 1)
    # The opponents list counts the same games, and says when they last met.
    opponents = {o["key"]: o for o in client.get("/v1/ladders/test/players/a/opponents").json()["items"]}
    assert opponents["b"]["games_together"] == 5 and opponents["b"]["last_played"] == b["last_played"]
    page = client.get("/v1/ladders/test/players/a/head-to-head", params={"limit": 2}).json()
    rest = client.get("/v1/ladders/test/players/a/head-to-head", params={"cursor": page["next_cursor"]}).json()
    assert [r["key"] for r in page["items"] + rest["items"]] == ["b", "c", "d"] and rest["next_cursor"] is None
    assert client.get("/v1/ladders/test/players/nobody/head-to-head").status_code == 404
    assert client.get("/v1/ladders/test/players/a/head-to-head", params={"cursor": "x"}).status_code == 422


def test_the_last_game_and_what_others_games_did_since_are_apart(client):
    # A seed fixes the starting vectors: how far the field's games move a depends on them (by chance, near zero).
    key = make_ladder(client, k=1, seed=7)
    day = datetime.now(UTC) - timedelta(days=1)
    first = _post(client, key, ["a"], ["b"], played_at=day.isoformat())
    lost = _post(client, key, ["c"], ["b"], played_at=(day + timedelta(hours=2)).isoformat())
    for n in range(4):  # a and b do not play: the field moves around them
        _post(client, key, ["c"], ["d"], played_at=(day + timedelta(hours=3 + n)).isoformat())
    a = client.get("/v1/ladders/test/players/a").json()
    b = client.get("/v1/ladders/test/players/b").json()
    history = client.get("/v1/ladders/test/players/b/history").json()["items"]
    assert b["last_game_change"] == pytest.approx(history[0]["elo_change"], abs=1e-9) and b["last_game_change"] < 0
    assert history[0]["game_id"] == lost["id"]
    a_history = client.get("/v1/ladders/test/players/a/history").json()["items"]
    assert a["last_game_change"] == pytest.approx(a_history[0]["elo_change"], abs=1e-9) and a["last_game_change"] > 0
    assert abs(a["change_since_last_game"]) > 0.5  # others moved a, who did not play
    board = client.get("/v1/ladders/test/leaderboard", params={"form": "true"}).json()["items"]
    rows = {row["key"]: row for row in board}
    assert rows["b"]["last_game_change"] == pytest.approx(b["last_game_change"], abs=1e-9)
    assert rows["a"]["change_since_last_game"] == pytest.approx(a["change_since_last_game"], abs=1e-9)
    assert client.post("/v1/ladders/test/players", json={"key": "e"}, headers=bearer(key)).status_code == 201
    assert client.get("/v1/ladders/test/players/e").json()["last_game_change"] is None

    # As of an hour after the first game: b's last game was that one, against the field of a and b then.
    then = client.get("/v1/ladders/test/players/b", params={"as_of": (day + timedelta(hours=1)).isoformat()}).json()
    game = next(side["players"] for side in first["sides"] if side["players"][0]["key"] == "b")[0]
    a_then = next(side["players"] for side in first["sides"] if side["players"][0]["key"] == "a")[0]
    field = (np.array(game["after"]) + np.array(a_then["after"])) / 2
    elo = rating.elo_equivalent(rating.hodge_strength_against(np.array([game["before"], game["after"]]), field))
    assert then["games"] == 1 and then["last_game_change"] == pytest.approx(elo[1] - elo[0], abs=1e-9)
    assert then["last_game_change"] == pytest.approx(game["elo_change"], abs=1e-9)  # the post's answer: that field


def test_a_sides_result_in_the_head_to_head_is_the_one_its_record_counts():
    rng = np.random.default_rng(7)
    for _ in range(500):
        ranks = rng.integers(1, 4, size=int(rng.integers(2, 7))).astype(float).tolist()
        expected = rating.results(rating.rank_share(ranks), len(ranks)).tolist()
        assert [_side_result(ranks, side) for side in range(len(ranks))] == expected, ranks
