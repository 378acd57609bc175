import base64
import json
import re
from pathlib import Path

import numpy as np
import pytest

from app import rating
from tests.conftest import admin, bearer, make_ladder

ROOT = Path(__file__).resolve().parents[2]

C_SEED = {"p1": [3.0, 0.0], "p2": [1.0, 2.0], "p3": [-1.0, -1.0]}


@pytest.fixture
def seeded(client):
    key = make_ladder(client, k=1, eta=0.0, rate_rule="steps")  # frozen: vectors stay as given
    for name, vec in C_SEED.items():
        client.post("/v1/ladders/test/players", json={"key": name, "vector": vec}, headers=bearer(key))
    return key


def test_predict_pair_and_match(client, seeded):
    r = client.get("/v1/ladders/test/predict", params={"a": "p1", "b": "p2"}).json()
    assert r["probability"] == pytest.approx(0.99752738)
    assert r["advantage_logits"] == pytest.approx(6.0)
    assert r["advantage_elo"] == pytest.approx(6.0 * 400 / np.log(10))
    m = client.post("/v1/ladders/test/predict", json={"sides": [{"players": ["p1"]}, {"players": ["p2", "p3"]}]})
    team = np.mean([C_SEED["p2"], C_SEED["p3"]], axis=0)
    assert m.json()["matrix"][0][1] == pytest.approx(float(rating.win_probability(C_SEED["p1"], team)))
    assert sum(m.json()["expected_scores"]) == pytest.approx(1.0)
    assert m.json()["sides"] == [
        {"players": [{"key": "p1", "known": True}], "seat": None},
        {"players": [{"key": "p2", "known": True}, {"key": "p3", "known": True}], "seat": None},
    ]
    assert r["a_known"] and r["b_known"]


def test_a_prediction_may_name_players_not_created_yet(client, seeded):
    new = client.get("/v1/ladders/test/predict", params={"a": "p1", "b": "Zed"})
    assert new.status_code == 200 and new.json()["a_known"] and not new.json()["b_known"], new.text
    m = client.post("/v1/ladders/test/predict", json={"sides": [{"players": ["p1"]}, {"players": ["p2", "zed"]}]})
    assert m.status_code == 200 and [p["known"] for side in m.json()["sides"] for p in side["players"]] == [
        True,
        True,
        False,
    ]
    # The vector it used is the one their first game starts from.
    game = {"sides": [{"players": ["p1"], "rank": 1}, {"players": ["zed"], "rank": 2}]}
    posted = client.post("/v1/ladders/test/games", json=game, headers=bearer(seeded)).json()
    start = posted["sides"][1]["players"][0]["before"]
    assert new.json()["advantage_logits"] == pytest.approx(float(rating.advantage(C_SEED["p1"], start)), abs=1e-12)
    assert client.get("/v1/ladders/test/predict", params={"a": "p1", "b": "zed"}).json()["b_known"]
    assert client.get("/v1/ladders/nowhere/predict", params={"a": "p1", "b": "zed"}).status_code == 404


def test_leaderboard_orders_by_invariants_and_paginates(client, seeded):
    C = np.array(list(C_SEED.values()))
    hodge = rating.hodge_strength(C)
    board = client.get("/v1/ladders/test/leaderboard").json()
    assert [i["key"] for i in board["items"]] == [list(C_SEED)[i] for i in np.argsort(-hodge)]
    assert board["items"][0]["elo"] == pytest.approx(float(rating.elo_equivalent(hodge.max())))
    first = client.get("/v1/ladders/test/leaderboard?limit=2").json()
    rest = client.get("/v1/ladders/test/leaderboard", params={"limit": 2, "cursor": first["next_cursor"]}).json()
    assert [i["key"] for i in first["items"] + rest["items"]] == [i["key"] for i in board["items"]]
    assert [i["rank"] for i in first["items"] + rest["items"]] == [1, 2, 3]
    assert rest["next_cursor"] is None
    field = client.get("/v1/ladders/test/leaderboard?by=field").json()["items"]
    np.testing.assert_allclose(sorted(i["strength"] for i in field), sorted(rating.field_score(C)))
    assert client.get("/v1/ladders/test/leaderboard?by=raw").status_code == 422
    assert client.get("/v1/ladders/test/leaderboard?cursor=!!").status_code == 422


