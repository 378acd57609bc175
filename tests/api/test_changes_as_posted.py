"""A game's rating change is shown as its post answered it, everywhere and for good, however the field moves after
it; a replay that rewrites the game shows it against today's field, as after minus before."""

from __future__ import annotations

import numpy as np
import pytest

from app import storage
from tests.api.helpers import change_of, duel, post_all, random_games, read_ladder
from tests.conftest import bearer, make_ladder


def _shown(client, number: int, key: str) -> dict[str, float]:
    """The change of game ``number`` to ``key``'s rating, as each read shows it."""
    history = client.get(f"/v1/ladders/test/players/{key}/history").json()["items"]
    item = next(i for i in history if i["game_id"] == number)
    board = client.get("/v1/ladders/test/leaderboard", params={"form": "true", "limit": 100}).json()["items"]
    return {
        "game": change_of(client.get(f"/v1/ladders/test/games/{number}").json(), key),
        "games": change_of(
            next(g for g in client.get("/v1/ladders/test/games").json()["items"] if g["id"] == number), key
        ),
        "history": item["elo_change"],
        "history, after minus before": item["elo_after"] - item["elo_before"],
        "form": next(p for p in board if p["key"] == key)["last_game_change"],
        "profile": client.get(f"/v1/ladders/test/players/{key}").json()["last_game_change"],
    }


def test_a_games_change_stays_what_its_post_answered_as_the_field_moves(client):
    key = make_ladder(client)
    post_all(client, "test", key, [duel("cy", "ann")])
    r = client.post("/v1/ladders/test/games", json=duel("ann", "bob"), headers=bearer(key))
    assert r.status_code == 201, r.text
    posted = {who: change_of(r.json(), who) for who in ("ann", "bob")}
    assert posted["ann"] > 0 > posted["bob"]
    # Thirty games among eight others, new players, move the field's mean, against which a strength is shown.
    post_all(client, "test", key, random_games(30, seed=3))
    for who in ("ann", "bob"):
        shown = _shown(client, 2, who)
        # Today's field would tell another change: the one the post answered is kept.
        assert shown.pop("history, after minus before") != pytest.approx(posted[who], abs=1e-6)
        assert shown == {place: posted[who] for place in shown}, who

    # A void of ann's game before it replays it: the rewritten game's change is after minus before, today's.
    assert client.request("DELETE", "/v1/ladders/test/games/1", json={}, headers=bearer(key)).status_code == 200
    for who in ("ann", "bob"):
        shown = _shown(client, 2, who)
        now = shown.pop("history, after minus before")
        assert shown == pytest.approx({place: now for place in shown}, abs=1e-9), who
    audit = client.get("/v1/ladders/test/audit").json()
    assert audit["consistent"] and audit["counts_consistent"], audit


def test_a_rewrite_keeps_the_change_of_a_game_whose_vectors_it_leaves_as_they_were(client):
    """A replay that rewrites games it does not change (a season's pull replaying the log, a write-ahead that is
    replayed again) keeps their changes as posted; a membership whose vectors it changes loses its change."""
    key = make_ladder(client)
    posted = client.post("/v1/ladders/test/games", json=duel("ann", "bob"), headers=bearer(key)).json()
    post_all(client, "test", key, random_games(10, seed=4))
    db = client.app.state.db
    with db.reading() as session:
        record = storage.games.get(session, read_ladder(db).id, posted["id"])
    ann, bob = sorted(record.members, key=lambda m: m.key)
    before, after = np.array([ann.before, bob.before]), np.array([ann.after, bob.after])
    moved = after.copy()
    moved[1, 0] += 0.01  # bob's vector after the game, rewritten otherwise; ann's as it was
    with db.writing() as session:
        storage.games.rewrite_history(
            session,
            record_ladder := read_ladder(db).id,
            np.array([record.id, record.id]),
            np.array([ann.player_id, bob.player_id]),
            before,
            moved,
            np.array([ann.actual_score, bob.actual_score]),
            np.array([ann.expected_score, bob.expected_score]),
        )
    with db.reading() as session:
        kept = {m.key: m.elo_change for m in storage.games.get(session, record_ladder, posted["id"]).members}
    assert kept == {"ann": change_of(posted, "ann"), "bob": None}
