"""Games of more than two sides (free-for-alls, mathematics §4): what their posts answer."""

from __future__ import annotations

import numpy as np
import pytest

from devtools.server import ADMIN_KEY
from tests.conftest import bearer, make_ladder


def _game(*ranked: list[str]) -> dict:
    """Sides in the order given, ranked 1, 2, … (the first side won)."""
    return {"sides": [{"players": players, "rank": n} for n, players in enumerate(ranked, start=1)]}


def _predicted(client, slug: str, game: dict) -> list[list[float]]:
    sides = [{"players": side["players"]} for side in game["sides"]]
    r = client.post(f"/v1/ladders/{slug}/predict", json={"sides": sides})
    assert r.status_code == 200, r.text
    return r.json()["matrix"]


@pytest.mark.parametrize("k", [1, 2])
def test_a_free_for_all_post_answers_the_pair_chances_it_was_rated_against(client, k):
    """Each post of more than two sides answers ``matrix``, P(side a finishes above side b) before the game: what
    ``POST …/predict`` answered just before it, in the single answer and in a batch (where each game's is after
    the games before it in the batch); two sides answer null, and a stored game read later null."""
    key = make_ladder(client, "ffa", k=k)
    warm = [_game(["a"], ["b"], ["c"]), _game(["c"], ["d"]), _game(["d"], ["a"], ["b"], ["e"])]
    for game in warm:
        assert client.post("/v1/ladders/ffa/games", json=game, headers=bearer(key)).status_code == 201
    game = _game(["b"], ["e", "c"], ["a"], ["d"])  # an ad-hoc team among single players
    before = _predicted(client, "ffa", game)
    r = client.post("/v1/ladders/ffa/games", json=game, headers=bearer(key))
    assert r.status_code == 201, r.text
    matrix = np.array(r.json()["matrix"])
    np.testing.assert_allclose(matrix, before, rtol=1e-12, atol=1e-15)
    assert matrix.shape == (4, 4) and np.allclose(matrix + matrix.T, 1.0) and not np.allclose(matrix, 0.5)
    number = r.json()["id"]
    assert client.get(f"/v1/ladders/ffa/games/{number}").json()["matrix"] is None
    pair = client.post("/v1/ladders/ffa/games", json=_game(["a"], ["b"]), headers=bearer(key))
    assert pair.json()["matrix"] is None

    # A batch on a twin ladder: each game's matrix is what predict answers once the games before it are posted.
    twin = make_ladder(client, "twin", k=k)
    first, second = _game(["a"], ["b"], ["c"]), _game(["c"], ["a"], ["b"], ["d"])
    batch = client.post("/v1/ladders/twin/games/batch", json={"games": [first, second]}, headers=bearer(twin))
    assert batch.status_code == 201, batch.text
    key3 = make_ladder(client, "solo", k=k)
    np.testing.assert_allclose(batch.json()["games"][0]["matrix"], _predicted(client, "solo", first), rtol=1e-12)
    assert client.post("/v1/ladders/solo/games", json=first, headers=bearer(key3)).status_code == 201
    np.testing.assert_allclose(batch.json()["games"][1]["matrix"], _predicted(client, "solo", second), rtol=1e-12)


def test_the_python_client_reads_the_matrix(server):
    from melo_client import Melo

    with Melo(server, ADMIN_KEY) as admin:
        key = admin.ladders.create("ffa").write_key
    with Melo(server, key, ladder="ffa") as client:
        posted = client.games.post(sides=_game(["a"], ["b"], ["c"])["sides"])
    assert posted.matrix is not None and len(posted.matrix) == 3 and posted.matrix[0][0] == 0.5


def test_auto_refits_count_a_free_for_alls_pairs_and_audit_checks_them(client):
    """The first auto refit is due at 1,000 comparisons: 17 games of 12 sides (66 pairs each) reach it, where
    counted in games they would need 1,000 games; a void takes its game's pairs off, and /audit checks the count."""
    from app.analysis import auto

    auto._posted.clear()  # the policy is looked at every 100 comparisons a worker posts to a ladder
    key = make_ladder(client, "ffa", k=1)
    players = [[f"p{n}"] for n in range(20)]
    rng = np.random.default_rng(3)
    games = [_game(*[players[i] for i in rng.permutation(20)[:12]]) for _ in range(15)]
    assert client.post("/v1/ladders/ffa/games/batch", json={"games": games}, headers=bearer(key)).status_code == 201
    auto.wait_for_checks()
    assert client.get("/v1/ladders/ffa/refits").json()["items"] == []  # 990 comparisons: not yet
    more = {"games": games[:2]}  # 1,122 comparisons, 17 games
    assert client.post("/v1/ladders/ffa/games/batch", json=more, headers=bearer(key)).status_code == 201
    auto.wait_for_checks()
    refits = client.get("/v1/ladders/ffa/refits").json()["items"]
    assert len(refits) == 1 and refits[0]["params"]["auto"] is True
    assert client.delete("/v1/ladders/ffa/games/3", headers=bearer(key)).status_code == 200
    audit = client.get("/v1/ladders/ffa/audit").json()
    assert audit["counts_consistent"] is True and audit["games"] == 16
