"""Learned seats through the API (mathematics §5): named at creation, taken by sides, learned, replayed exactly."""

from __future__ import annotations

import json

import pytest
from scipy.special import expit

from app import rating
from tests.api.helpers import export, home_games, players, post_all, wait
from tests.conftest import bearer, make_ladder


def test_seats_are_learned_shown_and_audited(client):
    key = make_ladder(client, "league", k=1, seats=["home", "away"])
    post_all(client, "league", key, home_games(300))
    ladder = client.get("/v1/ladders/league").json()
    seats = {s["name"]: s for s in ladder["seats"]}
    assert list(seats) == ["home", "away"]
    edge = seats["home"]["advantage_elo"] - seats["away"]["advantage_elo"]
    assert edge > 40  # 0.6 logits = 104 Elo points, learned from 257 games with seats
    assert 0 < seats["home"]["advantage_elo_se"] < 60
    assert client.get("/v1/ladders/league/audit").json()["consistent"]
    game = home_games(1, seed=11)[0]
    posted = client.post("/v1/ladders/league/games", json=game, headers=bearer(key)).json()
    assert [side["seat"] for side in posted["sides"]] == ["home", "away"]
    assert client.get(f"/v1/ladders/league/games/{posted['id']}").json() == posted
    # The same games on a ladder without seats: the seats change the ratings.
    plain = make_ladder(client, "plain", k=1)
    stripped = [{"sides": [{k: v for k, v in s.items() if k != "seat"} for s in g["sides"]]} for g in home_games(300)]
    post_all(client, "plain", plain, stripped)
    assert players(client, "league") != players(client, "plain")
    assert client.get("/v1/ladders/plain").json()["seats"] is None


def test_a_batch_is_the_same_as_its_games_one_by_one(client):
    games = home_games(60, seed=1)
    one = make_ladder(client, "one", k=1, seed=5, seats=["home", "away"])
    batch = make_ladder(client, "batch", k=1, seed=5, seats=["home", "away"])
    post_all(client, "one", one, games)
    r = client.post("/v1/ladders/batch/games/batch", json={"games": games}, headers=bearer(batch))
    assert r.status_code == 201, r.text
    assert players(client, "one") == players(client, "batch")
    assert client.get("/v1/ladders/one").json()["seats"] == client.get("/v1/ladders/batch").json()["seats"]


def test_a_void_replays_the_seats_exactly(client):
    games = home_games(80, seed=2)
    key = make_ladder(client, "voided", k=1, seed=7, seats=["home", "away"])
    clean = make_ladder(client, "clean", k=1, seed=7, seats=["home", "away"])
    ids = post_all(client, "voided", key, games)
    post_all(client, "clean", clean, games[:30] + games[31:])
    assert client.delete(f"/v1/ladders/voided/games/{ids[30]}", headers=bearer(key)).status_code == 200
    assert players(client, "voided") == players(client, "clean")
    assert client.get("/v1/ladders/voided").json()["seats"] == client.get("/v1/ladders/clean").json()["seats"]
    assert client.get("/v1/ladders/voided/audit").json()["consistent"]
    # Undoing the latest game puts the seats back where they were before it.
    before = client.get("/v1/ladders/voided").json()["seats"]
    extra = post_all(client, "voided", key, home_games(1, seed=9))
    assert client.get("/v1/ladders/voided").json()["seats"] != before
    assert client.delete(f"/v1/ladders/voided/games/{extra[0]}", headers=bearer(key)).status_code == 200
    assert client.get("/v1/ladders/voided").json()["seats"] == before
    assert client.get("/v1/ladders/voided/audit").json()["consistent"]


def test_predictions_take_seats(client):
    key = make_ladder(client, "league", k=1, seats=["home", "away"])
    post_all(client, "league", key, home_games(200, seed=3))
    ladder = client.get("/v1/ladders/league").json()
    shift = (ladder["seats"][0]["advantage_elo"] - ladder["seats"][1]["advantage_elo"]) / rating.ELO_PER_LOGIT
    neutral = client.post("/v1/ladders/league/predict", json={"sides": [{"players": ["t0"]}, {"players": ["t1"]}]})
    seated = client.post(
        "/v1/ladders/league/predict",
        json={"sides": [{"players": ["t0"], "seat": "home"}, {"players": ["t1"], "seat": "away"}]},
    )
    assert neutral.status_code == seated.status_code == 200, seated.text
    p0, p1 = neutral.json()["matrix"][0][1], seated.json()["matrix"][0][1]
    assert p1 == pytest.approx(float(expit(rating.advantage_from_probability(p0) + shift)))
    r = client.get("/v1/ladders/league/predict", params={"a": "t0", "b": "t1", "a_seat": "home", "b_seat": "away"})
    assert r.status_code == 200 and r.json()["probability"] == pytest.approx(p1)


