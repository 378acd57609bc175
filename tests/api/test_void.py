"""Voiding a game: it stays in the log as an audit trail and counts nowhere; the ratings are replayed without it."""

from __future__ import annotations

import itertools
import json
from concurrent.futures import ThreadPoolExecutor

import httpx
import numpy as np
import pytest

from app import storage
from app.core.db import Database
from app.domain.access import ladder_for_read
from devtools.server import ADMIN_KEY
from tests.api.helpers import players, post_all, random_games, wait
from tests.conftest import bearer, make_ladder


def _vectors_only(games: list[list[dict]]) -> list[list[dict]]:
    """Games' sides without their players' Elo-equivalent points."""
    elo = {"elo_before", "elo_after", "elo_change"}
    return [
        [side | {"players": [{k: v for k, v in p.items() if k not in elo} for p in side["players"]]} for side in sides]
        for sides in games
    ]


@pytest.mark.parametrize("keys_in_query", [storage.players.MAX_KEYS_IN_QUERY, 2])
def test_a_voided_game_counts_nowhere_and_the_ratings_are_those_without_it(client, monkeypatch, keys_in_query):
    # (With 2 keys at most in a query, the void finds the players it reaches among every player of the ladder.)
    monkeypatch.setattr(storage.players, "MAX_KEYS_IN_QUERY", keys_in_query)
    key = make_ladder(client, "voided", seed=11)
    clean = make_ladder(client, "clean", seed=11)
    games = random_games(40)
    ids = post_all(client, "voided", key, games)
    post_all(client, "clean", clean, games[:17] + games[18:])
    r = client.request(
        "DELETE", f"/v1/ladders/voided/games/{ids[17]}", json={"reason": "wrong winner"}, headers=bearer(key)
    )
    assert r.status_code == 200, r.text
    voided = r.json()
    assert voided["voided_at"] and voided["reason"] == "wrong winner" and voided["voided_by"] == "1"
    assert players(client, "voided") == players(client, "clean")  # vectors bit for bit, counters, provisional flags
    audit = client.get("/v1/ladders/voided/audit").json()
    assert audit["consistent"] and audit["games"] == 39 and audit["max_abs_diff"] == 0.0
    assert client.get("/v1/ladders/voided").json()["games"] == 39
    # The history shows every later game as replayed: the same vectors as the clean ladder's.
    voided_games = client.get("/v1/ladders/voided/games?limit=500").json()["items"]
    clean_games = client.get("/v1/ladders/clean/games?limit=500").json()["items"]
    kept = [g["sides"] for g in voided_games if not g["voided_at"]]
    assert _vectors_only(kept) == _vectors_only([g["sides"] for g in clean_games])
    # Their Elo-equivalent points are against each field's mean, kept as a running sum on one and summed anew
    # after the void on the other: equal to the last bits or so.
    elo = [p["elo_after"] for sides in kept for side in sides for p in side["players"]]
    clean = [p["elo_after"] for g in clean_games for side in g["sides"] for p in side["players"]]
    assert elo == pytest.approx(clean, rel=0, abs=1e-9)
    # The game stays readable as an audit trail, and is gone from its players' histories.
    again = client.get(f"/v1/ladders/voided/games/{ids[17]}").json()
    assert again == voided
    someone = games[17]["sides"][0]["players"][0]
    history = client.get(f"/v1/ladders/voided/players/{someone}/history?limit=500").json()["items"]
    assert ids[17] not in [item["game_id"] for item in history]


def test_a_void_replays_only_the_games_its_players_reach(client, settings):
    key = make_ladder(client, "reach", k=1, seed=3, rate_rule="steps")
    clean = make_ladder(client, "clean", k=1, seed=3, rate_rule="steps")
    pairs = [("a", "b"), ("c", "d"), ("c", "d"), ("b", "c"), ("e", "f"), ("d", "a"), ("e", "f"), ("c", "d")]
    games = [{"sides": [{"players": [a], "rank": 1}, {"players": [b], "rank": 2}]} for a, b in pairs]
    ids = post_all(client, "reach", key, games)
    db = Database.from_settings(settings)
    with db.reading() as session:
        tail = storage.log.read_tail(session, ladder_for_read(session, "reach"), ids[0], ["a", "b"])
    db.dispose()
    # c and d are reached by game 3 (b beat c), with their state after games 1 and 2; e and f never are.
    assert tail.game_ids.tolist() == [ids[0], ids[3], ids[5], ids[7]] and tail.keys == ["a", "b", "c", "d"]
    assert tail.start_games.tolist() == [0, 0, 2, 2]
    assert client.delete(f"/v1/ladders/reach/games/{ids[0]}", headers=bearer(key)).status_code == 200
    post_all(client, "clean", clean, games[1:])
    assert players(client, "reach") == players(client, "clean")
    assert client.get("/v1/ladders/reach/audit").json()["consistent"]


