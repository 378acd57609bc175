"""Refits and checkpoints, identifiability, intransitivity and the canonical view through the API
(mathematics §9-§12)."""

import re
import socket
import subprocess
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from app import storage
from app.analysis import auto, refit_jobs, refit_run
from app.analysis.refit_rate import live_check
from app.analysis.schemas import INTRANSITIVITY_SCALE, RefitIn
from app.core.db import Database
from app.domain.refit_policy import due_point, policy
from app.main import create_app
from app.rating.intransitivity import hodge_norms
from app.storage.tables import Ladder, Refit
from tests.api.helpers import disc_games, game, wait
from tests.conftest import admin, bearer, make_ladder

SEED_7_2 = {"p1": [-1.0, 2.0], "p2": [0.0, 2.0], "p3": [1.0, 2.0], "p4": [0.3, -0.4]}  # [Guide] §7.2


def frozen_ladder(client, results):
    key = make_ladder(client, k=1, eta=0.0, rate_rule="steps")  # η = 0: the vectors stay as given
    for name, vec in SEED_7_2.items():
        client.post("/v1/ladders/test/players", json={"key": name, "vector": vec}, headers=bearer(key))
    clique = [("p1", "p2"), ("p2", "p1"), ("p2", "p3"), ("p3", "p2"), ("p1", "p3"), ("p3", "p1")]
    batch = {"games": [game(winner, loser) for winner, loser in clique + results]}
    assert client.post("/v1/ladders/test/games/batch", json=batch, headers=bearer(key)).status_code == 201
    return client.get("/v1/ladders/test/identifiability").json()


def test_seed000_scenario4_makes_p4_comparable(client):
    report = frozen_ladder(client, [("p4", "p1"), ("p4", "p2"), ("p4", "p3"), ("p2", "p4")])
    assert report["unique"] and sorted(report["clique"]) == ["p1", "p2", "p3"]
    assert "p4" in report["comparable"] and report["not_comparable"] == []
    assert report["components"] == [["p1", "p2", "p3", "p4"]]


def test_seed000_scenario1_leaves_p4_not_comparable(client):
    report = frozen_ladder(client, [("p4", "p1"), ("p4", "p3")])
    assert not report["unique"]
    (p4,) = report["not_comparable"]
    assert p4["key"] == "p4" and len(p4["direction"]) == 2
    assert ["p4"] in report["components"]  # p4 never lost: it is a component of its own


def the_auto_refit(client, games: list[dict], headers: dict) -> dict:
    """Post 1,000 games and then the rest (the policy's first auto refit is due), and wait for that refit."""
    client.post("/v1/ladders/test/games/batch", json={"games": games[:1000]}, headers=headers)
    client.post("/v1/ladders/test/games/batch", json={"games": games[1000:]}, headers=headers)
    auto.wait_for_checks()
    (started,) = client.get("/v1/ladders/test/refits").json()["items"]
    return wait(client, f"/v1/ladders/test/refits/{started['id']}")


def ranked_games(strength: np.ndarray, n: int, seed: int) -> list[dict]:
    """``n`` games between random pairs of players p0, p1, …, won with the Elo probability of their strengths."""
    rng = np.random.default_rng(seed)
    games = []
    for _ in range(n):
        a, b = rng.choice(len(strength), 2, replace=False)
        a_wins = rng.random() < 1 / (1 + np.exp(strength[b] - strength[a]))
        games.append(game(f"p{a}", f"p{b}") if a_wins else game(f"p{b}", f"p{a}"))
    return games


def test_refit_job_apply_checkpoint_and_audit(client):
    key = make_ladder(client, k=1, eta=0.1, seed=3)
    h = bearer(key)
    games = ranked_games(np.linspace(-1.5, 1.5, 10), 800, seed=0)
    assert client.post("/v1/ladders/test/games/batch", json={"games": games}, headers=h).status_code == 201

    body = {"select_k": [0, 1], "eta": 0.05, "replay_k": 2}
    started = client.post("/v1/ladders/test/refits", json=body, headers=h)
    assert started.status_code == 202 and started.json()["status"] in ("queued", "running", "done")
    # Games keep flowing while the refit runs.
    assert client.post("/v1/ladders/test/games", json=game("p9", "p0"), headers=h).status_code == 201
    job = wait(client, started.headers["location"])
    assert job["status"] == "done" and job["progress"] == 1.0, job
    result = job["result"]
    assert {"current", "elo", "replay"} <= set(result["heldout"])
    assert ("refit" in result["heldout"]) == (result["k"] > 0)
    assert (result["heldout"]["replay"]["eta"], result["heldout"]["replay"]["k"]) == (0.05, 2)
    assert [row["k"] for row in result["k_selection"]] == [0, 1]
    assert result["games"] in (800, 801) and result["identifiability"]["unique"]  # 801 if it read the log late

    client.post("/v1/ladders/test/games", json=game("p0", "p9"), headers=h)
    applied = client.post(f"{started.headers['location']}/apply", headers=h)
    assert applied.status_code == 200, applied.text
    assert applied.json()["replayed_games"] >= 1  # the games posted after the refit's snapshot
    audit = client.get("/v1/ladders/test/audit").json()
    assert audit["consistent"] and audit["checkpoint_after_game"] == job["after_game"]
    for n in range(5):
        client.post("/v1/ladders/test/games", json=game(f"p{n}", f"p{n + 5}"), headers=h)
    assert client.get("/v1/ladders/test/audit").json()["consistent"]
    # The refit ranks like the generating strengths.
    board = client.get("/v1/ladders/test/leaderboard").json()["items"]
    assert board[0]["key"] in ("p9", "p8") and board[-1]["key"] in ("p0", "p1")
    assert client.post(f"{started.headers['location']}/apply", headers={}).status_code == 401


