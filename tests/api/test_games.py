import numpy as np
import pytest
from fastapi.testclient import TestClient

from app.main import create_app
from tests.conftest import admin, bearer, make_ladder


def game(*sides, **extra):
    """game(["a"], ["b"]) -> a beats b."""
    return {"sides": [{"players": list(s), "rank": n + 1} for n, s in enumerate(sides)], **extra}


def state(client, slug="test"):
    """Everything a bad request must leave untouched."""
    games = client.get(f"/v1/ladders/{slug}/games?limit=500").json()["items"]
    board = client.get(f"/v1/ladders/{slug}/leaderboard?limit=500").json()["items"]
    return games, board


def test_seed000_worked_example_through_the_api(client):
    key = make_ladder(client, k=1, eta=0.1, rate_rule="steps")
    for name, vec in [("p1", [3, 0]), ("p2", [1, 2]), ("p3", [-1, -1])]:
        r = client.post("/v1/ladders/test/players", json={"key": name, "vector": vec}, headers=bearer(key))
        assert r.status_code == 201, r.text
    r = client.post("/v1/ladders/test/games", json=game(["p2"], ["p3"]), headers=bearer(key))
    assert r.status_code == 201, r.text
    body = r.json()
    after = [body["sides"][0]["players"][0]["after"], body["sides"][1]["players"][0]["after"]]
    np.testing.assert_allclose(after, [[0.98983, 2.01017], [-1.02033, -0.98983]], atol=1e-5)
    assert body["sides"][0]["expected_score"] == pytest.approx(0.73105858)
    p2 = client.get("/v1/ladders/test/players/p2").json()
    assert p2["vector"] == body["sides"][0]["players"][0]["after"]
    assert (p2["games"], p2["wins"], p2["losses"]) == (1, 1, 0)
    assert client.get("/v1/ladders/test/audit").json() == {
        "consistent": True,
        "counts_consistent": True,
        "games": 1,
        "players": 3,
        "max_abs_diff": 0.0,
        "replayed_games": 1,
        "checkpoint_after_game": None,
    }


def test_mixed_games_stay_consistent_with_the_log(client):
    key = make_ladder(client, k=2, eta=0.2)
    h = bearer(key)
    rng = np.random.default_rng(0)
    names = [f"p{i}" for i in range(8)]
    for _ in range(30):
        n_sides = int(rng.integers(2, 5))
        picks = rng.permutation(names)[: n_sides * 2]
        sides = []
        for s in range(n_sides):
            side = {"players": list(picks[2 * s : 2 * s + int(rng.integers(1, 3))]), "score": int(rng.integers(0, 3))}
            if rng.random() < 0.3:
                side["win_probability"] = 0.6
            sides.append(side)
        r = client.post("/v1/ladders/test/games", json={"sides": sides}, headers=h)
        assert r.status_code == 201, r.text
        scores = [s["actual_score"] for s in r.json()["sides"]]
        assert sum(scores) == pytest.approx(1.0)
    audit = client.get("/v1/ladders/test/audit").json()
    assert audit["consistent"] and audit["games"] == 30


def test_retry_with_idempotency_key_applies_once(client):
    key = make_ladder(client)
    h = bearer(key) | {"Idempotency-Key": "abc-1"}
    first = client.post("/v1/ladders/test/games", json=game(["a"], ["b"]), headers=h)
    again = client.post("/v1/ladders/test/games", json=game(["a"], ["b"]), headers=h)
    assert first.status_code == again.status_code == 201
    assert first.json() == again.json()
    assert "idempotent-replayed" not in first.headers and again.headers["idempotent-replayed"] == "true"
    # The fresh answer names the version its commit made, the one a read then shows; the replay makes none.
    profile = client.get("/v1/ladders/test/players/a").json()
    assert profile["games"] == 1 and int(first.headers["ladder-version"]) == profile["ladder_version"]
    assert "ladder-version" not in again.headers
    batch = client.post("/v1/ladders/test/games/batch", json={"games": [game(["a"], ["c"])]}, headers=bearer(key))
    assert int(batch.headers["ladder-version"]) == profile["ladder_version"] + 1
    other = client.post("/v1/ladders/test/games", json=game(["b"], ["a"]), headers=h)
    assert other.status_code == 409
    assert other.headers["content-type"] == "application/problem+json"
    assert client.get("/v1/ladders/test/players/a").json()["games"] == 2  # the game and the batch's


