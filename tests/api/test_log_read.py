"""The event log read back as text (two-player games) equals the log read back as objects, on both databases."""

from __future__ import annotations

from dataclasses import fields

import numpy as np
import pytest

from app import storage
from app.core.db import Database
from app.domain.access import ladder_for_read
from tests.conftest import bearer, make_ladder

KEYS = ["ann", "bob", 'say "hi"', "zoë", "back\\slash", "cy"]


def two_player(a: str, b: str, ranks: tuple[float, float], advantage: float | None = None) -> dict:
    first, second = {"players": [a], "rank": ranks[0]}, {"players": [b], "rank": ranks[1]}
    if advantage is not None:
        first["advantage"] = advantage
    return {"sides": [first, second]}


def read_both_ways(settings, monkeypatch) -> tuple[storage.log.LadderLog, storage.log.LadderLog, bool]:
    db = Database.from_settings(settings)
    used = []
    as_text = storage.log._pair_log

    def spy(*args):
        found = as_text(*args)
        used.append(found is not None)
        return found

    try:
        with db.reading() as session:
            ladder = ladder_for_read(session, "test", fresh=True)
            monkeypatch.setattr(storage.log, "_pair_log", spy)
            fast = storage.log.read(session, ladder, from_start=True)
            monkeypatch.setattr(storage.log, "_pair_log", lambda *args: None)
            general = storage.log.read(session, ladder, from_start=True)
    finally:
        db.dispose()
    return fast, general, used[0]


def assert_same(a: storage.log.LadderLog, b: storage.log.LadderLog) -> None:
    assert np.array_equal(a.game_ids, b.game_ids)
    for field in fields(a.log):
        mine, theirs = getattr(a.log, field.name), getattr(b.log, field.name)
        assert (mine is None and theirs is None) or np.array_equal(mine, theirs), field.name


@pytest.mark.parametrize("escaped", [False, True], ids=["plain keys", "keys with escapes"])
def test_the_log_read_as_text_equals_the_log_read_as_objects(client, settings, monkeypatch, escaped):
    key = make_ladder(client, k=1)
    keys = KEYS if escaped else ["ann", "bob", "cy", "dee"]
    rng = np.random.default_rng(3)
    games = []
    for n in range(300):
        a, b = rng.choice(len(keys), 2, replace=False)
        ranks = [(1, 2), (2, 1), (1, 1), (1.5, 7)][n % 4]
        advantage = [None, 0.25, -1e-3, 3][n % 4]
        games.append(two_player(keys[a], keys[b], ranks, advantage))
    assert client.post("/v1/ladders/test/games/batch", json={"games": games}, headers=bearer(key)).status_code == 201
    void = client.delete("/v1/ladders/test/games/1", headers=bearer(key))  # the first game
    assert void.status_code == 200, void.text
    fast, general, as_text = read_both_ways(settings, monkeypatch)
    assert as_text is not escaped  # a key with an escape sends the whole log the general way
    assert len(fast.game_ids) == 299
    assert_same(fast, general)


def test_a_log_with_teams_is_read_as_objects(client, settings, monkeypatch):
    key = make_ladder(client, k=1)
    games = [
        two_player("ann", "bob", (1, 2)),
        {"sides": [{"players": ["ann", "cy"], "rank": 1}, {"players": ["bob"], "rank": 2}]},
    ]
    assert client.post("/v1/ladders/test/games/batch", json={"games": games}, headers=bearer(key)).status_code == 201
    fast, general, as_text = read_both_ways(settings, monkeypatch)
    assert not as_text
    assert_same(fast, general)


def test_scores_and_matches_kept_with_the_games_are_read_as_text_too(client, settings, monkeypatch):
    key = make_ladder(client, k=1, play={"best_of": 3})
    games = [
        {"sides": [{"players": ["ann"], "score": -2.5e-7}, {"players": ["bob"], "score": 1e6}]},
        {"sides": [{"players": ["bob"], "rank": 1, "score": 21}, {"players": ["cy"], "rank": 2, "score": 0}]},
        {"sides": [{"players": ["bob"]}, {"players": ["cy"]}], "match": [[11, 7], [9, 11], [11, 5]]},
        two_player("cy", "ann", (1, 2), 0.5),
    ]
    assert client.post("/v1/ladders/test/games/batch", json={"games": games}, headers=bearer(key)).status_code == 201
    fast, general, as_text = read_both_ways(settings, monkeypatch)
    assert as_text
    assert_same(fast, general)
