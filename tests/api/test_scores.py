"""Scores kept with the game, the kinds of games a ladder plays (`play`), matches rated as one game, and games
dated in the future refused: through the API on both databases, and through an export and its restore."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from tests.api.helpers import export, problem
from tests.conftest import admin, bearer, make_ladder

L = "/v1/ladders/test"


def duel(a: str, b: str, first: dict, second: dict, **extra) -> dict:
    return {"sides": [{"players": [a], **first}, {"players": [b], **second}], **extra}


def scored(a: str, b: str, x: float, y: float, **extra) -> dict:
    return duel(a, b, {"score": x}, {"score": y}, **extra)


def match(a: str, b: str, games: list[list[int]], **extra) -> dict:
    return {"sides": [{"players": [a]}, {"players": [b]}], "match": games, **extra}


def sides(game: dict) -> list[tuple[float, float | None]]:
    """Each side's (rank, score)."""
    return [(side["rank"], side["score"]) for side in game["sides"]]


def post(client, key: str, body: dict, path: str = "/games") -> dict:
    r = client.post(L + path, json=body, headers=bearer(key))
    assert r.status_code == 201, r.text
    return r.json()


def refused(client, key: str, body: dict, field: str, words: str) -> str:
    """A 422 naming ``field`` whose message says ``words``, and no game recorded."""
    games = client.get(L).json()["games"]
    r = client.post(L + "/games", json=body, headers=bearer(key))
    message = next(e["message"] for e in problem(r, 422, field)["errors"] if e["field"] == field)
    assert words in message, message
    assert client.get(L).json()["games"] == games
    return message


def read_game_event(client, number: int) -> dict:
    """The event stream's event for game ``number``, read from the start of the ladder's events."""
    with client.stream("GET", L + "/events", headers={"Last-Event-ID": "0"}) as r:
        assert r.status_code == 200
        event = None
        for line in r.iter_lines():
            if line.startswith("event: "):
                event = line.removeprefix("event: ")
            elif line.startswith("data: ") and event == "game":
                data = json.loads(line.removeprefix("data: "))
                if data["game"]["id"] == number:
                    return data["game"]
    raise AssertionError(f"no event for game {number}")


def test_scores_are_kept_and_returned_by_the_post_the_game_the_results_the_batch_and_the_events(client):
    key = make_ladder(client, play={"best_of": 3})
    posted = post(client, key, scored("ann", "bob", 21, 12))
    assert sides(posted) == [(1, 21), (2, 12)] and posted["match"] is None
    assert sides(client.get(f"{L}/games/{posted['id']}").json()) == [(1, 21), (2, 12)]
    ranked = post(client, key, duel("cy", "ann", {"rank": 2}, {"rank": 1}))
    assert sides(ranked) == [(2, None), (1, None)]  # no score given: null
    batch = [scored("bob", "cy", 7, 11), match("ann", "cy", [[11, 7], [9, 11], [11, 5]])]
    batch.append(
        {"sides": [{"players": ["x"], "score": 3}, {"players": ["y"], "score": 9}, {"players": ["z"], "score": 3}]}
    )
    answered = post(client, key, {"games": batch}, "/games/batch")["games"]
    assert [sides(g) for g in answered] == [[(2, 7), (1, 11)], [(1, 2), (2, 1)], [(2, 3), (1, 9), (2, 3)]]
    assert answered[1]["match"] == [[11, 7], [9, 11], [11, 5]]
    listed = {g["id"]: g for g in client.get(L + "/games").json()["items"]}
    for game in [posted, ranked, *answered]:
        assert sides(listed[game["id"]]) == sides(game) and listed[game["id"]]["match"] == game["match"]
    assert read_game_event(client, answered[1]["id"])["match"] == [[11, 7], [9, 11], [11, 5]]
    assert sides(read_game_event(client, posted["id"])) == [(1, 21), (2, 12)]
    # A player's history carries them too, in side order (its `side` says which is theirs).
    history = {g["game_id"]: g for g in client.get(f"{L}/players/ann/history").json()["items"]}
    assert (history[posted["id"]]["scores"], history[posted["id"]]["side"]) == ([21, 12], 0)
    assert history[ranked["id"]]["scores"] is None and history[ranked["id"]]["match"] is None
    assert history[answered[1]["id"]]["match"] == [[11, 7], [9, 11], [11, 5]]
    # The margin does not move the ratings: on two ladders alike, a 21-0 win moves them as a 21-19 win does.
    after = []
    for slug, score in (("close", 19), ("wide", 0)):
        write = make_ladder(client, slug, seed=5)
        r = client.post(f"/v1/ladders/{slug}/games", json=scored("ann", "bob", 21, score), headers=bearer(write))
        assert r.status_code == 201, r.text
        after.append([p["after"] for side in r.json()["sides"] for p in side["players"]])
    assert after[0] == after[1]