def test_external_id_is_an_idempotency_key(client):
    key = make_ladder(client)
    body = game(["a"], ["b"], external_id="m-1")
    first = client.post("/v1/ladders/test/games", json=body, headers=bearer(key))
    again = client.post("/v1/ladders/test/games", json=body, headers=bearer(key))
    assert first.json() == again.json() and again.headers["idempotent-replayed"] == "true"
    changed = client.post("/v1/ladders/test/games", json=game(["b"], ["a"], external_id="m-1"), headers=bearer(key))
    assert changed.status_code == 409
    assert len(client.get("/v1/ladders/test/games").json()["items"]) == 1


def test_a_clients_idempotency_key_never_takes_the_place_of_an_external_id(client):
    """The server records a game's external_id under a key of its own: a client's Idempotency-Key spelled like one
    neither blocks the game nor answers for it; a record an older version made under the old spelling still
    replays its own game, and only it."""
    key = make_ladder(client)
    posted = game(["a"], ["b"], external_id="m-7")
    h = bearer(key) | {"Idempotency-Key": "external_id:m-7"}
    client_game = client.post("/v1/ladders/test/games", json=posted, headers=h)
    assert client_game.status_code == 201
    again = client.post("/v1/ladders/test/games", json=game(["a"], ["b"], external_id="m-8"), headers=h)
    assert again.status_code == 409  # the client's key, reused with another body
    retried = client.post("/v1/ladders/test/games", json=posted, headers=bearer(key))
    assert retried.status_code == 201 and retried.headers.get("idempotent-replayed") == "true"  # the same game
    assert retried.json()["id"] == client_game.json()["id"]
    # A client's record under "external_id:m-9" whose body is another game: a post of external_id m-9 is new.
    h = bearer(key) | {"Idempotency-Key": "external_id:m-9"}
    assert client.post("/v1/ladders/test/games", json=game(["c"], ["d"]), headers=h).status_code == 201
    own = client.post("/v1/ladders/test/games", json=game(["c"], ["d"], external_id="m-9"), headers=bearer(key))
    assert own.status_code == 201 and "idempotent-replayed" not in own.headers
    assert own.json()["external_id"] == "m-9"
    assert len(client.get("/v1/ladders/test/games").json()["items"]) == 3


def test_the_longest_external_ids_are_idempotency_keys_apart(client):
    """External ids of 200 characters, the longest taken, that differ only at the end: each game is its own, and
    each retried is replayed (the record's key once cut them to one on PostgreSQL: a 409, then a 500)."""
    key = make_ladder(client)
    first, second = "x" * 199 + "1", "x" * 199 + "2"
    bodies = [game(["a"], ["b"], external_id=first), game(["b"], ["a"], external_id=second)]
    posted = [client.post("/v1/ladders/test/games", json=body, headers=bearer(key)) for body in bodies]
    assert [r.status_code for r in posted] == [201, 201], [r.text for r in posted]
    for body, r in zip(bodies, posted, strict=True):
        again = client.post("/v1/ladders/test/games", json=body, headers=bearer(key))
        assert again.status_code == 201 and again.headers["idempotent-replayed"] == "true"
        assert again.json()["id"] == r.json()["id"]
    assert len(client.get("/v1/ladders/test/games").json()["items"]) == 2


def test_batch_is_all_or_nothing_and_names_the_bad_game(client):
    key = make_ladder(client, auto_create_players=False)
    for name in "abc":
        client.post("/v1/ladders/test/players", json={"key": name}, headers=bearer(key))
    before = state(client)
    bad = {"games": [game(["a"], ["b"]), game(["b"], ["c"]), game(["a"], ["zed"])]}
    r = client.post("/v1/ladders/test/games/batch", json=bad, headers=bearer(key))
    assert r.status_code == 422
    assert r.json()["errors"][0]["field"] == "games[2].sides[1].players[0]"
    assert state(client) == before
    ok = client.post("/v1/ladders/test/games/batch", json={"games": bad["games"][:2]}, headers=bearer(key))
    assert ok.status_code == 201
    ids = [g["id"] for g in ok.json()["games"]]
    assert ids == sorted(ids)
    assert client.get("/v1/ladders/test/audit").json()["consistent"]