def test_a_refit_chooses_the_learning_rate_from_the_ladders_own_log_and_applying_it_sets_it(client):
    # A ladder set to a rate 16 times too fast for steady strengths: its own log says so; applying the refit
    # replays the log with the rate it chose.
    # No auto refit choosing the rate first.
    key = make_ladder(client, k=1, eta=4.0, seed=3, auto_refit=False, rate_rule="steps")
    h = bearer(key)
    games = ranked_games(np.linspace(-1.5, 1.5, 10), 1_500, seed=0)
    for batch in (games[:750], games[750:]):
        assert client.post("/v1/ladders/test/games/batch", json={"games": batch}, headers=h).status_code == 201
    assert client.get("/v1/ladders/test").json()["rate_choice"] is None
    started = client.post("/v1/ladders/test/refits", json={"tune_rate": True}, headers=h)
    rate = wait(client, started.headers["location"])["result"]["rate"]
    # 25 rates but those at 4 times η (16, past the 10 the API takes) and 28 variance rules (mathematics §3b) at the
    # ladder's drift; no other drift, as the games were all posted on one day: no time away could tell the drifts
    # apart (tests/api/test_time_away.py has dated games).
    steps = [row for row in rate["candidates"] if row["rule"] == "steps"]
    assert len(steps) == 20 and len(rate["candidates"]) == 20 + 28
    assert max(row["eta"] for row in rate["candidates"]) <= 10
    # Steady strengths: a Kalman filter's step, which shrinks as what is known of each player grows, predicts best.
    assert rate["changed"] and not rate["applied"] and rate["rate_rule"] == "variance"
    assert {row["drift"] for row in rate["candidates"]} == {100.0} and rate["drift"] == 100.0
    assert all(row["noise"] > 0 for row in rate["candidates"] if row["rule"] == "variance")
    losses = {(row["eta"], row["tau"]): row["log_loss"] for row in steps}
    assert rate["log_loss"] == min(row["log_loss"] for row in rate["candidates"]) < min(losses.values())
    assert rate["previous_log_loss"] == losses[(4.0, 3.0)] > rate["log_loss"] + rate["standard_error"]
    assert client.post(f"{started.headers['location']}/apply", headers=h).status_code == 200
    ladder = client.get("/v1/ladders/test").json()
    assert (ladder["eta"], ladder["rate_rule"], ladder["auto_rate"]) == (rate["eta"], "variance", True)
    assert (ladder["eta_tau"], ladder["noise"], ladder["cycles"]) == (3.0, rate["noise"], rate["cycles"])
    assert min(row["log_loss"] for row in rate["candidates"]) == rate["log_loss"]
    choice = ladder["rate_choice"]
    assert choice["refit"] == int(started.headers["location"].rsplit("/", 1)[1]) and choice["games"] == 1_500
    assert (choice["previous_eta"], choice["previous_eta_tau"], choice["log_loss"]) == (4.0, 3.0, rate["log_loss"])
    assert client.get(started.headers["location"]).json()["result"]["rate"]["applied"] is True
    assert client.get("/v1/ladders/test/audit").json()["consistent"]
    admins = client.patch("/v1/ladders/test", json={"eta": 0.123}, headers=h).json()  # the admin's rate now
    assert (admins["auto_rate"], admins["rate_choice"]) == (False, None)
    plain = client.post("/v1/ladders/test/refits", json={}, headers=h)
    assert "rate" not in wait(client, plain.headers["location"])["result"]  # only when asked for


@pytest.mark.parametrize(("ladder_eta", "chosen_eta", "holds"), [(0.3, 10.0, False), (8.0, 0.3, True)])
def test_a_rate_choice_is_checked_as_the_ladder_would_run_it_from_its_checkpoint(
    client, settings, ladder_eta, chosen_eta, holds
):
    """A choice is scored from the initial vectors, but the ladder, given it, replays from its latest checkpoint (a
    refit's fitted vectors): the rule chosen must also predict the games since the checkpoint better, so replayed,
    than the ladder's rule served them (the losses of the answers its posts gave), or it is not applied."""
    key = make_ladder(client, k=1, eta=ladder_eta, seed=3, auto_refit=False, rate_rule="steps")
    h = bearer(key)
    games = ranked_games(np.linspace(-1.5, 1.5, 10), 1_100, seed=0)
    assert client.post("/v1/ladders/test/games/batch", json={"games": games[:800]}, headers=h).status_code == 201
    fitted = client.post("/v1/ladders/test/refits", json={}, headers=h)
    assert wait(client, fitted.headers["location"])["status"] == "done"
    assert client.post(f"{fitted.headers['location']}/apply", headers=h).status_code == 200
    since = client.post("/v1/ladders/test/games/batch", json={"games": games[800:]}, headers=h).json()["games"]
    served = np.mean([-np.log(game["sides"][0]["expected_score"]) for game in since])  # each won by side 0

    db = Database.from_settings(settings)
    try:
        with db.snapshot() as session:
            ladder = storage.ladders.by_slug(session, "test")
            rate = {"changed": True, "eta": chosen_eta, "eta_tau": None, "drift": ladder.drift}
            checked = live_check(session, ladder, rate, upto=10**9)
    finally:
        db.dispose()
    live = checked["live"]
    assert live["games"] == 300 and live["after_game_id"] > 0
    assert live["previous_log_loss"] == pytest.approx(served, rel=1e-9)  # what the ladder served
    assert (live["log_loss"] < live["previous_log_loss"]) is holds
    assert checked["changed"] is holds and live["held"] is holds


def test_a_pinned_rate_is_left_as_set(client):
    key = make_ladder(client, k=1, seed=3, rate_rule="steps")
    h = bearer(key)
    games = ranked_games(np.linspace(-1.5, 1.5, 10), 1_500, seed=0)
    assert client.post("/v1/ladders/test/games/batch", json={"games": games[:1000]}, headers=h).status_code == 201
    pinned = client.patch("/v1/ladders/test", json={"eta": 4.0}, headers=h).json()  # an admin's rate: pinned
    assert (pinned["eta"], pinned["auto_rate"]) == (4.0, False)
    started = client.post("/v1/ladders/test/refits", json={"tune_rate": True}, headers=h)
    rate = wait(client, started.headers["location"])["result"]["rate"]
    assert rate["changed"]  # the log says another rate is better: reported, not applied
    assert client.post(f"{started.headers['location']}/apply", headers=h).status_code == 200
    ladder = client.get("/v1/ladders/test").json()
    assert (ladder["eta"], ladder["rate_choice"]) == (4.0, None)
    unpinned = {"eta": 4.0, "eta_tau": 3.0, "auto_rate": True}
    assert client.patch("/v1/ladders/test", json=unpinned, headers=h).json()["auto_rate"] is True


def test_an_auto_refit_chooses_and_applies_the_rate_whatever_its_guard_says(client):
    auto._posted.clear()
    key = make_ladder(client, k=1, eta=4.0, seed=3, rate_rule="steps")  # auto_refit and auto_rate: the defaults
    h = bearer(key)
    games = ranked_games(np.linspace(-1.5, 1.5, 10), 1_100, seed=1)
    job = the_auto_refit(client, games, h)
    assert job["params"]["tune_rate"] is True
    rate = job["result"]["rate"]
    assert job["status"] in ("done", "rejected") and rate["changed"] and rate["applied"], job
    ladder = client.get("/v1/ladders/test").json()
    assert ladder["eta"] == rate["eta"] < 4.0 and ladder["rate_choice"]["refit"] == job["id"]
    assert ladder["rate_choice"]["applied_at"] < job["finished_at"]  # as soon as chosen, before the guard and fit
    # The refit was judged as the ladder runs from it on: under the rate just chosen, not the one it replaced.
    assert job["result"]["guard"]["rule"]["eta"] == rate["eta"]
    assert client.get("/v1/ladders/test/audit").json()["consistent"]