def test_opponents_that_would_make_a_player_comparable_read_their_seated_games(client):
    key = make_ladder(client, "league", k=1, seats=["home", "away"])
    post_all(client, "league", key, home_games(40, seed=5))
    r = client.get("/v1/ladders/league/players/t0/opponents", params={"purpose": "comparable", "limit": 3})
    assert r.status_code == 200, r.text  # was a 500: the games' seats were read without the ladder's seat names


def test_bad_seats_are_422_and_change_nothing(client):
    key = make_ladder(client, "league", k=1, seats=["home", "away"])
    game = {"sides": [{"players": ["a"], "rank": 1, "seat": "home"}, {"players": ["b"], "rank": 2, "seat": "home"}]}
    r = client.post("/v1/ladders/league/games", json=game, headers=bearer(key))
    assert r.status_code == 422 and r.headers["content-type"] == "application/problem+json"
    assert "seat 'home' is taken by more than one side" in r.text
    game["sides"][1]["seat"] = "lobby"
    r = client.post("/v1/ladders/league/games", json=game, headers=bearer(key))
    assert r.status_code == 422 and r.json()["errors"][0]["field"] == "sides[1].seat"
    r = client.post("/v1/ladders/league/games/batch", json={"games": [game]}, headers=bearer(key))
    assert r.status_code == 422 and r.json()["errors"][0]["field"] == "games[0].sides[1].seat"
    plain = make_ladder(client, "plain")
    r = client.post("/v1/ladders/plain/games", json=game, headers=bearer(plain))
    assert r.status_code == 422 and "no seat 'home'" in r.text
    r = client.post(
        "/v1/ladders/league/predict", json={"sides": [{"players": ["a"], "seat": "lobby"}, {"players": ["b"]}]}
    )
    assert r.status_code in (404, 422)
    assert client.get("/v1/ladders/league").json()["games"] == 0
    assert client.post(
        "/v1/ladders", json={"slug": "twice", "seats": ["home", "home"]}, headers=bearer(key)
    ).status_code in (401, 403, 422)


def test_a_refit_estimates_the_seats_with_the_vectors_and_applies_them(client):
    key = make_ladder(client, "league", k=1, seed=4, seats=["home", "away"])
    post_all(client, "league", key, home_games(400, seed=4, home_edge=0.8))
    started = client.post("/v1/ladders/league/refits", json={"restarts": 1, "select_k": [0, 1]}, headers=bearer(key))
    job = wait(client, started.headers["Location"])
    assert job["status"] == "done", job
    fitted = job["result"]["seats"]
    edge = fitted["advantage"][0] - fitted["advantage"][1]
    assert 0.4 < edge < 1.2, edge  # 0.8 logits generated
    assert all(info > 1.0 for info in fitted["information"])
    post_all(client, "league", key, home_games(5, seed=5))  # games after the refit's snapshot
    assert client.post(f"{started.headers['Location']}/apply", headers=bearer(key)).status_code == 200
    audit = client.get("/v1/ladders/league/audit").json()
    assert audit["consistent"] and audit["checkpoint_after_game"] == job["after_game"]
    post_all(client, "league", key, home_games(5, seed=6))
    assert client.get("/v1/ladders/league/audit").json()["consistent"]


