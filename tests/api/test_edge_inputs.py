"""Strange input gets a 4xx problem naming the field, the same on both databases, and changes nothing."""

from __future__ import annotations

import base64
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from devtools.server import ADMIN_KEY
from tests.api.helpers import duel, problem, wait
from tests.conftest import admin, bearer, make_ladder

BAD_TEXT = {
    "NUL": "a\x00b",
    "control": "a\x07b",
    "bidi override": "ann\u202egnp.exe",
    "bidi isolate": "\u2066bob",
    "zero width": "a\u200bb",
    "line separator": "a\u2028b",
    "surrogate-free private use": "a\ue000b",
}


@pytest.mark.parametrize("text", BAD_TEXT.values(), ids=BAD_TEXT.keys())
def test_identifiers_with_invisible_or_control_characters_are_refused(client, text):
    key = make_ladder(client)
    h = bearer(key)
    problem(client.post("/v1/ladders/test/games", json=duel(text, "b"), headers=h), 422, "sides[0].players[0]")
    problem(client.post("/v1/ladders/test/games", json=duel("a", "b", external_id=text), headers=h), 422, "external_id")
    problem(client.post("/v1/ladders/test/players", json={"key": text}, headers=h), 422, "key")
    problem(client.post("/v1/ladders/test/players", json={"key": "c", "name": text}, headers=h), 422, "name")
    problem(client.post("/v1/ladders", json={"slug": "x", "name": text}, headers=admin()), 422, "name")
    problem(client.post("/v1/ladders/test/keys", json={"name": text, "role": "write"}, headers=h), 422, "name")
    r = client.post("/v1/ladders/test/games", json=duel("a", "b"), headers=h | {"Idempotency-Key": text.encode()})
    problem(r, 422, "Idempotency-Key")
    assert client.get("/v1/ladders/test/predict", params={"a": text, "b": "b"}).status_code in (200, 422)
    assert client.get("/v1/ladders/test").json()["games"] == 0
    assert client.get("/v1/ladders/test/leaderboard").json()["items"] == []


def test_printable_unicode_keys_and_the_longest_external_id_work(client):
    key = make_ladder(client)
    for name in ("Zoë", "李小龙", "Ана Мария", "o'brien", "émile-2"):
        r = client.post("/v1/ladders/test/games", json=duel(name, "bob", external_id="x" * 200), headers=bearer(key))
        if name == "Zoë":
            assert r.status_code == 201, r.text
        else:
            problem(r, 409, "external_id")  # the same external id: taken by the first
    r = client.post("/v1/ladders/test/games", json=duel("李小龙", "bob", external_id="y" * 200), headers=bearer(key))
    assert r.status_code == 201, r.text
    assert client.get("/v1/ladders/test/players/李小龙").status_code == 200


def test_vectors_and_offsets_are_bounded(client):
    key = make_ladder(client, k=1)
    h = bearer(key)
    problem(client.post("/v1/ladders/test/players", json={"key": "a", "vector": [1e308, 1e308]}, headers=h), 422)
    problem(client.post("/v1/ladders/test/players", json={"key": "a", "vector": [0.0, 1001.0]}, headers=h), 422)
    body = {"slug": "big", "k": 1, "init_offset": [1e308, 1e308]}
    problem(client.post("/v1/ladders", json=body, headers=admin()), 422, "init_offset[0]")
    assert (
        client.post("/v1/ladders/test/players", json={"key": "a", "vector": [3.0, -1000.0]}, headers=h).status_code
        == 201
    )
    assert client.get("/v1/ladders/test/leaderboard?by=disc").status_code in (200, 409)  # 409: no dominant disc


def test_bad_refit_parameters_and_a_one_game_ladder(client):
    key = make_ladder(client, k=2)
    h = bearer(key)
    problem(client.post("/v1/ladders/test/refits", json={"select_k": [-1]}, headers=h), 422, "select_k[0]")
    assert client.post("/v1/ladders/test/games", json=duel("a", "b"), headers=h).status_code == 201
    r = client.post("/v1/ladders/test/refits", json={}, headers=h)
    assert r.status_code == 202, r.text
    job = wait(client, r.headers["Location"])
    assert job["status"] == "done" and job["result"]["heldout_note"], job