def test_conservative_order_puts_established_players_first_and_paginates(client):
    key = make_ladder(client, k=1)
    results = [("a", "b"), ("b", "c"), ("c", "a"), ("a", "b"), ("a", "c"), ("b", "c")] * 2 + [("new", "c")]
    for winner, loser in results:
        body = {"sides": [{"players": [winner], "rank": 1}, {"players": [loser], "rank": 2}]}
        assert client.post("/v1/ladders/test/games", json=body, headers=bearer(key)).status_code == 201
    items = client.get("/v1/ladders/test/leaderboard?by=conservative").json()["items"]
    assert [i["key"] for i in items][-1] == "new"  # one win, provisional: below the regulars whatever its Elo
    new = items[-1]
    assert new["provisional"] and "1 of the 3 results" in new["provisional_reason"]
    assert all(not i["provisional"] and i["provisional_reason"] is None for i in items[:-1])
    assert new["results_to_rank"] == 2 and all(i["results_to_rank"] == 0 for i in items[:-1])  # "2 more games"
    established = items[:-1]
    assert [i["conservative"] for i in established] == sorted((i["conservative"] for i in established), reverse=True)
    for i in items:  # the conservative strength is the Elo minus two standard errors, in Elo points
        assert i["strength"] == i["conservative"] == pytest.approx(i["elo"] - 2 * i["strength_se"])
    assert new["strength_se"] > max(i["strength_se"] for i in established)  # one game: the widest interval
    profile = client.get("/v1/ladders/test/players/new").json()
    assert profile["strength_se"] == pytest.approx(new["strength_se"])
    assert profile["conservative"] == pytest.approx(new["conservative"])
    pages, cursor = [], None
    while True:  # one player a page, across the group boundary
        params = {"by": "conservative", "limit": 1} | ({"cursor": cursor} if cursor else {})
        page = client.get("/v1/ladders/test/leaderboard", params=params).json()
        pages += page["items"]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert [i["key"] for i in pages] == [i["key"] for i in items]
    assert [i["rank"] for i in pages] == [1, 2, 3, 4]
    bad = base64.urlsafe_b64encode(json.dumps([2, 0.0, "a"]).encode()).decode()
    assert client.get("/v1/ladders/test/leaderboard", params={"by": "conservative", "cursor": bad}).status_code == 422
    assert profile["results_to_rank"] == 2
    # A free-for-all of three is two results for each: one more to be ranked, whatever the places.
    body = {"sides": [{"players": [p], "rank": n} for n, p in enumerate(["x", "y", "z"], start=1)]}
    assert client.post("/v1/ladders/test/games", json=body, headers=bearer(key)).status_code == 201
    for p in ("x", "y", "z"):
        player = client.get(f"/v1/ladders/test/players/{p}").json()
        assert player["provisional"] and player["results_to_rank"] == 1


