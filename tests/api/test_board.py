"""The board around a player (``?around=``), pages both ways (``prev_cursor``), a profile's ``rank``, and
leaderboards read while games stream in (``MELO_BOARD_LAG``): each page of one version, which it names."""

import time

import pytest
from fastapi.testclient import TestClient

from app.http import replica_routing
from app.main import create_app
from tests.api.helpers import disc_games, run_refit
from tests.conftest import bearer, make_ladder

BOARD = "/v1/ladders/test/leaderboard"
ORDERS = [("hodge", False), ("field", False), ("conservative", False), ("hodge", True), ("conservative", True)]


def _ladder(client) -> dict:
    """Players with spread records, one set inactive; some with few games (provisional: by=conservative, below)."""
    h = bearer(make_ladder(client, k=1))
    games = disc_games(160, seed=2)
    games += [{"sides": [{"players": [f"n{i}"], "rank": 1}, {"players": ["d0"], "rank": 2}]} for i in range(4)]
    assert client.post("/v1/ladders/test/games/batch", json={"games": games}, headers=h).status_code == 201
    assert client.patch("/v1/ladders/test/players/d3", json={"active": False}, headers=h).status_code == 200
    return h


def _board(client, by: str, inactive: bool) -> list[dict]:
    return client.get(BOARD, params={"by": by, "inactive": inactive, "limit": 500}).json()["items"]


def _keys(items: list[dict]) -> list[str]:
    return [row["key"] for row in items]