def test_a_side_may_carry_a_rank_and_a_score_that_agree(client):
    key = make_ladder(client)
    assert sides(post(client, key, duel("ann", "bob", {"rank": 1, "score": 21}, {"rank": 2, "score": 15}))) == [
        (1, 21),
        (2, 15),
    ]
    assert sides(post(client, key, duel("ann", "bob", {"rank": 1, "score": 9}, {"rank": 1, "score": 9}))) == [
        (1, 9),
        (1, 9),
    ]
    worse = duel("ann", "bob", {"rank": 2, "score": 21}, {"rank": 1, "score": 15})
    assert "sides[0] and sides[1]" in refused(client, key, worse, "sides", "contradict their ranks")
    tie = duel("ann", "bob", {"rank": 1, "score": 21}, {"rank": 1, "score": 15})
    refused(client, key, tie, "sides", "scores (21 and 15) contradict their ranks (1 and 1)")
    three = {"sides": [{"players": ["a"], "rank": 1, "score": 5}, {"players": ["b"], "rank": 2, "score": 3},
                       {"players": ["c"], "rank": 3, "score": 4}]}  # fmt: skip
    refused(client, key, three, "sides", "sides[1] and sides[2]")
    mixed = duel("ann", "bob", {"rank": 1, "score": 21}, {"rank": 2})
    refused(client, key, mixed, "sides", "every side needs a rank, or every side a score")
    refused(client, key, duel("ann", "bob", {}, {}), "sides", "every side needs a rank")


def test_a_ladder_plays_the_kinds_of_games_it_says(client):
    make_ladder(client, "open")
    everything = {"singles": True, "doubles": True, "free_for_all": True, "draws": True, "points": None, "best_of": 1}
    assert client.get("/v1/ladders/open").json()["play"] == everything  # the default: as before the setting
    play = {"doubles": False, "free_for_all": False, "draws": False, "points": 21}
    key = make_ladder(client, play=play)
    assert client.get(L).json()["play"] == everything | play
    refused(client, key, {"sides": [{"players": ["a", "b"], "rank": 1}, {"players": ["c", "d"], "rank": 2}]},
            "sides", "this ladder does not play doubles")  # fmt: skip
    three = {"sides": [{"players": [p], "rank": n} for n, p in enumerate("abc", start=1)]}
    refused(client, key, three, "sides", "this ladder does not play free-for-all games")
    refused(client, key, duel("a", "b", {"rank": 1}, {"rank": 1}), "sides", "this ladder does not play draws")
    for x, y in ((21, 20), (20, 18), (22, 19), (21.5, 12), (25, 21)):
        refused(client, key, scored("a", "b", x, y), "sides[0].score", "does not end a game to 21")
    for x, y in ((21, 19), (12, 21), (22, 20), (30, 28), (21, 0)):
        post(client, key, scored("a", "b", x, y))
    post(client, key, duel("a", "b", {"rank": 1}, {"rank": 2}))  # scores stay optional over the API
    batch = {"games": [scored("a", "b", 21, 3), duel("a", "b", {"rank": 1}, {"rank": 1})]}
    problem(client.post(L + "/games/batch", json=batch, headers=bearer(key)), 422, "games[1].sides")

    h = bearer(key)
    changed = client.patch(L, json={"play": {"draws": True, "points": None, "best_of": 3}}, headers=h)
    assert changed.status_code == 200, changed.text
    assert changed.json()["play"] == everything | play | {"draws": True, "points": None, "best_of": 3}
    post(client, key, duel("a", "b", {"rank": 1}, {"rank": 1}))
    post(client, key, scored("a", "b", 3, 1))
    for body, field in (
        ({"play": {"singles": False}}, "play"),  # nothing left to play
        ({"play": {"draws": None}}, "play.draws"),
        ({"play": {"best_of": 2}}, "play.best_of"),
        ({"play": {"points": 15}}, "play.points"),
        ({"play": None}, "play"),
        ({"play": {"chess": True}}, "play.chess"),
    ):
        problem(client.patch(L, json=body, headers=h), 422, field)
    no_kind = {"slug": "none", "play": {"singles": False, "doubles": False, "free_for_all": False}}
    problem(client.post("/v1/ladders", json=no_kind, headers=admin()), 422, "play")
    assert client.get(L).json()["play"]["best_of"] == 3


