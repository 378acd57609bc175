"""Draw probabilities and expected scores in predictions (app.rating.draws), fitted on the ladder's games as they
are posted and voided, and filled from the stored forecasts for games recorded before the counts were kept
(migration 0022)."""

import pytest
import sqlalchemy as sa
from alembic import command
from alembic.config import Config
from fastapi.testclient import TestClient

from app.core.migrate import MIGRATIONS
from app.main import create_app
from tests.conftest import bearer, make_ladder


def duel(a, b, rank_b=2):
    return {"sides": [{"players": [a], "rank": 1}, {"players": [b], "rank": rank_b}]}


def counts_from_games(client) -> tuple[int, float, dict[int, tuple[int, float]]]:
    """What ν is fitted on, from the games' stored forecasts: the drawn two-sided games that count, Σ 2·min(p, 1 - p)
    over them, and each one's share by number."""
    games = client.get("/v1/ladders/test/games?limit=500").json()["items"]
    two = [g for g in games if len(g["sides"]) == 2 and g["voided_at"] is None]
    each = {}
    for g in two:
        p = g["sides"][0]["expected_score"]
        each[g["id"]] = (int(g["sides"][0]["actual_score"] == 0.5), 2 * min(p, 1 - p))
    return sum(d for d, _ in each.values()), sum(r for _, r in each.values()), each


def share_from_games(client) -> float:
    draws, room, _ = counts_from_games(client)
    return draws / (room + 2)


def test_predictions_give_the_draw_probability_the_ladders_games_fit(client):
    h = bearer(make_ladder(client))
    assert client.post("/v1/ladders/test/games", json=duel("ann", "bob"), headers=h).status_code == 201
    pair = client.get("/v1/ladders/test/predict?a=ann&b=bob").json()
    assert pair["draw_probability"] is None and pair["expected_score"] == pair["probability"]  # no draw seen yet
    games = [duel("ann", "bob", 1), duel("cy", "ann", 1), duel("bob", "cy"), duel("cy", "dee", 1)]
    ffa = {"sides": [{"players": ["ann"], "rank": 1}, {"players": ["bob"], "rank": 1}, {"players": ["cy"], "rank": 2}]}
    assert client.post("/v1/ladders/test/games/batch", json={"games": [*games, ffa]}, headers=h).status_code == 201
    share = share_from_games(client)
    assert 0 < share < 1
    for path in ("/v1/ladders/test/predict?a=ann&b=bob", "/v1/ladders/test/predict?a=ann&b=bob&a_seat="):
        pair = client.get(path.removesuffix("&a_seat=")).json()  # the hot path and the route answer alike
        p, d = pair["probability"], pair["draw_probability"]
        assert d == pytest.approx(share * 2 * min(p, 1 - p), rel=1e-12)
        assert pair["win_probability"] + d + pair["loss_probability"] == pytest.approx(1)
        assert pair["win_probability"] + d / 2 == pytest.approx(pair["expected_score"])
    match = client.post("/v1/ladders/test/predict", json={"sides": [{"players": ["ann"]}, {"players": ["zed"]}]})
    e = match.json()["expected_scores"][0]
    assert match.json()["draw_probability"] == pytest.approx(share * 2 * min(e, 1 - e), rel=1e-12)
    three = {"sides": [{"players": ["ann"]}, {"players": ["bob"]}, {"players": ["cy"]}]}
    assert client.post("/v1/ladders/test/predict", json=three).json()["draw_probability"] is None
    # A void takes its game off and replays the later ones: ν is fitted on the forecasts as the replay rewrote them
    # (as a restore of the log fits it); voiding every draw leaves none.
    assert client.post("/v1/ladders/test/games/2/void", headers=h).status_code == 200  # drawn
    pair = client.get("/v1/ladders/test/predict?a=ann&b=bob").json()
    p, share = pair["probability"], share_from_games(client)
    assert pair["draw_probability"] == pytest.approx(share * 2 * min(p, 1 - p), rel=1e-12)
    for number in (3, 5):
        assert client.post(f"/v1/ladders/test/games/{number}/void", headers=h).status_code == 200
    assert client.get("/v1/ladders/test/predict?a=ann&b=bob").json()["draw_probability"] is None


def test_ladders_recorded_before_0022_get_their_draw_counts(client, settings):
    h = bearer(make_ladder(client))
    games = [duel("ann", "bob", 1), duel("bob", "cy"), duel("cy", "ann", 1), duel("ann", "cy")]
    assert client.post("/v1/ladders/test/games/batch", json={"games": games}, headers=h).status_code == 201
    engine = sa.create_engine(settings.sqlalchemy_url)
    with engine.connect() as conn:
        kept = conn.execute(sa.text("SELECT draws, draw_room FROM ladders")).one()
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.set_main_option("sqlalchemy.url", settings.sqlalchemy_url.replace("%", "%%"))
    command.downgrade(config, "0021")
    command.upgrade(config, "head")
    with engine.connect() as conn:
        filled = conn.execute(sa.text("SELECT draws, draw_room FROM ladders")).one()
    engine.dispose()
    draws, room, _ = counts_from_games(client)
    assert filled.draws == kept.draws == draws == 2 and filled.draw_room == pytest.approx(kept.draw_room, rel=1e-12)
    assert filled.draw_room == pytest.approx(room, rel=1e-12)
    with TestClient(create_app(settings)) as fresh:
        pair = fresh.get("/v1/ladders/test/predict?a=ann&b=bob").json()
        assert pair["draw_probability"] == pytest.approx(
            share_from_games(fresh) * 2 * min(pair["probability"], 1 - pair["probability"])
        )