def test_an_auto_refit_whose_fit_is_rejected_still_applies_the_rate_its_log_chose(client):
    # Strengths that keep moving: one fit of the whole log predicts the latest games worse than the online rule
    # (the guard rejects it), while the log says a rule whose steps do not shrink to nothing follows them better:
    # the variance rule, whose noise keeps every step from freezing (mathematics §3b).
    auto._posted.clear()
    key = make_ladder(client, k=1, seed=3, rate_rule="steps")
    h = bearer(key)
    rng = np.random.default_rng(11)
    strength, games = rng.normal(0, 1, 12), []
    for _ in range(1_100):
        strength += rng.normal(0, 0.06, 12)
        a, b = rng.choice(12, 2, replace=False)
        a_wins = rng.random() < 1 / (1 + np.exp(strength[b] - strength[a]))
        games.append(game(f"p{a}", f"p{b}") if a_wins else game(f"p{b}", f"p{a}"))
    job = the_auto_refit(client, games, h)
    rate = job["result"]["rate"]
    assert job["status"] == "rejected" and not job["result"]["guard"]["better"], job["result"]["guard"]
    assert rate["changed"] and rate["applied"] and rate["rate_rule"] == "variance" and rate["noise"] > 0, rate
    assert job["result"]["guard"]["rule"] == {key: rate[key] for key in ("rate_rule", "eta", "eta_tau", "noise")}
    ladder = client.get("/v1/ladders/test").json()
    assert (ladder["rate_rule"], ladder["noise"], ladder["eta"]) == ("variance", rate["noise"], rate["eta"])
    assert ladder["rate_choice"]["refit"] == job["id"] and ladder["rate_choice"]["previous_rate_rule"] == "steps"
    assert ladder["rate_choice"]["applied_at"] < job["finished_at"]
    assert client.get("/v1/ladders/test/audit").json()["consistent"]
    # The ladder's next rate choice starts from the variance rule (it once failed there: a variance rule has no η).
    again = wait(
        client, client.post("/v1/ladders/test/refits", json={"tune_rate": True}, headers=h).headers["location"]
    )
    assert again["status"] == "done", again.get("error")
    rate = again["result"]["rate"]
    previous = (rate["previous_rate_rule"], rate["previous_eta"], rate["previous_noise"])
    assert previous == ("variance", ladder["eta"], ladder["noise"]), rate


def test_refit_errors(client):
    key = make_ladder(client, k=1)
    h = bearer(key)
    assert client.post("/v1/ladders/test/refits", json={"select_k": [0, 3]}, headers=h).status_code == 422
    r = client.post("/v1/ladders/test/refits", json={}, headers=h)
    assert r.status_code == 409 and "no games" in r.json()["detail"]
    assert client.get("/v1/ladders/test/identifiability?ratings=refit").status_code == 409  # no refit yet
    game = {"sides": [{"players": ["a"], "rank": 1}, {"players": ["b"], "rank": 2}]}
    assert client.post("/v1/ladders/test/games", json=game, headers=h).status_code == 201
    job = wait(client, client.post("/v1/ladders/test/refits", json={"holdout": 0}, headers=h).headers["location"])
    assert job["status"] == "done"
    assert client.post("/v1/ladders/test/refits/99/apply", headers=h).status_code == 404
    assert client.get("/v1/ladders/test/refits/999").status_code == 404


def test_intransitivity_canonical_and_disc_leaderboard(client):
    key = make_ladder(client, k=1, eta=0.0, rate_rule="steps")
    theta = 2 * np.pi * np.arange(6) / 6  # a cyclic disc: rock-paper-scissors among six
    for n, t in enumerate(theta):
        vec = [float(np.cos(t)), float(np.sin(t))]
        client.post("/v1/ladders/test/players", json={"key": f"c{n}", "vector": vec}, headers=bearer(key))
    batch = {"games": [game(f"c{n}", f"c{(n + 1) % 6}") for n in range(6)] * 3}
    client.post("/v1/ladders/test/games/batch", json=batch, headers=bearer(key))
    intrans = client.get("/v1/ladders/test/intransitivity").json()
    assert intrans["measure"] > 1 and intrans["transitive_norm"] == pytest.approx(0, abs=1e-9)
    assert intrans["empirical"]["measure"] > 1
    canonical = client.get("/v1/ladders/test/canonical").json()
    assert canonical["blocks"][0]["kind"] == "cyclic" and canonical["players"][0]["strength"] is None
    disc = client.get("/v1/ladders/test/leaderboard?by=disc")
    assert disc.status_code == 409 and "cyclic" in disc.json()["detail"]
    assert disc.headers["content-type"] == "application/problem+json"
    # Pages of the players in the order they joined, each with the same discs, as the whole list.
    pages, cursor = [], None
    while True:
        page = client.get("/v1/ladders/test/canonical?limit=4" + (f"&cursor={cursor}" if cursor else "")).json()
        assert page["blocks"] == canonical["blocks"] and page["ladder_version"] == canonical["ladder_version"]
        pages.append(page["players"])
        if (cursor := page["next_cursor"]) is None:
            break
    assert [len(p) for p in pages] == [4, 2] and [row for p in pages for row in p] == canonical["players"]
    assert [p["key"] for p in canonical["players"]] == [f"c{n}" for n in range(6)]
    assert client.get("/v1/ladders/test/canonical?cursor=bm90IGEgY3Vyc29y").status_code == 422
    assert client.get("/v1/ladders/test/canonical?limit=1001").status_code == 422


def test_disc_leaderboard_on_a_transitive_ladder(client):
    key = make_ladder(client, k=1, eta=0.0, rate_rule="steps")
    for n, r in enumerate([-1.0, 0.5, 2.0]):
        client.post("/v1/ladders/test/players", json={"key": f"e{n}", "vector": [r, 1.0]}, headers=bearer(key))
    board = client.get("/v1/ladders/test/leaderboard?by=disc").json()["items"]
    assert [row["key"] for row in board] == ["e2", "e1", "e0"]
    canonical = client.get("/v1/ladders/test/canonical").json()
    assert canonical["blocks"][0]["kind"] == "transitive"
    assert all(p["consistency"] > 0 for p in canonical["players"])


def test_a_refit_lost_with_its_process_shows_as_failed(client):
    make_ladder(client, k=1)
    with client.app.state.db.writing() as session:
        ladder = session.query(Ladder).filter_by(slug="test").one()
        job = Refit(ladder_id=ladder.id, status="running", progress=0.3, params={})
        job.updated_at = datetime.now(UTC) - timedelta(minutes=11)
        session.add(job)
        session.flush()
        job_id = job.id
    shown = client.get(f"/v1/ladders/test/refits/{job_id}").json()
    assert shown["status"] == "failed" and "start a new refit" in shown["error"]