def test_duplicate_external_id_inside_a_batch_is_named_as_such(client):
    key = make_ladder(client)
    games = [duel("a", "b", external_id="m-1"), duel("b", "a", external_id="m-1")]
    body = problem(client.post("/v1/ladders/test/games/batch", json={"games": games}, headers=bearer(key)), 409)
    assert "twice" in body["detail"] and body["errors"][0]["field"] == "games[1].external_id"
    assert client.get("/v1/ladders/test").json()["games"] == 0


def test_a_chunked_body_over_the_limit_is_413(client):
    key = make_ladder(client)

    def chunks():
        yield b'{"sides": [{"players": ["a"], "rank": 1}, {"players": ["b"], "rank": 2}], "external_id": "'
        for _ in range(10 * 1024):
            yield b"x" * 1024
        yield b'"}'

    r = client.post(
        "/v1/ladders/test/games", content=chunks(), headers=bearer(key) | {"Content-Type": "application/json"}
    )
    problem(r, 413)
    assert client.get("/v1/ladders/test").json()["games"] == 0


def test_concurrent_posts_with_one_idempotency_key_and_different_bodies_apply_one(server):
    r = httpx.post(server + "/v1/ladders", json={"slug": "race"}, headers={"Authorization": f"Bearer {ADMIN_KEY}"})
    headers = {"Authorization": f"Bearer {r.json()['write_key']}"}

    def post(n: int) -> int:
        body = duel(f"p{n}", f"q{n}", external_id=None if n % 2 else f"ext-{n // 4}")
        with httpx.Client(base_url=server, timeout=60) as c:
            key = {"Idempotency-Key": f"key-{n // 4}"} if n % 2 else {}
            return c.post("/v1/ladders/race/games", json=body, headers=headers | key).status_code

    with ThreadPoolExecutor(16) as pool:
        statuses = list(pool.map(post, range(160)))
    assert set(statuses) <= {201, 409}, statuses
    games = httpx.get(server + "/v1/ladders/race").json()["games"]
    assert games == statuses.count(201) == 80  # one per Idempotency-Key, one per external_id
    assert httpx.get(server + "/v1/ladders/race/audit").json()["consistent"]


#: Dates the API takes, and what it stores: the window is checked in UTC, whatever the offset.
IN_WINDOW = {
    "1900-01-01T00:00:00Z": "1900-01-01T00:00:00Z",
    "1899-12-31T10:00:00-14:00": "1900-01-01T00:00:00Z",
    "1900-01-01T12:00:00+12:00": "1900-01-01T00:00:00Z",
    "1900-01-01": "1900-01-01T00:00:00Z",
    -2208988800: "1900-01-01T00:00:00Z",
    "2024-02-29T12:00:00.123456+05:45": "2024-02-29T06:15:00.123456Z",
}
#: The window's other end, in UTC: inside it, but a post is refused as dated in the future (an import takes them:
#: test_backup_edges).
IN_WINDOW_AHEAD = ["2200-01-01T00:00:00", "2200-01-01T14:00:00+14:00", "2199-12-31T12:00:00-12:00"]
#: Dates outside it in UTC, though their wall-clock digits are inside (or overflow a shift to UTC).
OUT_OF_WINDOW = [
    "1900-01-01T00:00:00+14:00",
    "1900-01-01T23:58:59+23:59",
    "1899-12-31T23:59:59.999999Z",
    "2200-01-01T00:00:00-12:00",
    "2200-01-01T00:00:00.000001Z",
    "9999-12-31T23:59:59-14:00",
    "0001-01-01T00:00:00+14:00",
    7258118401,
]


def test_played_at_is_checked_in_utc_for_games_and_batches(client):
    key = make_ladder(client)
    h = bearer(key)
    for given, stored in IN_WINDOW.items():
        r = client.post("/v1/ladders/test/games", json=duel("a", "b", played_at=given), headers=h)
        assert r.status_code == 201, (given, r.text)
        assert r.json()["played_at"] == stored
    r = client.post("/v1/ladders/test/games/batch", json={"games": [duel("a", "b", played_at=d) for d in IN_WINDOW]},
                    headers=h)  # fmt: skip
    assert r.status_code == 201, r.text
    assert [g["played_at"] for g in r.json()["games"]] == list(IN_WINDOW.values())
    for given in IN_WINDOW_AHEAD:
        r = client.post("/v1/ladders/test/games", json=duel("a", "b", played_at=given), headers=h)
        assert "played_at is in the future" in problem(r, 422, "played_at")["errors"][0]["message"], given
    for given in OUT_OF_WINDOW:
        r = client.post("/v1/ladders/test/games", json=duel("a", "b", played_at=given), headers=h)
        assert "in UTC" in problem(r, 422, "played_at")["errors"][0]["message"], given
        batch = {"games": [duel("a", "b"), duel("a", "b", played_at=given)]}
        problem(client.post("/v1/ladders/test/games/batch", json=batch, headers=h), 422, "games[1].played_at")
    assert client.get("/v1/ladders/test").json()["games"] == 2 * len(IN_WINDOW)