def test_voiding_again_changes_nothing_and_bad_requests_are_refused(client):
    key = make_ladder(client)
    other = make_ladder(client, "other")
    ids = post_all(client, "test", key, random_games(5))
    first = client.delete(f"/v1/ladders/test/games/{ids[2]}", headers=bearer(key))
    assert first.status_code == 200
    before = players(client, "test")
    again = client.delete(f"/v1/ladders/test/games/{ids[2]}", headers=bearer(key))
    assert again.status_code == 200 and again.json() == first.json()
    assert players(client, "test") == before
    assert client.delete("/v1/ladders/test/games/999999", headers=bearer(key)).status_code == 404
    assert client.delete(f"/v1/ladders/other/games/{ids[0]}", headers=bearer(other)).status_code == 404  # not its game
    assert client.delete(f"/v1/ladders/test/games/{ids[0]}").status_code == 401
    assert client.delete(f"/v1/ladders/test/games/{ids[0]}", headers=bearer(other)).status_code == 403
    r = client.request("DELETE", f"/v1/ladders/test/games/{ids[0]}", json={"reason": "x" * 501}, headers=bearer(key))
    assert r.status_code == 422 and r.json()["errors"][0]["field"] == "reason"
    assert client.get("/v1/ladders/test").json()["games"] == 4
    # The latest game: nothing after it to replay.
    assert client.delete(f"/v1/ladders/test/games/{ids[-1]}", headers=bearer(key)).status_code == 200
    assert client.get("/v1/ladders/test/audit").json()["consistent"]


def test_a_void_can_be_posted_for_clients_that_send_no_body_with_delete(client):
    key = make_ladder(client)
    ids = post_all(client, "test", key, random_games(4))
    r = client.post(f"/v1/ladders/test/games/{ids[1]}/void", json={"reason": "wrong winner"}, headers=bearer(key))
    assert r.status_code == 200 and r.json()["reason"] == "wrong winner" and r.json()["voided_at"], r.text
    assert client.get(f"/v1/ladders/test/games/{ids[1]}").json() == r.json()
    assert client.post(f"/v1/ladders/test/games/{ids[1]}/void", headers=bearer(key)).json() == r.json()  # again
    assert client.post(f"/v1/ladders/test/games/{ids[2]}/void").status_code == 401
    r = client.post(f"/v1/ladders/test/games/{ids[2]}/void", json={"reason": 5}, headers=bearer(key))
    assert r.status_code == 422 and r.json()["errors"][0]["field"] == "reason"
    assert client.get("/v1/ladders/test").json()["games"] == 3
    assert client.get("/v1/ladders/test/audit").json()["consistent"]


def test_voiding_a_game_before_a_checkpoint_supersedes_it(client):
    key = make_ladder(client, "voided", k=1, seed=5)
    clean = make_ladder(client, "clean", k=1, seed=5)
    games = random_games(60, seed=2)
    ids = post_all(client, "voided", key, games[:50])
    r = client.post("/v1/ladders/voided/refits", json={"restarts": 1, "holdout": 0}, headers=bearer(key))
    job = wait(client, r.headers["Location"])
    assert client.post(f"/v1/ladders/voided/refits/{job['id']}/apply", headers=bearer(key)).status_code == 200
    ids += post_all(client, "voided", key, games[50:])
    assert client.get("/v1/ladders/voided/audit").json()["checkpoint_after_game"] == ids[49]
    assert client.delete(f"/v1/ladders/voided/games/{ids[10]}", headers=bearer(key)).status_code == 200
    audit = client.get("/v1/ladders/voided/audit").json()
    assert audit["consistent"] and audit["checkpoint_after_game"] is None and audit["replayed_games"] == 59
    post_all(client, "clean", clean, games[:10] + games[11:])
    assert players(client, "voided") == players(client, "clean")
    # A refit that saw the voided game can no longer be applied: the log changed below its last game.
    assert client.post(f"/v1/ladders/voided/refits/{job['id']}/apply", headers=bearer(key)).status_code == 409