def test_auto_refit_applies_a_better_fit_as_a_checkpoint(client):
    auto._posted.clear()
    # The defaults (auto_refit on) with the rate pinned: a rate choice applies at once and replays the log, which
    # would rewrite the forecasts served that the guard compared with.
    key = make_ladder(client, auto_rate=False)
    assert client.get("/v1/ladders/test").json()["auto_refit"] is True
    games = disc_games(1_100)
    h = bearer(key)
    client.post("/v1/ladders/test/games/batch", json={"games": games[:999]}, headers=h)
    auto.wait_for_checks()
    assert client.get("/v1/ladders/test/refits").json()["items"] == []  # below 1,000 games
    client.post("/v1/ladders/test/games/batch", json={"games": games[999:1000]}, headers=h)
    client.post("/v1/ladders/test/games/batch", json={"games": games[1000:1099]}, headers=h)  # 100 since the check
    auto.wait_for_checks()
    (started,) = client.get("/v1/ladders/test/refits").json()["items"]
    assert started["params"]["auto"] and started["params"]["select_k"] == [0, 1, 2]
    job = wait(client, f"/v1/ladders/test/refits/{started['id']}")
    guard = job["result"]["guard"]
    # The cycles are there to find: the refit, continued online, beat the online ratings on the latest 20%.
    assert job["status"] == "done" and guard["better"] and guard["k"] >= 1, job
    assert guard["window_games"] == int(0.2 * job["result"]["games"])
    # The online forecasts the guard compared with are those the ladder served: the stored expected scores.
    served = client.get("/v1/ladders/test/games?limit=500").json()["items"]
    window = [g for g in served if g["id"] <= job["after_game"]][: guard["window_games"]]
    p = np.array([g["sides"][0]["expected_score"] for g in window])
    assert -np.mean(np.log(p)) == pytest.approx(guard["online_log_loss"], rel=1e-9)  # side 0 always won
    assert job["applied_at"] is not None
    audit = client.get("/v1/ladders/test/audit").json()
    assert audit["consistent"] and audit["checkpoint_after_game"] == job["after_game"]
    # 1,199 games are not yet 20% more than the 1,099 the last one saw: no new refit.
    client.post("/v1/ladders/test/games/batch", json={"games": games[1099:]}, headers=h)
    client.post("/v1/ladders/test/games/batch", json={"games": disc_games(99, seed=1)}, headers=h)
    auto.wait_for_checks()
    assert len(client.get("/v1/ladders/test/refits").json()["items"]) == 1


def test_a_ladder_without_auto_refit_spends_no_check_and_is_checked_once_it_has_it(client):
    """The policy's checks count the comparisons of ladders that refit themselves only: the others' posts start no
    check at all.  Turned on, a ladder is checked after its next 100 comparisons, and its refit is due by the
    comparisons in its log."""
    auto._posted.clear()
    h = bearer(make_ladder(client, auto_refit=False))
    games = disc_games(1_200)
    for batch in (games[:1_000], games[1_000:1_100]):
        assert client.post("/v1/ladders/test/games/batch", json={"games": batch}, headers=h).status_code == 201
    assert auto._posted == {}
    assert client.patch("/v1/ladders/test", json={"auto_refit": True}, headers=admin()).status_code == 200
    assert client.post("/v1/ladders/test/games/batch", json={"games": games[1_100:1_199]}, headers=h).status_code == 201
    auto.wait_for_checks()
    assert client.get("/v1/ladders/test/refits").json()["items"] == []  # 99 comparisons since: not checked yet
    assert client.post("/v1/ladders/test/games", json=games[1_199], headers=h).status_code == 201
    auto.wait_for_checks()
    (started,) = client.get("/v1/ladders/test/refits").json()["items"]
    assert started["params"]["auto"]


def test_an_auto_refit_fits_the_log_up_to_the_game_that_made_it_due_however_late_it_is_found(client, settings):
    """The policy looks after a batch of 1,100 games (the refit was due at the 1,000th comparison) and the job waits
    while more games arrive: it fits, chooses and applies the log up to the 1,000th game (those after it are
    replayed on top), and the next is due at 1,200 comparisons of the log, not 1,320 of what the policy saw, so
    what a ladder ends with does not depend on when its server got round to looking."""
    auto._posted.clear()
    key = make_ladder(client, auto_refit=False)
    h = bearer(key)
    games = disc_games(1_300)
    for batch in (games[:1_000], games[1_000:1_100]):
        assert client.post("/v1/ladders/test/games/batch", json={"games": batch}, headers=h).status_code == 201
    assert client.patch("/v1/ladders/test", json={"auto_refit": True}, headers=admin()).status_code == 200
    db = Database.from_settings(settings)
    try:
        with db.writing() as session:  # as the policy's check queues it, not yet run
            due = auto._due(session, storage.ladders.by_slug(session, "test").id)
            assert due is not None
            ladder, n_games, due_at = due
            assert due_at == 1_000
            params = RefitIn(select_k=[0, 1], restarts=1, auto=True, tune_rate=True)
            upto = storage.as_of.last_game(session, ladder.id)
            job = refit_jobs.start_refit(session, ladder, params, n_games, due_at, upto=upto)
            job_id = job.id
        queued = client.get(f"/v1/ladders/test/refits/{job_id}").json()
        assert queued["status"] == "queued" and queued["after_game"] == 1_100
        # Games arrive while it waits; then it runs.
        assert client.post("/v1/ladders/test/games/batch", json={"games": games[1_100:]}, headers=h).status_code == 201
        refit_run.run_refit(db, ladder.id, job_id)
        with db.reading() as session:
            assert policy(session, ladder.id)[2] == 1_200
    finally:
        db.dispose()
    ran = client.get(f"/v1/ladders/test/refits/{job_id}").json()
    assert ran["status"] in ("done", "rejected") and ran["after_game"] == 1_000 and ran["result"]["games"] == 1_000
    assert client.get("/v1/ladders/test/audit").json()["consistent"]


def test_an_auto_refit_found_late_reads_up_to_the_last_due_count_its_log_passed():
    """Each due count is 20% above the last (rounded up); a log that passed several reads to the last of them."""
    assert [due_point(1_000, n) for n in (1_000, 1_199, 1_200, 1_439, 1_440, 100_000)] == [
        1_000,
        1_000,
        1_200,
        1_200,
        1_440,
        95_501,
    ]


def test_auto_refit_is_off_when_the_ladder_says_so(client):
    auto._posted.clear()
    key = make_ladder(client, auto_refit=False)
    client.post("/v1/ladders/test/games/batch", json={"games": disc_games(1_000)}, headers=bearer(key))
    auto.wait_for_checks()
    assert client.get("/v1/ladders/test/refits").json()["items"] == []