def test_every_409_and_422_names_fields_and_says_what_is_wrong_in_words(client):
    """Messages written for people: no "Value error, ", no regular expression, and every 409 and 422 has an
    ``errors`` list whose entries each have a field and a message."""
    slug = problem(client.post("/v1/ladders", json={"slug": "Office Pong!"}, headers=admin()), 422, "slug")
    assert slug["errors"][0]["message"].startswith("must be 1-64 lowercase letters") and "^" not in slug["detail"]
    h = bearer(make_ladder(client, k=1))
    name = problem(client.post("/v1/ladders/test/players", json={"key": "ann", "name": "a\x07b"}, headers=h), 422)
    assert name["errors"][0]["message"].startswith("must be printable") and "Value error" not in name["detail"]
    key = problem(client.post("/v1/ladders/test/players", json={"key": "a/b"}, headers=h), 422, "key")
    assert "no '/'" in key["errors"][0]["message"]
    client.post("/v1/ladders/test/games", json=duel("ann", "bob"), headers=h)
    answers = [
        (client.post("/v1/ladders/test/players/ann/merge", json={"into": "ann"}, headers=h), 422, "into"),
        (client.post("/v1/ladders/test/players/ann/merge", json={"into": "bob"}, headers=h), 409, "into"),
        (client.post("/v1/ladders/test/players/ann/merge", json={"into": "zed"}, headers=h), 422, "into"),
        (client.post("/v1/ladders", json={"slug": "test"}, headers=admin()), 409, "slug"),
        (client.get("/v1/ladders/test/identifiability?ratings=refit"), 409, "ratings"),
        (client.get("/v1/ladders/test/leaderboard?cursor=nope"), 422, "cursor"),
        (client.get("/v1/ladders/test/games?player=ann"), 422, "player"),
    ]
    for r, status, field in answers:
        body = problem(r, status, field)
        assert all(e["field"] and e["message"] for e in body["errors"]), body
        assert "Value error" not in r.text, body


@pytest.mark.parametrize(
    "setting",
    [
        *({name: True} for name in ("k", "eta", "drift", "init_scale", "inactive_after_days", "seed")),
        *({"drift_steps": 1}, {"auto_refit": 0}, {"k": "2"}, {"eta": "0.5"}),
    ],
)
def test_a_ladders_numbers_and_flags_are_json_numbers_and_booleans(client, setting):
    # `true` is not 1 and 1 is not `true` (the docs' "What input is accepted"): refused, at creation and by PATCH.
    created = client.post("/v1/ladders", json={"slug": "typed"} | setting, headers=admin())
    assert created.status_code == 422 and created.headers["content-type"] == "application/problem+json", created.text
    key = make_ladder(client, "typed")
    changed = client.patch("/v1/ladders/typed", json=setting, headers=bearer(key))
    assert changed.status_code == 422, changed.text


def test_stray_slashes_empty_keys_unix_times_and_versions_ahead(client):
    """A path with a stray "/" is a 404 (no redirect to whatever Host the request named); an empty
    Idempotency-Key is a 422; a number for ``played_at`` is a Unix time in seconds or milliseconds; a
    ``min_version`` the ladder has not reached is a 422, not an older answer."""
    h = bearer(make_ladder(client))
    r = client.get("/v1/ladders/test/", headers={"Host": "evil.example"}, follow_redirects=False)
    assert problem(r, 404) and "location" not in r.headers
    problem(client.post("/v1/ladders/test/games", json=duel("a", "b"), headers=h | {"Idempotency-Key": ""}),
            422, "Idempotency-Key")  # fmt: skip
    assert client.get("/v1/ladders/test").json()["games"] == 0
    for moment in (1_700_000_000, 1_700_000_000_000, 1_700_000_000.0):
        r = client.post("/v1/ladders/test/games", json=duel("a", "b", played_at=moment), headers=h)
        assert r.status_code == 201 and r.json()["played_at"] == "2023-11-14T22:13:20Z", r.text
    version = int(r.headers["Ladder-Version"])
    for path in ("/v1/ladders/test/leaderboard", "/v1/ladders/test/players/a"):
        assert client.get(path, params={"min_version": version}).status_code == 200
        ahead = problem(client.get(path, params={"min_version": version + 1}), 422, "min_version")
        assert f"at version {version}" in ahead["errors"][0]["message"]