def test_a_void_after_an_applied_refit_replays_from_the_refit(client):
    key = make_ladder(client, k=1, seed=6)
    games = random_games(70, seed=3)
    ids = post_all(client, "test", key, games[:50])
    r = client.post("/v1/ladders/test/refits", json={"restarts": 1, "holdout": 0}, headers=bearer(key))
    job = wait(client, r.headers["Location"])
    ids += post_all(client, "test", key, games[50:])
    r = client.post(f"/v1/ladders/test/refits/{job['id']}/apply", headers=bearer(key))
    assert r.status_code == 200, (job, r.text)
    assert r.json()["replayed_games"] == 20
    assert client.delete(f"/v1/ladders/test/games/{ids[60]}", headers=bearer(key)).status_code == 200
    audit = client.get("/v1/ladders/test/audit").json()
    assert audit["consistent"] and audit["checkpoint_after_game"] == ids[49] and audit["replayed_games"] == 19
    # Every game after the checkpoint shows the vectors the ratings went through: each player's games chain up.
    for key_ in players(client, "test"):
        items = client.get(f"/v1/ladders/test/players/{key_}/history?limit=500").json()["items"][::-1]
        later = [item for item in items if item["game_id"] > ids[49]]
        for previous, item in itertools.pairwise(later):
            assert item["before"] == previous["after"]
        if later:
            assert later[-1]["after"] == client.get(f"/v1/ladders/test/players/{key_}").json()["vector"]


def test_concurrent_voids_and_posts_lose_nothing(server):
    r = httpx.post(server + "/v1/ladders", json={"slug": "busy"}, headers={"Authorization": f"Bearer {ADMIN_KEY}"})
    headers = {"Authorization": f"Bearer {r.json()['write_key']}"}
    rng = np.random.default_rng(4)
    pairs = [rng.choice(10, 2, replace=False).tolist() for _ in range(400)]

    def body(n: int) -> dict:
        return {"sides": [{"players": [f"p{pairs[n][0]}"], "rank": 1}, {"players": [f"p{pairs[n][1]}"], "rank": 2}]}

    with httpx.Client(base_url=server, headers=headers, timeout=60) as c:
        first = [c.post("/v1/ladders/busy/games", json=body(n)).json()["id"] for n in range(100)]

    def post(part: range) -> list[int]:
        with httpx.Client(base_url=server, headers=headers, timeout=60) as c:
            return [c.post("/v1/ladders/busy/games", json=body(n)).status_code for n in part]

    def void(ids: list[int]) -> list[int]:
        with httpx.Client(base_url=server, headers=headers, timeout=60) as c:
            return [c.delete(f"/v1/ladders/busy/games/{game_id}").status_code for game_id in ids]

    with ThreadPoolExecutor(7) as pool:
        posts = [pool.submit(post, range(100 + 50 * t, 150 + 50 * t)) for t in range(6)]
        voids = pool.submit(void, first[::5])
        statuses = [s for f in posts for s in f.result()] + voids.result()
    assert set(statuses) == {200, 201}, statuses
    ladder = httpx.get(server + "/v1/ladders/busy").json()
    assert ladder["games"] == 400 - 20
    audit = httpx.get(server + "/v1/ladders/busy/audit").json()
    assert audit["consistent"] and audit["games"] == 380 and audit["max_abs_diff"] == 0.0
    board = httpx.get(server + "/v1/ladders/busy/leaderboard").json()["items"]
    assert sum(row["games"] for row in board) == 2 * 380


def test_merging_a_player_equals_having_posted_their_games_under_the_other_key(client):
    key = make_ladder(client, "merged", seed=3)
    clean = make_ladder(client, "clean", seed=3)
    games = random_games(30, seed=7)
    # "bob" is a typo of p7 in some games where p7 did not play.
    typo = [
        {"sides": [{**s, "players": ["bob" if k == "p7" else k for k in s["players"]]} for s in g["sides"]]}
        if n % 3 == 0
        else g
        for n, g in enumerate(games)
    ]
    post_all(client, "merged", key, typo)
    post_all(client, "clean", clean, games)
    r = client.post("/v1/ladders/merged/players/bob/merge", json={"into": "p7"}, headers=bearer(key))
    assert r.status_code == 200, r.text
    assert r.json()["key"] == "p7"
    assert players(client, "merged") == players(client, "clean")  # bit for bit, with the counters
    assert client.get("/v1/ladders/merged/players/bob").json()["key"] == "p7"  # the merged key leads on, an alias
    audit = client.get("/v1/ladders/merged/audit").json()
    assert audit["consistent"] and audit["games"] == 30
    merged_games = client.get("/v1/ladders/merged/games?limit=500").json()["items"]
    clean_games = client.get("/v1/ladders/clean/games?limit=500").json()["items"]
    merged_sides, clean_sides = [g["sides"] for g in merged_games], [g["sides"] for g in clean_games]
    assert _vectors_only(merged_sides) == _vectors_only(clean_sides)


