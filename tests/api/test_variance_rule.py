"""A ladder on the variance rule (mathematics §3b): its posts, refits, voids, new settings and restores keep the
variances, and ``/audit`` finds the replay equal to what is stored, variances included."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from sqlalchemy import create_engine, text

from app.rating import ELO_PER_LOGIT
from tests.api.helpers import everything, export, post_all, random_games, wait
from tests.conftest import admin, bearer, make_ladder

START = datetime(2015, 3, 1, tzinfo=UTC)


def dated(games: list[dict], days: float) -> list[dict]:
    """The games played ``days`` apart from START on, with a year's break before the last tenth."""
    out = []
    for n, game in enumerate(games):
        when = START + timedelta(days=days * n + (365 if n >= 0.9 * len(games) else 0))
        out.append(game | {"played_at": when.isoformat()})
    return out


def variances(settings, slug: str) -> dict[str, float | None]:
    engine = create_engine(settings.database_url)
    try:
        with engine.connect() as connection:
            rows = connection.execute(
                text(
                    "SELECT p.key, p.variance FROM players p JOIN ladders l ON l.id = p.ladder_id WHERE l.slug = :s "
                    "ORDER BY p.key"
                ),
                {"s": slug},
            ).all()
    finally:
        engine.dispose()
    return {key: (None if v is None or math.isnan(v) else v) for key, v in rows}


def test_posts_refits_voids_settings_and_restores_keep_the_variances(client, settings, cli, tmp_path, capsys):
    key = make_ladder(client, "kalman", k=2, seed=7, rate_rule="variance", noise=20, drift=100, auto_refit=False)
    h = bearer(key)
    ladder = client.get("/v1/ladders/kalman").json()
    assert (ladder["rate_rule"], ladder["noise"]) == ("variance", 20)
    games = dated(random_games(70, seed=8), 2.0)
    ids = post_all(client, "kalman", key, games[:40])
    known = variances(settings, "kalman")
    assert all(v is not None and 0 < v < 10 for v in known.values()), known
    # A new noise replays the log (since the latest checkpoint: here, from the start).
    patched = client.patch("/v1/ladders/kalman", json={"noise": 35.0, "auto_rate": True}, headers=h)
    assert patched.status_code == 200
    assert client.get("/v1/ladders/kalman/audit").json()["consistent"]
    assert variances(settings, "kalman") != known
    refit = client.post("/v1/ladders/kalman/refits", json={"restarts": 1, "holdout": 0}, headers=h)
    job = wait(client, refit.headers["Location"])
    assert client.post(f"/v1/ladders/kalman/refits/{job['id']}/apply", headers=h).status_code == 200
    ids += post_all(client, "kalman", key, games[40:])
    assert client.get("/v1/ladders/kalman/audit").json()["consistent"]
    voided = client.request("DELETE", f"/v1/ladders/kalman/games/{ids[50]}", json={"reason": "typo"}, headers=h)
    assert voided.status_code == 200
    before = everything(client, "kalman")
    assert before["audit"]["consistent"]
    # strength_se is the variance (with the field's lag, which a field this small does not measure) and the time
    # since the player's last game.
    stored, drift = variances(settings, "kalman"), 100 / ELO_PER_LOGIT
    for row in before["board"]:
        profile = before["profiles"][row["key"]]
        clock, last = (datetime.fromisoformat(profile[k]) for k in ("ladder_clock", "last_played_at"))
        idle = (clock - last).total_seconds() / (365.25 * 86400)
        expected = math.sqrt(stored[row["key"]] + drift * drift * idle) * ELO_PER_LOGIT
        assert row["strength_se"] == pytest.approx(expected, rel=1e-6), row["key"]
    data = export(client, "kalman")
    lines = [json.loads(line) for line in data.splitlines()]
    assert lines[0]["ladder"]["rate_rule"] == "variance" and lines[0]["ladder"]["noise"] == 35.0
    (checkpoint,) = [line["checkpoint"] for line in lines if "checkpoint" in line]
    assert checkpoint["variances"] and set(checkpoint["variances"]) <= set(checkpoint["vectors"])
    path = tmp_path / "kalman.ndjson"
    path.write_bytes(data)
    cli(["import", "copy", str(path)])
    capsys.readouterr()
    after = everything(client, "copy")
    for part in (before, after):
        part["audit"].pop("checkpoint_after_game")
        for row in [*part["board"], *part["profiles"].values()]:
            row.pop("change_since_last_game")
    assert after == before
    assert variances(settings, "copy") == variances(settings, "kalman")
    # An export from before the rule existed restores with the rule it was rated with.
    header = dict(lines[0])
    header["ladder"] = {k: v for k, v in header["ladder"].items() if k not in ("rate_rule", "noise")}
    old = [json.dumps(header)] + [line for line in data.decode().splitlines()[1:] if '"checkpoint"' not in line]
    path.write_text("\n".join(old) + "\n")
    cli(["import", "old", str(path)])
    capsys.readouterr()
    assert client.get("/v1/ladders/old").json()["rate_rule"] == "steps"
    assert client.get("/v1/ladders/old/audit").json()["consistent"]
    assert set(variances(settings, "old").values()) == {None}