PLAYED = '{"sides": [{"players": ["a"], "rank": 1}, {"players": ["b"], "rank": 2}], "played_at": "WHEN"}'
BAD_GAMES = [
    ('{"sides": [{"players": ["a"], "rank": NaN}, {"players": ["b"], "rank": 2}]}', "sides[0].rank"),
    (
        '{"sides": [{"players": ["a"], "rank": 1, "advantage": Infinity}, {"players": ["b"], "rank": 2}]}',
        "sides[0].advantage",
    ),
    ('{"sides": [{"players": ["a"], "rank": 1}, {"players": ["a"], "rank": 2}]}', "sides"),
    ('{"sides": [{"players": ["a"], "rank": 1}]}', "sides"),
    ('{"sides": [{"players": [], "rank": 1}, {"players": ["b"], "rank": 2}]}', "sides[0].players"),
    ('{"sides": [{"players": ["a"], "rank": 1}, {"players": ["b"], "score": 2}]}', "sides"),
    (
        '{"sides": [{"players": ["a"], "rank": 1, "win_probability": 0}, {"players": ["b"], "rank": 2}]}',
        "sides[0].win_probability",
    ),
    (
        '{"sides": [{"players": ["a"], "rank": 1, "win_probability": 1}, {"players": ["b"], "rank": 2}]}',
        "sides[0].win_probability",
    ),
    ('{"sides": [{"players": ["a"], "rank": "first"}, {"players": ["b"], "rank": 2}]}', "sides[0].rank"),
    ('{"sides": "a beat b"}', "sides"),
    ("not json", "body"),
    # Strict types: no booleans or strings for numbers (true would rank as 1, "1" would be taken as 1).
    ('{"sides": [{"players": ["a"], "rank": true}, {"players": ["b"], "rank": 2}]}', "sides[0].rank"),
    ('{"sides": [{"players": ["a"], "rank": "1"}, {"players": ["b"], "rank": 2}]}', "sides[0].rank"),
    ('{"sides": [{"players": ["a"], "score": false}, {"players": ["b"], "score": 2}]}', "sides[0].score"),
    # A sane window for played_at; the latest zone would overflow the date in UTC.
    (PLAYED.replace("WHEN", "9999-12-31T23:59:59-14:00"), "played_at"),
    (PLAYED.replace("WHEN", "1000-01-01T00:00:00Z"), "played_at"),
    # A win probability more than 50 logits from even (5e-324 is -744 logits).
    (
        '{"sides": [{"players": ["a"], "rank": 1, "win_probability": 5e-324}, {"players": ["b"], "rank": 2}]}',
        "sides[0]",
    ),
    (
        '{"sides": [{"players": ["a"], "rank": 1, "advantage": true}, {"players": ["b"], "rank": 2}]}',
        "sides[0].advantage",
    ),
]


@pytest.mark.parametrize(("raw", "field"), BAD_GAMES)
def test_bad_games_change_nothing_and_name_the_field(client, raw, field):
    key = make_ladder(client)
    client.post("/v1/ladders/test/games", json=game(["a"], ["b"]), headers=bearer(key))
    before = state(client)
    r = client.post("/v1/ladders/test/games", content=raw, headers=bearer(key) | {"Content-Type": "application/json"})
    assert r.status_code == 422, r.text
    assert r.headers["content-type"] == "application/problem+json"
    problem = r.json()
    assert {"type", "title", "status", "detail"} <= problem.keys()
    assert any(e["field"].startswith(field) for e in problem["errors"]), problem
    assert state(client) == before


def test_unknown_player_when_auto_create_is_off(client):
    key = make_ladder(client, auto_create_players=False)
    client.post("/v1/ladders/test/players", json={"key": "a"}, headers=bearer(key))
    r = client.post("/v1/ladders/test/games", json=game(["a"], ["ghost"]), headers=bearer(key))
    assert r.status_code == 422
    assert r.json()["errors"][0]["field"] == "sides[1].players[0]"
    assert client.get("/v1/ladders/test/players/a").json()["games"] == 0