def test_a_rating_moves_when_the_field_does_and_the_change_is_shown(client):
    key = make_ladder(client, k=1)

    def play(winner: str, loser: str) -> int:
        body = {"sides": [{"players": [winner], "rank": 1}, {"players": [loser], "rank": 2}]}
        r = client.post("/v1/ladders/test/games", json=body, headers=bearer(key))
        assert r.status_code == 201, r.text
        return r.json()["id"]

    play("a", "b")
    just_after = client.get("/v1/ladders/test/players/a").json()
    assert just_after["change_since_last_game"] == pytest.approx(0.0, abs=1e-9)
    for _ in range(6):  # a does not play; b loses to c and d again and again: the field moves
        play("c", "b")
        play("d", "b")
    now = client.get("/v1/ladders/test/players/a").json()
    assert now["vector"] == just_after["vector"]  # a's own rating is untouched ...
    assert now["elo"] != just_after["elo"]  # ... but its strength against the field is not
    assert now["change_since_last_game"] == pytest.approx(now["elo"] - just_after["elo"], abs=1e-6)
    board = {row["key"]: row for row in client.get("/v1/ladders/test/leaderboard").json()["items"]}
    assert board["a"]["change_since_last_game"] == now["change_since_last_game"]
    assert board["b"]["change_since_last_game"] == pytest.approx(0.0, abs=1e-9)  # b just played
    assert client.get("/v1/ladders/test").json()["players"] == 4
    # A new player joins the field (no game yet: nothing to show), and games keep the sums right.
    client.post("/v1/ladders/test/players", json={"key": "e"}, headers=bearer(key))
    assert client.get("/v1/ladders/test/players/e").json()["change_since_last_game"] is None
    last = play("e", "c")
    assert client.get("/v1/ladders/test/players/e").json()["change_since_last_game"] == pytest.approx(0.0, abs=1e-9)
    # After a replay (a void) the moment just after the replayed players' games is unknown.
    assert client.delete(f"/v1/ladders/test/games/{last}", headers=bearer(key)).status_code == 200
    assert client.get("/v1/ladders/test/players/c").json()["change_since_last_game"] is None
    play("c", "a")
    assert client.get("/v1/ladders/test/players/c").json()["change_since_last_game"] == pytest.approx(0.0, abs=1e-9)


def test_history_opponents_and_game_pages(client):
    key = make_ladder(client, k=1, eta=0.1)
    h = bearer(key)
    for n in range(5):
        winner, loser = ("ann", "bob") if n % 2 else ("bob", "ann")
        body = {"sides": [{"players": [winner], "rank": 1}, {"players": [loser, "cy"][: 1 + (n == 4)], "rank": 2}]}
        assert client.post("/v1/ladders/test/games", json=body, headers=h).status_code == 201
    hist = client.get("/v1/ladders/test/players/ann/history?limit=3").json()
    assert len(hist["items"]) == 3
    newest = hist["items"][0]
    assert newest["opponents"] == ["bob"]  # cy was her teammate in the last game
    assert newest["after"] == client.get("/v1/ladders/test/players/ann").json()["vector"]
    older = client.get("/v1/ladders/test/players/ann/history", params={"cursor": hist["next_cursor"]}).json()
    ids = [i["game_id"] for i in hist["items"] + older["items"]]
    assert ids == sorted(ids, reverse=True) and len(ids) == 5
    assert hist["items"][0]["before"] == hist["items"][1]["after"]

    opp = client.get("/v1/ladders/test/players/ann/opponents?limit=5").json()["items"]
    assert {o["key"] for o in opp} == {"bob", "cy"}
    gaps = [abs(o["probability"] - 0.5) for o in opp]
    assert gaps == sorted(gaps)

    page = client.get("/v1/ladders/test/games?limit=2").json()
    nxt = client.get("/v1/ladders/test/games", params={"limit": 2, "cursor": page["next_cursor"]}).json()
    assert page["items"][0]["id"] > page["items"][1]["id"] > nxt["items"][0]["id"]
    one = client.get(f"/v1/ladders/test/games/{page['items'][0]['id']}").json()
    assert one == page["items"][0]
    assert client.get("/v1/ladders/test/games/999999").status_code == 404


def test_openapi_and_health(client):
    assert client.get("/healthz").json() == {"status": "ok"}
    spec = client.get("/openapi.json").json()
    post = spec["paths"]["/v1/ladders/{slug}/games"]["post"]
    assert "application/problem+json" in post["responses"]["422"]["content"]
    assert {"/v1/ladders/{slug}/leaderboard", "/v1/ladders/{slug}/audit", "/v1/ladders/{slug}/predict"} <= set(
        spec["paths"]
    )


