"""Each worker's copy of a ladder follows its changes row by row, and every read equals a fresh full load."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import numpy as np
import pytest
from fastapi.testclient import TestClient

from app import storage
from app.core.ladder import LadderRow
from app.domain.access import ladder_for_read
from app.http import player_table
from app.main import create_app
from app.players.leaderboard import leaderboard
from app.storage.codec import NO_TIME
from app.storage.read_model import Table
from app.storage.refits import Placement
from tests.api.helpers import game
from tests.conftest import admin, bearer, make_ladder

EVERYONE = "/v1/ladders/test/leaderboard?inactive=true&limit=500"


@pytest.mark.parametrize("changed_here", [player_table.CHANGED_HERE, 1])
def test_two_workers_copies_equal_a_fresh_load_after_every_kind_of_change(client, settings, monkeypatch, changed_here):
    """``client`` and ``other`` are two workers (each app keeps its own copy of the ladder); after each change,
    made through either, both answer exactly what a worker reading everything anew answers, at the same
    version. (With ``changed_here`` 1, a copy behind by more than one changed player catches up in a thread.)"""
    monkeypatch.setattr(player_table, "CHANGED_HERE", changed_here)
    key = make_ladder(client, k=2)
    h = bearer(key)
    with TestClient(create_app(settings)) as other:
        workers = [client, other]

        def check() -> int:
            with TestClient(create_app(settings)) as fresh:
                expected = fresh.get(EVERYONE).json()
            for worker in workers:
                got = worker.get(EVERYONE)
                assert got.status_code == 200 and got.json() == expected
                assert got.headers["ETag"] == f'"{expected["ladder_version"]}"'
            audit = client.get("/v1/ladders/test/audit").json()  # the kept counts follow every change
            assert audit["consistent"] and audit["counts_consistent"], audit
            ladder = client.get("/v1/ladders/test").json()
            assert (ladder["players"], ladder["games"]) == (audit["players"], audit["games"])
            return expected["ladder_version"]

        versions = [check()]
        batch = {"games": [game(x, y) for x, y in [("b", "c"), ("c", "a"), ("d", "a"), ("e", "d")]]}

        def void(w: TestClient):
            third = w.get("/v1/ladders/test/games").json()["items"][2]["id"]
            return w.delete(f"/v1/ladders/test/games/{third}", headers=h)

        steps = [
            lambda w: w.post("/v1/ladders/test/games", json=game("a", "b"), headers=h),
            lambda w: w.post("/v1/ladders/test/games/batch", json=batch, headers=h),
            lambda w: w.post("/v1/ladders/test/players", json={"key": "f", "name": "Fay"}, headers=h),
            lambda w: w.patch("/v1/ladders/test/players/b", json={"name": "Bea", "active": False}, headers=h),
            void,
            lambda w: w.post("/v1/ladders/test/games", json=game("f", "e"), headers=h),
            lambda w: w.post("/v1/ladders/test/players/e/merge", json={"into": "a"}, headers=h),
            lambda w: w.delete("/v1/ladders/test/players/c", headers=admin()),
            lambda w: w.post("/v1/ladders/test/games", json=game("a", "d"), headers=h),
            # Every player rewritten (the log at a new rate): their rows keep their stamps, the readers read anew.
            lambda w: w.patch("/v1/ladders/test", json={"eta": 0.3}, headers=admin()),
            lambda w: w.post("/v1/ladders/test/games", json=game("d", "f"), headers=h),
        ]
        for n, step in enumerate(steps):
            for worker in workers:  # both copies are current before the change
                assert worker.get(EVERYONE).status_code == 200
            r = step(workers[n % 2])
            assert r.status_code in (200, 201), r.text
            versions.append(check())
        assert versions == sorted(versions) and len(set(versions)) == len(versions)
        board = client.get(EVERYONE)
        assert client.get(EVERYONE, headers={"If-None-Match": board.headers["ETag"]}).status_code == 304
        client.post("/v1/ladders/test/games", json=game("d", "a"), headers=h)
        assert other.get(EVERYONE, headers={"If-None-Match": board.headers["ETag"]}).status_code == 200
        assert client.get("/v1/ladders", headers=admin()).status_code == 200


def test_the_first_page_found_without_sorting_everyone_is_the_full_order_s_start(client):
    """Ties in score (broken by key), inactive players and the provisional group, at every page size."""
    key = make_ladder(client, k=1)
    h = bearer(key)
    ratings = {"k": 1.0, "b": 1.0, "x": 2.0, "a": 1.0, "m": 0.5, "c": 2.0, "z": -1.0, "e": 1.0, "d": 0.5}
    for name, r in ratings.items():
        body = {"key": name, "vector": [r, 1.0]}
        assert client.post("/v1/ladders/test/players", json=body, headers=h).status_code == 201
    client.patch("/v1/ladders/test/players/e", json={"active": False}, headers=h)
    for winner, loser in [("a", "b"), ("c", "d"), ("x", "z")]:
        client.post("/v1/ladders/test/games", json=game(winner, loser), headers=h)
    for by in ("hodge", "field", "conservative"):
        for inactive in ("true", "false"):
            url = f"/v1/ladders/test/leaderboard?by={by}&inactive={inactive}"
            everyone = [row["key"] for row in client.get(url + "&limit=500").json()["items"]]
            assert len(everyone) == (9 if inactive == "true" else 8)
            for limit in range(1, 10):
                page = client.get(url + f"&limit={limit}").json()
                assert [row["key"] for row in page["items"]] == everyone[:limit], (by, inactive, limit)
                assert (page["next_cursor"] is None) == (limit >= len(everyone))
    hodge = [row["key"] for row in client.get("/v1/ladders/test/leaderboard?limit=500").json()["items"]]
    assert hodge[:2] == ["c", "x"] and hodge[-1] == "z"  # equal strengths in key order


def test_profiles_and_predictions_name_the_version_they_were_read_at(client):
    key = make_ladder(client, k=1)
    h = bearer(key)
    client.post("/v1/ladders/test/games", json=game("a", "b"), headers=h)
    version = client.get("/v1/ladders/test/leaderboard").json()["ladder_version"]
    pair = client.get("/v1/ladders/test/predict?a=a&b=b").json()
    match = client.post("/v1/ladders/test/predict", json={"sides": [{"players": ["a"]}, {"players": ["b"]}]}).json()
    teams = client.post("/v1/ladders/test/teams", json={"players": ["a", "b"]}).json()
    assert pair["ladder_version"] == match["ladder_version"] == teams["ladder_version"] == version
    profile = client.get("/v1/ladders/test/players/a")
    assert profile.json()["ladder_version"] == version and profile.headers["ETag"] == f'"{version}"'
    etag = {"If-None-Match": profile.headers["ETag"]}
    assert client.get("/v1/ladders/test/players/a", headers=etag).status_code == 304
    client.post("/v1/ladders/test/games", json=game("b", "a"), headers=h)  # read your own write: a new version
    again = client.get("/v1/ladders/test/players/a", headers=etag)
    assert again.status_code == 200 and again.json()["ladder_version"] > version and again.json()["games"] == 2
    assert client.get("/v1/ladders/test/predict?a=a&b=b").json()["ladder_version"] == again.json()["ladder_version"]


@pytest.mark.parametrize("at_once", [True, False], ids=["applied by the writer", "applied by the reader"])
def test_the_worker_that_commits_games_follows_them_without_reading_them_back(client, monkeypatch, at_once):
    """The committing worker notes the rows each of its commits wrote, and applies them at once (a small ladder)
    or its next reader applies the notes of several commits in one step (a large one); the copy equals a fresh
    load: known players, new ones, and a batch."""
    if not at_once:
        monkeypatch.setattr(storage.read_model, "APPLY_AT_ONCE", 0)
    h = bearer(make_ladder(client, k=1))
    client.post("/v1/ladders/test/players", json={"key": "named", "name": "Named One"}, headers=h)
    client.post("/v1/ladders/test/games", json=game("named", "b"), headers=h)
    assert client.get(EVERYONE).status_code == 200  # the worker holds the table
    db = client.app.state.db
    with db.reading() as session:
        ladder = ladder_for_read(session, "test", fresh=True)
    batch = {"games": [game("b", "c"), game("c", "new3"), game("new3", "named")]}
    rounds = [[game("named", "b")], [game("c", "named"), game("new1", "new2")], [batch, game("new3", "new4")]]
    for bodies in rounds:
        before = storage.read_model.apply_notes(db.read_engine, ladder.id)
        for body in bodies:
            path = "/v1/ladders/test/games/batch" if "games" in body else "/v1/ladders/test/games"
            assert client.post(path, json=body, headers=h).status_code == 201
        held = storage.read_model.apply_notes(db.read_engine, ladder.id)  # from the notes alone: no read
        assert held.version == before.version + len(bodies)
        with db.reading() as session:
            fresh = storage.read_model.current_table(session, ladder, cached=False)
        assert fresh.version == held.version
        for name in ("ids", "keys", "names", "C", "counts", "last_played", "created", "active", "experience"):
            assert np.array_equal(getattr(held, name), getattr(fresh, name)), name
        assert np.array_equal(held.strength_then, fresh.strength_then, equal_nan=True)


def random_table(n: int, seed: int) -> Table:
    rng = np.random.default_rng(seed)
    keys = np.empty(n, dtype=object)
    keys[:] = [f"p{i:05d}" for i in rng.permutation(n)]
    counts = rng.integers(0, 60, size=(n, 5))
    counts[rng.random(n) < 0.2, 4] = 0  # provisional: too few comparisons
    C = rng.normal(size=(n, 2)) + np.array([0.4, 0.1])
    C[: n // 10] = C[0]  # a block of equal ratings: ties broken by key
    counts[: n // 10] = counts[0]
    return Table(
        version=1,
        ids=np.arange(n, dtype=np.int64),
        keys=keys,
        names=np.full(n, None, dtype=object),
        C=C,
        counts=counts,
        last_played=np.full(n, NO_TIME),
        created=np.zeros(n, dtype=np.int64),
        active=rng.random(n) > 0.1,
        strength_then=np.full(n, np.nan),
        experience=counts[:, 0].astype(np.float64),
        variance=np.full(n, np.nan),
        placement=Placement.of(np.empty(0), rng.choice(n, 30, replace=False)),
    )


@pytest.mark.parametrize("by", ["hodge", "field", "conservative"])
def test_a_first_page_equals_the_whole_order_read_page_by_page(by):
    """On 5,000 players (standard errors and field scores from samples of the field): the first page, found
    without ranking everyone (by=conservative without every standard error), is exactly where the whole order
    read through cursors starts, with the same numbers."""
    settings = {"id": 1, "slug": "t", "name": None, "k": 1, "eta": 0.1, "eta_tau": None, "init_scale": 0.1}
    settings |= {"init_offset": None, "seed": 0, "auto_create_players": True, "auto_refit": True, "auto_rate": True}
    settings |= {"write_key_hash": "", "created_at": datetime.now(UTC), "version": 1, "private": False}
    settings |= {"seats": None, "reset_version": 0, "case_insensitive_keys": False}
    settings |= {"play": None, "season_every": None, "season_pull": 0.0}
    settings |= {"rate_rule": "steps", "noise": 5.5, "cycles": 0.25}
    ladder = LadderRow(**settings, drift=100.0, drift_steps=True, seat_prior=0.5, inactive_after_days=None)
    for inactive in (False, True):
        walked: list[dict] = []
        cursor = None
        while len(walked) < 700:
            page = json.loads(leaderboard(random_table(5000, 3), ladder, by, 250, cursor, inactive))
            walked += page["items"]
            cursor = page["next_cursor"]
        for limit in (1, 7, 250, 700):
            first = json.loads(leaderboard(random_table(5000, 3), ladder, by, limit, None, inactive))
            assert first["items"] == walked[:limit], (by, inactive, limit)
