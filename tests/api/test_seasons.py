"""Seasons: closing one archives the standings as they stood, with each player's record in the season; later games
belong to the next; a void of a closed season's game replays the ratings but leaves its archive, and says so;
exports keep seasons."""

from __future__ import annotations

import json

from tests.api.test_backups import export
from tests.api.test_time_away import board, post, season
from tests.conftest import bearer, make_ladder


def standings(client, slug: str, name: str, **params) -> dict:
    r = client.get(f"/v1/ladders/{slug}/seasons/{name}", params=params)
    assert r.status_code == 200, r.text
    return r.json()


def close(client, slug: str, key: str, name: str) -> dict:
    r = client.post(f"/v1/ladders/{slug}/seasons", json={"name": name}, headers=bearer(key))
    assert r.status_code == 201, r.text
    return r.json()


def test_a_closed_season_keeps_its_standings_and_the_next_counts_the_games_after_it(client):
    january, later = season()
    key = make_ladder(client, "office", k=1, seed=2, auto_refit=False)
    empty = close(client, "office", key, "before anything")  # allowed on an empty ladder, and empty
    assert (empty["games"], empty["players"], empty["first_game"], empty["last_game"]) == (0, 0, None, None)
    post(client, "office", key, january)
    shown = board(client, "office", inactive="true")["items"]
    winter = close(client, "office", key, "winter")
    assert (winter["games"], winter["first_game"], winter["last_game"], winter["players"]) == (112, 1, 112, 10)
    assert winter["changed_after_closing"] is None
    rows = standings(client, "office", "winter", limit=500)
    assert rows["season"] == winter and rows["next_cursor"] is None
    # The leaderboard's conservative order and numbers as they stood, with the season's records.
    assert [r["key"] for r in rows["items"]] == [r["key"] for r in shown]
    for row, now in zip(rows["items"], shown, strict=True):
        assert (row["elo"], row["strength_se"]) == (now["elo"], now["strength_se"])
        assert row["conservative"] == now["strength"] == now["conservative"]
        assert (row["games"], row["wins"], row["draws"], row["losses"]) == (now["games"], now["wins"], 0, now["losses"])
    assert [r["rank"] for r in rows["items"]] == list(range(1, 11))
    # The next season counts only its own games, and only its players.
    post(client, "office", key, later[:20])
    spring = close(client, "office", key, "spring")
    assert (spring["games"], spring["first_game"], spring["last_game"], spring["players"]) == (20, 113, 132, 9)
    stay = next(r for r in standings(client, "office", "spring")["items"] if r["key"] == "stay")
    assert (stay["games"], stay["wins"] + stay["losses"]) == (20, 20)
    assert "away" not in [r["key"] for r in standings(client, "office", "spring")["items"]]
    # Pages by rank; the list, latest first; names are unique; unknown ones are 404s.
    first = standings(client, "office", "winter", limit=4)
    rest = standings(client, "office", "winter", limit=100, cursor=first["next_cursor"])
    assert [r["rank"] for r in first["items"] + rest["items"]] == list(range(1, 11))
    listed = client.get("/v1/ladders/office/seasons").json()
    assert [s["name"] for s in listed["items"]] == ["spring", "winter", "before anything"]
    r = client.post("/v1/ladders/office/seasons", json={"name": "winter"}, headers=bearer(key))
    assert r.status_code == 409 and r.json()["errors"][0]["field"] == "name"
    assert client.get("/v1/ladders/office/seasons/summer").status_code == 404
    for bad in ("", " x", "a/b", "x" * 101, 5):
        r = client.post("/v1/ladders/office/seasons", json={"name": bad}, headers=bearer(key))
        assert r.status_code == 422, bad
    assert client.post("/v1/ladders/office/seasons", json={"name": "x"}).status_code == 401


def test_a_void_in_a_closed_season_replays_the_ratings_and_leaves_its_archive(client):
    january, later = season()
    key = make_ladder(client, "office", k=1, seed=2, auto_refit=False)
    post(client, "office", key, january)
    close(client, "office", key, "winter")
    post(client, "office", key, later[:10])
    archived = standings(client, "office", "winter", limit=500)
    assert client.post("/v1/ladders/office/games/3/void", headers=bearer(key)).status_code == 200
    now = standings(client, "office", "winter", limit=500)
    assert now["items"] == archived["items"]
    assert now["season"]["changed_after_closing"] is not None
    assert client.get("/v1/ladders/office/audit").json()["consistent"]
    # A game of the season after it was not reached.
    spring = close(client, "office", key, "spring")
    assert spring["changed_after_closing"] is None


def test_an_export_keeps_the_seasons_and_their_archives(client, cli, tmp_path, capsys):
    january, later = season()
    key = make_ladder(client, "office", k=1, seed=2, auto_refit=False)
    close(client, "office", key, "before anything")
    post(client, "office", key, january)
    close(client, "office", key, "winter")
    post(client, "office", key, later[:10])
    assert client.post("/v1/ladders/office/games/3/void", headers=bearer(key)).status_code == 200  # winter changed
    close(client, "office", key, "spring")
    post(client, "office", key, later[10:12])
    path = tmp_path / "office.ndjson"
    path.write_bytes(export(client, "office", **bearer(key)))
    cli(["import", "copy", str(path)])
    created = json.loads(capsys.readouterr().out)
    for name in ("before anything", "winter", "spring"):
        assert standings(client, "copy", name, limit=500) == standings(client, "office", name, limit=500)
    listed = [s["name"] for s in client.get("/v1/ladders/copy/seasons").json()["items"]]
    assert listed == ["spring", "winter", "before anything"]
    # The next season of the copy starts where the original's would.
    assert close(client, "copy", created["admin_key"], "summer")["games"] == 2


def test_erasing_a_player_erases_them_from_the_archives_and_odd_names_are_refused(client):
    january, _ = season()
    key = make_ladder(client, "office", k=1, seed=2, auto_refit=False)
    post(client, "office", key, january)
    named = client.patch("/v1/ladders/office/players/away", json={"name": "Alice Away"}, headers=bearer(key))
    assert named.status_code == 200
    close(client, "office", key, "winter")
    erased = client.delete("/v1/ladders/office/players/away", headers=bearer(key)).json()["key"]
    rows = standings(client, "office", "winter", limit=500)["items"]
    assert "away" not in [r["key"] for r in rows] and "Alice Away" not in [r["name"] for r in rows]
    assert erased in [r["key"] for r in rows]
    exported = export(client, "office", **bearer(key))
    assert b"Alice Away" not in exported and b'"away"' not in exported
    for name in (".", "..", "...", "a\x00b"):
        r = client.post("/v1/ladders/office/seasons", json={"name": name}, headers=bearer(key))
        assert r.status_code == 422, name
    for path in ("a%00b", "%01"):
        assert client.get(f"/v1/ladders/office/seasons/{path}").status_code == 422, path
