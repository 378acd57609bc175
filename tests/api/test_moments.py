"""Moments: a small office ladder whose story is known, read back as first wins, upsets (with the chance the stored
expected score gave), streaks, new #1s (as the leaderboard showed them after each game) and the week's biggest
rise; never more than two a game, none for voided games, the same for the same log, paged newest first."""

from __future__ import annotations

import json
from collections import Counter
from datetime import UTC, datetime, timedelta

import pytest

from tests.api.helpers import export
from tests.conftest import bearer, make_ladder

MONDAY = datetime(2026, 1, 5, 12, tzinfo=UTC)
#: winner>loser of each game: four colleagues' first two weeks.
STORY = "ada>bob cy>dan ada>cy bob>dan ada>dan dan>cy ada>bob cy>bob ada>cy bob>ada dan>ada " + (
    "dan>bob dan>cy dan>ada dan>bob cy>bob ada>cy"
)


def when(n: int) -> datetime:
    """Game n (from 1): eleven in the first week, the rest in the second."""
    return MONDAY + (timedelta(hours=10 * (n - 1)) if n <= 11 else timedelta(days=7, hours=10 * (n - 12)))


def post(client, slug: str, key: str, winner: str, loser: str, n: int) -> None:
    sides = [{"players": [winner], "rank": 1}, {"players": [loser], "rank": 2}]
    body = {"sides": sides, "played_at": when(n).isoformat()}
    r = client.post(f"/v1/ladders/{slug}/games", json=body, headers=bearer(key))
    assert r.status_code == 201, r.text


def leader(client, slug: str) -> str | None:
    first = client.get(f"/v1/ladders/{slug}/leaderboard", params={"limit": 1, "by": "conservative"}).json()["items"][0]
    return None if first["provisional"] else first["key"]


def moments(client, slug: str, **params) -> list[dict]:
    r = client.get(f"/v1/ladders/{slug}/moments", params={"limit": 100} | params)
    assert r.status_code == 200, r.text
    assert r.json()["next_cursor"] is None
    return r.json()["items"]


def story(client, slug: str = "office", **settings) -> tuple[str, list[str | None]]:
    """The ladder of :data:`STORY` (drift 0: the standings move with games only; ``settings`` on top); its key,
    and the established #1 of its leaderboard after each game."""
    key = make_ladder(client, slug, k=1, seed=3, auto_refit=False, drift=0, **settings)
    leaders = []
    for n, (winner, loser) in enumerate((game.split(">") for game in STORY.split()), start=1):
        post(client, slug, key, winner, loser, n)
        leaders.append(leader(client, slug))
    return key, leaders


def expected(client, slug: str, leaders: list[str | None]) -> list[tuple[int, str, list[str]]]:
    """What the moments must be, worked out from the games as the API shows them, newest first."""
    games = client.get(f"/v1/ladders/{slug}/games", params={"limit": 500}).json()["items"][::-1]
    results: dict[str, list[bool]] = {}
    week_rise: dict[str, float] = {}
    week_games: Counter[str] = Counter()
    found = []
    for n, game in enumerate(games):
        won, lost = sorted(game["sides"], key=lambda side: side["rank"])
        winner, loser = won["players"][0]["key"], lost["players"][0]["key"]
        settled = all(len(results.get(p, [])) >= 3 for p in (winner, loser))
        made = {}
        if game["id"] > 1 and leaders[n] is not None and leaders[n] != leaders[n - 1] and settled:
            made["new_leader"] = [leaders[n]]
        for side in game["sides"]:
            for p in side["players"]:
                week_rise[p["key"]] = week_rise.get(p["key"], 0.0) + p["elo_change"]
                week_games[p["key"]] += 1
        if n + 1 == len(games) or when(n + 2).isocalendar()[1] != when(n + 1).isocalendar()[1]:
            best = max(sorted(week_rise), key=lambda p: week_rise[p] if week_games[p] >= 3 else -1e9)
            made["movers"] = [best]
            week_rise, week_games = {}, Counter()
        if settled and won["expected_score"] < 0.3:
            made["upset"] = [winner]
        if not any(results.get(winner, [])):
            made["first_win"] = [winner]
        streak = next((i for i, w in enumerate([*results.get(winner, []), True][::-1]) if not w), None)
        streak = len(results.get(winner, [])) + 1 if streak is None else streak
        if settled and streak in (3, 5, 10):
            made["streak"] = [winner]
        results.setdefault(winner, []).append(True)
        results.setdefault(loser, []).append(False)
        order = ("new_leader", "movers", "upset", "first_win", "streak")
        found += [(game["id"], kind, made[kind]) for kind in order if kind in made][:2][::-1]
    return found[::-1]


@pytest.fixture
def office(client):
    key, leaders = story(client)
    return client, key, leaders