def test_bad_vectors_are_rejected(client):
    key = make_ladder(client, k=2)
    for vector, field in [([1, 2], "vector"), (["x", 1, 2, 3], "vector[0]")]:
        r = client.post("/v1/ladders/test/players", json={"key": "a", "vector": vector}, headers=bearer(key))
        assert r.status_code == 422
        assert r.json()["errors"][0]["field"] == field
    r = client.post(
        "/v1/ladders/test/players",
        content='{"key": "a", "vector": [1, 2, NaN, 3]}',
        headers=bearer(key) | {"Content-Type": "application/json"},
    )
    assert r.status_code == 422
    assert client.get("/v1/ladders/test/players/a").status_code == 404


def test_auth_and_unknown_ladder(client):
    key = make_ladder(client)
    assert client.post("/v1/ladders/test/games", json=game(["a"], ["b"])).status_code == 401
    assert client.post("/v1/ladders/test/games", json=game(["a"], ["b"]), headers=bearer("nope")).status_code == 403
    assert client.post("/v1/ladders/test/games", json=game(["a"], ["b"]), headers=admin()).status_code == 201
    r = client.post("/v1/ladders/nope/games", json=game(["a"], ["b"]), headers=bearer(key))
    assert r.status_code == 404 and r.headers["content-type"] == "application/problem+json"
    assert client.post("/v1/ladders", json={"slug": "x"}, headers=bearer(key)).status_code == 403
    assert client.post("/v1/ladders", json={"slug": "test"}, headers=admin()).status_code == 409