def test_merge_refusals(client):
    key = make_ladder(client)
    writer = client.post("/v1/ladders/test/keys", json={"name": "w", "role": "write"}, headers=bearer(key)).json()
    ids = post_all(client, "test", key, [{"sides": [{"players": ["a"], "rank": 1}, {"players": ["b"], "rank": 2}]}])
    merge = "/v1/ladders/test/players/a/merge"
    r = client.post(merge, json={"into": "b"}, headers=bearer(key))
    assert r.status_code == 409 and r.json()["game"] == ids[0] and str(ids[0]) in r.json()["detail"]
    r = client.post(merge, json={"into": "a"}, headers=bearer(key))
    assert r.status_code == 422 and r.json()["errors"][0]["field"] == "into"
    r = client.post(merge, json={"into": "nobody"}, headers=bearer(key))
    assert r.status_code == 422 and r.json()["errors"][0]["field"] == "into"
    assert client.post("/v1/ladders/test/players/zed/merge", json={"into": "a"}, headers=bearer(key)).status_code == 404
    assert client.post(merge, json={"into": "b"}, headers=bearer(writer["key"])).status_code == 403
    assert client.get("/v1/ladders/test/audit").json()["games"] == 1


def test_a_merge_refusal_names_the_ladders_own_game_number(client):
    """Another ladder's games come first, so the game's number in this ladder is not its row in the database."""
    other = make_ladder(client, "other")
    one = {"sides": [{"players": ["x"], "rank": 1}, {"players": ["y"], "rank": 2}]}
    post_all(client, "other", other, [one, one, one])
    key = make_ladder(client)
    post_all(client, "test", key, [{"sides": [{"players": ["a"], "rank": 1}, {"players": ["c"], "rank": 2}]}])
    [number] = post_all(
        client, "test", key, [{"sides": [{"players": ["a"], "rank": 1}, {"players": ["b"], "rank": 2}]}]
    )
    r = client.post("/v1/ladders/test/players/a/merge", json={"into": "b"}, headers=bearer(key))
    assert r.status_code == 409 and r.json()["game"] == number == 2, r.text
    assert "both played in game 2:" in r.json()["detail"]
    assert client.get(f"/v1/ladders/test/games/{number}").json()["id"] == number


def test_erasing_a_person_keeps_the_games_and_the_ratings(client):
    key = make_ladder(client)
    client.post("/v1/ladders/test/players", json={"key": "ann", "name": "Ann Smith"}, headers=bearer(key))
    games = [{"sides": [{"players": [w], "rank": 1}, {"players": [lo], "rank": 2}]} for w, lo in
             [("ann", "bob"), ("bob", "cy"), ("cy", "ann")]]  # fmt: skip
    first = client.post("/v1/ladders/test/games", json=games[0], headers=bearer(key) | {"Idempotency-Key": "g1"})
    post_all(client, "test", key, games[1:])
    before = players(client, "test")
    r = client.delete("/v1/ladders/test/players/ann", headers=bearer(key))
    assert r.status_code == 200, r.text
    pseudonym = r.json()["key"]
    assert pseudonym.startswith("erased-") and r.json()["name"] is None
    after = players(client, "test")
    assert after.pop(pseudonym) == before.pop("ann") and after == before  # the ratings stay
    listed = [row["key"] for row in client.get("/v1/ladders/test/leaderboard").json()["items"]]
    assert pseudonym not in listed  # off the leaderboard, still part of the field
    assert client.get("/v1/ladders/test/players/ann").status_code == 404
    everything = json.dumps(client.get("/v1/ladders/test/games").json())
    assert "ann" not in everything and "Ann" not in everything
    retry = client.post("/v1/ladders/test/games", json=games[0], headers=bearer(key) | {"Idempotency-Key": "g1"})
    assert retry.status_code == 201 and retry.json()["id"] == first.json()["id"] and "ann" not in retry.text
    assert client.get("/v1/ladders/test/audit").json()["consistent"]