def test_a_match_is_rated_as_one_game_and_a_match_that_breaks_the_rules_changes_nothing(client):
    key = make_ladder(client, play={"points": 11, "best_of": 3})
    won = post(client, key, match("ada", "bob", [[11, 7], [9, 11], [11, 5]]))
    assert sides(won) == [(1, 2), (2, 1)] and won["match"] == [[11, 7], [9, 11], [11, 5]]
    assert sides(post(client, key, match("ada", "bob", [[12, 14], [9, 11]]))) == [(2, 0), (1, 2)]
    post(client, key, match("ada", "bob", [[13, 11], [11, 0]]))
    cases = [
        ([[11, 7], [9, 11], [11, 5], [11, 3]], "match", "a best-of-3 has at most 3 games"),
        ([[11, 7], [11, 9], [11, 5]], "match[2]", "game 3 comes after the match was decided"),
        ([[11, 7], [9, 11]], "match", "the match is undecided at 1-1"),
        ([[11, 7]], "match", "the match is undecided at 1-0: a best-of-3 is won with 2 games"),
        ([[11, 7], [10, 11], [11, 5]], "match[1]", "game 2: 10-11 does not end a game to 11"),
        ([[11, 7], [14, 11], [11, 5]], "match[1]", "does not end a game to 11"),
        ([[11, 7], [11, 11], [11, 5]], "match", "game 2 is tied 11-11"),
        ([[11, 7], [7, 11]] * 3, "match", "a match has at most 5 games"),
        ([[11, 7, 3], [11, 5, 2]], "match[0]", ""),
        ([[11, -1], [11, 2]], "match[0][1]", ""),
        ([[11.0, 7], [11, 2]], "match[0][0]", ""),
    ]
    for games, field, words in cases:
        refused(client, key, match("ada", "bob", games), field, words)
    ranked = {"sides": [{"players": ["ada"], "rank": 1}, {"players": ["bob"], "rank": 2}], "match": [[11, 7], [11, 9]]}
    refused(client, key, ranked, "sides", "with a match, the sides carry no rank or score")
    three = {"sides": [{"players": [p]} for p in ("ada", "bob", "cy")], "match": [[11, 7], [11, 9]]}
    refused(client, key, three, "sides", "only a game of two sides may carry a match")
    batch = {"games": [match("ada", "bob", [[11, 7], [11, 9]]), match("ada", "bob", [[11, 7], [11, 9], [11, 2]])]}
    problem(client.post(L + "/games/batch", json=batch, headers=bearer(key)), 422, "games[1].match[2]")
    assert client.get(L).json()["games"] == 3

    single = make_ladder(client, "single")  # best of 1: a match is its one game
    r = client.post("/v1/ladders/single/games", json=match("a", "b", [[5, 3]]), headers=bearer(single))
    assert r.status_code == 201 and sides(r.json()) == [(1, 1), (2, 0)]
    r = client.post("/v1/ladders/single/games", json=match("a", "b", [[5, 3], [3, 5], [5, 1]]), headers=bearer(single))
    assert "a best-of-1 has at most 1 game" in problem(r, 422, "match")["detail"]


def test_a_game_dated_more_than_ten_minutes_ahead_of_the_server_is_refused(client):
    key = make_ladder(client)
    now = datetime.now(UTC)
    soon = duel("a", "b", {"rank": 1}, {"rank": 2}, played_at=(now + timedelta(minutes=5)).isoformat())
    assert post(client, key, soon)["played_at"] > now.isoformat()
    later = duel("a", "b", {"rank": 1}, {"rank": 2}, played_at=(now + timedelta(days=3)).isoformat())
    refused(client, key, later, "played_at", "played_at is in the future")
    r = client.post(L + "/games/batch", json={"games": [soon, later]}, headers=bearer(key))
    assert "played_at is in the future" in problem(r, 422, "games[1].played_at")["detail"]
    assert client.get(L).json()["games"] == 1


def test_scores_matches_and_play_survive_export_and_restore(client, cli, tmp_path, capsys):
    key = make_ladder(client, "pong", play={"free_for_all": False, "points": 11, "best_of": 5}, seed=4)
    h = bearer(key)
    games = [
        scored("ann", "bob", 11, 4),
        duel("bob", "cy", {"rank": 1, "score": 13}, {"rank": 2, "score": 11}),
        duel("cy", "ann", {"rank": 1}, {"rank": 2}),
        match("ann", "cy", [[11, 7], [9, 11], [11, 5], [5, 11], [12, 10]]),
        match("bob", "ann", [[11, 0], [11, 0], [11, 0]]),
    ]
    assert client.post("/v1/ladders/pong/games/batch", json={"games": games}, headers=h).status_code == 201
    assert client.delete("/v1/ladders/pong/games/5", headers=h).status_code == 200  # a voided match too
    data = export(client, "pong")
    lines = [json.loads(line) for line in data.splitlines()]
    assert lines[0]["ladder"]["play"]["best_of"] == 5 and lines[0]["ladder"]["play"]["free_for_all"] is False
    exported = [line["game"] for line in lines if "game" in line]
    assert exported[0]["sides"][0] == {"players": ["ann"], "rank": 1.0, "score": 11.0}
    assert exported[2]["sides"][0] == {"players": ["cy"], "rank": 1.0}
    assert exported[3]["match"] == games[3]["match"] and exported[3]["sides"] == [
        {"players": ["ann"]},
        {"players": ["cy"]},
    ]
    path = tmp_path / "pong.ndjson"
    path.write_bytes(data)
    cli(["import", "copy", str(path)])
    capsys.readouterr()
    copy = client.get("/v1/ladders/copy").json()
    assert copy["play"] == client.get("/v1/ladders/pong").json()["play"]
    original = client.get("/v1/ladders/pong/games").json()["items"]
    restored = client.get("/v1/ladders/copy/games").json()["items"]
    assert [(sides(g), g["match"], g["voided_at"] is None) for g in restored] == [
        (sides(g), g["match"], g["voided_at"] is None) for g in original
    ]
    assert export(client, "copy").split(b"\n", 1)[1] == data.split(b"\n", 1)[1]  # the same file past its header
    assert client.get("/v1/ladders/copy/audit").json()["consistent"]