def test_auto_refit_that_would_not_predict_better_is_rejected(client):
    # η = 0 and the true vectors: the online forecasts are the true probabilities, which no fit can beat.
    auto._posted.clear()
    key = make_ladder(client, k=1, eta=0.0, rate_rule="steps")
    h = bearer(key)
    rng = np.random.default_rng(5)
    C = rng.normal(scale=3.0, size=(10, 2))  # decisive games: the refit's prior shrinks them
    for n, vec in enumerate(C):
        client.post("/v1/ladders/test/players", json={"key": f"t{n}", "vector": vec.tolist()}, headers=h)
    games = []
    for _ in range(1_100):
        a, b = rng.choice(10, 2, replace=False)
        a_wins = rng.random() < 1 / (1 + np.exp(-(C[a, 0] * C[b, 1] - C[a, 1] * C[b, 0])))
        games.append(game(f"t{a}", f"t{b}") if a_wins else game(f"t{b}", f"t{a}"))
    job = the_auto_refit(client, games, h)
    guard = job["result"]["guard"]
    assert job["status"] == "rejected" and not guard["better"], guard
    assert guard["refit_log_loss"] > guard["online_log_loss"] and job["applied_at"] is None, guard
    assert client.get("/v1/ladders/test/audit").json()["checkpoint_after_game"] is None
    assert client.post(f"/v1/ladders/test/refits/{job['id']}/apply", headers=h).status_code == 409


def test_only_an_applied_refit_changes_who_is_provisional(client):
    """A player with enough results who never lost is outside the connected field: provisional once a refit that
    says so is applied, not when it is merely computed; a later applied refit's report replaces the remembered one."""
    key = make_ladder(client, k=1, eta=0.0, rate_rule="steps")
    h = bearer(key)
    for name, vec in SEED_7_2.items():
        client.post("/v1/ladders/test/players", json={"key": name, "vector": vec}, headers=h)
    clique = [("p1", "p2"), ("p2", "p1"), ("p2", "p3"), ("p3", "p2"), ("p1", "p3"), ("p3", "p1")]
    unbeaten = [("p4", "p1"), ("p4", "p2"), ("p4", "p3")]  # 3 results, but never a loss
    client.post("/v1/ladders/test/games/batch", json={"games": [game(w, lo) for w, lo in clique + unbeaten]}, headers=h)

    def provisional():
        return {row["key"]: row["provisional"] for row in client.get("/v1/ladders/test/leaderboard").json()["items"]}

    def refit():
        job = wait(client, client.post("/v1/ladders/test/refits", json={"restarts": 1}, headers=h).headers["location"])
        assert job["status"] == "done", job
        return job

    assert provisional() == dict.fromkeys(["p1", "p2", "p3", "p4"], False)
    job = refit()
    assert [row["key"] for row in job["result"]["identifiability"]["not_comparable"]] == ["p4"]
    assert ["p4"] in job["result"]["identifiability"]["components"]
    assert provisional() == dict.fromkeys(["p1", "p2", "p3", "p4"], False)  # a report changes nothing shown
    assert client.post(f"/v1/ladders/test/refits/{job['id']}/apply", headers=h).status_code == 200
    for _ in range(2):  # the report is parsed once, then remembered
        assert provisional() == {"p1": False, "p2": False, "p3": False, "p4": True}
    p4 = client.get("/v1/ladders/test/players/p4").json()
    assert p4["provisional"] and "not both won and lost" in p4["provisional_reason"]
    client.post(
        "/v1/ladders/test/games/batch", json={"games": [game("p5", lo) for lo in ("p1", "p2", "p3")]}, headers=h
    )
    assert provisional()["p5"] is False
    job = refit()
    assert provisional()["p5"] is False
    client.post(f"/v1/ladders/test/refits/{job['id']}/apply", headers=h)
    assert provisional()["p5"] is True


def test_a_refit_lists_its_first_100_unplaced_players_and_places_them_all(client):
    """150 players who beat the clique three times and never lost: the refit's result lists 100 of them (with the
    full counts), ``/identifiability?ratings=refit`` all 150, and once applied every one of them is provisional:
    what a refit found is kept whole beside the result, by player id."""
    key = make_ladder(client, k=1, eta=0.0, rate_rule="steps")
    h = bearer(key)
    for name, vec in SEED_7_2.items():
        client.post("/v1/ladders/test/players", json={"key": name, "vector": vec}, headers=h)
    clique = [
        game(w, lo) for w, lo in [("p1", "p2"), ("p2", "p1"), ("p2", "p3"), ("p3", "p2"), ("p1", "p3"), ("p3", "p1")]
    ]
    unbeaten = [game(f"u{n}", lo) for n in range(150) for lo in ("p1", "p2", "p3")]
    assert client.post("/v1/ladders/test/games/batch", json={"games": clique + unbeaten}, headers=h).status_code == 201
    job = wait(client, client.post("/v1/ladders/test/refits", json={"restarts": 1}, headers=h).headers["location"])
    found = job["result"]["identifiability"]
    assert found["truncated"] and found["counts"]["components"] == 152 and len(found["components"]) == 100
    whole = client.get("/v1/ladders/test/identifiability?ratings=refit").json()["not_comparable"]
    assert found["counts"]["not_comparable"] == len(whole) > 150 and found["not_comparable"] == whole[:100]
    assert client.post(f"/v1/ladders/test/refits/{job['id']}/apply", headers=h).status_code == 200
    rows = {
        row["key"]: row["provisional"] for row in client.get("/v1/ladders/test/leaderboard?limit=200").json()["items"]
    }
    assert {key for key, provisional in rows.items() if provisional} == {f"u{n}" for n in range(150)} | {"p4"}
    u149 = client.get("/v1/ladders/test/players/u149").json()
    assert u149["provisional"] and "not both won and lost" in u149["provisional_reason"]


@pytest.mark.parametrize("k", [1, 2, 3])
def test_a_small_ladder_with_ordinary_play_stays_established_at_any_k(client, k):
    """Six colleagues, fifty games: everyone has won and lost against the others, so nobody is provisional, before
    or after a refit (applied or not); where the cyclic coordinates are not pinned down yet, the reason says the
    place rests on the Elo scale."""
    key = make_ladder(client, k=k)
    games = ranked_games(np.linspace(-1, 1, 6), 50, seed=k)
    assert client.post("/v1/ladders/test/games/batch", json={"games": games}, headers=bearer(key)).status_code == 201

    def rows():
        return client.get("/v1/ladders/test/leaderboard").json()["items"]

    before = rows()
    assert len(before) == 6 and not any(row["provisional"] for row in before)
    location = client.post("/v1/ladders/test/refits", json={"restarts": 1}, headers=bearer(key)).headers["location"]
    job = wait(client, location)
    assert job["status"] == "done", job
    assert rows() == before  # not applied: the leaderboard is as it was
    assert client.post(f"{location}/apply", headers=bearer(key)).status_code == 200
    for row in rows():
        assert not row["provisional"], row
        reason = row["provisional_reason"]
        assert reason is None or reason.startswith("established on the Elo scale"), reason
        assert k > 1 or reason is None or "latest applied refit" in reason