def test_an_export_restores_the_seats(client, cli, tmp_path, capsys):
    key = make_ladder(client, "league", k=1, seed=4, seats=["home", "away"], seat_prior=0.25)
    ids = post_all(client, "league", key, home_games(150, seed=7))
    started = client.post("/v1/ladders/league/refits", json={"restarts": 1, "holdout": 0}, headers=bearer(key))
    job = wait(client, started.headers["Location"])
    assert client.post(f"/v1/ladders/league/refits/{job['id']}/apply", headers=bearer(key)).status_code == 200
    ids += post_all(client, "league", key, home_games(30, seed=8))
    assert client.delete(f"/v1/ladders/league/games/{ids[160]}", headers=bearer(key)).status_code == 200
    data = export(client, "league")
    lines = [json.loads(line) for line in data.splitlines()]
    assert (lines[0]["ladder"]["seats"], lines[0]["ladder"]["seat_prior"]) == (["home", "away"], 0.25)
    assert [len(line["checkpoint"]["seats"]["advantage"]) for line in lines if "checkpoint" in line] == [2]
    path = tmp_path / "league.ndjson"
    path.write_bytes(data)
    cli(["import", "copy", str(path)])
    capsys.readouterr()
    assert client.get("/v1/ladders/copy").json()["seats"] == client.get("/v1/ladders/league").json()["seats"]
    assert players(client, "copy") == players(client, "league")
    assert client.get("/v1/ladders/copy/audit").json()["consistent"]
    assert export(client, "copy").split(b"\n", 1)[1] == data.split(b"\n", 1)[1]
    assert client.get("/v1/ladders/copy").json()["seat_prior"] == 0.25
    # An export from before the setting came from a ladder whose seats' prior was 1 logit.
    del lines[0]["ladder"]["seat_prior"]
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    cli(["import", "older", str(path)])
    capsys.readouterr()
    assert client.get("/v1/ladders/older").json()["seat_prior"] == 1.0


def test_the_seats_prior_is_a_setting_the_rate_choice_picks_and_an_admin_pins(client):
    # A new ladder starts its seats at 0.5 logit; setting 1 replays the log into the ratings of a ladder that
    # always had 1, and pins the rate.
    games = home_games(200, seed=3)
    narrow = make_ladder(client, "narrow", k=1, seed=5, seats=["home", "away"])
    wide = make_ladder(client, "wide", k=1, seed=5, seats=["home", "away"], seat_prior=1.0)
    for slug, key in (("narrow", narrow), ("wide", wide)):
        r = client.post(f"/v1/ladders/{slug}/games/batch", json={"games": games}, headers=bearer(key))
        assert r.status_code == 201, r.text
    assert client.get("/v1/ladders/narrow").json()["seat_prior"] == 0.5
    assert players(client, "narrow") != players(client, "wide")
    changed = client.patch("/v1/ladders/narrow", json={"seat_prior": 1.0}, headers=bearer(narrow)).json()
    assert (changed["seat_prior"], changed["auto_rate"]) == (1.0, False)
    assert players(client, "narrow") == players(client, "wide")
    assert client.get("/v1/ladders/narrow").json()["seats"] == client.get("/v1/ladders/wide").json()["seats"]
    assert client.get("/v1/ladders/narrow/audit").json()["consistent"]
    plain = make_ladder(client, "plain", k=1)  # no seats: the prior is kept for them, the rate is not pinned
    kept = client.patch("/v1/ladders/plain", json={"seat_prior": 2.0}, headers=bearer(plain)).json()
    assert (kept["seat_prior"], kept["auto_rate"]) == (2.0, True)
    for bad in (None, 0, -1, 11, "wide", True):
        r = client.patch("/v1/ladders/narrow", json={"seat_prior": bad}, headers=bearer(narrow))
        assert r.status_code == 422 and r.headers["content-type"] == "application/problem+json", (bad, r.text)

    # Home sides that win 92% of games on a ladder whose prior keeps a seat near 0: the log asks for a wider one,
    # chosen with the rate, and applying the refit replays the log with both.
    key = make_ladder(client, "tight", k=1, seed=5, seats=["home", "away"], seat_prior=0.05, auto_refit=False)
    games = home_games(1_200, seed=4, home_edge=2.5)
    for batch in (games[:600], games[600:]):
        r = client.post("/v1/ladders/tight/games/batch", json={"games": batch}, headers=bearer(key))
        assert r.status_code == 201, r.text
    started = client.post("/v1/ladders/tight/refits", json={"tune_rate": True}, headers=bearer(key))
    rate = wait(client, started.headers["location"])["result"]["rate"]
    assert rate["changed"] and rate["previous_seat_prior"] == 0.05 and rate["seat_prior"] in (1.0, 2.0)
    assert [row["seat_prior"] for row in rate["candidates"][-4:]] == [0.25, 0.5, 1.0, 2.0]
    assert client.post(f"{started.headers['location']}/apply", headers=bearer(key)).status_code == 200
    ladder = client.get("/v1/ladders/tight").json()
    assert ladder["seat_prior"] == rate["seat_prior"] == ladder["rate_choice"]["seat_prior"]
    assert ladder["rate_choice"]["previous_seat_prior"] == 0.05
    assert client.get("/v1/ladders/tight/audit").json()["consistent"]
