"""Bulk updates write what they are given, however they send it (PostgreSQL: arrays of parameters, or ``COPY``
into a scratch table for many rows), and a rewrite of most of a ladder's players makes every reader read it anew."""

from __future__ import annotations

import numpy as np
import pytest

from app import storage
from app.core.db import Database
from app.storage import sql
from app.storage.tables import Player
from tests.conftest import admin, bearer, make_ladder


def _players(db: Database, ladder_id: int) -> list[tuple]:
    with db.reading() as session:
        query = "SELECT id, vector, experience, variance, strength_then, changed_version FROM players "
        return sql.driver_fetchall(session.connection(), query + "WHERE ladder_id = ? ORDER BY id", (ladder_id,))


@pytest.mark.parametrize("copy_rows", [sql.COPY_ROWS, 0])
def test_a_bulk_update_writes_the_same_rows_whichever_way_it_sends_them(client, settings, monkeypatch, copy_rows):
    """On PostgreSQL more than ``COPY_ROWS`` rows go by ``COPY`` (here every update, with 0), values of every kind
    (bytes, floats, nulls) as they were given; SQLite writes them one way."""
    monkeypatch.setattr(sql, "COPY_ROWS", copy_rows)
    key = make_ladder(client)
    duels = [{"sides": [{"players": [f"p{n}"], "rank": 1}, {"players": [f"q{n}"], "rank": 2}]} for n in range(20)]
    posted = client.post("/v1/ladders/test/games/batch", json={"games": duels}, headers=bearer(key))
    assert posted.status_code == 201, posted.text
    db = Database.from_settings(settings)
    try:
        with db.reading() as session:
            ladder = storage.ladders.by_slug(session, "test")
        ids = [row[0] for row in _players(db, ladder.id)]
        vectors = [np.array([n, -n / 3]).tobytes() for n in range(len(ids))]
        variance = [None if n % 3 else n / 7 for n in range(len(ids))]
        with db.writing() as session:
            columns = {"vector": vectors, "variance": variance, "strength_then": [n * 0.5 for n in range(len(ids))]}
            sql.bulk_update(session.connection(), Player.__table__, ladder.id, ("id", ids), columns)
            # a second update in the same transaction (its own scratch table), keyed by two columns
            keys2 = [(ladder.id, i) for i in ids[:5]]
            pairs = (("ladder_id", "id"), keys2)
            sql.bulk_update(session.connection(), Player.__table__, None, pairs, {"experience": [9.0] * 5})
        rows = _players(db, ladder.id)
        assert [bytes(r[1]) for r in rows] == vectors
        assert [r[3] for r in rows] == variance
        assert [r[4] for r in rows] == [n * 0.5 for n in range(len(ids))]
        assert [r[2] for r in rows[:5]] == [9.0] * 5 and all(r[2] != 9.0 for r in rows[5:])
    finally:
        db.dispose()


def test_a_rewrite_of_most_players_resets_the_readers_and_of_a_few_stamps_their_rows(client, settings):
    """``save_vectors`` (a replay's): rows of a few players get the next version as their stamp, which readers
    catch up by; half the ladder or more keep their stamps (on PostgreSQL the rows are then rewritten in place of
    their pages, no index written) and the ladder's rewritten version is the next, so every reader reads it anew,
    while its reset version (the settings') stays."""
    key = make_ladder(client)
    duels = [{"sides": [{"players": [f"p{n}"], "rank": 1}, {"players": [f"q{n}"], "rank": 2}]} for n in range(10)]
    assert client.post("/v1/ladders/test/games/batch", json={"games": duels}, headers=bearer(key)).status_code == 201
    db = Database.from_settings(settings)
    try:
        with db.reading() as session:
            ladder = storage.ladders.by_slug(session, "test")
        before = _players(db, ladder.id)
        ids = np.array([row[0] for row in before])
        for n, expect_reset in ((9, False), (10, True)):
            with db.writing() as session:
                version = storage.ladders.version_and_reset(session, ladder.id)[0]
                C = np.full((n, 2), float(n))
                storage.players.save_vectors(session, ladder.id, ids[:n], C, np.ones(n))
                storage.ladders.bump(session, [ladder.id])
            with db.reading() as session:
                now, floor = storage.ladders.version_and_reset(session, ladder.id)
                reset = storage.ladders.by_id(session, ladder.id).reset_version
            rows = _players(db, ladder.id)
            assert [np.frombuffer(r[1])[0] for r in rows[:n]] == [n] * n
            stamps = [r[5] for r in rows[:n]]
            assert now == version + 1
            assert reset < now
            if expect_reset:
                assert floor == now and stamps == [r[5] for r in before[:n]]
            else:
                assert floor < now and stamps == [now] * n
            before = rows
    finally:
        db.dispose()


def test_the_kept_field_sum_after_a_new_rate_equals_the_players_sum(client, settings):
    """A new rate rewrites every player; the field's kept sum (the Elo-equivalent points are against its mean) is
    then the replay's own sum, equal to a sum of the stored vectors."""
    key = make_ladder(client)
    pairs = [(f"p{n % 7}", f"q{n % 5}") for n in range(30)]
    duels = [{"sides": [{"players": [a], "rank": 1}, {"players": [b], "rank": 2}]} for a, b in pairs]
    assert client.post("/v1/ladders/test/games/batch", json={"games": duels}, headers=bearer(key)).status_code == 201
    assert client.patch("/v1/ladders/test", json={"eta": 0.2}, headers=admin()).status_code == 200
    db = Database.from_settings(settings)
    try:
        with db.reading() as session:
            ladder = storage.ladders.by_slug(session, "test")
            kept = storage.ladder_state.field_sum(session, ladder)
            counted = storage.ladder_state.field_sum(session, ladder, recount=True)
    finally:
        db.dispose()
    assert kept[1] == counted[1] == 12
    np.testing.assert_allclose(kept[0], counted[0], rtol=0, atol=1e-12)