def test_a_refit_asked_for_cancels_the_ladders_auto_refit_queued_or_running(client, settings):
    """One refit of a ladder at a time: the one asked for cancels the auto refit, whose process stops at once
    (its fit would take far longer) and which applies nothing."""
    from app.analysis import refit_jobs, refit_run
    from app.analysis.schemas import RefitIn
    from app.domain.access import ladder_for_read

    key = make_ladder(client, k=2, auto_refit=False)
    h = bearer(key)
    # A disc game of 400 players: the auto refit's guard passes, and its fit takes seconds (20,000 games: 40,000 took
    # a minute and a half to post on PostgreSQL, and the refit is cancelled as it starts all the same).
    rng = np.random.default_rng(3)
    pairs, theta = rng.integers(0, 400, size=(20_000, 2)), rng.uniform(0, 2 * np.pi, 400)
    first_wins = rng.random(len(pairs)) < 1 / (1 + np.exp(-4 * np.sin(theta[pairs[:, 1]] - theta[pairs[:, 0]])))
    winners = np.where(first_wins, pairs[:, 0], pairs[:, 1])
    games = [game(f"q{w}", f"q{a + b - w}") for (a, b), w in zip(pairs, winners, strict=True) if a != b]
    for start in range(0, len(games), 1_000):
        batch = {"games": games[start : start + 1_000]}
        assert client.post("/v1/ladders/test/games/batch", json=batch, headers=h).status_code == 201
    db, cancelled_before = Database.from_settings(settings), cancelled_count(client)
    auto_params = RefitIn(select_k=[0, 1, 2], restarts=3, l2=None, auto=True)
    with db.writing() as session:
        ladder_id = ladder_for_read(session, "test", fresh=True).id
        running = refit_jobs.start_refit(session, ladder_for_read(session, "test", fresh=True), auto_params).id
        queued = refit_jobs.start_refit(session, ladder_for_read(session, "test", fresh=True), auto_params).id
    refit_jobs.submit(db, ladder_id, running)
    deadline = time.time() + 60
    while client.get(f"/v1/ladders/test/refits/{running}").json()["status"] != "running":
        assert time.time() < deadline
        time.sleep(0.05)
    asked = client.post("/v1/ladders/test/refits", json={"select_k": [1], "restarts": 1, "holdout": 0}, headers=h)
    assert asked.status_code == 202, asked.text
    t = time.time()
    for cancelled in (running, queued):
        out = client.get(f"/v1/ladders/test/refits/{cancelled}").json()
        assert out["status"] == "cancelled" and out["error"].startswith("a refit of the ladder was asked"), out
    assert wait(client, asked.headers["Location"])["status"] == "done"
    assert time.time() - t < 30  # it did not wait for the auto refit's fit
    refit_run.run_refit(db, ladder_id, queued)  # a cancelled job that comes to its turn does nothing
    with db.reading() as session:
        jobs = {job.id: job for job in session.scalars(select(Refit).where(Refit.id.in_([running, queued])))}
    db.dispose()
    assert all(job.status == "cancelled" and job.applied_at is None for job in jobs.values())
    assert jobs[running].progress < 1 and jobs[queued].progress == 0
    assert client.get("/v1/ladders/test/audit").json()["checkpoint_after_game"] is None
    assert cancelled_count(client) == cancelled_before + 1


def cancelled_count(client) -> float:
    found = re.search(r'^melo_refits_total\{outcome="cancelled"\} (\S+)$', client.get("/metrics").text, re.M)
    return float(found[1]) if found else 0.0


def test_refits_are_bounded_per_ladder_and_a_waiting_one_is_not_failed(client, settings):
    key = make_ladder(client, k=2)
    rng = np.random.default_rng(2)
    games = [
        {"sides": [{"players": [f"p{a}"], "rank": 1}, {"players": [f"p{b}"], "rank": 2}]}
        for a, b in (rng.choice(30, 2, replace=False) for _ in range(600))
    ]
    assert client.post("/v1/ladders/test/games/batch", json={"games": games}, headers=bearer(key)).status_code == 201
    body = {"restarts": 2, "select_k": [0, 1, 2], "folds": 2}  # seconds of work each: the others arrive meanwhile
    answers = [client.post("/v1/ladders/test/refits", json=body, headers=bearer(key)) for _ in range(4)]
    assert [r.status_code for r in answers[:2]] == [202, 202]
    refused = [r for r in answers[2:] if r.status_code == 429]
    assert refused and refused[0].headers["retry-after"] and refused[0].json()["status"] == 429
    # The second job waits behind the first: a quarter of an hour without news is not a failure.
    second = answers[1].json()["id"]
    db = Database.from_settings(settings)
    with db.writing() as session:
        job = session.get(Refit, second)
        if job.status == "queued":
            job.updated_at = datetime.now(UTC) - timedelta(minutes=15)
    db.dispose()
    shown = client.get(f"/v1/ladders/test/refits/{second}").json()
    assert shown["status"] in ("queued", "running", "done"), shown
    for r in answers[:2]:
        assert wait(client, r.headers["Location"])["status"] == "done"
    assert client.post("/v1/ladders/test/refits", json=body, headers=bearer(key)).status_code == 202


TINY_LADDERS = {  # slug: (games as (winner, loser), how many of the first ones are then voided, refit options)
    "one": ([("a", "b")], 0, {}),
    "one-of-four": ([("b", "c"), ("c", "a"), ("a", "c"), ("a", "b")], 3, {"select_k": [0, 1], "l2": None}),
    "two": ([("a", "b"), ("b", "c")], 0, {"restarts": 2}),
    "two-of-three": ([("c", "a"), ("a", "b"), ("b", "a")], 1, {"auto": True}),
    "three": ([("a", "b"), ("b", "a"), ("a", "b")], 0, {"select_k": [0, 1]}),
    "three-of-four": ([("a", "c"), ("a", "b"), ("b", "c"), ("c", "a")], 1, {"l2": None, "seed": 2}),
    "six": ([("a", "b"), ("b", "a")] * 3, 0, {"auto": True}),  # the guard fits the first five games
}