def test_a_page_of_games_holds_at_most_5000_players(client):
    """Games of 2,048 players are paged two at a time (a page of 50 would be 21 MB), the small ones 50 at a time,
    and following ``next_cursor`` reads every game once; a player's history too."""
    h = bearer(make_ladder(client))
    crowd = [{"sides": [{"players": [f"p{s}-{n}" for n in range(32)], "rank": s + 1} for s in range(64)]}] * 3
    small = [duel(f"a{n}", f"b{n}") for n in range(60)]
    for games in (small, crowd):
        assert client.post("/v1/ladders/test/games/batch", json={"games": games}, headers=h).status_code == 201
    pages, cursor = [], None
    while True:
        r = client.get("/v1/ladders/test/games", params={"limit": 50} | ({"cursor": cursor} if cursor else {}))
        assert r.status_code == 200, r.text
        pages.append([len([p for s in g["sides"] for p in s["players"]]) for g in r.json()["items"]])
        if (cursor := r.json()["next_cursor"]) is None:
            break
    assert pages == [[2048, 2048], [2048, *[2] * 49], [2] * 11]
    first = client.get("/v1/ladders/test/players/p0-0/history").json()  # the same for a player's games
    assert len(first["items"]) == 2 and len(first["items"][0]["opponents"]) == 2016
    rest = client.get("/v1/ladders/test/players/p0-0/history", params={"cursor": first["next_cursor"]}).json()
    assert len(rest["items"]) == 1 and rest["next_cursor"] is None


def test_deep_cursors_odd_keys_and_etags(client):
    """A cursor nesting JSON thousands deep is a 422, not a 500 (the parser's stack); an Idempotency-Key outside
    ASCII (a header carries bytes), or sent twice, is a 422; If-None-Match compares weakly, in lists and ``*``."""
    h = bearer(make_ladder(client))
    assert client.post("/v1/ladders/test/games", json=duel("a", "b"), headers=h).status_code == 201
    deep = base64.urlsafe_b64encode(b"[" * 3000 + b"]" * 3000).decode()
    for path in ("/v1/ladders/test/leaderboard", "/v1/ladders/test/players/a/history"):
        problem(client.get(path, params={"cursor": deep}), 422, "cursor")
    longest = ["\U0001f600" * 128, "\U0001f601" * 128]  # keys at their longest, each character 12 in JSON
    assert client.post("/v1/ladders/test/games", json=duel(*longest), headers=h).status_code == 201
    cursors, params = [], {"limit": 1}
    while (cursor := client.get("/v1/ladders/test/leaderboard", params=params).json()["next_cursor"]) is not None:
        cursors.append(cursor)
        params = {"limit": 1, "cursor": cursor}
    assert len(cursors) == 3 and max(map(len, cursors)) > 2048  # every page read, the longest cursor taken back
    problem(client.post("/v1/ladders/test/games", json=duel("a", "b"), headers=h | {"Idempotency-Key": "clé".encode()}),
            422, "Idempotency-Key")  # fmt: skip
    twice = [*h.items(), ("Idempotency-Key", "one"), ("Idempotency-Key", "two")]
    problem(client.post("/v1/ladders/test/games", json=duel("a", "b"), headers=twice), 422, "Idempotency-Key")
    assert client.get("/v1/ladders/test").json()["games"] == 2
    etag = client.get("/v1/ladders/test/leaderboard").headers["ETag"]
    for named in (etag, f"W/{etag}", f'"0", {etag}', "*"):
        assert client.get("/v1/ladders/test/leaderboard", headers={"If-None-Match": named}).status_code == 304, named
    assert client.get("/v1/ladders/test/leaderboard", headers={"If-None-Match": '"0"'}).status_code == 200
