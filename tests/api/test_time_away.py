"""Time in the ratings (mathematics §8): a standard error that grows while its player is away, by the ladder's own
clock, and players who leave the default leaderboard after ``inactive_after_days`` until their next game."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from tests.api.helpers import START, board, dated_game, post, profile, same, season, unversioned, vectors, wait
from tests.conftest import admin, bearer, make_ladder


def test_an_absent_players_uncertainty_grows_until_they_play_again(client):
    january, later = season()
    keys = {
        # The steps count games on both, so both rate alike: only what is known of the ratings differs.
        slug: make_ladder(client, slug, k=1, seed=4, auto_refit=False, drift=drift, drift_steps=False)
        for slug, drift in (("still", 0), ("drifting", 100))
    }
    for slug, key in keys.items():
        post(client, slug, key, january)
    after_january = {slug: profile(client, slug, "away") for slug in keys}
    for slug, key in keys.items():
        post(client, slug, key, later)
    still, drifting = profile(client, "still", "away"), profile(client, "drifting", "away")
    # The ladder's clock is its newest game, stated in every answer.
    newest = datetime.fromisoformat(later[-1]["played_at"])
    assert datetime.fromisoformat(drifting["ladder_clock"]) == newest
    assert datetime.fromisoformat(board(client, "drifting")["ladder_clock"]) == newest
    # Without drift, the field's games even shrink it; with the default drift it grows by 100 Elo points of
    # standard deviation a year of absence: exactly, on top of what the results leave.
    assert still["strength_se"] <= after_january["still"]["strength_se"]
    away_years = (newest - datetime.fromisoformat(drifting["last_played_at"])) / timedelta(days=365.25)
    assert 0.4 < away_years < 0.6
    grown = drifting["strength_se"] ** 2 - still["strength_se"] ** 2
    assert grown == pytest.approx(100.0**2 * away_years, rel=1e-9)
    assert drifting["strength_se"] > after_january["drifting"]["strength_se"] + 20
    assert drifting["elo"] == still["elo"]  # the rating itself stands still: only what it is known to be moves
    # The conservative order lets the absent player sink below the one who kept playing.
    order = {slug: [item["key"] for item in board(client, slug)["items"]] for slug in keys}
    assert order["still"].index("away") < order["still"].index("stay")
    assert order["drifting"].index("away") > order["drifting"].index("stay")
    # One game back and the time away no longer counts.
    back = START + timedelta(days=210)
    post(client, "drifting", keys["drifting"], [dated_game("away", "club0", True, back)])
    returned = profile(client, "drifting", "away")
    assert returned["strength_se"] < drifting["strength_se"] - 20
    assert returned["ladder_clock"] == returned["last_played_at"]


def test_a_ladder_clock_follows_the_log_back_when_its_newest_game_is_voided(client):
    """The clock is the newest game that counts: voiding it moves the clock back, and every standard error is then
    the one a ladder that never had that game shows."""
    january, later = season()
    games = january + later[:10]
    late = dated_game("stay", "club1", True, START + timedelta(days=400))
    one, two = make_ladder(client, "one", k=1, seed=2), make_ladder(client, "two", k=1, seed=2)
    post(client, "one", one, [*games, late])
    post(client, "two", two, games)
    newest = client.get("/v1/ladders/one/games", params={"limit": 1}).json()["items"][0]
    assert client.post(f"/v1/ladders/one/games/{newest['id']}/void", headers=bearer(one)).status_code == 200
    first, second = board(client, "one", inactive=True), board(client, "two", inactive=True)
    clock = datetime.fromisoformat(games[-1]["played_at"])
    assert datetime.fromisoformat(first["ladder_clock"]) == datetime.fromisoformat(second["ladder_clock"]) == clock
    # A replay leaves change_since_last_game unknown until each player's next game; the rest is the same.
    replayed = [{k: v for k, v in item.items() if k != "change_since_last_game"} for item in first["items"]]
    fresh = [{k: v for k, v in item.items() if k != "change_since_last_game"} for item in second["items"]]
    assert replayed == fresh


def test_players_away_longer_than_inactive_after_days_leave_the_default_leaderboard(client):
    january, later = season()
    key = make_ladder(client, "office", k=1, seed=1, auto_refit=False)
    post(client, "office", key, january + later)
    listed = [item["key"] for item in board(client, "office")["items"]]
    assert "away" in listed and profile(client, "office", "away")["inactive_reason"] is None
    r = client.patch("/v1/ladders/office", json={"inactive_after_days": 90}, headers=bearer(key))
    assert r.status_code == 200 and r.json()["inactive_after_days"] == 90
    listed = [item["key"] for item in board(client, "office")["items"]]
    assert "away" not in listed and "stay" in listed
    everyone = {item["key"]: item for item in board(client, "office", inactive="true")["items"]}
    away = profile(client, "office", "away")
    days = (datetime.fromisoformat(away["ladder_clock"]) - datetime.fromisoformat(away["last_played_at"])).days
    assert days > 90
    assert away["inactive_reason"].startswith(f"last played {days} days ago")
    assert everyone["away"]["inactive_reason"] == away["inactive_reason"] and away["active"] is True
    assert everyone["stay"]["inactive_reason"] is None
    suggested = client.get("/v1/ladders/office/players/stay/opponents", params={"limit": 20}).json()["items"]
    assert "away" not in [item["key"] for item in suggested] and len(suggested) == 8
    # Their next game brings them back; an admin's flag is a reason of its own.
    post(client, "office", key, [dated_game("away", "club2", False, START + timedelta(days=300))])
    assert "away" in [item["key"] for item in board(client, "office")["items"]]
    client.patch("/v1/ladders/office/players/club3", json={"active": False}, headers=bearer(key))
    assert profile(client, "office", "club3")["inactive_reason"].startswith("set inactive")
    # null turns it off; bad values are 422s naming the field.
    assert client.patch("/v1/ladders/office", json={"inactive_after_days": None}, headers=admin()).status_code == 200
    assert profile(client, "office", "stay")["inactive_reason"] is None
    for bad in ({"inactive_after_days": 0}, {"inactive_after_days": 1.5}, {"drift": -1}, {"drift": None}):
        r = client.patch("/v1/ladders/office", json=bad, headers=bearer(key))
        assert r.status_code == 422, (bad, r.text)
        assert list(bad) == [e["field"] for e in r.json()["errors"]][:1]


def test_drift_is_a_setting_shown_exported_and_changed_without_a_replay(client):
    key = make_ladder(client, "league", k=1, seed=3)
    assert client.get("/v1/ladders/league").json()["drift"] == 100.0
    january, _ = season()
    post(client, "league", key, january[:40])
    before = client.get("/v1/ladders/league/audit").json()
    r = client.patch("/v1/ladders/league", json={"drift": 250.0}, headers=bearer(key))
    assert r.status_code == 200 and r.json()["drift"] == 250.0
    assert client.get("/v1/ladders/league/audit").json() == before  # the ratings are untouched
    header = client.get("/v1/ladders/league/export", headers=bearer(key)).text.splitlines()[0]
    assert '"drift":250.0' in header and '"inactive_after_days":null' in header


def test_standings_as_of_a_date_are_those_the_ladder_showed_then(client):
    """``as_of`` answers the table after the last game played before that time: what the ladder showed when that
    game was its newest (ratings from an applied refit's checkpoint on, records, standard errors by that day's
    clock), and after a void, what a ladder that never had the voided game shows."""
    january, later = season()
    cut = datetime.fromisoformat(later[40]["played_at"])  # later[39] is the last game played before it
    then = {"as_of": cut.isoformat()}
    key = make_ladder(client, "whole", k=1, seed=6, auto_refit=False)
    post(client, "whole", key, january)
    started = client.post("/v1/ladders/whole/refits", json={}, headers=bearer(key))
    assert wait(client, started.headers["location"])["status"] == "done"
    assert client.post(f"{started.headers['location']}/apply", headers=bearer(key)).status_code == 200
    post(client, "whole", key, later[:40])
    shown = {by: board(client, "whole", by=by) for by in ("hodge", "conservative")}
    profiles = {who: profile(client, "whole", who) for who in ("away", "stay", "club3")}
    post(client, "whole", key, later[40:])
    for by, page in shown.items():
        same(board(client, "whole", by=by, **then), page)
    for who, shown_then in profiles.items():
        assert unversioned(profile_at(client, "whole", who, then)) == unversioned(shown_then)
    # Pages of a past table continue with their cursor; a cursor of another listing is refused.
    first = board(client, "whole", limit=4, **then)
    rest = board(client, "whole", limit=100, cursor=first["next_cursor"], **then)
    everyone = board(client, "whole", **then)["items"]
    assert [i["key"] for i in first["items"] + rest["items"]] == [i["key"] for i in everyone]
    r = client.get("/v1/ladders/whole/leaderboard", params={"by": "conservative", "cursor": first["next_cursor"]})
    assert r.status_code == 422 and "as_of" in r.json()["detail"]
    # Before the first game: empty; after the newest: today's table; a malformed date: a 422.
    assert board(client, "whole", as_of="2025-01-01T00:00:00Z")["items"] == []
    assert board(client, "whole", as_of="2200-01-01T00:00:00Z")["items"] == board(client, "whole")["items"]
    # A number is not a date (pydantic would read it as Unix time): so said, for the table and a profile.
    for bad in ("yesterday", "2026-13-01", "2026-03-01T25:00:00Z", "1735689600", "-1", "0", "1735689600.5"):
        for path in ("leaderboard", "players/away"):
            r = client.get(f"/v1/ladders/whole/{path}", params={"as_of": bad})
            assert r.status_code == 422 and r.headers["content-type"] == "application/problem+json", bad
            assert r.json()["errors"][0]["field"] == "query.as_of", r.text
    assert client.get("/v1/ladders/whole/players/away", params={"as_of": "2025-01-01"}).status_code == 404
    # A void of a January game sets the checkpoint aside and replays everything: the past table is then that of
    # a ladder that never had the game.
    assert client.post("/v1/ladders/whole/games/7/void", headers=bearer(key)).status_code == 200
    part = make_ladder(client, "part", k=1, seed=6, auto_refit=False)
    post(client, "part", part, january[:6] + january[7:] + later[:40])
    for by in ("hodge", "conservative"):
        same(board(client, "whole", by=by, **then), board(client, "part", by=by))


def profile_at(client, slug: str, key: str, params: dict) -> dict:
    r = client.get(f"/v1/ladders/{slug}/players/{key}", params=params)
    assert r.status_code == 200, r.text
    return r.json()


def test_as_of_follows_the_checkpoint_the_ratings_went_through(client):
    """A refit applied after a later one replaces it (the log is replayed from it): the past table goes through
    the one the ratings went through."""
    january, later = season()
    key = make_ladder(client, "whole", k=1, seed=6, auto_refit=False)
    jobs = []
    for part in (january[:60], january[60:]):
        post(client, "whole", key, part)
        started = client.post("/v1/ladders/whole/refits", json={"holdout": 0}, headers=bearer(key))
        assert wait(client, started.headers["location"])["status"] == "done"
        jobs.append(started.headers["location"])
    for location in reversed(jobs):  # the later one first, then the earlier one, which replaces it
        assert client.post(f"{location}/apply", headers=bearer(key)).status_code == 200
    post(client, "whole", key, later[:40])
    shown = board(client, "whole")
    post(client, "whole", key, later[40:])
    same(board(client, "whole", as_of=later[40]["played_at"]), shown)


def test_as_of_takes_the_start_of_the_log_played_before_it_and_any_date(client):
    key = make_ladder(client, "late", k=1, seed=1, auto_refit=False)
    march, january = START + timedelta(days=60), START
    post(client, "late", key, [dated_game("a", "b", True, march), dated_game("b", "c", True, january)])
    # The first game was played after the date: nothing of the log was played before it (a game posted late with
    # an earlier date counts once every game before it in the log was played before the date too).
    assert board(client, "late", as_of=(january + timedelta(days=1)).isoformat())["items"] == []
    whole = board(client, "late", as_of=(march + timedelta(days=1)).isoformat())
    assert datetime.fromisoformat(whole["ladder_clock"]) == march and len(whole["items"]) == 3
    for extreme in ("0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-01:00", "0001-01-01T00:30:00+00:59"):
        for path in ("/v1/ladders/late/leaderboard", "/v1/ladders/late/players/a"):
            r = client.get(path, params={"as_of": extreme})
            assert r.status_code in (200, 404), (extreme, path, r.text)
    assert board(client, "late", as_of="9999-12-31T23:59:59-01:00")["items"] == board(client, "late")["items"]
    r = client.get("/v1/ladders/late/leaderboard", params={"as_of": march.isoformat(), "form": "true"})
    assert r.status_code == 422 and r.json()["errors"][0]["field"] == "form"


def test_steps_follow_time_away_and_every_replay_keeps_them_exactly(client):
    """With ``drift_steps`` (the default), a player back from six months away takes larger steps than the games
    they played alone would give; voids, merges and changes of the rate replay those steps bit for bit."""
    january, later = season()
    back = dated_game("away", "club0", True, START + timedelta(days=210))
    stray = dated_game("stray", "stay", True, START + timedelta(days=40))
    keys = {
        slug: make_ladder(client, slug, k=1, seed=4, auto_refit=False, drift_steps=slug != "counts")
        for slug in ("steps", "counts", "voided")
    }
    assert client.get("/v1/ladders/steps").json()["drift_steps"] is True
    for slug, key in keys.items():
        post(client, slug, key, january + ([*later[:5], stray, *later[5:]] if slug == "voided" else later))
    moved = {}
    for slug in ("steps", "counts"):
        before = profile(client, slug, "away")["elo"]
        post(client, slug, keys[slug], [back])
        moved[slug] = profile(client, slug, "away")["elo"] - before
    # 56 games worn by half a year at 100 Elo points a year count as 17: η / √(1 + e/τ) is 1.7 times larger.
    assert moved["steps"] > 1.5 * moved["counts"] > 0
    # And what is known of them is what their step counts: 18 games' worth, not 57 (both just played, so no time
    # away is added on top), on the leaderboard, the profile and a past table alike.
    shown = {slug: profile(client, slug, "away") for slug in ("steps", "counts")}
    assert shown["steps"]["games"] == shown["counts"]["games"] == 57
    assert shown["steps"]["strength_se"] > 1.4 * shown["counts"]["strength_se"]
    row = next(r for r in board(client, "steps")["items"] if r["key"] == "away")
    assert row["strength_se"] == shown["steps"]["strength_se"]
    then = START + timedelta(days=211)
    past = client.get("/v1/ladders/steps/players/away", params={"as_of": then.isoformat()}).json()
    assert past["strength_se"] == shown["steps"]["strength_se"]
    # A void replays the steps from the players' worn experience: exactly the ladder that never had the game.
    post(client, "voided", keys["voided"], [back])
    number = client.get("/v1/ladders/voided/players/stray/history").json()["items"][0]["game_id"]
    r = client.post(f"/v1/ladders/voided/games/{number}/void", headers=bearer(keys["voided"]))
    assert r.status_code == 200, r.text
    expected = vectors(client, "steps")
    assert {k: v for k, v in vectors(client, "voided").items() if k != "stray"} == expected
    # A new drift is a new rule, replayed; the old one back gives the same ratings; /audit agrees throughout.
    h = bearer(keys["steps"])
    changed = client.patch("/v1/ladders/steps", json={"drift": 300}, headers=h).json()
    assert changed["auto_rate"] is False and vectors(client, "steps") != expected
    assert client.get("/v1/ladders/steps/audit").json()["consistent"]
    assert client.patch("/v1/ladders/steps", json={"drift": 100}, headers=h).status_code == 200
    assert vectors(client, "steps") == expected
    assert client.patch("/v1/ladders/steps", json={"drift_steps": False}, headers=h).status_code == 200
    assert vectors(client, "steps") == vectors(client, "counts")
    for slug in keys:
        assert client.get(f"/v1/ladders/{slug}/audit").json()["consistent"], slug