def test_oversize_payload_is_refused(client, settings):
    key = make_ladder(client)
    huge = game(["a"], ["b"], external_id="x" * 150)
    huge["sides"] += [{"players": [f"p{i}"], "rank": 3} for i in range(settings.max_body_bytes // 20)]
    r = client.post("/v1/ladders/test/games", json=huge, headers=bearer(key))
    assert r.status_code == 413
    assert r.headers["content-type"] == "application/problem+json"
    batch = {"games": [game(["a"], ["b"])] * (settings.max_batch_games + 1)}
    assert client.post("/v1/ladders/test/games/batch", json=batch, headers=bearer(key)).status_code == 422
    assert client.get("/v1/ladders/test").json()["games"] == 0


def test_a_batch_is_bounded_by_its_player_appearances(settings):
    with TestClient(create_app(settings.model_copy(update={"max_batch_players": 50}))) as client:
        key = make_ladder(client)
        team = {"sides": [{"players": [f"a{i}" for i in range(8)], "rank": 1},
                          {"players": [f"b{i}" for i in range(8)], "rank": 2}]}  # fmt: skip
        r = client.post("/v1/ladders/test/games/batch", json={"games": [team] * 4}, headers=bearer(key))
        assert r.status_code == 422 and "64 here" in r.json()["detail"] and r.json()["errors"][0]["field"] == "games"
        assert (
            client.post("/v1/ladders/test/games/batch", json={"games": [team] * 3}, headers=bearer(key)).status_code
            == 201
        )
        assert client.get("/v1/ladders/test").json()["games"] == 3


def test_a_game_reads_back_as_posted_with_times_in_utc(client):
    key = make_ladder(client, k=2)
    body = {
        "sides": [
            {"players": ["a", "b"], "rank": 2},
            {"players": ["c"], "rank": 1, "win_probability": 0.6},
            {"players": ["d"], "rank": 2},
        ],
        "played_at": "2026-05-01T12:30:00+02:00",
    }
    posted = client.post("/v1/ladders/test/games", json=body, headers=bearer(key)).json()
    assert posted["played_at"] == "2026-05-01T10:30:00Z"
    # The pair chances of a game of three sides are the post's answer alone (the game read later has none).
    assert len(posted["matrix"]) == 3
    assert client.get(f"/v1/ladders/test/games/{posted['id']}").json() == posted | {"matrix": None}
    naive = client.post(
        "/v1/ladders/test/games", json=game(["a"], ["c"], played_at="2026-05-02T08:00:00"), headers=bearer(key)
    )
    assert naive.json()["played_at"] == "2026-05-02T08:00:00Z"
    a = client.get("/v1/ladders/test/players/a").json()
    assert a["last_played_at"] == "2026-05-02T08:00:00Z"
    assert a["created_at"].endswith("Z")
    c = client.get("/v1/ladders/test/players/c").json()  # an older game does not move last_played_at back
    client.post(
        "/v1/ladders/test/games", json=game(["c"], ["d"], played_at="2020-01-01T00:00:00Z"), headers=bearer(key)
    )
    assert client.get("/v1/ladders/test/players/c").json()["last_played_at"] == c["last_played_at"]


def test_games_are_numbered_within_their_ladder(client):
    key = make_ladder(client)
    other = make_ladder(client, "other")
    seqs = []
    for _ in range(3):
        seqs.append(client.post("/v1/ladders/test/games", json=game(["a"], ["b"]), headers=bearer(key)).json()["seq"])
        client.post("/v1/ladders/other/games", json=game(["c"], ["d"]), headers=bearer(other))
    batch = {"games": [game(["a"], ["b"]), game(["b"], ["a"])]}
    seqs += [
        g["seq"] for g in client.post("/v1/ladders/test/games/batch", json=batch, headers=bearer(key)).json()["games"]
    ]
    assert seqs == [1, 2, 3, 4, 5]
    listed = client.get("/v1/ladders/test/games").json()["items"]
    assert [g["seq"] for g in listed] == [5, 4, 3, 2, 1]
    assert [g["seq"] for g in client.get("/v1/ladders/other/games").json()["items"]] == [3, 2, 1]
    client.delete(f"/v1/ladders/test/games/{listed[2]['id']}", headers=bearer(key))  # a voided game keeps its number
    assert client.post("/v1/ladders/test/games", json=game(["a"], ["b"]), headers=bearer(key)).json()["seq"] == 6
    history = client.get("/v1/ladders/test/players/a/history").json()["items"]
    assert [item["seq"] for item in history] == [6, 5, 4, 2, 1]


def test_a_game_answer_gives_each_players_elo_change_as_the_leaderboard_shows_it(client):
    key = make_ladder(client)
    for winner, loser in [("a", "b"), ("b", "c"), ("c", "a"), ("a", "c")]:
        r = client.post("/v1/ladders/test/games", json=game([winner], [loser]), headers=bearer(key))
        assert r.status_code == 201, r.text
    won, lost = (side["players"][0] for side in r.json()["sides"])
    assert won["elo_change"] > 0 > lost["elo_change"]
    for p in (won, lost):
        assert p["elo_change"] == pytest.approx(p["elo_after"] - p["elo_before"], abs=1e-9)
        elo = client.get(f"/v1/ladders/test/players/{p['key']}").json()["elo"]
        assert p["elo_after"] == pytest.approx(elo, abs=1e-9)  # the leaderboard's points, just after the game
    # Read back later, the same game is shown against today's field: here nothing changed since.
    stored = client.get(f"/v1/ladders/test/games/{r.json()['id']}").json()
    assert stored["sides"][0]["players"][0]["elo_after"] == pytest.approx(won["elo_after"], abs=1e-9)
    # A doubles game: every member's change.
    r = client.post("/v1/ladders/test/games", json=game(["a", "b"], ["c", "d"]), headers=bearer(key))
    changes = [p["elo_change"] for side in r.json()["sides"] for p in side["players"]]
    assert changes[0] > 0 and changes[1] > 0 and changes[2] < 0 and changes[3] < 0


def test_an_unknown_query_parameter_is_named_in_a_422(client):
    make_ladder(client)
    r = client.get("/v1/ladders/test/games", params={"player": "ann", "limit": 5})
    assert r.status_code == 422 and r.headers["content-type"] == "application/problem+json"
    assert [e["field"] for e in r.json()["errors"]] == ["player"] and "cursor, limit" in r.json()["detail"]
    r = client.get("/v1/ladders/test/predict", params={"a": "x", "b": "y", "c": "z"})
    assert r.status_code == 422 and r.json()["errors"][0]["field"] == "c"
    assert client.get("/v1/ladders/test", params={"verbose": 1}).json()["errors"][0]["field"] == "verbose"
    assert client.get("/v1/ladders/test/games", params={"limit": 5}).status_code == 200