def test_refits_of_tiny_ladders_finish_and_say_what_they_could_not_hold_out(client):
    """1, 2 and 3 live games, with and without voids: every refit finishes; where nothing can be held out
    the report says so instead of failing (a ZeroDivisionError before)."""
    started = {}
    for slug, (results, voided, options) in TINY_LADDERS.items():
        h = bearer(make_ladder(client, slug=slug, k=1))
        batch = {"games": [game(winner, loser) for winner, loser in results]}
        posted = client.post(f"/v1/ladders/{slug}/games/batch", json=batch, headers=h)
        assert posted.status_code == 201, posted.text
        for item in posted.json()["games"][:voided]:
            assert client.delete(f"/v1/ladders/{slug}/games/{item['id']}", headers=h).status_code == 200
        r = client.post(f"/v1/ladders/{slug}/refits", json=options, headers=h)
        assert r.status_code == 202, r.text
        started[slug] = (r.headers["location"], len(results) - voided, h)
    for slug, (location, live, _) in started.items():
        job = wait(client, location)
        result = job["result"]
        if TINY_LADDERS[slug][2].get("auto"):  # guarded: compared with the online ratings on the latest games
            assert job["status"] in ("done", "rejected") and job["error"] is None, (slug, job)
            if live < 5:  # a window of int(0.2 * games) = 0 games
                assert job["status"] == "rejected" and result["guard"]["reason"] == "no games to compare on", job
                continue
            assert result["guard"]["window_games"] == 1 and np.isfinite(result["guard"]["refit_log_loss"]), job
            if job["status"] == "rejected":
                continue
        assert job["status"] == "done" and job["error"] is None, (slug, job)
        assert result["games"] == live and result["identifiability"] is not None
        assert np.isfinite(result["log_likelihood"]) and np.isfinite(result["restart_max_abs_dp"])
        if result["heldout_note"] is None:
            assert {"elo", "current", "replay"} <= set(result["heldout"]), (slug, result)
        else:  # fitted on every game, and why there are no held-out metrics
            assert result["heldout"] == {} and "matchup" in result["heldout_note"], (slug, result)
            assert result["k_selection"] is None and result["l2_selection"] is None
    # One matchup (a against b) cannot be split into training and held-out games, whatever the seed.
    notes = {slug: wait(client, started[slug][0])["result"]["heldout_note"] for slug in ("one", "three")}
    assert all(notes.values()), notes
    assert wait(client, started["three"][0])["result"]["k"] == 0  # the simplest k offered: nothing to choose by
    # A finished refit of a tiny ladder is a refit like any other: it can be applied.
    location, _, h = started["one"]
    assert client.post(f"{location}/apply", headers=h).status_code == 200
    assert client.get("/v1/ladders/one/audit").json()["consistent"]


def test_a_refit_of_a_ladder_whose_games_are_all_voided_is_refused_up_front(client):
    key = make_ladder(client, k=1)
    h = bearer(key)
    posted = client.post("/v1/ladders/test/games/batch", json={"games": [game("a", "b"), game("b", "a")]}, headers=h)
    for item in posted.json()["games"]:
        assert client.delete(f"/v1/ladders/test/games/{item['id']}", headers=h).status_code == 200
    r = client.post("/v1/ladders/test/refits", json={}, headers=h)
    assert r.status_code == 409 and "no games" in r.json()["detail"] and "2 games are voided" in r.json()["detail"]
    assert r.headers["content-type"] == "application/problem+json"
    assert client.get("/v1/ladders/test/refits").json()["items"] == []


STRICT_CASES = [  # (refit options, the field the 422 names)
    ({"auto": 0}, "auto"),
    ({"auto": "true"}, "auto"),
    ({"restarts": 2.0}, "restarts"),
    ({"restarts": "2"}, "restarts"),
    ({"restarts": True}, "restarts"),
    ({"holdout": "0.2"}, "holdout"),
    ({"holdout": False}, "holdout"),
    ({"l2": "2"}, "l2"),
    ({"l2": True}, "l2"),
    ({"eta": "0.1"}, "eta"),
    ({"replay_k": 1.0}, "replay_k"),
    ({"replay_k": "1"}, "replay_k"),
    ({"seed": 1.0}, "seed"),
    ({"seed": "1"}, "seed"),
    ({"select_k": [True]}, "select_k[0]"),
    ({"select_k": ["1"]}, "select_k[0]"),
    ({"select_k": [0, 1.0]}, "select_k[1]"),
    ({"holdout": 0, "select_k": [0, 1]}, "holdout"),  # choosing by held-out loss needs held-out games
    ({"holdout": 0, "l2": None}, "holdout"),
]


def test_refit_options_are_strict(client):
    key = make_ladder(client, k=1)
    client.post("/v1/ladders/test/games", json=game("a", "b"), headers=bearer(key))
    for body, field in STRICT_CASES:
        r = client.post("/v1/ladders/test/refits", json=body, headers=bearer(key))
        assert r.status_code == 422 and r.headers["content-type"] == "application/problem+json", (body, r.text)
        assert [e["field"] for e in r.json()["errors"]] == [field], (body, r.json())
        assert field.split("[")[0] in r.json()["detail"], (body, r.json())
    assert client.get("/v1/ladders/test/refits").json()["items"] == []  # nothing was queued
    # The same options as the right JSON types are fine: an integer is a number, and one k needs no choice.
    ok = {"auto": False, "restarts": 2, "holdout": 0, "l2": 2, "eta": 0, "replay_k": 1, "seed": 1, "select_k": [1]}
    r = client.post("/v1/ladders/test/refits", json=ok, headers=bearer(key))
    assert r.status_code == 202, r.text
    job = wait(client, r.headers["location"])
    assert job["status"] == "done" and job["result"]["k"] == 1 and job["result"]["heldout"] == {}, job


def test_a_refit_whose_games_were_all_voided_while_it_was_queued_fails_saying_why(client, settings):
    from app.analysis import refit_jobs, refit_run
    from app.analysis.schemas import RefitIn
    from app.domain.access import ladder_for_read

    key = make_ladder(client)
    h = bearer(key)
    for winner, loser in [("a", "b"), ("b", "a")]:
        assert client.post("/v1/ladders/test/games", json=game(winner, loser), headers=h).status_code == 201
    db = Database.from_settings(settings)
    with db.writing() as session:  # queued, as the API would leave it for a worker
        job = refit_jobs.start_refit(session, ladder_for_read(session, "test", fresh=True), RefitIn())
    for item in client.get("/v1/ladders/test/games").json()["items"]:
        assert client.delete(f"/v1/ladders/test/games/{item['id']}", headers=h).status_code == 200
    refit_run.run_refit(db, job.ladder_id, job.id)
    db.dispose()
    out = client.get(f"/v1/ladders/test/refits/{job.id}").json()
    assert out["status"] == "failed" and out["error"].startswith("nothing to fit"), out