def test_a_ladder_moves_to_the_variance_rule_and_back(client, settings):
    key = make_ladder(client, "club", k=1, seed=3, auto_refit=False, rate_rule="steps")
    h = bearer(key)
    assert client.get("/v1/ladders/club").json()["rate_rule"] == "steps"
    games = dated(random_games(30, seed=2), 1.0)
    post_all(client, "club", key, games)
    steps = {row["key"]: row["elo"] for row in client.get("/v1/ladders/club/leaderboard").json()["items"]}
    changed = client.patch("/v1/ladders/club", json={"rate_rule": "variance"}, headers=h)
    assert changed.status_code == 200 and changed.json()["rate_rule"] == "variance"
    assert changed.json()["auto_rate"] is False  # an admin's rule is pinned, as an admin's η is
    assert client.get("/v1/ladders/club/audit").json()["consistent"]
    moved = {row["key"]: row["elo"] for row in client.get("/v1/ladders/club/leaderboard").json()["items"]}
    assert moved != steps and all(v is not None for v in variances(settings, "club").values())
    # A game dated before the ladder's first, and a hundred wins in a row after ten years away: finite, positive.
    early = {
        "sides": [{"players": ["p0"], "rank": 1}, {"players": ["p1"], "rank": 2}],
        "played_at": "1990-01-01T00:00:00Z",
    }
    assert client.post("/v1/ladders/club/games", json=early, headers=h).status_code == 201
    late = [early | {"played_at": f"2026-01-01T00:{n // 60:02d}:{n % 60:02d}Z"} for n in range(100)]
    assert client.post("/v1/ladders/club/games/batch", json={"games": late}, headers=h).status_code == 201
    kept = variances(settings, "club")
    assert all(v is not None and 0 < v < 1e6 and math.isfinite(v) for v in kept.values()), kept
    rows = client.get("/v1/ladders/club/leaderboard?by=conservative").json()["items"]
    assert all(math.isfinite(row["strength_se"]) and row["strength_se"] > 0 for row in rows)
    assert client.get("/v1/ladders/club/audit").json()["consistent"]
    assert client.patch("/v1/ladders/club", json={"rate_rule": "steps"}, headers=h).status_code == 200
    back = {row["key"]: row["elo"] for row in client.get("/v1/ladders/club/leaderboard").json()["items"]}
    twin = make_ladder(client, "twin", k=1, seed=3, auto_refit=False, rate_rule="steps")  # always on the step
    post_all(client, "twin", twin, [*games, early])
    client.post("/v1/ladders/twin/games/batch", json={"games": late}, headers=bearer(twin))
    assert back == {row["key"]: row["elo"] for row in client.get("/v1/ladders/twin/leaderboard").json()["items"]}
    assert client.get("/v1/ladders/club/audit").json()["consistent"]


@pytest.mark.parametrize(
    "bad",
    [
        {"noise": 0},
        {"noise": -5},
        {"noise": None},
        {"noise": "loud"},
        {"noise": 1e9},
        {"cycles": 1.0},
        {"cycles": -0.1},
        {"cycles": None},
        {"rate_rule": "kalman"},
        {"rate_rule": None},
    ],
)
def test_a_rule_that_could_freeze_a_player_is_refused(client, bad):
    key = make_ladder(client, "strict", auto_refit=False)
    r = client.patch("/v1/ladders/strict", json=bad, headers=bearer(key))
    assert r.status_code == 422 and r.headers["content-type"] == "application/problem+json", r.text
    created = client.post("/v1/ladders", json={"slug": "other", **{k: v for k, v in bad.items() if v is not None}})
    assert created.status_code in (401, 422), created.text