def test_every_operation_has_a_camel_case_id_a_tag_and_examples_of_its_body(client):
    """What a generated client is made from: ids such as postGame (not post_game_v1_ladders__slug__games_post),
    one tag per resource, an example of every request body, and the problems each route may answer."""
    spec = client.get("/openapi.json").json()
    operations = [(path, method, op) for path, ops in spec["paths"].items() for method, op in ops.items()]
    ids = [op["operationId"] for _, _, op in operations]
    assert len(ids) == len(set(ids)) and all(re.fullmatch(r"[a-z]+(?:[A-Z][a-z]+)*", i) for i in ids), ids
    assert {"postGame", "postGames", "getLeaderboard", "predictPair", "predictMatch", "voidGame"} <= set(ids)
    schemas = spec["components"]["schemas"]
    for path, method, op in operations:
        assert len(op["tags"]) == 1, (path, method)
        assert "application/problem+json" in op["responses"]["422"]["content"], (path, method)
        if "application/json" in op.get("requestBody", {}).get("content", {}):  # (Slack's command is a form)
            body = op["requestBody"]["content"]["application/json"]["schema"]
            name = (body.get("$ref") or body["anyOf"][0]["$ref"]).rsplit("/", 1)[1]
            assert schemas[name].get("examples"), (path, method, name)


def test_ladder_defaults_come_from_the_quality_benchmark(client):
    make_ladder(client, slug="plain")
    ladder = client.get("/v1/ladders/plain").json()
    chosen = json.loads((ROOT / "bench" / "results" / "quality.json").read_text())["chosen"]
    assert (ladder["k"], ladder["eta_tau"], ladder["init_scale"]) == (chosen["k"], chosen["tau"], chosen["scale"])
    assert ladder["init_offset"] == [0.0, chosen["offset"], 0.0, 0.0]  # near the Elo manifold c = (r, 1)
    assert ladder["auto_refit"] is True
    # The online rule: the one bench/quality_defaults.py replayed ahead of tuned Elo on every real stream.
    measured = json.loads((ROOT / "bench" / "results" / "quality_defaults.json").read_text())
    rule = measured["defaults"]
    assert (ladder["rate_rule"], ladder["eta"], ladder["noise"]) == (rule["rule"], rule["eta"], rule["noise"])
    assert (ladder["drift"], ladder["cycles"]) == (rule["drift"], rule["cycles"])
    assert measured["rows"][0]["candidate"] == rule and measured["rows"][0]["worst margin over Elo"] < 0
    make_ladder(client, slug="stepped", rate_rule="steps")  # the step's own η
    assert client.get("/v1/ladders/stepped").json()["eta"] == chosen["eta"]
    make_ladder(client, slug="seed", k=1, eta=0.1, eta_tau=None, init_scale=0.5, init_offset=[0.0, 0.0])
    seed = client.get("/v1/ladders/seed").json()
    assert (seed["eta_tau"], seed["init_offset"]) == (None, [0.0, 0.0])
    assert client.get("/v1/ladders").json()["items"][0]["slug"] == "plain"


def test_ids_and_cursors_beyond_what_the_database_stores_are_422(client):
    key = make_ladder(client)
    game = {"sides": [{"players": ["a"], "rank": 1}, {"players": ["b"], "rank": 2}]}
    client.post("/v1/ladders/test/games", json=game, headers=bearer(key))
    huge = 2**70
    history_cursor = base64.urlsafe_b64encode(json.dumps(huge).encode()).decode()
    true_cursor = base64.urlsafe_b64encode(b"true").decode()
    for path in [
        f"/v1/ladders/test/games/{huge}",
        f"/v1/ladders/test/games?cursor={huge}",
        f"/v1/ladders/test/refits/{huge}",
        f"/v1/ladders/test/players/a/history?cursor={history_cursor}",
        f"/v1/ladders/test/players/a/history?cursor={true_cursor}",
        "/v1/ladders/test/leaderboard?cursor=" + base64.urlsafe_b64encode(b'["abc", "x"]').decode(),
        "/v1/ladders/test/leaderboard?cursor=" + base64.urlsafe_b64encode(b'[[1], {"a": 2}]').decode(),
    ]:
        r = client.get(path)
        assert r.status_code == 422 and r.headers["content-type"] == "application/problem+json", (path, r.text)
    assert client.delete(f"/v1/ladders/test/games/{huge}", headers=bearer(key)).status_code == 422
    assert client.delete(f"/v1/ladders/test/keys/{huge}", headers=bearer(key)).status_code == 422