def test_each_kind_of_moment_is_told_once_as_the_games_say(office):
    client, _, leaders = office
    got = moments(client, "office")
    # Newest first, a game's moments in their order (kept in the order of importance).
    assert [(m["game"], m["kind"], m["players"]) for m in got] == expected(client, "office", leaders)
    kinds = Counter(m["kind"] for m in got)
    assert set(kinds) == {"first_win", "upset", "streak", "new_leader", "movers"}, kinds
    per_game = Counter(m["game"] for m in got)
    assert max(per_game.values()) <= 2
    assert all(len({m["kind"] for m in got if m["game"] == g}) == n for g, n in per_game.items())
    # The first games have provisional players: their first wins only.
    assert [(m["game"], m["text"]) for m in got if m["game"] <= 2] == [
        (2, "cy won for the first time"),
        (1, "ada won for the first time"),
    ]
    # An upset says the chance the winner had: the expected score stored with the game.
    for upset in (m for m in got if m["kind"] == "upset"):
        game = client.get(f"/v1/ladders/office/games/{upset['game']}").json()
        chance = next(s["expected_score"] for s in game["sides"] if s["rank"] == 1)
        assert upset["chance"] == chance < 0.3
        assert upset["text"].endswith(f"with a {int(100 * chance)}% chance")
        assert upset["played_at"] == game["played_at"]
    streak = next(m for m in got if m["kind"] == "streak" and m["players"] == ["ada"])
    assert (streak["game"], streak["wins"], streak["text"]) == (9, 5, "ada won 5 in a row")
    # The week's biggest rise: the sum of the Elo changes of the week's games, as the results show them.
    week = next(m for m in got if m["kind"] == "movers" and m["game"] == 11)
    assert week["week"] == "2026-W02" and week["text"].startswith(f"{week['players'][0]} rose ")
    changes = [
        p["elo_change"]
        for g in client.get("/v1/ladders/office/games", params={"limit": 500}).json()["items"]
        if g["id"] <= 11
        for side in g["sides"]
        for p in side["players"]
        if p["key"] == week["players"][0]
    ]
    assert week["rise"] == pytest.approx(sum(changes), abs=1e-6)


def test_a_ladder_on_the_variance_rule_tells_the_moments_its_standings_show(client):
    # Its standard errors are the players' variances: a new #1 is the one its leaderboard shows.
    _, leaders = story(client, "kalman", rate_rule="variance")
    got = moments(client, "kalman")
    assert [(m["game"], m["kind"], m["players"]) for m in got] == expected(client, "kalman", leaders)
    assert any(m["kind"] == "new_leader" for m in got)


def test_moments_page_newest_first_since_a_game_and_for_a_player(office):
    client, _, _ = office
    everything = moments(client, "office")
    pages, cursor = [], None
    while True:
        params = {"limit": 3} | ({"cursor": cursor} if cursor else {})
        page = client.get("/v1/ladders/office/moments", params=params).json()
        pages += page["items"]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert pages == everything
    assert moments(client, "office", since=12) == [m for m in everything if m["game"] > 12]
    assert moments(client, "office", player="DAN") == [m for m in everything if "dan" in m["players"]]
    for params, status in (
        ({"player": "nobody"}, 404),
        ({"cursor": "bm90IGEgY3Vyc29y"}, 422),
        ({"limit": 0}, 422),
        ({"since": -1}, 422),
    ):
        r = client.get("/v1/ladders/office/moments", params=params)
        assert r.status_code == status and r.headers["content-type"] == "application/problem+json", r.text
    assert client.get("/v1/ladders/nowhere/moments").status_code == 404


def test_a_voided_game_has_no_moments_and_the_next_win_is_the_first(office):
    client, key, _ = office
    assert client.post("/v1/ladders/office/games/1/void", headers=bearer(key)).status_code == 200
    got = moments(client, "office")
    assert not [m for m in got if m["game"] == 1]
    assert ("ada won for the first time", 3) in [(m["text"], m["game"]) for m in got]


def test_the_same_log_gives_the_same_moments(office, cli, tmp_path, capsys):
    client, _, _ = office
    first = moments(client, "office")
    assert moments(client, "office") == first
    path = tmp_path / "office.ndjson"
    path.write_bytes(export(client, "office"))
    cli(["import", "copy", str(path)])
    assert json.loads(capsys.readouterr().out)["slug"] == "copy"
    copied = moments(client, "copy")
    for item in (*first, *copied):  # Elo points against the field's mean, summed anew by the copy: last bits
        item["rise"] = item["rise"] and round(item["rise"], 6)
    assert copied == first


def test_a_first_win_after_many_games_that_scored_but_did_not_win_is_found(client):
    # Second of three 20 times (a score of 1/3: not a win), then first: the first win is read past the first
    # 16 scoring games (they are read 16, then 64, at a time), and a third of three never scores at all.
    key = make_ladder(client, "three", k=1, seed=2, auto_refit=False)
    for _ in range(20):
        ranks = {"ann": 1, "bob": 2, "cat": 3}
        sides = [{"players": [p], "rank": r} for p, r in ranks.items()]
        r = client.post("/v1/ladders/three/games", json={"sides": sides}, headers=bearer(key))
        assert r.status_code == 201, r.text
    sides = [{"players": ["bob"], "rank": 1}, {"players": ["cat"], "rank": 2}]
    assert client.post("/v1/ladders/three/games", json={"sides": sides}, headers=bearer(key)).status_code == 201
    first = {m["players"][0]: m["game"] for m in moments(client, "three") if m["kind"] == "first_win"}
    assert first == {"ann": 1, "bob": 21}