def test_around_a_player_is_the_rows_centred_on_them_in_every_order(client):
    _ladder(client)
    for by, inactive in ORDERS:
        whole = _board(client, by, inactive)
        for limit in (1, 4, 5):
            for place, row in enumerate(whole):
                query = {"by": by, "inactive": inactive, "limit": limit, "around": row["key"]}
                page = client.get(BOARD, params=query).json()
                start = max(0, place - (limit - 1) // 2)
                expected = whole[start : place + limit // 2 + 1]
                assert page["items"] == expected, (by, inactive, limit, row["key"])
                assert (page["prev_cursor"] is None) == (start == 0)
                assert (page["next_cursor"] is None) == (place + limit // 2 + 1 >= len(whole))


def test_pages_go_both_ways_from_around_to_the_whole_board(client):
    """From the page around a player, ``prev_cursor`` back to rank 1 and ``next_cursor`` on to the end walk the
    whole board, each row once."""
    _ladder(client)
    for by, inactive in ORDERS:
        whole = _board(client, by, inactive)
        middle = whole[len(whole) // 2]["key"]
        page = client.get(BOARD, params={"by": by, "inactive": inactive, "limit": 3, "around": middle}).json()
        rows, back, on = list(page["items"]), page["prev_cursor"], page["next_cursor"]
        while back is not None:
            before = client.get(BOARD, params={"by": by, "inactive": inactive, "limit": 3, "cursor": back}).json()
            rows = before["items"] + rows
            back = before["prev_cursor"]
        while on is not None:
            after = client.get(BOARD, params={"by": by, "inactive": inactive, "limit": 3, "cursor": on}).json()
            rows += after["items"]
            on = after["next_cursor"]
        assert rows == whole, (by, inactive)
        assert [row["rank"] for row in rows] == list(range(1, len(whole) + 1))
        first = client.get(BOARD, params={"by": by, "inactive": inactive, "limit": 3}).json()
        assert first["prev_cursor"] is None


def test_around_names_a_player_by_an_alias_and_refuses_who_is_not_on_the_board(client):
    h = _ladder(client)
    merged = client.post("/v1/ladders/test/players/n1/merge", json={"into": "n2"}, headers=h)
    assert merged.status_code == 200, merged.text
    assert client.delete("/v1/ladders/test/players/n3", headers=h).status_code == 200
    whole = _keys(_board(client, "hodge", False))
    page = client.get(BOARD, params={"around": "n1", "limit": 1}).json()  # n1 is n2's alias now
    assert _keys(page["items"]) == ["n2"] and page["items"][0]["rank"] == whole.index("n2") + 1
    for key, why in [("n3", "no player"), ("nobody", "no player"), ("d3", "inactive")]:
        r = client.get(BOARD, params={"around": key})
        assert r.status_code == 404 and r.headers["content-type"] == "application/problem+json", key
        assert repr(key) in r.json()["detail"] and why in r.json()["detail"], r.json()
    assert client.get(BOARD, params={"around": "d3", "inactive": True}).status_code == 200
    cursor = client.get(BOARD, params={"limit": 2}).json()["next_cursor"]
    for query in [
        {"around": "x" * 10_000},
        {"around": ""},
        {"around": "d1", "limit": 0},
        {"around": "d1", "limit": 10_001},
        {"around": "d1", "cursor": cursor},
    ]:
        r = client.get(BOARD, params=query)
        assert r.status_code == 422 and r.headers["content-type"] == "application/problem+json", query


def test_around_as_of_a_past_time(client):
    h = bearer(make_ladder(client, k=1))
    early = [g | {"played_at": f"2026-01-{1 + n // 10:02d}T12:00:00Z"} for n, g in enumerate(disc_games(80, seed=4))]
    assert client.post("/v1/ladders/test/games/batch", json={"games": early}, headers=h).status_code == 201
    then = client.get(BOARD, params={"as_of": "2026-01-05T00:00:00Z", "limit": 500}).json()["items"]
    key = then[len(then) // 2]["key"]
    page = client.get(BOARD, params={"as_of": "2026-01-05T00:00:00Z", "limit": 3, "around": key}).json()
    place = _keys(then).index(key)
    assert page["items"] == then[place - 1 : place + 2]
    before = client.get(BOARD, params={"as_of": "2026-01-05T00:00:00Z", "limit": 3, "cursor": page["prev_cursor"]})
    assert before.json()["items"] == then[max(0, place - 4) : place - 1]


def test_a_profile_gives_the_players_rank_on_the_default_board(client):
    _ladder(client)
    whole = _board(client, "hodge", False)
    for row in whole:
        assert client.get(f"/v1/ladders/test/players/{row['key']}").json()["rank"] == row["rank"]
    assert client.get("/v1/ladders/test/players/d3").json()["rank"] is None  # inactive: not on it


@pytest.fixture
def lagging(settings):
    """An app whose leaderboard reads may be answered from a ranking up to a second old."""
    with TestClient(create_app(settings.model_copy(update={"board_lag": 1.0}))) as c:
        yield c


def test_a_read_naming_no_version_may_be_answered_from_the_last_ranking_never_one_older_than_named(lagging):
    client = lagging
    h = _ladder(client)
    first = client.get(BOARD)
    version = first.json()["ladder_version"]
    posted = client.post("/v1/ladders/test/games", json=disc_games(1, seed=9)[0], headers=h)
    newer = int(posted.headers["Ladder-Version"])
    assert newer > version
    held = client.get(BOARD)  # within the lag: the last ranking, named as such
    assert held.json() == first.json() and held.headers["ETag"] == f'"{version}"'
    assert client.get(BOARD, params={"around": "d1"}).json()["ladder_version"] == version  # the same table
    named = client.get(BOARD, params={"min_version": newer})  # never older than named
    assert named.json()["ladder_version"] == newer
    assert client.get(BOARD, headers={"If-None-Match": f'"{newer}"'}).status_code == 304
    time.sleep(1.1)
    client.post("/v1/ladders/test/games", json=disc_games(1, seed=10)[0], headers=h)
    assert client.get(BOARD).json()["ladder_version"] > newer  # past the lag: ranked anew
    # A profile is read at the newest version always, its rank exact there.
    assert client.get("/v1/ladders/test/players/d1").json()["ladder_version"] > newer


def test_a_settings_change_is_never_answered_from_a_ranking_before_it(lagging):
    client = lagging
    h = _ladder(client)
    assert "d3" not in _keys(client.get(BOARD).json()["items"])
    assert client.patch("/v1/ladders/test/players/d3", json={"active": True}, headers=h).status_code == 200
    assert client.patch("/v1/ladders/test", json={"inactive_after_days": 400}, headers=h).status_code == 200
    assert "d3" in _keys(client.get(BOARD, params={"limit": 500}).json()["items"])


def test_a_plain_read_of_a_board_ranked_within_the_lag_is_answered_before_routing_as_the_route_would(
    lagging, monkeypatch
):
    """A read with no key, no ``If-None-Match`` and no parameters but ``limit``, ``by`` and ``inactive``, of a
    public ladder this worker ranked within the lag, is answered by the fast path with the route's bytes and ETag;
    every other read (a key, a conditional read, a cursor, a bad or repeated parameter, a private ladder, a
    ranking too old) goes to the route."""
    client = lagging
    h = _ladder(client)
    routed: list[str] = []
    real = replica_routing.lag_tolerant

    async def counted(request, *args, **kwargs):
        routed.append(str(request.query_params))
        return await real(request, *args, **kwargs)

    monkeypatch.setattr(replica_routing, "lag_tolerant", counted)
    for params in ({}, {"limit": 7, "by": "conservative"}, {"inactive": "true", "by": "field", "limit": 500}):
        first = client.get(BOARD, params=params)  # the route ranks and renders it
        again = client.get(BOARD, params=params)
        assert len(routed) == 1 and again.content == first.content and again.headers["ETag"] == first.headers["ETag"]
        routed.clear()
    etag, cursor = first.headers["ETag"], client.get(BOARD, params={"limit": 3}).json()["next_cursor"]
    routed.clear()
    for params, headers, status in (
        ({}, h, 200),
        ({}, {"If-None-Match": etag}, 304),
        ({"limit": "abc"}, {}, 422),
        ({"limit": "0"}, {}, 422),
        ({"limit": "501"}, {}, 422),
        ({"by": "elo"}, {}, 422),
        ({"limit": ["5", "6"]}, {}, 200),
        ({"inactive": "yes"}, {}, 200),
        ({"cursor": cursor}, {}, 200),
        ({"around": "d1"}, {}, 200),
        ({"form": "true"}, {}, 200),
    ):
        assert client.get(BOARD, params=params, headers=headers).status_code == status
        assert len(routed) == (status != 422), (params, headers)  # a 422 is the route's validation
        routed.clear()
    time.sleep(1.1)
    client.post("/v1/ladders/test/games", json=disc_games(1, seed=11)[0], headers=h)
    assert client.get(BOARD).json()["ladder_version"] > first.json()["ladder_version"] and len(routed) == 1
    routed.clear()
    assert client.patch("/v1/ladders/test", json={"private": True}, headers=h).status_code == 200
    assert client.get(BOARD).status_code in (401, 404) and len(routed) == 1


def test_a_walk_through_the_board_shows_each_player_once_while_the_log_changes(client):
    """Page by page through the board while a game is voided, a refit is applied and games are posted between the
    pages (and the board is read anew between them, at each new version): the walk is the board as it stood when
    it began, each player once, its ranks 1, 2, 3, …; a new first page is of the newest version."""
    h = _ladder(client)
    refit = run_refit(client, "test", h)
    whole = _board(client, "hodge", False)
    first = client.get(BOARD, params={"limit": 3}).json()
    rows, page, n = list(first["items"]), first, 0
    changes = [
        lambda: client.post(f"/v1/ladders/test/refits/{refit}/apply", headers=h),
        lambda: client.post("/v1/ladders/test/games/3/void", headers=h),
        lambda: client.post("/v1/ladders/test/games/batch", json={"games": disc_games(40, seed=8)}, headers=h),
    ]
    while page["next_cursor"] is not None:
        if n < len(changes):
            assert changes[n]().is_success
            assert client.get(BOARD).json()["ladder_version"] > first["ladder_version"]
        page = client.get(BOARD, params={"limit": 3, "cursor": page["next_cursor"]}).json()
        assert page["ladder_version"] == first["ladder_version"]
        rows += page["items"]
        n += 1
    assert n > len(changes) and rows == whole
    assert client.get(BOARD, params={"limit": 500}).json()["items"] != whole