def test_players_can_be_renamed_and_made_inactive(client):
    key = make_ladder(client)
    for winner, loser in [("a", "b"), ("b", "c"), ("c", "a"), ("a", "c")]:
        game = {"sides": [{"players": [winner], "rank": 1}, {"players": [loser], "rank": 2}]}
        client.post("/v1/ladders/test/games", json=game, headers=bearer(key))
    vector = client.get("/v1/ladders/test/players/b").json()["vector"]
    r = client.patch("/v1/ladders/test/players/b", json={"name": "Bea", "active": False}, headers=bearer(key))
    assert r.status_code == 200 and r.json()["name"] == "Bea" and r.json()["active"] is False
    assert r.json()["vector"] == vector  # ratings stay
    board = client.get("/v1/ladders/test/leaderboard").json()["items"]
    assert [row["key"] for row in board] == [k for k in ("a", "c") if k in [row["key"] for row in board]]
    assert "b" not in [row["key"] for row in board] and [row["rank"] for row in board] == [1, 2]
    everyone = client.get("/v1/ladders/test/leaderboard?inactive=true").json()["items"]
    assert {row["key"]: row["active"] for row in everyone} == {"a": True, "b": False, "c": True}
    assert client.get("/v1/ladders/test/players/b/history").json()["items"]  # history stays
    assert (
        client.patch("/v1/ladders/test/players/b", json={"active": True}, headers=bearer(key)).json()["name"] == "Bea"
    )
    assert len(client.get("/v1/ladders/test/leaderboard").json()["items"]) == 3
    assert client.patch("/v1/ladders/test/players/zed", json={"name": "Z"}, headers=bearer(key)).status_code == 404
    assert client.patch("/v1/ladders/test/players/b", json={"name": "X"}).status_code == 401
    for body, field in [
        ({"active": "no"}, "active"),
        ({"active": None}, "active"),
        ({"key": "b b "}, "key"),
        ({"key": None}, "key"),
    ]:
        r = client.patch("/v1/ladders/test/players/b", json=body, headers=bearer(key))
        assert r.status_code == 422 and r.json()["errors"][0]["field"] == field, (body, r.text)


def cursor_of(value) -> str:
    return base64.urlsafe_b64encode(json.dumps(value).encode()).decode()


def test_a_leaderboard_cursor_continues_only_the_listing_it_came_from(client):
    # Frozen, on the Elo manifold: every order exists (by=disc too).
    key = make_ladder(client, k=1, eta=0.0, rate_rule="steps")
    for n, r in enumerate([0.4, -1.0, 2.0, 0.9, -0.3, 1.5]):
        vector = [r, 1.0 + 0.1 * n]
        client.post("/v1/ladders/test/players", json={"key": "abcdef"[n], "vector": vector}, headers=bearer(key))
    client.patch("/v1/ladders/test/players/e", json={"active": False}, headers=bearer(key))

    def walk(**query) -> list[str]:
        keys, cursor = [], None
        while True:
            params = query | {"limit": 2} | ({"cursor": cursor} if cursor else {})
            page = client.get("/v1/ladders/test/leaderboard", params=params).json()
            keys += [row["key"] for row in page["items"]]
            if (cursor := page["next_cursor"]) is None:
                return keys

    orders = [("hodge", False), ("field", False), ("disc", False), ("conservative", False), ("hodge", True)]
    for by, inactive in orders:  # every listing walks page by page to its whole
        whole = client.get("/v1/ladders/test/leaderboard", params={"by": by, "inactive": inactive}).json()["items"]
        assert walk(by=by, inactive=inactive) == [row["key"] for row in whole], (by, inactive)
    cursors = {}
    for by, inactive in orders:
        query = {"by": by, "inactive": inactive, "limit": 2}
        cursors[by, inactive] = client.get("/v1/ladders/test/leaderboard", params=query).json()["next_cursor"]
    for made in orders:
        for used in orders:
            query = {"by": used[0], "inactive": used[1], "limit": 2, "cursor": cursors[made]}
            r = client.get("/v1/ladders/test/leaderboard", params=query)
            if made == used:
                assert r.status_code == 200 and r.json()["items"][0]["rank"] == 3, (made, used, r.text)
                continue
            # Another order or another set of players: refused, not an empty or shifted page.
            assert r.status_code == 422 and r.headers["content-type"] == "application/problem+json", (made, used)
            assert r.json()["errors"][0]["field"] == "cursor" and f"by={made[0]}" in r.json()["detail"], r.json()
    # A cursor of the old form (no ordering in it) could be for any order: refused too.
    hodge = client.get("/v1/ladders/test/leaderboard?limit=2").json()["items"]
    legacy = cursor_of([hodge[1]["strength"], hodge[1]["key"]])
    assert client.get("/v1/ladders/test/leaderboard", params={"cursor": legacy}).status_code == 422