@pytest.mark.parametrize("rule", [{"noise": 1e-300}, {"eta": 0.0}])
def test_a_ladder_that_could_not_rate_is_not_created(client, rule):
    # A noise that is 0 in logits², or a newcomer's variance of 0: every post would be refused. So is the ladder.
    body = {"slug": "stuck", "rate_rule": "variance"} | rule
    created = client.post("/v1/ladders", json=body, headers=admin())
    assert created.status_code == 422 and created.headers["content-type"] == "application/problem+json", created.text
    assert [error["field"] for error in created.json()["errors"]] == [next(iter(rule))]
    assert client.get("/v1/ladders/stuck").status_code == 404


def test_a_refits_replay_report_uses_the_ladders_rule(client):
    """The refit report's held-out `replay` is the ladder's online rule: on the variance rule, its variances."""
    games = random_games(120, seed=4)
    replays = {}
    for slug, rule in (("steady", "steps"), ("filter", "variance")):
        key = make_ladder(client, slug, k=1, seed=2, rate_rule=rule, noise=60.0, auto_refit=False)
        assert client.post(f"/v1/ladders/{slug}/games/batch", json={"games": games}, headers=bearer(key)).status_code
        body = {"restarts": 1, "holdout": 0.3, "select_k": [1]}
        started = client.post(f"/v1/ladders/{slug}/refits", json=body, headers=bearer(key))
        job = wait(client, started.headers["Location"])
        assert job["status"] == "done", job
        replays[rule] = job["result"]["heldout"]["replay"]
    assert replays["variance"]["log_loss"] != replays["steps"]["log_loss"], replays


def drifting_games(n: int, seed: int) -> list[dict]:
    """Singles among 12 players whose strengths wander every hundred games, dated over the years."""
    rng = np.random.default_rng(seed)
    strength = rng.normal(0, 1.2, 12)
    games = []
    for g in range(n):
        a, b = rng.choice(12, 2, replace=False)
        won = rng.random() < 1 / (1 + math.exp(strength[b] - strength[a]))
        first, second = (a, b) if won else (b, a)
        when = f"{2010 + g // 60}-{1 + g % 12:02d}-{1 + g % 28:02d}T00:00:00Z"
        sides = [{"players": [f"p{first}"], "rank": 1}, {"players": [f"p{second}"], "rank": 2}]
        games.append({"sides": sides, "played_at": when})
        if g % 100 == 99:
            strength += rng.normal(0, 0.5, 12)
    return games


def test_a_rate_chosen_on_a_constant_eta_ladder_is_the_rate_it_then_runs(client):
    """A constant η ignores the drift, so the rate choice compares its candidates without one: the rate applied
    must run without one too, or the ladder runs a rule no one compared (here the variance rule at the drift)."""
    key = make_ladder(
        client, "const", k=1, seed=5, rate_rule="steps", eta_tau=None, drift=100.0, drift_steps=True, auto_refit=False
    )
    h = bearer(key)
    posted = client.post("/v1/ladders/const/games/batch", json={"games": drifting_games(500, 3)}, headers=h)
    assert posted.status_code == 201, posted.text
    chosen = []
    for _ in range(2):
        body = {"restarts": 1, "holdout": 0, "tune_rate": True, "select_k": [1]}
        started = client.post("/v1/ladders/const/refits", json=body, headers=h)
        assert started.status_code == 202, started.text
        job = wait(client, started.headers["Location"])
        assert job["status"] == "done", job
        assert client.post(f"/v1/ladders/const/refits/{job['id']}/apply", headers=h).status_code == 200
        chosen.append(job["result"]["rate"])
    first, again = chosen
    assert first["changed"] and first["rate_rule"] == "variance", first
    # The ladder's rate, compared again on the same log, predicts as the choice said it would.
    assert again["previous_log_loss"] == pytest.approx(first["log_loss"], abs=1e-12), (first, again)
    assert client.get("/v1/ladders/const/audit").json()["consistent"]
