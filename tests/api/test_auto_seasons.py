"""Seasons that close themselves: the setting (`season_every`, `season_pull`) at creation, in a PATCH, in the
ladder's answer and its export; a close when a month ends, by the job with its clock given; a second run that does
nothing, two workers at once, and a server away for several periods closing each once with its own games."""

from __future__ import annotations

import json
import threading
from datetime import UTC, datetime, timedelta

from sqlalchemy import update

from app.domain.season_periods import period_at
from app.seasons import auto
from app.storage.tables import Ladder
from tests.api.helpers import export
from tests.conftest import admin, bearer, make_ladder


def post(client, slug: str, key: str, winner: str, loser: str, played_at: datetime) -> None:
    body = {"sides": [{"players": [winner], "rank": 1}, {"players": [loser], "rank": 2}]}
    r = client.post(f"/v1/ladders/{slug}/games", json=body | {"played_at": played_at.isoformat()}, headers=bearer(key))
    assert r.status_code == 201, r.text


def due_at(client, slug: str, moment: datetime) -> None:
    """The ladder's next automatic close moved to ``moment``: as if its setting had been on since before then."""
    with client.app.state.db.writing() as session:
        session.execute(update(Ladder).where(Ladder.slug == slug).values(season_due=moment))


def test_the_setting_is_taken_shown_changed_and_exported(client):
    key = make_ladder(client, "office", season_every="quarter", season_pull=0.25)
    shown = client.get("/v1/ladders/office").json()
    assert (shown["season_every"], shown["season_pull"]) == ("quarter", 0.25)
    lines = export(client, "office").decode().splitlines()
    exported = json.loads(lines[0])["ladder"]
    assert (exported["season_every"], exported["season_pull"]) == ("quarter", 0.25)
    r = client.patch("/v1/ladders/office", json={"season_every": "month"}, headers=bearer(key))
    assert r.status_code == 200 and r.json()["season_every"] == "month" and r.json()["season_pull"] == 0.25
    r = client.patch("/v1/ladders/office", json={"season_every": None}, headers=bearer(key))
    assert r.status_code == 200 and r.json()["season_every"] is None
    for body in ({"season_every": "week"}, {"season_pull": 2}, {"season_pull": None}, {"season_pull": True}):
        r = client.patch("/v1/ladders/office", json=body, headers=bearer(key))
        assert r.status_code == 422 and r.headers["content-type"] == "application/problem+json", (body, r.text)
    assert client.post("/v1/ladders", json={"slug": "x", "season_every": "day"}, headers=admin()).status_code == 422
    assert client.get("/v1/ladders/office").json()["season_every"] is None
    assert make_ladder(client, "plain") and client.get("/v1/ladders/plain").json()["season_every"] is None


def test_a_month_that_ends_closes_its_season_once_with_a_champion_and_podium(client):
    key = make_ladder(client, "office", k=1, seed=4, season_every="month")
    now = datetime.now(UTC)
    month = period_at("month", now)
    for n, (winner, loser) in enumerate([("ada", "bob"), ("ada", "cy"), ("bob", "cy"), ("ada", "bob"), ("cy", "bob")]):
        post(client, "office", key, winner, loser, min(month.start + timedelta(seconds=n), now))
    db = client.app.state.db
    assert auto.close_due(db, month.end - timedelta(seconds=1)) == []  # not over yet
    closed = auto.close_due(db, month.end + timedelta(seconds=1))
    assert [(s.name, s.games, s.first_game, s.last_game) for s in closed] == [(month.name, 5, 1, 5)]
    assert auto.close_due(db, month.end + timedelta(seconds=2)) == []  # a second run: nothing is due any more
    listed = client.get("/v1/ladders/office/seasons").json()["items"]
    archive = client.get(f"/v1/ladders/office/seasons/{month.name}").json()
    assert [p["key"] for p in listed[0]["podium"]] == [r["key"] for r in archive["items"][:3]]
    assert listed[0]["champion"] == listed[0]["podium"][0] and listed[0]["champion"]["rank"] == 1
    assert archive["season"] == listed[0]
    # The next close is due at the end of the month after.
    assert auto.close_due(db, period_at("month", month.end).end - timedelta(seconds=1)) == []


def test_two_workers_at_once_close_it_once(client, caplog):
    key = make_ladder(client, "office", k=1, seed=4, season_every="month")
    month = period_at("month", datetime.now(UTC))
    previous = period_at("month", month.start - timedelta(days=1))
    due_at(client, "office", previous.end)
    post(client, "office", key, "ada", "bob", previous.start + timedelta(hours=1))
    found: list = []
    workers = [threading.Thread(target=lambda: found.append(auto.close_due(client.app.state.db))) for _ in range(2)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert sorted(len(closed) for closed in found) == [0, 1]
    assert "failed" not in caplog.text
    assert [s["name"] for s in client.get("/v1/ladders/office/seasons").json()["items"]] == [previous.name]


def test_a_server_away_for_several_periods_closes_each_once_with_its_own_games(client):
    key = make_ladder(client, "office", k=1, seed=4, season_every="month", season_pull=0.5)
    now = datetime.now(UTC)
    months = [period_at("month", now)]
    for _ in range(3):
        months.insert(0, period_at("month", months[0].start - timedelta(days=1)))
    oldest, _empty, last, _current = months
    due_at(client, "office", oldest.end)
    for n, (winner, loser) in enumerate([("ada", "bob"), ("bob", "cy"), ("cy", "ada")]):
        post(client, "office", key, winner, loser, oldest.start + timedelta(days=1, hours=n))
    for n, (winner, loser) in enumerate([("ada", "cy"), ("ada", "bob")]):
        post(client, "office", key, winner, loser, last.start + timedelta(days=1, hours=n))
    closed = auto.close_due(client.app.state.db, now)
    # The month without games closes none; each other closes with its own games, in order.
    assert [(s.name, s.games, s.first_game, s.last_game, s.pull) for s in closed] == [
        (oldest.name, 3, 1, 3, 0.5),
        (last.name, 2, 4, 5, 0.5),
    ]
    first = client.get(f"/v1/ladders/office/seasons/{oldest.name}").json()["items"]
    assert sorted((r["key"], r["wins"], r["losses"]) for r in first) == [("ada", 1, 1), ("bob", 1, 1), ("cy", 1, 1)]
    # The pull of the earlier season, below the log's end, replayed the later games exactly.
    assert client.get("/v1/ladders/office/audit").json()["consistent"]
    assert auto.close_due(client.app.state.db, now) == []