def test_failed_auto_refits_back_off_and_the_ladder_says_why(client, settings):
    """Two auto refits in a row failed at 900 games: the next waits for the log to grow by 20% × 2² (1,620
    games, not 1,080), and the ladder's GET says so."""
    auto._posted.clear()
    key = make_ladder(client)
    db = Database.from_settings(settings)
    with db.writing() as session:
        ladder_id = session.scalar(select(Ladder.id).where(Ladder.slug == "test"))
        for _ in range(2):
            session.add(
                Refit(
                    ladder_id=ladder_id,
                    status="failed",
                    progress=0.0,
                    params={"auto": True},
                    log_games=900,
                    error="MemoryError: Unable to allocate 931 GiB",
                )
            )
    db.dispose()
    client.post("/v1/ladders/test/games/batch", json={"games": disc_games(1_100)}, headers=bearer(key))
    auto.wait_for_checks()
    assert len(client.get("/v1/ladders/test/refits").json()["items"]) == 2  # none started at 1,080 or 1,100
    note = client.get("/v1/ladders/test").json()["auto_refit_note"]
    assert note == (
        "the latest 2 auto refits failed (MemoryError: Unable to allocate 931 GiB); "
        "the next starts at 1,620 comparisons (a two-sided game is one)"
    )


def test_a_starting_server_takes_over_the_refits_of_a_server_that_stopped(client, settings):
    """A job queued by a server process that is gone runs on the next server to start on the host; one that was
    running is failed, saying why; a live server's queued job is left to it."""
    from app.core import jobs

    key = make_ladder(client)
    client.post("/v1/ladders/test/games/batch", json={"games": disc_games(60)}, headers=bearer(key))
    gone = subprocess.Popen(["true"])
    gone.wait()
    dead = f"{socket.gethostname()}:{gone.pid}:1"
    db = Database.from_settings(settings)
    with db.writing() as session:
        ladder_id = session.scalar(select(Ladder.id).where(Ladder.slug == "test"))
        made = {}
        jobs_made = [("queued", "queued", dead), ("running", "running", dead), ("alive", "queued", jobs.owner())]
        for name, status, owner in jobs_made:
            job = Refit(ladder_id=ladder_id, status=status, progress=0.0, params={}, owner=owner)
            session.add(job)
            session.flush()
            made[name] = job.id
    db.dispose()
    with TestClient(create_app(settings)) as restarted:
        resumed = wait(restarted, f"/v1/ladders/test/refits/{made['queued']}")
        assert resumed["status"] == "done", resumed
        failed = restarted.get(f"/v1/ladders/test/refits/{made['running']}").json()
        assert failed["status"] == "failed" and failed["error"].startswith("its server process stopped"), failed
        assert restarted.get(f"/v1/ladders/test/refits/{made['alive']}").json()["status"] == "queued"


def test_a_large_ladders_reports_are_computed_in_a_child_process_and_say_how_far_they_are(settings, monkeypatch):
    """With MELO_REPORT_JOB_GAMES reached, identifiability and intransitivity are computed in a child process:
    a 202 with progress until the first is ready (the same report the server's own thread computes), then the
    latest one at once, naming its version, while a newer one is computed; a refusal stays a refusal, and a
    child that runs out of time is a 503 saying so."""
    from app.http import report_jobs

    with TestClient(create_app(settings)) as small:
        key = make_ladder(small, k=1)
        small.post("/v1/ladders/test/games/batch", json={"games": disc_games(80)}, headers=bearer(key))
        expected = {
            name: small.get(f"/v1/ladders/test/{name}").json() for name in ("identifiability", "intransitivity")
        }
    monkeypatch.setattr(report_jobs, "REPORT_WAIT", 0.0)
    large = settings.model_copy(update={"report_job_games": 50})
    with TestClient(create_app(large)) as client:
        for name, report in expected.items():
            r = client.get(f"/v1/ladders/test/{name}")
            assert r.status_code == 202, r.text
            pending = r.json()
            assert pending["status"] in ("queued", "running") and 0 <= pending["progress"] <= 1
            assert pending["ladder_version"] == report["ladder_version"]
            assert r.headers["Location"] == f"/v1/ladders/test/{name}" and int(r.headers["Retry-After"]) > 0
            assert _polled(client, r.headers["Location"]) == report
        version = expected["intransitivity"]["ladder_version"]
        client.post("/v1/ladders/test/games", json=game("d1", "d2"), headers=bearer(key))
        stale = client.get("/v1/ladders/test/intransitivity")  # the latest computed, at once; a newer one starts
        assert stale.status_code == 200 and stale.json()["ladder_version"] == version
        deadline = time.time() + 60
        while client.get("/v1/ladders/test/intransitivity").json()["ladder_version"] == version:
            assert time.time() < deadline, "no newer report"
            time.sleep(0.2)
        assert client.get("/v1/ladders/test/identifiability?ratings=refit").status_code in (202, 409)
        assert _polled(client, "/v1/ladders/test/identifiability?ratings=refit", status=409)["status"] == 409

    monkeypatch.setattr(report_jobs, "REPORT_SECONDS", 0.01)
    with TestClient(create_app(large)) as client:
        failed = _polled(client, "/v1/ladders/test/intransitivity", status=503)
        assert "took longer than 0.01 s" in failed["detail"], failed
        r = client.get("/v1/ladders/test/intransitivity")  # not tried again at once
        assert r.status_code == 503 and r.headers["content-type"] == "application/problem+json"


def _polled(client, location, status=200, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        r = client.get(location)
        if r.status_code != 202:
            assert r.status_code == status, r.text
            return r.json()
        time.sleep(0.1)
    pytest.fail(f"{location} still 202 after {timeout} s")


def test_the_intransitivity_scale_is_stated_in_one_sentence_everywhere_and_fits_the_number(client):
    """README, mathematics notes, web page, OpenAPI and (in test_cli) the CLI read the measure the same way, and
    the number behaves as that sentence says: 1 for equal players, below 1 for a ranking, above 1 for cycles."""
    root = Path(__file__).resolve().parents[2]
    for path in ("README.md", "docs/mathematics.md", "app/web/static/insights.js"):
        assert INTRANSITIVITY_SCALE in " ".join((root / path).read_text().split()), path
    api = client.get("/openapi.json").json()
    assert INTRANSITIVITY_SCALE in api["paths"]["/v1/ladders/{slug}/intransitivity"]["get"]["description"]
    assert (
        INTRANSITIVITY_SCALE
        in api["components"]["schemas"]["IntransitivityOut"]["properties"]["measure"]["description"]
    )
    assert hodge_norms(np.tile([0.0, 1.0], (5, 1))).intransitivity == 1.0  # everyone equal
    ranking = np.column_stack([np.linspace(-2, 2, 5), np.ones(5)])  # c = (r, 1): a pure ranking
    assert hodge_norms(ranking).intransitivity < 1
    angles = np.linspace(0, 2 * np.pi, 6)[:-1]  # a disc game: each beats the next around the circle
    assert hodge_norms(2 * np.column_stack([np.cos(angles), np.sin(angles)])).intransitivity > 1