def _walk(client, path: str, limit: int, headers: dict | None = None) -> tuple[list[dict], int]:
    """Every item of a paged list, ``limit`` at a time: (the items, how many pages)."""
    items, cursor, pages = [], None, 0
    while True:
        sep = "&" if "?" in path else "?"
        url = f"{path}{sep}limit={limit}" + (f"&cursor={cursor}" if cursor else "")
        page = client.get(url, headers=headers)
        assert page.status_code == 200, page.text
        assert set(page.json()) == {"items", "next_cursor"}
        items += page.json()["items"]
        cursor, pages = page.json()["next_cursor"], pages + 1
        if cursor is None:
            return items, pages


def test_every_list_pages_with_items_and_next_cursor(client):
    """Ladders, keys, refits and opponents answer the leaderboard's and the games' envelope, and walking them two
    at a time lists each item once, in order."""
    keys = {slug: make_ladder(client, slug, k=1) for slug in "acbed"}
    client.patch("/v1/ladders/d", json={"private": True}, headers=bearer(keys["d"]))
    ladders, pages = _walk(client, "/v1/ladders", 2)
    assert [row["slug"] for row in ladders] == [
        "a",
        "b",
        "c",
        "e",
    ] and pages == 2  # no empty page after a full last one
    assert [row["slug"] for row in _walk(client, "/v1/ladders", 2, admin())[0]] == ["a", "b", "c", "d", "e"]
    h = bearer(keys["a"])
    for n in range(4):
        client.post("/v1/ladders/a/keys", json={"name": f"k{n}", "role": "read"}, headers=h)
    listed, pages = _walk(client, "/v1/ladders/a/keys", 2, h)
    assert [row["name"] for row in listed][1:] == ["k0", "k1", "k2", "k3"] and pages == 3  # the first key too
    games = [
        {"sides": [{"players": [f"p{i}"], "rank": 1}, {"players": [f"p{j}"], "rank": 2}]}
        for i in range(6)
        for j in range(6)
        if i != j
    ]
    client.post("/v1/ladders/a/games/batch", json={"games": games}, headers=h)
    opponents, _ = _walk(client, "/v1/ladders/a/players/p0/opponents", 2)
    one_page = client.get("/v1/ladders/a/players/p0/opponents?limit=100").json()
    assert opponents == one_page["items"] and len(opponents) == 5 and one_page["next_cursor"] is None
    for _ in range(2):
        started = client.post("/v1/ladders/a/refits", json={"restarts": 1}, headers=h)
        assert started.status_code == 202, started.text
        job = started.json()
        while job["status"] in ("queued", "running"):
            job = client.get(started.headers["location"]).json()
    refits, pages = _walk(client, "/v1/ladders/a/refits", 1)
    assert [row["id"] for row in refits] == sorted((row["id"] for row in refits), reverse=True) and pages == 2
    for path in (
        "/v1/ladders?cursor=nope",
        "/v1/ladders/a/refits?cursor=0",
        "/v1/ladders/a/players/p0/opponents?cursor=1000",
    ):
        assert client.get(path, headers=h).status_code == 422, path
